/*
 * output_suggest.c - `simulate --suggest-mig`: the mig-parted config file for the MIG layouts:
 * one layout per group, per-node layouts mixed across a group's nodes, and the layouts the
 * packing used. Reads the packed state only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

/* The best uniform layout for a group: every GPU carries the same instances (one mig-parted
 * entry with devices: all), chosen among every valid layout of the model as the one holding
 * the group's placed instances in the fewest GPUs (ties: the least memory left idle, then the
 * most slices in profiles the workload uses). */
typedef struct uniform {
    const gpa_mig_model *m;
    const long *need; /* per profile index */
    int cur[16], best[16];
    long best_gpus, best_idle, best_slots;
} uniform;

static void uniform_eval(uniform *u)
{
    long gpus = 0, slots = 0;
    for (size_t i = 0; i < u->m->n_profiles; i++) {
        if (!u->need[i]) continue;
        slots += (long)u->cur[i] * u->m->profiles[i].mem_slots;
        if (!u->cur[i]) return;
        long g = (u->need[i] + u->cur[i] - 1) / u->cur[i];
        if (g > gpus) gpus = g;
    }
    if (!gpus) return;
    long idle = gpus * u->m->mem_slots;
    for (size_t i = 0; i < u->m->n_profiles; i++)
        idle -= u->need[i] * u->m->profiles[i].mem_slots;
    /* ties: more slices in the profiles the workload uses, room for it to grow */
    if (u->best_gpus < 0 || gpus < u->best_gpus || (gpus == u->best_gpus && idle < u->best_idle) ||
        (gpus == u->best_gpus && idle == u->best_idle && slots > u->best_slots)) {
        u->best_gpus = gpus;
        u->best_idle = idle;
        u->best_slots = slots;
        memcpy(u->best, u->cur, sizeof u->best);
    }
}

static void uniform_rec(uniform *u, size_t k, const gpa_mig_profile **inst, size_t n)
{
    if (k == u->m->n_profiles) {
        uniform_eval(u);
        return;
    }
    for (int c = 0; c <= u->m->profiles[k].max_instances && n + (size_t)c <= GPA_MIG_MAX_INSTANCES;
         c++) {
        for (int j = 0; j < c; j++)
            inst[n + (size_t)j] = &u->m->profiles[k];
        /* adding instances never makes an invalid layout valid: prune */
        if (c && !gpa_mig_layout_valid(NULL, u->m, inst, n + (size_t)c)) break;
        u->cur[k] = c;
        uniform_rec(u, k + 1, inst, n + (size_t)c);
    }
    u->cur[k] = 0;
}

/* The best single layout for the instances need asks (uniform_rec over every valid layout):
 * its GPUs, -1 when none holds them all; *out gets its instances per profile. */
static long best_layout(int *out, const gpa_mig_model *m, const long *need)
{
    uniform un = {.m = m, .need = need, .best_gpus = -1};
    const gpa_mig_profile *inst[GPA_MIG_MAX_INSTANCES];
    uniform_rec(&un, 0, inst, 0);
    if (un.best_gpus >= 0) memcpy(out, un.best, sizeof un.best);
    return un.best_gpus;
}

/* mig-parted's name for a layout when it is one of its named configs (all-<profile>, with
 * "+" written ".", or all-balanced), else NULL. */
static const char *named_config(char *buf, size_t cap, const gpa_mig_model *m, const int *per)
{
    const gpa_mig_profile *bal[GPA_MIG_MAX_INSTANCES];
    size_t nb = gpa_mig_balanced(bal, GPA_MIG_MAX_INSTANCES, m);
    int bc[16] = {0};
    for (size_t i = 0; i < nb; i++)
        bc[bal[i] - m->profiles]++;
    if (nb && memcmp(bc, per, sizeof bc) == 0) return "all-balanced";
    for (size_t p = 0; p < m->n_profiles; p++) {
        bool only = per[p] == m->profiles[p].max_instances;
        for (size_t q = 0; only && q < m->n_profiles; q++)
            only = q == p || per[q] == 0;
        if (!only) continue;
        snprintf(buf, cap, "all-%s", m->profiles[p].resource + strlen("nvidia.com/mig-"));
        return buf;
    }
    return NULL;
}

