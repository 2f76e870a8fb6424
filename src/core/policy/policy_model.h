/*
 * policy_model.h - the in-memory policy set, private to src/core.
 *
 * Built once by the loader (policy_load.c), then read-only: the engine walks it on every
 * request, so everything the engine needs per request is precomputed here at load time
 * (resolved pool pointers, offered MIG profiles sorted for auto-sizing, the list of GPU
 * resource names). All strings and arrays live in the policy's own allocations and are freed
 * by the last gpa_policy_unref.
 */
#ifndef GPA_POLICY_MODEL_H
#define GPA_POLICY_MODEL_H

#include <stdatomic.h>
#include "gpu_admission/policy.h"
#include "gpu_admission/mig.h"

/* Where a construct was written, for messages and `check` output. */
typedef struct gpa_srcpos {
    const char *file; /* owned by the policy */
    int line;         /* 1-based */
    int col;          /* 1-based */
} gpa_srcpos;

typedef struct gpa_strlist {
    size_t n;
    char **items;
} gpa_strlist;

/* An ordered string map as written (nodeSelector, labels). */
typedef struct gpa_kvlist {
    size_t n;
    char **keys;
    char **values;
} gpa_kvlist;

typedef enum { GPA_TRUST_UNSET = 0, GPA_TRUST_TRUSTED, GPA_TRUST_UNTRUSTED } gpa_trust;
typedef enum {
    GPA_SHARING_EXCLUSIVE,
    GPA_SHARING_MIG,
    GPA_SHARING_TIME_SLICING,
    GPA_SHARING_MPS
} gpa_sharing;
typedef enum { GPA_ENFORCE_DENY, GPA_ENFORCE_WARN, GPA_ENFORCE_AUDIT } gpa_enforcement;
typedef enum { GPA_MIG_MIXED, GPA_MIG_SINGLE } gpa_mig_strategy;
typedef enum { GPA_TOPO_REQUIRED, GPA_TOPO_PREFERRED } gpa_topo_mode;
/* spec.workloads.enforcement: what a refused pod template does to its workload. */
typedef enum { GPA_WL_DENY, GPA_WL_WARN, GPA_WL_OFF } gpa_wl_enforcement;

/* A workload kind added by spec.workloads.kinds (built-in kinds live in workload.c). */
typedef struct gpa_workload_kind {
    char *api_group; /* "" for the core group */
    char *kind;
    gpa_strlist templates; /* paths: dot-separated keys, "*" = every element / value */
    gpa_srcpos pos;
} gpa_workload_kind;

/* A Kubernetes toleration as the pool lists it. NULL fields were not written; an operator
 * not written means "Equal" per the Kubernetes API. */
typedef struct gpa_toleration {
    char *key;
    char *op;
    char *value;
    char *effect;
    bool has_seconds;
    int64_t seconds;
} gpa_toleration;

/* POLICY.md "Dynamic Resource Allocation": spec.dra, a pool's dra, a tenant's dra. */
typedef enum { GPA_DRA_DENY, GPA_DRA_WARN, GPA_DRA_OFF } gpa_dra_enforcement;

typedef struct gpa_dra_spec {
    bool set; /* spec.dra written: claims are judged (unless off) */
    gpa_srcpos pos;
    gpa_dra_enforcement enforcement; /* default deny */
    gpa_strlist generic_classes;     /* classes app teams may name; placement rewrites them */
    gpa_strlist scheduler_users;     /* who may make the claims marked extended-resource-claim;
                                        n 0: not written, system:kube-scheduler */
    gpa_kvlist extended_names;       /* extendedResourceNames: DeviceClass -> the
                                        extendedResourceName it sets (pods ask for it) */
} gpa_dra_spec;

/* POLICY.md "Isolation by default": spec.isolation, at most once across files. */
typedef struct gpa_isolation_spec {
    bool set; /* written (an empty block too) */
    gpa_srcpos pos;
    gpa_strlist schedulers; /* besides the default scheduler, those honouring pod anti-affinity */
    gpa_srcpos *sched_pos;  /* parallel to schedulers */
} gpa_isolation_spec;
/* A DRA extended resource (KEP-5004) a pod may get a GPU through: the scheduler turns it into
 * a claim of device_class it makes itself, so the pod is the only place to judge it. Built at
 * load for every GPU DeviceClass the policy knows (NVIDIA's, spec.dra.genericClasses, the
 * pools' dra.deviceClass, spec.dra.extendedResourceNames). */
typedef struct gpa_dra_ext {
    const char *name; /* deviceclass.resource.kubernetes.io/<class>, or the class's
                         extendedResourceName */
    const char *device_class;
    bool generic;                /* a whole GPU of no pool in particular: stands for
                                    nvidia.com/gpu (placement rewrites it, pools serve it, alike) */
    const struct gpa_pool *pool; /* the first pool whose dra.deviceClass it is, NULL none */
} gpa_dra_ext;

typedef struct gpa_pool_dra {
    bool set;
    bool none; /* dra: {enabled: false}: the pool says it serves no DRA (set stays false) */
    gpa_srcpos pos;
    char *device_class;     /* required when set */
    gpa_strlist selectors;  /* CEL, appended to every request placed in the pool */
    bool multi_allocatable; /* devices allow multiple allocations (several namespaces) */
    bool allow_untrusted;   /* the pool wrote allowUntrusted: true */
    /* multiAllocatable pools with selectors: "!(s1)" / "!((s1) && (s2) ...)", the selector
     * that keeps a claim not placed here off the pool's devices (policy_shared_nodes.c);
     * NULL otherwise */
    char *exclude_cel;
} gpa_pool_dra;

