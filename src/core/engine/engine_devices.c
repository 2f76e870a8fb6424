/*
 * engine_devices.c - an untrusted pod's paths to devices beside its resources (POLICY.md
 * "Isolation by default"): environment variables the NVIDIA container toolkit reads
 * (k8s/toolkit_env.c), envFrom sources whose keys could set them, privileged containers, and
 * hostPath volumes reaching device nodes, the toolkit's directories or a container runtime's
 * socket (k8s/host_path.c). Every container kind counts, and a pod that asks no GPU is judged
 * too: these paths need no GPU resource.
 *
 * Runs for every pod, so it must stay cheap for the ordinary one: a pod already known to be
 * trusted (the check resolves trust for every GPU pod before it comes here) is not scanned at
 * all; otherwise trust is resolved only when something is found, names are refused at their
 * first byte, a container is named only in a message, and a pod without a hostPath volume
 * costs one look at each volume's keys. Never judges trusted pods.
 */
#include <string.h>

#include "engine/engine_internal.h"
#include "k8s/host_path.h"
#include "k8s/toolkit_env.h"

static bool untrusted(gpa_eng *e)
{
    gpa_eng_tenancy(e);
    return e->trust == GPA_TRUST_UNTRUSTED;
}

/* A container's name for a message: looked up only when there is something to say. */
typedef struct {
    const cJSON *c;
    int i;
    char nb[16];
} ctr_name;

static const char *cname_of(ctr_name *n)
{
    return gpa_podc_name(n->c, n->i, n->nb, sizeof n->nb);
}

static void check_env(gpa_eng *e, const cJSON *envs, ctr_name *cn)
{
    const cJSON *env;
    cJSON_ArrayForEach(env, envs) {
        const char *name = gpa_json_str(env, "name");
        const gpa_toolkit_env *t = gpa_toolkit_env_find(name);
        if (!t) continue;
        const char *val = gpa_json_str(env, "value");
        bool from = gpa_jn_get(env, "valueFrom") != NULL;
        if (!gpa_toolkit_env_grants(t, val, from) || !untrusted(e)) continue;
        gpa_eng_violation(e, t->reason,
                          "container %s of an untrusted pod sets %s%s%s: %s; remove it and ask "
                          "for GPUs in resources.limits",
                          cname_of(cn), name, from ? " from a reference" : "=",
                          from ? "" : (val ? val : ""), t->what);
    }
}

/* envFrom: the keys of a ConfigMap or Secret are not in the pod, so a source could define any
 * name the toolkit reads, unless its prefix rules them all out. */
static void check_env_from(gpa_eng *e, const cJSON *sources, ctr_name *cn)
{
    const cJSON *src;
    cJSON_ArrayForEach(src, sources) {
        const char *prefix = gpa_json_str(src, "prefix");
        const char *could = gpa_toolkit_env_prefix_reaches(prefix);
        if (!could || !untrusted(e)) continue;
        const cJSON *ref = gpa_json_obj(src, "configMapRef");
        const char *kind = ref ? "ConfigMap" : "Secret";
        if (!ref) ref = gpa_json_obj(src, "secretRef");
        const char *rname = gpa_json_str(ref, "name");
        if (prefix && *prefix)
            gpa_eng_violation(e, "env-from",
                              "container %s of an untrusted pod takes its environment from %s %s "
                              "with prefix %s, so a key could set %s, which the NVIDIA container "
                              "toolkit reads to hand out devices; pick a prefix no toolkit "
                              "variable starts with (such as APP_)",
                              cname_of(cn), kind, rname ? rname : "(unnamed)", prefix, could);
        else
            gpa_eng_violation(e, "env-from",
                              "container %s of an untrusted pod takes its environment from %s %s "
                              "without a prefix: its keys are unknown at admission and could set "
                              "%s, which the NVIDIA container toolkit reads to hand out devices; "
                              "add a prefix (such as APP_) or name each key with env valueFrom",
                              cname_of(cn), kind, rname ? rname : "(unnamed)", could);
    }
}

static void check_containers(gpa_eng *e, const gpa_pod *v)
{
    for (int k = 0; k < GPA_PODC_KINDS; k++) {
        const cJSON *c;
        int i = 0;
        cJSON_ArrayForEach(c, gpa_pod_containers(v, (gpa_podc_kind)k)) {
            ctr_name cn = {c, i++, {0}};
            /* env, envFrom and securityContext in one pass over the container (the first of a
             * repeated name counts, as with a lookup) */
            const cJSON *envs = NULL, *env_from = NULL, *sc = NULL;
            bool seen_env = false, seen_from = false, seen_sc = false;
            for (const cJSON *m = c->child; m; m = m->next) {
                const char *mk = m->string;
                if (!mk) continue;
                if (mk[0] == 'e' && !seen_env && strcmp(mk, "env") == 0) {
                    seen_env = true;
                    envs = gpa_is_array(m) ? m : NULL;
                } else if (mk[0] == 'e' && !seen_from && strcmp(mk, "envFrom") == 0) {
                    seen_from = true;
                    env_from = gpa_is_array(m) ? m : NULL;
                } else if (mk[0] == 's' && !seen_sc && strcmp(mk, "securityContext") == 0) {
                    seen_sc = true;
                    sc = gpa_is_object(m) ? m : NULL;
                }
            }
            check_env(e, envs, &cn);
            check_env_from(e, env_from, &cn);
            const cJSON *priv = gpa_jn_get(sc, "privileged");
            if (gpa_is_true(priv) && untrusted(e))
                gpa_eng_violation(e, "privileged",
                                  "container %s of an untrusted pod is privileged: it can reach "
                                  "every GPU on the node; drop securityContext.privileged",
                                  cname_of(&cn));
        }
    }
}

static void check_host_paths(gpa_eng *e, const gpa_pod *v)
{
    const cJSON *vol;
    cJSON_ArrayForEach(vol, v->volumes) {
        const cJSON *hp = gpa_json_obj(vol, "hostPath");
        if (!hp) continue;
        const char *path = gpa_json_str(hp, "path");
        char canon[4098]; /* PATH_MAX and a leading slash: a longer path is judged as "/" */
        const gpa_host_path_entry *hit;
        gpa_host_path_reach(&hit, canon, sizeof canon, path);
        if (!hit || !untrusted(e)) continue;
        const char *vname = gpa_json_str(vol, "name");
        const bool same = path && strcmp(path, canon) == 0;
        gpa_eng_violation(e, "host-path",
                          "hostPath volume %s (%s%s%s) of an untrusted pod reaches %s (%s); use "
                          "another kind of volume, or run the pod in a trusted namespace",
                          vname ? vname : "(unnamed)", path ? path : "(no path)",
                          same ? "" : ", on the node ", same ? "" : canon, hit->path, hit->what);
    }
}

void gpa_eng_check_devices(gpa_eng *e, const gpa_pod *v, bool create)
{
    if (e->tenancy_done && e->trust == GPA_TRUST_TRUSTED) return;
    check_containers(e, v);
    if (create) check_host_paths(e, v);
}
