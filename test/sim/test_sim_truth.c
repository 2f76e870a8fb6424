/*
 * test_sim_truth.c - issue 31 item 1: simulate tells a planner the truth about a real fleet.
 *
 * - GPUInventory nodes carry the nvidia.com/gpu.product GPU Feature Discovery writes: the
 *   catalog's first product of each model (NVIDIA-H100-80GB-HBM3, as on the real H100 node of
 *   test/fixtures/nvidia-cloud-native-docs/mig-mixed-node-labels.json), "-SHARED" under
 *   time-slicing without a renamed resource, and every value reads back as its model.
 * - A pool whose pods' node requirements no node meets is named first in the text, the JSON,
 *   the report and the --suggest-mig file, with the closest value the nodes carry.
 * - Counts are pods: a denied Deployment counts its replicas, its JSON entry carries them.
 * - The walkthrough's node List (GB200, H100 MIG, L40S) reads as 120 groups and 5 shapes.
 * - --suggest-mig puts a profile's leftovers on the spare GPU of its own all-<profile> nodes
 *   before opening a node for them, and never writes one config name twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "sim_internal.h"

static gpa_sim_inventory *inventory(const char *yaml)
{
    gpa_sim_inventory *inv = NULL;
    gpa_error err = {0};
    if (gpa_sim_inventory_read(&inv, yaml, strlen(yaml), "inv.yaml", &err) != GPA_OK)
        fprintf(stderr, "test: %s\n", err.message);
    CHECK(inv != NULL);
    return inv;
}

static const char *product_of(const gpa_sim_inventory *inv, size_t n)
{
    return gpa_sim_label(inv->nodes[n].labels, inv->nodes[n].n_labels, "nvidia.com/gpu.product");
}

/* One group of `gpu` with extra fields; the product label its first node carries (a copy). */
static char *product_for(const char *gpu, const char *extra)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"
             "    - {name: g, gpus: 8, gpu: %s%s}\n",
             gpu, extra);
    gpa_sim_inventory *inv = inventory(yaml);
    char *p = inv && product_of(inv, 0) ? strdup(product_of(inv, 0)) : NULL;
    gpa_sim_inventory_free(inv);
    return p;
}

