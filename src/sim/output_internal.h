/*
 * output_internal.h - what the simulator's output files (output_*.c) share: the per group and
 * per pool figures, so the text, the JSON and the report count the same pods the same way.
 * Never included outside src/sim.
 */
#ifndef GPA_SIM_OUTPUT_INTERNAL_H
#define GPA_SIM_OUTPUT_INTERNAL_H

#include "sim_internal.h"

/* Per group and per pool counts. */
typedef struct gpa_sim_agg {
    const char *name;
    size_t nodes, gpus, used, pods, placed, unplaced, baseline;
    int64_t mem_req, mem_alloc;
} gpa_sim_agg;

/* Bytes as decimal GB, as NVIDIA names MIG profiles. */
double gpa_sim_gb(int64_t bytes);
/* One entry per node group, in inventory order; caller frees. NULL on ENOMEM. */
gpa_sim_agg *gpa_sim_group_aggs(const gpa_sim *s, size_t *n_out);
/* One entry per policy pool ("(no pool)" for pods the engine gave none), in first-pod order;
 * caller frees. NULL on ENOMEM. */
gpa_sim_agg *gpa_sim_pool_aggs(const gpa_sim *s, size_t *n_out);

#endif
