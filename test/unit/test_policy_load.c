/*
 * test_policy_load.c - the policy loader: the shipped policies/ set loads into exactly the
 * model POLICY.md describes; every kind of error is reported at its exact file:line:col, all
 * errors are collected and no policy is returned; defaults; directory reading (ConfigMap
 * symlinks, dot-files, size cap); revision stability and sensitivity; describe output.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gpu_admission/policy.h"
#include "policy/policy_dra.h"
#include "policy/policy_model.h"

#define HDR "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n" /* lines 1-3 */

static int load(gpa_policy **p, const char *yaml, gpa_error *e)
{
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    *p = NULL;
    memset(e, 0, sizeof *e);
    return gpa_policy_load_sources(p, &s, 1, e);
}

static size_t count_lines(const char *s)
{
    size_t n = *s ? 1 : 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* exactly one error, at "p.yaml:<pos>: " and containing text */
static void err1(int tline, const char *yaml, const char *pos, const char *text)
{
    gpa_policy *p;
    gpa_error e;
    int rc = load(&p, yaml, &e);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "p.yaml:%s: ", pos);
    check_total++;
    if (rc != GPA_EPOLICY || p != NULL || e.code != GPA_EPOLICY ||
        strncmp(e.message, prefix, strlen(prefix)) != 0 || !strstr(e.message, text) ||
        count_lines(e.message) != 1) {
        check_failed++;
        fprintf(stderr, "%s:%d: want one error \"%s...%s\", got rc %d:\n%s\n", __FILE__, tline,
                prefix, text, rc, e.message);
    }
    gpa_policy_unref(p);
}
#define ERR1(yaml, pos, text) err1(__LINE__, yaml, pos, text)

static gpa_policy *ok(int tline, const char *yaml)
{
    gpa_policy *p;
    gpa_error e;
    int rc = load(&p, yaml, &e);
    check_total++;
    if (rc != GPA_OK || !p) {
        check_failed++;
        fprintf(stderr, "%s:%d: want OK, got rc %d:\n%s\n", __FILE__, tline, rc, e.message);
    }
    return p;
}
#define OK(yaml) ok(__LINE__, yaml)

static const gpa_pool *pool(const gpa_policy *p, const char *name)
{
    for (size_t i = 0; p && i < p->n_pools; i++)
        if (strcmp(p->pools[i].name, name) == 0) return &p->pools[i];
    return NULL;
}

