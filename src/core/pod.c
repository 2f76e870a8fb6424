/*
 * pod.c - read-only view helpers over a Pod held as cJSON: labels, annotations, container
 * lists, GPU resources and their quantities (POLICY.md "The pod's side").
 *
 * Never allocates, never modifies the pod, never trusts a field's type: anything of the
 * wrong shape reads as absent. The GPU count here is the one the scheduler would see.
 */
#include <math.h>
#include <string.h>
#include <stdio.h>

#include "gpu_admission/quantity.h"
#include "node_arena.h"
#include "pod.h"

const char *gpa_json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = obj ? gpa_jn_get(obj, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *gpa_json_obj(const cJSON *obj, const char *key)
{
    const cJSON *v = obj ? gpa_jn_get(obj, key) : NULL;
    return cJSON_IsObject(v) ? v : NULL;
}

const cJSON *gpa_json_arr(const cJSON *obj, const char *key)
{
    const cJSON *v = obj ? gpa_jn_get(obj, key) : NULL;
    return cJSON_IsArray(v) ? v : NULL;
}

void gpa_pod_init(gpa_pod *v, const cJSON *pod)
{
    memset(v, 0, sizeof *v);
    if (!cJSON_IsObject(pod)) return;
    v->root = pod;
    v->metadata = gpa_json_obj(pod, "metadata");
    v->labels = gpa_json_obj(v->metadata, "labels");
    v->annotations = gpa_json_obj(v->metadata, "annotations");
    v->spec = gpa_json_obj(pod, "spec");
    /* one pass over spec instead of a lookup per container kind per check */
    const cJSON *c;
    cJSON_ArrayForEach(c, v->spec)
    {
        if (!c->string || !cJSON_IsArray(c)) continue;
        char f = c->string[0];
        if (f != 'c' && f != 'i' && f != 'e') continue; /* containers, init..., ephemeral... */
        for (int k = 0; k < GPA_PODC_KINDS; k++)
            if (strcmp(c->string, gpa_podc_field((gpa_podc_kind)k)) == 0) v->containers[k] = c;
    }
}

const char *gpa_pod_label(const gpa_pod *v, const char *key)
{
    return gpa_json_str(v->labels, key);
}

const char *gpa_pod_annotation(const gpa_pod *v, const char *key)
{
    return gpa_json_str(v->annotations, key);
}

const char *gpa_podc_field(gpa_podc_kind k)
{
    switch (k) {
    case GPA_PODC_MAIN:
        return "containers";
    case GPA_PODC_INIT:
        return "initContainers";
    default:
        return "ephemeralContainers";
    }
}

const cJSON *gpa_pod_containers(const gpa_pod *v, gpa_podc_kind k)
{
    return (unsigned)k < GPA_PODC_KINDS ? v->containers[k] : NULL;
}

const char *gpa_podc_name(const cJSON *c, int i, char *buf, size_t cap)
{
    const char *n = gpa_json_str(c, "name");
    if (n && *n) return n;
    snprintf(buf, cap, "#%d", i);
    return buf;
}

bool gpa_is_mig_resource(const char *name)
{
    return strncmp(name, "nvidia.com/mig-", 15) == 0 && name[15] != '\0';
}

bool gpa_is_gpu_resource(const gpa_policy *p, const char *name)
{
    if (strncmp(name, "nvidia.com/", 11) == 0) {
        if (strcmp(name + 11, "gpu") == 0 || gpa_is_mig_resource(name)) return true;
    }
    /* first byte first: "cpu", "memory" and friends never reach strcmp */
    for (size_t i = 0; i < p->gpu_resources.n; i++)
        if (p->gpu_resources.items[i][0] == name[0] && strcmp(p->gpu_resources.items[i], name) == 0)
            return true;
    return false;
}

bool gpa_gpu_qty(int64_t *out, const cJSON *v)
{
    *out = 0;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!isfinite(d) || d < 0 || d > 9007199254740992.0 || d != floor(d)) return false;
        *out = (int64_t)d;
        return true;
    }
    if (!cJSON_IsString(v)) return false;
    gpa_quantity q;
    int64_t n;
    if (gpa_quantity_parse(&q, v->valuestring, strlen(v->valuestring), NULL) != GPA_OK)
        return false;
    if (!gpa_quantity_integer(&q, &n) || n < 0) return false;
    *out = n;
    return true;
}

static gpa_gpu_res *res_slot(gpa_ctr_gpus *out, const char *name)
{
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->res[i].name, name) == 0) return &out->res[i];
    if (out->n == GPA_POD_MAX_GPU_RES) {
        out->overflow = true;
        return NULL;
    }
    gpa_gpu_res *r = &out->res[out->n++];
    memset(r, 0, sizeof *r);
    r->name = name;
    return r;
}

void gpa_ctr_gpus_scan(gpa_ctr_gpus *out, const gpa_policy *p, const cJSON *container)
{
    out->n = 0;
    out->overflow = false;
    out->total = 0;
    const cJSON *res = gpa_json_obj(container, "resources");
    if (!res) return;
    const cJSON *limits = gpa_json_obj(res, "limits");
    const cJSON *requests = gpa_json_obj(res, "requests");
    const cJSON *it;
    cJSON_ArrayForEach(it, limits)
    {
        if (!it->string || !gpa_is_gpu_resource(p, it->string)) continue;
        gpa_gpu_res *r = res_slot(out, it->string);
        if (!r) continue;
        r->limit = it;
        r->bad = !gpa_gpu_qty(&r->count, it);
    }
    cJSON_ArrayForEach(it, requests)
    {
        if (!it->string || !gpa_is_gpu_resource(p, it->string)) continue;
        gpa_gpu_res *r = res_slot(out, it->string);
        if (!r) continue;
        r->request = it;
        int64_t n;
        bool ok = gpa_gpu_qty(&n, it);
        if (!ok) r->bad = true;
        if (!r->limit) {
            r->mismatch = true;
            r->count = ok ? n : 0;
        } else if (ok && !r->bad && n != r->count) {
            r->mismatch = true;
        }
    }
    for (size_t i = 0; i < out->n; i++)
        if (!out->res[i].bad) out->total = gpa_count_add(out->total, out->res[i].count);
}

int64_t gpa_pod_gpu_count(const gpa_pod *v, const gpa_policy *p, bool *any_named)
{
    bool named = false;
    int64_t sum = 0, init_max = 0;
    gpa_ctr_gpus g;
    const cJSON *c;
    cJSON_ArrayForEach(c, gpa_pod_containers(v, GPA_PODC_MAIN))
    {
        gpa_ctr_gpus_scan(&g, p, c);
        named = named || g.n || g.overflow;
        sum = gpa_count_add(sum, g.total);
    }
    cJSON_ArrayForEach(c, gpa_pod_containers(v, GPA_PODC_INIT))
    {
        gpa_ctr_gpus_scan(&g, p, c);
        named = named || g.n || g.overflow;
        if (g.total > init_max) init_max = g.total;
    }
    if (any_named) *any_named = named;
    return sum > init_max ? sum : init_max;
}
