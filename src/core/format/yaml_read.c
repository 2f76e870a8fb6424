/*
 * yaml_read.c - the typed YAML reader (include/gpu_admission/yaml_read.h): one rule for null
 * and tags, one bounded error collector, getters that say "what: expected X, got Y".
 * Must never stop at the first error, accept a value of the wrong type silently, or keep
 * more than r->max errors however many the input holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/yaml_read.h"

#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_MAP "tag:yaml.org,2002:map"
#define TAG_SEQ "tag:yaml.org,2002:seq"

void gpa_yread_init(gpa_yread *r, const char *file, size_t max, bool by_position)
{
    memset(r, 0, sizeof *r);
    r->file = file;
    r->max = max;
    r->by_position = by_position;
}

void gpa_yread_free(gpa_yread *r)
{
    for (size_t i = 0; i < r->n_errs; i++)
        free(r->errs[i].text);
    free(r->errs);
    r->errs = NULL;
    r->n_errs = r->cap_errs = 0;
}

static int cmp_pos(const gpa_yerror *x, const gpa_yerror *y)
{
    if (x->file_idx != y->file_idx) return x->file_idx < y->file_idx ? -1 : 1;
    if (x->line != y->line) return x->line < y->line ? -1 : 1;
    if (x->col != y->col) return x->col < y->col ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_pos_q(const void *a, const void *b)
{
    return cmp_pos(a, b);
}

static int cmp_seq_q(const void *a, const void *b)
{
    const gpa_yerror *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const gpa_yerror *gpa_yread_sorted(gpa_yread *r, size_t *n)
{
    if (r->n_errs)
        qsort(r->errs, r->n_errs, sizeof *r->errs, r->by_position ? cmp_pos_q : cmp_seq_q);
    *n = r->n_errs;
    return r->errs;
}

/* The slot a new error goes to, or -1 when it is not kept. Full and by position: the new one
 * replaces the highest kept one if it sorts before it (seq grows, so equal positions keep the
 * earlier report) - the kept set is always the max lowest seen. */
static long slot_for(gpa_yread *r, const gpa_yerror *e)
{
    if (r->n_errs < r->max) {
        if (r->n_errs == r->cap_errs) {
            size_t nc = r->cap_errs ? r->cap_errs * 2 : 16;
            if (nc > r->max) nc = r->max;
            gpa_yerror *ne = realloc(r->errs, nc * sizeof *ne);
            if (!ne) {
                r->oom = true;
                return -1;
            }
            r->errs = ne;
            r->cap_errs = nc;
        }
        return (long)r->n_errs++;
    }
    if (!r->by_position || r->n_errs == 0) return -1;
    size_t hi = 0;
    for (size_t i = 1; i < r->n_errs; i++)
        if (cmp_pos(&r->errs[i], &r->errs[hi]) > 0) hi = i;
    if (cmp_pos(e, &r->errs[hi]) >= 0) return -1;
    free(r->errs[hi].text);
    r->errs[hi].text = NULL;
    return (long)hi;
}

void gpa_yread_verror_at(gpa_yread *r, int line, int col, const char *fmt, va_list ap)
{
    if (r->oom) return;
    r->n_total++;
    gpa_yerror e = {r->file_idx, line, col, r->seq++, NULL};
    long at = slot_for(r, &e);
    if (at < 0) return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *file = r->file ? r->file : "";
    size_t need = strlen(file) + strlen(msg) + 32;
    e.text = malloc(need);
    if (!e.text) {
        r->oom = true;
        /* the slot stays valid for gpa_yread_free: an empty message */
        r->errs[at] = e;
        return;
    }
    if (line > 0)
        snprintf(e.text, need, "%s:%d:%d: %s", file, line, col, msg);
    else
        snprintf(e.text, need, "%s: %s", file, msg);
    r->errs[at] = e;
}

