/*
 * engine_internal.h - the per-request state shared by the engine's files (private to
 * src/core): engine_decision.c (violations, warnings, enforcement), engine_match.c (tenancy,
 * trust, rule matching), engine_mutate.c (placement on a copy), engine_affinity.c (node and
 * pod (anti-)affinity), engine_validate.c (the checks), engine_dra_ext.c (untrusted pods'
 * DRA extended resources of unknown classes), engine_start.c (the start both webhooks
 * share). The rule index and the warning texts it reads are the policy layer's
 * (policy/rule_index.h, policy/warn_text.h); gpa_engine_mutate_validate, the one entry the
 * webhook layer needs beyond engine.h, is declared in engine_mutate_validate.h.
 *
 * Lives on the caller's stack for one request; never outlives it and never holds a pointer
 * into anything but the request, the policy and the decision being built.
 */
#ifndef GPA_ENGINE_INTERNAL_H
#define GPA_ENGINE_INTERNAL_H

#include "gpu_admission/engine.h"
#include "util/node_arena.h"
#include "policy/policy_model.h"
#include "policy/rule_index.h"
#include "policy/policy_tenancy.h"
#include "policy/policy_shared_nodes.h"
#include "engine/pod.h"

typedef struct gpa_violation {
    const char *reason; /* static id */
    char *message;
} gpa_violation;

typedef struct gpa_eng {
    const gpa_policy *p;
    const gpa_request *req;
    gpa_decision *d;
    bool create; /* CREATE: spec checks; otherwise only what an update can change */
    const char *ns;
    gpa_pod orig;

    /* tenancy, resolved on first use */
    bool tenancy_done;
    const char *tenant;           /* tenant name, or the namespace when in no tenant */
    const gpa_tenant *tenant_def; /* the namespace's tenant; NULL: in no tenant */
    /* in no tenant but named like this declared tenant: gets none of its rules, label or
     * rights, and no GPU (gpa_policy_tenant_of) */
    const gpa_tenant *taken;
    gpa_trust ns_trust; /* from the namespace */
    gpa_trust trust;    /* after the pod's own trust label */

    /* GPU demand */
    int64_t gpus;
    bool gpu_named; /* some container names a GPU resource (even with a bad value) */
    bool has_mem;   /* a parseable gpu-memory annotation */
    bool mem_bad;   /* an annotation that is not a quantity */
    int64_t mem_bytes;
    const char *mem_text; /* the annotation's value as written (for has_mem), wherever it was
                             read from: a claim template has two places for it */
    bool claim;           /* judging a DRA claim: explain lines say "claim", not "pod" */

    /* matching and placement */
    bool matched_done;
    const gpa_rule *rule;
    const gpa_pool *pool;       /* NULL for deny rules and unmatched pods */
    const gpa_mig_profile *mig; /* profile a mig pool gives this pod (NULL: none fits) */
    /* placement gave the copy its only nodeSelectorTerm, holding exactly the pool's node
     * requirements (the pod had none): the check on the copy reads them, not the term */
    bool node_term_is_reqs;
    /* unmatched only for lack of the gpu-memory annotation: the rule it would meet */
    const gpa_rule *needs_mem_rule;

    /* the pool whose shared-node guard the pod gets (POLICY.md "Isolation by default"): the
     * placed pool, else the shared pool its resources name, else none (placed nowhere) */
    bool guard_done;
    const gpa_pool *guard_ctx;
    bool guard_dra; /* it asks a resource DRA may serve: multiAllocatable pools are shared too */
    const struct gpa_shared_guard *guard; /* the context's, cached (NULL: no GPU) */

    /* gangs on a pool with topology levels (engine_gang.c), read from the original pod once */
    bool gang_done;
    bool gang_bad;          /* gpu-admission.io/gang-size written but not a size */
    int64_t gang_size;      /* pods in the gang; 0 = unknown */
    const char *gang_src;   /* what gave the size, for messages ("annotation ...") */
    const char *gang_owner; /* non-NULL: a topology-aware scheduler places the pod (why);
                               read for grouped pods only (gpa_eng_gang_key) */
    unsigned char gang_kueue_ann, gang_kai_ann; /* Kueue's / KAI's topology annotation on the
                                                   pod: 0 none, 1 required, 2 preferred */
    const char *gang_key; /* the domain label the pod affinity went on (NULL: none) */

    gpa_violation *viol;
    size_t n_viol, cap_viol;
    size_t cap_warn, cap_explain, cap_audit;
    bool oom; /* sticky: an allocation failed somewhere; the request fails with GPA_ENOMEM */
    gpa_narena *arena; /* the decision's node arena (d->priv_arena), made on first use */
    /* last: gpa_eng_init zeroes what comes before it (only scans.n here) */
    gpa_scan_cache scans; /* GPU resources per container, scanned once */
} gpa_eng;

