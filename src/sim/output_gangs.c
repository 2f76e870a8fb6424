/*
 * output_gangs.c - the run's gangs by job, for the report and the JSON (issue 31): a planner
 * deciding on training needs to see, per job, whether its gang is placed whole, in which
 * topology domains, or why not. A gang is what sim_gang.c places whole: the pods whose
 * required pod affinity term matches their own labels, one gang per namespace, topology key
 * and selector; the job is the selector's label value (the engine's group label:
 * training.kubeflow.org/job-name, gpu-admission.io/group, ...).
 *
 * Reads the packed state only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output_internal.h"

/* "ns/value" of the selector's first matchLabels entry or single-value In expression (what
 * the engine writes), else "ns/(gang)" */
static char *job_name(const gpa_sim_tmpl *t)
{
    const cJSON *sel = t->aff[0].selector;
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(sel, "matchLabels");
    const cJSON *e = ml ? ml->child : NULL;
    const char *v = e && cJSON_IsString(e) ? e->valuestring : NULL;
    const cJSON *x =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sel, "matchExpressions"), 0);
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(x, "operator");
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(x, "values");
    if (!v && cJSON_IsString(op) && strcmp(op->valuestring, "In") == 0 &&
        cJSON_GetArraySize(vals) == 1 && cJSON_IsString(cJSON_GetArrayItem(vals, 0)))
        v = cJSON_GetArrayItem(vals, 0)->valuestring;
    if (!v) v = "(gang)";
    size_t n = strlen(t->ns ? t->ns : "") + strlen(v) + 2;
    char *j = malloc(n);
    if (j) snprintf(j, n, "%s/%s", t->ns ? t->ns : "", v);
    return j;
}

static bool add_domain(gpa_sim_gang_agg *g, const char *v)
{
    for (size_t i = 0; i < g->n_domains; i++)
        if (strcmp(g->domains[i], v) == 0) return true;
    if (g->n_domains == GPA_SIM_GANG_DOMAINS) {
        g->more_domains = true;
        return true;
    }
    g->domains[g->n_domains++] = v;
    return true;
}

gpa_sim_gang_agg *gpa_sim_gang_aggs(const gpa_sim *s, size_t *n_out)
{
    *n_out = 0;
    char **keys = calloc(s->n_tmpls + 1, sizeof *keys);
    long *of = malloc((s->n_tmpls + 1) * sizeof *of); /* template -> gang entry */
    gpa_sim_gang_agg *a = calloc(s->n_tmpls + 1, sizeof *a);
    if (!keys || !of || !a) {
        free(keys);
        free(of);
        free(a);
        return NULL;
    }
    for (size_t i = 0; i < s->n_tmpls; i++) {
        of[i] = -1;
        if (!(keys[i] = gpa_sim_gang_key(&s->tmpls[i]))) continue;
        for (size_t j = 0; j < i && of[i] < 0; j++)
            if (keys[j] && strcmp(keys[j], keys[i]) == 0) of[i] = of[j];
        if (of[i] >= 0) continue;
        gpa_sim_gang_agg *g = &a[*n_out];
        g->job = job_name(&s->tmpls[i]);
        g->topology_key = s->tmpls[i].aff[0].topology_key;
        g->reason = NULL;
        of[i] = (long)(*n_out)++;
    }
    for (size_t i = 0; i < s->n_pods; i++) {
        long k = of[s->pods[i].tmpl];
        if (k < 0) continue;
        gpa_sim_gang_agg *g = &a[k];
        g->pods++;
        if (s->pods[i].node < 0) {
            g->unplaced++;
            if (!g->reason) {
                g->reason = s->pods[i].reason;
                g->detail = s->pods[i].reason_detail;
            }
            continue;
        }
        g->placed++;
        const char *v = gpa_sim_node_label(s, (size_t)s->pods[i].node, g->topology_key);
        if (v) add_domain(g, v);
    }
    for (size_t i = 0; i < s->n_tmpls; i++)
        free(keys[i]);
    free(keys);
    free(of);
    return a;
}

void gpa_sim_gang_aggs_free(gpa_sim_gang_agg *a, size_t n)
{
    for (size_t i = 0; a && i < n; i++)
        free(a[i].job);
    free(a);
}

const char *gpa_sim_gang_state(const gpa_sim_gang_agg *g)
{
    return !g->unplaced ? "whole" : !g->placed ? "not placed" : "partly placed";
}
