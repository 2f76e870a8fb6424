/*
 * jsonpatch.c - RFC 6901 JSON Pointer escaping, RFC 6902 JSON Patch built as the diff of two
 * documents, and an atomic patch applier (tests and the CLI's self-check use it).
 *
 * The diff must never emit "replace" or "remove" for a path that does not exist in `from`,
 * and never append with "-": every add names an explicit index, so the API server (and
 * kubectl) apply our patches exactly as we computed them. The applier must never leave the
 * document half-patched: it works on a copy and swaps it in only when every op succeeded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/patch.h"
#include "util/node_arena.h"

/* Keys a tree borrows (cJSON_StringIsConst) get their own storage: a patch must not point
 * into the document it was computed from. */
static bool own_keys(cJSON *v)
{
    for (; v; v = v->next) {
        if ((v->type & cJSON_StringIsConst) && v->string) {
            char *k = cJSON_malloc(strlen(v->string) + 1);
            if (!k) return false;
            strcpy(k, v->string);
            v->string = k;
            v->type &= ~cJSON_StringIsConst;
        }
        if (v->child && !own_keys(v->child)) return false;
    }
    return true;
}

/* A detached, self-contained deep copy without the key the source had (an op's "value"). */
static cJSON *dup_value(const cJSON *v)
{
    cJSON *d = cJSON_Duplicate(v, 1);
    if (!d) return NULL;
    if (d->string) {
        if (!(d->type & cJSON_StringIsConst)) cJSON_free(d->string);
        d->string = NULL;
        d->type &= ~cJSON_StringIsConst;
    }
    if (d->child && !own_keys(d->child)) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}

int gpa_pointer_escape(char *buf, size_t cap, const char *token)
{
    size_t n = 0;
    for (const char *c = token; *c; c++) {
        size_t need = (*c == '~' || *c == '/') ? 2 : 1;
        if (n + need >= cap) return -1;
        if (*c == '~') {
            buf[n++] = '~';
            buf[n++] = '0';
        } else if (*c == '/') {
            buf[n++] = '~';
            buf[n++] = '1';
        } else {
            buf[n++] = *c;
        }
    }
    if (n >= cap) return -1;
    buf[n] = '\0';
    return (int)n;
}

/* ---------------------------------------------------------------- diff */

/* A value an op will carry, moved out of `to` after the walk instead of copied. */
typedef struct move_rec {
    cJSON *op;
    cJSON *parent;
    cJSON *item;
} move_rec;

/* The diff's working state: the arena the ops are built in, the pointer being built while
 * the walk recurses (segments pushed and popped) and, in move mode, the values to take from
 * `to` once the walk is over (taking them during the walk would unlink nodes the walk is
 * iterating). */
typedef struct pathbuf {
    gpa_narena *a;
    char *s;
    size_t len, cap;
    bool move;
    move_rec *recs;
    size_t n_recs, cap_recs;
    char stack[256];
    move_rec stack_recs[16];
} pathbuf;

static int path_reserve(pathbuf *p, size_t extra)
{
    if (p->len + extra + 1 <= p->cap) return 0;
    size_t cap = p->cap * 2;
    while (cap < p->len + extra + 1)
        cap *= 2;
    char *s = p->s == p->stack ? malloc(cap) : realloc(p->s, cap);
    if (!s) return -1;
    if (p->s == p->stack) memcpy(s, p->stack, p->len + 1);
    p->s = s;
    p->cap = cap;
    return 0;
}

/* A nonzero word when some byte of w is zero. */
#define HAS_ZERO_BYTE(w) (((w)-0x0101010101010101ULL) & ~(w)&0x8080808080808080ULL)

