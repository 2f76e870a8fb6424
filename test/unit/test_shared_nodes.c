/*
 * test_shared_nodes.c - isolation by default for pods (POLICY.md "Isolation by default",
 * policy/policy_shared_nodes.c and the engine's guard): which node label rules out each shared
 * pool per placement context, check's warnings for pools that cannot be told apart, and the
 * engine's answers on the contexts the golden cases do not cover (a pool inseparable from a
 * shared one, a shared pool without nodeSelector, a label the context itself requires).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "policy/policy_dra.h"
#include "policy/policy_model.h"
#include "policy/policy_shared_nodes.h"

#define HDR "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"

#define POOLS                                                                                      \
    "  pools:\n"                                                                                   \
    "    - name: ts\n"                                                                             \
    "      nodeSelector: {gpu-admission.io/pool: ts, nvidia.com/gpu.sharing-strategy: "            \
    "time-slicing}\n"                                                                              \
    "      sharing: time-slicing\n"                                                                \
    "      timeSlicing: {resource: nvidia.com/gpu.shared, replicas: 4}\n"                          \
    "    - name: mps\n"                                                                            \
    "      nodeSelector: {nvidia.com/gpu.sharing-strategy: mps}\n"                                 \
    "      sharing: mps\n"                                                                         \
    "      mps: {resource: nvidia.com/gpu.mps, replicas: 2}\n"                                     \
    "    - name: plain\n"                                                                          \
    "      nodeSelector: {gpu-admission.io/pool: plain}\n"                                         \
    "      sharing: time-slicing\n"                                                                \
    "      timeSlicing: {resource: nvidia.com/gpu, replicas: 2}\n"                                 \
    "    - name: mig\n"                                                                            \
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"                        \
    "      sharing: mig\n"                                                                         \
    "      mig: {strategy: mixed, gpu: A100-80GB}\n"                                               \
    "    - name: same-as-plain\n"                                                                  \
    "      nodeSelector: {gpu-admission.io/pool: plain, example.com/tier: gold}\n"                 \
    "      sharing: exclusive\n"                                                                   \
    "    - name: ts-labelled\n"                                                                    \
    "      nodeSelector: {nvidia.com/gpu.sharing-strategy: time-slicing, example.com/r: r1}\n"     \
    "      sharing: exclusive\n"

#define RULES                                                                                      \
    "  rules:\n"                                                                                   \
    "    - {name: to-mig, match: {namespaces: [mig-*]}, place: {pool: mig}}\n"                     \
    "    - {name: to-same, match: {namespaces: [same-*]}, place: {pool: same-as-plain}}\n"         \
    "    - {name: to-tsl, match: {namespaces: [tsl-*]}, place: {pool: ts-labelled}}\n"

static gpa_policy *load(const char *yaml)
{
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    gpa_policy *p = NULL;
    gpa_error e = {0};
    int rc = gpa_policy_load_sources(&p, &s, 1, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n", e.message);
    return p;
}

static const gpa_pool *pool_named(const gpa_policy *p, const char *name)
{
    for (size_t i = 0; i < p->n_pools; i++)
        if (strcmp(p->pools[i].name, name) == 0) return &p->pools[i];
    return NULL;
}

/* "key=v1|v2>pool1|pool2" per requirement, space separated */
static void excl_text(char *buf, size_t cap, const gpa_shared_guard *g)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; g && i < g->n; i++) {
        const gpa_shared_excl *x = &g->excl[i];
        at += (size_t)snprintf(buf + at, cap - at, "%s%s=", i ? " " : "", x->key);
        for (size_t v = 0; v < x->n_values; v++)
            at += (size_t)snprintf(buf + at, cap - at, "%s%s", v ? "|" : "", x->values[v]);
        for (size_t q = 0; q < x->n_pools; q++)
            at += (size_t)snprintf(buf + at, cap - at, "%s%s", q ? "|" : ">", x->pools[q]->name);
    }
}

