/*
 * test_gang.c - topology levels (POLICY.md "Topology levels"): the loader's file:line:col
 * errors for islandGpus and levels, the narrowest domain chosen for each gang size, the
 * gang-size grammar, and that a pool without the new fields keeps its revision.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/workload.h"
#include "engine/gang_size.h"
#include "policy/policy_gang.h"
#include "policy/policy_model.h"
#include "policy/workload_internal.h"

/* lines 1-9; the topology block's own fields follow from line 10 */
#define HDR                                                                                        \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"                              \
    "  pools:\n"                                                                                   \
    "    - name: hgx\n"                                                                            \
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"                        \
    "      sharing: exclusive\n"                                                                   \
    "      topology:\n"                                                                            \
    "        islandLabel: nvidia.com/gpu.clique\n"

static int load(gpa_policy **p, const char *body, gpa_error *e)
{
    size_t n = strlen(HDR) + strlen(body) + 1;
    char *yaml = malloc(n);
    snprintf(yaml, n, "%s%s", HDR, body);
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    *p = NULL;
    memset(e, 0, sizeof *e);
    int rc = gpa_policy_load_sources(p, &s, 1, e);
    free(yaml);
    return rc;
}

/* exactly one error, at p.yaml:<pos> and containing text */
static void err1(int tline, const char *body, const char *pos, const char *text)
{
    gpa_policy *p;
    gpa_error e;
    int rc = load(&p, body, &e);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "p.yaml:%s: ", pos);
    check_total++;
    if (rc != GPA_EPOLICY || p || strncmp(e.message, prefix, strlen(prefix)) != 0 ||
        !strstr(e.message, text) || strchr(e.message, '\n')) {
        check_failed++;
        fprintf(stderr, "%s:%d: want one error \"%s...%s\", got rc %d:\n%s\n", __FILE__, tline,
                prefix, text, rc, e.message);
    }
    gpa_policy_unref(p);
}
#define ERR1(body, pos, text) err1(__LINE__, body, pos, text)

static gpa_policy *ok(const char *body)
{
    gpa_policy *p;
    gpa_error e;
    int rc = load(&p, body, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n", e.message);
    return p;
}

#define LEVELS                                                                                     \
    "        islandGpus: 8\n"                                                                      \
    "        levels:\n"                                                                            \
    "          - {label: example.com/rack, gpus: 32}\n"                                            \
    "          - {label: example.com/block, gpus: 256}\n"

static void test_errors(void)
{
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: 32}\n"
         "          - {label: example.com/block, gpus: 32}\n",
         "13:46", "holds 32 GPUs, not more than the level before it (32)");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: 64}\n"
         "          - {label: example.com/block, gpus: 32}\n",
         "13:46", "strictly wider");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: 0}\n",
         "12:45", "topology level gpus: must be at least 1 (got 0)");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: -4}\n",
         "12:45", "topology level gpus: must be at least 1 (got -4)");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: 32}\n"
         "          - {label: example.com/rack, gpus: 64}\n",
         "13:21", "topology level label example.com/rack is repeated");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: nvidia.com/gpu.clique, gpus: 32}\n",
         "12:21", "is repeated");
    ERR1("        islandGpus: 72\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: 32}\n",
         "12:45", "not more than topology.islandGpus (72)");
    ERR1("        islandGpus: 0\n", "10:21", "topology.islandGpus: must be at least 1");
    ERR1("        islandGpus: eight\n", "10:21", "topology.islandGpus: expected an integer");
    ERR1("        levels:\n"
         "          - {label: example.com/rack, gpus: 32}\n",
         "11:11", "topology.levels needs topology.islandGpus");
    ERR1("        islandGpus: 8\n"
         "        levels: []\n",
         "11:17", "at least one level");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {gpus: 32}\n",
         "12:13", "topology level needs label");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack}\n",
         "12:13", "topology level needs gpus");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: \"not a label!\", gpus: 32}\n",
         "12:21", "is not a valid label key");
    ERR1("        islandGpus: 8\n"
         "        levels:\n"
         "          - {label: example.com/rack, gpus: 32, size: 4}\n",
         "12:49", "unknown key \"size\"");
    ERR1("        islandGpus: 8\n"
         "        levels: {label: example.com/rack, gpus: 32}\n",
         "11:17", "topology.levels");
}