static void test_shipped_policies(void)
{
    gpa_policy *p = NULL;
    gpa_error e = {0};
    CHECK_INT(gpa_policy_load_dir(&p, GPA_SOURCE_DIR "/policies", &e), GPA_OK);
    if (!p) {
        fprintf(stderr, "%s\n", e.message);
        check_failed++;
        return;
    }
    CHECK_INT(gpa_policy_pool_count(p), 3);
    CHECK_INT(gpa_policy_rule_count(p), 3);
    CHECK_INT(p->enforcement, GPA_ENFORCE_DENY);
    CHECK(p->unmatched_deny); /* shipped safe default since issue 33 */
    CHECK(p->dra.set);
    CHECK(p->has_tenancy);
    CHECK_INT(p->default_trust, GPA_TRUST_UNTRUSTED);
    CHECK_INT(p->n_tenants, 2);
    CHECK_STR(p->tenants[0].name, "research");
    CHECK_INT(p->tenants[0].trust, GPA_TRUST_UNTRUSTED);
    CHECK_INT(p->tenants[0].namespaces.n, 4);
    CHECK_STR(p->tenants[0].namespaces.items[0], "research"); /* its own name, claimed */
    CHECK_STR(p->tenants[0].namespaces.items[1], "research-*");
    CHECK_STR(p->tenants[0].namespaces.items[2], "sandbox");
    CHECK_STR(p->tenants[0].namespaces.items[3], "inference-*");
    CHECK_STR(p->tenants[1].name, "platform");
    CHECK_INT(p->tenants[1].trust, GPA_TRUST_TRUSTED);
    CHECK_STR(p->tenants[1].namespaces.items[0], "platform");
    CHECK_STR(p->tenants[1].namespaces.items[2], "prod-*");
    CHECK_STR(p->tenants[1].namespaces.items[3], "notebooks");

    const gpa_pool *mig = pool(p, "a100-mig"), *ts = pool(p, "t4-shared"),
                   *h = pool(p, "h100-train");
    CHECK(mig && ts && h);
    if (!mig || !ts || !h) goto out;
    CHECK_INT(mig->sharing, GPA_SHARING_MIG);
    CHECK_INT(mig->mig_strategy, GPA_MIG_MIXED);
    CHECK(mig->mig_model && strcmp(mig->mig_model->name, "A100-80GB") == 0);
    CHECK_INT(mig->n_profiles, 4);
    CHECK_STR(mig->profiles[0]->name, "1g.10gb");
    CHECK_STR(mig->profiles[1]->name, "2g.20gb");
    CHECK_STR(mig->profiles[2]->name, "3g.40gb");
    CHECK_STR(mig->profiles[3]->name, "7g.80gb");
    CHECK(mig->mig_product == NULL);
    CHECK_INT(mig->node_selector.n, 1);
    CHECK_STR(mig->node_selector.keys[0], "nvidia.com/gpu.product");
    CHECK_STR(mig->node_selector.values[0], "NVIDIA-A100-SXM4-80GB");
    CHECK_INT(mig->n_tolerations, 1);
    CHECK_STR(mig->tolerations[0].key, "nvidia.com/gpu");
    CHECK_STR(mig->tolerations[0].op, "Exists");
    CHECK(mig->tolerations[0].value == NULL);
    CHECK_STR(mig->tolerations[0].effect, "NoSchedule");
    CHECK(mig->allow_untrusted);
    CHECK(!mig->has_topology);
    CHECK(mig->shared_resource == NULL);

    CHECK_INT(ts->sharing, GPA_SHARING_TIME_SLICING);
    CHECK_STR(ts->shared_resource, "nvidia.com/gpu.shared");
    CHECK_INT(ts->replicas, 4);
    CHECK(!ts->allow_untrusted);
    CHECK_INT(ts->node_selector.n, 2);
    CHECK_STR(ts->node_selector.keys[1], "gpu-admission.io/pool");
    CHECK_STR(ts->node_selector.values[1], "t4-shared");
    CHECK_STR(ts->tolerations[0].key, "gpu-admission.io/shared");

    CHECK_INT(h->sharing, GPA_SHARING_EXCLUSIVE);
    CHECK_STR(h->runtime_class, "nvidia");
    CHECK(h->has_topology);
    CHECK_STR(h->topology.island_label, "nvidia.com/gpu.clique");
    CHECK_STR(h->topology.island_size_label, "gpu-admission.io/nvlink-island-size");
    CHECK_INT(h->topology.gpus_per_node, 8);
    CHECK_INT(h->topology.group_labels.n, 4);
    CHECK_STR(h->topology.group_labels.items[0], "gpu-admission.io/group");
    CHECK_STR(h->topology.group_labels.items[3], "batch.kubernetes.io/job-name");
    CHECK_INT(h->topology.mode, GPA_TOPO_REQUIRED);
    CHECK(h->allow_untrusted);

    const gpa_rule *r = p->rules;
    CHECK_STR(r[0].name, "inference-small");
    CHECK_STR(r[1].name, "notebooks");
    CHECK_STR(r[2].name, "training");
    CHECK(r[0].pool == mig && r[1].pool == ts && r[2].pool == h);
    CHECK(r[0].mig_auto && r[0].mig_profile == NULL);
    CHECK(!r[1].mig_auto && !r[2].mig_auto);
    CHECK_STR(r[0].namespaces.items[0], "inference-*");
    CHECK_STR(r[0].labels.keys[0], "app.kubernetes.io/component");
    CHECK_STR(r[0].labels.values[0], "inference");
    CHECK(!r[0].gpus.has_min && r[0].gpus.has_max && r[0].gpus.max == 1);
    CHECK(r[0].gpu_memory.has_max && r[0].gpu_memory.max == 40LL * 1024 * 1024 * 1024);
    CHECK(!r[0].gpu_memory.has_min);
    CHECK_INT(r[0].tenants.n, 1);
    CHECK_STR(r[0].tenants.items[0], "research");
    CHECK_INT(r[0].trust, GPA_TRUST_UNTRUSTED);
    CHECK_INT(r[1].trust, GPA_TRUST_UNSET);
    CHECK(r[2].gpus.has_min && r[2].gpus.min == 2 && !r[2].gpus.has_max);
    CHECK(r[0].deny_message == NULL);
    CHECK_CONTAINS(r[0].pos.file, "/policies/20-rules.yaml");
    CHECK_INT(r[0].pos.line, 12);
    CHECK_INT(r[2].pos.line, 28);
    CHECK_CONTAINS(mig->pos.file, "10-pools.yaml");

    /* GPU resource names: nvidia.com/gpu, the MIG pool's offered profiles, the shared one,
     * then the DRA extended resources of NVIDIA's GPU DeviceClasses (issue 33 path 6) */
    static const char *const res[] = {"nvidia.com/gpu",
                                      "nvidia.com/mig-1g.10gb",
                                      "nvidia.com/mig-2g.20gb",
                                      "nvidia.com/mig-3g.40gb",
                                      "nvidia.com/mig-7g.80gb",
                                      "nvidia.com/gpu.shared",
                                      "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
                                      "deviceclass.resource.kubernetes.io/mig.nvidia.com",
                                      "deviceclass.resource.kubernetes.io/vfio.gpu.nvidia.com"};
    CHECK_INT(p->gpu_resources.n, 9);
    for (size_t i = 0; i < 9 && i < p->gpu_resources.n; i++)
        CHECK_STR(p->gpu_resources.items[i], res[i]);
    CHECK_INT(p->n_dra_ext, 3);
    /* the shipped set's pools have dra blocks (safe defaults): gpu.nvidia.com is generic and
     * t4-shared's class (its first pool), mig.nvidia.com a100-mig's, vfio no pool's */
    CHECK(p->n_dra_ext == 3 && p->dra_ext[0].generic && !p->dra_ext[1].generic &&
          !p->dra_ext[2].generic && p->dra_ext[0].pool && p->dra_ext[1].pool &&
          !p->dra_ext[2].pool);
    if (p->n_dra_ext == 3 && p->dra_ext[0].pool && p->dra_ext[1].pool) {
        CHECK_STR(p->dra_ext[0].pool->name, "t4-shared");
        CHECK_STR(p->dra_ext[1].pool->name, "a100-mig");
    }

    const char *rev = gpa_policy_revision(p);
    CHECK_INT(strlen(rev), 64);
    CHECK(strspn(rev, "0123456789abcdef") == 64);

    char *d = gpa_policy_describe(p);
    CHECK_CONTAINS(d, "enforcement: deny\n");
    CHECK_CONTAINS(d, "unmatched:   deny\n");
    CHECK_CONTAINS(d, "  1. inference-small  (");
    CHECK_CONTAINS(d, "20-rules.yaml:12)\n");
    CHECK_CONTAINS(d, "  2. notebooks  (");
    CHECK_CONTAINS(d, "  3. training  (");
    CHECK_CONTAINS(d, "     place: pool a100-mig, migProfile auto\n");
    CHECK_CONTAINS(d, "     match: gpus >= 2\n");
    CHECK_CONTAINS(d, "gpuMemory <= 40Gi");
    CHECK_CONTAINS(d, "    resources:      nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, "
                      "nvidia.com/mig-3g.40gb, nvidia.com/mig-7g.80gb\n");
    CHECK_CONTAINS(d, "    nodeSelector:   {nvidia.com/gpu.sharing-strategy: time-slicing, "
                      "gpu-admission.io/pool: t4-shared}\n");
    CHECK_CONTAINS(d, "    tolerations:    {key: nvidia.com/gpu, operator: Exists, effect: "
                      "NoSchedule}\n");
    CHECK_CONTAINS(d, "  t4-shared  (");
    CHECK_CONTAINS(d, "    sharing:        time-slicing (replicas 4)\n");
    CHECK_CONTAINS(d, "    allowUntrusted: false\n");
    CHECK_CONTAINS(d, "gpusPerNode 8, mode required");
    char revline[80];
    snprintf(revline, sizeof revline, "revision: %s\n", rev);
    CHECK_CONTAINS(d, revline);
    /* rules appear in effective order */
    CHECK(d && strstr(d, "1. inference-small") &&
          strstr(d, "1. inference-small") < strstr(d, "2. notebooks") &&
          strstr(d, "2. notebooks") < strstr(d, "3. training"));
    free(d);

    /* ref/unref: the snapshot survives until the last reference goes */
    CHECK(gpa_policy_ref(p) == p);
    gpa_policy_unref(p);
    CHECK_STR(gpa_policy_revision(p), rev);
out:
    gpa_policy_unref(p);
}

