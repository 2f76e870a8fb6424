/*
 * workload_gang.c - workloads whose templates make one gang (POLICY.md "Topology levels"):
 * how many pods of each template belong to one gang, and the pod its operator creates from a
 * template, with the labels, annotations and env the operator adds (so mutate --explain and
 * simulate show the pod affinity the real pods get).
 *
 * What each operator adds was read from its source (docs/policy.md, "Gang size"); values the
 * controller computes at run time that cannot be known from the object (LWS's group-key hash,
 * each pod's own index beyond 0) are not made up: the index is the first pod's, the hash is
 * left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_gang.h"
#include "policy/workload_internal.h"

typedef enum { OP_NONE, OP_PYTORCH, OP_TF, OP_MPI, OP_JOBSET, OP_LWS } op_kind;

static op_kind op_of(const gpa_wl_kind *k)
{
    if (!k->builtin || !k->kind) return OP_NONE; /* a policy's own kind: nothing is known */
    if (strcmp(k->api_group, "kubeflow.org") == 0) {
        if (strcmp(k->kind, "PyTorchJob") == 0) return OP_PYTORCH;
        if (strcmp(k->kind, "TFJob") == 0) return OP_TF;
        if (strcmp(k->kind, "MPIJob") == 0) return OP_MPI;
    }
    if (strcmp(k->kind, "JobSet") == 0) return OP_JOBSET;
    if (strcmp(k->kind, "LeaderWorkerSet") == 0) return OP_LWS;
    return OP_NONE;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* A count member (absent or not a number: dflt; negative: 0). */
static long long count(const cJSON *o, const char *key, long long dflt)
{
    const cJSON *v = get(o, key);
    if (!cJSON_IsNumber(v)) return dflt;
    double d = v->valuedouble;
    if (!(d > 0)) return 0;
    return d >= (double)GPA_WORKLOAD_MAX_REPLICAS ? GPA_WORKLOAD_MAX_REPLICAS : (long long)d;
}

static long long add(long long a, long long b)
{
    return a > GPA_WORKLOAD_MAX_REPLICAS - b ? GPA_WORKLOAD_MAX_REPLICAS : a + b;
}

static const char *replica_specs(op_kind op)
{
    return op == OP_PYTORCH ? "pytorchReplicaSpecs"
           : op == OP_TF    ? "tfReplicaSpecs"
           : op == OP_MPI   ? "mpiReplicaSpecs"
                            : NULL;
}

long long gpa_wl_gang_pods(const gpa_wl_kind *k, const cJSON *obj)
{
    op_kind op = op_of(k);
    const cJSON *spec = get(obj, "spec"), *c;
    long long n = 0;
    switch (op) {
    case OP_PYTORCH:
    case OP_TF:
    case OP_MPI:
        cJSON_ArrayForEach(c, get(spec, replica_specs(op))) {
            /* a TFJob's evaluator is not part of the training cluster (TF_CONFIG) */
            if (op == OP_TF && c->string && strcmp(c->string, "Evaluator") == 0) continue;
            n = add(n, count(c, "replicas", 1));
        }
        return n;
    case OP_JOBSET:
        cJSON_ArrayForEach(c, get(spec, "replicatedJobs")) {
            long long r = count(c, "replicas", 1);
            long long par = count(get(get(c, "template"), "spec"), "parallelism", 1);
            n = add(n,
                    r && par > GPA_WORKLOAD_MAX_REPLICAS / r ? GPA_WORKLOAD_MAX_REPLICAS : r * par);
        }
        return n;
    case OP_LWS:
        return count(get(spec, "leaderWorkerTemplate"), "size", 1);
    default:
        return 0;
    }
}

long long gpa_wl_gang_share(const gpa_wl_kind *k, const cJSON *obj, const char *path,
                            long long replicas)
{
    op_kind op = op_of(k);
    if (op == OP_NONE) return 0;
    if (op == OP_TF && strstr(path, ".Evaluator.")) return 0;
    if (op != OP_LWS) return replicas; /* one job: every pod its templates make */
    const cJSON *lwt = get(get(obj, "spec"), "leaderWorkerTemplate");
    long long size = count(lwt, "size", 1);
    bool leader = cJSON_IsObject(get(lwt, "leaderTemplate"));
    if (strstr(path, "leaderTemplate")) return 1;
    return leader ? (size > 0 ? size - 1 : 0) : size;
}

bool gpa_wl_gang_size_on_pods(const gpa_wl_kind *k, const cJSON *obj)
{
    op_kind op = op_of(k);
    if (op == OP_LWS) return true;
    /* TF_CONFIG lists the cluster unless workers come and go (sparseCluster) */
    if (op == OP_TF) return !cJSON_IsTrue(get(get(obj, "spec"), "enableDynamicWorker"));
    /* PET_NNODES is a number only without an elastic policy */
    return op == OP_PYTORCH && !get(get(obj, "spec"), "elasticPolicy");
}

