/*
 * common.c - the error-detail record and the library version. No state.
 */
#include <stdarg.h>
#include <stdio.h>

#include "gpu_admission/common.h"

int gpa_fail(gpa_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *gpa_version(void)
{
    return GPA_VERSION;
}
