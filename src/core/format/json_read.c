/*
 * json_read.c - the JSON reader: strict, in place, producing a read-only cJSON tree in an
 * arena (see json_read.h for why the codec does not use cJSON_Parse).
 *
 * Layout: one malloc holds the document header, the first node chunk (sized from the input
 * length) and a private NUL-terminated copy of the body; strings are unescaped inside that
 * copy and nodes point into it. Larger documents chain further chunks.
 *
 * UTF-8 (RFC 8259 8.1) is checked by the string scan itself: bytes >= 0x80 can only be legal
 * inside strings, so the scan stops on them and checks the sequence there; outside a string
 * such a byte is a syntax error anyway. Only a refused document is run through a separate
 * UTF-8 check, so that invalid UTF-8 is reported (at its first byte) ahead of any syntax
 * error, exactly as when that check ran first on every body.
 *
 * Must never: read past the copy's terminating NUL (plus its padding), accept anything RFC
 * 8259 forbids or any byte sequence that is not UTF-8, nest deeper than GPA_JSON_MAX_DEPTH, or
 * hand out a node flagged as const/reference (cJSON_Duplicate must deep-copy out of the arena).
 */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util/node_arena.h"
#include "format/json_read.h"

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
 * terminating NUL, literals be compared 5 bytes at a time, and the codec compare a string of
 * the tree with a literal of up to GPA_JSON_STR_SLACK bytes in one fixed-size memcmp,
 * without leaving the allocation. */
#define PAD GPA_JSON_STR_SLACK

/* Returns the first byte at or after p that is '"', '\\', below 0x20 or at or above 0x80 (the
 * terminating NUL always qualifies). Strings are most of a pod, so this loop is most of the
 * parse. Stopping on bytes >= 0x80 is what lets UTF-8 be checked only where it can legally
 * occur (inside strings), in the same pass. */
#if defined(__SSE2__)
static inline const char *scan_plain(const char *p)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    for (;;) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* x - 0x20 with signed saturation is negative exactly for the control characters and
         * every byte >= 0x80 (-128..-1 stay negative); movemask reads the sign bits. (A
         * signed compare says the same, but GCC turns it into two compares.) */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_subs_epi8(x, space));
        int mask = _mm_movemask_epi8(m);
        if (mask) return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
}
#else
#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
/* SWAR, 8 bytes at a time: the lowest flagged byte is exact (borrows only flag bytes above a
 * real match; the high-bit term has no borrows at all). */
static inline const char *scan_plain(const char *p)
{
    for (;;) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ONES * '"');
        uint64_t b = x ^ (ONES * '\\');
        uint64_t hit =
            (((x - ONES * 0x20) & ~x) | x | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGHS;
        if (hit) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return p + (__builtin_ctzll(hit) >> 3);
#else
            while (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80)
                p++;
            return p;
#endif
        }
        p += 8;
    }
}
#endif

/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF) that starts with the byte >= 0x80 at s; 0 when it is not one. Reads
 * byte by byte and stops at the first bad one, so never past the copy's terminating NUL. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
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
        return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k <= n; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    return n + 1;
}

/* Takes the next chunk when the current one is used up; NULL (oom latched) when malloc fails.
 * Updates ps->nn/ps->ne, which the caller reloads. */
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

static int fail(parser *ps, const char *why)
{
    if (!ps->why) ps->why = why;
    return -1;
}

/* fail() at p, for the helpers that return a cursor: always NULL. */
static char *fail_at(parser *ps, char *p, const char *why)
{
    ps->p = p;
    fail(ps, why);
    return NULL;
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

/* One escape: p at the backslash, w where its bytes go. Returns the byte after the escape and
 * advances *wp, or NULL. */
static char *unescape(parser *ps, char *p, char **wp)
{
    char *w = *wp;
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
        if (ps->end - p < 5 || hex4(p + 1, &cp) != 0) return fail_at(ps, p, "bad \\u escape");
        p += 4;
        /* Strings are NUL-terminated here: "void\u0000,0" would read as "void" while the
         * API server stores (and the runtime sees) the whole value. Refuse, don't guess. */
        if (cp == 0) return fail_at(ps, p, "\\u0000 (NUL) in a string is refused");
        if (cp >= 0xDC00 && cp <= 0xDFFF) return fail_at(ps, p, "lone low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (ps->end - p < 7 || p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &lo) != 0 ||
                lo < 0xDC00 || lo > 0xDFFF)
                return fail_at(ps, p, "lone high surrogate in \\u escape");
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
        return fail_at(ps, p, p >= ps->end ? "unterminated string" : "bad escape in a string");
    }
    *wp = w;
    return p + 1;
}

