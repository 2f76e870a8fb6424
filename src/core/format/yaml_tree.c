/*
 * yaml_tree.c - libyaml events -> gpa_ynode tree with 1-based line:col on every node.
 *
 * Uses the event API (not yaml_document) so anchors are refused at the first event carrying
 * one, before any expansion could happen (billion-laughs). Must never recurse on input depth
 * beyond GPA_YAML_MAX_DEPTH, and never keep going after libyaml reports an error.
 */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "gpu_admission/yaml_tree.h"

static bool all_digits(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

/* YAML 1.2 core schema, minus octal/hex/inf/nan (kept as strings: JSON cannot hold the
 * latter, and a leading-zero "08" is far more often an identifier than a number). */
gpa_yscalar_type gpa_yaml_resolve_plain(const char *s, size_t n)
{
    if (n == 0 || (n == 1 && s[0] == '~') ||
        (n == 4 && (!strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))))
        return GPA_YS_NULL;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") || !strcmp(s, "false") ||
        !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return GPA_YS_BOOL;
    size_t i = 0;
    if (s[i] == '-' || s[i] == '+') i++;
    size_t int_start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    size_t int_len = i - int_start;
    if (i == n) {
        if (int_len == 0) return GPA_YS_STRING;
        if (int_len > 1 && s[int_start] == '0') return GPA_YS_STRING;
        return GPA_YS_INT;
    }
    /* float: ( digits ( "." digits? )? | "." digits ) ( [eE] [-+]? digits )? */
    size_t frac_len = 0;
    if (s[i] == '.') {
        i++;
        size_t f0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        frac_len = i - f0;
    }
    if (int_len == 0 && frac_len == 0) return GPA_YS_STRING;
    if (int_len > 1 && s[int_start] == '0') return GPA_YS_STRING;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+')) i++;
        if (!all_digits(s + i, n - i)) return GPA_YS_STRING;
        i = n;
    }
    return i == n ? GPA_YS_FLOAT : GPA_YS_STRING;
}

typedef struct builder {
    yaml_parser_t parser;
    const char *buf;
    size_t len;
    gpa_ystream *s;
    int line, col;
    gpa_error *err;
} builder;

static void node_free(gpa_ynode *n)
{
    if (!n) return;
    size_t kids = n->kind == GPA_YN_MAP ? 2 * n->n : n->n;
    for (size_t i = 0; i < kids; i++)
        node_free(n->kids[i]);
    free(n->kids);
    free(n->value);
    free(n->tag);
    free(n);
}

void gpa_ystream_free(gpa_ystream *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_docs; i++)
        node_free(s->docs[i]);
    free(s->docs);
    for (size_t i = 0; i < s->n_dups; i++)
        free(s->dups[i].key);
    free(s->dups);
    free(s);
}

static int fail_at(builder *b, const yaml_mark_t *m, int code, const char *msg)
{
    b->line = (int)m->line + 1;
    b->col = (int)m->column + 1;
    return gpa_fail(b->err, code, "%s", msg);
}

static int syntax_error(builder *b)
{
    yaml_parser_t *p = &b->parser;
    if (p->error == YAML_MEMORY_ERROR)
        return fail_at(b, &p->problem_mark, GPA_ENOMEM, "out of memory");
    b->line = (int)p->problem_mark.line + 1;
    b->col = (int)p->problem_mark.column + 1;
    if (p->error == YAML_READER_ERROR) {
        /* libyaml gives only a byte offset for encoding errors: turn it into line:col */
        b->line = 1;
        b->col = 1;
        for (size_t i = 0; i < p->problem_offset && i < b->len; i++) {
            if (b->buf[i] == '\n') {
                b->line++;
                b->col = 1;
            } else if (((unsigned char)b->buf[i] & 0xC0) != 0x80) {
                b->col++;
            }
        }
        return gpa_fail(b->err, GPA_EPARSE, "invalid input at byte %zu: %s", p->problem_offset,
                        p->problem ? p->problem : "unreadable");
    }
    if (p->context)
        return gpa_fail(b->err, GPA_EPARSE, "YAML syntax error: %s %s (line %d, column %d)",
                        p->problem ? p->problem : "error", p->context,
                        (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
    return gpa_fail(b->err, GPA_EPARSE, "YAML syntax error: %s",
                    p->problem ? p->problem : "unknown error");
}

static int next_event(builder *b, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&b->parser, ev)) return syntax_error(b);
    return GPA_OK;
}

