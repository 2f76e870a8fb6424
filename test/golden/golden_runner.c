/*
 * golden_runner.c - runs the golden cases of test/golden/cases: pod in, decision out,
 * compared with what the case expects (allowed, reason, message, warnings, exact patch or
 * final pod, rule, pool, audit annotations, explain lines).
 *
 * On top of each case's own expectations it checks invariants every decision must keep:
 * warnings < 120 chars; a patch applied to the pod gives decision.mutated; mutate on its own
 * output yields an empty patch (reinvocation); a pod the mutating webhook allowed cleanly is
 * allowed by the validating webhook too; the validating webhook never patches.
 *
 *   golden_runner CASES POLICIES [--emit DIR] [--only NAME]   run (and write kubectl inputs)
 *   golden_runner --compare A.json B.json                     semantic JSON equality
 *   golden_runner --docs CASES POLICIES HEADER.md             print docs/policy-examples.md
 *
 * A test program: it reads files and writes into DIR, nothing else. It never decides what a
 * case expects: every expectation is written in the case's case.yaml.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpu_admission/engine.h"
#include "gpu_admission/patch.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/yamljson.h"
#include "golden.h"

static int failures;

#define FAIL(c, ...)                                                                               \
    do {                                                                                           \
        fprintf(stderr, "FAIL %s: ", (c)->name);                                                   \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        (c)->failed = true;                                                                        \
    } while (0)

/* ---------------------------------------------------------------- files */

static bool write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(data, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Every document of a YAML or JSON file. */
static cJSON *load_docs(const char *path, char *why, size_t cap)
{
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) {
        snprintf(why, cap, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    cJSON *docs = NULL;
    if (gpa_looks_like_json(buf, len)) {
        cJSON *one = cJSON_ParseWithLength(buf, len);
        if (one) {
            docs = cJSON_CreateArray();
            cJSON_AddItemToArray(docs, one);
        } else {
            snprintf(why, cap, "%s: not valid JSON", path);
        }
    } else {
        gpa_error err = {0};
        if (gpa_yaml_to_json(&docs, buf, len, &err) != GPA_OK)
            snprintf(why, cap, "%s: %s", path, err.message);
    }
    free(buf);
    return docs;
}

/* ---------------------------------------------------------------- cases */

/* pod: FILE | {inline}; podDocument: N; podTemplate: [keys to a pod template]; podMerge. */
static cJSON *build_pod(gcase *c, const char *field, char **verbatim, char *why, size_t cap)
{
    const cJSON *spec = c->spec;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(spec, field);
    bool is_main = strcmp(field, "pod") == 0;
    const cJSON *tmpl = is_main ? cJSON_GetObjectItemCaseSensitive(spec, "podTemplate") : NULL;
    const cJSON *merge = is_main ? cJSON_GetObjectItemCaseSensitive(spec, "podMerge") : NULL;
    const cJSON *docn = is_main ? cJSON_GetObjectItemCaseSensitive(spec, "podDocument") : NULL;
    cJSON *pod = NULL;
    if (verbatim) *verbatim = NULL;
    if (cJSON_IsObject(src)) {
        pod = cJSON_Duplicate(src, 1);
    } else if (cJSON_IsString(src)) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", c->dir, src->valuestring);
        cJSON *docs = load_docs(path, why, cap);
        if (!docs) return NULL;
        int idx = cJSON_IsNumber(docn) ? docn->valueint : 0;
        cJSON *doc = cJSON_GetArrayItem(docs, idx);
        if (!doc) {
            snprintf(why, cap, "%.1000s has no document %d", path, idx);
            cJSON_Delete(docs);
            return NULL;
        }
        pod = cJSON_Duplicate(doc, 1);
        if (verbatim && !tmpl && !merge && cJSON_GetArraySize(docs) == 1)
            *verbatim = read_file(path, NULL);
        cJSON_Delete(docs);
    } else {
        snprintf(why, cap, "%s: a file name or an inline object", field);
        return NULL;
    }
    if (tmpl) {
        /* a workload's pod template becomes the Pod the API server would be asked to create */
        const cJSON *t = pod, *k;
        cJSON_ArrayForEach(k, tmpl)
            t = cJSON_GetObjectItemCaseSensitive(t, cJSON_GetStringValue(k));
        if (!cJSON_IsObject(t)) {
            snprintf(why, cap, "podTemplate path not found");
            cJSON_Delete(pod);
            return NULL;
        }
        cJSON *np = cJSON_CreateObject();
        cJSON_AddStringToObject(np, "apiVersion", "v1");
        cJSON_AddStringToObject(np, "kind", "Pod");
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(t, "metadata");
        cJSON *nm = meta ? cJSON_Duplicate(meta, 1) : cJSON_CreateObject();
        if (!cJSON_GetObjectItemCaseSensitive(nm, "name")) {
            const char *owner = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(pod, "metadata"), "name"));
            cJSON_AddStringToObject(nm, "name", owner ? owner : "pod");
        }
        cJSON_AddItemToObject(np, "metadata", nm);
        cJSON_AddItemToObject(np, "spec",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "spec"), 1));
        cJSON_Delete(pod);
        pod = np;
    }
    if (merge) merge_patch(pod, merge);
    return pod;
}