void gpa_yread_error_at(gpa_yread *r, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpa_yread_verror_at(r, line, col, fmt, ap);
    va_end(ap);
}

void gpa_yread_error(gpa_yread *r, const gpa_ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gpa_yread_verror_at(r, n ? n->line : 1, n ? n->col : 1, fmt, ap);
    va_end(ap);
}

static void *ralloc(gpa_yread *r, size_t size)
{
    void *p = r->alloc ? r->alloc(r->alloc_ctx, size ? size : 1) : malloc(size ? size : 1);
    if (!p) r->oom = true;
    return p;
}

/* ---- the rule ---- */

static bool is_str_tag(const gpa_ynode *n)
{
    return n->tag && (strcmp(n->tag, TAG_STR) == 0 || strcmp(n->tag, "!") == 0);
}

bool gpa_yread_is_null(const gpa_ynode *n)
{
    return !n || (n->kind == GPA_YN_SCALAR && !n->quoted && !n->tag &&
                  gpa_yaml_resolve_plain(n->value, n->len) == GPA_YS_NULL);
}

gpa_ytype gpa_yread_type(const gpa_ynode *n)
{
    if (!n) return GPA_YT_NULL;
    if (n->kind == GPA_YN_MAP) return GPA_YT_MAP;
    if (n->kind == GPA_YN_SEQ) return GPA_YT_SEQ;
    if (n->quoted || is_str_tag(n)) return GPA_YT_STRING;
    switch (gpa_yaml_resolve_plain(n->value, n->len)) {
    case GPA_YS_NULL:
        return GPA_YT_NULL;
    case GPA_YS_BOOL:
        return GPA_YT_BOOL;
    case GPA_YS_INT:
        return GPA_YT_INT;
    case GPA_YS_FLOAT:
        return GPA_YT_FLOAT;
    default:
        return GPA_YT_STRING;
    }
}

const char *gpa_yread_type_name(const gpa_ynode *n)
{
    static const char *const names[] = {"null",     "a boolean", "an integer", "a number",
                                        "a string", "a mapping", "a list"};
    return n ? names[gpa_yread_type(n)] : "nothing";
}

bool gpa_yread_tag_ok(gpa_yread *r, const gpa_ynode *n)
{
    if (!n || !n->tag || is_str_tag(n)) return true;
    if (n->kind == GPA_YN_MAP && strcmp(n->tag, TAG_MAP) == 0) return true;
    if (n->kind == GPA_YN_SEQ && strcmp(n->tag, TAG_SEQ) == 0) return true;
    gpa_yread_error(r, n, "YAML tag %s is not supported here", n->tag);
    return false;
}

/* ---- getters ---- */

bool gpa_yread_want_map(gpa_yread *r, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(r, n)) return false;
    if (n && n->kind == GPA_YN_MAP) return true;
    gpa_yread_error(r, n, "%s: expected a mapping, got %s", what, gpa_yread_type_name(n));
    return false;
}

bool gpa_yread_want_seq(gpa_yread *r, const gpa_ynode *n, const char *what)
{
    if (!gpa_yread_tag_ok(r, n)) return false;
    if (n && n->kind == GPA_YN_SEQ) return true;
    gpa_yread_error(r, n, "%s: expected a list, got %s", what, gpa_yread_type_name(n));
    return false;
}

const char *gpa_yread_text(const gpa_ynode *n)
{
    return n && n->kind == GPA_YN_SCALAR && !gpa_yread_is_null(n) ? n->value : NULL;
}

bool gpa_yread_str(gpa_yread *r, const gpa_ynode *n, const char *what, char **out)
{
    if (!gpa_yread_tag_ok(r, n)) return false;
    if (gpa_yread_type(n) != GPA_YT_STRING) {
        gpa_yread_error(r, n, "%s: expected a string, got %s%s", what, gpa_yread_type_name(n),
                        n && n->kind == GPA_YN_SCALAR && !gpa_yread_is_null(n)
                            ? " (quote it to make it a string)"
                            : "");
        return false;
    }
    if (memchr(n->value, '\0', n->len)) {
        gpa_yread_error(r, n, "%s: contains a NUL character", what);
        return false;
    }
    char *s = ralloc(r, n->len + 1);
    if (!s) return false;
    memcpy(s, n->value, n->len);
    s[n->len] = '\0';
    *out = s;
    return true;
}

