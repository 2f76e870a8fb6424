/*
 * check_reach.c - what `gpu-admission check` adds on top of loading a set: the exact
 * reachability findings (reach.h) as text or JSON for CI annotations, and the witness suite
 * (`--witnesses FILE`): one case per rule (a pod it takes) and one per finding's witness,
 * expecting today's decisions, so a policy repository's tests cover every rule.
 *
 * The witness suite is also a cross-check of the analysis against the engine: every case is
 * judged before it is written, and a rule's case whose pod the engine does not give to that
 * rule is refused as an internal error instead of being recorded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/judge.h"
#include "gpu_admission/reach.h"
#include "gpu_admission/suite.h"
#include "gpu_admission/yamljson.h"
#include "check_reach.h"

static const char *kind_name(gpa_reach_kind k)
{
    switch (k) {
    case GPA_REACH_NEVER:
        return "never-reached";
    case GPA_REACH_BYPASS:
        return "deny-bypassed";
    case GPA_REACH_MEM_BEYOND:
        return "memory-beyond-pool";
    default:
        return "unmatched";
    }
}

static cJSON *pod_json(const gpa_reach_pod *w)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "namespace", w->ns);
    cJSON *l = cJSON_AddObjectToObject(o, "labels");
    for (size_t i = 0; i < w->n_labels; i++)
        cJSON_AddStringToObject(l, w->keys[i], w->values[i]);
    cJSON_AddNumberToObject(o, "gpus", (double)w->gpus);
    if (w->has_mem) {
        char b[32];
        snprintf(b, sizeof b, "%" PRId64, w->mem);
        cJSON_AddStringToObject(o, "gpuMemory", b);
    } else {
        cJSON_AddNullToObject(o, "gpuMemory");
    }
    return o;
}

/* "FILE:LINE:COL: warning: rule NAME ..." lines of the conservative lint, as JSON findings. */
static void lint_json(cJSON *arr, const char *lint)
{
    for (const char *s = lint; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        char *line = strndup(s, n);
        s += n + (nl ? 1 : 0);
        if (!line) return;
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "severity", "warning");
        cJSON_AddStringToObject(f, "kind", "lint");
        char *w = strstr(line, ": warning: ");
        if (w) {
            *w = '\0';
            const char *msg = w + strlen(": warning: ");
            char *c2 = strrchr(line, ':');
            char *c1 = c2 ? (*c2 = '\0', strrchr(line, ':')) : NULL;
            if (c1) *c1 = '\0';
            cJSON_AddStringToObject(f, "file", line);
            cJSON_AddNumberToObject(f, "line", c1 ? atoi(c1 + 1) : 0);
            cJSON_AddNumberToObject(f, "col", c2 ? atoi(c2 + 1) : 0);
            if (strncmp(msg, "rule ", 5) == 0) {
                size_t k = strcspn(msg + 5, " ");
                char *rn = strndup(msg + 5, k);
                if (rn) cJSON_AddStringToObject(f, "rule", rn);
                free(rn);
            }
            cJSON_AddStringToObject(f, "message", msg);
        } else {
            cJSON_AddStringToObject(f, "message", line);
        }
        cJSON_AddItemToArray(arr, f);
        free(line);
    }
}

/* The tenancy findings: "tenant-overlap" (tenants [a, b], globs [ga, gb], namespace, owner)
 * and "tenant-name-unclaimed" (tenants [a], namespace = its name, owner or null). */