bool gpa_wl_operator_env_read(const gpa_wl_kind *k)
{
    op_kind op = op_of(k);
    return op == OP_PYTORCH || op == OP_TF || op == OP_MPI || op == OP_JOBSET;
}

gpa_gang_src gpa_wl_operator_gang_size(const gpa_wl_kind *k, const cJSON *obj, int64_t *size)
{
    op_kind op = op_of(k);
    long long n = gpa_wl_gang_pods(k, obj);
    *size = 0;
    /* what the pod path reads of it: a whole number 1..GPA_GANG_MAX_PODS, else unknown */
    if (!gpa_wl_gang_size_on_pods(k, obj) || n < 1 || n > GPA_GANG_MAX_PODS)
        return GPA_GANG_SRC_NONE;
    *size = n;
    return op == OP_LWS  ? GPA_GANG_SRC_LWS
           : op == OP_TF ? GPA_GANG_SRC_TF_CONFIG
                         : GPA_GANG_SRC_PET_NNODES;
}

/* ---- the operator's pod ---- */

static bool set_if_absent(cJSON *o, const char *key, const char *value)
{
    if (get(o, key)) return true;
    return cJSON_AddStringToObject(o, key, value) != NULL;
}

static cJSON *object_member(cJSON *o, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsObject(c)) return c;
    if (c) cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    return cJSON_AddObjectToObject(o, key);
}

/* env name=value on every container that does not set name already */
static bool add_env(cJSON *pod, const char *name, const char *value)
{
    cJSON *c;
    cJSON_ArrayForEach(c, get(get(pod, "spec"), "containers")) {
        if (!cJSON_IsObject(c)) continue;
        cJSON *env = cJSON_GetObjectItemCaseSensitive(c, "env");
        if (!env) env = cJSON_AddArrayToObject(c, "env");
        if (!cJSON_IsArray(env)) continue;
        bool have = false;
        const cJSON *x;
        cJSON_ArrayForEach(x, env) {
            const cJSON *n = get(x, "name");
            have = have || (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0);
        }
        if (have) continue;
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddStringToObject(e, "name", name) ||
            !cJSON_AddStringToObject(e, "value", value) || !cJSON_AddItemToArray(env, e)) {
            cJSON_Delete(e);
            return false;
        }
    }
    return true;
}

/* The port TF_CONFIG names for a replica type: the "tfjob-port" of its "tensorflow" container,
 * else 2222 (training-operator's TFJobDefaultPortName, DefaultContainerName, DefaultPort). */
static long long tf_port(const cJSON *rspec)
{
    const cJSON *c, *p;
    cJSON_ArrayForEach(c, get(get(get(rspec, "template"), "spec"), "containers")) {
        const cJSON *n = get(c, "name");
        if (!cJSON_IsString(n) || strcmp(n->valuestring, "tensorflow") != 0) continue;
        cJSON_ArrayForEach(p, get(c, "ports")) {
            const cJSON *pn = get(p, "name");
            if (cJSON_IsString(pn) && strcmp(pn->valuestring, "tfjob-port") == 0)
                return count(p, "containerPort", 2222);
        }
    }
    return 2222;
}

/* TF_CONFIG as the training operator writes it for the first pod of replica type rtype
 * (pkg/controller.v1/tensorflow/tensorflow.go, genTFConfigJSONStr/genClusterSpec): every
 * replica but the evaluator by its headless-service name, this pod's task, environment
 * "cloud". NULL on OOM. */
static char *tf_config(const cJSON *obj, const char *name, const char *ns, const char *rtype)
{
    cJSON *tc = cJSON_CreateObject(), *cl = cJSON_AddObjectToObject(tc, "cluster");
    bool ok = cl != NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, get(get(obj, "spec"), "tfReplicaSpecs")) {
        if (!ok || !c->string || strcmp(c->string, "Evaluator") == 0) continue;
        char rt[64];
        snprintf(rt, sizeof rt, "%s", c->string);
        for (char *x = rt; *x; x++)
            if (*x >= 'A' && *x <= 'Z') *x = (char)(*x - 'A' + 'a');
        cJSON *list = cJSON_AddArrayToObject(cl, rt);
        long long n = count(c, "replicas", 1), port = tf_port(c);
        for (long long i = 0; ok && list && i < n && i < 100000; i++) {
            char addr[512];
            snprintf(addr, sizeof addr, "%s-%s-%lld.%s.svc:%lld", name, rt, i, ns, port);
            ok = cJSON_AddItemToArray(list, cJSON_CreateString(addr));
        }
        ok = ok && list;
    }
    cJSON *task = ok ? cJSON_AddObjectToObject(tc, "task") : NULL;
    ok = task && cJSON_AddStringToObject(task, "type", rtype) &&
         cJSON_AddNumberToObject(task, "index", 0) &&
         cJSON_AddStringToObject(tc, "environment", "cloud");
    char *out = ok ? cJSON_PrintUnformatted(tc) : NULL;
    cJSON_Delete(tc);
    return out;
}

