/*
 * workload.c - finding the pod templates of workload objects (workload.h).
 *
 * A kind is matched on (API group, kind) whatever the version, because CronJob was
 * batch/v1beta1 on older clusters and the ML operators moved from v1alpha/v1beta to v1 while
 * keeping the template fields where they were. The built-in paths were checked against each
 * kind's upstream Go types (docs/policy.md names the source of each).
 *
 * The walker never copies: the review codec judges templates in place. Only the public API
 * (CLI, tools) builds owned Pod objects.
 *
 * Policy layer, not k8s: the kinds it knows are the built-in ones plus the policy's
 * spec.workloads.kinds, so it reads the policy model; it must never call the engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/workload.h"
#include "policy/workload_internal.h"

enum {
    WL_LWS = 1u << 0, /* LeaderWorkerSet: worker pods per group = size (minus the leader) */
};

typedef struct builtin_kind {
    const char *group;
    const char *kind;
    const char *const *paths;
    unsigned flags;
} builtin_kind;

static const char *const P_TEMPLATE[] = {"spec.template", NULL};
static const char *const P_CRONJOB[] = {"spec.jobTemplate.spec.template", NULL};
static const char *const P_PODTEMPLATE[] = {"template", NULL};
static const char *const P_PYTORCH[] = {"spec.pytorchReplicaSpecs.*.template", NULL};
static const char *const P_TF[] = {"spec.tfReplicaSpecs.*.template", NULL};
static const char *const P_MPI[] = {"spec.mpiReplicaSpecs.*.template", NULL};
static const char *const P_JOBSET[] = {"spec.replicatedJobs.*.template.spec.template", NULL};
static const char *const P_RAYCLUSTER[] = {"spec.headGroupSpec.template",
                                           "spec.workerGroupSpecs.*.template", NULL};
static const char *const P_RAYJOB[] = {"spec.rayClusterSpec.headGroupSpec.template",
                                       "spec.rayClusterSpec.workerGroupSpecs.*.template", NULL};
static const char *const P_LWS[] = {"spec.leaderWorkerTemplate.leaderTemplate",
                                    "spec.leaderWorkerTemplate.workerTemplate", NULL};

static const builtin_kind BUILTIN[] = {
    {"apps", "Deployment", P_TEMPLATE, 0},
    {"apps", "StatefulSet", P_TEMPLATE, 0},
    {"apps", "DaemonSet", P_TEMPLATE, 0},
    {"apps", "ReplicaSet", P_TEMPLATE, 0},
    {"batch", "Job", P_TEMPLATE, 0},
    {"batch", "CronJob", P_CRONJOB, 0},
    {"", "ReplicationController", P_TEMPLATE, 0},
    {"", "PodTemplate", P_PODTEMPLATE, 0},
    {"kubeflow.org", "PyTorchJob", P_PYTORCH, 0},
    {"kubeflow.org", "TFJob", P_TF, 0},
    {"kubeflow.org", "MPIJob", P_MPI, 0},
    {"jobset.x-k8s.io", "JobSet", P_JOBSET, 0},
    {"ray.io", "RayCluster", P_RAYCLUSTER, 0},
    {"ray.io", "RayJob", P_RAYJOB, 0},
    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", P_LWS, WL_LWS},
};
#define N_BUILTIN (sizeof BUILTIN / sizeof BUILTIN[0])

bool gpa_wl_builtin(size_t i, const char **group, const char **kind, const char *const **paths)
{
    if (i >= N_BUILTIN) return false;
    *group = BUILTIN[i].group;
    *kind = BUILTIN[i].kind;
    *paths = BUILTIN[i].paths;
    return true;
}

static bool group_is(const char *g, const char *group, size_t glen)
{
    return strlen(g) == glen && memcmp(g, group, glen) == 0;
}

