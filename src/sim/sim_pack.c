/*
 * sim_pack.c - placing the queued pods. The packer is best-fit decreasing: pods sorted by
 * GPU size (whole cards, then MIG profiles by memory slices, then replicas, then pods without
 * GPUs), each put where it opens the fewest new GPUs, then on a node already in use, then
 * where it leaves the least room (the tightest fit), then on the first such node; the first
 * pod of a gang with pod affinity prefers a domain that can hold the rest. The exact solver
 * tries every option on tiny inputs so the heuristic's quality can be measured. An unplaced
 * pod gets the reason the scheduler would give.
 *
 * Decides where pods go, never how a GPU is carved (sim_slots.c) or what a node allows
 * (sim_feasible.c, sim_affinity.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static int cmp_score(const long long *a, const long long *b)
{
    for (int i = 0; i < 5; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int cmp_pods(const void *x, const void *y, void *ctx)
{
    const gpa_sim *s = ctx;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const gpa_sim_tmpl *ta = &s->tmpls[s->pods[a].tmpl];
    const gpa_sim_tmpl *tb = &s->tmpls[s->pods[b].tmpl];
    if (ta->size_key != tb->size_key) return ta->size_key > tb->size_key ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* How many more copies of a whole-GPU gang (count left, gpus each) fit in the topology
 * domain of node n; used so the first pod of a gang opens a domain that can hold the rest. */
static long long domain_room(const gpa_sim *s, const gpa_sim_tmpl *t, size_t n)
{
    if (!t->n_aff || !t->gres) return 0;
    const gpa_sim_topo *tp = &s->topos[t->aff[0].key_id];
    int vid = tp->vid[n];
    long long room = 0;
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    for (size_t i = 0; i < sg->n_nodes; i++) {
        size_t m = sg->nodes[i];
        if (tp->vid[m] != vid) continue;
        const gpa_sim_group *g = gpa_sim_grp(s, m);
        const gpa_sim_node *nd = &s->nodes[m];
        const gpa_mig_profile *p;
        gpa_sim_gkind k = gpa_sim_offer(s, m, t, &p);
        if (k == GK_WHOLE) {
            int isl = g->island && g->island < g->gpus ? g->island : g->gpus;
            for (int base = 0; base < g->gpus; base += isl) {
                int fr = 0;
                for (int j = base; j < base + isl && j < g->gpus; j++)
                    fr += gpa_sim_gpu_whole_free(&nd->gpus[j]);
                room += fr / t->gcount;
            }
        } else {
            room += 1; /* shared GPUs: counted per node, a lower bound */
        }
    }
    return room;
}

typedef struct why {
    size_t room, anti, aff, capacity;
} why;

/* Best node and option for pod pi; -1 when none. Fills w with failure counts. */
static long best_node(gpa_sim *s, size_t pi, const gpa_sim_aff_view *v, gpa_sim_opt *best, why *w,
                      long long gang_left)
{
    const gpa_sim_tmpl *t = &s->tmpls[s->pods[pi].tmpl];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    long bn = -1;
    long long bscore[5] = {0};
    gpa_sim_opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
    bool self_ok = v->aff_free;
    /* Empty nodes of one group are interchangeable unless the pod looks at topology: only
     * the first empty node of each group is scored. */
    bool topo_blind = !t->n_aff && !v->any_anti;
    unsigned char *empty_seen = NULL;
    if (topo_blind) empty_seen = calloc(s->inv->n_groups ? s->inv->n_groups : 1, 1);
    for (size_t i = 0; i < sg->n_nodes; i++) {
        size_t n = sg->nodes[i];
        const gpa_sim_node *nd = &s->nodes[n];
        if (empty_seen && nd->pods == 0) {
            if (empty_seen[s->inv->nodes[n].group]) continue;
            empty_seen[s->inv->nodes[n].group] = 1;
        }
        if (!gpa_sim_resources_fit(s, n, t)) {
            w->capacity++;
            continue;
        }
        int no = gpa_sim_options(s, n, t, opts, GPA_SIM_MAX_GPUS_PER_NODE + 1);
        if (!no) {
            w->room++;
            continue;
        }
        if (!gpa_sim_view_anti_ok(v, s, n)) {
            w->anti++;
            continue;
        }
        if (!gpa_sim_view_aff_ok(v, s, t, n, self_ok)) {
            w->aff++;
            continue;
        }
        long long gang_pen = 0;
        if (self_ok && t->n_aff && gang_left > 1 && domain_room(s, t, n) < gang_left) gang_pen = 1;
        for (int k = 0; k < no; k++) {
            long long sc[5] = {gang_pen, opts[k].score[0], opts[k].score[1], opts[k].score[2],
                               opts[k].score[3]};
            if (bn < 0 || cmp_score(sc, bscore) < 0) {
                bn = (long)n;
                *best = opts[k];
                memcpy(bscore, sc, sizeof sc);
            }
        }
        if (bn >= 0 && bscore[0] == 0 && bscore[1] == 0 && bscore[2] == 0 && bscore[3] == 0)
            break; /* nothing beats a perfect fit on a used node */
    }
    free(empty_seen);
    return bn;
}

