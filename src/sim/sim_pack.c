/*
 * sim_pack.c - placing the queued pods. The packer is best-fit decreasing: pods sorted by
 * GPU size (whole cards, then MIG profiles by memory slices, then replicas, then pods without
 * GPUs), each put where it opens the fewest new GPUs, then on a node already in use, then
 * where it leaves the least room (the tightest fit), then on the first such node; the first
 * pod of a gang with pod affinity prefers a domain that can hold the rest. The exact solver
 * tries every option on tiny inputs so the heuristic's quality can be measured. An unplaced
 * pod gets the reason the scheduler would give.
 *
 * At fleet scale the scan is the cost (every pod against every node of its class), so the
 * packer looks only at candidates: per class, the used nodes that may still have room and
 * one empty node per bucket of interchangeable ones (see cand_idx). It picks exactly the node
 * the full scan picks; GPA_SIM_BFD_SCAN runs the full scan so tests can hold them equal.
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

/* How many more copies of a whole-GPU gang (gpus each) fit on node m: whole GPUs per NVLink
 * island of the node; a shared GPU counts 1 per node, a lower bound. */
static long long node_room(const gpa_sim *s, const gpa_sim_tmpl *t, size_t m)
{
    const gpa_sim_group *g = gpa_sim_grp(s, m);
    const gpa_sim_node *nd = &s->nodes[m];
    const gpa_mig_profile *p;
    gpa_sim_gkind k = gpa_sim_offer(s, m, t, &p);
    if (k != GK_WHOLE) return 1;
    long long room = 0;
    int isl = g->island && g->island < g->gpus ? g->island : g->gpus;
    for (int base = 0; base < g->gpus; base += isl) {
        int fr = 0;
        for (int j = base; j < base + isl && j < g->gpus; j++)
            fr += gpa_sim_gpu_whole_free(&nd->gpus[j]);
        room += fr / t->gcount;
    }
    return room;
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
        if (tp->vid[m] == vid) room += node_room(s, t, m);
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

/* ---------------------------------------------------------------- candidates */

/* The nodes of one class the best-fit scan can pick. Packing only ever adds pods, so a node
 * whose cpu, memory, pod count or GPUs cannot take the class's demand never can again and
 * leaves the class's used list for good (pod (anti-)affinity, which can change, never drops
 * a node). Empty nodes of one shape (sim_shape.c: groups that pack alike, so every listed
 * node of one kind) with the same values of every non-hostname topology key are
 * interchangeable for every check (a hostname term sees no pod on an empty node), so each
 * such bucket offers only its first still-empty node. */
typedef struct cand_idx {
    bool built;
    const size_t *shape; /* per inventory node: its shape (the run's, gpa_sim_shapes) */
    int *pos;            /* per inventory node: its position in the class's node list, -1 outside */
    size_t *used;        /* class nodes holding pods that may still have room, any order */
    size_t n_used, cap_used;
    size_t log_seen; /* entries of the run's used-node log already taken in */
    size_t *bnodes;  /* the class's nodes bucket by bucket, each bucket in position order */
    size_t *bend;    /* bucket b is bnodes[b ? bend[b - 1] : 0 .. bend[b]) */
    size_t *bcur;    /* per bucket: its first entry that may still be empty */
    bool *bdead;     /* per bucket: its empty nodes cannot take the class's pods */
    size_t n_buckets;
    /* domain_room's domains: the class's nodes by value of topology key dom_key (-1: not
     * built), value v's nodes at dom_nodes[dom_start[v] .. dom_start[v + 1]), the nodes
     * without the label last */
    int dom_key;
    size_t *dom_nodes, *dom_start;
    long long *dom_room; /* per value: domain_room's answer, -1 until asked or after a pod
                            lands in the domain (the class fixes the demand it counts) */
    /* the buckets by value of topology key bv_key (-1: not built): value v's at
     * bv_list[bv_start[v] .. bv_start[v + 1]) */
    int bv_key;
    size_t *bv_start, *bv_list;
    /* per shape of the class: its buckets are [gstart[i] .. gstart[i + 1]), and the same
     * slots of heap_b/heap_k hold a min-heap of hsize[i] of them keyed by the position of
     * their first empty node (a key goes stale when that node fills: re-keyed on pop) */
    size_t n_groups, *gstart, *hsize, *heap_b, *heap_k, *popped_b, *popped_k;
} cand_idx;

typedef struct pack_state {
    cand_idx *idx; /* per class */
    size_t *shape; /* per node: gpa_sim_shapes */
    size_t *log;   /* nodes in the order they took their first pod */
    size_t n_log, cap_log;
} pack_state;

typedef struct bucket_ctx {
    const gpa_sim *s;
    const size_t *shape;
    const gpa_sim_sig *sg;
    const bool *hostname; /* per topology key */
} bucket_ctx;

static int cmp_bucket(const void *x, const void *y, void *vc)
{
    const bucket_ctx *c = vc;
    size_t a = *(const size_t *)x, b = *(const size_t *)y; /* positions */
    size_t na = c->sg->nodes[a], nb = c->sg->nodes[b];
    size_t ga = c->shape[na], gb = c->shape[nb];
    if (ga != gb) return ga < gb ? -1 : 1;
    for (size_t k = 0; k < c->s->n_topos; k++) {
        if (c->hostname[k]) continue;
        int va = c->s->topos[k].vid[na], vb = c->s->topos[k].vid[nb];
        if (va != vb) return va < vb ? -1 : 1;
    }
    return a < b ? -1 : a > b;
}

static void heap_push(size_t *hb, size_t *hk, size_t *n, size_t b, size_t k)
{
    size_t i = (*n)++;
    while (i && hk[(i - 1) / 2] > k) {
        hb[i] = hb[(i - 1) / 2];
        hk[i] = hk[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    hb[i] = b;
    hk[i] = k;
}

static void heap_pop(size_t *hb, size_t *hk, size_t *n)
{
    size_t b = hb[--*n], k = hk[*n], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && hk[c + 1] < hk[c]) c++;
        if (hk[c] >= k) break;
        hb[i] = hb[c];
        hk[i] = hk[c];
        i = c;
    }
    if (*n) {
        hb[i] = b;
        hk[i] = k;
    }
}

static int cand_build(cand_idx *ci, const gpa_sim *s, const gpa_sim_sig *sg, const size_t *shape)
{
    ci->shape = shape;
    size_t nn = s->inv->n_nodes ? s->inv->n_nodes : 1, nc = sg->n_nodes ? sg->n_nodes : 1;
    ci->pos = malloc(nn * sizeof *ci->pos);
    ci->bnodes = malloc(nc * sizeof *ci->bnodes);
    ci->bend = malloc(nc * sizeof *ci->bend);
    ci->bcur = malloc(nc * sizeof *ci->bcur);
    ci->bdead = calloc(nc, sizeof *ci->bdead);
    bool *hostname = calloc(s->n_topos ? s->n_topos : 1, sizeof *hostname);
    if (!ci->pos || !ci->bnodes || !ci->bend || !ci->bcur || !ci->bdead || !hostname) {
        free(hostname);
        return GPA_ENOMEM;
    }
    for (size_t k = 0; k < s->n_topos; k++)
        hostname[k] = strcmp(s->topos[k].key, "kubernetes.io/hostname") == 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        ci->pos[n] = -1;
    for (size_t p = 0; p < sg->n_nodes; p++) {
        ci->pos[sg->nodes[p]] = (int)p;
        ci->bnodes[p] = p;
    }
    bucket_ctx c = {s, shape, sg, hostname};
    qsort_r(ci->bnodes, sg->n_nodes, sizeof *ci->bnodes, cmp_bucket, &c);
    for (size_t i = 1; i < sg->n_nodes; i++) {
        /* a new bucket where the key (everything cmp_bucket compares but the position) changes */
        size_t na = sg->nodes[ci->bnodes[i - 1]], nb = sg->nodes[ci->bnodes[i]];
        bool same = shape[na] == shape[nb];
        for (size_t k = 0; same && k < s->n_topos; k++)
            same = hostname[k] || s->topos[k].vid[na] == s->topos[k].vid[nb];
        if (!same) ci->bend[ci->n_buckets++] = i;
    }
    if (sg->n_nodes) ci->bend[ci->n_buckets++] = sg->n_nodes;
    for (size_t b = 0; b < ci->n_buckets; b++)
        ci->bcur[b] = b ? ci->bend[b - 1] : 0;
    for (size_t i = 0; i < sg->n_nodes; i++)
        ci->bnodes[i] = sg->nodes[ci->bnodes[i]]; /* positions to nodes */
    free(hostname);
    size_t nb = ci->n_buckets ? ci->n_buckets : 1;
    ci->gstart = malloc((nb + 1) * sizeof *ci->gstart);
    ci->hsize = calloc(nb, sizeof *ci->hsize);
    ci->heap_b = malloc(nb * sizeof *ci->heap_b);
    ci->heap_k = malloc(nb * sizeof *ci->heap_k);
    ci->popped_b = malloc(nb * sizeof *ci->popped_b);
    ci->popped_k = malloc(nb * sizeof *ci->popped_k);
    if (!ci->gstart || !ci->hsize || !ci->heap_b || !ci->heap_k || !ci->popped_b || !ci->popped_k)
        return GPA_ENOMEM;
    for (size_t b = 0; b < ci->n_buckets; b++) {
        size_t first = ci->bnodes[b ? ci->bend[b - 1] : 0];
        if (!b || shape[first] != shape[ci->bnodes[ci->bend[b - 1] - 1]])
            ci->gstart[ci->n_groups++] = b;
        size_t gi = ci->n_groups - 1;
        heap_push(ci->heap_b + ci->gstart[gi], ci->heap_k + ci->gstart[gi], &ci->hsize[gi], b,
                  (size_t)ci->pos[first]);
    }
    ci->gstart[ci->n_groups] = ci->n_buckets;
    ci->dom_key = -1;
    ci->bv_key = -1;
    ci->built = true;
    return GPA_OK;
}

/* domain_room from the class's domain index (built on first use for the key). */
static long long domain_room_idx(const gpa_sim *s, cand_idx *ci, const gpa_sim_tmpl *t, size_t n)
{
    if (!t->n_aff || !t->gres) return 0;
    int key = t->aff[0].key_id;
    const gpa_sim_topo *tp = &s->topos[key];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    size_t nv = (size_t)tp->n_values + 1; /* the last: nodes without the label */
    if (ci->dom_key != key) {
        free(ci->dom_nodes);
        free(ci->dom_start);
        free(ci->dom_room);
        ci->dom_nodes = malloc((sg->n_nodes ? sg->n_nodes : 1) * sizeof *ci->dom_nodes);
        ci->dom_start = calloc(nv + 1, sizeof *ci->dom_start);
        ci->dom_room = malloc(nv * sizeof *ci->dom_room);
        if (!ci->dom_nodes || !ci->dom_start || !ci->dom_room) {
            ci->dom_key = -1;
            return domain_room(s, t, n);
        }
        for (size_t i = 0; i < sg->n_nodes; i++) {
            int v = tp->vid[sg->nodes[i]];
            ci->dom_start[(v < 0 ? nv - 1 : (size_t)v) + 1]++;
        }
        for (size_t v = 0; v < nv; v++)
            ci->dom_start[v + 1] += ci->dom_start[v];
        size_t *fill = malloc(nv * sizeof *fill);
        if (!fill) {
            ci->dom_key = -1;
            return domain_room(s, t, n);
        }
        memcpy(fill, ci->dom_start, nv * sizeof *fill);
        for (size_t i = 0; i < sg->n_nodes; i++) {
            int v = tp->vid[sg->nodes[i]];
            ci->dom_nodes[fill[v < 0 ? nv - 1 : (size_t)v]++] = sg->nodes[i];
        }
        free(fill);
        for (size_t v = 0; v < nv; v++)
            ci->dom_room[v] = -1;
        ci->dom_key = key;
    }
    int v0 = tp->vid[n];
    size_t v = v0 < 0 ? nv - 1 : (size_t)v0;
    if (ci->dom_room[v] >= 0) return ci->dom_room[v];
    long long room = 0;
    for (size_t i = ci->dom_start[v]; i < ci->dom_start[v + 1]; i++)
        room += node_room(s, t, ci->dom_nodes[i]);
    return ci->dom_room[v] = room;
}

/* A pod landed on node n: the cached room of n's domain in every class is stale. */
static void dom_touch(pack_state *ps, const gpa_sim *s, size_t n)
{
    for (size_t i = 0; i < s->n_sigs; i++) {
        cand_idx *ci = &ps->idx[i];
        if (!ci->built || ci->dom_key < 0) continue;
        const gpa_sim_topo *tp = &s->topos[ci->dom_key];
        int v = tp->vid[n];
        ci->dom_room[v < 0 ? (size_t)tp->n_values : (size_t)v] = -1;
    }
}

static void cand_free(pack_state *ps, const gpa_sim *s)
{
    if (ps->idx)
        for (size_t i = 0; i < s->n_sigs; i++) {
            cand_idx *ci = &ps->idx[i];
            free(ci->pos);
            free(ci->used);
            free(ci->bnodes);
            free(ci->bend);
            free(ci->bcur);
            free(ci->bdead);
            free(ci->dom_nodes);
            free(ci->dom_start);
            free(ci->dom_room);
            free(ci->bv_start);
            free(ci->bv_list);
            free(ci->gstart);
            free(ci->hsize);
            free(ci->heap_b);
            free(ci->heap_k);
            free(ci->popped_b);
            free(ci->popped_k);
        }
    free(ps->idx);
    free(ps->log);
    free(ps->shape);
}

/* After a gang was taken back off (sim_gang.c), nodes may be empty again and room came back,
 * which the index (built on packing only adding pods) cannot know: it is built again, and the
 * log of used nodes is the nodes holding pods now. */
static int cand_reset(pack_state *ps, const gpa_sim *s)
{
    size_t *shape = ps->shape;
    ps->shape = NULL;
    cand_free(ps, s);
    *ps = (pack_state){.shape = shape, .idx = calloc(s->n_sigs ? s->n_sigs : 1, sizeof *ps->idx)};
    if (!ps->idx) return GPA_ENOMEM;
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        if (!s->nodes[n].pods) continue;
        size_t *nl = gpa_sim_grow(ps->log, &ps->cap_log, ps->n_log + 1, sizeof *nl);
        if (!nl) return GPA_ENOMEM;
        (ps->log = nl)[ps->n_log++] = n;
    }
    return GPA_OK;
}

