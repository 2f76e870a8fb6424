/*
 * test_sim_gang.c - simulate places gangs as the scheduler does under topology levels
 * (docs/policy.md "Topology levels"): a node group's levels give every `nodes` consecutive
 * nodes one rack/block label value, the engine writes pod affinity on the narrowest domain
 * holding the gang, and the packer honours it. On HGX (8 GPUs, the island one node) a
 * PyTorchJob of 3 x 8 GPUs lands in one rack, 6 x 8 in one block across two racks, 9 x 8 is
 * refused; without levels the same 3 x 8 gang strands two pods (the trap of issue 21).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/clique.h"
#include "sim.h"
#include "sim_internal.h"

#define POLICY(levels)                                                                             \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: g}\nspec:\n"         \
    "  pools:\n"                                                                                   \
    "    - name: hgx\n"                                                                            \
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"                        \
    "      sharing: exclusive\n"                                                                   \
    "      topology:\n"                                                                            \
    "        islandLabel: nvidia.com/gpu.clique\n"                                                 \
    "        gpusPerNode: 8\n"                                                                     \
    "        groupLabels: [training.kubeflow.org/job-name]\n" levels "  rules:\n"                  \
    "    - {name: train, match: {gpus: {min: 1}}, place: {pool: hgx}}\n"

#define LEVELS                                                                                     \
    "        islandGpus: 8\n"                                                                      \
    "        levels:\n"                                                                            \
    "          - {label: example.com/rack, gpus: 32}\n"                                            \
    "          - {label: example.com/block, gpus: 64}\n"

/* 16 HGX nodes: racks of 4 nodes, blocks of 8 */
static const char *INV =
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
    "    - name: hgx\n      count: 16\n      gpus: 8\n      gpu: H100-80GB\n"
    "      nvlinkIslandSize: 8\n"
    "      labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
    "      levels:\n"
    "        - {label: example.com/rack, nodes: 4}\n"
    "        - {label: example.com/block, nodes: 8}\n";

typedef struct {
    int placed, unplaced, denied;
    int same_reason;         /* 1 when every unplaced pod has the first one's reason and detail */
    int racks[4], blocks[2]; /* pods per rack / block */
} outcome;

static bool gangs_whole;
/* a whole job to admit instead of run()'s GPU Master + Workers (issue 30: a CPU-only Master) */
static const char *job_text;

static outcome run(const char *policy, int workers)
{
    outcome o = {0};
    gpa_policy *p = NULL;
    gpa_policy_source src = {"p.yaml", policy, strlen(policy)};
    gpa_error err = {0};
    gpa_sim_inventory *inv = NULL;
    gpa_sim *s = NULL;
    gpa_objects *objs = NULL;
    char job[1024];
    snprintf(job, sizeof job,
             "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: llama, namespace: "
             "train}\nspec:\n  pytorchReplicaSpecs:\n"
             "    Master:\n      replicas: 1\n      template:\n        spec:\n          "
             "containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
             "    Worker:\n      replicas: %d\n      template:\n        spec:\n          "
             "containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n",
             workers);
    CHECK_INT(gpa_policy_load_sources(&p, &src, 1, &err), GPA_OK);
    CHECK_INT(gpa_sim_inventory_read(&inv, INV, strlen(INV), "inv.yaml", &err), GPA_OK);
    if (!p || !inv || gpa_sim_new(&s, inv, &err) != GPA_OK) goto out;
    if (job_text) snprintf(job, sizeof job, "%s", job_text);
    CHECK_INT(gpa_objects_read(&objs, job, strlen(job), "job.yaml", &err), GPA_OK);
    if (!objs) goto out;
    gpa_sim_set_gangs_whole(s, gangs_whole);
    for (size_t i = 0; i < gpa_objects_count(objs); i++)
        CHECK_INT(gpa_sim_admit(s, p, gpa_objects_get(objs, i), "job.yaml:1:1", &err), GPA_OK);
    CHECK_INT(gpa_sim_run(s, GPA_SIM_BFD, &err), GPA_OK);
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, s);
    o.denied = (int)t.denied;
    const char *first_reason = NULL;
    o.same_reason = 1;
    for (size_t i = 0; i < gpa_sim_pod_count(s); i++) {
        const char *node = gpa_sim_pod_node(s, i);
        if (!node) {
            o.unplaced++;
            const char *r = gpa_sim_pod_reason(s, i);
            if (!first_reason) first_reason = r;
            o.same_reason &= r && first_reason && strcmp(r, first_reason) == 0;
            continue;
        }
        o.placed++;
        char nb[128];
        const char *name = gpa_sim_pod_name(s, i, nb, sizeof nb);
        if (job_text && !(name && strstr(name, ".Worker."))) continue; /* the gang: its GPU pods */
        int k = atoi(node + strlen("hgx-"));
        o.racks[k / 4]++;
        o.blocks[k / 8]++;
    }
