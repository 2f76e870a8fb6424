/*
 * base64.c - base64 (RFC 4648, padded, one line, as Kubernetes' []byte JSON encoding expects)
 * written into a JSON writer buffer (json_write.h), in place after the bytes to encode: the
 * codec prints the patch straight into the response and encodes it there. Portable table
 * path plus SSSE3/AVX2 paths chosen at run time.
 *
 * Must never: write past the buffer's reservation, or keep writing after an allocation failure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "format/json_write.h"

/* The base64 digit of a sextet, as an integer constant expression (the table below is
 * built by the compiler, not at run time: src/core has no mutable globals). */
#define B64_DIGIT(x)                                                                               \
    ((x) < 26    ? 'A' + (x)                                                                       \
     : (x) < 52  ? 'a' + (x)-26                                                                    \
     : (x) < 62  ? '0' + (x)-52                                                                    \
     : (x) == 62 ? '+'                                                                             \
                 : '/')
#define B64_PAIR(h, l)                                                                             \
    {                                                                                              \
        B64_DIGIT(h), B64_DIGIT(l)                                                                 \
    }
#define B64_ROW8(h, l)                                                                             \
    B64_PAIR(h, l), B64_PAIR(h, l + 1), B64_PAIR(h, l + 2), B64_PAIR(h, l + 3),                    \
        B64_PAIR(h, l + 4), B64_PAIR(h, l + 5), B64_PAIR(h, l + 6), B64_PAIR(h, l + 7)
#define B64_ROW(h)                                                                                 \
    B64_ROW8(h, 0), B64_ROW8(h, 8), B64_ROW8(h, 16), B64_ROW8(h, 24), B64_ROW8(h, 32),             \
        B64_ROW8(h, 40), B64_ROW8(h, 48), B64_ROW8(h, 56)
#define B64_ROWS8(h)                                                                               \
    B64_ROW(h), B64_ROW(h + 1), B64_ROW(h + 2), B64_ROW(h + 3), B64_ROW(h + 4), B64_ROW(h + 5),    \
        B64_ROW(h + 6), B64_ROW(h + 7)

/* The two digits of every 12-bit value: one lookup per 12 bits instead of one per 6. */
static const char b64_pairs[4096][2] = {B64_ROWS8(0),  B64_ROWS8(8),  B64_ROWS8(16), B64_ROWS8(24),
                                        B64_ROWS8(32), B64_ROWS8(40), B64_ROWS8(48), B64_ROWS8(56)};

/* The 4 digits of the 3-byte group v (24 bits) at o. */
static inline void b64_group(char *o, uint32_t v)
{
    memcpy(o, b64_pairs[v >> 12], 2);
    memcpy(o + 2, b64_pairs[v & 0xFFF], 2);
}

/* Groups [g0, g1) of the 3-byte groups at s, encoded in place into 4 digits each, last
 * first: group g is read from 3g and written to 4g >= 3g, so a write only ever lands on
 * bytes of its own group or of groups already done. Two groups per step from one 8-byte
 * big-endian load (its 2 bytes past the pair are read, never used: the caller keeps them
 * inside the buffer). */
