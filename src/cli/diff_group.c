/*
 * diff_group.c - which object in `diff`'s input owns another, so the ReplicaSets and pods a
 * Deployment made, the Jobs and pods of a CronJob, the pods of a StatefulSet are reported under
 * their top owner (one entry, N pods) instead of once each beside it.
 *
 * Follows metadata.ownerReferences (the controller reference) through the objects of the
 * input, by uid when the reference has one, else by kind, namespace and name: Pod ->
 * ReplicaSet -> Deployment, Pod -> Job -> CronJob, Pod -> StatefulSet. A ReplicaSet that is
 * not in the input (kubectl get pods,deployments) is found through its name, which the
 * Deployment controller makes `<deployment>-<pod-template-hash>`; a Job missing under a
 * CronJob through `<cronjob>-<schedule time>`. Only reads the objects.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *s_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *meta(const cJSON *o)
{
    return cJSON_GetObjectItemCaseSensitive(o, "metadata");
}

static bool eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The controller reference (controller: true), else the only reference. */
static const cJSON *controller_ref(const cJSON *o)
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta(o), "ownerReferences");
    const cJSON *r;
    cJSON_ArrayForEach(r, refs) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller"))) return r;
    }
    return cJSON_GetArraySize(refs) == 1 ? cJSON_GetArrayItem(refs, 0) : NULL;
}

/* The input's objects by uid and by kind/namespace/name: an open-addressing table of object
 * index + 1 per key, so finding an owner costs no scan (a cluster's List holds thousands). */
typedef struct obj_index {
    char **keys;
    long *val;
    size_t cap;
} obj_index;

static size_t hash(const char *k)
{
    size_t h = 14695981039346656037u;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211u;
    return h;
}

static void put(obj_index *ix, char *key, long v)
{
    for (size_t i = hash(key) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        if (!ix->keys[i]) {
            ix->keys[i] = key;
            ix->val[i] = v;
            return;
        }
        if (strcmp(ix->keys[i], key) == 0) { /* the first object of a key wins */
            free(key);
            return;
        }
    }
}

static long get(const obj_index *ix, const char *key)
{
    for (size_t i = hash(key) & (ix->cap - 1); ix->keys[i]; i = (i + 1) & (ix->cap - 1))
        if (strcmp(ix->keys[i], key) == 0) return ix->val[i];
    return -1;
}

static char *name_key(const char *kind, const char *ns, const char *name)
{
    size_t n = strlen(kind) + strlen(ns) + strlen(name) + 4;
    char *k = malloc(n);
    if (k) snprintf(k, n, "n\x01%s/%s/%s", kind, ns, name);
    return k;
}

static long find(const obj_index *ix, const char *kind, const char *ns, const char *name,
                 const char *uid)
{
    if (uid) {
        size_t n = strlen(uid) + 3;
        char *k = malloc(n);
        if (!k) return -1;
        snprintf(k, n, "u\x01%s", uid);
        long r = get(ix, k);
        free(k);
        return r;
    }
    if (!kind || !ns || !name) return -1;
    char *k = name_key(kind, ns, name);
    long r = k ? get(ix, k) : -1;
    free(k);
    return r;
}

static const char *ns_of(const cJSON *o)
{
    const char *ns = s_of(meta(o), "namespace");
    return ns ? ns : "default";
}

/* name without its last "-suffix"; suffix must equal want when want is given, else be
 * digits (a CronJob's Job: <cronjob>-<minutes since the epoch>). */
static bool strip_suffix(char *out, size_t cap, const char *name, const char *want)
{
    const char *dash = name ? strrchr(name, '-') : NULL;
    if (!dash || dash == name || (size_t)(dash - name) >= cap) return false;
    if (want && strcmp(dash + 1, want) != 0) return false;
    if (!want) {
        if (!dash[1]) return false;
        for (const char *p = dash + 1; *p; p++)
            if (!isdigit((unsigned char)*p)) return false;
    }
    memcpy(out, name, (size_t)(dash - name));
    out[dash - name] = '\0';
    return true;
}

/* The object of the input that owns object i directly, or -1. */
static long direct_owner(const cJSON *const *objs, const obj_index *ix, size_t i)
{
    const cJSON *ref = controller_ref(objs[i]);
    if (!ref) return -1;
    const char *kind = s_of(ref, "kind"), *name = s_of(ref, "name"), *uid = s_of(ref, "uid");
    const char *ns = ns_of(objs[i]);
    long k = uid ? find(ix, NULL, NULL, NULL, uid) : -1;
    if (k < 0) k = find(ix, kind, ns, name, NULL);
    if (k >= 0 && (size_t)k != i) return k;
    /* the intermediate object is not in the input: its name says who made it */
    char base[300];
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta(objs[i]), "labels");
    if (eq(kind, "ReplicaSet") &&
        strip_suffix(base, sizeof base, name, s_of(labels, "pod-template-hash")))
        return find(ix, "Deployment", ns, base, NULL);
    if (eq(kind, "Job") && strip_suffix(base, sizeof base, name, NULL))
        return find(ix, "CronJob", ns, base, NULL);
    return -1;
}

void gpa_cli_diff_owners(long *owner, const cJSON *const *objs, size_t n)
{
    obj_index ix = {0};
    ix.cap = 16;
    while (ix.cap < 4 * n + 16)
        ix.cap *= 2;
    ix.keys = calloc(ix.cap, sizeof *ix.keys);
    ix.val = calloc(ix.cap, sizeof *ix.val);
    for (size_t i = 0; i < n; i++)
        owner[i] = -1;
    if (!ix.keys || !ix.val) goto out; /* out of memory: nothing grouped, every pod apart */
    for (size_t i = 0; i < n; i++) {
        const char *uid = s_of(meta(objs[i]), "uid"), *kind = s_of(objs[i], "kind");
        const char *name = s_of(meta(objs[i]), "name");
        if (uid) {
            size_t len = strlen(uid) + 3;
            char *k = malloc(len);
            if (k) {
                snprintf(k, len, "u\x01%s", uid);
                put(&ix, k, (long)i);
            }
        }
        if (kind && name) {
            char *k = name_key(kind, ns_of(objs[i]), name);
            if (k) put(&ix, k, (long)i);
        }
    }
    for (size_t i = 0; i < n; i++) {
        long cur = (long)i;
        /* a chain is at most Pod -> ReplicaSet/Job -> Deployment/CronJob; the bound also stops
         * a cycle of references in a hand-written input */
        for (int depth = 0; depth < 4; depth++) {
            long up = direct_owner(objs, &ix, (size_t)cur);
            if (up < 0 || eq(s_of(objs[up], "kind"), "Pod")) break;
            cur = up;
        }
        if (cur != (long)i) owner[i] = cur;
    }
out:
    for (size_t i = 0; ix.keys && i < ix.cap; i++)
        free(ix.keys[i]);
    free(ix.keys);
    free(ix.val);
}
