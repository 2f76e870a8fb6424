/*
 * test_sim_figures.c - issue 22's honest figures, as known answers: the whole-GPU baseline
 * counts the placed pods only (the unplaced pods' GPUs on their own), the simulated
 * whole-GPU-only comparison counts pod by pod, the allocation ratio, and that text and JSON
 * print the same figures. Pods go through the real engine (test/sim/policies).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "sim.h"

static gpa_policy *policy;

typedef struct run {
    gpa_sim_inventory *inv;
    gpa_sim *s;
    gpa_sim_totals t;
    cJSON *j;
    char *text;
} run;

static bool simulate(run *r, const char *inv_yaml, const char *pods)
{
    gpa_error err = {0};
    memset(r, 0, sizeof *r);
    gpa_objects *o = NULL;
    int rc = gpa_sim_inventory_read(&r->inv, inv_yaml, strlen(inv_yaml), "inv.yaml", &err);
    if (rc == GPA_OK) rc = gpa_sim_new(&r->s, r->inv, &err);
    if (rc == GPA_OK) rc = gpa_objects_read(&o, pods, strlen(pods), "pods.yaml", &err);
    for (size_t i = 0; rc == GPA_OK && i < gpa_objects_count(o); i++)
        rc = gpa_sim_admit(r->s, policy, gpa_objects_get(o, i), "pods.yaml:1:1", &err);
    gpa_objects_free(o);
    if (rc == GPA_OK) rc = gpa_sim_run(r->s, GPA_SIM_BFD, &err);
    if (rc == GPA_OK) rc = gpa_sim_compare_whole(r->s, &err);
    if (rc != GPA_OK) {
        fprintf(stderr, "simulate failed: %s\n", err.message);
        return false;
    }
    gpa_sim_get_totals(&r->t, r->s);
    r->j = gpa_sim_result_json(r->s);
    r->text = gpa_sim_result_text(r->s);
    CHECK(r->j && r->text);
    return r->j && r->text;
}

static void done(run *r)
{
    cJSON_Delete(r->j);
    free(r->text);
    gpa_sim_free(r->s);
    gpa_sim_inventory_free(r->inv);
}

static double jnum(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

/* n pods named name-0.. in namespace ns, each asking `gpus` nvidia.com/gpu, gpu-memory mem
 * (NULL none) and cpu (NULL none). */
static void pods(char *buf, size_t cap, const char *name, const char *ns, int n, int gpus,
                 const char *mem, const char *cpu)
{
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l,
                 "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%d\n  namespace: %s\n"
                 "%s%s%s"
                 "spec:\n  containers:\n    - name: m\n      image: x\n      resources:\n"
                 "        limits: {nvidia.com/gpu: %d}\n%s%s%s",
                 name, i, ns, mem ? "  annotations: {gpu-admission.io/gpu-memory: " : "",
                 mem ? mem : "", mem ? "}\n" : "", gpus, cpu ? "        requests: {cpu: " : "",
                 cpu ? cpu : "", cpu ? "}\n" : "");
    }
}

/* The first known answer: 3 whole-GPU pods on a 2-GPU node. The old figures said
 * baseline 3 (1 saved) for a pod that never ran. */