static void guards(const gpa_policy *p)
{
    char buf[512];
    /* placed nowhere: every shared pool, by the preferred label of each */
    const gpa_shared_guard *g = gpa_shared_guard_of(p, NULL, false);
    excl_text(buf, sizeof buf, g);
    /* one requirement per label key: the sharing label's two values, then the pool label */
    CHECK_STR(buf, "nvidia.com/gpu.sharing-strategy=time-slicing|mps>ts|mps "
                   "gpu-admission.io/pool=plain>plain");
    CHECK(g->inseparable == NULL);
    /* a shared pool: the others it is not provably apart from (none here: ts and mps differ
     * on the sharing label, ts and plain on the pool label) */
    g = gpa_shared_guard_of(p, pool_named(p, "ts"), false);
    CHECK_INT(g->n, 0);
    g = gpa_shared_guard_of(p, pool_named(p, "plain"), false);
    excl_text(buf, sizeof buf, g);
    CHECK_STR(buf, "nvidia.com/gpu.sharing-strategy=mps>mps");
    g = gpa_shared_guard_of(p, pool_named(p, "mig"), false);
    CHECK_INT(g->n, 2);
    /* a pool whose nodeSelector holds all of plain's: no label rules plain out */
    g = gpa_shared_guard_of(p, pool_named(p, "same-as-plain"), false);
    CHECK(g->inseparable == pool_named(p, "plain"));
    excl_text(buf, sizeof buf, g);
    CHECK_STR(buf, "nvidia.com/gpu.sharing-strategy=mps>mps"); /* ts: pool label differs */
    /* a pool that requires the sharing label itself: ts is ruled out by its pool label
     * instead (the preferred one would make the pool's own pods unschedulable); mps is apart */
    g = gpa_shared_guard_of(p, pool_named(p, "ts-labelled"), false);
    excl_text(buf, sizeof buf, g);
    CHECK_STR(buf, "gpu-admission.io/pool=ts|plain>ts|plain");
    CHECK_STR(g->n ? g->excl[0].line.s : "",
              "node affinity gpu-admission.io/pool NotIn [ts, plain] "
              "keeps it off shared pools ts, plain");
}

static gpa_decision decide(const gpa_policy *p, bool mutate, const char *ns, const char *spec)
{
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"},\"spec\":"
             "{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":1}}}]%s}}",
             spec);
    cJSON *pod = cJSON_Parse(buf);
    CHECK(pod != NULL);
    gpa_request req = {.namespace_ = ns, .op = GPA_OP_CREATE, .object = pod};
    gpa_decision d;
    gpa_error err = {0};
    int rc = mutate ? gpa_engine_mutate(&d, p, &req, &err) : gpa_engine_validate(&d, p, &req, &err);
    CHECK_INT(rc, GPA_OK);
    cJSON_Delete(pod);
    return d;
}

static void engine(const gpa_policy *p)
{
    /* placed in a pool inseparable from a shared one: refused, saying so */
    gpa_decision d = decide(p, true, "same-1", "");
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "shared-pool-unplaced");
    CHECK(d.message && strstr(d.message, "every node of same-as-plain is a node of plain"));
    gpa_decision_clear(&d);
    /* placed in mig: three NotIn requirements next to the pool's own, and the result passes */
    d = decide(p, true, "mig-1", "");
    CHECK(d.allowed);
    CHECK_INT(d.n_warnings, 5); /* placed, rename, affinity In, 2 x NotIn (one per key) */
    gpa_decision_clear(&d);
    /* validated alone with its pool's nodeSelector only: mps and plain are ruled out by
     * nothing (ts neither: an A100 node may be labelled time-slicing) */
    d = decide(p, false, "mig-1",
               ",\"nodeSelector\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\"}");
    CHECK(!d.allowed);
    CHECK(d.message && strstr(d.message, "rule to-mig places this pod in pool mig, not in shared "
                                         "pool ts, but its node affinity lets it land"));
    gpa_decision_clear(&d);
    /* the sharing label's value alone rules out ts and mps; plain needs its own label */
    d = decide(p, false, "team-x",
               ",\"nodeSelector\":{\"nvidia.com/gpu.sharing-strategy\":\"none\"}");
    CHECK(!d.allowed);
    CHECK(d.message && strstr(d.message, "shared pool plain,"));
    gpa_decision_clear(&d);
    d = decide(p, false, "team-x",
               ",\"nodeSelector\":{\"nvidia.com/gpu.sharing-strategy\":\"none\","
               "\"gpu-admission.io/pool\":\"other\"}");
    CHECK(d.allowed);
    gpa_decision_clear(&d);
    /* DoesNotExist on the pool label and NotIn [time-slicing, mps] rule out all three */
    const char *aff = ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
                      "Execution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
                      "\"gpu-admission.io/pool\",\"operator\":\"DoesNotExist\"},{\"key\":"
                      "\"nvidia.com/gpu.sharing-strategy\",\"operator\":\"NotIn\",\"values\":"
                      "[\"time-slicing\",\"mps\"]}]}]}}}";
    d = decide(p, false, "team-x", aff);
    CHECK(d.allowed);
    gpa_decision_clear(&d);
    /* ... and the mutating webhook adds nothing to that term */
    d = decide(p, true, "team-x", aff);
    CHECK(d.allowed);
    CHECK(d.patch == NULL);
    gpa_decision_clear(&d);
    /* spec.nodeName does not replace node affinity: the kubelet checks affinity, not labels
     * it was never given */
    d = decide(p, false, "team-x", ",\"nodeName\":\"node-1\"");
    CHECK(!d.allowed);
    CHECK_STR(d.reason, "shared-pool-unplaced");
    gpa_decision_clear(&d);
    /* an UPDATE cannot change the spec: not judged again */
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}");
    cJSON *pod = cJSON_Parse(buf);
    gpa_request req = {
        .namespace_ = "team-x", .op = GPA_OP_UPDATE, .object = pod, .old_object = pod};
    gpa_error err = {0};
    CHECK_INT(gpa_engine_validate(&d, p, &req, &err), GPA_OK);
    CHECK(d.allowed);
    gpa_decision_clear(&d);
    /* a pod asking no GPU is never touched */
    cJSON_DeleteItemFromObject(
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"), 0),
        "resources");
    req.op = GPA_OP_CREATE;
    req.old_object = NULL;
    CHECK_INT(gpa_engine_mutate(&d, p, &req, &err), GPA_OK);
    CHECK(d.allowed && d.patch == NULL);
    gpa_decision_clear(&d);
    cJSON_Delete(pod);
}

