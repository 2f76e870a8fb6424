/*
 * policy_loader.h - the loader's working state and schema helpers, shared by the files that
 * turn YAML trees into the policy model (policy_load.c: documents, tenancy, rules, cross
 * checks; policy_pools.c: pools). Private to the loader: nothing outside policy_*.c uses it.
 *
 * Every helper reports problems through lerr() (file:line:col + text, collected, never
 * fatal) and returns false, so one pass finds every error in the set.
 */
#ifndef GPA_POLICY_LOADER_H
#define GPA_POLICY_LOADER_H

#include "util/arena.h"
#include "policy/policy_model.h"
#include "gpu_admission/yaml_tree.h"

#define GPA_POLICY_MAX_ERRORS 50

typedef struct lerror {
    size_t file_idx; /* position of the file in load order, for sorting */
    int line, col;
    size_t seq;
    char *text; /* malloc'd "file:line:col: message" */
} lerror;

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
    const char *file; /* arena copy of the current file's path */
    size_t file_idx;
    const char **files; /* every file's arena path, in load order */
    size_t n_files;
    size_t seq; /* error insertion order, for stable sorting */

    lerror *errs;
    size_t n_errs, cap_errs;
    bool oom;

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
} loader;

/* Records "file:line:col: message" at node n (or at line:col when n is NULL). */
void lerr(loader *L, const gpa_ynode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lerr_at(loader *L, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records an error at a remembered position (possibly another file). */
void lerr_pos(loader *L, gpa_srcpos pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

gpa_srcpos lpos(loader *L, const gpa_ynode *n);

/* Type names for "expected X, got Y" messages. */
const char *ynode_type_name(const gpa_ynode *n);

/* Schema helpers: each checks the node's type and reports "what: expected ..., got ...". */
bool want_map(loader *L, const gpa_ynode *n, const char *what);
bool want_seq(loader *L, const gpa_ynode *n, const char *what);
bool is_null(const gpa_ynode *n);
/* A string scalar (plain resolving to a string, quoted, or tagged !!str), arena-copied. */
bool get_str(loader *L, const gpa_ynode *n, const char *what, char **out);
bool get_int(loader *L, const gpa_ynode *n, const char *what, int64_t min, int64_t max,
             int64_t *out);
bool get_bool(loader *L, const gpa_ynode *n, const char *what, bool *out);
/* Enum: returns the index in names (NULL-terminated) or -1 after reporting. */
int get_enum(loader *L, const gpa_ynode *n, const char *what, const char *const *names);
/* Checks every key of map m is in names (NULL-terminated); puts each value node in vals[i]
 * (NULL when absent). Reports unknown keys with the allowed list. */
void map_fields(loader *L, const gpa_ynode *m, const char *what, const char *const *names,
                const gpa_ynode **vals);
/* List of strings; each validated by check (may be NULL) which returns NULL or a reason. */
bool get_strlist(loader *L, const gpa_ynode *n, const char *what, bool allow_empty,
                 const char *(*check)(const char *), const char *item_what, gpa_strlist *out,
                 gpa_srcpos **pos_out);
/* String map with keys checked as qualified names and values as label values. */
bool get_labelmap(loader *L, const gpa_ynode *n, const char *what, gpa_kvlist *out);

/* policy_pools.c */
void load_pool(loader *L, const gpa_ynode *n);

/* policy_workloads.c: spec.workloads of one document; finish_workloads copies the block
 * into p once every file is read (false: out of memory). */
void load_workloads(loader *L, const gpa_ynode *n);
bool finish_workloads(loader *L, gpa_policy *p);

/* policy_revision.c: fills p->revision from the model (never from the source bytes). */
int gpa_policy_compute_revision(gpa_policy *p);

/* Largest policy file accepted, in bytes. */
#define GPA_POLICY_MAX_FILE  (4u << 20)
#define GPA_POLICY_MAX_FILES 1024
/* Bounds that keep every name check (quadratic in the worst case) well under a second. */
#define GPA_POLICY_MAX_ITEMS 4096 /* pools, rules, tenants */
#define GPA_POLICY_MAX_LIST  1024 /* entries of one string list or map */

#endif
