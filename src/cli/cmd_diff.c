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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gpu_admission/impact.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"

typedef struct options {
    const char *old_dir, *new_dir, *format;
    bool exit_code;
    const char **inputs;
    size_t n_inputs;
} options;

static int positional(void *opts, const char *arg)
{
    options *o = opts;
    o->inputs[o->n_inputs++] = arg;
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--old", NULL, GPA_CLI_STR, offsetof(options, old_dir), NULL,
     "      --old DIR            the policy directory in force now; required\n"},
    {"--new", NULL, GPA_CLI_STR, offsetof(options, new_dir), NULL,
     "      --new DIR            the changed policy directory; required\n"},
    {"--output", "-o", GPA_CLI_STR, offsetof(options, format), NULL,
     "  -o, --output FORMAT      text (default) or json\n"},
    {"--exit-code", NULL, GPA_CLI_BOOL, offsetof(options, exit_code), NULL,
     "      --exit-code          exit 1 when something changes (like git diff)\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help               show this help\n"},
};

static const gpa_cli_spec cli_spec = {
    .cmd = "diff",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission diff --old DIR --new DIR [-o text|json] [--exit-code]\n"
            "                          [INPUT...]\n"
            "\n"
            "Judges every object in the inputs (files or - for stdin; default -) under both\n"
            "policy sets, exactly as the server would, and prints what changes: allowed ->\n"
            "denied (with the new message), denied -> allowed, a different rule, pool or GPU\n"
            "resource, changed warnings. Inputs: Pods, workloads (each pod template judged),\n"
            "multi-document YAML, or a List from `kubectl get pods,deployments,jobs -A -o json`\n"
            "(or -o yaml). Pods already mutated by a policy are judged as the request they came\n"
            "from when it can be rebuilt (\"reconstructed\"), else as they are (\"as-is\"); an\n"
            "as-is pod whose verdict differs is reported as \"original unknown: judged as\n"
            "stored\", not as a change. Objects owned by another object of the input (a\n"
            "ReplicaSet and the pods of a Deployment) are reported under their top owner (one\n"
            "entry) when they come out as its pod template does; every entry says how many\n"
            "pods it touches.\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "exit codes: 0 done (with --exit-code: no change), 1 with --exit-code: something\n"
            "changes, 2 bad flags, unreadable input, a policy set that does not load, or an\n"
            "object the webhooks cannot answer.\n",
    .unknown = "unknown flag",
    .unknown_quoted = true,
    .error_rc = 2,
    .dashdash = GPA_CLI_DASHDASH_ENDS_FLAGS,
    .positional = positional,
};

typedef struct counts {
    size_t objects, units, changed, not_judged;
    size_t denied, allowed, rule, pool, resources, warnings;
    size_t original, reconstructed, as_is;
    size_t unknown;         /* as-is units whose verdict differs: original unknown, not a change */
    size_t grouped;         /* pods reported under the workload that made them */
    size_t grouped_objects; /* other objects (ReplicaSets, Jobs) reported under their owner */
    size_t changed_pods, denied_pods, allowed_pods; /* pods the changed entries touch */
} counts;

/* One object of the input with its judged entries (gpa_impact_object). */
typedef struct unit {
    const cJSON *obj;
    const char *origin;
    cJSON *entries;
    long owner;   /* the top owner in the input this unit is folded into, -1 none */
    cJSON *pods;  /* owners: names of the pods folded into their entry */
    cJSON *owned; /* owners: "Kind name" of the other objects folded into it */
} unit;

static const char *s_or(const cJSON *o, const char *k, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* An entry judged as stored (its original request not rebuilt) whose verdict changes: what
 * the original would get is unknown, so it is reported as such, not as a change. Its changes
 * move to storedChanges (mark_unknown). */
static bool is_unknown(const cJSON *e)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "originalUnknown"));
}

static const cJSON *changes_of(const cJSON *e)
{
    return cJSON_GetObjectItemCaseSensitive(e, is_unknown(e) ? "storedChanges" : "changes");
}

static bool has_change(const cJSON *e, const char *what)
{
    const cJSON *ch = changes_of(e);
    for (const cJSON *c = ch ? ch->child : NULL; c; c = c->next)
        if (strcmp(c->valuestring, what) == 0) return true;
    return false;
}

static int n_changes(const cJSON *e)
{
    return cJSON_GetArraySize(changes_of(e));
}