static void warnings(const gpa_policy *p)
{
    char *w = gpa_policy_warnings(p);
    CHECK(w && strstr(w, "warning: pool same-as-plain cannot be told apart from shared pool "
                         "plain"));
    CHECK(w && !strstr(w, "pool ts-labelled cannot"));
    CHECK(w && !strstr(w, "has no nodeSelector"));
    free(w);
}

/* A shared pool without nodeSelector: every node may be one of its, so no GPU pod placed
 * elsewhere can be kept off it. check says so; the engine refuses such pods. */
static void no_node_selector(void)
{
    gpa_policy *p = load(HDR "  pools:\n"
                             "    - name: anywhere\n"
                             "      sharing: time-slicing\n"
                             "      timeSlicing: {resource: nvidia.com/gpu.shared, replicas: 2}\n"
                             "    - name: whole\n"
                             "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100}\n"
                             "      sharing: exclusive\n"
                             "  rules:\n"
                             "    - {name: w, match: {namespaces: [w-*]}, place: {pool: whole}}\n");
    if (!p) return;
    char *w = gpa_policy_warnings(p);
    CHECK(w && strstr(w, "warning: shared pool anywhere has no nodeSelector"));
    free(w);
    const gpa_shared_guard *g = gpa_shared_guard_of(p, NULL, false);
    CHECK_INT(g->n, 0);
    CHECK(g->inseparable == pool_named(p, "anywhere"));
    const char *who[] = {"team-x", "w-1"};
    for (int i = 0; i < 2; i++) {
        gpa_decision d = decide(p, true, who[i], "");
        CHECK(!d.allowed);
        CHECK_STR(d.reason, "shared-pool-unplaced");
        CHECK(d.message && strstr(d.message, "which has no nodeSelector"));
        gpa_decision_clear(&d);
    }
    gpa_policy_unref(p);
}

/* A policy without shared pools changes nothing: no guard, no patch for an unplaced pod. */
static void no_shared_pools(void)
{
    gpa_policy *p = load(HDR "  pools:\n"
                             "    - name: whole\n"
                             "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100}\n"
                             "      sharing: exclusive\n");
    if (!p) return;
    CHECK_INT(gpa_shared_guard_of(p, NULL, false)->n, 0);
    gpa_decision d = decide(p, true, "team-x", "");
    CHECK(d.allowed && d.patch == NULL && d.n_warnings == 0);
    gpa_decision_clear(&d);
    d = decide(p, false, "team-x", "");
    CHECK(d.allowed);
    gpa_decision_clear(&d);
    gpa_policy_unref(p);
}

/* The claim side's face-value CEL comparison and the exclusion selector built at load. */
static void cel(void)
{
    const char *l4 = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'";
    const char *t4 = "device.attributes['gpu.nvidia.com'].productName == \"Tesla T4\"";
    CHECK(gpa_cel_eq_contradicts(l4, t4));
    CHECK(gpa_cel_eq_contradicts(t4, l4));
    CHECK(!gpa_cel_eq_contradicts(l4, l4));
    CHECK(!gpa_cel_eq_contradicts(l4, "device.attributes['gpu.nvidia.com'].brand == 'Tesla'"));
    /* anything but a plain `X == literal` proves nothing */
    CHECK(!gpa_cel_eq_contradicts(l4, "device.attributes['gpu.nvidia.com'].productName != "
                                      "'NVIDIA L4'"));
    CHECK(!gpa_cel_eq_contradicts(l4, "a == 'x' || device.attributes['gpu.nvidia.com']"
                                      ".productName == 'T4'"));
    CHECK(!gpa_cel_eq_contradicts(l4, "device.attributes['gpu.nvidia.com'].productName == "
                                      "'T4' && true"));
    CHECK(!gpa_cel_eq_contradicts(NULL, l4));
    gpa_policy *p =
        load(HDR "  dra: {genericClasses: [gpu.nvidia.com]}\n"
                 "  pools:\n"
                 "    - name: two\n"
                 "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}\n"
                 "      dra:\n"
                 "        deviceClass: gpu.nvidia.com\n"
                 "        multiAllocatable: true\n"
                 "        selectors: [\"a == 'x'\", \"b == 'y'\"]\n"
                 "    - name: one\n"
                 "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-T4}\n"
                 "      dra:\n"
                 "        deviceClass: gpu.nvidia.com\n"
                 "        multiAllocatable: true\n"
                 "        selectors: [\"a == 'z'\"]\n"
                 "    - name: whole\n"
                 "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100}\n"
                 "      dra: {deviceClass: gpu.nvidia.com, selectors: [\"a == 'h'\"]}\n");
    if (!p) return;
    CHECK_STR(pool_named(p, "two")->dra.exclude_cel, "!((a == 'x') && (b == 'y'))");
    CHECK_STR(pool_named(p, "one")->dra.exclude_cel, "!(a == 'z')");
    CHECK(pool_named(p, "whole")->dra.exclude_cel == NULL); /* not multiAllocatable */
    gpa_policy_unref(p);
}