static void tenancy_json(cJSON *arr, const gpa_policy *p, const gpa_tenancy_report *t,
                         const char *error)
{
    for (size_t i = 0; t && i < t->n; i++) {
        const gpa_tenancy_finding *f = &t->findings[i];
        bool ov = f->kind == GPA_TENANCY_OVERLAP;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "severity", "warning");
        cJSON_AddStringToObject(j, "kind", ov ? "tenant-overlap" : "tenant-name-unclaimed");
        if (f->file) {
            cJSON_AddStringToObject(j, "file", f->file);
            cJSON_AddNumberToObject(j, "line", f->line);
            cJSON_AddNumberToObject(j, "col", f->col);
        }
        cJSON *ts = cJSON_AddArrayToObject(j, "tenants");
        cJSON_AddItemToArray(ts, cJSON_CreateString(gpa_policy_tenant_name(p, f->a)));
        if (ov) {
            cJSON_AddItemToArray(ts, cJSON_CreateString(gpa_policy_tenant_name(p, f->b)));
            cJSON *gs = cJSON_AddArrayToObject(j, "globs");
            cJSON_AddItemToArray(gs, cJSON_CreateString(f->glob_a));
            cJSON_AddItemToArray(gs, cJSON_CreateString(f->glob_b));
        }
        cJSON_AddStringToObject(j, "namespace", f->ns);
        if (f->owner != SIZE_MAX)
            cJSON_AddStringToObject(j, "owner", gpa_policy_tenant_name(p, f->owner));
        else
            cJSON_AddNullToObject(j, "owner");
        cJSON_AddStringToObject(j, "message", f->message);
        cJSON_AddItemToArray(arr, j);
    }
    if (t && t->more_pairs) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "severity", "warning");
        cJSON_AddStringToObject(j, "kind", "tenant-overlap-more");
        cJSON_AddNumberToObject(j, "count", (double)t->more_pairs);
        cJSON_AddStringToObject(j, "message", "more pairs of tenants can match one namespace");
        cJSON_AddItemToArray(arr, j);
    }
    if (error) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "severity", "warning");
        cJSON_AddStringToObject(j, "kind", "tenancy-analysis-refused");
        cJSON_AddStringToObject(j, "message", error);
        cJSON_AddItemToArray(arr, j);
    }
}

char *gpa_cli_check_json(const gpa_policy *p, const char *lint, const gpa_reach *r,
                         const char *reach_error, const gpa_tenancy_report *ten,
                         const char *ten_error)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", true);
    cJSON_AddStringToObject(o, "revision", gpa_policy_revision(p));
    cJSON_AddNumberToObject(o, "pools", (double)gpa_policy_pool_count(p));
    cJSON_AddNumberToObject(o, "rules", (double)gpa_policy_rule_count(p));
    cJSON *arr = cJSON_AddArrayToObject(o, "findings");
    lint_json(arr, lint);
    for (size_t i = 0; r && i < r->n_findings; i++) {
        const gpa_reach_finding *f = &r->findings[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "severity", f->kind == GPA_REACH_UNMATCHED ? "info" : "warning");
        cJSON_AddStringToObject(j, "kind", kind_name(f->kind));
        if (f->file) {
            cJSON_AddStringToObject(j, "file", f->file);
            cJSON_AddNumberToObject(j, "line", f->line);
            cJSON_AddNumberToObject(j, "col", f->col);
        }
        if (f->kind != GPA_REACH_UNMATCHED)
            cJSON_AddStringToObject(j, "rule", gpa_policy_rule_name(p, f->rule));
        if (f->kind == GPA_REACH_UNMATCHED) {
            if (f->tenant)
                cJSON_AddStringToObject(j, "tenant", f->tenant);
            else
                cJSON_AddNullToObject(j, "tenant");
        }
        cJSON_AddStringToObject(j, "message", f->message);
        if (f->kind == GPA_REACH_NEVER || f->kind == GPA_REACH_BYPASS) {
            cJSON *by = cJSON_AddArrayToObject(j, "takenBy");
            for (size_t k = 0; k < f->n_by; k++) {
                cJSON *t = cJSON_CreateObject();
                cJSON_AddStringToObject(t, "rule", gpa_policy_rule_name(p, f->by[k]));
                cJSON_AddStringToObject(t, "file", gpa_policy_rule_file(p, f->by[k]));
                cJSON_AddNumberToObject(t, "line", gpa_policy_rule_line(p, f->by[k]));
                cJSON_AddItemToArray(by, t);
            }
        }
        if (f->has_witness) cJSON_AddItemToObject(j, "witness", pod_json(&f->witness));
        cJSON_AddItemToArray(arr, j);
    }
    if (reach_error) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "severity", "warning");
        cJSON_AddStringToObject(j, "kind", "analysis-refused");
        cJSON_AddStringToObject(j, "message", reach_error);
        cJSON_AddItemToArray(arr, j);
    }
    tenancy_json(arr, p, ten, ten_error);
    if (r) {
        cJSON *s = cJSON_AddObjectToObject(o, "reachability");
        cJSON_AddNumberToObject(s, "namespaceClasses", (double)r->n_ns_classes);
        cJSON_AddNumberToObject(s, "regions", (double)r->n_cells);
        size_t n = 0;
        for (size_t i = 0; i < r->n_rules; i++)
            n += r->reached[i];
        cJSON_AddNumberToObject(s, "rulesReached", (double)n);
        cJSON *rules = cJSON_AddArrayToObject(s, "rules");
        for (size_t i = 0; i < r->n_rules; i++) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "rule", gpa_policy_rule_name(p, i));
            cJSON_AddBoolToObject(j, "reached", r->reached[i]);
            if (r->reached[i]) cJSON_AddItemToObject(j, "witness", pod_json(&r->witness[i]));
            cJSON_AddItemToArray(rules, j);
        }
    }
    char *out = cJSON_Print(o);
    cJSON_Delete(o);
    return out;
}