static void test_defaults(void)
{
    gpa_policy *p = OK(HDR "  pools:\n"
                           "  - name: plain\n"
                           "  - name: ts\n"
                           "    sharing: time-slicing\n"
                           "  - name: m\n"
                           "    sharing: mps\n"
                           "    mps: {replicas: 2, resource: example.com/gpu-mps}\n"
                           "  - name: mig\n"
                           "    sharing: mig\n"
                           "    mig: {gpu: A100-80GB}\n"
                           "  - name: single\n"
                           "    sharing: mig\n"
                           "    mig: {gpu: A30-24GB, strategy: single, product: NVIDIA-A30}\n"
                           "  - name: topo\n"
                           "    topology: {islandLabel: nvidia.com/gpu.clique}\n"
                           "  rules:\n"
                           "  - name: r1\n"
                           "    place: {pool: mig}\n"
                           "  - name: r2\n"
                           "    place: {pool: mig, migProfile: 3g.40gb}\n"
                           "  - name: r3\n"
                           "    deny: \"no\"\n");
    if (!p) return;
    CHECK(!p->has_tenancy);
    CHECK_INT(p->default_trust, GPA_TRUST_UNTRUSTED);
    CHECK_INT(p->enforcement, GPA_ENFORCE_DENY);
    CHECK(!p->unmatched_deny);
    const gpa_pool *pl = pool(p, "plain"), *ts = pool(p, "ts"), *m = pool(p, "m"),
                   *mig = pool(p, "mig"), *single = pool(p, "single"), *topo = pool(p, "topo");
    CHECK(pl && ts && m && mig && single && topo);
    if (!pl || !ts || !m || !mig || !single || !topo) goto out;
    CHECK_INT(pl->sharing, GPA_SHARING_EXCLUSIVE);
    CHECK(pl->allow_untrusted);
    CHECK_INT(pl->node_selector.n, 0);
    CHECK(pl->runtime_class == NULL);
    CHECK_STR(ts->shared_resource, "nvidia.com/gpu.shared");
    CHECK_INT(ts->replicas, 0);
    CHECK(!ts->allow_untrusted);
    CHECK_STR(m->shared_resource, "example.com/gpu-mps");
    CHECK_INT(m->replicas, 2);
    CHECK(!m->allow_untrusted);
    CHECK_INT(mig->mig_strategy, GPA_MIG_MIXED);
    /* all seven A100-80GB profiles, sorted by (memory, slices) for auto-sizing */
    static const char *const order[] = {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb",
                                        "3g.40gb", "4g.40gb",    "7g.80gb"};
    CHECK_INT(mig->n_profiles, 7);
    for (size_t i = 0; i < 7 && i < mig->n_profiles; i++)
        CHECK_STR(mig->profiles[i]->name, order[i]);
    /* single strategy: +me profiles are left out of the default set */
    CHECK_INT(single->mig_strategy, GPA_MIG_SINGLE);
    CHECK_STR(single->mig_product, "NVIDIA-A30");
    CHECK_INT(single->n_profiles, 3);
    CHECK_STR(single->profiles[0]->name, "1g.6gb");
    CHECK_STR(single->profiles[2]->name, "4g.24gb");
    CHECK(topo->has_topology);
    CHECK_INT(topo->topology.mode, GPA_TOPO_REQUIRED);
    CHECK_INT(topo->topology.gpus_per_node, 0);
    CHECK(topo->topology.island_size_label == NULL);
    CHECK_INT(topo->topology.group_labels.n, 1);
    CHECK_STR(topo->topology.group_labels.items[0], "gpu-admission.io/group");
    CHECK(p->rules[0].mig_auto && p->rules[0].pool == mig);
    CHECK(!p->rules[1].mig_auto && p->rules[1].mig_profile &&
          strcmp(p->rules[1].mig_profile->name, "3g.40gb") == 0);
    CHECK_STR(p->rules[2].deny_message, "no");
    CHECK(p->rules[2].pool == NULL);
    /* mig-single adds no resource name (it keeps nvidia.com/gpu); mps adds its own */
    CHECK_INT(p->gpu_resources.n, 1 + 7 + 2 + GPA_DRA_BUILTIN_CLASSES);
    CHECK_STR(p->gpu_resources.items[0], "nvidia.com/gpu");
    CHECK_STR(p->gpu_resources.items[1], "nvidia.com/gpu.shared");
    CHECK_STR(p->gpu_resources.items[2], "example.com/gpu-mps");
    CHECK_STR(p->gpu_resources.items[3], "nvidia.com/mig-1g.10gb");
    CHECK_STR(p->gpu_resources.items[4], "nvidia.com/mig-1g.10gb.me");
    char *d = gpa_policy_describe(p);
    CHECK_CONTAINS(d, "tenancy:     none; every namespace is its own tenant, trust untrusted\n");
    CHECK_CONTAINS(d, "nvidia.com/gpu on NVIDIA-A30-MIG-1g.6gb");
    CHECK_CONTAINS(d, "     deny:  \"no\"\n");
    CHECK_CONTAINS(d, "     match: every GPU pod\n");
    CHECK_CONTAINS(d, "place: pool mig, migProfile 3g.40gb\n");
    free(d);
out:
    gpa_policy_unref(p);

    /* empty files, empty and comment-only documents are fine */
    p = OK("");
    CHECK(p && p->n_pools == 0 && p->n_rules == 0);
    gpa_policy_unref(p);
    p = OK("# nothing yet\n---\n---\n...\n");
    gpa_policy_unref(p);
    p = OK(HDR);
    gpa_policy_unref(p);
    p = OK(HDR "  pools:\n  rules: []\n");
    gpa_policy_unref(p);
}