static void set_reason(gpa_sim *s, size_t pi, const why *w)
{
    gpa_sim_pod *pod = &s->pods[pi];
    const gpa_sim_tmpl *t = &s->tmpls[pod->tmpl];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    char buf[256];
    if (!sg->n_nodes) {
        pod->reason = "no node matches";
        snprintf(buf, sizeof buf, "no node passes %s", sg->why);
    } else if (w->anti) {
        pod->reason = "tenant conflict";
        snprintf(buf, sizeof buf,
                 "%zu node(s) with room hold pods its required anti-affinity excludes "
                 "(another tenant on a shared GPU)",
                 w->anti);
    } else if (w->aff) {
        pod->reason = "island too small";
        snprintf(buf, sizeof buf,
                 "%zu node(s) with room are outside the NVLink domain (pod affinity) its group "
                 "already uses",
                 w->aff);
    } else {
        pod->reason = "no room";
        snprintf(buf, sizeof buf, "%zu matching node(s), none with room left", sg->n_nodes);
    }
    free(pod->reason_detail);
    pod->reason_detail = strdup(buf);
    gpa_sim_explain(s, pi); /* what ran out or did not match, node by node */
}

static int prepare(gpa_sim *s, gpa_error *err)
{
    for (size_t i = 0; i < s->n_tmpls; i++) {
        gpa_sim_tmpl *t = &s->tmpls[i];
        int rc = gpa_sim_classify(s, t, err);
        if (rc) return rc;
        gpa_sim_term *lists[2] = {t->aff, t->anti};
        size_t ns[2] = {t->n_aff, t->n_anti};
        for (int l = 0; l < 2; l++)
            for (size_t k = 0; k < ns[l]; k++) {
                int id = gpa_sim_topo_id(s, lists[l][k].topology_key, err);
                if (id < 0) return id;
                lists[l][k].key_id = id;
            }
    }
    return GPA_OK;
}

static int run_bfd(gpa_sim *s, gpa_error *err)
{
    size_t *order = malloc((s->n_pods ? s->n_pods : 1) * sizeof *order);
    if (!order) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->n_pods; i++)
        order[i] = i;
    qsort_r(order, s->n_pods, sizeof *order, cmp_pods, s);
    int rc = GPA_OK;
    for (size_t k = 0; k < s->n_pods && rc == GPA_OK; k++) {
        size_t pi = order[k];
        size_t ti = s->pods[pi].tmpl;
        /* copies of this template still to come, the gang the first one opens a domain for */
        long long left = 1;
        while (k + (size_t)left < s->n_pods && s->pods[order[k + (size_t)left]].tmpl == ti)
            left++;
        gpa_sim_aff_view v;
        rc = gpa_sim_view_build(&v, s, ti, err);
        if (rc == GPA_OK) {
            gpa_sim_opt o;
            why w = {0};
            long n = best_node(s, pi, &v, &o, &w, left);
            if (n >= 0)
                rc = gpa_sim_apply(s, pi, (size_t)n, &o);
            else
                set_reason(s, pi, &w);
            if (rc) rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        gpa_sim_view_free(&v, s, &s->tmpls[ti]);
    }
    free(order);
    return rc;
}

