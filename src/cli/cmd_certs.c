/*
 * cmd_certs.c - `gpu-admission certs`: makes (or re-signs with) a CA and a serving certificate
 * for the webhook Service, writes ca.crt, ca.key, tls.crt, tls.key into --out, and prints the
 * caBundle (base64 of ca.crt) on stdout so it can be piped into a webhook configuration.
 *
 * Must never: print anything but the caBundle on stdout, write a key file with a mode other
 * than 0600, or overwrite an existing CA unless --new-ca says so (a new CA changes the
 * caBundle every webhook configuration trusts).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "gpu_admission/common.h"

#ifdef GPA_HAVE_SERVER
#include "certgen.h"
#include "tls_material.h"
#endif

#define MAX_SANS 64

typedef struct options {
    const char *service, *ns, *out, *key_type;
    const char *sans[MAX_SANS];
    size_t n_sans;
    long days, ca_days;
    bool new_ca;
} options;

static int parse_days(const char *s, const char *flag, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || end == s || v < 1 || v > 36500) {
        fprintf(stderr,
                "gpu-admission certs: %s must be a whole number of days in 1..36500, got '%s'\n",
                flag, s);
        return 1;
    }
    *out = v;
    return 0;
}

static int set_days(void *o, const char *v)
{
    return parse_days(v, "--days", &((options *)o)->days);
}

static int set_ca_days(void *o, const char *v)
{
    return parse_days(v, "--ca-days", &((options *)o)->ca_days);
}

static int add_san(void *opts, const char *v)
{
    options *o = opts;
    if (o->n_sans == MAX_SANS) {
        fprintf(stderr, "gpu-admission certs: at most %d --san flags\n", MAX_SANS);
        return 1;
    }
    o->sans[o->n_sans++] = v;
    return 0;
}

#define F(lng, kind, off, call, help)                                                              \
    {                                                                                              \
        lng, NULL, kind, off, call, help                                                           \
    }
static const gpa_cli_flag flags[] = {
    F("--service", GPA_CLI_STR, offsetof(options, service), NULL,
      "  --service NAME         Service name (DNS-1123 label), required\n"),
    F("--namespace", GPA_CLI_STR, offsetof(options, ns), NULL,
      "  --namespace NS         Service namespace (DNS-1123 label), required\n"),
    F("--out", GPA_CLI_STR, offsetof(options, out), NULL,
      "  --out DIR              output directory, created (0700) if missing, required\n"),
    F("--days", GPA_CLI_CALL, 0, set_days,
      "  --days N               serving certificate validity in days (default 365)\n"),
    F("--ca-days", GPA_CLI_CALL, 0, set_ca_days,
      "  --ca-days N            validity of a new CA in days (default 3650, at least --days)\n"),
    F("--san", GPA_CLI_CALL, 0, add_san,
      "  --san NAME             extra subject alternative name, repeatable; IP addresses\n"
      "                         become IP SANs, anything else a DNS SAN\n"),
    F("--key-type", GPA_CLI_STR, offsetof(options, key_type), NULL,
      "  --key-type ecdsa|rsa   ECDSA P-256 (default) or RSA-2048, for the serving key\n"
      "                         and the key of a new CA\n"),
    F("--new-ca", GPA_CLI_BOOL, offsetof(options, new_ca), NULL,
      "  --new-ca               make a new CA even if DIR already holds one\n"),
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help             show this help\n"},
};
#undef F

static const gpa_cli_spec cli_spec = {
    .cmd = "certs",
    .flags = flags,
    .n_flags = sizeof flags / sizeof flags[0],
    .head = "usage: gpu-admission certs --service NAME --namespace NS --out DIR [flags]\n"
            "\n"
            "Makes a CA and a serving certificate for the webhook Service and writes\n"
            "DIR/ca.crt, DIR/ca.key (0600), DIR/tls.crt and DIR/tls.key (0600). Prints the\n"
            "caBundle (base64 of ca.crt, one line) on stdout; everything else goes to stderr.\n"
            "When DIR already holds ca.crt and ca.key, that CA signs the new serving\n"
            "certificate, so the caBundle stays the same (rotation without touching the\n"
            "webhook configurations).\n"
            "\n"
            "flags:\n",
    .tail = "\n"
            "The serving certificate always carries the SANs NAME, NAME.NS, NAME.NS.svc and\n"
            "NAME.NS.svc.cluster.local, extendedKeyUsage serverAuth, a random 128-bit serial\n"
            "and is valid from 5 minutes ago (clock skew) for --days days.\n"
            "\n"
            "exit status: 0 written, 1 usage or generation error.\n",
    .unknown = "unknown argument",
    .unknown_quoted = true,
    .error_rc = 1,
    .dashdash = GPA_CLI_DASHDASH_NONE,
    .positional = NULL,
};

#ifdef GPA_HAVE_SERVER
static int mkdir_p(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void fmt_time(char *buf, size_t n, time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
#endif

int gpa_cmd_certs(int argc, char **argv)
{
    options o_ = {.key_type = "ecdsa", .days = 365};
    int prc = gpa_cli_parse(&cli_spec, &o_, argc, argv);
    if (prc != GPA_CLI_CONTINUE) return prc;
    const char *service = o_.service, *ns = o_.ns, *out = o_.out, *key_type = o_.key_type;
    const char *const *sans = o_.sans;
    size_t n_sans = o_.n_sans;
    long days = o_.days, ca_days = o_.ca_days;
    bool new_ca = o_.new_ca;
    if (!service || !ns || !out) {
        fprintf(stderr, "gpu-admission certs: --service, --namespace and --out are required\n");
        gpa_cli_usage(&cli_spec, stderr);
        return 1;
    }
    if (strcmp(key_type, "ecdsa") != 0 && strcmp(key_type, "rsa") != 0) {
        fprintf(stderr, "gpu-admission certs: --key-type must be ecdsa or rsa, got '%s'\n",
                key_type);
        return 1;
    }
    if (ca_days == 0) ca_days = days > 3650 ? days : 3650;
    if (ca_days < days) {
        fprintf(stderr, "gpu-admission certs: --ca-days (%ld) must be at least --days (%ld)\n",
                ca_days, days);
        return 1;
    }

#ifndef GPA_HAVE_SERVER
    (void)sans;
    (void)new_ca;
    fprintf(stderr, "gpu-admission certs: this build has no OpenSSL server part\n");
    return 1;
#else
    if (mkdir_p(out) != 0) {
        fprintf(stderr, "gpu-admission certs: cannot create directory %s: %s\n", out,
                strerror(errno));
        return 1;
    }
    char ca_crt[PATH_MAX], ca_key[PATH_MAX], tls_crt[PATH_MAX], tls_key[PATH_MAX];
    if (snprintf(ca_crt, sizeof ca_crt, "%s/ca.crt", out) >= (int)sizeof ca_crt ||
        snprintf(tls_crt, sizeof tls_crt, "%s/tls.crt", out) >= (int)sizeof tls_crt) {
        fprintf(stderr, "gpu-admission certs: --out path is too long\n");
        return 1;
    }
    snprintf(ca_key, sizeof ca_key, "%s/ca.key", out);
    snprintf(tls_key, sizeof tls_key, "%s/tls.key", out);

    time_t now = time(NULL);
    gpa_certgen_opts o = {
        .service = service,
        .namespace = ns,
        .extra_sans = sans,
        .n_extra_sans = n_sans,
        .key_type = strcmp(key_type, "rsa") == 0 ? GPA_KEY_RSA_2048 : GPA_KEY_ECDSA_P256,
        .not_before = now - 300,
        .not_after = now + (time_t)days * 86400,
        .ca_not_before = now - 300,
        .ca_not_after = now + (time_t)ca_days * 86400,
    };
    char *old_ca_crt = NULL, *old_ca_key = NULL;
    int have_crt = exists(ca_crt), have_key = exists(ca_key);
    if (!new_ca && (have_crt || have_key)) {
        if (!have_crt || !have_key) {
            fprintf(stderr,
                    "gpu-admission certs: %s holds %s but not %s; pass --new-ca to replace the "
                    "CA\n",
                    out, have_crt ? "ca.crt" : "ca.key", have_crt ? "ca.key" : "ca.crt");
            return 1;
        }
        size_t l1 = 0, l2 = 0;
        old_ca_crt = gpa_cli_read_file(ca_crt, &l1);
        old_ca_key = gpa_cli_read_file(ca_key, &l2);
        if (!old_ca_crt || !old_ca_key) {
            fprintf(stderr, "gpu-admission certs: cannot read the existing CA in %s: %s\n", out,
                    strerror(errno));
            free(old_ca_crt);
            free(old_ca_key);
            return 1;
        }
        o.ca_cert_pem = old_ca_crt;
        o.ca_key_pem = old_ca_key;
    }

    gpa_error err = {0};
    gpa_cert_bundle *b = NULL;
    int rc = gpa_certgen_make(&b, &o, &err);
    if (old_ca_key) {
        memset(old_ca_key, 0, strlen(old_ca_key));
        free(old_ca_key);
    }
    free(old_ca_crt);
    if (rc != GPA_OK) {
        fprintf(stderr, "gpu-admission certs: %s%s\n", err.message,
                o.ca_cert_pem && !strstr(err.message, "--new-ca")
                    ? " (the CA found in --out was used; --new-ca makes a new one)"
                    : "");
        return 1;
    }
    /* Keys first, so a crash between files never leaves a certificate whose key is older. */
    if ((!o.ca_cert_pem &&
         (gpa_write_file_atomic(ca_key, b->ca_key_pem, strlen(b->ca_key_pem), 0600, &err) ||
          gpa_write_file_atomic(ca_crt, b->ca_cert_pem, strlen(b->ca_cert_pem), 0644, &err))) ||
        gpa_write_file_atomic(tls_key, b->key_pem, strlen(b->key_pem), 0600, &err) ||
        gpa_write_file_atomic(tls_crt, b->cert_pem, strlen(b->cert_pem), 0644, &err)) {
        fprintf(stderr, "gpu-admission certs: %s\n", err.message);
        gpa_cert_bundle_free(b);
        return 1;
    }
    /* Prove the files just written load exactly as the server will load them. */
    gpa_tls_pair *pair = NULL;
    if (gpa_tls_pair_load(&pair, tls_crt, tls_key, time(NULL), &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission certs: the written pair does not load: %s\n", err.message);
        gpa_cert_bundle_free(b);
        return 1;
    }
    char *bundle = gpa_base64_encode(b->ca_cert_pem, strlen(b->ca_cert_pem));
    if (!bundle) {
        fprintf(stderr, "gpu-admission certs: out of memory\n");
        gpa_tls_pair_free(pair);
        gpa_cert_bundle_free(b);
        return 1;
    }
    char nb[32], na[32];
    fmt_time(nb, sizeof nb, pair->not_before);
    fmt_time(na, sizeof na, pair->not_after);
    fprintf(stderr, "%s CA in %s (%s)\n", o.ca_cert_pem ? "reused the" : "made a new", ca_crt,
            o.ca_cert_pem ? "caBundle unchanged" : "new caBundle");
    fprintf(stderr, "serving certificate %s, key %s (%s)\n", tls_crt, tls_key,
            o.key_type == GPA_KEY_RSA_2048 ? "RSA-2048" : "ECDSA P-256");
    fprintf(stderr, "valid %s .. %s\n", nb, na);
    fprintf(stderr, "SANs:");
    for (size_t i = 0; i < b->n_sans; i++)
        fprintf(stderr, " %s", b->sans[i]);
    fprintf(stderr, "\nSHA-256 fingerprint %s\n", pair->fingerprint);
    fprintf(stderr, "caBundle (stdout):\n");
    printf("%s\n", bundle);
    fflush(stdout);
    free(bundle);
    gpa_tls_pair_free(pair);
    gpa_cert_bundle_free(b);
    return ferror(stdout) ? 1 : 0;
#endif
}
