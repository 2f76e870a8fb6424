/*
 * tls_material.c - reads a certificate chain + private key from disk and proves, with OpenSSL's
 * libcrypto, that the pair can be served: the PEM parses, the key belongs to the leaf (first)
 * certificate, and `now` lies inside the leaf's validity. Computes the leaf's SHA-256
 * fingerprint for logs and metrics.
 *
 * Must never: return a partially checked pair, prompt for a passphrase (an encrypted key is an
 * error, not a tty read), or leave OpenSSL's thread-local error queue dirty for the next caller.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "tls_material.h"

/* Upper bound on a cert or key file: real chains are a few KiB; anything near this is not one. */
#define GPA_TLS_MAX_FILE (1024 * 1024)

static int read_all(char **out, size_t *len_out, const char *path, const char *what, gpa_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gpa_fail(err, GPA_EIO, "cannot open %s file %s: %s", what, path, strerror(errno));
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return gpa_fail(err, GPA_ENOMEM, "out of memory reading %s", path);
    }
    for (;;) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
        if (len > GPA_TLS_MAX_FILE) {
            free(buf);
            fclose(f);
            return gpa_fail(err, GPA_EINVAL, "%s file %s is larger than %d bytes", what, path,
                            GPA_TLS_MAX_FILE);
        }
        if (cap - len - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return gpa_fail(err, GPA_ENOMEM, "out of memory reading %s", path);
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        fclose(f);
        return gpa_fail(err, GPA_EIO, "cannot read %s file %s: %s", what, path, strerror(e));
    }
    fclose(f);
    buf[len] = '\0';
    *out = buf;
    *len_out = len;
    return GPA_OK;
}

/* The most specific OpenSSL reason, appended to our own message; clears the queue. */
static const char *ossl_reason(char *buf, size_t n)
{
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, n);
    else
        snprintf(buf, n, "no detail");
    ERR_clear_error();
    return buf;
}

/* Refuses to ask for a passphrase: the server runs unattended. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static int asn1_to_time_t(time_t *out, const ASN1_TIME *t)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return -1;
    *out = timegm(&tm);
    return 0;
}

static void fmt_time(char *buf, size_t n, time_t t)
{
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else
        snprintf(buf, n, "%lld", (long long)t);
}

/* Checks that parse, match and validity hold; fills the times and fingerprint of p. */
static int check_pair(gpa_tls_pair *p, const char *cert_path, const char *key_path, time_t now,
                      gpa_error *err)
{
    char why[256], a[32], b[32];
    int rc = GPA_EINVAL;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    BIO *cb = BIO_new_mem_buf(p->cert_pem, (int)p->cert_len);
    BIO *kb = BIO_new_mem_buf(p->key_pem, (int)p->key_len);
    if (!cb || !kb) {
        rc = gpa_fail(err, GPA_ENOMEM, "out of memory checking TLS material");
        goto out;
    }
    leaf = PEM_read_bio_X509(cb, NULL, no_passphrase, NULL);
    if (!leaf) {
        gpa_fail(err, GPA_EINVAL, "%s: no PEM certificate found (%s)", cert_path,
                 ossl_reason(why, sizeof why));
        goto out;
    }
    /* Every further block in the chain must parse too: a truncated intermediate would make
     * clients fail the handshake later, in a much less obvious place. */
    for (int n = 2;; n++) {
        X509 *more = PEM_read_bio_X509(cb, NULL, no_passphrase, NULL);
        if (more) {
            X509_free(more);
            continue;
        }
        unsigned long e = ERR_peek_last_error();
        if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
            ERR_clear_error(); /* plain end of file */
            break;
        }
        gpa_fail(err, GPA_EINVAL, "%s: certificate #%d of the chain does not parse (%s)", cert_path,
                 n, ossl_reason(why, sizeof why));
        goto out;
    }
    key = PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL);
    if (!key) {
        int encrypted = strstr(p->key_pem, "ENCRYPTED") != NULL;
        gpa_fail(err, GPA_EINVAL, "%s: %s (%s)", key_path,
                 encrypted ? "the private key is encrypted; a passphrase-less key is required"
                           : "no PEM private key found",
                 ossl_reason(why, sizeof why));
        goto out;
    }
    if (X509_check_private_key(leaf, key) != 1) {
        ERR_clear_error();
        gpa_fail(err, GPA_EINVAL,
                 "private key %s does not match the certificate %s (the first certificate "
                 "in the file must be the one the key belongs to)",
                 key_path, cert_path);
        goto out;
    }
    if (asn1_to_time_t(&p->not_before, X509_get0_notBefore(leaf)) != 0 ||
        asn1_to_time_t(&p->not_after, X509_get0_notAfter(leaf)) != 0) {
        ERR_clear_error();
        gpa_fail(err, GPA_EINVAL, "%s: certificate validity dates do not parse", cert_path);
        goto out;
    }
    if (now < p->not_before) {
        fmt_time(a, sizeof a, p->not_before);
        fmt_time(b, sizeof b, now);
        gpa_fail(err, GPA_EINVAL, "%s: certificate is not valid yet (notBefore %s, now %s)",
                 cert_path, a, b);
        goto out;
    }
    if (now > p->not_after) {
        fmt_time(a, sizeof a, p->not_after);
        fmt_time(b, sizeof b, now);
        gpa_fail(err, GPA_EINVAL, "%s: certificate has expired (notAfter %s, now %s)", cert_path, a,
                 b);
        goto out;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (X509_digest(leaf, EVP_sha256(), md, &mdlen) != 1 || mdlen != 32) {
        gpa_fail(err, GPA_EINVAL, "%s: cannot compute the SHA-256 fingerprint (%s)", cert_path,
                 ossl_reason(why, sizeof why));
        goto out;
    }
    for (unsigned i = 0; i < mdlen; i++)
        snprintf(p->fingerprint + 2 * i, 3, "%02x", md[i]);
    rc = GPA_OK;
out:
    X509_free(leaf);
    EVP_PKEY_free(key);
    BIO_free(cb);
    BIO_free(kb);
    ERR_clear_error();
    return rc;
}

int gpa_tls_pair_load(gpa_tls_pair **out, const char *cert_path, const char *key_path, time_t now,
                      gpa_error *err)
{
    if (!out) return gpa_fail(err, GPA_EINVAL, "gpa_tls_pair_load: out is NULL");
    *out = NULL;
    if (!cert_path || !key_path)
        return gpa_fail(err, GPA_EINVAL, "TLS certificate and key paths are both required");
    gpa_tls_pair *p = calloc(1, sizeof *p);
    if (!p) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    int rc = read_all(&p->cert_pem, &p->cert_len, cert_path, "certificate", err);
    if (rc == GPA_OK) rc = read_all(&p->key_pem, &p->key_len, key_path, "private key", err);
    if (rc == GPA_OK && p->cert_len == 0)
        rc = gpa_fail(err, GPA_EINVAL, "certificate file %s is empty", cert_path);
    if (rc == GPA_OK && p->key_len == 0)
        rc = gpa_fail(err, GPA_EINVAL, "private key file %s is empty", key_path);
    if (rc == GPA_OK) rc = check_pair(p, cert_path, key_path, now, err);
    if (rc != GPA_OK) {
        gpa_tls_pair_free(p);
        return rc;
    }
    *out = p;
    return GPA_OK;
}

void gpa_tls_pair_free(gpa_tls_pair *p)
{
    if (!p) return;
    if (p->key_pem) {
        /* The key must not linger in freed heap memory. */
        OPENSSL_cleanse(p->key_pem, p->key_len);
        free(p->key_pem);
    }
    free(p->cert_pem);
    free(p);
}
