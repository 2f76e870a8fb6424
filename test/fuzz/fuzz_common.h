/*
 * fuzz_common.h - shared by the fuzz targets: exact-size input copies (so ASan sees a read one
 * byte past the input), a failure reporter that aborts (libFuzzer saves the input), the
 * shipped + variant policy sets loaded once, and an independent RFC 6902 applier used to
 * check the engine's patches the way the API server would apply them.
 *
 * Must never: be linked into the product, or hide a finding (every property violation ends
 * in abort()).
 */
#ifndef GPA_FUZZ_COMMON_H
#define GPA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "gpu_admission/policy.h"

/* A malloc'd copy of exactly n bytes (no terminator: reading data[n] is a bug ASan reports). */
char *fz_dup_exact(const uint8_t *data, size_t n);
/* A malloc'd NUL-terminated copy, for APIs that take C strings. */
char *fz_dup_str(const uint8_t *data, size_t n);

/* Prints the message (and the JSON values, if any) and aborts. */
void fz_fail(const char *what, const cJSON *a, const cJSON *b) __attribute__((noreturn));

/* Policy sets: index 0 = the shipped policies/ directory ("shipped"), then every
 * subdirectory of test/fuzz/policies/ (named by directory), then of test/golden/policies/
 * ("golden-<dir>"), each in name order. Loaded on first use and kept for the process. A set that
 * does not load is reported on stderr and left out; no set at all aborts. */
size_t fz_policy_count(void);
const gpa_policy *fz_policy(size_t i);
/* "shipped" or the variant's directory name. */
const char *fz_policy_name(size_t i);
/* Index of the set with that name, or -1. */
int fz_policy_find(const char *name);

/* RFC 6902 applied strictly (add/remove/replace/move/copy/test), written independently of
 * src/core/format/jsonpatch.c. Returns 0 on success, -1 with a reason in why. doc is replaced. */
int fz_ref_patch_apply(cJSON **doc, const cJSON *ops, char *why, size_t whylen);

#endif