static void test_domain(void)
{
    gpa_policy *p = ok(LEVELS);
    if (!p) return;
    const gpa_topology *t = &p->pools[0].topology;
    CHECK(gpa_gang_levels(t));
    CHECK_INT((int)t->n_levels, 2);
    int64_t g = 0;
    CHECK_STR(gpa_gang_domain(t, 1, &g), "nvidia.com/gpu.clique");
    CHECK_INT((int)g, 8);
    CHECK_STR(gpa_gang_domain(t, 8, &g), "nvidia.com/gpu.clique");
    CHECK_STR(gpa_gang_domain(t, 9, &g), "example.com/rack");
    CHECK_INT((int)g, 32);
    CHECK_STR(gpa_gang_domain(t, 32, &g), "example.com/rack");
    CHECK_STR(gpa_gang_domain(t, 33, &g), "example.com/block");
    CHECK_INT((int)g, 256);
    CHECK_STR(gpa_gang_domain(t, 256, &g), "example.com/block");
    CHECK(gpa_gang_domain(t, 257, &g) == NULL);
    CHECK_INT((int)g, 256);
    /* unknown size: the widest */
    CHECK_STR(gpa_gang_domain(t, 0, &g), "example.com/block");
    gpa_policy_unref(p);

    /* islandGpus alone: the island is the only (and widest) domain */
    p = ok("        islandGpus: 72\n");
    if (!p) return;
    t = &p->pools[0].topology;
    CHECK_STR(gpa_gang_domain(t, 0, &g), "nvidia.com/gpu.clique");
    CHECK_INT((int)g, 72);
    CHECK_STR(gpa_gang_domain(t, 72, &g), "nvidia.com/gpu.clique");
    CHECK(gpa_gang_domain(t, 73, &g) == NULL);
    gpa_policy_unref(p);

    /* without the fields: no levels */
    p = ok("        gpusPerNode: 8\n");
    if (p) CHECK(!gpa_gang_levels(&p->pools[0].topology));
    gpa_policy_unref(p);
}

static void test_parse(void)
{
    int64_t v = 0;
    CHECK(gpa_gang_parse("3", &v) && v == 3);
    CHECK(gpa_gang_parse("100000", &v) && v == 100000);
    CHECK(!gpa_gang_parse("100001", &v));
    const char *bad[] = {
        "",  "0", "-2", "+2", "abc", "1e9", "3 ", " 3", "2.0", "0x10", "99999999999999999999999",
        NULL};
    for (const char **b = bad; *b; b++) {
        check_total++;
        if (gpa_gang_parse(*b, &v)) {
            check_failed++;
            fprintf(stderr, "%s:%d: \"%s\" parsed as a gang size\n", __FILE__, __LINE__, *b);
        }
    }
    CHECK(!gpa_gang_parse(NULL, &v));
}

static void test_revision(void)
{
    /* a pool without the new fields keeps the revision it had before them (the hash below
     * was taken from the tree before topology levels existed); the fields change it */
    gpa_policy *a = ok("        gpusPerNode: 8\n");
    gpa_policy *b = ok("        gpusPerNode: 8\n" LEVELS);
    gpa_policy *c = ok("        gpusPerNode: 8\n"
                       "        islandGpus: 8\n"
                       "        levels:\n"
                       "          - {label: example.com/rack, gpus: 64}\n"
                       "          - {label: example.com/block, gpus: 256}\n");
    if (a && b && c) {
        CHECK_STR(gpa_policy_revision(a),
                  "d8a8da947dbb1adf92bec27b37cafde3332a155a341985d3abfce41ee0efa91e");
        CHECK(strcmp(gpa_policy_revision(a), gpa_policy_revision(b)) != 0);
        CHECK(strcmp(gpa_policy_revision(b), gpa_policy_revision(c)) != 0);
    }
    gpa_policy_unref(a);
    gpa_policy_unref(b);
    gpa_policy_unref(c);
}

/* check's HGX-trap warning: only for a written gang path (groupLabels) with required
 * affinity on node-sized pods and no islandGpus */
static void lint(const char *body, bool want)
{
    gpa_policy *p = ok(body);
    char *w = p ? gpa_policy_warnings(p) : NULL;
    bool got = w && strstr(w, "p.yaml:5:7: warning: pool hgx gives grouped pods (groupLabels) "
                              "required pod affinity to one nvidia.com/gpu.clique, but declares "
                              "no islandGpus");
    check_total++;
    if (got != want) {
        check_failed++;
        fprintf(stderr, "%s:%d: warning %s for:\n%s\ngot: %s\n", __FILE__, __LINE__,
                want ? "missing" : "unexpected", body, w ? w : "(none)");
    }
    free(w);
    gpa_policy_unref(p);
}

