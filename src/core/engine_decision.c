/*
 * engine_decision.c - building the decision: violations, warnings, explain lines, audit
 * annotations, and enforcement (deny | warn | audit) turning violations into the answer.
 *
 * Must never let a warning reach 120 characters (the API server truncates and kubectl
 * prints them verbatim) and never lose an allocation failure: any OOM is sticky in e->oom
 * and fails the whole request rather than returning a half-built decision.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

#define WARN_MAX 119 /* strictly below 120 characters */

void gpa_eng_init(gpa_eng *e, gpa_decision *d, const gpa_policy *p, const gpa_request *req)
{
    memset(d, 0, sizeof *d);
    memset(e, 0, sizeof *e);
    e->p = p;
    e->req = req;
    e->d = d;
    e->create = req->op == GPA_OP_CREATE;
    gpa_pod_init(&e->orig, req->object);
    e->ns = req->namespace_;
    if (!e->ns || !*e->ns) e->ns = gpa_json_str(e->orig.metadata, "namespace");
    if (!e->ns) e->ns = "";
    d->allowed = true;
}

static char *vfmt(const char *fmt, va_list ap)
{
    /* one formatting pass for the usual short line; a second only when it did not fit */
    char buf[256];
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, cp);
    va_end(cp);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    if ((size_t)n < sizeof buf)
        memcpy(s, buf, (size_t)n + 1);
    else
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

/* Cuts s (in place) to at most WARN_MAX bytes on a UTF-8 boundary, marking the cut. */
static void shorten(char *s)
{
    size_t n = strlen(s);
    if (n <= WARN_MAX) return;
    size_t cut = WARN_MAX - 3;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    memcpy(s + cut, "...", 4);
}

static bool push(gpa_eng *e, char ***arr, size_t *n, size_t *cap, char *s)
{
    if (!s) {
        e->oom = true;
        return false;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        char **a = realloc(*arr, nc * sizeof *a);
        if (!a) {
            free(s);
            e->oom = true;
            return false;
        }
        *arr = a;
        *cap = nc;
    }
    (*arr)[(*n)++] = s;
    return true;
}

void gpa_eng_violation(gpa_eng *e, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = vfmt(fmt, ap);
    va_end(ap);
    if (!msg) {
        e->oom = true;
        return;
    }
    if (e->n_viol == e->cap_viol) {
        size_t nc = e->cap_viol ? e->cap_viol * 2 : 4;
        gpa_violation *v = realloc(e->viol, nc * sizeof *v);
        if (!v) {
            free(msg);
            e->oom = true;
            return;
        }
        e->viol = v;
        e->cap_viol = nc;
    }
    e->viol[e->n_viol].reason = reason;
    e->viol[e->n_viol].message = msg;
    e->n_viol++;
}

void gpa_eng_warn(gpa_eng *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    if (s) shorten(s);
    if (push(e, &e->d->warnings, &e->d->n_warnings, &e->cap_warn, s) && e->req->explain) {
        /* every change is also an explain line, so --explain tells the whole story */
        gpa_eng_explain(e, "change: %s", s);
    }
}

void gpa_eng_explain(gpa_eng *e, const char *fmt, ...)
{
    if (!e->req->explain) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    push(e, &e->d->explain, &e->d->n_explain, &e->cap_explain, s);
}

void gpa_eng_audit(gpa_eng *e, const char *key, const char *value)
{
    gpa_decision *d = e->d;
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        e->oom = true;
        return;
    }
    if (d->n_audit == e->cap_audit) {
        size_t nc = e->cap_audit ? e->cap_audit * 2 : 4;
        char **ak = realloc(d->audit_keys, nc * sizeof *ak);
        if (ak) d->audit_keys = ak;
        char **av = ak ? realloc(d->audit_values, nc * sizeof *av) : NULL;
        if (av) d->audit_values = av;
        if (!ak || !av) {
            free(k);
            free(v);
            e->oom = true;
            return;
        }
        e->cap_audit = nc;
    }
    d->audit_keys[d->n_audit] = k;
    d->audit_values[d->n_audit] = v;
    d->n_audit++;
}

void gpa_eng_drop_warnings_from(gpa_eng *e, size_t n)
{
    gpa_decision *d = e->d;
    while (d->n_warnings > n)
        free(d->warnings[--d->n_warnings]);
}

