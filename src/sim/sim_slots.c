/*
 * sim_slots.c - what every GPU holds while pods are packed: whole cards, time-slice replicas,
 * MIG instances (auto layouts re-derived through gpa_mig_layout_valid after each change, fixed
 * layouts filled slot by slot), and the node's cpu/memory/pod counts. Lists the ways a pod
 * can go on a node (scored for best fit), applies one and takes it back (the exact solver
 * backtracks through gpa_sim_unapply).
 *
 * Knows nothing of pod affinity or of the order pods are packed in; every change it makes
 * is undone exactly by gpa_sim_unapply.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static int slot_push(gpa_sim_gpu *u, gpa_sim_slot sl)
{
    gpa_sim_slot *ns = gpa_sim_grow(u->slots, &u->cap_slots, u->n_slots + 1, sizeof *ns);
    if (!ns) return GPA_ENOMEM;
    u->slots = ns;
    ns[u->n_slots++] = sl;
    return GPA_OK;
}

/* Re-derives an auto-MIG GPU's start slices and which profiles still fit. */
static void mig_refresh(gpa_sim_gpu *u, const gpa_mig_model *m)
{
    const gpa_mig_profile *inst[GPA_MIG_MAX_INSTANCES + 1] = {0};
    int starts[GPA_MIG_MAX_INSTANCES + 1] = {0};
    size_t n = u->n_slots;
    for (size_t i = 0; i < n; i++)
        inst[i] = u->slots[i].p;
    gpa_mig_layout_valid(starts, m, inst, n);
    for (size_t i = 0; i < n; i++)
        u->slots[i].start = starts[i];
    u->can_add = 0;
    if (n >= GPA_MIG_MAX_INSTANCES) return;
    for (size_t k = 0; k < m->n_profiles; k++) {
        inst[n] = &m->profiles[k];
        if (gpa_mig_layout_valid(NULL, m, inst, n + 1)) u->can_add |= 1u << k;
    }
}

static int free_slices(const gpa_sim_gpu *u, const gpa_sim_group *g)
{
    int used = 0;
    for (size_t i = 0; i < u->n_slots; i++)
        if (g->mode == GPA_SIM_MIG_AUTO || u->slots[i].pod >= 0) used += u->slots[i].p->mem_slots;
    return g->model->mem_slots - used;
}

/* Options for template t on node n (capacity only): up to cap, each scored. For demands
 * of one unit every GPU that takes it is an option (empty GPUs collapsed to the first); larger
 * demands get one greedy option (whole GPUs: one per NVLink island). */
int gpa_sim_options(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t, gpa_sim_opt *out, int cap)
{
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    const gpa_sim_node *nd = &s->nodes[n];
    const gpa_mig_profile *p;
    gpa_sim_gkind k = gpa_sim_offer(s, n, t, &p);
    bool node_unused = nd->pods == 0;
    int no = 0;
    if (!t->gres) {
        out[0] = (gpa_sim_opt){.n = 0, .score = {0, node_unused, 0, 0}};
        return 1;
    }
    if (k == GK_WHOLE) {
        int isl = g->island && g->island < g->gpus ? g->island : g->gpus;
        if (isl <= 0) return 0;
        for (int base = 0; base < g->gpus && no < cap; base += isl) {
            gpa_sim_opt o = {0};
            int free_in = 0;
            for (int i = base; i < base + isl && i < g->gpus; i++)
                if (gpa_sim_gpu_whole_free(&nd->gpus[i])) {
                    if (o.n < t->gcount) o.gpu[o.n++] = i;
                    free_in++;
                }
            if (o.n < t->gcount) continue;
            long long node_free = g->gpus - (long long)nd->used_gpus;
            o.score[0] = o.n;
            o.score[1] = node_unused;
            o.score[2] = (free_in - o.n) * 1000 + (node_free - o.n);
            out[no++] = o;
        }
        return no;
    }
    if (k == GK_TS || k == GK_MIG) {
        bool seen_empty = false;
        if (t->gcount == 1) {
            for (int i = 0; i < g->gpus && no < cap; i++) {
                const gpa_sim_gpu *u = &nd->gpus[i];
                bool empty = u->n_pods == 0;
                long long left;
                if (k == GK_TS) {
                    if ((int)u->n_pods >= g->replicas) continue;
                    left = g->replicas - (long long)u->n_pods - 1;
                } else if (g->mode == GPA_SIM_MIG_AUTO) {
                    if (!(u->can_add & (1u << (p - g->model->profiles)))) continue;
                    left = free_slices(u, g) - p->mem_slots;
                } else {
                    bool found = false;
                    for (size_t j = 0; j < u->n_slots; j++)
                        found |= u->slots[j].p == p && u->slots[j].pod < 0;
                    if (!found) continue;
                    left = free_slices(u, g) - p->mem_slots;
                }
                if (empty && seen_empty) continue;
                seen_empty |= empty;
                out[no++] =
                    (gpa_sim_opt){.n = 1, .gpu = {i}, .score = {empty, node_unused, left, i}};
            }
            return no;
        }
        /* Several units: fill the fullest GPUs first, on a scratch copy of the counts. */
        gpa_sim_opt o = {0};
        int used_n[GPA_SIM_MAX_GPUS_PER_NODE];
        for (int i = 0; i < g->gpus; i++)
            used_n[i] = (int)nd->gpus[i].n_pods;
        for (long long u = 0; u < t->gcount; u++) {
            int best = -1;
            for (int i = 0; i < g->gpus; i++) {
                int room = k == GK_TS ? g->replicas - used_n[i] : 0;
                if (k == GK_MIG) {
                    /* conservative for several instances: only empty GPUs or ones not yet
                     * touched by this pod that can take one more */
                    const gpa_sim_gpu *gu = &nd->gpus[i];
                    bool touched = used_n[i] != (int)gu->n_pods;
                    bool can = g->mode == GPA_SIM_MIG_AUTO
                                   ? (gu->can_add & (1u << (p - g->model->profiles))) != 0
                                   : false;
                    if (g->mode == GPA_SIM_MIG_FIXED) {
                        int free_inst = 0;
                        for (size_t j = 0; j < gu->n_slots; j++)
                            free_inst += gu->slots[j].p == p && gu->slots[j].pod < 0;
                        can = free_inst > used_n[i] - (int)gu->n_pods;
                        touched = false;
                    }
                    room = can && !touched ? 1 : 0;
                }
                if (room <= 0) continue;
                if (best < 0 || used_n[i] > used_n[best]) best = i;
            }
            if (best < 0) return 0;
            if (used_n[best] == 0) o.score[0]++;
            used_n[best]++;
            o.gpu[o.n++] = best;
        }
        o.score[1] = node_unused;
        out[0] = o;
        return 1;
    }
    return 0;
}

