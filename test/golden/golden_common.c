/*
 * golden_common.c - what the golden programs (golden_runner: pod cases, golden_workloads:
 * workload objects, golden_claims: DRA claims) need the same way: reading a file and its YAML
 * documents, the policy sets cases name (loaded once per program, cached by their spelling),
 * RFC 7386 merge patches, the sorted case list, and an object's AdmissionReview asked of a
 * webhook and its answer read back. Test code only.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu_admission/yamljson.h"
#include "golden_common.h"

const char *policies_dir;

char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

/* ---------------------------------------------------------------- policies */

typedef struct policy_entry {
    char *key;
    gpa_policy *p;
} policy_entry;

static policy_entry policies[64];
static size_t n_policies;

/* `policy:` is a directory name under POLICIES, or a list of files relative to it. */
gpa_policy *get_policy(const cJSON *spec, char *why, size_t cap)
{
    char *key = cJSON_PrintUnformatted(spec);
    for (size_t i = 0; i < n_policies; i++) {
        if (strcmp(policies[i].key, key) == 0) {
            free(key);
            return policies[i].p;
        }
    }
    gpa_policy *p = NULL;
    gpa_error err = {0};
    int rc;
    if (cJSON_IsString(spec)) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", policies_dir, spec->valuestring);
        rc = gpa_policy_load_dir(&p, path, &err);
    } else if (cJSON_IsArray(spec)) {
        size_t n = (size_t)cJSON_GetArraySize(spec), i = 0;
        gpa_policy_source *src = calloc(n, sizeof *src);
        char **paths = calloc(n, sizeof *paths);
        const cJSON *f;
        rc = GPA_OK;
        cJSON_ArrayForEach(f, spec) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", policies_dir, cJSON_GetStringValue(f));
            paths[i] = strdup(path);
            src[i].path = paths[i];
            src[i].data = read_file(path, &src[i].len);
            if (!src[i].data) {
                snprintf(err.message, sizeof err.message, "cannot read %.1000s", path);
                rc = GPA_EIO;
            }
            i++;
        }
        if (rc == GPA_OK) rc = gpa_policy_load_sources(&p, src, n, &err);
        for (i = 0; i < n; i++) {
            free((char *)src[i].data);
            free(paths[i]);
        }
        free(src);
        free(paths);
    } else {
        snprintf(err.message, sizeof err.message, "policy must be a name or a list of files");
        rc = GPA_EINVAL;
    }
    if (rc != GPA_OK || n_policies == sizeof policies / sizeof policies[0]) {
        snprintf(why, cap, "policy %s: %s", key, err.message);
        free(key);
        gpa_policy_unref(p);
        return NULL;
    }
    policies[n_policies].key = key;
    policies[n_policies].p = p;
    n_policies++;
    return p;
}

void free_policies(void)
{
    for (size_t i = 0; i < n_policies; i++) {
        free(policies[i].key);
        gpa_policy_unref(policies[i].p);
    }
    n_policies = 0;
}

/* RFC 7386 merge patch, used by cases that adapt a real fixture (an annotation, a label). */
void merge_patch(cJSON *target, const cJSON *patch)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, patch) {
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
            continue;
        }
        cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);
        if (cJSON_IsObject(p) && cJSON_IsObject(t)) {
            merge_patch(t, p);
        } else if (cJSON_IsObject(p)) {
            cJSON *o = cJSON_CreateObject();
            merge_patch(o, p);
            if (t)
                cJSON_ReplaceItemInObjectCaseSensitive(target, p->string, o);
            else
                cJSON_AddItemToObject(target, p->string, o);
        } else if (t) {
            cJSON_ReplaceItemInObjectCaseSensitive(target, p->string, cJSON_Duplicate(p, 1));
        } else {
            cJSON_AddItemToObject(target, p->string, cJSON_Duplicate(p, 1));
        }
    }
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t list_cases(const char *cases_dir, char ***out)
{
    DIR *d = opendir(cases_dir);
    size_t n = 0, cap = 0;
    char **names = NULL;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(de->d_name);
    }
    if (d) closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    *out = names;
    return n;
}

