/*
 * review_buf.c - growable output buffer for the AdmissionReview codec: raw bytes, JSON string
 * literals and base64 (OpenSSL's EVP_EncodeBlock: a single line, padded, as Kubernetes'
 * []byte JSON encoding expects).
 *
 * Must never: emit invalid JSON for any input string (every byte < 0x20, '"' and '\\' is
 * escaped), or keep writing after an allocation failure.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

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
static bool reserve(gpa_rbuf *b, size_t n)
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

void gpa_rbuf_json_str(gpa_rbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(s);
    /* Worst case every byte becomes \u00XX. */
    if (!reserve(b, n * 6 + 2)) return;
    char *o = b->data + b->len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
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
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
}

void gpa_rbuf_base64(gpa_rbuf *b, const unsigned char *in, size_t n)
{
    /* EVP_EncodeBlock takes an int length; responses are far below that, refuse otherwise. */
    if (n > (size_t)1 << 28) {
        b->oom = true;
        return;
    }
    size_t out = 4 * ((n + 2) / 3);
    if (!reserve(b, out + 1)) return;
    int w = EVP_EncodeBlock((unsigned char *)b->data + b->len, in, (int)n);
    b->len += (size_t)w;
}