static void gfd_products(void)
{
    static const struct {
        const char *model, *product;
    } known[] = {
        {"A100-40GB", "NVIDIA-A100-SXM4-40GB"},
        {"A100-80GB", "NVIDIA-A100-SXM4-80GB"},
        {"H100-80GB", "NVIDIA-H100-80GB-HBM3"},
        {"GB200", "NVIDIA-GB200"},
        {"B200", "NVIDIA-B200"},
        {"H200-141GB", "NVIDIA-H200"},
        {"H100-94GB", "NVIDIA-H100-NVL"},
        {"A30-24GB", "NVIDIA-A30"},
        /* no public label found for these: the catalog's own name, which it reads back */
        {"H800-80GB", "NVIDIA-H800-80GB"},
        {"H100-96GB", "NVIDIA-H100-96GB"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        char *p = product_for(known[i].model, "");
        CHECK_STR(p, known[i].product);
        free(p);
    }
    /* every model of the catalog reads back from the label its nodes carry */
    size_t models = 0;
    for (size_t m = 0; gpa_mig_model_name_at(m); m++, models++) {
        char *p = product_for(gpa_mig_model_name_at(m), "");
        const gpa_mig_model *back = gpa_mig_model_for_product(p);
        CHECK(back && strcmp(back->name, gpa_mig_model_name_at(m)) == 0);
        if (!back || strcmp(back->name, gpa_mig_model_name_at(m)) != 0)
            fprintf(stderr, "test: %s -> %s -> %s\n", gpa_mig_model_name_at(m), p ? p : "-",
                    back ? back->name : "-");
        free(p);
    }
    CHECK(models >= 19);
    /* time-sliced cards advertised as nvidia.com/gpu (renameByDefault: false): GFD appends
     * -SHARED; renamed to nvidia.com/gpu.shared it does not (k8s-device-plugin
     * internal/lm/resource.go) */
    char *p = product_for("H100-80GB", ", timeSlicing: {replicas: 4, resource: nvidia.com/gpu}");
    CHECK_STR(p, "NVIDIA-H100-80GB-HBM3-SHARED");
    free(p);
    p = product_for("H100-80GB", ", timeSlicing: {replicas: 4}");
    CHECK_STR(p, "NVIDIA-H100-80GB-HBM3");
    free(p);
    /* the user's label wins */
    p = product_for("H100-80GB", ", labels: {nvidia.com/gpu.product: NVIDIA-H100-PCIe}");
    CHECK_STR(p, "NVIDIA-H100-PCIe");
    free(p);

    /* the real node: an H100 in MIG mixed mode as GFD labelled it */
    char *real = check_slurp(GPA_SIM_TEST_DIR "/../fixtures/nvidia-cloud-native-docs/"
                                              "mig-mixed-node-labels.json",
                             NULL);
    cJSON *labels = real ? cJSON_Parse(real) : NULL;
    CHECK(labels != NULL);
    const cJSON *prod = cJSON_GetObjectItemCaseSensitive(labels, "nvidia.com/gpu.product");
    const cJSON *strat = cJSON_GetObjectItemCaseSensitive(labels, "nvidia.com/mig.strategy");
    const cJSON *share =
        cJSON_GetObjectItemCaseSensitive(labels, "nvidia.com/gpu.sharing-strategy");
    gpa_sim_inventory *inv = inventory("apiVersion: gpu-admission.io/v1alpha1\nkind: "
                                       "GPUInventory\nspec:\n  nodeGroups:\n"
                                       "    - {name: h, gpus: 1, gpu: H100-80GB, mig: auto}\n");
    if (inv && cJSON_IsString(prod) && cJSON_IsString(strat) && cJSON_IsString(share)) {
        const gpa_sim_node_def *d = &inv->nodes[0];
        CHECK_STR(gpa_sim_label(d->labels, d->n_labels, "nvidia.com/gpu.product"),
                  prod->valuestring);
        CHECK_STR(gpa_sim_label(d->labels, d->n_labels, "nvidia.com/mig.strategy"),
                  strat->valuestring);
        CHECK_STR(gpa_sim_label(d->labels, d->n_labels, "nvidia.com/gpu.sharing-strategy"),
                  share->valuestring);
    }
    gpa_sim_inventory_free(inv);
    cJSON_Delete(labels);
    free(real);
}

/* A run of `pods` (YAML) under the policy source `pol` on inventory `inv_yaml`. */
typedef struct run {
    gpa_policy *p;
    gpa_sim_inventory *inv;
    gpa_sim *s;
} run;

static bool simulate(run *r, const char *pol, const char *inv_yaml, const char *pods)
{
    memset(r, 0, sizeof *r);
    gpa_error err = {0};
    gpa_policy_source src = {"pol.yaml", pol, strlen(pol)};
    int rc = gpa_policy_load_sources(&r->p, &src, 1, &err);
    if (rc == GPA_OK) rc = gpa_sim_inventory_read(&r->inv, inv_yaml, strlen(inv_yaml), "inv", &err);
    if (rc == GPA_OK) rc = gpa_sim_new(&r->s, r->inv, &err);
    gpa_objects *o = NULL;
    if (rc == GPA_OK) rc = gpa_objects_read(&o, pods, strlen(pods), "pods.yaml", &err);
    for (size_t i = 0; rc == GPA_OK && i < gpa_objects_count(o); i++)
        rc = gpa_sim_admit(r->s, r->p, gpa_objects_get(o, i), "pods.yaml", &err);
    gpa_objects_free(o);
    if (rc == GPA_OK) rc = gpa_sim_run(r->s, GPA_SIM_BFD, &err);
    if (rc != GPA_OK) fprintf(stderr, "test: %s\n", err.message);
    CHECK_INT(rc, GPA_OK);
    return rc == GPA_OK;
}

static void done(run *r)
{
    gpa_sim_free(r->s);
    gpa_sim_inventory_free(r->inv);
    gpa_policy_unref(r->p);
}

#define POLICY(selector)                                                                           \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: t}\nspec:\n"         \
    "  pools:\n    - name: train\n      nodeSelector: " selector "\n"                              \
    "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"           \
    "      sharing: exclusive\n"                                                                   \
    "  rules:\n    - {name: training, match: {namespaces: [training]}, place: {pool: train}}\n"    \
    "    - {name: no, match: {namespaces: [denied]}, deny: \"not here\"}\n"

#define FLEET                                                                                      \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n  nodeGroups:\n"            \
    "    - {name: h100, count: 2, gpus: 8, gpu: H100-80GB, labels: {zone: a},\n"                   \
    "       taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n"                                \
    "    - {name: a100, count: 1, gpus: 8, gpu: A100-80GB, labels: {zone: b},\n"                   \
    "       taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n"

#define TRAIN_POD                                                                                  \
    "apiVersion: v1\nkind: Pod\nmetadata: {name: t, namespace: training}\nspec:\n"                 \
    "  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n"

static void pools_without_nodes(void)
{
    run r;
    /* the case: the pool written for a label value GFD does not write */
    if (simulate(&r, POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB}"), FLEET, TRAIN_POD)) {
        const char *line = "pool train matches no node: its pods ask "
                           "nvidia.com/gpu.product=NVIDIA-H100-80GB; the closest value nodes "
                           "carry is nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (2 nodes)";
        char *text = gpa_sim_result_text(r.s);
        CHECK(text && strncmp(text, line, strlen(line)) == 0 && text[strlen(line)] == '\n');
        cJSON *j = gpa_sim_result_json(r.s);
        CHECK(j && j->child && strcmp(j->child->string, "poolsWithoutNodes") == 0);
        const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "poolsWithoutNodes"), 0);
        CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "poolsWithoutNodes")), 1);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "pool")), "train");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "requirement")),
                  "nvidia.com/gpu.product=NVIDIA-H100-80GB");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "label")), "nvidia.com/gpu.product");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "closestValue")),
                  "NVIDIA-H100-80GB-HBM3");
        CHECK_INT(cJSON_GetObjectItem(e, "closestValueNodes")->valueint, 2);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")), line);
        char *html = gpa_sim_report_html(r.s);
        CHECK_CONTAINS(html, "<div id=\"nonodes\" class=\"warn\"><p>pool train matches no node:");
        /* before the figures */
        CHECK(html && strstr(html, "id=\"nonodes\"") < strstr(html, "id=\"summary\""));
        char *mig = gpa_sim_suggest_mig(r.s);
        CHECK(mig && strncmp(mig, "# pool train matches no node: ", 30) == 0);
        free(mig);
        free(html);
        cJSON_Delete(j);
        free(text);
        done(&r);
    }
    /* the right value: nothing to say, and the JSON key is there, empty */
    if (simulate(&r, POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}"), FLEET, TRAIN_POD)) {
        char *text = gpa_sim_result_text(r.s);
        CHECK(text && strncmp(text, "pods: 1 (placed 1,", 18) == 0);
        cJSON *j = gpa_sim_result_json(r.s);
        CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "poolsWithoutNodes")), 0);
        char *html = gpa_sim_report_html(r.s);
        CHECK(html && !strstr(html, "id=\"nonodes\""));
        free(html);
        cJSON_Delete(j);
        free(text);
        done(&r);
    }
    /* each requirement met somewhere, never both on one node */
    if (simulate(&r, POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, zone: b}"), FLEET,
                 TRAIN_POD)) {
        char *text = gpa_sim_result_text(r.s);
        CHECK_CONTAINS(text, "pool train matches no node: its pods ask "
                             "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 and zone=b, which no "
                             "node has together\n");
        free(text);
        done(&r);
    }
    /* a label no node has */
    if (simulate(&r, POLICY("{rack: r1}"), FLEET, TRAIN_POD)) {
        char *text = gpa_sim_result_text(r.s);
        CHECK_CONTAINS(text, "pool train matches no node: its pods ask rack=r1; no node has the "
                             "label rack\n");
        free(text);
        done(&r);
    }
    /* a selector only one of the pool's pods carries is the pod's, not the pool's: the pool
     * still has nodes */
    if (simulate(&r, POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}"), FLEET,
                 "apiVersion: v1\nkind: Pod\nmetadata: {name: u, namespace: training}\nspec:\n"
                 "  nodeSelector: {disk: ssd}\n  containers: [{name: m, image: x, resources: "
                 "{limits: {nvidia.com/gpu: 8}}}]\n---\n" TRAIN_POD)) {
        cJSON *j = gpa_sim_result_json(r.s);
        CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "poolsWithoutNodes")), 0);
        cJSON_Delete(j);
        done(&r);
    }
}

