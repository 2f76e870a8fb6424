/*
 * objects.h - reads one input's bytes (JSON, YAML, multi-document YAML) into a flat list of
 * Kubernetes objects, remembering where each was written. Shared by `test`, `diff` and the
 * simulator so all of them accept exactly the same inputs.
 *
 * Flattening: a `kind: List` (or any kind ending in "List" that has an `items` array, as
 * `kubectl get a,b -o json|yaml` prints) becomes its items; a top-level JSON array becomes its
 * elements. Everything else (an AdmissionReview included) is kept whole; callers decide what
 * they can judge. Empty YAML documents are skipped. Pure: bytes in, no I/O.
 */
#ifndef GPA_OBJECTS_H
#define GPA_OBJECTS_H

#include <cjson/cJSON.h>
#include "common.h"

typedef struct gpa_objects gpa_objects;

/* Parses buf. source_name (e.g. the file name, "stdin") prefixes origins and errors; NULL
 * means "input". JSON is read with the codec's strict reader (what the server accepts);
 * YAML as gpa_yaml_to_json reads it (kubectl typing, anchors and duplicate keys refused).
 * On a parse error: GPA_EPARSE (or GPA_ERANGE) with "source:line:col: text" in err. */
int gpa_objects_read(gpa_objects **out, const char *buf, size_t len, const char *source_name,
                     gpa_error *err);

size_t gpa_objects_count(const gpa_objects *o);

/* The i-th object, owned by o; read-only (for JSON input it is a node of the codec reader's
 * tree: never modify, detach or cJSON_Delete it; gpa_objects_take gives an own copy). */
const cJSON *gpa_objects_get(const gpa_objects *o, size_t i);

/* Where the i-th object was written: "source:line" when the line is known (always for YAML
 * and JSON input), else "source#docN". Owned by o. */
const char *gpa_objects_origin(const gpa_objects *o, size_t i);

/* 1-based line of the object's first character, 0 when unknown. */
int gpa_objects_line(const gpa_objects *o, size_t i);

/* 1-based index of the YAML document (or 1 for JSON) the object came from. */
size_t gpa_objects_doc(const gpa_objects *o, size_t i);

/* The i-th object for the caller to own and change: taken out of o (o then holds NULL
 * there) when it was built from YAML, a deep copy when it is a node of the JSON reader's
 * read-only tree (JSON input is not copied when read). NULL when memory runs out. */
cJSON *gpa_objects_take(gpa_objects *o, size_t i);

void gpa_objects_free(gpa_objects *o);

/* "Pod inference-a/small", "Deployment train" (no namespace), "Pod (no name)", "object"
 * (no kind): a short label for messages, written into buf (always NUL-terminated). */
void gpa_objects_describe(char *buf, size_t cap, const cJSON *obj);

#endif