static void mark_unknown(cJSON *e)
{
    if (strcmp(s_or(e, "judgedAs", ""), "as-is") != 0) return;
    cJSON *ch = cJSON_GetObjectItemCaseSensitive(e, "changes");
    bool verdict = false;
    for (const cJSON *c = ch ? ch->child : NULL; c; c = c->next)
        verdict |= strcmp(c->valuestring, "denied") == 0 || strcmp(c->valuestring, "allowed") == 0;
    if (!verdict) return;
    cJSON *moved = cJSON_DetachItemFromObjectCaseSensitive(e, "changes");
    cJSON_AddItemToObject(e, "storedChanges", moved);
    cJSON_AddItemToObject(e, "changes", cJSON_CreateArray());
    cJSON_AddBoolToObject(e, "originalUnknown", true);
}

/* An owned object's entry says what its owner's entry says: same changes, same new verdict,
 * rule and pool; then it is folded into the owner's entry. */
static bool same_outcome(const cJSON *pod, const cJSON *wl)
{
    if (!cJSON_Compare(changes_of(pod), changes_of(wl), true)) return false;
    const cJSON *pn = cJSON_GetObjectItemCaseSensitive(pod, "new");
    const cJSON *wn = cJSON_GetObjectItemCaseSensitive(wl, "new");
    static const char *keys[] = {"allowed", "rule", "pool"};
    for (int k = 0; k < 3; k++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(pn, keys[k]);
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(wn, keys[k]);
        if ((a || b) && !cJSON_Compare(a, b, true)) return false;
    }
    return true;
}

static void print_compact(FILE *o, const cJSON *v)
{
    size_t n = 0;
    char *s = gpa_review_json(v, &n);
    if (s) fwrite(s, 1, n, o);
    free(s);
}

static void print_entry(FILE *o, const cJSON *obj, const char *origin, const cJSON *e)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(e, "old");
    const cJSON *new_ = cJSON_GetObjectItemCaseSensitive(e, "new");
    char what[1400];
    gpa_cli_describe(what, sizeof what, obj, 0, GPA_CLI_LABEL_OBJECT, s_or(e, "template", NULL),
                     NULL);
    bool unknown = is_unknown(e);
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(e, "podCount");
    char touches[48] = "";
    if (cJSON_IsNumber(pc))
        snprintf(touches, sizeof touches, ", %lld pod%s", (long long)pc->valuedouble,
                 pc->valuedouble == 1 ? "" : "s");
    if (unknown)
        fprintf(o, "%s (%s, original unknown: judged as stored)%s\n", what, origin, touches);
    else
        fprintf(o, "%s (%s, judged %s)%s\n", what, origin, s_or(e, "judgedAs", "?"), touches);
    const cJSON *owned = cJSON_GetObjectItemCaseSensitive(e, "owned");
    if (cJSON_GetArraySize(owned) > 0) {
        fprintf(o,
                "    %d owned object(s) in the input, judged the same:", cJSON_GetArraySize(owned));
        const cJSON *p;
        cJSON_ArrayForEach(p, owned)
            fprintf(o, " %s", p->valuestring);
        fputc('\n', o);
    }
    const cJSON *pods = cJSON_GetObjectItemCaseSensitive(e, "pods");
    if (cJSON_GetArraySize(pods) > 0) {
        fprintf(o, "    %d pod(s) in the input, judged the same:", cJSON_GetArraySize(pods));
        const cJSON *p;
        cJSON_ArrayForEach(p, pods)
            fprintf(o, " %s", p->valuestring);
        fputc('\n', o);
    }
    /* a stored pod whose request could not be rebuilt says nothing of what its original
     * request gets: the verdict as stored is shown as that, never as allowed -> denied */
    if (unknown && has_change(e, "denied"))
        fprintf(o, "    as stored, the new set would refuse it: %s\n",
                s_or(new_, "message", "denied by policy"));
    else if (has_change(e, "denied"))
        fprintf(o, "    allowed -> denied: %s\n", s_or(new_, "message", "denied by policy"));
    if (unknown && has_change(e, "allowed"))
        fprintf(o, "    as stored, the new set would admit it\n");
    else if (has_change(e, "allowed"))
        fprintf(o, "    denied -> allowed\n");
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

/* The pods an entry touches: the pods its unit stands for, or the pods of the input folded
 * under it when they are more (a rollout's old pods beside the new ones); -1 for none (a
 * claim). */
static long long pods_touched(const cJSON *e)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "replicas");
    long long n = cJSON_IsNumber(r) ? (long long)r->valuedouble : -1;
    long long folded = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "pods"));
    return folded > n ? folded : n;
}

