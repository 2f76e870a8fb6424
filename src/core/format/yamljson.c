/*
 * yamljson.c - YAML <-> cJSON for Kubernetes objects given to the CLI and used by tests.
 *
 * Typing follows what kubectl does (sigs.k8s.io/yaml, YAML 1.2 core schema): a PLAIN scalar
 * is null (null Null NULL ~ or empty), a bool (true True TRUE false False FALSE), a number
 * (decimal int without leading zeros, or a decimal float like 1.5 / 1e3), else a string -
 * so "yes", "08", "1Gi", "0x10" stay strings. Quoted and block scalars are always strings.
 * Anchors/aliases are refused (see yaml_tree.c). Writing quotes every string that a plain
 * scalar would turn into something else, so yaml -> json -> yaml -> json is lossless.
 * Must never: accept duplicate keys silently, or emit YAML that re-reads differently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "gpu_admission/yamljson.h"
#include "gpu_admission/yaml_tree.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

typedef enum {
    SC_NULL = GPA_YS_NULL,
    SC_BOOL = GPA_YS_BOOL,
    SC_INT = GPA_YS_INT,
    SC_FLOAT = GPA_YS_FLOAT,
    SC_STRING = GPA_YS_STRING
} scalar_type;

static scalar_type resolve_plain(const char *s, size_t n)
{
    return (scalar_type)gpa_yaml_resolve_plain(s, n);
}

static int scalar_to_json(cJSON **out, const gpa_ynode *n, gpa_error *err)
{
    scalar_type t = n->quoted ? SC_STRING : resolve_plain(n->value, n->len);
    if (n->tag) {
        const char *tg = n->tag;
        if (!strcmp(tg, TAG_PREFIX "str") || !strcmp(tg, "!"))
            t = SC_STRING;
        else if (!strcmp(tg, TAG_PREFIX "null") && t == SC_NULL)
            ;
        else if (!strcmp(tg, TAG_PREFIX "bool") && t == SC_BOOL)
            ;
        else if (!strcmp(tg, TAG_PREFIX "int") && !n->quoted && t == SC_INT)
            ;
        else if (!strcmp(tg, TAG_PREFIX "float") && !n->quoted && (t == SC_FLOAT || t == SC_INT))
            t = SC_FLOAT;
        else
            return gpa_fail(err, GPA_EPARSE, "%d:%d: unsupported tag %s on \"%.40s\"", n->line,
                            n->col, tg, n->value);
    }
    if (memchr(n->value, '\0', n->len))
        return gpa_fail(err, GPA_EPARSE, "%d:%d: string contains a NUL character", n->line, n->col);
    switch (t) {
    case SC_NULL:
        *out = cJSON_CreateNull();
        break;
    case SC_BOOL:
        *out = cJSON_CreateBool(n->value[0] == 't' || n->value[0] == 'T');
        break;
    case SC_INT:
    case SC_FLOAT: {
        double d = strtod(n->value, NULL);
        if (!isfinite(d))
            return gpa_fail(err, GPA_ERANGE, "%d:%d: number %.40s is out of range", n->line, n->col,
                            n->value);
        *out = cJSON_CreateNumber(d);
        break;
    }
    default:
        *out = cJSON_CreateString(n->value);
    }
    return *out ? GPA_OK : gpa_fail(err, GPA_ENOMEM, "out of memory");
}

static int node_to_json(cJSON **out, const gpa_ynode *n, gpa_error *err)
{
    *out = NULL;
    if (n->kind == GPA_YN_SCALAR) return scalar_to_json(out, n, err);
    if (n->tag && strcmp(n->tag, n->kind == GPA_YN_MAP ? TAG_PREFIX "map" : TAG_PREFIX "seq"))
        return gpa_fail(err, GPA_EPARSE, "%d:%d: unsupported tag %s", n->line, n->col, n->tag);
    cJSON *c = n->kind == GPA_YN_MAP ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!c) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    for (size_t i = 0; i < n->n; i++) {
        cJSON *v = NULL;
        const gpa_ynode *vn = n->kind == GPA_YN_MAP ? gpa_ymap_val(n, i) : n->kids[i];
        int rc = node_to_json(&v, vn, err);
        if (rc) {
            cJSON_Delete(c);
            return rc;
        }
        if (n->kind == GPA_YN_MAP) {
            const gpa_ynode *k = gpa_ymap_key(n, i);
            if (memchr(k->value, '\0', k->len)) {
                cJSON_Delete(v);
                cJSON_Delete(c);
                return gpa_fail(err, GPA_EPARSE, "%d:%d: key contains a NUL character", k->line,
                                k->col);
            }
            /* keys are strings in JSON whatever they look like ("1", "true", "null"); cJSON
             * copies the key, so adding can run out of memory */
            if (!cJSON_AddItemToObject(c, k->value, v)) {
                cJSON_Delete(v);
                cJSON_Delete(c);
                return gpa_fail(err, GPA_ENOMEM, "out of memory");
            }
        } else {
            cJSON_AddItemToArray(c, v);
        }
    }
    *out = c;
    return GPA_OK;
}

