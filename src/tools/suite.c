/*
 * suite.c - reads GPUPolicyTest files (docs/policy-tests.md) into suites and cases, with every
 * mistake reported as "file:line:col: message", all of them at once, like policy errors.
 *
 * Strict on purpose: a misspelt expectation key that were ignored would make a case pass that
 * checks nothing, so unknown keys, wrong types, duplicate case names and cases without any
 * expectation are errors. Types, tags and the error collector are the typed reader's
 * (yaml_read.h), so a suite reads YAML exactly as a policy file does. Must never: read a file
 * itself (the caller's callback does), or accept a suite partially.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/objects.h"
#include "gpu_admission/strbuf.h"
#include "suite_internal.h"
#include "gpu_admission/yaml_read.h"

/* Errors kept for the report; past this they are only counted (a generated suite with a
 * million broken cases must not make the reader hold a million messages). The report is cut
 * to gpa_error's 4 KiB long before 1000 lines, so the bound never changes what is shown. */
#define SUITE_MAX_ERRORS 1000

typedef struct pctx {
    const char *path;
    gpa_suite_read_fn read;
    void *rctx;
    gpa_yread r; /* every error in report order; r.oom: out of memory anywhere */
} pctx;

static const char *kind_name(const gpa_ynode *n)
{
    return n->kind == GPA_YN_MAP ? "a mapping" : n->kind == GPA_YN_SEQ ? "a list" : "a scalar";
}

/* Unknown keys are errors (see the file comment). */
static void known_keys(pctx *c, const gpa_ynode *m, const char *const *keys, const char *where)
{
    for (size_t i = 0; i < m->n; i++) {
        const gpa_ynode *k = gpa_ymap_key(m, i);
        bool ok = false;
        for (const char *const *kk = keys; *kk && !ok; kk++)
            ok = strcmp(*kk, k->value) == 0;
        if (!ok) {
            char list[400] = "";
            size_t n = 0;
            for (const char *const *kk = keys; *kk && n < sizeof list; kk++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", *kk);
            gpa_yread_error_at(&c->r, k->line, k->col,
                               "unknown key \"%.80s\" in %s (expected one of: %s)", k->value, where,
                               list);
        }
    }
}

/* A string scalar (quoted or plain of any type: `name: 1` is the name "1"). */
static char *want_string(pctx *c, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(&c->r, n)) return NULL;
    if (!gpa_yread_text(n)) {
        gpa_yread_error_at(&c->r, n->line, n->col, "%s must be a string, not %s", what,
                           n->kind == GPA_YN_SCALAR ? "null" : kind_name(n));
        return NULL;
    }
    char *s = strdup(n->value);
    if (!s) c->r.oom = true;
    return s;
}

static int want_bool(pctx *c, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(&c->r, n)) return -1;
    if (gpa_yread_type(n) == GPA_YT_BOOL) return n->value[0] == 't' || n->value[0] == 'T';
    gpa_yread_error_at(&c->r, n->line, n->col, "%s must be true or false", what);
    return -1;
}

/* rule/pool/reason: a string or null (null: "none"). */
static void want_string_or_null(pctx *c, const gpa_ynode *n, char **out, const char *what)
{
    *out = NULL;
    if (gpa_yread_is_null(n)) return;
    *out = want_string(c, n, what);
}

static cJSON *to_json(pctx *c, const gpa_ynode *n)
{
    cJSON *j = NULL;
    gpa_error e = {0};
    if (gpa_ynode_to_json(&j, n, &e) != GPA_OK) {
        if (e.code == GPA_ENOMEM)
            c->r.oom = true;
        else {
            /* The message starts with the node's own "L:C: "; ours says it with the file. */
            int l = n->line, col = n->col, used = 0;
            if (sscanf(e.message, "%d:%d: %n", &l, &col, &used) < 2 || used == 0) used = 0;
            gpa_yread_error_at(&c->r, l, col, "%s", e.message + used);
        }
        return NULL;
    }
    return j;
}