static void three_on_two(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - {name: plain, gpus: 2}\n";
    char w[8192] = "";
    pods(w, sizeof w, "job", "other", 3, 1, NULL, NULL);
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 2);
    CHECK_INT(r.t.unplaced, 1);
    CHECK_INT(r.t.gpus_used, 2);
    CHECK_INT(r.t.whole_gpu_baseline, 2);
    CHECK_INT(r.t.unplaced_gpus, 1);
    CHECK_INT(jnum(r.j, "gpus", "saved"), 0);
    CHECK_INT(jnum(r.j, "gpus", "wholeGpuBaseline"), 2);
    CHECK_INT(jnum(r.j, "gpus", "unplacedGpus"), 1);
    CHECK(fabs(jnum(r.j, "gpus", "allocationRatio") - 1.0) < 1e-9); /* 2 of 2 cards held */
    /* whole pods gain nothing from a whole-GPU-only run: same 2 placed, none only-shared */
    CHECK_INT(r.t.whole_placed, 2);
    CHECK_INT(r.t.only_shared, 0);
    CHECK_CONTAINS(r.text, "GPUs: 2 used of 2; whole-GPU baseline 2; unplaced pods ask 1 GPU(s) "
                           "more\nGPU allocation ratio: 100.0% (2.00 of 2)\n");
    /* per pool, the same split: "(no pool)" holds the policy-free namespace's pods */
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.j, "pools"), 0);
    CHECK_INT(jnum(p, "wholeGpuBaseline", NULL), 2);
    CHECK_INT(jnum(p, "unplacedGpus", NULL), 1);
    CHECK_INT(jnum(p, "gpus", NULL), 2);
    done(&r);
}

/* The second: 8 pods of 4Gi on one A100-40GB with mig: auto. 7 x 1g.5gb fill the card; the
 * eighth does not fit. Whole cards would hold one of them. */
static void eight_small_on_one(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - name: a100\n      gpus: 1\n      gpu: A100-40GB\n"
                      "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                      "      mig: auto\n";
    char w[16384] = "";
    pods(w, sizeof w, "chat", "inference", 8, 1, "4Gi", NULL);
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 7);
    CHECK_INT(r.t.gpus_used, 1);
    CHECK_INT(r.t.whole_gpu_baseline, 7);
    CHECK_INT(jnum(r.j, "gpus", "saved"), 6);
    CHECK_INT(r.t.unplaced_gpus, 1);
    /* 7 instances of 1 memory slice out of 8 */
    CHECK(fabs(r.t.gpu_share - 0.875) < 1e-9);
    CHECK(fabs(jnum(r.j, "gpus", "allocationRatio") - 0.875) < 1e-9);
    /* simulated on whole GPUs: 1 pod of 8 fits, on 1 GPU; 6 of the 7 placed fit only by MIG */
    CHECK_INT(r.t.whole_placed, 1);
    CHECK_INT(r.t.whole_used, 1);
    CHECK_INT(r.t.only_shared, 6);
    CHECK_INT(r.t.only_whole, 0);
    CHECK_INT(jnum(r.j, "wholeGpuOnly", "placed"), 1);
    CHECK_INT(jnum(r.j, "wholeGpuOnly", "unplaced"), 7);
    CHECK_INT(jnum(r.j, "wholeGpuOnly", "placedOnlyWithSharing"), 6);
    CHECK_CONTAINS(r.text, "GPUs: 1 used of 1; whole-GPU baseline 7 (6 saved, 7.0x)");
    CHECK_CONTAINS(r.text, "whole GPUs only (simulated): 1 of 8 pods placed on 1 GPUs; 6 placed "
                           "only thanks to MIG/sharing, 0 only on whole GPUs");
    /* the group: 1 GPU used, 0.125 of it idle */
    const cJSON *g = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r.j, "groups"), 0);
    CHECK(fabs(jnum(g, "idleOnUsed", NULL) - 0.125) < 1e-9);
    CHECK_INT(jnum(g, "wholeGpuBaseline", NULL), 7);
    done(&r);
}

/* A fixed layout can refuse what whole cards take: all-3g.20gb offers no 1g.5gb, so a 4Gi pod
 * is unplaced under the policy but fits a whole card. Counted, not hidden by a max(0, ...). */
static void only_whole(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - name: a100\n      gpus: 2\n      gpu: A100-40GB\n"
                      "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                      "      mig: all-3g.20gb\n";
    char w[8192] = "";
    pods(w, sizeof w, "small", "inference", 1, 1, "4Gi", NULL);
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 0);
    CHECK_INT(r.t.whole_placed, 1);
    CHECK_INT(r.t.only_whole, 1);
    CHECK_INT(r.t.only_shared, 0);
    CHECK_INT(r.t.whole_gpu_baseline, 0);
    CHECK_INT(r.t.unplaced_gpus, 1);
    done(&r);
}

