/*
 * describe.c - how the subcommands name an object in their messages: one function, so a
 * Deployment is "Deployment ns/web" in diff, review and test and "Deployment/web" in mutate
 * (its documented form), a template adds its path, review adds where it was read.
 * Never reads anything but the object it is given.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, a) : NULL;
    if (b) v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, b) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void gpa_cli_describe(char *buf, size_t cap, const cJSON *obj, size_t doc_number,
                      gpa_cli_label_style style, const char *template_path, const char *origin)
{
    if (!buf || !cap) return;
    /* the object's own part stops at 299 bytes whatever follows, as it always has */
    char label[300];
    if (style == GPA_CLI_LABEL_OBJECT) {
        gpa_objects_describe(label, sizeof label, obj);
    } else {
        const char *kind = str_at(obj, "kind", NULL);
        const char *name = str_at(obj, "metadata", "name");
        if (!name) name = str_at(obj, "metadata", "generateName");
        if (kind && name)
            snprintf(label, sizeof label, "%s/%s", kind, name);
        else if (kind)
            snprintf(label, sizeof label, "%s (document %zu)", kind, doc_number);
        else
            snprintf(label, sizeof label, "document %zu", doc_number);
    }
    snprintf(buf, cap, "%s", label);
    size_t n = strlen(buf);
    if (template_path && n < cap) n += (size_t)snprintf(buf + n, cap - n, " %s", template_path);
    if (origin && n < cap) snprintf(buf + n, cap - n, " (%s)", origin);
}