char *gpa_cli_check_errors_json(const char *message)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", false);
    cJSON *arr = cJSON_AddArrayToObject(o, "errors");
    for (const char *s = message; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        char *line = strndup(s, n);
        s += n + (nl ? 1 : 0);
        if (!line) break;
        cJSON *e = cJSON_CreateObject();
        /* "file:LINE:COL: message": the position is the last two numbers before ": " */
        char *sep = strstr(line, ": ");
        char *c2 = NULL, *c1 = NULL;
        if (sep) {
            *sep = '\0';
            c2 = strrchr(line, ':');
            if (c2) {
                *c2 = '\0';
                c1 = strrchr(line, ':');
                if (c1) *c1 = '\0';
            }
        }
        if (sep && c1 && c2 && atoi(c1 + 1) > 0) {
            cJSON_AddStringToObject(e, "file", line);
            cJSON_AddNumberToObject(e, "line", atoi(c1 + 1));
            cJSON_AddNumberToObject(e, "col", atoi(c2 + 1));
            cJSON_AddStringToObject(e, "message", sep + 2);
        } else {
            if (sep) *sep = ':';
            if (c2) *c2 = ':';
            if (c1) *c1 = ':';
            cJSON_AddStringToObject(e, "message", line);
        }
        cJSON_AddItemToArray(arr, e);
        free(line);
    }
    char *out = cJSON_Print(o);
    cJSON_Delete(o);
    return out;
}

char *gpa_cli_check_reach_text(const gpa_policy *p, const gpa_reach *r)
{
    size_t cap = 4096, at = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int n_ = snprintf(out + at, cap - at, __VA_ARGS__);                                        \
        while (n_ >= 0 && (size_t)n_ >= cap - at) {                                                \
            char *no_ = realloc(out, cap * 2);                                                     \
            if (!no_) {                                                                            \
                free(out);                                                                         \
                return NULL;                                                                       \
            }                                                                                      \
            out = no_;                                                                             \
            cap *= 2;                                                                              \
            n_ = snprintf(out + at, cap - at, __VA_ARGS__);                                        \
        }                                                                                          \
        if (n_ > 0) at += (size_t)n_;                                                              \
    } while (0)
    PUT("reachability (exact: %zu namespace class%s, %zu region%s decided):\n", r->n_ns_classes,
        r->n_ns_classes == 1 ? "" : "es", r->n_cells, r->n_cells == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_rules; i++) {
        if (!r->reached[i]) {
            PUT("  %zu. %s  never reached (see the warning)\n", i + 1, gpa_policy_rule_name(p, i));
            continue;
        }
        char *w = gpa_reach_pod_text(&r->witness[i]);
        if (!w) {
            free(out);
            return NULL;
        }
        PUT("  %zu. %s  reached, e.g. %s\n", i + 1, gpa_policy_rule_name(p, i), w);
        free(w);
    }
    char *info = gpa_reach_text(r, true);
    for (const char *s = info; s && *s;) {
        const char *nl = strchr(s, '\n');
        int n = nl ? (int)(nl - s) : (int)strlen(s);
        PUT("  %.*s\n", n, s);
        s += n + (nl ? 1 : 0);
    }
    free(info);
