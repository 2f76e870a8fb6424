/*
 * test_sim_feasible.c - the simulator's node checks at their edges: a toleration must carry
 * the taint's value (dedicated=b does not tolerate dedicated=a), and a Gt requirement is
 * strictly greater (island-size Gt 3 refuses a node labelled 3, takes one labelled 4). A
 * simulator that gets these wrong reports capacity the cluster does not have. Must never
 * assert on a placement it did not compute.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "sim.h"

static gpa_policy *pol;

/* The node the one pod lands on, or "" when it does not fit. */
static void place(char *node, size_t cap, const char *inv_yaml, const char *pod_yaml)
{
    gpa_error err = {0};
    gpa_sim_inventory *inv = NULL;
    gpa_sim *s = NULL;
    gpa_objects *o = NULL;
    node[0] = '\0';
    CHECK_INT(gpa_sim_inventory_read(&inv, inv_yaml, strlen(inv_yaml), "inv.yaml", &err), GPA_OK);
    if (!inv || gpa_sim_new(&s, inv, &err) != GPA_OK) goto out;
    CHECK_INT(gpa_objects_read(&o, pod_yaml, strlen(pod_yaml), "pod.yaml", &err), GPA_OK);
    if (!o) goto out;
    CHECK_INT(gpa_sim_admit(s, pol, gpa_objects_get(o, 0), "pod.yaml:1:1", &err), GPA_OK);
    CHECK_INT(gpa_sim_run(s, GPA_SIM_BFD, &err), GPA_OK);
    CHECK_INT(gpa_sim_pod_count(s), 1);
    if (gpa_sim_pod_count(s) == 1 && !gpa_sim_pod_reason(s, 0))
        snprintf(node, cap, "%s", gpa_sim_pod_node(s, 0));
out:
    if (err.message[0]) fprintf(stderr, "simulate: %s\n", err.message);
    gpa_objects_free(o);
    gpa_sim_free(s);
    gpa_sim_inventory_free(inv);
}

#define INV_HEAD "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
#define POD_HEAD                                                                                   \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: other}\nspec:\n"                    \
    "  containers:\n    - name: m\n      image: x\n"                                               \
    "      resources: {limits: {nvidia.com/gpu: 1}}\n"

int main(void)
{
    /* no rules: the engine leaves the pod as written, so only the node checks decide */
    const char *py = "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: "
                     "none}\nspec:\n  unmatched: allow\n";
    gpa_policy_source src = {"p.yaml", py, strlen(py)};
    gpa_error err = {0};
    if (gpa_policy_load_sources(&pol, &src, 1, &err) != GPA_OK) {
        fprintf(stderr, "policy: %s\n", err.message);
        return 1;
    }
    char node[256];
    const char *tainted =
        INV_HEAD "    - name: ded\n      gpus: 1\n      gpu: H100-80GB\n"
                 "      taints: [{key: dedicated, value: a, effect: NoSchedule}]\n";
    place(node, sizeof node, tainted,
          POD_HEAD "  tolerations: [{key: dedicated, operator: Equal, value: b, effect: "
                   "NoSchedule}]\n");
    CHECK_STR(node, "");
    place(node, sizeof node, tainted,
          POD_HEAD "  tolerations: [{key: dedicated, operator: Equal, value: a, effect: "
                   "NoSchedule}]\n");
    CHECK(node[0] != '\0');

    const char *gt = "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuring"
                     "Execution:\n        nodeSelectorTerms:\n          - matchExpressions:\n"
                     "              - {key: island-size, operator: Gt, values: [\"3\"]}\n";
    char pod[1024];
    snprintf(pod, sizeof pod, POD_HEAD "%s", gt);
    place(node, sizeof node,
          INV_HEAD "    - name: three\n      gpus: 1\n      gpu: H100-80GB\n"
                   "      labels: {island-size: \"3\"}\n",
          pod);
    CHECK_STR(node, "");
    place(node, sizeof node,
          INV_HEAD "    - name: four\n      gpus: 1\n      gpu: H100-80GB\n"
                   "      labels: {island-size: \"4\"}\n",
          pod);
    CHECK(node[0] != '\0');
    gpa_policy_unref(pol);
    return check_done();
}