out:
    if (err.message[0]) fprintf(stderr, "simulate: %s\n", err.message);
    gpa_objects_free(objs);
    gpa_sim_free(s);
    gpa_sim_inventory_free(inv);
    gpa_policy_unref(p);
    return o;
}

static int max_of(const int *v, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static void bad_inventory(const char *levels, const char *want)
{
    char inv[1024];
    snprintf(inv, sizeof inv,
             "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
             "    - name: hgx\n      gpus: 8\n      levels:\n%s",
             levels);
    gpa_sim_inventory *i = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_sim_inventory_read(&i, inv, strlen(inv), "inv.yaml", &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, want);
    gpa_sim_inventory_free(i);
}

/* Generated nodes carry nvidia.com/gpu.clique as GFD writes it, <clusterUUID>.<cliqueId>:
 * island/gpus consecutive nodes of a group share one value, the next island the same cluster
 * UUID with the next clique id, another group another cluster (docs/simulate.md). */
static void clique_values(void)
{
    const char *inv = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                      "  nodeGroups:\n"
                      "    - {name: gb200, count: 36, gpus: 4, nvlinkIslandSize: 72}\n"
                      "    - {name: gb300, count: 18, gpus: 4, nvlinkIslandSize: 72}\n";
    gpa_sim_inventory *v = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_sim_inventory_read(&v, inv, strlen(inv), "inv.yaml", &e), GPA_OK);
    if (!v) {
        fprintf(stderr, "%s\n", e.message);
        return;
    }
    CHECK_INT((long long)v->n_nodes, 54);
    const char *c[54];
    for (size_t i = 0; i < v->n_nodes && i < 54; i++) {
        c[i] = gpa_sim_label(v->nodes[i].labels, v->nodes[i].n_labels, GPA_LABEL_CLIQUE);
        CHECK(c[i] && gpa_clique_invalid(c[i]) == NULL);
        if (!c[i]) return;
    }
    CHECK_STR(c[17], c[0]);               /* one NVL72 rack: 18 trays */
    CHECK(strcmp(c[18], c[17]) != 0);     /* the next rack */
    CHECK(strncmp(c[18], c[0], 36) == 0); /* of the same cluster */
    CHECK_STR(strchr(c[0], '.'), ".0");
    CHECK_STR(strchr(c[35], '.'), ".1");
    CHECK(strncmp(c[36], c[0], 36) != 0); /* another group, another cluster */
    CHECK_STR(c[53], c[36]);
    gpa_sim_inventory_free(v);
}

