/*
 * sim_util.c - the small helpers every simulator stage shares: array growth, a string in a
 * JSON list, a node's label. The leaf of the simulator's call graph: it calls nothing in
 * src/sim but the inventory's label lookup, and must stay that way.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

void *gpa_sim_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need)
        nc *= 2;
    void *np = realloc(p, nc * elem);
    if (np) *cap = nc;
    return np;
}

const char *gpa_sim_node_label(const gpa_sim *s, size_t n, const char *key)
{
    const gpa_sim_node_def *d = &s->inv->nodes[n];
    return gpa_sim_label(d->labels, d->n_labels, key);
}

bool gpa_sim_str_in(const cJSON *values, const char *v)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, values)
        if (cJSON_IsString(x) && strcmp(x->valuestring, v) == 0) return true;
    return false;
}
