/*
 * engine_gang.c - gangs on pools with topology levels (POLICY.md "Topology levels"): how many
 * pods the gang has (our annotation, else what the training operators put on the pods they
 * create), the domain its pod affinity goes on, and the pods we leave alone because a
 * topology-aware scheduler places them.
 *
 * Only pools with islandGpus reach this file, so every other pool answers as before. The size
 * is read from the original pod: the labels, annotations and env it reads are the user's or
 * the operator's, never ours. The reader (gpa_gang_read_pod) is also what the apply-time check
 * of a workload's templates reads them with (review_workload.c), and the gang's GPUs are the
 * one sum both make (gpa_gang_sum_add), so the two cannot count a gang differently.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "format/json_read.h"
#include "engine/gang_size.h"

/* Sources on the pod, each checked against the operator's own code (docs/policy.md). */
#define KUEUE_GROUP_TOTAL "kueue.x-k8s.io/pod-group-total-count"
#define LWS_SIZE          "leaderworkerset.sigs.k8s.io/size"
#define ENV_PET_NNODES    "PET_NNODES"
#define ENV_TF_CONFIG     "TF_CONFIG"
#define KUEUE_TAS_GATE    "kueue.x-k8s.io/topology"
#define KUEUE_TAS_REQ     "kueue.x-k8s.io/podset-required-topology"
#define KUEUE_TAS_PREF    "kueue.x-k8s.io/podset-preferred-topology"
#define KAI_SCHEDULER     "kai-scheduler"
#define KAI_REQ           "kai.scheduler/topology-required-placement"
#define KAI_PREF          "kai.scheduler/topology-preferred-placement"

/* The literal value of env name in the pod's containers (the first container that sets it);
 * NULL when none sets it or it comes from valueFrom. */
static const char *container_env(const gpa_pod *v, const char *name)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, gpa_pod_containers(v, GPA_PODC_MAIN)) {
        const cJSON *x;
        cJSON_ArrayForEach(x, gpa_json_arr(c, "env")) {
            const char *n = gpa_json_str(x, "name");
            if (n && strcmp(n, name) == 0) return gpa_json_str(x, "value");
        }
    }
    return NULL;
}

/* TFJob: TF_CONFIG's cluster lists every replica of the job but the evaluator, one address
 * each (kubeflow/training-operator pkg/controller.v1/tensorflow/tensorflow.go, genClusterSpec);
 * the dynamic-worker form (sparseCluster) names only some, so it gives no size. */
static int tf_config_size(gpa_gang_read *r, const char *tf)
{
    gpa_jdoc *d = NULL;
    int rc = gpa_jdoc_parse(&d, tf, strlen(tf), NULL, NULL);
    if (rc == -2) return GPA_ENOMEM;
    if (rc != 0) return GPA_OK;
    const cJSON *c, *cluster = gpa_json_obj(gpa_jdoc_root(d), "cluster");
    int64_t n = 0;
    bool ok = cluster != NULL;
    cJSON_ArrayForEach(c, cluster) {
        if (!gpa_is_array(c)) ok = false;
        n += cJSON_GetArraySize(c);
    }
    gpa_jdoc_free(d);
    if (ok && n >= 1 && n <= GPA_GANG_MAX_PODS) {
        r->size = n;
        r->src = GPA_GANG_SRC_TF_CONFIG;
    }
    return GPA_OK;
}

static bool prefix(const char *k, const char *p, size_t n)
{
    return strncmp(k, p, n) == 0;
}

/* Every pod placed in a pool with levels comes here, gang or not, so the pod is read in one
 * pass over its annotations, one over its spec's top level and one over its labels (the
 * first character filters nearly every key), not a lookup per name. */