static void test_errors(void)
{
    /* --- document level --- */
    ERR1("apiVersion: v1\nkind: GPUPolicy\n", "1:13",
         "apiVersion must be gpu-admission.io/v1alpha1");
    ERR1("apiVersion: gpu-admission.io/v1alpha1\nkind: ConfigMap\n", "2:7",
         "kind must be GPUPolicy, got \"ConfigMap\"");
    ERR1("kind: GPUPolicy\nspec: {}\n", "1:1", "apiVersion is required");
    ERR1("apiVersion: gpu-admission.io/v1alpha1\nspec: {}\n", "1:1", "kind is required");
    ERR1(HDR "  pools: []\nstatus: {}\n", "5:1", "policy document: unknown key \"status\"");
    ERR1("- a\n- b\n", "1:1", "policy document: expected a mapping, got a list");
    ERR1(HDR "  colour: red\n", "4:3",
         "spec: unknown key \"colour\" (allowed: tenancy, pools, rules, enforcement, unmatched, "
         "workloads, dra, isolation)");
    ERR1(HDR "  - a\n", "4:3", "spec: expected a mapping, got a list");
    ERR1("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nmetadata: {name: x, "
         "uid: 1}\n",
         "3:21", "metadata: unknown key \"uid\"");

    /* --- YAML itself --- */
    ERR1(HDR "  pools: [\n", "5:1", "YAML syntax error");
    ERR1(HDR "  pools: &p []\n", "4:10", "YAML anchors (&name) are not allowed");
    ERR1(HDR "  pools: []\n  rules: *p\n", "5:10", "YAML aliases (*name) are not allowed");
    ERR1(HDR "  pools: []\n  pools: []\n", "5:3", "duplicate key \"pools\" (first at 4:3)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: exclusive\n    sharing: mps\n", "7:5",
         "duplicate key \"sharing\" (first at 6:5)");
    ERR1(HDR "  pools:\n  - name: a\n    nodeSelector: {x: a, x: b}\n", "6:26",
         "duplicate key \"x\" (first at 6:20)");
    ERR1(HDR "  pools: !!set {}\n", "4:10", "YAML tag tag:yaml.org,2002:set is not supported");

    ERR1(HDR "  tenancy: {tenants: [{name: t}]}\n", "4:23",
         "tenant t: namespaces is required (a list of namespace globs)");
    ERR1(HDR "  tenancy: {tenants: [{name: Team_A, namespaces: [a]}]}\n", "4:30",
         "tenant name \"Team_A\" must start and end with a lowercase letter or digit");
    ERR1(HDR "  tenancy: {tenants: [{namespaces: [a]}]}\n", "4:23", "tenant: name is required");
    {
        char deep[1024];
        int o = snprintf(deep, sizeof deep, HDR "  pools: ");
        for (int i = 0; i < 80; i++)
            deep[o++] = '[';
        deep[o] = '\0';
        ERR1(deep, "4:72", "YAML nesting is too deep");
    }
    ERR1(HDR "  rules:\n  - name: r\n    deny:\n", "6:10", "deny: expected a string, got null");

    /* --- wrong types --- */
    ERR1(HDR "  pools: {a: 1}\n", "4:10", "spec.pools: expected a list, got a mapping");
    ERR1(HDR "  pools:\n  - name: 5\n", "5:11", "pool name: expected a string, got an integer");
    ERR1(HDR
         "  pools:\n  - name: a\n    sharing: time-slicing\n    timeSlicing: {replicas: \"4\"}\n",
         "7:29", "timeSlicing.replicas: expected an integer, got a string");
    ERR1(HDR "  pools:\n  - name: a\n    allowUntrusted: yes\n", "6:21",
         "allowUntrusted: expected true or false, got a string");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: {key: x}\n", "6:18",
         "tolerations: expected a list, got a mapping");
    ERR1(HDR "  pools:\n  - [a]\n", "5:5", "pool: expected a mapping, got a list");
    ERR1(HDR "  rules:\n  - name: r\n    match: [a]\n    deny: x\n", "6:12",
         "match: expected a mapping, got a list");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpus: {max: 1.5}}\n    deny: x\n", "6:25",
         "gpus.max: expected an integer, got a number");
    ERR1(HDR "  pools:\n  - name: a\n    nodeSelector: {k: 8}\n", "6:23",
         "nodeSelector[k]: expected a string, got an integer (quote it to make it a string)");
    ERR1(HDR "  pools:\n  - name:\n", "5:5", "pool: name is required");

    /* --- unknown keys everywhere --- */
    ERR1(HDR "  pools:\n  - name: a\n    colour: red\n", "6:5",
         "pool: unknown key \"colour\" (allowed: name, nodeSelector, tolerations, sharing, mig, "
         "timeSlicing, mps, allowUntrusted, runtimeClassName, topology, dra)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A100-80GB, size: 1}\n",
         "7:27", "mig: unknown key \"size\"");
    ERR1(HDR "  pools:\n  - name: a\n    topology: {islandLabel: x, zone: y}\n", "6:32",
         "topology: unknown key \"zone\"");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{key: a, operator: Exists, tolerance: 1}]\n",
         "6:46", "toleration: unknown key \"tolerance\"");
    ERR1(HDR "  rules:\n  - name: r\n    deny: x\n    priority: 1\n", "7:5",
         "rule: unknown key \"priority\" (allowed: name, match, place, deny)");
    ERR1(HDR "  rules:\n  - name: r\n    match: {namespace: [a]}\n    deny: x\n", "6:13",
         "match: unknown key \"namespace\"");
    ERR1(HDR "  pools: [{name: a}]\n  rules:\n  - name: r\n    place: {pool: a, node: x}\n", "7:22",
         "place: unknown key \"node\"");
    ERR1(HDR "  tenancy: {tenants: [], defaults: {}}\n", "4:26",
         "tenancy: unknown key \"defaults\"");
    ERR1(HDR "  tenancy: {tenants: [{name: t, namespaces: [a], team: x}]}\n", "4:50",
         "tenant: unknown key \"team\"");
    ERR1(HDR "  tenancy: {default: {trust: trusted, x: 1}}\n", "4:39",
         "tenancy.default: unknown key \"x\"");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpuMemory: {maximum: 1Gi}}\n    deny: x\n", "6:25",
         "gpuMemory: unknown key \"maximum\"");

    /* --- enums --- */
    ERR1(HDR "  pools:\n  - name: a\n    sharing: shared\n", "6:14",
         "sharing: invalid value \"shared\" (one of: exclusive, mig, time-slicing, mps)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A30-24GB, strategy: both}\n",
         "7:36", "mig.strategy: invalid value \"both\" (one of: mixed, single)");
    ERR1(HDR "  pools:\n  - name: a\n    topology: {islandLabel: x, mode: strict}\n", "6:38",
         "topology.mode: invalid value \"strict\" (one of: required, preferred)");
    ERR1(HDR "  enforcement: block\n", "4:16",
         "enforcement: invalid value \"block\" (one of: deny, warn, audit)");
    ERR1(HDR "  unmatched: reject\n", "4:14",
         "unmatched: invalid value \"reject\" (one of: allow, deny)");
    ERR1(HDR "  tenancy: {default: {trust: maybe}}\n", "4:30",
         "tenancy.default.trust: invalid value \"maybe\" (one of: trusted, untrusted)");
    ERR1(HDR "  rules:\n  - name: r\n    match: {trust: low}\n    deny: x\n", "6:20",
         "match.trust: invalid value \"low\"");

    /* --- MIG --- */
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A100}\n", "7:16",
         "unknown MIG GPU model \"A100\" (known: A100-40GB, A100-80GB, H100-80GB, A30-24GB, "
         "H100-94GB, H100-96GB, GH200, H200-141GB, B200, GB200, H20, GH200-144GB, RTX-PRO-6000, "
         "RTX-PRO-5000, RTX-PRO-4500, A800-40GB, A800-80GB, H800-80GB, H800-94GB)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A100-80GB, profiles: "
             "[1g.10gb, 1g.5gb]}\n",
         "7:47",
         "GPU model A100-80GB has no MIG profile \"1g.5gb\" (profiles: 1g.10gb, "
         "1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A100-80GB, profiles: "
             "[1g.10gb, 1g.10gb]}\n",
         "7:47", "MIG profile \"1g.10gb\" is listed twice");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A100-80GB, profiles: []}\n",
         "7:37", "mig.profiles: must not be empty");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n", "5:5",
         "pool a: sharing: mig needs a mig block naming the GPU model");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {strategy: mixed}\n", "7:10",
         "mig.gpu is required");
    ERR1(HDR "  pools:\n  - name: a\n    mig: {gpu: A100-80GB}\n", "6:10",
         "mig is only valid with sharing: mig (this pool's sharing is exclusive)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A30-24GB}\n"
             "    timeSlicing: {replicas: 2}\n",
         "8:18",
         "timeSlicing is only valid with sharing: time-slicing (this pool's sharing is mig)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: time-slicing\n    mps: {replicas: 2}\n", "7:10",
         "mps is only valid with sharing: mps (this pool's sharing is time-slicing)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: time-slicing\n    topology: {islandLabel: x}\n",
         "7:15", "topology is only valid with sharing: exclusive");
    ERR1(HDR
         "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A30-24GB, strategy: single}\n",
         "7:10", "mig.product is required with strategy: single");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A30-24GB, product: X}\n",
         "7:35", "mig.product is only used with strategy: single");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    nodeSelector: {nvidia.com/gpu.product: "
             "NVIDIA-A30}\n    mig: {gpu: A30-24GB, strategy: single, product: NVIDIA-A30}\n",
         "7:19",
         "nodeSelector must not contain nvidia.com/gpu.product on a mig pool with "
         "strategy: single");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A30-24GB, strategy: single, "
             "product: P, profiles: [1g.6gb+me]}\n",
         "7:67", "MIG profile 1g.6gb+me cannot be used with strategy: single");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mig\n    mig: {gpu: A30-24GB, strategy: single, "
             "product: \"bad product\"}\n",
         "7:53", "mig.product \"bad product\" is not a valid node label value");

    /* --- shared pools, topology, runtime class --- */
    ERR1(HDR "  pools:\n  - name: a\n    sharing: time-slicing\n    timeSlicing: {replicas: 0}\n",
         "7:29", "timeSlicing.replicas: must be at least 1 (got 0)");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: mps\n    mps: {resource: gpu-shared}\n", "7:21",
         "mps.resource \"gpu-shared\" is not an extended resource name");
    ERR1(HDR "  pools:\n  - name: a\n    sharing: time-slicing\n    timeSlicing: {resource: "
             "nvidia.com/mig-1g.10gb}\n",
         "7:29", "is a MIG resource name");
    ERR1(HDR "  pools:\n  - name: a\n    topology: {islandLabel: x, gpusPerNode: 0}\n", "6:45",
         "topology.gpusPerNode: must be at least 1 (got 0)");
    ERR1(HDR "  pools:\n  - name: a\n    topology: {gpusPerNode: 4}\n", "6:15",
         "topology.islandLabel is required");
    ERR1(HDR "  pools:\n  - name: a\n    topology: {islandLabel: \"a/b/c\"}\n", "6:29",
         "topology.islandLabel \"a/b/c\" is not a valid label key: may contain at most one '/'");
    ERR1(HDR "  pools:\n  - name: a\n    topology: {islandLabel: x, groupLabels: [ok, \"-bad\"]}\n",
         "6:50", "group label \"-bad\" must start and end with a letter or digit");
    ERR1(HDR "  pools:\n  - name: a\n    runtimeClassName: Nvidia\n", "6:23",
         "runtimeClassName \"Nvidia\" may contain only lowercase letters");
    ERR1(HDR "  pools:\n  - name: A_pool\n", "5:11", "pool name \"A_pool\"");

    /* --- tolerations --- */
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{key: a, operator: In}]\n", "6:38",
         "toleration operator: invalid value \"In\" (one of: Exists, Equal)");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{key: a, effect: NoRun}]\n", "6:36",
         "toleration effect: invalid value \"NoRun\" (one of: NoSchedule, PreferNoSchedule, "
         "NoExecute)");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{key: a, operator: Exists, value: v}]\n",
         "6:53", "toleration with operator Exists must not have a value");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{value: v}]\n", "6:19",
         "a toleration without a key must use operator: Exists");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{key: a, operator: Exists, effect: "
             "NoSchedule, tolerationSeconds: 30}]\n",
         "6:85", "tolerationSeconds is only valid with effect: NoExecute");
    ERR1(HDR "  pools:\n  - name: a\n    tolerations: [{key: \"bad key\", operator: Exists}]\n",
         "6:25", "toleration key \"bad key\"");

    /* --- label keys and values --- */
    ERR1(HDR "  pools:\n  - name: a\n    nodeSelector: {\"bad key\": x}\n", "6:20",
         "nodeSelector: label key \"bad key\" may contain only letters, digits");
    ERR1(HDR "  pools:\n  - name: a\n    nodeSelector: {Example.com/x: y}\n", "6:20",
         "label key \"Example.com/x\" prefix before '/' must be a DNS subdomain");
    ERR1(HDR "  pools:\n  - name: a\n    nodeSelector: {a: \"has space\"}\n", "6:23",
         "label value \"has space\" may contain only letters");
    ERR1(HDR "  rules:\n  - name: r\n    match: {labels: {\"-x\": y}}\n    deny: d\n", "6:22",
         "match.labels: label key \"-x\" must start and end with a letter or digit");

    /* --- rules --- */
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpus: {min: 4, max: 2}}\n    deny: d\n", "6:25",
         "gpus: min (4) is greater than max (2)");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpus: {min: -1}}\n    deny: d\n", "6:25",
         "gpus.min: must not be negative (got -1)");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpuMemory: {max: 40GB}}\n    deny: d\n", "6:30",
         "gpuMemory.max: quantity \"40GB\": unknown suffix \"GB\"");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpuMemory: {max: -1Gi}}\n    deny: d\n", "6:30",
         "gpuMemory.max: must not be negative");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpuMemory: {min: 2Gi, max: 1Gi}}\n    deny: d\n",
         "6:30", "gpuMemory: min (2Gi) is greater than max (1Gi)");
    ERR1(HDR "  rules:\n  - name: r\n    match: {gpuMemory: {max: [1]}}\n    deny: d\n", "6:30",
         "gpuMemory.max: expected a quantity such as 40Gi, got a list");
    ERR1(HDR "  rules:\n  - name: r\n    match: {namespaces: [ok, Research-*]}\n    deny: d\n",
         "6:30", "namespace glob \"Research-*\": character 'R' at position 1 is not allowed");
    ERR1(HDR "  rules:\n  - name: r\n    match: {namespaces: [\"\"]}\n    deny: d\n", "6:26",
         "empty namespace glob");
    ERR1(HDR "  rules:\n  - name: r\n    match: {namespaces: []}\n    deny: d\n", "6:25",
         "match.namespaces: must not be empty");
    ERR1(HDR "  tenancy: {tenants: [{name: t, namespaces: [\"ns_1\"]}]}\n", "4:46",
         "namespace glob \"ns_1\": character '_' at position 3");
    ERR1(HDR "  rules:\n  - name: r\n    match: {tenants: [ghost]}\n    deny: d\n", "6:23",
         "rule r: tenant \"ghost\" is not defined in tenancy.tenants");
    ERR1(HDR "  pools: [{name: a}]\n  rules:\n  - name: r\n    place: {pool: a}\n    deny: d\n",
         "8:11", "rule r has both place and deny: give exactly one");
    ERR1(HDR "  rules:\n  - name: r\n    match: {}\n", "5:5",
         "rule r needs either place: {pool: ...} or deny: \"message\"");
    ERR1(HDR "  rules:\n  - name: r\n    deny: \"\"\n", "6:11",
         "deny: the message must not be empty");
    ERR1(HDR "  rules:\n  - name: r\n    place: {}\n", "6:12", "place.pool is required");
    ERR1(HDR "  pools: [{name: a}, {name: b}]\n  rules:\n  - name: r\n    place: {pool: c}\n",
         "7:19", "rule r: no pool named \"c\" (pools: a, b)");
    ERR1(HDR "  rules:\n  - match: {}\n    deny: d\n", "5:5", "rule: name is required");
    ERR1(HDR "  rules:\n  - name: \"Bad Rule\"\n    deny: d\n", "5:11", "rule name \"Bad Rule\"");
    ERR1(HDR
         "  pools: [{name: a}]\n  rules:\n  - name: r\n    place: {pool: a, migProfile: auto}\n",
         "7:34",
         "rule r: migProfile is only valid for pools with sharing: mig (pool a is "
         "exclusive)");
    ERR1(HDR "  pools: [{name: a, sharing: mig, mig: {gpu: A100-80GB, profiles: [1g.10gb]}}]\n"
             "  rules:\n  - name: r\n    place: {pool: a, migProfile: 2g.20gb}\n",
         "7:34", "rule r: pool a does not offer MIG profile \"2g.20gb\" (offered: auto, 1g.10gb)");

    /* --- duplicates within one file --- */
    ERR1(HDR "  pools: [{name: a}, {name: a}]\n", "4:29",
         "pool \"a\" is already defined at p.yaml:4:11");
    ERR1(HDR "  rules: [{name: r, deny: x}, {name: r, deny: y}]\n", "4:38",
         "rule \"r\" is already defined at p.yaml:4:11");
    ERR1(HDR "  tenancy: {tenants: [{name: t, namespaces: [a]}, {name: t, namespaces: [b]}]}\n",
         "4:58", "tenant \"t\" is already defined at p.yaml:4:23");
    ERR1(HDR "  tenancy: {tenants: [{name: t, namespaces: [a]}]}\n  tenancy: {}\n", "5:3",
         "duplicate key \"tenancy\"");
    ERR1(HDR "---\n" HDR "  enforcement: warn\n---\n" HDR "  enforcement: audit\n", "13:3",
         "enforcement is already set at p.yaml:8:3 (at most once across all files)");
}

