/*
 * common.h - error codes and the error-detail record shared by every gpa_ module.
 *
 * Functions that can fail return int (GPA_OK or a negative GPA_E* code), take their
 * out-parameters first and a gpa_error * last (which may be NULL). Getters return values.
 * Nothing here allocates.
 */
#ifndef GPA_COMMON_H
#define GPA_COMMON_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

enum {
    GPA_OK = 0,
    GPA_ENOMEM = -1,   /* allocation failed */
    GPA_EINVAL = -2,   /* caller passed something unusable */
    GPA_EPARSE = -3,   /* input is not valid JSON/YAML/quantity/... */
    GPA_EPOLICY = -4,  /* the policy set is invalid (message lists file:line:col errors) */
    GPA_EREQUEST = -5, /* an AdmissionReview that cannot be answered (no uid, wrong shape) */
    GPA_EIO = -6,      /* a file could not be read (only the loader's file entry point) */
    GPA_ERANGE = -7,   /* a number is out of the representable range */
};

/* The detail record. message is always NUL-terminated; for policy errors it holds one
 * "path:line:col: text" per line. */
typedef struct gpa_error {
    int code;
    char message[4096];
} gpa_error;

/* Sets err (if non-NULL) and returns code, so callers can write `return gpa_fail(...)`. */
int gpa_fail(gpa_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Version string of the library, e.g. "0.1.0". */
const char *gpa_version(void);

#endif
