/*
 * objects.c - one input's bytes -> a flat list of Kubernetes objects with their origins
 * (see objects.h). JSON goes through the codec's strict reader so the tools refuse exactly what
 * the server refuses; YAML through the line:col tree so every object knows its line.
 *
 * Must never: do I/O, expand a List more than one level (a List inside a List is an object the
 * caller reports), or lose an object silently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/objects.h"
#include "gpu_admission/yamljson.h"
#include "format/json_read.h"
#include "gpu_admission/yaml_tree.h"

typedef struct entry {
    cJSON *obj;
    bool owned; /* false: a node of the JSON reader's arena tree (jdoc), never freed alone */
    char *origin;
    int line;
    size_t doc;
} entry;

struct gpa_objects {
    entry *v;
    size_t n, cap;
    char *source;
    gpa_jdoc *jdoc; /* JSON input: the objects are read-only nodes of this tree (no copy of a
                       60 MB `kubectl get -o json` dump) */
};

static int push(gpa_objects *o, cJSON *obj, bool owned, int line, size_t doc, gpa_error *err)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 16;
        entry *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv) {
            if (owned) cJSON_Delete(obj);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        o->v = nv;
        o->cap = nc;
    }
    char tmp[64];
    if (line > 0)
        snprintf(tmp, sizeof tmp, ":%d", line);
    else
        snprintf(tmp, sizeof tmp, "#doc%zu", doc);
    size_t sl = strlen(o->source), tl = strlen(tmp);
    char *origin = malloc(sl + tl + 1);
    if (!origin) {
        if (owned) cJSON_Delete(obj);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    memcpy(origin, o->source, sl);
    memcpy(origin + sl, tmp, tl + 1);
    o->v[o->n++] = (entry){.obj = obj, .owned = owned, .origin = origin, .line = line, .doc = doc};
    return GPA_OK;
}

/* kubectl prints `kind: List` for mixed kinds and `kind: PodList` etc. through the API; both
 * carry the objects in items. */
static bool is_list(const cJSON *v)
{
    if (!cJSON_IsObject(v)) return false;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(v, "kind");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(v, "items");
    if (!cJSON_IsString(kind) || !cJSON_IsArray(items)) return false;
    size_t n = strlen(kind->valuestring);
    return n >= 4 && strcmp(kind->valuestring + n - 4, "List") == 0;
}

static int line_at(const char *buf, size_t off, int *col)
{
    int line = 1;
    size_t bol = 0;
    for (size_t i = 0; i < off; i++)
        if (buf[i] == '\n') {
            line++;
            bol = i + 1;
        }
    if (col) *col = (int)(off - bol) + 1;
    return line;
}

/* Byte offsets of the elements of the root array, or of the root object's "items" array, in
 * one pass over already-validated JSON (so the scanner may trust the syntax). */
static size_t *json_item_offsets(const char *buf, size_t len, size_t *n_out)
{
    size_t *offs = NULL, n = 0, cap = 0;
    int depth = 0;
    bool root_array = false, in_items = false, expect_key = false, key_is_items = false;
    int items_depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
        bool value_start = c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') ||
                           c == 't' || c == 'f' || c == 'n';
        int item_depth = root_array ? 1 : (in_items ? items_depth : -1);
        if (value_start && depth == item_depth && !(c == '"' && depth == 1 && expect_key)) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 64;
                size_t *no = realloc(offs, nc * sizeof *no);
                if (!no) {
                    free(offs);
                    return NULL;
                }
                offs = no;
                cap = nc;
            }
            offs[n++] = i;
        }
        if (c == '"') {
            /* strings are most of a kubectl dump: jump from quote to quote; a quote preceded
             * by an odd number of backslashes is escaped */
            size_t start = i + 1;
            for (i++; i < len; i++) {
                const char *q = memchr(buf + i, '"', len - i);
                if (!q) {
                    i = len;
                    break;
                }
                i = (size_t)(q - buf);
                size_t bs = 0;
                while (i - bs > start && buf[i - bs - 1] == '\\')
                    bs++;
                if (bs % 2 == 0) break;
            }
            if (depth == 1 && !root_array && expect_key)
                key_is_items = i - start == 5 && memcmp(buf + start, "items", 5) == 0;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth == 0) {
                root_array = c == '[';
                expect_key = c == '{';
            } else if (depth == 1 && !root_array && c == '[' && key_is_items && !expect_key) {
                in_items = true;
                items_depth = 2;
            }
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
            if (in_items && depth == 1) in_items = false;
        } else if (depth == 1 && !root_array) {
            if (c == ':') expect_key = false;
            if (c == ',') {
                expect_key = true;
                key_is_items = false;
            }
        }
        if (!value_start) continue;
        /* skip the rest of a bare literal or number so its digits are not seen as values */
        if (c != '{' && c != '[')
            while (i + 1 < len && buf[i + 1] != ',' && buf[i + 1] != ']' && buf[i + 1] != '}' &&
                   buf[i + 1] != ' ' && buf[i + 1] != '\n' && buf[i + 1] != '\r' &&
                   buf[i + 1] != '\t')
                i++;
    }
    *n_out = n;
    if (!offs) offs = malloc(sizeof *offs); /* "no items" is not an allocation failure */
    return offs;
}

