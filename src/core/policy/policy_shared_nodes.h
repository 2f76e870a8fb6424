/*
 * policy_shared_nodes.h - how pods that are not placed in a shared pool are kept off its nodes
 * (POLICY.md "Isolation by default"), worked out once at load (policy_shared_nodes.c).
 *
 * A shared pool is a time-slicing or mps pool, and for pods asking a resource DRA may serve
 * also a multiAllocatable one; its nodes are the nodes its nodeSelector selects. Every
 * placement context (each pool, and "placed nowhere") gets the node labels to rule out, one
 * per shared pool it could otherwise reach: `key NotIn [value]`, value one of
 * that pool's nodeSelector values. The engine adds them (mutation) and the validating check
 * reads the final spec against the pools' whole nodeSelectors; `check` warns where a pool
 * cannot be told apart. Policy layer: never includes the engine.
 */
#ifndef GPA_POLICY_SHARED_NODES_H
#define GPA_POLICY_SHARED_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu_admission/strbuf.h"
#include "policy/policy_model.h"
#include "policy/warn_text.h"

/* NVIDIA's GPU feature discovery label saying how a node's GPUs are shared (none,
 * time-slicing, mps): preferred when a shared pool's nodeSelector names it, because it marks
 * every shared node, also ones no pool describes yet. */
#define GPA_SHARING_STRATEGY_LABEL "nvidia.com/gpu.sharing-strategy"

/* One node requirement `key NotIn [values...]`: keeps the pod off the shared pools whose
 * nodeSelector entry of that key the values are (one requirement per key, so 25 pools told
 * apart by gpu-admission.io/pool cost one expression and one warning, not 25). */
typedef struct gpa_shared_excl {
    const char *key;
    const char **values; /* distinct, in pool order */
    size_t n_values;
    const gpa_pool **pools; /* the shared pools it rules out, in pool order */
    size_t n_pools;
    gpa_sv line; /* GPA_W_SHARED_EXCL, formatted at load */
} gpa_shared_excl;

/* What a context needs: the exclusions, and the first shared pool it cannot be kept off (its
 * own nodeSelector holds every entry of that pool's: each of its nodes is a shared node). */
typedef struct gpa_shared_guard {
    size_t n;
    gpa_shared_excl *excl;
    const gpa_pool *inseparable; /* NULL: none */
    size_t n_inseparable;        /* how many such pools (the first is inseparable) */
} gpa_shared_guard;

/* Is the pool time-sliced or MPS (pods of several tenants on one card)? */
static inline bool gpa_pool_is_shared(const gpa_pool *p)
{
    return p && (p->sharing == GPA_SHARING_TIME_SLICING || p->sharing == GPA_SHARING_MPS);
}

/* A pool whose DRA devices claims of several namespaces may share (multiAllocatable). */
static inline bool gpa_pool_dra_shared(const gpa_pool *p)
{
    return p && p->dra.set && p->dra.multi_allocatable;
}

/* Is the pool shared for a pod: time-sliced or MPS, or - for a pod asking a resource DRA may
 * serve (dra) - multiAllocatable, since the scheduler's claim for that pod may get one of its
 * devices that other namespaces' claims hold too. */
static inline bool gpa_pool_shared_for(const gpa_pool *p, bool dra)
{
    return gpa_pool_is_shared(p) || (dra && gpa_pool_dra_shared(p));
}

/* Fills p->shared_guards and p->shared_guards_dra (n_pools + 1 entries each, the last for pods
 * placed nowhere) and each multiAllocatable pool's dra.exclude_cel in arena a. GPA_ENOMEM. */
struct gpa_arena;
int gpa_shared_guards_build(gpa_policy *p, struct gpa_arena *a);

/* The guard of pods placed in ctx (NULL: placed nowhere); dra: the pod asks a resource DRA may
 * serve (gpa_dra_reachable). */
static inline const gpa_shared_guard *gpa_shared_guard_of(const gpa_policy *p, const gpa_pool *ctx,
                                                          bool dra)
{
    const gpa_shared_guard *g = dra ? p->shared_guards_dra : p->shared_guards;
    if (!g) return NULL;
    return &g[ctx ? (size_t)(ctx - p->pools) : p->n_pools];
}

/* Do CEL selectors a and b contradict on their face: both exactly `X == 'lit'` (or "lit")
 * with the same X and different literals? (No device passes both.) */
bool gpa_cel_eq_contradicts(const char *a, const char *b);

/* check's advice: shared pools whose nodes cannot be told apart (no nodeSelector, or another
 * pool's nodeSelector holds all of theirs). */
void gpa_shared_nodes_warnings(gpa_sb *o, const gpa_policy *p);

#endif
