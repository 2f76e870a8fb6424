/*
 * policy_nvlink.h - NVLink domains that span nodes (GB200 / GB300 NVL72): a pool's
 * topology.imexChannel block, the ComputeDomain channel template names it accepts, and the
 * nvidia.com/gpu.clique value GPU feature discovery writes (<clusterUUID>.<cliqueId>).
 *
 * Pure: read by the loader (the block), the engine (a pod's channel claim) and check (clique
 * values pinned in a pool's nodeSelector).
 */
#ifndef GPA_POLICY_NVLINK_H
#define GPA_POLICY_NVLINK_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu_admission/clique.h"
#include "policy/policy_model.h"

#define GPA_IMEX_TEMPLATE_MAX 253 /* a ResourceClaimTemplate name is a DNS subdomain */

/* Is the pool's island declared to span nodes, so a gang on several nodes needs a channel? */
static inline bool gpa_imex_required(const gpa_topology *t)
{
    return t->imex_template != NULL;
}

/* Does a pod's resourceClaimTemplateName name the pool's channel template? An exact name, or
 * with one '*' in the pattern any run of characters there ("*-channel", "imex-*"). */
bool gpa_imex_template_match(const char *pattern, const char *name);

/* Is pattern a valid topology.imexChannel.claimTemplate? NULL when yes, else why not. */
const char *gpa_imex_template_invalid(const char *pattern);

struct gpa_sb;
/* check's warnings: a pool's nodeSelector pinning nvidia.com/gpu.clique to a value GFD never
 * writes (no node would match it). */
void gpa_clique_warnings(struct gpa_sb *o, const gpa_policy *p);

#endif