int gpa_ynode_to_json(cJSON **out, const gpa_ynode *n, gpa_error *err)
{
    return node_to_json(out, n, err);
}

int gpa_yaml_to_json(cJSON **out_docs, const char *buf, size_t len, gpa_error *err)
{
    if (!out_docs || (!buf && len)) return gpa_fail(err, GPA_EINVAL, "no input");
    *out_docs = NULL;
    gpa_ystream *s = NULL;
    int line = 0, col = 0;
    gpa_error perr = {0};
    int rc = gpa_ystream_parse(&s, buf ? buf : "", len, &line, &col, &perr);
    if (rc) return gpa_fail(err, rc, "%d:%d: %s", line, col, perr.message);
    if (s->n_dups) {
        gpa_ydup *d = &s->dups[0];
        rc = gpa_fail(err, GPA_EPARSE, "%d:%d: duplicate key \"%.60s\" (first at %d:%d)", d->line,
                      d->col, d->key, d->first_line, d->first_col);
        gpa_ystream_free(s);
        return rc;
    }
    cJSON *docs = cJSON_CreateArray();
    if (!docs) {
        gpa_ystream_free(s);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < s->n_docs; i++) {
        if (!s->docs[i]) continue;
        cJSON *d = NULL;
        rc = node_to_json(&d, s->docs[i], err);
        if (rc) {
            cJSON_Delete(docs);
            gpa_ystream_free(s);
            return rc;
        }
        cJSON_AddItemToArray(docs, d);
    }
    gpa_ystream_free(s);
    *out_docs = docs;
    return GPA_OK;
}

bool gpa_looks_like_json(const char *buf, size_t len)
{
    size_t i = 0;
    if (len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF)
        i = 3; /* UTF-8 BOM */
    for (; i < len; i++) {
        char c = buf[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
        return c == '{' || c == '[';
    }
    return false;
}

/* ---- writer ---- */

/* Can s be written as a plain scalar and read back as the same string? Conservative: only
 * characters that are never YAML syntax in this position, and nothing that resolves to
 * another type. */
static bool plain_safe(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || resolve_plain(s, n) != SC_STRING) return false;
    if (!strcmp(s, "-") || s[0] == '-' || s[0] == '.' || s[0] == '+')
        return false; /* "- x", "...", "+.inf"-like: keep it simple and quote */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_' || c == '/' || (c == '+' && i > 0);
        if (!ok) return false;
    }
    /* YAML 1.1 readers (older tools) would take these as bools/null: quote for everyone */
    static const char *const v11[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N",   "no",
                                      "No", "NO", "on",  "On",  "ON",  "off", "Off", "OFF"};
    for (size_t i = 0; i < sizeof v11 / sizeof v11[0]; i++)
        if (!strcmp(s, v11[i])) return false;
    return true;
}

static void write_string(gpa_sb *b, const char *s)
{
    if (plain_safe(s)) {
        gpa_sb_puts(b, s);
        return;
    }
    gpa_sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"':
            gpa_sb_puts(b, "\\\"");
            break;
        case '\\':
            gpa_sb_puts(b, "\\\\");
            break;
        case '\n':
            gpa_sb_puts(b, "\\n");
            break;
        case '\t':
            gpa_sb_puts(b, "\\t");
            break;
        case '\r':
            gpa_sb_puts(b, "\\r");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                snprintf(esc, sizeof esc, "\\x%02x", *p);
                gpa_sb_puts(b, esc);
            } else if (*p >= 0xC2 && *p <= 0xEF && (p[1] & 0xC0) == 0x80) {
                /* characters YAML reads as line breaks or refuses as non-printable must be
                 * escaped, or a double-quoted scalar would not read back the same */
                unsigned cp;
                size_t n;
                if (*p < 0xE0) {
                    cp = ((unsigned)(*p & 0x1F) << 6) | (p[1] & 0x3F);
                    n = 2;
                } else if ((p[2] & 0xC0) == 0x80) {
                    cp = ((unsigned)(*p & 0x0F) << 12) | ((unsigned)(p[1] & 0x3F) << 6) |
                         (p[2] & 0x3F);
                    n = 3;
                } else {
                    gpa_sb_put(b, (const char *)p, 1);
                    break;
                }
                if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
                    cp == 0xFFFE || cp == 0xFFFF) {
                    snprintf(esc, sizeof esc, "\\u%04X", cp);
                    gpa_sb_puts(b, esc);
                } else {
                    gpa_sb_put(b, (const char *)p, n);
                }
                p += n - 1;
            } else {
                gpa_sb_put(b, (const char *)p, 1);
            }
        }
    }
    gpa_sb_put(b, "\"", 1);
}

