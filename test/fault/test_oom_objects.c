/*
 * test_oom_objects.c - the objects reader (`test`, `diff`, `review`, the simulator's input) with
 * every allocation failing in turn (fault.h): a multi-document YAML file (Kueue's HAMi serving
 * sample, five documents) and a kubectl List JSON (test/tools' cluster snapshot, 46 KB), each
 * read and then every object taken out (gpa_objects_take: YAML hands its tree over, JSON makes
 * a deep copy). A read must give the clean run's objects at the clean run's places, or
 * GPA_ENOMEM with no list; never a parse error pointing at a line of a valid file.
 *
 * Must never: read the file while armed (stdio's own buffers are glibc's, not the reader's).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "gpu_admission/objects.h"

typedef struct objects_case {
    const char *path;
    char *data;
    size_t len;
    gpa_error err;
    bool got_list;
    size_t count;
    uint64_t places; /* FNV-1a over every origin and every taken object's kind */
    bool take_failed;
    bool have_clean;
    size_t clean_count;
    uint64_t clean_places;
} objects_case;

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return (h ^ 0xff) * 1099511628211u;
}

static int run_objects(void *ctx)
{
    objects_case *c = ctx;
    gpa_objects *o = NULL;
    c->err = (gpa_error){0};
    c->count = 0;
    c->places = 1469598103934665603u;
    c->take_failed = false;
    int rc = gpa_objects_read(&o, c->data, c->len, c->path, &c->err);
    c->got_list = o != NULL;
    if (!o) return rc;
    c->count = gpa_objects_count(o);
    for (size_t i = 0; i < c->count; i++) {
        c->places = fnv(c->places, gpa_objects_origin(o, i));
        cJSON *obj = gpa_objects_take(o, i);
        if (!obj) {
            c->take_failed = true;
            continue;
        }
        c->places = fnv(c->places, cJSON_GetStringValue(cJSON_GetObjectItem(obj, "kind")));
        cJSON_Delete(obj);
    }
    gpa_objects_free(o);
    return rc;
}

static const char *check_objects(void *ctx, int rc, int clean_rc, bool fired)
{
    objects_case *c = ctx;
    if (!c->have_clean) {
        if (rc != GPA_OK || !c->got_list || c->take_failed || c->count < 2)
            return c->err.message[0] ? c->err.message : "the clean read failed";
        c->have_clean = true;
        c->clean_count = c->count;
        c->clean_places = c->places;
        return NULL;
    }
    if (rc == GPA_ENOMEM) {
        if (c->got_list) return "GPA_ENOMEM but a list was returned";
        if (!c->err.message[0]) return "GPA_ENOMEM without a message";
        return NULL;
    }
    if (rc != GPA_OK) {
        static char why[sizeof c->err.message + 64];
        snprintf(why, sizeof why, "rc %d instead of GPA_ENOMEM: %s", rc, c->err.message);
        return why;
    }
    if (c->count != c->clean_count) return "GPA_OK with another number of objects";
    /* a take that answered NULL (its out-of-memory answer) skips that object's kind */
    if (!c->take_failed && c->places != c->clean_places)
        return "GPA_OK with objects or places that differ from the clean run's";
    return NULL;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1))) {
            *len = fread(b, 1, (size_t)n, f);
            b[*len] = '\0';
        }
    }
    fclose(f);
    return b;
}

int main(void)
{
    fault_init();
    if (!fault_yaml_reached())
        printf("note: libyaml is linked as a shared library; its own allocations are not "
               "failed (install libyaml's static archive, libyaml-dev)\n");
    objects_case cases[] = {
        {.path = GPA_SOURCE_DIR "/test/fixtures/kueue/serving-workloads_sample-hami.yaml"},
        {.path = GPA_SOURCE_DIR "/test/tools/fixtures/cluster-pods.json"},
    };
    static const char *const names[] = {"objects/multi-document YAML", "objects/kubectl List JSON"};
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!(cases[i].data = slurp(cases[i].path, &cases[i].len))) {
            printf("FAIL cannot read %s\n", cases[i].path);
            return 1;
        }
        fault_case fc = {names[i], run_objects, check_objects, &cases[i]};
        failed += fault_run_case(&fc);
        free(cases[i].data);
    }
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
