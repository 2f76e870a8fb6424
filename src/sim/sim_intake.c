/*
 * sim_intake.c - queueing admitted pods: each distinct pod spec (name aside) becomes one
 * template holding what packing reads (cpu, memory, the GPU resource and count, the
 * gpu-memory annotation, the tenant, the required pod (anti-)affinity terms); identical pods
 * share it through a hash table, so a Deployment of 1,000 replicas is read once.
 *
 * Reads the pod and copies it; never looks at the nodes (that is sim_feasible.c's job).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/labels.h"
#include "gpu_admission/pod_need.h"
#include "gpu_admission/quantity.h"
#include "sim_internal.h"

static int64_t qty_milli(const cJSON *v)
{
    if (cJSON_IsNumber(v)) return (int64_t)(v->valuedouble * 1000.0);
    if (!cJSON_IsString(v)) return 0;
    gpa_quantity q;
    if (gpa_quantity_parse(&q, v->valuestring, strlen(v->valuestring), NULL) != GPA_OK) return 0;
    return q.milli < 0 ? 0 : q.milli;
}

/* Per resource name, the pod's need as containers are fed through it (names point into the
 * pod, which outlives the accumulator). */
typedef struct need_entry {
    const char *name;
    gpa_pod_need need;
} need_entry;

typedef struct need_acc {
    size_t n, cap;
    need_entry *e;
} need_acc;

static gpa_pod_need *need_of(need_acc *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->e[i].name, name) == 0) return &a->e[i].need;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        void *ne = realloc(a->e, cap * sizeof *a->e);
        if (!ne) return NULL;
        a->e = ne;
        a->cap = cap;
    }
    a->e[a->n].name = name;
    memset(&a->e[a->n].need, 0, sizeof a->e[a->n].need);
    return &a->e[a->n++].need;
}

/* Feeds a container's requests (limits when a resource has no request), in milli-units,
 * into acc: a container of spec.containers, or an init container (sidecar or not). */
static int add_container(need_acc *acc, const cJSON *c, bool init, bool sidecar)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(res, "requests");
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(res, "limits");
    const cJSON *lists[2] = {req, lim};
    for (int l = 0; l < 2; l++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, lists[l]) {
            if (!e->string) continue;
            if (l == 1 && cJSON_GetObjectItemCaseSensitive(req, e->string)) continue;
            bool dup = false; /* a repeated name counts once, as with a lookup */
            for (const cJSON *x = lists[l]->child; x != e && !dup; x = x->next)
                dup = x->string && strcmp(x->string, e->string) == 0;
            if (dup) continue;
            gpa_pod_need *n = need_of(acc, e->string);
            if (!n) return GPA_ENOMEM;
            if (init)
                gpa_pod_need_init(n, qty_milli(e), sidecar);
            else
                gpa_pod_need_container(n, qty_milli(e));
        }
    }
    return GPA_OK;
}

/* The pod's need per resource, a JSON object name -> milli-units; NULL on OOM. */
static cJSON *need_totals(const need_acc *acc)
{
    cJSON *o = cJSON_CreateObject();
    for (size_t i = 0; o && i < acc->n; i++)
        if (!cJSON_AddNumberToObject(o, acc->e[i].name,
                                     (double)gpa_pod_need_total(&acc->e[i].need))) {
            cJSON_Delete(o);
            o = NULL;
        }
    return o;
}

static int read_terms(gpa_sim_term **out, size_t *n, const cJSON *terms)
{
    *out = NULL;
    *n = 0;
    int cnt = cJSON_GetArraySize(terms);
    if (!cJSON_IsArray(terms) || cnt <= 0) return GPA_OK;
    *out = calloc((size_t)cnt, sizeof **out);
    if (!*out) return GPA_ENOMEM;
    const cJSON *t;
    cJSON_ArrayForEach(t, terms) {
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(t, "topologyKey");
        if (!cJSON_IsString(tk)) continue;
        (*out)[*n] = (gpa_sim_term){cJSON_GetObjectItemCaseSensitive(t, "labelSelector"),
                                    cJSON_GetObjectItemCaseSensitive(t, "namespaces"),
                                    cJSON_GetObjectItemCaseSensitive(t, "namespaceSelector"),
                                    tk->valuestring, -1};
        (*n)++;
    }
    return GPA_OK;
}

