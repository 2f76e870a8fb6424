/*
 * review_namespace.c - the lock on the namespace label gpu-admission.io/ignore (see
 * gpu_admission/namespace_guard.h for why it exists): the exempt list read from
 * `serve --ignore-label-namespaces`, and the Namespace CREATE/UPDATE the validating webhook
 * is sent when the chart lets the label skip the mutating webhook; and the lock on the names
 * the webhooks leave out (`--excluded-namespaces`): their Namespace CREATE is refused to all
 * but `--excluded-namespace-creators` (issue 33: no excluded namespace can be squatted).
 *
 * Only the new object counts: removing the label is always allowed (so a namespace labelled
 * under an older release can always be cleaned up), adding or keeping it needs the namespace's
 * name in the list. Must never: allow the label on a name not in the list, or judge a
 * namespace by anything but its own name and labels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/review_namespace.h"

/* RFC 1123 label, what the API server accepts as a namespace name. */
static bool valid_ns_name(const char *s, size_t n)
{
    if (n == 0 || n > 63) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i + 1 < n)) return false;
    }
    return true;
}

static void free_list(char ***items, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*items)[i]);
    free(*items);
    *items = NULL;
    *n = 0;
}

void gpa_ns_guard_free(gpa_ns_guard *g)
{
    if (!g) return;
    free_list(&g->names, &g->n);
    free_list(&g->excluded, &g->n_excluded);
    free_list(&g->creators, &g->n_creators);
}

/* One `user:NAME` / `group:NAME` entry: a prefix and a non-empty name without commas. */
static bool valid_creator(const char *s, size_t n)
{
    size_t pre = n >= 5 && memcmp(s, "user:", 5) == 0    ? 5
                 : n >= 6 && memcmp(s, "group:", 6) == 0 ? 6
                                                         : 0;
    return pre && n > pre && n <= 512;
}

/* Splits list at commas into *out (spaces around entries dropped; "" = none), each entry
 * checked by ok; what names the list in errors. */
static int split(char ***out, size_t *n, const char *list, bool (*ok)(const char *, size_t),
                 const char *what, const char *expect, gpa_error *err)
{
    *out = NULL;
    *n = 0;
    if (!list || !*list) return GPA_OK;
    for (const char *p = list;;) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        size_t len = (size_t)(b - a);
        /* An empty entry is allowed only as the whole list (blank = none): "a,,b" is a typo. */
        if (len == 0 && p == list && !*end) return GPA_OK;
        if (len == 0 || (*end == ',' && end[1] == '\0')) {
            free_list(out, n);
            return gpa_fail(err, GPA_EINVAL, "%s: empty name in '%.200s'", what, list);
        }
        if (!ok(a, len)) {
            free_list(out, n);
            return gpa_fail(err, GPA_EINVAL, "%s: '%.*s' is not %s", what,
                            (int)(len > 80 ? 80 : len), a, expect);
        }
        char **grown = realloc(*out, (*n + 1) * sizeof *grown);
        char *item = grown ? strndup(a, len) : NULL;
        if (grown) *out = grown;
        if (!item) {
            free_list(out, n);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        (*out)[(*n)++] = item;
        if (!*end) return GPA_OK;
        p = end + 1;
    }
}

#define NS_NAME_RULE                                                                               \
    "a namespace name (a-z, 0-9 and '-', at most 63, starting and ending with a letter or digit)"

int gpa_ns_guard_parse(gpa_ns_guard *g, const char *list, gpa_error *err)
{
    memset(g, 0, sizeof *g);
    return split(&g->names, &g->n, list, valid_ns_name, "--ignore-label-namespaces", NS_NAME_RULE,
                 err);
}

int gpa_ns_guard_parse_excluded(gpa_ns_guard *g, const char *names, const char *creators,
                                gpa_error *err)
{
    free_list(&g->excluded, &g->n_excluded);
    free_list(&g->creators, &g->n_creators);
    int rc = split(&g->excluded, &g->n_excluded, names, valid_ns_name, "--excluded-namespaces",
                   NS_NAME_RULE, err);
    if (rc == GPA_OK)
        rc = split(&g->creators, &g->n_creators, creators, valid_creator,
                   "--excluded-namespace-creators", "user:NAME or group:NAME", err);
    if (rc != GPA_OK) {
        free_list(&g->excluded, &g->n_excluded);
        free_list(&g->creators, &g->n_creators);
    }
    return rc;
}