enum { E_FIT, E_RESOURCES, E_ROOM, E_ANTI, E_AFF };

/* best_node's verdict on one node: E_FIT with the node's best option and score (the first of
 * equal ones), else which check failed. */
static int eval_node(const gpa_sim *s, cand_idx *ci, const gpa_sim_tmpl *t, size_t n,
                     const gpa_sim_aff_view *v, long long gang_left, gpa_sim_opt *bo,
                     long long *bsc)
{
    if (!gpa_sim_resources_fit(s, n, t)) return E_RESOURCES;
    gpa_sim_opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
    int no = gpa_sim_options(s, n, t, opts, GPA_SIM_MAX_GPUS_PER_NODE + 1);
    if (!no) return E_ROOM;
    if (!gpa_sim_view_anti_ok(v, s, n)) return E_ANTI;
    if (!gpa_sim_view_aff_ok(v, s, t, n, v->aff_free)) return E_AFF;
    long long gang_pen = 0;
    if (v->aff_free && t->n_aff && gang_left > 1 && domain_room_idx(s, ci, t, n) < gang_left)
        gang_pen = 1;
    for (int k = 0; k < no; k++) {
        long long sc[5] = {gang_pen, opts[k].score[0], opts[k].score[1], opts[k].score[2],
                           opts[k].score[3]};
        if (k == 0 || cmp_score(sc, bsc) < 0) {
            *bo = opts[k];
            memcpy(bsc, sc, sizeof sc);
        }
    }
    return E_FIT;
}

