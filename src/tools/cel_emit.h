/*
 * cel_emit.h - the building blocks of the CEL the policy exporters write (`export vap`, a
 * ValidatingAdmissionPolicy; `export map`, a MutatingAdmissionPolicy): string literals, namespace
 * globs as anchored RE2 regular expressions, "which tenant is this namespace" and its trust,
 * the rule criteria, and a pod's GPU count as the engine computes it (pod_need.h).
 *
 * Each function appends one CEL expression to a gpa_sb (an allocation failure latches in the
 * builder, checked once by the caller). Inputs the expression reads (the namespace name, the
 * pod's labels, its GPU count ...) are given as CEL expressions of the caller's, so one block
 * serves a policy's `variables.x` as well as a literal path like `object.metadata.labels`.
 * Every expression is total on what the API server may send: a missing map or list reads as
 * empty through optionals, never as an evaluation error (which failurePolicy would turn into
 * a refusal the webhook would not give).
 *
 * The CEL needs the Kubernetes 1.31+ environment: optionals, `lists.range`, two-variable
 * comprehensions (`transformList`), the list library's `sum`, `max`, `slice`, `indexOf`, and
 * the Quantity library.
 */
#ifndef GPA_CEL_EMIT_H
#define GPA_CEL_EMIT_H

#include "gpu_admission/policy.h"
#include "gpu_admission/strbuf.h"

struct gpa_rule;
struct gpa_strlist;

/* s as a single-quoted CEL string literal: backslash, quote and control bytes escaped
 * (\\, \', \n, \xHH), so any policy text is a literal and never CEL. */
void gpa_cel_quote(gpa_sb *b, const char *s);

/* text at column indent, one output line per line of text: an expression as the lines of a
 * YAML literal block scalar (`expression: |-`). */
void gpa_cel_yaml_block(gpa_sb *b, const char *text, size_t indent);

/* The anchored RE2 regular expression of one namespace glob, unquoted: "^(?:research-.*)$".
 * '*' is ".*", '?' is ".", every other byte a literal (metacharacters escaped). */
void gpa_cel_glob_regex(gpa_sb *b, const char *glob);

/* bool: the string expression `subject` matches one of the globs. A glob "*" gives `true`,
 * globs without wildcards a list membership, the rest one alternation of their regexes
 * (a constant pattern: the API server compiles it once). No globs gives `false`. */
void gpa_cel_globs_match(gpa_sb *b, const char *subject, const struct gpa_strlist *globs);

/* string: the declared tenant whose globs match namespace name `ns` (tenants in policy order,
 * the first wins), '' for a namespace in no tenant. */
void gpa_cel_declared_tenant(gpa_sb *b, const gpa_policy *p, const char *ns);

/* The same for tenants [from, to) only (policy order), for a caller that splits a long list
 * over several expressions (the API server refuses an expression over 100,000 code points). */
void gpa_cel_declared_tenant_range(gpa_sb *b, const gpa_policy *p, const char *ns, size_t from,
                                   size_t to);

/* string: the tenant of the namespace: `declared` (an expression as gpa_cel_declared_tenant
 * writes) when not '', else the namespace's own name. */
void gpa_cel_tenant(gpa_sb *b, const char *declared, const char *ns);

/* bool: the namespace is in no tenant but carries a declared tenant's name
 * (POLICY.md "Tenant names cannot be taken"). */
void gpa_cel_name_taken(gpa_sb *b, const gpa_policy *p, const char *declared, const char *ns);

/* bool: the namespace's trust is trusted (its tenant's trust, else the default; no tenancy
 * block: untrusted). */
void gpa_cel_ns_trusted(gpa_sb *b, const gpa_policy *p, const char *declared);

/* bool: the pod is trusted: its namespace is (`ns_trusted`) and its labels (a map
 * expression) do not lower it with gpu-admission.io/trust: untrusted. */
void gpa_cel_pod_trusted(gpa_sb *b, const char *ns_trusted, const char *labels);

/* string: the value of label `key` in the map expression `labels`, '' when absent. */
void gpa_cel_label(gpa_sb *b, const char *labels, const char *key);

/* int: one container's GPUs (the CEL variable `c`): every resource name that counts as a GPU
 * (nvidia.com/gpu, the pools' MIG and shared resources, DRA extended resources), from limits,
 * or requests for a name limits lack; a value that is not a whole non-negative quantity
 * counts 0 (the bad-quantity check says why). */
void gpa_cel_ctr_gpus(gpa_sb *b, const gpa_policy *p, const char *c);

/* int: the sum of container `c`'s quantities of the resource names for which the CEL condition
 * `cond` on the name variable `k` holds: limits, or requests for a name limits lack; a value
 * that is not a whole non-negative quantity counts 0. */
void gpa_cel_ctr_sum(gpa_sb *b, const char *c, const char *cond);

/* int: the pod's GPU count for the pod spec expression `spec` (POLICY.md "GPU count"):
 * max(containers + native sidecars, largest init container + the sidecars before it). */
void gpa_cel_pod_gpus(gpa_sb *b, const gpa_policy *p, const char *spec);

/* What a rule's criteria read, as CEL expressions of the caller's. */
typedef struct gpa_cel_subject {
    const char *ns;       /* string: namespace name */
    const char *labels;   /* map: the pod's (or claim's) labels */
    const char *gpus;     /* int: GPU count */
    const char *declared; /* string: declared tenant, '' none (gpa_cel_declared_tenant) */
    const char *trusted;  /* bool: effective trust (gpa_cel_pod_trusted) */
    const char *mem;      /* string: the gpu-memory annotation, '' when absent */
} gpa_cel_subject;

/* bool: every criterion of rule r's match holds for the subject (engine_match.c's
 * rule_matches): gpus range, trust, gpuMemory (only with a valid annotation), tenants (a
 * declared tenant only), namespace globs, labels. A rule with no criteria gives `true`. */
void gpa_cel_rule_match(gpa_sb *b, const struct gpa_rule *r, const gpa_cel_subject *s);

/* list(int)-indexable: `[m0, m1, ...].indexOf(true)`: the index of the first rule that
 * matches, -1 none (first match wins). */
void gpa_cel_first_rule(gpa_sb *b, const gpa_policy *p, const gpa_cel_subject *s);

/* int: the same over rules [from, to) only: the index within the range, -1 none. */
void gpa_cel_first_rule_range(gpa_sb *b, const gpa_policy *p, const gpa_cel_subject *s, size_t from,
                              size_t to);

#endif
