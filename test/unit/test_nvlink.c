/*
 * test_nvlink.c - NVLink domains that span nodes (docs/policy.md "Multi-node NVLink"): the
 * topology.imexChannel loader and its file:line:col errors, the claim template patterns, the
 * nvidia.com/gpu.clique grammar GPU feature discovery writes, check's warning on a pinned
 * clique value, the revision, the engine's imex-channel check at its boundaries (one node
 * exactly, one GPU more, init containers, the warn mode, a stepped-aside pod), and the
 * Workload API step-aside (spec.schedulingGroup).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/engine.h"
#include "gpu_admission/policy.h"
#include "policy/policy_model.h"
#include "policy/policy_nvlink.h"

/* lines 1-12; the imexChannel block and what follows from line 13 */
#define HDR                                                                                        \
    "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"                              \
    "  pools:\n"                                                                                   \
    "    - name: gb200\n"                                                                          \
    "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-GB200}\n"                                 \
    "      sharing: exclusive\n"                                                                   \
    "      topology:\n"                                                                            \
    "        islandLabel: nvidia.com/gpu.clique\n"                                                 \
    "        gpusPerNode: 4\n"                                                                     \
    "        islandGpus: 72\n"                                                                     \
    "        levels: [{label: example.com/block, gpus: 288}]\n"

#define RULES                                                                                      \
    "  rules:\n"                                                                                   \
    "    - {name: t, match: {gpus: {min: 1}}, place: {pool: gb200}}\n"

static int load(gpa_policy **p, const char *head, const char *body, gpa_error *e)
{
    size_t n = strlen(head) + strlen(body) + 1;
    char *yaml = malloc(n);
    snprintf(yaml, n, "%s%s", head, body);
    gpa_policy_source s = {"p.yaml", yaml, strlen(yaml)};
    *p = NULL;
    memset(e, 0, sizeof *e);
    int rc = gpa_policy_load_sources(p, &s, 1, e);
    free(yaml);
    return rc;
}

