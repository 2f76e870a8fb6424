/*
 * sim_gang.c - gangs placed whole or not at all (`simulate --gangs whole`, issue 31): the
 * pods of one training job that require each other's topology domain (a pod affinity term
 * whose selector matches their own labels: the engine's gang affinity) are what Kueue's
 * topology-aware scheduling and the Workload API's gang scheduling admit together or not at
 * all. The packer takes a gang's pods one after another (they are consecutive in its order);
 * when one cannot be placed, the ones already placed are taken back off in reverse order and
 * every pod of the gang is unplaced with that one pod's cause.
 *
 * Off by default: kube-scheduler without gang scheduling (what e2e/scheduler compares
 * against) places a gang pod by pod and can leave half of it running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

char *gpa_sim_gang_key(const gpa_sim_tmpl *t)
{
    if (!t->n_aff || !t->labels || !gpa_sim_selector_matches(t->aff[0].selector, t->labels))
        return NULL;
    char *sel = cJSON_PrintUnformatted(t->aff[0].selector);
    if (!sel) return NULL;
    size_t n = strlen(sel) + strlen(t->ns ? t->ns : "") + strlen(t->aff[0].topology_key) + 3;
    char *k = malloc(n);
    if (k) snprintf(k, n, "%s\x01%s\x01%s", t->ns ? t->ns : "", t->aff[0].topology_key, sel);
    free(sel);
    return k;
}

int gpa_sim_gang_fail(gpa_sim *s, const gpa_sim_gang_member *placed, size_t n_placed, size_t failed,
                      size_t gang_size)
{
    for (size_t i = n_placed; i-- > 0;)
        gpa_sim_unapply(s, placed[i].pod, &placed[i].opt);
    gpa_sim_pod *f = &s->pods[failed];
    char *d = NULL;
    size_t len = strlen(f->reason_detail ? f->reason_detail : "") + 64;
    if ((d = malloc(len)))
        snprintf(d, len, "gang of %zu pods, placed whole or not at all: %s", gang_size,
                 f->reason_detail ? f->reason_detail : "");
    if (!d) return GPA_ENOMEM;
    free(f->reason_detail);
    f->reason_detail = d;
    for (size_t i = 0; i < n_placed; i++)
        if (gpa_sim_gang_copy_reason(s, placed[i].pod, failed)) return GPA_ENOMEM;
    return GPA_OK;
}

int gpa_sim_gang_copy_reason(gpa_sim *s, size_t pi, size_t from)
{
    gpa_sim_pod *p = &s->pods[pi];
    const gpa_sim_pod *f = &s->pods[from];
    char *d = f->reason_detail ? strdup(f->reason_detail) : NULL;
    if (f->reason_detail && !d) return GPA_ENOMEM;
    free(p->reason_detail);
    p->reason_detail = d;
    p->reason = f->reason;
    p->cause = f->cause;
    return GPA_OK;
}
