/*
 * engine_dra_ext.c - DRA extended resources of DeviceClasses the policy does not know, asked
 * by untrusted pods (issue 33 path 6, POLICY.md "Isolation by default"). A pod asking
 * deviceclass.resource.kubernetes.io/<class> gets devices of <class> through a claim the
 * scheduler makes and this webhook leaves alone, so the pod is the only place to judge it:
 * for a GPU class the policy knows the pod is a GPU pod (counted, matched, placed); for any
 * other class nothing would judge the devices, so an untrusted pod is refused, as its own
 * claim of such a class is (unknown-device-class).
 *
 * Must never: refuse a trusted pod for it (a trusted tenant may use DRA NICs or CPUs by
 * extended resource), or look at anything but the containers' resource names.
 */
#include <string.h>

#include "engine/engine_internal.h"
#include "policy/policy_dra.h"

/* A class the policy does not know, named by one resource key: reported once per container
 * (limits and requests name it alike). */
static void judge_name(gpa_eng *e, const char *cname, const char *name, const cJSON *other)
{
    const size_t pre = sizeof GPA_DRA_EXT_PREFIX - 1;
    if (name[0] != 'd' || strncmp(name, GPA_DRA_EXT_PREFIX, pre) != 0) return;
    if (gpa_dra_ext_of(e->p, name)) return;       /* a GPU class: judged as a GPU pod */
    if (other && gpa_jn_get(other, name)) return; /* the limit said it already */
    gpa_eng_tenancy(e);
    if (e->trust != GPA_TRUST_UNTRUSTED) return;
    gpa_eng_violation(e, "unknown-device-class",
                      "container %s of an untrusted pod asks %s, the extended resource of "
                      "DeviceClass %s, which the policy does not know: the scheduler would "
                      "give it devices through a claim no rule judges; ask the platform team "
                      "to name the class in the policy (spec.dra.genericClasses or a pool's "
                      "dra.deviceClass)",
                      cname, name, name + pre);
}

/* The first member of obj whose key is key (first byte compared before strcmp: this runs on
 * every pod), NULL when absent or not an object. */
static const cJSON *member_obj(const cJSON *obj, const char *key)
{
    for (const cJSON *m = obj ? obj->child : NULL; m; m = m->next)
        if (m->string && m->string[0] == key[0] && strcmp(m->string, key) == 0)
            return gpa_is_object(m) ? m : NULL;
    return NULL;
}

void gpa_eng_check_dra_classes(gpa_eng *e, const gpa_pod *v)
{
    /* a trust already resolved (rule matching, the other checks) that is trusted needs no
     * scan; otherwise the scan comes first and trust is resolved only on a hit */
    if (e->tenancy_done && e->trust != GPA_TRUST_UNTRUSTED) return;
    char nb[16];
    for (int k = GPA_PODC_MAIN; k <= GPA_PODC_INIT; k++) {
        const cJSON *c;
        int i = 0;
        cJSON_ArrayForEach(c, gpa_pod_containers(v, (gpa_podc_kind)k)) {
            int at = i++;
            const cJSON *res = gpa_is_object(c) ? member_obj(c, "resources") : NULL;
            if (!res) continue;
            const cJSON *lim = member_obj(res, "limits"), *req = member_obj(res, "requests");
            const cJSON *m;
            const char *cname = NULL;
            cJSON_ArrayForEach(m, lim) {
                if (!m->string || m->string[0] != 'd') continue;
                if (!cname) cname = gpa_podc_name(c, at, nb, sizeof nb);
                judge_name(e, cname, m->string, NULL);
            }
            cJSON_ArrayForEach(m, req) {
                if (!m->string || m->string[0] != 'd') continue;
                if (!cname) cname = gpa_podc_name(c, at, nb, sizeof nb);
                judge_name(e, cname, m->string, lim);
            }
        }
    }
}
