/*
 * engine_decision.c - building the decision: violations, warnings, explain lines, audit
 * annotations, and enforcement (deny | warn | audit) turning violations into the answer.
 *
 * Must never let a warning reach 120 characters (the API server truncates and kubectl
 * prints them verbatim) and never lose an allocation failure: any OOM is sticky in e->oom
 * and fails the whole request rather than returning a half-built decision. Every line it
 * keeps is in the decision's node arena (one free for all of them), so none may be freed or
 * handed out as heap memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

void gpa_eng_init(gpa_eng *e, gpa_decision *d, const gpa_policy *p, const gpa_request *req)
{
    memset(d, 0, sizeof *d);
    memset(e, 0, offsetof(gpa_eng, scans)); /* the cache's entries are written before read */
    e->scans.n = 0;
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

/* Most lines are only literal text and %s (the placement's warnings, one per change): put
 * together by hand, the same bytes vsnprintf would write at a tenth of the cost. NULL with
 * *done false when fmt holds anything else (or a NULL string): vsnprintf's turn. */
static char *fmt_only_s(gpa_narena *ar, const char *fmt, va_list ap, bool *done)
{
    enum { MAX_ARGS = 16 };
    const char *arg[MAX_ARGS];
    size_t len[MAX_ARGS], total = strlen(fmt); /* minus 2 per "%s" / 1 per "%%" below */
    int n = 0;
    *done = false;
    va_list cp;
    va_copy(cp, ap);
    for (const char *f = strchr(fmt, '%'); f; f = strchr(f + 2, '%')) {
        if (f[1] == 's' && n < MAX_ARGS) {
            const char *a = va_arg(cp, const char *);
            if (!a) { /* vsnprintf's "(null)" */
                va_end(cp);
                return NULL;
            }
            arg[n] = a;
            len[n] = strlen(a);
            total = total - 2 + len[n++];
        } else if (f[1] == '%') {
            total--;
        } else {
            va_end(cp);
            return NULL;
        }
    }
    va_end(cp);
    *done = true;
    char *out = gpa_narena_alloc(ar, total + 1), *o = out;
    if (!out) return NULL;
    n = 0;
    const char *from = fmt;
    for (const char *f = strchr(fmt, '%'); f; f = strchr(f + 2, '%')) {
        memcpy(o, from, (size_t)(f - from));
        o += f - from;
        if (f[1] == 's') {
            memcpy(o, arg[n], len[n]);
            o += len[n++];
        } else {
            *o++ = '%';
        }
        from = f + 2;
    }
    size_t rest = strlen(from);
    memcpy(o, from, rest + 1);
    return out;
}

