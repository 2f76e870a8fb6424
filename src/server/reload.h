/*
 * reload.h - (re)loading the policy set and the serving certificate into their stores,
 * with the log line and metric every attempt owes the operator.
 *
 * Must never: change what is being served when the new material fails any check; a failed
 * reload leaves the previous set / pair in place.
 */
#ifndef GPA_RELOAD_H
#define GPA_RELOAD_H

#include <time.h>

#include "gpu_admission/common.h"

typedef enum {
    GPA_TRIGGER_STARTUP,
    GPA_TRIGGER_WATCH,    /* inotify saw the directory change */
    GPA_TRIGGER_SIGNAL,   /* SIGHUP */
    GPA_TRIGGER_PERIODIC, /* --reload-interval fallback: silent when nothing changed */
} gpa_trigger;

const char *gpa_trigger_name(gpa_trigger t);

/* GPA_OK when the set on disk is being served (new or unchanged), else the loader's error
 * (logged and counted). */
int gpa_reload_policy(const char *dir, gpa_trigger t, gpa_error *err);

/* Same for the certificate pair, checked for validity at `now`. */
int gpa_reload_cert(const char *cert_path, const char *key_path, gpa_trigger t, time_t now,
                    gpa_error *err);

#endif
