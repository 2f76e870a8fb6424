/*
 * output_agg.c - the per node group and per pool figures every output prints, so text, JSON
 * and the report add up the same pods the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

double gpa_sim_gb(int64_t bytes)
{
    return (double)bytes / 1e9;
}

static size_t find_agg(gpa_sim_agg *a, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(a[i].name, name) == 0) return i;
    a[*n] = (gpa_sim_agg){.name = name};
    return (*n)++;
}

gpa_sim_agg *gpa_sim_group_aggs(const gpa_sim *s, size_t *n_out)
{
    gpa_sim_agg *a = calloc(s->inv->n_groups + 1, sizeof *a);
    size_t n = 0;
    if (!a) return NULL;
    for (size_t i = 0; i < s->inv->n_nodes; i++) {
        size_t k = find_agg(a, &n, gpa_sim_grp(s, i)->name);
        a[k].nodes++;
        a[k].gpus += (size_t)gpa_sim_grp(s, i)->gpus;
        a[k].used += s->nodes[i].used_gpus;
    }
    for (size_t i = 0; i < s->n_pods; i++)
        if (s->pods[i].node >= 0) {
            size_t k = find_agg(a, &n, gpa_sim_grp(s, (size_t)s->pods[i].node)->name);
            a[k].placed++;
            a[k].mem_req += gpa_sim_mem_requested(s, i);
            a[k].mem_alloc += s->pods[i].mem_alloc;
        }
    *n_out = n;
    return a;
}

gpa_sim_agg *gpa_sim_pool_aggs(const gpa_sim *s, size_t *n_out)
{
    gpa_sim_agg *a = calloc(s->n_tmpls + 1, sizeof *a);
    size_t n = 0;
    if (!a) return NULL;
    for (size_t i = 0; i < s->n_pods; i++) {
        const gpa_sim_tmpl *t = &s->tmpls[s->pods[i].tmpl];
        size_t k = find_agg(a, &n, t->pool ? t->pool : "(no pool)");
        a[k].pods++;
        a[k].baseline += t->gres ? (size_t)t->gcount : 0;
        if (s->pods[i].node >= 0) {
            a[k].placed++;
            a[k].mem_req += gpa_sim_mem_requested(s, i);
            a[k].mem_alloc += s->pods[i].mem_alloc;
        } else {
            a[k].unplaced++;
        }
    }
    *n_out = n;
    return a;
}