static int path_push_key(pathbuf *p, const char *key)
{
    size_t len = strlen(key);
    if (path_reserve(p, 1 + 2 * len) != 0) return -1; /* room for every byte escaped */
    char *o = p->s + p->len;
    *o++ = '/';
    size_t i = 0;
    /* eight bytes at a time while none of them is "~" or "/" (most keys have none) */
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, key + i, 8);
        uint64_t tilde = w ^ 0x7e7e7e7e7e7e7e7eULL, slash = w ^ 0x2f2f2f2f2f2f2f2fULL;
        if (HAS_ZERO_BYTE(tilde) | HAS_ZERO_BYTE(slash)) break;
        memcpy(o, &w, 8);
        o += 8;
    }
    for (; i < len; i++) {
        char c = key[i];
        if (c == '~' || c == '/') {
            *o++ = '~';
            *o++ = c == '~' ? '0' : '1';
        } else {
            *o++ = c;
        }
    }
    *o = '\0';
    p->len = (size_t)(o - p->s);
    return 0;
}

static int path_push_index(pathbuf *p, int idx)
{
    char tmp[16]; /* "/" and the decimal digits of a non-negative int, without snprintf */
    size_t n = sizeof tmp;
    unsigned v = (unsigned)idx;
    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    tmp[--n] = '/';
    size_t w = sizeof tmp - n;
    if (path_reserve(p, w) != 0) return -1;
    memcpy(p->s + p->len, tmp + n, w);
    p->len += w;
    p->s[p->len] = '\0';
    return 0;
}

static void path_pop(pathbuf *p, size_t len)
{
    p->len = len;
    p->s[len] = '\0';
}

/* op is always one of the string literals "add" / "remove" / "replace": it and the member
 * names are static storage, the path an arena copy. vparent is the container holding value
 * in `to` (NULL for the root). */
static int emit(cJSON *ops, pathbuf *p, const char *op, const cJSON *value, const cJSON *vparent)
{
    /* the op object, its "op" and "path" members and the path's bytes: one allocation */
    cJSON *o = gpa_narena_alloc(p->a, 3 * sizeof(cJSON) + p->len + 1);
    if (!o) return -1;
    cJSON *jop = o + 1, *jpath = o + 2;
    char *path = (char *)(o + 3);
    memcpy(path, p->s, p->len + 1);
    *o = (cJSON){.type = cJSON_Object};
    *jop = (cJSON){.type = cJSON_String, .valuestring = (char *)op};
    *jpath = (cJSON){.type = cJSON_String, .valuestring = path};
    gpa_jn_append(ops, o);
    gpa_jn_add(o, "op", jop);
    gpa_jn_add(o, "path", jpath);
    if (!value) return 0;
    if (p->move && vparent) {
        if (p->n_recs == p->cap_recs) {
            size_t nc = p->cap_recs * 2;
            move_rec *r = p->recs == p->stack_recs ? malloc(nc * sizeof *r)
                                                   : realloc(p->recs, nc * sizeof *r);
            if (!r) return -1;
            if (p->recs == p->stack_recs) memcpy(r, p->stack_recs, sizeof p->stack_recs);
            p->recs = r;
            p->cap_recs = nc;
        }
        /* move mode hands us a mutable `to` (gpa_patch_diff_arena) */
        p->recs[p->n_recs++] = (move_rec){o, (cJSON *)vparent, (cJSON *)value};
        return 0;
    }
    cJSON *dup = gpa_jn_dup(p->a, value);
    if (!dup) return -1;
    gpa_jn_add(o, "value", dup);
    return 0;
}

/* A subtree that owns all its memory (no reference nodes, no borrowed keys below the top). */
static bool self_contained(const cJSON *v, bool top)
{
    if (v->type & cJSON_IsReference) return false;
    if (!top && (v->type & cJSON_StringIsConst)) return false;
    for (const cJSON *c = v->child; c; c = c->next)
        if (!self_contained(c, false)) return false;
    return true;
}

/* After the walk: give each recorded op its value, moved when it owns its memory. */
static int take_values(pathbuf *p)
{
    for (size_t i = 0; i < p->n_recs; i++) {
        move_rec *r = &p->recs[i];
        cJSON *v;
        if (self_contained(r->item, true)) {
            v = cJSON_DetachItemViaPointer(r->parent, r->item);
        } else {
            v = gpa_jn_dup(p->a, r->item);
            if (!v) return -1;
        }
        gpa_jn_add(r->op, "value", v);
    }
    return 0;
}

