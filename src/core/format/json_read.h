/*
 * json_read.h - the JSON reader every module uses (AdmissionReview bodies first): strict and
 * fast, it builds a cJSON tree in one arena. Private to src/core (the codec).
 *
 * Why not cJSON_Parse: it mallocs every node and every string and runs ~60 instructions per
 * input byte; a ~4 KB pod review costs more there than the whole admission decision. This
 * reader parses in place (strings are unescaped inside a private copy of the body) and takes
 * nodes from a chunked arena, so freeing a request is a few free() calls.
 *
 * The tree is made of ordinary cJSON nodes (same types, valuestring/valueint/valuedouble as
 * cJSON would set) so any code that reads cJSON can read it. It is read-only: never pass it to
 * cJSON_Delete or any function that adds, detaches or replaces items. cJSON_Duplicate copies
 * out of it safely (no node is marked cJSON_StringIsConst or cJSON_IsReference).
 *
 * Strict RFC 8259: no trailing commas, comments, leading zeros, raw control characters in
 * strings or lone surrogates, and no \u0000 (a NUL would cut the C string the engine
 * reads); nesting is limited to GPA_JSON_MAX_DEPTH; data after the value is refused.
 */
#ifndef GPA_JSON_READ_H
#define GPA_JSON_READ_H

#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>

#define GPA_JSON_MAX_DEPTH 512

/* Every string of a parsed tree (keys and values) is followed by at least this many readable
 * bytes: GPA_JSON_STR_IS may compare it with a literal in one fixed-size memcmp (which the
 * compiler inlines) instead of calling strcmp. */
#define GPA_JSON_STR_SLACK 32
/* sizeof the string literal lit, NUL included; does not compile for anything but a literal
 * or when it exceeds the slack. */
#define GPA_JSON_LIT_SIZE(lit)                                                                     \
    (sizeof("" lit) + 0 * sizeof(char[sizeof(lit) <= GPA_JSON_STR_SLACK ? 1 : -1]))
/* s (a string of a gpa_jdoc tree) equals the string literal lit. */
#define GPA_JSON_STR_IS(s, lit) (memcmp((s), lit, GPA_JSON_LIT_SIZE(lit)) == 0)

typedef struct gpa_jdoc gpa_jdoc;

/* Parses len bytes. On success returns 0 and *out (free with gpa_jdoc_free) whose root is
 * gpa_jdoc_root(*out). On failure returns -1 (GPA_ENOMEM-worthy failures return -2) and, when
 * why is not NULL, a static description and the byte offset of the error. */
int gpa_jdoc_parse(gpa_jdoc **out, const char *buf, size_t len, const char **why, size_t *offset);
const cJSON *gpa_jdoc_root(const gpa_jdoc *d);
void gpa_jdoc_free(gpa_jdoc *d);

#endif
