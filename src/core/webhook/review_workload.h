/*
 * review_workload.h - judging a workload object (Deployment, Job, PyTorchJob, ...) on the
 * validating webhook: every pod template through the Pod path. Private to src/core (the
 * review codec).
 */
#ifndef GPA_REVIEW_WORKLOAD_H
#define GPA_REVIEW_WORKLOAD_H

#include <cjson/cJSON.h>
#include "gpu_admission/engine.h"
#include "policy/workload_internal.h"

/* What the codec writes: out->allowed, out->message (denial, or under warn what was let
 * through), out->reason / rule / pool (the first refused template's, else the first GPU
 * template's), out->gpu_pod (some template asks for GPUs), out->warnings (in out->priv_arena).
 * *judged is false when nothing was judged (enforcement off, no template, an UPDATE that
 * leaves every template as it was): the codec answers "allowed", untouched, as for a kind it
 * does not police. Never patches. GPA_OK, or GPA_ENOMEM / another engine error. */
int gpa_review_workload(gpa_decision *out, bool *judged, const gpa_policy *p, const gpa_wl_kind *k,
                        gpa_operation op, const cJSON *obj, const cJSON *old, const char *ns,
                        gpa_error *err);

#endif