/* dir of the suite file + rel (rel kept when absolute). */
static char *resolve(const char *suite_path, const char *rel)
{
    if (rel[0] == '/') return strdup(rel);
    const char *slash = strrchr(suite_path, '/');
    size_t dl = slash ? (size_t)(slash - suite_path) + 1 : 0;
    size_t rl = strlen(rel);
    char *out = malloc(dl + rl + 1);
    if (!out) return NULL;
    memcpy(out, suite_path, dl);
    memcpy(out + dl, rel, rl + 1);
    return out;
}

/* `object:` / `oldObject:`: inline mapping, or a file holding exactly one object. */
static cJSON *want_object(pctx *c, const gpa_ynode *n, const char *what)
{
    if (n->kind == GPA_YN_MAP) return to_json(c, n);
    if (n->kind != GPA_YN_SCALAR || gpa_yread_is_null(n) || !n->value[0]) {
        gpa_yread_error_at(&c->r, n->line, n->col,
                           "%s must be a mapping (the object inline) or a file name", what);
        return NULL;
    }
    char *file = resolve(c->path, n->value);
    if (!file) {
        c->r.oom = true;
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    gpa_error e = {0};
    cJSON *out = NULL;
    if (!c->read || c->read(&buf, &len, c->rctx, file, &e) != GPA_OK) {
        gpa_yread_error_at(&c->r, n->line, n->col, "%s: cannot read %s: %s", what, file,
                           c->read ? e.message : "no file reader");
    } else {
        gpa_objects *o = NULL;
        if (gpa_objects_read(&o, buf, len, file, &e) != GPA_OK) {
            gpa_yread_error_at(&c->r, n->line, n->col, "%s: %s", what, e.message);
        } else if (gpa_objects_count(o) != 1) {
            gpa_yread_error_at(&c->r, n->line, n->col,
                               "%s: %s holds %zu objects, expected exactly one", what, file,
                               gpa_objects_count(o));
        } else if (!cJSON_IsObject(gpa_objects_get(o, 0))) {
            gpa_yread_error_at(&c->r, n->line, n->col, "%s: %s does not hold an object", what,
                               file);
        } else {
            out = gpa_objects_take(o, 0);
        }
        gpa_objects_free(o);
    }
    free(buf);
    free(file);
    return out;
}

static bool compile(pctx *c, regex_t *re, const gpa_ynode *n, const char *what)
{
    int rc = regcomp(re, n->value, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[200];
        regerror(rc, re, why, sizeof why);
        gpa_yread_error_at(&c->r, n->line, n->col, "%s: invalid regular expression \"%.80s\": %s",
                           what, n->value, why);
        return false;
    }
    return true;
}

static bool resources_ok(pctx *c, const gpa_ynode *n)
{
    if (n->kind != GPA_YN_MAP) {
        gpa_yread_error_at(&c->r, n->line, n->col,
                           "expect.resources must be a mapping: container -> {resource: "
                           "quantity}");
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *v = gpa_ymap_val(n, i);
        if (v->kind != GPA_YN_MAP) {
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "expect.resources.%.60s must be a mapping: resource -> quantity",
                               gpa_ymap_key(n, i)->value);
            ok = false;
            continue;
        }
        for (size_t j = 0; j < v->n; j++) {
            const gpa_ynode *q = gpa_ymap_val(v, j);
            if (q->kind != GPA_YN_SCALAR) {
                gpa_yread_error_at(&c->r, q->line, q->col,
                                   "a quantity (\"1\") or null (absent) is expected, not %s",
                                   kind_name(q));
                ok = false;
            }
        }
    }
    return ok;
}

