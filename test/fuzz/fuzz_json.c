/*
 * fuzz_json.c - fuzz target: the codec's strict JSON reader (gpa_review_parse_json, which is
 * src/core/format/json_read.c plus a deep copy) against cJSON and an independent UTF-8 check.
 * Properties: invalid UTF-8 anywhere is refused as such, at its first byte, whatever else is
 * wrong with the text; a document the reader accepts is one cJSON accepts too, read node for
 * node the same (member order, exact doubles, valueint, the tail in child->prev); the codec's
 * writer prints it back to text the reader reads to the same tree; every refusal says what and
 * where; nothing depends on the bytes after len.
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/review.h"
#include "../common/json_same.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Offset of the first byte that does not start a well-formed UTF-8 sequence (decode, then
 * range-check the code point: no overlong forms, surrogates or values past U+10FFFF), or n. */
static size_t ref_utf8_invalid_at(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], need, cp, min;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            need = 1, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0)
            need = 2, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0)
            need = 3, cp = c & 0x07, min = 0x10000;
        else
            return i;
        if (i + need >= n) return i;
        for (unsigned k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += need + 1;
    }
    return n;
}

/* 1e999 reads as infinity, which the writer prints as null (as cJSON does). */
static int has_nonfinite(const cJSON *v)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) return 1;
    for (const cJSON *c = v->child; c; c = c->next)
        if (has_nonfinite(c)) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) return 0;
    char *exact = fz_dup_exact(data, size);
    cJSON *ours = NULL;
    gpa_error err;
    err.message[0] = '\0';
    int rc = gpa_review_parse_json(&ours, exact, size, &err);

    /* The same bytes followed by more text must get the same verdict. */
    char *longer = malloc(size + 3);
    if (!longer) abort();
    if (size) memcpy(longer, data, size);
    memcpy(longer + size, "]}\"", 3);
    cJSON *again = NULL;
    gpa_error err2;
    err2.message[0] = '\0';
    int rc2 = gpa_review_parse_json(&again, longer, size, &err2);
    if (rc != rc2 || strcmp(err.message, err2.message) != 0 ||
        (rc == GPA_OK && !gpa_json_same(ours, again)))
        fz_fail("the reader's verdict depends on bytes after len", ours, again);

    size_t bad = ref_utf8_invalid_at(data, size);
    if (bad < size) {
        char want[96];
        snprintf(want, sizeof want, "invalid JSON: invalid UTF-8 at byte %zu", bad);
        if (rc != GPA_EPARSE || strcmp(err.message, want) != 0) {
            fprintf(stderr, "expected \"%s\", got rc %d \"%s\"\n", want, rc, err.message);
            fz_fail("invalid UTF-8 not refused as such at its first byte", ours, NULL);
        }
    } else if (rc == GPA_OK) {
        cJSON *ref = cJSON_ParseWithLength(exact, size);
        if (!ref) fz_fail("the reader accepts a document cJSON refuses", ours, NULL);
        if (!gpa_json_same(ours, ref))
            fz_fail("the reader reads a document differently from cJSON", ours, ref);
        cJSON_Delete(ref);
        /* Round trip through the codec's writer (non-finite numbers print as null). */
        if (has_nonfinite(ours)) goto done;
        size_t len = 0;
        char *text = gpa_review_json(ours, &len);
        if (!text) fz_fail("the codec's writer failed on a tree the reader built", ours, NULL);
        cJSON *back = NULL;
        gpa_error err3;
        if (gpa_review_parse_json(&back, text, len, &err3) != GPA_OK || !gpa_json_same(ours, back))
            fz_fail("writer output does not read back to the same tree", ours, back);
        cJSON_Delete(back);
        free(text);
    } else {
        if (rc != GPA_EPARSE || strncmp(err.message, "invalid JSON: ", 14) != 0 ||
            !strstr(err.message, " at byte "))
            fz_fail("a refusal without what and where", NULL, NULL);
    }
done:
    cJSON_Delete(ours);
    cJSON_Delete(again);
    free(longer);
    free(exact);
    return 0;
}