/* Equal without looking inside: the same node, or a copy-on-write copy's reference sharing
 * the original's children or string. Checked before a path segment is even built. */
static inline __attribute__((always_inline)) bool shared(const cJSON *a, const cJSON *b)
{
    if (a == b) return true;
    switch (a->type & 0xFF) {
    case cJSON_Object:
    case cJSON_Array:
        return (b->type & 0xFF) == (a->type & 0xFF) && a->child == b->child;
    case cJSON_String:
    case cJSON_Raw:
        return (b->type & 0xFF) == (a->type & 0xFF) && a->valuestring == b->valuestring;
    case cJSON_Number: /* a copy's number is a copy of the value: exactly equal is equal */
        return (b->type & 0xFF) == cJSON_Number && a->valuedouble == b->valuedouble;
    default: /* true, false, null: the type is the value */
        return (b->type & 0xFF) == (a->type & 0xFF);
    }
}

static bool same_kind(const cJSON *a, const cJSON *b)
{
    return (a->type & 0xFF) == (b->type & 0xFF);
}

static int diff_value(cJSON *ops, pathbuf *p, const cJSON *from, const cJSON *to, int depth,
                      const cJSON *tparent);

/* The member of obj named key; tries *cursor first. A copy keeps its original's key order
 * (new keys are appended), so walking both objects in step turns the O(n^2) lookups of a
 * naive diff into one strcmp per key. */
static inline __attribute__((always_inline)) const cJSON *
member(const cJSON *obj, const cJSON **cursor, const char *key)
{
    const cJSON *c = *cursor;
    if (c && c->string &&
        (c->string == key || (c->string[0] == key[0] && strcmp(c->string, key) == 0))) {
        *cursor = c->next;
        return c;
    }
    return gpa_jn_get(obj, key);
}

/* A bit standing for the key's first byte: keys of different bits differ. */
static inline uint64_t key_bit(const char *k)
{
    return 1ULL << ((unsigned char)k[0] & 63u);
}

static int diff_object(cJSON *ops, pathbuf *p, const cJSON *from, const cJSON *to, int depth)
{
    size_t base = p->len;
    const cJSON *f, *tcur = to->child;
    bool in_step = true; /* every member of from met its namesake at to's cursor */
    cJSON_ArrayForEach(f, from) {
        if (!f->string) continue;
        const cJSON *before = tcur;
        const cJSON *t = member(to, &tcur, f->string);
        if (!t || t != before) in_step = false;
        if (t && shared(f, t)) continue;
        if (path_push_key(p, f->string) != 0) return -1;
        int rc = t ? diff_value(ops, p, f, t, depth + 1, to) : emit(ops, p, "remove", NULL, NULL);
        path_pop(p, base);
        if (rc != 0) return rc;
    }
    /* In step, to begins with exactly from's members: only those after the cursor (what a
     * copy appended) can be new. */
    const cJSON *t, *fcur = from->child;
    uint64_t from_keys = 0; /* in step: key_bit of every key of from, once there is a t */
    if (in_step && tcur) {
        cJSON_ArrayForEach(f, from) {
            if (f->string) from_keys |= key_bit(f->string);
        }
    }
    for (t = in_step ? tcur : to->child; t; t = t->next) {
        if (!t->string) continue;
        /* in step, a key whose bit no key of from has is new without a lookup */
        bool maybe_in_from = !in_step || (from_keys & key_bit(t->string));
        if (maybe_in_from && member(from, &fcur, t->string)) continue;
        if (path_push_key(p, t->string) != 0) return -1;
        int rc = emit(ops, p, "add", t, to);
        path_pop(p, base);
        if (rc != 0) return rc;
    }
    return 0;
}

