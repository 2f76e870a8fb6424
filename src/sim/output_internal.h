/*
 * output_internal.h - what the simulator's output files (output_*.c) share: the per group and
 * per pool figures, so the text, the JSON and the report count the same pods the same way.
 * Never included outside src/sim.
 */
#ifndef GPA_SIM_OUTPUT_INTERNAL_H
#define GPA_SIM_OUTPUT_INTERNAL_H

#include "gpu_admission/strbuf.h"
#include "sim_internal.h"

/* Per group and per pool counts. */
typedef struct gpa_sim_agg {
    const char *name;
    size_t nodes, gpus, used, pods, placed, unplaced;
    size_t baseline;      /* whole cards the placed pods ask */
    size_t unplaced_gpus; /* GPUs the unplaced pods ask */
    size_t whole_placed;  /* pools, after gpa_sim_compare_whole: placed on whole GPUs only */
    size_t denied;        /* pools: denied pods (a denied template counts its copies) */
    double share;         /* GPUs' worth the placed pods hold (gpa_sim_pod_share) */
    int64_t mem_req, mem_alloc;
} gpa_sim_agg;

/* Bytes as decimal GB, as NVIDIA names MIG profiles. */
double gpa_sim_gb(int64_t bytes);
/* x rounded to 3 decimals, so JSON figures read as the text prints them. */
double gpa_sim_round3(double x);
/* share / gpus rounded to 4 decimals (0 without GPUs): an allocation ratio. */
double gpa_sim_ratio(double share, size_t gpus);
/* One entry per node group, in inventory order; caller frees. NULL on ENOMEM. */
gpa_sim_agg *gpa_sim_group_aggs(const gpa_sim *s, size_t *n_out);
/* One entry per policy pool ("(no pool)" for pods the engine gave none), in first-pod order;
 * `gpus` are the GPUs of the nodes the pool's pods may use (pass the static checks: selector,
 * affinity, taints, resource offered), the denominator of its allocation ratio. Caller
 * frees. NULL on ENOMEM. */
gpa_sim_agg *gpa_sim_pool_aggs(const gpa_sim *s, size_t *n_out);

/* A pool whose pods no node can take by their node requirements (output_nonodes.c). */
typedef struct gpa_sim_nonode {
    const char *pool;  /* the run's string */
    char *requirement; /* what no node meets: "nvidia.com/gpu.product=NVIDIA-H100-80GB" */
    char *label;       /* the label of an In requirement no node meets alone, else NULL */
    char *closest;     /* the value of label on the nodes closest to the one asked, or NULL */
    size_t closest_nodes;
    bool together; /* every requirement is met somewhere, never all on one node */
} gpa_sim_nonode;
/* The pools whose requirements common to all their admitted pods no node meets, in first-pod
 * order; caller frees with gpa_sim_nonodes_free. NULL on ENOMEM. */
gpa_sim_nonode *gpa_sim_pools_without_nodes(const gpa_sim *s, size_t *n_out);
void gpa_sim_nonodes_free(gpa_sim_nonode *a, size_t n);
/* "pool train matches no node: its pods ask ...; the closest value ... (N nodes)" */
void gpa_sim_nonode_line(gpa_sb *b, const gpa_sim_nonode *x);

/* A gang by job (output_gangs.c): its pods, where they went, why not. */
#define GPA_SIM_GANG_DOMAINS 4
typedef struct gpa_sim_gang_agg {
    char *job;                /* "ns/<the gang label's value>" */
    const char *topology_key; /* of its affinity term */
    size_t pods, placed, unplaced;
    const char *domains[GPA_SIM_GANG_DOMAINS]; /* topology values its placed pods are in */
    size_t n_domains;
    bool more_domains;
    const char *reason, *detail; /* the first unplaced pod's */
} gpa_sim_gang_agg;
/* The run's gangs (sim_gang.c's definition) in first-template order; caller frees with
 * gpa_sim_gang_aggs_free. NULL on ENOMEM. */
gpa_sim_gang_agg *gpa_sim_gang_aggs(const gpa_sim *s, size_t *n_out);
void gpa_sim_gang_aggs_free(gpa_sim_gang_agg *a, size_t n);
/* "whole", "not placed" or "partly placed" */
const char *gpa_sim_gang_state(const gpa_sim_gang_agg *g);

