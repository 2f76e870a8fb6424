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

#include "gpu_admission/pod_need.h"
#include "gpu_admission/quantity.h"
#include "engine/engine_internal.h"
#include "policy/policy_dra.h"
#include "util/node_arena.h"
#include "engine/pod.h"

const char *gpa_json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = obj ? gpa_jn_get(obj, key) : NULL;
    return gpa_is_string(v) ? v->valuestring : NULL;
}

const cJSON *gpa_json_obj(const cJSON *obj, const char *key)
{
    const cJSON *v = obj ? gpa_jn_get(obj, key) : NULL;
    return gpa_is_object(v) ? v : NULL;
}

const cJSON *gpa_json_arr(const cJSON *obj, const char *key)
{
    const cJSON *v = obj ? gpa_jn_get(obj, key) : NULL;
    return gpa_is_array(v) ? v : NULL;
}

/* The first member named key wins, as with a lookup (cJSON_GetObjectItemCaseSensitive). */
static void take_obj(const cJSON **slot, bool *seen, const cJSON *c)
{
    if (*seen) return;
    *seen = true;
    *slot = gpa_is_object(c) ? c : NULL;
}

static void take_str(const char **slot, bool *seen, const cJSON *c)
{
    if (*seen) return;
    *seen = true;
    *slot = gpa_is_string(c) ? c->valuestring : NULL;
}

/* k (whose first byte is lit's, not NUL) equals the literal lit: the second byte tells most
 * keys apart before strcmp. */
static inline bool key_is(const char *k, const char *lit)
{
    return k[1] == lit[1] && strcmp(k, lit) == 0;
}

void gpa_pod_init_spec(gpa_pod *v, const cJSON *spec)
{
    memset(v, 0, sizeof *v);
    v->spec = gpa_is_object(spec) ? spec : NULL;
    /* one pass over spec instead of a lookup per container kind / field per check */
    bool seen_aff = false, seen_sel = false, seen_node = false, seen_rc = false, seen_sn = false,
         seen_sg = false;
    const cJSON *c;
    cJSON_ArrayForEach(c, v->spec) {
        const char *k = c->string;
        if (!k) continue;
        switch (k[0]) {
        case 'a':
            if (key_is(k, "affinity")) take_obj(&v->affinity, &seen_aff, c);
            break;
        case 'n':
            if (key_is(k, "nodeSelector"))
                take_obj(&v->node_selector, &seen_sel, c);
            else if (key_is(k, "nodeName"))
                take_str(&v->node_name, &seen_node, c);
            break;
        case 'r':
            if (key_is(k, "runtimeClassName"))
                take_str(&v->runtime_class, &seen_rc, c);
            else if (gpa_is_array(c) && key_is(k, "resourceClaims"))
                v->resource_claims = c;
            break;
        case 's':
            if (key_is(k, "schedulerName"))
                take_str(&v->scheduler_name, &seen_sn, c);
            else if (key_is(k, "schedulingGroup"))
                take_obj(&v->scheduling_group, &seen_sg, c);
            break;
        /* volumes: the last array of a repeated key, as containers */
        case 'v':
            if (gpa_is_array(c) && key_is(k, "volumes")) v->volumes = c;
            break;
        /* containers, initContainers, ephemeralContainers: the last array of a repeated key,
         * as always */
        case 'c':
            if (gpa_is_array(c) && key_is(k, "containers")) v->containers[GPA_PODC_MAIN] = c;
            break;
        case 'i':
            if (gpa_is_array(c) && key_is(k, "initContainers")) v->containers[GPA_PODC_INIT] = c;
            break;
        case 'e':
            if (gpa_is_array(c) && key_is(k, "ephemeralContainers"))
                v->containers[GPA_PODC_EPHEMERAL] = c;
            break;
        default:
            break;
        }
    }
}