#undef PUT
    return out;
}

/* ---------------------------------------------------------------- witness suite */

/* A pod name from a rule name: DNS-1123 (a-z 0-9 '-'), at most 63 characters. */
static void pod_name(char *out, size_t cap, const char *prefix, const char *rule, size_t n)
{
    char s[64];
    size_t k = 0;
    for (const char *c = rule; *c && k < 40; c++) {
        char ch = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        s[k++] = ok ? ch : '-';
    }
    s[k] = '\0';
    snprintf(out, cap, "%s-%s-%zu", prefix, k ? s : "rule", n);
}

static cJSON *pod_object(const gpa_reach_pod *w, const char *name)
{
    cJSON *pod = cJSON_CreateObject();
    cJSON_AddStringToObject(pod, "apiVersion", "v1");
    cJSON_AddStringToObject(pod, "kind", "Pod");
    cJSON *md = cJSON_AddObjectToObject(pod, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", w->ns);
    if (w->n_labels) {
        cJSON *l = cJSON_AddObjectToObject(md, "labels");
        for (size_t i = 0; i < w->n_labels; i++)
            cJSON_AddStringToObject(l, w->keys[i], w->values[i]);
    }
    if (w->has_mem) {
        char b[32];
        snprintf(b, sizeof b, "%" PRId64, w->mem);
        cJSON *a = cJSON_AddObjectToObject(md, "annotations");
        cJSON_AddStringToObject(a, "gpu-admission.io/gpu-memory", b);
    }
    cJSON *spec = cJSON_AddObjectToObject(pod, "spec");
    cJSON *cs = cJSON_AddArrayToObject(spec, "containers");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cs, c);
    cJSON_AddStringToObject(c, "name", "main");
    cJSON_AddStringToObject(c, "image", "registry.k8s.io/pause:3.9");
    char g[32];
    snprintf(g, sizeof g, "%" PRId64, w->gpus);
    cJSON *res = cJSON_AddObjectToObject(c, "resources");
    cJSON *lim = cJSON_AddObjectToObject(res, "limits");
    cJSON_AddStringToObject(lim, "nvidia.com/gpu", g);
    return pod;
}

/* Judges the witness, appends the case; want_rule: the rule the analysis says takes it
 * (NULL: no rule), checked against the engine's answer. 0, or 1 after saying why. */