/* exactly one error, at p.yaml:<pos> and containing text */
static void err1(int tline, const char *head, const char *body, const char *pos, const char *text)
{
    gpa_policy *p;
    gpa_error e;
    int rc = load(&p, head, body, &e);
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
#define ERR1(body, pos, text) err1(__LINE__, HDR, body, pos, text)

static gpa_policy *ok_in(const char *head, const char *body)
{
    gpa_policy *p;
    gpa_error e;
    int rc = load(&p, head, body, &e);
    CHECK_INT(rc, GPA_OK);
    if (rc != GPA_OK) fprintf(stderr, "%s\n", e.message);
    return p;
}
#define OK(body) ok_in(HDR, body)

static void test_errors(void)
{
    ERR1("        imexChannel: {enforcement: deny}\n", "13:22",
         "topology.imexChannel needs claimTemplate");
    ERR1("        imexChannel: {claimTemplate: \"a*b*\"}\n", "13:38", "at most one '*'");
    ERR1("        imexChannel: {claimTemplate: Bad_Name}\n", "13:38",
         "is not a ResourceClaimTemplate name or pattern");
    ERR1("        imexChannel: {claimTemplate: \"*-Channel\"}\n", "13:38",
         "is not a ResourceClaimTemplate name or pattern");
    ERR1("        imexChannel: {claimTemplate: x, enforcement: audit}\n", "13:54",
         "topology.imexChannel.enforcement");
    ERR1("        imexChannel: {claimTemplate: x, size: 2}\n", "13:41", "unknown key \"size\"");
    ERR1("        imexChannel: x-channel\n", "13:22", "topology.imexChannel");
    /* the island must span nodes, and both sizes must be known */
    err1(__LINE__,
         "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n  pools:\n"
         "    - name: hgx\n      sharing: exclusive\n      topology:\n"
         "        islandLabel: nvidia.com/gpu.clique\n        gpusPerNode: 8\n"
         "        islandGpus: 8\n",
         "        imexChannel: {claimTemplate: x}\n", "11:22",
         "islandGpus (8) is not wider than gpusPerNode (8)");
    err1(__LINE__,
         "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n  pools:\n"
         "    - name: g\n      sharing: exclusive\n      topology:\n"
         "        islandLabel: nvidia.com/gpu.clique\n        islandGpus: 72\n",
         "        imexChannel: {claimTemplate: x}\n", "10:22",
         "needs topology.gpusPerNode and topology.islandGpus");
    err1(__LINE__,
         "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n  pools:\n"
         "    - name: g\n      sharing: exclusive\n      topology:\n"
         "        islandLabel: nvidia.com/gpu.clique\n        gpusPerNode: 4\n",
         "        imexChannel: {claimTemplate: x}\n", "10:22",
         "needs topology.gpusPerNode and topology.islandGpus");
    gpa_policy *p = OK("        imexChannel: {claimTemplate: \"*-channel\"}\n");
    if (p) {
        CHECK_STR(p->pools[0].topology.imex_template, "*-channel");
        CHECK(!p->pools[0].topology.imex_warn);
    }
    gpa_policy_unref(p);
    p = OK("        imexChannel: {claimTemplate: cd-channel, enforcement: warn}\n");
    if (p) CHECK(p->pools[0].topology.imex_warn);
    gpa_policy_unref(p);
    p = OK("");
    if (p) CHECK(p->pools[0].topology.imex_template == NULL);
    gpa_policy_unref(p);
}

static void test_match(void)
{
    CHECK(gpa_imex_template_match("cd-channel", "cd-channel"));
    CHECK(!gpa_imex_template_match("cd-channel", "cd-channel2"));
    CHECK(!gpa_imex_template_match("cd-channel", "xcd-channel"));
    CHECK(gpa_imex_template_match("*-channel", "llama-channel"));
    CHECK(!gpa_imex_template_match("*-channel", "-channel")); /* the run is never empty */
    CHECK(!gpa_imex_template_match("*-channel", "llama-channels"));
    CHECK(gpa_imex_template_match("imex-*", "imex-a"));
    CHECK(!gpa_imex_template_match("imex-*", "imex-"));
    CHECK(!gpa_imex_template_match("imex-*", "imx-a"));
    CHECK(gpa_imex_template_match("cd-*-chan", "cd-x-chan"));
    CHECK(!gpa_imex_template_match("cd-*-chan", "cd--chan"));
    CHECK(!gpa_imex_template_match("ab*ba", "aba")); /* prefix and suffix may not overlap */
    CHECK(gpa_imex_template_match("*", "anything"));
    CHECK(!gpa_imex_template_match("*", ""));
    CHECK(gpa_imex_template_invalid("*") == NULL);
    CHECK(gpa_imex_template_invalid("*-channel") == NULL);
    CHECK(gpa_imex_template_invalid("a.b-c") == NULL);
    CHECK(gpa_imex_template_invalid("**") != NULL);
    CHECK(gpa_imex_template_invalid("-x") != NULL);
    CHECK(gpa_imex_template_invalid("") != NULL);
}

static void test_clique(void)
{
    /* GFD's own example (NVIDIA/k8s-device-plugin docs/gpu-feature-discovery/README.md) and
     * the bounds of the clique id (a uint32 printed with %d) */
    CHECK(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1") == NULL);
    CHECK(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.0") == NULL);
    CHECK(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.4294967295") == NULL);
    CHECK(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.32766") == NULL);
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.4294967296"),
                   "larger than 4294967295");
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.01"), "leading zero");
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31."), "empty");
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31"), "followed by '.'");
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1a"), "decimal");
    CHECK_CONTAINS(gpa_clique_invalid("7B968A6D-C8AA-45E1-9E07-E1E51BE99C31.1"), "lower case");
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6d-c8aa-45e1-9e07.1"), "cluster UUID");
    CHECK_CONTAINS(gpa_clique_invalid("7b968a6dc8aa45e19e07e1e51be99c31.1"), "cluster UUID");
    CHECK_CONTAINS(gpa_clique_invalid("clique-a"), "cluster UUID");
    CHECK_CONTAINS(gpa_clique_invalid(""), "cluster UUID");
    char a[64], b[64], c[64];
    gpa_clique_format(a, sizeof a, "gb200", 0);
    gpa_clique_format(b, sizeof b, "gb200", 3);
    gpa_clique_format(c, sizeof c, "gb300", 0);
    CHECK(gpa_clique_invalid(a) == NULL);
    CHECK(gpa_clique_invalid(b) == NULL);
    CHECK(gpa_clique_invalid(c) == NULL);
    CHECK(strncmp(a, b, 36) == 0);                /* one cluster, two cliques */
    CHECK(strcmp(b + 36, ".3") == 0);             /* the clique id after the UUID */
    CHECK(strncmp(a, c, 36) != 0);                /* another group, another cluster */
    CHECK(a[14] == '4' && strchr("89ab", a[19])); /* version 4, variant 10xx */
    char d[64];
    gpa_clique_format(d, sizeof d, "gb200", 0);
    CHECK_STR(d, a); /* deterministic: a simulation is reproducible */
}

/* check's warning on a pool pinned to a clique value GFD never writes */
static void lint(const char *value, bool want)
{
    char head[1024];
    snprintf(head, sizeof head,
             "apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n  pools:\n"
             "    - name: rack\n      nodeSelector: {nvidia.com/gpu.clique: \"%s\"}\n"
             "      sharing: exclusive\n",
             value);
    gpa_policy *p = ok_in(head, "");
    char *w = p ? gpa_policy_warnings(p) : NULL;
    bool got = w && strstr(w, "p.yaml:5:7: warning: pool rack selects nvidia.com/gpu.clique=") &&
               strstr(w, "a value GPU feature discovery never writes");
    check_total++;
    if (got != want) {
        check_failed++;
        fprintf(stderr, "%s:%d: warning %s for %s, got: %s\n", __FILE__, __LINE__,
                want ? "missing" : "unexpected", value, w ? w : "(none)");
    }
    free(w);
    gpa_policy_unref(p);
}

static void test_lint(void)
{
    lint("7b968a6d-c8aa-45e1-9e07-e1e51be99c31.7", false);
    lint("rack-7", true);
    lint("7b968a6d-c8aa-45e1-9e07-e1e51be99c31", true);
    lint("7B968A6D-C8AA-45E1-9E07-E1E51BE99C31.7", true);
}

/* check's warning: a rule that can place untrusted pods in a pool whose gangs need a channel
 * the claim webhooks refuse them */
static void trust_lint(const char *tenancy, const char *rule, bool want)
{
    char body[1024];
    snprintf(body, sizeof body,
             "        imexChannel: {claimTemplate: \"*-channel\"}\n%s  rules:\n    - %s\n", tenancy,
             rule);
    gpa_policy *p = OK(body);
    char *w = p ? gpa_policy_warnings(p) : NULL;
    bool got = w && strstr(w, "warning: rule t places untrusted pods in pool gb200, whose "
                              "multi-node gangs need an IMEX channel");
    check_total++;
    if (got != want) {
        check_failed++;
        fprintf(stderr, "%s:%d: warning %s for %s / %s, got: %s\n", __FILE__, __LINE__,
                want ? "missing" : "unexpected", tenancy, rule, w ? w : "(none)");
    }
    free(w);
    gpa_policy_unref(p);
}

static void test_trust_lint(void)
{
    const char *ten = "  tenancy:\n    tenants:\n"
                      "      - {name: ml, namespaces: [ml, \"ml-*\"], trust: trusted}\n"
                      "    default: {trust: untrusted}\n";
    const char *all_trusted = "  tenancy:\n    tenants:\n"
                              "      - {name: ml, namespaces: [ml, \"ml-*\"], trust: trusted}\n"
                              "    default: {trust: trusted}\n";
    trust_lint(ten, "{name: t, match: {gpus: {min: 1}}, place: {pool: gb200}}", true);
    trust_lint(ten, "{name: t, match: {tenants: [ml]}, place: {pool: gb200}}", false);
    trust_lint(ten, "{name: t, match: {trust: trusted}, place: {pool: gb200}}", false);
    trust_lint(ten, "{name: t, match: {trust: untrusted}, place: {pool: gb200}}", true);
    trust_lint(all_trusted, "{name: t, match: {gpus: {min: 1}}, place: {pool: gb200}}", false);
}

static void test_revision(void)
{
    gpa_policy *a = OK("");
    gpa_policy *b = OK("        imexChannel: {claimTemplate: \"*-channel\"}\n");
    gpa_policy *c = OK("        imexChannel: {claimTemplate: \"*-channel\", enforcement: warn}\n");
    gpa_policy *d = OK("        imexChannel: {claimTemplate: \"*-chan\"}\n");
    if (a && b && c && d) {
        CHECK(strcmp(gpa_policy_revision(a), gpa_policy_revision(b)) != 0);
        CHECK(strcmp(gpa_policy_revision(b), gpa_policy_revision(c)) != 0);
        CHECK(strcmp(gpa_policy_revision(b), gpa_policy_revision(d)) != 0);
    }
    gpa_policy_unref(a);
    gpa_policy_unref(b);
    gpa_policy_unref(c);
    gpa_policy_unref(d);
}

/* A pod of `size` pods x `gpus` GPUs with a group label; claims: extra spec members (JSON text
 * after "containers", may be ""); ctr_claims: the container's resources.claims (JSON array or
 * NULL); init: an init container JSON object or NULL. */
static cJSON *pod(const char *size, int gpus, const char *ctr_claims, const char *spec_extra,
                  const char *init)
{
    size_t cap = strlen(spec_extra) + 2048;
    char *buf = malloc(cap);
    char ann[128] = "";
    if (size)
        snprintf(ann, sizeof ann, ",\"annotations\":{\"gpu-admission.io/gang-size\":\"%s\"}", size);
    char claims[256] = "";
    if (ctr_claims) snprintf(claims, sizeof claims, ",\"claims\":%s", ctr_claims);
    char inits[512] = "";
    if (init) snprintf(inits, sizeof inits, ",\"initContainers\":[%s]", init);
    snprintf(buf, cap,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"w0\","
             "\"labels\":{\"gpu-admission.io/group\":\"llama\"}%s},\"spec\":{\"containers\":[{"
             "\"name\":\"train\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":%d}"
             "%s}}]%s%s}}",
             ann, gpus, claims, inits, spec_extra);
    cJSON *o = cJSON_Parse(buf);
    free(buf);
    CHECK(o != NULL);
    return o;
}

#define CHAN                                                                                       \
    ",\"resourceClaims\":[{\"name\":\"ch\",\"resourceClaimTemplateName\":\"llama-channel\"}]"

/* both webhooks: the mutating one, then the validating one on the mutated pod, and the
 * validating one alone (mutating webhook skipped) must agree on reason */
static void judge(int line, const gpa_policy *p, cJSON *o, const char *want_reason,
                  const char *want_text)
{
    gpa_error e = {0};
    gpa_request rq = {.namespace_ = "train-a", .op = GPA_OP_CREATE, .object = o};
    gpa_decision m = {0}, v = {0}, v2 = {0};
    CHECK_INT(gpa_engine_mutate(&m, p, &rq, &e), GPA_OK);
    gpa_request rq2 = rq;
    if (m.mutated) rq2.object = m.mutated;
    CHECK_INT(gpa_engine_validate(&v, p, &rq2, &e), GPA_OK);
    CHECK_INT(gpa_engine_validate(&v2, p, &rq, &e), GPA_OK);
    const gpa_decision *ds[] = {&m, &v, &v2};
    for (int i = 0; i < 3; i++) {
        const gpa_decision *d = ds[i];
        bool ok = want_reason ? (!d->allowed && d->reason && strcmp(d->reason, want_reason) == 0 &&
                                 d->message && strstr(d->message, want_text))
                              : d->allowed;
        check_total++;
        if (!ok) {
            check_failed++;
            fprintf(stderr, "%s:%d: decision %d: allowed %d reason %s message %s\n", __FILE__, line,
                    i, d->allowed, d->reason ? d->reason : "(none)",
                    d->message ? d->message : "(none)");
        }
    }
    gpa_decision_clear(&m);
    gpa_decision_clear(&v);
    gpa_decision_clear(&v2);
    cJSON_Delete(o);
}

static bool has_warning(const gpa_decision *d, const char *text)
{
    for (size_t i = 0; i < d->n_warnings; i++)
        if (strstr(d->warnings[i], text)) return true;
    return false;
}

static void test_engine(void)
{
    gpa_policy *p = OK("        imexChannel: {claimTemplate: \"*-channel\"}\n" RULES);
    if (!p) return;
    const char *need = "spans more than one 4-GPU node of pool gb200";
    /* one node exactly: no channel; one GPU more: the channel */
    judge(__LINE__, p, pod("1", 4, NULL, "", NULL), NULL, NULL);
    judge(__LINE__, p, pod("2", 2, NULL, "", NULL), NULL, NULL);
    judge(__LINE__, p, pod("4", 1, NULL, "", NULL), NULL, NULL);
    judge(__LINE__, p, pod("5", 1, NULL, "", NULL), "imex-channel", need);
    judge(__LINE__, p, pod("2", 4, NULL, "", NULL), "imex-channel",
          "gang of 8 GPUs (2 pods x 4 GPUs, annotation gpu-admission.io/gang-size)");
    /* size unknown: no verdict (the pod alone does not say it is in a gang) */
    judge(__LINE__, p, pod(NULL, 4, NULL, "", NULL), NULL, NULL);
    /* a bad size is the gang check's refusal, not ours */
    judge(__LINE__, p, pod("x", 4, NULL, "", NULL), "gang-size", "is not a gang size");
    /* the channel, listed where the driver reads it */
    judge(__LINE__, p, pod("18", 4, "[{\"name\":\"ch\"}]", CHAN, NULL), NULL, NULL);
    judge(__LINE__, p, pod("18", 4, "[{\"name\":\"other\"},{\"name\":\"ch\"}]", CHAN, NULL), NULL,
          NULL);
    /* pod level only, or a container listing a claim of another name */
    judge(__LINE__, p, pod("18", 4, NULL, CHAN, NULL), "imex-channel",
          "container train asks GPUs but does not list claim ch in resources.claims");
    judge(__LINE__, p, pod("18", 4, "[{\"name\":\"chx\"}]", CHAN, NULL), "imex-channel",
          "does not list claim ch");
    /* a template of another name, a ResourceClaim instead of a template, a name-less entry */
    judge(__LINE__, p,
          pod("18", 4, "[{\"name\":\"ch\"}]",
              ",\"resourceClaims\":[{\"name\":\"ch\",\"resourceClaimTemplateName\":\"gpus\"}]",
              NULL),
          "imex-channel", "resourceClaimTemplateName: <its spec.channel");
    judge(__LINE__, p,
          pod("18", 4, "[{\"name\":\"ch\"}]",
              ",\"resourceClaims\":[{\"name\":\"ch\",\"resourceClaimName\":\"llama-channel\"}]",
              NULL),
          "imex-channel", "matching *-channel>");
    judge(__LINE__, p,
          pod("18", 4, "[{\"name\":\"ch\"}]",
              ",\"resourceClaims\":[{\"resourceClaimTemplateName\":\"llama-channel\"}]", NULL),
          "imex-channel",
          "container train lists claim ch, which spec.resourceClaims does not define: add "
          "{name: ch, resourceClaimTemplateName: <its spec.channel.resourceClaimTemplate.name, "
          "matching *-channel>} to spec.resourceClaims");
    /* nothing listed anywhere: the whole recipe, with a name of our choosing */
    judge(__LINE__, p, pod("18", 4, NULL, "", NULL), "imex-channel",
          "add the channel of the job's ComputeDomain to the pod, spec.resourceClaims: [{name: "
          "imex-channel, resourceClaimTemplateName: <its spec.channel.resourceClaimTemplate.name, "
          "matching *-channel>}], and to container train, resources.claims: [{name: "
          "imex-channel}]");
    /* a hostile pod of many names: the helpful name is looked for among the first 64 entries
     * only, then the generic recipe (the walk stays linear in the pod's size) */
    {
        char *extra = malloc(100 * 64 + 64), *at = extra;
        at += sprintf(at, ",\"resourceClaims\":[");
        for (int i = 0; i < 100; i++)
            at += sprintf(at, "%s{\"name\":\"c%d\",\"resourceClaimTemplateName\":\"gpus\"}",
                          i ? "," : "", i);
        sprintf(at, "]");
        judge(__LINE__, p, pod("18", 4, "[{\"name\":\"x\"}]", extra, NULL), "imex-channel",
              "add the channel of the job's ComputeDomain to the pod");
        judge(__LINE__, p, pod("18", 4, "[{\"name\":\"c99\"}]", extra, NULL), "imex-channel",
              "add the channel of the job's ComputeDomain to the pod");
        free(extra);
    }
    /* malformed shapes are judged, never crash: resourceClaims an object, claims a string */
    judge(__LINE__, p, pod("18", 4, "\"ch\"", ",\"resourceClaims\":{\"name\":\"ch\"}", NULL),
          "imex-channel", need);
    /* an init container asking GPUs needs it too; one asking none does not */
    judge(__LINE__, p,
          pod("18", 4, "[{\"name\":\"ch\"}]", CHAN,
              "{\"name\":\"warm\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/"
              "gpu\":4}}}"),
          "imex-channel", "container warm asks GPUs");
    judge(__LINE__, p,
          pod("18", 4, "[{\"name\":\"ch\"}]", CHAN, "{\"name\":\"setup\",\"image\":\"x\"}"), NULL,
          NULL);
    /* whoever places the pods, the channel is still needed: Kueue TAS, the Workload API */
    judge(__LINE__, p,
          pod("18", 4, NULL, ",\"schedulingGates\":[{\"name\":\"kueue.x-k8s.io/topology\"}]", NULL),
          "imex-channel", need);
    judge(__LINE__, p,
          pod("18", 4, NULL, ",\"schedulingGroup\":{\"podGroupName\":\"llama\"}", NULL),
          "imex-channel", need);
    gpa_policy_unref(p);

    /* enforcement warn: admitted, one short warning naming the template */
    p = OK("        imexChannel: {claimTemplate: \"*-channel\", enforcement: warn}\n" RULES);
    if (!p) return;
    cJSON *o = pod("18", 4, NULL, "", NULL);
    gpa_error e = {0};
    gpa_request rq = {.namespace_ = "train-a", .op = GPA_OP_CREATE, .object = o};
    gpa_decision d = {0};
    CHECK_INT(gpa_engine_validate(&d, p, &rq, &e), GPA_OK);
    CHECK(d.allowed);
    CHECK(d.reason == NULL);
    CHECK(has_warning(&d, "gang of 72 GPUs spans nodes of pool gb200: add the IMEX channel claim "
                          "(template *-channel)"));
    gpa_decision_clear(&d);
    cJSON_Delete(o);
    gpa_policy_unref(p);

    /* mutate --explain says why no channel was asked of a pod of unknown gang size */
    p = OK("        imexChannel: {claimTemplate: \"*-channel\"}\n" RULES);
    if (p) {
        cJSON *u = pod(NULL, 4, NULL, "", NULL);
        gpa_request rx = {
            .namespace_ = "train-a", .op = GPA_OP_CREATE, .object = u, .explain = true};
        gpa_decision dx = {0};
        CHECK_INT(gpa_engine_validate(&dx, p, &rx, &e), GPA_OK);
        bool said = false;
        for (size_t i = 0; i < dx.n_explain; i++)
            said = said || strcmp(dx.explain[i], "IMEX channel: gang size unknown, not checked "
                                                 "(pool gb200 needs one for gangs of more "
                                                 "than 4 GPUs)") == 0;
        CHECK(said);
        gpa_decision_clear(&dx);
        cJSON_Delete(u);
    }
    gpa_policy_unref(p);

    /* a pool without imexChannel: nothing asked */
    p = OK(RULES);
    if (p) judge(__LINE__, p, pod("18", 4, NULL, "", NULL), NULL, NULL);
    gpa_policy_unref(p);
}

/* spec.schedulingGroup: no gang pod affinity, one warning; anything but an object is not the
 * Workload API and gets the affinity as before */
static void test_workload_api(void)
{
    gpa_policy *p = OK(RULES);
    if (!p) return;
    const char *sg[] = {",\"schedulingGroup\":{\"podGroupName\":\"llama\"}",
                        ",\"schedulingGroup\":{}", ",\"schedulingGroup\":\"llama\"",
                        ",\"schedulingGroup\":null", ""};
    const bool aside[] = {true, true, false, false, false};
    for (size_t i = 0; i < sizeof sg / sizeof sg[0]; i++) {
        cJSON *o = pod("2", 4, NULL, sg[i], NULL);
        gpa_error e = {0};
        gpa_request rq = {.namespace_ = "train-a", .op = GPA_OP_CREATE, .object = o};
        gpa_decision d = {0};
        CHECK_INT(gpa_engine_mutate(&d, p, &rq, &e), GPA_OK);
        char *patch = d.patch ? cJSON_PrintUnformatted(d.patch) : NULL;
        bool affinity = patch && strstr(patch, "podAffinity");
        bool warned = has_warning(&d, "no gang pod affinity: the Kubernetes Workload API "
                                      "(spec.schedulingGroup) places the pod");
        check_total++;
        if (affinity == aside[i] || warned != aside[i]) {
            check_failed++;
            fprintf(stderr, "%s:%d: schedulingGroup %s: affinity %d warned %d\n", __FILE__,
                    __LINE__, sg[i], affinity, warned);
        }
        free(patch);
        gpa_decision_clear(&d);
        cJSON_Delete(o);
    }
    gpa_policy_unref(p);
}

int main(void)
{
    test_errors();
    test_match();
    test_clique();
    test_lint();
    test_trust_lint();
    test_revision();
    test_engine();
    test_workload_api();
    return check_done();
}
