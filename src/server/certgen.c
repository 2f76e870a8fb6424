/*
 * certgen.c - makes a CA and a serving certificate for the webhook's Service with OpenSSL 3.0
 * EVP/X509 APIs (no deprecated calls), and writes key material atomically with mode 0600.
 *
 * Must never: put a user-supplied string into an OpenSSL config-string parser (SANs are built
 * as GENERAL_NAME structures, so a comma in --san cannot inject another name), issue a
 * certificate that outlives the CA that signs it, or leave a key file readable by others even
 * for a moment (the temp file is created 0600 by mkstemp).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certgen.h"

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

/* RFC 1123 label as Kubernetes uses it for Service and namespace names. */
static int is_dns1123_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i + 1 < n)) return 0;
    }
    return 1;
}

/* A DNS name for a SAN: dot-separated labels of letters, digits and inner hyphens; a single
 * leading "*." wildcard is allowed. */
static int is_dns_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253) return 0;
    if (strncmp(s, "*.", 2) == 0) {
        s += 2;
        n -= 2;
        if (n == 0) return 0;
    }
    size_t lab = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (lab == 0 || lab > 63 || s[i - 1] == '-') return 0;
            lab = 0;
            continue;
        }
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && lab > 0)) return 0;
        lab++;
    }
    return 1;
}

static int is_ip_literal(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static char *bio_to_string(BIO *b)
{
    char *data = NULL;
    long n = BIO_get_mem_data(b, &data);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    return s;
}

static char *cert_to_pem(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *s = NULL;
    if (b && PEM_write_bio_X509(b, x) == 1) s = bio_to_string(b);
    BIO_free(b);
    return s;
}

static char *key_to_pem(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *s = NULL;
    if (b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) == 1) s = bio_to_string(b);
    if (b) {
        /* Scrub the key bytes from the memory BIO before it is freed. */
        char *data = NULL;
        long n = BIO_get_mem_data(b, &data);
        if (n > 0 && data) OPENSSL_cleanse(data, (size_t)n);
        BIO_free(b);
    }
    return s;
}

static EVP_PKEY *gen_key(gpa_key_type t)
{
    if (t == GPA_KEY_RSA_2048) return EVP_RSA_gen(2048);
    return EVP_EC_gen("P-256");
}

/* 128 random bits; BN_to_ASN1_INTEGER keeps it positive (adds a 0 octet when needed). */
static int set_random_serial(X509 *x)
{
    unsigned char raw[16];
    BIGNUM *bn = NULL;
    int ok = 0;
    do {
        if (RAND_bytes(raw, sizeof raw) != 1) return 0;
        BN_free(bn);
        bn = BN_bin2bn(raw, sizeof raw, NULL);
    } while (bn && BN_is_zero(bn));
    if (bn) {
        ASN1_INTEGER *ai = BN_to_ASN1_INTEGER(bn, NULL);
        ok = ai && X509_set_serialNumber(x, ai) == 1;
        ASN1_INTEGER_free(ai);
    }
    BN_free(bn);
    return ok;
}

/* value comes only from constants in this file, never from the user. */
static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
    if (!ext) return 0;
    int ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

static int set_name_cn(X509 *x, const char *cn)
{
    X509_NAME *name = X509_get_subject_name(x);
    return X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                      (const unsigned char *)"gpu-admission", -1, -1, 0) == 1 &&
           X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                      0) == 1;
}

static int set_validity(X509 *x, time_t nb, time_t na)
{
    return ASN1_TIME_set(X509_getm_notBefore(x), nb) != NULL &&
           ASN1_TIME_set(X509_getm_notAfter(x), na) != NULL;
}

