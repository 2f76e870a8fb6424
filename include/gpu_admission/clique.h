/*
 * clique.h - the nvidia.com/gpu.clique node label as GPU feature discovery writes it on nodes
 * whose GPUs are attached to an NVLink fabric: <clusterUUID>.<cliqueId> (NVIDIA/
 * k8s-device-plugin internal/lm/imex.go, internal/resource/nvml-device.go GetFabricIDs). The
 * whole value names one NVLink domain; it is never split. Shared by the core (check's
 * warning, docs/policy.md "Multi-node NVLink") and the simulator (generated nodes).
 */
#ifndef GPA_CLIQUE_H
#define GPA_CLIQUE_H

#include <stddef.h>

#define GPA_LABEL_CLIQUE "nvidia.com/gpu.clique"

/* NULL when v is a value GFD writes: the fabric's cluster UUID in canonical form (8-4-4-4-12
 * hex digits, lower case as uuid.String() prints them), '.', the clique id in decimal (a
 * uint32, no leading zero); else what is wrong with it. */
const char *gpa_clique_invalid(const char *v);

/* Writes the clique value of cluster `seed`'s clique `id` into buf (48 bytes hold any): a
 * UUID derived from seed (FNV-1a; version 4 / variant bits set so it reads as a real one), so
 * simulated inventories carry the real format, reproducibly. */
void gpa_clique_format(char *buf, size_t cap, const char *seed, unsigned long id);

#endif
