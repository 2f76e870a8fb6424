/*
 * policy_schema.c - typed access to YAML nodes for the policy loader: "expected a mapping,
 * got a list", unknown keys with the allowed ones listed, enums, ints with ranges, label
 * maps - every problem recorded as file:line:col and the walk continues.
 * Must never stop at the first error, and never accept a value of the wrong type silently.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/k8s_names.h"
#include "policy/policy_loader.h"

__attribute__((format(printf, 4, 0))) static void lerr_v(loader *L, int line, int col,
                                                         const char *fmt, va_list ap)
{
    if (L->oom) return;
    if (L->n_errs == L->cap_errs) {
        size_t nc = L->cap_errs ? L->cap_errs * 2 : 16;
        lerror *ne = realloc(L->errs, nc * sizeof *ne);
        if (!ne) {
            L->oom = true;
            return;
        }
        L->errs = ne;
        L->cap_errs = nc;
    }
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t need = strlen(L->file) + strlen(msg) + 32;
    char *text = malloc(need);
    if (!text) {
        L->oom = true;
        return;
    }
    if (line > 0)
        snprintf(text, need, "%s:%d:%d: %s", L->file, line, col, msg);
    else
        snprintf(text, need, "%s: %s", L->file, msg);
    L->errs[L->n_errs++] = (lerror){L->file_idx, line, col, L->seq++, text};
}

void lerr(loader *L, const gpa_ynode *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lerr_v(L, n ? n->line : 1, n ? n->col : 1, fmt, ap);
    va_end(ap);
}

void lerr_at(loader *L, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lerr_v(L, line, col, fmt, ap);
    va_end(ap);
}

void lerr_pos(loader *L, gpa_srcpos pos, const char *fmt, ...)
{
    const char *file = L->file;
    size_t idx = L->file_idx;
    for (size_t i = 0; i < L->n_files; i++)
        if (L->files[i] == pos.file) L->file_idx = i;
    L->file = pos.file;
    va_list ap;
    va_start(ap, fmt);
    lerr_v(L, pos.line, pos.col, fmt, ap);
    va_end(ap);
    L->file = file;
    L->file_idx = idx;
}

gpa_srcpos lpos(loader *L, const gpa_ynode *n)
{
    return (gpa_srcpos){L->file, n ? n->line : 1, n ? n->col : 1};
}

bool is_null(const gpa_ynode *n)
{
    return !n || (n->kind == GPA_YN_SCALAR && !n->quoted && !n->tag &&
                  gpa_yaml_resolve_plain(n->value, n->len) == GPA_YS_NULL);
}

static bool is_str_tag(const gpa_ynode *n)
{
    return n->tag && (strcmp(n->tag, "tag:yaml.org,2002:str") == 0 || strcmp(n->tag, "!") == 0);
}

const char *ynode_type_name(const gpa_ynode *n)
{
    if (!n) return "nothing";
    if (n->kind == GPA_YN_MAP) return "a mapping";
    if (n->kind == GPA_YN_SEQ) return "a list";
    if (n->quoted || is_str_tag(n)) return "a string";
    switch (gpa_yaml_resolve_plain(n->value, n->len)) {
    case GPA_YS_NULL:
        return "null";
    case GPA_YS_BOOL:
        return "a boolean";
    case GPA_YS_INT:
        return "an integer";
    case GPA_YS_FLOAT:
        return "a number";
    default:
        return "a string";
    }
}

static bool tag_ok(loader *L, const gpa_ynode *n)
{
    if (!n->tag || is_str_tag(n)) return true;
    if (n->kind == GPA_YN_MAP && strcmp(n->tag, "tag:yaml.org,2002:map") == 0) return true;
    if (n->kind == GPA_YN_SEQ && strcmp(n->tag, "tag:yaml.org,2002:seq") == 0) return true;
    lerr(L, n, "YAML tag %s is not supported here", n->tag);
    return false;
}

bool want_map(loader *L, const gpa_ynode *n, const char *what)
{
    if (!tag_ok(L, n)) return false;
    if (n->kind == GPA_YN_MAP) return true;
    lerr(L, n, "%s: expected a mapping, got %s", what, ynode_type_name(n));
    return false;
}

bool want_seq(loader *L, const gpa_ynode *n, const char *what)
{
    if (!tag_ok(L, n)) return false;
    if (n->kind == GPA_YN_SEQ) return true;
    lerr(L, n, "%s: expected a list, got %s", what, ynode_type_name(n));
    return false;
}

bool get_str(loader *L, const gpa_ynode *n, const char *what, char **out)
{
    if (!tag_ok(L, n)) return false;
    if (n->kind != GPA_YN_SCALAR || (!n->quoted && !is_str_tag(n) &&
                                     gpa_yaml_resolve_plain(n->value, n->len) != GPA_YS_STRING)) {
        lerr(L, n, "%s: expected a string, got %s%s", what, ynode_type_name(n),
             n->kind == GPA_YN_SCALAR && !is_null(n) ? " (quote it to make it a string)" : "");
        return false;
    }
    if (memchr(n->value, '\0', n->len)) {
        lerr(L, n, "%s: contains a NUL character", what);
        return false;
    }
    *out = gpa_arena_strndup(L->arena, n->value, n->len);
    if (!*out) L->oom = true;
    return *out != NULL;
}

bool get_int(loader *L, const gpa_ynode *n, const char *what, int64_t min, int64_t max,
             int64_t *out)
{
    if (!tag_ok(L, n)) return false;
    if (n->kind != GPA_YN_SCALAR || n->quoted || is_str_tag(n) ||
        gpa_yaml_resolve_plain(n->value, n->len) != GPA_YS_INT) {
        lerr(L, n, "%s: expected an integer, got %s", what, ynode_type_name(n));
        return false;
    }
    errno = 0;
    long long v = strtoll(n->value, NULL, 10);
    if (errno == ERANGE || v < min || v > max) {
        if (min == 0 && v < 0)
            lerr(L, n, "%s: must not be negative (got %s)", what, n->value);
        else if (v < min)
            lerr(L, n, "%s: must be at least %lld (got %s)", what, (long long)min, n->value);
        else
            lerr(L, n, "%s: must be at most %lld (got %s)", what, (long long)max, n->value);
        return false;
    }
    *out = v;
    return true;
}

bool get_bool(loader *L, const gpa_ynode *n, const char *what, bool *out)
{
    if (!tag_ok(L, n)) return false;
    if (n->kind != GPA_YN_SCALAR || n->quoted || is_str_tag(n) ||
        gpa_yaml_resolve_plain(n->value, n->len) != GPA_YS_BOOL) {
        lerr(L, n, "%s: expected true or false, got %s", what, ynode_type_name(n));
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

int get_enum(loader *L, const gpa_ynode *n, const char *what, const char *const *names)
{
    char *s = NULL;
    if (!get_str(L, n, what, &s)) return -1;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) return i;
    char list[256];
    join_names(list, sizeof list, names);
    lerr(L, n, "%s: invalid value \"%.80s\" (one of: %s)", what, s, list);
    return -1;
}

void map_fields(loader *L, const gpa_ynode *m, const char *what, const char *const *names,
                const gpa_ynode **vals)
{
    size_t nn = 0;
    while (names[nn])
        vals[nn++] = NULL;
    for (size_t i = 0; i < m->n; i++) {
        const gpa_ynode *k = gpa_ymap_key(m, i);
        size_t j = 0;
        for (; j < nn; j++)
            if (strcmp(names[j], k->value) == 0) break;
        if (j == nn) {
            char list[512];
            join_names(list, sizeof list, names);
            lerr(L, k, "%s: unknown key \"%.80s\" (allowed: %s)", what, k->value, list);
            continue;
        }
        vals[j] = gpa_ymap_val(m, i);
    }
}

bool get_strlist(loader *L, const gpa_ynode *n, const char *what, bool allow_empty,
                 const char *(*check)(const char *), const char *item_what, gpa_strlist *out,
                 gpa_srcpos **pos_out)
{
    out->n = 0;
    out->items = NULL;
    if (!want_seq(L, n, what)) return false;
    if (n->n == 0 && !allow_empty) {
        lerr(L, n, "%s: must not be empty", what);
        return false;
    }
    if (n->n > GPA_POLICY_MAX_LIST) {
        lerr(L, n, "%s: too many entries (%zu; at most %d)", what, n->n, GPA_POLICY_MAX_LIST);
        return false;
    }
    out->items = gpa_arena_array(L->arena, n->n, sizeof(char *));
    gpa_srcpos *pos = pos_out ? gpa_arena_array(L->arena, n->n, sizeof *pos) : NULL;
    if (!out->items || (pos_out && !pos)) {
        L->oom = true;
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *it = n->kids[i];
        char *s = NULL;
        if (!get_str(L, it, item_what, &s)) {
            ok = false;
            continue;
        }
        const char *why = check ? check(s) : NULL;
        if (why) {
            lerr(L, it, "%s \"%.80s\" %s", item_what, s, why);
            ok = false;
            continue;
        }
        for (size_t j = 0; j < out->n; j++) {
            if (strcmp(out->items[j], s) == 0) {
                lerr(L, it, "%s \"%.80s\" is listed twice", item_what, s);
                ok = false;
                s = NULL;
                break;
            }
        }
        if (!s) continue;
        if (pos) pos[out->n] = lpos(L, it);
        out->items[out->n++] = s;
    }
    if (pos_out) *pos_out = pos;
    return ok;
}

bool get_labelmap(loader *L, const gpa_ynode *n, const char *what, gpa_kvlist *out)
{
    out->n = 0;
    out->keys = out->values = NULL;
    if (!want_map(L, n, what)) return false;
    if (n->n > GPA_POLICY_MAX_LIST) {
        lerr(L, n, "%s: too many entries (%zu; at most %d)", what, n->n, GPA_POLICY_MAX_LIST);
        return false;
    }
    out->keys = gpa_arena_array(L->arena, n->n, sizeof(char *));
    out->values = gpa_arena_array(L->arena, n->n, sizeof(char *));
    if (!out->keys || !out->values) {
        L->oom = true;
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < n->n; i++) {
        const gpa_ynode *k = gpa_ymap_key(n, i), *v = gpa_ymap_val(n, i);
        char *ks = NULL, *vs = NULL;
        const char *why;
        if (!get_str(L, k, what, &ks)) {
            ok = false;
            continue;
        }
        if ((why = gpa_k8s_qualified_name(ks)) != NULL) {
            lerr(L, k, "%s: label key \"%.80s\" %s", what, ks, why);
            ok = false;
            continue;
        }
        char vwhat[160];
        snprintf(vwhat, sizeof vwhat, "%s[%.100s]", what, ks);
        if (!get_str(L, v, vwhat, &vs)) {
            ok = false;
            continue;
        }
        if ((why = gpa_k8s_label_value(vs)) != NULL) {
            lerr(L, v, "%s: label value \"%.80s\" %s", vwhat, vs, why);
            ok = false;
            continue;
        }
        out->keys[out->n] = ks;
        out->values[out->n] = vs;
        out->n++;
    }
    return ok;
}
