/*
 * output_suggest.c - `simulate --suggest-mig`: the mig-parted config file for the MIG layouts
 * the packing used. Reads the packed state only.
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

char *gpa_sim_suggest_mig(const gpa_sim *s)
{
    gpa_sb b = {0}, body = {0};
    gpa_sb_printf(
        &b, "# mig-parted config from gpu-admission simulate. <group>-uniform: one layout for\n"
            "# every GPU of a MIG node group, the one holding the group's placed instances in\n"
            "# the fewest GPUs. <group>-<node>: per node in use, the layout the packing chose\n"
            "# per GPU (GPUs without pods keep MIG off), which may need fewer GPUs still. Label\n"
            "# nodes nvidia.com/mig.config=<entry> for the MIG manager to apply one.\n"
            "version: v1\n");
    size_t written = 0;
    for (size_t gi = 0; gi < s->inv->n_groups; gi++) {
        const gpa_sim_group *g = &s->inv->groups[gi];
        if (g->mode != GPA_SIM_MIG_AUTO && g->mode != GPA_SIM_MIG_FIXED) continue;
        long need[16] = {0}, total = 0;
        for (size_t n = 0; n < s->inv->n_nodes; n++) {
            if (s->inv->nodes[n].group != gi) continue;
            for (int k = 0; k < g->gpus; k++) {
                const gpa_sim_gpu *u = &s->nodes[n].gpus[k];
                for (size_t j = 0; j < u->n_slots; j++)
                    if (u->slots[j].pod >= 0) {
                        need[u->slots[j].p - g->model->profiles]++;
                        total++;
                    }
            }
        }
        if (!total) continue;
        uniform un = {.m = g->model, .need = need, .best_gpus = -1};
        const gpa_mig_profile *inst[GPA_MIG_MAX_INSTANCES];
        uniform_rec(&un, 0, inst, 0);
        if (un.best_gpus < 0) continue;
        gpa_sb_printf(
            &body,
            "  %s-uniform:  # group %s: its %ld placed instances on %ld GPUs, every GPU the "
            "same layout%s\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n",
            g->name, g->name, total, un.best_gpus,
            un.best_gpus > (long)g->gpus * g->count ? " (more GPUs than the group has)" : "");
        for (size_t pi = 0; pi < g->model->n_profiles; pi++)
            if (un.best[pi])
                gpa_sb_printf(&body, "        \"%s\": %d\n", g->model->profiles[pi].name,
                              un.best[pi]);
        written++;
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
