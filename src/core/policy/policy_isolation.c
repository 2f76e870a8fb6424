/*
 * policy_isolation.c - spec.isolation (POLICY.md "Isolation by default"): the schedulers that
 * honour the tenant anti-affinity the webhook puts on pods of time-slicing and mps pools. The
 * default scheduler does; a second scheduler (a batch scheduler, a custom one) may not read
 * required pod anti-affinity at all, and would put two tenants on one shared card. So a pod on
 * a shared pool may name only the default scheduler or one this block lists.
 *
 * Read strictly, at most once across all files, with file:line:col errors like every other part
 * of the loader. Must never accept a name the API server would refuse as a schedulerName.
 */
#include <stdio.h>
#include <string.h>

#include "k8s/k8s_names.h"
#include "policy/policy_isolation.h"

void gpa_policy_load_isolation(loader *L, const gpa_ynode *key, const gpa_ynode *n)
{
    static const char *const f[] = {"schedulers", NULL};
    if (L->isolation.set) {
        gpa_yread_error(&L->r, key,
                        "isolation is already defined at %s:%d:%d (at most one isolation block "
                        "across all files)",
                        L->isolation.pos.file, L->isolation.pos.line, L->isolation.pos.col);
        return;
    }
    L->isolation.set = true;
    L->isolation.pos = gpa_policy_pos(L, key);
    if (gpa_yread_is_null(n) || !gpa_yread_want_map(&L->r, n, "isolation")) return;
    const gpa_ynode *v[1];
    gpa_yread_fields(&L->r, n, "isolation", f, v);
    /* pod.spec.schedulerName is validated as a DNS-1123 subdomain */
    if (v[0] && !gpa_yread_is_null(v[0]))
        gpa_policy_strlist(L, v[0], "isolation.schedulers", true, gpa_k8s_dns_subdomain,
                           "scheduler name", &L->isolation.schedulers, &L->isolation.sched_pos);
}

bool gpa_isolation_scheduler_ok(const gpa_policy *p, const char *name)
{
    if (!name || !*name || strcmp(name, GPA_DEFAULT_SCHEDULER) == 0) return true;
    const gpa_strlist *l = &p->isolation.schedulers;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], name) == 0) return true;
    return false;
}

static bool any_shared_pool(const gpa_policy *p)
{
    for (size_t i = 0; i < p->n_pools; i++)
        if (p->pools[i].sharing == GPA_SHARING_TIME_SLICING ||
            p->pools[i].sharing == GPA_SHARING_MPS)
            return true;
    return false;
}

void gpa_isolation_warnings(gpa_sb *o, const gpa_policy *p)
{
    const gpa_isolation_spec *is = &p->isolation;
    if (is->schedulers.n && !any_shared_pool(p))
        gpa_sb_printf(o,
                      "%s:%d:%d: warning: isolation.schedulers changes nothing: no pool is "
                      "time-slicing or mps\n",
                      is->pos.file, is->pos.line, is->pos.col);
    for (size_t i = 0; i < is->schedulers.n; i++)
        if (strcmp(is->schedulers.items[i], GPA_DEFAULT_SCHEDULER) == 0 && is->sched_pos)
            gpa_sb_printf(o,
                          "%s:%d:%d: warning: isolation.schedulers lists %s, which is always "
                          "allowed\n",
                          is->sched_pos[i].file, is->sched_pos[i].line, is->sched_pos[i].col,
                          GPA_DEFAULT_SCHEDULER);
}
