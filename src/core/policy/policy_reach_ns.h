/*
 * policy_reach_ns.h - the namespace classes of a glob set (policy_reach_ns.c), the one
 * infinite dimension of the reachability analysis.
 */
#ifndef GPA_POLICY_REACH_NS_H
#define GPA_POLICY_REACH_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_admission/common.h"

/* Namespace classes of a glob set: every namespace (1-63 characters of [a-z0-9-], starting
 * and ending with a letter or digit) falls in exactly one class, and all namespaces of a
 * class match the same globs. */
typedef struct gpa_ns_classes {
    size_t n_pat;    /* globs analysed */
    size_t words;    /* uint64 words per match vector */
    size_t n;        /* classes */
    uint64_t *match; /* n x words: bit k set = the class's namespaces match glob k */
    char **witness;  /* per class: its shortest namespace (then the least in byte order) */
    size_t states;   /* automaton states walked, for the record */
} gpa_ns_classes;

/* The analysis refuses sets whose glob product would exceed this many states (GPA_ERANGE
 * with a message), rather than run for minutes. */
#define GPA_NS_MAX_STATES 200000

/* Builds the classes of pats[0..n) (valid globs). GPA_ENOMEM, GPA_ERANGE. */
int gpa_ns_classes_build(gpa_ns_classes *out, const char *const *pats, size_t n, gpa_error *err);
void gpa_ns_classes_free(gpa_ns_classes *c);

static inline bool gpa_ns_class_matches(const gpa_ns_classes *c, size_t cls, size_t pat)
{
    return (c->match[cls * c->words + pat / 64] >> (pat % 64)) & 1;
}

/* Does every namespace glob b admits also match a (b's language within a's, over
 * namespaces)? And do they share a namespace? Exact, by the same automaton. */
int gpa_ns_glob_covers(const char *a, const char *b, bool *out);
int gpa_ns_glob_meet(const char *a, const char *b, bool *out);

#endif
