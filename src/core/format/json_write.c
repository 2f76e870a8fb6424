/*
 * json_write.c - the JSON writer: a growable output buffer with raw bytes, JSON string
 * literals and compact JSON of a cJSON value (byte-identical to cJSON_PrintUnformatted). The
 * AdmissionReview codec, the policy describer and the tools all write JSON through it;
 * base64 over the same buffer is base64.c.
 *
 * Must never: emit invalid JSON for any input string (every byte < 0x20, '"' and '\\' is
 * escaped), or keep writing after an allocation failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "format/json_write.h"

/* An allocation failure (or a value that cannot be written) is latched, and cap drops to len
 * so that reserve()'s fast path refuses every later append. */
void gpa_rbuf_fail(gpa_rbuf *b)
{
    b->oom = true;
    b->cap = b->len;
}

void gpa_rbuf_init(gpa_rbuf *b, size_t cap)
{
    b->len = 0;
    b->oom = false;
    b->cap = cap ? cap : 256;
    b->data = malloc(b->cap);
    if (!b->data) gpa_rbuf_fail(b);
}

void gpa_rbuf_free(gpa_rbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *gpa_rbuf_take(gpa_rbuf *b, size_t *len_out)
{
    if (b->oom || !b->data) {
        gpa_rbuf_free(b);
        return NULL;
    }
    /* reserve() always leaves one spare byte, so the terminator fits. */
    b->data[b->len] = '\0';
    char *d = b->data;
    if (len_out) *len_out = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

bool gpa_rbuf_grow(gpa_rbuf *b, size_t n)
{
    if (b->oom) return false;
    if (n > ((size_t)-1) / 4 - b->len) {
        gpa_rbuf_fail(b);
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        gpa_rbuf_fail(b);
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

/* Makes room for n more bytes plus a terminator. len <= cap always holds, so n < cap - len
 * is len + n + 1 <= cap without overflow: one compare on the path every append takes. */
static inline bool reserve(gpa_rbuf *b, size_t n)
{
    if (n < b->cap - b->len) return true;
    return gpa_rbuf_grow(b, n);
}

void gpa_rbuf_puts(gpa_rbuf *b, const char *s)
{
    gpa_rbuf_put(b, s, strlen(s));
}

/* One byte that JSON needs escaped, written at o; returns the new end. */
static inline char *escape_byte(char *o, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    *o++ = '\\';
    switch (c) {
    case '"':
        *o++ = '"';
        break;
    case '\\':
        *o++ = '\\';
        break;
    case '\b':
        *o++ = 'b';
        break;
    case '\f':
        *o++ = 'f';
        break;
    case '\n':
        *o++ = 'n';
        break;
    case '\r':
        *o++ = 'r';
        break;
    case '\t':
        *o++ = 't';
        break;
    default:
        *o++ = 'u';
        *o++ = '0';
        *o++ = '0';
        *o++ = hex[c >> 4];
        *o++ = hex[c & 15];
    }
    return o;
}

/* Before an escape at o: room for the `left` bytes still to write, each escaped (6 bytes),
 * plus the closing quote, a ':' after it and the block copy's 16-byte overrun. Returns o in
 * the possibly moved buffer, NULL after an allocation failure. */
static char *room_for_escapes(gpa_rbuf *b, char *o, size_t left)
{
    size_t at = (size_t)(o - b->data);
    if (b->cap - at >= left * 6 + 2 + 16 + 1) return o;
    b->len = at;
    if (!reserve(b, left * 6 + 2 + 16)) return NULL;
    return b->data + at;
}

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Nonzero when a byte of x needs a JSON escape (< 0x20, '"' or '\\'). Exact as a yes/no. */
static inline __attribute__((unused)) uint64_t escapes8(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), bs = x ^ (ONES * '\\');
    return (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((bs - ONES) & ~bs)) & HIGHS;
}

static inline bool needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

/* From p on (o: where it goes, room reserved for the unescaped rest plus 16): 16 bytes at
 * a time, then the tail through one last load that overlaps bytes already done (never reading
 * past the string), unless an escape was written there. Returns the new end, NULL on an
 * allocation failure. */
static __attribute__((noinline)) char *json_str_long(gpa_rbuf *b, char *o, const unsigned char *p,
                                                     const unsigned char *end,
                                                     const unsigned char *verbatim)
{
#if defined(__SSE2__)
    /* verbatim: the output before o equals the input from here to p (the tail load may reach
     * back that far). */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1f);
#define ESCAPES(x)                                                                                 \
    ((unsigned)_mm_movemask_epi8(                                                                  \
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),            \
                     _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x))))
    for (;;) {
        /* Whole blocks: copied as they are until one holds a byte to escape. */
        while (end - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
            unsigned mask = ESCAPES(x);
            _mm_storeu_si128((__m128i *)(void *)o, x);
            if (mask) {
                unsigned k = (unsigned)__builtin_ctz(mask);
                o += k;
                p += k;
                goto escape;
            }
            o += 16;
            p += 16;
        }
        /* The tail: the 16 bytes ending at end, re-copying the ones before p unchanged. */
        if (p == end || end - 16 < verbatim) break;
        {
            size_t skip = 16 - (size_t)(end - p);
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(end - 16));
            unsigned mask = ESCAPES(x) >> skip;
            _mm_storeu_si128((__m128i *)(void *)(o - skip), x);
            if (!mask) return o + (end - p);
            unsigned k = (unsigned)__builtin_ctz(mask);
            o += k;
            p += k;
        }
    escape:
        if (!(o = room_for_escapes(b, o, (size_t)(end - p)))) return NULL;
        o = escape_byte(o, *p++);
        verbatim = p;
    }
