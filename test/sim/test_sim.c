/*
 * test_sim.c - the capacity simulator: the known answers (pods through the real
 * engine, then packed), placement constraints (ANDed node affinity, taints, tenants on
 * time-sliced GPUs, NVLink gangs, fixed MIG layouts), node Lists read through GFD labels,
 * bad inventories and workloads refused with file:line:col, and the heuristic measured
 * against the exact solver on small random cases.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "sim.h"

static gpa_policy *policy;

/* Builds a run from inventory and workload YAML text; NULL (and err) on a refused input. */
static gpa_sim *run_full(gpa_sim_inventory **inv_out, const char *inv_yaml, const char *pods,
                         gpa_sim_method method, gpa_error *err)
{
    gpa_sim_inventory *inv = NULL;
    gpa_sim *s = NULL;
    *inv_out = NULL;
    if (gpa_sim_inventory_read(&inv, inv_yaml, strlen(inv_yaml), "inv.yaml", err) != GPA_OK)
        return NULL;
    if (gpa_sim_new(&s, inv, err) != GPA_OK) {
        gpa_sim_inventory_free(inv);
        return NULL;
    }
    gpa_objects *o = NULL;
    int rc = gpa_objects_read(&o, pods, strlen(pods), "pods.yaml", err);
    for (size_t i = 0; rc == GPA_OK && i < gpa_objects_count(o); i++) {
        char origin[64];
        snprintf(origin, sizeof origin, "pods.yaml:%d:1", gpa_objects_line(o, i));
        rc = gpa_sim_admit(s, policy, gpa_objects_get(o, i), origin, err);
    }
    gpa_objects_free(o);
    if (rc == GPA_OK) rc = gpa_sim_run(s, method, err);
    if (rc != GPA_OK) {
        gpa_sim_free(s);
        gpa_sim_inventory_free(inv);
        return NULL;
    }
    *inv_out = inv;
    return s;
}

typedef struct outcome {
    gpa_sim_totals t;
    char reasons[512]; /* "pod=reason;" for every unplaced pod */
    char nodes[1024];  /* "pod@node;" for every placed pod */
} outcome;

static bool simulate(outcome *out, const char *inv_yaml, const char *pods)
{
    gpa_error err = {0};
    gpa_sim_inventory *inv;
    memset(out, 0, sizeof *out);
    gpa_sim *s = run_full(&inv, inv_yaml, pods, GPA_SIM_BFD, &err);
    if (!s) {
        fprintf(stderr, "simulate failed: %s\n", err.message);
        return false;
    }
    gpa_sim_get_totals(&out->t, s);
    char nb[600];
    for (size_t i = 0; i < gpa_sim_pod_count(s); i++) {
        const char *name = gpa_sim_pod_name(s, i, nb, sizeof nb);
        size_t l = strlen(out->reasons), m = strlen(out->nodes);
        if (gpa_sim_pod_reason(s, i))
            snprintf(out->reasons + l, sizeof out->reasons - l, "%s=%s;", name,
                     gpa_sim_pod_reason(s, i));
        else
            snprintf(out->nodes + m, sizeof out->nodes - m, "%s@%s;", name, gpa_sim_pod_node(s, i));
    }
    /* every output renders */
    cJSON *j = gpa_sim_result_json(s);
    char *txt = gpa_sim_result_text(s), *html = gpa_sim_report_html(s);
    char *mig = gpa_sim_suggest_mig(s);
    CHECK(j && txt && html && mig);
    cJSON_Delete(j);
    free(txt);
    free(html);
    free(mig);
    gpa_sim_free(s);
    gpa_sim_inventory_free(inv);
    return true;
}

static const char *A100_ONE = "apiVersion: gpu-admission.io/v1alpha1\n"
                              "kind: GPUInventory\n"
                              "spec:\n"
                              "  nodeGroups:\n"
                              "    - name: a100\n"
                              "      count: 1\n"
                              "      gpus: 8\n"
                              "      gpu: A100-40GB\n"
                              "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                              "      mig: auto\n";

