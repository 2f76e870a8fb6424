/*
 * export_vap.h - `gpu-admission export vap`: the policy set compiled into a
 * ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) and its binding, so the API
 * server itself refuses what the validating webhook refuses wherever CEL can decide it from the
 * pod and the request alone, also when the webhook is down or its configuration deleted.
 *
 * Tools layer (src/tools/export_vap.c, export_vap_pod.c): offline, reads the loaded policy
 * model; the server never links it.
 */
#ifndef GPA_EXPORT_VAP_H
#define GPA_EXPORT_VAP_H

#include "policy.h"

/* The multi-document YAML: `#` comment lines first (what is not compiled, one per line, the
 * same lines as gpa_export_vap_gaps), then the policy and its binding, objects named
 * gpu-admission-.... *out is malloc'ed (free it). GPA_ENOMEM. */
int gpa_export_vap(char **out, const gpa_policy *p, gpa_error *err);

/* The checks of the validating webhook the export does not compile (CEL cannot decide them
 * from the object, or the export leaves them to the webhook), one per line, each ending "\n".
 * Static text. */
const char *gpa_export_vap_gaps(void);

#endif