/* The engine writes the pool's selector into every term of a pod's own required node
 * affinity: a requirement in every term is the pool's, one in a single term is not. */
static void pools_without_nodes_terms(void)
{
    run r;
    const char *pod =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: t, namespace: training}\nspec:\n"
        "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
        "        nodeSelectorTerms:\n"
        "          - matchExpressions: [{key: disk, operator: In, values: [ssd]}]\n"
        "          - matchExpressions: [{key: zone, operator: In, values: [a]}]\n"
        "  containers: [{name: m, image: x, resources: {limits: {nvidia.com/gpu: 8}}}]\n";
    if (!simulate(&r, POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB}"), FLEET, pod)) return;
    cJSON *j = gpa_sim_result_json(r.s);
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "poolsWithoutNodes"), 0);
    CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(j, "poolsWithoutNodes")), 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "requirement")),
              "nvidia.com/gpu.product=NVIDIA-H100-80GB");
    cJSON_Delete(j);
    done(&r);
}

/* pods everywhere: the headline equals the pods put in */
static void pod_counts(void)
{
    run r;
    const char *pods = TRAIN_POD "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: "
                                 "x, namespace: denied}\nspec:\n  replicas: 5\n  selector: "
                                 "{matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: "
                                 "b}}\n    spec:\n      containers: [{name: m, image: x, "
                                 "resources: {limits: {nvidia.com/gpu: 1}}}]\n";
    if (!simulate(&r, POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}"), FLEET, pods))
        return;
    gpa_sim_totals t;
    gpa_sim_get_totals(&t, r.s);
    CHECK_INT((int)t.pods, 6);
    CHECK_INT((int)t.denied, 5);
    CHECK_INT((int)(t.placed + t.unplaced + t.denied), 6);
    char *text = gpa_sim_result_text(r.s);
    CHECK_CONTAINS(text, "pods: 6 (placed 1, unplaced 0, denied 5, skipped objects 0)\n");
    CHECK_CONTAINS(text, "  denied/x (5 pods): denied by GPU policy rule no: not here\n");
    cJSON *j = gpa_sim_result_json(r.s);
    CHECK_INT(cJSON_GetObjectItem(j, "pods")->valueint, 6);
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "denied"), 0);
    CHECK_INT(cJSON_GetObjectItem(d, "pods")->valueint, 5);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "message")),
              "denied by GPU policy rule no: not here");
    char *html = gpa_sim_report_html(r.s);
    CHECK_CONTAINS(html, "<h2>Denied pods (5)</h2>");
    CHECK_CONTAINS(html, "<td>denied/x</td><td class=\"n\">5</td>");
    free(html);
    cJSON_Delete(j);
    free(text);
    done(&r);
}