/* A Deployment of n pods in namespace ns with annotation gpu-memory mem (NULL: none). */
static void deployment(char *buf, size_t cap, const char *name, const char *ns, int n,
                       const char *mem)
{
    size_t l = strlen(buf);
    snprintf(buf + l, cap - l,
             "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: %s}\n"
             "spec:\n  replicas: %d\n  selector: {matchLabels: {app: %s}}\n  template:\n"
             "    metadata:\n      labels: {app: %s}\n%s%s%s"
             "    spec:\n      containers:\n        - name: main\n          image: x\n"
             "          resources: {limits: {nvidia.com/gpu: 1}}\n",
             name, ns, n, name, name,
             mem ? "      annotations: {gpu-admission.io/gpu-memory: " : "", mem ? mem : "",
             mem ? "}\n" : "");
}

static void known_answers(void)
{
    outcome o;
    char w[8192] = "";
    /* 14 pods of 4Gi on A100-40GB MIG auto: 1g.5gb each, 7 per GPU */
    deployment(w, sizeof w, "small", "inference", 14, "4Gi");
    CHECK(simulate(&o, A100_ONE, w));
    CHECK_INT(o.t.placed, 14);
    CHECK_INT(o.t.gpus_used, 2);
    CHECK_INT(o.t.whole_gpu_baseline, 14);
    CHECK_INT(o.t.mem_allocated, 14 * 5000000000LL);
    CHECK_INT(o.t.mem_requested, 14 * 4294967296LL);

    /* 3g.20gb (18Gi asks 19.3 GB) + 4 x 1g.5gb: 3g at slice 4, the four 1g at 0-3 */
    w[0] = '\0';
    deployment(w, sizeof w, "big", "inference", 1, "18Gi");
    deployment(w, sizeof w, "small", "inference", 4, "4Gi");
    CHECK(simulate(&o, A100_ONE, w));
    CHECK_INT(o.t.placed, 5);
    CHECK_INT(o.t.gpus_used, 1);
    CHECK_INT(o.t.whole_gpu_baseline, 5);

    /* 3g + 3g + 1g: the 1g cannot join two 3g (8 memory slices used) */
    w[0] = '\0';
    deployment(w, sizeof w, "big", "inference", 2, "18Gi");
    deployment(w, sizeof w, "small", "inference", 1, "4Gi");
    CHECK(simulate(&o, A100_ONE, w));
    CHECK_INT(o.t.placed, 3);
    CHECK_INT(o.t.gpus_used, 2);

    /* two 4g.20gb: one per GPU */
    w[0] = '\0';
    deployment(w, sizeof w, "huge", "big", 2, NULL);
    CHECK(simulate(&o, A100_ONE, w));
    CHECK_INT(o.t.placed, 2);
    CHECK_INT(o.t.gpus_used, 2);

    /* 4g + 3g share one GPU */
    w[0] = '\0';
    deployment(w, sizeof w, "huge", "big", 1, NULL);
    deployment(w, sizeof w, "big", "inference", 1, "18Gi");
    CHECK(simulate(&o, A100_ONE, w));
    CHECK_INT(o.t.gpus_used, 1);

    /* time-slicing, 4 replicas, one 4-GPU node: tenant a's 3 pods fill one card; tenant b
     * may not join the node (the engine's anti-affinity, topology hostname) */
    const char *ts = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                     "  nodeGroups:\n    - name: shared\n      count: 1\n      gpus: 4\n"
                     "      labels: {gpu-admission.io/pool: shared}\n"
                     "      taints: [{key: gpu-admission.io/shared, effect: NoSchedule}]\n"
                     "      timeSlicing: {replicas: 4}\n";
    w[0] = '\0';
    deployment(w, sizeof w, "nb", "team-a", 3, NULL);
    deployment(w, sizeof w, "nb", "team-b", 3, NULL);
    CHECK(simulate(&o, ts, w));
    CHECK_INT(o.t.placed, 3);
    CHECK_INT(o.t.unplaced, 3);
    CHECK_INT(o.t.gpus_used, 1);
    /* the baseline counts the 3 placed pods; team-b's 3 replicas are unplaced GPUs */
    CHECK_INT(o.t.whole_gpu_baseline, 3);
    CHECK_INT(o.t.unplaced_gpus, 3);
    CHECK_CONTAINS(o.reasons, "team-b/nb-0=tenant conflict;");
    CHECK_CONTAINS(o.reasons, "team-b/nb-2=tenant conflict;");
    CHECK(strstr(o.reasons, "team-a") == NULL);
    /* with two nodes, tenant b gets the second */
    char ts2[1024];
    snprintf(ts2, sizeof ts2, "%s", ts);
    char *c = strstr(ts2, "count: 1");
    c[7] = '2';
    CHECK(simulate(&o, ts2, w));
    CHECK_INT(o.t.placed, 6);
    CHECK_INT(o.t.gpus_used, 2);
    CHECK_CONTAINS(o.nodes, "team-a/nb-0@shared-0;");
    CHECK_CONTAINS(o.nodes, "team-b/nb-0@shared-1;");

    /* a denied pod is reported with the engine's message and not in the baseline */
    w[0] = '\0';
    deployment(w, sizeof w, "x", "denied", 2, NULL);
    deployment(w, sizeof w, "small", "inference", 1, "4Gi");
    gpa_error err;
    gpa_sim_inventory *inv;
    gpa_sim *s = run_full(&inv, A100_ONE, w, GPA_SIM_BFD, &err);
    CHECK(s != NULL);
    if (s) {
        cJSON *j = gpa_sim_result_json(s);
        const cJSON *den = cJSON_GetObjectItem(j, "denied");
        CHECK_INT(cJSON_GetArraySize(den), 1);
        CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(den, 0), "pod")->valuestring, "denied/x");
        CHECK_CONTAINS(cJSON_GetObjectItem(cJSON_GetArrayItem(den, 0), "message")->valuestring,
                       "namespace denied may not use GPUs");
        const cJSON *g = cJSON_GetObjectItem(j, "gpus");
        CHECK_INT(cJSON_GetObjectItem(g, "wholeGpuBaseline")->valueint, 1);
        CHECK_INT(cJSON_GetObjectItem(g, "used")->valueint, 1);
        CHECK_INT(cJSON_GetObjectItem(g, "total")->valueint, 8);
        CHECK(cJSON_IsArray(cJSON_GetObjectItem(j, "unplaced")));
        CHECK(cJSON_IsArray(cJSON_GetObjectItem(j, "nodes")));
        /* pods everywhere: the denied Deployment counts its 2 replicas, and its one entry
         * says so (issue 31) */
        CHECK_INT(cJSON_GetObjectItem(j, "pods")->valueint, 3);
        CHECK_INT(cJSON_GetObjectItem(cJSON_GetArrayItem(den, 0), "pods")->valueint, 2);
        CHECK(strstr(cJSON_GetObjectItem(cJSON_GetArrayItem(den, 0), "message")->valuestring,
                     "pods)") == NULL);
        cJSON_Delete(j);
        char *mig = gpa_sim_suggest_mig(s);
        CHECK_CONTAINS(mig, "a100-a100-0:\n    - devices: [0]\n      mig-enabled: true\n"
                            "      mig-devices:\n        \"1g.5gb\": 1\n");
        CHECK_CONTAINS(mig, "    - devices: [1]\n      mig-enabled: false\n");
        /* one 1g.5gb pod: any layout with a 1g.5gb holds it on one GPU; the fullest wins */
        CHECK_CONTAINS(mig, "  a100-uniform:  # group a100: its 1 placed instances on 1 GPUs, "
                            "every GPU the same layout\n    - devices: all\n"
                            "      mig-enabled: true\n      mig-devices:\n"
                            "        \"1g.5gb\": 7\n"
                            "  # a100: per-node layouts would take 1 GPUs for its 1 MIG pods, no "
                            "fewer than one layout on every GPU (1)\n  a100-a100-0:");
        free(mig);
        gpa_sim_free(s);
        gpa_sim_inventory_free(inv);
    }
}

