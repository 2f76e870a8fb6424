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

/* A gang size as written on a pod: decimal digits only (no sign, exponent or spaces),
 * 1..GPA_GANG_MAX_PODS. false for anything else. */
bool gpa_gang_parse(const char *s, int64_t *out);

struct gpa_sb;
/* check's warning for the HGX trap: groupLabels written, gpusPerNode set and no islandGpus, so
 * a gang of two full nodes gets pod affinity to one island it can never share. */
void gpa_gang_warnings(struct gpa_sb *o, const gpa_policy *p);

#endif
