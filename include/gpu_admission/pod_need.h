/*
 * pod_need.h - how Kubernetes turns per-container requests of one resource into the pod's
 * need (the scheduler's and kubelet's PodRequests, KEP-753 native sidecars; kubernetes
 * staging/src/k8s.io/component-helpers/resource/helpers.go): walking initContainers in
 * order, a restartable init container (restartPolicy: Always, a sidecar) keeps running, so
 * it adds to a running sidecar sum; any other init container needs its own request plus the
 * sidecars started before it; the pod needs the larger of the largest such init need and
 * the sum over containers plus all sidecars.
 *
 * The one place this rule lives: the engine's GPU count and the simulator's per-resource
 * need both feed containers through it, so the webhook, `test`, `diff`, `simulate` and the
 * workload answer count alike. Pure; never allocates.
 */
#ifndef GPA_POD_NEED_H
#define GPA_POD_NEED_H

#include <cjson/cJSON.h>
#include "common.h"

typedef struct gpa_pod_need {
    int64_t main;     /* sum over spec.containers */
    int64_t sidecars; /* sum over the restartable init containers seen so far */
    int64_t init;     /* largest init container need seen so far */
} gpa_pod_need;

/* Is this element of spec.initContainers a native sidecar (restartPolicy "Always")? A
 * field of the wrong type reads as absent: an ordinary init container. */
bool gpa_init_container_is_sidecar(const cJSON *c);

/* One container's request (v >= 0), in pod order: every spec.containers element, then every
 * spec.initContainers element in order with whether it is a sidecar. Sums stick at
 * INT64_MAX instead of overflowing. */
void gpa_pod_need_container(gpa_pod_need *n, int64_t v);
void gpa_pod_need_init(gpa_pod_need *n, int64_t v, bool sidecar);
/* The pod's need: max(main + sidecars, init). */
int64_t gpa_pod_need_total(const gpa_pod_need *n);

#endif