/* "a100-0..a100-2 (3 nodes)" for the group's nodes from..to-1 (inventory order). */
static void node_range(gpa_sb *b, const gpa_sim *s, const size_t *nodes, size_t from, size_t to)
{
    if (to - from == 1)
        gpa_sb_printf(b, "%s", s->inv->nodes[nodes[from]].name);
    else
        gpa_sb_printf(b, "%s..%s (%zu nodes)", s->inv->nodes[nodes[from]].name,
                      s->inv->nodes[nodes[to - 1]].name, to - from);
}

size_t *gpa_sim_mig_canon(const gpa_sim *s)
{
    size_t ng = s->inv->n_groups;
    size_t *c = malloc((ng ? ng : 1) * sizeof *c);
    if (!c) return NULL;
    for (size_t gi = 0; gi < ng; gi++) {
        const gpa_sim_group *g = &s->inv->groups[gi];
        c[gi] = gi;
        if (g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) continue;
        /* a node List makes a group per node, named by its gpu.product: one MIG group is
         * every group of that name, model and GPU count */
        for (size_t gj = 0; gj < gi; gj++) {
            const gpa_sim_group *h = &s->inv->groups[gj];
            if (c[gj] == gj && (h->mode == GPA_SIM_MIG_AUTO || h->mode == GPA_SIM_MIG_FIXED) &&
                h->model == g->model && h->gpus == g->gpus && strcmp(h->name, g->name) == 0) {
                c[gi] = gj;
                break;
            }
        }
    }
    return c;
}

long *gpa_sim_mig_demand(const gpa_sim *s, const size_t *canon)
{
    size_t ng = s->inv->n_groups ? s->inv->n_groups : 1;
    long *d = calloc(ng * 16, sizeof *d);
    long *unplaced = calloc(s->n_tmpls + 1, sizeof *unplaced);
    size_t *stamp = calloc(ng, sizeof *stamp);
    if (!d || !unplaced || !stamp) {
        free(d);
        free(unplaced);
        free(stamp);
        return NULL;
    }
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_pod *p = &s->pods[i];
        const gpa_sim_tmpl *t = &s->tmpls[p->tmpl];
        if (!t->gres) continue;
        if (p->node < 0) {
            unplaced[p->tmpl] += t->gcount;
            continue;
        }
        size_t gi = canon[s->inv->nodes[p->node].group];
        const gpa_mig_model *m = s->inv->groups[gi].model;
        for (size_t q = 0; m && q < m->n_profiles && q < 16; q++)
            if (strcmp(m->profiles[q].resource, t->gres) == 0) d[gi * 16 + q] += t->gcount;
    }
    /* an unplaced template counts for every group one of its class's nodes is in (each once) */
    for (size_t ti = 0; ti < s->n_tmpls; ti++) {
        const gpa_sim_tmpl *t = &s->tmpls[ti];
        if (!unplaced[ti] || t->sig >= s->n_sigs) continue;
        const gpa_sim_sig *sg = &s->sigs[t->sig];
        for (size_t k = 0; k < sg->n_nodes; k++) {
            size_t gi = canon[s->inv->nodes[sg->nodes[k]].group];
            if (stamp[gi] == ti + 1) continue;
            stamp[gi] = ti + 1;
            const gpa_mig_model *m = s->inv->groups[gi].model;
            for (size_t q = 0; m && q < m->n_profiles && q < 16; q++)
                if (strcmp(m->profiles[q].resource, t->gres) == 0) d[gi * 16 + q] += unplaced[ti];
        }
    }
    free(unplaced);
    free(stamp);
    return d;
}