/* Native sidecars' GPUs count as the scheduler counts them (issue 33 path 4): a pod of one
 * 2-GPU container and two 1-GPU sidecars needs 4 GPUs, so an 8-GPU node holds two such pods,
 * not four (the old rule, max(sum of containers, largest init container), said 2 per pod).
 * Its cpu follows the same rule: 1 + 2 sidecars of 500m = 2 cpus, so a 5-cpu node holds two. */
static void sidecars(void)
{
    outcome o;
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - name: h100\n      count: 1\n      gpus: 8\n"
                      "      gpu: H100-80GB\n      mig: none\n      cpu: 64\n"
                      "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                      "      nvlinkIslandSize: 8\n";
    char job[2048];
    snprintf(job, sizeof job,
             "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: training}\n"
             "spec:\n  parallelism: 4\n  template:\n    spec:\n      restartPolicy: Never\n"
             "      initContainers:\n"
             "        - {name: s1, image: x, restartPolicy: Always, resources: {limits: "
             "{nvidia.com/gpu: 1, cpu: 500m}}}\n"
             "        - {name: s2, image: x, restartPolicy: Always, resources: {limits: "
             "{nvidia.com/gpu: 1, cpu: 500m}}}\n"
             "      containers:\n"
             "        - {name: main, image: x, resources: {limits: "
             "{nvidia.com/gpu: 2, cpu: 1}}}\n");
    CHECK(simulate(&o, inv, job));
    CHECK_INT(o.t.placed, 2);
    CHECK_INT(o.t.unplaced, 2);
    CHECK_INT(o.t.gpus_used, 8);
    CHECK_INT(o.t.unplaced_gpus, 8);
    /* the same pods on a 16-GPU node of 5 cpus: the GPUs hold four, the cpu need (2 each,
     * sidecars included) two */
    const char *inv5 = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                       "  nodeGroups:\n    - name: h100\n      count: 1\n      gpus: 16\n"
                       "      gpu: H100-80GB\n      mig: none\n      cpu: 5\n"
                       "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                       "      nvlinkIslandSize: 16\n";
    CHECK(simulate(&o, inv5, job));
    CHECK_INT(o.t.placed, 2);
}