typedef struct pick {
    long node;
    int pos;
    bool perfect;
    long long sc[5];
} pick;

/* best_node's choice among candidates: the first perfect fit (nothing to open, used node, no
 * room left) by position, else the smallest score, the earlier position on a tie. */
static int consider(pick *bp, gpa_sim_opt *best, const gpa_sim *s, cand_idx *ci,
                    const gpa_sim_tmpl *t, size_t n, const gpa_sim_aff_view *v, long long gang_left)
{
    gpa_sim_opt o;
    long long sc[5];
    int pos = ci->pos[n];
    int r = eval_node(s, ci, t, n, v, gang_left, &o, sc);
    if (r != E_FIT) return r;
    bool perfect = sc[0] == 0 && sc[1] == 0 && sc[2] == 0 && sc[3] == 0;
    int c = bp->node < 0 ? -1 : cmp_score(sc, bp->sc);
    bool better = bp->node < 0 || (perfect ? !bp->perfect || pos < bp->pos
                                           : !bp->perfect && (c < 0 || (c == 0 && pos < bp->pos)));
    if (better) {
        *bp = (pick){(long)n, pos, perfect, {sc[0], sc[1], sc[2], sc[3], sc[4]}};
        *best = o;
    }
    return E_FIT;
}

/* best_candidate's pass over the empty buckets: the shape whose verdict it holds. */
typedef struct empty_pass {
    size_t shape;
    int state; /* -1 not computed yet, E_FIT, or why the shape's empty nodes fail */
    gpa_sim_opt opt;
    long long sc[5];
} empty_pass;