static void parse_expect(pctx *c, gpa_tcase *t, const gpa_ynode *m)
{
    static const char *const keys[] = {"allowed", "rule",        "pool",       "reason",
                                       "message", "warnings",    "noWarnings", "resources",
                                       "object",  "objectExact", NULL};
    if (m->kind != GPA_YN_MAP) {
        gpa_yread_error_at(&c->r, m->line, m->col, "expect must be a mapping of expectations");
        return;
    }
    known_keys(c, m, keys, "expect");
    const gpa_ynode *v;
    int b;
    if ((v = gpa_ymap_get(m, "allowed")) && (b = want_bool(c, v, "expect.allowed")) >= 0) {
        t->has |= EX_ALLOWED;
        t->allowed = b;
    }
    if ((v = gpa_ymap_get(m, "rule"))) {
        t->has |= EX_RULE;
        want_string_or_null(c, v, &t->rule, "expect.rule");
    }
    if ((v = gpa_ymap_get(m, "pool"))) {
        t->has |= EX_POOL;
        want_string_or_null(c, v, &t->pool, "expect.pool");
    }
    if ((v = gpa_ymap_get(m, "reason"))) {
        t->has |= EX_REASON;
        want_string_or_null(c, v, &t->reason, "expect.reason");
    }
    if ((v = gpa_ymap_get(m, "message")) &&
        (t->message_src = want_string(c, v, "expect.message"))) {
        if (compile(c, &t->message, v, "expect.message"))
            t->has |= EX_MESSAGE;
        else {
            free(t->message_src);
            t->message_src = NULL;
        }
    }
    if ((v = gpa_ymap_get(m, "warnings"))) {
        if (v->kind != GPA_YN_SEQ || v->n == 0) {
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "expect.warnings must be a non-empty list of regular expressions");
        } else {
            t->warning = calloc(v->n, sizeof *t->warning);
            t->warning_src = calloc(v->n, sizeof *t->warning_src);
            if (!t->warning || !t->warning_src) {
                c->r.oom = true;
                return;
            }
            for (size_t i = 0; i < v->n; i++) {
                char *s = want_string(c, v->kids[i], "each of expect.warnings");
                if (!s) continue;
                if (!compile(c, &t->warning[t->n_warnings], v->kids[i], "expect.warnings")) {
                    free(s);
                    continue;
                }
                t->warning_src[t->n_warnings++] = s;
            }
            t->has |= EX_WARNINGS;
        }
    }
    if ((v = gpa_ymap_get(m, "noWarnings")) && (b = want_bool(c, v, "expect.noWarnings")) >= 0) {
        t->has |= EX_NO_WARNINGS;
        t->no_warnings = b;
        if (b && (t->has & EX_WARNINGS))
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "noWarnings: true contradicts expect.warnings");
    }
    if ((v = gpa_ymap_get(m, "resources")) && resources_ok(c, v) && (t->resources = to_json(c, v)))
        t->has |= EX_RESOURCES;
    if ((v = gpa_ymap_get(m, "object"))) {
        if (v->kind != GPA_YN_MAP)
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "expect.object must be a mapping (part of the object)");
        else if ((t->expect_object = to_json(c, v)))
            t->has |= EX_OBJECT;
    }
    if ((v = gpa_ymap_get(m, "objectExact")) && (b = want_bool(c, v, "expect.objectExact")) >= 0) {
        t->exact = b;
        if (!gpa_ymap_get(m, "object"))
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "objectExact needs expect.object (the whole object)");
    }
    if (t->has == 0)
        gpa_yread_error_at(&c->r, m->line, m->col,
                           "expect names no expectation: a case that checks nothing cannot fail");
}

static bool is_review(const cJSON *o)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
    return cJSON_IsString(k) && strcmp(k->valuestring, "AdmissionReview") == 0;
}