static void test_multi(void)
{
    /* errors from several files: all collected, sorted by file then position; the
     * cross-file ones point at the earlier definition */
    const char *a = HDR "  tenancy: {}\n  enforcement: warn\n  unmatched: deny\n"
                        "  pools: [{name: p1}, {name: p2, sharing: bogus}]\n";
    const char *b = HDR "  tenancy: {}\n  enforcement: deny\n  unmatched: allow\n"
                        "  pools: [{name: p1}]\n  rules:\n  - {name: r1, place: {pool: nope}}\n";
    const char *c = HDR "  rules:\n  - {name: r1, deny: x}\n  - {name: r2, place: {pool: p1}}\n";
    gpa_policy_source s[] = {
        {"dir/c.yaml", c, strlen(c)}, {"dir/b.yaml", b, strlen(b)}, {"dir/a.yaml", a, strlen(a)}};
    gpa_policy *p = (gpa_policy *)1;
    gpa_error e = {0};
    CHECK_INT(gpa_policy_load_sources(&p, s, 3, &e), GPA_EPOLICY);
    CHECK(p == NULL);
    CHECK_INT(e.code, GPA_EPOLICY);
    const char *want =
        "dir/a.yaml:7:43: sharing: invalid value \"bogus\" (one of: exclusive, mig, "
        "time-slicing, mps)\n"
        "dir/b.yaml:4:3: tenancy is already defined at dir/a.yaml:4:3 (at most one tenancy "
        "block across all files)\n"
        "dir/b.yaml:5:3: enforcement is already set at dir/a.yaml:5:3 (at most once across all "
        "files)\n"
        "dir/b.yaml:6:3: unmatched is already set at dir/a.yaml:6:3 (at most once across all "
        "files)\n"
        "dir/b.yaml:7:18: pool \"p1\" is already defined at dir/a.yaml:7:11\n"
        "dir/b.yaml:9:30: rule r1: no pool named \"nope\" (pools: p1, p2)\n"
        "dir/c.yaml:5:12: rule \"r1\" is already defined at dir/b.yaml:9:5";
    CHECK_STR(e.message, want);

    /* the same set minus the mistakes loads, and rules keep file order: b's, then c's */
    const char *b2 = HDR "  rules:\n  - {name: r0, place: {pool: p1}}\n";
    const char *a2 = HDR "  pools: [{name: p1}]\n";
    const char *c2 = HDR "  rules:\n  - {name: r1, deny: x}\n  - {name: r2, place: {pool: p1}}\n";
    gpa_policy_source s2[] = {
        {"d/c.yaml", c2, strlen(c2)}, {"d/a.yaml", a2, strlen(a2)}, {"d/b.yaml", b2, strlen(b2)}};
    CHECK_INT(gpa_policy_load_sources(&p, s2, 3, &e), GPA_OK);
    if (p) {
        CHECK_INT(p->n_rules, 3);
        CHECK_STR(p->rules[0].name, "r0");
        CHECK_STR(p->rules[1].name, "r1");
        CHECK_STR(p->rules[2].name, "r2");
        CHECK_STR(p->rules[0].pos.file, "d/b.yaml");
        CHECK_STR(p->rules[2].pos.file, "d/c.yaml");
        CHECK(p->rules[2].pool == &p->pools[0]);
        gpa_policy_unref(p);
    }

    /* more errors than fit: capped, with a count of the rest, every line well-formed */
    char *big = malloc(200000);
    size_t off = (size_t)sprintf(big, HDR "  pools:\n");
    for (int i = 0; i < 300; i++)
        off += (size_t)sprintf(big + off, "  - {name: p%d, sharing: nope}\n", i);
    gpa_policy_source s3 = {"big.yaml", big, off};
    CHECK_INT(gpa_policy_load_sources(&p, &s3, 1, &e), GPA_EPOLICY);
    CHECK(p == NULL);
    CHECK_CONTAINS(e.message, "big.yaml:5:25: sharing: invalid value \"nope\"");
    CHECK_CONTAINS(e.message, "more errors");
    size_t lines = count_lines(e.message);
    CHECK(lines >= 20 && lines <= 51);
    CHECK(strlen(e.message) < sizeof e.message);
    free(big);

    /* a path longer than the message buffer still yields its (cut) first error */
    char *lp = malloc(6001);
    memset(lp, 'd', 6000);
    lp[6000] = '\0';
    lp[5990] = '/';
    const char *bad2 = HDR "  unmatched: maybe\n  enforcement: nope\n";
    gpa_policy_source s3b = {lp, bad2, strlen(bad2)};
    CHECK_INT(gpa_policy_load_sources(&p, &s3b, 1, &e), GPA_EPOLICY);
    CHECK(strncmp(e.message, "dddd", 4) == 0);
    CHECK_CONTAINS(e.message, "\n... and 1 more error");
    CHECK(strlen(e.message) < sizeof e.message);
    free(lp);

    /* a file over the size cap is refused, naming it */
    size_t huge = (4u << 20) + 1;
    char *h = malloc(huge);
    memset(h, '#', huge);
    gpa_policy_source s4 = {"huge.yaml", h, huge};
    CHECK_INT(gpa_policy_load_sources(&p, &s4, 1, &e), GPA_EPOLICY);
    CHECK_CONTAINS(e.message, "huge.yaml:1:1: file is larger than 4 MiB");
    free(h);

    /* a YAML syntax error in one file does not hide errors in another */
    const char *bad = "a: [\n";
    const char *other = HDR "  unmatched: maybe\n";
    gpa_policy_source s5[] = {{"x/1.yaml", bad, strlen(bad)}, {"x/2.yaml", other, strlen(other)}};
    CHECK_INT(gpa_policy_load_sources(&p, s5, 2, &e), GPA_EPOLICY);
    CHECK_CONTAINS(e.message, "x/1.yaml:2:1: YAML syntax error");
    CHECK_CONTAINS(e.message, "\nx/2.yaml:4:14: unmatched: invalid value \"maybe\"");

    /* bytes that are not UTF-8: position computed from libyaml's byte offset */
    const char *nonutf = HDR "  pools: [{name: \"\xff\"}]\n";
    gpa_policy_source s6 = {"u.yaml", nonutf, strlen(nonutf)};
    CHECK_INT(gpa_policy_load_sources(&p, &s6, 1, &e), GPA_EPOLICY);
    CHECK_CONTAINS(e.message, "u.yaml:4:19: invalid input at byte");

    /* bounded sizes: lists and maps, and the number of pools */
    char *many = malloc(400000);
    off = (size_t)sprintf(many, HDR "  rules:\n  - name: r\n    deny: d\n    match:\n"
                                    "      namespaces:\n");
    for (int i = 0; i < 1100; i++)
        off += (size_t)sprintf(many + off, "      - ns%d\n", i);
    gpa_policy_source s7 = {"m.yaml", many, off};
    CHECK_INT(gpa_policy_load_sources(&p, &s7, 1, &e), GPA_EPOLICY);
    CHECK_STR(e.message, "m.yaml:9:7: match.namespaces: too many entries (1100; at most 1024)");
    off = (size_t)sprintf(many, HDR "  pools:\n");
    for (int i = 0; i < 4100; i++)
        off += (size_t)sprintf(many + off, "  - {name: p%d}\n", i);
    s7.len = off;
    CHECK_INT(gpa_policy_load_sources(&p, &s7, 1, &e), GPA_EPOLICY);
    CHECK_STR(e.message, "m.yaml:4101:5: too many pools (at most 4096)");
    off = (size_t)sprintf(many, HDR "  pools:\n  - name: a\n    nodeSelector:\n");
    for (int i = 0; i < 1025; i++)
        off += (size_t)sprintf(many + off, "      k%d: v\n", i);
    s7.len = off;
    CHECK_INT(gpa_policy_load_sources(&p, &s7, 1, &e), GPA_EPOLICY);
    CHECK_STR(e.message, "m.yaml:7:7: nodeSelector: too many entries (1025; at most 1024)");
    free(many);

    /* invalid arguments */
    CHECK_INT(gpa_policy_load_sources(NULL, s5, 2, &e), GPA_EINVAL);
    CHECK_INT(gpa_policy_load_sources(&p, NULL, 1, &e), GPA_EINVAL);
}