/* Unplaced pods by cause (gpa_sim_cause_name): pods and the GPUs they ask. */
typedef struct gpa_sim_cause_agg {
    char *name;
    size_t pods, gpus;
} gpa_sim_cause_agg;
/* Most pods first (ties: the name); caller frees with gpa_sim_cause_aggs_free. NULL with
 * *n_out 0 when nothing is unplaced or on ENOMEM. */
gpa_sim_cause_agg *gpa_sim_cause_aggs(const gpa_sim *s, size_t *n_out);
void gpa_sim_cause_aggs_free(gpa_sim_cause_agg *a, size_t n);

/* ---- per-node MIG layouts (output_suggest.c) ---- */

/* nodes consecutive nodes of a group, each GPU laid out as per (instances per profile
 * index); cfg: mig-parted's config name ("all-3g.20gb", "all-balanced") or "mixed-rest". */
typedef struct gpa_sim_plan_part {
    int per[16];
    long gpus; /* GPUs of these nodes the group's demand fills */
    size_t nodes;
    char cfg[80];
} gpa_sim_plan_part;

typedef struct gpa_sim_plan {
    gpa_sim_plan_part parts[17];
    size_t n_parts, n_nodes; /* n_nodes: the group's */
    long total;              /* MIG instances demanded */
    long gpus, ugpus;        /* GPUs the plan takes; the best single layout's (-1: none) */
    int uni[16];             /* that single layout */
    bool fits, better;       /* the plan fits the group's nodes; takes fewer GPUs than uni */
} gpa_sim_plan;

/* Per node group, the MIG instances demanded per profile index (n_groups x 16): its placed
 * instances and the unplaced pods asking a profile of its model that could go to one of its
 * nodes (their class holds one). One pass over the pods and the unplaced templates' classes;
 * caller frees; NULL on ENOMEM. */
long *gpa_sim_mig_demand(const gpa_sim *s, const size_t *canon);
/* Per node group, the MIG group it is planned with: the first group of the same name, model
 * and GPUs per node (a node List makes one group per node, named by its gpu.product), itself
 * for other groups. Caller frees; NULL on ENOMEM. Demand rows and plans are per canonical
 * group and span the nodes of every group mapped to it. */
size_t *gpa_sim_mig_canon(const gpa_sim *s);
/* The per-node plan for MIG group gi (docs/simulate.md, --suggest-mig) from demand
 * (gpa_sim_mig_demand); false when the group has no MIG demand or no plan fits its nodes. */
bool gpa_sim_mixed_plan(gpa_sim_plan *pl, const gpa_sim *s, size_t gi, const long *demand,
                        const size_t *canon);

/* ---- the HTML report (output_report.c, output_tiles.c, output_domains.c) ---- */
/* The label whose values cut nodes [first, end) (one group of the fleet view) into
 * consecutive topology domains of *d > 1 nodes each (a clique, a rack: the run's topology
 * keys and the groups' levels, the narrowest), or NULL. */
const char *gpa_sim_domain_key(const gpa_sim *s, size_t first, size_t end, size_t *d);
/* Of the same labels, the narrowest wider than domain key dkey (d nodes) whose domains of *d2
 * nodes hold whole domains of dkey (a block of racks), or NULL. */
const char *gpa_sim_block_key(const gpa_sim *s, size_t first, size_t end, const char *dkey,
                              size_t d, size_t *d2);
/* s with <, >, &, " and ' escaped. */
void gpa_sim_html_esc(gpa_sb *b, const char *s);
/* A stable hue (0-359) for a tenant name; 0 for NULL. */
unsigned gpa_sim_tenant_hue(const char *t);
/* The detail tile of GPU k of node n: one <div class="gpu"><svg class="gpu-svg"> with one
 * <g class="instance"> per pod on it. */
void gpa_sim_report_tile(gpa_sb *b, const gpa_sim *s, size_t n, int k);
/* How full GPU k of node n is, 0..1: MIG memory slices held, replicas held / replicas, a
 * whole-card pod 1. */
double gpa_sim_gpu_fill(const gpa_sim *s, size_t n, int k);

#endif