bool gpa_wl_find(gpa_wl_kind *out, const gpa_policy *p, const char *group, size_t glen,
                 const char *kind)
{
    memset(out, 0, sizeof *out);
    if (!kind || !*kind) return false;
    if (!group) glen = 0;
    for (size_t i = 0; i < N_BUILTIN; i++) {
        if (strcmp(BUILTIN[i].kind, kind) == 0 && group_is(BUILTIN[i].group, group, glen)) {
            out->api_group = BUILTIN[i].group;
            out->kind = BUILTIN[i].kind;
            out->builtin = BUILTIN[i].paths;
            out->flags = BUILTIN[i].flags;
            break;
        }
    }
    if (p) {
        for (size_t i = 0; i < p->n_wl_kinds; i++) {
            const gpa_workload_kind *k = &p->wl_kinds[i];
            if (strcmp(k->kind, kind) == 0 && group_is(k->api_group, group, glen)) {
                out->api_group = k->api_group;
                out->kind = k->kind;
                out->extra = k;
                break;
            }
        }
    }
    return out->kind != NULL;
}

/* The group of an apiVersion: "apps/v1" -> "apps", "v1" -> "" (core). */
static void split_api_version(const char *av, const char **group, size_t *glen)
{
    const char *slash = av ? strchr(av, '/') : NULL;
    *group = av;
    *glen = slash ? (size_t)(slash - av) : 0;
}

int gpa_workload_kind_known(const gpa_policy *p, const char *api_version, const char *kind)
{
    if (!api_version || !kind) return 0;
    const char *g;
    size_t glen;
    split_api_version(api_version, &g, &glen);
    gpa_wl_kind k;
    return gpa_wl_find(&k, p, g, glen, kind) ? 1 : 0;
}

const char *gpa_wl_path_error(const char *path)
{
    if (!path || !*path) return "a template path must not be empty";
    size_t segs = 1;
    const char *seg = path;
    for (const char *c = path;; c++) {
        if (*c == '.' || *c == '\0') {
            size_t n = (size_t)(c - seg);
            if (n == 0) return "a template path has an empty step (two dots, or a dot at an end)";
            if (memchr(seg, '*', n) && n != 1)
                return "`*` must be a whole step (\"spec.workers.*.template\")";
            if (memchr(seg, '[', n) || memchr(seg, ']', n))
                return "a template path is dot-separated keys and `*`, not [index] "
                       "(\"spec.groups.*.template\")";
            if (*c == '\0') break;
            if (++segs > GPA_WL_MAX_SEGMENTS) return "a template path has more than 16 steps";
            seg = c + 1;
        }
    }
    if (path[0] == '*' && path[1] == '\0') return "a template path cannot be `*` alone";
    return NULL;
}

/* ---- the walk ---- */

typedef struct walk {
    const gpa_wl_kind *k;
    gpa_wl_visit fn;
    void *ctx;
    gpa_error *err;
    size_t found;
    char path[GPA_WL_PATH_CAP];
    size_t plen;
} walk;

static const char *json_type_name(const cJSON *v)
{
    switch (v->type & 0xFF) {
    case cJSON_False:
    case cJSON_True:
        return "boolean";
    case cJSON_NULL:
        return "null";
    case cJSON_Number:
        return "number";
    case cJSON_String:
        return "string";
    case cJSON_Array:
        return "list";
    case cJSON_Object:
        return "object";
    default:
        return "invalid value";
    }
}

/* Appends one concrete step to w->path; a path past the cap ends in "..." (messages only). */
static size_t path_push(walk *w, const char *key, size_t klen, long index)
{
    size_t at = w->plen;
    char buf[32];
    if (!key) {
        klen = (size_t)snprintf(buf, sizeof buf, "[%ld]", index);
        key = buf;
    }
    bool dot = key != buf && at > 0;
    size_t need = klen + (dot ? 1 : 0);
    if (at + need + 4 >= sizeof w->path) {
        if (at + 4 < sizeof w->path) memcpy(w->path + at, "...", 4);
        w->plen = at + (at + 4 < sizeof w->path ? 3 : 0);
        return at;
    }
    if (dot) w->path[w->plen++] = '.';
    memcpy(w->path + w->plen, key, klen);
    w->plen += klen;
    w->path[w->plen] = '\0';
    return at;
}

static void path_pop(walk *w, size_t at)
{
    w->plen = at;
    w->path[at] = '\0';
}

static long long clamp_mul(long long a, long long b)
{
    if (a <= 0 || b <= 0) return 0;
    if (a > GPA_WORKLOAD_MAX_REPLICAS / b) return GPA_WORKLOAD_MAX_REPLICAS;
    return a * b;
}