/* ---- revision ---- */

static char *rev_of(gpa_policy_source *s, size_t n)
{
    gpa_policy *p = NULL;
    gpa_error e;
    if (gpa_policy_load_sources(&p, s, n, &e) != GPA_OK) {
        fprintf(stderr, "revision input failed to load:\n%s\n", e.message);
        return strdup("load-failed");
    }
    char *r = strdup(gpa_policy_revision(p));
    gpa_policy_unref(p);
    return r;
}

static char *rev1(const char *yaml)
{
    gpa_policy_source s = {"r.yaml", yaml, strlen(yaml)};
    return rev_of(&s, 1);
}

#define BASE_POOLS                                                                                 \
    "  pools:\n"                                                                                   \
    "  - name: ts\n"                                                                               \
    "    nodeSelector: {a: \"1\", b: \"2\"}\n"                                                     \
    "    sharing: time-slicing\n"                                                                  \
    "    timeSlicing: {replicas: 4}\n"                                                             \
    "    tolerations: [{key: k, operator: Exists, effect: NoSchedule}]\n"                          \
    "  - name: mig\n"                                                                              \
    "    sharing: mig\n"                                                                           \
    "    mig: {gpu: A100-80GB, profiles: [2g.20gb, 1g.10gb]}\n"
#define BASE_RULES                                                                                 \
    "  rules:\n"                                                                                   \
    "  - {name: one, match: {namespaces: [a-*]}, place: {pool: ts}}\n"                             \
    "  - {name: two, match: {gpus: {min: 2}}, place: {pool: mig}}\n"

