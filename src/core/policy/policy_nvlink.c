/*
 * policy_nvlink.c - NVLink domains that span nodes (policy_nvlink.h): the topology.imexChannel
 * block, the channel template names it accepts, and check's warning on a pinned clique value
 * (its grammar is k8s/clique.c).
 *
 * On GB200 NVL72 one NVLink domain joins 18 nodes, but GPU memory is shared across nodes only
 * through an IMEX channel, which NVIDIA's DRA driver hands out as a ResourceClaimTemplate a
 * ComputeDomain creates (spec.channel.resourceClaimTemplate.name). Which ComputeDomain a job
 * uses is the job's choice, so the pool names the template (or a pattern of names) and the
 * engine checks that a multi-node gang's pods list one.
 */
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
