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

/* The namespaces allowed to carry GPA_IGNORE_LABEL; and (issue 33) the names the webhook
 * configurations leave out (the GPU operator's namespace, webhook.excludeNamespaces) with who
 * may create a namespace of such a name: a tenant who creates `gpu-operator` where the
 * operator does not live would otherwise escape every check. */
typedef struct gpa_ns_guard {
    char **names;
    size_t n;
    char **excluded; /* --excluded-namespaces */
    size_t n_excluded;
    char **creators; /* --excluded-namespace-creators: "user:NAME" or "group:NAME" */
    size_t n_creators;
} gpa_ns_guard;

/* Reads a comma-separated list of namespace names ("" = none; spaces around names are
 * dropped). Each must be a Kubernetes namespace name (RFC 1123 label: a-z, 0-9, '-', at most
 * 63, starting and ending alphanumeric). GPA_EINVAL naming the bad entry, or GPA_ENOMEM.
 * Starts from an empty guard (every list); on failure g is left empty. */
int gpa_ns_guard_parse(gpa_ns_guard *g, const char *list, gpa_error *err);

/* Fills g's excluded names (the same syntax as gpa_ns_guard_parse) and who may create them:
 * a comma-separated list of `user:NAME` / `group:NAME` (NAME as the API server's
 * userInfo spells it, no commas). An excluded name's Namespace CREATE is refused to everyone
 * else. GPA_EINVAL naming the bad entry, or GPA_ENOMEM; on failure both lists are empty. */
int gpa_ns_guard_parse_excluded(gpa_ns_guard *g, const char *names, const char *creators,
                                gpa_error *err);

/* Is ns in the list? NULL g or NULL ns: no. */
bool gpa_ns_guard_allows(const gpa_ns_guard *g, const char *ns);

void gpa_ns_guard_free(gpa_ns_guard *g);

/* gpa_review_handle with the label lock: a Namespace CREATE/UPDATE on GPA_HOOK_VALIDATE whose
 * new object carries GPA_IGNORE_LABEL is refused (403, reason "ignore-label-not-exempt")
 * unless the namespace is in g, and allowed (outcome "allowed") when it is; a Namespace CREATE
 * of an excluded name by a user who is not (and is in no group that is) a creator is refused
 * (reason "excluded-namespace-create"); other namespaces are "skipped". Everything else is
 * exactly gpa_review_handle's answer.
 * gpa_review_handle itself behaves as this with g NULL (no namespace exempt). */
int gpa_review_handle_guarded(gpa_review_result *out, const gpa_policy *p, const gpa_ns_guard *g,
                              gpa_hook hook, const char *body, size_t len, gpa_error *err);

#endif