static gpa_ynode *new_node(gpa_ynode_kind kind, const yaml_mark_t *m, const unsigned char *tag)
{
    gpa_ynode *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->line = (int)m->line + 1;
    n->col = (int)m->column + 1;
    if (tag) {
        n->tag = strdup((const char *)tag);
        if (!n->tag) {
            free(n);
            return NULL;
        }
    }
    return n;
}

static int push_kid(gpa_ynode *parent, size_t *cap, size_t count, gpa_ynode *kid)
{
    if (count == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        gpa_ynode **nk = realloc(parent->kids, nc * sizeof *nk);
        if (!nk) return GPA_ENOMEM;
        parent->kids = nk;
        *cap = nc;
    }
    parent->kids[count] = kid;
    return GPA_OK;
}

typedef struct keyref {
    const gpa_ynode *k;
    size_t idx;
} keyref;

static int cmp_keyref(const void *a, const void *b)
{
    const keyref *x = a, *y = b;
    size_t n = x->k->len < y->k->len ? x->k->len : y->k->len;
    int c = memcmp(x->k->value, y->k->value, n);
    if (c) return c;
    if (x->k->len != y->k->len) return x->k->len < y->k->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Drops every later repetition of a key (keeps the first as written) and records it. Sorting
 * keeps this O(n log n) even for a mapping with a huge number of keys. */
static int dedupe_map(builder *b, gpa_ynode *m)
{
    if (m->n < 2) return GPA_OK;
    keyref *refs = malloc(m->n * sizeof *refs);
    bool *drop = calloc(m->n, sizeof *drop);
    if (!refs || !drop) {
        free(refs);
        free(drop);
        return GPA_ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++)
        refs[i] = (keyref){gpa_ymap_key(m, i), i};
    qsort(refs, m->n, sizeof *refs, cmp_keyref);
    int rc = GPA_OK;
    size_t first = 0;
    for (size_t i = 1; i < m->n && rc == GPA_OK; i++) {
        const gpa_ynode *a = refs[first].k, *k = refs[i].k;
        if (a->len == k->len && memcmp(a->value, k->value, k->len) == 0) {
            gpa_ystream *s = b->s;
            gpa_ydup *nd = realloc(s->dups, (s->n_dups + 1) * sizeof *nd);
            if (!nd) {
                rc = GPA_ENOMEM;
                break;
            }
            s->dups = nd;
            gpa_ydup *d = &s->dups[s->n_dups];
            d->line = k->line;
            d->col = k->col;
            d->first_line = a->line;
            d->first_col = a->col;
            d->key = strdup(k->value);
            if (!d->key) {
                rc = GPA_ENOMEM;
                break;
            }
            s->n_dups++;
            drop[refs[i].idx] = true;
        } else {
            first = i;
        }
    }
    if (rc == GPA_OK) {
        size_t w = 0;
        for (size_t i = 0; i < m->n; i++) {
            if (drop[i]) {
                node_free(m->kids[2 * i]);
                node_free(m->kids[2 * i + 1]);
                continue;
            }
            m->kids[2 * w] = m->kids[2 * i];
            m->kids[2 * w + 1] = m->kids[2 * i + 1];
            w++;
        }
        m->n = w;
    }
    free(refs);
    free(drop);
    return rc;
}

/* Builds the node whose first event is ev (consumed here). */
static int build_node(builder *b, yaml_event_t *ev, int depth, gpa_ynode **out)
{
    const unsigned char *anchor = NULL, *tag = NULL;
    if (ev->type == YAML_ALIAS_EVENT)
        return fail_at(b, &ev->start_mark, GPA_EPARSE,
                       "YAML aliases (*name) are not allowed: write the value out in full");
    if (ev->type == YAML_SCALAR_EVENT) {
        anchor = ev->data.scalar.anchor;
        tag = ev->data.scalar.tag;
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        anchor = ev->data.sequence_start.anchor;
        tag = ev->data.sequence_start.tag;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        anchor = ev->data.mapping_start.anchor;
        tag = ev->data.mapping_start.tag;
    } else {
        return fail_at(b, &ev->start_mark, GPA_EPARSE, "unexpected YAML event");
    }
    if (anchor)
        return fail_at(b, &ev->start_mark, GPA_EPARSE,
                       "YAML anchors (&name) are not allowed: write the value out in full");
    if (depth > GPA_YAML_MAX_DEPTH)
        return fail_at(b, &ev->start_mark, GPA_EPARSE, "YAML nesting is too deep");

    if (ev->type == YAML_SCALAR_EVENT) {
        gpa_ynode *n = new_node(GPA_YN_SCALAR, &ev->start_mark, tag);
        if (!n) return GPA_ENOMEM;
        n->len = ev->data.scalar.length;
        n->value = malloc(n->len + 1);
        if (!n->value) {
            node_free(n);
            return GPA_ENOMEM;
        }
        memcpy(n->value, ev->data.scalar.value, n->len);
        n->value[n->len] = '\0';
        n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        *out = n;
        return GPA_OK;
    }

    bool is_map = ev->type == YAML_MAPPING_START_EVENT;
    gpa_ynode *n = new_node(is_map ? GPA_YN_MAP : GPA_YN_SEQ, &ev->start_mark, tag);
    if (!n) return GPA_ENOMEM;
    yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    size_t cap = 0, count = 0;
    int rc;
    for (;;) {
        yaml_event_t kev;
        rc = next_event(b, &kev);
        if (rc) break;
        if (kev.type == end) {
            yaml_event_delete(&kev);
            break;
        }
        gpa_ynode *kid = NULL;
        rc = build_node(b, &kev, depth + 1, &kid);
        yaml_event_delete(&kev);
        if (rc) break;
        if (is_map && count % 2 == 0 && kid->kind != GPA_YN_SCALAR) {
            rc = gpa_fail(b->err, GPA_EPARSE, "mapping keys must be plain strings");
            b->line = kid->line;
            b->col = kid->col;
            node_free(kid);
            break;
        }
        rc = push_kid(n, &cap, count, kid);
        if (rc) {
            node_free(kid);
            break;
        }
        count++;
    }
    if (rc) {
        /* a map may hold a key whose value failed: free by count, not by pairs */
        for (size_t i = 0; i < count; i++)
            node_free(n->kids[i]);
        n->n = 0;
        count = 0;
    }
    n->n = is_map ? count / 2 : count;
    if (rc == GPA_OK && is_map) rc = dedupe_map(b, n);
    if (rc) {
        if (rc == GPA_ENOMEM) gpa_fail(b->err, GPA_ENOMEM, "out of memory");
        node_free(n);
        return rc;
    }
    *out = n;
    return GPA_OK;
}

int gpa_ystream_parse(gpa_ystream **out, const char *buf, size_t len, int *line, int *col,
                      gpa_error *err)
{
    builder b = {.err = err, .line = 1, .col = 1, .buf = buf, .len = len};
    *out = NULL;
    b.s = calloc(1, sizeof *b.s);
    if (!b.s) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (!yaml_parser_initialize(&b.parser)) {
        free(b.s);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)buf, len);
    int rc = GPA_OK;
    size_t cap = 0;
    bool done = false;
    while (!done && rc == GPA_OK) {
        yaml_event_t ev;
        rc = next_event(&b, &ev);
        if (rc) break;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT: {
            yaml_event_t root;
            gpa_ynode *n = NULL;
            rc = next_event(&b, &root);
            if (rc) break;
            if (root.type != YAML_DOCUMENT_END_EVENT) {
                rc = build_node(&b, &root, 1, &n);
                yaml_event_delete(&root);
                if (rc) break;
                yaml_event_t dend;
                rc = next_event(&b, &dend);
                if (rc) {
                    node_free(n);
                    break;
                }
                yaml_event_delete(&dend);
            } else {
                yaml_event_delete(&root);
            }
            /* a document that is only "~" or empty is "no document" */
            if (n && n->kind == GPA_YN_SCALAR && !n->quoted && !n->tag &&
                (n->len == 0 || strcmp(n->value, "~") == 0 || strcmp(n->value, "null") == 0)) {
                node_free(n);
                n = NULL;
            }
            if (b.s->n_docs == cap) {
                size_t nc = cap ? cap * 2 : 4;
                gpa_ynode **nd = realloc(b.s->docs, nc * sizeof *nd);
                if (!nd) {
                    node_free(n);
                    rc = gpa_fail(err, GPA_ENOMEM, "out of memory");
                    break;
                }
                b.s->docs = nd;
                cap = nc;
            }
            b.s->docs[b.s->n_docs++] = n;
            break;
        }
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&b.parser);
    if (rc) {
        if (line) *line = b.line;
        if (col) *col = b.col;
        gpa_ystream_free(b.s);
        return rc;
    }
    *out = b.s;
    return GPA_OK;
}