/* Replaces every string "${REVISION}" with rev (expected values name the revision so they
 * do not change whenever a policy file does). */
static void subst_revision(cJSON *v, const char *rev)
{
    cJSON *c;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "${REVISION}") == 0) {
        cJSON_SetValuestring(v, rev);
        return;
    }
    cJSON_ArrayForEach(c, v)
        subst_revision(c, rev);
}

void unsubst_revision(cJSON *v, const char *rev)
{
    cJSON *c;
    if (cJSON_IsString(v) && strcmp(v->valuestring, rev) == 0) {
        cJSON_SetValuestring(v, "${REVISION}");
        return;
    }
    cJSON_ArrayForEach(c, v)
        unsubst_revision(c, rev);
}

static int run_engine(gpa_decision *d, const gcase *c, bool mutate, const cJSON *pod,
                      gpa_operation op, const cJSON *old)
{
    gpa_request req = {
        .namespace_ = c->ns, .op = op, .object = pod, .old_object = old, .explain = true};
    gpa_error err = {0};
    int rc = mutate ? gpa_engine_mutate(d, c->policy, &req, &err)
                    : gpa_engine_validate(d, c->policy, &req, &err);
    if (rc != GPA_OK) fprintf(stderr, "%s: engine error %d: %s\n", c->name, rc, err.message);
    return rc;
}

static void print_decision(const gcase *c)
{
    const gpa_decision *d = &c->d;
    char *p = d->patch ? cJSON_Print(d->patch) : NULL;
    fprintf(stderr, "  --- %s: allowed=%s reason=%s rule=%s pool=%s\n  message: %s\n", c->name,
            d->allowed ? "true" : "false", d->reason ? d->reason : "null", d->rule ? d->rule : "-",
            d->pool ? d->pool : "-", d->message ? d->message : "null");
    for (size_t i = 0; i < d->n_warnings; i++)
        fprintf(stderr, "  warning: %s\n", d->warnings[i]);
    for (size_t i = 0; i < d->n_explain; i++)
        fprintf(stderr, "  explain: %s\n", d->explain[i]);
    fprintf(stderr, "  patch: %s\n", p ? p : "null");
    free(p);
}

static gpa_operation parse_op(const char *s)
{
    if (s && strcmp(s, "UPDATE") == 0) return GPA_OP_UPDATE;
    if (s && strcmp(s, "DELETE") == 0) return GPA_OP_DELETE;
    if (s && strcmp(s, "CONNECT") == 0) return GPA_OP_CONNECT;
    return GPA_OP_CREATE;
}

static bool load_case(gcase *c, const char *cases_dir, const char *name)
{
    char why[4600] = "";
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->dir, sizeof c->dir, "%s/%s", cases_dir, name);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/case.yaml", c->dir);
    cJSON *docs = load_docs(path, why, sizeof why);
    if (!docs || !cJSON_IsObject(cJSON_GetArrayItem(docs, 0))) {
        FAIL(c, "%s", why[0] ? why : "case.yaml holds no object");
        cJSON_Delete(docs);
        return false;
    }
    c->spec = cJSON_DetachItemFromArray(docs, 0);
    cJSON_Delete(docs);
    c->policy = get_policy(cJSON_GetObjectItemCaseSensitive(c->spec, "policy"), why, sizeof why);
    if (!c->policy) {
        FAIL(c, "%s", why);
        return false;
    }
    c->hook = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->spec, "hook"));
    c->ns = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->spec, "namespace"));
    c->op = parse_op(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->spec, "operation")));
    if (!c->hook || (strcmp(c->hook, "mutate") != 0 && strcmp(c->hook, "validate") != 0) ||
        !c->ns) {
        FAIL(c, "case.yaml needs hook: mutate|validate and namespace");
        return false;
    }
    c->pod = build_pod(c, "pod", &c->pod_text, why, sizeof why);
    if (!c->pod) {
        FAIL(c, "pod: %s", why);
        return false;
    }
    /* a pod the webhook already mutated names the policy revision it was placed under */
    subst_revision(c->pod, gpa_policy_revision(c->policy));
    if (cJSON_GetObjectItemCaseSensitive(c->spec, "oldPod")) {
        c->old_pod = build_pod(c, "oldPod", NULL, why, sizeof why);
        if (!c->old_pod) {
            FAIL(c, "oldPod: %s", why);
            return false;
        }
        subst_revision(c->old_pod, gpa_policy_revision(c->policy));
    }
    return true;
}