/* 1g.5gb pods enough for `full` whole all-1g.5gb GPUs and `rest` more, `big` of 3g.20gb, on
 * five nodes of 8 MIG-auto A100-40GB: the --suggest-mig file. */
static char *suggest(int full, int rest, int big)
{
    char pods[2048];
    snprintf(pods, sizeof pods,
             "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: small, namespace: "
             "inference}\nspec:\n  replicas: %d\n  selector: {matchLabels: {app: small}}\n"
             "  template:\n    metadata: {labels: {app: small}, annotations: "
             "{gpu-admission.io/gpu-memory: 4Gi}}\n    spec: {containers: [{name: m, image: x, "
             "resources: {limits: {nvidia.com/gpu: 1}}}]}\n---\napiVersion: apps/v1\nkind: "
             "Deployment\nmetadata: {name: big, namespace: inference}\nspec:\n  replicas: %d\n"
             "  selector: {matchLabels: {app: big}}\n  template:\n    metadata: {labels: {app: "
             "big}, annotations: {gpu-admission.io/gpu-memory: 18Gi}}\n    spec: {containers: "
             "[{name: m, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n",
             full * 7 + rest, big);
    const char *pol =
        "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: t}\nspec:\n"
        "  pools:\n    - name: mig\n      nodeSelector: {nvidia.com/gpu.product: "
        "NVIDIA-A100-SXM4-40GB}\n      tolerations: [{key: nvidia.com/gpu, operator: Exists, "
        "effect: NoSchedule}]\n      sharing: mig\n      mig: {strategy: mixed, gpu: A100-40GB}\n"
        "  rules:\n    - {name: inf, match: {namespaces: [inference]}, place: {pool: mig, "
        "migProfile: auto}}\n";
    run r;
    if (!simulate(&r, pol,
                  "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                  "  nodeGroups:\n    - {name: a100, count: 5, gpus: 8, gpu: A100-40GB, mig: "
                  "auto,\n       taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}\n",
                  pods))
        return NULL;
    char *y = gpa_sim_suggest_mig(r.s);
    done(&r);
    return y;
}

static int occurrences(const char *h, const char *n)
{
    int c = 0;
    for (const char *p = h; p && (p = strstr(p, n)); p += strlen(n))
        c++;
    return c;
}

static void leftovers(void)
{
    /* 13 GPUs of 1g.5gb on two nodes leave three of their 16 GPUs spare: the 5 leftovers take
     * one of them */
    char *y = suggest(13, 5, 16);
    CHECK_CONTAINS(y, "  # a100: per-node layouts hold its 112 MIG pods on 22 GPUs; one layout "
                      "on every GPU takes 24. Label nodes:\n"
                      "  #   a100-0..a100-1 (2 nodes): nvidia.com/mig.config=a100-all-1g.5gb "
                      "(14 GPU(s) used)\n"
                      "  #   a100-2: nvidia.com/mig.config=a100-all-3g.20gb (8 GPU(s) used)\n"
                      "  #   a100-3..a100-4 (2 nodes): unused\n");
    CHECK_INT(occurrences(y, "\n  a100-all-1g.5gb:"), 1);
    free(y);
    /* 16 full GPUs fill two nodes exactly: the leftovers' layout is all-1g.5gb again, one
     * more GPU of the same config (one name, not two entries of it) */
    y = suggest(16, 5, 16);
    CHECK_CONTAINS(y, "  #   a100-0..a100-2 (3 nodes): nvidia.com/mig.config=a100-all-1g.5gb "
                      "(17 GPU(s) used)\n");
    CHECK_INT(occurrences(y, "\n  a100-all-1g.5gb:"), 1);
    free(y);
    /* leftovers of two profiles (5 x 1g.5gb, 1 x 3g.20gb): the 1g ones go to the spare GPU of
     * their all-1g.5gb nodes instead of a mixed leftover layout on a node of its own; the one
     * 3g.20gb, its all-3g.20gb nodes full, opens a GPU of that config */
    y = suggest(13, 5, 17);
    CHECK_CONTAINS(y, "  #   a100-0..a100-1 (2 nodes): nvidia.com/mig.config=a100-all-1g.5gb "
                      "(14 GPU(s) used)\n"
                      "  #   a100-2..a100-3 (2 nodes): nvidia.com/mig.config=a100-all-3g.20gb "
                      "(9 GPU(s) used)\n");
    CHECK(y && !strstr(y, "a100-mixed-rest"));
    free(y);
}

/* The walkthrough's 120 listed nodes, each its own group when read: five shapes for the
 * packer (GB200, the three H100 MIG layouts, L40S), their products as GFD wrote them. */
static void walkthrough_shapes(void)
{
    char *list = check_slurp(GPA_SIM_TEST_DIR "/inventories/walkthrough-nodes.json", NULL);
    gpa_sim_inventory *inv = list ? inventory(list) : NULL;
    gpa_sim *s = NULL;
    gpa_error err = {0};
    if (inv) CHECK_INT(gpa_sim_new(&s, inv, &err), GPA_OK);
    size_t *shape = s ? gpa_sim_shapes(s) : NULL;
    CHECK(shape != NULL);
    size_t distinct = 0;
    for (size_t n = 0; shape && n < inv->n_nodes; n++)
        distinct += shape[n] == inv->nodes[n].group; /* a shape is named by its first group */
    CHECK_INT((int)(inv ? inv->n_groups : 0), 120);
    CHECK_INT((int)distinct, 5);
    CHECK_STR(product_of(inv, 0), "NVIDIA-GB200");
    CHECK(inv && inv->groups[0].model && strcmp(inv->groups[0].model->name, "GB200") == 0);
    free(shape);
    gpa_sim_free(s);
    gpa_sim_inventory_free(inv);
    free(list);
}

/* The report's fleet view boxes topology domains: racks and blocks of a GPUInventory's
 * levels (the last rack short), and no box when a value comes back after another. */
static void domain_boxes(void)
{
    const char *pol = POLICY("{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}");
    run r;
    if (simulate(&r, pol,
                 "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUInventory\nspec:\n"
                 "  nodeGroups:\n    - {name: hgx, count: 10, gpus: 8, gpu: H100-80GB,\n"
                 "       levels: [{label: rack, nodes: 4}, {label: block, nodes: 8}]}\n",
                 TRAIN_POD)) {
        char *html = gpa_sim_report_html(r.s);
        CHECK_INT(occurrences(html, "<g class=\"domain\""), 3);
        CHECK_INT(occurrences(html, "<g class=\"block\""), 2);
        CHECK_CONTAINS(html, "data-domain=\"hgx-2\"");
        CHECK_CONTAINS(html, "10 node(s), 80 GPUs, 8 used; a box per rack (4 nodes) in a box per "
                             "block (8 nodes)</h3>");
        free(html);
        done(&r);
    }
    /* a clique value that comes back: two boxes would name one domain twice, so none */
    const char *list =
        "{\"kind\":\"List\",\"items\":["
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n0\",\"labels\":{\"c\":\"a\"}}},"
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{\"c\":\"a\"}}},"
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\",\"labels\":{\"c\":\"b\"}}},"
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n3\",\"labels\":{\"c\":\"b\"}}},"
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n4\",\"labels\":{\"c\":\"a\"}}},"
        "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n5\",\"labels\":{\"c\":\"a\"}}}]}";
    const char *gang = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x, labels: {g: "
                       "x}}\nspec:\n  affinity:\n    podAffinity:\n      "
                       "requiredDuringSchedulingIgnoredDuringExecution:\n        - {labelSelector: "
                       "{matchLabels: {g: x}}, topologyKey: c}\n  containers: [{name: m, image: "
                       "x}]\n";
    if (simulate(&r, pol, list, gang)) {
        char *html = gpa_sim_report_html(r.s);
        CHECK_INT(occurrences(html, "<g class=\"domain\""), 0);
        free(html);
        done(&r);
    }
    list = "{\"kind\":\"List\",\"items\":["
           "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n0\",\"labels\":{\"c\":\"a\"}}},"
           "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{\"c\":\"a\"}}},"
           "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\",\"labels\":{\"c\":\"b\"}}},"
           "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n3\",\"labels\":{\"c\":\"b\"}}}]}";
    /* the same pods on cliques a, a, b, b: two boxes, by the pod's topology key */
    if (simulate(&r, pol, list, gang)) {
        char *html = gpa_sim_report_html(r.s);
        CHECK_INT(occurrences(html, "<g class=\"domain\""), 2);
        free(html);
        done(&r);
    }
}

int main(void)
{
    walkthrough_shapes();
    gfd_products();
    pools_without_nodes();
    pools_without_nodes_terms();
    pod_counts();
    leftovers();
    domain_boxes();
    return check_done();
}
