/*
 * mig.h - the built-in MIG catalog: which profiles each GPU model can be partitioned into.
 * The data lives in one table in src/core/k8s/mig.c with its source named there.
 */
#ifndef GPA_MIG_H
#define GPA_MIG_H

#include "common.h"

typedef struct gpa_mig_profile {
    const char *name;     /* "1g.10gb", "1g.10gb+me" */
    int slices;           /* compute slices: the N of "Ng" */
    int64_t mem_bytes;    /* what auto sizes by: min(name_bytes, real_bytes when known) */
    int max_instances;    /* per GPU */
    const char *resource; /* mixed-strategy resource: "nvidia.com/mig-1g.10gb.me" */
    int mem_slots;        /* memory slices one instance occupies (placement size) */
    unsigned start_mask;  /* bit s set: an instance may start at memory slice s */
    int64_t name_bytes;   /* the name's GB x 10^9 */
    int64_t real_bytes;   /* the memory nvidia-smi mig -lgip lists; 0 when no listing was found */
    const char *real_src; /* where real_bytes comes from, NULL when 0 */
} gpa_mig_profile;

typedef struct gpa_mig_model {
    const char *name; /* "A100-80GB" (aliases are separate rows of the table) */
    size_t n_profiles;
    const gpa_mig_profile *profiles; /* in the catalog's order */
    int mem_slots;                   /* memory slices per GPU: 8 (A30: 4) */
    int compute_slices;              /* compute slices per GPU: 7 (A30: 4) */
    const char *const *products;     /* GFD nvidia.com/gpu.product values, NULL-terminated */
} gpa_mig_model;

/* NULL when the model is not in the catalog. */
const gpa_mig_model *gpa_mig_model_find(const char *name);
/* NULL when the model has no such profile. */
const gpa_mig_profile *gpa_mig_profile_find(const gpa_mig_model *m, const char *profile);
/* The model a node's nvidia.com/gpu.product label names, by exact value (the model's listed
 * GFD products or "NVIDIA-<model>"), after dropping GFD's "-SHARED" and "-MIG-<profile>"
 * suffixes; NULL for any other card. Never a substring match: NVIDIA-GB200 is not a B200. */
const gpa_mig_model *gpa_mig_model_for_product(const char *label);
/* Iterate model names for messages: returns NULL past the end. */
const char *gpa_mig_model_name_at(size_t i);

#define GPA_MIG_MAX_INSTANCES 8 /* no GPU in the catalog holds more (8 memory slices) */

/* Can these n instances (profiles of m, repeats allowed, any order) exist on one GPU at once?
 * True when every instance gets a start slice from its profile's allowed starts with no two
 * overlapping, the compute slices add up to at most the model's, no profile exceeds its
 * max_instances and at most one "+me" instance exists (a GPU has one set of media engines).
 * starts_out (optional, n entries) receives each instance's start slice, in input order.
 * An exact search (at most 8 instances), not a greedy one. */
bool gpa_mig_layout_valid(int *starts_out, const gpa_mig_model *m,
                          const gpa_mig_profile *const *inst, size_t n);

/* mig-parted's "all-balanced" layout for m (config-default.yaml): 2x the smallest 1g, 1x the
 * 2g and 1x the 3g profile (A30, RTX PRO 6000: 2x 1g, 1x 2g). Writes up to cap profiles into
 * out, returns the count (0 when m is NULL or has fewer than 4 compute slices: mig-parted
 * defines none for the RTX PRO 5000/4500). */
size_t gpa_mig_balanced(const gpa_mig_profile **out, size_t cap, const gpa_mig_model *m);

#endif
