/*
 * export_map.h - the policy compiled to a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1,
 * GA and on by default since Kubernetes 1.36) and its binding, so the API server places pods
 * as the mutating webhook does while the webhook is away (`gpu-admission export map`).
 */
#ifndef GPA_EXPORT_MAP_H
#define GPA_EXPORT_MAP_H

#include "gpu_admission/policy.h"

/* *yaml: the multi-document YAML (a `#` comment per rule the MAP cannot express at its top,
 * then the policy and its binding). *gaps: one line per such rule ("" when none), for stderr.
 * Both malloc'd; GPA_ENOMEM. */
int gpa_export_map(char **yaml, char **gaps, const gpa_policy *p);

#endif