/* true when the first n elements of a and b are equal */
static bool prefix_equal(const cJSON *a, const cJSON *b, int n)
{
    const cJSON *x = a->child, *y = b->child;
    for (int i = 0; i < n; i++, x = x->next, y = y->next)
        if (!shared(x, y) && !cJSON_Compare(x, y, true)) return false;
    return true;
}

static int diff_array(cJSON *ops, pathbuf *p, const cJSON *from, const cJSON *to, int depth,
                      const cJSON *tparent)
{
    int nf = cJSON_GetArraySize(from), nt = cJSON_GetArraySize(to);
    size_t base = p->len;
    if (nf == nt) {
        const cJSON *x = from->child, *y = to->child;
        for (int i = 0; i < nf; i++, x = x->next, y = y->next) {
            if (shared(x, y)) continue;
            if (path_push_index(p, i) != 0) return -1;
            int rc = diff_value(ops, p, x, y, depth + 1, to);
            path_pop(p, base);
            if (rc != 0) return rc;
        }
        return 0;
    }
    if (nt > nf && prefix_equal(from, to, nf)) {
        /* explicit indexes, not "-": every op names exactly where its value lands */
        const cJSON *y = to->child;
        for (int i = 0; i < nt; i++, y = y->next) {
            if (i < nf) continue;
            if (path_push_index(p, i) != 0) return -1;
            int rc = emit(ops, p, "add", y, to);
            path_pop(p, base);
            if (rc != 0) return rc;
        }
        return 0;
    }
    if (nt < nf && prefix_equal(from, to, nt)) {
        /* remove from the end backwards so each index still exists when its op runs */
        for (int i = nf - 1; i >= nt; i--) {
            if (path_push_index(p, i) != 0) return -1;
            int rc = emit(ops, p, "remove", NULL, NULL);
            path_pop(p, base);
            if (rc != 0) return rc;
        }
        return 0;
    }
    return emit(ops, p, "replace", to, tparent);
}

static int diff_value(cJSON *ops, pathbuf *p, const cJSON *from, const cJSON *to, int depth,
                      const cJSON *tparent)
{
    if (depth > CJSON_NESTING_LIMIT) return -2;
    if (same_kind(from, to)) {
        /* a copy-on-write copy shares untouched children with its original: equal */
        if ((gpa_is_object(from) || gpa_is_array(from)) && from->child == to->child) return 0;
        if (gpa_is_string(from) && from->valuestring == to->valuestring) return 0;
        if (gpa_is_object(from)) return diff_object(ops, p, from, to, depth);
        if (gpa_is_array(from)) return diff_array(ops, p, from, to, depth, tparent);
        if (cJSON_Compare(from, to, true)) return 0;
    }
    return emit(ops, p, "replace", to, tparent);
}

/* The diff built in arena a (ops borrow nothing from from or to). */
static int diff(cJSON **out_ops, gpa_narena *a, const cJSON *from, const cJSON *to, bool move,
                gpa_error *err)
{
    *out_ops = NULL;
    if (!from || !to) return gpa_fail(err, GPA_EINVAL, "patch diff: missing document");
    cJSON *ops = gpa_jn_new(a, cJSON_Array);
    if (!ops) return gpa_fail(err, GPA_ENOMEM, "patch diff: out of memory");
    pathbuf p; /* not zeroed: the two stack buffers are written before they are read */
    p.a = a;
    p.move = move;
    p.len = 0;
    p.cap = sizeof p.stack;
    p.n_recs = 0;
    p.cap_recs = sizeof p.stack_recs / sizeof p.stack_recs[0];
    p.s = p.stack;
    p.recs = p.stack_recs;
    p.s[0] = '\0';
    int rc = diff_value(ops, &p, from, to, 0, NULL);
    if (rc == 0 && move && take_values(&p) != 0) rc = -1;
    if (p.s != p.stack) free(p.s);
    if (p.recs != p.stack_recs) free(p.recs);
    if (rc != 0) {
        if (rc == -2) return gpa_fail(err, GPA_ERANGE, "patch diff: document nested too deeply");
        return gpa_fail(err, GPA_ENOMEM, "patch diff: out of memory");
    }
    *out_ops = ops;
    return GPA_OK;
}