typedef struct gpa_tenant {
    char *name;
    gpa_strlist namespaces; /* globs */
    gpa_trust trust;
    gpa_srcpos pos;
    bool dra_admin_access;        /* dra.adminAccess: claims may ask adminAccess (default false) */
    bool dra_allocation_mode_all; /* dra.allocationModeAll: allocationMode All (default false) */
} gpa_tenant;

/* One network domain wider than the NVLink island (rack, block): a node label and the GPUs
 * one domain of it holds. */
typedef struct gpa_topo_level {
    char *label;
    int64_t gpus;
} gpa_topo_level;

typedef struct gpa_topology {
    char *island_label;       /* required */
    char *island_size_label;  /* NULL when not set */
    int gpus_per_node;        /* 0 when not set (no limit) */
    gpa_strlist group_labels; /* default: gpu-admission.io/group */
    bool group_labels_set;    /* groupLabels written (a gang path the lint looks at) */
    gpa_topo_mode mode;       /* default required */
    /* topology levels (gangs): island_gpus 0 = not written, and then no levels either (the
     * loader requires islandGpus with levels); levels narrowest first, strictly wider */
    int64_t island_gpus;
    size_t n_levels;
    gpa_topo_level *levels;
    /* imexChannel (policy_nvlink.c): the island spans nodes (GB200 NVL72) and a gang on more
     * than one node needs an IMEX channel claim of a ComputeDomain. imex_template NULL = not
     * written; else the ResourceClaimTemplate name pods must list (one '*' matches any run) */
    char *imex_template;
    bool imex_warn; /* enforcement: warn (default deny) */
} gpa_topology;

typedef struct gpa_pool {
    char *name;
    gpa_srcpos pos;
    gpa_kvlist node_selector;
    size_t n_tolerations;
    gpa_toleration *tolerations;
    gpa_sharing sharing;
    char *runtime_class; /* NULL when not set */

    /* sharing: mig */
    gpa_mig_strategy mig_strategy;
    const gpa_mig_model *mig_model;
    size_t n_profiles;                /* offered profiles ... */
    const gpa_mig_profile **profiles; /* ... sorted by (mem_bytes, slices) for auto */
    char *mig_product;                /* single strategy only */

    /* sharing: time-slicing | mps */
    char *shared_resource; /* default nvidia.com/gpu.shared */
    int replicas;          /* 0 when not written */
    bool allow_untrusted;  /* default false for time-slicing and mps, true otherwise */

    bool has_topology;
    gpa_topology topology;

    gpa_pool_dra dra; /* set false: claims cannot be placed here */
} gpa_pool;

typedef struct gpa_range {
    bool has_min, has_max;
    int64_t min, max; /* GPU count, or bytes for gpuMemory */
} gpa_range;

typedef struct gpa_rule {
    char *name;
    gpa_srcpos pos;
    /* match: every criterion written must hold */
    gpa_strlist namespaces; /* globs; empty = any */
    gpa_kvlist labels;      /* exact label equality */
    gpa_range gpus;
    gpa_range gpu_memory; /* only pods with the gpu-memory annotation match when set */
    gpa_strlist tenants;  /* empty = any */
    gpa_trust trust;      /* UNSET = any */
    /* outcome: deny_message, or a placement */
    char *deny_message;
    const gpa_pool *pool;
    bool mig_auto;                      /* migProfile: auto (the default on mig pools) */
    const gpa_mig_profile *mig_profile; /* fixed profile when !mig_auto */
} gpa_rule;

struct gpa_policy {
    atomic_int refs;

    bool has_tenancy;
    size_t n_tenants;
    gpa_tenant *tenants;
    gpa_trust default_trust; /* default untrusted */

    size_t n_pools;
    gpa_pool *pools;
    size_t n_rules;
    gpa_rule *rules; /* effective order: file path order, then document order */

    gpa_enforcement enforcement; /* default deny */
    bool unmatched_deny;         /* default false (allow) */

    gpa_wl_enforcement wl_enforcement; /* spec.workloads.enforcement, default deny */
    gpa_srcpos wl_enforcement_pos;     /* file 0 when not written */
    size_t n_wl_kinds;                 /* spec.workloads.kinds of every file, load order */
    gpa_workload_kind *wl_kinds;

    /* Every resource name that counts as a GPU: "nvidia.com/gpu", each mig pool's offered
     * profile resources, each shared pool's resource. Deduplicated. */
    gpa_strlist gpu_resources;
    /* the DRA extended resources among them (their names are in gpu_resources too) */
    size_t n_dra_ext;
    gpa_dra_ext *dra_ext;

    gpa_dra_spec dra; /* spec.dra; dra.set false: claims are not judged */

    gpa_isolation_spec isolation; /* spec.isolation */
    /* per pool, then one for pods placed nowhere: the node labels that keep pods off the shared
     * pools they are not placed in (policy_shared_nodes.h); built by the loader */
    const struct gpa_shared_guard *shared_guards;
    /* the same for pods asking a resource DRA may serve (policy_shared_nodes.h): the
     * multiAllocatable pools count as shared too; == shared_guards when there are none */
    const struct gpa_shared_guard *shared_guards_dra;

    char revision[65];

    /* loader-private bookkeeping (e.g. an arena) */
    void *storage;

    /* the load-time lookup aids the engine reads (rule_index.h), in the same arena; NULL
     * for a policy built without the loader (then the engine matches without them) */
    const struct gpa_rule_index *rule_index;
};

/* Builds p->rule_index (rule_index.c) into the policy's arena; the loader calls it last.
 * GPA_ENOMEM. */
struct gpa_arena;
int gpa_rule_index_build(gpa_policy *p, struct gpa_arena *a);

#endif