/* A whole GPU asked through DRA (deviceclass.resource.kubernetes.io/gpu.nvidia.com, issue 33
 * path 6) is placed by the engine like nvidia.com/gpu; the inventory's device-plugin nodes
 * pack it as the nvidia.com/gpu it stands for (an unknown extended resource would leave
 * every pod unplaced). */
static void dra_extended(void)
{
    outcome o;
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - name: h100\n      count: 1\n      gpus: 8\n"
                      "      gpu: H100-80GB\n      mig: none\n"
                      "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                      "      nvlinkIslandSize: 8\n";
    const char *job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: "
                      "training}\nspec:\n  parallelism: 3\n  template:\n    spec:\n"
                      "      restartPolicy: Never\n      containers:\n"
                      "        - {name: main, image: x, resources: {limits: "
                      "{deviceclass.resource.kubernetes.io/gpu.nvidia.com: 2, "
                      "nvidia.com/gpu: 2}}}\n";
    CHECK(simulate(&o, inv, job));
    CHECK_INT(o.t.placed, 2);
    CHECK_INT(o.t.unplaced, 1);
    CHECK_INT(o.t.gpus_used, 8);
    CHECK(strstr(o.reasons, "deviceclass") == NULL);
}

static void constraints(void)
{
    outcome o;
    /* NVLink gang: three 4-GPU pods of one group; islands of 8 (one node each) hold two */
    const char *h100 = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                       "  nodeGroups:\n    - name: h100\n      count: 2\n      gpus: 8\n"
                       "      gpu: H100-80GB\n      mig: none\n"
                       "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                       "      nvlinkIslandSize: ISL\n";
    const char *job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: "
                      "training}\nspec:\n  parallelism: 3\n  template:\n    metadata:\n"
                      "      labels: {gpu-admission.io/group: g1}\n    spec:\n"
                      "      restartPolicy: Never\n      containers:\n        - name: main\n"
                      "          image: x\n          resources: {limits: {nvidia.com/gpu: 4}}\n";
    char inv[1024];
    snprintf(inv, sizeof inv, "%s", h100);
    memcpy(strstr(inv, "ISL"), "8  ", 3);
    CHECK(simulate(&o, inv, job));
    CHECK_INT(o.t.placed, 2);
    CHECK_INT(o.t.unplaced, 1);
    CHECK_CONTAINS(o.reasons, "=island too small;");
    CHECK_INT(o.t.gpus_used, 8);
    CHECK_INT(o.t.whole_gpu_baseline, 8); /* the two placed pods; the third's 4 apart */
    CHECK_INT(o.t.unplaced_gpus, 4);
    /* an island of 16 GPUs spans both nodes: all three fit */
    snprintf(inv, sizeof inv, "%s", h100);
    memcpy(strstr(inv, "ISL"), "16 ", 3);
    CHECK(simulate(&o, inv, job));
    CHECK_INT(o.t.placed, 3);
    CHECK_INT(o.t.gpus_used, 12);

    /* ANDed node affinity: the pod's own term (zone b) AND the pool's selector; the zone-a
     * node, and a node without the product label, are never chosen */
    const char *zones =
        "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
        "    - {name: za, count: 1, gpus: 8, gpu: H100-80GB, mig: none, labels: {zone: a},\n"
        "       nvlinkIslandSize: 8,\n"
        "       taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n"
        "    - {name: zb, count: 1, gpus: 8, gpu: H100-80GB, mig: none, labels: {zone: b},\n"
        "       nvlinkIslandSize: 8,\n"
        "       taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n"
        "    - {name: zbx, count: 1, gpus: 8, gpuMemory: 80G, labels: {zone: b}}\n";
    const char *zpod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: training}\n"
                       "spec:\n  affinity:\n    nodeAffinity:\n"
                       "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                       "        nodeSelectorTerms:\n"
                       "          - matchExpressions: [{key: zone, operator: In, values: [b]}]\n"
                       "  containers:\n    - name: m\n      image: x\n"
                       "      resources: {limits: {nvidia.com/gpu: 2}}\n";
    CHECK(simulate(&o, zones, zpod));
    CHECK_STR(o.nodes, "training/p@zb-0;");
    /* without the toleration the engine adds, a tainted node is refused: a pod the policy
     * leaves alone (namespace in no rule) asking a whole GPU fits only the untainted node */
    const char *free_pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: other}\n"
                           "spec:\n  containers:\n    - name: m\n      image: x\n"
                           "      resources: {limits: {nvidia.com/gpu: 1}}\n";
    CHECK(simulate(&o, zones, free_pod));
    CHECK_STR(o.nodes, "other/q@zbx-0;");

    /* a fixed layout offers only its instances: all-3g.20gb takes no 1g pod */
    const char *fixed = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                        "  nodeGroups:\n    - name: a100\n      gpus: 2\n      gpu: A100-40GB\n"
                        "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                        "      mig: all-3g.20gb\n";
    char w[4096] = "";
    deployment(w, sizeof w, "small", "inference", 1, "4Gi");
    deployment(w, sizeof w, "big", "inference", 5, "18Gi");
    CHECK(simulate(&o, fixed, w));
    CHECK_INT(o.t.placed, 4);
    CHECK_CONTAINS(o.reasons, "inference/small=no node matches;");
    CHECK_CONTAINS(o.reasons, "inference/big-4=no room;");
    CHECK_INT(o.t.gpus_used, 2);
    /* {profile: count} layouts */
    const char *custom = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                         "  nodeGroups:\n    - name: a100\n      gpus: 1\n      gpu: A100-40GB\n"
                         "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                         "      mig: {3g.20gb: 1, 1g.5gb: 4}\n";
    w[0] = '\0';
    deployment(w, sizeof w, "small", "inference", 5, "4Gi");
    CHECK(simulate(&o, custom, w));
    CHECK_INT(o.t.placed, 4);
    CHECK_CONTAINS(o.reasons, "=no room;");
}