int gpa_patch_diff_arena(cJSON **out_ops, gpa_narena *a, const cJSON *from, cJSON *to,
                         gpa_error *err)
{
    return diff(out_ops, a, from, to, true, err);
}

/* The public diffs hand out an ordinary heap tree (the caller cJSON_Deletes it): built in a
 * scratch arena, copied out with cJSON_Duplicate (which copies every key and string not
 * flagged as borrowed, and this tree flags none). */
int gpa_patch_diff(cJSON **out_ops, const cJSON *from, const cJSON *to, gpa_error *err)
{
    *out_ops = NULL;
    gpa_narena *a = gpa_narena_new();
    if (!a) return gpa_fail(err, GPA_ENOMEM, "patch diff: out of memory");
    cJSON *ops = NULL;
    int rc = diff(&ops, a, from, to, false, err);
    if (rc == GPA_OK && !(*out_ops = cJSON_Duplicate(ops, 1)))
        rc = gpa_fail(err, GPA_ENOMEM, "patch diff: out of memory");
    gpa_narena_free(a);
    return rc;
}

int gpa_patch_diff_move(cJSON **out_ops, const cJSON *from, cJSON *to, gpa_error *err)
{
    /* copying is the same patch; the heap result must not share nodes with `to` */
    return gpa_patch_diff(out_ops, from, to, err);
}

/* ---------------------------------------------------------------- apply */

/* Decodes the next reference token of ptr (which points at a '/') into tok; returns the
 * position after it, or NULL on a bad escape or a token longer than cap. */
static const char *next_token(const char *ptr, char *tok, size_t cap)
{
    size_t n = 0;
    ptr++; /* the '/' */
    while (*ptr && *ptr != '/') {
        char c = *ptr++;
        if (c == '~') {
            if (*ptr == '0')
                c = '~';
            else if (*ptr == '1')
                c = '/';
            else
                return NULL;
            ptr++;
        }
        if (n + 1 >= cap) return NULL;
        tok[n++] = c;
    }
    tok[n] = '\0';
    return ptr;
}

/* RFC 6901 array index: "0" or digits without a leading zero. -1 when not an index. */
static long parse_index(const char *tok)
{
    if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9) return -1;
    long v = 0;
    for (const char *c = tok; *c; c++) {
        if (*c < '0' || *c > '9') return -1;
        v = v * 10 + (*c - '0');
    }
    return v;
}

static cJSON *child_of(cJSON *container, const char *tok)
{
    if (gpa_is_object(container)) return cJSON_GetObjectItemCaseSensitive(container, tok);
    if (gpa_is_array(container)) {
        long i = parse_index(tok);
        if (i < 0 || i >= cJSON_GetArraySize(container)) return NULL;
        return cJSON_GetArrayItem(container, (int)i);
    }
    return NULL;
}

/* Splits path into (parent container, last token). Returns -1 when the path is malformed or
 * the parent does not exist. The root ("") has no parent: *parent is set to NULL. */
static int resolve_parent(cJSON *doc, const char *path, cJSON **parent, char *last, size_t cap)
{
    *parent = NULL;
    if (path[0] == '\0') return 0;
    if (path[0] != '/') return -1;
    cJSON *cur = doc;
    const char *p = path;
    for (;;) {
        p = next_token(p, last, cap);
        if (!p) return -1;
        if (*p == '\0') {
            *parent = cur;
            return gpa_is_object(cur) || gpa_is_array(cur) ? 0 : -1;
        }
        cur = child_of(cur, last);
        if (!cur) return -1;
    }
}

static cJSON *resolve(cJSON *doc, const char *path, char *tok, size_t cap)
{
    cJSON *parent;
    if (resolve_parent(doc, path, &parent, tok, cap) != 0) return NULL;
    return parent ? child_of(parent, tok) : doc;
}

