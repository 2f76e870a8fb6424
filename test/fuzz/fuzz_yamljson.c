/*
 * fuzz_yamljson.c - fuzz target: gpa_yaml_to_json on arbitrary bytes, then the round trip
 * gpa_json_to_yaml -> gpa_yaml_to_json on every document it produced, which must give back
 * an equal value (the writer quotes whenever a plain scalar would change type).
 *
 * Must never: ignore a property violation (fz_fail aborts, libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "gpu_admission/yamljson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024) return 0;
    char *buf = fz_dup_exact(data, size);
    (void)gpa_looks_like_json(buf, size);
    cJSON *docs = NULL;
    gpa_error err = {0};
    int rc = gpa_yaml_to_json(&docs, buf, size, &err);
    if (rc != GPA_OK) {
        if (docs) fz_fail("gpa_yaml_to_json failed but returned documents", docs, NULL);
        if (err.message[0] == '\0')
            fz_fail("gpa_yaml_to_json failed without a message", NULL, NULL);
        free(buf);
        return 0;
    }
    if (!cJSON_IsArray(docs)) fz_fail("gpa_yaml_to_json did not return an array", docs, NULL);
    const cJSON *doc;
    cJSON_ArrayForEach(doc, docs) {
        if (cJSON_IsNull(doc))
            continue; /* an explicit null document may legitimately read back as "empty" */
        char *yaml = gpa_json_to_yaml(doc);
        if (!yaml) fz_fail("gpa_json_to_yaml returned NULL for a parsed document", doc, NULL);
        cJSON *back = NULL;
        gpa_error err2 = {0};
        if (gpa_yaml_to_json(&back, yaml, strlen(yaml), &err2) != GPA_OK) {
            fprintf(stderr, "yaml written:\n%s\nerror: %s\n", yaml, err2.message);
            fz_fail("YAML written by gpa_json_to_yaml does not parse back", doc, NULL);
        }
        if (cJSON_GetArraySize(back) != 1 || !cJSON_Compare(doc, cJSON_GetArrayItem(back, 0), 1)) {
            fprintf(stderr, "yaml written:\n%s\n", yaml);
            fz_fail("YAML round trip changed the value", doc, back);
        }
        cJSON_Delete(back);
        free(yaml);
    }
    cJSON_Delete(docs);
    free(buf);
    return 0;
}
