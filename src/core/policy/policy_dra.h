/*
 * policy_dra.h - the loader's DRA readers (policy_dra.c): spec.dra, a pool's dra, a tenant's
 * dra; and the light CEL syntax check. Private to src/core (the loader and `check`'s lint).
 */
#ifndef GPA_POLICY_DRA_H
#define GPA_POLICY_DRA_H

#include "gpu_admission/strbuf.h"
#include "policy/policy_loader.h"

/* spec.dra of one document; key is its key node (for "already defined at" positions). */
void gpa_policy_load_dra(loader *L, const gpa_ynode *key, const gpa_ynode *n);
/* A pool's dra block; allow_written_true: the pool wrote allowUntrusted: true. */
void gpa_policy_load_pool_dra(loader *L, gpa_pool *p, const gpa_ynode *n, bool allow_written_true);
/* A tenant's dra: {adminAccess, allocationModeAll}. */
void gpa_policy_load_tenant_dra(loader *L, gpa_tenant *t, const gpa_ynode *n);
/* Once every file is read: spec.dra into p. */
void gpa_policy_finish_dra(loader *L, gpa_policy *p);

/* A light CEL syntax check: quotes closed, brackets balanced and matched. NULL when it
 * passes, else why, with *at the byte offset of the problem. Not a CEL parser: an expression
 * that passes may still not compile. */
const char *gpa_cel_light_check(const char *s, size_t *at);

/* check's DRA warnings, one `file:line:col: warning: ...` line each, appended to o: a
 * selector that fails the light CEL check, two pools of one class told apart by no selector,
 * a rule placing claims in a pool without dra. */
void gpa_policy_dra_warnings(gpa_sb *o, const gpa_policy *p);

/* kube-scheduler's user name: the DynamicResources plugin makes the claims for extended
 * resources (KEP-5004) with the scheduler's own client. */
#define GPA_DRA_DEFAULT_SCHEDULER "system:kube-scheduler"

/* Is user (request.userInfo.username, NULL unknown) one of spec.dra.schedulerUsers (by
 * default system:kube-scheduler), whose extended-resource claims are left alone? */
bool gpa_dra_scheduler_user(const gpa_policy *p, const char *user);

/* The prefix of the extended resource name every DeviceClass has (k8s.io/api resource/v1
 * ResourceDeviceClassPrefix): a pod asking deviceclass.resource.kubernetes.io/<class> gets
 * devices of <class> through a claim the scheduler makes. */
#define GPA_DRA_EXT_PREFIX "deviceclass.resource.kubernetes.io/"

/* How many of NVIDIA's GPU DeviceClasses are built in (policy_dra.c). */
#define GPA_DRA_BUILTIN_CLASSES 3

/* Builds p->dra_ext (policy_model.h) into the arena, once the pools and spec.dra are final;
 * gpu_resources must not hold the DRA names yet (the loader adds them after). GPA_ENOMEM. */
int gpa_policy_dra_ext_build(gpa_policy *p, struct gpa_arena *a);
/* The DRA extended resource of that name, NULL when name is none. */
const gpa_dra_ext *gpa_dra_ext_of(const gpa_policy *p, const char *name);
/* May the scheduler serve resource name through a claim it makes itself (DRA's extended
 * resource bridge)? Every DRA extended resource the policy knows, every name listed in
 * spec.dra.extendedResourceNames, and nvidia.com/gpu always: NVIDIA's DRA driver gives its
 * gpu.nvidia.com class extendedResourceName nvidia.com/gpu by default. */
bool gpa_dra_reachable(const gpa_policy *p, const char *name);

/* Is cls one of spec.dra.genericClasses? */
bool gpa_dra_is_generic(const gpa_policy *p, const char *cls);
/* The first pool whose dra.deviceClass is cls, NULL when none. */
const gpa_pool *gpa_dra_pool_of_class(const gpa_policy *p, const char *cls);

#endif
