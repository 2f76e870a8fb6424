/*
 * reload.c - policy and certificate reloads (see reload.h).
 *
 * Must never: install a policy set or pair that did not pass its loader, or run on a
 * request thread (reloads happen only on the main loop, so they never race each other).
 */
#include "reload.h"

#include <stdio.h>
#include <string.h>

#include "gpu_admission/policy.h"
#include "jsonlog.h"
#include "metrics.h"
#include "policy_store.h"
#include "tls_material.h"
#include "tls_store.h"

const char *gpa_trigger_name(gpa_trigger t)
{
    switch (t) {
    case GPA_TRIGGER_STARTUP:
        return "startup";
    case GPA_TRIGGER_WATCH:
        return "watch";
    case GPA_TRIGGER_SIGNAL:
        return "SIGHUP";
    case GPA_TRIGGER_PERIODIC:
        return "periodic";
    }
    return "unknown";
}

int gpa_reload_policy(const char *dir, gpa_trigger t, gpa_error *err)
{
    gpa_policy *p = NULL;
    gpa_error e = {0};
    int rc = gpa_policy_load_dir(&p, dir, &e);
    if (rc != GPA_OK) {
        if (t != GPA_TRIGGER_STARTUP) gpa_metrics_policy_reload(false);
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_ERROR,
                      t == GPA_TRIGGER_STARTUP ? "policy set invalid"
                                               : "policy reload failed; previous set kept");
        gpa_log_str(&l, "trigger", gpa_trigger_name(t));
        gpa_log_str(&l, "dir", dir);
        gpa_log_str(&l, "error", e.message);
        gpa_log_end(&l);
        if (err) *err = e;
        return rc;
    }
    char old[65];
    gpa_policy_store_revision(old);
    const char *rev = gpa_policy_revision(p);
    bool changed = strcmp(old, rev) != 0;
    if (!changed && t == GPA_TRIGGER_PERIODIC) {
        gpa_policy_unref(p);
        return GPA_OK;
    }
    size_t pools = gpa_policy_pool_count(p), rules = gpa_policy_rule_count(p);
    char revcopy[65];
    snprintf(revcopy, sizeof revcopy, "%s", rev);
    if (changed) {
        rc = gpa_policy_store_install(p);
        if (rc != GPA_OK) return gpa_fail(err, rc, "out of memory installing the policy set");
        gpa_metrics_set_policy_revision(revcopy);
    } else {
        gpa_policy_unref(p);
    }
    if (t != GPA_TRIGGER_STARTUP) gpa_metrics_policy_reload(true);
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO,
                  t == GPA_TRIGGER_STARTUP ? "policy set loaded"
                  : changed                ? "policy set reloaded"
                                           : "policy set unchanged");
    gpa_log_str(&l, "trigger", gpa_trigger_name(t));
    gpa_log_str(&l, "dir", dir);
    gpa_log_str(&l, "revision", revcopy);
    if (changed && old[0]) gpa_log_str(&l, "previous_revision", old);
    gpa_log_int(&l, "pools", (long long)pools);
    gpa_log_int(&l, "rules", (long long)rules);
    gpa_log_end(&l);
    return GPA_OK;
}

int gpa_reload_cert(const char *cert_path, const char *key_path, gpa_trigger t, time_t now,
                    gpa_error *err)
{
    gpa_tls_pair *pair = NULL;
    gpa_error e = {0};
    int rc = gpa_tls_pair_load(&pair, cert_path, key_path, now, &e);
    if (rc == GPA_OK && gpa_tls_store_is_current(pair)) {
        gpa_tls_pair_free(pair);
        if (t == GPA_TRIGGER_PERIODIC || t == GPA_TRIGGER_WATCH) return GPA_OK;
        gpa_metrics_cert_reload(true);
        gpa_log_msg(GPA_LOG_INFO, "certificate unchanged", NULL);
        return GPA_OK;
    }
    if (rc == GPA_OK) rc = gpa_tls_store_install(pair, now, &e);
    if (rc != GPA_OK) {
        if (t != GPA_TRIGGER_STARTUP) gpa_metrics_cert_reload(false);
        char fp[65];
        gpa_tls_store_fingerprint(fp);
        gpa_logline l;
        gpa_log_begin(&l, GPA_LOG_ERROR,
                      t == GPA_TRIGGER_STARTUP
                          ? "serving certificate unusable"
                          : "certificate reload failed; previous certificate kept");
        gpa_log_str(&l, "trigger", gpa_trigger_name(t));
        gpa_log_str(&l, "cert", cert_path);
        gpa_log_str(&l, "key", key_path);
        gpa_log_str(&l, "error", e.message);
        if (fp[0]) gpa_log_str(&l, "serving_fingerprint", fp);
        gpa_log_end(&l);
        gpa_tls_pair_free(pair);
        if (err) *err = e;
        return rc;
    }
    if (t != GPA_TRIGGER_STARTUP) gpa_metrics_cert_reload(true);
    gpa_metrics_set_cert_expiry(pair->not_after);
    gpa_logline l;
    gpa_log_begin(&l, GPA_LOG_INFO,
                  t == GPA_TRIGGER_STARTUP ? "serving certificate loaded"
                                           : "serving certificate rotated");
    gpa_log_str(&l, "trigger", gpa_trigger_name(t));
    gpa_log_str(&l, "cert", cert_path);
    gpa_log_str(&l, "fingerprint", pair->fingerprint);
    gpa_log_int(&l, "not_after", (long long)pair->not_after);
    gpa_log_end(&l);
    gpa_tls_pair_free(pair);
    return GPA_OK;
}
