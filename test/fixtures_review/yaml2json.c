/*
 * yaml2json.c - test helper for the fixture sweep: prints every document of a YAML (or JSON)
 * file as one JSON array on stdout, using the project's own YAML reader (gpa_yaml_to_json),
 * so the sweep sees the fixtures exactly as `gpu-admission mutate` does. Python's standard
 * library has no YAML parser; this keeps the sweep free of extra packages.
 *
 * Must never: be shipped or used outside tests.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "gpu_admission/yamljson.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gpa_yaml2json FILE\n");
        return 1;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    cJSON *docs = NULL;
    gpa_error err = {0};
    if (gpa_yaml_to_json(&docs, buf, len, &err) != GPA_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], err.message);
        free(buf);
        return 1;
    }
    char *out = cJSON_PrintUnformatted(docs);
    if (!out) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    puts(out);
    free(out);
    cJSON_Delete(docs);
    free(buf);
    return 0;
}
