/*
 * sim_compare.c - the simulated whole-GPU comparison: the run's admitted pods packed again on
 * the same nodes with every GPU offered whole, so "pods that fit only thanks to MIG or
 * sharing" is counted pod by pod instead of guessed from the one-card-per-ask baseline.
 *
 * A second run on a copy of the inventory whose groups are all plain device-plugin nodes;
 * the node definitions (names, labels, taints) are shared, so every selector, affinity and
 * toleration the webhooks wrote is judged the same way. Calls the run's public stages only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* The pod as the plain device plugin would be asked for it: its GPU resource renamed to
 * nvidia.com/gpu, count kept (a MIG instance or a replica becomes one card). */
static cJSON *as_whole(const gpa_sim_tmpl *t)
{
    cJSON *o = cJSON_Duplicate(t->obj, true);
    if (!o || !t->gres || strcmp(t->gres, "nvidia.com/gpu") == 0) return o;
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
    const char *lists[] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[l])) {
            cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
            const char *kinds[] = {"limits", "requests"};
            for (int k = 0; k < 2; k++) {
                cJSON *m = cJSON_GetObjectItemCaseSensitive(res, kinds[k]);
                cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(m, t->gres);
                if (!v) continue;
                cJSON_DeleteItemFromObjectCaseSensitive(m, "nvidia.com/gpu");
                if (!cJSON_AddItemToObject(m, "nvidia.com/gpu", v)) {
                    cJSON_Delete(v);
                    cJSON_Delete(o);
                    return NULL;
                }
            }
        }
    }
    return o;
}

static int compare(gpa_sim *s, gpa_sim_inventory *inv, gpa_error *err)
{
    gpa_sim *w = NULL;
    int rc = gpa_sim_new(&w, inv, err);
    if (w) w->gangs_whole = s->gangs_whole;
    /* runs of one template queue as one batch of copies, so pod i of w is pod i of s */
    for (size_t i = 0; rc == GPA_OK && i < s->n_pods;) {
        size_t ti = s->pods[i].tmpl, n = 1;
        while (i + n < s->n_pods && s->pods[i + n].tmpl == ti)
            n++;
        const gpa_sim_tmpl *t = &s->tmpls[ti];
        cJSON *o = as_whole(t);
        rc = o ? gpa_sim_add_pod_pool(w, o, t->name, (long long)n, t->pool, err)
               : gpa_fail(err, GPA_ENOMEM, "out of memory");
        cJSON_Delete(o);
        i += n;
    }
    if (rc == GPA_OK) rc = gpa_sim_run(w, GPA_SIM_BFD, err);
    if (rc == GPA_OK && w->n_pods != s->n_pods)
        rc = gpa_fail(err, GPA_EINVAL, "whole-GPU comparison queued %zu pods, not %zu", w->n_pods,
                      s->n_pods);
    if (rc == GPA_OK && !(s->whole_placed = calloc(s->n_pods ? s->n_pods : 1, 1)))
        rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (rc == GPA_OK) {
        for (size_t i = 0; i < s->n_pods; i++)
            s->whole_placed[i] = w->pods[i].node >= 0;
        s->whole_used = gpa_sim_gpus_used(w);
    }
    gpa_sim_free(w);
    return rc;
}

int gpa_sim_compare_whole(gpa_sim *s, gpa_error *err)
{
    if (!s->ran) return gpa_fail(err, GPA_EINVAL, "the simulation has not run");
    if (s->whole_placed) return GPA_OK;
    gpa_sim_inventory inv = *s->inv;
    inv.groups = malloc((inv.n_groups ? inv.n_groups : 1) * sizeof *inv.groups);
    if (!inv.groups) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    for (size_t g = 0; g < inv.n_groups; g++) {
        inv.groups[g] = s->inv->groups[g];
        inv.groups[g].mode = GPA_SIM_WHOLE;
        inv.groups[g].n_fixed = 0;
        inv.groups[g].replicas = 1;
    }
    int rc = compare(s, &inv, err);
    free(inv.groups); /* the members still belong to s->inv */
    return rc;
}
