/*
 * labels.h - the names gpu-admission puts on, or reads from, pod metadata that code outside
 * the core must spell the same way (the simulator reads them from the pods the engine
 * admitted). POLICY.md defines their meaning; the core's pod view defines the rest.
 *
 * Names only: nothing here may carry code or a second spelling of a name the core uses.
 */
#ifndef GPA_LABELS_H
#define GPA_LABELS_H

/* The tenant a pod belongs to (label): the mutating webhook adds it, tenant anti-affinity
 * selects on it. */
#define GPA_LABEL_TENANT "gpu-admission.io/tenant"
/* GPU memory a pod asks for, a Kubernetes quantity (annotation). */
#define GPA_ANN_GPU_MEMORY "gpu-admission.io/gpu-memory"

#endif
