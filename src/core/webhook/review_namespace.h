/*
 * review_namespace.h - the validating webhook's answer to a Namespace CREATE/UPDATE: the lock
 * on the gpu-admission.io/ignore label (gpu_admission/namespace_guard.h). Private to src/core
 * (the review codec dispatches here on request.kind).
 */
#ifndef GPA_REVIEW_NAMESPACE_H
#define GPA_REVIEW_NAMESPACE_H

#include <cjson/cJSON.h>

#include "gpu_admission/engine.h"
#include "gpu_admission/namespace_guard.h"

/* Is (group, kind) the core/v1 Namespace? group is group_len bytes (it may be the start of an
 * apiVersion such as "v1"). */
bool gpa_review_is_namespace(const char *group, size_t group_len, const char *kind);

/* Judges the namespace obj (the request's new object; op, the requesting user and its groups
 * array from request.userInfo): a CREATE of one of g's excluded names is refused unless the
 * user or a group is a creator; otherwise *judged is false when it does not carry the label
 * (nothing to judge), else out->allowed says whether g exempts it, with
 * out->message and out->reason on a refusal. Returns GPA_OK, GPA_ENOMEM, or GPA_EREQUEST
 * with *why set when the object is malformed (no string metadata.name, labels not a map of
 * strings). */
int gpa_review_namespace(gpa_decision *out, bool *judged, const gpa_ns_guard *g, const cJSON *obj,
                         gpa_operation op, const char *user, const cJSON *groups, const char **why);

#endif