bool gpa_yread_int(gpa_yread *r, const gpa_ynode *n, const char *what, int64_t min, int64_t max,
                   int64_t *out)
{
    if (!gpa_yread_tag_ok(r, n)) return false;
    if (gpa_yread_type(n) != GPA_YT_INT) {
        gpa_yread_error(r, n, "%s: expected an integer, got %s", what, gpa_yread_type_name(n));
        return false;
    }
    errno = 0;
    long long v = strtoll(n->value, NULL, 10);
    if (errno == ERANGE || v < min || v > max) {
        if (min == 0 && v < 0)
            gpa_yread_error(r, n, "%s: must not be negative (got %s)", what, n->value);
        else if (v < min)
            gpa_yread_error(r, n, "%s: must be at least %lld (got %s)", what, (long long)min,
                            n->value);
        else
            gpa_yread_error(r, n, "%s: must be at most %lld (got %s)", what, (long long)max,
                            n->value);
        return false;
    }
    *out = v;
    return true;
}

bool gpa_yread_bool(gpa_yread *r, const gpa_ynode *n, const char *what, bool *out)
{
    if (!gpa_yread_tag_ok(r, n)) return false;
    if (gpa_yread_type(n) != GPA_YT_BOOL) {
        gpa_yread_error(r, n, "%s: expected true or false, got %s", what, gpa_yread_type_name(n));
        return false;
    }
    *out = n->value[0] == 't' || n->value[0] == 'T';
    return true;
}

static void join_names(char *buf, size_t cap, const char *const *names)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; names[i] && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s", i ? ", " : "", names[i]);
}

int gpa_yread_enum(gpa_yread *r, const gpa_ynode *n, const char *what, const char *const *names)
{
    /* Compared in place: the tree outlives the call, so nothing needs copying. */
    if (!gpa_yread_tag_ok(r, n)) return -1;
    if (gpa_yread_type(n) != GPA_YT_STRING) {
        char *unused = NULL;
        gpa_yread_str(r, n, what, &unused); /* reports it exactly as a string field would */
        return -1;
    }
    if (memchr(n->value, '\0', n->len)) {
        gpa_yread_error(r, n, "%s: contains a NUL character", what);
        return -1;
    }
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], n->value) == 0) return i;
    char list[256];
    join_names(list, sizeof list, names);
    gpa_yread_error(r, n, "%s: invalid value \"%.80s\" (one of: %s)", what, n->value, list);
    return -1;
}

void gpa_yread_fields(gpa_yread *r, const gpa_ynode *m, const char *what, const char *const *names,
                      const gpa_ynode **vals)
{
    size_t nn = 0;
    while (names[nn])
        vals[nn++] = NULL;
    if (!m || m->kind != GPA_YN_MAP) return;
    for (size_t i = 0; i < m->n; i++) {
        const gpa_ynode *k = gpa_ymap_key(m, i);
        size_t j = 0;
        for (; j < nn; j++)
            if (strcmp(names[j], k->value) == 0) break;
        if (j == nn) {
            char list[512];
            join_names(list, sizeof list, names);
            gpa_yread_error(r, k, "%s: unknown key \"%.80s\" (allowed: %s)", what, k->value, list);
            continue;
        }
        vals[j] = gpa_ymap_val(m, i);
    }
}

