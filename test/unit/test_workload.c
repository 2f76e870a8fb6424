/*
 * test_workload.c - gpa_workload_templates_read: every built-in kind's paths, concrete path
 * names, replica counts, the pod built from a template, and bad shapes answered with an error
 * naming the path (never a crash).
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "gpu_admission/workload.h"

static gpa_workload_templates *read_ok(const char *json, const char *ns)
{
    cJSON *o = cJSON_Parse(json);
    CHECK(o != NULL);
    gpa_workload_templates *t = NULL;
    gpa_error err = {0};
    int rc = gpa_workload_templates_read(&t, NULL, o, ns, &err);
    if (rc != GPA_OK) fprintf(stderr, "unexpected error: %s\n", err.message);
    CHECK_INT(rc, GPA_OK);
    cJSON_Delete(o);
    return t;
}

static void read_err(const char *json, const char *want)
{
    cJSON *o = cJSON_Parse(json);
    CHECK(o != NULL);
    gpa_workload_templates *t = (gpa_workload_templates *)1;
    gpa_error err = {0};
    CHECK_INT(gpa_workload_templates_read(&t, NULL, o, NULL, &err), GPA_EINVAL);
    CHECK(t == NULL);
    CHECK_CONTAINS(err.message, want);
    cJSON_Delete(o);
}

static const char *tpath(const gpa_workload_templates *t, size_t i)
{
    const gpa_workload_template *x = gpa_workload_templates_get(t, i);
    return x ? x->path : NULL;
}

static long long treplicas(const gpa_workload_templates *t, size_t i)
{
    const gpa_workload_template *x = gpa_workload_templates_get(t, i);
    return x ? x->replicas : -1;
}

#define TPL "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[]}}"

static void test_builtin_kinds(void)
{
    struct {
        const char *json;
        size_t n;
        const char *p0, *p1;
        long long r0, r1;
    } cases[] = {
        {"{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"replicas\":3,"
         "\"template\":" TPL "}}",
         1, "spec.template", NULL, 3, 0},
        {"{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"spec\":{\"template\":" TPL "}}", 1,
         "spec.template", NULL, 1, 0},
        {"{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"spec\":{\"template\":" TPL "}}", 1,
         "spec.template", NULL, 1, 0},
        {"{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"spec\":{\"replicas\":0,"
         "\"template\":" TPL "}}",
         1, "spec.template", NULL, 0, 0},
        {"{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"spec\":{\"parallelism\":4,"
         "\"template\":" TPL "}}",
         1, "spec.template", NULL, 4, 0},
        /* an older cluster's CronJob version matches too */
        {"{\"apiVersion\":\"batch/v1beta1\",\"kind\":\"CronJob\",\"spec\":{\"jobTemplate\":"
         "{\"spec\":{\"parallelism\":2,\"template\":" TPL "}}}}",
         1, "spec.jobTemplate.spec.template", NULL, 2, 0},
        {"{\"apiVersion\":\"v1\",\"kind\":\"ReplicationController\",\"spec\":{\"replicas\":2,"
         "\"template\":" TPL "}}",
         1, "spec.template", NULL, 2, 0},
        {"{\"apiVersion\":\"v1\",\"kind\":\"PodTemplate\",\"template\":" TPL "}", 1, "template",
         NULL, 1, 0},
        {"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"spec\":{"
         "\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1,\"template\":" TPL "},"
         "\"Worker\":{\"replicas\":7,\"template\":" TPL "}}}}",
         2, "spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template",
         1, 7},
        {"{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\",\"spec\":{\"tfReplicaSpecs\":{"
         "\"PS\":{\"replicas\":2,\"template\":" TPL "}}}}",
         1, "spec.tfReplicaSpecs.PS.template", NULL, 2, 0},
        {"{\"apiVersion\":\"kubeflow.org/v2beta1\",\"kind\":\"MPIJob\",\"spec\":{"
         "\"mpiReplicaSpecs\":{\"Launcher\":{\"template\":" TPL "},\"Worker\":{\"replicas\":2,"
         "\"template\":" TPL "}}}}",
         2, "spec.mpiReplicaSpecs.Launcher.template", "spec.mpiReplicaSpecs.Worker.template", 1, 2},
        {"{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"spec\":{"
         "\"replicatedJobs\":[{\"name\":\"a\",\"replicas\":3,\"template\":{\"spec\":{"
         "\"parallelism\":2,\"template\":" TPL "}}},{\"name\":\"b\",\"template\":{\"spec\":{"
         "\"template\":" TPL "}}}]}}",
         2, "spec.replicatedJobs[0].template.spec.template",
         "spec.replicatedJobs[1].template.spec.template", 6, 1},
        {"{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"spec\":{\"headGroupSpec\":{"
         "\"template\":" TPL "},\"workerGroupSpecs\":[{\"replicas\":5,\"template\":" TPL "}]}}",
         2, "spec.headGroupSpec.template", "spec.workerGroupSpecs[0].template", 1, 5},
        {"{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"spec\":{\"rayClusterSpec\":{"
         "\"headGroupSpec\":{\"template\":" TPL "},\"workerGroupSpecs\":[{\"replicas\":2,"
         "\"template\":" TPL "}]}}}",
         2, "spec.rayClusterSpec.headGroupSpec.template",
         "spec.rayClusterSpec.workerGroupSpecs[0].template", 1, 2},
        {"{\"apiVersion\":\"leaderworkerset.x-k8s.io/v1\",\"kind\":\"LeaderWorkerSet\",\"spec\":{"
         "\"replicas\":3,\"leaderWorkerTemplate\":{\"size\":4,\"leaderTemplate\":" TPL ","
         "\"workerTemplate\":" TPL "}}}",
         2, "spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate",
         3, 9},
        {"{\"apiVersion\":\"leaderworkerset.x-k8s.io/v1\",\"kind\":\"LeaderWorkerSet\",\"spec\":{"
         "\"replicas\":2,\"leaderWorkerTemplate\":{\"size\":4,\"workerTemplate\":" TPL "}}}",
         1, "spec.leaderWorkerTemplate.workerTemplate", NULL, 8, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gpa_workload_templates *t = read_ok(cases[i].json, NULL);
        CHECK_INT(gpa_workload_templates_count(t), cases[i].n);
        CHECK_STR(tpath(t, 0), cases[i].p0);
        CHECK_INT(treplicas(t, 0), cases[i].r0);
        if (cases[i].p1) {
            CHECK_STR(tpath(t, 1), cases[i].p1);
            CHECK_INT(treplicas(t, 1), cases[i].r1);
        }
        gpa_workload_templates_free(t);
    }
}