/* Exchanges the contents of two nodes, keeping each one's place (key, siblings). */
static void swap_contents(cJSON *a, cJSON *b)
{
    /* the const-key flag describes the node's key, which stays where it is */
    cJSON tmp = *a;
    a->type = (b->type & ~cJSON_StringIsConst) | (tmp.type & cJSON_StringIsConst);
    a->child = b->child;
    a->valuestring = b->valuestring;
    a->valueint = b->valueint;
    a->valuedouble = b->valuedouble;
    b->type = (tmp.type & ~cJSON_StringIsConst) | (b->type & cJSON_StringIsConst);
    b->child = tmp.child;
    b->valuestring = tmp.valuestring;
    b->valueint = tmp.valueint;
    b->valuedouble = tmp.valuedouble;
}

/* Places value (owned) at path; the root is replaced in place. -1 when the path does not
 * exist, -2 when cJSON cannot copy the member's key (out of memory); value is freed on both. */
static int put_value(cJSON *doc, const char *path, cJSON *value, bool replace_only)
{
    char tok[1024];
    cJSON *parent;
    if (resolve_parent(doc, path, &parent, tok, sizeof tok) != 0) {
        cJSON_Delete(value);
        return -1;
    }
    if (!parent) {
        swap_contents(doc, value);
        cJSON_Delete(value);
        return 0;
    }
    if (gpa_is_object(parent)) {
        cJSON *old = cJSON_GetObjectItemCaseSensitive(parent, tok);
        if (old) {
            /* Keyed by hand: cJSON 1.7.15's Replace*InObject links the value in with a NULL
             * key when its copy of the key runs out of memory, and answers true. */
            char *k = cJSON_malloc(strlen(tok) + 1);
            if (!k) {
                cJSON_Delete(value);
                return -2;
            }
            strcpy(k, tok);
            if (value->string && !(value->type & cJSON_StringIsConst)) cJSON_free(value->string);
            value->string = k;
            value->type &= ~cJSON_StringIsConst;
            cJSON_ReplaceItemViaPointer(parent, old, value);
            return 0;
        }
        if (replace_only) {
            cJSON_Delete(value);
            return -1;
        }
        if (cJSON_AddItemToObject(parent, tok, value)) return 0;
        cJSON_Delete(value);
        return -2;
    }
    int n = cJSON_GetArraySize(parent);
    long i = (!replace_only && strcmp(tok, "-") == 0) ? n : parse_index(tok);
    if (i < 0 || i > n || (replace_only && i == n)) {
        cJSON_Delete(value);
        return -1;
    }
    if (replace_only) {
        cJSON_ReplaceItemViaPointer(parent, cJSON_GetArrayItem(parent, (int)i), value);
    } else if (i == n) {
        cJSON_AddItemToArray(parent, value);
    } else { /* Debian 12's cJSON_InsertItemInArray inserts nothing mid-array: link by hand */
        cJSON *after = cJSON_GetArrayItem(parent, (int)i);
        value->next = after;
        value->prev = after->prev;
        after->prev = value;
        if (after == parent->child)
            parent->child = value;
        else
            value->prev->next = value;
    }
    return 0;
}

/* Detaches and returns the value at path (NULL when absent or the root). */
static cJSON *take_value(cJSON *doc, const char *path)
{
    char tok[1024];
    cJSON *parent;
    if (resolve_parent(doc, path, &parent, tok, sizeof tok) != 0 || !parent) return NULL;
    cJSON *item = child_of(parent, tok);
    return item ? cJSON_DetachItemViaPointer(parent, item) : NULL;
}

