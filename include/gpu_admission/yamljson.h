/*
 * yamljson.h - YAML <-> cJSON for Kubernetes objects (pods given to the CLI, fixtures).
 *
 * The policy loader does NOT use this: it walks libyaml events itself to keep line:col.
 */
#ifndef GPA_YAMLJSON_H
#define GPA_YAMLJSON_H

#include <cjson/cJSON.h>
#include "common.h"

/* Parses every document of a YAML stream into a cJSON array (one element per document;
 * empty documents skipped). Plain scalars are typed as kubectl types them (YAML 1.2 core
 * schema): null/Null/NULL/~/empty -> null, true/True/TRUE/false/False/FALSE -> bool, decimal
 * ints (no leading zeros) and floats -> number, anything else ("yes", "08", "1Gi") -> string;
 * quoted and block scalars stay strings. Anchors/aliases and duplicate keys are refused
 * (billion-laughs). Errors are GPA_EPARSE/GPA_ERANGE with "LINE:COL: message". */
int gpa_yaml_to_json(cJSON **out_docs, const char *buf, size_t len, gpa_error *err);

/* Block-style YAML for one value, strings quoted whenever a plain scalar would change type.
 * Caller frees. */
char *gpa_json_to_yaml(const cJSON *v);

/* true when the first non-blank byte is '{' or '[' (treat input as JSON). */
bool gpa_looks_like_json(const char *buf, size_t len);

#endif