static void parse_case(pctx *c, gpa_tcase *t, const gpa_ynode *m)
{
    static const char *const keys[] = {"name",    "object", "namespace", "operation", "oldObject",
                                       "webhook", "skip",   "expect",    NULL};
    t->line = m->line;
    t->col = m->col;
    t->hooks = GPA_JUDGE_BOTH;
    if (m->kind != GPA_YN_MAP) {
        gpa_yread_error_at(&c->r, m->line, m->col,
                           "a case must be a mapping (name, object, expect, ...)");
        return;
    }
    known_keys(c, m, keys, "a case");
    const gpa_ynode *v;
    if ((v = gpa_ymap_get(m, "name")))
        t->name = want_string(c, v, "name");
    else
        gpa_yread_error_at(&c->r, m->line, m->col, "a case needs a name");
    if (t->name && !t->name[0])
        gpa_yread_error_at(&c->r, v->line, v->col, "a case name must not be empty");
    if ((v = gpa_ymap_get(m, "object")))
        t->object = want_object(c, v, "object");
    else
        gpa_yread_error_at(&c->r, m->line, m->col, "case \"%.80s\" needs an object",
                           t->name ? t->name : "");
    bool review = t->object && is_review(t->object);
    if ((v = gpa_ymap_get(m, "namespace"))) {
        if (review)
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "namespace comes from the AdmissionReview object");
        t->namespace_ = want_string(c, v, "namespace");
    }
    if ((v = gpa_ymap_get(m, "operation"))) {
        if (review)
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "operation comes from the AdmissionReview object");
        t->operation = want_string(c, v, "operation");
        if (t->operation && strcmp(t->operation, "CREATE") && strcmp(t->operation, "UPDATE") &&
            strcmp(t->operation, "DELETE"))
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "operation must be CREATE, UPDATE or DELETE, not \"%.40s\"",
                               t->operation);
    }
    if ((v = gpa_ymap_get(m, "oldObject"))) {
        if (review)
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "oldObject comes from the AdmissionReview object");
        t->old_object = want_object(c, v, "oldObject");
    }
    if ((v = gpa_ymap_get(m, "webhook"))) {
        char *w = want_string(c, v, "webhook");
        if (w && strcmp(w, "both") == 0)
            t->hooks = GPA_JUDGE_BOTH;
        else if (w && strcmp(w, "mutate") == 0)
            t->hooks = GPA_JUDGE_MUTATE;
        else if (w && strcmp(w, "validate") == 0)
            t->hooks = GPA_JUDGE_VALIDATE;
        else if (w)
            gpa_yread_error_at(&c->r, v->line, v->col,
                               "webhook must be mutate, validate or both, not \"%.40s\"", w);
        free(w);
    }
    int b;
    if ((v = gpa_ymap_get(m, "skip")) && (b = want_bool(c, v, "skip")) >= 0) t->skip = b;
    if ((v = gpa_ymap_get(m, "expect")))
        parse_expect(c, t, v);
    else
        gpa_yread_error_at(&c->r, m->line, m->col,
                           "case \"%.80s\" needs expect: a case that checks nothing "
                           "cannot fail",
                           t->name ? t->name : "");
}

static void parse_suite(pctx *c, gpa_tsuite *s, const gpa_ynode *doc)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    static const char *const spec_keys[] = {"policies", "cases", NULL};
    s->line = doc->line;
    s->path = strdup(c->path);
    if (!s->path) c->r.oom = true;
    known_keys(c, doc, top, "a GPUPolicyTest");
    const gpa_ynode *av = gpa_ymap_get(doc, "apiVersion");
    if (!av || av->kind != GPA_YN_SCALAR || strcmp(av->value, GPA_SUITE_API_VERSION) != 0)
        gpa_yread_error_at(&c->r, av ? av->line : doc->line, av ? av->col : doc->col,
                           "apiVersion must be " GPA_SUITE_API_VERSION);
    const gpa_ynode *md = gpa_ymap_get(doc, "metadata");
    const gpa_ynode *nm = md && md->kind == GPA_YN_MAP ? gpa_ymap_get(md, "name") : NULL;
    if (md && md->kind != GPA_YN_MAP)
        gpa_yread_error_at(&c->r, md->line, md->col, "metadata must be a mapping");
    if (nm) {
        s->name = want_string(c, nm, "metadata.name");
    } else {
        /* Unnamed: the file's name without directory and extension. */
        const char *b = strrchr(c->path, '/');
        b = b ? b + 1 : c->path;
        const char *dot = strrchr(b, '.');
        size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
        s->name = strndup(b, n);
        if (!s->name) c->r.oom = true;
    }
    const gpa_ynode *spec = gpa_ymap_get(doc, "spec");
    if (!spec || spec->kind != GPA_YN_MAP) {
        gpa_yread_error_at(&c->r, spec ? spec->line : doc->line, spec ? spec->col : doc->col,
                           "spec must be a mapping with policies and cases");
        return;
    }
    known_keys(c, spec, spec_keys, "spec");
    const gpa_ynode *pol = gpa_ymap_get(spec, "policies");
    if (!pol) {
        gpa_yread_error_at(&c->r, spec->line, spec->col,
                           "spec.policies (the policy directory) is required");
    } else {
        char *rel = want_string(c, pol, "spec.policies");
        if (rel && !rel[0])
            gpa_yread_error_at(&c->r, pol->line, pol->col, "spec.policies must not be empty");
        if (rel && rel[0] && !(s->policies = resolve(c->path, rel))) c->r.oom = true;
        free(rel);
    }
    const gpa_ynode *cases = gpa_ymap_get(spec, "cases");
    if (!cases || cases->kind != GPA_YN_SEQ || cases->n == 0) {
        const gpa_ynode *at = cases ? cases : spec;
        gpa_yread_error_at(&c->r, at->line, at->col,
                           "spec.cases must be a non-empty list of cases");
        return;
    }
    s->cases = calloc(cases->n, sizeof *s->cases);
    if (!s->cases) {
        c->r.oom = true;
        return;
    }
    for (size_t i = 0; i < cases->n; i++) {
        gpa_tcase *t = &s->cases[s->n_cases++];
        parse_case(c, t, cases->kids[i]);
        for (size_t j = 0; t->name && j + 1 < s->n_cases; j++)
            if (s->cases[j].name && strcmp(s->cases[j].name, t->name) == 0)
                gpa_yread_error_at(&c->r, t->line, t->col,
                                   "duplicate case name \"%.80s\" (first at line %d)", t->name,
                                   s->cases[j].line);
    }
}

