/*
 * tls_material.h - a serving certificate + key pair read from disk and checked with OpenSSL
 * before anything serves it: the key must match the certificate and now must be inside its
 * validity. A pair that fails any check is never returned, so a broken rotation can only
 * ever produce a log line, never a broken listener.
 */
#ifndef GPA_TLS_MATERIAL_H
#define GPA_TLS_MATERIAL_H

#include <time.h>
#include "gpu_admission/common.h"

typedef struct gpa_tls_pair {
    char *cert_pem; /* the whole chain file as read, NUL-terminated */
    size_t cert_len;
    char *key_pem; /* NUL-terminated */
    size_t key_len;
    time_t not_before;
    time_t not_after;
    char fingerprint[65]; /* SHA-256 of the leaf DER, lowercase hex */
} gpa_tls_pair;

/* Reads and verifies; GPA_EIO when a file cannot be read, GPA_EINVAL with a message when the
 * material is unusable (bad PEM, key mismatch, not yet valid, expired). */
int gpa_tls_pair_load(gpa_tls_pair **out, const char *cert_path, const char *key_path, time_t now,
                      gpa_error *err);
void gpa_tls_pair_free(gpa_tls_pair *p);

#endif
