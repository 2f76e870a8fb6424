/*
 * output_domains.c - the topology domains the report's fleet view draws as boxes (issue 31):
 * NVLink cliques, racks, blocks, the node labels gangs are placed by. A planner reading the
 * fleet needs to see where a gang can land, so the nodes of one domain are drawn together in a
 * box named by the label's value.
 *
 * Which label: among the run's topology keys (the labels the admitted pods' affinity terms
 * name, hostname aside) and the GPUInventory groups' `levels`, the narrowest that cuts the
 * report's run of nodes into consecutive domains of one size, more than one node each; and
 * the next wider one (blocks of racks) as an outer box. Reads the inventory's labels only.
 */
#include <string.h>

#include "output_internal.h"

/* boxes drawn per group at most: beyond, a box is narrower than its label */
#define MAX_DOMAINS 4096

/* Nodes [first, end) all carry key, in consecutive runs of one value each (a value never
 * comes back after another: one domain, one box), every run d > 1 nodes but the last, which
 * may be shorter; d, or 0 when not. */
static size_t run_size(const gpa_sim *s, const char *key, size_t first, size_t end)
{
    const char *vals[MAX_DOMAINS];
    size_t nv = 0, d = 0, run = 0;
    for (size_t n = first; n < end; n++) {
        const char *v = gpa_sim_node_label(s, n, key);
        if (!v) return 0;
        if (nv && strcmp(vals[nv - 1], v) == 0) {
            run++;
            continue;
        }
        if (nv) {
            if (d && run != d) return 0;
            d = run;
        }
        if (nv == MAX_DOMAINS) return 0;
        for (size_t i = 0; i < nv; i++)
            if (strcmp(vals[i], v) == 0) return 0;
        vals[nv++] = v;
        run = 1;
    }
    /* the last domain may be short (a group of 10 nodes in racks of 4) */
    if (d && run > d) return 0;
    if (!d) d = run;
    return d > 1 ? d : 0;
}

static void consider(const char **best, size_t *best_d, const gpa_sim *s, const char *key,
                     size_t first, size_t end)
{
    if (!key || strcmp(key, "kubernetes.io/hostname") == 0) return;
    size_t d = run_size(s, key, first, end);
    if (d && (!*best || d < *best_d)) {
        *best = key;
        *best_d = d;
    }
}

const char *gpa_sim_domain_key(const gpa_sim *s, size_t first, size_t end, size_t *d)
{
    const char *best = NULL;
    *d = 0;
    if (end - first < 2) return NULL;
    for (size_t k = 0; k < s->n_topos; k++)
        consider(&best, d, s, s->topos[k].key, first, end);
    const gpa_sim_group *g = gpa_sim_grp(s, first);
    for (size_t l = 0; l < g->n_levels; l++)
        consider(&best, d, s, g->levels[l].label, first, end);
    return best;
}

const char *gpa_sim_block_key(const gpa_sim *s, size_t first, size_t end, const char *dkey,
                              size_t d, size_t *d2)
{
    const char *best = NULL;
    *d2 = 0;
    const gpa_sim_group *g = gpa_sim_grp(s, first);
    for (size_t k = 0; k < s->n_topos + g->n_levels; k++) {
        const char *key = k < s->n_topos ? s->topos[k].key : g->levels[k - s->n_topos].label;
        if (!key || strcmp(key, dkey) == 0 || strcmp(key, "kubernetes.io/hostname") == 0) continue;
        size_t w = run_size(s, key, first, end);
        /* wider, whole domains inside (runs start where the domains do) */
        if (w > d && w % d == 0 && (!best || w < *d2)) {
            best = key;
            *d2 = w;
        }
    }
    return best;
}
