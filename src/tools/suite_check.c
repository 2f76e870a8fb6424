/*
 * suite_check.c - judges one test case (judge.h: the server's path, nothing cached) and checks
 * each expectation it gives, describing every unmet one with what was expected, what
 * happened and, for objects and resources, a unified diff of the part that matters. Also the
 * reverse: a decision written down as expectations (`test --record`).
 *
 * Must never: let an expectation pass that does not hold (a missing value never "matches"),
 * or stop at the first failure (a user fixes all of them in one go).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/quantity.h"
#include "gpu_admission/review.h"
#include "gpu_admission/textdiff.h"
#include "gpu_admission/yamljson.h"
#include "suite_internal.h"

static bool add_failure(gpa_case_result *r, const char *key, const char *expected,
                        const char *actual, char *diff)
{
    gpa_case_failure *nf = realloc(r->failures, (r->n_failures + 1) * sizeof *nf);
    if (!nf) {
        free(diff);
        return false;
    }
    r->failures = nf;
    gpa_case_failure *f = &nf[r->n_failures++];
    f->key = strdup(key);
    f->expected = strdup(expected ? expected : "");
    f->actual = strdup(actual ? actual : "");
    f->diff = diff;
    r->passed = false;
    return f->key && f->expected && f->actual;
}

static void quote(char *buf, size_t cap, const char *s, const char *if_null)
{
    if (s)
        snprintf(buf, cap, "\"%s\"", s);
    else
        snprintf(buf, cap, "%s", if_null);
}

static bool check_name(gpa_case_result *r, const char *key, const char *want, const char *got,
                       const char *none)
{
    if ((!want && !got) || (want && got && strcmp(want, got) == 0)) return true;
    char e[600], a[600];
    quote(e, sizeof e, want, none);
    quote(a, sizeof a, got, none);
    return add_failure(r, key, e, a, NULL);
}

/* ---- values: subset match, projection for the diff ---- */

static bool scalar_equal(const cJSON *e, const cJSON *a)
{
    if (cJSON_Compare(e, a, true)) return true;
    /* `nvidia.com/gpu: 1` in YAML is a number; the API server stores what it was sent. Equal
     * when the string is exactly how the number prints. */
    const cJSON *num = cJSON_IsNumber(e) ? e : cJSON_IsNumber(a) ? a : NULL;
    const cJSON *s = cJSON_IsString(e) ? e : cJSON_IsString(a) ? a : NULL;
    if (!num || !s) return false;
    char *t = gpa_review_json(num, NULL);
    bool eq = t && strcmp(t, s->valuestring) == 0;
    free(t);
    return eq;
}

static bool subset(const cJSON *e, const cJSON *a)
{
    if (!a) return false;
    if (cJSON_IsObject(e)) {
        if (!cJSON_IsObject(a)) return false;
        for (const cJSON *c = e->child; c; c = c->next)
            if (!subset(c, cJSON_GetObjectItemCaseSensitive(a, c->string))) return false;
        return true;
    }
    if (cJSON_IsArray(e)) {
        if (!cJSON_IsArray(a) || cJSON_GetArraySize(e) != cJSON_GetArraySize(a)) return false;
        for (const cJSON *x = e->child, *y = a->child; x; x = x->next, y = y->next)
            if (!subset(x, y)) return false;
        return true;
    }
    return scalar_equal(e, a);
}

/* The part of a that e talks about: its keys only, every element of lists (so a length
 * mismatch shows). A key missing in a is left out, so the diff shows it removed. */
