/*
 * policy_loader.h - the loader's working state and schema helpers, shared by the files that
 * turn YAML trees into the policy model (policy_load.c: documents, tenancy, rules, cross
 * checks; policy_pools.c: pools). Private to the loader: nothing outside policy_*.c uses it.
 *
 * Typed access and the error collector are the format layer's gpa_yread (yaml_read.h): the
 * loader's reader L->r keeps the 50 errors lowest by position across every file (what the
 * report shows) and counts the rest; its strings come from the policy arena.
 */
#ifndef GPA_POLICY_LOADER_H
#define GPA_POLICY_LOADER_H

#include "util/arena.h"
#include "policy/policy_model.h"
#include "gpu_admission/yaml_read.h"

#define GPA_POLICY_MAX_ERRORS 50

/* What a rule names but can only be resolved once every file is read. */
typedef struct rule_refs {
    char *pool; /* arena */
    gpa_srcpos pool_pos;
    char *mig_profile; /* arena, NULL when not written */
    gpa_srcpos mig_pos;
    gpa_strlist tenants; /* the written names, positions parallel */
    gpa_srcpos *tenant_pos;
} rule_refs;

typedef struct loader {
    gpa_arena *arena;
    gpa_yread r;        /* r.file: arena copy of the current file's path; r.file_idx its index */
    const char **files; /* every file's arena path, in load order */
    size_t n_files;

    /* growable while reading; copied into the arena at the end */
    gpa_pool *pools;
    size_t n_pools, cap_pools;
    gpa_rule *rules;
    rule_refs *refs;
    size_t n_rules, cap_rules;
    gpa_tenant *tenants;
    size_t n_tenants, cap_tenants;

    bool has_tenancy, has_enforcement, has_unmatched;
    gpa_srcpos tenancy_pos, enforcement_pos, unmatched_pos;
    gpa_trust default_trust;
    gpa_enforcement enforcement;
    bool unmatched_deny;

    /* spec.workloads (policy_workloads.c) */
    bool has_wl_enforcement;
    gpa_srcpos wl_enforcement_pos;
    gpa_wl_enforcement wl_enforcement;
    gpa_workload_kind *wl_kinds;
    size_t n_wl_kinds, cap_wl_kinds;

    /* spec.dra (policy_dra.c) */
    gpa_dra_spec dra;

    /* spec.isolation (policy_isolation.c) */
    gpa_isolation_spec isolation;
} loader;

/* Records an error at a remembered position (possibly another file). */
void gpa_policy_error_pos(loader *L, gpa_srcpos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
gpa_srcpos gpa_policy_pos(loader *L, const gpa_ynode *n);

/* gpa_yread_strlist with positions as gpa_srcpos, at most GPA_POLICY_MAX_LIST entries. */
bool gpa_policy_strlist(loader *L, const gpa_ynode *n, const char *what, bool allow_empty,
                        const char *(*check)(const char *), const char *item_what, gpa_strlist *out,
                        gpa_srcpos **pos_out);
/* String map with keys checked as qualified names and values as label values. */
bool gpa_policy_labelmap(loader *L, const gpa_ynode *n, const char *what, gpa_kvlist *out);

/* policy_pools.c */
void gpa_policy_load_pool(loader *L, const gpa_ynode *n);

/* policy_workloads.c: spec.workloads of one document; gpa_policy_finish_workloads copies the
 * block into p once every file is read (false: out of memory). */
void gpa_policy_load_workloads(loader *L, const gpa_ynode *n);
bool gpa_policy_finish_workloads(loader *L, gpa_policy *p);

/* policy_revision.c: fills p->revision from the model (never from the source bytes). */
int gpa_policy_compute_revision(gpa_policy *p);

/* Largest policy file accepted, in bytes. */
#define GPA_POLICY_MAX_FILE  (4u << 20)
#define GPA_POLICY_MAX_FILES 1024
/* Bounds that keep every name check (quadratic in the worst case) well under a second. */
#define GPA_POLICY_MAX_ITEMS 4096 /* pools, rules, tenants */
#define GPA_POLICY_MAX_LIST  1024 /* entries of one string list or map */

/* policy_nvlink.c: a pool's topology.imexChannel, read after the rest of its topology. */
void gpa_policy_load_imex(loader *L, const gpa_ynode *n, gpa_topology *t);

#endif