/* A string from the first byte scan_plain stopped at that is not its closing quote: checks
 * UTF-8 sequences, unescapes in place (w trails p once an escape shortened the text) and
 * NUL-terminates. Returns the byte after the closing quote, or NULL. */
static char *string_slow(parser *ps, char *p)
{
    char *w = p;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c >= 0x80) {
            size_t n = utf8_seq((const unsigned char *)p);
            if (!n) return fail_at(ps, p, "invalid UTF-8");
            if (w != p) memmove(w, p, n);
            w += n;
            p += n;
        } else if (c == '\\') {
            if (!(p = unescape(ps, p, &w))) return NULL;
        } else {
            return fail_at(ps, p,
                           p >= ps->end ? "unterminated string" : "control character in a string");
        }
        char *q = (char *)scan_plain(p);
        if (w != p) memmove(w, p, (size_t)(q - p));
        w += q - p;
        p = q;
    }
    *w = '\0';
    return p + 1;
}

/* The two bytes at q are a then b: one 16-bit compare (q + 1 is always inside the padded
 * copy: q is at most its terminating NUL). */
static inline bool pair_is(const char *q, char a, char b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t v;
    memcpy(&v, q, 2);
    return v == (uint16_t)((unsigned char)a | (unsigned)(unsigned char)b << 8);
#else
    return q[0] == a && q[1] == b;
#endif
}

/* The string whose opening quote is at p (its text starts at p + 1 and is NUL-terminated in
 * place): returns the byte after the closing quote, or NULL. */
static inline __attribute__((always_inline)) char *string_at(parser *ps, char *p)
{
    /* Fast path: plain ASCII without escapes (nearly every string Kubernetes sends). */
    char *q = (char *)scan_plain(p + 1);
    if (*q == '"') {
        *q = '\0';
        return q + 1;
    }
    return string_slow(ps, q);
}

static void set_number(cJSON *n, double d)
{
    n->type = cJSON_Number;
    n->valuedouble = d;
    n->valueint = gpa_jn_valueint(d);
}

/* The number at s into n: returns the byte after it, or NULL. */
static char *parse_number(parser *ps, cJSON *n, char *s)
{
    char *p = s;
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
        return fail_at(ps, p, "bad number");
    }
    bool integral = true;
    if (*p == '.') {
        integral = false;
        p++;
        if (!(*p >= '0' && *p <= '9')) return fail_at(ps, p, "bad number");
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        integral = false;
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return fail_at(ps, p, "bad number");
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
        if (e != p) return fail_at(ps, p, "bad number");
        set_number(n, d);
    }
    return p;
}

/* A string, number, true, false or null at p into n (zeroed): returns the byte after it, or
 * NULL. Literals are compared in place: the copy's padding makes reading 5 bytes at any
 * p <= end safe. */
static inline __attribute__((always_inline)) char *leaf(parser *ps, cJSON *n, char *p)
{
    switch (*p) {
    case '"':
        n->type = cJSON_String;
        n->valuestring = p + 1;
        return string_at(ps, p);
    case 't':
        if (memcmp(p, "true", 4) != 0) break;
        n->type = cJSON_True;
        n->valueint = 1;
        return p + 4;
    case 'f':
        if (memcmp(p, "false", 5) != 0) break;
        n->type = cJSON_False;
        return p + 5;
    case 'n':
        if (memcmp(p, "null", 4) != 0) break;
        n->type = cJSON_NULL;
        return p + 4;
    case '\0':
        return fail_at(ps, p, p >= ps->end ? "unexpected end of input" : "NUL byte");
    default:
        if (*p >= '0' && *p <= '9') {
            /* Fast path: a non-negative integer of at most 9 digits (counts, ports,
             * seconds) needs neither a sign, a wide accumulator nor saturation; anything
             * else goes the general way. */
            unsigned v = (unsigned)(*p - '0');
            char *q = p + 1;
            if (*p != '0')
                while (*q >= '0' && *q <= '9' && q - p < 9)
                    v = v * 10 + (unsigned)(*q++ - '0');
            if (!(*q >= '0' && *q <= '9') && *q != '.' && *q != 'e' && *q != 'E') {
                n->type = cJSON_Number;
                n->valueint = (int)v;
                n->valuedouble = (double)v;
                return q;
            }
        }
        if (*p == '-' || (*p >= '0' && *p <= '9')) return parse_number(ps, n, p);
        break;
    }
    return fail_at(ps, p, "unexpected character");
}