static long long gpu_size_key(const gpa_sim_tmpl *t)
{
    if (!t->gres) return 0;
    if (strncmp(t->gres, "nvidia.com/mig-", 15) == 0) {
        for (size_t m = 0; gpa_mig_model_name_at(m); m++) {
            const gpa_mig_model *md = gpa_mig_model_find(gpa_mig_model_name_at(m));
            for (size_t i = 0; i < md->n_profiles; i++)
                if (strcmp(md->profiles[i].resource, t->gres) == 0)
                    return t->gcount * 1000000LL * md->profiles[i].mem_slots / md->mem_slots;
        }
        return 1;
    }
    if (strcmp(t->gres, "nvidia.com/gpu") == 0) return t->gcount * 1000000LL;
    return t->gcount; /* a time-slice replica: the smallest share */
}

static bool is_gpu_resource(const char *k)
{
    return strncmp(k, "nvidia.com/", 11) == 0;
}

static uint64_t fnv(const char *k)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ULL;
    return h;
}

/* The template an identical pod (name aside) already made, else SIZE_MAX. */
static size_t tmpl_find(const gpa_sim *s, const char *key, uint64_t h)
{
    if (!s->tbl_cap) return SIZE_MAX;
    for (size_t i = (size_t)h & (s->tbl_cap - 1);; i = (i + 1) & (s->tbl_cap - 1)) {
        size_t v = s->tbl[i];
        if (!v) return SIZE_MAX;
        if (s->tmpls[v - 1].hash == h && strcmp(s->tmpls[v - 1].key, key) == 0) return v - 1;
    }
}

static int tbl_put(gpa_sim *s, size_t ti)
{
    if ((s->n_tmpls + 1) * 2 > s->tbl_cap) {
        size_t nc = s->tbl_cap ? s->tbl_cap * 2 : 64;
        size_t *nt = calloc(nc, sizeof *nt);
        if (!nt) return GPA_ENOMEM;
        for (size_t i = 0; i < s->tbl_cap; i++)
            if (s->tbl[i]) {
                size_t k = (size_t)s->tmpls[s->tbl[i] - 1].hash & (nc - 1);
                while (nt[k])
                    k = (k + 1) & (nc - 1);
                nt[k] = s->tbl[i];
            }
        free(s->tbl);
        s->tbl = nt;
        s->tbl_cap = nc;
    }
    size_t k = (size_t)s->tmpls[ti].hash & (s->tbl_cap - 1);
    while (s->tbl[k])
        k = (k + 1) & (s->tbl_cap - 1);
    s->tbl[k] = ti + 1;
    return GPA_OK;
}

