/*
 * review_json.c - strict in-place JSON reader producing a read-only cJSON tree in an arena
 * (see review_json.h for why the codec does not use cJSON_Parse).
 *
 * Layout: one malloc holds the document header, the first node chunk (sized from the input
 * length) and a private NUL-terminated copy of the body; strings are unescaped inside that
 * copy and nodes point into it. Larger documents chain further chunks.
 *
 * Must never: read past the copy's terminating NUL, accept anything RFC 8259 forbids, recurse
 * deeper than GPA_JSON_MAX_DEPTH, or hand out a node flagged as const/reference (cJSON_Duplicate
 * must deep-copy out of the arena).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "review_json.h"

typedef struct chunk {
    struct chunk *next;
    size_t cap;
    size_t used;
    cJSON nodes[];
} chunk;

struct gpa_jdoc {
    cJSON *root;
    chunk *cur;   /* chunk nodes are taken from */
    chunk *extra; /* chunks malloc'd after the first, freed with the document */
    char *text;
};

typedef struct parser {
    cJSON *nn, *ne; /* free nodes of the current chunk: [nn, ne) */
    char *p;
    char *end; /* the terminating NUL of the copy */
    gpa_jdoc *doc;
    const char *why;
    bool oom;
} parser;

/* The copy is followed by PAD zero bytes so the 16-byte scan below may read past the
 * terminating NUL without leaving the allocation. */
#define PAD 16

/* Returns the first byte at or after p that is '"', '\\' or below 0x20 (the terminating NUL
 * always qualifies). Strings are most of a pod, so this loop is most of the parse. */
#if defined(__SSE2__)
static inline const char *scan_plain(const char *p)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1f);
    for (;;) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* x <= 0x1f (unsigned) <=> min(x, 0x1f) == x */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x));
        int mask = _mm_movemask_epi8(m);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
}
#else
#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* SWAR, 8 bytes at a time: the lowest flagged byte is exact (borrows only flag bytes above a
 * real match). */
static inline const char *scan_plain(const char *p)
{
    for (;;) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ONES * '"');
        uint64_t b = x ^ (ONES * '\\');
        uint64_t hit = (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGHS;
        if (hit) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + (__builtin_ctzll(hit) >> 3);
#else
            while (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
                p++;
            return p;
#endif
        }
        p += 8;
    }
}
#endif

static cJSON *new_node_slow(parser *ps)
{
    size_t cap = ps->doc->cur->cap * 2;
    chunk *n = malloc(sizeof *n + cap * sizeof(cJSON));
    if (!n) {
        ps->oom = true;
        return NULL;
    }
    n->cap = cap;
    n->used = cap;
    n->next = ps->doc->extra;
    ps->doc->extra = n;
    ps->doc->cur = n;
    ps->nn = n->nodes + 1;
    ps->ne = n->nodes + cap;
    return n->nodes;
}

/* A node with every field zero except what the caller sets next. */
static inline cJSON *new_node(parser *ps)
{
    cJSON *node = ps->nn < ps->ne ? ps->nn++ : new_node_slow(ps);
    if (node) memset(node, 0, sizeof *node);
    return node;
}