static void test_lint(void)
{
    lint("        gpusPerNode: 8\n        groupLabels: [training.kubeflow.org/job-name]\n", true);
    lint("        gpusPerNode: 8\n        groupLabels: [training.kubeflow.org/job-name]\n"
         "        islandGpus: 8\n",
         false);
    lint("        gpusPerNode: 8\n        groupLabels: [training.kubeflow.org/job-name]\n" LEVELS,
         false);
    lint("        gpusPerNode: 8\n        groupLabels: [training.kubeflow.org/job-name]\n"
         "        mode: preferred\n",
         false);
    lint("        gpusPerNode: 8\n", false);
    lint("        groupLabels: [training.kubeflow.org/job-name]\n", false);
}

static const char *label_of(const cJSON *pod, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "labels"),
        key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *ann_of(const cJSON *pod, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pod, "metadata"),
                                         "annotations"),
        key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *env_of(const cJSON *pod, const char *name)
{
    const cJSON *c =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(pod, "spec"), "containers"),
                           0);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, "env")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return cJSON_GetObjectItemCaseSensitive(e, "value")->valuestring;
    }
    return NULL;
}

#define CTR                                                                                        \
    "{\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/"    \
    "gpu\":8}}}]}"

/* the pods the operators create from a template carry what gives the gang (workload_gang.c),
 * so mutate --explain and simulate show the affinity the real pods get */