static void node_list(void)
{
    /* kubectl get nodes -o json, as GFD and the MIG manager label a mixed-strategy node */
    const char *nodes =
        "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n"
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-a\",\"labels\":{"
        "\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-40GB\",\"nvidia.com/gpu.count\":\"2\","
        "\"nvidia.com/mig.config\":\"all-1g.5gb\",\"kubernetes.io/hostname\":\"gpu-a\"}},"
        "\"spec\":{\"taints\":[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}]},"
        "\"status\":{\"allocatable\":{\"cpu\":\"8\",\"memory\":\"64Gi\",\"pods\":\"110\","
        "\"nvidia.com/gpu\":\"0\",\"nvidia.com/mig-1g.5gb\":\"14\"}}},\n"
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"cpu-only\"},"
        "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\"}}}\n]}";
    gpa_sim_inventory *inv = NULL;
    gpa_error err = {0};
    CHECK(gpa_sim_inventory_read(&inv, nodes, strlen(nodes), "nodes.json", &err) == GPA_OK);
    CHECK_INT(gpa_sim_inventory_nodes(inv), 2);
    CHECK_INT(gpa_sim_inventory_gpus(inv), 2);
    gpa_sim_inventory_free(inv);
    outcome o;
    char w[4096] = "";
    deployment(w, sizeof w, "small", "inference", 15, "4Gi");
    CHECK(simulate(&o, nodes, w));
    CHECK_INT(o.t.placed, 14);
    CHECK_INT(o.t.gpus_used, 2);
    CHECK_CONTAINS(o.reasons, "=no room;");
    /* cpu: each pod asks 3 cpu; the 8-cpu node holds two */
    const char *cpu = "apiVersion: v1\nkind: List\nitems:\n"
                      "- {apiVersion: v1, kind: Pod, metadata: {name: c1, namespace: x}, spec: "
                      "{containers: [{name: m, image: x, resources: {requests: {cpu: 3}}}]}}\n"
                      "- {apiVersion: v1, kind: Pod, metadata: {name: c2, namespace: x}, spec: "
                      "{containers: [{name: m, image: x, resources: {requests: {cpu: 3}}}]}}\n"
                      "- {apiVersion: v1, kind: Pod, metadata: {name: c3, namespace: x}, spec: "
                      "{containers: [{name: m, image: x, resources: {requests: {cpu: 3}}}]}}\n";
    CHECK(simulate(&o, nodes, cpu));
    CHECK_INT(o.t.placed, 1); /* gpu-a is tainted: only cpu-only (4 cpu) takes one */
    CHECK_CONTAINS(o.nodes, "x/c1@cpu-only;");
    CHECK_CONTAINS(o.reasons, "x/c2=no room;x/c3=no room;");
}