static int make_ca(X509 **ca_out, EVP_PKEY **key_out, const gpa_certgen_opts *o, gpa_error *err)
{
    char why[256];
    EVP_PKEY *key = gen_key(o->key_type);
    X509 *ca = X509_new();
    if (!key || !ca || X509_set_version(ca, 2) != 1 || !set_random_serial(ca) ||
        !set_validity(ca, o->ca_not_before, o->ca_not_after) ||
        !set_name_cn(ca, "gpu-admission webhook CA") ||
        X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1 || X509_set_pubkey(ca, key) != 1 ||
        !add_ext(ca, ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_ext(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_ext(ca, ca, NID_subject_key_identifier, "hash") ||
        X509_sign(ca, key, EVP_sha256()) <= 0) {
        X509_free(ca);
        EVP_PKEY_free(key);
        return gpa_fail(err, GPA_EINVAL, "cannot make the CA certificate (%s)",
                        ossl_reason(why, sizeof why));
    }
    *ca_out = ca;
    *key_out = key;
    return GPA_OK;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

static int load_ca(X509 **ca_out, EVP_PKEY **key_out, const gpa_certgen_opts *o, gpa_error *err)
{
    char why[256];
    BIO *cb = BIO_new_mem_buf(o->ca_cert_pem, -1);
    BIO *kb = BIO_new_mem_buf(o->ca_key_pem, -1);
    X509 *ca = cb ? PEM_read_bio_X509(cb, NULL, no_passphrase, NULL) : NULL;
    EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, no_passphrase, NULL) : NULL;
    BIO_free(cb);
    BIO_free(kb);
    int rc = GPA_OK;
    if (!ca)
        rc = gpa_fail(err, GPA_EINVAL, "the existing CA certificate does not parse (%s)",
                      ossl_reason(why, sizeof why));
    else if (!key)
        rc = gpa_fail(err, GPA_EINVAL, "the existing CA key does not parse (%s)",
                      ossl_reason(why, sizeof why));
    else if (X509_check_private_key(ca, key) != 1)
        rc = gpa_fail(err, GPA_EINVAL, "the existing CA key does not match the CA certificate");
    else if (X509_check_ca(ca) < 1)
        rc = gpa_fail(err, GPA_EINVAL, "the existing CA certificate is not a CA");
    else if (ASN1_TIME_cmp_time_t(X509_get0_notAfter(ca), o->not_after) < 0)
        rc = gpa_fail(err, GPA_EINVAL,
                      "the existing CA expires before the requested certificate would; "
                      "issue for fewer days or make a new CA (--new-ca)");
    else if (ASN1_TIME_cmp_time_t(X509_get0_notBefore(ca), o->not_before) > 0)
        rc = gpa_fail(err, GPA_EINVAL,
                      "the existing CA is not valid yet at the requested certificate's start");
    ERR_clear_error();
    if (rc != GPA_OK) {
        X509_free(ca);
        EVP_PKEY_free(key);
        return rc;
    }
    *ca_out = ca;
    *key_out = key;
    return GPA_OK;
}

static int add_san(gpa_cert_bundle *b, GENERAL_NAMES *gens, const char *s, gpa_error *err)
{
    int ip = is_ip_literal(s);
    if (!ip && !is_dns_name(s))
        return gpa_fail(err, GPA_EINVAL, "SAN '%s' is neither an IP address nor a valid DNS name",
                        s);
    char tagged[300];
    snprintf(tagged, sizeof tagged, "%s:%s", ip ? "IP" : "DNS", s);
    for (size_t i = 0; i < b->n_sans; i++)
        if (strcasecmp(b->sans[i], tagged) == 0) return GPA_OK; /* duplicates add nothing */
    GENERAL_NAME *gn = GENERAL_NAME_new();
    if (!gn) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    if (ip) {
        ASN1_OCTET_STRING *os = a2i_IPADDRESS(s);
        if (!os) {
            GENERAL_NAME_free(gn);
            return gpa_fail(err, GPA_EINVAL, "SAN '%s': not an IP address OpenSSL accepts", s);
        }
        GENERAL_NAME_set0_value(gn, GEN_IPADD, os);
    } else {
        ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();
        if (!ia5 || ASN1_STRING_set(ia5, s, (int)strlen(s)) != 1) {
            ASN1_IA5STRING_free(ia5);
            GENERAL_NAME_free(gn);
            return gpa_fail(err, GPA_ENOMEM, "out of memory");
        }
        GENERAL_NAME_set0_value(gn, GEN_DNS, ia5);
    }
    char **ns = realloc(b->sans, (b->n_sans + 1) * sizeof *ns);
    char *copy = strdup(tagged);
    if (!ns || !copy || sk_GENERAL_NAME_push(gens, gn) <= 0) {
        if (ns) b->sans = ns;
        free(copy);
        GENERAL_NAME_free(gn);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    b->sans = ns;
    b->sans[b->n_sans++] = copy;
    return GPA_OK;
}

static int make_serving(gpa_cert_bundle *b, X509 *ca, EVP_PKEY *ca_key, const gpa_certgen_opts *o,
                        gpa_error *err)
{
    char why[256], name[300];
    int rc = GPA_OK;
    EVP_PKEY *key = gen_key(o->key_type);
    X509 *x = X509_new();
    GENERAL_NAMES *gens = GENERAL_NAMES_new();
    if (!key || !x || !gens) {
        rc = gpa_fail(err, GPA_EINVAL, "cannot generate the serving key (%s)",
                      ossl_reason(why, sizeof why));
        goto out;
    }
    static const char *const suffixes[] = {"", ".svc", ".svc.cluster.local"};
    snprintf(name, sizeof name, "%s", o->service);
    rc = add_san(b, gens, name, err);
    for (size_t i = 0; rc == GPA_OK && i < 3; i++) {
        snprintf(name, sizeof name, "%s.%s%s", o->service, o->namespace, suffixes[i]);
        rc = add_san(b, gens, name, err);
    }
    for (size_t i = 0; rc == GPA_OK && i < o->n_extra_sans; i++)
        rc = add_san(b, gens, o->extra_sans[i], err);
    if (rc != GPA_OK) goto out;
    /* CN is capped at 64 characters; clients match on the SANs anyway. */
    snprintf(name, sizeof name, "%s.%s.svc", o->service, o->namespace);
    const char *cn = strlen(name) <= 64 ? name : o->service;
    const char *ku = o->key_type == GPA_KEY_RSA_2048 ? "critical,digitalSignature,keyEncipherment"
                                                     : "critical,digitalSignature";
    if (X509_set_version(x, 2) != 1 || !set_random_serial(x) ||
        !set_validity(x, o->not_before, o->not_after) || !set_name_cn(x, cn) ||
        X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 || X509_set_pubkey(x, key) != 1 ||
        !add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, ca, NID_key_usage, ku) || !add_ext(x, ca, NID_ext_key_usage, "serverAuth") ||
        !add_ext(x, ca, NID_subject_key_identifier, "hash") ||
        !add_ext(x, ca, NID_authority_key_identifier, "keyid") ||
        X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1 ||
        X509_sign(x, ca_key, EVP_sha256()) <= 0) {
        rc = gpa_fail(err, GPA_EINVAL, "cannot make the serving certificate (%s)",
                      ossl_reason(why, sizeof why));
        goto out;
    }
    b->cert_pem = cert_to_pem(x);
    b->key_pem = key_to_pem(key);
    if (!b->cert_pem || !b->key_pem)
        rc = gpa_fail(err, GPA_ENOMEM, "cannot encode the serving certificate as PEM");
out:
    GENERAL_NAMES_free(gens);
    X509_free(x);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return rc;
}

int gpa_certgen_make(gpa_cert_bundle **out, const gpa_certgen_opts *o, gpa_error *err)
{
    if (!out || !o) return gpa_fail(err, GPA_EINVAL, "gpa_certgen_make: NULL argument");
    *out = NULL;
    if (!o->service || !is_dns1123_label(o->service))
        return gpa_fail(err, GPA_EINVAL,
                        "service name '%s' is not a DNS-1123 label (lowercase letters, digits, "
                        "'-', at most 63 characters)",
                        o->service ? o->service : "");
    if (!o->namespace || !is_dns1123_label(o->namespace))
        return gpa_fail(err, GPA_EINVAL,
                        "namespace '%s' is not a DNS-1123 label (lowercase letters, digits, "
                        "'-', at most 63 characters)",
                        o->namespace ? o->namespace : "");
    if (o->key_type != GPA_KEY_ECDSA_P256 && o->key_type != GPA_KEY_RSA_2048)
        return gpa_fail(err, GPA_EINVAL, "unknown key type %d", (int)o->key_type);
    if (o->not_after <= o->not_before)
        return gpa_fail(err, GPA_EINVAL, "certificate notAfter must be after notBefore");
    if ((o->ca_cert_pem == NULL) != (o->ca_key_pem == NULL))
        return gpa_fail(err, GPA_EINVAL, "an existing CA needs both its certificate and key");
    if (!o->ca_cert_pem && (o->ca_not_after <= o->ca_not_before || o->ca_not_after < o->not_after ||
                            o->ca_not_before > o->not_before))
        return gpa_fail(err, GPA_EINVAL,
                        "the CA validity must cover the serving certificate's validity");

    gpa_cert_bundle *b = calloc(1, sizeof *b);
    if (!b) return gpa_fail(err, GPA_ENOMEM, "out of memory");
    X509 *ca = NULL;
    EVP_PKEY *ca_key = NULL;
    int rc = o->ca_cert_pem ? load_ca(&ca, &ca_key, o, err) : make_ca(&ca, &ca_key, o, err);
    if (rc == GPA_OK) {
        b->ca_cert_pem = cert_to_pem(ca);
        b->ca_key_pem = key_to_pem(ca_key);
        if (!b->ca_cert_pem || !b->ca_key_pem)
            rc = gpa_fail(err, GPA_ENOMEM, "cannot encode the CA as PEM");
    }
    if (rc == GPA_OK) rc = make_serving(b, ca, ca_key, o, err);
    X509_free(ca);
    EVP_PKEY_free(ca_key);
    ERR_clear_error();
    if (rc != GPA_OK) {
        gpa_cert_bundle_free(b);
        return rc;
    }
    *out = b;
    return GPA_OK;
}

static void free_secret(char *s)
{
    if (s) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

void gpa_cert_bundle_free(gpa_cert_bundle *b)
{
    if (!b) return;
    free(b->ca_cert_pem);
    free(b->cert_pem);
    free_secret(b->ca_key_pem);
    free_secret(b->key_pem);
    for (size_t i = 0; i < b->n_sans; i++)
        free(b->sans[i]);
    free(b->sans);
    free(b);
}

int gpa_write_file_atomic(const char *path, const char *data, size_t len, unsigned mode,
                          gpa_error *err)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    char *dircopy = strdup(path);
    if (!tmp || !dircopy) {
        free(tmp);
        free(dircopy);
        return gpa_fail(err, GPA_ENOMEM, "out of memory");
    }
    snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp); /* created 0600: a key is never visible to others */
    int rc = GPA_OK;
    if (fd < 0) {
        rc = gpa_fail(err, GPA_EIO, "cannot create a temporary file next to %s: %s", path,
                      strerror(errno));
        goto out;
    }
    if (fchmod(fd, (mode_t)mode) != 0) {
        rc = gpa_fail(err, GPA_EIO, "cannot set the mode of %s: %s", tmp, strerror(errno));
        goto fail;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = gpa_fail(err, GPA_EIO, "cannot write %s: %s", tmp, strerror(errno));
            goto fail;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0) {
        rc = gpa_fail(err, GPA_EIO, "cannot flush %s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = gpa_fail(err, GPA_EIO, "cannot close %s: %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        rc = gpa_fail(err, GPA_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto fail;
    }
    /* Make the rename itself durable. */
    int dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    goto out;
fail:
    if (fd >= 0) close(fd);
    unlink(tmp);
out:
    free(tmp);
    free(dircopy);
    return rc;
}

char *gpa_base64_encode(const void *data, size_t len)
{
    if (len > (size_t)INT32_MAX / 2) return NULL;
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (!out) return NULL;
    int n = EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    out[n] = '\0';
    return out;
}
