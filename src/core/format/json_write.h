/*
 * json_write.h - the JSON writer: the growable byte buffer the AdmissionReview codec writes its
 * responses into, compact JSON (fixed key order, so the same decision always gives the same
 * bytes), and base64 in place (base64.c). Private to src/core.
 *
 * Must never: write a byte it cannot account for. An allocation failure latches `oom` and
 * every later append is a no-op, so callers check once at the end instead of after each call.
 */
#ifndef GPA_JSON_WRITE_H
#define GPA_JSON_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct gpa_rbuf {
    char *data;
    size_t len;
    size_t cap;
    bool oom;
} gpa_rbuf;

/* Starts an empty buffer with room for cap bytes (allocates lazily on failure). */
void gpa_rbuf_init(gpa_rbuf *b, size_t cap);
void gpa_rbuf_free(gpa_rbuf *b);
/* Hands the NUL-terminated bytes to the caller (NULL after an allocation failure). */
char *gpa_rbuf_take(gpa_rbuf *b, size_t *len_out);

/* The slow path of every append: room for n more bytes plus a terminator (false, and oom
 * latched, when there is none). */
bool gpa_rbuf_grow(gpa_rbuf *b, size_t n);
/* Latches an allocation failure (or a value that cannot be written): oom set, and cap drops
 * to len so that every later append's fast path refuses. */
void gpa_rbuf_fail(gpa_rbuf *b);
static inline bool gpa_rbuf_reserve(gpa_rbuf *b, size_t n)
{
    return n < b->cap - b->len || gpa_rbuf_grow(b, n);
}
/* Inline: the codec appends a dozen literals per response, and a constant n turns the memcpy
 * into a few moves. len <= cap always holds, so n < cap - len is len + n + 1 <= cap. */
static inline void gpa_rbuf_put(gpa_rbuf *b, const char *s, size_t n)
{
    if (n >= b->cap - b->len && !gpa_rbuf_grow(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}
void gpa_rbuf_puts(gpa_rbuf *b, const char *s);
/* A JSON string literal, quotes included. */
void gpa_rbuf_json_str(gpa_rbuf *b, const char *s);
/* The same after a ',' when comma, followed by a ':' when colon (one reserve for a list item
 * or an object key). */
void gpa_rbuf_json_str_sep(gpa_rbuf *b, const char *s, bool comma, bool colon);
/* Compact JSON of v: the bytes cJSON_PrintUnformatted would print, except that numbers are
 * never rounded (see put_number) and -0 prints as 0. The codec writes the patch with it
 * (cJSON's printer costs ~3x more). cJSON_Raw items are refused (oom set). */
void gpa_rbuf_json_value(gpa_rbuf *b, const cJSON *v);
/* base64.c: base64 (RFC 4648, with padding, no line breaks) of n bytes. */
void gpa_rbuf_base64(gpa_rbuf *b, const unsigned char *in, size_t n);
/* Replaces the bytes written from offset start on with their base64, in place (the codec
 * prints the patch straight into the response, then encodes it there: no second buffer). */
void gpa_rbuf_base64_tail(gpa_rbuf *b, size_t start);
/* The same with the vector paths limited (tests run each): simd 0 = the portable table only,
 * 1 = up to SSSE3, 2 = up to AVX2 (what gpa_rbuf_base64_tail uses; each only where the CPU
 * has it). */
void gpa_rbuf_base64_tail_with(gpa_rbuf *b, size_t start, int simd);

#endif