bool gpa_sim_mixed_plan(gpa_sim_plan *pl, const gpa_sim *s, size_t gi, const long *demand,
                        const size_t *canon)
{
    const gpa_sim_group *g = &s->inv->groups[gi];
    const gpa_mig_model *m = g->model;
    memset(pl, 0, sizeof *pl);
    pl->ugpus = -1;
    if (!m || (g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) || g->gpus <= 0)
        return false;
    long need[16] = {0};
    for (size_t q = 0; q < m->n_profiles && q < 16; q++) {
        need[q] = demand[gi * 16 + q];
        pl->total += need[q];
    }
    if (!pl->total) return false;
    pl->ugpus = best_layout(pl->uni, m, need);
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        pl->n_nodes += canon[s->inv->nodes[n].group] == gi;
    long G = g->gpus, full[16] = {0}, rest[16] = {0};
    bool joined[16] = {false};
    /* a config is per node: while the plan needs more nodes than the group has, the profile
     * with the fewest full GPUs joins the leftovers (all of them joined: one layout) */
    int rl[16] = {0};
    long gpus = 0, rgpus = 0, rest_n = 0;
    size_t want = 0;
    for (;;) {
        rest_n = 0;
        gpus = 0;
        want = 0;
        for (size_t p = 0; p < m->n_profiles; p++) {
            long max = m->profiles[p].max_instances;
            full[p] = joined[p] ? 0 : need[p] / max;
            rest[p] = joined[p] ? need[p] : need[p] % max;
            /* the last node of all-<p> has a GPU to spare: the leftovers of p take it before
             * any node is opened for them */
            if (!joined[p] && full[p] % G && rest[p]) {
                full[p]++;
                rest[p] = 0;
            }
            rest_n += rest[p];
            gpus += full[p];
            want += (size_t)((full[p] + G - 1) / G);
        }
        rgpus = rest_n ? best_layout(rl, m, rest) : 0;
        if (rgpus < 0) break;
        gpus += rgpus;
        want += (size_t)((rgpus + G - 1) / G);
        if (want <= pl->n_nodes) break;
        size_t pick = SIZE_MAX;
        for (size_t p = 0; p < m->n_profiles; p++)
            if (full[p] && (pick == SIZE_MAX || full[p] < full[pick])) pick = p;
        if (pick == SIZE_MAX) break;
        joined[pick] = true;
    }
    if (rgpus < 0 || want > pl->n_nodes) return false;
    pl->gpus = gpus;
    pl->fits = true;
    for (size_t p = 0; p <= m->n_profiles; p++) {
        gpa_sim_plan_part *pt = &pl->parts[pl->n_parts];
        if (p < m->n_profiles) {
            if (!full[p]) continue;
            pt->per[p] = m->profiles[p].max_instances;
            pt->gpus = full[p];
        } else {
            if (!rest_n) break;
            /* leftovers laid out as one of the parts above (all-<p> when only p is left over
             * and its nodes had no GPU to spare): more GPUs of that part, one config name */
            size_t same = 0;
            while (same < pl->n_parts && memcmp(pl->parts[same].per, rl, sizeof rl) != 0)
                same++;
            if (same < pl->n_parts) {
                pl->parts[same].gpus += rgpus;
                pl->parts[same].nodes = (size_t)((pl->parts[same].gpus + G - 1) / G);
                break;
            }
            memcpy(pt->per, rl, sizeof pt->per);
            pt->gpus = rgpus;
        }
        pt->nodes = (size_t)((pt->gpus + G - 1) / G);
        const char *cfg = named_config(pt->cfg, sizeof pt->cfg, m, pt->per);
        if (cfg != pt->cfg) snprintf(pt->cfg, sizeof pt->cfg, "%s", cfg ? cfg : "mixed-rest");
        pl->n_parts++;
    }
    pl->better = pl->ugpus < 0 || gpus < pl->ugpus;
    return true;
}

