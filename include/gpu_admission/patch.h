/*
 * patch.h - RFC 6901 JSON Pointer escaping and RFC 6902 JSON Patch built as a diff.
 *
 * The engine mutates a copy of the pod and asks for the diff between original and copy. The
 * diff only emits paths that exist ("replace", "remove") or adds whole values at new paths,
 * so the API server can always apply it; appending to an array uses explicit indexes.
 */
#ifndef GPA_PATCH_H
#define GPA_PATCH_H

#include <cjson/cJSON.h>
#include "common.h"

/* Appends the escaped form of token ("~" -> "~0", "/" -> "~1") to buf; returns bytes
 * written (excluding NUL) or a negative value if cap is too small. */
int gpa_pointer_escape(char *buf, size_t cap, const char *token);

/* Builds the JSON Patch (a cJSON array; empty array when equal) turning from into to. */
int gpa_patch_diff(cJSON **out_ops, const cJSON *from, const cJSON *to, gpa_error *err);

/* The same patch as gpa_patch_diff, but values the ops carry are moved out of `to` instead of
 * copied when they own their memory; `to` is left in an unspecified state (free it). For
 * callers that throw `to` away right after (the engine's working copy). */
int gpa_patch_diff_move(cJSON **out_ops, const cJSON *from, cJSON *to, gpa_error *err);

/* Applies a JSON Patch to doc in place (used by tests and the CLI's self-check). */
int gpa_patch_apply(cJSON *doc, const cJSON *ops, gpa_error *err);

#endif