bool gpa_sim_resources_fit(const gpa_sim *s, size_t n, const gpa_sim_tmpl *t)
{
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    const gpa_sim_node *nd = &s->nodes[n];
    if (g->cpu_milli >= 0 && nd->cpu + t->cpu > g->cpu_milli) return false;
    if (g->mem >= 0 && nd->mem + t->mem > g->mem) return false;
    if (g->max_pods >= 0 && nd->pods + 1 > g->max_pods) return false;
    return true;
}

int gpa_sim_apply(gpa_sim *s, size_t pi, size_t n, const gpa_sim_opt *o)
{
    gpa_sim_pod *pod = &s->pods[pi];
    gpa_sim_tmpl *t = &s->tmpls[pod->tmpl];
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    gpa_sim_node *nd = &s->nodes[n];
    const gpa_mig_profile *p;
    gpa_sim_gkind k = gpa_sim_offer(s, n, t, &p);
    s->apply_seq++; /* an unplaced pod's explanation is stale once anything moved */
    pod->mem_alloc = 0;
    for (int i = 0; i < o->n; i++) {
        gpa_sim_gpu *u = &nd->gpus[o->gpu[i]];
        if (u->n_pods == 0) nd->used_gpus++;
        if (k == GK_MIG && g->mode == GPA_SIM_MIG_FIXED) {
            for (size_t j = 0; j < u->n_slots; j++)
                if (u->slots[j].p == p && u->slots[j].pod < 0) {
                    u->slots[j].pod = (long)pi;
                    break;
                }
        } else if (slot_push(u, (gpa_sim_slot){k == GK_MIG ? p : NULL, 0, (long)pi})) {
            return GPA_ENOMEM;
        }
        u->n_pods++;
        if (k == GK_MIG && g->mode == GPA_SIM_MIG_AUTO) mig_refresh(u, g->model);
        pod->mem_alloc += k == GK_MIG  ? p->mem_bytes
                          : k == GK_TS ? g->gpu_mem / (g->replicas ? g->replicas : 1)
                                       : g->gpu_mem;
    }
    pod->gpu_first = o->n ? o->gpu[0] : -1;
    nd->cpu += t->cpu;
    nd->mem += t->mem;
    nd->pods++;
    pod->node = (long)n;
    size_t *np = gpa_sim_grow(t->placed_nodes, &t->cap_placed, t->n_placed + 1, sizeof *np);
    if (!np) return GPA_ENOMEM;
    t->placed_nodes = np;
    if (!t->cap_placed_seen) {
        size_t *pl =
            gpa_sim_grow(s->placed_tmpls, &s->cap_placed_tmpls, s->n_placed_tmpls + 1, sizeof *pl);
        if (!pl) return GPA_ENOMEM;
        s->placed_tmpls = pl;
        pl[s->n_placed_tmpls++] = pod->tmpl;
        t->cap_placed_seen = true;
    }
    np[t->n_placed++] = n;
    return GPA_OK;
}

void gpa_sim_unapply(gpa_sim *s, size_t pi, const gpa_sim_opt *o)
{
    gpa_sim_pod *pod = &s->pods[pi];
    gpa_sim_tmpl *t = &s->tmpls[pod->tmpl];
    size_t n = (size_t)pod->node;
    const gpa_sim_group *g = gpa_sim_grp(s, n);
    gpa_sim_node *nd = &s->nodes[n];
    s->apply_seq++;
    for (int i = o->n - 1; i >= 0; i--) {
        gpa_sim_gpu *u = &nd->gpus[o->gpu[i]];
        for (size_t j = u->n_slots; j-- > 0;)
            if (u->slots[j].pod == (long)pi) {
                if (g->mode == GPA_SIM_MIG_FIXED) {
                    u->slots[j].pod = -1;
                } else {
                    memmove(&u->slots[j], &u->slots[j + 1],
                            (u->n_slots - j - 1) * sizeof *u->slots);
                    u->n_slots--;
                }
                break;
            }
        u->n_pods--;
        if (u->n_pods == 0) nd->used_gpus--;
        if (g->mode == GPA_SIM_MIG_AUTO) mig_refresh(u, g->model);
    }
    nd->cpu -= t->cpu;
    nd->mem -= t->mem;
    nd->pods--;
    t->n_placed--;
    pod->node = -1;
    pod->gpu_first = -1;
    pod->mem_alloc = 0;
}

size_t gpa_sim_gpus_used(const gpa_sim *s)
{
    size_t u = 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        u += s->nodes[n].used_gpus;
    return u;
}