static const cJSON *unplaced_entry(const cJSON *j, const char *pod)
{
    const cJSON *u;
    cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(j, "unplaced")) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(u, "pod");
        if (cJSON_IsString(p) && strcmp(p->valuestring, pod) == 0) return u;
    }
    return NULL;
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(x) ? x->valuestring : "";
}

/* The summary by cause adds up to the unplaced pods and the GPUs they ask. */
static void check_summary_adds_up(const run *r)
{
    size_t pods = 0, gpus = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r->j, "unplacedByCause")) {
        pods += (size_t)jnum(c, "pods", NULL);
        gpus += (size_t)jnum(c, "gpus", NULL);
    }
    CHECK_INT(pods, r->t.unplaced);
    CHECK_INT(gpus, r->t.unplaced_gpus);
}

/* The case: a pod asking 8 GPUs and more cpu than any node of its model has. The
 * first node in the inventory (a T4 node) fails its nodeSelector; the H100 nodes, the only
 * ones it selects, fail on cpu: the cause is cpu, not "no node passes node affinity". */
static void short_of_cpu(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n"
                      "    - {name: t4, count: 3, gpus: 8, gpuMemory: 16G, cpu: 512}\n"
                      "    - {name: h100, count: 2, gpus: 8, gpu: H100-80GB, cpu: 96}\n";
    const char *w = "apiVersion: v1\nkind: Pod\nmetadata: {name: train, namespace: other}\n"
                    "spec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
                    "  containers:\n    - name: m\n      image: x\n      resources:\n"
                    "        requests: {cpu: 128}\n        limits: {nvidia.com/gpu: 8}\n"
                    /* a distinct pod of the same class: its explanation reuses the class's
                     * static counts, and must read the same */
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: train2, namespace: other, "
                    "labels: {x: y}}\n"
                    "spec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
                    "  containers:\n    - name: m\n      image: x\n      resources:\n"
                    "        requests: {cpu: 128}\n        limits: {nvidia.com/gpu: 8}\n"
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: fits, namespace: other}\n"
                    "spec:\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
                    "  containers:\n    - name: m\n      image: x\n      resources:\n"
                    "        requests: {cpu: 64}\n        limits: {nvidia.com/gpu: 1}\n";
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 1);
    const cJSON *u = unplaced_entry(r.j, "other/train");
    CHECK(u != NULL);
    CHECK_STR(jstr(u, "reason"), "no node matches");
    CHECK_STR(jstr(u, "cause"), "Insufficient cpu");
    CHECK_STR(jstr(u, "detail"), "0/5 nodes are available: 3 node(s) didn't match Pod's node "
                                 "affinity/selector, 2 Insufficient cpu");
    const cJSON *u2 = unplaced_entry(r.j, "other/train2");
    CHECK(u2 != NULL);
    CHECK_STR(jstr(u2, "detail"), jstr(u, "detail"));
    CHECK_STR(jstr(u2, "cause"), "Insufficient cpu");
    check_summary_adds_up(&r);
    CHECK_CONTAINS(r.text, "\nunplaced by cause:\n  Insufficient cpu");
    CHECK_CONTAINS(r.text, "  other/train: no node matches, Insufficient cpu (0/5 nodes");
    done(&r);
}

/* cpu left on the node, not allocatable: 3 pods of 40 cpu on 2 nodes of 64 cpu. The third
 * fits no GPU count problem: it is short of cpu where the others sit. */
