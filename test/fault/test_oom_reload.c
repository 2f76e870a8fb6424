/*
 * test_oom_reload.c - the server's policy reload (src/server/reload.c into policy_store.c) with
 * every allocation failing in turn (fault.h): the server serves the golden cluster set and
 * reloads the shipped policies/. A reload that runs out of memory must answer GPA_ENOMEM and
 * leave the previous set serving (the store's revision and snapshot unchanged, and a GPU pod
 * review through that snapshot answering as before); a reload that succeeds serves the new
 * set. This is the promise of reload.h ("a failed reload leaves the previous set in place")
 * under the one failure an operator cannot fix by editing the files.
 *
 * Must never: leave the store holding the new set for the next run (each run puts the serving
 * set back, unarmed), or let the server's log lines reach the test's output.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "gpu_admission/review.h"
#include "jsonlog.h"
#include "policy_store.h"
#include "reload.h"

#define SERVING GPA_SOURCE_DIR "/test/golden/policies/cluster"
#define NEXT    GPA_SOURCE_DIR "/policies"

static const char pod_review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
    "\"7f0e-reload\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"namespace\":"
    "\"inference-a\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
    "\"metadata\":{\"name\":\"llm-small\",\"annotations\":{\"gpu-admission.io/gpu-memory\":"
    "\"8Gi\"}},\"spec\":{\"containers\":[{\"name\":\"server\",\"image\":\"vllm/vllm-openai:v0.6."
    "0\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}},\"oldObject\":null}}";

typedef struct reload_case {
    gpa_policy *serving; /* a reference kept for putting the set back */
    char serving_rev[65], next_rev[65];
    size_t serving_len, next_len; /* the review's body length under each set */
    /* the last run's */
    char rev[65];
    bool snap_matches; /* the snapshot's policy has the store's revision */
    int review_rc;
    size_t review_len;
    gpa_error err;
} reload_case;

/* The review's body length through the store's current snapshot; 0 when none. */
static size_t review_now(int *rc)
{
    gpa_policy_snap *s = gpa_policy_store_acquire();
    if (!s) return 0;
    gpa_review_result r;
    *rc = gpa_review_handle(&r, gpa_policy_snap_policy(s), GPA_HOOK_MUTATE, pod_review,
                            strlen(pod_review), NULL);
    size_t n = r.body ? r.body_len : 0;
    gpa_review_result_clear(&r);
    gpa_policy_store_release(s);
    return n;
}

static int run_reload(void *ctx)
{
    reload_case *c = ctx;
    c->err = (gpa_error){0};
    int rc = gpa_reload_policy(NEXT, GPA_TRIGGER_WATCH, &c->err);
    fault_stop_failing();
    gpa_policy_store_revision(c->rev);
    gpa_policy_snap *s = gpa_policy_store_acquire();
    c->snap_matches = s && strcmp(gpa_policy_revision(gpa_policy_snap_policy(s)), c->rev) == 0;
    gpa_policy_store_release(s);
    c->review_len = review_now(&c->review_rc);
    /* the serving set back for the next run, as the same object (not reloaded: cheaper, and
     * what this run allocated and freed then balances) */
    if (strcmp(c->rev, c->serving_rev) != 0 &&
        gpa_policy_store_install(gpa_policy_ref(c->serving)) != GPA_OK) {
        printf("FAIL cannot put the serving set back\n");
        exit(1);
    }
    return rc;
}

static const char *check_reload(void *ctx, int rc, int clean_rc, bool fired)
{
    reload_case *c = ctx;
    if (!c->snap_matches) return "the store's snapshot does not hold the store's revision";
    if (c->review_rc != GPA_OK) return "the review through the served snapshot failed";
    if (rc == GPA_OK) {
        if (strcmp(c->rev, c->next_rev) != 0) return "GPA_OK but the new set is not served";
        if (c->review_len != c->next_len) return "the new set answers another review";
        return NULL;
    }
    if (rc != GPA_ENOMEM) {
        static char why[sizeof c->err.message + 64];
        snprintf(why, sizeof why, "rc %d instead of GPA_ENOMEM: %s", rc, c->err.message);
        return why;
    }
    if (strcmp(c->rev, c->serving_rev) != 0) return "a failed reload changed the served set";
    if (c->review_len != c->serving_len) return "the set still served answers another review";
    return NULL;
}

int main(void)
{
    fault_init();
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) gpa_log_set_fd(devnull);
    reload_case c = {0};
    gpa_error e = {0};
    int rc;
    if (gpa_reload_policy(NEXT, GPA_TRIGGER_STARTUP, &e) != GPA_OK) {
        printf("FAIL cannot load %s: %s\n", NEXT, e.message);
        return 1;
    }
    gpa_policy_store_revision(c.next_rev);
    c.next_len = review_now(&rc);
    if (gpa_reload_policy(SERVING, GPA_TRIGGER_WATCH, &e) != GPA_OK) {
        printf("FAIL cannot load %s: %s\n", SERVING, e.message);
        return 1;
    }
    gpa_policy_store_revision(c.serving_rev);
    c.serving_len = review_now(&rc);
    gpa_policy_snap *snap = gpa_policy_store_acquire();
    c.serving = gpa_policy_ref((gpa_policy *)gpa_policy_snap_policy(snap));
    gpa_policy_store_release(snap);
    if (!strcmp(c.serving_rev, c.next_rev) || c.serving_len == c.next_len || !c.serving_len) {
        printf("FAIL the two sets must differ in revision and in their answer to the pod\n");
        return 1;
    }
    fault_case fc = {"reload/policy reload keeps the serving set", run_reload, check_reload, &c};
    int failed = fault_run_case(&fc);
    gpa_policy_store_shutdown();
    gpa_policy_unref(c.serving);
    printf("%s\n", failed ? "FAILED" : "all runs ended cleanly");
    return failed ? 1 : 0;
}