#undef ESCAPES
#else
    (void)verbatim;
#endif
    for (; p < end; p++) {
        if (!needs_escape(*p)) {
            *o++ = (char)*p;
        } else {
            if (!(o = room_for_escapes(b, o, (size_t)(end - p)))) return NULL;
            o = escape_byte(o, *p);
        }
    }
    return o;
}

/* The JSON string literal of s, after a ',' when comma is 1 and followed by a ':' when colon:
 * one reserve for a whole object key. */
static inline __attribute__((always_inline)) void put_str(gpa_rbuf *b, const char *s, size_t comma,
                                                          bool colon)
{
    size_t n = strlen(s);
    /* Room for the string unescaped, plus a comma, the quotes and a colon; +16: the block copy may
     * write (not keep) up to 16 bytes past the current end. An escape makes room for the worst case
     * of the rest (every byte \u00XX) when it is met: reserving that up front for every string
     * would grow the buffer for nothing. */
    if (!reserve(b, n + 4 + 16)) return;
    char *o = b->data + b->len;
    *o = ',';
    o += comma;
    *o++ = '"';
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    /* Short strings (most keys and values), 4 to 15 bytes: two overlapping loads cover them
     * without reading past the end; copied as they are when neither needs an escape. */
    if (n >= 4 && n < 16) {
        uint64_t w0, w1;
        bool plain;
        if (n >= 8) {
            memcpy(&w0, p, 8);
            memcpy(&w1, end - 8, 8);
        } else {
            uint32_t h0, h1;
            memcpy(&h0, p, 4);
            memcpy(&h1, end - 4, 4);
            w0 = (uint64_t)h0 | (uint64_t)h1 << 32;
            w1 = w0;
        }
#if defined(__SSE2__)
        __m128i x = _mm_set_epi64x((long long)w1, (long long)w0);
        plain = !_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                      _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                         _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x)));
#else
        plain = !(escapes8(w0) | escapes8(w1));
#endif
        if (plain) {
            memcpy(o, &w0, n >= 8 ? 8 : 4);
            if (n >= 8)
                memcpy(o + n - 8, &w1, 8);
            else
                memcpy(o + n - 4, end - 4, 4);
            o += n;
            p = end;
        }
    } else if (n < 4) {
        for (; p < end && !needs_escape(*p); p++)
            *o++ = (char)*p;
    }
    if (p < end && !(o = json_str_long(b, o, p, end, (const unsigned char *)s))) return;
    *o++ = '"';
    if (colon) *o++ = ':';
    b->len = (size_t)(o - b->data);
}

void gpa_rbuf_json_str(gpa_rbuf *b, const char *s)
{
    put_str(b, s, 0, false);
}

