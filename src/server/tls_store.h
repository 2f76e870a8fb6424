/*
 * tls_store.h - the certificate the TLS listener serves, picked per handshake.
 *
 * libmicrohttpd calls gpa_tls_store_cert_callback (its MHD_OPTION_HTTPS_CERT_CALLBACK) for
 * every full handshake; it returns whatever pair was installed last. Installing a new pair
 * swaps one atomic pointer, so handshakes already past the callback finish with the pair
 * they got and the next ones get the new pair: rotation without restart or failed requests.
 *
 * Must never: free a credential a handshake may still be using (replaced pairs are retired
 * and only freed by gpa_tls_store_collect after a delay longer than any handshake can take),
 * or install a pair that was not checked by gpa_tls_pair_load.
 */
#ifndef GPA_TLS_STORE_H
#define GPA_TLS_STORE_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <time.h>

#include "gpu_admission/common.h"
#include "tls_material.h"

/* Builds GnuTLS credentials from a checked pair and makes them current. The pair itself is
 * not kept (the caller frees it). GPA_EINVAL when GnuTLS cannot use the material. */
int gpa_tls_store_install(const gpa_tls_pair *pair, time_t now, gpa_error *err);

bool gpa_tls_store_ready(void);
/* True when pair holds exactly the bytes being served (nothing to rotate). */
bool gpa_tls_store_is_current(const gpa_tls_pair *pair);
/* SHA-256 of the leaf being served ("" before the first install). */
void gpa_tls_store_fingerprint(char out[65]);

/* Frees retired credentials replaced more than min_age seconds ago. */
void gpa_tls_store_collect(time_t now, unsigned min_age);
/* Frees everything; only once no listener can call the callback any more. */
void gpa_tls_store_shutdown(void);

int gpa_tls_store_cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn,
                                int nreqs, const gnutls_pk_algorithm_t *pk_algos,
                                int pk_algos_length, gnutls_pcert_st **pcert,
                                unsigned int *pcert_length, gnutls_privkey_t *privkey);

#endif