static void cpu_left_and_summary(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - {name: plain, count: 2, gpus: 8, cpu: 64, pods: 5}\n";
    char w[32768] = "";
    pods(w, sizeof w, "big", "other", 3, 1, NULL, "40");
    pods(w, sizeof w, "many", "other", 12, 1, NULL, NULL); /* pods: 5 per node */
    pods(w, sizeof w, "huge", "other", 2, 9, NULL, NULL);  /* more GPUs than a node has */
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 10);
    const cJSON *u = unplaced_entry(r.j, "other/big-2");
    CHECK_STR(jstr(u, "cause"), "Insufficient cpu");
    CHECK_STR(jstr(u, "reason"), "no room");
    u = unplaced_entry(r.j, "other/huge-1");
    CHECK_STR(jstr(u, "cause"), "Insufficient nvidia.com/gpu");
    CHECK_CONTAINS(jstr(u, "detail"), "2 Insufficient nvidia.com/gpu (fewer than 9 on the node)");
    /* the 12 small pods: 10 slots, the 3 big pods take 2 of them: 8 placed, 4 too many */
    size_t too_many = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r.j, "unplacedByCause"))
        if (strcmp(jstr(c, "cause"), "Too many pods") == 0)
            too_many = (size_t)jnum(c, "pods", NULL);
    CHECK_INT(too_many, 4);
    check_summary_adds_up(&r);
    /* the text lists 20 by default: everything here, no "more" line */
    CHECK(strstr(r.text, "more (--all") == NULL);
    char *cut = gpa_sim_result_text_n(r.s, 2);
    CHECK_CONTAINS(cut, "  ... and 5 more (--all lists every one)\n");
    free(cut);
    done(&r);
}

/* The mixed suggestion: 40 pods of 10Gi (3g.20gb) and 2 of 4Gi (1g.5gb) on 6 nodes of
 * 8 A100-40GB. One layout on every GPU must hold both profiles, so at most one 3g.20gb per
 * GPU: 40 GPUs. Per node: 3 nodes all-3g.20gb (20 GPUs) + 1 node all-1g.5gb (1 GPU) = 21. */
static void mixed_suggestion(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - name: a100\n      count: 6\n      gpus: 8\n"
                      "      gpu: A100-40GB\n"
                      "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                      "      mig: auto\n";
    char w[65536] = "";
    pods(w, sizeof w, "llm", "inference", 40, 1, "10Gi", NULL);
    pods(w, sizeof w, "sandbox", "inference", 2, 1, "4Gi", NULL);
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 42);
    char *y = gpa_sim_suggest_mig(r.s);
    CHECK_CONTAINS(y, "  # a100: per-node layouts hold its 42 MIG pods on 21 GPUs; one layout on "
                      "every GPU takes 40. Label nodes:\n"
                      "  #   a100-0..a100-2 (3 nodes): nvidia.com/mig.config=a100-all-3g.20gb "
                      "(20 GPU(s) used)\n"
                      "  #   a100-3: nvidia.com/mig.config=a100-all-1g.5gb (1 GPU(s) used)\n"
                      "  #   a100-4..a100-5 (2 nodes): unused\n");
    CHECK_CONTAINS(y,
                   "  a100-all-3g.20gb:  # mig-parted's config of this name\n    - devices: all\n"
                   "      mig-enabled: true\n      mig-devices:\n        \"3g.20gb\": 2\n");
    CHECK_CONTAINS(y, "  a100-all-1g.5gb:  # mig-parted's config of this name\n    - devices: all\n"
                      "      mig-enabled: true\n      mig-devices:\n        \"1g.5gb\": 7\n");
    free(y);
    done(&r);
    /* one node: all-3g.20gb GPUs and an all-1g.5gb GPU would need two nodes (a config is per
     * node), so the 3g.20gb pods join the leftovers and one layout holds them all: no plan
     * beats one layout on every GPU, and none is offered */
    const char *two = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n    - name: a100\n      count: 1\n      gpus: 8\n"
                      "      gpu: A100-40GB\n"
                      "      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]\n"
                      "      mig: auto\n";
    w[0] = '\0';
    pods(w, sizeof w, "llm", "inference", 4, 1, "10Gi", NULL);
    pods(w, sizeof w, "sandbox", "inference", 2, 1, "4Gi", NULL);
    if (!simulate(&r, two, w)) return;
    y = gpa_sim_suggest_mig(r.s);
    CHECK_CONTAINS(y, "  # a100: per-node layouts would take 4 GPUs for its 6 MIG pods, no fewer "
                      "than one layout on every GPU (4)\n");
    CHECK(strstr(y, "a100-all-3g.20gb:") == NULL);
    free(y);
    done(&r);
    /* more demand than the node holds (20 x 3g.20gb = 10 GPUs on 8; 4 unplaced count as
     * demand): said, not left silent */
    w[0] = '\0';
    pods(w, sizeof w, "llm", "inference", 20, 1, "10Gi", NULL);
    if (!simulate(&r, two, w)) return;
    CHECK_INT(r.t.unplaced, 4);
    y = gpa_sim_suggest_mig(r.s);
    CHECK_CONTAINS(y, "  # a100: its 20 MIG pods (placed and unplaced) need more than its 1 nodes "
                      "under per-node layouts; no per-node plan\n");
    free(y);
    done(&r);
}