static void test_operator_pods(void)
{
    gpa_policy *p = ok("        gpusPerNode: 8\n"
                       "        groupLabels: [training.kubeflow.org/job-name]\n" LEVELS "  rules:\n"
                       "    - {name: t, match: {gpus: {min: 1}}, place: {pool: hgx}}\n");
    if (!p) return;
    const char *pj = "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
                     "\"metadata\":{\"name\":\"llama\"},\"spec\":{\"pytorchReplicaSpecs\":{"
                     "\"Master\":{\"replicas\":1,\"template\":{\"spec\":" CTR "}},"
                     "\"Worker\":{\"replicas\":2,\"template\":{\"spec\":" CTR "}}}}}";
    cJSON *obj = cJSON_Parse(pj);
    gpa_workload_templates *t = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_workload_templates_read(&t, p, obj, "train-a", &e), GPA_OK);
    CHECK_INT((int)gpa_workload_templates_count(t), 2);
    const gpa_workload_template *w = gpa_workload_templates_get(t, 1);
    if (w) {
        CHECK_STR(label_of(w->pod, "training.kubeflow.org/job-name"), "llama");
        CHECK_STR(label_of(w->pod, "training.kubeflow.org/replica-type"), "worker");
        CHECK_STR(env_of(w->pod, "PET_NNODES"), "3");
        /* and the engine puts that pod's gang (3 x 8 GPUs) on the rack */
        gpa_request rq = {.namespace_ = "train-a", .op = GPA_OP_CREATE, .object = w->pod};
        gpa_decision d = {0};
        CHECK_INT(gpa_engine_mutate(&d, p, &rq, &e), GPA_OK);
        char *patch = d.patch ? cJSON_PrintUnformatted(d.patch) : NULL;
        CHECK_CONTAINS(patch, "\"topologyKey\":\"example.com/rack\"");
        free(patch);
        gpa_decision_clear(&d);
    }
    gpa_workload_templates_free(t);
    cJSON_Delete(obj);

    /* elastic: PET_NNODES is a range, so none is made up */
    char *el = malloc(strlen(pj) + 64);
    snprintf(el, strlen(pj) + 64, "%.*s,\"elasticPolicy\":{\"minReplicas\":1}}}",
             (int)(strlen(pj) - 2), pj);
    obj = cJSON_Parse(el);
    CHECK(obj != NULL);
    CHECK_INT(gpa_workload_templates_read(&t, p, obj, "train-a", &e), GPA_OK);
    w = gpa_workload_templates_get(t, 1);
    CHECK(w && env_of(w->pod, "PET_NNODES") == NULL);
    gpa_workload_templates_free(t);
    cJSON_Delete(obj);
    free(el);

    /* TFJob: the cluster in TF_CONFIG, as genClusterSpec writes it; the engine counts it */
    obj = cJSON_Parse("{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"TFJob\","
                      "\"metadata\":{\"name\":\"tf\"},\"spec\":{\"tfReplicaSpecs\":{"
                      "\"Chief\":{\"replicas\":1,\"template\":{\"spec\":" CTR "}},"
                      "\"Evaluator\":{\"replicas\":1,\"template\":{\"spec\":" CTR "}},"
                      "\"Worker\":{\"replicas\":2,\"template\":{\"spec\":" CTR "}}}}}");
    CHECK_INT(gpa_workload_templates_read(&t, p, obj, "train-a", &e), GPA_OK);
    w = gpa_workload_templates_get(t, 2);
    if (w) {
        CHECK_STR(env_of(w->pod, "TF_CONFIG"),
                  "{\"cluster\":{\"chief\":[\"tf-chief-0.train-a.svc:2222\"],\"worker\":[\"tf-"
                  "worker-0.train-a.svc:2222\",\"tf-worker-1.train-a.svc:2222\"]},\"task\":{"
                  "\"type\":\"worker\",\"index\":0},\"environment\":\"cloud\"}");
        gpa_request rq = {.namespace_ = "train-a", .op = GPA_OP_CREATE, .object = w->pod};
        gpa_decision d = {0};
        CHECK_INT(gpa_engine_mutate(&d, p, &rq, &e), GPA_OK);
        /* 3 x 8 GPUs (the evaluator is not in the cluster): the rack */
        bool rack = false;
        for (size_t i = 0; i < d.n_warnings; i++)
            rack =
                rack || strcmp(d.warnings[i], "gang of 24 GPUs: pod affinity on example.com/rack "
                                              "(32 GPUs)") == 0;
        CHECK(rack);
        gpa_decision_clear(&d);
    }
    gpa_workload_templates_free(t);
    cJSON_Delete(obj);

    /* LeaderWorkerSet: the group size on every pod */
    obj = cJSON_Parse(
        "{\"apiVersion\":\"leaderworkerset.x-k8s.io/v1\",\"kind\":\"LeaderWorkerSet\","
        "\"metadata\":{\"name\":\"lws\"},\"spec\":{\"replicas\":3,"
        "\"leaderWorkerTemplate\":{\"size\":4,\"workerTemplate\":{\"spec\":" CTR "}}}}");
    CHECK_INT(gpa_workload_templates_read(&t, p, obj, "train-a", &e), GPA_OK);
    w = gpa_workload_templates_get(t, 0);
    if (w) {
        CHECK_STR(ann_of(w->pod, "leaderworkerset.sigs.k8s.io/size"), "4");
        CHECK_STR(label_of(w->pod, "leaderworkerset.sigs.k8s.io/name"), "lws");
        CHECK_STR(env_of(w->pod, "LWS_GROUP_SIZE"), "4");
    }
    gpa_workload_templates_free(t);
    cJSON_Delete(obj);

    /* JobSet: the names and counts as labels and annotations */
    obj = cJSON_Parse("{\"apiVersion\":\"jobset.x-k8s.io/v1alpha2\",\"kind\":\"JobSet\","
                      "\"metadata\":{\"name\":\"js\"},\"spec\":{\"replicatedJobs\":[{\"name\":"
                      "\"workers\",\"replicas\":2,\"template\":{\"spec\":{\"parallelism\":3,"
                      "\"template\":{\"spec\":" CTR "}}}}]}}");
    CHECK_INT(gpa_workload_templates_read(&t, p, obj, "train-a", &e), GPA_OK);
    w = gpa_workload_templates_get(t, 0);
    if (w) {
        CHECK_STR(label_of(w->pod, "jobset.sigs.k8s.io/jobset-name"), "js");
        CHECK_STR(label_of(w->pod, "jobset.sigs.k8s.io/replicatedjob-name"), "workers");
        CHECK_STR(ann_of(w->pod, "jobset.sigs.k8s.io/replicatedjob-replicas"), "2");
        CHECK_INT((int)w->replicas, 6);
    }
    gpa_workload_templates_free(t);
    cJSON_Delete(obj);
    gpa_policy_unref(p);
}

