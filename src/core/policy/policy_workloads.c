/*
 * policy_workloads.c - the loader's spec.workloads block (POLICY.md): the enforcement that
 * workload objects get (deny | warn | off, at most once across all files) and the kinds a
 * set adds to the built-in ones (merged across files in load order).
 *
 * A kind listed twice is an error (two files disagreeing about where a kind keeps its
 * templates is a mistake nobody should have to debug); a kind that is built in may be listed
 * to add template paths to the built-in ones.
 */
#include <stdlib.h>
#include <string.h>

#include "k8s/k8s_names.h"
#include "policy/policy_loader.h"
#include "policy/workload_internal.h"

static const char *kind_name_error(const char *s)
{
    size_t n = strlen(s);
    if (n == 0) return "must not be empty";
    if (n > 63) return "is longer than 63 characters";
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return "must start with a letter (a Kubernetes kind such as TrainingJob)";
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return "may contain only letters and digits (a Kubernetes kind such as TrainingJob)";
    }
    return NULL;
}

static void load_kind(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {"apiGroup", "kind", "templates", NULL};
    const gpa_ynode *v[3];
    if (!gpa_yread_want_map(&L->r, n, "workloads.kinds entry")) return;
    gpa_yread_fields(&L->r, n, "workloads.kinds entry", f, v);
    gpa_workload_kind k = {.pos = gpa_policy_pos(L, n)};
    bool ok = true;
    const char *why;
    if (!v[0] || gpa_yread_is_null(v[0])) {
        gpa_yread_error(&L->r, n,
                        "workloads.kinds: apiGroup is required (\"\" for the core group)");
        ok = false;
    } else if (!gpa_yread_str(&L->r, v[0], "apiGroup", &k.api_group)) {
        ok = false;
    } else if (strchr(k.api_group, '/')) {
        gpa_yread_error(&L->r, v[0], "apiGroup \"%.80s\" is an apiVersion: write the group only",
                        k.api_group);
        ok = false;
    } else if (*k.api_group && (why = gpa_k8s_dns_subdomain(k.api_group))) {
        gpa_yread_error(&L->r, v[0],
                        "apiGroup \"%.80s\" %s (an API group such as example.com, \"\" for core)",
                        k.api_group, why);
        ok = false;
    }
    if (!v[1] || gpa_yread_is_null(v[1])) {
        gpa_yread_error(&L->r, n, "workloads.kinds: kind is required");
        ok = false;
    } else if (!gpa_yread_str(&L->r, v[1], "kind", &k.kind)) {
        ok = false;
    } else if ((why = kind_name_error(k.kind))) {
        gpa_yread_error(&L->r, v[1], "kind \"%.80s\" %s", k.kind, why);
        ok = false;
    } else if (ok && !*k.api_group && strcmp(k.kind, "Pod") == 0) {
        gpa_yread_error(&L->r, v[1],
                        "kind Pod is judged by the Pod webhooks themselves; list the kinds that "
                        "hold pod templates");
        ok = false;
    }
    if (!v[2] || gpa_yread_is_null(v[2])) {
        gpa_yread_error(&L->r, n,
                        "workloads.kinds %s: templates is required (paths such as "
                        "\"spec.workers.*.template\")",
                        k.kind ? k.kind : "");
        ok = false;
    } else {
        gpa_srcpos *pos = NULL;
        bool listed = gpa_policy_strlist(L, v[2], "templates", false, NULL, "template path",
                                         &k.templates, &pos);
        if (!listed) ok = false;
        for (size_t i = 0; listed && i < k.templates.n; i++) {
            const char *perr = gpa_wl_path_error(k.templates.items[i]);
            if (perr) {
                gpa_policy_error_pos(L, pos[i], "template path \"%.80s\": %s", k.templates.items[i],
                                     perr);
                ok = false;
            }
        }
    }
    if (!ok) return;
    for (size_t i = 0; i < L->n_wl_kinds; i++) {
        const gpa_workload_kind *o = &L->wl_kinds[i];
        if (strcmp(o->kind, k.kind) == 0 && strcmp(o->api_group, k.api_group) == 0) {
            gpa_yread_error(&L->r, n, "workloads.kinds: %s%s%s is already listed at %s:%d:%d",
                            k.api_group, *k.api_group ? "/" : "", k.kind, o->pos.file, o->pos.line,
                            o->pos.col);
            return;
        }
    }
    if (L->n_wl_kinds >= GPA_POLICY_MAX_ITEMS) {
        gpa_yread_error(&L->r, n, "too many workload kinds (at most %d)", GPA_POLICY_MAX_ITEMS);
        return;
    }
    if (L->n_wl_kinds == L->cap_wl_kinds) {
        size_t nc = L->cap_wl_kinds ? L->cap_wl_kinds * 2 : 8;
        gpa_workload_kind *nk = realloc(L->wl_kinds, nc * sizeof *nk);
        if (!nk) {
            L->r.oom = true;
            return;
        }
        L->wl_kinds = nk;
        L->cap_wl_kinds = nc;
    }
    L->wl_kinds[L->n_wl_kinds++] = k;
}

void gpa_policy_load_workloads(loader *L, const gpa_ynode *n)
{
    static const char *const f[] = {"enforcement", "kinds", NULL};
    static const char *const enf[] = {"deny", "warn", "off", NULL};
    if (gpa_yread_is_null(n)) return;
    if (!gpa_yread_want_map(&L->r, n, "spec.workloads")) return;
    const gpa_ynode *v[2];
    gpa_yread_fields(&L->r, n, "spec.workloads", f, v);
    if (v[0]) {
        const gpa_ynode *ekey = NULL;
        for (size_t i = 0; i < n->n; i++)
            if (strcmp(gpa_ymap_key(n, i)->value, "enforcement") == 0) ekey = gpa_ymap_key(n, i);
        if (L->has_wl_enforcement) {
            gpa_yread_error(&L->r, ekey,
                            "workloads.enforcement is already set at %s:%d:%d (at most once across "
                            "all files)",
                            L->wl_enforcement_pos.file, L->wl_enforcement_pos.line,
                            L->wl_enforcement_pos.col);
        } else {
            L->has_wl_enforcement = true;
            L->wl_enforcement_pos = gpa_policy_pos(L, ekey);
            int e = gpa_yread_enum(&L->r, v[0], "workloads.enforcement", enf);
            if (e >= 0) L->wl_enforcement = (gpa_wl_enforcement)e;
        }
    }
    if (v[1] && !gpa_yread_is_null(v[1]) && gpa_yread_want_seq(&L->r, v[1], "spec.workloads.kinds"))
        for (size_t i = 0; i < v[1]->n; i++)
            load_kind(L, v[1]->kids[i]);
}

bool gpa_policy_finish_workloads(loader *L, gpa_policy *p)
{
    p->wl_enforcement = L->wl_enforcement;
    p->wl_enforcement_pos = L->wl_enforcement_pos;
    p->n_wl_kinds = L->n_wl_kinds;
    p->wl_kinds = gpa_arena_array(L->arena, L->n_wl_kinds, sizeof *p->wl_kinds);
    if (!p->wl_kinds) return false;
    if (L->n_wl_kinds) memcpy(p->wl_kinds, L->wl_kinds, L->n_wl_kinds * sizeof *p->wl_kinds);
    return true;
}
