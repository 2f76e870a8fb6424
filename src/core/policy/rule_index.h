/*
 * rule_index.h - the policy's load-time lookup aids (rule_index.c): per rule and per tenant
 * namespace glob a literal-prefix key, sorted lookups over them, and the warning lines that
 * depend only on the policy. The loader builds it last (gpa_rule_index_build, declared in
 * policy_model.h); the engine only reads it.
 *
 * Policy layer: it must never include or call the engine (the engine reads it, never the
 * other way round), and it is only ever a necessary condition for a match.
 */
#ifndef GPA_RULE_INDEX_H
#define GPA_RULE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy_model.h"
#include "policy/warn_text.h"

/* A glob's literal prefix (<= 8 bytes) as a word; mask 0 = no prefilter. */
typedef struct gpa_glob_key {
    uint64_t prefix, mask;
} gpa_glob_key;

/* The same keys sorted for lookup: one bucket per literal-prefix length (0-8 bytes), each
 * sorted by (prefix, position), so the keys a namespace may match are found by one binary
 * search per length instead of a walk over all of them. */
typedef struct gpa_glob_entry {
    uint64_t prefix;
    size_t pos; /* index in rule_keys / tenant_globs */
} gpa_glob_entry;

typedef struct gpa_glob_lookup {
    size_t n_buckets;
    struct {
        uint64_t mask;
        size_t n;
        gpa_glob_entry *e;
    } b[9];
} gpa_glob_lookup;

/* Warning lines that depend only on the policy, formatted (and cut to the warning limit)
 * once at load: placing a pod then copies them instead of formatting them again. The texts
 * are the formats of warn_text.h, exactly what the engine writes without an index. */
typedef struct gpa_pool_text {
    gpa_sv name;
    gpa_sv runtime_class;   /* GPA_W_RUNTIME_CLASS; s NULL when the pool sets none */
    gpa_sv *tolerations;    /* GPA_W_TOLERATION per toleration */
    gpa_sv *node_selector;  /* GPA_W_NODE_AFFINITY per nodeSelector entry */
    gpa_sv pool_label;      /* GPA_W_LABEL for the pool label */
    gpa_sv isolation;       /* GPA_W_ISOLATION */
    gpa_sv affinity_suffix; /* "] added for pool <name>": the end of a GPA_W_NODE_AFFINITY */
    /* bit i: profiles[i] is a media-extension ("+") profile, never picked automatically;
     * valid when n_profiles <= 64 */
    uint64_t plus_profiles;
} gpa_pool_text;

typedef struct gpa_rule_text {
    gpa_sv name;
    gpa_sv placed;  /* GPA_W_PLACED (rules that place) */
    gpa_sv renamed; /* GPA_W_RENAMED for time-slicing and mps pools */
} gpa_rule_text;

typedef struct gpa_rule_index {
    gpa_pool_text *pools; /* per pool, in pool order */
    gpa_rule_text *rules; /* per rule, in rule order */
    gpa_sv revision;
    uint64_t gpu_res_first[4]; /* bit c: some name in policy.gpu_resources begins with byte c */
    size_t n_rules;
    gpa_glob_key *rule_keys; /* per rule, in rule order */
    size_t n_tenant_globs;
    struct {
        gpa_glob_key key;
        const char *pattern;
        size_t tenant;
    } * tenant_globs; /* every tenant glob, tenant order then written order */
    /* every tenant, sorted by name: is a namespace in no tenant a tenant's name? */
    const gpa_tenant **tenants_by_name;
    gpa_glob_lookup rules_lk, tenants_lk;
} gpa_rule_index;

/* The first 8 bytes of a namespace, zero-padded, to test against gpa_glob_key. */
uint64_t gpa_ns_word(const char *ns);
#define GPA_GLOB_CANDIDATES 64
/* Up to this many keys a walk is cheaper than the binary searches. */
#define GPA_GLOB_WALK_MAX 32
/* The positions whose key may match ns_word, ascending, into out (room for
 * GPA_GLOB_CANDIDATES); exactly the keys gpa_glob_key_may_match lets through. SIZE_MAX when
 * there are more (the caller walks every key instead). */
size_t gpa_glob_lookup_find(const gpa_glob_lookup *l, uint64_t ns_word, size_t *out);
static inline bool gpa_glob_key_may_match(const gpa_glob_key *k, uint64_t ns_word)
{
    return (ns_word & k->mask) == k->prefix;
}

#endif