static const cJSON *expect_field(const gcase *c, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->spec, "expect"), k);
}

static void check_string_field(gcase *c, const char *what, const char *got, const cJSON *want,
                               bool substring)
{
    if (!want || cJSON_IsNull(want)) {
        if (got) FAIL(c, "%s: got \"%s\", expected none", what, got);
        return;
    }
    const char *w = cJSON_GetStringValue(want);
    if (!w) {
        FAIL(c, "%s: expectation must be a string or null", what);
        return;
    }
    if (!got || (substring ? !strstr(got, w) : strcmp(got, w) != 0))
        FAIL(c, "%s: got \"%s\", expected %s\"%s\"", what, got ? got : "(none)",
             substring ? "it to contain " : "", w);
}

/* The case's expectations about its decision. */
static void check_expectations(gcase *c, const char *rev)
{
    const gpa_decision *d = &c->d;
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(c->spec, "expect");
    if (!cJSON_IsObject(exp)) {
        FAIL(c, "case.yaml has no expect block");
        return;
    }
    const cJSON *allowed = expect_field(c, "allowed");
    if (!cJSON_IsBool(allowed))
        FAIL(c, "expect.allowed must be true or false");
    else if (cJSON_IsTrue(allowed) != d->allowed)
        FAIL(c, "allowed: got %s", d->allowed ? "true" : "false");
    check_string_field(c, "reason", d->reason, expect_field(c, "reason"), false);
    check_string_field(c, "message", d->message, expect_field(c, "message"), true);
    if (expect_field(c, "rule"))
        check_string_field(c, "rule", d->rule, expect_field(c, "rule"), false);
    if (expect_field(c, "pool"))
        check_string_field(c, "pool", d->pool, expect_field(c, "pool"), false);

    const cJSON *warns = expect_field(c, "warnings");
    size_t nw = (size_t)cJSON_GetArraySize(warns);
    if (nw != d->n_warnings) FAIL(c, "warnings: got %zu, expected %zu", d->n_warnings, nw);
    for (size_t i = 0; i < nw && i < d->n_warnings; i++) {
        const char *w = cJSON_GetStringValue(cJSON_GetArrayItem(warns, (int)i));
        if (!w || strcmp(w, d->warnings[i]) != 0)
            FAIL(c, "warning %zu: got \"%s\", expected \"%s\"", i, d->warnings[i], w ? w : "?");
    }

    const cJSON *audit = expect_field(c, "audit");
    const cJSON *a;
    cJSON_ArrayForEach(a, audit) {
        const char *got = NULL;
        for (size_t i = 0; i < d->n_audit; i++)
            if (strcmp(d->audit_keys[i], a->string) == 0) got = d->audit_values[i];
        check_string_field(c, a->string, got, a, true);
    }
    const cJSON *ex;
    cJSON_ArrayForEach(ex, expect_field(c, "explain")) {
        bool found = false;
        for (size_t i = 0; i < d->n_explain && !found; i++)
            found = strstr(d->explain[i], cJSON_GetStringValue(ex)) != NULL;
        if (!found) FAIL(c, "no explain line contains \"%s\"", cJSON_GetStringValue(ex));
    }

    const cJSON *want_patch = expect_field(c, "patch");
    const cJSON *want_pod = expect_field(c, "pod");
    if (want_patch) {
        cJSON *w = cJSON_Duplicate(want_patch, 1);
        subst_revision(w, rev);
        if (!d->patch || !cJSON_Compare(d->patch, w, true))
            FAIL(c, "patch differs from expect.patch");
        cJSON_Delete(w);
    }
    if (want_pod) {
        char why[4600] = "";
        cJSON *w = NULL;
        if (cJSON_IsString(want_pod)) {
            char path[PATH_MAX + 300];
            snprintf(path, sizeof path, "%s/%s", c->dir, want_pod->valuestring);
            cJSON *docs = load_docs(path, why, sizeof why);
            w = docs ? cJSON_DetachItemFromArray(docs, 0) : NULL;
            cJSON_Delete(docs);
        } else {
            w = cJSON_Duplicate(want_pod, 1);
        }
        if (!w) {
            FAIL(c, "expect.pod: %s", why);
            return;
        }
        subst_revision(w, rev);
        cJSON *got = cJSON_Duplicate(c->pod, 1);
        if (d->patch && gpa_patch_apply(got, d->patch, NULL) != GPA_OK)
            FAIL(c, "own patch does not apply");
        if (!cJSON_Compare(got, w, true)) {
            char *g = cJSON_Print(got);
            FAIL(c, "final pod differs from expect.pod; got:\n%s", g);
            free(g);
        }
        cJSON_Delete(got);
        cJSON_Delete(w);
    }
    if (!want_patch && !want_pod && d->patch)
        FAIL(c, "a patch was produced but the case expects none");
}

