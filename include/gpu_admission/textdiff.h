/*
 * textdiff.h - a unified diff between two texts, for the offline tools (`test` shows how a
 * case's object or resources differ from what was expected). Part of gpa_tools: the server
 * never needs it.
 */
#ifndef GPA_TEXTDIFF_H
#define GPA_TEXTDIFF_H

/* A unified diff (3 lines of context) between two texts, "--- label_a" / "+++ label_b"
 * headers; NULL when they are equal or memory runs out. */
char *gpa_text_diff(const char *a, const char *b, const char *label_a, const char *label_b);

#endif