/* An integer member of o usable as a count: *out set and true; false when absent or not a
 * number (the default applies). Negative counts read as 0. */
static bool count_member(const cJSON *o, const char *key, long long *out)
{
    const cJSON *v = NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && strcmp(c->string, key) == 0) {
            v = c;
            break;
        }
    if (!v || (v->type & 0xFF) != cJSON_Number) return false;
    double d = v->valuedouble;
    if (!(d > 0)) {
        *out = 0;
    } else if (d >= (double)GPA_WORKLOAD_MAX_REPLICAS) {
        *out = GPA_WORKLOAD_MAX_REPLICAS;
    } else {
        *out = (long long)d;
    }
    return true;
}

/* The pods one object on the way to a template multiplies by: its replicas (Deployment,
 * StatefulSet, ReplicaSet, RC, replica specs, Ray worker groups, JobSet replicatedJobs, LWS
 * groups), its parallelism (Job specs, a CronJob's or JobSet's job template) and its
 * numOfHosts (Ray multi-host worker groups: that many pods per replica). */
static long long node_factor(const cJSON *o)
{
    long long f = 1, v;
    if (count_member(o, "replicas", &v)) f = clamp_mul(f, v);
    if (count_member(o, "parallelism", &v)) f = clamp_mul(f, v);
    if (count_member(o, "numOfHosts", &v)) f = clamp_mul(f, v);
    return f;
}

static int fail_type(walk *w, const char *want, const cJSON *got)
{
    return gpa_fail(w->err, GPA_EINVAL, "%s: expected %s, got %s", w->path[0] ? w->path : "object",
                    want, json_type_name(got));
}

static int visit_template(walk *w, const cJSON *t, long long replicas)
{
    if ((t->type & 0xFF) != cJSON_Object) return fail_type(w, "an object (a pod template)", t);
    for (const cJSON *c = t->child; c; c = c->next) {
        if (!c->string) continue;
        bool md = strcmp(c->string, "metadata") == 0, sp = !md && strcmp(c->string, "spec") == 0;
        if ((md || sp) && (c->type & 0xFF) != cJSON_Object && (c->type & 0xFF) != cJSON_NULL) {
            size_t at = path_push(w, c->string, strlen(c->string), 0);
            int rc = fail_type(w, "an object", c);
            path_pop(w, at);
            return rc;
        }
    }
    if (++w->found > GPA_WORKLOAD_MAX_TEMPLATES)
        return gpa_fail(w->err, GPA_EINVAL,
                        "%s: more than %d pod templates in one object; gpu-admission judges at "
                        "most %d",
                        w->path, GPA_WORKLOAD_MAX_TEMPLATES, GPA_WORKLOAD_MAX_TEMPLATES);
    return w->fn(w->ctx, w->path, t, replicas);
}

