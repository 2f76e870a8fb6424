/*
 * tls_store.c - the current serving credentials and the per-handshake callback (see
 * tls_store.h).
 *
 * Must never: block in the callback (it runs inside every handshake on the worker threads:
 * one atomic load), or free credentials that were current less than min_age seconds ago.
 */
#include "tls_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAIN 16

typedef struct creds {
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned n_pcerts;
    gnutls_privkey_t key;
    char fingerprint[65];
    char *cert_pem, *key_pem; /* copies, to tell "same files" from "rotated" */
    size_t cert_len, key_len;
    time_t retired_at;
    struct creds *next_retired;
} creds;

static _Atomic(creds *) current;
/* Retired list: only touched by install/collect/shutdown, which the main loop serializes;
 * the mutex makes that explicit rather than assumed. */
static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static creds *retired;

static void creds_free(creds *c)
{
    if (!c) return;
    for (unsigned i = 0; i < c->n_pcerts; i++)
        gnutls_pcert_deinit(&c->pcerts[i]);
    if (c->key) gnutls_privkey_deinit(c->key);
    if (c->key_pem) {
        /* The key should not linger in freed heap memory. */
        memset(c->key_pem, 0, c->key_len);
        free(c->key_pem);
    }
    free(c->cert_pem);
    free(c);
}

static char *dup_bytes(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

int gpa_tls_store_install(const gpa_tls_pair *pair, time_t now, gpa_error *err)
{
    creds *c = calloc(1, sizeof *c);
    if (!c) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    c->cert_pem = dup_bytes(pair->cert_pem, pair->cert_len);
    c->key_pem = dup_bytes(pair->key_pem, pair->key_len);
    if (!c->cert_pem || !c->key_pem) {
        creds_free(c);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    c->cert_len = pair->cert_len;
    c->key_len = pair->key_len;
    memcpy(c->fingerprint, pair->fingerprint, sizeof c->fingerprint);

    gnutls_datum_t cert = {(unsigned char *)c->cert_pem, (unsigned)c->cert_len};
    unsigned n = MAX_CHAIN;
    int rc = gnutls_pcert_list_import_x509_raw(c->pcerts, &n, &cert, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        creds_free(c);
        return gpa_fail(err, GPA_EINVAL, "GnuTLS cannot use the certificate chain: %s",
                        gnutls_strerror(rc));
    }
    c->n_pcerts = n;
    gnutls_datum_t key = {(unsigned char *)c->key_pem, (unsigned)c->key_len};
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        creds_free(c);
        return gpa_fail(err, GPA_EINVAL, "GnuTLS cannot use the private key: %s",
                        gnutls_strerror(rc));
    }

    creds *old = atomic_exchange(&current, c);
    if (old) {
        pthread_mutex_lock(&retired_lock);
        old->retired_at = now;
        old->next_retired = retired;
        retired = old;
        pthread_mutex_unlock(&retired_lock);
    }
    return GPA_OK;
}

bool gpa_tls_store_ready(void)
{
    return atomic_load(&current) != NULL;
}

bool gpa_tls_store_is_current(const gpa_tls_pair *pair)
{
    /* Only the main loop installs, and it is the caller, so `current` cannot be retired
     * and collected while we compare. */
    creds *c = atomic_load(&current);
    return c && c->cert_len == pair->cert_len && c->key_len == pair->key_len &&
           memcmp(c->cert_pem, pair->cert_pem, c->cert_len) == 0 &&
           memcmp(c->key_pem, pair->key_pem, c->key_len) == 0;
}

void gpa_tls_store_fingerprint(char out[65])
{
    creds *c = atomic_load(&current);
    if (c)
        memcpy(out, c->fingerprint, 65);
    else
        out[0] = '\0';
}

void gpa_tls_store_collect(time_t now, unsigned min_age)
{
    pthread_mutex_lock(&retired_lock);
    creds **pp = &retired;
    while (*pp) {
        creds *c = *pp;
        if (now - c->retired_at > (time_t)min_age) {
            *pp = c->next_retired;
            creds_free(c);
        } else {
            pp = &c->next_retired;
        }
    }
    pthread_mutex_unlock(&retired_lock);
}

void gpa_tls_store_shutdown(void)
{
    gpa_tls_store_collect(0, 0);
    pthread_mutex_lock(&retired_lock);
    while (retired) {
        creds *c = retired;
        retired = c->next_retired;
        creds_free(c);
    }
    pthread_mutex_unlock(&retired_lock);
    creds_free(atomic_exchange(&current, NULL));
}

int gpa_tls_store_cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn,
                                int nreqs, const gnutls_pk_algorithm_t *pk_algos,
                                int pk_algos_length, gnutls_pcert_st **pcert,
                                unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
    (void)session, (void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
    creds *c = atomic_load_explicit(&current, memory_order_acquire);
    if (!c) return -1;
    *pcert = c->pcerts;
    *pcert_length = c->n_pcerts;
    *privkey = c->key;
    return 0;
}
