/*
 * claim.h - a read-only view of a DRA ResourceClaim or ResourceClaimTemplate
 * (resource.k8s.io v1, v1beta2 and v1beta1 layouts), private to src/core: the device
 * requests and every firstAvailable alternative, their counts, allocationMode, adminAccess,
 * CEL selectors, capacity requests and device tolerations, and the claim's opaque configs
 * with the NVIDIA driver's resource.nvidia.com/v1beta1 kinds parsed strictly.
 *
 * Never allocates and never modifies the object: the view points into it. Enforces the API's
 * own limits (32 requests, 8 alternatives, 32 selectors, 32 configs of at most 32 distinct
 * request names, 16 tolerations, 10 KiB CEL expressions and opaque parameters) with a message
 * naming the field, so a hostile claim is refused with a reason, never read past a bound.
 */
#ifndef GPA_CLAIM_H
#define GPA_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The limits of k8s.io/api/resource/v1 (types.go). */
#define GPA_CLAIM_MAX_REQUESTS    32          /* DeviceRequestsMaxSize */
#define GPA_CLAIM_MAX_SUBREQUESTS 8           /* FirstAvailableDeviceRequestMaxSize */
#define GPA_CLAIM_MAX_SELECTORS   32          /* DeviceSelectorsMaxSize */
#define GPA_CLAIM_MAX_CONFIGS     32          /* DeviceConfigMaxSize */
#define GPA_CLAIM_MAX_CONSTRAINTS 32          /* DeviceConstraintsMaxSize */
#define GPA_CLAIM_MAX_TOLERATIONS 16          /* DeviceTolerationsMaxLength */
#define GPA_CLAIM_MAX_CEL_BYTES   (10 * 1024) /* CELSelectorExpressionMaxLength */
#define GPA_CLAIM_MAX_OPAQUE      (10 * 1024) /* OpaqueParametersMaxLength */
#define GPA_CLAIM_MAX_ALTS        (GPA_CLAIM_MAX_REQUESTS * GPA_CLAIM_MAX_SUBREQUESTS)

/* The NVIDIA driver's name: its opaque configs are parsed strictly. */
#define GPA_DRA_NVIDIA_DRIVER "gpu.nvidia.com"
#define GPA_DRA_NVIDIA_API    "resource.nvidia.com/v1beta1"
/* The annotation the scheduler puts on the claims it makes for extended resources. */
#define GPA_DRA_ANN_EXTENDED "resource.kubernetes.io/extended-resource-claim"
/* The selector a MIG placement adds, before and after the profile name. */
#define GPA_DRA_PROFILE_SEL_PRE  "device.attributes['gpu.nvidia.com'].profile == '"
#define GPA_DRA_PROFILE_SEL_POST "'"

typedef enum { GPA_CLAIM_LAYOUT_V1, GPA_CLAIM_LAYOUT_V1BETA1 } gpa_claim_layout;

/* One way a request may be satisfied: its `exactly` (v1), one of its `firstAvailable`
 * subrequests, or the request itself (v1beta1). */
typedef struct gpa_claim_alt {
    int req;                  /* index of its request */
    int sub;                  /* index in firstAvailable; -1 otherwise */
    const char *name;         /* the request's or subrequest's name */
    const cJSON *obj;         /* the object holding deviceClassName, selectors, ... */
    const char *device_class; /* NULL when not written */
    bool mode_all;            /* allocationMode: All */
    int64_t count;            /* devices asked with ExactCount (default 1); 0 with All */
    bool admin_access;        /* adminAccess: true */
    const cJSON *selectors;   /* the array, NULL when absent */
    size_t n_selectors;
    size_t n_capacity; /* capacity.requests entries */
    bool has_memory;   /* capacity.requests.memory */
    int64_t memory_bytes;
    size_t n_tolerations;
    char ptr[72];   /* JSON Pointer of obj, e.g. /spec/spec/devices/requests/3/firstAvailable/1 */
    char label[48]; /* for messages: requests[3].firstAvailable[1] */
} gpa_claim_alt;

