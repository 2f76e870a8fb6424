/*
 * policyreport.h - findings on existing objects as wgpolicyk8s.io/v1alpha2 PolicyReport and
 * ClusterPolicyReport objects (`gpu-admission audit`), the format Kyverno, Kubewarden and
 * Trivy write and Policy Reporter reads.
 *
 * Each object is judged under one policy set exactly as `diff` judges it under each of its
 * two (impact.h: already-mutated pods judged as the request they came from when it can be
 * rebuilt), and becomes one result per rule it reached: pass (admitted; the webhook's
 * warnings are notes on what placement wrote, not findings), warn (a violation let through
 * by enforcement warn/audit, or refused as stored when its original request could not be
 * rebuilt), fail (refused), error
 * (the webhooks could not answer it: the server's 400). Objects no rule reaches and nothing
 * is said about (a CPU pod, a Service) get no result; they are counted. Pure: no I/O.
 */
#ifndef GPA_POLICYREPORT_H
#define GPA_POLICYREPORT_H

#include <cjson/cJSON.h>
#include "common.h"
#include "policy.h"

typedef struct gpa_audit gpa_audit;

/* max_results: results per report object before it is split into gpu-admission-2, -3, ...
 * (an object in etcd is at most ~1.5 MB; 0 = no limit). p is referenced, not copied: it
 * must outlive the audit. */
int gpa_audit_new(gpa_audit **out, const gpa_policy *p, size_t max_results, gpa_error *err);

/* Judges obj and records its results. origin (may be NULL) is where it was read
 * ("cluster.json:12"), kept in the summary. GPA_ENOMEM only: an object the webhooks cannot
 * answer is an error result, not a failure of the audit. */
int gpa_audit_object(gpa_audit *a, const cJSON *obj, const char *origin, gpa_error *err);

/* The report objects: one PolicyReport per namespace that has results (sorted by name), then
 * always one ClusterPolicyReport (cluster-scoped objects; an empty one clears stale
 * results when applied). A JSON array the caller owns; NULL when memory runs out. */
cJSON *gpa_audit_reports(const gpa_audit *a);

/* {"policyRevision", "objects", "judged", "notJudged", "noRule", "results": {pass, fail,
 *  warn, error}, "namespaces": [{"namespace", pass, fail, warn, error}],
 *  "findings": [{"result", "object", "origin", "rule", "message"}] (every non-pass result)}.
 * The caller owns it; NULL when memory runs out. */
cJSON *gpa_audit_summary(const gpa_audit *a);

void gpa_audit_free(gpa_audit *a);

#endif