/* A multiAllocatable pool is shared only for pods DRA may serve: the two guard sets differ
 * exactly by it, and a policy without one has a single set. */
static void dra_guards(void)
{
    gpa_policy *p = load(HDR "  pools:\n"
                             "    - name: l4\n"
                             "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-L4}\n"
                             "      sharing: exclusive\n"
                             "      dra: {deviceClass: gpu.nvidia.com, multiAllocatable: true}\n"
                             "    - name: whole\n"
                             "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100}\n"
                             "      sharing: exclusive\n");
    if (!p) return;
    CHECK(p->shared_guards_dra != p->shared_guards);
    char *w = gpa_policy_warnings(p);
    CHECK(w == NULL || !strstr(w, "multiAllocatable")); /* both pools have a nodeSelector */
    free(w);
    CHECK_INT(gpa_shared_guard_of(p, NULL, false)->n, 0);
    const gpa_shared_guard *g = gpa_shared_guard_of(p, NULL, true);
    CHECK_INT(g->n, 1);
    CHECK_STR(g->excl[0].key, "nvidia.com/gpu.product");
    CHECK_STR(g->excl[0].values[0], "NVIDIA-L4");
    CHECK(g->excl[0].pools[0] == pool_named(p, "l4"));
    CHECK_INT(gpa_shared_guard_of(p, pool_named(p, "l4"), true)->n, 0);    /* its own pool */
    CHECK_INT(gpa_shared_guard_of(p, pool_named(p, "whole"), true)->n, 0); /* provably apart */
    CHECK(gpa_dra_reachable(p, "nvidia.com/gpu"));
    CHECK(gpa_dra_reachable(p, "deviceclass.resource.kubernetes.io/gpu.nvidia.com"));
    CHECK(!gpa_dra_reachable(p, "nvidia.com/mig-1g.10gb"));
    /* nvidia.com/gpu: kept off the L4s by the mutating webhook */
    gpa_decision d = decide(p, true, "team-x", "");
    CHECK(d.allowed && d.n_warnings == 1 && d.warnings[0] &&
          strstr(d.warnings[0], "NotIn [NVIDIA-L4] keeps it off shared pool l4"));
    gpa_decision_clear(&d);
    gpa_policy_unref(p);
    /* check's advice: a multiAllocatable pool without nodeSelector, a pool inseparable from one */
    p = load(HDR "  pools:\n"
                 "    - name: h100\n"
                 "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100}\n"
                 "      dra: {deviceClass: gpu.nvidia.com, multiAllocatable: true}\n"
                 "    - name: h100-plugin\n"
                 "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100}\n"
                 "      sharing: exclusive\n"
                 "    - name: l4\n"
                 "      dra: {deviceClass: gpu.nvidia.com, multiAllocatable: true}\n");
    if (!p) return;
    w = gpa_policy_warnings(p);
    CHECK(w && strstr(w, "warning: multiAllocatable pool l4 has no nodeSelector, so every node "
                         "may hold its shared DRA devices"));
    CHECK(w && strstr(w, "warning: pool h100-plugin cannot be told apart from multiAllocatable "
                         "pool h100: its nodeSelector holds all of h100's"));
    free(w);
    gpa_policy_unref(p);
    p = load(HDR POOLS RULES);
    if (!p) return;
    CHECK(p->shared_guards_dra == p->shared_guards);
    gpa_policy_unref(p);
}

int main(void)
{
    gpa_policy *p = load(HDR POOLS RULES);
    if (p) {
        guards(p);
        engine(p);
        warnings(p);
        gpa_policy_unref(p);
    }
    no_node_selector();
    no_shared_pools();
    cel();
    dra_guards();
    return check_done();
}
