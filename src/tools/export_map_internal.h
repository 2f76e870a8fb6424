/*
 * export_map_internal.h - what export_map.c (the objects and their variables) and
 * export_map_patch.c (the JSONPatch expressions) share. Private to src/tools.
 *
 * The expressions read the policy's variables by name: variables.pool ('' when the MAP does
 * not place the pod), .mig, .target, .from, .reqs, .group, .island, .tenant, .ruleName.
 */
#ifndef GPA_EXPORT_MAP_INTERNAL_H
#define GPA_EXPORT_MAP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu_admission/strbuf.h"
#include "policy/policy_model.h"

/* has(base.s0) && has(base.s0.s1) ... for the first n segments */
void gpa_map_has_chain(gpa_sb *b, const char *base, const char *const *segs, size_t n);
/* 'prefix' + key as a JSON Pointer (escaped) in a CEL string literal */
void gpa_map_path_lit(gpa_sb *b, const char *prefix, const char *key);
/* patches creating the absent objects root.segs[0..n), each followed by " + " */
void gpa_map_ensure_objs(gpa_sb *b, const char *root, const char *base, const char *const *segs,
                         size_t n);
/* item appended to the list base.segs (created when absent) unless an element x satisfies
 * the CEL predicate have */
void gpa_map_append_unique(gpa_sb *b, const char *root, const char *base, const char *const *segs,
                           size_t n, const char *item, const char *have);

/* The mutations, in the webhook's order; each writes one list(JSONPatch) expression. The
 * bool ones return false when the policy gives them nothing to do (the mutation is left out:
 * an expression that is always [] is not typed list(JSONPatch)). */
void gpa_map_m_rename(gpa_sb *b);
bool gpa_map_m_tolerations(gpa_sb *b, const gpa_policy *p);
void gpa_map_m_node_affinity(gpa_sb *b);
bool gpa_map_m_topology(gpa_sb *b, const gpa_policy *p);
bool gpa_map_m_isolation(gpa_sb *b, const gpa_policy *p);
bool gpa_map_m_annotations(gpa_sb *b, const gpa_policy *p);

#endif
