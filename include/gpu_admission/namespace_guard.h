/*
 * namespace_guard.h - the lock on the namespace label gpu-admission.io/ignore.
 *
 * When the chart's opt-in (webhook.ignoreLabel.enabled) lets that label skip the MUTATING
 * webhook, anyone who may create or label a namespace (Capsule, HNC, namespace self-service)
 * could exempt their own namespace. As Gatekeeper does for its own ignore label
 * (open-policy-agent/gatekeeper#231, #350), the validating webhook is then also sent
 * Namespace CREATE/UPDATE requests that carry the label, and refuses them unless the
 * namespace is in the exempt list the server was started with
 * (`serve --ignore-label-namespaces`). No list, or an empty one: the label is refused on
 * every namespace (fail closed). The validating webhook itself never honours the label.
 *
 * Must never: allow the label on a namespace that is not named in the list (no globs, no
 * prefixes), or read anything but the request it is given.
 */
#ifndef GPA_NAMESPACE_GUARD_H
#define GPA_NAMESPACE_GUARD_H

#include "common.h"
#include "policy.h"
#include "review.h"

#define GPA_IGNORE_LABEL "gpu-admission.io/ignore"

/* The namespaces allowed to carry GPA_IGNORE_LABEL. */
typedef struct gpa_ns_guard {
    char **names;
    size_t n;
} gpa_ns_guard;

/* Reads a comma-separated list of namespace names ("" = none; spaces around names are
 * dropped). Each must be a Kubernetes namespace name (RFC 1123 label: a-z, 0-9, '-', at most
 * 63, starting and ending alphanumeric). GPA_EINVAL naming the bad entry, or GPA_ENOMEM.
 * On failure g is left empty. */
int gpa_ns_guard_parse(gpa_ns_guard *g, const char *list, gpa_error *err);

/* Is ns in the list? NULL g or NULL ns: no. */
bool gpa_ns_guard_allows(const gpa_ns_guard *g, const char *ns);

void gpa_ns_guard_free(gpa_ns_guard *g);

/* gpa_review_handle with the label lock: a Namespace CREATE/UPDATE on GPA_HOOK_VALIDATE whose
 * new object carries GPA_IGNORE_LABEL is refused (403, reason "ignore-label-not-exempt")
 * unless the namespace is in g, and allowed (outcome "allowed") when it is; one without the
 * label is "skipped". Everything else is exactly gpa_review_handle's answer.
 * gpa_review_handle itself behaves as this with g NULL (no namespace exempt). */
int gpa_review_handle_guarded(gpa_review_result *out, const gpa_policy *p, const gpa_ns_guard *g,
                              gpa_hook hook, const char *body, size_t len, gpa_error *err);

#endif