static int visit_bucket(empty_pass *ep, pick *bp, gpa_sim_opt *best, const gpa_sim *s, cand_idx *ci,
                        const gpa_sim_tmpl *t, size_t b, const gpa_sim_aff_view *v,
                        long long gang_left)
{
    if (ci->bdead[b]) return -1;
    size_t end = ci->bend[b];
    while (ci->bcur[b] < end && s->nodes[ci->bnodes[ci->bcur[b]]].pods > 0)
        ci->bcur[b]++; /* used now: in the used list through the log */
    if (ci->bcur[b] == end) {
        ci->bdead[b] = true;
        return -1;
    }
    size_t n = ci->bnodes[ci->bcur[b]];
    size_t g = ci->shape[n];
    if (g != ep->shape) {
        ep->shape = g;
        ep->state = E_FIT;
        gpa_sim_opt opts[GPA_SIM_MAX_GPUS_PER_NODE + 1];
        int no = 0;
        if (!gpa_sim_resources_fit(s, n, t))
            ep->state = E_RESOURCES;
        else if (!(no = gpa_sim_options(s, n, t, opts, GPA_SIM_MAX_GPUS_PER_NODE + 1)))
            ep->state = E_ROOM;
        for (int k = 0; k < no; k++) {
            long long sc[5] = {0, opts[k].score[0], opts[k].score[1], opts[k].score[2],
                               opts[k].score[3]};
            if (k == 0 || cmp_score(sc, ep->sc) < 0) {
                ep->opt = opts[k];
                memcpy(ep->sc, sc, sizeof sc);
            }
        }
    }
    if (ep->state != E_FIT) {
        ci->bdead[b] = true; /* so is every empty twin */
        return -1;
    }
    if (!gpa_sim_view_anti_ok(v, s, n) || !gpa_sim_view_aff_ok(v, s, t, n, v->aff_free)) return -1;
    long long sc[5];
    memcpy(sc, ep->sc, sizeof sc);
    sc[0] = v->aff_free && t->n_aff && gang_left > 1 && domain_room_idx(s, ci, t, n) < gang_left;
    bool perfect = sc[0] == 0 && sc[1] == 0 && sc[2] == 0 && sc[3] == 0;
    int pos = ci->pos[n], c = bp->node < 0 ? -1 : cmp_score(sc, bp->sc);
    if (bp->node < 0 || (perfect ? !bp->perfect || pos < bp->pos
                                 : !bp->perfect && (c < 0 || (c == 0 && pos < bp->pos)))) {
        *bp = (pick){(long)n, pos, perfect, {sc[0], sc[1], sc[2], sc[3], sc[4]}};
        *best = ep->opt;
    }
    return (int)sc[0];
}