static void test_revision(void)
{
    char *base = rev1(HDR BASE_POOLS BASE_RULES);
    CHECK_INT(strlen(base), 64);

    /* same meaning, different text: comments, key order, flow vs block, quoting, defaults
     * spelled out, profiles reordered, split across files */
    const char *same[] = {
        "# a comment\n" HDR BASE_POOLS "  # another\n" BASE_RULES,
        HDR BASE_RULES BASE_POOLS,
        "kind: GPUPolicy\napiVersion: \"gpu-admission.io/v1alpha1\"\nmetadata: {name: other}\n"
        "spec:\n" BASE_POOLS BASE_RULES "  enforcement: deny\n  unmatched: allow\n",
        HDR "  pools:\n"
            "  - sharing: time-slicing\n"
            "    name: ts\n"
            "    timeSlicing: {replicas: 4, resource: nvidia.com/gpu.shared}\n"
            "    allowUntrusted: false\n"
            "    nodeSelector: {b: \"2\", a: \"1\"}\n"
            "    tolerations:\n"
            "    - effect: NoSchedule\n"
            "      operator: Exists\n"
            "      key: k\n"
            "  - name: mig\n"
            "    mig: {profiles: [1g.10gb, 2g.20gb], gpu: A100-80GB, strategy: mixed}\n"
            "    sharing: mig\n"
            "    allowUntrusted: true\n" BASE_RULES,
        HDR BASE_POOLS "  rules:\n"
                       "  - name: one\n"
                       "    match: {namespaces: [\"a-*\"]}\n"
                       "    place: {pool: ts}\n"
                       "  - name: two\n"
                       "    match: {gpus: {min: 2}}\n"
                       "    place: {pool: mig, migProfile: auto}\n",
    };
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        char *r = rev1(same[i]);
        CHECK_STR(r, base);
        if (strcmp(r, base) != 0) fprintf(stderr, "  variant %zu\n", i);
        free(r);
    }
    /* split into files (pools and rules in different documents and files) */
    const char *f1 = HDR BASE_POOLS, *f2 = HDR BASE_RULES;
    gpa_policy_source split[] = {{"s/20.yaml", f2, strlen(f2)}, {"s/10.yaml", f1, strlen(f1)}};
    char *r = rev_of(split, 2);
    CHECK_STR(r, base);
    free(r);
    const char *multi = HDR BASE_POOLS "---\n" HDR BASE_RULES;
    r = rev1(multi);
    CHECK_STR(r, base);
    free(r);

    /* any change of meaning changes it */
    const char *diff[] = {
        HDR BASE_POOLS BASE_RULES "  enforcement: warn\n",
        HDR BASE_POOLS BASE_RULES "  unmatched: deny\n",
        HDR BASE_POOLS "  rules:\n"
                       "  - {name: two, match: {gpus: {min: 2}}, place: {pool: mig}}\n"
                       "  - {name: one, match: {namespaces: [a-*]}, place: {pool: ts}}\n",
        HDR BASE_POOLS "  rules:\n"
                       "  - {name: one, match: {namespaces: [a-*]}, place: {pool: ts}}\n"
                       "  - {name: two, match: {gpus: {min: 3}}, place: {pool: mig}}\n",
        HDR BASE_POOLS "  rules:\n"
                       "  - {name: one, match: {namespaces: [a-*]}, place: {pool: ts}}\n"
                       "  - {name: two, match: {gpus: {min: 2}}, place: {pool: mig, "
                       "migProfile: 1g.10gb}}\n",
        HDR BASE_POOLS "  rules:\n"
                       "  - {name: one, match: {namespaces: [a-*]}, place: {pool: ts}}\n"
                       "  - {name: three, match: {gpus: {min: 2}}, place: {pool: mig}}\n",
        HDR "  tenancy: {default: {trust: trusted}}\n" BASE_POOLS BASE_RULES,
        HDR "  tenancy: {tenants: [{name: t, namespaces: [x]}]}\n" BASE_POOLS BASE_RULES,
    };
    char *seen[16];
    size_t nseen = 0;
    for (size_t i = 0; i < sizeof diff / sizeof *diff; i++) {
        char *d = rev1(diff[i]);
        CHECK(strcmp(d, base) != 0 && strcmp(d, "load-failed") != 0);
        for (size_t k = 0; k < nseen; k++)
            CHECK(strcmp(seen[k], d) != 0);
        seen[nseen++] = d;
    }
    /* small edits inside pools */
    static const struct {
        const char *from, *to;
    } edits[] = {
        {"replicas: 4", "replicas: 5"},
        {"[2g.20gb, 1g.10gb]", "[2g.20gb, 3g.40gb]"},
        {"b: \"2\"", "b: \"3\""},
        {"effect: NoSchedule", "effect: NoExecute"},
        {"gpu: A100-80GB", "gpu: H100-80GB"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        char buf[4096];
        const char *src = HDR BASE_POOLS BASE_RULES;
        const char *at = strstr(src, edits[i].from);
        CHECK(at != NULL);
        if (!at) continue;
        snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - src), src, edits[i].to,
                 at + strlen(edits[i].from));
        char *d = rev1(buf);
        CHECK(strcmp(d, base) != 0 && strcmp(d, "load-failed") != 0);
        for (size_t k = 0; k < nseen; k++)
            CHECK(strcmp(seen[k], d) != 0);
        seen[nseen++] = d;
    }
    for (size_t k = 0; k < nseen; k++)
        free(seen[k]);
    free(base);
}

