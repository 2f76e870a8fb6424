/*
 * glob.h - the namespace globs of the policy language: '*' (any run) and '?' (one char).
 * Nothing else is special. Matching is linear-time (no backtracking blow-up).
 */
#ifndef GPA_GLOB_H
#define GPA_GLOB_H

#include "common.h"

/* A valid glob is non-empty and uses only [a-z0-9.-] plus '*' and '?' (namespace names are
 * DNS labels). Returns GPA_OK or GPA_EPARSE with a message saying which character is wrong. */
int gpa_glob_validate(const char *pattern, gpa_error *err);

bool gpa_glob_match(const char *pattern, const char *s);

/* true when some string matches both globs (used to find policy rules that can never match).
 * Valid globs only (at most 253 chars); O(len(a) x len(b)), no allocation. */
bool gpa_glob_intersects(const char *a, const char *b);

#endif