/* The formatted line, in the decision's arena; NULL on OOM. */
__attribute__((format(printf, 2, 0))) static char *vfmt(gpa_eng *e, const char *fmt, va_list ap)
{
    gpa_narena *ar = gpa_eng_arena(e);
    if (!ar) return NULL;
    bool done;
    char *quick = fmt_only_s(ar, fmt, ap, &done);
    if (done) return quick;
    /* one formatting pass for the usual short line; a second only when it did not fit */
    char buf[256];
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, cp);
    va_end(cp);
    if (n < 0) return NULL;
    if ((size_t)n < sizeof buf) return gpa_narena_strndup(ar, buf, (size_t)n);
    char *s = gpa_narena_alloc(ar, (size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

/* Appends s (an arena string) to a decision list kept in the arena: a full list moves to
 * an arena array twice its size (the old one is left behind, a few pointers). */
static bool push(gpa_eng *e, char ***arr, size_t *n, size_t *cap, char *s)
{
    if (!s) {
        e->oom = true;
        return false;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        char **a = gpa_narena_alloc(e->arena, nc * sizeof *a);
        if (!a) {
            e->oom = true;
            return false;
        }
        if (*n) memcpy(a, *arr, *n * sizeof *a);
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
    char *msg = vfmt(e, fmt, ap);
    va_end(ap);
    if (!msg) {
        e->oom = true;
        return;
    }
    if (e->n_viol == e->cap_viol) {
        size_t nc = e->cap_viol ? e->cap_viol * 2 : 4;
        gpa_violation *v = realloc(e->viol, nc * sizeof *v);
        if (!v) {
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
    char *s = vfmt(e, fmt, ap);
    va_end(ap);
    if (s) gpa_warn_shorten(s, strlen(s));
    if (push(e, &e->d->warnings, &e->d->n_warnings, &e->cap_warn, s) && e->req->explain) {
        /* every change is also an explain line, so --explain tells the whole story */
        gpa_eng_explain(e, "change: %s", s);
    }
}

void gpa_eng_warn_parts(gpa_eng *e, const gpa_sv *parts, size_t n)
{
    gpa_narena *ar = gpa_eng_arena(e);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += parts[i].n;
    char *s = ar ? gpa_narena_alloc(ar, total + 1) : NULL;
    if (s) {
        char *o = s;
        for (size_t i = 0; i < n; i++) {
            memcpy(o, parts[i].s, parts[i].n);
            o += parts[i].n;
        }
        *o = '\0';
        gpa_warn_shorten(s, total);
    }
    if (push(e, &e->d->warnings, &e->d->n_warnings, &e->cap_warn, s) && e->req->explain)
        gpa_eng_explain(e, "change: %s", s);
}

void gpa_eng_warn_sv(gpa_eng *e, gpa_sv line)
{
    gpa_eng_warn_parts(e, &line, 1);
}

void gpa_eng_explain(gpa_eng *e, const char *fmt, ...)
{
    if (!e->req->explain) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(e, fmt, ap);
    va_end(ap);
    push(e, &e->d->explain, &e->d->n_explain, &e->cap_explain, s);
}

void gpa_eng_audit(gpa_eng *e, const char *key, const char *value)
{
    gpa_eng_audit_sv(e, (gpa_sv){key, strlen(key)}, (gpa_sv){value, strlen(value)});
}

void gpa_eng_audit_sv(gpa_eng *e, gpa_sv key, gpa_sv value)
{
    gpa_decision *d = e->d;
    gpa_narena *ar = gpa_eng_arena(e);
    char *k = ar ? gpa_narena_strndup(ar, key.s, key.n) : NULL;
    char *v = k ? gpa_narena_strndup(ar, value.s, value.n) : NULL;
    if (!v) {
        e->oom = true;
        return;
    }
    if (d->n_audit == e->cap_audit) {
        size_t nc = e->cap_audit ? e->cap_audit * 2 : 4;
        char **ak = gpa_narena_alloc(ar, nc * sizeof *ak);
        char **av = ak ? gpa_narena_alloc(ar, nc * sizeof *av) : NULL;
        if (!av) {
            e->oom = true;
            return;
        }
        if (d->n_audit) {
            memcpy(ak, d->audit_keys, d->n_audit * sizeof *ak);
            memcpy(av, d->audit_values, d->n_audit * sizeof *av);
        }
        d->audit_keys = ak;
        d->audit_values = av;
        e->cap_audit = nc;
    }
    d->audit_keys[d->n_audit] = k;
    d->audit_values[d->n_audit] = v;
    d->n_audit++;
}

void gpa_eng_drop_warnings_from(gpa_eng *e, size_t n)
{
    if (e->d->n_warnings > n) e->d->n_warnings = n; /* the strings go with the arena */
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
        /* the names' lengths are known when the index is there */
        const gpa_rule_text *rt = gpa_eng_rule_text(e);
        const gpa_pool_text *pt = gpa_eng_pool_text(e);
        gpa_eng_audit_sv(e, (gpa_sv){"rule", 4},
                         rt ? rt->name : (gpa_sv){e->rule->name, strlen(e->rule->name)});
        if (e->pool)
            gpa_eng_audit_sv(e, (gpa_sv){"pool", 4},
                             pt ? pt->name : (gpa_sv){e->pool->name, strlen(e->pool->name)});
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
            gpa_eng_explain(e, "enforcement %s: the %s is allowed despite the violation",
                            e->p->enforcement == GPA_ENFORCE_WARN ? "warn" : "audit",
                            e->claim ? "claim" : "pod");
        }
    }
    free(e->viol); /* the messages are in the arena */
    e->viol = NULL;
    if (e->oom) {
        gpa_decision_clear(d);
        return gpa_fail(err, GPA_ENOMEM, "engine: out of memory");
    }
    return GPA_OK;
}

void gpa_decision_clear(gpa_decision *d)
{
    if (!d) return;
    free(d->message);
    cJSON_Delete(d->mutated);
    /* patch, warnings, audit annotations and explain lines all live in the arena */
    gpa_narena_free(d->priv_arena);
    memset(d, 0, sizeof *d);
}

gpa_narena *gpa_eng_arena(gpa_eng *e)
{
    if (!e->arena) {
        e->arena = gpa_narena_new();
        if (!e->arena) e->oom = true;
        e->d->priv_arena = e->arena;
    }
    return e->arena;
}
