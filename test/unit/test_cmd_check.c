/*
 * test_cmd_check.c - `gpu-admission check` as a user runs it: exit codes, what goes to stdout
 * and stderr, the OK line agreeing with the loader's revision, usage errors. The command's
 * source is compiled in here (it is one function over the core), with stdout/stderr
 * redirected to files around each call.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/cli/cmd_check.c"
#include "../../src/cli/flags.c"
#include "../../src/cli/check_reach.c"
#include "../../src/cli/check_denied.c"
#include "../../src/cli/input.c"
#include "check.h"

static char out_buf[65536], err_buf[65536];

static void slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

/* runs gpa_cmd_check(argv) with stdout/stderr captured into out_buf/err_buf */
static int run(int argc, char **argv)
{
    char o[] = "/tmp/gpa-check-out-XXXXXX", e[] = "/tmp/gpa-check-err-XXXXXX";
    int fo = mkstemp(o), fe = mkstemp(e);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fo, 1);
    dup2(fe, 2);
    int rc = gpa_cmd_check(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    close(fo);
    close(fe);
    slurp(o, out_buf, sizeof out_buf);
    slurp(e, err_buf, sizeof err_buf);
    unlink(o);
    unlink(e);
    return rc;
}

int main(void)
{
    char shipped[] = GPA_SOURCE_DIR "/policies";
    char broken[] = GPA_SOURCE_DIR "/test/unit/policies/broken";
    char cmd[] = "check", quiet[] = "--quiet", help[] = "--help", bogus[] = "--bogus";

    gpa_policy *p = NULL;
    gpa_error e;
    CHECK_INT(gpa_policy_load_dir(&p, shipped, &e), GPA_OK);
    char okline[128];
    snprintf(okline, sizeof okline, "OK: 3 pools, 3 rules, revision %s\n",
             p ? gpa_policy_revision(p) : "?");
    gpa_policy_unref(p);

    char *a1[] = {cmd, shipped, NULL};
    CHECK_INT(run(2, a1), 0);
    CHECK_STR(err_buf, "");
    size_t ol = strlen(out_buf), kl = strlen(okline);
    CHECK(ol > kl && strcmp(out_buf + ol - kl, okline) == 0); /* the last line */
    CHECK_CONTAINS(out_buf, "rules (3, effective order: first match wins):\n");
    CHECK_CONTAINS(out_buf, "policies/20-rules.yaml:12)\n");
    CHECK_CONTAINS(out_buf, "\nrevision: ");

    char *a2[] = {cmd, quiet, shipped, NULL};
    CHECK_INT(run(3, a2), 0);
    CHECK_STR(out_buf, okline);
    char *a2b[] = {cmd, shipped, quiet, NULL}; /* flags after the directory too */
    CHECK_INT(run(3, a2b), 0);
    CHECK_STR(out_buf, okline);

    char *a3[] = {cmd, broken, NULL};
    CHECK_INT(run(2, a3), 1);
    CHECK_STR(out_buf, "");
    /* one error per line, each path:line:col, then the summary */
    char want[2048];
    snprintf(want, sizeof want,
             "%s/10-pools.yaml:11:14: unknown MIG GPU model \"A100-XL\" (known: A100-40GB, "
             "A100-80GB, H100-80GB, A30-24GB, H100-94GB, H100-96GB, GH200, H200-141GB, B200, "
             "GB200, H20, GH200-144GB, RTX-PRO-6000, RTX-PRO-5000, RTX-PRO-4500, A800-40GB, "
             "A800-80GB, H800-80GB, H800-94GB)\n"
             "%s/10-pools.yaml:14:31: timeSlicing.replicas: must be at least 1 (got 0)\n"
             "%s/20-rules.yaml:9:21: rule train: no pool named \"h100\" (pools: a100, t4)\n"
             "%s/20-rules.yaml:13:21: rule notebooks: migProfile is only valid for pools with "
             "sharing: mig (pool t4 is time-slicing)\n"
             "gpu-admission check: %s: policy set refused\n",
             broken, broken, broken, broken, broken);
    CHECK_STR(err_buf, want);

    char missing[] = "/nonexistent/policies";
    char *a4[] = {cmd, missing, NULL};
    CHECK_INT(run(2, a4), 1);
    CHECK_CONTAINS(err_buf, "cannot open policy directory /nonexistent/policies");
    CHECK_STR(out_buf, "");

    char *a5[] = {cmd, NULL};
    CHECK_INT(run(1, a5), 1);
    CHECK_CONTAINS(err_buf, "no policy directory given");
    CHECK_CONTAINS(err_buf, "usage: gpu-admission check");

    char *a6[] = {cmd, help, NULL};
    CHECK_INT(run(2, a6), 0);
    CHECK_CONTAINS(
        out_buf,
        "usage: gpu-admission check [--quiet] [--strict] [-o text|json] [--witnesses FILE] DIR");
    CHECK_CONTAINS(out_buf, "OK: N pools, M rules, revision <sha256>");

    char *a7[] = {cmd, bogus, shipped, NULL};
    CHECK_INT(run(3, a7), 1);
    CHECK_CONTAINS(err_buf, "unknown flag --bogus");

    char *a8[] = {cmd, shipped, broken, NULL};
    CHECK_INT(run(3, a8), 1);
    CHECK_CONTAINS(err_buf, "only one directory may be given");

    /* the exact reachability findings: text on stderr, --strict refuses, -o json */
    char reach[] = GPA_SOURCE_DIR "/test/unit/policies/reach", strict[] = "--strict";
    char o_flag[] = "-o", json[] = "json", wit[] = "--witnesses";
    char *b1[] = {cmd, quiet, reach, NULL};
    CHECK_INT(run(3, b1), 0);
    CHECK_CONTAINS(err_buf, "/p.yaml:23:7: warning: rule no-sandbox-train never reached: every "
                            "pod it matches is taken first by rule train (");
    CHECK_CONTAINS(err_buf, "rule prod-eu never reached: every pod it matches is taken first by "
                            "rules small (");
    CHECK_CONTAINS(err_buf, "rule no-sandbox-big denies, but is partly bypassed: rule train-big");
    CHECK_CONTAINS(err_buf, "rule huge denies every pod it matches: its gpuMemory min "
                            "107374182400 bytes");
    CHECK(strstr(err_buf, "vision-eu") == NULL); /* vision-? does not cover it */
    char *b2[] = {cmd, strict, quiet, reach, NULL};
    CHECK_INT(run(4, b2), 1);
    CHECK_CONTAINS(err_buf, "warnings refused (--strict)");
    CHECK_STR(out_buf, "");
    char *b3[] = {cmd, o_flag, json, reach, NULL};
    CHECK_INT(run(4, b3), 0);
    cJSON *doc = cJSON_Parse(out_buf);
    CHECK(doc != NULL);
    const cJSON *fs = cJSON_GetObjectItem(doc, "findings");
    int never = 0, bypass = 0, mem = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, fs) {
        const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(f, "kind"));
        const char *rn = cJSON_GetStringValue(cJSON_GetObjectItem(f, "rule"));
        if (k && strcmp(k, "never-reached") == 0 && rn && strcmp(rn, "no-sandbox-train") == 0) {
            never++;
            const cJSON *w = cJSON_GetObjectItem(f, "witness");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(w, "namespace")), "sandbox");
            CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(w, "gpus")), 2);
            CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "line")), 23);
            const cJSON *by = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "takenBy"), 0);
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(by, "rule")), "train");
        }
        bypass += k && strcmp(k, "deny-bypassed") == 0;
        mem += k && strcmp(k, "memory-beyond-pool") == 0;
    }
    CHECK_INT(never, 1);
    CHECK_INT(bypass, 1);
    CHECK_INT(mem, 1);
    const cJSON *rr = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "reachability"), "rules");
    CHECK_INT(cJSON_GetArraySize(rr), 10);
    const cJSON *r0 = cJSON_GetArrayItem(rr, 0), *r1 = cJSON_GetArrayItem(rr, 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r0, "rule")), "train");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r0, "reached")));
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(r0, "witness"), "gpus")),
              2);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r1, "reached"))); /* no-sandbox-train */
    CHECK(cJSON_GetObjectItem(r1, "witness") == NULL);
    cJSON_Delete(doc);
    char *b4[] = {cmd, o_flag, json, broken, NULL};
    CHECK_INT(run(4, b4), 1);
    doc = cJSON_Parse(out_buf);
    CHECK(doc && cJSON_IsFalse(cJSON_GetObjectItem(doc, "ok")));
    const cJSON *e0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "errors"), 0);
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(e0, "line")), 11);
    CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(e0, "col")), 14);
    cJSON_Delete(doc);
    char bad_fmt[] = "yaml";
    char *b5[] = {cmd, o_flag, bad_fmt, reach, NULL};
    CHECK_INT(run(4, b5), 1);
    CHECK_CONTAINS(err_buf, "-o: expected text or json");
    /* the witness suite: one case per reached rule and per finding with a witness */
    char wfile[] = "/tmp/gpa-check-witnesses-XXXXXX.yaml";
    int wfd = mkstemps(wfile, 5);
    close(wfd);
    char *b6[] = {cmd, quiet, wit, wfile, reach, NULL};
    CHECK_INT(run(5, b6), 0);
    CHECK_CONTAINS(err_buf, "witness case(s) to");
    static char suite[65536];
    slurp(wfile, suite, sizeof suite);
    CHECK_CONTAINS(suite, "kind: GPUPolicyTest");
    CHECK_CONTAINS(suite, "name: \"rule train takes its witness\"");
    CHECK_CONTAINS(suite, "name: \"rule vision-eu takes its witness\"");
    CHECK(strstr(suite, "rule no-sandbox-train takes") == NULL);
    CHECK_CONTAINS(suite, "name: \"rule no-sandbox-train is never reached: its witness goes to "
                          "rule train\"");
    CHECK_CONTAINS(suite, "name: \"tenant platform: a GPU pod no rule takes\"");
    unlink(wfile);

    /* a rule reached only by pods it then denies (issue 31): a MIG rule for pods of 2+ GPUs
     * (each witness asks 2 MIG devices in one container: mig-count), next to a 1-GPU MIG
     * rule and a deny rule, which are not reported */
    char mdir[] = "/tmp/gpa-check-denied-XXXXXX";
    CHECK(mkdtemp(mdir) != NULL);
    char mfile[600];
    snprintf(mfile, sizeof mfile, "%s/p.yaml", mdir);
    FILE *mf = fopen(mfile, "w");
    CHECK(mf != NULL);
    if (mf) {
        fputs("apiVersion: gpu-admission.io/v1alpha1\nkind: GPUPolicy\nspec:\n"
              "  pools:\n"
              "    - name: mig\n"
              "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n"
              "      sharing: mig\n"
              "      mig: {strategy: mixed, gpu: A100-80GB}\n"
              "  rules:\n"
              "    - name: blocked\n"
              "      match: {namespaces: [blocked]}\n"
              "      deny: no GPUs here\n"
              "    - name: one\n"
              "      match: {gpus: {max: 1}}\n"
              "      place: {pool: mig}\n"
              "    - name: multi\n"
              "      match: {gpus: {min: 2}}\n"
              "      place: {pool: mig}\n",
              mf);
        fclose(mf);
    }
    char *c1[] = {cmd, mdir, NULL};
    CHECK_INT(run(2, c1), 0);
    CHECK_CONTAINS(err_buf, "/p.yaml:16:7: warning: rule multi is reached only by pods it then "
                            "denies: every witness pod is refused (mig-count: container main "
                            "asks 2 MIG devices");
    CHECK_CONTAINS(err_buf, "e.g. namespace 0, no labels, 2 GPUs");
    CHECK(strstr(err_buf, "rule one is reached only") == NULL);
    CHECK(strstr(err_buf, "rule blocked is reached only") == NULL);
    CHECK_CONTAINS(out_buf, "3. multi  reached only by pods it then denies (mig-count, see the "
                            "warning), e.g. namespace 0");
    CHECK_CONTAINS(out_buf, "2. one  reached, e.g.");
    char *c2[] = {cmd, strict, quiet, mdir, NULL};
    CHECK_INT(run(4, c2), 1);
    CHECK_CONTAINS(err_buf, "warnings refused (--strict)");
    char *c3[] = {cmd, o_flag, json, mdir, NULL};
    CHECK_INT(run(4, c3), 0);
    doc = cJSON_Parse(out_buf);
    int wd = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings")) {
        const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(f, "kind"));
        if (!k || strcmp(k, "witnesses-denied") != 0) continue;
        wd++;
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "rule")), "multi");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "reason")), "mig-count");
        CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "line")), 16);
        CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "col")), 7);
    }
    CHECK_INT(wd, 1);
    rr = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "reachability"), "rules");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(rr, 2), "admitted")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(rr, 1), "admitted")));
    cJSON_Delete(doc);
    /* the shipped set: every placing rule admits its witness */
    char *c4[] = {cmd, strict, quiet, shipped, NULL};
    CHECK_INT(run(4, c4), 0);
    unlink(mfile);
    rmdir(mdir);
    /* the tenants (issue 33): overlapping globs and an open tenant name are warnings on
     * stderr, --strict refuses them, -o json carries them; the shipped set has neither */
    char ten[] = GPA_SOURCE_DIR "/test/unit/policies/tenancy";
    char *t1[] = {cmd, quiet, ten, NULL};
    CHECK_INT(run(3, t1), 0);
    CHECK_CONTAINS(err_buf, "/p.yaml:11:9: warning: tenants dev and ext-acme can both match "
                            "namespace ext-acme-dev (dev's glob \"*-dev\", ext-acme's glob "
                            "\"ext-acme-*\"): tenants are tried in order, so it belongs to dev, "
                            "the first");
    CHECK_CONTAINS(err_buf, "/p.yaml:13:9: warning: tenant platform: its globs do not claim "
                            "namespace platform, its own name");
    CHECK(strstr(err_buf, "tenant ext-acme: its globs") == NULL); /* it claims its name */
    CHECK(strstr(err_buf, "tenant dev: its globs") == NULL);
    char *t2[] = {cmd, strict, quiet, ten, NULL};
    CHECK_INT(run(4, t2), 1);
    CHECK_CONTAINS(err_buf, "warnings refused (--strict)");
    char *t3[] = {cmd, o_flag, json, ten, NULL};
    CHECK_INT(run(4, t3), 0);
    doc = cJSON_Parse(out_buf);
    CHECK(doc != NULL);
    int overlaps = 0, names = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "findings")) {
        const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(f, "kind"));
        const cJSON *ts = cJSON_GetObjectItem(f, "tenants");
        if (k && strcmp(k, "tenant-overlap") == 0) {
            overlaps++;
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "severity")), "warning");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(ts, 0)), "dev");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(ts, 1)), "ext-acme");
            const cJSON *gs = cJSON_GetObjectItem(f, "globs");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(gs, 0)), "*-dev");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(gs, 1)), "ext-acme-*");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "namespace")), "ext-acme-dev");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "owner")), "dev");
            CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "line")), 11);
        }
        if (k && strcmp(k, "tenant-name-unclaimed") == 0) {
            names++;
            CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(ts, 0)), "platform");
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(f, "namespace")), "platform");
            CHECK(cJSON_IsNull(cJSON_GetObjectItem(f, "owner")));
            CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(f, "line")), 13);
        }
    }
    CHECK_INT(overlaps, 1);
    CHECK_INT(names, 1);
    /* the rule of tenant platform is reached through its own namespace, never through a
     * namespace "platform" in no tenant */
    const cJSON *tr = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "reachability"), "rules"), 0);
    CHECK_STR(
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(tr, "witness"), "namespace")),
        "ml-platform");
    cJSON_Delete(doc);
    char *t4[] = {cmd, strict, quiet, shipped, NULL};
    CHECK_INT(run(4, t4), 0);
    CHECK(strstr(err_buf, "warning") == NULL);
    CHECK_CONTAINS(out_buf, "OK: ");
    return check_done();
}
