/*
 * policy_isolation.h - spec.isolation (policy_isolation.c): the schedulers besides the default
 * one that a pod on a shared (time-slicing/mps) pool may name, read by the loader, asked by the
 * engine, linted by `check`. Private to src/core.
 */
#ifndef GPA_POLICY_ISOLATION_H
#define GPA_POLICY_ISOLATION_H

#include "gpu_admission/strbuf.h"
#include "policy/policy_loader.h"

/* The scheduler every cluster runs; a pod without spec.schedulerName gets it. */
#define GPA_DEFAULT_SCHEDULER "default-scheduler"

/* spec.isolation of one document; key is its key node (for "already defined at" positions). */
void gpa_policy_load_isolation(loader *L, const gpa_ynode *key, const gpa_ynode *n);

/* May a pod on a shared pool be scheduled by name (spec.schedulerName; NULL or "" when not
 * set)? The default scheduler always; others only when spec.isolation.schedulers lists them. */
bool gpa_isolation_scheduler_ok(const gpa_policy *p, const char *name);

/* check's warnings about the block, one `file:line:col: warning: ...` line each, appended to
 * o: schedulers listed where no pool is shared, the default scheduler listed. */
void gpa_isolation_warnings(gpa_sb *o, const gpa_policy *p);

#endif
