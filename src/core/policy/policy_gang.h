/*
 * policy_gang.h - topology levels (POLICY.md "Topology levels"): the narrowest domain of a
 * pool that holds a gang, and the gang-size annotation's grammar. Pure; read by the engine
 * (pods) and the workload review (templates), so both choose the same domain.
 */
#ifndef GPA_POLICY_GANG_H
#define GPA_POLICY_GANG_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy_model.h"

#define GPA_ANN_GANG_SIZE "gpu-admission.io/gang-size"
/* The largest gang size read: far above any job, low enough that size x pod GPUs is checked
 * against the widest domain without overflow when the pod's GPUs are within bounds. */
#define GPA_GANG_MAX_PODS 100000

/* Does the pool place gangs by levels (islandGpus written)? */
static inline bool gpa_gang_levels(const gpa_topology *t)
{
    return t->island_gpus > 0;
}

/* The narrowest domain holding gang_gpus GPUs: the island label when gang_gpus <= islandGpus,
 * else the first level with gpus >= gang_gpus; *gpus is its size. gang_gpus <= 0 (size unknown)
 * gives the widest domain. NULL (and *gpus the widest size) when no domain holds the gang. */
const char *gpa_gang_domain(const gpa_topology *t, int64_t gang_gpus, int64_t *gpus);

/* Where a pod's gang size comes from, in the order the pod path reads them (first found wins):
 * the pod path (engine_gang.c) and the apply-time check (review_workload.c) share this order.
 * docs/policy.md "Gang size" names each source's upstream origin. */
typedef enum {
    GPA_GANG_SRC_NONE = 0,
    GPA_GANG_SRC_OURS,       /* annotation gpu-admission.io/gang-size */
    GPA_GANG_SRC_KUEUE,      /* annotation kueue.x-k8s.io/pod-group-total-count */
    GPA_GANG_SRC_LWS,        /* annotation leaderworkerset.sigs.k8s.io/size */
    GPA_GANG_SRC_PET_NNODES, /* env PET_NNODES (training-operator PyTorchJob, Trainer v2) */
    GPA_GANG_SRC_TF_CONFIG,  /* env TF_CONFIG (training-operator TFJob) */
} gpa_gang_src;

/* "annotation gpu-admission.io/gang-size", "env PET_NNODES", ...; "" for NONE. */
const char *gpa_gang_src_name(gpa_gang_src s);

/* One gang's GPUs (POLICY.md "Topology levels", amended December 2026): the one sum the pod
 * path, the apply-time check and simulate share. A gang is parts of `pods` pods asking
 * `pod_gpus` GPUs each; a part asking no GPU (a CPU-only PyTorchJob Master, an MPIJob
 * launcher) adds neither pods nor GPUs, whatever an operator's env counts. */
typedef struct gpa_gang_sum {
    int64_t pods;  /* GPU pods */
    int64_t gpus;  /* their GPUs */
    bool overflow; /* the GPUs could not be counted (pods x GPUs past int64) */
} gpa_gang_sum;

/* Adds pods pods of pod_gpus GPUs each to s; parts with pods <= 0 or pod_gpus <= 0 add nothing. */
void gpa_gang_sum_add(gpa_gang_sum *s, int64_t pods, int64_t pod_gpus);

/* A gang size as written on a pod: decimal digits only (no sign, exponent or spaces),
 * 1..GPA_GANG_MAX_PODS. false for anything else. */
bool gpa_gang_parse(const char *s, int64_t *out);

struct gpa_sb;
/* check's warning for the HGX trap: groupLabels written, gpusPerNode set and no islandGpus, so
 * a gang of two full nodes gets pod affinity to one island it can never share. */
void gpa_gang_warnings(struct gpa_sb *o, const gpa_policy *p);

#endif
