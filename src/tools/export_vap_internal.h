/*
 * export_vap_internal.h - what export_vap.c (the document, its variables, YAML) and
 * export_vap_pod.c (the pod checks) share. Private to src/tools.
 */
#ifndef GPA_EXPORT_VAP_INTERNAL_H
#define GPA_EXPORT_VAP_INTERNAL_H

#include "cel_emit.h"
#include "gpu_admission/export_vap.h"

/* One ValidatingAdmissionPolicy being written: its variables and validations as YAML list
 * items (already indented for spec:). */
typedef struct gpa_vap_doc {
    const gpa_policy *p;
    gpa_sb vars;
    gpa_sb vals;
    size_t n_checks;
} gpa_vap_doc;

/* A variable `name` (read as variables.name by later ones). */
void gpa_vap_var(gpa_vap_doc *d, const char *name, const char *expr);
/* A check: the object is refused when deny_cond holds; msg is a CEL string expression, the
 * reason code goes in front of it ("untrusted-shared: ..."). */
void gpa_vap_check(gpa_vap_doc *d, const char *reason, const char *deny_cond, const char *msg);

/* The variables and checks of pods (export_vap_pod.c). */
void gpa_vap_pod(gpa_vap_doc *d);
/* The variables every kind needs: ns, labels (the CEL map expression given), create,
 * tenants<k>, declared, tenant, taken, nsTrusted, trusted (export_vap_pod.c). */
void gpa_vap_tenancy_vars(gpa_vap_doc *d, gpa_sb *b, const char *labels);
/* The variables and checks of ResourceClaims and ResourceClaimTemplates
 * (export_vap_claim.c). */
void gpa_vap_claim(gpa_vap_doc *d);

#endif
