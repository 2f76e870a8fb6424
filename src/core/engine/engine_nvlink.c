/*
 * engine_nvlink.c - the IMEX channel a gang needs on a pool whose NVLink island spans nodes
 * (topology.imexChannel, docs/policy.md "Multi-node NVLink").
 *
 * On GB200 NVL72 the 72 GPUs of a rack share one NVLink domain, but a process reaches GPU
 * memory on another node only through an IMEX channel, which NVIDIA's DRA driver gives the
 * pods that list a ComputeDomain's channel claim (spec.resourceClaims naming the
 * ResourceClaimTemplate of spec.channel.resourceClaimTemplate.name, and resources.claims of
 * each container that uses it). Without it the pods start and NCCL fails or falls back to the
 * network, so a gang that must span nodes is judged at admission.
 *
 * What the pod alone can prove is only that it lists a template of the configured name in the
 * containers that ask GPUs: that the template exists, was made by a ComputeDomain, and spans
 * this gang's nodes is the driver's to enforce (docs/policy.md lists the limits).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/engine_nvlink.h"
#include "format/json_read.h"
#include "policy/policy_nvlink.h"

#define MAX_CHANNELS 8 /* channel claims remembered per pod; real pods list one */

/* The names of the pod's claims made from a channel template, into names; returns the count. */
static size_t channel_claims(const gpa_pod *v, const char *pattern, const char **names)
{
    size_t n = 0;
    const cJSON *rc;
    cJSON_ArrayForEach(rc, v->resource_claims) {
        const char *name = gpa_json_str(rc, "name");
        const char *tmpl = gpa_json_str(rc, "resourceClaimTemplateName");
        if (name && tmpl && n < MAX_CHANNELS && gpa_imex_template_match(pattern, tmpl))
            names[n++] = name;
    }
    return n;
}

static bool lists_claim(const cJSON *container, const char **names, size_t n)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gpa_json_arr(gpa_json_obj(container, "resources"), "claims")) {
        const char *name = gpa_json_str(c, "name");
        for (size_t i = 0; name && i < n; i++)
            if (strcmp(name, names[i]) == 0) return true;
    }
    return false;
}

/* The first name container lists in resources.claims that no spec.resourceClaims entry
 * defines (a manifest whose pod-level entry was lost): the name to give the channel. Only for
 * a better message, so both lists are read up to UNDEFINED_SCAN entries: a hostile pod of
 * 100,000 names on each side would otherwise cost 10^10 comparisons. */
#define UNDEFINED_SCAN 64
static const char *undefined_claim(const cJSON *container, const gpa_pod *v)
{
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, gpa_json_arr(gpa_json_obj(container, "resources"), "claims")) {
        if (i++ == UNDEFINED_SCAN) break;
        const char *name = gpa_json_str(c, "name");
        if (!name || !*name) continue;
        bool have = false;
        int j = 0;
        const cJSON *rc;
        cJSON_ArrayForEach(rc, v->resource_claims) {
            const char *n = gpa_json_str(rc, "name");
            if (j++ == UNDEFINED_SCAN || (have = n && strcmp(n, name) == 0)) break;
        }
        if (!have && j <= UNDEFINED_SCAN) return name;
    }
    return NULL;
}

/* The first container (main, then init) asking GPUs that lists none of the channel claims,
 * NULL when every one does; *idx its index in its list. sc may be NULL. */
static const cJSON *missing_in(gpa_scan_cache *sc, const gpa_policy *p, const gpa_pod *v,
                               const char **names, size_t n, int *idx)
{
    static const gpa_podc_kind kinds[] = {GPA_PODC_MAIN, GPA_PODC_INIT};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const cJSON *c;
        int i = 0;
        cJSON_ArrayForEach(c, gpa_pod_containers(v, kinds[k])) {
            gpa_ctr_gpus tmp;
            const gpa_ctr_gpus *g = gpa_ctr_gpus_cached(sc, &tmp, p, c);
            if (g->total > 0 && !lists_claim(c, names, n)) {
                *idx = i;
                return c;
            }
            i++;
        }
    }
    return NULL;
}

bool gpa_imex_pod_has_channel(const gpa_policy *p, const gpa_topology *t, const cJSON *pod)
{
    if (!gpa_imex_required(t)) return true;
    gpa_pod v;
    gpa_pod_init(&v, pod);
    const char *names[MAX_CHANNELS];
    size_t n = channel_claims(&v, t->imex_template, names);
    int idx;
    return n > 0 && !missing_in(NULL, p, &v, names, n, &idx);
}

