/*
 * fuzz_objects.c - fuzz target for the tools' readers: gpa_objects_read (the reader of `test`,
 * `diff` and `simulate`) and gpa_suite_file_parse on arbitrary bytes; every object read is then
 * judged under the shipped set and the first variant through gpa_impact_object (the `diff`
 * path, reconstruction included), every case of a suite that parses is run, and the unified
 * diff is taken between the two halves of the input.
 *
 * Properties: an error always has a message that starts with the source name; a success never
 * has a NULL object or origin; the impact entries are arrays of objects with "changes" and
 * "judgedAs"; a diff of a text with itself is NULL.
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/impact.h"
#include "gpu_admission/objects.h"
#include "gpu_admission/suite.h"
#include "gpu_admission/textdiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char POD[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                          "\"namespace\":\"notebooks\"},\"spec\":{\"containers\":[{\"name\":\"m\","
                          "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}";

/* Every object file a fuzzed suite names is this pod. */
static int read_cb(char **buf, size_t *len, void *ctx, const char *path, gpa_error *err)
{
    (void)ctx;
    (void)err;
    (void)path;
    *buf = strdup(POD);
    *len = sizeof POD - 1;
    return *buf ? GPA_OK : GPA_ENOMEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024) return 0;
    char *buf = fz_dup_exact(data, size);
    const gpa_policy *p0 = fz_policy(0);
    const gpa_policy *p1 = fz_policy_count() > 1 ? fz_policy(1) : p0;

    gpa_objects *o = NULL;
    gpa_error err = {0};
    if (gpa_objects_read(&o, buf, size, "fz", &err) != GPA_OK) {
        if (o) fz_fail("gpa_objects_read failed but returned objects", NULL, NULL);
        if (strncmp(err.message, "fz:", 3) != 0 && strncmp(err.message, "out of memory", 13))
            fz_fail("gpa_objects_read error does not start with the source name", NULL, NULL);
    } else {
        for (size_t i = 0; i < gpa_objects_count(o) && i < 64; i++) {
            const cJSON *obj = gpa_objects_get(o, i);
            const char *origin = gpa_objects_origin(o, i);
            if (!obj || !origin || strncmp(origin, "fz", 2) != 0)
                fz_fail("object without value or origin", obj, NULL);
            cJSON *entries = NULL;
            gpa_error ierr = {0};
            if (gpa_impact_object(&entries, NULL, p0, p1, obj, &ierr) == GPA_OK) {
                if (!cJSON_IsArray(entries)) fz_fail("impact is not an array", obj, entries);
                for (const cJSON *e = entries->child; e; e = e->next)
                    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(e, "changes")) ||
                        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "judgedAs")))
                        fz_fail("impact entry without changes/judgedAs", obj, e);
            } else if (entries || !ierr.message[0]) {
                fz_fail("impact failed without a message or left entries", obj, entries);
            }
            cJSON_Delete(entries);
        }
    }
    gpa_objects_free(o);

    gpa_suite_file *f = NULL;
    gpa_error serr = {0};
    if (gpa_suite_file_parse(&f, buf, size, "fz.yaml", read_cb, NULL, &serr) == GPA_OK) {
        for (size_t s = 0; s < gpa_suite_count(f); s++)
            for (size_t c = 0; c < gpa_suite_case_count(f, s) && c < 16; c++) {
                gpa_case_result r;
                gpa_error rerr = {0};
                if (gpa_suite_case_run(&r, p0, f, s, c, &rerr) != GPA_OK && rerr.code != GPA_ENOMEM)
                    fz_fail("a parsed case could not be run", NULL, NULL);
                if (r.passed != (r.n_failures == 0))
                    fz_fail("passed disagrees with the failures", NULL, NULL);
                gpa_case_result_clear(&r);
            }
        gpa_suite_file_free(f);
    } else if (f || strncmp(serr.message, "fz.yaml:", 8) != 0) {
        if (serr.code != GPA_ENOMEM) fz_fail("suite error without position", NULL, NULL);
    }

    char *s = fz_dup_str(data, size);
    size_t half = strlen(s) / 2;
    char *a = strndup(s, half);
    char *d = a ? gpa_text_diff(a, s + half, "a", "b") : NULL;
    free(d);
    if (gpa_text_diff(s, s, "a", "b") != NULL) fz_fail("diff of a text with itself", NULL, NULL);
    free(a);
    free(s);
    free(buf);
    return 0;
}