/* ---- directories ---- */

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_dirs(void)
{
    char tmpl[] = "/tmp/gpa-policy-XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir) return;
    char path[512], path2[512];
    gpa_policy *p = NULL;
    gpa_error e = {0};

    /* empty directory: refused, so a bad mount never serves an empty policy by accident */
    CHECK_INT(gpa_policy_load_dir(&p, dir, &e), GPA_EPOLICY);
    CHECK_CONTAINS(e.message, "no *.yaml or *.yml policy files");

    /* the ConfigMap layout: ..2024_xx/ holds the files, ..data -> it, visible names are
     * symlinks through ..data; dot-files, sub-directories and other extensions are skipped */
    snprintf(path, sizeof path, "%s/..2024_01_01", dir);
    CHECK_INT(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/..2024_01_01/10-pools.yaml", dir);
    put_file(path, HDR "  pools: [{name: p1}]\n");
    snprintf(path, sizeof path, "%s/..2024_01_01/20-rules.yml", dir);
    put_file(path, HDR "  rules: [{name: r1, place: {pool: p1}}]\n");
    snprintf(path, sizeof path, "%s/..data", dir);
    CHECK_INT(symlink("..2024_01_01", path), 0);
    snprintf(path, sizeof path, "%s/10-pools.yaml", dir);
    CHECK_INT(symlink("..data/10-pools.yaml", path), 0);
    snprintf(path, sizeof path, "%s/20-rules.yml", dir);
    CHECK_INT(symlink("..data/20-rules.yml", path), 0);
    snprintf(path, sizeof path, "%s/.hidden.yaml", dir);
    put_file(path, "this: is: not: yaml: [\n");
    snprintf(path, sizeof path, "%s/README.md", dir);
    put_file(path, "not a policy\n");
    snprintf(path, sizeof path, "%s/sub.yaml", dir);
    CHECK_INT(mkdir(path, 0700), 0);
    CHECK_INT(gpa_policy_load_dir(&p, dir, &e), GPA_OK);
    if (p) {
        CHECK_INT(p->n_pools, 1);
        CHECK_INT(p->n_rules, 1);
        snprintf(path, sizeof path, "%s/20-rules.yml", dir);
        CHECK_STR(p->rules[0].pos.file, path);
        CHECK(p->rules[0].pool == &p->pools[0]);
        gpa_policy_unref(p);
        p = NULL;
    } else {
        fprintf(stderr, "%s\n", e.message);
    }

    /* a trailing slash does not double it in messages */
    snprintf(path, sizeof path, "%s/30-bad.yaml", dir);
    put_file(path, HDR "  pools: [{name: p1}]\n");
    snprintf(path2, sizeof path2, "%s/", dir);
    CHECK_INT(gpa_policy_load_dir(&p, path2, &e), GPA_EPOLICY);
    CHECK(p == NULL);
    char want[600];
    snprintf(want, sizeof want,
             "%s/30-bad.yaml:4:18: pool \"p1\" is already defined at %s/10-pools.yaml:4:11", dir,
             dir);
    CHECK_STR(e.message, want);
    unlink(path);

    /* too large a file */
    snprintf(path, sizeof path, "%s/40-big.yaml", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < (4 << 20) / 8 + 1; i++)
        fputs("# pad..\n", f); /* 8 bytes a line: 4 MiB + 8 */
    if (f) fclose(f);
    CHECK_INT(gpa_policy_load_dir(&p, dir, &e), GPA_EPOLICY);
    CHECK(p == NULL);
    CHECK_CONTAINS(e.message, "40-big.yaml:1:1: file is larger than 4 MiB");
    unlink(path);

    /* a broken symlink is an I/O error naming the file */
    snprintf(path, sizeof path, "%s/50-dangling.yaml", dir);
    CHECK_INT(symlink("..data/missing.yaml", path), 0);
    CHECK_INT(gpa_policy_load_dir(&p, dir, &e), GPA_EIO);
    CHECK_CONTAINS(e.message, "50-dangling.yaml: cannot open");
    unlink(path);

    /* missing directory */
    CHECK_INT(gpa_policy_load_dir(&p, "/nonexistent/gpa-policies", &e), GPA_EIO);
    CHECK_CONTAINS(e.message, "cannot open policy directory /nonexistent/gpa-policies");

    /* cleanup */
    const char *rm[] = {"10-pools.yaml",
                        "20-rules.yml",
                        ".hidden.yaml",
                        "README.md",
                        "..data",
                        "..2024_01_01/10-pools.yaml",
                        "..2024_01_01/20-rules.yml"};
    for (size_t i = 0; i < sizeof rm / sizeof *rm; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, rm[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/..2024_01_01", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/sub.yaml", dir);
    rmdir(path);
    rmdir(dir);
}

/* on-disk fixture dirs under test/unit/policies */
static void test_fixture_dirs(void)
{
    gpa_policy *p = NULL, *q = NULL;
    gpa_error e = {0};
    /* POLICY.md's example written as one differently laid-out file: same revision */
    CHECK_INT(gpa_policy_load_dir(&p, GPA_SOURCE_DIR "/test/unit/policies/one-file", &e), GPA_OK);
    CHECK_INT(gpa_policy_load_dir(&q, GPA_SOURCE_DIR "/policies", &e), GPA_OK);
    if (p && q) CHECK_STR(gpa_policy_revision(p), gpa_policy_revision(q));
    gpa_policy_unref(p);
    gpa_policy_unref(q);
    p = NULL;
    /* a broken set across files: every error, in file order */
    CHECK_INT(gpa_policy_load_dir(&p, GPA_SOURCE_DIR "/test/unit/policies/broken", &e),
              GPA_EPOLICY);
    CHECK(p == NULL);
    CHECK_CONTAINS(e.message, "/broken/10-pools.yaml:11:14: unknown MIG GPU model \"A100-XL\"");
    CHECK_CONTAINS(e.message, "/broken/10-pools.yaml:14:31: timeSlicing.replicas: must be at "
                              "least 1 (got 0)");
    CHECK_CONTAINS(e.message, "/broken/20-rules.yaml:9:21: rule train: no pool named \"h100\"");
    CHECK_CONTAINS(e.message, "/broken/20-rules.yaml:13:21: rule notebooks: migProfile is only "
                              "valid for pools with sharing: mig (pool t4 is time-slicing)");
    CHECK_INT(count_lines(e.message), 4);
}

int main(void)
{
    test_shipped_policies();
    test_defaults();
    test_errors();
    test_multi();
    test_revision();
    test_dirs();
    test_fixture_dirs();
    return check_done();
}
