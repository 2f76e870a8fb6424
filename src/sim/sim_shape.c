/*
 * sim_shape.c - which nodes the packer may treat as twins. A node List (`kubectl get nodes
 * -o json`) makes every node its own group, and the packer's candidate index offers one empty
 * node per group: 2,000 listed nodes meant 2,000 candidates for every pod. Two empty nodes of
 * one feasibility class are interchangeable when their groups agree on what the packing reads
 * of an empty node after the static checks: its GPUs, model, MIG layout, time-slicing, NVLink
 * island and pod count. The labels and taints that tell them apart are what the static checks
 * read, and those already split the nodes into classes; so do allocatable cpu and memory,
 * which an empty node offers whole (the static check and the fit are the same comparison),
 * and card memory only sizes what a placed pod is said to hold. Allocatable memory differs by
 * a few KiB from node to node in a real List; it must not keep twins apart. Topology values
 * (racks, cliques) stay apart in the index's buckets.
 *
 * A shape is named by its first group, so an inventory whose groups all differ in shape (the
 * usual GPUInventory) keeps shape == group and packs as before.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static int cmp_str(const char *a, const char *b)
{
    if (!a || !b) return a ? 1 : b ? -1 : 0;
    return strcmp(a, b);
}

#define CMP(x, y)                                                                                  \
    do {                                                                                           \
        if ((x) != (y)) return (x) < (y) ? -1 : 1;                                                 \
    } while (0)

/* Orders groups by what the packing reads; 0 when they pack alike. */
static int cmp_shape(const gpa_sim_group *a, const gpa_sim_group *b)
{
    CMP(a->gpus, b->gpus);
    CMP((uintptr_t)a->model, (uintptr_t)b->model);
    CMP((int)a->mode, (int)b->mode);
    CMP(a->n_fixed, b->n_fixed);
    /* in order: the slots' order decides which instance a pod gets */
    for (size_t i = 0; i < a->n_fixed; i++)
        CMP((uintptr_t)a->fixed[i], (uintptr_t)b->fixed[i]);
    CMP(a->replicas, b->replicas);
    int c = cmp_str(a->ts_resource, b->ts_resource);
    if (c) return c;
    CMP(a->island, b->island);
    /* an allocatable pod count of 0 keeps even an empty node out, which no static check
     * says */
    CMP(a->max_pods, b->max_pods);
    return 0;
}

static int cmp_groups(const void *x, const void *y, void *ctx)
{
    const gpa_sim_inventory *inv = ctx;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    int c = cmp_shape(&inv->groups[a], &inv->groups[b]);
    return c ? c : a < b ? -1 : a > b;
}

size_t *gpa_sim_shapes(const gpa_sim *s)
{
    const gpa_sim_inventory *inv = s->inv;
    size_t ng = inv->n_groups ? inv->n_groups : 1;
    size_t *order = malloc(ng * sizeof *order), *of_group = malloc(ng * sizeof *of_group);
    size_t *shape = malloc((inv->n_nodes ? inv->n_nodes : 1) * sizeof *shape);
    if (!order || !of_group || !shape) {
        free(order);
        free(of_group);
        free(shape);
        return NULL;
    }
    for (size_t g = 0; g < inv->n_groups; g++)
        order[g] = g;
    qsort_r(order, inv->n_groups, sizeof *order, cmp_groups, (void *)inv);
    /* equal shapes are adjacent, the first group of each run (by index) first in it */
    for (size_t i = 0; i < inv->n_groups; i++)
        of_group[order[i]] = i && cmp_shape(&inv->groups[order[i - 1]], &inv->groups[order[i]]) == 0
                                 ? of_group[order[i - 1]]
                                 : order[i];
    for (size_t n = 0; n < inv->n_nodes; n++)
        shape[n] = of_group[inv->nodes[n].group];
    free(order);
    free(of_group);
    return shape;
}