cJSON *yaml_docs(const char *path)
{
    char *buf = read_file(path, NULL);
    if (!buf) return NULL;
    cJSON *docs = NULL;
    gpa_error err = {0};
    if (gpa_yaml_to_json(&docs, buf, strlen(buf), &err) != GPA_OK)
        fprintf(stderr, "%s: %s\n", path, err.message);
    free(buf);
    return docs;
}

char *review_body(const cJSON *obj, const cJSON *old, const char *op, const char *ns,
                  const char *user, const char *api, bool dry)
{
    const char *av = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "apiVersion"));
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "kind"));
    const char *slash = av ? strchr(av, '/') : NULL;
    char group[128] = "", res[64] = "";
    if (slash) snprintf(group, sizeof group, "%.*s", (int)(slash - av), av);
    snprintf(res, sizeof res, "%s", kind ? kind : "");
    for (char *c = res; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    strncat(res, "s", sizeof res - strlen(res) - 1);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "apiVersion", api);
    cJSON_AddStringToObject(r, "kind", "AdmissionReview");
    cJSON *req = cJSON_AddObjectToObject(r, "request");
    cJSON_AddStringToObject(req, "uid", "golden-review");
    cJSON *k = cJSON_AddObjectToObject(req, "kind");
    cJSON_AddStringToObject(k, "group", group);
    cJSON_AddStringToObject(k, "version", slash ? slash + 1 : av ? av : "");
    cJSON_AddStringToObject(k, "kind", kind ? kind : "");
    cJSON *rs = cJSON_AddObjectToObject(req, "resource");
    cJSON_AddStringToObject(rs, "group", group);
    cJSON_AddStringToObject(rs, "version", slash ? slash + 1 : av ? av : "");
    cJSON_AddStringToObject(rs, "resource", res);
    cJSON_AddStringToObject(req, "namespace", ns);
    cJSON_AddStringToObject(req, "operation", op);
    if (user) cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "userInfo"), "username", user);
    if (strcmp(op, "DELETE") == 0) {
        cJSON_AddNullToObject(req, "object");
        cJSON_AddItemToObject(req, "oldObject", cJSON_Duplicate(obj, 1));
    } else {
        cJSON_AddItemToObject(req, "object", cJSON_Duplicate(obj, 1));
        if (old) cJSON_AddItemToObject(req, "oldObject", cJSON_Duplicate(old, 1));
    }
    if (dry) cJSON_AddTrueToObject(req, "dryRun");
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return s;
}

answer ask(const gpa_policy *p, gpa_hook hook, const char *body)
{
    answer a = {0};
    gpa_review_result r;
    gpa_error err = {0};
    gpa_review_handle(&r, p, hook, body, strlen(body), &err);
    a.outcome = r.outcome;
    a.body = r.body ? strndup(r.body, r.body_len) : NULL;
    cJSON *root = a.body ? cJSON_Parse(a.body) : NULL;
    cJSON *resp = cJSON_GetObjectItemCaseSensitive(root, "response");
    a.allowed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(resp, "allowed"));
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(resp, "status"), "message"));
    if (!m && !resp) m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "message"));
    a.message = m ? strdup(m) : NULL;
    a.reason = r.decision.reason ? strdup(r.decision.reason) : NULL;
    a.warnings = cJSON_DetachItemFromObjectCaseSensitive(resp, "warnings");
    a.patched = cJSON_GetObjectItemCaseSensitive(resp, "patch") != NULL;
    if (a.patched && r.decision.patch) a.patch = cJSON_Duplicate(r.decision.patch, 1);
    cJSON_Delete(root);
    gpa_review_result_clear(&r);
    return a;
}

void answer_free(answer *a)
{
    free(a->message);
    free(a->reason);
    free(a->body);
    cJSON_Delete(a->warnings);
    cJSON_Delete(a->patch);
}
