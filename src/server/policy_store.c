/*
 * policy_store.c - the current policy snapshot, reference counted (see policy_store.h).
 *
 * Must never: hold the lock for more than a pointer read and an increment (it is taken once
 * per request), or call into the engine while holding it.
 */
#include "policy_store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct gpa_policy_snap {
    atomic_long refs;
    gpa_policy *policy;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static gpa_policy_snap *current;

gpa_policy_snap *gpa_policy_store_acquire(void)
{
    pthread_mutex_lock(&lock);
    gpa_policy_snap *s = current;
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&lock);
    return s;
}

const gpa_policy *gpa_policy_snap_policy(const gpa_policy_snap *s)
{
    return s->policy;
}

void gpa_policy_store_release(gpa_policy_snap *s)
{
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        gpa_policy_unref(s->policy);
        free(s);
    }
}

int gpa_policy_store_install(gpa_policy *p)
{
    gpa_policy_snap *s = malloc(sizeof *s);
    if (!s) {
        gpa_policy_unref(p);
        return GPA_ENOMEM;
    }
    atomic_init(&s->refs, 1); /* the store's own reference */
    s->policy = p;
    pthread_mutex_lock(&lock);
    gpa_policy_snap *old = current;
    current = s;
    pthread_mutex_unlock(&lock);
    gpa_policy_store_release(old);
    return GPA_OK;
}

bool gpa_policy_store_ready(void)
{
    pthread_mutex_lock(&lock);
    bool ready = current != NULL;
    pthread_mutex_unlock(&lock);
    return ready;
}

void gpa_policy_store_revision(char out[65])
{
    gpa_policy_snap *s = gpa_policy_store_acquire();
    snprintf(out, 65, "%s", s ? gpa_policy_revision(s->policy) : "");
    gpa_policy_store_release(s);
}

void gpa_policy_store_shutdown(void)
{
    pthread_mutex_lock(&lock);
    gpa_policy_snap *old = current;
    current = NULL;
    pthread_mutex_unlock(&lock);
    gpa_policy_store_release(old);
}
