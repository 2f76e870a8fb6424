/*
 * fuzz_quantity.c - fuzz target: gpa_quantity_parse on arbitrary bytes (not NUL-terminated).
 * Properties: never reads past len; an error always says why and is GPA_EPARSE/GPA_ERANGE; a
 * success is deterministic and agrees with the same text parsed from a NUL-terminated copy;
 * a plain decimal integer parses to exactly itself.
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256) return 0; /* quantities are short; long inputs only slow the search */
    char *exact = fz_dup_exact(data, size);
    char *str = fz_dup_str(data, size);
    gpa_quantity q = {0}, q2 = {0};
    gpa_error err = {0}, err2 = {0};
    int rc = gpa_quantity_parse(&q, exact, size, &err);
    int rc2 = gpa_quantity_parse(&q2, str, size, &err2);
    if (rc != rc2 || (rc == GPA_OK && (q.milli != q2.milli || q.exact != q2.exact)))
        fz_fail("quantity parse depends on bytes after len", NULL, NULL);
    if (rc != GPA_OK) {
        if (rc != GPA_EPARSE && rc != GPA_ERANGE)
            fz_fail("quantity parse returned an unexpected error code", NULL, NULL);
        if (err.message[0] == '\0') fz_fail("quantity parse failed without a message", NULL, NULL);
    } else {
        int64_t iv = 0;
        if (gpa_quantity_integer(&q, &iv) &&
            (!q.exact || q.milli % 1000 != 0 || iv != q.milli / 1000))
            fz_fail("gpa_quantity_integer disagrees with milli/exact", NULL, NULL);
        (void)gpa_quantity_value(&q);
        /* A plain non-negative decimal integer that fits must parse to itself. */
        int digits = size > 0 && size <= 15;
        for (size_t i = 0; digits && i < size; i++)
            digits = str[i] >= '0' && str[i] <= '9';
        if (digits && (q.milli != strtoll(str, NULL, 10) * 1000 || !q.exact))
            fz_fail("plain integer quantity parsed to another value", NULL, NULL);
    }
    free(exact);
    free(str);
    return 0;
}
