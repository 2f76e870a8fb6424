/*
 * sim.c - a run's lifetime: gpa_sim_new lays out every node's GPUs as the inventory describes
 * them (fixed MIG layouts carved, auto-MIG cards open to every profile), gpa_sim_free releases
 * what every stage of the run allocated.
 *
 * The stages live beside it, each in its own file, calling only the ones listed after it:
 *   sim_results.c  (figures after the run)        -> sim_slots.c
 *   sim_pack.c     (best-fit decreasing, exact)   -> sim_shape.c, sim_gang.c, sim_slots.c,
 *                                                    sim_affinity.c, sim_feasible.c
 *   sim_gang.c     (gangs whole: taken back off)  -> sim_slots.c, sim_feasible.c
 *   sim_shape.c    (nodes that pack alike)        -> nothing but the shared types
 *   sim_slots.c    (GPU/MIG slot state)           -> sim_feasible.c, sim_util.c
 *   sim_affinity.c (pod (anti-)affinity view)     -> sim_feasible.c, sim_util.c
 *   sim_feasible.c (checks that ignore other pods)-> sim_util.c
 *   sim_intake.c   (queueing admitted pods)       -> sim_util.c
 *   sim_util.c     (shared helpers, the leaf)     -> inventory.c (a node's labels)
 * and from outside: output_*.c -> output_agg.c, sim_results.c, admit.c -> sim_intake.c,
 * sim_compare.c (a second run on whole GPUs) -> this file, sim_intake.c, sim_pack.c.
 * sim_internal.h holds the types they share. This file must never call a stage: freeing is plain
 * free() on the shared types, so every file can rely on it without a cycle.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

int gpa_sim_new(gpa_sim **out, const gpa_sim_inventory *inv, gpa_error *err)
{
    *out = NULL;
    gpa_sim *s = calloc(1, sizeof *s);
    if (!s) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->inv = inv;
    s->explained_pod = -1;
    s->nodes = calloc(inv->n_nodes ? inv->n_nodes : 1, sizeof *s->nodes);
    if (!s->nodes) {
        free(s);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < inv->n_nodes; i++) {
        const gpa_sim_group *g = gpa_sim_grp(s, i);
        s->nodes[i].gpus = calloc(g->gpus ? (size_t)g->gpus : 1, sizeof(gpa_sim_gpu));
        if (!s->nodes[i].gpus) {
            gpa_sim_free(s);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        for (int k = 0; k < g->gpus; k++) {
            gpa_sim_gpu *u = &s->nodes[i].gpus[k];
            if (g->mode == GPA_SIM_MIG_FIXED) {
                int starts[GPA_MIG_MAX_INSTANCES];
                gpa_mig_layout_valid(starts, g->model, g->fixed, g->n_fixed);
                u->slots = calloc(g->n_fixed, sizeof *u->slots);
                if (!u->slots) {
                    gpa_sim_free(s);
                    return gpa_fail(err, GPA_ENOMEM, "out of memory");
                }
                u->cap_slots = u->n_slots = g->n_fixed;
                for (size_t j = 0; j < g->n_fixed; j++)
                    u->slots[j] = (gpa_sim_slot){g->fixed[j], starts[j], -1};
            }
            if (g->mode == GPA_SIM_MIG_AUTO) u->can_add = (1u << g->model->n_profiles) - 1u;
        }
    }
    *out = s;
    return GPA_OK;
}

void gpa_sim_set_gangs_whole(gpa_sim *s, bool whole)
{
    s->gangs_whole = whole;
}

void gpa_sim_free(gpa_sim *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_tmpls; i++) {
        gpa_sim_tmpl *t = &s->tmpls[i];
        cJSON_Delete(t->obj);
        free(t->name);
        free(t->tenant);
        free(t->pool);
        for (size_t k = 0; k < t->n_xres; k++)
            free(t->xres[k]);
        free(t->xres);
        free(t->gres);
        free(t->aff);
        free(t->anti);
        free(t->placed_nodes);
        free(t->key);
    }
    free(s->tmpls);
    free(s->tbl);
    free(s->placed_tmpls);
    for (size_t i = 0; i < s->n_pods; i++) {
        free(s->pods[i].reason_detail);
        free(s->pods[i].name);
    }
    free(s->pods);
    for (size_t i = 0; i < s->n_denied; i++) {
        free(s->denied[i].pod);
        free(s->denied[i].message);
        free(s->denied[i].pool);
    }
    free(s->denied);
    if (s->nodes)
        for (size_t i = 0; i < s->inv->n_nodes; i++) {
            const gpa_sim_group *g = gpa_sim_grp(s, i);
            if (s->nodes[i].gpus)
                for (int k = 0; k < g->gpus; k++)
                    free(s->nodes[i].gpus[k].slots);
            free(s->nodes[i].gpus);
        }
    free(s->nodes);
    for (size_t i = 0; i < s->n_sigs; i++) {
        free(s->sigs[i].key);
        free(s->sigs[i].nodes);
        free(s->sigs[i].why);
    }
    free(s->sigs);
    for (size_t i = 0; i < s->n_topos; i++) {
        free(s->topos[i].key);
        free(s->topos[i].vid);
    }
    free(s->topos);
    free(s->whole_placed);
    free(s->explain_static);
    free(s->explain_static_done);
    free(s);
}
