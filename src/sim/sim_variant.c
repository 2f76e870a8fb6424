/*
 * sim_variant.c - `simulate --compare`: the run's admitted pods packed again on other
 * inventories, so layouts and inventories can be compared side by side on the same pods.
 * Variants of the run's own inventory are built here: every MIG group set to one layout
 * (mig=VALUE), or each MIG group laid out as --suggest-mig proposes (per-node plan, else the
 * one layout for every GPU).
 *
 * A variant shares the base inventory's strings, labels and taints (node labels, including
 * nvidia.com/mig.config, stay the base's); only its group and node arrays are its own, freed
 * with gpa_sim_inventory_variant_free. Never changes the run it reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_internal.h"

static gpa_sim_inventory *shallow(const gpa_sim_inventory *base, size_t n_groups)
{
    gpa_sim_inventory *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    *v = *base;
    v->groups = calloc(n_groups ? n_groups : 1, sizeof *v->groups);
    v->nodes = calloc(base->n_nodes ? base->n_nodes : 1, sizeof *v->nodes);
    if (!v->groups || !v->nodes) {
        gpa_sim_inventory_variant_free(v);
        return NULL;
    }
    memcpy(v->groups, base->groups, base->n_groups * sizeof *v->groups);
    memcpy(v->nodes, base->nodes, base->n_nodes * sizeof *v->nodes);
    v->n_groups = base->n_groups;
    return v;
}

void gpa_sim_inventory_variant_free(gpa_sim_inventory *v)
{
    if (!v) return;
    free(v->groups);
    free(v->nodes);
    free(v);
}

/* g laid out as `per` on every GPU (fixed), false when that is no valid layout of its model. */
static bool set_fixed(gpa_sim_group *g, const int *per)
{
    g->n_fixed = 0;
    for (size_t p = 0; p < g->model->n_profiles; p++)
        for (int k = 0; k < per[p] && g->n_fixed < GPA_MIG_MAX_INSTANCES; k++)
            g->fixed[g->n_fixed++] = &g->model->profiles[p];
    g->mode = GPA_SIM_MIG_FIXED;
    return g->n_fixed && gpa_mig_layout_valid(NULL, g->model, g->fixed, g->n_fixed);
}

/* mig-parted's config name (all-balanced, all-<profile> with "+" as ".") or auto / none. */
static int apply_mig(gpa_sim_group *g, const char *mig, gpa_error *err)
{
    if (strcmp(mig, "none") == 0) {
        g->mode = GPA_SIM_WHOLE;
        g->n_fixed = 0;
        return GPA_OK;
    }
    if (strcmp(mig, "auto") == 0) {
        g->mode = GPA_SIM_MIG_AUTO;
        g->n_fixed = 0;
        return GPA_OK;
    }
    int per[16] = {0};
    const gpa_mig_model *m = g->model;
    if (strcmp(mig, "all-balanced") == 0) {
        const gpa_mig_profile *b[GPA_MIG_MAX_INSTANCES];
        size_t n = gpa_mig_balanced(b, GPA_MIG_MAX_INSTANCES, m);
        for (size_t i = 0; i < n; i++)
            per[b[i] - m->profiles]++;
    } else if (strncmp(mig, "all-", 4) == 0) {
        for (size_t p = 0; p < m->n_profiles; p++)
            if (strcmp(m->profiles[p].resource + strlen("nvidia.com/mig-"), mig + 4) == 0)
                per[p] = m->profiles[p].max_instances;
    }
    if (!set_fixed(g, per))
        return gpa_fail(err, GPA_EINVAL,
                        "%s is not a layout of %s (auto, none, all-balanced or "
                        "all-<profile>, e.g. all-%s)",
                        mig, m->name, m->profiles[0].resource + strlen("nvidia.com/mig-"));
    return GPA_OK;
}

static bool mig_group(const gpa_sim_group *g)
{
    return g->model && g->model->n_profiles && g->mode != GPA_SIM_TS;
}

