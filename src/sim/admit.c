/*
 * admit.c - every simulated pod goes through the real webhooks first (gpa_judge: the mutating
 * review, its patch applied, the validating review), so the simulator packs exactly the pods
 * the cluster would store, with the engine's resources, tolerations and affinities.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/claim.h"
#include "gpu_admission/judge.h"
#include "gpu_admission/workload.h"
#include "sim_internal.h"

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void pod_name(char *buf, size_t cap, const cJSON *pod, const char *fallback_ns)
{
    const char *ns = str_at(pod, "metadata", "namespace");
    const char *nm = str_at(pod, "metadata", "name");
    if (!nm) nm = str_at(pod, "metadata", "generateName");
    snprintf(buf, cap, "%s/%s",
             ns            ? ns
             : fallback_ns ? fallback_ns
                           : "default",
             nm ? nm : "(no name)");
}

/* The inventory's nodes offer GPUs through the device plugin: a whole GPU asked through DRA
 * (a generic DRA extended resource the placed pool served as written, e.g.
 * deviceclass.resource.kubernetes.io/gpu.nvidia.com on whole-GPU pools) is packed as the
 * nvidia.com/gpu it stands for, added to one the container already asks. */
static double whole(const cJSON *v)
{
    const char *str = cJSON_GetStringValue(v);
    return cJSON_IsNumber(v) ? v->valuedouble : str ? atof(str) : 0;
}

static void as_device_plugin_gpus(const gpa_policy *p, cJSON *pod)
{
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(pod, "spec");
    static const char *const lists[] = {"containers", "initContainers"};
    for (int l = 0; l < 2; l++) {
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[l])) {
            cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
            static const char *const kinds[] = {"limits", "requests"};
            for (int k = 0; k < 2; k++) {
                cJSON *m = cJSON_GetObjectItemCaseSensitive(res, kinds[k]);
                for (cJSON *q = cJSON_IsObject(m) ? m->child : NULL; q;) {
                    cJSON *next = q->next;
                    if (q->string && gpa_policy_dra_generic(p, q->string)) {
                        cJSON *v = cJSON_DetachItemViaPointer(m, q);
                        cJSON *gpu = cJSON_GetObjectItemCaseSensitive(m, "nvidia.com/gpu");
                        if (!gpu) {
                            cJSON_AddItemToObject(m, "nvidia.com/gpu", v);
                        } else {
                            /* both whole counts: the quantity check refused anything else */
                            cJSON *sum = cJSON_CreateNumber(whole(gpu) + whole(v));
                            if (sum)
                                cJSON_ReplaceItemInObjectCaseSensitive(m, "nvidia.com/gpu", sum);
                            cJSON_Delete(v);
                        }
                        next = m->child; /* the merge may have freed next; q is gone from m */
                    }
                    q = next;
                }
            }
        }
    }
}

static int judge_one(gpa_sim *s, const gpa_policy *p, const cJSON *pod, const char *ns,
                     const char *name, long long copies, const char *origin, gpa_error *err)
{
    gpa_judgement j;
    gpa_judge_input in = {
        .object = pod, .namespace_ = ns, .hooks = GPA_JUDGE_BOTH, .want_object = true};
    gpa_error jerr = {0};
    int rc = gpa_judge(&j, p, &in, &jerr);
    if (rc != GPA_OK) {
        if (rc == GPA_ENOMEM) return gpa_fail(err, rc, "out of memory");
        char msg[4200];
        snprintf(msg, sizeof msg, "the webhook could not answer (%s)", jerr.message);
        return gpa_sim_add_denied_pool(s, name, msg, NULL, copies, err);
    }
    if (!j.judged) {
        s->skipped += (size_t)copies;
        gpa_judgement_clear(&j);
        return GPA_OK;
    }
    if (!j.allowed) {
        /* the webhook's message as it is; the entry carries its pod count */
        rc =
            gpa_sim_add_denied_pool(s, name, j.message ? j.message : "denied", j.pool, copies, err);
        gpa_judgement_clear(&j);
        return rc;
    }
    if (j.object) as_device_plugin_gpus(p, j.object);
    rc = gpa_sim_add_pod_pool(s, j.object ? j.object : pod, name, copies, j.pool, err);
    gpa_judgement_clear(&j);
    if (rc == GPA_ERANGE && origin) {
        gpa_error e2 = *err;
        return gpa_fail(err, rc, "%s: %s", origin, e2.message);
    }
    return rc;
}

int gpa_sim_admit(gpa_sim *s, const gpa_policy *p, const cJSON *obj, const char *origin,
                  gpa_error *err)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    const cJSON *av = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");
    const char *k = cJSON_IsString(kind) ? kind->valuestring : "";
    char name[1400];
    if (strcmp(k, "AdmissionReview") == 0) {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(obj, "request");
        const cJSON *pod = cJSON_GetObjectItemCaseSensitive(req, "object");
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(req, "namespace");
        if (!cJSON_IsObject(pod)) {
            s->skipped++;
            return GPA_OK;
        }
        pod_name(name, sizeof name, pod, cJSON_IsString(ns) ? ns->valuestring : NULL);
        return judge_one(s, p, obj, NULL, name, 1, origin, err);
    }
    if (strcmp(k, "Pod") == 0) {
        pod_name(name, sizeof name, obj, NULL);
        return judge_one(s, p, obj, NULL, name, 1, origin, err);
    }
    if (gpa_claim_object_kind(obj) != GPA_CLAIM_NONE) {
        /* the inventory has nodes and GPUs, not DRA devices: a claim cannot be placed here */
        s->skipped++;
        s->skipped_claims++;
        return GPA_OK;
    }
    if (!gpa_workload_kind_known(p, cJSON_IsString(av) ? av->valuestring : "", k)) {
        s->skipped++;
        return GPA_OK;
    }
    gpa_workload_templates *ts = NULL;
    gpa_error werr = {0};
    int rc = gpa_workload_templates_read(&ts, p, obj, NULL, &werr);
    if (rc != GPA_OK) {
        if (rc == GPA_ENOMEM) return gpa_fail(err, rc, "out of memory");
        return gpa_fail(err, rc, "%s: %s", origin ? origin : "input", werr.message);
    }
    size_t n = gpa_workload_templates_count(ts);
    char base[600];
    pod_name(base, sizeof base, obj, NULL);
    for (size_t i = 0; i < n && rc == GPA_OK; i++) {
        const gpa_workload_template *t = gpa_workload_templates_get(ts, i);
        if (n == 1)
            snprintf(name, sizeof name, "%s", base);
        else
            snprintf(name, sizeof name, "%s[%.600s]", base, t->path);
        rc = judge_one(s, p, t->pod, NULL, name, t->replicas, origin, err);
    }
    gpa_workload_templates_free(ts);
    return rc;
}
