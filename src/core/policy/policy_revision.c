/*
 * policy_revision.c - the revision of a policy set: SHA-256 over a canonical serialization of
 * the MODEL (effective values after defaults), never of the source bytes. So comments, key
 * order, quoting, file layout and spelling out a default do not change it; any change of
 * meaning does. Order is kept where it means something (rules: first match wins; tenants:
 * first glob wins; tolerations and group labels are applied in order; pools: the first pool
 * serving a resource judges an unplaced pod asking for it) and sorted where it cannot matter
 * (map keys; offered MIG profiles are sorted by the loader). Every string is length-prefixed,
 * so no two different models serialize alike. Must never read positions (file:line) into
 * the hash: a same-hash set must behave the same, a reorder may only cost a new revision.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_loader.h"

typedef struct hasher {
    EVP_MD_CTX *ctx;
    bool bad;
} hasher;

static void put_bytes(hasher *h, const void *p, size_t n)
{
    if (!h->bad && EVP_DigestUpdate(h->ctx, p, n) != 1) h->bad = true;
}

static void put_str(hasher *h, const char *tag, const char *s)
{
    char hdr[96];
    int n = s ? snprintf(hdr, sizeof hdr, "%s=%zu:", tag, strlen(s))
              : snprintf(hdr, sizeof hdr, "%s=-;", tag);
    put_bytes(h, hdr, (size_t)n);
    if (s) put_bytes(h, s, strlen(s));
}

static void put_int(hasher *h, const char *tag, long long v)
{
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%s=%lld;", tag, v);
    put_bytes(h, buf, (size_t)n);
}

static void put_list(hasher *h, const char *tag, const gpa_strlist *l)
{
    put_int(h, tag, (long long)l->n);
    for (size_t i = 0; i < l->n; i++)
        put_str(h, "i", l->items[i]);
}

static int cmp_idx_key(const void *a, const void *b, void *keys)
{
    char **k = keys;
    return strcmp(k[*(const size_t *)a], k[*(const size_t *)b]);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a map's meaning does not depend on the order its keys were written in */
static void put_map(hasher *h, const char *tag, const gpa_kvlist *m)
{
    put_int(h, tag, (long long)m->n);
    if (m->n == 0) return;
    size_t *idx = malloc(m->n * sizeof *idx);
    if (!idx) {
        h->bad = true;
        return;
    }
    for (size_t i = 0; i < m->n; i++)
        idx[i] = i;
    qsort_r(idx, m->n, sizeof *idx, cmp_idx_key, m->keys);
    for (size_t i = 0; i < m->n; i++) {
        put_str(h, "k", m->keys[idx[i]]);
        put_str(h, "v", m->values[idx[i]]);
    }
    free(idx);
}

static void put_range(hasher *h, const char *tag, const gpa_range *r)
{
    put_str(h, tag, "");
    put_int(h, "min", r->has_min ? r->min : -1);
    put_int(h, "max", r->has_max ? r->max : -1);
}

static void put_pool(hasher *h, const gpa_pool *p)
{
    put_str(h, "pool", p->name);
    put_map(h, "nodeSelector", &p->node_selector);
    put_int(h, "tolerations", (long long)p->n_tolerations);
    for (size_t i = 0; i < p->n_tolerations; i++) {
        const gpa_toleration *t = &p->tolerations[i];
        put_str(h, "key", t->key);
        put_str(h, "op", t->op ? t->op : "Equal"); /* not written = Equal (Kubernetes API) */
        put_str(h, "value", t->value);
        put_str(h, "effect", t->effect);
        put_int(h, "seconds", t->has_seconds ? t->seconds : -1);
        put_int(h, "has_seconds", t->has_seconds);
    }
    put_int(h, "sharing", p->sharing);
    put_str(h, "runtimeClass", p->runtime_class);
    if (p->sharing == GPA_SHARING_MIG) {
        put_int(h, "strategy", p->mig_strategy);
        put_str(h, "gpu", p->mig_model ? p->mig_model->name : NULL);
        put_int(h, "profiles", (long long)p->n_profiles);
        for (size_t i = 0; i < p->n_profiles; i++)
            put_str(h, "p", p->profiles[i]->name);
        put_str(h, "product", p->mig_product);
    }
    put_str(h, "resource", p->shared_resource);
    put_int(h, "replicas", p->replicas);
    put_int(h, "allowUntrusted", p->allow_untrusted);
    put_int(h, "topology", p->has_topology);
    if (p->has_topology) {
        const gpa_topology *t = &p->topology;
        put_str(h, "island", t->island_label);
        put_str(h, "islandSize", t->island_size_label);
        put_int(h, "gpusPerNode", t->gpus_per_node);
        put_list(h, "groupLabels", &t->group_labels);
        put_int(h, "mode", t->mode);
        /* only when written: a pool without levels keeps the revision it had before them */
        if (t->island_gpus > 0) {
            put_int(h, "islandGpus", t->island_gpus);
            for (size_t i = 0; i < t->n_levels; i++) {
                put_str(h, "level", t->levels[i].label);
                put_int(h, "levelGpus", t->levels[i].gpus);
            }
        }
        /* only when written, as levels */
        if (t->imex_template) {
            put_str(h, "imexChannel", t->imex_template);
            put_int(h, "imexWarn", t->imex_warn);
        }
    }
    /* only when written: a pool without dra keeps the revision it had before dra existed */
    /* only when written: it changes the message a claim placed there is denied with */
    if (p->dra.none) put_int(h, "draEnabled", 0);
    if (p->dra.set) {
        put_str(h, "draDeviceClass", p->dra.device_class);
        put_list(h, "draSelectors", &p->dra.selectors);
        put_int(h, "draMultiAllocatable", p->dra.multi_allocatable);
        put_int(h, "draAllowUntrusted", p->dra.allow_untrusted);
    }
}