static void test_pod_built(void)
{
    gpa_workload_templates *t = read_ok(
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\","
        "\"namespace\":\"team-a\"},\"spec\":{\"template\":{\"metadata\":{\"namespace\":\"x\","
        "\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}",
        NULL);
    const gpa_workload_template *x = gpa_workload_templates_get(t, 0);
    CHECK(x != NULL);
    if (x) {
        char *s = cJSON_PrintUnformatted(x->pod);
        CHECK_STR(s, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":"
                     "\"team-a\",\"labels\":{\"app\":\"web\"},\"generateName\":\"web-\"},"
                     "\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
        free(s);
    }
    gpa_workload_templates_free(t);
    /* the caller's namespace wins over the object's */
    t = read_ok("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
                "\"namespace\":\"a\"},\"spec\":{\"template\":{}}}",
                "b");
    x = gpa_workload_templates_get(t, 0);
    CHECK(x != NULL);
    if (x) {
        char *s = cJSON_PrintUnformatted(x->pod);
        CHECK_STR(s, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"b\"},"
                     "\"spec\":{}}");
        free(s);
    }
    gpa_workload_templates_free(t);
}

static void test_not_workloads(void)
{
    const char *none[] = {
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"template\":{}}}",
        /* same kind name, another group */
        "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Deployment\",\"spec\":{\"template\":{}}}",
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}",
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"template\":null}}",
        "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"spec\":{\"workerGroupSpecs\":[]}}",
        "{\"kind\":\"Deployment\"}",
        "[]",
    };
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        gpa_workload_templates *t = read_ok(none[i], NULL);
        CHECK(t != NULL);
        CHECK_INT(gpa_workload_templates_count(t), 0);
        gpa_workload_templates_free(t);
    }
    CHECK_INT(gpa_workload_kind_known(NULL, "apps/v1", "Deployment"), 1);
    CHECK_INT(gpa_workload_kind_known(NULL, "batch/v1beta1", "CronJob"), 1);
    CHECK_INT(gpa_workload_kind_known(NULL, "v1", "PodTemplate"), 1);
    CHECK_INT(gpa_workload_kind_known(NULL, "v1", "Pod"), 0);
    CHECK_INT(gpa_workload_kind_known(NULL, "apps/v1", "Pod"), 0);
    CHECK_INT(gpa_workload_kind_known(NULL, "kubeflow.org/v1", "PyTorchJob"), 1);
    CHECK_INT(gpa_workload_kind_known(NULL, "kubeflow.org/v1", "XGBoostJob"), 0);
}

static void test_bad_shapes(void)
{
    read_err("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"template\":\"x\"}}",
             "spec.template: expected an object (a pod template), got string");
    read_err("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":[1]}",
             "spec: expected an object, got list");
    read_err("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"spec\":{\"template\":{"
             "\"spec\":[]}}}",
             "spec.template.spec: expected an object, got list");
    read_err("{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"spec\":{"
             "\"pytorchReplicaSpecs\":\"all\"}}",
             "spec.pytorchReplicaSpecs: expected a list or an object, got string");
    /* lists of lists: the element of workerGroupSpecs is a list, not a group */
    read_err("{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"spec\":{"
             "\"workerGroupSpecs\":[[{\"template\":{}}]]}}",
             "spec.workerGroupSpecs[0]: expected an object, got list");
    /* 10,000 replica specs: refused by count, naming the path, after at most the cap */
    size_t n = 10000;
    size_t cap = 200 + n * 40;
    char *big = malloc(cap);
    size_t at = (size_t)snprintf(big, cap,
                                 "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
                                 "\"spec\":{\"pytorchReplicaSpecs\":{");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(big + at, cap - at, "%s\"W%zu\":{\"template\":{}}", i ? "," : "", i);
    snprintf(big + at, cap - at, "}}}");
    read_err(big, "spec.pytorchReplicaSpecs.W256.template: more than 256 pod templates");
    free(big);
    /* absurd replica counts are capped, never negative */
    gpa_workload_templates *t =
        read_ok("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\",\"spec\":{"
                "\"replicatedJobs\":[{\"replicas\":1e300,\"template\":{\"spec\":{"
                "\"parallelism\":1e300,\"template\":{}}}},{\"replicas\":-5,\"template\":{"
                "\"spec\":{\"template\":{}}}}]}}",
                NULL);
    CHECK_INT(treplicas(t, 0), GPA_WORKLOAD_MAX_REPLICAS);
    CHECK_INT(treplicas(t, 1), 0);
    gpa_workload_templates_free(t);
}

int main(void)
{
    test_builtin_kinds();
    test_pod_built();
    test_not_workloads();
    test_bad_shapes();
    return check_done();
}