/* The class's buckets by value of topology key `key` (not hostname): a bucket's empty nodes
 * share one value, so each bucket is listed once (under -1's slot when unlabelled: never). */
static int bucket_vids(cand_idx *ci, const gpa_sim *s, int key)
{
    if (ci->bv_key == key) return GPA_OK;
    const gpa_sim_topo *tp = &s->topos[key];
    free(ci->bv_start);
    free(ci->bv_list);
    ci->bv_key = -1;
    ci->bv_start = calloc((size_t)tp->n_values + 2, sizeof *ci->bv_start);
    ci->bv_list = malloc((ci->n_buckets ? ci->n_buckets : 1) * sizeof *ci->bv_list);
    if (!ci->bv_start || !ci->bv_list) return GPA_ENOMEM;
    for (size_t b = 0; b < ci->n_buckets; b++) {
        int val = tp->vid[ci->bnodes[b ? ci->bend[b - 1] : 0]];
        if (val >= 0) ci->bv_start[val + 1]++;
    }
    for (int val = 0; val < tp->n_values; val++)
        ci->bv_start[val + 1] += ci->bv_start[val];
    size_t *fill = malloc(((size_t)tp->n_values + 1) * sizeof *fill);
    if (!fill) return GPA_ENOMEM;
    memcpy(fill, ci->bv_start, ((size_t)tp->n_values + 1) * sizeof *fill);
    for (size_t b = 0; b < ci->n_buckets; b++) {
        int val = tp->vid[ci->bnodes[b ? ci->bend[b - 1] : 0]];
        if (val >= 0) ci->bv_list[fill[val]++] = b;
    }
    free(fill);
    ci->bv_key = key;
    return GPA_OK;
}