int gpa_sim_inventory_variant_mig(gpa_sim_inventory **out, const gpa_sim_inventory *base,
                                  const char *mig, gpa_error *err)
{
    *out = shallow(base, base->n_groups);
    if (!*out) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    size_t changed = 0;
    for (size_t g = 0; g < base->n_groups; g++) {
        if (!mig_group(&base->groups[g])) continue;
        int rc = apply_mig(&(*out)->groups[g], mig, err);
        if (rc != GPA_OK) {
            gpa_sim_inventory_variant_free(*out);
            *out = NULL;
            return rc;
        }
        changed++;
    }
    if (!changed) {
        gpa_sim_inventory_variant_free(*out);
        *out = NULL;
        return gpa_fail(err, GPA_EINVAL, "the inventory has no MIG-capable node group");
    }
    return GPA_OK;
}

int gpa_sim_inventory_variant_suggested(gpa_sim_inventory **out, const gpa_sim *s, gpa_error *err)
{
    const gpa_sim_inventory *base = s->inv;
    /* at most 17 parts per group */
    *out = shallow(base, base->n_groups * 18);
    if (!*out) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    gpa_sim_inventory *v = *out;
    size_t *canon = gpa_sim_mig_canon(s);
    long *demand = canon ? gpa_sim_mig_demand(s, canon) : NULL;
    if (!demand) {
        free(canon);
        gpa_sim_inventory_variant_free(v);
        *out = NULL;
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t gi = 0; gi < base->n_groups; gi++) {
        gpa_sim_plan pl;
        if (canon[gi] != gi || !gpa_sim_mixed_plan(&pl, s, gi, demand, canon)) continue;
        if (!pl.better) {
            /* one layout for every GPU of every group planned with gi */
            for (size_t gj = gi; pl.ugpus >= 0 && gj < base->n_groups; gj++)
                if (canon[gj] == gi) set_fixed(&v->groups[gj], pl.uni);
            continue;
        }
        /* the plan's parts take the group's nodes in order; the rest keep the group as is */
        size_t at = 0;
        for (size_t i = 0; i < pl.n_parts; i++) {
            size_t ng = v->n_groups++;
            v->groups[ng] = base->groups[gi];
            set_fixed(&v->groups[ng], pl.parts[i].per);
            v->groups[ng].count = (long long)pl.parts[i].nodes;
            for (size_t n = 0, k = 0; n < base->n_nodes && k < at + pl.parts[i].nodes; n++) {
                if (canon[base->nodes[n].group] != gi) continue;
                if (k++ >= at) v->nodes[n].group = ng;
            }
            at += pl.parts[i].nodes;
        }
    }
    free(demand);
    free(canon);
    return GPA_OK;
}

int gpa_sim_run_on(gpa_sim_totals *out, const gpa_sim *s, const gpa_sim_inventory *inv,
                   gpa_error *err)
{
    gpa_sim *w = NULL;
    int rc = gpa_sim_new(&w, inv, err);
    if (w) w->gangs_whole = s->gangs_whole;
    for (size_t i = 0; rc == GPA_OK && i < s->n_pods;) {
        size_t ti = s->pods[i].tmpl, n = 1;
        while (i + n < s->n_pods && s->pods[i + n].tmpl == ti)
            n++;
        const gpa_sim_tmpl *t = &s->tmpls[ti];
        rc = gpa_sim_add_pod_pool(w, t->obj, t->name, (long long)n, t->pool, err);
        i += n;
    }
    for (size_t i = 0; rc == GPA_OK && i < s->n_denied; i++)
        rc = gpa_sim_add_denied_pool(w, s->denied[i].pod, s->denied[i].message, s->denied[i].pool,
                                     s->denied[i].pods, err);
    if (rc == GPA_OK) rc = gpa_sim_run(w, GPA_SIM_BFD, err);
    if (rc == GPA_OK) {
        w->skipped = s->skipped;
        gpa_sim_get_totals(out, w);
    }
    gpa_sim_free(w);
    return rc;
}