/* The inventory is refused with file:line:col; never a crash. */
static void bad_input(void)
{
    static const struct {
        const char *yaml, *want;
    } cases[] = {
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 8, gpu: A100-120GB}\n",
         "inv.yaml:5:31: unknown GPU model A100-120GB"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 8, gpu: A100-40GB, mig: {1g.10gb: 2, 5g.30gb: 1}}\n",
         "inv.yaml:5:60: A100-40GB has no MIG profile 5g.30gb"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 8, gpu: A100-40GB, mig: {3g.20gb: 2, 1g.5gb: 1}}\n",
         "inv.yaml:5:47: this MIG layout does not fit one A100-40GB"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 8, gpu: A100-40GB, mig: all-2g.20gb}\n",
         "inv.yaml:5:47: mig: \"all-2g.20gb\" is not auto, none"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, count: -3, gpus: 8}\n",
         "inv.yaml:5:24: count must be between 0 and 100000, got -3"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, count: 1000000000, gpus: 8}\n",
         "inv.yaml:5:24: count must be between 0 and 100000, got 1000000000"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, count: 2, gpus: -1}\n",
         "inv.yaml:5:33: gpus must be between 0 and 64, got -1"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 4, timeSlicing: {replicas: 1000000000}}\n",
         "inv.yaml:5:50: replicas must be between 1 and 1024, got 1000000000"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, count: 60000, gpus: 8}\n    - {name: b, count: 60000, gpus: 8}\n",
         "inv.yaml:5:5: 120000 nodes in all exceed the simulator's limit of 100000"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 8, colour: blue}\n",
         "inv.yaml:5:26: unknown node group field colour"},
        {"apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
         "    - {name: a, gpus: 8, mig: auto}\n",
         "inv.yaml:5:31: mig needs gpu: a model of the MIG catalog"},
        {"kind: Pod\n", "inv.yaml:1:7: expected kind GPUInventory"},
        {"a: [\n", "inv.yaml:2:1:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gpa_sim_inventory *inv = NULL;
        gpa_error err = {0};
        int rc =
            gpa_sim_inventory_read(&inv, cases[i].yaml, strlen(cases[i].yaml), "inv.yaml", &err);
        CHECK(rc != GPA_OK && inv == NULL);
        CHECK_CONTAINS(err.message, cases[i].want);
        gpa_sim_inventory_free(inv);
    }
    /* 10^9 replicas: refused before anything is queued, naming where */
    char w[2048] = "";
    deployment(w, sizeof w, "many", "inference", 1000000000, "4Gi");
    gpa_error err = {0};
    gpa_sim_inventory *inv;
    gpa_sim *s = run_full(&inv, A100_ONE, w, GPA_SIM_BFD, &err);
    CHECK(s == NULL);
    CHECK_CONTAINS(err.message, "pods.yaml:2:1: inference/many: 1000000000 pods would exceed");
}