/* Invariants that hold for every decision, whatever the case says. */
static void check_invariants(gcase *c)
{
    const gpa_decision *d = &c->d;
    bool mutate = strcmp(c->hook, "mutate") == 0;
    for (size_t i = 0; i < d->n_warnings; i++)
        if (strlen(d->warnings[i]) >= 120)
            FAIL(c, "warning %zu is %zu chars (must be < 120)", i, strlen(d->warnings[i]));
    if (!mutate && d->patch) FAIL(c, "the validating webhook produced a patch");
    if ((d->patch == NULL) != (d->mutated == NULL)) FAIL(c, "patch and mutated disagree");
    if (!d->allowed && d->patch) FAIL(c, "a denied pod carries a patch");
    if (d->patch) {
        cJSON *applied = cJSON_Duplicate(c->pod, 1);
        gpa_error err = {0};
        if (gpa_patch_apply(applied, d->patch, &err) != GPA_OK)
            FAIL(c, "patch does not apply: %s", err.message);
        else if (!cJSON_Compare(applied, d->mutated, true))
            FAIL(c, "patch applied to the pod differs from decision.mutated");
        cJSON_Delete(applied);
        gpa_decision again;
        if (run_engine(&again, c, true, d->mutated, c->op, c->old_pod) != GPA_OK) {
            FAIL(c, "reinvocation failed");
        } else {
            if (again.patch) {
                char *p = cJSON_PrintUnformatted(again.patch);
                FAIL(c, "reinvocation on the mutated pod is not empty: %s", p);
                free(p);
            }
            if (again.allowed != d->allowed) FAIL(c, "reinvocation changes allowed");
            gpa_decision_clear(&again);
        }
    }
    if (mutate) {
        /* patch_only (what the review codec asks for) gives the same patch, and the patch
         * owns its memory: the pod it came from is freed before it is read (ASan checks) */
        cJSON *tmp = cJSON_Duplicate(c->pod, 1);
        gpa_request req = {.namespace_ = c->ns,
                           .op = c->op,
                           .object = tmp,
                           .old_object = c->old_pod,
                           .patch_only = true};
        gpa_decision po;
        if (gpa_engine_mutate(&po, c->policy, &req, NULL) != GPA_OK) {
            FAIL(c, "patch_only run failed");
            cJSON_Delete(tmp);
        } else {
            cJSON_Delete(tmp);
            if (po.mutated) FAIL(c, "patch_only still produced decision.mutated");
            if ((po.patch == NULL) != (d->patch == NULL) ||
                (po.patch && !cJSON_Compare(po.patch, d->patch, true)))
                FAIL(c, "patch_only gives a different patch");
            if (po.allowed != d->allowed || po.n_warnings != d->n_warnings)
                FAIL(c, "patch_only changes the decision");
            gpa_decision_clear(&po);
        }
    }
    if (mutate && d->allowed && !d->message && c->op == GPA_OP_CREATE) {
        /* what the mutating webhook admits cleanly, the validating webhook admits too */
        gpa_decision v;
        const cJSON *final = d->mutated ? d->mutated : c->pod;
        if (run_engine(&v, c, false, final, c->op, c->old_pod) == GPA_OK) {
            if (!v.allowed || v.message)
                FAIL(c, "validating webhook rejects the mutated pod: %s",
                     v.message ? v.message : "?");
            gpa_decision_clear(&v);
        } else {
            FAIL(c, "validation of the mutated pod failed");
        }
    }
}