/* Walks the rest of the path (seg: the next step, NUL- or dot-terminated) from node v. */
static int walk_from(walk *w, const cJSON *v, const char *seg, long long replicas)
{
    if (!v || (v->type & 0xFF) == cJSON_NULL) return GPA_OK; /* missing: no template there */
    if (!*seg) return visit_template(w, v, replicas);
    const char *end = strchr(seg, '.');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    const char *next = end ? end + 1 : seg + n;
    int type = v->type & 0xFF;
    if (type == cJSON_Object) replicas = clamp_mul(replicas, node_factor(v));
    if (n == 1 && seg[0] == '*') {
        if (type == cJSON_Array) {
            long i = 0;
            for (const cJSON *c = v->child; c; c = c->next, i++) {
                size_t at = path_push(w, NULL, 0, i);
                int rc = walk_from(w, c, next, replicas);
                path_pop(w, at);
                if (rc != GPA_OK) return rc;
            }
            return GPA_OK;
        }
        if (type == cJSON_Object) {
            for (const cJSON *c = v->child; c; c = c->next) {
                if (!c->string) continue;
                size_t at = path_push(w, c->string, strlen(c->string), 0);
                int rc = walk_from(w, c, next, replicas);
                path_pop(w, at);
                if (rc != GPA_OK) return rc;
            }
            return GPA_OK;
        }
        return fail_type(w, "a list or an object", v);
    }
    if (type != cJSON_Object) return fail_type(w, "an object", v);
    const cJSON *child = NULL;
    for (const cJSON *c = v->child; c; c = c->next)
        if (c->string && strncmp(c->string, seg, n) == 0 && c->string[n] == '\0') {
            child = c; /* the first, as cJSON_GetObjectItemCaseSensitive */
            break;
        }
    if (!child) return GPA_OK;
    if ((w->k->flags & WL_LWS) && n == 14 && memcmp(seg, "workerTemplate", 14) == 0 && !*next) {
        /* One group is a leader and size-1 workers; without a leaderTemplate the leader is
         * made from the worker template too. */
        long long size = 1;
        count_member(v, "size", &size);
        bool leader = false;
        for (const cJSON *c = v->child; c; c = c->next)
            if (c->string && strcmp(c->string, "leaderTemplate") == 0)
                leader = (c->type & 0xFF) == cJSON_Object;
        if (leader && size > 0) size--;
        replicas = clamp_mul(replicas, size);
    }
    size_t at = path_push(w, seg, n, 0);
    int rc = walk_from(w, child, next, replicas);
    path_pop(w, at);
    return rc;
}

static int walk_path(walk *w, const cJSON *obj, const char *path)
{
    w->plen = 0;
    w->path[0] = '\0';
    return walk_from(w, obj, path, 1);
}

int gpa_wl_walk(const gpa_wl_kind *k, const cJSON *obj, gpa_wl_visit fn, void *ctx, gpa_error *err)
{
    if (!obj || (obj->type & 0xFF) != cJSON_Object)
        return gpa_fail(err, GPA_EINVAL, "a workload object must be a JSON object");
    walk w = {.k = k, .fn = fn, .ctx = ctx, .err = err};
    if (k->builtin)
        for (const char *const *pp = k->builtin; *pp; pp++) {
            int rc = walk_path(&w, obj, *pp);
            if (rc != GPA_OK) return rc;
        }
    if (k->extra)
        for (size_t i = 0; i < k->extra->templates.n; i++) {
            const char *path = k->extra->templates.items[i];
            bool dup = false;
            for (const char *const *pp = k->builtin; pp && *pp && !dup; pp++)
                dup = strcmp(*pp, path) == 0;
            if (dup) continue;
            int rc = walk_path(&w, obj, path);
            if (rc != GPA_OK) return rc;
        }
    return GPA_OK;
}

/* ---- the public list ---- */

struct gpa_workload_templates {
    size_t n, cap;
    gpa_workload_template *items;
};

typedef struct build_ctx {
    gpa_workload_templates *list;
    const char *namespace_;
    const char *owner_name;
    const gpa_wl_kind *k;
    const cJSON *obj;
} build_ctx;

static cJSON *dup_or_empty(const cJSON *v)
{
    if (v && (v->type & 0xFF) == cJSON_Object) return cJSON_Duplicate(v, 1);
    return cJSON_CreateObject();
}

static bool has_string(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && v->valuestring && *v->valuestring;
}

/* The pod a controller makes from tmpl: the template's metadata and spec in the object's
 * namespace; named like the controller's pods ("<owner>-...") when the template names none. */
