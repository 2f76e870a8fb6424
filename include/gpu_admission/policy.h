/*
 * policy.h - loading a policy set (POLICY.md) into an immutable, reference-counted snapshot.
 *
 * A gpa_policy is built completely or not at all: the loader either returns a whole valid set
 * or GPA_EPOLICY with every "file:line:col: message" it found. Once built it is never
 * modified, so any number of threads may read it; the last gpa_policy_unref frees it.
 * The struct layout is private to the core (src/core/policy/policy_model.h).
 */
#ifndef GPA_POLICY_H
#define GPA_POLICY_H

#include "common.h"

typedef struct gpa_policy gpa_policy;

/* One in-memory policy file: path is used in messages and for ordering. */
typedef struct gpa_policy_source {
    const char *path;
    const char *data;
    size_t len;
} gpa_policy_source;

/* Builds a set from sources (sorted here by path, so callers may pass any order). */
int gpa_policy_load_sources(gpa_policy **out, const gpa_policy_source *sources, size_t n,
                            gpa_error *err);

/* Reads every *.yaml / *.yml regular file directly in dir (following symlinks, skipping
 * dot-files and directories such as the ConfigMap "..data" machinery) and builds a set. The
 * only I/O in the core; kept here so CLI and server read directories identically. */
int gpa_policy_load_dir(gpa_policy **out, const char *dir, gpa_error *err);

gpa_policy *gpa_policy_ref(gpa_policy *p);
void gpa_policy_unref(gpa_policy *p);

/* 64 lowercase hex chars: SHA-256 of the normalized set (same meaning, same hash, whatever
 * the file layout, comments or key order). */
const char *gpa_policy_revision(const gpa_policy *p);

size_t gpa_policy_pool_count(const gpa_policy *p);
size_t gpa_policy_rule_count(const gpa_policy *p);

/* Does the resource name stand for a whole nvidia.com/gpu of no pool in particular: a DRA
 * extended resource of a generic class (deviceclass.resource.kubernetes.io/gpu.nvidia.com, a
 * spec.dra.genericClasses class, or such a class's listed extendedResourceName)? */
bool gpa_policy_dra_generic(const gpa_policy *p, const char *name);

/* Human-readable summary for `gpu-admission check`: pools, rules in effective order (with
 * the file:line each came from), enforcement, unmatched, revision. Caller frees. */
char *gpa_policy_describe(const gpa_policy *p);

/* Advice about a VALID set, one "file:line:col: warning: ..." per line: rules that can never
 * match (their namespaces and tenants never meet, trust they can never get, gpus max 0, an
 * earlier rule that matches every GPU pod) and rules every pod of which would be denied (an
 * untrusted-only rule placing into a shared pool that refuses untrusted pods, more GPUs than
 * the pool's gpusPerNode). NULL when there is nothing to say. Caller frees. Never changes
 * what the engine does: a warned-about set loads and serves as written. */
char *gpa_policy_warnings(const gpa_policy *p);

#endif