int gpa_gang_read_pod(gpa_gang_read *r, const gpa_pod *v, bool operator_pod)
{
    memset(r, 0, sizeof *r);
    const char *gang = NULL, *kueue_total = NULL, *lws = NULL;
    bool kueue_req = false, kueue_pref = false, kai_req = false, kai_pref = false;
    for (const cJSON *c = v->annotations ? v->annotations->child : NULL; c; c = c->next) {
        const char *k = c->string;
        if (!k || !gpa_is_string(c)) continue;
        if (k[0] == 'g') {
            if (!gang && strcmp(k, GPA_ANN_GANG_SIZE) == 0) gang = c->valuestring;
        } else if (k[0] == 'k') {
            if (prefix(k, "kueue.x-k8s.io/", 15)) {
                if (!kueue_total && strcmp(k, KUEUE_GROUP_TOTAL) == 0) kueue_total = c->valuestring;
                kueue_req = kueue_req || strcmp(k, KUEUE_TAS_REQ) == 0;
                kueue_pref = kueue_pref || strcmp(k, KUEUE_TAS_PREF) == 0;
            } else if (prefix(k, "kai.scheduler/", 14)) {
                kai_req = kai_req || strcmp(k, KAI_REQ) == 0;
                kai_pref = kai_pref || strcmp(k, KAI_PREF) == 0;
            }
        } else if (k[0] == 'l') {
            if (!lws && strcmp(k, LWS_SIZE) == 0) lws = c->valuestring;
        }
    }
    /* who places the pod matters only to a grouped pod's affinity: gpa_eng_gang_key reads
     * the spec then (owner_of); the annotations it needs are read here, in the one pass */
    r->kueue_ann = kueue_req ? 1 : kueue_pref ? 2 : 0;
    r->kai_ann = kai_req ? 1 : kai_pref ? 2 : 0;
    if (gang) {
        r->src = GPA_GANG_SRC_OURS;
        if (!gpa_gang_parse(gang, &r->size)) r->bad = true;
        return GPA_OK;
    }
    /* an operator's value that is not a size (PET_NNODES "1:4" of an elastic job) leaves the
     * size unknown: the widest domain, never a refusal for what the user did not write */
    if (kueue_total && gpa_gang_parse(kueue_total, &r->size)) {
        r->src = GPA_GANG_SRC_KUEUE;
        return GPA_OK;
    }
    if (lws && gpa_gang_parse(lws, &r->size)) {
        r->src = GPA_GANG_SRC_LWS;
        return GPA_OK;
    }
    /* PET_NNODES comes from the training operator (its pods carry training.kubeflow.org/
     * labels) or Trainer v2 (JobSet pods), TF_CONFIG from the training operator's TFJobs:
     * only their pods' env is read. Both count every replica, CPU-only ones included: the
     * apply-time check (review_workload.c) says when that is not the gang's GPU pods. */
    bool op = operator_pod;
    for (const cJSON *c = v->labels ? v->labels->child : NULL; c && !op; c = c->next) {
        const char *k = c->string;
        if (!k) continue;
        op = (k[0] == 't' && prefix(k, "training.kubeflow.org/", 22)) ||
             (k[0] == 'j' && prefix(k, "jobset.sigs.k8s.io/", 19));
    }
    const char *nn = op ? container_env(v, ENV_PET_NNODES) : NULL;
    if (nn && gpa_gang_parse(nn, &r->size)) {
        r->src = GPA_GANG_SRC_PET_NNODES;
        return GPA_OK;
    }
    const char *tf = op ? container_env(v, ENV_TF_CONFIG) : NULL;
    return tf ? tf_config_size(r, tf) : GPA_OK;
}

void gpa_eng_gang(gpa_eng *e)
{
    if (e->gang_done) return;
    e->gang_done = true;
    gpa_gang_read r;
    if (gpa_gang_read_pod(&r, &e->orig, false) != GPA_OK) e->oom = true;
    e->gang_size = r.bad ? 0 : r.size;
    e->gang_bad = r.bad;
    e->gang_src = r.src ? gpa_gang_src_name(r.src) : NULL;
    e->gang_kueue_ann = r.kueue_ann;
    e->gang_kai_ann = r.kai_ann;
}

/* The topology-aware scheduler that places the pod, NULL when none (one pass over the spec's
 * top level for its scheduling gates and schedulerName). */
static const char *owner_of(const gpa_eng *e)
{
    const gpa_pod *v = &e->orig;
    bool gate = false, kai = false;
    for (const cJSON *c = v->spec ? v->spec->child : NULL; c; c = c->next) {
        const char *k = c->string;
        if (!k || k[0] != 's' || !prefix(k, "schedul", 7)) continue;
        if (strcmp(k, "schedulingGates") == 0) {
            const cJSON *g, *gates = gpa_is_array(c) ? c : NULL;
            cJSON_ArrayForEach(g, gates) {
                const char *n = gpa_json_str(g, "name");
                gate = gate || (n && strcmp(n, KUEUE_TAS_GATE) == 0);
            }
        } else if (strcmp(k, "schedulerName") == 0) {
            kai = gpa_is_string(c) && strcmp(c->valuestring, KAI_SCHEDULER) == 0;
        }
    }
    if (gate) return "Kueue topology-aware scheduling (gate " KUEUE_TAS_GATE ")";
    if (e->gang_kueue_ann == 1) return "Kueue topology-aware scheduling (" KUEUE_TAS_REQ ")";
    if (e->gang_kueue_ann == 2) return "Kueue topology-aware scheduling (" KUEUE_TAS_PREF ")";
    if (kai) return "KAI Scheduler (schedulerName kai-scheduler)";
    if (e->gang_kai_ann == 1) return "KAI Scheduler (" KAI_REQ ")";
    if (e->gang_kai_ann == 2) return "KAI Scheduler (" KAI_PREF ")";
    /* Kubernetes 1.36+ Workload API: the PodGroup it names may carry topology constraints we
     * cannot see, and the scheduler places the group as a whole (k8s.io/api core/v1 PodSpec
     * SchedulingGroup, scheduling/v1alpha3 PodGroupSchedulingConstraints) */
    if (v->scheduling_group) return "the Kubernetes Workload API (spec.schedulingGroup)";
    return NULL;
}

