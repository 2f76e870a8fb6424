/*
 * pod_need.c - a pod's need of one resource from its containers' requests, as Kubernetes
 * computes it since native sidecars (1.29): see gpu_admission/pod_need.h. Before this, the
 * count was max(sum of containers, largest init container), which left sidecars' GPUs out:
 * one container and three sidecars asking a GPU each counted as one GPU.
 */
#include <string.h>

#include "gpu_admission/pod_need.h"

static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

bool gpa_init_container_is_sidecar(const cJSON *c)
{
    if (!c || !cJSON_IsObject(c)) return false;
    /* the first member of the name counts, as with a lookup */
    for (const cJSON *m = c->child; m; m = m->next)
        if (m->string && m->string[0] == 'r' && strcmp(m->string, "restartPolicy") == 0)
            return cJSON_IsString(m) && strcmp(m->valuestring, "Always") == 0;
    return false;
}

void gpa_pod_need_container(gpa_pod_need *n, int64_t v)
{
    n->main = add_sat(n->main, v);
}

void gpa_pod_need_init(gpa_pod_need *n, int64_t v, bool sidecar)
{
    if (sidecar) {
        n->sidecars = add_sat(n->sidecars, v);
        return;
    }
    int64_t need = add_sat(v, n->sidecars);
    if (need > n->init) n->init = need;
}

int64_t gpa_pod_need_total(const gpa_pod_need *n)
{
    int64_t running = add_sat(n->main, n->sidecars);
    return running > n->init ? running : n->init;
}
