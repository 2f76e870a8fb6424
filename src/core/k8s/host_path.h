/*
 * host_path.h - which node paths a hostPath volume may not reach in an untrusted pod (POLICY.md
 * "Isolation by default"): device nodes, the NVIDIA toolkit's device-request and driver
 * directories, container runtime sockets, the kubelet's device plugin sockets and CDI specs.
 * Private to src/core.
 *
 * A path is compared after the node would resolve it: made absolute, "//", "." and trailing
 * slashes dropped, ".." applied after the node's own symlinks (/var/run -> /run), so
 * "/var/run/../dev" is /dev, as on the node, not /var/dev.
 */
#ifndef GPA_HOST_PATH_H
#define GPA_HOST_PATH_H

#include <stddef.h>

typedef struct gpa_host_path_entry {
    const char *path; /* canonical: /run, never /var/run */
    const char *what; /* what it gives a container, for messages */
} gpa_host_path_entry;

/* The protected path a hostPath of `path` reaches: one it equals, lies under, or is an
 * ancestor of (mounting "/" or "/run" mounts them too). *out NULL when none. canon (cap
 * bytes) receives the canonical form; a path that does not fit is judged as "/" (everything).
 * Never fails. */
void gpa_host_path_reach(const gpa_host_path_entry **out, char *canon, size_t cap,
                         const char *path);

/* The table, for docs and tests. */
const gpa_host_path_entry *gpa_host_path_table(unsigned *n);

#endif
