/*
 * test_objects.c - the object reader shared by test, diff and simulate: Lists flattened (JSON
 * and YAML, kubectl's shapes), multi-document YAML, AdmissionReviews kept whole, the line of
 * every object, and parse errors with source:line:col.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/objects.h"

static const char *kind_of(const gpa_objects *o, size_t i)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(gpa_objects_get(o, i), "kind");
    return cJSON_IsString(k) ? k->valuestring : "(none)";
}

static const char *name_of(const gpa_objects *o, size_t i)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(gpa_objects_get(o, i), "metadata");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(m, "name");
    return cJSON_IsString(n) ? n->valuestring : "(none)";
}

static gpa_objects *read_str(const char *s, const char *name, int want_rc, gpa_error *e)
{
    gpa_objects *o = NULL;
    memset(e, 0, sizeof *e);
    CHECK_INT(gpa_objects_read(&o, s, strlen(s), name, e), want_rc);
    return o;
}

int main(void)
{
    gpa_error e;

    /* kubectl get pods,deployments -o json: a List, items on known lines */
    const char *jl = "{\n"
                     "  \"apiVersion\": \"v1\",\n"
                     "  \"items\": [\n"
                     "    {\n"
                     "      \"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
                     "      \"metadata\": {\"name\": \"a\", \"labels\": {\"x\": \"[1, {2}]\"}}\n"
                     "    },\n"
                     "    {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\",\n"
                     "     \"metadata\": {\"name\": \"d\", \"namespace\": \"ns\"}, \"n\": [1, "
                     "-2.5e3, true, null]},\n"
                     "    {\"kind\": \"Pod\", \"metadata\": {\"name\": \"c\"}}\n"
                     "  ],\n"
                     "  \"kind\": \"List\",\n"
                     "  \"metadata\": {\"resourceVersion\": \"\"}\n"
                     "}\n";
    gpa_objects *o = read_str(jl, "pods.json", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 3);
    CHECK_STR(kind_of(o, 0), "Pod");
    CHECK_STR(name_of(o, 0), "a");
    CHECK_STR(kind_of(o, 1), "Deployment");
    CHECK_STR(name_of(o, 2), "c");
    CHECK_INT(gpa_objects_line(o, 0), 4);
    CHECK_INT(gpa_objects_line(o, 1), 8);
    CHECK_INT(gpa_objects_line(o, 2), 10);
    CHECK_STR(gpa_objects_origin(o, 1), "pods.json:8");
    char label[128];
    gpa_objects_describe(label, sizeof label, gpa_objects_get(o, 1));
    CHECK_STR(label, "Deployment ns/d");
    gpa_objects_describe(label, sizeof label, gpa_objects_get(o, 0));
    CHECK_STR(label, "Pod a");
    /* JSON objects are nodes of the reader's tree: take gives a copy, o keeps its node */
    cJSON *taken = gpa_objects_take(o, 0);
    CHECK(taken != NULL && taken != gpa_objects_get(o, 0));
    CHECK(cJSON_Compare(taken, gpa_objects_get(o, 0), 1));
    cJSON_Delete(taken);
    gpa_objects_free(o);

    /* a PodList (the API's typed list) is flattened too; "items" as a nested key is not */
    o = read_str("{\"kind\":\"PodList\",\"metadata\":{\"items\":[1]},\"items\":[{\"kind\":\"Pod\"},"
                 "{\"kind\":\"Pod\"}]}",
                 "x", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 2);
    CHECK_INT(gpa_objects_line(o, 1), 1);
    gpa_objects_free(o);

    /* escaped quotes and backslashes before the items do not confuse the line scanner */
    o = read_str("{\"kind\":\"List\",\"metadata\":{\"a\":\"x\\\"],[\\\\\"},\n\"b\":\"\\\\\","
                 "\"items\":[\n{\"kind\":\"Pod\"},\n\n{\"kind\":\"Job\"}]}",
                 "esc", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 2);
    CHECK_INT(gpa_objects_line(o, 0), 3);
    CHECK_INT(gpa_objects_line(o, 1), 5);
    gpa_objects_free(o);

    /* a JSON array; a single object; an AdmissionReview kept whole */
    o = read_str("[{\"kind\":\"Pod\"},\n{\"kind\":\"Job\"}]", "arr", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 2);
    CHECK_STR(kind_of(o, 1), "Job");
    CHECK_INT(gpa_objects_line(o, 1), 2);
    gpa_objects_free(o);
    o = read_str("\n\n{\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}", NULL, GPA_OK,
                 &e);
    CHECK_INT(gpa_objects_count(o), 1);
    CHECK_STR(kind_of(o, 0), "AdmissionReview");
    CHECK_STR(gpa_objects_origin(o, 0), "input:3");
    gpa_objects_free(o);

    /* multi-document YAML with a kubectl -o yaml List in the middle and an empty document */
    const char *yl = "apiVersion: v1\n"
                     "kind: Pod\n"
                     "metadata: {name: first}\n"
                     "---\n"
                     "---\n"
                     "apiVersion: v1\n"
                     "kind: List\n"
                     "items:\n"
                     "- apiVersion: v1\n"
                     "  kind: Pod\n"
                     "  metadata: {name: l1}\n"
                     "- apiVersion: batch/v1\n"
                     "  kind: Job\n"
                     "  metadata: {name: l2}\n"
                     "---\n"
                     "kind: Pod\n"
                     "metadata: {name: last, labels: {n: \"08\"}}\n";
    o = read_str(yl, "in.yaml", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 4);
    CHECK_STR(name_of(o, 0), "first");
    CHECK_STR(name_of(o, 1), "l1");
    CHECK_STR(name_of(o, 2), "l2");
    CHECK_STR(name_of(o, 3), "last");
    CHECK_INT(gpa_objects_line(o, 0), 1);
    CHECK_INT(gpa_objects_line(o, 1), 9);
    CHECK_INT(gpa_objects_line(o, 2), 12);
    CHECK_INT(gpa_objects_line(o, 3), 16);
    CHECK_INT(gpa_objects_doc(o, 3), 4);
    CHECK_STR(gpa_objects_origin(o, 2), "in.yaml:12");
    /* YAML objects are owned: take moves one out */
    taken = gpa_objects_take(o, 1);
    CHECK(taken != NULL && gpa_objects_get(o, 1) == NULL);
    cJSON_Delete(taken);
    gpa_objects_free(o);

    /* a List nested in a List stays an object (one level only) */
    o = read_str("kind: List\nitems:\n- kind: List\n  items: [{kind: Pod}]\n", "n", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 1);
    CHECK_STR(kind_of(o, 0), "List");
    gpa_objects_free(o);

    /* errors name source:line:col */
    o = read_str("kind: Pod\nmetadata:\n  name: a\n  name: b\n", "dup.yaml", GPA_EPARSE, &e);
    CHECK(o == NULL);
    CHECK_CONTAINS(e.message, "dup.yaml:4:3: duplicate key");
    o = read_str("{\n  \"kind\": \"Pod\",\n  \"x\": [1,]\n}", "bad.json", GPA_EPARSE, &e);
    CHECK(o == NULL);
    CHECK_CONTAINS(e.message, "bad.json:3:");
    o = read_str("kind: Pod\nmetadata: {name: [}\n", "bad.yaml", GPA_EPARSE, &e);
    CHECK(o == NULL);
    CHECK_CONTAINS(e.message, "bad.yaml:2:");
    o = read_str("a: &x 1\nb: *x\n", "alias.yaml", GPA_EPARSE, &e);
    CHECK(o == NULL);
    CHECK_CONTAINS(e.message, "alias.yaml:");

    /* empty input: no objects, not an error */
    o = read_str("", "empty", GPA_OK, &e);
    CHECK_INT(gpa_objects_count(o), 0);
    gpa_objects_free(o);
    /* UTF-16 (what PowerShell's > writes) is refused with the first NUL's position, as the
     * webhook refuses it, instead of being decoded by libyaml */
    {
        const char u16[] = "\xff\xfek\0i\0n\0d\0:\0 \0P\0o\0d\0\n\0";
        gpa_objects *w = NULL;
        memset(&e, 0, sizeof e);
        CHECK_INT(gpa_objects_read(&w, u16, sizeof u16 - 1, "u16.yaml", &e), GPA_EPARSE);
        CHECK(w == NULL);
        CHECK(strstr(e.message, "u16.yaml:1:4: a NUL byte") != NULL);
        const char nul2[] = "kind: Pod\nmetadata: {name: a\0}\n";
        CHECK_INT(gpa_objects_read(&w, nul2, sizeof nul2 - 1, "n.yaml", &e), GPA_EPARSE);
        CHECK(strstr(e.message, "n.yaml:2:19:") != NULL);
    }

    return check_done();
}
