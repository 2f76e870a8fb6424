/*
 * cmd_diff.c - `gpu-admission diff --old DIR --new DIR INPUT...`: judges every object of the
 * inputs (Pods, workloads, multi-document YAML, `kubectl get -o json|yaml` Lists) under both
 * policy sets and prints what would change. The judging is the core's (impact.h).
 *
 * Exit codes: 0 done (with --exit-code: nothing changes), 1 with --exit-code: something
 * changes, 2 usage error, unreadable input, a policy set that does not load, an object the
 * webhooks cannot answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/impact.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpu-admission diff --old DIR --new DIR [-o text|json] [--exit-code]\n"
            "                          [INPUT...]\n"
            "\n"
            "Judges every object in the inputs (files or - for stdin; default -) under both\n"
            "policy sets, exactly as the server would, and prints what changes: allowed ->\n"
            "denied (with the new message), denied -> allowed, a different rule, pool or GPU\n"
            "resource, changed warnings. Inputs: Pods, workloads (each pod template judged),\n"
            "multi-document YAML, or a List from `kubectl get pods,deployments,jobs -A -o json`\n"
            "(or -o yaml). Pods already mutated by a policy are judged as the request they came\n"
            "from when it can be rebuilt (\"reconstructed\"), else as they are (\"as-is\").\n"
            "\n"
            "flags:\n"
            "      --old DIR            the policy directory in force now; required\n"
            "      --new DIR            the changed policy directory; required\n"
            "  -o, --output FORMAT      text (default) or json\n"
            "      --exit-code          exit 1 when something changes (like git diff)\n"
            "  -h, --help               show this help\n"
            "\n"
            "exit codes: 0 done (with --exit-code: no change), 1 with --exit-code: something\n"
            "changes, 2 bad flags, unreadable input, a policy set that does not load, or an\n"
            "object the webhooks cannot answer.\n");
}

typedef struct counts {
    size_t objects, units, changed, not_judged;
    size_t denied, allowed, rule, pool, resources, warnings;
    size_t original, reconstructed, as_is;
} counts;

static const char *s_or(const cJSON *o, const char *k, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

static bool has_change(const cJSON *e, const char *what)
{
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(e, "changes");
    for (const cJSON *c = ch ? ch->child : NULL; c; c = c->next)
        if (strcmp(c->valuestring, what) == 0) return true;
    return false;
}

static void print_compact(FILE *o, const cJSON *v)
{
    size_t n = 0;
    char *s = gpa_review_json(v, &n);
    if (s) fwrite(s, 1, n, o);
    free(s);
}

static void print_entry(FILE *o, const char *label, const char *origin, const cJSON *e)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(e, "old");
    const cJSON *new_ = cJSON_GetObjectItemCaseSensitive(e, "new");
    const char *tpl = s_or(e, "template", NULL);
    fprintf(o, "%s%s%s (%s, judged %s)\n", label, tpl ? " " : "", tpl ? tpl : "", origin,
            s_or(e, "judgedAs", "?"));
    if (has_change(e, "denied"))
        fprintf(o, "    allowed -> denied: %s\n", s_or(new_, "message", "denied by policy"));
    if (has_change(e, "allowed")) fprintf(o, "    denied -> allowed\n");
    if (has_change(e, "rule"))
        fprintf(o, "    rule: %s -> %s\n", s_or(old, "rule", "(none)"),
                s_or(new_, "rule", "(none)"));
    if (has_change(e, "pool"))
        fprintf(o, "    pool: %s -> %s\n", s_or(old, "pool", "(none)"),
                s_or(new_, "pool", "(none)"));
    if (has_change(e, "resources")) {
        fputs("    resources: ", o);
        print_compact(o, cJSON_GetObjectItemCaseSensitive(old, "resources"));
        fputs(" -> ", o);
        print_compact(o, cJSON_GetObjectItemCaseSensitive(new_, "resources"));
        fputc('\n', o);
    }
    bool big = has_change(e, "denied") || has_change(e, "allowed") || has_change(e, "rule") ||
               has_change(e, "pool");
    if (has_change(e, "warnings") && big) {
        /* they follow from the change above; the list would only repeat it */
        fprintf(o, "    warnings: %d -> %d (see -o json)\n",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(old, "warnings")),
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(new_, "warnings")));
    } else if (has_change(e, "warnings")) {
        const cJSON *ow = cJSON_GetObjectItemCaseSensitive(old, "warnings");
        const cJSON *nw = cJSON_GetObjectItemCaseSensitive(new_, "warnings");
        for (const cJSON *w = ow ? ow->child : NULL; w; w = w->next) {
            bool kept = false;
            for (const cJSON *x = nw ? nw->child : NULL; x && !kept; x = x->next)
                kept = strcmp(w->valuestring, x->valuestring) == 0;
            if (!kept) fprintf(o, "    - warning: %s\n", w->valuestring);
        }
        for (const cJSON *w = nw ? nw->child : NULL; w; w = w->next) {
            bool had = false;
            for (const cJSON *x = ow ? ow->child : NULL; x && !had; x = x->next)
                had = strcmp(w->valuestring, x->valuestring) == 0;
            if (!had) fprintf(o, "    + warning: %s\n", w->valuestring);
        }
    }
}