/* ---- heuristic vs exact ---- */

static unsigned long long rng = 42;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng >> 33) % n);
}

static void quality(void)
{
    static const char *const profiles[] = {"1g.5gb",  "1g.10gb", "2g.10gb",
                                           "3g.20gb", "4g.20gb", "7g.40gb"};
    int cases = 0, equal = 0, worse = 0;
    long bfd_total = 0, exact_total = 0, bfd_unplaced = 0, exact_unplaced = 0;
    for (int c = 0; c < 200; c++) {
        const char *inv_yaml;
        char pods[8][700];
        int npods = 3 + (int)rnd(4);
        bool mig = rnd(3) != 0;
        if (mig)
            inv_yaml = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                       "  nodeGroups:\n    - {name: n, count: 2, gpus: 2, gpu: A100-40GB, mig: "
                       "auto}\n";
        else
            inv_yaml = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                       "  nodeGroups:\n    - {name: n, count: 2, gpus: 3, timeSlicing: "
                       "{replicas: 3, resource: nvidia.com/gpu.shared}}\n";
        for (int i = 0; i < npods; i++) {
            /* two draws in a fixed order (argument evaluation order is unspecified) */
            unsigned big = rnd(2), pick = rnd(6) % (big ? 6 : 4);
            if (mig)
                snprintf(pods[i], sizeof pods[i],
                         "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"t\"},\"spec\":{"
                         "\"containers\":[{\"name\":\"m\",\"resources\":{\"limits\":{"
                         "\"nvidia.com/mig-%s\":\"1\"}}}]}}",
                         i, profiles[pick]);
            else
                snprintf(pods[i], sizeof pods[i],
                         "{\"metadata\":{\"name\":\"p%d\",\"namespace\":\"t\",\"labels\":{"
                         "\"tenant\":\"t%u\"}},\"spec\":{\"affinity\":{\"podAntiAffinity\":{"
                         "\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
                         "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"tenant\","
                         "\"operator\":\"NotIn\",\"values\":[\"t%u\"]}]},\"topologyKey\":"
                         "\"kubernetes.io/hostname\"}]}},\"containers\":[{\"name\":\"m\","
                         "\"resources\":{\"limits\":{\"nvidia.com/gpu.shared\":\"1\"}}}]}}",
                         i, rnd(3), 0u);
        }
        /* the anti-affinity value must name the pod's own tenant */
        if (!mig)
            for (int i = 0; i < npods; i++) {
                char *t = strstr(pods[i], "\"tenant\":\"t");
                char own = t[11];
                char *v = strstr(pods[i], "\"values\":[\"t");
                v[12] = own;
            }
        gpa_sim_totals tot[2];
        for (int m = 0; m < 2; m++) {
            gpa_sim_inventory *inv = NULL;
            gpa_sim *s = NULL;
            gpa_error err = {0};
            CHECK(gpa_sim_inventory_read(&inv, inv_yaml, strlen(inv_yaml), "q", &err) == GPA_OK);
            CHECK(gpa_sim_new(&s, inv, &err) == GPA_OK);
            for (int i = 0; i < npods; i++) {
                cJSON *p = cJSON_Parse(pods[i]);
                CHECK(gpa_sim_add_pod(s, p, pods[i] + 21, 1, &err) == GPA_OK);
                cJSON_Delete(p);
            }
            CHECK(gpa_sim_run(s, m ? GPA_SIM_EXACT : GPA_SIM_BFD, &err) == GPA_OK);
            gpa_sim_get_totals(&tot[m], s);
            gpa_sim_free(s);
            gpa_sim_inventory_free(inv);
        }
        cases++;
        bfd_total += (long)tot[0].gpus_used;
        exact_total += (long)tot[1].gpus_used;
        bfd_unplaced += (long)tot[0].unplaced;
        exact_unplaced += (long)tot[1].unplaced;
        /* the exact answer is never beaten (else the exact solver is wrong) */
        CHECK(tot[1].placed > tot[0].placed ||
              (tot[1].placed == tot[0].placed && tot[1].gpus_used <= tot[0].gpus_used));
        if (tot[0].placed == tot[1].placed && tot[0].gpus_used == tot[1].gpus_used)
            equal++;
        else
            worse++;
    }
    printf("quality: %d cases, heuristic optimal in %d, worse in %d; GPUs %ld vs exact %ld; "
           "unplaced %ld vs exact %ld\n",
           cases, equal, worse, bfd_total, exact_total, bfd_unplaced, exact_unplaced);
    /* measured bound: the heuristic stays optimal in at least 90% of the cases and within
     * 10% of the exact GPU count overall */
    CHECK(equal * 10 >= cases * 9);
    CHECK(bfd_total * 10 <= exact_total * 11);
}