static cJSON *pod_of(const cJSON *tmpl, const char *ns, const char *owner)
{
    cJSON *pod = cJSON_CreateObject();
    if (!pod) return NULL;
    cJSON *md = dup_or_empty(cJSON_GetObjectItemCaseSensitive(tmpl, "metadata"));
    cJSON *spec = dup_or_empty(cJSON_GetObjectItemCaseSensitive(tmpl, "spec"));
    bool ok = md && spec && cJSON_AddStringToObject(pod, "apiVersion", "v1") &&
              cJSON_AddStringToObject(pod, "kind", "Pod");
    if (ok && ns) {
        cJSON *s = cJSON_CreateString(ns);
        ok = s && (cJSON_GetObjectItemCaseSensitive(md, "namespace")
                       ? cJSON_ReplaceItemInObjectCaseSensitive(md, "namespace", s)
                       : cJSON_AddItemToObject(md, "namespace", s));
        if (!ok) cJSON_Delete(s);
    }
    if (ok && owner && *owner && !has_string(md, "name") && !has_string(md, "generateName")) {
        size_t n = strlen(owner);
        char *g = malloc(n + 2);
        ok = g != NULL;
        if (ok) {
            memcpy(g, owner, n);
            memcpy(g + n, "-", 2);
            cJSON_DeleteItemFromObjectCaseSensitive(md, "generateName");
            ok = cJSON_AddStringToObject(md, "generateName", g) != NULL;
            free(g);
        }
    }
    if (ok) {
        ok = cJSON_AddItemToObject(pod, "metadata", md);
        if (ok) md = NULL;
    }
    if (ok) {
        ok = cJSON_AddItemToObject(pod, "spec", spec);
        if (ok) spec = NULL;
    }
    if (!ok) {
        cJSON_Delete(md);
        cJSON_Delete(spec);
        cJSON_Delete(pod);
        return NULL;
    }
    return pod;
}

static int collect(void *vctx, const char *path, const cJSON *tmpl, long long replicas)
{
    build_ctx *ctx = vctx;
    gpa_workload_templates *l = ctx->list;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4;
        gpa_workload_template *ni = realloc(l->items, nc * sizeof *ni);
        if (!ni) return GPA_ENOMEM;
        l->items = ni;
        l->cap = nc;
    }
    gpa_workload_template *t = &l->items[l->n];
    t->path = strdup(path);
    t->pod = pod_of(tmpl, ctx->namespace_, ctx->owner_name);
    t->replicas = replicas < 0 ? 0 : replicas;
    /* the pod as its operator creates it: the labels and env that give its gang */
    if (t->pod && gpa_wl_operator_pod(ctx->k, ctx->obj, path, t->pod) != GPA_OK) {
        cJSON_Delete(t->pod);
        t->pod = NULL;
    }
    if (!t->path || !t->pod) {
        free(t->path);
        cJSON_Delete(t->pod);
        return GPA_ENOMEM;
    }
    l->n++;
    return GPA_OK;
}

int gpa_workload_templates_read(gpa_workload_templates **out, const gpa_policy *p, const cJSON *obj,
                                const char *namespace_, gpa_error *err)
{
    *out = NULL;
    gpa_workload_templates *l = calloc(1, sizeof *l);
    if (!l) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (!cJSON_IsObject(obj)) {
        *out = l;
        return GPA_OK;
    }
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    if (!cJSON_IsString(av) || !cJSON_IsString(kind)) {
        *out = l;
        return GPA_OK;
    }
    const char *g;
    size_t glen;
    split_api_version(av->valuestring, &g, &glen);
    gpa_wl_kind k;
    if (!gpa_wl_find(&k, p, g, glen, kind->valuestring)) {
        *out = l;
        return GPA_OK;
    }
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *ns = namespace_;
    if (!ns && has_string(md, "namespace"))
        ns = cJSON_GetObjectItemCaseSensitive(md, "namespace")->valuestring;
    const char *owner = NULL;
    if (has_string(md, "name")) owner = cJSON_GetObjectItemCaseSensitive(md, "name")->valuestring;
    build_ctx ctx = {.list = l, .namespace_ = ns, .owner_name = owner, .k = &k, .obj = obj};
    int rc = gpa_wl_walk(&k, obj, collect, &ctx, err);
    if (rc == GPA_ENOMEM) gpa_fail(err, GPA_ENOMEM, "out of memory building pod templates");
    if (rc != GPA_OK) {
        gpa_workload_templates_free(l);
        return rc;
    }
    *out = l;
    return GPA_OK;
}

size_t gpa_workload_templates_count(const gpa_workload_templates *t)
{
    return t ? t->n : 0;
}

const gpa_workload_template *gpa_workload_templates_get(const gpa_workload_templates *t, size_t i)
{
    return t && i < t->n ? &t->items[i] : NULL;
}

void gpa_workload_templates_free(gpa_workload_templates *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->items[i].path);
        cJSON_Delete(t->items[i].pod);
    }
    free(t->items);
    free(t);
}