static void count(counts *c, const cJSON *e)
{
    c->units++;
    const char *as = s_or(e, "judgedAs", "");
    if (strcmp(as, "reconstructed") == 0)
        c->reconstructed++;
    else if (strcmp(as, "as-is") == 0)
        c->as_is++;
    else
        c->original++;
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(e, "changes");
    if (cJSON_GetArraySize(ch) > 0) c->changed++;
    c->denied += has_change(e, "denied");
    c->allowed += has_change(e, "allowed");
    c->rule += has_change(e, "rule");
    c->pool += has_change(e, "pool");
    c->resources += has_change(e, "resources");
    c->warnings += has_change(e, "warnings");
}

int gpa_cmd_diff(int argc, char **argv)
{
    const char *old_dir = NULL, *new_dir = NULL, *format = "text";
    bool exit_code = false, only_positional = false;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    size_t n_inputs = 0;
    if (!inputs) return 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "--") == 0) {
                only_positional = true;
                continue;
            }
            if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                usage(stdout);
                free(inputs);
                return 0;
            }
            if (strcmp(a, "--exit-code") == 0) {
                exit_code = true;
                continue;
            }
            int r = gpa_cli_flag_value(&old_dir, argc, argv, &i, "--old", "", "diff");
            if (r == 0) r = gpa_cli_flag_value(&new_dir, argc, argv, &i, "--new", "", "diff");
            if (r == 0) r = gpa_cli_flag_value(&format, argc, argv, &i, "--output", "-o", "diff");
            if (r < 0) {
                free(inputs);
                return 2;
            }
            if (r > 0) continue;
            fprintf(stderr, "gpu-admission diff: unknown flag '%s'\n", a);
            usage(stderr);
            free(inputs);
            return 2;
        }
        inputs[n_inputs++] = a;
    }
    if (!old_dir || !new_dir) {
        fprintf(stderr, "gpu-admission diff: --old DIR and --new DIR are required\n");
        usage(stderr);
        free(inputs);
        return 2;
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        fprintf(stderr, "gpu-admission diff: --output must be text or json, not '%s'\n", format);
        free(inputs);
        return 2;
    }
    if (n_inputs == 0) inputs[n_inputs++] = "-";
    gpa_error err = {0};
    gpa_policy *po = NULL, *pn = NULL;
    if (gpa_policy_load_dir(&po, old_dir, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission diff: policy set in %s (--old) is invalid:\n%s\n", old_dir,
                err.message);
        free(inputs);
        return 2;
    }
    if (gpa_policy_load_dir(&pn, new_dir, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission diff: policy set in %s (--new) is invalid:\n%s\n", new_dir,
                err.message);
        gpa_policy_unref(po);
        free(inputs);
        return 2;
    }
    bool json = strcmp(format, "json") == 0;
    cJSON *jchanges = json ? cJSON_CreateArray() : NULL;
    counts c = {0};
    int rc = 0;
    for (size_t i = 0; i < n_inputs && rc == 0; i++) {
        gpa_objects *objs = NULL;
        if (gpa_cli_read_objects(&objs, "diff", inputs[i]) != 0) rc = 2;
        for (size_t k = 0; rc == 0 && k < gpa_objects_count(objs); k++) {
            const cJSON *obj = gpa_objects_get(objs, k);
            char label[300];
            gpa_objects_describe(label, sizeof label, obj);
            cJSON *entries = NULL;
            if (gpa_impact_object(&entries, NULL, po, pn, obj, &err) != GPA_OK) {
                fprintf(stderr, "gpu-admission diff: %s: %s: %s\n", gpa_objects_origin(objs, k),
                        label, err.message);
                rc = 2;
                break;
            }
            c.objects++;
            if (!entries->child) c.not_judged++;
            for (cJSON *e = entries->child; e; e = e->next) {
                count(&c, e);
                if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "changes")) == 0)
                    continue;
                if (json) {
                    cJSON *je = cJSON_Duplicate(e, 1);
                    cJSON_AddStringToObject(je, "object", label);
                    cJSON_AddStringToObject(je, "origin", gpa_objects_origin(objs, k));
                    cJSON_AddItemToArray(jchanges, je);
                } else {
                    print_entry(stdout, label, gpa_objects_origin(objs, k), e);
                }
            }
            cJSON_Delete(entries);
        }
        gpa_objects_free(objs);
    }
    if (rc == 0) {
        if (json) {
            cJSON *root = cJSON_CreateObject();
            cJSON_AddItemToObject(root, "changes", jchanges);
            jchanges = NULL;
            cJSON *s = cJSON_AddObjectToObject(root, "summary");
            cJSON_AddNumberToObject(s, "objects", (double)c.objects);
            cJSON_AddNumberToObject(s, "judged", (double)c.units);
            cJSON_AddNumberToObject(s, "notJudged", (double)c.not_judged);
            cJSON_AddNumberToObject(s, "changed", (double)c.changed);
            cJSON_AddNumberToObject(s, "allowedToDenied", (double)c.denied);
            cJSON_AddNumberToObject(s, "deniedToAllowed", (double)c.allowed);
            cJSON_AddNumberToObject(s, "rule", (double)c.rule);
            cJSON_AddNumberToObject(s, "pool", (double)c.pool);
            cJSON_AddNumberToObject(s, "resources", (double)c.resources);
            cJSON_AddNumberToObject(s, "warnings", (double)c.warnings);
            cJSON_AddNumberToObject(s, "original", (double)c.original);
            cJSON_AddNumberToObject(s, "reconstructed", (double)c.reconstructed);
            cJSON_AddNumberToObject(s, "asIs", (double)c.as_is);
            char *t = cJSON_Print(root);
            if (t) printf("%s\n", t);
            free(t);
            cJSON_Delete(root);
        } else {
            printf("%zu of %zu judged (%zu object%s, %zu not judged) change: %zu allowed->denied, "
                   "%zu denied->allowed, %zu rule, %zu pool, %zu resources, %zu warnings; "
                   "judged as: %zu original, %zu reconstructed, %zu as-is\n",
                   c.changed, c.units, c.objects, c.objects == 1 ? "" : "s", c.not_judged, c.denied,
                   c.allowed, c.rule, c.pool, c.resources, c.warnings, c.original, c.reconstructed,
                   c.as_is);
        }
        if (fflush(stdout) != 0) {
            fprintf(stderr, "gpu-admission diff: cannot write stdout: %s\n", strerror(errno));
            rc = 2;
        }
    }
    if (rc == 0 && exit_code && c.changed) rc = 1;
    cJSON_Delete(jchanges);
    gpa_policy_unref(po);
    gpa_policy_unref(pn);
    free(inputs);
    return rc;
}