static cJSON *project(const cJSON *e, const cJSON *a)
{
    if (cJSON_IsObject(e) && cJSON_IsObject(a)) {
        cJSON *o = cJSON_CreateObject();
        for (const cJSON *c = e->child; o && c; c = c->next) {
            const cJSON *ac = cJSON_GetObjectItemCaseSensitive(a, c->string);
            if (!ac) continue;
            cJSON *p = project(c, ac);
            if (!p) {
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToObject(o, c->string, p);
        }
        return o;
    }
    if (cJSON_IsArray(e) && cJSON_IsArray(a)) {
        cJSON *o = cJSON_CreateArray();
        const cJSON *x = e->child;
        for (const cJSON *y = a->child; o && y; y = y->next) {
            cJSON *p = x ? project(x, y) : cJSON_Duplicate(y, 1);
            if (!p) {
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToArray(o, p);
            if (x) x = x->next;
        }
        return o;
    }
    if (scalar_equal(e, a)) return cJSON_Duplicate(e, 1); /* same text in the diff */
    return cJSON_Duplicate(a, 1);
}

static char *yaml_of(const cJSON *v)
{
    return v ? gpa_json_to_yaml(v) : strdup("(nothing)\n");
}

/* A failure with a diff between the YAML of want and got. */
static bool fail_with_diff(gpa_case_result *r, const char *key, const char *summary_e,
                           const char *summary_a, const cJSON *want, const cJSON *got)
{
    char *ye = yaml_of(want), *ya = yaml_of(got);
    char *diff = ye && ya ? gpa_text_diff(ye, ya, "expected", "actual") : NULL;
    free(ye);
    free(ya);
    return add_failure(r, key, summary_e, summary_a, diff);
}

/* ---- resources ---- */

static bool quantity_of(gpa_quantity *q, const cJSON *v)
{
    char buf[64];
    const char *s = NULL;
    if (cJSON_IsString(v))
        s = v->valuestring;
    else if (cJSON_IsNumber(v)) {
        char *t = gpa_review_json(v, NULL);
        if (!t) return false;
        snprintf(buf, sizeof buf, "%s", t);
        free(t);
        s = buf;
    }
    return s && gpa_quantity_parse(q, s, strlen(s), NULL) == GPA_OK;
}

static bool same_quantity(const cJSON *e, const cJSON *a)
{
    gpa_quantity qe, qa;
    if (quantity_of(&qe, e) && quantity_of(&qa, a)) return qe.milli == qa.milli;
    return scalar_equal(e, a);
}

/* A resource name with a '/' is an extended resource (nvidia.com/gpu, nvidia.com/mig-...):
 * those not named in the expectation must be absent, so a rename that left the old name
 * behind fails. cpu/memory not named are not looked at. */
static bool check_resources(gpa_case_result *r, const gpa_policy *p, const cJSON *want,
                            const cJSON *object)
{
    cJSON *limits = object ? gpa_judge_container_limits(p, object) : cJSON_CreateObject();
    cJSON *shown = cJSON_CreateObject();
    if (!limits || !shown) {
        cJSON_Delete(limits);
        cJSON_Delete(shown);
        return false;
    }
    bool ok = true;
    char detail[1024] = "";
    for (const cJSON *c = want->child; c; c = c->next) {
        const cJSON *act = cJSON_GetObjectItemCaseSensitive(limits, c->string);
        if (!act) {
            ok = false;
            snprintf(detail, sizeof detail, "no container \"%s\"", c->string);
            continue;
        }
        cJSON *sh = cJSON_CreateObject();
        if (!sh) break;
        cJSON_AddItemToObject(shown, c->string, sh);
        for (const cJSON *q = c->child; q; q = q->next) {
            const cJSON *aq = cJSON_GetObjectItemCaseSensitive(act, q->string);
            if (cJSON_IsNull(q) ? aq != NULL : (!aq || !same_quantity(q, aq))) {
                ok = false;
                if (!detail[0])
                    snprintf(detail, sizeof detail, "%s: %s %s", c->string, q->string,
                             aq ? "differs" : "missing");
            }
            if (aq) cJSON_AddItemToObject(sh, q->string, cJSON_Duplicate(aq, 1));
        }
        for (const cJSON *aq = act->child; aq; aq = aq->next) {
            if (!strchr(aq->string, '/') || cJSON_GetObjectItemCaseSensitive(c, aq->string))
                continue;
            ok = false;
            if (!detail[0])
                snprintf(detail, sizeof detail, "%s: unexpected %s", c->string, aq->string);
            cJSON_AddItemToObject(sh, aq->string, cJSON_Duplicate(aq, 1));
        }
    }
    bool rc = true;
    if (!ok)
        rc = fail_with_diff(r, "resources", "the limits below",
                            detail[0] ? detail : "different limits", want, shown);
    cJSON_Delete(limits);
    cJSON_Delete(shown);
    return rc;
}

/* ---- the case ---- */

int gpa_suite_case_run(gpa_case_result *out, const gpa_policy *p, const gpa_suite_file *f, size_t s,
                       size_t c, gpa_error *err)
{
    memset(out, 0, sizeof *out);
    if (!f || s >= f->n || c >= f->suites[s].n_cases)
        return gpa_fail(err, GPA_EINVAL, "no such case");
    const gpa_tcase *t = &f->suites[s].cases[c];
    out->passed = true;
    gpa_judge_input in = {
        .object = t->object,
        .namespace_ = t->namespace_,
        .operation = t->operation,
        .old_object = t->old_object,
        .hooks = t->hooks,
        .want_object = (t->has & (EX_OBJECT | EX_RESOURCES)) != 0,
    };
    gpa_error jerr = {0};
    int rc = gpa_judge(&out->decision, p, &in, &jerr);
    if (rc == GPA_ENOMEM) return gpa_fail(err, rc, "out of memory");
    bool ok = true;
    if (rc != GPA_OK) {
        ok = add_failure(out, "error", "a decision", jerr.message, NULL);
        return ok ? GPA_OK : gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    const gpa_judgement *j = &out->decision;
    char e[1200], a[1200];
    if (t->has & EX_ALLOWED && t->allowed != j->allowed) {
        snprintf(e, sizeof e, "%s", t->allowed ? "true" : "false");
        if (j->allowed)
            snprintf(a, sizeof a, "true%s", j->judged ? "" : " (not judged by either webhook)");
        else
            snprintf(a, sizeof a, "false (%s)", j->message ? j->message : "denied");
        ok = ok && add_failure(out, "allowed", e, a, NULL);
    }
    if (t->has & EX_RULE) ok = ok && check_name(out, "rule", t->rule, j->rule, "null (no rule)");
    if (t->has & EX_POOL) ok = ok && check_name(out, "pool", t->pool, j->pool, "null (no pool)");
    if (t->has & EX_REASON)
        ok = ok && check_name(out, "reason", t->reason, j->reason, "null (no violation)");
    if (t->has & EX_MESSAGE && (!j->message || regexec(&t->message, j->message, 0, NULL, 0) != 0)) {
        snprintf(e, sizeof e, "a message matching /%s/", t->message_src);
        quote(a, sizeof a, j->message, "no message");
        ok = ok && add_failure(out, "message", e, a, NULL);
    }
    for (size_t w = 0; t->has & EX_WARNINGS && w < t->n_warnings; w++) {
        bool hit = false;
        for (size_t k = 0; k < j->n_warnings && !hit; k++)
            hit = regexec(&t->warning[w], j->warnings[k], 0, NULL, 0) == 0;
        if (hit) continue;
        snprintf(e, sizeof e, "a warning matching /%s/", t->warning_src[w]);
        size_t n = 0;
        a[0] = '\0';
        for (size_t k = 0; k < j->n_warnings && n < sizeof a; k++)
            n += (size_t)snprintf(a + n, sizeof a - n, "%s\"%s\"", k ? ", " : "", j->warnings[k]);
        if (!j->n_warnings) snprintf(a, sizeof a, "no warnings");
        ok = ok && add_failure(out, "warnings", e, a, NULL);
    }
    if (t->has & EX_NO_WARNINGS && t->no_warnings != (j->n_warnings == 0)) {
        snprintf(e, sizeof e, "%s", t->no_warnings ? "no warnings" : "at least one warning");
        if (j->n_warnings)
            snprintf(a, sizeof a, "%zu warning%s, the first \"%s\"", j->n_warnings,
                     j->n_warnings > 1 ? "s" : "", j->warnings[0]);
        else
            snprintf(a, sizeof a, "no warnings");
        ok = ok && add_failure(out, "noWarnings", e, a, NULL);
    }
    if (t->has & EX_RESOURCES) ok = ok && check_resources(out, p, t->resources, j->object);
    if (t->has & EX_OBJECT) {
        if (t->exact) {
            if (!j->object || !cJSON_Compare(t->expect_object, j->object, true))
                ok = ok && fail_with_diff(out, "objectExact", "exactly the object below",
                                          "a different object", t->expect_object, j->object);
        } else if (!subset(t->expect_object, j->object)) {
            cJSON *proj = j->object ? project(t->expect_object, j->object) : NULL;
            ok = ok && (!j->object || proj) &&
                 fail_with_diff(out, "object", "the object to contain the fields below",
                                "different fields", t->expect_object, proj);
            cJSON_Delete(proj);
        }
    }
    return ok ? GPA_OK : gpa_fail(err, GPA_ENOMEM, "out of memory");
}

void gpa_case_result_clear(gpa_case_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_failures; i++) {
        free(r->failures[i].key);
        free(r->failures[i].expected);
        free(r->failures[i].actual);
        free(r->failures[i].diff);
    }
    free(r->failures);
    gpa_judgement_clear(&r->decision);
    memset(r, 0, sizeof *r);
}

/* ---- recording ---- */

/* ^text$ with every ERE special escaped: the recorded expectation matches this warning only. */
static char *anchored(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc(2 * n + 3);
    if (!o) return NULL;
    size_t k = 0;
    o[k++] = '^';
    for (; *s; s++) {
        if (strchr(".[]{}()\\*+?^$|", *s)) o[k++] = '\\';
        o[k++] = *s;
    }
    o[k++] = '$';
    o[k] = '\0';
    return o;
}

static bool add_name(cJSON *e, const char *key, const char *v)
{
    return v ? cJSON_AddStringToObject(e, key, v) != NULL : cJSON_AddNullToObject(e, key) != NULL;
}

cJSON *gpa_suite_record_expect(const gpa_policy *p, const gpa_judgement *j, const cJSON *object)
{
    cJSON *e = cJSON_CreateObject();
    bool ok = e && cJSON_AddBoolToObject(e, "allowed", j->allowed) &&
              add_name(e, "rule", j->rule) && add_name(e, "pool", j->pool);
    if (ok && j->reason) ok = cJSON_AddStringToObject(e, "reason", j->reason) != NULL;
    cJSON *limits = ok && object && j->allowed ? gpa_judge_container_limits(p, object) : NULL;
    cJSON *res = limits ? cJSON_CreateObject() : NULL;
    for (const cJSON *c = limits ? limits->child : NULL; ok && c; c = c->next) {
        cJSON *sel = NULL;
        for (const cJSON *q = c->child; ok && q; q = q->next) {
            if (!strchr(q->string, '/')) continue;
            if (!sel) ok = (sel = cJSON_AddObjectToObject(res, c->string)) != NULL;
            if (ok) ok = cJSON_AddItemToObject(sel, q->string, cJSON_Duplicate(q, 1));
        }
    }
    if (ok && res && res->child) {
        cJSON_AddItemToObject(e, "resources", res);
        res = NULL;
    }
    cJSON_Delete(res);
    cJSON_Delete(limits);
    if (ok && j->n_warnings) {
        cJSON *w = cJSON_AddArrayToObject(e, "warnings");
        for (size_t i = 0; ok && i < j->n_warnings; i++) {
            char *re = anchored(j->warnings[i]);
            ok = w && re && cJSON_AddItemToArray(w, cJSON_CreateString(re));
            free(re);
        }
    } else if (ok) {
        ok = cJSON_AddTrueToObject(e, "noWarnings") != NULL;
    }
    if (!ok) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}
