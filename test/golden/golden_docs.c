/*
 * golden_docs.c - the golden runner's outputs for humans: docs/policy-examples.md generated
 * from the cases that carry a doc: title (so the examples cannot drift from the engine), and
 * the expect block record.sh writes for review.
 *
 * Must never decide what a case expects: it prints what the engine did for cases that
 * passed their own expectations (a failing case fails the docs check).
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_admission/yamljson.h"
#include "golden.h"

/* ---------------------------------------------------------------- docs */

static void print_block(FILE *out, const char *lang, const char *text)
{
    size_t n = strlen(text);
    fprintf(out, "```%s\n%s%s```\n\n", lang, text, n && text[n - 1] == '\n' ? "" : "\n");
}

static void doc_case(FILE *out, gcase *c)
{
    const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->spec, "doc"));
    const char *desc =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c->spec, "description"));
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(c->spec, "policy");
    char *pols = cJSON_IsString(pol) ? strdup(pol->valuestring) : cJSON_PrintUnformatted(pol);
    const gpa_decision *d = &c->d;
    fprintf(out, "### %s\n\n", title);
    if (desc) fprintf(out, "%s\n\n", desc);
    fprintf(out,
            "Golden case `test/golden/cases/%s`: policy `%s`, namespace `%s`, %s through the "
            "%s webhook.\n\n",
            c->name, pols, c->ns,
            c->op == GPA_OP_UPDATE   ? "UPDATE"
            : c->op == GPA_OP_CREATE ? "CREATE"
                                     : "other op",
            c->hook);
    free(pols);
    fprintf(out, "Input pod:\n\n");
    if (c->pod_text) {
        print_block(out, "yaml", c->pod_text);
    } else {
        char *y = gpa_json_to_yaml(c->pod);
        print_block(out, "yaml", y ? y : "");
        free(y);
    }
    if (d->patch) {
        cJSON *p = cJSON_Duplicate(d->patch, 1);
        unsubst_revision(p, gpa_policy_revision(c->policy));
        fprintf(out,
                "%s: the JSON Patch returned, one operation per line (`${REVISION}` is "
                "the policy's revision hash):\n\n```json\n[\n",
                d->allowed ? "Allowed" : "Denied");
        const cJSON *op;
        cJSON_ArrayForEach(op, p) {
            char *s = cJSON_PrintUnformatted(op);
            fprintf(out, "  %s%s\n", s ? s : "", op->next ? "," : "");
            free(s);
        }
        fprintf(out, "]\n```\n\n");
        cJSON_Delete(p);
    } else {
        fprintf(out, "%s, no patch%s\n\n", d->allowed ? "Allowed" : "**Denied**",
                d->reason ? "." : " (nothing to change).");
    }
    if (d->reason) fprintf(out, "Reason `%s`; message:\n\n", d->reason);
    if (d->message) print_block(out, "text", d->message);
    if (d->n_warnings) {
        fprintf(out, "Warnings:\n\n");
        size_t len = 1;
        for (size_t i = 0; i < d->n_warnings; i++)
            len += strlen(d->warnings[i]) + 1;
        char *s = calloc(1, len);
        for (size_t i = 0; i < d->n_warnings; i++) {
            strcat(s, d->warnings[i]);
            strcat(s, "\n");
        }
        print_block(out, "text", s);
        free(s);
    }
    if (d->n_audit) {
        fprintf(out, "Audit annotations:");
        for (size_t i = 0; i < d->n_audit; i++)
            fprintf(out, "%s `%s`: `%s`", i ? "," : "", d->audit_keys[i],
                    strlen(d->audit_values[i]) > 60 ? "(the message above)" : d->audit_values[i]);
        fprintf(out, "\n\n");
    }
}

typedef struct doc_entry {
    int rank;
    size_t seq;
    char *title;
    char *text;
} doc_entry;

/* Mutations first (by number), then denials, then the rest, each group by title. */
static int doc_rank(const char *title)
{
    if (strncmp(title, "Mutation", 8) == 0) return 0;
    if (strncmp(title, "Denial", 6) == 0) return 1;
    if (strncmp(title, "Enforcement", 11) == 0) return 2;
    return 3;
}

static int cmp_docs(const void *a, const void *b)
{
    const doc_entry *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    int c = strcmp(x->title, y->title);
    return c ? c : (x->seq < y->seq ? -1 : 1);
}

int gen_docs(const char *cases_dir, const char *header)
{
    char *h = read_file(header, NULL);
    if (!h) {
        fprintf(stderr, "cannot read %s\n", header);
        return 2;
    }
    fputs(h, stdout);
    free(h);
    char **names;
    int failed = 0;
    size_t n = list_cases(cases_dir, &names), nd = 0;
    doc_entry *docs = calloc(n ? n : 1, sizeof *docs);
    for (size_t i = 0; i < n; i++) {
        gcase c;
        const char *title;
        if (run_case(&c, cases_dir, names[i]) &&
            (title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c.spec, "doc")))) {
            size_t len = 0;
            char *text = NULL;
            FILE *mem = open_memstream(&text, &len);
            doc_case(mem, &c);
            fclose(mem);
            docs[nd++] = (doc_entry){doc_rank(title), i, strdup(title), text};
        }
        if (c.failed) failed++;
        free_case(&c);
        free(names[i]);
    }
    free(names);
    qsort(docs, nd, sizeof *docs, cmp_docs);
    for (size_t i = 0; i < nd; i++) {
        fputs(docs[i].text, stdout);
        free(docs[i].text);
        free(docs[i].title);
    }
    free(docs);
    return failed;
}

/* ---------------------------------------------------------------- record */

/* Prints the decision as an expect block, for a human to review before it goes into a
 * case.yaml (golden_runner CASES POLICIES --record NAME). */
void record_case(gcase *c)
{
    const gpa_decision *d = &c->d;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddBoolToObject(e, "allowed", d->allowed);
    if (d->reason) cJSON_AddStringToObject(e, "reason", d->reason);
    if (d->message) cJSON_AddStringToObject(e, "message", d->message);
    if (d->rule) cJSON_AddStringToObject(e, "rule", d->rule);
    if (d->pool) cJSON_AddStringToObject(e, "pool", d->pool);
    if (d->n_warnings) {
        cJSON *w = cJSON_AddArrayToObject(e, "warnings");
        for (size_t i = 0; i < d->n_warnings; i++)
            cJSON_AddItemToArray(w, cJSON_CreateString(d->warnings[i]));
    }
    if (d->patch) {
        cJSON *p = cJSON_Duplicate(d->patch, 1);
        unsubst_revision(p, gpa_policy_revision(c->policy));
        cJSON_AddItemToObject(e, "patch", p);
    }
    cJSON *wrap = cJSON_CreateObject();
    cJSON_AddItemToObject(wrap, "expect", e);
    char *y = gpa_json_to_yaml(wrap);
    fputs(y ? y : "", stdout);
    free(y);
    cJSON_Delete(wrap);
}
