/*
 * diff_group.c - which workload in `diff`'s input owns a pod, so the pods a Deployment, Job or
 * StatefulSet made are reported under it (one entry, N pods) instead of once each beside it.
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
    cJSON_ArrayForEach(r, refs)
    {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller"))) return r;
    }
    return cJSON_GetArraySize(refs) == 1 ? cJSON_GetArrayItem(refs, 0) : NULL;
}

static long find(const cJSON *const *objs, size_t n, const char *kind, const char *ns,
                 const char *name, const char *uid)
{
    for (size_t i = 0; i < n; i++) {
        const cJSON *m = meta(objs[i]);
        if (uid && eq(s_of(m, "uid"), uid)) return (long)i;
        if (!uid && eq(s_of(objs[i], "kind"), kind) && eq(s_of(m, "name"), name) &&
            eq(s_of(m, "namespace") ? s_of(m, "namespace") : "default", ns))
            return (long)i;
    }
    return -1;
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
static long direct_owner(const cJSON *const *objs, size_t n, size_t i)
{
    const cJSON *ref = controller_ref(objs[i]);
    if (!ref) return -1;
    const char *kind = s_of(ref, "kind"), *name = s_of(ref, "name"), *uid = s_of(ref, "uid");
    const char *ns = s_of(meta(objs[i]), "namespace");
    if (!ns) ns = "default";
    long k = uid ? find(objs, n, NULL, NULL, NULL, uid) : -1;
    if (k < 0) k = find(objs, n, kind, ns, name, NULL);
    if (k >= 0 && (size_t)k != i) return k;
    /* the intermediate object is not in the input: its name says who made it */
    char base[300];
    const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta(objs[i]), "labels");
    if (eq(kind, "ReplicaSet") &&
        strip_suffix(base, sizeof base, name, s_of(labels, "pod-template-hash")))
        return find(objs, n, "Deployment", ns, base, NULL);
    if (eq(kind, "Job") && strip_suffix(base, sizeof base, name, NULL))
        return find(objs, n, "CronJob", ns, base, NULL);
    return -1;
}

void gpa_cli_diff_owners(long *owner, const cJSON *const *objs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        owner[i] = -1;
        if (!eq(s_of(objs[i], "kind"), "Pod")) continue;
        long cur = (long)i;
        /* a chain is at most Pod -> ReplicaSet/Job -> Deployment/CronJob; the bound also stops
         * a cycle of references in a hand-written input */
        for (int depth = 0; depth < 4; depth++) {
            long up = direct_owner(objs, n, (size_t)cur);
            if (up < 0 || eq(s_of(objs[up], "kind"), "Pod")) break;
            cur = up;
        }
        if (cur != (long)i) owner[i] = cur;
    }
}