static void count(counts *c, const cJSON *e, bool folded, bool is_pod)
{
    c->units++;
    const char *as = s_or(e, "judgedAs", "");
    if (strcmp(as, "reconstructed") == 0)
        c->reconstructed++;
    else if (strcmp(as, "as-is") == 0)
        c->as_is++;
    else
        c->original++;
    if (folded) {
        if (is_pod)
            c->grouped++;
        else
            c->grouped_objects++;
        return;
    }
    if (is_unknown(e)) {
        c->unknown++;
        return;
    }
    long long pods = pods_touched(e);
    size_t np = pods > 0 ? (size_t)pods : 0;
    if (n_changes(e) > 0) {
        c->changed++;
        c->changed_pods += np;
    }
    c->denied_pods += has_change(e, "denied") ? np : 0;
    c->allowed_pods += has_change(e, "allowed") ? np : 0;
    c->denied += has_change(e, "denied");
    c->allowed += has_change(e, "allowed");
    c->rule += has_change(e, "rule");
    c->pool += has_change(e, "pool");
    c->resources += has_change(e, "resources");
    c->warnings += has_change(e, "warnings");
}

int gpa_cmd_diff(int argc, char **argv)
{
    options o = {.format = "text", .inputs = calloc((size_t)argc + 1, sizeof *o.inputs)};
    if (!o.inputs) return 2;
    int prc = gpa_cli_parse(&cli_spec, &o, argc, argv);
    if (prc != GPA_CLI_CONTINUE) {
        free(o.inputs);
        return prc;
    }
    const char *old_dir = o.old_dir, *new_dir = o.new_dir, *format = o.format;
    bool exit_code = o.exit_code;
    const char **inputs = o.inputs;
    size_t n_inputs = o.n_inputs;
    if (!old_dir || !new_dir) {
        fprintf(stderr, "gpu-admission diff: --old DIR and --new DIR are required\n");
        gpa_cli_usage(&cli_spec, stderr);
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
    /* every object of every input first: a pod is grouped under a workload that may come
     * later in the input (kubectl get pods,deployments lists the pods first) */
    gpa_objects **lists = calloc(n_inputs, sizeof *lists);
    size_t n_units = 0, cap_units = 0;
    unit *units = NULL;
    if (!lists) rc = 2;
    for (size_t i = 0; i < n_inputs && rc == 0; i++) {
        if (gpa_cli_read_objects(&lists[i], "diff", inputs[i]) != 0) {
            rc = 2;
            break;
        }
        for (size_t k = 0; k < gpa_objects_count(lists[i]); k++) {
            if (n_units == cap_units) {
                size_t nc = cap_units ? 2 * cap_units : 64;
                unit *nu = realloc(units, nc * sizeof *nu);
                if (!nu) {
                    rc = 2;
                    break;
                }
                units = nu;
                cap_units = nc;
            }
            units[n_units++] = (unit){gpa_objects_get(lists[i], k),
                                      gpa_objects_origin(lists[i], k),
                                      NULL,
                                      -1,
                                      NULL,
                                      NULL};
        }
    }
    for (size_t u = 0; u < n_units && rc == 0; u++) {
        char label[300];
        gpa_cli_describe(label, sizeof label, units[u].obj, 0, GPA_CLI_LABEL_OBJECT, NULL, NULL);
        if (gpa_impact_object(&units[u].entries, NULL, po, pn, units[u].obj, &err) != GPA_OK) {
            fprintf(stderr, "gpu-admission diff: %s: %s: %s\n", units[u].origin, label,
                    err.message);
            rc = 2;
            break;
        }
        for (cJSON *e = units[u].entries->child; e; e = e->next)
            mark_unknown(e);
    }
    if (rc == 0) {
        const cJSON **objs = calloc(n_units + 1, sizeof *objs);
        long *owner = calloc(n_units + 1, sizeof *owner);
        if (!objs || !owner) rc = 2;
        for (size_t u = 0; rc == 0 && u < n_units; u++)
            objs[u] = units[u].obj;
        if (rc == 0) gpa_cli_diff_owners(owner, (const cJSON *const *)objs, n_units);
        for (size_t u = 0; rc == 0 && u < n_units; u++) {
            long w = owner[u];
            /* folded only into a top owner (a cycle of references folds nothing), judged as
             * one pod template, and only when the object came out as its template did */
            const cJSON *pe = units[u].entries->child;
            const cJSON *we = w >= 0 && owner[w] < 0 ? units[w].entries->child : NULL;
            if (!pe || pe->next || !we || we->next || !same_outcome(pe, we)) continue;
            units[u].owner = w;
            const cJSON *md = cJSON_GetObjectItemCaseSensitive(units[u].obj, "metadata");
            const char *kind = s_or(units[u].obj, "kind", "?");
            char nm[300];
            if (strcmp(kind, "Pod") == 0) {
                if (!units[w].pods) units[w].pods = cJSON_CreateArray();
                snprintf(nm, sizeof nm, "%s", s_or(md, "name", "?"));
                cJSON_AddItemToArray(units[w].pods, cJSON_CreateString(nm));
            } else {
                if (!units[w].owned) units[w].owned = cJSON_CreateArray();
                snprintf(nm, sizeof nm, "%s %s", kind, s_or(md, "name", "?"));
                cJSON_AddItemToArray(units[w].owned, cJSON_CreateString(nm));
            }
        }
        free(objs);
        free(owner);
    }
    for (size_t u = 0; u < n_units && rc == 0; u++) {
        const cJSON *obj = units[u].obj;
        char label[300];
        gpa_cli_describe(label, sizeof label, obj, 0, GPA_CLI_LABEL_OBJECT, NULL, NULL);
        c.objects++;
        if (!units[u].entries->child) c.not_judged++;
        bool is_pod = strcmp(s_or(obj, "kind", ""), "Pod") == 0;
        for (cJSON *e = units[u].entries->child; e; e = e->next) {
            bool folded = units[u].owner >= 0;
            if (units[u].pods && e == units[u].entries->child) {
                cJSON_AddItemToObject(e, "pods", units[u].pods);
                units[u].pods = NULL;
            }
            if (units[u].owned && e == units[u].entries->child) {
                cJSON_AddItemToObject(e, "owned", units[u].owned);
                units[u].owned = NULL;
            }
            long long touched = pods_touched(e);
            if (touched >= 0) cJSON_AddNumberToObject(e, "podCount", (double)touched);
            count(&c, e, folded, is_pod);
            if (folded || n_changes(e) == 0) continue;
            if (json) {
                cJSON *je = cJSON_Duplicate(e, 1);
                cJSON_AddStringToObject(je, "object", label);
                cJSON_AddStringToObject(je, "origin", units[u].origin);
                cJSON_AddItemToArray(jchanges, je);
            } else {
                print_entry(stdout, obj, units[u].origin, e);
            }
        }
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
            cJSON_AddNumberToObject(s, "originalUnknown", (double)c.unknown);
            cJSON_AddNumberToObject(s, "grouped", (double)c.grouped);
            cJSON_AddNumberToObject(s, "groupedObjects", (double)c.grouped_objects);
            cJSON_AddNumberToObject(s, "changedPods", (double)c.changed_pods);
            cJSON_AddNumberToObject(s, "allowedToDeniedPods", (double)c.denied_pods);
            cJSON_AddNumberToObject(s, "deniedToAllowedPods", (double)c.allowed_pods);
            char *t = cJSON_Print(root);
            if (t) printf("%s\n", t);
            free(t);
            cJSON_Delete(root);
        } else {
            printf("%zu of %zu judged (%zu object%s, %zu not judged) change: %zu allowed->denied, "
                   "%zu denied->allowed, %zu rule, %zu pool, %zu resources, %zu warnings; "
                   "judged as: %zu original, %zu reconstructed, %zu as-is",
                   c.changed, c.units, c.objects, c.objects == 1 ? "" : "s", c.not_judged, c.denied,
                   c.allowed, c.rule, c.pool, c.resources, c.warnings, c.original, c.reconstructed,
                   c.as_is);
            if (c.changed)
                printf("; the changes touch %zu pod(s) (%zu allowed->denied, %zu "
                       "denied->allowed)",
                       c.changed_pods, c.denied_pods, c.allowed_pods);
            if (c.unknown)
                printf("; %zu original unknown (judged as stored, not counted as changes)",
                       c.unknown);
            if (c.grouped) printf("; %zu pod(s) reported under their workload", c.grouped);
            if (c.grouped_objects)
                printf("; %zu owned object(s) reported under their top owner", c.grouped_objects);
            putchar('\n');
        }
        if (fflush(stdout) != 0) {
            fprintf(stderr, "gpu-admission diff: cannot write stdout: %s\n", strerror(errno));
            rc = 2;
        }
    }
    if (rc == 0 && exit_code && c.changed) rc = 1;
    cJSON_Delete(jchanges);
    for (size_t u = 0; u < n_units; u++) {
        cJSON_Delete(units[u].entries);
        cJSON_Delete(units[u].pods);
        cJSON_Delete(units[u].owned);
    }
    free(units);
    for (size_t i = 0; lists && i < n_inputs; i++)
        gpa_objects_free(lists[i]);
    free(lists);
    gpa_policy_unref(po);
    gpa_policy_unref(pn);
    free(inputs);
    return rc;
}
