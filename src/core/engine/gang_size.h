/*
 * gang_size.h - the gang size a pod says it belongs to (POLICY.md "Topology levels"): our
 * annotation, else what the training operators put on the pods they create. One reader for
 * the pod path (engine_gang.c) and the apply-time check of a workload's templates
 * (review_workload.c), so both read a pod the same way.
 */
#ifndef GPA_GANG_SIZE_H
#define GPA_GANG_SIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/pod.h"
#include "policy/policy_gang.h"

typedef struct gpa_gang_read {
    int64_t size;     /* pods in the gang as the pod says; 0 = unknown (or bad) */
    gpa_gang_src src; /* where size came from (NONE: unknown) */
    bool bad;         /* gpu-admission.io/gang-size written but not a size (src OURS) */
    /* Kueue's / KAI's topology annotation on the pod: 1 required, 2 preferred, 0 none */
    unsigned char kueue_ann, kai_ann;
} gpa_gang_read;

/* Reads v's gang size in the order of gpa_gang_src. The operators' env (PET_NNODES,
 * TF_CONFIG) is read only on a pod that carries a training.kubeflow.org/ or jobset.sigs.k8s.io/
 * label, or when operator_pod says its operator will add one (a template judged at apply
 * time). GPA_OK, or GPA_ENOMEM (parsing TF_CONFIG); on GPA_ENOMEM the size is unknown. */
int gpa_gang_read_pod(gpa_gang_read *out, const gpa_pod *v, bool operator_pod);

#endif