static inline bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline char *ws(char *p)
{
    /* Kubernetes sends compact JSON: one compare in the common case. The NUL terminator is
     * not whitespace, so this never runs off the end. */
    while ((unsigned char)*p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The node whose `next` link is at l: the previous sibling of the member linked there. next is
 * cJSON's first field, so the two addresses are the same (C11 6.7.2.1p15); tracking the last
 * child in a variable of its own cost a register the loop did not have. */
_Static_assert(offsetof(cJSON, next) == 0, "cJSON.next must be the first field");
#define OWNER_OF(l) ((cJSON *)(void *)(l))

/* A member of the open container: a fresh node c, linked in at link, named key. */
#define NEW_MEMBER(key)                                                                            \
    do {                                                                                           \
        if (nn < ne) {                                                                             \
            c = nn++;                                                                              \
        } else {                                                                                   \
            if (!(c = new_node_slow(ps))) return -1;                                               \
            nn = ps->nn;                                                                           \
            ne = ps->ne;                                                                           \
        }                                                                                          \
        /* Every field but type, child and valuestring (MEMBER_VALUE sets them: a string's         \
         * child is NULL, a container's child is linked by open_*) and next (linked by the         \
         * next sibling, or NULLed when the container closes). */                                  \
        /* the previous sibling; the first child's (link is then &cur->child, no node) is set      \
         * to the tail when the container closes */                                                \
        c->prev = OWNER_OF(link);                                                                  \
        /* valueint, the padding after it and valuedouble: one 16-byte store of zeros */           \
        memset((char *)c + offsetof(cJSON, valueint), 0,                                           \
               offsetof(cJSON, string) - offsetof(cJSON, valueint));                               \
        c->string = (key);                                                                         \
        *link = c;                                                                                 \
        link = &c->next;                                                                           \
    } while (0)

/* The value at p into the member c, then on to `after` (the container's separator check), or
 * for a plain string followed by ',' on to `more` (the next member); a nested container is
 * opened instead. Strings first: they are half of a pod's values.
 * Whitespace before the value is only looked for once no value starts at p (compact JSON
 * has none): the caller steps over the ':' or ',' without calling ws(). */
#define MEMBER_VALUE(after, more)                                                                  \
    do {                                                                                           \
        for (;;) {                                                                                 \
            if (*p == '"') {                                                                       \
                c->type = cJSON_String;                                                            \
                c->child = NULL;                                                                   \
                c->valuestring = p + 1;                                                            \
                char *q = (char *)scan_plain(p + 1);                                               \
                if (__builtin_expect(pair_is(q, '"', ','), 1)) {                                   \
                    /* plain and followed by a ',': straight on to the next member */              \
                    *q = '\0';                                                                     \
                    p = q + 2;                                                                     \
                    goto more;                                                                     \
                }                                                                                  \
                if (*q == '"') {                                                                   \
                    *q = '\0';                                                                     \
                    p = q + 1;                                                                     \
                } else if (!(p = string_slow(ps, q))) {                                            \
                    return -1;                                                                     \
                }                                                                                  \
                goto after;                                                                        \
            }                                                                                      \
            if (*p == '{') {                                                                       \
                c->valuestring = NULL;                                                             \
                goto open_object;                                                                  \
            }                                                                                      \
            if (*p == '[') {                                                                       \
                c->valuestring = NULL;                                                             \
                goto open_array;                                                                   \
            }                                                                                      \
            if (is_ws(*p)) {                                                                       \
                p = ws(p);                                                                         \
                continue;                                                                          \
            }                                                                                      \
            c->child = NULL;                                                                       \
            c->valuestring = NULL;                                                                 \
            if (!(p = leaf(ps, c, p))) return -1;                                                  \
            goto after;                                                                            \
        }                                                                                          \
    } while (0)

/* The whole document into root, without recursion: one function whose cursor, node pool and
 * open container stay in registers, with one loop for object members and one for array
 * elements. While a container is open its `next` (free until a sibling follows it, which
 * cannot happen before it closes) links to its parent, so the nesting needs no stack of its
 * own. Whitespace is only looked for where the expected byte is not found: Kubernetes sends
 * compact JSON. */
static int parse_doc(parser *ps, cJSON *root)
{
    char *p = ws(ps->p);
    cJSON *nn = ps->nn, *ne = ps->ne;
    cJSON *cur = NULL;   /* the open container */
    cJSON **link = NULL; /* where its next child is linked in */
    cJSON *c = root;     /* the node the value at p goes into */
    int depth = 0;       /* containers open */
    const char *why;

    if (*p == '{') goto open_object;
    if (*p == '[') goto open_array;
    if (!(p = leaf(ps, root, p))) return -1;
    ps->p = p;
    return 0;

open_object:
    /* c is the object at p. */
    if (depth >= GPA_JSON_MAX_DEPTH) {
        why = "nested too deeply";
        goto bad;
    }
    c->type = cJSON_Object;
    c->next = cur;
    cur = c;
    link = &c->child;
    depth++;
    p = ws(p + 1);
    if (*p == '}') goto closed;
    for (;;) {
    object_member:
        if (*p != '"') {
            p = ws(p);
            if (*p != '"') {
                why = "expected a string key";
                goto bad;
            }
        }
        char *key = p + 1;
        char *kq = (char *)scan_plain(key);
        if (__builtin_expect(pair_is(kq, '"', ':'), 1)) {
            /* a plain key followed at once by its ':' (compact JSON) */
            *kq = '\0';
            p = kq + 2;
        } else {
            if (*kq == '"') {
                *kq = '\0';
                p = kq + 1;
            } else if (!(p = string_slow(ps, kq))) {
                return -1;
            }
            if (*p != ':') {
                p = ws(p);
                if (*p != ':') {
                    why = "expected ':'";
                    goto bad;
                }
            }
            p++;
        }
        NEW_MEMBER(key);
        MEMBER_VALUE(object_next, object_member);
    object_next:
        /* ',' first: it follows all members but the last; whitespace only when neither
         * ',' nor '}' is there */
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '}') {
            p = ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p != '}') {
                why = "expected ',' or '}'";
                goto bad;
            }
        }
        break;
    }
    goto closed;

open_array:
    /* c is the array at p. */
    if (depth >= GPA_JSON_MAX_DEPTH) {
        why = "nested too deeply";
        goto bad;
    }
    c->type = cJSON_Array;
    c->next = cur;
    cur = c;
    link = &c->child;
    depth++;
    p = ws(p + 1);
    if (*p == ']') goto closed;
    for (;;) {
    array_element:
        NEW_MEMBER(NULL);
        MEMBER_VALUE(array_next, array_element);
    array_next:
        /* ',' first: it follows all members but the last; whitespace only when neither
         * ',' nor ']' is there */
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != ']') {
            p = ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p != ']') {
                why = "expected ',' or ']'";
                goto bad;
            }
        }
        break;
    }