/* The step after prefix in path ("spec.pytorchReplicaSpecs.Worker.template" -> "Worker"). */
static void step_after(const char *path, const char *prefix, char *out, size_t cap)
{
    out[0] = '\0';
    const char *at = strstr(path, prefix);
    if (!at) return;
    at += strlen(prefix);
    size_t n = strcspn(at, ".[");
    if (n >= cap) n = cap - 1;
    memcpy(out, at, n);
    out[n] = '\0';
}

int gpa_wl_operator_pod(const gpa_wl_kind *k, const cJSON *obj, const char *path, cJSON *pod)
{
    op_kind op = op_of(k);
    if (op == OP_NONE) return GPA_OK;
    const cJSON *nm = get(get(obj, "metadata"), "name");
    const char *name = cJSON_IsString(nm) ? nm->valuestring : "";
    cJSON *md = object_member(pod, "metadata");
    cJSON *labels = md ? object_member(md, "labels") : NULL;
    if (!labels) return GPA_ENOMEM;
    char buf[64], num[32];
    bool ok = true;
    snprintf(num, sizeof num, "%lld", gpa_wl_gang_pods(k, obj));
    if (op == OP_PYTORCH || op == OP_TF || op == OP_MPI) {
        /* kubeflow/training-operator pkg/apis/kubeflow.org/v1/common_types.go: job name,
         * replica type (lower case) and index on every pod */
        char prefix[48];
        snprintf(prefix, sizeof prefix, "%s.", replica_specs(op));
        step_after(path, prefix, buf, sizeof buf);
        for (char *c = buf; *c; c++)
            if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
        ok = set_if_absent(labels, "training.kubeflow.org/job-name", name) &&
             set_if_absent(labels, "training.kubeflow.org/replica-type", buf) &&
             set_if_absent(labels, "training.kubeflow.org/replica-index", "0");
        /* pkg/controller.v1/pytorch/envvar.go: PET_NNODES = the replicas of every spec */
        if (ok && op == OP_PYTORCH && gpa_wl_gang_size_on_pods(k, obj))
            ok = add_env(pod, "PET_NNODES", num);
        if (ok && op == OP_TF && gpa_wl_gang_size_on_pods(k, obj)) {
            const cJSON *pns = get(get(pod, "metadata"), "namespace");
            char *tc =
                tf_config(obj, name, cJSON_IsString(pns) ? pns->valuestring : "default", buf);
            ok = tc && add_env(pod, "TF_CONFIG", tc);
            free(tc);
        }
    } else if (op == OP_JOBSET) {
        /* kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go: labels and
         * annotations on the Jobs and their pods */
        long idx = -1;
        const char *lb = strstr(path, "replicatedJobs[");
        if (lb) idx = strtol(lb + strlen("replicatedJobs["), NULL, 10);
        const cJSON *rj =
            idx >= 0 ? cJSON_GetArrayItem(get(get(obj, "spec"), "replicatedJobs"), (int)idx) : NULL;
        const cJSON *rjn = get(rj, "name");
        char reps[32];
        snprintf(reps, sizeof reps, "%lld", count(rj, "replicas", 1));
        cJSON *ann = object_member(md, "annotations");
        ok = ann != NULL;
        cJSON *both[2] = {labels, ann};
        for (int i = 0; ok && i < 2; i++)
            ok = set_if_absent(both[i], "jobset.sigs.k8s.io/jobset-name", name) &&
                 (!cJSON_IsString(rjn) ||
                  set_if_absent(both[i], "jobset.sigs.k8s.io/replicatedjob-name",
                                rjn->valuestring)) &&
                 set_if_absent(both[i], "jobset.sigs.k8s.io/replicatedjob-replicas", reps) &&
                 set_if_absent(both[i], "jobset.sigs.k8s.io/job-index", "0");
    } else if (op == OP_LWS) {
        /* kubernetes-sigs/lws site/content/en/docs/reference/
         * labels-annotations-and-environment-variables.md (group-key is a hash the controller
         * computes: left out) */
        bool leader = strstr(path, "leaderTemplate") != NULL;
        cJSON *ann = object_member(md, "annotations");
        ok =
            ann && set_if_absent(labels, "leaderworkerset.sigs.k8s.io/name", name) &&
            set_if_absent(labels, "leaderworkerset.sigs.k8s.io/group-index", "0") &&
            set_if_absent(labels, "leaderworkerset.sigs.k8s.io/worker-index", leader ? "0" : "1") &&
            set_if_absent(ann, "leaderworkerset.sigs.k8s.io/size", num) &&
            add_env(pod, "LWS_GROUP_SIZE", num);
    }
    return ok ? GPA_OK : GPA_ENOMEM;
}