static void b64_groups(unsigned char *s, size_t g0, size_t g1)
{
    size_t g = g1;
    while (g - g0 >= 2) {
        g -= 2;
        uint64_t v;
        memcpy(&v, s + 3 * g, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        char *o = (char *)s + 4 * g;
        memcpy(o, b64_pairs[v >> 52], 2);
        memcpy(o + 2, b64_pairs[(v >> 40) & 0xFFF], 2);
        memcpy(o + 4, b64_pairs[(v >> 28) & 0xFFF], 2);
        memcpy(o + 6, b64_pairs[(v >> 16) & 0xFFF], 2);
    }
    if (g > g0) {
        g--;
        const unsigned char *i = s + 3 * g;
        b64_group((char *)s + 4 * g, (uint32_t)i[0] << 16 | (uint32_t)i[1] << 8 | i[2]);
    }
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define B64_SSSE3 1
/* Quads [q0, q1) of 12 bytes -> 16 digits each, in place and last first like b64_groups (a
 * quad is read from 12k, written to 16k; its 16-byte load reads 4 bytes past it, unused).
 * The byte shuffle puts each group's bytes as b1 b0 b2 b1 in a 32-bit lane, where two
 * 16-bit multiplies shift its four 6-bit fields into four bytes; a second shuffle looks up
 * the offset from each field's range (A-Z, a-z, 0-9, '+', '/') to its ASCII digit. ~1.2
 * instructions per input byte against ~3 for the table. */
__attribute__((target("ssse3"))) static void b64_quads_ssse3(unsigned char *s, size_t q0, size_t q1)
{
    size_t q = q1;
    const __m128i spread = _mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);
    const __m128i hi_mask = _mm_set1_epi32(0x0fc0fc00), hi_mul = _mm_set1_epi32(0x04000040);
    const __m128i lo_mask = _mm_set1_epi32(0x003f03f0), lo_mul = _mm_set1_epi32(0x01000010);
    /* offset by range: 0 -> a-z (26..51), 1..10 -> 0-9, 11 -> '+', 12 -> '/', 13 -> A-Z */
    const __m128i offsets =
        _mm_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
    const __m128i c51 = _mm_set1_epi8(51), c26 = _mm_set1_epi8(26), c13 = _mm_set1_epi8(13);
    while (q-- > q0) {
        __m128i in = _mm_loadu_si128((const __m128i *)(const void *)(s + 12 * q));
        in = _mm_shuffle_epi8(in, spread);
        __m128i hi = _mm_mulhi_epu16(_mm_and_si128(in, hi_mask), hi_mul);
        __m128i lo = _mm_mullo_epi16(_mm_and_si128(in, lo_mask), lo_mul);
        __m128i idx = _mm_or_si128(hi, lo);
        __m128i range =
            _mm_or_si128(_mm_subs_epu8(idx, c51), _mm_and_si128(_mm_cmpgt_epi8(c26, idx), c13));
        __m128i out = _mm_add_epi8(idx, _mm_shuffle_epi8(offsets, range));
        _mm_storeu_si128((__m128i *)(void *)(s + 16 * q), out);
    }
}

/* The same two quads (24 bytes -> 32 digits) at a time: blocks [j0, j1), j0 >= 1, last first.
 * Block j is loaded from 24j - 4 so that each 128-bit lane holds its 12 bytes (lane 0 at
 * offset 4, lane 1 at offset 0: the shuffle works within lanes); the 4 bytes before it
 * belong to block j - 1, not yet encoded, and are not used. */
__attribute__((target("avx2"))) static void b64_blocks_avx2(unsigned char *s, size_t j0, size_t j1)
{
    const __m256i spread =
        _mm256_setr_epi8(5, 4, 6, 5, 8, 7, 9, 8, 11, 10, 12, 11, 14, 13, 15, 14, /* lane 0 */
                         1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10);     /* lane 1 */
    const __m256i hi_mask = _mm256_set1_epi32(0x0fc0fc00), hi_mul = _mm256_set1_epi32(0x04000040);
    const __m256i lo_mask = _mm256_set1_epi32(0x003f03f0), lo_mul = _mm256_set1_epi32(0x01000010);
    const __m256i offsets =
        _mm256_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0, 71, -4, -4,
                         -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0);
    const __m256i c51 = _mm256_set1_epi8(51), c26 = _mm256_set1_epi8(26);
    const __m256i c13 = _mm256_set1_epi8(13);
    size_t j = j1;
    while (j-- > j0) {
        __m256i in = _mm256_loadu_si256((const __m256i *)(const void *)(s + 24 * j - 4));
        in = _mm256_shuffle_epi8(in, spread);
        __m256i hi = _mm256_mulhi_epu16(_mm256_and_si256(in, hi_mask), hi_mul);
        __m256i lo = _mm256_mullo_epi16(_mm256_and_si256(in, lo_mask), lo_mul);
        __m256i idx = _mm256_or_si256(hi, lo);
        __m256i range = _mm256_or_si256(_mm256_subs_epu8(idx, c51),
                                        _mm256_and_si256(_mm256_cmpgt_epi8(c26, idx), c13));
        __m256i out = _mm256_add_epi8(idx, _mm256_shuffle_epi8(offsets, range));
        _mm256_storeu_si256((__m256i *)(void *)(s + 32 * j), out);
    }
}
#endif

void gpa_rbuf_base64_tail_with(gpa_rbuf *b, size_t start, int simd)
{
    /* RFC 4648 with padding, one line: what Go's encoding/json produces and expects for the
     * []byte AdmissionResponse.patch. */
    if (b->oom || start > b->len) return;
    size_t n = b->len - start;
    if (n > ((size_t)-1) / 2) {
        gpa_rbuf_fail(b);
        return;
    }
    size_t out_n = 4 * ((n + 2) / 3);
    /* Room for the digits, the terminator, and the wide loads' 4 unused bytes. */
    if (!gpa_rbuf_reserve(b, out_n - n + 4)) return;
    unsigned char *s = (unsigned char *)b->data + start;
    size_t groups = n / 3, q = 0;
    if (n % 3) {
        /* The partial group is the last: done first, its bytes read before any write. */
        const unsigned char *i = s + 3 * groups;
        bool two = n % 3 == 2;
        uint32_t v = (uint32_t)i[0] << 16 | (two ? (uint32_t)i[1] << 8 : 0);
        char *o = (char *)s + 4 * groups;
        o[0] = b64_pairs[v >> 12][0];
        o[1] = b64_pairs[v >> 12][1];
        o[2] = two ? b64_pairs[v & 0xFFF][0] : '=';
        o[3] = '=';
    }
    bool avx2 = false;
#if defined(B64_SSSE3)
    if (simd >= 1 && __builtin_cpu_supports("ssse3")) q = groups / 4;
    avx2 = simd >= 2 && q >= 4 && __builtin_cpu_supports("avx2");
#else
    (void)simd;
#endif
    /* Last first: the groups past the last whole quad, an odd quad, the AVX2 blocks down to
     * block 1, then quads 1 and 0 (block 0 would load 4 bytes before s). */
    b64_groups(s, 4 * q, groups);
#if defined(B64_SSSE3)
    if (avx2) {
        size_t top = q & ~(size_t)1;
        if (q != top) b64_quads_ssse3(s, top, q);
        b64_blocks_avx2(s, 1, top / 2);
        b64_quads_ssse3(s, 0, 2);
    } else if (q) {
        b64_quads_ssse3(s, 0, q);
    }
#else
    (void)avx2;
#endif
    b->len = start + out_n;
}

void gpa_rbuf_base64_tail(gpa_rbuf *b, size_t start)
{
    gpa_rbuf_base64_tail_with(b, start, 2);
}

void gpa_rbuf_base64(gpa_rbuf *b, const unsigned char *in, size_t n)
{
    size_t start = b->len;
    gpa_rbuf_put(b, (const char *)in, n);
    gpa_rbuf_base64_tail(b, start);
}
