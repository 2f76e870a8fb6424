/*
 * policy_nvlink.c - NVLink domains that span nodes (policy_nvlink.h): the topology.imexChannel
 * block, the channel template names it accepts, and the grammar of nvidia.com/gpu.clique.
 *
 * On GB200 NVL72 one NVLink domain joins 18 nodes, but GPU memory is shared across nodes only
 * through an IMEX channel, which NVIDIA's DRA driver hands out as a ResourceClaimTemplate a
 * ComputeDomain creates (spec.channel.resourceClaimTemplate.name). Which ComputeDomain a job
 * uses is the job's choice, so the pool names the template (or a pattern of names) and the
 * engine checks that a multi-node gang's pods list one.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_admission/strbuf.h"
#include "k8s/k8s_names.h"
#include "policy/policy_loader.h"
#include "policy/policy_nvlink.h"

bool gpa_imex_template_match(const char *pattern, const char *name)
{
    const char *star = strchr(pattern, '*');
    if (!star) return strcmp(pattern, name) == 0;
    size_t pre = (size_t)(star - pattern), suf = strlen(star + 1), n = strlen(name);
    /* the run the '*' stands for is never empty: "*-channel" is not "-channel" */
    return n > pre + suf && strncmp(name, pattern, pre) == 0 &&
           strcmp(name + n - suf, star + 1) == 0;
}

const char *gpa_imex_template_invalid(const char *pattern)
{
    const char *star = strchr(pattern, '*');
    if (star && strchr(star + 1, '*')) return "at most one '*'";
    if (strlen(pattern) > GPA_IMEX_TEMPLATE_MAX) return "longer than 253 characters";
    if (star && !star[1] && star == pattern) return NULL; /* "*": any template */
    /* with the '*' replaced by a letter, the pattern must name a template a pod could list */
    char buf[GPA_IMEX_TEMPLATE_MAX + 1];
    snprintf(buf, sizeof buf, "%s", pattern);
    if (star) buf[star - pattern] = 'x';
    return gpa_k8s_dns_subdomain(buf);
}

static bool hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

const char *gpa_clique_invalid(const char *v)
{
    static const int groups[] = {8, 4, 4, 4, 12};
    const char *c = v;
    for (int g = 0; g < 5; g++) {
        for (int i = 0; i < groups[g]; i++, c++)
            if (!hex(*c))
                return *c >= 'A' && *c <= 'F' ? "the cluster UUID is written in lower case"
                                              : "it does not start with a cluster UUID "
                                                "(8-4-4-4-12 hex digits)";
        if (g < 4 && *c++ != '-')
            return "it does not start with a cluster UUID (8-4-4-4-12 hex digits)";
    }
    if (*c++ != '.') return "the cluster UUID is not followed by '.' and the clique id";
    if (!*c) return "the clique id after '.' is empty";
    uint64_t id = 0;
    for (const char *d = c; *d; d++) {
        if (*d < '0' || *d > '9') return "the clique id after '.' is not a decimal number";
        id = id * 10 + (uint64_t)(*d - '0');
        if (id > UINT32_MAX) return "the clique id is larger than 4294967295";
    }
    if (c[0] == '0' && c[1]) return "the clique id has a leading zero, which GFD never prints";
    return NULL;
}

void gpa_clique_format(char *buf, size_t cap, const char *seed, unsigned long id)
{
    uint64_t h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
    for (const unsigned char *s = (const unsigned char *)seed; *s; s++) {
        h[0] = (h[0] ^ *s) * 0x100000001b3ULL;
        h[1] = (h[1] ^ *s) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
    }
    /* version 4, variant 10xx: the shape of the UUIDs the fabric manager reports */
    h[0] = (h[0] & ~0xf000ULL) | 0x4000ULL;
    h[1] = (h[1] & ~(0xc000ULL << 48)) | (0x8000ULL << 48);
    snprintf(buf, cap, "%08llx-%04llx-%04llx-%04llx-%012llx.%lu", (unsigned long long)(h[0] >> 32),
             (unsigned long long)((h[0] >> 16) & 0xffff), (unsigned long long)(h[0] & 0xffff),
             (unsigned long long)(h[1] >> 48), (unsigned long long)(h[1] & 0xffffffffffffULL), id);
}

void gpa_policy_load_imex(loader *L, const gpa_ynode *n, gpa_topology *t)
{
    static const char *const f[] = {"claimTemplate", "enforcement", NULL};
    static const char *const modes[] = {"deny", "warn", NULL};
    const gpa_ynode *v[2];
    if (!gpa_yread_want_map(&L->r, n, "topology.imexChannel")) return;
    gpa_yread_fields(&L->r, n, "topology.imexChannel", f, v);
    const char *why;
    char *tmpl = NULL;
    if (!v[0] || gpa_yread_is_null(v[0])) {
        gpa_yread_error(&L->r, n,
                        "topology.imexChannel needs claimTemplate (the name a ComputeDomain "
                        "gives its channel in spec.channel.resourceClaimTemplate.name; one '*' "
                        "matches any run of characters)");
    } else if (gpa_yread_str(&L->r, v[0], "topology.imexChannel.claimTemplate", &tmpl)) {
        if ((why = gpa_imex_template_invalid(tmpl)) != NULL)
            gpa_yread_error(&L->r, v[0],
                            "topology.imexChannel.claimTemplate \"%.80s\" is not a "
                            "ResourceClaimTemplate name or pattern: %s",
                            tmpl, why);
        else
            t->imex_template = tmpl;
    }
    if (v[1] && !gpa_yread_is_null(v[1])) {
        int m = gpa_yread_enum(&L->r, v[1], "topology.imexChannel.enforcement", modes);
        t->imex_warn = m == 1;
    }
    /* a channel is needed when a gang outgrows one node of the island: both sizes are needed
     * to know that, and an island no wider than a node has nothing to join */
    if (t->gpus_per_node <= 0 || t->island_gpus <= 0)
        gpa_yread_error(&L->r, n,
                        "topology.imexChannel needs topology.gpusPerNode and "
                        "topology.islandGpus (a gang needs the channel when it has more GPUs "
                        "than one node)");
    else if (t->island_gpus <= t->gpus_per_node)
        gpa_yread_error(&L->r, n,
                        "topology.imexChannel: islandGpus (%lld) is not wider than gpusPerNode "
                        "(%d): the NVLink island does not span nodes, so no channel joins them",
                        (long long)t->island_gpus, t->gpus_per_node);
}

void gpa_clique_warnings(gpa_sb *o, const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_pools; i++) {
        const gpa_pool *a = &p->pools[i];
        const gpa_kvlist *ns = &a->node_selector;
        for (size_t k = 0; k < ns->n; k++) {
            const char *why;
            if (strcmp(ns->keys[k], GPA_LABEL_CLIQUE) != 0 ||
                (why = gpa_clique_invalid(ns->values[k])) == NULL)
                continue;
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: pool %s selects %s=%.80s, a value GPU feature "
                          "discovery never writes (%s): it labels NVLink-attached nodes "
                          "<clusterUUID>.<cliqueId>, e.g. "
                          "7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1, so no node matches\n",
                          a->pos.file, a->pos.line, a->pos.col, a->name, GPA_LABEL_CLIQUE,
                          ns->values[k], why);
        }
    }
}
