/*
 * mig.h - the built-in MIG catalog: which profiles each GPU model can be partitioned into.
 * The data lives in one table in src/core/mig.c with its source named there.
 */
#ifndef GPA_MIG_H
#define GPA_MIG_H

#include "common.h"

typedef struct gpa_mig_profile {
    const char *name;      /* "1g.10gb", "1g.10gb+me" */
    int slices;            /* compute slices: the N of "Ng" */
    int64_t mem_bytes;     /* the name's GB x 10^9 */
    int max_instances;     /* per GPU */
    const char *resource;  /* mixed-strategy resource: "nvidia.com/mig-1g.10gb.me" */
} gpa_mig_profile;

typedef struct gpa_mig_model {
    const char *name;      /* "A100-80GB" (aliases are separate rows of the table) */
    size_t n_profiles;
    const gpa_mig_profile *profiles; /* in the catalog's order */
} gpa_mig_model;

/* NULL when the model is not in the catalog. */
const gpa_mig_model *gpa_mig_model_find(const char *name);
/* NULL when the model has no such profile. */
const gpa_mig_profile *gpa_mig_profile_find(const gpa_mig_model *m, const char *profile);
/* Iterate model names for messages: returns NULL past the end. */
const char *gpa_mig_model_name_at(size_t i);

#endif