static int queue_pods(gpa_sim *s, size_t ti, const char *name, long long copies, bool own_name,
                      gpa_error *err)
{
    gpa_sim_pod *np = gpa_sim_grow(s->pods, &s->cap_pods, s->n_pods + (size_t)copies, sizeof *np);
    if (!np) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->pods = np;
    for (long long k = 0; k < copies; k++) {
        gpa_sim_pod *p = &s->pods[s->n_pods];
        *p = (gpa_sim_pod){ti, NULL, copies == 1 ? -1 : k, -1, NULL, NULL, -1, 0, 0};
        if (own_name) {
            char buf[700];
            if (copies == 1)
                snprintf(buf, sizeof buf, "%s", name);
            else
                snprintf(buf, sizeof buf, "%.600s-%lld", name, k);
            if (!(p->name = strdup(buf))) return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        s->n_pods++;
    }
    return GPA_OK;
}

int gpa_sim_add_pod(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                    gpa_error *err)
{
    return gpa_sim_add_pod_pool(s, pod, name, copies, NULL, err);
}

int gpa_sim_add_pod_pool(gpa_sim *s, const cJSON *pod, const char *name, long long copies,
                         const char *pool, gpa_error *err)
{
    if (copies < 0) return gpa_fail(err, GPA_EINVAL, "%s: negative replicas", name);
    if (copies == 0) return GPA_OK;
    if ((long long)s->n_pods + copies > GPA_SIM_MAX_PODS)
        return gpa_fail(err, GPA_ERANGE,
                        "%s: %lld pods would exceed the simulator's limit of %d pods", name, copies,
                        GPA_SIM_MAX_PODS);
    cJSON *anon = cJSON_Duplicate(pod, true);
    cJSON *ameta = cJSON_GetObjectItemCaseSensitive(anon, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(ameta, "name");
    cJSON_DeleteItemFromObjectCaseSensitive(ameta, "generateName");
    cJSON_DeleteItemFromObjectCaseSensitive(ameta, "uid");
    char *key = anon ? cJSON_PrintUnformatted(anon) : NULL;
    cJSON_Delete(anon);
    if (!key) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    uint64_t h = fnv(key);
    size_t found = tmpl_find(s, key, h);
    if (found != SIZE_MAX) {
        free(key);
        return queue_pods(s, found, name, copies, true, err);
    }
    gpa_sim_tmpl *nt = gpa_sim_grow(s->tmpls, &s->cap_tmpls, s->n_tmpls + 1, sizeof *nt);
    if (!nt) {
        free(key);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    s->tmpls = nt;
    gpa_sim_tmpl *t = memset(&nt[s->n_tmpls], 0, sizeof *t);
    t->obj = cJSON_Duplicate(pod, true);
    t->name = strdup(name);
    t->key = key;
    t->hash = h;
    if (!t->obj || !t->name) {
        cJSON_Delete(t->obj);
        free(t->name);
        free(t->key);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    s->n_tmpls++;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(t->obj, "metadata");
    const cJSON *ns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
    t->ns = cJSON_IsString(ns) ? ns->valuestring : "default";
    t->labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
    const cJSON *ten = cJSON_GetObjectItemCaseSensitive(t->labels, GPA_LABEL_TENANT);
    if (cJSON_IsString(ten)) t->tenant = strdup(ten->valuestring);
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(meta, "annotations"), GPA_ANN_GPU_MEMORY);
    t->gpu_mem_req = -1;
    if (cJSON_IsString(ann)) {
        gpa_quantity q;
        if (gpa_quantity_parse(&q, ann->valuestring, strlen(ann->valuestring), NULL) == GPA_OK &&
            q.milli >= 0)
            t->gpu_mem_req = gpa_quantity_value(&q);
    }
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(t->obj, "spec");
    need_acc acc = {0};
    const cJSON *c;
    int rc = GPA_OK;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "containers"))
        if (rc == GPA_OK) rc = add_container(&acc, c, false, false);
    /* The scheduler's rule, sidecars included (gpu_admission/pod_need.h). */
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "initContainers"))
        if (rc == GPA_OK) rc = add_container(&acc, c, true, gpa_init_container_is_sidecar(c));
    cJSON *sum = rc == GPA_OK ? need_totals(&acc) : NULL;
    free(acc.e);
    if (!sum) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, sum) {
        int64_t milli = (int64_t)e->valuedouble;
        if (strcmp(e->string, "cpu") == 0) {
            t->cpu = milli;
        } else if (strcmp(e->string, "memory") == 0) {
            t->mem = milli / 1000;
        } else if (strcmp(e->string, "ephemeral-storage") == 0 ||
                   strncmp(e->string, "hugepages-", 10) == 0) {
            continue;
        } else if (milli <= 0) {
            continue;
        } else if (is_gpu_resource(e->string) && !t->gres) {
            t->gres = strdup(e->string);
            t->gcount = (milli + 999) / 1000;
        } else {
            char **nx = realloc(t->xres, (t->n_xres + 1) * sizeof *nx);
            if (!nx) {
                rc = GPA_ENOMEM;
                break;
            }
            t->xres = nx;
            t->xres[t->n_xres++] = strdup(e->string);
        }
    }
    cJSON_Delete(sum);
    const cJSON *aff = cJSON_GetObjectItemCaseSensitive(spec, "affinity");
    if (rc == GPA_OK)
        rc = read_terms(
            &t->aff, &t->n_aff,
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(aff, "podAffinity"),
                                             "requiredDuringSchedulingIgnoredDuringExecution"));
    if (rc == GPA_OK)
        rc = read_terms(&t->anti, &t->n_anti,
                        cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(aff, "podAntiAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution"));
    if (rc != GPA_OK) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    t->size_key = gpu_size_key(t);
    if (pool && !(t->pool = strdup(pool))) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (tbl_put(s, s->n_tmpls - 1) != GPA_OK) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    return queue_pods(s, s->n_tmpls - 1, name, copies, false, err);
}

int gpa_sim_add_denied(gpa_sim *s, const char *pod, const char *message, gpa_error *err)
{
    return gpa_sim_add_denied_pool(s, pod, message, NULL, 1, err);
}

int gpa_sim_add_denied_pool(gpa_sim *s, const char *pod, const char *message, const char *pool,
                            long long pods, gpa_error *err)
{
    gpa_sim_denied *nd = gpa_sim_grow(s->denied, &s->cap_denied, s->n_denied + 1, sizeof *nd);
    if (!nd) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    s->denied = nd;
    nd[s->n_denied].pod = strdup(pod);
    nd[s->n_denied].message = strdup(message ? message : "denied");
    nd[s->n_denied].pool = pool ? strdup(pool) : NULL;
    nd[s->n_denied].pods = pods > 0 ? pods : 1;
    s->n_denied++;
    return GPA_OK;
}