/* engine_decision.c */
/* The request's node arena (owned by the decision); NULL on OOM (sets e->oom). */
gpa_narena *gpa_eng_arena(gpa_eng *e);
void gpa_eng_init(gpa_eng *e, gpa_decision *d, const gpa_policy *p, const gpa_request *req);
void gpa_eng_violation(gpa_eng *e, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gpa_eng_warn(gpa_eng *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The warning made of parts[0..n) joined (cut like any warning): a copy of a line built at
 * load, or of pieces whose lengths are known, without a formatting pass. */
void gpa_eng_warn_parts(gpa_eng *e, const gpa_sv *parts, size_t n);
/* The warning line (built at load) as it is. A function, not an inline, so that this header
 * calls no file: every caller of it is a caller of engine_decision.c. */
void gpa_eng_warn_sv(gpa_eng *e, gpa_sv line);
/* The placed pool's and the matched rule's load-time texts; NULL without an index. */
static inline const gpa_pool_text *gpa_eng_pool_text(const gpa_eng *e)
{
    const gpa_rule_index *x = e->p->rule_index;
    return x && e->pool ? &x->pools[e->pool - e->p->pools] : NULL;
}
static inline const gpa_rule_text *gpa_eng_rule_text(const gpa_eng *e)
{
    const gpa_rule_index *x = e->p->rule_index;
    return x && e->rule ? &x->rules[e->rule - e->p->rules] : NULL;
}
void gpa_eng_explain(gpa_eng *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpa_eng_audit(gpa_eng *e, const char *key, const char *value);
void gpa_eng_audit_sv(gpa_eng *e, gpa_sv key, gpa_sv value);
void gpa_eng_drop_warnings_from(gpa_eng *e, size_t n);
/* Turns violations into the decision (enforcement), frees engine state; returns GPA_OK or
 * GPA_ENOMEM (decision cleared). */
int gpa_eng_finish(gpa_eng *e, gpa_error *err);
/* engine_start.c: the start both webhooks share: argument checks, the DELETE/CONNECT short
 * cut, GPU demand and the first matching rule. false: stop and return *rc (the decision is
 * already final). */
bool gpa_eng_start(gpa_eng *e, gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                   gpa_error *err, int *rc);

/* engine_match.c */
void gpa_eng_tenancy(gpa_eng *e);
const char *gpa_trust_name(gpa_trust t);
/* Reads GPU count and memory annotation of the original pod. */
void gpa_eng_demand(gpa_eng *e);
/* Finds the first matching rule (GPU pods only) and the MIG profile it gives. */
void gpa_eng_match(gpa_eng *e);
/* When auto-sizing passed over a smaller offered profile for the pod's gpu-memory, the
 * comparison in bytes that made it, "10Gi (10.74 GB) > 1g.10gb (10 GB): 2g.20gb", into buf;
 * false otherwise (no annotation, a fixed profile, the smallest profile fits). */
bool gpa_eng_upsize_text(const gpa_eng *e, char *buf, size_t cap);

/* engine_gang.c: gangs on pools with topology levels (POLICY.md "Topology levels"). */
/* Reads the gang's size and the scheduler owning its placement from the original pod. */
void gpa_eng_gang(gpa_eng *e);
/* The domain label the gang's pod affinity goes on (NULL: none, stepped aside (warned), or too
 * wide) and its size. Pools with levels only. */
const char *gpa_eng_gang_key(gpa_eng *e, int64_t *gpus);
/* The warning naming the domain chosen: "gang of 24 GPUs: pod affinity on L (32 GPUs)". */
void gpa_eng_gang_warn(gpa_eng *e, const char *key, int64_t gpus);
/* The gang checks: a bad gang-size annotation, a gang wider than every domain. */
void gpa_eng_check_gang(gpa_eng *e);
/* The topology-size denial (a pod above gpusPerNode) with advice naming the pool's domains. */
void gpa_eng_gang_pod_too_big(gpa_eng *e);

/* engine_nvlink.c: a gang wider than one node of a pool with topology.imexChannel must list
 * the ComputeDomain's channel claim in every container asking GPUs (imex-channel). */
void gpa_eng_check_imex(gpa_eng *e, const gpa_pod *v);

/* engine_validate.c: every check POLICY.md lists, on the pod as it will be stored. */
void gpa_eng_check(gpa_eng *e, const gpa_pod *v);
/* engine_dra_ext.c: an untrusted pod's DRA extended resources of DeviceClasses the policy
 * does not know (unknown-device-class). */
void gpa_eng_check_dra_classes(gpa_eng *e, const gpa_pod *v);

/* engine_devices.c: an untrusted pod's paths to devices beside its resources (toolkit env,
 * envFrom, privileged containers; hostPath volumes when create), GPU pod or not. */
void gpa_eng_check_devices(gpa_eng *e, const gpa_pod *v, bool create);

/* engine_affinity.c */
/* One required node expression the placement adds: key op [value]. */
typedef struct gpa_node_req {
    const char *key;
    const char *op; /* "In", "Gt", or "NotIn" (a shared pool ruled out) */
    const char *value;
    const gpa_sv *line;        /* its GPA_W_NODE_AFFINITY line when built at load, else NULL */
    const char *const *values; /* NotIn of several values: all of them (value = values[0]) */
    size_t n_values;           /* 0: value alone */
} gpa_node_req;

#define GPA_MAX_NODE_REQS 64 /* on the stack; larger nodeSelectors go to the heap */
/* Most nodeSelectorTerms a placed pod may carry. Each term gets the pool's requirements (one
 * patch op per term), so an unbounded count let a 3 MiB pod with ~47,000 terms blow the
 * answer up to ~29 MB and the server to ~250 MB; real pods have a handful. */
#define GPA_MAX_NODE_TERMS 64
/* Room for every requirement of the placed pool: stack when it fits, else malloc'd (caller
 * frees *heap). NULL on OOM (sets e->oom). */
gpa_node_req *gpa_eng_node_reqs_buf(gpa_eng *e, gpa_node_req *stack, size_t *cap,
                                    gpa_node_req **heap);
/* The pool's node requirements for this pod (nodeSelector, MIG product, island size).
 * buf holds generated values. Returns the count. */
size_t gpa_eng_node_reqs(gpa_eng *e, gpa_node_req *out, size_t cap, char *buf, size_t bufcap);
/* Adds the requirements to every nodeSelectorTerm of spec (creating what is missing). */
void gpa_eng_add_node_affinity(gpa_eng *e, cJSON *spec, const gpa_node_req *reqs, size_t n);
/* The pod's required nodeSelectorTerms array, NULL when it has none. */
const cJSON *gpa_eng_node_terms(const gpa_pod *v);
/* The first requirement the pod's own nodeSelector/affinity contradicts, or -1. terms is
 * gpa_eng_node_terms(v); reqs_term: instead, the pod's only term holds exactly reqs (what
 * placement leaves on a pod that had none: e->node_term_is_reqs), judged without reading
 * it. detail gets a human description of the contradiction. */
int gpa_eng_node_conflict(const gpa_pod *v, const cJSON *terms, bool reqs_term,
                          const gpa_node_req *reqs, size_t n, char *detail, size_t cap);
/* The shared-node guard of this GPU pod: the node labels that keep it off the shared pools
 * it is not placed in (policy_shared_nodes.h). NULL for a pod that asks no GPU. */
const gpa_shared_guard *gpa_eng_shared_guard(gpa_eng *e);
/* Do the pod's nodeSelector and the nodeSelectorTerm term (NULL: the pod has no terms) rule
 * out every node of pool sp (some entry of its nodeSelector contradicted)? */
bool gpa_eng_term_rules_out(const gpa_pod *v, const cJSON *term, const gpa_pool *sp);
/* Topology (mutation 4) and isolation (mutation 5) pod (anti-)affinity. */
void gpa_eng_add_topology(gpa_eng *e, cJSON *pod, bool *changed);
void gpa_eng_add_isolation(gpa_eng *e, cJSON *pod);
/* The group label a topology pool recognises on this pod (first in groupLabels order). */
const char *gpa_eng_group_label(const gpa_eng *e, const gpa_pod *v, const char **value);
/* Does the pod's required anti-affinity hold the isolation term for (pool, tenant)? */
bool gpa_eng_has_isolation_term(const gpa_pod *v, const char *pool, const char *tenant);
/* The isolation term is there but without its namespaceSelector: {} - what Kubernetes before
 * 1.22 stores (it drops the field), so the term only sees the pod's own namespace. */
bool gpa_eng_isolation_lost_namespace_selector(const gpa_pod *v, const char *pool,
                                               const char *tenant);

/* engine_cow.c: the copy placement mutates, in arena a, sharing every part it never writes;
 * containers: whether container resources may be renamed (copied, not shared). */
cJSON *gpa_eng_cow_copy(gpa_narena *a, const cJSON *pod, bool containers);
/* item (a member of parent, an owned node of the copy) made writable: a reference to an
 * object or array is replaced in parent by an owned one whose members are references.
 * Returns the node to write into; NULL on OOM. */
cJSON *gpa_eng_cow_own(gpa_narena *a, cJSON *parent, cJSON *item);
/* An independent deep copy of a copy-on-write copy (decision.mutated). */
cJSON *gpa_eng_cow_materialize(const cJSON *copy);

/* Small builders of arena nodes used by the mutation files; NULL on OOM (sets e->oom).
 * Keys must be static or arena strings; values are copied into the arena. */
cJSON *gpa_eng_child_obj(gpa_eng *e, cJSON *parent, const char *key);
cJSON *gpa_eng_child_arr(gpa_eng *e, cJSON *parent, const char *key);
bool gpa_eng_set_str(gpa_eng *e, cJSON *obj, const char *key, const char *value);
/* The same when the caller has looked key up already: cur is obj's member key (NULL when
 * absent). */
bool gpa_eng_put_str(gpa_eng *e, cJSON *obj, cJSON *cur, const char *key, const char *value);
/* The same with the value's length known. */
bool gpa_eng_put_sv(gpa_eng *e, cJSON *obj, cJSON *cur, const char *key, gpa_sv value);

#endif