void gpa_pod_init(gpa_pod *v, const cJSON *pod)
{
    if (!gpa_is_object(pod)) {
        memset(v, 0, sizeof *v);
        return;
    }
    /* metadata and spec, then labels and annotations, in one pass each (the first of a
     * repeated name counts, as with a lookup) */
    const cJSON *c, *meta = NULL, *spec = NULL;
    bool seen_meta = false, seen_spec = false;
    cJSON_ArrayForEach(c, pod) {
        const char *k = c->string;
        if (!k) continue;
        if (k[0] == 'm' && !seen_meta && key_is(k, "metadata"))
            take_obj(&meta, &seen_meta, c);
        else if (k[0] == 's' && !seen_spec && key_is(k, "spec"))
            take_obj(&spec, &seen_spec, c);
    }
    gpa_pod_init_spec(v, spec);
    v->root = pod;
    v->metadata = meta;
    bool seen_labels = false, seen_ann = false;
    cJSON_ArrayForEach(c, meta) {
        const char *k = c->string;
        if (!k) continue;
        if (k[0] == 'l' && key_is(k, "labels"))
            take_obj(&v->labels, &seen_labels, c);
        else if (k[0] == 'a' && key_is(k, "annotations"))
            take_obj(&v->annotations, &seen_ann, c);
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
    if (name[0] == 'n' && (strcmp(name, GPA_RES_GPU) == 0 || gpa_is_mig_resource(name)))
        return true;
    /* first byte first: "cpu", "memory" and friends never reach strcmp (nor, with the
     * engine index, the list) */
    unsigned char c0 = (unsigned char)name[0];
    const gpa_rule_index *x = p->rule_index;
    if (x && !((x->gpu_res_first[c0 >> 6] >> (c0 & 63)) & 1)) return false;
    for (size_t i = 0; i < p->gpu_resources.n; i++)
        if (p->gpu_resources.items[i][0] == name[0] && strcmp(p->gpu_resources.items[i], name) == 0)
            return true;
    return false;
}

bool gpa_is_plain_gpu(const gpa_policy *p, const char *name)
{
    if (name[0] == 'n' && strcmp(name, GPA_RES_GPU) == 0) return true;
    const gpa_dra_ext *x = gpa_dra_ext_of(p, name);
    return x && x->generic;
}

bool gpa_pool_serves(const gpa_policy *pol, const gpa_pool *p, const char *name)
{
    if (p->dra.set) {
        const gpa_dra_ext *x = gpa_dra_ext_of(pol, name);
        if (x && strcmp(x->device_class, p->dra.device_class) == 0) return true;
    }
    switch (p->sharing) {
    case GPA_SHARING_EXCLUSIVE:
        return gpa_is_plain_gpu(pol, name);
    case GPA_SHARING_MIG:
        if (p->mig_strategy == GPA_MIG_SINGLE) return gpa_is_plain_gpu(pol, name);
        for (size_t i = 0; i < p->n_profiles; i++)
            if (strcmp(p->profiles[i]->resource, name) == 0) return true;
        return false;
    default:
        return strcmp(name, p->shared_resource) == 0;
    }
}

bool gpa_gpu_qty(int64_t *out, const cJSON *v)
{
    *out = 0;
    if (gpa_is_number(v)) {
        double d = v->valuedouble;
        if (!isfinite(d) || d < 0 || d > 9007199254740992.0 || d != floor(d)) return false;
        *out = (int64_t)d;
        return true;
    }
    if (!gpa_is_string(v)) return false;
    /* the usual "1": up to 15 plain digits always fit the quantity's milli-units, and mean
     * what they say */
    const char *str = v->valuestring;
    int64_t quick = 0;
    size_t i = 0;
    for (; i < 16 && str[i] >= '0' && str[i] <= '9'; i++)
        quick = quick * 10 + (str[i] - '0');
    if (i > 0 && i < 16 && str[i] == '\0') {
        *out = quick;
        return true;
    }
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
    cJSON_ArrayForEach(it, limits) {
        if (!it->string || !gpa_is_gpu_resource(p, it->string)) continue;
        gpa_gpu_res *r = res_slot(out, it->string);
        if (!r) continue;
        r->limit = it;
        r->bad = !gpa_gpu_qty(&r->count, it);
    }
    cJSON_ArrayForEach(it, requests) {
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

const gpa_ctr_gpus *gpa_ctr_gpus_cached(gpa_scan_cache *sc, gpa_ctr_gpus *tmp, const gpa_policy *p,
                                        const cJSON *container)
{
    if (sc)
        for (size_t i = 0; i < sc->n; i++)
            if (sc->e[i].c == container) return &sc->e[i].g;
    if (sc && sc->n < GPA_SCAN_CACHE) { /* scanned straight into the cache: no copy */
        sc->e[sc->n].c = container;
        gpa_ctr_gpus_scan(&sc->e[sc->n].g, p, container);
        return &sc->e[sc->n++].g;
    }
    gpa_ctr_gpus_scan(tmp, p, container);
    return tmp;
}

int64_t gpa_pod_gpu_count_cached(const gpa_pod *v, const gpa_policy *p, bool *any_named,
                                 gpa_scan_cache *sc)
{
    bool named = false;
    gpa_pod_need need = {0, 0, 0};
    gpa_ctr_gpus tmp;
    const cJSON *c;
    cJSON_ArrayForEach(c, gpa_pod_containers(v, GPA_PODC_MAIN)) {
        const gpa_ctr_gpus *g = gpa_ctr_gpus_cached(sc, &tmp, p, c);
        named = named || g->n || g->overflow;
        gpa_pod_need_container(&need, g->total);
    }
    cJSON_ArrayForEach(c, gpa_pod_containers(v, GPA_PODC_INIT)) {
        const gpa_ctr_gpus *g = gpa_ctr_gpus_cached(sc, &tmp, p, c);
        named = named || g->n || g->overflow;
        /* an init container asking no GPU changes nothing: its need is the sidecars' */
        if (g->total) gpa_pod_need_init(&need, g->total, gpa_init_container_is_sidecar(c));
    }
    if (any_named) *any_named = named;
    return gpa_pod_need_total(&need);
}

int64_t gpa_pod_gpu_count(const gpa_pod *v, const gpa_policy *p, bool *any_named)
{
    return gpa_pod_gpu_count_cached(v, p, any_named, NULL);
}
