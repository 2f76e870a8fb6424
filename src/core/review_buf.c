/*
 * review_buf.c - growable output buffer for the AdmissionReview codec: raw bytes, JSON string
 * literals, compact JSON of a cJSON value (byte-identical to cJSON_PrintUnformatted) and
 * base64 (one line, padded, as Kubernetes' []byte JSON encoding expects).
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

#include "review_buf.h"

void gpa_rbuf_init(gpa_rbuf *b, size_t cap)
{
    b->len = 0;
    b->oom = false;
    b->cap = cap ? cap : 256;
    b->data = malloc(b->cap);
    if (!b->data) {
        b->cap = 0;
        b->oom = true;
    }
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

/* Makes room for n more bytes plus a terminator. */
static inline bool reserve(gpa_rbuf *b, size_t n)
{
    if (b->oom) return false;
    if (n > ((size_t)-1) / 4 - b->len) {
        b->oom = true;
        return false;
    }
    if (b->len + n + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void gpa_rbuf_put(gpa_rbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
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
 * plus the closing quote and the block copy's 16-byte overrun. Returns o in the possibly moved
 * buffer, NULL after an allocation failure. */
static char *room_for_escapes(gpa_rbuf *b, char *o, size_t left)
{
    size_t at = (size_t)(o - b->data);
    if (b->cap - at >= left * 6 + 1 + 16 + 1) return o;
    b->len = at;
    if (!reserve(b, left * 6 + 1 + 16)) return NULL;
    return b->data + at;
}

void gpa_rbuf_json_str(gpa_rbuf *b, const char *s)
{
    size_t n = strlen(s);
    /* Room for the string unescaped, plus the quotes; +16: the block copy below may write (not
     * keep) up to 16 bytes past the current end. An escape makes room for the worst case of
     * the rest (every byte \u00XX) when it is met: reserving that up front for every string
     * would grow the buffer for nothing. */
    if (!reserve(b, n + 2 + 16)) return;
    char *o = b->data + b->len;
    *o++ = '"';
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
#if defined(__SSE2__)
    /* 16 bytes at a time: copy the block, keep the part before the first byte needing an
     * escape. Never reads past the string (the tail goes through a local copy). */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1f);
    while (p < end) {
        size_t left = (size_t)(end - p);
        __m128i x;
        if (left >= 16) {
            x = _mm_loadu_si128((const __m128i *)(const void *)p);
        } else {
            unsigned char tmp[16] = {0};
            memcpy(tmp, p, left);
            x = _mm_loadu_si128((const __m128i *)(const void *)tmp);
        }
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                         _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x)));
        size_t take = left < 16 ? left : 16;
        if (left < 16) mask &= (1u << left) - 1;
        _mm_storeu_si128((__m128i *)(void *)o, x);
        if (!mask) {
            o += take;
            p += take;
            continue;
        }
        unsigned k = (unsigned)__builtin_ctz(mask);
        o += k;
        p += k;
        if (!(o = room_for_escapes(b, o, (size_t)(end - p)))) return;
        o = escape_byte(o, *p++);
    }
#else
    for (; p < end; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\') {
            *o++ = (char)*p;
        } else {
            if (!(o = room_for_escapes(b, o, (size_t)(end - p)))) return;
            o = escape_byte(o, *p);
        }
    }
#endif
    *o++ = '"';
    b->len = (size_t)(o - b->data);
}

void gpa_rbuf_base64(gpa_rbuf *b, const unsigned char *in, size_t n)
{
    /* RFC 4648 with padding, one line: what Go's encoding/json produces and expects for the
     * []byte AdmissionResponse.patch. (Same speed as EVP_EncodeBlock, without the int length.) */
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (n > ((size_t)-1) / 2 || !reserve(b, 4 * ((n + 2) / 3))) return;
    char *o = b->data + b->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        o[0] = tab[v >> 18];
        o[1] = tab[(v >> 12) & 63];
        o[2] = tab[(v >> 6) & 63];
        o[3] = tab[v & 63];
        o += 4;
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        o[0] = tab[v >> 18];
        o[1] = tab[(v >> 12) & 63];
        o[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        o[3] = '=';
        o += 4;
    }
    b->len = (size_t)(o - b->data);
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
        n = snprintf(tmp, sizeof tmp, "%d", v->valueint);
    } else {
        n = snprintf(tmp, sizeof tmp, "%1.15g", d);
        double back = 0;
        if (sscanf(tmp, "%lg", &back) != 1 || back != d) n = snprintf(tmp, sizeof tmp, "%1.17g", d);
    }
    if (n > 0 && (size_t)n < sizeof tmp)
        gpa_rbuf_put(b, tmp, (size_t)n);
    else
        b->oom = true;
}

static inline void put_char(gpa_rbuf *b, char c)
{
    if (reserve(b, 1)) b->data[b->len++] = c;
}

void gpa_rbuf_json_value(gpa_rbuf *b, const cJSON *v)
{
    switch (v->type & 0xFF) {
    case cJSON_NULL:
        gpa_rbuf_put(b, "null", 4);
        return;
    case cJSON_False:
        gpa_rbuf_put(b, "false", 5);
        return;
    case cJSON_True:
        gpa_rbuf_put(b, "true", 4);
        return;
    case cJSON_Number:
        put_number(b, v);
        return;
    case cJSON_String:
        gpa_rbuf_json_str(b, v->valuestring ? v->valuestring : "");
        return;
    case cJSON_Raw:
        /* never produced by the engine; refuse rather than emit unchecked bytes */
        b->oom = true;
        return;
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = (v->type & 0xFF) == cJSON_Object;
        put_char(b, obj ? '{' : '[');
        for (const cJSON *c = v->child; c; c = c->next) {
            if (obj) {
                gpa_rbuf_json_str(b, c->string ? c->string : "");
                put_char(b, ':');
            }
            gpa_rbuf_json_value(b, c);
            if (c->next) put_char(b, ',');
        }
        put_char(b, obj ? '}' : ']');
        return;
    }
    default:
        b->oom = true;
    }
}