/* the one gang sum (POLICY.md "Topology levels", amended December 2026): GPU pods only */
static void test_sum(void)
{
    gpa_gang_sum s = {0};
    gpa_gang_sum_add(&s, 1, 0); /* a CPU-only PyTorchJob Master */
    CHECK(s.pods == 0 && s.gpus == 0 && !s.overflow);
    gpa_gang_sum_add(&s, 18, 4); /* 18 four-GPU Workers */
    CHECK(s.pods == 18 && s.gpus == 72 && !s.overflow);
    gpa_gang_sum_add(&s, 1, -3); /* nonsense GPUs add nothing */
    gpa_gang_sum_add(&s, -2, 4); /* nor nonsense pods */
    gpa_gang_sum_add(&s, 0, 4);
    CHECK(s.pods == 18 && s.gpus == 72 && !s.overflow);
    gpa_gang_sum_add(&s, 2, 8); /* parts of other sizes are summed */
    CHECK(s.pods == 20 && s.gpus == 88 && !s.overflow);
    gpa_gang_sum_add(&s, INT64_MAX / 2, 4);
    CHECK(s.overflow && s.gpus == INT64_MAX);
    gpa_gang_sum o = {.gpus = INT64_MAX - 1};
    gpa_gang_sum_add(&o, 1, 2); /* the sum itself overflowing */
    CHECK(o.overflow);
    CHECK_STR(gpa_gang_src_name(GPA_GANG_SRC_OURS), "annotation gpu-admission.io/gang-size");
    CHECK_STR(gpa_gang_src_name(GPA_GANG_SRC_PET_NNODES), "env PET_NNODES");
    CHECK_STR(gpa_gang_src_name(GPA_GANG_SRC_NONE), "");
}

static gpa_gang_src op_size(const char *group, const char *kind, const char *json, int64_t *n)
{
    gpa_wl_kind k;
    *n = -1;
    if (!gpa_wl_find(&k, NULL, group, strlen(group), kind)) return (gpa_gang_src)-1;
    cJSON *o = cJSON_Parse(json);
    gpa_gang_src src = gpa_wl_operator_gang_size(&k, o, n);
    cJSON_Delete(o);
    return src;
}

/* what each operator writes on its pods that the pod path reads (docs/policy.md, Gang size) */
static void test_operator_size(void)
{
    int64_t n;
    /* PyTorchJob: PET_NNODES counts every replica, the CPU-only Master too */
    CHECK_INT(op_size("kubeflow.org", "PyTorchJob",
                      "{\"spec\":{\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1},"
                      "\"Worker\":{\"replicas\":18}}}}",
                      &n),
              GPA_GANG_SRC_PET_NNODES);
    CHECK_INT((int)n, 19);
    /* elastic: a range, no size */
    CHECK_INT(op_size("kubeflow.org", "PyTorchJob",
                      "{\"spec\":{\"elasticPolicy\":{},\"pytorchReplicaSpecs\":{\"Worker\":{"
                      "\"replicas\":4}}}}",
                      &n),
              GPA_GANG_SRC_NONE);
    CHECK_INT((int)n, 0);
    /* TFJob: TF_CONFIG's cluster, the evaluator left out */
    CHECK_INT(op_size("kubeflow.org", "TFJob",
                      "{\"spec\":{\"tfReplicaSpecs\":{\"PS\":{\"replicas\":2},\"Worker\":{"
                      "\"replicas\":4},\"Evaluator\":{\"replicas\":1}}}}",
                      &n),
              GPA_GANG_SRC_TF_CONFIG);
    CHECK_INT((int)n, 6);
    /* MPIJob and JobSet pods carry no size */
    CHECK_INT(op_size("kubeflow.org", "MPIJob",
                      "{\"spec\":{\"mpiReplicaSpecs\":{\"Launcher\":{\"replicas\":1},"
                      "\"Worker\":{\"replicas\":2}}}}",
                      &n),
              GPA_GANG_SRC_NONE);
    CHECK_INT(op_size("jobset.x-k8s.io", "JobSet",
                      "{\"spec\":{\"replicatedJobs\":[{\"replicas\":9,\"template\":{"
                      "\"spec\":{\"parallelism\":4}}}]}}",
                      &n),
              GPA_GANG_SRC_NONE);
    /* LWS: the group's size, the leader included */
    CHECK_INT(op_size("leaderworkerset.x-k8s.io", "LeaderWorkerSet",
                      "{\"spec\":{\"leaderWorkerTemplate\":{\"size\":4}}}", &n),
              GPA_GANG_SRC_LWS);
    CHECK_INT((int)n, 4);
    /* past what the pod path reads: none */
    CHECK_INT(op_size("kubeflow.org", "PyTorchJob",
                      "{\"spec\":{\"pytorchReplicaSpecs\":{\"Worker\":{\"replicas\":200000}"
                      "}}}",
                      &n),
              GPA_GANG_SRC_NONE);
}

