/*
 * test_quantity.c - Kubernetes quantity grammar: exact milli values, rounding, and every
 * malformed or out-of-range form the webhook must refuse.
 */
#include <string.h>

#include "check.h"
#include "gpu_admission/quantity.h"

static int parse(const char *s, gpa_quantity *q, gpa_error *e)
{
    return gpa_quantity_parse(q, s, strlen(s), e);
}

static void ok(const char *s, int64_t milli, bool exact, int line)
{
    gpa_quantity q = {0};
    gpa_error e = {0};
    int rc = parse(s, &q, &e);
    check_total++;
    if (rc != GPA_OK || q.milli != milli || q.exact != exact) {
        check_failed++;
        fprintf(stderr, "%s:%d: \"%s\": rc %d milli %lld exact %d (%s), want milli %lld exact %d\n",
                __FILE__, line, s, rc, (long long)q.milli, q.exact, e.message, (long long)milli,
                exact);
    }
}

static void bad(const char *s, int code, int line)
{
    gpa_quantity q = {0};
    gpa_error e = {0};
    int rc = parse(s, &q, &e);
    check_total++;
    if (rc != code || e.code != code || e.message[0] == '\0') {
        check_failed++;
        fprintf(stderr, "%s:%d: \"%s\": rc %d, want %d\n", __FILE__, line, s, rc, code);
    }
}

#define OK(s, m, x) ok(s, m, x, __LINE__)
#define BAD(s, c)   bad(s, c, __LINE__)

int main(void)
{
    const int64_t Gi = 1073741824LL;
    OK("8Gi", 8 * Gi * 1000, true);
    OK("1.5Gi", 3 * Gi / 2 * 1000, true);
    OK("40Gi", 40 * Gi * 1000, true);
    OK("40G", 40000000000LL * 1000, true);
    OK("1e3", 1000000, true);
    OK("1E3", 1000000, true);
    OK("1e-3", 1, true);
    OK("1P", 1000000000000000000LL, true); /* 10^15 units = 10^18 milli */
    OK("1E-2", 10, true);                  /* E followed by digits is an exponent */
    OK("500m", 500, true);
    OK("0.5", 500, true);
    OK(".5", 500, true);
    OK("5.", 5000, true);
    OK("+1", 1000, true);
    OK("-1", -1000, true);
    OK("0", 0, true);
    OK("000", 0, true);
    OK("0.05", 50, true);
    OK("1.050", 1050, true);
    OK("1Ki", 1024000, true);
    OK("2Mi", 2LL * 1048576 * 1000, true);
    OK("1k", 1000000, true);
    OK("1M", 1000000000LL, true);
    OK("1n", 1, false); /* sub-milli: rounded up, marked inexact */
    OK("1u", 1, false);
    OK("1500u", 2, false);
    OK("1000u", 1, true);
    OK("1e-999", 1, false);
    OK("0e999", 0, true);
    OK("9223372036854775m", 9223372036854775LL, true);
    OK("1.00000000000000000000000000000000000000000", 1000, true); /* trailing zeros free */

    /* integer / value helpers */
    gpa_quantity q;
    int64_t v = -1;
    parse("2", &q, NULL);
    CHECK(gpa_quantity_integer(&q, &v));
    CHECK_INT(v, 2);
    parse("1500m", &q, NULL);
    CHECK(!gpa_quantity_integer(&q, &v));
    CHECK_INT(gpa_quantity_value(&q), 2);
    parse("-1500m", &q, NULL);
    CHECK_INT(gpa_quantity_value(&q), -2);
    parse("1n", &q, NULL);
    CHECK(!gpa_quantity_integer(&q, &v));
    CHECK_INT(gpa_quantity_value(&q), 1);
    parse("8Gi", &q, NULL);
    CHECK_INT(gpa_quantity_value(&q), 8 * Gi);
    parse("1e3", &q, NULL);
    CHECK(gpa_quantity_integer(&q, &v));
    CHECK_INT(v, 1000);

    /* malformed */
    BAD("", GPA_EPARSE);
    BAD("1.2.3", GPA_EPARSE);
    BAD("Gi", GPA_EPARSE);
    BAD("1 Gi", GPA_EPARSE);
    BAD(" 1", GPA_EPARSE);
    BAD("1 ", GPA_EPARSE);
    BAD("1gi", GPA_EPARSE);
    BAD("1GB", GPA_EPARSE);
    BAD("1e", GPA_EPARSE);
    BAD("1e+", GPA_EPARSE);
    BAD("1e3.5", GPA_EPARSE);
    BAD("1Kii", GPA_EPARSE);
    BAD(".", GPA_EPARSE);
    BAD("+", GPA_EPARSE);
    BAD("--1", GPA_EPARSE);
    BAD("0x10", GPA_EPARSE);
    /* out of range */
    BAD("1e999", GPA_ERANGE);
    BAD("9999999999999999999", GPA_ERANGE);
    BAD("9223372036854776", GPA_ERANGE); /* x1000 overflows int64 */
    BAD("8Ei", GPA_ERANGE);
    BAD("1E", GPA_ERANGE); /* exa: 10^21 milli does not fit */
    BAD("1234567890123456789012345678901234567890", GPA_ERANGE);

    /* length is honoured: no reading past len, NUL not required */
    gpa_quantity q2 = {0};
    CHECK_INT(gpa_quantity_parse(&q2, "12Gi-garbage", 4, NULL), GPA_OK);
    CHECK_INT(q2.milli, 12 * Gi * 1000);
    return check_done();
}