/* Under imexChannel enforcement warn, one short line (warnings stay under 120 characters)
 * instead of the refusal. */
__attribute__((format(printf, 3, 4))) static void verdict(gpa_eng *e, int64_t gang_gpus,
                                                          const char *fmt, ...)
{
    const gpa_pool *pool = e->pool;
    if (pool->topology.imex_warn) {
        gpa_eng_warn(e,
                     "gang of %" PRId64 " GPUs spans nodes of pool %s: add the IMEX channel "
                     "claim (template %s)",
                     gang_gpus, pool->name, pool->topology.imex_template);
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gpa_eng_violation(e, "imex-channel", "%s", msg);
}

void gpa_eng_check_imex(gpa_eng *e, const gpa_pod *v)
{
    const gpa_pool *pool = e->pool;
    const gpa_topology *t = &pool->topology;
    if (!pool->has_topology || !gpa_imex_required(t) || e->gpus <= 0) return;
    gpa_eng_gang(e);
    /* a bad or overflowing size is the gang check's refusal; an unknown one gives no verdict
     * (docs/policy.md: the pod alone does not say it is part of a gang) */
    int64_t g;
    if (e->gang_bad || __builtin_mul_overflow(e->gang_size, e->gpus, &g)) return;
    if (e->gang_size <= 0) {
        gpa_eng_explain(e,
                        "IMEX channel: gang size unknown, not checked (pool %s needs one for "
                        "gangs of more than %d GPUs)",
                        pool->name, t->gpus_per_node);
        return;
    }
    if (g <= t->gpus_per_node) { /* fits one node: NVLink inside it needs no channel */
        gpa_eng_explain(e,
                        "IMEX channel: gang of %" PRId64 " GPUs fits one %d-GPU node of pool "
                        "%s: none needed",
                        g, t->gpus_per_node, pool->name);
        return;
    }
    const char *names[MAX_CHANNELS];
    size_t n = channel_claims(v, t->imex_template, names);
    const bool pattern = strchr(t->imex_template, '*') != NULL;
    char head[384];
    snprintf(head, sizeof head,
             "gang of %" PRId64 " GPUs (%" PRId64 " pods x %" PRId64 " GPUs, %s) spans more "
             "than one %d-GPU node of pool %s, whose NVLink island reaches other nodes only "
             "through an IMEX channel",
             g, e->gang_size, e->gpus, e->gang_src ? e->gang_src : "gang size", t->gpus_per_node,
             pool->name);
    if (n == 0) {
        int idx = 0;
        const cJSON *c = missing_in(&e->scans, e->p, v, names, 0, &idx);
        char nb[16];
        const char *cn = c ? gpa_podc_name(c, idx, nb, sizeof nb) : "that asks GPUs";
        const char *listed = c ? undefined_claim(c, v) : NULL;
        if (listed) {
            verdict(e, g,
                    "%s: container %.63s lists claim %.63s, which spec.resourceClaims does not "
                    "define: add {name: %.63s, resourceClaimTemplateName: %s%s%s} to "
                    "spec.resourceClaims",
                    head, cn, listed, listed,
                    pattern ? "<its spec.channel.resourceClaimTemplate.name, matching " : "",
                    t->imex_template, pattern ? ">" : "");
            return;
        }
        verdict(e, g,
                "%s: add the channel of the job's ComputeDomain to the pod, spec.resourceClaims: "
                "[{name: imex-channel, resourceClaimTemplateName: %s%s%s}], and to container "
                "%.63s, resources.claims: [{name: imex-channel}]",
                head, pattern ? "<its spec.channel.resourceClaimTemplate.name, matching " : "",
                t->imex_template, pattern ? ">" : "", cn);
        return;
    }
    int idx = 0;
    const cJSON *c = missing_in(&e->scans, e->p, v, names, n, &idx);
    if (!c) {
        gpa_eng_explain(e,
                        "IMEX channel: gang of %" PRId64 " GPUs spans nodes; every GPU "
                        "container lists claim %.63s (template %s)",
                        g, names[0], t->imex_template);
        return;
    }
    char nb[16];
    verdict(e, g,
            "%s: container %.63s asks GPUs but does not list claim %.63s in resources.claims "
            "(the channel reaches only the containers that list it): add {name: %.63s}",
            head, gpa_podc_name(c, idx, nb, sizeof nb), names[0], names[0]);
}