typedef enum {
    GPA_OPAQUE_OTHER,  /* another driver's: not read */
    GPA_OPAQUE_GPU,    /* GpuConfig */
    GPA_OPAQUE_MIG,    /* MigDeviceConfig */
    GPA_OPAQUE_VFIO,   /* VfioDeviceConfig */
    GPA_OPAQUE_INVALID /* the driver's, but not a known kind or not strictly valid */
} gpa_opaque_kind;

typedef enum { GPA_DRA_SHARE_NONE, GPA_DRA_SHARE_TIME_SLICING, GPA_DRA_SHARE_MPS } gpa_dra_share;

typedef struct gpa_claim_config {
    const cJSON *requests; /* the array of request names; NULL or empty: every request */
    const char *driver;    /* NULL for a config without opaque */
    gpa_opaque_kind kind;
    gpa_dra_share sharing;
    const char *interval; /* timeSlicingConfig.interval, NULL when not written */
    /* mpsConfig.defaultPerDevicePinnedMemoryLimit has a key that is not a device index: the
     * driver then reads it as the UUID of one of the claim's devices (a GPU's UUID names no
     * MIG device) */
    bool mps_uuid_keys;
    char error[200]; /* kind INVALID: why, naming the field */
} gpa_claim_config;

typedef struct gpa_claim_request {
    const char *name;
    size_t first_alt, n_alts;
    bool first_available;
} gpa_claim_request;

typedef struct gpa_claim {
    bool is_template;
    gpa_claim_layout layout;
    const cJSON *obj;
    const cJSON *metadata;        /* the object's own */
    const cJSON *labels;          /* the claim's; for a template its spec.metadata.labels */
    const cJSON *annotations;     /* the claim's; for a template its spec.metadata.annotations */
    const cJSON *own_annotations; /* the object's metadata.annotations (a template's own) */
    const char *spec_ptr;         /* "/spec" or "/spec/spec" */
    bool extended_resource_claim; /* made by the scheduler for an extended resource */
    size_t n_requests;
    gpa_claim_request req[GPA_CLAIM_MAX_REQUESTS];
    size_t n_alts;
    gpa_claim_alt alt[GPA_CLAIM_MAX_ALTS];
    size_t n_configs;
    gpa_claim_config cfg[GPA_CLAIM_MAX_CONFIGS];
} gpa_claim;

/* Is obj (or request.kind's group and kind) a ResourceClaim (1) or a ResourceClaimTemplate
 * (2) of resource.k8s.io? 0 otherwise. group may be an apiVersion ("resource.k8s.io/v1"). */
int gpa_claim_kind(const char *group, const char *kind);
int gpa_claim_kind_of(const cJSON *obj);

/* Reads obj into c. 0, or -1 with why (cap bytes) naming the field and the problem, e.g.
 * "spec.devices.requests[2].exactly.count: must be a whole number >= 1, got -1". An opaque
 * config of the NVIDIA driver that does not parse is not an error here: it is recorded as
 * kind INVALID with its own message (the policy decides what it means). */
int gpa_claim_read(gpa_claim *c, const cJSON *obj, bool is_template, char *why, size_t cap);

/* Does config cfg apply to alternative a (its requests list names a's request, or
 * "request/subrequest", or is empty)? */
bool gpa_claim_config_applies(const gpa_claim *c, const gpa_claim_config *cfg,
                              const gpa_claim_alt *a);

/* The i-th CEL expression of a's selectors (NULL when it is not a string). */
const char *gpa_claim_selector(const gpa_claim_alt *a, size_t i);

/* The profile named by a selector of exactly the MIG placement's form
 * (GPA_DRA_PROFILE_SEL_PRE <profile> GPA_DRA_PROFILE_SEL_POST), copied into buf; NULL when
 * no selector of a has that form. */
const char *gpa_claim_alt_profile(const gpa_claim_alt *a, char *buf, size_t cap);

#endif