/* The node best_node would pick for pod pi, from the class's candidates only; -1 when none
 * fits, GPA_ENOMEM (negative, < -1) when the index cannot be built. */
static long best_candidate(gpa_sim *s, pack_state *ps, size_t pi, const gpa_sim_aff_view *v,
                           gpa_sim_opt *best, long long gang_left)
{
    const gpa_sim_tmpl *t = &s->tmpls[s->pods[pi].tmpl];
    const gpa_sim_sig *sg = &s->sigs[t->sig];
    cand_idx *ci = &ps->idx[t->sig];
    if (!ci->built && cand_build(ci, s, sg, ps->shape)) return -2;
    for (; ci->log_seen < ps->n_log; ci->log_seen++) {
        size_t m = ps->log[ci->log_seen];
        if (ci->pos[m] < 0) continue;
        size_t *nu = gpa_sim_grow(ci->used, &ci->cap_used, ci->n_used + 1, sizeof *nu);
        if (!nu) return -2;
        ci->used = nu;
        nu[ci->n_used++] = m;
    }
    pick bp = {.node = -1};
    for (size_t j = 0; j < ci->n_used;) {
        size_t n = ci->used[j];
        int r = consider(&bp, best, s, ci, t, n, v, gang_left);
        if (r == E_RESOURCES || r == E_ROOM)
            ci->used[j] = ci->used[--ci->n_used]; /* full for this class from now on */
        else
            j++;
    }
    /* Empty nodes of one shape differ only in the view and the gang's domain: the shape's
     * options and scores are computed on its first live bucket and reused for the rest. A
     * pod whose gang already runs somewhere can only join its domains: only their buckets. */
    empty_pass ep = {.shape = (size_t)-1};
    const gpa_sim_topo *ak = t->n_aff && !v->aff_free ? &s->topos[t->aff[0].key_id] : NULL;
    if (!ak) {
        /* A shape's empty nodes share one score but for the gang's domain room: the first
         * by position with room for the whole gang beats the rest of its shape, so each
         * shape's buckets are taken in position order until one is found. */
        for (size_t gi = 0; gi < ci->n_groups; gi++) {
            size_t base = ci->gstart[gi], np = 0;
            size_t *hb = ci->heap_b + base, *hk = ci->heap_k + base, *hs = &ci->hsize[gi];
            while (*hs) {
                size_t b = hb[0], key = hk[0];
                heap_pop(hb, hk, hs);
                if (ci->bdead[b]) continue;
                while (ci->bcur[b] < ci->bend[b] && s->nodes[ci->bnodes[ci->bcur[b]]].pods > 0)
                    ci->bcur[b]++;
                if (ci->bcur[b] == ci->bend[b]) {
                    ci->bdead[b] = true;
                    continue;
                }
                size_t now = (size_t)ci->pos[ci->bnodes[ci->bcur[b]]];
                if (now != key) {
                    heap_push(hb, hk, hs, b, now); /* its first empty node moved on */
                    continue;
                }
                int r = visit_bucket(&ep, &bp, best, s, ci, t, b, v, gang_left);
                if (ci->bdead[b]) continue;
                ci->popped_b[np] = b;
                ci->popped_k[np++] = key;
                if (r == 0) break;
            }
            while (np--)
                heap_push(hb, hk, hs, ci->popped_b[np], ci->popped_k[np]);
        }
    } else if (strcmp(ak->key, "kubernetes.io/hostname") != 0) {
        if (bucket_vids(ci, s, t->aff[0].key_id)) return -2;
        for (int val = 0; val < ak->n_values; val++)
            if (v->aff_ok[0][val])
                for (size_t i = ci->bv_start[val]; i < ci->bv_start[val + 1]; i++)
                    visit_bucket(&ep, &bp, best, s, ci, t, ci->bv_list[i], v, gang_left);
    } /* else: no empty node is where a placed pod of the gang is */
    return bp.node;
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

static int run_bfd(gpa_sim *s, bool scan, gpa_error *err)
{
    size_t *order = malloc((s->n_pods ? s->n_pods : 1) * sizeof *order);
    pack_state ps = {.idx = scan ? NULL : calloc(s->n_sigs ? s->n_sigs : 1, sizeof *ps.idx),
                     .shape = scan ? NULL : gpa_sim_shapes(s)};
    if (!order || (!scan && (!ps.idx || !ps.shape))) {
        free(order);
        free(ps.idx);
        free(ps.shape);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->n_pods; i++)
        order[i] = i;
    qsort_r(order, s->n_pods, sizeof *order, cmp_pods, s);
    int rc = GPA_OK;
    /* the template whose pod just failed, and why: the next pod of the same template, with
     * nothing placed since, fails the same way */
    size_t failed_tmpl = (size_t)-1;
    why failed_w = {0};
    gpa_sim_aff_view v;
    bool have_view = false;
    size_t view_tmpl = 0, run_end = 0;
    /* gangs whole (sim_gang.c): each template's gang, the current gang's end in order, its
     * pods placed so far and the pod it failed on */
    char **gkeys = s->gangs_whole ? calloc(s->n_tmpls + 1, sizeof *gkeys) : NULL;
    gpa_sim_gang_member *gm = NULL;
    size_t n_gm = 0, cap_gm = 0, gang_end = 0, gang_size = 0;
    long gang_failed = -1;
    if (s->gangs_whole && !gkeys) rc = GPA_ENOMEM;
    for (size_t i = 0; gkeys && i < s->n_tmpls; i++)
        gkeys[i] = gpa_sim_gang_key(&s->tmpls[i]);
    for (size_t k = 0; k < s->n_pods && rc == GPA_OK; k++) {
        size_t pi = order[k];
        size_t ti = s->pods[pi].tmpl;
        if (gkeys && k >= gang_end) {
            for (gang_end = k + 1; gkeys[ti] && gang_end < s->n_pods; gang_end++) {
                const char *nk = gkeys[s->pods[order[gang_end]].tmpl];
                if (!nk || strcmp(nk, gkeys[ti]) != 0) break;
            }
            gang_size = gang_end - k;
            n_gm = 0;
            gang_failed = -1;
        }
        if (gang_failed >= 0) { /* the rest of a gang that does not fit whole */
            rc = gpa_sim_gang_copy_reason(s, pi, (size_t)gang_failed);
            continue;
        }
        if (!scan && ti == failed_tmpl && gang_size < 2) {
            set_reason(s, pi, &failed_w);
            continue;
        }
        /* copies of this template still to come, the gang the first one opens a domain for
         * (the run's end found once per run: counting it per pod was quadratic in replicas) */
        if (k >= run_end || s->pods[order[run_end - 1]].tmpl != ti)
            for (run_end = k + 1; run_end < s->n_pods && s->pods[order[run_end]].tmpl == ti;)
                run_end++;
        long long left = (long long)(run_end - k);
        /* one view over consecutive pods of a template, brought up to date after each of
         * them is placed (the full scan rebuilds it every time) */
        if (have_view && (scan || view_tmpl != ti)) {
            gpa_sim_view_free(&v, s, &s->tmpls[view_tmpl]);
            have_view = false;
        }
        if (!have_view) {
            have_view = true;
            view_tmpl = ti;
            rc = gpa_sim_view_build(&v, s, ti, err);
            if (rc) break;
        }
        gpa_sim_opt o;
        why w = {0};
        long n = scan ? -1 : best_candidate(s, &ps, pi, &v, &o, left);
        if (n < -1) {
            rc = GPA_ENOMEM;
        } else {
            if (n < 0) n = best_node(s, pi, &v, &o, &w, left);
            if (n >= 0) {
                bool first = s->nodes[n].pods == 0;
                rc = gpa_sim_apply(s, pi, (size_t)n, &o);
                if (!rc && first && !scan) {
                    size_t *nl = gpa_sim_grow(ps.log, &ps.cap_log, ps.n_log + 1, sizeof *nl);
                    if (!nl)
                        rc = GPA_ENOMEM;
                    else
                        (ps.log = nl)[ps.n_log++] = (size_t)n;
                }
                if (!rc && !scan) {
                    dom_touch(&ps, s, (size_t)n);
                    rc = gpa_sim_view_add_own(&v, s, ti, (size_t)n, err);
                }
                if (!rc && gang_size > 1) {
                    gpa_sim_gang_member *ng = gpa_sim_grow(gm, &cap_gm, n_gm + 1, sizeof *ng);
                    if (!ng)
                        rc = GPA_ENOMEM;
                    else
                        (gm = ng)[n_gm++] = (gpa_sim_gang_member){pi, o};
                }
                failed_tmpl = (size_t)-1;
            } else {
                set_reason(s, pi, &w);
                failed_tmpl = ti;
                failed_w = w;
                if (gang_size > 1) {
                    gang_failed = (long)pi;
                    failed_tmpl = (size_t)-1;
                    rc = gpa_sim_gang_fail(s, gm, n_gm, pi, gang_size);
                    if (!rc && n_gm) {
                        /* pods came off: the view and the index knew them */
                        gpa_sim_view_free(&v, s, &s->tmpls[view_tmpl]);
                        have_view = false;
                        if (!scan) rc = cand_reset(&ps, s);
                    }
                    n_gm = 0;
                }
            }
        }
        if (rc) rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    if (have_view) gpa_sim_view_free(&v, s, &s->tmpls[view_tmpl]);
    cand_free(&ps, s);
    for (size_t i = 0; gkeys && i < s->n_tmpls; i++)
        free(gkeys[i]);
    free(gkeys);
    free(gm);
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
    return method == GPA_SIM_EXACT ? run_exact(s, err)
                                   : run_bfd(s, method == GPA_SIM_BFD_SCAN, err);
}
