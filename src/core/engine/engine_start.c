/*
 * engine_start.c - the start both webhooks share (gpa_engine_mutate and gpa_engine_validate):
 * argument checks, the DELETE/CONNECT short cut, the pod's GPU demand and the first matching
 * rule.
 *
 * Its own file so that the decision builder (engine_decision.c) and the matcher
 * (engine_match.c) never call each other in a circle: this file calls both, they call only
 * down. It must never judge or mutate anything itself.
 */
#include <stddef.h>

#include "engine/engine_internal.h"

bool gpa_eng_start(gpa_eng *e, gpa_decision *out, const gpa_policy *p, const gpa_request *req,
                   gpa_error *err, int *rc)
{
    if (!out || !p || !req) {
        *rc = gpa_fail(err, GPA_EINVAL, "engine: missing decision, policy or request");
        return false;
    }
    gpa_eng_init(e, out, p, req);
    if (req->op == GPA_OP_DELETE || req->op == GPA_OP_CONNECT) {
        gpa_eng_explain(e, "operation is not CREATE or UPDATE: nothing to do");
        *rc = gpa_eng_finish(e, err);
        return false;
    }
    if (!gpa_is_object(req->object)) {
        gpa_decision_clear(out);
        *rc = gpa_fail(err, GPA_EINVAL, "engine: the request carries no pod object");
        return false;
    }
    gpa_eng_demand(e);
    out->gpu_pod = e->gpus > 0;
    gpa_eng_match(e);
    return true;
}
