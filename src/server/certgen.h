/*
 * certgen.h - makes the webhook's certificate material with OpenSSL: a self-signed CA and a
 * serving certificate for a Kubernetes Service signed by it, as PEM, plus an atomic 0600
 * file writer. Used by `gpu-admission certs`; never used on the request path.
 */
#ifndef GPA_CERTGEN_H
#define GPA_CERTGEN_H

#include <stddef.h>
#include <time.h>
#include "gpu_admission/common.h"

typedef enum gpa_key_type {
    GPA_KEY_ECDSA_P256 = 0, /* default: cheapest handshake (ARCHITECTURE.md, TLS) */
    GPA_KEY_RSA_2048 = 1,
} gpa_key_type;

typedef struct gpa_certgen_opts {
    const char *service;           /* Service name: DNS-1123 label */
    const char *namespace;         /* its namespace: DNS-1123 label */
    const char *const *extra_sans; /* IP literals become IP SANs, anything else a DNS SAN */
    size_t n_extra_sans;
    gpa_key_type key_type;
    time_t not_before, not_after;         /* serving certificate validity */
    time_t ca_not_before, ca_not_after;   /* CA validity (ignored when a CA is supplied) */
    const char *ca_cert_pem, *ca_key_pem; /* both NULL: make a new CA; both set: sign with it */
} gpa_certgen_opts;

typedef struct gpa_cert_bundle {
    char *ca_cert_pem; /* NUL-terminated PEM strings */
    char *ca_key_pem;
    char *cert_pem;
    char *key_pem;
    char **sans; /* the SANs put into the serving certificate, "DNS:x" / "IP:x" */
    size_t n_sans;
} gpa_cert_bundle;

/* Makes (or reuses) the CA and issues the serving certificate. GPA_EINVAL with a message for a
 * bad name/SAN/validity or an unusable supplied CA. */
int gpa_certgen_make(gpa_cert_bundle **out, const gpa_certgen_opts *opts, gpa_error *err);
void gpa_cert_bundle_free(gpa_cert_bundle *b);

/* Writes data to path via a temporary file in the same directory + fsync + rename, with the
 * given mode, so a reader (or a crash) never sees half a key. GPA_EIO on failure. */
int gpa_write_file_atomic(const char *path, const char *data, size_t len, unsigned mode,
                          gpa_error *err);

/* Base64 (standard alphabet, one line, no newline) of len bytes; NULL when out of memory. */
char *gpa_base64_encode(const void *data, size_t len);

#endif