static bool mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

/* pod.json, patch.json, expected.json for the kubectl cross-check. */
static void emit_case(gcase *c, const char *outdir)
{
    if (!c->d.patch) return;
    char dir[PATH_MAX], path[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s/%s", outdir, c->name);
    if (!mkdir_p(dir)) {
        FAIL(c, "cannot create %s", dir);
        return;
    }
    const char *names[] = {"pod.json", "patch.json", "expected.json"};
    const cJSON *vals[] = {c->pod, c->d.patch, c->d.mutated};
    for (int i = 0; i < 3; i++) {
        char *s = cJSON_Print(vals[i]);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (!s || !write_file(path, s)) FAIL(c, "cannot write %s", path);
        free(s);
    }
}

bool run_case(gcase *c, const char *cases_dir, const char *name)
{
    memset(c, 0, sizeof *c);
    if (!load_case(c, cases_dir, name)) return false;
    bool mutate = strcmp(c->hook, "mutate") == 0;
    if (run_engine(&c->d, c, mutate, c->pod, c->op, c->old_pod) != GPA_OK) {
        FAIL(c, "engine returned an error");
        return false;
    }
    c->ran = true;
    check_expectations(c, gpa_policy_revision(c->policy));
    check_invariants(c);
    return !c->failed;
}

void free_case(gcase *c)
{
    cJSON_Delete(c->spec);
    cJSON_Delete(c->pod);
    cJSON_Delete(c->old_pod);
    free(c->pod_text);
    gpa_decision_clear(&c->d);
}

/* ---------------------------------------------------------------- main */

static int compare(const char *a, const char *b)
{
    char why[4600] = "";
    cJSON *ja = load_docs(a, why, sizeof why), *jb = ja ? load_docs(b, why, sizeof why) : NULL;
    if (!ja || !jb) {
        fprintf(stderr, "%s\n", why);
        cJSON_Delete(ja);
        return 2;
    }
    bool same = cJSON_Compare(cJSON_GetArrayItem(ja, 0), cJSON_GetArrayItem(jb, 0), true);
    if (!same) {
        cJSON *ops = NULL;
        gpa_patch_diff(&ops, cJSON_GetArrayItem(ja, 0), cJSON_GetArrayItem(jb, 0), NULL);
        char *s = ops ? cJSON_Print(ops) : NULL;
        fprintf(stderr, "%s and %s differ; diff:\n%s\n", a, b, s ? s : "?");
        free(s);
        cJSON_Delete(ops);
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--compare") == 0) return compare(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "--docs") == 0) {
        policies_dir = argv[3];
        return gen_docs(argv[2], argv[4]) ? 1 : 0;
    }
    if (argc < 3) {
        fprintf(stderr,
                "usage: %s CASES POLICIES [--emit DIR] [--only NAME]\n"
                "       %s --compare A.json B.json\n"
                "       %s --docs CASES POLICIES HEADER.md\n",
                argv[0], argv[0], argv[0]);
        return 2;
    }
    const char *cases_dir = argv[1], *emit = NULL, *only = NULL;
    bool record = false;
    policies_dir = argv[2];
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--emit") == 0)
            emit = argv[i + 1];
        else if (strcmp(argv[i], "--only") == 0)
            only = argv[i + 1];
        else if (strcmp(argv[i], "--record") == 0)
            only = argv[i + 1], record = true;
    }
    char **names;
    size_t n = list_cases(cases_dir, &names), ran = 0, patched = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && strcmp(only, names[i]) != 0) {
            free(names[i]);
            continue;
        }
        gcase c;
        run_case(&c, cases_dir, names[i]);
        ran++;
        if (record && c.ran) {
            record_case(&c);
            free_case(&c);
            free(names[i]);
            continue;
        }
        if (c.failed) {
            failures++;
            if (c.ran) print_decision(&c);
        } else if (emit && c.d.patch) {
            emit_case(&c, emit);
        }
        patched += c.d.patch != NULL;
        free_case(&c);
        free(names[i]);
    }
    free(names);
    free_policies();
    printf("%zu golden cases, %zu with a patch, %d failed\n", ran, patched, failures);
    if (ran == 0) return 1;
    return failures ? 1 : 0;
}
