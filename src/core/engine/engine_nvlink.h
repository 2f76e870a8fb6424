/*
 * engine_nvlink.h - the IMEX channel check of engine_nvlink.c as the workload review needs it
 * at apply time (POLICY.md "Topology levels"; docs/policy.md "Multi-node NVLink"): whether a
 * pod (a template's pod) lists the channel claim of a pool's topology.imexChannel in every
 * container asking GPUs. The pod path's check is gpa_eng_check_imex (engine_internal.h).
 */
#ifndef GPA_ENGINE_NVLINK_H
#define GPA_ENGINE_NVLINK_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "policy/policy_model.h"

/* true when t needs no channel, or pod has a spec.resourceClaims entry whose
 * resourceClaimTemplateName matches t's claimTemplate and every container and init container
 * asking GPUs lists one such entry in resources.claims. */
bool gpa_imex_pod_has_channel(const gpa_policy *p, const gpa_topology *t, const cJSON *pod);

#endif