static int fail(parser *ps, const char *why)
{
    if (!ps->why) ps->why = why;
    return -1;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static int parse_string_slow(parser *ps, char *start, char *p, char **out);

/* ps->p is at the opening quote. Unescapes in place; *out points at the NUL-terminated
 * result inside the copy. */
static inline int parse_string(parser *ps, char **out)
{
    char *start = ps->p + 1;
    /* Fast path: no escapes (nearly every string Kubernetes sends). */
    char *p = (char *)scan_plain(start);
    if (*p == '"') {
        *p = '\0';
        *out = start;
        ps->p = p + 1;
        return 0;
    }
    return parse_string_slow(ps, start, p, out);
}

/* From the first escape or control character on: unescape in place. */
static int parse_string_slow(parser *ps, char *start, char *p, char **out)
{
    char *w = p;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) {
            ps->p = p;
            return fail(ps, p >= ps->end ? "unterminated string" : "control character in a string");
        }
        if (c != '\\') {
            *w++ = (char)c;
            p++;
            continue;
        }
        p++;
        switch (*p) {
        case '"':
            *w++ = '"';
            break;
        case '\\':
            *w++ = '\\';
            break;
        case '/':
            *w++ = '/';
            break;
        case 'b':
            *w++ = '\b';
            break;
        case 'f':
            *w++ = '\f';
            break;
        case 'n':
            *w++ = '\n';
            break;
        case 'r':
            *w++ = '\r';
            break;
        case 't':
            *w++ = '\t';
            break;
        case 'u': {
            unsigned cp, lo;
            if (ps->end - p < 5 || hex4(p + 1, &cp) != 0) {
                ps->p = p;
                return fail(ps, "bad \\u escape");
            }
            p += 4;
            /* Strings are NUL-terminated here: "void\u0000,0" would read as "void" while the
             * API server stores (and the runtime sees) the whole value. Refuse, don't guess. */
            if (cp == 0) {
                ps->p = p;
                return fail(ps, "\\u0000 (NUL) in a string is refused");
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                ps->p = p;
                return fail(ps, "lone low surrogate in \\u escape");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (ps->end - p < 7 || p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &lo) != 0 ||
                    lo < 0xDC00 || lo > 0xDFFF) {
                    ps->p = p;
                    return fail(ps, "lone high surrogate in \\u escape");
                }
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            /* UTF-8 is never longer than the escape it replaces (6 or 12 bytes). */
            if (cp < 0x80) {
                *w++ = (char)cp;
            } else if (cp < 0x800) {
                *w++ = (char)(0xC0 | (cp >> 6));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *w++ = (char)(0xE0 | (cp >> 12));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *w++ = (char)(0xF0 | (cp >> 18));
                *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default:
            ps->p = p;
            return fail(ps, p >= ps->end ? "unterminated string" : "bad escape in a string");
        }
        p++;
    }
    *w = '\0';
    *out = start;
    ps->p = p + 1;
    return 0;
}

static void set_number(cJSON *n, double d)
{
    n->type = cJSON_Number;
    n->valuedouble = d;
    /* Same saturation as cJSON's parser, so valueint means what readers expect. */
    if (d >= INT_MAX)
        n->valueint = INT_MAX;
    else if (d <= (double)INT_MIN)
        n->valueint = INT_MIN;
    else
        n->valueint = (int)d;
}

static int parse_number(parser *ps, cJSON *n)
{
    char *s = ps->p, *p = s;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    uint64_t u = 0;
    int digits = 0;
    if (*p == '0') {
        p++;
        digits = 1;
    } else if (*p >= '1' && *p <= '9') {
        while (*p >= '0' && *p <= '9') {
            u = u * 10 + (uint64_t)(*p - '0');
            p++;
            digits++;
        }
    } else {
        ps->p = p;
        return fail(ps, "bad number");
    }
    bool integral = true;
    if (*p == '.') {
        integral = false;
        p++;
        if (!(*p >= '0' && *p <= '9')) {
            ps->p = p;
            return fail(ps, "bad number");
        }
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        integral = false;
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) {
            ps->p = p;
            return fail(ps, "bad number");
        }
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (integral && digits <= 19) {
        /* (double)u rounds to nearest like strtod does. */
        double d = (double)u;
        set_number(n, neg ? -d : d);
    } else {
        /* The grammar was checked above, so strtod (C locale: the binary never calls
         * setlocale) reads exactly [s, p). */
        char *e = NULL;
        double d = strtod(s, &e);
        if (e != p) {
            ps->p = p;
            return fail(ps, "bad number");
        }
        set_number(n, d);
    }
    ps->p = p;
    return 0;
}

static int literal(parser *ps, const char *word, size_t len)
{
    if ((size_t)(ps->end - ps->p) < len || memcmp(ps->p, word, len) != 0)
        return fail(ps, "unexpected character");
    ps->p += len;
    return 0;
}

/* Numbers and true/false/null at ps->p. */
static int parse_scalar(parser *ps, cJSON *n)
{
    switch (*ps->p) {
    case 't':
        n->type = cJSON_True;
        n->valueint = 1;
        return literal(ps, "true", 4);
    case 'f':
        n->type = cJSON_False;
        return literal(ps, "false", 5);
    case 'n':
        n->type = cJSON_NULL;
        return literal(ps, "null", 4);
    case '\0':
        return fail(ps, ps->p >= ps->end ? "unexpected end of input" : "NUL byte");
    default:
        if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps, n);
        return fail(ps, "unexpected character");
    }
}

