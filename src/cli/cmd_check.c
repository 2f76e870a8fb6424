/*
 * cmd_check.c - `gpu-admission check DIR`: load a policy directory exactly as the server
 * does (gpa_policy_load_dir) and print what it means - pools, rules in effective order with
 * the file:line each came from, enforcement, revision - or every error, one per line.
 * Never prints a partial description of a set that failed to load.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "check_reach.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/reach.h"

typedef struct options {
    const char *dir;
    bool quiet, strict;
    const char *format, *witnesses;
} options;

static int positional(void *opts, const char *arg)
{
    options *o = opts;
    if (o->dir) {
        fprintf(stderr, "gpu-admission check: only one directory may be given\n");
        return GPA_CLI_USAGE;
    }
    o->dir = arg;
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--quiet", "-q", GPA_CLI_BOOL, offsetof(options, quiet), NULL,
     "  --quiet   print only the OK line (warnings still go to stderr)\n"},
    {"--strict", NULL, GPA_CLI_BOOL, offsetof(options, strict), NULL,
     "  --strict  treat warnings as errors (exit 1), e.g. in a policy repo's CI\n"},
    {"--output", "-o", GPA_CLI_STR, offsetof(options, format), NULL,
     "  -o, --output text|json\n"
     "            json: one document on stdout, {\"ok\", \"revision\", \"pools\", \"rules\",\n"
     "            \"findings\": [{\"severity\", \"kind\", \"rule\", \"file\", \"line\", \"col\",\n"
     "            \"message\", \"takenBy\", \"witness\"}]} (or {\"ok\": false, \"errors\"});\n"
     "            tenant findings carry \"tenants\", \"globs\", \"namespace\", \"owner\"\n"},
    {"--witnesses", NULL, GPA_CLI_STR, offsetof(options, witnesses), NULL,
     "  --witnesses FILE\n"
     "            write a policy test suite: a pod each reachable rule takes and each\n"
     "            finding's witness pod, expecting today's decisions\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  --help    this text\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "check",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head =
        "usage: gpu-admission check [--quiet] [--strict] [-o text|json] [--witnesses FILE] DIR\n"
        "\n"
        "Loads every *.yaml / *.yml file directly in DIR (lexical order; dot-files and\n"
        "sub-directories are skipped, symlinks followed) exactly as the server does, then\n"
        "prints the effective policy: enforcement, unmatched, tenants, GPU resource names,\n"
        "pools, rules in the order they are tried (first match wins) with the file:line\n"
        "each came from, and the revision. Last line:\n"
        "  OK: N pools, M rules, revision <sha256>\n"
        "\n"
        "On an invalid set, prints every error to stderr as path:LINE:COL: message and\n"
        "exits 1; nothing is printed to stdout.\n"
        "\n"
        "A valid set may still get warnings on stderr, path:LINE:COL: warning: rule R ...,\n"
        "for rules that can never match or that deny every pod they match, and from the\n"
        "exact reachability analysis: a rule never reached (every pod it matches is taken\n"
        "first: the rules that take them and a witness pod), a deny rule partly bypassed\n"
        "by an earlier placement (with a witness pod), a gpuMemory beyond every MIG\n"
        "profile of the pool, a rule reached only by pods it then denies (every witness\n"
        "pod, judged as the API server would, is refused); and info lines (unmatched GPU\n"
        "pods allowed, per tenant).\n"
        "About the tenants: every pair whose globs can both match one namespace (a witness\n"
        "namespace matching a glob of each; the first tenant listed owns it), and every\n"
        "tenant whose own globs do not claim its name (a namespace of that name in no\n"
        "tenant has its GPU pods and claims denied, tenant-name-taken).\n"
        "\n"
        "flags:\n",
    .tail = "\n"
            "exit status: 0 valid, 1 invalid set (or warnings with --strict), unreadable\n"
            "directory or usage error\n",
    .unknown = "unknown flag",
    .error_rc = 1,
    .dashdash = GPA_CLI_DASHDASH_LAST_ONE,
    .positional = positional,
};

int gpa_cmd_check(int argc, char **argv)
{
    options o = {0};
    int rc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (rc != GPA_CLI_CONTINUE) return rc;
    const char *dir = o.dir;
    bool quiet = o.quiet, strict = o.strict;
    if (!dir) {
        fprintf(stderr, "gpu-admission check: no policy directory given\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 1;
    }
    bool json = false;
    if (o.format && strcmp(o.format, "json") == 0)
        json = true;
    else if (o.format && strcmp(o.format, "text") != 0) {
        fprintf(stderr, "gpu-admission check: -o: expected text or json, got \"%s\"\n", o.format);
        return 1;
    }
    gpa_policy *p = NULL;
    gpa_error err = {0};
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "%s\n", err.message);
        fprintf(stderr, "gpu-admission check: %s: policy set refused\n", dir);
        if (json) {
            char *j = gpa_cli_check_errors_json(err.message);
            if (j) printf("%s\n", j);
            free(j);
        }
        return 1;
    }
    char *warnings = gpa_policy_warnings(p);
    gpa_reach *reach = NULL;
    gpa_error rerr = {0};
    bool refused = gpa_reach_analyze(p, &reach, &rerr) != GPA_OK;
    char *findings = reach ? gpa_reach_text(reach, false) : NULL;
    /* the tenants themselves: overlapping globs, names a foreign namespace could carry */
    gpa_tenancy_report *ten = NULL;
    gpa_error terr = {0};
    bool ten_refused = gpa_tenancy_analyze(p, &ten, &terr) != GPA_OK;
    char *ten_text = gpa_tenancy_text(ten);
    /* the rules reached only by pods the webhooks then refuse */
    gpa_cli_denied denied = {0};
    if (reach && gpa_cli_check_denied(&denied, p, reach) != 0) {
        fprintf(stderr, "gpu-admission check: cannot judge the witness pods\n");
        free(warnings);
        free(findings);
        free(ten_text);
        gpa_tenancy_report_free(ten);
        gpa_reach_free(reach);
        gpa_policy_unref(p);
        return 1;
    }
    char *denied_text = gpa_cli_denied_text(p, &denied);
    size_t n_warn = (warnings ? 1 : 0) + (refused ? 1 : 0) + gpa_reach_warning_count(reach) +
                    gpa_tenancy_warning_count(ten) + (ten_refused ? 1 : 0) + denied.n_denied;
    if (warnings) fputs(warnings, stderr);
    if (ten_text) fputs(ten_text, stderr);
    if (findings) fputs(findings, stderr);
    if (denied_text) fputs(denied_text, stderr);
    free(denied_text);
    if (refused) fprintf(stderr, "gpu-admission check: %s: warning: %s\n", dir, rerr.message);
    if (ten_refused) fprintf(stderr, "gpu-admission check: %s: warning: %s\n", dir, terr.message);
    free(ten_text);
    rc = 0;
    if (o.witnesses && reach) rc = gpa_cli_check_witnesses(p, reach, dir, o.witnesses);
    if (o.witnesses && refused) rc = 1;
    if (json) {
        char *j = gpa_cli_check_json(p, warnings, reach, &denied, refused ? rerr.message : NULL,
                                     ten, ten_refused ? terr.message : NULL);
        if (!j) {
            fprintf(stderr, "gpu-admission check: out of memory\n");
            rc = 1;
        } else {
            printf("%s\n", j);
        }
        free(j);
    }
    free(warnings);
    free(findings);
    gpa_tenancy_report_free(ten);
    if (rc == 0 && strict && n_warn > 0) {
        fprintf(stderr, "gpu-admission check: %s: warnings refused (--strict)\n", dir);
        rc = 1;
    }
    if (rc != 0 || json) {
        gpa_cli_denied_free(&denied);
        gpa_reach_free(reach);
        gpa_policy_unref(p);
        return rc != 0 ? rc : fflush(stdout) == 0 ? 0 : 1;
    }
    if (!quiet) {
        char *d = gpa_policy_describe(p);
        char *rt = reach ? gpa_cli_check_reach_text(p, reach, &denied) : NULL;
        if (!d || (reach && !rt)) {
            fprintf(stderr, "gpu-admission check: out of memory\n");
            free(d);
            gpa_cli_denied_free(&denied);
            gpa_reach_free(reach);
            gpa_policy_unref(p);
            return 1;
        }
        fputs(d, stdout);
        if (rt) fputs(rt, stdout);
        free(d);
        free(rt);
    }
    gpa_cli_denied_free(&denied);
    gpa_reach_free(reach);
    printf("OK: %zu pool%s, %zu rule%s, revision %s\n", gpa_policy_pool_count(p),
           gpa_policy_pool_count(p) == 1 ? "" : "s", gpa_policy_rule_count(p),
           gpa_policy_rule_count(p) == 1 ? "" : "s", gpa_policy_revision(p));
    gpa_policy_unref(p);
    return fflush(stdout) == 0 ? 0 : 1;
}