int main(void)
{
    clique_values();
    bad_inventory("        - {label: r, nodes: 4}\n        - {label: b, nodes: 4}\n",
                  "inv.yaml:9:29: level b has 4 nodes, not more than the level before it (4)");
    bad_inventory("        - {label: r, nodes: 4}\n        - {label: r, nodes: 8}\n",
                  "inv.yaml:9:19: level label r is repeated");
    bad_inventory("        - {label: r, nodes: 0}\n",
                  "inv.yaml:8:29: nodes must be between 1 and 100000, got 0");
    bad_inventory("        - {label: r}\n", "a level needs nodes");
    bad_inventory("        - {label: r, nodes: 4, size: 2}\n", "unknown level field size");
    /* 3 x 8 GPUs: every pod in one rack */
    outcome o = run(POLICY(LEVELS), 2);
    CHECK_INT(o.placed, 3);
    CHECK_INT(o.unplaced, 0);
    CHECK_INT(max_of(o.racks, 4), 3);

    /* 6 x 8 GPUs: wider than a rack, one block (so two racks) */
    o = run(POLICY(LEVELS), 5);
    CHECK_INT(o.placed, 6);
    CHECK_INT(max_of(o.blocks, 2), 6);
    CHECK(max_of(o.racks, 4) < 6);

    /* 9 x 8 GPUs: wider than a block, refused before anything is placed */
    o = run(POLICY(LEVELS), 8);
    CHECK_INT(o.placed + o.unplaced, 0);
    CHECK_INT(o.denied, 9); /* both templates, Master and Worker: 1 + 8 pods */

    /* the trap without levels: affinity to one island (one node) strands all but one pod */
    o = run(POLICY(""), 2);
    CHECK_INT(o.placed, 1);
    CHECK_INT(o.unplaced, 2);

    /* gangs whole (issue 31): the same trap leaves the whole gang unplaced, with one cause;
     * the gangs that fit a rack or a block are placed as before */
    gangs_whole = true;
    o = run(POLICY(""), 2);
    CHECK_INT(o.placed, 0);
    CHECK_INT(o.unplaced, 3);
    CHECK_INT(o.same_reason, 1);
    o = run(POLICY(LEVELS), 2);
    CHECK_INT(o.placed, 3);
    CHECK_INT(max_of(o.racks, 4), 3);
    o = run(POLICY(LEVELS), 5);
    CHECK_INT(o.placed, 6);
    CHECK_INT(max_of(o.blocks, 2), 6);

    /* issue 30: a CPU-only Master and 4 x 8-GPU Workers after a Job that takes 2 nodes of rack
     * 0. Annotated as the apply-time answer says (gang-size "4"), the gang is 32 GPUs: one
     * rack, so the Workers go whole to rack 1; with PET_NNODES alone (5, the Master counted)
     * it is 40 GPUs, the block, and the Workers fill rack 0's last 2 nodes and half of rack 1 */
    gangs_whole = false;
#define OTHER_AND_JOB(ANN)                                                                         \
    "apiVersion: batch/v1\nkind: Job\nmetadata: {name: other, namespace: train}\nspec:\n"          \
    "  parallelism: 2\n  template:\n    spec:\n      containers: [{name: m, image: x, "            \
    "resources: {limits: {nvidia.com/gpu: 8}}}]\n---\n"                                            \
    "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: llama, namespace: "           \
    "train}\nspec:\n  pytorchReplicaSpecs:\n"                                                      \
    "    Master:\n      replicas: 1\n      template:\n        spec:\n          "                   \
    "containers: [{name: m, image: x}]\n"                                                          \
    "    Worker:\n      replicas: 4\n      template:\n" ANN "        spec:\n          "            \
    "containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"
    job_text = OTHER_AND_JOB("        metadata:\n          annotations: "
                             "{gpu-admission.io/gang-size: \"4\"}\n");
    o = run(POLICY(LEVELS), 0);
    CHECK_INT(o.unplaced, 0);
    CHECK_INT(o.racks[0] + o.racks[1] + o.racks[2] + o.racks[3], 4);
    CHECK_INT(max_of(o.racks, 4), 4);
    job_text = OTHER_AND_JOB("");
    o = run(POLICY(LEVELS), 0);
    CHECK_INT(o.unplaced, 0);
    CHECK_INT(o.racks[0] + o.racks[1] + o.racks[2] + o.racks[3], 4);
    CHECK(max_of(o.racks, 4) < 4);
    job_text = NULL;
    return check_done();
}