bool gpa_yread_strlist(gpa_yread *r, const gpa_ynode *n, const char *what, bool allow_empty,
                       size_t max, const char *(*check)(const char *), const char *item_what,
                       char ***items_out, size_t *n_out, gpa_ypos **pos_out)
{
    *items_out = NULL;
    *n_out = 0;
    if (pos_out) *pos_out = NULL;
    if (!gpa_yread_want_seq(r, n, what)) return false;
    if (n->n == 0 && !allow_empty) {
        gpa_yread_error(r, n, "%s: must not be empty", what);
        return false;
    }
    if (n->n > max) {
        gpa_yread_error(r, n, "%s: too many entries (%zu; at most %zu)", what, n->n, max);
        return false;
    }
    char **items = ralloc(r, n->n * sizeof *items);
    gpa_ypos *pos = pos_out ? ralloc(r, n->n * sizeof *pos) : NULL;
    if (!items || (pos_out && !pos)) {
        if (!r->alloc) {
            free(items);
            free(pos);
        }
        return false;
    }
    bool ok = true;
    size_t cnt = 0;
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *it = n->kids[i];
        char *s = NULL;
        if (!gpa_yread_str(r, it, item_what, &s)) {
            ok = false;
            continue;
        }
        const char *why = check ? check(s) : NULL;
        bool dup = false;
        for (size_t j = 0; !why && j < cnt && !dup; j++)
            dup = strcmp(items[j], s) == 0;
        if (why || dup) {
            if (why)
                gpa_yread_error(r, it, "%s \"%.80s\" %s", item_what, s, why);
            else
                gpa_yread_error(r, it, "%s \"%.80s\" is listed twice", item_what, s);
            if (!r->alloc) free(s);
            ok = false;
            continue;
        }
        if (pos) pos[cnt] = (gpa_ypos){it->line, it->col};
        items[cnt++] = s;
    }
    *items_out = items;
    *n_out = cnt;
    if (pos_out) *pos_out = pos;
    return ok;
}

bool gpa_yread_strmap(gpa_yread *r, const gpa_ynode *n, const char *what, size_t max,
                      const char *(*check_key)(const char *), const char *key_what,
                      const char *(*check_value)(const char *), const char *value_what,
                      char ***keys_out, char ***values_out, size_t *n_out)
{
    *keys_out = *values_out = NULL;
    *n_out = 0;
    if (!gpa_yread_want_map(r, n, what)) return false;
    if (n->n > max) {
        gpa_yread_error(r, n, "%s: too many entries (%zu; at most %zu)", what, n->n, max);
        return false;
    }
    char **keys = ralloc(r, n->n * sizeof *keys);
    char **values = ralloc(r, n->n * sizeof *values);
    if (!keys || !values) {
        if (!r->alloc) {
            free(keys);
            free(values);
        }
        return false;
    }
    bool ok = true;
    size_t cnt = 0;
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *k = gpa_ymap_key(n, i), *v = gpa_ymap_val(n, i);
        char *ks = NULL, *vs = NULL;
        const char *why;
        if (!gpa_yread_str(r, k, what, &ks)) {
            ok = false;
            continue;
        }
        if (check_key && (why = check_key(ks)) != NULL) {
            gpa_yread_error(r, k, "%s: %s \"%.80s\" %s", what, key_what, ks, why);
            if (!r->alloc) free(ks);
            ok = false;
            continue;
        }
        char vwhat[160];
        snprintf(vwhat, sizeof vwhat, "%s[%.100s]", what, ks);
        if (!gpa_yread_str(r, v, vwhat, &vs)) {
            if (!r->alloc) free(ks);
            ok = false;
            continue;
        }
        if (check_value && (why = check_value(vs)) != NULL) {
            gpa_yread_error(r, v, "%s: %s \"%.80s\" %s", vwhat, value_what, vs, why);
            if (!r->alloc) {
                free(ks);
                free(vs);
            }
            ok = false;
            continue;
        }
        keys[cnt] = ks;
        values[cnt] = vs;
        cnt++;
    }
    *keys_out = keys;
    *values_out = values;
    *n_out = cnt;
    return ok;
}