/* ---------------------------------------------------------------- exact */

#define EXACT_MAX_PODS  10
#define EXACT_MAX_NODES 4

typedef struct exact_state {
    size_t best_placed, best_gpus;
    long best_node[EXACT_MAX_PODS];
    gpa_sim_opt best_opt[EXACT_MAX_PODS];
    long cur_node[EXACT_MAX_PODS];
    gpa_sim_opt cur_opt[EXACT_MAX_PODS];
} exact_state;

static int exact_rec(gpa_sim *s, exact_state *es, size_t k, size_t placed, gpa_error *err)
{
    if (placed + (s->n_pods - k) < es->best_placed) return GPA_OK;
    size_t used = gpa_sim_gpus_used(s);
    if (placed + (s->n_pods - k) == es->best_placed && used >= es->best_gpus) return GPA_OK;
    if (k == s->n_pods) {
        if (placed > es->best_placed || used < es->best_gpus) {
            es->best_placed = placed;
            es->best_gpus = used;
            memcpy(es->best_node, es->cur_node, sizeof es->best_node);
            memcpy(es->best_opt, es->cur_opt, sizeof es->best_opt);
        }
        return GPA_OK;
    }
    size_t ti = s->pods[k].tmpl;
    const gpa_sim_sig *sg = &s->sigs[s->tmpls[ti].sig];
    gpa_sim_aff_view v;
    int rc = gpa_sim_view_build(&v, s, ti, err);
    for (size_t i = 0; i < sg->n_nodes && rc == GPA_OK; i++) {
        size_t n = sg->nodes[i];
        if (!gpa_sim_resources_fit(s, n, &s->tmpls[ti]) || !gpa_sim_view_anti_ok(&v, s, n) ||
            !gpa_sim_view_aff_ok(&v, s, &s->tmpls[ti], n, v.aff_free))
            continue;
        gpa_sim_opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
        int no = gpa_sim_options(s, n, &s->tmpls[ti], opts, GPA_SIM_MAX_GPUS_PER_NODE + 1);
        for (int o = 0; o < no && rc == GPA_OK; o++) {
            if (gpa_sim_apply(s, k, n, &opts[o])) {
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                break;
            }
            es->cur_node[k] = (long)n;
            es->cur_opt[k] = opts[o];
            rc = exact_rec(s, es, k + 1, placed + 1, err);
            gpa_sim_unapply(s, k, &opts[o]);
        }
    }
    gpa_sim_view_free(&v, s, &s->tmpls[ti]);
    if (rc) return rc;
    es->cur_node[k] = -1;
    return exact_rec(s, es, k + 1, placed, err);
}

static int run_exact(gpa_sim *s, gpa_error *err)
{
    if (s->n_pods > EXACT_MAX_PODS || s->inv->n_nodes > EXACT_MAX_NODES)
        return gpa_fail(err, GPA_EINVAL, "the exact solver takes at most %d pods and %d nodes",
                        EXACT_MAX_PODS, EXACT_MAX_NODES);
    exact_state *es = calloc(1, sizeof *es);
    if (!es) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    es->best_gpus = (size_t)-1;
    for (size_t i = 0; i < EXACT_MAX_PODS; i++)
        es->best_node[i] = -1;
    int rc = exact_rec(s, es, 0, 0, err);
    for (size_t k = 0; k < s->n_pods && rc == GPA_OK; k++) {
        if (es->best_node[k] >= 0) {
            if (gpa_sim_apply(s, k, (size_t)es->best_node[k], &es->best_opt[k]))
                rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
        } else {
            why w = {0};
            set_reason(s, k, &w);
        }
    }
    free(es);
    return rc;
}

int gpa_sim_run(gpa_sim *s, gpa_sim_method method, gpa_error *err)
{
    if (s->ran) return gpa_fail(err, GPA_EINVAL, "the simulation already ran");
    s->ran = true;
    int rc = prepare(s, err);
    if (rc) return rc;
    return method == GPA_SIM_EXACT ? run_exact(s, err) : run_bfd(s, err);
}