/* Gang GPUs, or 0 when the size is unknown or bad; -1 when size x GPUs overflows. The pod
 * knows only its own GPUs, so the gang is read as size pods like it (the annotation's
 * contract): the same sum the apply-time check makes over the templates. */
static int64_t gang_gpus(const gpa_eng *e)
{
    if (e->gang_bad) return 0;
    gpa_gang_sum s = {0};
    gpa_gang_sum_add(&s, e->gang_size, e->gpus);
    return s.overflow ? -1 : s.gpus;
}

const char *gpa_eng_gang_key(gpa_eng *e, int64_t *gpus)
{
    const gpa_topology *t = &e->pool->topology;
    gpa_eng_gang(e);
    *gpus = 0;
    e->gang_owner = owner_of(e);
    if (e->gang_owner) {
        gpa_eng_warn(e, "no gang pod affinity: %s places the pod", e->gang_owner);
        return NULL;
    }
    int64_t g = gang_gpus(e);
    if (g < 0 || e->gang_bad) return NULL; /* refused by the check */
    const char *key = gpa_gang_domain(t, g, gpus);
    if (!key) *gpus = 0; /* wider than every domain: refused by the check */
    return key;
}

void gpa_eng_gang_warn(gpa_eng *e, const char *key, int64_t gpus)
{
    int64_t g = gang_gpus(e);
    if (g > 0)
        gpa_eng_warn(e, "gang of %" PRId64 " GPUs: pod affinity on %s (%" PRId64 " GPUs)", g, key,
                     gpus);
    else
        gpa_eng_warn(e,
                     "gang size unknown: pod affinity on %s (%" PRId64 " GPUs), the widest "
                     "domain",
                     key, gpus);
}

void gpa_eng_check_gang(gpa_eng *e)
{
    const gpa_pool *pool = e->pool;
    const gpa_topology *t = &pool->topology;
    gpa_eng_gang(e);
    if (e->gang_bad) {
        const char *s = gpa_pod_annotation(&e->orig, GPA_ANN_GANG_SIZE);
        gpa_eng_violation(e, "gang-size",
                          "annotation %s: \"%.40s\" is not a gang size; write the number of pods "
                          "in the gang as a whole number from 1 to %d",
                          GPA_ANN_GANG_SIZE, s ? s : "", GPA_GANG_MAX_PODS);
        return;
    }
    int64_t g = gang_gpus(e), widest;
    if (g < 0) {
        gpa_eng_violation(e, "gang-size",
                          "%s: %" PRId64 " pods x %" PRId64 " GPUs is more GPUs than can be "
                          "counted; check the pod's GPU limits and the gang size",
                          e->gang_src, e->gang_size, e->gpus);
        return;
    }
    if (g > 0 && !gpa_gang_domain(t, g, &widest)) {
        const char *wl = t->n_levels ? t->levels[t->n_levels - 1].label : t->island_label;
        gpa_eng_violation(e, "gang-too-wide",
                          "gang of %" PRId64 " GPUs (%" PRId64 " pods x %" PRId64 " GPUs, %s) is "
                          "wider than pool %s's widest domain, %s (%" PRId64 " GPUs); run a "
                          "smaller gang or ask for a pool with a wider level",
                          g, e->gang_size, e->gpus, e->gang_src, pool->name, wl, widest);
    }
}

void gpa_eng_gang_pod_too_big(gpa_eng *e)
{
    const gpa_pool *pool = e->pool;
    const gpa_topology *t = &pool->topology;
    char lv[256];
    size_t at = 0;
    lv[0] = '\0';
    for (size_t i = 0; i < t->n_levels && at < sizeof lv; i++) {
        int w = snprintf(lv + at, sizeof lv - at, ", %s (%" PRId64 " GPUs)", t->levels[i].label,
                         t->levels[i].gpus);
        if (w < 0) break;
        at += (size_t)w;
    }
    gpa_eng_violation(e, "topology-size",
                      "pod asks %" PRId64 " GPUs but nodes of pool %s have %d; run the job as "
                      "pods of at most %d GPUs with annotation %s: the gang lands in the "
                      "narrowest domain that holds it: %s (%" PRId64 " GPUs)%s",
                      e->gpus, pool->name, t->gpus_per_node, t->gpus_per_node, GPA_ANN_GANG_SIZE,
                      t->island_label, t->island_gpus, lv);
}