void gpa_rbuf_json_str_sep(gpa_rbuf *b, const char *s, bool comma, bool colon)
{
    put_str(b, s, comma, colon);
}

/* Numbers as cJSON prints them (%d for ints, %1.15g, non-finite as null) except that %1.17g
 * is used whenever %1.15g does not read back EXACTLY: cJSON 1.7.15 accepts a near match and
 * would round e.g. 9007199254740993 or a 17-digit value the pod carried, and a patch must
 * never change a value it copies. Same bytes as cJSON for every number it prints exactly. */
static void put_number(gpa_rbuf *b, const cJSON *v)
{
    char tmp[32];
    double d = v->valuedouble;
    int n;
    if (isnan(d) || isinf(d)) {
        gpa_rbuf_put(b, "null", 4);
        return;
    }
    if (d == (double)v->valueint) {
        /* What %d prints, without snprintf's format parsing. */
        long long x = v->valueint;
        unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
        char *e = tmp + sizeof tmp, *q = e;
        do {
            *--q = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (x < 0) *--q = '-';
        gpa_rbuf_put(b, q, (size_t)(e - q));
        return;
    } else {
        n = snprintf(tmp, sizeof tmp, "%1.15g", d);
        double back = 0;
        if (sscanf(tmp, "%lg", &back) != 1 || back != d) n = snprintf(tmp, sizeof tmp, "%1.17g", d);
    }
    if (n > 0 && (size_t)n < sizeof tmp)
        gpa_rbuf_put(b, tmp, (size_t)n);
    else
        gpa_rbuf_fail(b);
}

/* ---- the value writer ------------------------------------------------------------------------
 * Works on a write pointer o kept in a register (b->len is synced only around the helpers that
 * use it); every function returns the new o, or NULL once an allocation failed (oom latched). */

/* Room for n more bytes plus a terminator at o. */
static __attribute__((noinline)) char *w_grow(gpa_rbuf *b, char *o, size_t n)
{
    b->len = (size_t)(o - b->data);
    if (!gpa_rbuf_grow(b, n)) return NULL;
    return b->data + b->len;
}

static inline char *w_room(gpa_rbuf *b, char *o, size_t n)
{
    if ((size_t)(b->data + b->cap - o) > n) return o;
    return w_grow(b, o, n);
}

/* No byte of the two words needs an escape. */
static inline bool plain16(uint64_t w0, uint64_t w1)
{
#if defined(__SSE2__)
    __m128i x = _mm_set_epi64x((long long)w1, (long long)w0);
    return !_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
        _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x)));
#else
    return !(escapes8(w0) | escapes8(w1));
#endif
}

/* The JSON string literal of s, after a ',' when comma is 1, followed by a ':' when colon is 1:
 * put_str on the write pointer. cJSON strings carry no length and nothing promises readable
 * bytes past this one's NUL (patch strings come from the engine's arena, the policy and static
 * storage), so s is measured by strlen before any wide load. */
static inline __attribute__((always_inline)) char *w_str(gpa_rbuf *b, char *o, const char *s,
                                                         size_t comma, size_t colon)
{
    size_t n = strlen(s);
    /* Room as in put_str: the string unescaped, comma, quotes, colon, the blocks' overrun. */
    if (!(o = w_room(b, o, n + 4 + 16))) return NULL;
    *o = ',';
    o += comma;
    *o++ = '"';
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    if (n >= 4 && n < 16) {
        uint64_t w0, w1;
        if (n >= 8) {
            memcpy(&w0, p, 8);
            memcpy(&w1, end - 8, 8);
        } else {
            uint32_t h0, h1;
            memcpy(&h0, p, 4);
            memcpy(&h1, end - 4, 4);
            w0 = (uint64_t)h0 | (uint64_t)h1 << 32;
            w1 = w0;
        }
        if (plain16(w0, w1)) {
            memcpy(o, &w0, n >= 8 ? 8 : 4);
            if (n >= 8)
                memcpy(o + n - 8, &w1, 8);
            else
                memcpy(o + n - 4, end - 4, 4);
            o += n;
            p = end;
        }
    } else if (n < 4) {
        for (; p < end && !needs_escape(*p); p++)
            *o++ = (char)*p;
    }
    if (p < end && !(o = json_str_long(b, o, p, end, (const unsigned char *)s))) return NULL;
    /* Both fit (reserved above); the ':' is kept only after a key. */
    memcpy(o, "\":", 2);
    return o + 1 + colon;
}