static size_t mixed_plan(gpa_sb *body, const gpa_sim *s, size_t gi, const long *demand,
                         const size_t *canon)
{
    const gpa_sim_group *g = &s->inv->groups[gi];
    const gpa_mig_model *m = g->model;
    gpa_sim_plan pl;
    if (!demand || !gpa_sim_mixed_plan(&pl, s, gi, demand, canon)) {
        /* demand the group cannot hold even mixed: said, so the silence is not read as "no
         * better layout" */
        if (demand && pl.total)
            gpa_sb_printf(body,
                          "  # %s: its %ld MIG pods (placed and unplaced) need more than its "
                          "%zu nodes under per-node layouts; no per-node plan\n",
                          g->name, pl.total, pl.n_nodes);
        return 0;
    }
    if (!pl.better) {
        gpa_sb_printf(body,
                      "  # %s: per-node layouts would take %ld GPUs for its %ld MIG pods, no "
                      "fewer than one layout on every GPU (%ld)\n",
                      g->name, pl.gpus, pl.total, pl.ugpus);
        return 0;
    }
    size_t *nodes = malloc((s->inv->n_nodes ? s->inv->n_nodes : 1) * sizeof *nodes), nn = 0;
    if (!nodes) return 0;
    for (size_t n = 0; n < s->inv->n_nodes; n++)
        if (canon[s->inv->nodes[n].group] == gi) nodes[nn++] = n;
    gpa_sb_printf(body, "  # %s: per-node layouts hold its %ld MIG pods on %ld GPUs", g->name,
                  pl.total, pl.gpus);
    if (pl.ugpus >= 0)
        gpa_sb_printf(body, "; one layout on every GPU takes %ld", pl.ugpus);
    else
        gpa_sb_printf(body, "; no single layout holds them all");
    gpa_sb_printf(body, ". Label nodes:\n");
    gpa_sb entries = {0};
    size_t at = 0;
    for (size_t i = 0; i < pl.n_parts; i++) {
        const gpa_sim_plan_part *pt = &pl.parts[i];
        bool named = strcmp(pt->cfg, "mixed-rest") != 0;
        gpa_sb_printf(body, "  #   ");
        node_range(body, s, nodes, at, at + pt->nodes);
        gpa_sb_printf(body, ": nvidia.com/mig.config=%s-%s (%ld GPU(s) used)\n", g->name, pt->cfg,
                      pt->gpus);
        at += pt->nodes;
        gpa_sb_printf(&entries,
                      "  %s-%s:  # %s\n    - devices: all\n      mig-enabled: true\n"
                      "      mig-devices:\n",
                      g->name, pt->cfg,
                      named ? "mig-parted's config of this name"
                            : "the leftover instances' layout");
        for (size_t q = 0; q < m->n_profiles; q++)
            if (pt->per[q])
                gpa_sb_printf(&entries, "        \"%s\": %d\n", m->profiles[q].name, pt->per[q]);
    }
    if (at < nn) {
        gpa_sb_printf(body, "  #   ");
        node_range(body, s, nodes, at, nn);
        gpa_sb_printf(body, ": unused\n");
    }
    char *e = gpa_sb_done(&entries);
    if (e) gpa_sb_printf(body, "%s", e);
    free(e);
    free(nodes);
    return pl.n_parts;
}