/* Mangled inventories and node Lists (bytes flipped, cut short): every one is read or refused
 * with a positioned message, and those read can be simulated; never a crash (ASan in CI). */
static void mangled(void)
{
    static const char base[] =
        "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
        "    - name: a100\n      count: 2\n      gpus: 8\n      gpu: A100-40GB\n"
        "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n      mig: {3g.20gb: 1, "
        "1g.5gb: 2}\n      nvlinkIslandSize: 4\n    - name: ts\n      gpus: 4\n"
        "      timeSlicing: {replicas: 4}\n      labels: {gpu-admission.io/pool: shared}\n";
    static const char nodes[] =
        "{\"kind\":\"List\",\"items\":[{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\","
        "\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-40GB\",\"nvidia.com/gpu.count\":"
        "\"2\",\"nvidia.com/gpu.replicas\":\"1\"}},\"spec\":{\"taints\":[{\"key\":\"k\","
        "\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"8\","
        "\"nvidia.com/mig-1g.5gb\":\"14\",\"pods\":\"110\"}}}]}";
    static const char junk[] = "-:{}[]#&*!|>'\"%@`,9 \n\t\\0";
    char w[2048] = "";
    deployment(w, sizeof w, "small", "inference", 3, "4Gi");
    int read_ok = 0, refused = 0;
    for (int i = 0; i < 1500; i++) {
        /* every other case a kubectl node List instead of a GPUInventory */
        const char *src = i % 2 ? nodes : base;
        char buf[sizeof base > sizeof nodes ? sizeof base : sizeof nodes];
        size_t len = strlen(src);
        memcpy(buf, src, len + 1);
        int edits = 1 + (int)rnd(3);
        for (int e = 0; e < edits && len > 0; e++) {
            size_t at = rnd((unsigned)len);
            if (rnd(4) == 0)
                len = at; /* cut short */
            else
                buf[at] = junk[rnd(sizeof junk - 1)];
        }
        gpa_sim_inventory *inv = NULL;
        gpa_error err = {0};
        if (gpa_sim_inventory_read(&inv, buf, len, "m.yaml", &err) != GPA_OK) {
            refused++;
            CHECK(inv == NULL);
            CHECK(strncmp(err.message, "m.yaml:", 7) == 0);
            continue;
        }
        read_ok++;
        gpa_sim *s = NULL;
        CHECK(gpa_sim_new(&s, inv, &err) == GPA_OK);
        gpa_objects *o = NULL;
        if (s && gpa_objects_read(&o, w, strlen(w), "p", &err) == GPA_OK) {
            for (size_t k = 0; k < gpa_objects_count(o); k++)
                CHECK(gpa_sim_admit(s, policy, gpa_objects_get(o, k), "p", &err) == GPA_OK);
            CHECK(gpa_sim_run(s, GPA_SIM_BFD, &err) == GPA_OK);
            gpa_sim_totals t;
            gpa_sim_get_totals(&t, s);
            CHECK(t.placed + t.unplaced == 3);
        }
        gpa_objects_free(o);
        gpa_sim_free(s);
        gpa_sim_inventory_free(inv);
    }
    printf("mangled inventories: %d read, %d refused\n", read_ok, refused);
    CHECK(read_ok > 0 && refused > 0);
}

int main(void)
{
    gpa_error err = {0};
    if (gpa_policy_load_dir(&policy, GPA_SIM_TEST_DIR "/policies", &err) != GPA_OK) {
        fprintf(stderr, "policy: %s\n", err.message);
        return 1;
    }
    known_answers();
    constraints();
    sidecars();
    dra_extended();
    node_list();
    bad_input();
    quality();
    mangled();
    gpa_policy_unref(policy);
    return check_done();
}