static int read_json(gpa_objects *o, const char *buf, size_t len, gpa_error *err)
{
    gpa_jdoc *doc = NULL;
    const char *why = NULL;
    size_t off = 0;
    int rc = gpa_jdoc_parse(&doc, buf, len, &why, &off);
    if (rc == -2) return gpa_fail(err, GPA_ENOMEM, "out of memory reading JSON");
    if (rc != 0) {
        int col = 0, line = line_at(buf, off < len ? off : len, &col);
        return gpa_fail(err, GPA_EPARSE, "%s:%d:%d: invalid JSON: %s", o->source, line, col,
                        why ? why : "syntax error");
    }
    const cJSON *root = gpa_jdoc_root(doc);
    const cJSON *items = NULL;
    if (cJSON_IsArray(root))
        items = root;
    else if (is_list(root))
        items = cJSON_GetObjectItemCaseSensitive(root, "items");
    size_t n_offs = 0, *offs = NULL;
    if (items) {
        offs = json_item_offsets(buf, len, &n_offs);
        if (!offs) {
            gpa_jdoc_free(doc);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
    }
    /* Lines for offsets in one forward walk: offsets come in increasing order. */
    int line = 1;
    size_t pos = 0, k = 0;
    rc = GPA_OK;
    if (!items) {
        size_t i = 0;
        while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
            i++;
        rc = push(o, (cJSON *)root, false, line_at(buf, i, NULL), 1, err);
    }
    for (const cJSON *it = items ? items->child : NULL; it && rc == GPA_OK; it = it->next, k++) {
        int l = 0;
        if (k < n_offs) {
            const char *nl;
            while (pos < offs[k] && (nl = memchr(buf + pos, '\n', offs[k] - pos))) {
                line++;
                pos = (size_t)(nl - buf) + 1;
            }
            pos = offs[k];
            l = line;
        }
        rc = push(o, (cJSON *)it, false, l, 1, err);
    }
    free(offs);
    o->jdoc = doc; /* freed with o, also on error */
    return rc;
}

static int read_yaml(gpa_objects *o, const char *buf, size_t len, gpa_error *err)
{
    gpa_ystream *s = NULL;
    int line = 0, col = 0;
    gpa_error perr = {0};
    int rc = gpa_ystream_parse(&s, buf, len, &line, &col, &perr);
    if (rc) return gpa_fail(err, rc, "%s:%d:%d: %s", o->source, line, col, perr.message);
    if (s->n_dups) {
        gpa_ydup *d = &s->dups[0];
        rc = gpa_fail(err, GPA_EPARSE, "%s:%d:%d: duplicate key \"%.60s\" (first at %d:%d)",
                      o->source, d->line, d->col, d->key, d->first_line, d->first_col);
        gpa_ystream_free(s);
        return rc;
    }
    for (size_t di = 0; di < s->n_docs && rc == GPA_OK; di++) {
        const gpa_ynode *dn = s->docs[di];
        if (!dn) continue;
        cJSON *d = NULL;
        gpa_error cerr = {0};
        rc = gpa_ynode_to_json(&d, dn, &cerr);
        if (rc) {
            rc = gpa_fail(err, rc, "%s:%s", o->source, cerr.message);
            break;
        }
        if (!is_list(d)) {
            rc = push(o, d, true, dn->line, di + 1, err);
            continue;
        }
        const gpa_ynode *items = NULL;
        for (size_t i = 0; i < dn->n; i++)
            if (strcmp(gpa_ymap_key(dn, i)->value, "items") == 0) items = gpa_ymap_val(dn, i);
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(d, "items");
        size_t k = 0;
        while (arr->child && rc == GPA_OK) {
            cJSON *it = cJSON_DetachItemViaPointer(arr, arr->child);
            int l = items && k < items->n ? items->kids[k]->line : 0;
            rc = push(o, it, true, l, di + 1, err);
            k++;
        }
        cJSON_Delete(d);
    }
    gpa_ystream_free(s);
    return rc;
}

static int not_utf8(const gpa_objects *o, const char *buf, size_t at, gpa_error *err)
{
    int line = 1, col = 1;
    for (size_t i = 0; i < at; i++) {
        if (buf[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return gpa_fail(err, GPA_EPARSE,
                    "%s:%d:%d: a NUL byte: the input is not UTF-8 text (UTF-16 or UTF-32?); "
                    "Kubernetes objects are read as UTF-8 only",
                    o->source, line, col);
}

int gpa_objects_read(gpa_objects **out, const char *buf, size_t len, const char *source_name,
                     gpa_error *err)
{
    if (!out || (!buf && len)) return gpa_fail(err, GPA_EINVAL, "no input");
    *out = NULL;
    gpa_objects *o = calloc(1, sizeof *o);
    if (!o) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    o->source = strdup(source_name ? source_name : "input");
    if (!o->source) {
        free(o);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    /* libyaml would decode UTF-16/32 (a NUL in every other byte), but the API server sends
     * and stores UTF-8 only: refuse here so review, test, diff and simulate refuse what the
     * webhook refuses instead of answering an input the server never would. */
    const char *nul = buf ? memchr(buf, '\0', len) : NULL;
    int rc = nul ? not_utf8(o, buf, (size_t)(nul - buf), err)
             : gpa_looks_like_json(buf ? buf : "", len) ? read_json(o, buf, len, err)
                                                        : read_yaml(o, buf ? buf : "", len, err);
    if (rc != GPA_OK) {
        gpa_objects_free(o);
        return rc;
    }
    *out = o;
    return GPA_OK;
}

size_t gpa_objects_count(const gpa_objects *o)
{
    return o ? o->n : 0;
}

const cJSON *gpa_objects_get(const gpa_objects *o, size_t i)
{
    return o && i < o->n ? o->v[i].obj : NULL;
}

const char *gpa_objects_origin(const gpa_objects *o, size_t i)
{
    return o && i < o->n ? o->v[i].origin : NULL;
}

int gpa_objects_line(const gpa_objects *o, size_t i)
{
    return o && i < o->n ? o->v[i].line : 0;
}

size_t gpa_objects_doc(const gpa_objects *o, size_t i)
{
    return o && i < o->n ? o->v[i].doc : 0;
}

cJSON *gpa_objects_take(gpa_objects *o, size_t i)
{
    if (!o || i >= o->n || !o->v[i].obj) return NULL;
    /* An arena node cannot leave its tree: the caller gets a copy. */
    cJSON *c = o->v[i].owned ? o->v[i].obj : cJSON_Duplicate(o->v[i].obj, 1);
    if (!c) return NULL;
    if (o->v[i].owned) o->v[i].obj = NULL;
    return c;
}

void gpa_objects_free(gpa_objects *o)
{
    if (!o) return;
    for (size_t i = 0; i < o->n; i++) {
        if (o->v[i].owned) cJSON_Delete(o->v[i].obj);
        free(o->v[i].origin);
    }
    free(o->v);
    free(o->source);
    gpa_jdoc_free(o->jdoc);
    free(o);
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, a) : NULL;
    if (b) v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, b) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void gpa_objects_describe(char *buf, size_t cap, const cJSON *obj)
{
    if (!buf || !cap) return;
    const char *kind = str_at(obj, "kind", NULL);
    const char *ns = str_at(obj, "metadata", "namespace");
    const char *name = str_at(obj, "metadata", "name");
    if (!name) name = str_at(obj, "metadata", "generateName");
    if (!kind)
        snprintf(buf, cap, "%s", cJSON_IsObject(obj) ? "object without kind" : "non-object");
    else if (!name)
        snprintf(buf, cap, "%s (no name)", kind);
    else if (ns && *ns)
        snprintf(buf, cap, "%s %s/%s", kind, ns, name);
    else
        snprintf(buf, cap, "%s %s", kind, name);
}