static void put_rule(hasher *h, const gpa_rule *r)
{
    put_str(h, "rule", r->name);
    put_list(h, "namespaces", &r->namespaces);
    put_map(h, "labels", &r->labels);
    put_range(h, "gpus", &r->gpus);
    put_range(h, "gpuMemory", &r->gpu_memory);
    put_list(h, "tenants", &r->tenants);
    put_int(h, "trust", r->trust);
    put_str(h, "deny", r->deny_message);
    put_str(h, "pool", r->pool ? r->pool->name : NULL);
    put_int(h, "migAuto", r->mig_auto);
    put_str(h, "migProfile", r->mig_profile ? r->mig_profile->name : NULL);
}

int gpa_policy_compute_revision(gpa_policy *p)
{
    hasher h = {EVP_MD_CTX_new(), false};
    if (!h.ctx) return GPA_ENOMEM;
    if (EVP_DigestInit_ex(h.ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(h.ctx);
        return GPA_ENOMEM;
    }
    put_str(&h, "gpu-admission.io/v1alpha1", "GPUPolicy");
    put_int(&h, "enforcement", p->enforcement);
    put_int(&h, "unmatchedDeny", p->unmatched_deny);
    /* without a tenancy block everyone is untrusted: same as an empty block saying so */
    put_int(&h, "defaultTrust", p->default_trust);
    put_int(&h, "tenants", (long long)p->n_tenants);
    for (size_t i = 0; i < p->n_tenants; i++) {
        put_str(&h, "tenant", p->tenants[i].name);
        put_list(&h, "namespaces", &p->tenants[i].namespaces);
        put_int(&h, "trust", p->tenants[i].trust);
        if (p->tenants[i].dra_admin_access || p->tenants[i].dra_allocation_mode_all) {
            put_int(&h, "draAdminAccess", p->tenants[i].dra_admin_access);
            put_int(&h, "draAllocationModeAll", p->tenants[i].dra_allocation_mode_all);
        }
    }
    put_int(&h, "pools", (long long)p->n_pools);
    for (size_t i = 0; i < p->n_pools; i++)
        put_pool(&h, &p->pools[i]);
    put_int(&h, "rules", (long long)p->n_rules);
    for (size_t i = 0; i < p->n_rules; i++)
        put_rule(&h, &p->rules[i]);
    /* Only when written differently from the defaults: a set without spec.workloads keeps the
     * revision it had before the block existed. */
    if (p->wl_enforcement != GPA_WL_DENY || p->n_wl_kinds) {
        put_int(&h, "workloadsEnforcement", p->wl_enforcement);
        put_int(&h, "workloadKinds", (long long)p->n_wl_kinds);
        for (size_t i = 0; i < p->n_wl_kinds; i++) {
            put_str(&h, "apiGroup", p->wl_kinds[i].api_group);
            put_str(&h, "kind", p->wl_kinds[i].kind);
            put_list(&h, "templates", &p->wl_kinds[i].templates);
        }
    }

    if (p->dra.set) {
        put_int(&h, "draEnforcement", p->dra.enforcement);
        put_list(&h, "draGenericClasses", &p->dra.generic_classes);
        if (p->dra.scheduler_users.n) put_list(&h, "draSchedulerUsers", &p->dra.scheduler_users);
        /* only when written: a set without the map keeps the revision it had before it */
        if (p->dra.extended_names.n)
            put_map(&h, "draExtendedResourceNames", &p->dra.extended_names);
    }

    /* Only when a scheduler is listed: a set without spec.isolation (or with an empty one)
     * keeps the revision it had before the block existed. A set of names: order is not
     * meaning. */
    if (p->isolation.schedulers.n) {
        gpa_strlist l = p->isolation.schedulers;
        char **sorted = malloc(l.n * sizeof *sorted);
        if (!sorted) {
            h.bad = true;
        } else {
            memcpy(sorted, l.items, l.n * sizeof *sorted);
            qsort(sorted, l.n, sizeof *sorted, cmp_str);
            l.items = sorted;
            put_list(&h, "isolationSchedulers", &l);
            free(sorted);
        }
    }

    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (h.bad || EVP_DigestFinal_ex(h.ctx, md, &mdlen) != 1 || mdlen != 32) {
        EVP_MD_CTX_free(h.ctx);
        return GPA_ENOMEM;
    }
    EVP_MD_CTX_free(h.ctx);
    for (unsigned int i = 0; i < mdlen; i++)
        snprintf(p->revision + 2 * i, 3, "%02x", md[i]);
    return GPA_OK;
}