/* A node List makes one group per node (named by its gpu.product): the suggestion plans the
 * six nodes together, one uniform entry and one per-node plan, not six of each. */
static void mixed_suggestion_node_list(void)
{
    char inv[16384] = "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[";
    for (int i = 0; i < 6; i++) {
        size_t l = strlen(inv);
        snprintf(inv + l, sizeof inv - l,
                 "%s{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-%d\","
                 "\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-40GB\","
                 "\"nvidia.com/gpu.count\":\"8\",\"nvidia.com/mig.config\":\"all-balanced\","
                 "\"kubernetes.io/hostname\":\"gpu-%d\"}},\"spec\":{\"taints\":[{\"key\":"
                 "\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":"
                 "{\"nvidia.com/gpu\":\"0\",\"nvidia.com/mig-1g.5gb\":\"16\","
                 "\"nvidia.com/mig-2g.10gb\":\"8\",\"nvidia.com/mig-3g.20gb\":\"8\"}}}",
                 i ? "," : "", i, i);
    }
    strcat(inv, "]}");
    char w[65536] = "";
    pods(w, sizeof w, "llm", "inference", 40, 1, "10Gi", NULL);
    pods(w, sizeof w, "sandbox", "inference", 2, 1, "4Gi", NULL);
    run r;
    if (!simulate(&r, inv, w)) return;
    CHECK_INT(r.t.placed, 42);
    CHECK_INT(r.t.gpus_used, 40); /* all-balanced: one 3g.20gb per GPU */
    char *y = gpa_sim_suggest_mig(r.s);
    const char *u = strstr(y, "  NVIDIA-A100-SXM4-40GB-uniform:");
    CHECK(u != NULL && strstr(u + 1, "  NVIDIA-A100-SXM4-40GB-uniform:") == NULL);
    CHECK_CONTAINS(
        y, "  # NVIDIA-A100-SXM4-40GB: per-node layouts hold its 42 MIG pods on 21 GPUs; one "
           "layout on every GPU takes 40. Label nodes:\n"
           "  #   gpu-0..gpu-2 (3 nodes): nvidia.com/mig.config=NVIDIA-A100-SXM4-40GB-all-"
           "3g.20gb (20 GPU(s) used)\n");
    free(y);
    done(&r);
}

int main(void)
{
    gpa_error err = {0};
    if (gpa_policy_load_dir(&policy, GPA_SIM_TEST_DIR "/policies", &err) != GPA_OK) {
        fprintf(stderr, "policy: %s\n", err.message);
        return 1;
    }
    three_on_two();
    eight_small_on_one();
    only_whole();
    short_of_cpu();
    cpu_left_and_summary();
    mixed_suggestion();
    mixed_suggestion_node_list();
    gpa_policy_unref(policy);
    return check_done();
}