static inline char *ws(char *p)
{
    /* Kubernetes sends compact JSON: one compare in the common case. The NUL terminator is
     * not whitespace, so this never runs off the end. */
    while ((unsigned char)*p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* A string at p (the opening quote): returns the byte after the closing quote, or NULL. */
static inline char *string_at(parser *ps, char *p, char **out)
{
    /* Fast path with the cursor in a register: storing through out (a char **) would
     * otherwise force ps->p to be reloaded. */
    char *start = p + 1;
    char *q = (char *)scan_plain(start);
    if (*q == '"') {
        *q = '\0';
        *out = start;
        return q + 1;
    }
    if (parse_string_slow(ps, start, q, out) != 0) return NULL;
    return ps->p;
}

static int parse_object(parser *ps, cJSON *n, int depth);
static int parse_array(parser *ps, cJSON *n, int depth);

/* An object or array at ps->p. Scalars and strings of the members are read inline (one call
 * per container, not per value); the cursor lives in a local between calls. Whitespace is
 * only looked for where the expected byte is not found: Kubernetes sends compact JSON.
 * Inlined into parse_object/parse_array with `object` constant. */
static inline __attribute__((always_inline)) int container(parser *ps, cJSON *n, int depth,
                                                           const bool object)
{
    if (depth >= GPA_JSON_MAX_DEPTH) return fail(ps, "nested too deeply");
    n->type = object ? cJSON_Object : cJSON_Array;
    const char close = object ? '}' : ']';
    char *p = ws(ps->p + 1);
    if (*p == close) {
        ps->p = p + 1;
        return 0;
    }
    cJSON *last = NULL;
    for (;;) {
        char *key = NULL;
        if (object) {
            if (*p != '"') {
                ps->p = p;
                return fail(ps, "expected a string key");
            }
            if (!(p = string_at(ps, p, &key))) return -1;
            if (*p != ':') {
                p = ws(p);
                if (*p != ':') {
                    ps->p = p;
                    return fail(ps, "expected ':'");
                }
            }
            p = ws(p + 1);
        }
        cJSON *c = new_node(ps);
        if (!c) return -1;
        c->string = key;
        if (last) {
            last->next = c;
            c->prev = last;
        } else {
            n->child = c;
        }
        last = c;
        char ch = *p;
        if (ch == '"') {
            c->type = cJSON_String;
            if (!(p = string_at(ps, p, &c->valuestring))) return -1;
        } else if (ch == '{') {
            ps->p = p;
            if (parse_object(ps, c, depth + 1) != 0) return -1;
            p = ps->p;
        } else if (ch == '[') {
            ps->p = p;
            if (parse_array(ps, c, depth + 1) != 0) return -1;
            p = ps->p;
        } else {
            ps->p = p;
            if (parse_scalar(ps, c) != 0) return -1;
            p = ps->p;
        }
        if (*p != ',' && *p != close) p = ws(p);
        if (*p == ',') {
            p = ws(p + 1);
            continue;
        }
        if (*p == close) {
            n->child->prev = last; /* cJSON keeps the tail in the first child's prev */
            ps->p = p + 1;
            return 0;
        }
        ps->p = p;
        return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_object(parser *ps, cJSON *n, int depth)
{
    return container(ps, n, depth, true);
}

static int parse_array(parser *ps, cJSON *n, int depth)
{
    return container(ps, n, depth, false);
}

static int parse_value(parser *ps, cJSON *n)
{
    ps->p = ws(ps->p);
    char ch = *ps->p;
    if (ch == '{') return parse_object(ps, n, 0);
    if (ch == '[') return parse_array(ps, n, 0);
    if (ch == '"') {
        n->type = cJSON_String;
        return parse_string(ps, &n->valuestring);
    }
    return parse_scalar(ps, n);
}

/* Offset of the first byte that is not well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or len when all is well. JSON text must be UTF-8 (RFC
 * 8259 8.1): without this check invalid bytes inside a string were copied into the answer
 * (e.g. an echoed uid), making the response itself invalid JSON. ASCII, nearly every body,
 * is skipped 8 bytes at a time. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (i + 8 <= len) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (!(x & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0) lo = 0xA0; /* overlong */
            if (c == 0xED) hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0) lo = 0x90; /* overlong */
            if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
        } else
            return i;
        if (i + n >= len) return i; /* truncated sequence */
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k <= n; k++)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += n + 1;
    }
    return len;
}

int gpa_jdoc_parse(gpa_jdoc **out, const char *buf, size_t len, const char **why, size_t *offset)
{
    *out = NULL;
    if (len > ((size_t)1 << 40)) return -2;
    size_t bad = utf8_invalid_at((const unsigned char *)buf, len);
    if (bad < len) {
        if (why) *why = "invalid UTF-8";
        if (offset) *offset = bad;
        return -1;
    }
    /* Compact Kubernetes JSON averages ~16 bytes per value. */
    size_t cap = len / 16 + 16;
    size_t head = sizeof(gpa_jdoc) + sizeof(chunk) + cap * sizeof(cJSON);
    char *mem = malloc(head + len + 1 + PAD);
    if (!mem) return -2;
    gpa_jdoc *d = (gpa_jdoc *)(void *)mem;
    chunk *c = (chunk *)(void *)(mem + sizeof(gpa_jdoc));
    c->next = NULL;
    c->cap = cap;
    c->used = 0;
    d->cur = c;
    d->extra = NULL;
    d->text = mem + head;
    memcpy(d->text, buf, len);
    memset(d->text + len, 0, 1 + PAD);

    parser ps = {
        .nn = c->nodes, .ne = c->nodes + cap, .p = d->text, .end = d->text + len, .doc = d};
    d->root = new_node(&ps);
    int rc = -1;
    if (d->root) {
        rc = parse_value(&ps, d->root);
        if (rc == 0) {
            ps.p = ws(ps.p);
            if (ps.p != ps.end) rc = fail(&ps, "data after the JSON document");
        }
    }
    if (rc != 0) {
        if (why) *why = ps.oom ? "out of memory" : ps.why;
        if (offset) *offset = (size_t)(ps.p - d->text);
        bool oom = ps.oom;
        gpa_jdoc_free(d);
        return oom ? -2 : -1;
    }
    *out = d;
    return 0;
}

const cJSON *gpa_jdoc_root(const gpa_jdoc *d)
{
    return d ? d->root : NULL;
}

void gpa_jdoc_free(gpa_jdoc *d)
{
    if (!d) return;
    for (chunk *c = d->extra; c;) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
    free(d);
}