static void free_case(gpa_tcase *t)
{
    free(t->name);
    cJSON_Delete(t->object);
    free(t->namespace_);
    free(t->operation);
    cJSON_Delete(t->old_object);
    free(t->rule);
    free(t->pool);
    free(t->reason);
    if (t->has & EX_MESSAGE) regfree(&t->message);
    free(t->message_src);
    for (size_t i = 0; i < t->n_warnings; i++) {
        regfree(&t->warning[i]);
        free(t->warning_src[i]);
    }
    free(t->warning);
    free(t->warning_src);
    cJSON_Delete(t->resources);
    cJSON_Delete(t->expect_object);
}

void gpa_suite_file_free(gpa_suite_file *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n; i++) {
        gpa_tsuite *s = &f->suites[i];
        for (size_t j = 0; j < s->n_cases; j++)
            free_case(&s->cases[j]);
        free(s->cases);
        free(s->name);
        free(s->path);
        free(s->policies);
    }
    free(f->suites);
    free(f);
}

static bool is_suite_doc(const gpa_ynode *d)
{
    const gpa_ynode *k = gpa_ymap_get(d, "kind");
    return k && k->kind == GPA_YN_SCALAR && strcmp(k->value, GPA_SUITE_KIND) == 0;
}

/* Every error, one a line, in the order found. */
static int report(gpa_yread *r, gpa_error *err)
{
    size_t n = 0;
    const gpa_yerror *e = gpa_yread_sorted(r, &n);
    gpa_sb sb = {0};
    for (size_t i = 0; i < n; i++)
        gpa_sb_printf(&sb, "%s%s", i ? "\n" : "", e[i].text);
    int rc = sb.oom ? gpa_fail(err, GPA_ENOMEM, "out of memory")
                    : gpa_fail(err, GPA_EPARSE, "%s", sb.p ? sb.p : "");
    gpa_sb_free(&sb);
    return rc;
}