/* the engine's one reader, on a pod and on a template its operator will label */
static void test_read_pod(void)
{
    cJSON *pod =
        cJSON_Parse("{\"metadata\":{\"annotations\":{\"gpu-admission.io/gang-size\":\"18\"}},"
                    "\"spec\":{\"containers\":[{\"name\":\"m\",\"env\":[{\"name\":\"PET_NNODES\","
                    "\"value\":\"19\"}]}]}}");
    gpa_pod v;
    gpa_gang_read r;
    gpa_pod_init(&v, pod);
    CHECK_INT(gpa_gang_read_pod(&r, &v, false), GPA_OK);
    CHECK(r.src == GPA_GANG_SRC_OURS && r.size == 18 && !r.bad);
    /* without the annotation and without an operator's label the env is not read */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(pod, "metadata"), "annotations");
    gpa_pod_init(&v, pod);
    CHECK_INT(gpa_gang_read_pod(&r, &v, false), GPA_OK);
    CHECK(r.src == GPA_GANG_SRC_NONE && r.size == 0);
    /* a template whose operator adds the label: PET_NNODES (a Trainer v2 JobSet's) */
    CHECK_INT(gpa_gang_read_pod(&r, &v, true), GPA_OK);
    CHECK(r.src == GPA_GANG_SRC_PET_NNODES && r.size == 19);
    cJSON_Delete(pod);
    pod = cJSON_Parse("{\"metadata\":{\"annotations\":{\"gpu-admission.io/gang-size\":\"1e9\"}}}");
    gpa_pod_init(&v, pod);
    CHECK_INT(gpa_gang_read_pod(&r, &v, false), GPA_OK);
    CHECK(r.src == GPA_GANG_SRC_OURS && r.bad);
    cJSON_Delete(pod);
}

/* issue 30: a PyTorchJob with a CPU-only Master and 18 four-GPU Workers on NVL72 racks. The
 * pod its operator creates from the Worker template annotated as the apply-time answer says
 * gets the clique (72 GPUs); without the annotation PET_NNODES (19) gives 76 and the block. */
static void test_cpu_master(void)
{
    gpa_policy *p = ok("        gpusPerNode: 4\n"
                       "        groupLabels: [training.kubeflow.org/job-name]\n"
                       "        islandGpus: 72\n"
                       "        levels: [{label: example.com/block, gpus: 288}]\n"
                       "  rules:\n"
                       "    - {name: t, match: {gpus: {min: 1}}, place: {pool: hgx}}\n");
    if (!p) return;
#define CPU_MASTER_JOB(ANN)                                                                        \
    "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"metadata\":{"                   \
    "\"name\":\"llama\"},\"spec\":{\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1,"           \
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"m\",\"image\":\"x\"}]}}},"                \
    "\"Worker\":{\"replicas\":18,\"template\":{" ANN "\"spec\":{\"containers\":[{\"name\":"        \
    "\"m\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":4}}}]}}}}}}"
    const char *jobs[2] = {
        CPU_MASTER_JOB("\"metadata\":{\"annotations\":{\"gpu-admission.io/gang-size\":\"18\"}},"),
        CPU_MASTER_JOB("")};
    const char *want[2] = {"gang of 72 GPUs: pod affinity on nvidia.com/gpu.clique (72 GPUs)",
                           "gang of 76 GPUs: pod affinity on example.com/block (288 GPUs)"};
    for (int i = 0; i < 2; i++) {
        cJSON *obj = cJSON_Parse(jobs[i]);
        gpa_workload_templates *t = NULL;
        gpa_error e = {0};
        CHECK_INT(gpa_workload_templates_read(&t, p, obj, "train-a", &e), GPA_OK);
        const gpa_workload_template *w = gpa_workload_templates_get(t, 1);
        CHECK(w != NULL);
        if (w) {
            CHECK_STR(env_of(w->pod, "PET_NNODES"), "19");
            gpa_request rq = {.namespace_ = "train-a", .op = GPA_OP_CREATE, .object = w->pod};
            gpa_decision d = {0};
            CHECK_INT(gpa_engine_mutate(&d, p, &rq, &e), GPA_OK);
            bool found = false;
            for (size_t j = 0; j < d.n_warnings; j++)
                found = found || strcmp(d.warnings[j], want[i]) == 0;
            CHECK(found);
            gpa_decision_clear(&d);
        }
        gpa_workload_templates_free(t);
        cJSON_Delete(obj);
    }
    gpa_policy_unref(p);
}

int main(void)
{
    test_sum();
    test_operator_size();
    test_read_pod();
    test_cpu_master();
    test_operator_pods();
    test_lint();
    test_errors();
    test_domain();
    test_parse();
    test_revision();
    return check_done();
}
