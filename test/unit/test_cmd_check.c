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
             "GB200, H20, GH200-144GB, RTX-PRO-6000, A800-40GB, A800-80GB, H800-80GB, H800-94GB)\n"
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
    CHECK_CONTAINS(out_buf, "usage: gpu-admission check [--quiet] [--strict] DIR");
    CHECK_CONTAINS(out_buf, "OK: N pools, M rules, revision <sha256>");

    char *a7[] = {cmd, bogus, shipped, NULL};
    CHECK_INT(run(3, a7), 1);
    CHECK_CONTAINS(err_buf, "unknown flag --bogus");

    char *a8[] = {cmd, shipped, broken, NULL};
    CHECK_INT(run(3, a8), 1);
    CHECK_CONTAINS(err_buf, "only one directory may be given");
    return check_done();
}
