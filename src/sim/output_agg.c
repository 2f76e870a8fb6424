/*
 * output_agg.c - the per node group and per pool figures every output prints, so text, JSON
 * and the report add up the same pods the same way.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "output_internal.h"

double gpa_sim_gb(int64_t bytes)
{
    return (double)bytes / 1e9;
}

double gpa_sim_round3(double x)
{
    return round(x * 1000.0) / 1000.0;
}

double gpa_sim_ratio(double share, size_t gpus)
{
    return gpus ? round(share / (double)gpus * 10000.0) / 10000.0 : 0.0;
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
    size_t *idx = calloc(s->inv->n_groups + 1, sizeof *idx), n = 0;
    if (!a || !idx) {
        free(a);
        free(idx);
        return NULL;
    }
    /* node Lists make one group per node under a shared name: look names up once per group */
    for (size_t g = 0; g < s->inv->n_groups; g++)
        idx[g] = find_agg(a, &n, s->inv->groups[g].name);
    for (size_t i = 0; i < s->inv->n_nodes; i++) {
        size_t k = idx[s->inv->nodes[i].group];
        a[k].nodes++;
        a[k].gpus += (size_t)gpa_sim_grp(s, i)->gpus;
        a[k].used += s->nodes[i].used_gpus;
    }
    for (size_t i = 0; i < s->n_pods; i++)
        if (s->pods[i].node >= 0) {
            size_t k = idx[s->inv->nodes[s->pods[i].node].group];
            const gpa_sim_tmpl *t = &s->tmpls[s->pods[i].tmpl];
            a[k].placed++;
            a[k].baseline += t->gres ? (size_t)t->gcount : 0;
            a[k].share += gpa_sim_pod_share(s, i);
            a[k].mem_req += gpa_sim_mem_requested(s, i);
            a[k].mem_alloc += s->pods[i].mem_alloc;
        }
    free(idx);
    /* groups no node belongs to (count: 0) are dropped with their zero figures */
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (a[k].nodes) a[m++] = a[k];
    *n_out = m;
    return a;
}

/* GPUs of the nodes any template of pool k may use, each node counted once. */
static size_t pool_gpus(const gpa_sim *s, const size_t *tidx, size_t k)
{
    unsigned char *sig = calloc(s->n_sigs + 1, 1), *node = calloc(s->inv->n_nodes + 1, 1);
    size_t gpus = 0;
    if (sig && node) {
        for (size_t t = 0; t < s->n_tmpls; t++)
            if (tidx[t] == k && s->tmpls[t].gres && s->tmpls[t].sig < s->n_sigs)
                sig[s->tmpls[t].sig] = 1;
        for (size_t g = 0; g < s->n_sigs; g++)
            for (size_t i = 0; sig[g] && i < s->sigs[g].n_nodes; i++) {
                size_t nd = s->sigs[g].nodes[i];
                if (!node[nd]) gpus += (size_t)gpa_sim_grp(s, nd)->gpus;
                node[nd] = 1;
            }
    }
    free(sig);
    free(node);
    return gpus;
}

gpa_sim_agg *gpa_sim_pool_aggs(const gpa_sim *s, size_t *n_out)
{
    gpa_sim_agg *a = calloc(s->n_tmpls + s->n_denied + 1, sizeof *a);
    size_t *tidx = calloc(s->n_tmpls + 1, sizeof *tidx), n = 0;
    if (!a || !tidx) {
        free(a);
        free(tidx);
        return NULL;
    }
    for (size_t t = 0; t < s->n_tmpls; t++)
        tidx[t] = SIZE_MAX;
    for (size_t i = 0; i < s->n_pods; i++) {
        size_t ti = s->pods[i].tmpl;
        const gpa_sim_tmpl *t = &s->tmpls[ti];
        if (tidx[ti] == SIZE_MAX) tidx[ti] = find_agg(a, &n, t->pool ? t->pool : "(no pool)");
        size_t k = tidx[ti], asked = t->gres ? (size_t)t->gcount : 0;
        a[k].pods++;
        if (s->whole_placed) a[k].whole_placed += s->whole_placed[i];
        if (s->pods[i].node >= 0) {
            a[k].placed++;
            a[k].baseline += asked;
            a[k].share += gpa_sim_pod_share(s, i);
            a[k].mem_req += gpa_sim_mem_requested(s, i);
            a[k].mem_alloc += s->pods[i].mem_alloc;
        } else {
            a[k].unplaced++;
            a[k].unplaced_gpus += asked;
        }
    }
    /* denied pods name their pool when the engine chose one before refusing */
    for (size_t i = 0; i < s->n_denied; i++) {
        size_t k = find_agg(a, &n, s->denied[i].pool ? s->denied[i].pool : "(no pool)");
        a[k].denied += (size_t)s->denied[i].pods;
    }
    for (size_t k = 0; s->ran && k < n; k++)
        a[k].gpus = pool_gpus(s, tidx, k);
    free(tidx);
    *n_out = n;
    return a;
}

static int cmp_cause(const void *x, const void *y)
{
    const gpa_sim_cause_agg *a = x, *b = y;
    if (a->pods != b->pods) return a->pods > b->pods ? -1 : 1;
    return strcmp(a->name, b->name);
}

gpa_sim_cause_agg *gpa_sim_cause_aggs(const gpa_sim *s, size_t *n_out)
{
    *n_out = 0;
    size_t n = 0, cap = 0;
    gpa_sim_cause_agg *a = NULL;
    char buf[300];
    for (size_t i = 0; i < s->n_pods; i++) {
        if (s->pods[i].node >= 0) continue;
        const gpa_sim_tmpl *t = &s->tmpls[s->pods[i].tmpl];
        const char *name = gpa_sim_cause_name(s, i, buf, sizeof buf);
        size_t k = 0;
        while (k < n && strcmp(a[k].name, name) != 0)
            k++;
        if (k == n) {
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 8;
                gpa_sim_cause_agg *na = realloc(a, nc * sizeof *na);
                if (!na) break;
                a = na;
                cap = nc;
            }
            if (!(a[n].name = strdup(name))) break;
            a[n].pods = a[n].gpus = 0;
            n++;
        }
        a[k].pods++;
        a[k].gpus += t->gres ? (size_t)t->gcount : 0;
    }
    if (n) qsort(a, n, sizeof *a, cmp_cause);
    *n_out = n;
    return a;
}

void gpa_sim_cause_aggs_free(gpa_sim_cause_agg *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(a[i].name);
    free(a);
}