static int apply_one(cJSON *doc, const cJSON *op, int idx, gpa_error *err)
{
    const cJSON *jop = cJSON_GetObjectItemCaseSensitive(op, "op");
    const cJSON *jpath = cJSON_GetObjectItemCaseSensitive(op, "path");
    if (!gpa_is_object(op) || !gpa_is_string(jop) || !gpa_is_string(jpath))
        return gpa_fail(err, GPA_EPARSE, "patch op %d: needs string \"op\" and \"path\"", idx);
    const char *name = jop->valuestring, *path = jpath->valuestring;
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(op, "value");
    const cJSON *jfrom = cJSON_GetObjectItemCaseSensitive(op, "from");
    char tok[1024];

    if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
        if (!value)
            return gpa_fail(err, GPA_EPARSE, "patch op %d (%s): missing \"value\"", idx, name);
        cJSON *dup = dup_value(value);
        if (!dup) return gpa_fail(err, GPA_ENOMEM, "patch op %d: out of memory", idx);
        int prc = put_value(doc, path, dup, name[0] == 'r');
        if (prc == -2) return gpa_fail(err, GPA_ENOMEM, "patch op %d: out of memory", idx);
        if (prc != 0)
            return gpa_fail(err, GPA_EINVAL, "patch op %d (%s): path %s does not exist", idx, name,
                            path);
        return GPA_OK;
    }
    if (strcmp(name, "remove") == 0) {
        cJSON *gone = take_value(doc, path);
        if (!gone)
            return gpa_fail(err, GPA_EINVAL, "patch op %d (remove): path %s does not exist", idx,
                            path);
        cJSON_Delete(gone);
        return GPA_OK;
    }
    if (strcmp(name, "test") == 0) {
        const cJSON *cur = resolve(doc, path, tok, sizeof tok);
        if (!value) return gpa_fail(err, GPA_EPARSE, "patch op %d (test): missing \"value\"", idx);
        if (!cur || !cJSON_Compare(cur, value, true))
            return gpa_fail(err, GPA_EINVAL, "patch op %d (test): %s does not hold the value", idx,
                            path);
        return GPA_OK;
    }
    if (strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) {
        if (!gpa_is_string(jfrom))
            return gpa_fail(err, GPA_EPARSE, "patch op %d (%s): missing \"from\"", idx, name);
        const char *from = jfrom->valuestring;
        cJSON *v;
        if (name[0] == 'm') {
            size_t fl = strlen(from);
            if (strncmp(path, from, fl) == 0 && path[fl] == '/')
                return gpa_fail(err, GPA_EINVAL, "patch op %d (move): %s is inside %s", idx, path,
                                from);
            if (strcmp(path, from) == 0)
                return resolve(doc, from, tok, sizeof tok)
                           ? GPA_OK
                           : gpa_fail(err, GPA_EINVAL, "patch op %d (move): %s does not exist", idx,
                                      from);
            v = take_value(doc, from);
        } else {
            const cJSON *src = resolve(doc, from, tok, sizeof tok);
            v = src ? dup_value(src) : NULL;
            if (src && !v) return gpa_fail(err, GPA_ENOMEM, "patch op %d: out of memory", idx);
        }
        if (!v)
            return gpa_fail(err, GPA_EINVAL, "patch op %d (%s): from %s does not exist", idx, name,
                            from);
        int prc = put_value(doc, path, v, false);
        if (prc == -2) return gpa_fail(err, GPA_ENOMEM, "patch op %d: out of memory", idx);
        if (prc != 0)
            return gpa_fail(err, GPA_EINVAL, "patch op %d (%s): path %s does not exist", idx, name,
                            path);
        return GPA_OK;
    }
    return gpa_fail(err, GPA_EPARSE, "patch op %d: unknown op \"%s\"", idx, name);
}

int gpa_patch_apply(cJSON *doc, const cJSON *ops, gpa_error *err)
{
    if (!doc || !gpa_is_array(ops))
        return gpa_fail(err, GPA_EPARSE, "patch: not a JSON array of operations");
    cJSON *work = cJSON_Duplicate(doc, 1);
    if (!work) return gpa_fail(err, GPA_ENOMEM, "patch: out of memory");
    int idx = 0;
    const cJSON *op;
    cJSON_ArrayForEach(op, ops) {
        int rc = apply_one(work, op, idx++, err);
        if (rc != GPA_OK) {
            cJSON_Delete(work);
            return rc;
        }
    }
    swap_contents(doc, work);
    cJSON_Delete(work);
    return GPA_OK;
}