/* s equals the literal lit (n bytes with its NUL). One byte at a time, on purpose: a byte is
 * read only after the one before it matched a non-NUL byte, so no read passes s's end. */
static inline __attribute__((always_inline)) bool w_is(const char *s, const char *lit, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != lit[i]) return false;
    return true;
}
#define W_IS(s, lit) w_is((s), "" lit, sizeof(lit))

/* Appends the bytes of a literal (room already made). */
#define W_LIT(o, lit) (memcpy((o), "" lit, sizeof(lit) - 1), (o) + sizeof(lit) - 1)

static char *w_container(gpa_rbuf *b, char *o, const cJSON *v, size_t comma, int mode);

/* An object key after a ',' when comma is 1, and its ':'. The fields the engine's patches
 * write again and again (tolerations, node and pod affinity terms) are recognized byte by
 * byte (W_IS) and written as constants, without strlen or an escape scan; the longest ones
 * are left out, where comparing costs as much as copying. Any other key: w_str. */
static inline __attribute__((always_inline)) char *w_key(gpa_rbuf *b, char *o, const char *k,
                                                         size_t comma)
{
    if (!(o = w_room(b, o, 1 + 20))) return NULL;
    *o = ',';
    o += comma;
    switch (k[0]) {
    case 'e':
        if (W_IS(k + 1, "ffect")) return W_LIT(o, "\"effect\":");
        break;
    case 'k':
        if (W_IS(k + 1, "ey")) return W_LIT(o, "\"key\":");
        break;
    case 'l':
        if (W_IS(k + 1, "abelSelector")) return W_LIT(o, "\"labelSelector\":");
        break;
    case 'm':
        if (W_IS(k + 1, "atchExpressions")) return W_LIT(o, "\"matchExpressions\":");
        if (W_IS(k + 1, "atchLabels")) return W_LIT(o, "\"matchLabels\":");
        break;
    case 'n':
        if (W_IS(k + 1, "odeAffinity")) return W_LIT(o, "\"nodeAffinity\":");
        if (W_IS(k + 1, "odeSelectorTerms")) return W_LIT(o, "\"nodeSelectorTerms\":");
        break;
    case 'o':
        if (W_IS(k + 1, "perator")) return W_LIT(o, "\"operator\":");
        break;
    case 'p':
        if (W_IS(k + 1, "odAffinity")) return W_LIT(o, "\"podAffinity\":");
        break;
    case 't':
        if (W_IS(k + 1, "opologyKey")) return W_LIT(o, "\"topologyKey\":");
        break;
    case 'v':
        if (W_IS(k + 1, "alue")) return W_LIT(o, "\"value\":");
        if (W_IS(k + 1, "alues")) return W_LIT(o, "\"values\":");
        break;
    }
    return w_str(b, o, k, 0, 1);
}

/* Numbers go through put_number, which appends through b->len. */
static __attribute__((noinline)) char *w_number(gpa_rbuf *b, char *o, const cJSON *v)
{
    b->len = (size_t)(o - b->data);
    put_number(b, v);
    return b->oom ? NULL : b->data + b->len;
}

/* A bare word (null, true, false; n bytes) after a ',' when comma is 1. */
static inline __attribute__((always_inline)) char *w_word(gpa_rbuf *b, char *o, size_t comma,
                                                          const char *w, size_t n)
{
    if (!(o = w_room(b, o, 1 + n))) return NULL;
    *o = ',';
    memcpy(o + comma, w, n);
    return o + comma + n;
}

