/*
 * toolkit_env.h - the container environment variables the NVIDIA Container Toolkit reads to
 * decide which devices a container gets (POLICY.md "Isolation by default"), and which of their
 * values hand a container devices beside the ones the device plugin allocated. Private to
 * src/core.
 *
 * The list and its source (NVIDIA/nvidia-container-toolkit v1.20.0) are in docs/security.md;
 * the names the toolkit reads but that grant nothing (NVIDIA_DRIVER_CAPABILITIES, other
 * NVIDIA_REQUIRE_*, NVIDIA_DISABLE_REQUIRE) are not in the table on purpose.
 */
#ifndef GPA_TOOLKIT_ENV_H
#define GPA_TOOLKIT_ENV_H

#include <stdbool.h>

/* Which values of a name grant devices. */
typedef enum {
    GPA_TKENV_LIST,    /* a device list: every value but "void" and "none" */
    GPA_TKENV_ANY,     /* every value, empty included */
    GPA_TKENV_ENABLED, /* the value "enabled" (a gated device mode) */
    GPA_TKENV_EMPTY,   /* the empty value (it turns a CUDA image into a legacy one) */
} gpa_tkenv_grant;

typedef struct gpa_toolkit_env {
    const char *name;
    gpa_tkenv_grant grant;
    const char *reason; /* the denial reason: visible-devices for the two names checked first */
    const char *what;   /* what the toolkit does with it, for messages */
} gpa_toolkit_env;

/* The entry of an environment variable name the toolkit reads to hand out devices; NULL for
 * any other name (most names are refused at their first byte). */
const gpa_toolkit_env *gpa_toolkit_env_find(const char *name);

/* Does this value of t grant devices? value is the literal `value` (NULL when the entry has
 * none: Kubernetes reads that as empty); from_ref: the value comes from valueFrom, unknown at
 * admission. A value holding "$(" is unknown too: the kubelet expands $(VAR) references. */
bool gpa_toolkit_env_grants(const gpa_toolkit_env *t, const char *value, bool from_ref);

/* Can an envFrom source with this prefix (NULL or "" when none) define a name of the table?
 * Its keys are unknown at admission, so yes unless no table name begins with the prefix.
 * Returns the first such name, NULL when none can. */
const char *gpa_toolkit_env_prefix_reaches(const char *prefix);

/* The table, for docs and tests. */
const gpa_toolkit_env *gpa_toolkit_env_table(unsigned *n);

#endif