/* All violation messages joined with "; " (the first one leads). */
static char *join_violations(const gpa_eng *e)
{
    size_t len = 1;
    for (size_t i = 0; i < e->n_viol; i++)
        len += strlen(e->viol[i].message) + 2;
    char *s = malloc(len);
    if (!s) return NULL;
    s[0] = '\0';
    size_t at = 0;
    for (size_t i = 0; i < e->n_viol; i++) {
        size_t l = strlen(e->viol[i].message);
        if (i) {
            memcpy(s + at, "; ", 2);
            at += 2;
        }
        memcpy(s + at, e->viol[i].message, l + 1);
        at += l;
    }
    return s;
}

int gpa_eng_finish(gpa_eng *e, gpa_error *err)
{
    gpa_decision *d = e->d;
    d->rule = e->rule ? e->rule->name : NULL;
    d->pool = e->pool ? e->pool->name : NULL;
    if (e->rule) {
        gpa_eng_audit(e, "rule", e->rule->name);
        if (e->pool) gpa_eng_audit(e, "pool", e->pool->name);
    }
    if (e->n_viol > 0) {
        d->reason = e->viol[0].reason;
        d->message = join_violations(e);
        if (!d->message)
            e->oom = true;
        else
            gpa_eng_audit(e, "violation", d->message);
        for (size_t i = 0; i < e->n_viol; i++) {
            gpa_eng_explain(e, "violation %s: %s", e->viol[i].reason, e->viol[i].message);
            if (e->p->enforcement == GPA_ENFORCE_WARN)
                gpa_eng_warn(e, "policy violation (warn): %s", e->viol[i].message);
        }
        if (e->p->enforcement == GPA_ENFORCE_DENY) {
            d->allowed = false;
            /* a denied pod is never patched (the patch's memory goes with the arena) */
            cJSON_Delete(d->mutated);
            d->patch = NULL;
            d->mutated = NULL;
        } else {
            gpa_eng_explain(e, "enforcement %s: the pod is allowed despite the violation",
                            e->p->enforcement == GPA_ENFORCE_WARN ? "warn" : "audit");
        }
    }
    for (size_t i = 0; i < e->n_viol; i++)
        free(e->viol[i].message);
    free(e->viol);
    e->viol = NULL;
    if (e->oom) {
        gpa_decision_clear(d);
        return gpa_fail(err, GPA_ENOMEM, "engine: out of memory");
    }
    return GPA_OK;
}

static void free_list(char **a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(a[i]);
    free(a);
}

void gpa_decision_clear(gpa_decision *d)
{
    if (!d) return;
    free(d->message);
    cJSON_Delete(d->mutated); /* patch lives in the arena */
    gpa_arena_free(d->priv_arena);
    free_list(d->warnings, d->n_warnings);
    free_list(d->audit_keys, d->n_audit);
    free_list(d->audit_values, d->n_audit);
    free_list(d->explain, d->n_explain);
    memset(d, 0, sizeof *d);
}

gpa_arena *gpa_eng_arena(gpa_eng *e)
{
    if (!e->arena) {
        e->arena = gpa_arena_new();
        if (!e->arena) e->oom = true;
        e->d->priv_arena = e->arena;
    }
    return e->arena;
}

bool gpa_eng_start(gpa_eng *e, gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                   gpa_error *err, int *rc)
{
    if (!out || !p || !req) {
        *rc = gpa_fail(err, GPA_EINVAL, "engine: missing decision, policy or request");
        return false;
    }
    gpa_eng_init(e, out, p, req);
    if (req->op == GPA_OP_DELETE || req->op == GPA_OP_CONNECT) {
        gpa_eng_explain(e, "operation is not CREATE or UPDATE: nothing to do");
        *rc = gpa_eng_finish(e, err);
        return false;
    }
    if (!cJSON_IsObject(req->object)) {
        gpa_decision_clear(out);
        *rc = gpa_fail(err, GPA_EINVAL, "engine: the request carries no pod object");
        return false;
    }
    gpa_eng_demand(e);
    out->gpu_pod = e->gpus > 0;
    gpa_eng_match(e);
    return true;
}