static int add_case(cJSON *cases, const gpa_policy *p, const char *cname, const gpa_reach_pod *w,
                    const char *pname, bool check_rule, const char *want_rule)
{
    cJSON *pod = pod_object(w, pname);
    gpa_judge_input in = {.object = pod, .hooks = GPA_JUDGE_BOTH, .want_object = true};
    gpa_judgement j;
    gpa_error err = {0};
    if (gpa_judge(&j, p, &in, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission check: witness %s: %s\n", cname, err.message);
        cJSON_Delete(pod);
        return 1;
    }
    if (check_rule && !(want_rule ? j.rule && strcmp(j.rule, want_rule) == 0 : !j.rule)) {
        fprintf(stderr,
                "gpu-admission check: internal error: the analysis says rule %s takes witness "
                "%s, the engine chose %s\n",
                want_rule ? want_rule : "(none)", cname, j.rule ? j.rule : "no rule");
        gpa_judgement_clear(&j);
        cJSON_Delete(pod);
        return 1;
    }
    cJSON *cj = cJSON_CreateObject();
    cJSON_AddStringToObject(cj, "name", cname);
    cJSON_AddItemToObject(cj, "object", pod);
    cJSON *ex = gpa_suite_record_expect(p, &j, j.object);
    gpa_judgement_clear(&j);
    if (!ex) {
        cJSON_Delete(cj);
        return 1;
    }
    cJSON_AddItemToObject(cj, "expect", ex);
    cJSON_AddItemToArray(cases, cj);
    return 0;
}

int gpa_cli_check_witnesses(const gpa_policy *p, const gpa_reach *r, const char *dir,
                            const char *file)
{
    cJSON *suite = cJSON_CreateObject();
    cJSON_AddStringToObject(suite, "apiVersion", GPA_SUITE_API_VERSION);
    cJSON_AddStringToObject(suite, "kind", GPA_SUITE_KIND);
    cJSON *md = cJSON_AddObjectToObject(suite, "metadata");
    cJSON_AddStringToObject(md, "name", "witnesses");
    cJSON *spec = cJSON_AddObjectToObject(suite, "spec");
    char *rel = gpa_cli_policies_relative(file, dir);
    cJSON_AddStringToObject(spec, "policies", rel ? rel : dir);
    free(rel);
    cJSON *cases = cJSON_AddArrayToObject(spec, "cases");
    int rc = 0;
    size_t n = 0;
    char cname[512], pname[80];
    for (size_t i = 0; i < r->n_rules && rc == 0; i++) {
        if (!r->reached[i]) continue;
        const char *rn = gpa_policy_rule_name(p, i);
        snprintf(cname, sizeof cname, "rule %s takes its witness", rn);
        pod_name(pname, sizeof pname, "reach", rn, ++n);
        rc = add_case(cases, p, cname, &r->witness[i], pname, true, rn);
    }
    for (size_t i = 0; i < r->n_findings && rc == 0; i++) {
        const gpa_reach_finding *f = &r->findings[i];
        if (!f->has_witness) continue;
        const char *subject =
            f->kind == GPA_REACH_UNMATCHED ? "unmatched" : gpa_policy_rule_name(p, f->rule);
        const char *taker =
            f->witness_rule == SIZE_MAX ? "no rule" : gpa_policy_rule_name(p, f->witness_rule);
        switch (f->kind) {
        case GPA_REACH_NEVER:
            snprintf(cname, sizeof cname, "rule %s is never reached: its witness goes to rule %s",
                     subject, taker);
            break;
        case GPA_REACH_BYPASS:
            snprintf(cname, sizeof cname,
                     "rule %s is partly bypassed: its witness is placed by rule %s", subject,
                     taker);
            break;
        case GPA_REACH_MEM_BEYOND:
            snprintf(cname, sizeof cname,
                     "rule %s denies every pod it matches: gpuMemory beyond its pool", subject);
            break;
        default:
            if (f->tenant)
                snprintf(cname, sizeof cname, "tenant %s: a GPU pod no rule takes", f->tenant);
            else
                snprintf(cname, sizeof cname, "namespaces in no tenant: a GPU pod no rule takes");
            break;
        }
        pod_name(pname, sizeof pname, "finding", subject, ++n);
        rc =
            add_case(cases, p, cname, &f->witness, pname, true,
                     f->witness_rule == SIZE_MAX ? NULL : gpa_policy_rule_name(p, f->witness_rule));
    }
    if (rc == 0) {
        char *y = gpa_json_to_yaml(suite);
        FILE *out = y ? fopen(file, "w") : NULL;
        if (!y || !out) {
            fprintf(stderr, "gpu-admission check: cannot write %s: %s\n", file,
                    y ? strerror(errno) : "out of memory");
            rc = 1;
        } else {
            fprintf(out,
                    "# Written by `gpu-admission check --witnesses`: one pod per rule that\n"
                    "# reaches it, one per finding, each expecting today's decision.\n%s",
                    y);
            if (fclose(out) != 0) {
                fprintf(stderr, "gpu-admission check: cannot write %s: %s\n", file,
                        strerror(errno));
                rc = 1;
            }
        }
        free(y);
        if (rc == 0) fprintf(stderr, "wrote %zu witness case(s) to %s\n", n, file);
    }
    cJSON_Delete(suite);
    return rc;
}
