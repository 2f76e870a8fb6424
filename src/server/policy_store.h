/*
 * policy_store.h - the policy set the server answers with, swapped whole on reload.
 *
 * A request takes a reference to the current snapshot once and uses it to the end, so a
 * reload never changes the policy under a request in flight; the old set is freed when the
 * last request holding it releases it.
 *
 * Must never: hand out a snapshot without a reference, or modify an installed set.
 */
#ifndef GPA_POLICY_STORE_H
#define GPA_POLICY_STORE_H

#include <stdbool.h>

#include "gpu_admission/policy.h"

typedef struct gpa_policy_snap gpa_policy_snap;

/* The current snapshot with one reference for the caller; NULL before the first install. */
gpa_policy_snap *gpa_policy_store_acquire(void);
const gpa_policy *gpa_policy_snap_policy(const gpa_policy_snap *s);
void gpa_policy_store_release(gpa_policy_snap *s);

/* Takes ownership of p (one reference) and makes it current. GPA_ENOMEM leaves the old set
 * in place and unrefs p. */
int gpa_policy_store_install(gpa_policy *p);
bool gpa_policy_store_ready(void);
/* The current revision ("" before the first install). */
void gpa_policy_store_revision(char out[65]);
void gpa_policy_store_shutdown(void);

#endif
