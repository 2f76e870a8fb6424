/*
 * quantity.c - Kubernetes resource quantities parsed exactly into milli-units.
 *
 * Grammar (k8s.io/apimachinery resource.Quantity):
 *   quantity ::= [+-] number suffix
 *   number   ::= digits | digits "." digits | digits "." | "." digits
 *   suffix   ::= "" | binarySI (Ki..Ei) | decimalSI (n u m k M G T P E) | (e|E) [+-] digits
 * Everything is done in 128-bit integer arithmetic: no floating point, so "8Gi" compared with
 * "8589934592" is exact. Never allocates; never accepts whitespace or anything after the suffix.
 */
#include <string.h>

#include "gpu_admission/quantity.h"

__extension__ typedef unsigned __int128 u128;

#define MAX_SIG_DIGITS 36 /* 10^36 < 2^127: headroom for one more x10 step */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Suffix -> (power of ten, power of two). Returns false when not a known suffix. */
static bool parse_suffix(const char *s, size_t len, int *p10, int *p2)
{
    static const struct {
        const char *s;
        int p10, p2;
    } tab[] = {
        {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
        {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
        {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strlen(tab[i].s) == len && memcmp(tab[i].s, s, len) == 0) {
            *p10 = tab[i].p10;
            *p2 = tab[i].p2;
            return true;
        }
    }
    return false;
}

int gpa_quantity_parse(gpa_quantity *out, const char *s, size_t len, gpa_error *err)
{
    if (!out || (!s && len)) return gpa_fail(err, GPA_EINVAL, "quantity: no input");
    size_t i = 0;
    bool neg = false;
    if (len == 0) return gpa_fail(err, GPA_EPARSE, "quantity is empty");
    if (s[i] == '+' || s[i] == '-') neg = s[i++] == '-';

    /* Significant digits of the mantissa, leading zeros dropped; frac counts digits after
     * the point that made it into sig (trailing zeros of the fraction are dropped too). */
    u128 sig = 0;
    int nsig = 0, frac = 0, ndigits = 0, pending_zeros = 0;
    bool seen_point = false;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '.' && !seen_point) {
            seen_point = true;
            continue;
        }
        if (!is_digit(c)) break;
        ndigits++;
        if (c == '0' && nsig == 0) {
            if (seen_point) frac++; /* 0.05: the zeros still shift the point */
            continue;
        }
        if (c == '0' && seen_point) {
            pending_zeros++; /* may be trailing: only count once a non-zero follows */
            continue;
        }
        /* materialise zeros held back before this digit */
        for (; pending_zeros > 0; pending_zeros--) {
            if (++nsig > MAX_SIG_DIGITS)
                return gpa_fail(err, GPA_ERANGE, "quantity \"%.*s\" has too many digits", (int)len,
                                s);
            sig = sig * 10;
            frac++;
        }
        if (++nsig > MAX_SIG_DIGITS)
            return gpa_fail(err, GPA_ERANGE, "quantity \"%.*s\" has too many digits", (int)len, s);
        sig = sig * 10 + (u128)(c - '0');
        if (seen_point) frac++;
    }
    if (ndigits == 0)
        return gpa_fail(err, GPA_EPARSE, "quantity \"%.*s\" has no digits", (int)len, s);

    int p10 = 0, p2 = 0;
    const char *suf = s + i;
    size_t suflen = len - i;
    if (suflen >= 2 && (suf[0] == 'e' || suf[0] == 'E') &&
        (is_digit(suf[1]) || ((suf[1] == '+' || suf[1] == '-') && suflen >= 3))) {
        /* decimal exponent: e3, E-2 */
        size_t j = 1;
        bool eneg = false;
        if (suf[j] == '+' || suf[j] == '-') eneg = suf[j++] == '-';
        if (j >= suflen)
            return gpa_fail(err, GPA_EPARSE, "quantity \"%.*s\": exponent has no digits", (int)len,
                            s);
        long e = 0;
        for (; j < suflen; j++) {
            if (!is_digit(suf[j]))
                return gpa_fail(err, GPA_EPARSE, "quantity \"%.*s\": bad exponent", (int)len, s);
            if (e < 100000) e = e * 10 + (suf[j] - '0');
        }
        p10 = (int)(eneg ? -e : e);
    } else if (!parse_suffix(suf, suflen, &p10, &p2)) {
        return gpa_fail(err, GPA_EPARSE,
                        "quantity \"%.*s\": unknown suffix \"%.*s\" (use Ki Mi Gi Ti Pi Ei, "
                        "n u m k M G T P E, or an exponent like e3)",
                        (int)len, s, (int)suflen, suf);
    }

    /* value x 1000 = sig x 10^(p10 - frac + 3) x 2^p2 */
    long e10 = (long)p10 - frac + 3;
    const u128 limit = (u128)INT64_MAX;
    u128 v = sig;
    bool exact = true;
    if (sig != 0) {
        for (int k = 0; k < p2; k++) {
            v <<= 1;
            if (v > ((u128)1 << 126))
                return gpa_fail(err, GPA_ERANGE, "quantity \"%.*s\" is too large", (int)len, s);
        }
        if (e10 > 0) {
            for (long k = 0; k < e10; k++) {
                v *= 10;
                if (v > limit)
                    return gpa_fail(err, GPA_ERANGE, "quantity \"%.*s\" is too large", (int)len, s);
            }
        } else if (e10 < 0) {
            /* sub-milli precision: divide, rounding the magnitude up */
            for (long k = 0; k < -e10 && v != 0; k++) {
                if (v % 10) exact = false;
                v /= 10;
            }
            if (!exact || (v == 0 && sig != 0)) {
                exact = false;
                v += 1;
            }
        }
        if (v > limit)
            return gpa_fail(err, GPA_ERANGE, "quantity \"%.*s\" is too large", (int)len, s);
    }
    out->milli = neg ? -(int64_t)v : (int64_t)v;
    out->exact = exact;
    return GPA_OK;
}

bool gpa_quantity_integer(const gpa_quantity *q, int64_t *out)
{
    if (!q || !q->exact || q->milli % 1000 != 0) return false;
    if (out) *out = q->milli / 1000;
    return true;
}

int64_t gpa_quantity_value(const gpa_quantity *q)
{
    /* rounds the magnitude up, as resource.Quantity.Value() does */
    int64_t whole = q->milli / 1000;
    if (q->milli % 1000 != 0) whole += q->milli > 0 ? 1 : -1;
    return whole;
}