/* May the request's user (or one of its groups) create an excluded namespace? */
static bool creator(const gpa_ns_guard *g, const char *user, const cJSON *groups)
{
    for (size_t i = 0; i < g->n_creators; i++) {
        const char *c = g->creators[i];
        if (strncmp(c, "user:", 5) == 0) {
            if (user && strcmp(c + 5, user) == 0) return true;
            continue;
        }
        if (!cJSON_IsArray(groups)) continue;
        const cJSON *x;
        cJSON_ArrayForEach(x, groups) {
            if (cJSON_IsString(x) && strcmp(c + 6, x->valuestring) == 0) return true;
        }
    }
    return false;
}

bool gpa_ns_guard_allows(const gpa_ns_guard *g, const char *ns)
{
    if (!g || !ns) return false;
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->names[i], ns) == 0) return true;
    return false;
}

bool gpa_review_is_namespace(const char *group, size_t group_len, const char *kind)
{
    return kind && strcmp(kind, "Namespace") == 0 && (!group || group_len == 0);
}

static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

int gpa_review_namespace(gpa_decision *out, bool *judged, const gpa_ns_guard *g, const cJSON *obj,
                         gpa_operation op, const char *user, const cJSON *groups, const char **why)
{
    *judged = false;
    const cJSON *md = member(obj, "metadata");
    if (!cJSON_IsObject(md)) {
        *why = "namespace metadata must be an object";
        return GPA_EREQUEST;
    }
    const cJSON *nm = member(md, "name");
    /* A name the webhooks leave out is no way past them: only the listed creators make it. */
    if (op == GPA_OP_CREATE && g && g->n_excluded && cJSON_IsString(nm)) {
        bool excluded = false;
        for (size_t i = 0; i < g->n_excluded && !excluded; i++)
            excluded = strcmp(g->excluded[i], nm->valuestring) == 0;
        if (excluded) {
            *judged = true;
            if (!creator(g, user, groups)) {
                out->allowed = false;
                out->reason = "excluded-namespace-create";
                char msg[640];
                snprintf(msg, sizeof msg,
                         "namespace \"%.63s\" is left out of the GPU admission webhooks by name "
                         "(chart webhook.gpuOperatorNamespace / webhook.excludeNamespaces): "
                         "created by %.200s it would run pods no GPU policy judges; only the "
                         "users and groups in webhook.excludedNamespaceCreators (serve "
                         "--excluded-namespace-creators) may create it: pick another name, or "
                         "ask a cluster administrator",
                         nm->valuestring, user && *user ? user : "an unknown user");
                out->message = strdup(msg);
                return out->message ? GPA_OK : GPA_ENOMEM;
            }
        }
    }
    const cJSON *labels = member(md, "labels");
    if (labels && !cJSON_IsNull(labels) && !cJSON_IsObject(labels)) {
        *why = "namespace metadata.labels must be an object";
        return GPA_EREQUEST;
    }
    const cJSON *label = member(labels, GPA_IGNORE_LABEL);
    if (!label) {
        if (*judged) out->allowed = true; /* an excluded name, by one of its creators */
        return GPA_OK;
    }
    if (!cJSON_IsString(label)) {
        *why = "namespace label " GPA_IGNORE_LABEL " must be a string";
        return GPA_EREQUEST;
    }
    const cJSON *name = member(md, "name");
    if (!cJSON_IsString(name) || !name->valuestring[0]) {
        *why = "namespace metadata.name must be a non-empty string";
        return GPA_EREQUEST;
    }
    *judged = true;
    if (gpa_ns_guard_allows(g, name->valuestring)) {
        out->allowed = true;
        return GPA_OK;
    }
    out->allowed = false;
    out->reason = "ignore-label-not-exempt";
    char msg[512];
    snprintf(msg, sizeof msg,
             "namespace \"%.63s\" may not carry the label " GPA_IGNORE_LABEL
             ": only the namespaces the gpu-admission release exempts may (chart value "
             "webhook.ignoreLabel.namespaces, serve --ignore-label-namespaces); remove the "
             "label, or ask the cluster's administrators to exempt the namespace",
             name->valuestring);
    out->message = strdup(msg);
    return out->message ? GPA_OK : GPA_ENOMEM;
}