closed:
    /* p is at the end of cur: back to its parent. */
    p++;
    depth--;
    *link = NULL; /* the last child's next (or cur's child: empty) */
    /* cJSON keeps the tail in child->prev; with a child, link is the tail's next */
    if (cur->child) cur->child->prev = OWNER_OF(link);
    c = cur;
    cur = c->next;
    c->next = NULL;
    if (!cur) {
        ps->p = p;
        return 0;
    }
    link = &c->next;
    if (cur->type == cJSON_Object) goto object_next;
    goto array_next;

bad:
    ps->p = p;
    return fail(ps, why);
}

#undef NEW_MEMBER
#undef MEMBER_VALUE

/* Offset of the first byte that is not well-formed UTF-8, or len when all is well. Only run
 * on the error path: a document that parses has had every string checked by the scan, and a
 * byte >= 0x80 outside a string is a syntax error. Refused documents report invalid UTF-8
 * (at its first offset) in preference to any syntax error, as JSON text must be UTF-8 (RFC
 * 8259 8.1) before it is JSON at all. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
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
        .nn = c->nodes + 1, .ne = c->nodes + cap, .p = d->text, .end = d->text + len, .doc = d};
    d->root = c->nodes;
    memset(d->root, 0, sizeof *d->root);
    int rc = parse_doc(&ps, d->root);
    if (rc == 0) {
        ps.p = ws(ps.p);
        if (ps.p != ps.end) rc = fail(&ps, "data after the JSON document");
    }
    if (rc != 0) {
        bool oom = ps.oom;
        size_t bad = oom ? len : utf8_invalid_at((const unsigned char *)buf, len);
        if (why) *why = oom ? "out of memory" : bad < len ? "invalid UTF-8" : ps.why;
        if (offset) *offset = bad < len ? bad : (size_t)(ps.p - d->text);
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