char *gpa_sim_suggest_mig(const gpa_sim *s)
{
    gpa_sb b = {0}, body = {0};
    /* a pool no node can take leaves its pods out of every layout below: say so first */
    size_t nn = 0;
    gpa_sim_nonode *nonodes = gpa_sim_pools_without_nodes(s, &nn);
    for (size_t i = 0; i < nn; i++) {
        gpa_sb_printf(&b, "# ");
        gpa_sim_nonode_line(&b, &nonodes[i]);
        gpa_sb_printf(&b, "\n");
    }
    gpa_sim_nonodes_free(nonodes, nn);
    gpa_sb_printf(
        &b, "# mig-parted config from gpu-admission simulate. <group>-uniform: one layout for\n"
            "# every GPU of a MIG node group, the one holding the group's placed instances in\n"
            "# the fewest GPUs. <group>-<node>: per node in use, the layout the packing chose\n"
            "# per GPU (GPUs without pods keep MIG off), which may need fewer GPUs still.\n"
            "# <group>-<config>: per-node layouts mixed across a group (mig-parted's named\n"
            "# configs, <group>-mixed-rest for the leftover instances), when they take fewer\n"
            "# GPUs than one layout on every GPU; the comment above them says which nodes get\n"
            "# which. Label nodes nvidia.com/mig.config=<entry> for the MIG manager to apply one.\n"
            "version: v1\n");
    size_t written = 0;
    size_t *canon = gpa_sim_mig_canon(s);
    /* NULL (out of memory): no per-node plans */
    long *demand = canon ? gpa_sim_mig_demand(s, canon) : NULL;
    for (size_t gi = 0; canon && gi < s->inv->n_groups; gi++) {
        const gpa_sim_group *g = &s->inv->groups[gi];
        if (g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) continue;
        if (canon[gi] != gi) continue; /* its nodes are counted with the first of its name */
        long need[16] = {0}, total = 0, group_gpus = 0;
        for (size_t n = 0; n < s->inv->n_nodes; n++) {
            if (canon[s->inv->nodes[n].group] != gi) continue;
            group_gpus += g->gpus;
            for (int k = 0; k < g->gpus; k++) {
                const gpa_sim_gpu *u = &s->nodes[n].gpus[k];
                for (size_t j = 0; j < u->n_slots; j++)
                    if (u->slots[j].pod >= 0) {
                        need[u->slots[j].p - g->model->profiles]++;
                        total++;
                    }
            }
        }
        uniform un = {.m = g->model, .need = need, .best_gpus = -1};
        const gpa_mig_profile *inst[GPA_MIG_MAX_INSTANCES];
        if (total) uniform_rec(&un, 0, inst, 0);
        if (un.best_gpus >= 0) {
            gpa_sb_printf(&body,
                          "  %s-uniform:  # group %s: its %ld placed instances on %ld GPUs, every "
                          "GPU the same layout%s\n    - devices: all\n      mig-enabled: true\n"
                          "      mig-devices:\n",
                          g->name, g->name, total, un.best_gpus,
                          un.best_gpus > group_gpus ? " (more GPUs than the group has)" : "");
            for (size_t pi = 0; pi < g->model->n_profiles; pi++)
                if (un.best[pi])
                    gpa_sb_printf(&body, "        \"%s\": %d\n", g->model->profiles[pi].name,
                                  un.best[pi]);
            written++;
        }
        written += mixed_plan(&body, s, gi, demand, canon);
    }
    for (size_t n = 0; n < s->inv->n_nodes; n++) {
        const gpa_sim_group *g = gpa_sim_grp(s, n);
        const gpa_sim_node *nd = &s->nodes[n];
        if ((g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) || !nd->used_gpus)
            continue;
        gpa_sb_printf(&body, "  %s-%s:\n", g->name, s->inv->nodes[n].name);
        written++;
        for (int k = 0; k < g->gpus; k++) {
            const gpa_sim_gpu *u = &nd->gpus[k];
            gpa_sb_printf(&body, "    - devices: [%d]\n", k);
            if (!u->n_pods) {
                gpa_sb_printf(&body, "      mig-enabled: false\n");
                continue;
            }
            gpa_sb_printf(&body, "      mig-enabled: true\n      mig-devices:\n");
            for (size_t pi = 0; pi < g->model->n_profiles; pi++) {
                const gpa_mig_profile *p = &g->model->profiles[pi];
                size_t c = 0;
                for (size_t j = 0; j < u->n_slots; j++)
                    c += u->slots[j].p == p && u->slots[j].pod >= 0;
                if (c) gpa_sb_printf(&body, "        \"%s\": %zu\n", p->name, c);
            }
        }
    }
    free(demand);
    free(canon);
    char *bd = gpa_sb_done(&body);
    if (!bd) {
        gpa_sb_free(&b);
        return NULL;
    }
    if (written)
        gpa_sb_printf(&b, "mig-configs:\n%s", bd);
    else
        gpa_sb_printf(&b, "mig-configs: {}\n");
    free(bd);
    return gpa_sb_done(&b);
}