/* A value of any type after a ',' when comma is 1 (mode: see w_container). */
static inline __attribute__((always_inline)) char *w_val(gpa_rbuf *b, char *o, const cJSON *v,
                                                         size_t comma, int mode)
{
    switch (v->type & 0xFF) {
    case cJSON_String:
        return w_str(b, o, v->valuestring ? v->valuestring : "", comma, 0);
    case cJSON_Array:
    case cJSON_Object:
        return w_container(b, o, v, comma, mode);
    case cJSON_NULL:
        return w_word(b, o, comma, "null", 4);
    case cJSON_False:
        return w_word(b, o, comma, "false", 5);
    case cJSON_True:
        return w_word(b, o, comma, "true", 4);
    case cJSON_Number:
        if (comma) {
            if (!(o = w_room(b, o, 1))) return NULL;
            *o++ = ',';
        }
        return w_number(b, o, v);
    default:
        /* cJSON_Raw (never produced by the engine: refused rather than emit unchecked bytes)
         * or no type at all. */
        b->len = (size_t)(o - b->data);
        gpa_rbuf_fail(b);
        return NULL;
    }
}

/* An object that starts as a JSON Patch operation does ({"op":"add","path":..,"value":..},
 * the members in the order the engine writes them): the keys and the usual op names are
 * recognized byte by byte (W_IS, cheaper than strlen and an escape scan) and written as
 * constants. Anything else falls back to the general member loop, same bytes. Returns
 * the member to continue with (NULL: all written), or o unchanged with *next = first
 * member when v is not an op. */
static inline __attribute__((always_inline)) char *w_op_head(gpa_rbuf *b, char *o, const cJSON *v,
                                                             const cJSON **next)
{
    const cJSON *c = v->child;
    *next = c;
    if (!c || !c->string || (c->type & 0xFF) != cJSON_String || !c->valuestring ||
        !W_IS(c->string, "op"))
        return o;
    /* room for '"op":"replace"' and ',"path":' */
    if (!(o = w_room(b, o, 24))) return NULL;
    const char *op = c->valuestring;
    if (W_IS(op, "add"))
        o = W_LIT(o, "\"op\":\"add\"");
    else if (op[0] == 'r' && W_IS(op + 1, "emove"))
        o = W_LIT(o, "\"op\":\"remove\"");
    else if (op[0] == 'r' && W_IS(op + 1, "eplace"))
        o = W_LIT(o, "\"op\":\"replace\"");
    else if (!(o = w_str(b, W_LIT(o, "\"op\":"), op, 0, 0)))
        return NULL;
    c = c->next;
    if (c && c->string && (c->type & 0xFF) == cJSON_String && c->valuestring &&
        W_IS(c->string, "path")) {
        if (!(o = w_room(b, o, 8)) || !(o = w_str(b, W_LIT(o, ",\"path\":"), c->valuestring, 0, 0)))
            return NULL;
        c = c->next;
        if (c && c->string && W_IS(c->string, "value")) {
            if (!(o = w_room(b, o, 9)) || !(o = w_val(b, W_LIT(o, ",\"value\":"), c, 0, 0)))
                return NULL;
            c = c->next;
        }
    }
    *next = c;
    return o;
}

/* An object or array after a ',' when comma is 1. mode 1: an array whose objects may be
 * JSON Patch operations (the top of a patch), each written with mode 2; mode 2: an object
 * that may be one (its head goes through w_op_head); 0 otherwise. */
static char *w_container(gpa_rbuf *b, char *o, const cJSON *v, size_t comma, int mode)
{
    bool obj = (v->type & 0xFF) == cJSON_Object;
    if (!(o = w_room(b, o, 2))) return NULL;
    *o = ',';
    o += comma;
    *o++ = obj ? '{' : '[';
    const cJSON *c = v->child;
    if (mode == 2 && obj && !(o = w_op_head(b, o, v, &c))) return NULL;
    for (; c; c = c->next) {
        size_t sep = c != v->child;
        if (obj) {
            if (!(o = w_key(b, o, c->string ? c->string : "", sep))) return NULL;
            sep = 0;
        }
        if (!(o = w_val(b, o, c, sep, mode == 1 ? 2 : 0))) return NULL;
    }
    if (!(o = w_room(b, o, 1))) return NULL;
    *o++ = obj ? '}' : ']';
    return o;
}

void gpa_rbuf_json_value(gpa_rbuf *b, const cJSON *v)
{
    if (b->oom) return;
    char *o = w_val(b, b->data + b->len, v, 0, 1);
    if (o) b->len = (size_t)(o - b->data);
}