int gpa_suite_file_parse(gpa_suite_file **out, const char *buf, size_t len, const char *path,
                         gpa_suite_read_fn read, void *ctx, gpa_error *err)
{
    if (!out || (!buf && len)) return gpa_fail(err, GPA_EINVAL, "no input");
    *out = NULL;
    if (!path) path = "suite";
    gpa_ystream *ys = NULL;
    int line = 0, col = 0;
    gpa_error yerr = {0};
    int rc = gpa_ystream_parse(&ys, buf ? buf : "", len, &line, &col, &yerr);
    if (rc == GPA_ENOMEM) return gpa_fail(err, rc, "out of memory");
    if (rc != GPA_OK) {
        /* Not YAML at all: only a file that meant to be a suite is an error. */
        if (len && memmem(buf, len, GPA_SUITE_KIND, sizeof GPA_SUITE_KIND - 1))
            return gpa_fail(err, GPA_EPARSE, "%s:%d:%d: %s", path, line, col, yerr.message);
        return GPA_OK;
    }
    size_t n_suites = 0;
    for (size_t i = 0; i < ys->n_docs; i++)
        if (ys->docs[i] && is_suite_doc(ys->docs[i])) n_suites++;
    if (n_suites == 0) {
        gpa_ystream_free(ys);
        return GPA_OK;
    }
    pctx c = {.path = path, .read = read, .rctx = ctx};
    gpa_yread_init(&c.r, path, SUITE_MAX_ERRORS, false);
    for (size_t i = 0; i < ys->n_dups; i++)
        gpa_yread_error_at(&c.r, ys->dups[i].line, ys->dups[i].col,
                           "duplicate key \"%.60s\" (first at %d:%d)", ys->dups[i].key,
                           ys->dups[i].first_line, ys->dups[i].first_col);
    gpa_suite_file *f = calloc(1, sizeof *f);
    if (f) f->suites = calloc(n_suites, sizeof *f->suites);
    if (!f || !f->suites) c.r.oom = true;
    for (size_t i = 0; i < ys->n_docs && !c.r.oom; i++)
        if (ys->docs[i] && is_suite_doc(ys->docs[i]))
            parse_suite(&c, &f->suites[f->n++], ys->docs[i]);
    gpa_ystream_free(ys);
    if (c.r.oom || c.r.n_total) {
        rc = c.r.oom ? gpa_fail(err, GPA_ENOMEM, "out of memory reading %s", path)
                     : report(&c.r, err);
        gpa_yread_free(&c.r);
        gpa_suite_file_free(f);
        return rc;
    }
    gpa_yread_free(&c.r);
    *out = f;
    return GPA_OK;
}

static const gpa_tsuite *suite_at(const gpa_suite_file *f, size_t s)
{
    return f && s < f->n ? &f->suites[s] : NULL;
}

static const gpa_tcase *case_at(const gpa_suite_file *f, size_t s, size_t c)
{
    const gpa_tsuite *t = suite_at(f, s);
    return t && c < t->n_cases ? &t->cases[c] : NULL;
}

size_t gpa_suite_count(const gpa_suite_file *f)
{
    return f ? f->n : 0;
}

const char *gpa_suite_name(const gpa_suite_file *f, size_t s)
{
    const gpa_tsuite *t = suite_at(f, s);
    return t ? t->name : NULL;
}

const char *gpa_suite_path(const gpa_suite_file *f, size_t s)
{
    const gpa_tsuite *t = suite_at(f, s);
    return t ? t->path : NULL;
}

int gpa_suite_line(const gpa_suite_file *f, size_t s)
{
    const gpa_tsuite *t = suite_at(f, s);
    return t ? t->line : 0;
}

const char *gpa_suite_policies(const gpa_suite_file *f, size_t s)
{
    const gpa_tsuite *t = suite_at(f, s);
    return t ? t->policies : NULL;
}

size_t gpa_suite_case_count(const gpa_suite_file *f, size_t s)
{
    const gpa_tsuite *t = suite_at(f, s);
    return t ? t->n_cases : 0;
}

const char *gpa_suite_case_name(const gpa_suite_file *f, size_t s, size_t c)
{
    const gpa_tcase *t = case_at(f, s, c);
    return t ? t->name : NULL;
}

int gpa_suite_case_line(const gpa_suite_file *f, size_t s, size_t c)
{
    const gpa_tcase *t = case_at(f, s, c);
    return t ? t->line : 0;
}

bool gpa_suite_case_skip(const gpa_suite_file *f, size_t s, size_t c)
{
    const gpa_tcase *t = case_at(f, s, c);
    return t && t->skip;
}