static void write_scalar(gpa_sb *b, const cJSON *v)
{
    char num[64];
    if (cJSON_IsNull(v)) {
        gpa_sb_puts(b, "null");
    } else if (cJSON_IsTrue(v)) {
        gpa_sb_puts(b, "true");
    } else if (cJSON_IsFalse(v)) {
        gpa_sb_puts(b, "false");
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!isfinite(d))
            snprintf(num, sizeof num, "null");
        else if (d == floor(d) && fabs(d) < 1e15)
            snprintf(num, sizeof num, "%.0f", d);
        else
            snprintf(num, sizeof num, "%.17g", d);
        gpa_sb_puts(b, num);
    } else if (cJSON_IsString(v)) {
        write_string(b, v->valuestring ? v->valuestring : "");
    } else {
        gpa_sb_puts(b, "null");
    }
}

static bool is_empty_container(const cJSON *v)
{
    return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child == NULL;
}

static void write_value(gpa_sb *b, const cJSON *v, int indent);

/* Writes the value after "key:" or "- " (the caller wrote those). */
static void write_after_key(gpa_sb *b, const cJSON *v, int indent)
{
    if (cJSON_IsObject(v) && v->child) {
        gpa_sb_put(b, "\n", 1);
        write_value(b, v, indent + 2);
    } else if (cJSON_IsArray(v) && v->child) {
        gpa_sb_put(b, "\n", 1);
        write_value(b, v, indent); /* "key:\n- a" is the usual Kubernetes style */
    } else if (is_empty_container(v)) {
        gpa_sb_puts(b, cJSON_IsObject(v) ? " {}\n" : " []\n");
    } else {
        gpa_sb_put(b, " ", 1);
        write_scalar(b, v);
        gpa_sb_put(b, "\n", 1);
    }
}

static void write_value(gpa_sb *b, const cJSON *v, int indent)
{
    if (cJSON_IsObject(v) && v->child) {
        for (const cJSON *c = v->child; c; c = c->next) {
            const char *key = c->string ? c->string : "";
            gpa_sb_fill(b, ' ', (size_t)indent);
            if (strlen(key) > 512) {
                /* YAML limits implicit keys to 1024 characters: use an explicit "? key" */
                gpa_sb_puts(b, "? ");
                write_string(b, key);
                gpa_sb_put(b, "\n", 1);
                gpa_sb_fill(b, ' ', (size_t)indent);
                gpa_sb_put(b, ":", 1);
                if (cJSON_IsArray(c) && c->child) {
                    gpa_sb_put(b, "\n", 1);
                    write_value(b, c, indent + 2);
                } else {
                    write_after_key(b, c, indent);
                }
                continue;
            }
            write_string(b, key);
            gpa_sb_put(b, ":", 1);
            write_after_key(b, c, indent);
        }
    } else if (cJSON_IsArray(v) && v->child) {
        for (const cJSON *c = v->child; c; c = c->next) {
            gpa_sb_fill(b, ' ', (size_t)indent);
            gpa_sb_put(b, "-", 1);
            if (cJSON_IsObject(c) && c->child) {
                /* first key on the dash line, the rest aligned under it */
                gpa_sb_put(b, " ", 1);
                gpa_sb sub = {0};
                write_value(&sub, c, indent + 2);
                if (sub.oom)
                    b->oom = true;
                else if (sub.p)
                    gpa_sb_puts(b, sub.p + indent + 2);
                free(sub.p);
            } else if (cJSON_IsArray(c) && c->child) {
                gpa_sb_put(b, "\n", 1);
                write_value(b, c, indent + 2);
            } else {
                write_after_key(b, c, indent);
            }
        }
    } else if (is_empty_container(v)) {
        gpa_sb_fill(b, ' ', (size_t)indent);
        gpa_sb_puts(b, cJSON_IsObject(v) ? "{}\n" : "[]\n");
    } else {
        gpa_sb_fill(b, ' ', (size_t)indent);
        write_scalar(b, v);
        gpa_sb_put(b, "\n", 1);
    }
}

char *gpa_json_to_yaml(const cJSON *v)
{
    if (!v) return NULL;
    gpa_sb b = {0};
    write_value(&b, v, 0);
    return gpa_sb_done(&b);
}
