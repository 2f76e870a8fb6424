/*
 * reach.h - exact rule reachability of a loaded policy set (`gpu-admission check`).
 *
 * Rules are first-match-wins. The analysis partitions the space of GPU pods (namespace,
 * tenant and trust, the trust label, the labels the rules test, GPU count, the gpu-memory
 * annotation) into finitely many cells, every pod of a cell meeting the same rules, and finds
 * which rule takes each cell first. Exact: a rule it calls never reached is never chosen for
 * any pod, and the witness pod it gives for a reachable rule is chosen by that rule. A pure
 * function of the policy; it never runs the engine.
 */
#ifndef GPA_REACH_H
#define GPA_REACH_H

#include <stdint.h>

#include "common.h"
#include "policy.h"

/* One concrete GPU pod: a namespace, the labels it carries, nvidia.com/gpu in one container,
 * and the gpu-admission.io/gpu-memory annotation in bytes when has_mem. */
typedef struct gpa_reach_pod {
    char *ns;
    size_t n_labels;
    char **keys;
    char **values;
    int64_t gpus;
    bool has_mem;
    int64_t mem;
} gpa_reach_pod;

typedef enum {
    GPA_REACH_NEVER,      /* warning: never reached; by[] take every pod it matches (none:
                             it matches no pod at all) */
    GPA_REACH_BYPASS,     /* warning: a deny rule, some of whose pods by[0] places first */
    GPA_REACH_MEM_BEYOND, /* warning: gpuMemory min beyond every MIG profile of the pool */
    GPA_REACH_UNMATCHED,  /* info: with unmatched: allow, a pod of a tenant no rule takes */
} gpa_reach_kind;

typedef struct gpa_reach_finding {
    gpa_reach_kind kind;
    size_t rule; /* rule index (effective order); for UNMATCHED the tenant index, n_tenants
                    for namespaces in no tenant */
    size_t n_by;
    size_t *by; /* rule indexes that take the pods */
    bool has_witness;
    gpa_reach_pod witness;
    size_t witness_rule; /* the rule that takes the witness (SIZE_MAX: none, unmatched) */
    char *tenant;        /* UNMATCHED: the tenant's name; NULL for namespaces in no tenant */
    char *file;          /* where to point: the rule (or tenant); NULL for the default tenant */
    int line, col;
    char *message; /* after "warning: " / "info: ", e.g. "rule b never reached: ..." */
} gpa_reach_finding;

typedef struct gpa_reach {
    size_t n_rules;
    bool *reached;          /* per rule: some pod is taken by it */
    gpa_reach_pod *witness; /* per reached rule: a pod it takes */
    size_t n_findings;
    gpa_reach_finding *findings; /* rule order; info findings last */
    size_t n_ns_classes;         /* namespace classes the globs make */
    size_t n_cells;              /* regions decided (for the record and the benchmark) */
} gpa_reach;

/* Analyses p. GPA_ENOMEM; GPA_ERANGE when its namespace globs are too complex to analyse
 * exactly (the message says so; nothing is guessed instead). */
int gpa_reach_analyze(const gpa_policy *p, gpa_reach **out, gpa_error *err);
void gpa_reach_free(gpa_reach *r);

/* One line per warning, "file:line:col: warning: rule ...", or (info) per information line,
 * "file:line:col: info: ..." ("info: ..." for namespaces in no tenant). NULL when there is
 * none. Caller frees. */
char *gpa_reach_text(const gpa_reach *r, bool info);
size_t gpa_reach_warning_count(const gpa_reach *r);

/* ---------------------------------------------------------------- tenancy (check) */

/* What `check` says about the tenants themselves (policy_reach_tenants.c), beside the rules:
 * namespaces two tenants' globs both match (the first tenant listed owns them), and tenant
 * names a namespace in no tenant could carry (its GPU pods and claims are then denied,
 * tenant-name-taken). Both are warnings (`check --strict` fails on them). */
typedef enum {
    GPA_TENANCY_OVERLAP,        /* tenants a and b both match namespace ns */
    GPA_TENANCY_NAME_UNCLAIMED, /* namespace ns = tenant a's name is not tenant a's */
} gpa_tenancy_kind;

typedef struct gpa_tenancy_finding {
    gpa_tenancy_kind kind;
    size_t a;     /* OVERLAP: the tenant listed first; NAME_UNCLAIMED: the tenant named ns */
    size_t b;     /* OVERLAP: the tenant listed later; NAME_UNCLAIMED: SIZE_MAX */
    size_t owner; /* the tenant ns belongs to (the first whose globs match); SIZE_MAX: none */
    char *ns;     /* OVERLAP: a namespace both globs match; NAME_UNCLAIMED: the name */
    char *glob_a; /* OVERLAP: a's glob matching ns; NAME_UNCLAIMED: the owner's (or NULL) */
    char *glob_b; /* OVERLAP: b's glob matching ns; NAME_UNCLAIMED: NULL */
    char *file;   /* where to point: the later tenant b (OVERLAP), the tenant a (NAME) */
    int line, col;
    char *message; /* after "warning: " */
} gpa_tenancy_finding;

/* Overlapping pairs beyond this many are counted, not listed. */
#define GPA_TENANCY_MAX_PAIRS 200

typedef struct gpa_tenancy_report {
    size_t n;
    gpa_tenancy_finding *findings; /* overlaps (by tenant pair), then names (tenant order) */
    size_t more_pairs;             /* overlapping pairs not listed (over the limit) */
} gpa_tenancy_report;

/* Analyses p's tenants. GPA_ENOMEM; GPA_ERANGE when their globs are too complex to analyse
 * exactly (nothing is guessed instead). */
int gpa_tenancy_analyze(const gpa_policy *p, gpa_tenancy_report **out, gpa_error *err);
void gpa_tenancy_report_free(gpa_tenancy_report *r);
/* One "file:line:col: warning: ..." line per finding (and one for the pairs not listed);
 * NULL when there is none. Caller frees. */
char *gpa_tenancy_text(const gpa_tenancy_report *r);
size_t gpa_tenancy_warning_count(const gpa_tenancy_report *r);
/* The tenant's name by index (NULL past the end). */
const char *gpa_policy_tenant_name(const gpa_policy *p, size_t i);

/* "namespace sandbox, label a=b, 2 GPUs, gpu-memory 8589934592 bytes". Caller frees. */
char *gpa_reach_pod_text(const gpa_reach_pod *w);

/* The rule facts a witness suite needs, by index (NULL / 0 past the end). */
const char *gpa_policy_rule_name(const gpa_policy *p, size_t i);
const char *gpa_policy_rule_file(const gpa_policy *p, size_t i);
int gpa_policy_rule_line(const gpa_policy *p, size_t i);
int gpa_policy_rule_col(const gpa_policy *p, size_t i);
/* NULL for a rule that denies */
const char *gpa_policy_rule_pool(const gpa_policy *p, size_t i);
bool gpa_policy_unmatched_denied(const gpa_policy *p);

#endif
