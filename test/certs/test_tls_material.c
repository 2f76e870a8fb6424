/*
 * test_tls_material.c - gpa_tls_pair_load and gpa_certgen_make against real files: pairs made
 * by the CLI and by the openssl command-line tool load; mismatched, expired, not-yet-valid,
 * encrypted, garbage, truncated, empty and missing material is refused with a message saying
 * which. Cross-checks the fingerprint against `openssl x509 -fingerprint -sha256`.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "certgen.h"
#include "tls_material.h"

static char dir[256];

static const char *pth(const char *name)
{
    static char bufs[8][512];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static void spit(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(s, f);
    fclose(f);
}

/* Loads and returns the error code; err->message holds the reason. */
static int load(const char *crt, const char *key, time_t now, gpa_error *err)
{
    gpa_tls_pair *p = NULL;
    memset(err, 0, sizeof *err);
    int rc = gpa_tls_pair_load(&p, crt, key, now, err);
    if (rc == GPA_OK)
        CHECK(p != NULL);
    else
        CHECK(p == NULL);
    gpa_tls_pair_free(p);
    return rc;
}

static void test_cli_pair(void)
{
    CHECK_INT(sh("'%s' certs --service gpa --namespace gpa-system --out '%s' --san 127.0.0.1 "
                 ">'%s' 2>'%s'",
                 GPA_CLI, pth("a"), pth("a.bundle"), pth("a.err")),
              0);
    time_t now = time(NULL);
    gpa_tls_pair *p = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_tls_pair_load(&p, pth("a/tls.crt"), pth("a/tls.key"), now, &err), GPA_OK);
    if (!p) {
        fprintf(stderr, "load failed: %s\n", err.message);
        return;
    }
    /* The fingerprint openssl computes, lowercased without colons. */
    CHECK_INT(sh("openssl x509 -in '%s' -noout -fingerprint -sha256 | cut -d= -f2 | tr -d : | "
                 "tr A-F a-f | tr -d '\\n' >'%s'",
                 pth("a/tls.crt"), pth("a.fp")),
              0);
    char *fp = slurp(pth("a.fp"));
    CHECK_STR(p->fingerprint, fp);
    CHECK_INT(strlen(p->fingerprint), 64);
    free(fp);
    CHECK(p->not_before <= now - 240 && p->not_before >= now - 400);
    CHECK(p->not_after >= now + 365 * 86400 - 100 && p->not_after <= now + 365 * 86400 + 100);
    char *crt = slurp(pth("a/tls.crt")), *key = slurp(pth("a/tls.key"));
    CHECK_STR(p->cert_pem, crt);
    CHECK_INT(p->cert_len, strlen(crt));
    CHECK_STR(p->key_pem, key);
    CHECK_INT(p->key_len, strlen(key));
    free(crt);
    free(key);

    /* The clock decides: one second past notAfter / before notBefore is refused. */
    CHECK_INT(load(pth("a/tls.crt"), pth("a/tls.key"), p->not_after + 1, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "expired");
    CHECK_INT(load(pth("a/tls.crt"), pth("a/tls.key"), p->not_after, &err), GPA_OK);
    CHECK_INT(load(pth("a/tls.crt"), pth("a/tls.key"), p->not_before - 1, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "not valid yet");
    gpa_tls_pair_free(p);

    /* A chain file (leaf first, then the CA) loads with the leaf's fingerprint. */
    CHECK_INT(sh("cat '%s' '%s' >'%s'", pth("a/tls.crt"), pth("a/ca.crt"), pth("chain.crt")), 0);
    gpa_tls_pair *c = NULL;
    CHECK_INT(gpa_tls_pair_load(&c, pth("chain.crt"), pth("a/tls.key"), now, &err), GPA_OK);
    gpa_tls_pair *p2 = NULL;
    CHECK_INT(gpa_tls_pair_load(&p2, pth("a/tls.crt"), pth("a/tls.key"), now, &err), GPA_OK);
    if (c && p2) CHECK_STR(c->fingerprint, p2->fingerprint);
    gpa_tls_pair_free(c);
    gpa_tls_pair_free(p2);
    /* Wrong order: the first certificate is the CA, which the key does not belong to. */
    CHECK_INT(sh("cat '%s' '%s' >'%s'", pth("a/ca.crt"), pth("a/tls.crt"), pth("rev.crt")), 0);
    CHECK_INT(load(pth("rev.crt"), pth("a/tls.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "does not match");
}

static void test_mismatch_and_rsa(void)
{
    time_t now = time(NULL);
    gpa_error err;
    CHECK_INT(sh("'%s' certs --service gpa --namespace gpa-system --out '%s' --key-type rsa "
                 ">/dev/null 2>&1",
                 GPA_CLI, pth("b")),
              0);
    CHECK_INT(load(pth("b/tls.crt"), pth("b/tls.key"), now, &err), GPA_OK);
    CHECK_INT(sh("openssl x509 -in '%s' -noout -text | grep -q rsaEncryption", pth("b/tls.crt")),
              0);
    /* Key from another run: same shape of file, wrong key. */
    CHECK_INT(load(pth("a/tls.crt"), pth("b/tls.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "does not match");
    CHECK_CONTAINS(err.message, pth("b/tls.key"));
    /* Same algorithm, different key: a second ECDSA run. */
    CHECK_INT(sh("'%s' certs --service gpa --namespace gpa-system --out '%s' >/dev/null 2>&1",
                 GPA_CLI, pth("c")),
              0);
    CHECK_INT(load(pth("a/tls.crt"), pth("c/tls.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "does not match");
    /* The CA key is a valid key, but not the leaf's. */
    CHECK_INT(load(pth("a/tls.crt"), pth("a/ca.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "does not match");
}

static void test_openssl_made(void)
{
    gpa_error err;
    /* Material made entirely by the openssl tool, including a SEC1 ("EC PRIVATE KEY") key. */
    CHECK_INT(sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
                 "'%s' -out '%s' -days 2 -subj /CN=x >/dev/null 2>&1 && openssl ec -in '%s' "
                 "-out '%s' >/dev/null 2>&1",
                 pth("o.key"), pth("o.crt"), pth("o.key"), pth("o-sec1.key")),
              0);
    /* now is read after openssl made the certificate: its notBefore is the second openssl
     * ran, which on a loaded machine can be later than a time read before it (the load was
     * then refused as not yet valid) */
    time_t now = time(NULL);
    CHECK_INT(load(pth("o.crt"), pth("o.key"), now, &err), GPA_OK);
    CHECK_INT(load(pth("o.crt"), pth("o-sec1.key"), now, &err), GPA_OK);
    CHECK_INT(load(pth("o.crt"), pth("o.key"), now + 3 * 86400, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "expired");
    /* Encrypted keys are refused without ever prompting. */
    CHECK_INT(sh("openssl pkey -in '%s' -aes256 -passout pass:secret -out '%s' </dev/null",
                 pth("o.key"), pth("enc.key")),
              0);
    CHECK_INT(load(pth("o.crt"), pth("enc.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "encrypted");
}

static void test_expired_made_by_certgen(void)
{
    time_t now = time(NULL);
    gpa_certgen_opts o = {
        .service = "gpa",
        .namespace = "ns",
        .not_before = now - 10 * 86400,
        .not_after = now - 86400,
        .ca_not_before = now - 20 * 86400,
        .ca_not_after = now + 86400,
    };
    gpa_cert_bundle *b = NULL;
    gpa_error err = {0};
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_OK);
    if (!b) return;
    spit(pth("old.crt"), b->cert_pem);
    spit(pth("old.key"), b->key_pem);
    spit(pth("old-ca.crt"), b->ca_cert_pem);
    CHECK_INT(load(pth("old.crt"), pth("old.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "expired");
    CHECK_CONTAINS(err.message, "notAfter");
    /* openssl agrees, independently. */
    CHECK(sh("openssl verify -CAfile '%s' '%s' 2>&1 | grep -q 'certificate has expired'",
             pth("old-ca.crt"), pth("old.crt")) == 0);
    gpa_cert_bundle_free(b);

    /* Not yet valid: starts tomorrow. */
    o.not_before = now + 86400;
    o.not_after = now + 2 * 86400;
    o.ca_not_after = now + 3 * 86400;
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_OK);
    if (!b) return;
    spit(pth("new.crt"), b->cert_pem);
    spit(pth("new.key"), b->key_pem);
    CHECK_INT(load(pth("new.crt"), pth("new.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "not valid yet");
    gpa_cert_bundle_free(b);
}

static void test_bad_files(void)
{
    time_t now = time(NULL);
    gpa_error err;
    spit(pth("garbage.crt"), "hello, I am not a certificate\n");
    CHECK_INT(load(pth("garbage.crt"), pth("a/tls.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "no PEM certificate");
    CHECK_CONTAINS(err.message, pth("garbage.crt"));
    /* Right armor, wrong content. */
    spit(pth("armor.crt"), "-----BEGIN CERTIFICATE-----\nTUlJQmVzIG5vdCBhIGNlcnQ=\n"
                           "-----END CERTIFICATE-----\n");
    CHECK_INT(load(pth("armor.crt"), pth("a/tls.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "no PEM certificate");
    /* A good leaf followed by half of the CA certificate. */
    char *leaf = slurp(pth("a/tls.crt")), *ca = slurp(pth("a/ca.crt"));
    if (leaf && ca) {
        size_t cut = strlen(ca) / 2;
        ca[cut] = '\0';
        char *both = malloc(strlen(leaf) + cut + 1);
        strcpy(both, leaf);
        strcat(both, ca);
        spit(pth("trunc.crt"), both);
        free(both);
        CHECK_INT(load(pth("trunc.crt"), pth("a/tls.key"), now, &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "certificate #2");
    }
    free(leaf);
    free(ca);
    spit(pth("garbage.key"), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    CHECK_INT(load(pth("a/tls.crt"), pth("garbage.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "no PEM private key");
    /* A certificate where the key should be. */
    CHECK_INT(load(pth("a/tls.crt"), pth("a/tls.crt"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "no PEM private key");
    spit(pth("empty"), "");
    CHECK_INT(load(pth("empty"), pth("a/tls.key"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "empty");
    CHECK_INT(load(pth("a/tls.crt"), pth("empty"), now, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "empty");
    CHECK_INT(load(pth("missing.crt"), pth("a/tls.key"), now, &err), GPA_EIO);
    CHECK_CONTAINS(err.message, pth("missing.crt"));
    CHECK_CONTAINS(err.message, "No such file");
    CHECK_INT(load(pth("a/tls.crt"), pth("missing.key"), now, &err), GPA_EIO);
    CHECK_CONTAINS(err.message, pth("missing.key"));
    /* A directory is not a file. */
    CHECK_INT(load(dir, pth("a/tls.key"), now, &err), GPA_EIO);
    gpa_tls_pair *p = (gpa_tls_pair *)1;
    CHECK_INT(gpa_tls_pair_load(&p, NULL, pth("a/tls.key"), now, &err), GPA_EINVAL);
    CHECK(p == NULL);
}

static void test_certgen_api(void)
{
    time_t now = time(NULL);
    gpa_certgen_opts o = {
        .service = "gpa",
        .namespace = "ns",
        .not_before = now - 300,
        .not_after = now + 86400,
        .ca_not_before = now - 300,
        .ca_not_after = now + 10 * 86400,
    };
    gpa_cert_bundle *b = NULL;
    gpa_error err = {0};
    static const char *const bad_sans[] = {"a,DNS:evil", "-lead.example", "a..b",     "",
                                           "a b",        "x.-y",          "1.2.3.4/8"};
    for (size_t i = 0; i < sizeof bad_sans / sizeof bad_sans[0]; i++) {
        o.extra_sans = &bad_sans[i];
        o.n_extra_sans = 1;
        CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_EINVAL);
        CHECK(b == NULL);
        CHECK_CONTAINS(err.message, "SAN");
    }
    static const char *const good_sans[] = {"*.example.test", "10.0.0.1", "fe80::1", "gpa.ns.svc",
                                            "Mixed-Case.Example"};
    o.extra_sans = good_sans;
    o.n_extra_sans = 5;
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_OK);
    if (b) {
        /* gpa.ns.svc is one of the defaults: listed once. 4 defaults + 4 new. */
        CHECK_INT(b->n_sans, 8);
        CHECK_STR(b->sans[0], "DNS:gpa");
        CHECK_STR(b->sans[4], "DNS:*.example.test");
        CHECK_STR(b->sans[5], "IP:10.0.0.1");
        CHECK_STR(b->sans[6], "IP:fe80::1");
    }
    o.extra_sans = NULL;
    o.n_extra_sans = 0;

    /* Re-signing with a supplied CA keeps the CA byte for byte. */
    gpa_cert_bundle *r = NULL;
    if (b) {
        o.ca_cert_pem = b->ca_cert_pem;
        o.ca_key_pem = b->ca_key_pem;
        CHECK_INT(gpa_certgen_make(&r, &o, &err), GPA_OK);
        if (r) {
            CHECK_STR(r->ca_cert_pem, b->ca_cert_pem);
            CHECK(strcmp(r->cert_pem, b->cert_pem) != 0);
            spit(pth("r-ca.crt"), r->ca_cert_pem);
            spit(pth("r.crt"), r->cert_pem);
            CHECK_INT(
                sh("openssl verify -CAfile '%s' '%s' >/dev/null", pth("r-ca.crt"), pth("r.crt")),
                0);
        }
        gpa_cert_bundle_free(r);
        r = NULL;
        /* A CA that ends before the requested certificate would. */
        o.not_after = now + 20 * 86400;
        CHECK_INT(gpa_certgen_make(&r, &o, &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "expires before");
        o.not_after = now + 86400;
        /* A leaf cert is not a CA. */
        o.ca_cert_pem = b->cert_pem;
        o.ca_key_pem = b->key_pem;
        CHECK_INT(gpa_certgen_make(&r, &o, &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "not a CA");
        /* Key of another CA. */
        o.ca_cert_pem = b->ca_cert_pem;
        o.ca_key_pem = b->key_pem;
        CHECK_INT(gpa_certgen_make(&r, &o, &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "does not match");
        o.ca_key_pem = "junk";
        CHECK_INT(gpa_certgen_make(&r, &o, &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "does not parse");
        o.ca_key_pem = NULL;
        CHECK_INT(gpa_certgen_make(&r, &o, &err), GPA_EINVAL);
        CHECK_CONTAINS(err.message, "both");
        o.ca_cert_pem = NULL;
    }
    gpa_cert_bundle_free(b);

    o.service = "Upper";
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "service name 'Upper'");
    o.service = "gpa";
    o.namespace = "a-very-long-namespace-name-that-is-longer-than-sixty-three-chars-x";
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "namespace");
    o.namespace = "ns";
    o.not_after = o.not_before;
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_EINVAL);
    o.not_after = now + 86400;
    o.ca_not_after = now + 3600; /* new CA shorter than the leaf */
    CHECK_INT(gpa_certgen_make(&b, &o, &err), GPA_EINVAL);
    CHECK_CONTAINS(err.message, "CA validity");
}

static void test_atomic_write(void)
{
    gpa_error err = {0};
    CHECK_INT(gpa_write_file_atomic(pth("w.key"), "first", 5, 0600, &err), GPA_OK);
    CHECK_INT(gpa_write_file_atomic(pth("w.key"), "second", 6, 0600, &err), GPA_OK);
    char *s = slurp(pth("w.key"));
    CHECK_STR(s, "second");
    free(s);
    struct stat st;
    CHECK_INT(stat(pth("w.key"), &st), 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    CHECK_INT(gpa_write_file_atomic(pth("w.crt"), "x", 1, 0644, &err), GPA_OK);
    CHECK_INT(stat(pth("w.crt"), &st), 0);
    CHECK_INT(st.st_mode & 0777, 0644);
    CHECK_INT(gpa_write_file_atomic(pth("no/such/dir/x"), "x", 1, 0600, &err), GPA_EIO);
    CHECK_CONTAINS(err.message, "no/such/dir");
    /* No temp files left behind. */
    CHECK_INT(sh("ls '%s' | grep -q tmp", dir), 1);
    char *b64 = gpa_base64_encode("hello?", 6);
    CHECK_STR(b64, "aGVsbG8/");
    free(b64);
    b64 = gpa_base64_encode("", 0);
    CHECK_STR(b64, "");
    free(b64);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/gpa-tls-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    test_cli_pair();
    test_mismatch_and_rsa();
    test_openssl_made();
    test_expired_made_by_certgen();
    test_bad_files();
    test_certgen_api();
    test_atomic_write();
    sh("rm -rf '%s'", dir);
    return check_done();
}
