/*
 * engine_mutate_validate.h - the one engine entry point the workload dispatch
 * (webhook/review_workload.c) needs beyond the public engine.h: a Pod CREATE judged as the
 * API server runs it. Private to src/core; defined in engine_mutate.c.
 *
 * Must never expose the engine's per-request state (engine_internal.h): a caller above the
 * engine sees only decisions, policies and requests.
 */
#ifndef GPA_ENGINE_MUTATE_VALIDATE_H
#define GPA_ENGINE_MUTATE_VALIDATE_H

#include "gpu_admission/engine.h"

/* A Pod CREATE as the API server runs it: the mutating decision (mout, patch_only honoured)
 * and the validating decision on the mutated pod (vout; left "allowed", nothing else, when
 * the mutating one denies). The mutated pod is never deep-copied: it is validated as the
 * working copy placement built. For judging workload templates (review_workload.c). */
int gpa_engine_mutate_validate(gpa_decision *mout, gpa_decision *vout, const gpa_policy *p,
                               const gpa_request *req, gpa_error *err);

#endif
