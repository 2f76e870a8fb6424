/*
 * quantity.h - Kubernetes resource quantities ("8Gi", "1", "500m", "1e3", "40G").
 *
 * Values are held exactly as milli-units in an int64 so GPU counts can be checked for
 * integrality and byte sizes compared without floating point. Parsing never allocates.
 */
#ifndef GPA_QUANTITY_H
#define GPA_QUANTITY_H

#include "common.h"

typedef struct gpa_quantity {
    int64_t milli; /* value x 1000, rounded up when the input had sub-milli precision */
    bool exact;    /* false when rounding happened (e.g. "1n") */
} gpa_quantity;

/* Parses the Kubernetes quantity grammar: sign, digits, optional fraction, then a binary
 * suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m "" k M G T P E) or an exponent
 * (e3, E-2). Errors: GPA_EPARSE (grammar), GPA_ERANGE (does not fit). */
int gpa_quantity_parse(gpa_quantity *out, const char *s, size_t len, gpa_error *err);

/* Integer value when the quantity is a whole, exact number; false otherwise. */
bool gpa_quantity_integer(const gpa_quantity *q, int64_t *out);

/* Value in whole units, rounded up (bytes for memory). */
int64_t gpa_quantity_value(const gpa_quantity *q);

#endif
