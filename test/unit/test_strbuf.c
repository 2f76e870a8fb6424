/*
 * test_strbuf.c - the string builder the text writers share: appends that cross the growth
 * boundary keep every byte, printf output longer than the free room is written whole, and
 * the two hand-over calls differ exactly in what an empty builder gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpu_admission/strbuf.h"

int main(void)
{
    /* nothing written: done gives "", take gives NULL (policy lint's "nothing to say") */
    gpa_sb e = {0};
    char *s = gpa_sb_done(&e);
    CHECK_STR(s, "");
    free(s);
    CHECK(gpa_sb_take(&e) == NULL);

    /* 1,000 appends of mixed kinds: the result is their concatenation, terminated */
    gpa_sb b = {0};
    char want[8192] = "";
    size_t at = 0;
    for (int i = 0; i < 1000 && at < sizeof want - 64; i++) {
        switch (i % 3) {
        case 0:
            gpa_sb_printf(&b, "%d,", i);
            at += (size_t)snprintf(want + at, sizeof want - at, "%d,", i);
            break;
        case 1:
            gpa_sb_put(&b, "ab\0cd", 2); /* n bytes, not up to a NUL */
            at += (size_t)snprintf(want + at, sizeof want - at, "ab");
            break;
        default:
            gpa_sb_fill(&b, ' ', (size_t)(i % 5));
            at += (size_t)snprintf(want + at, sizeof want - at, "%*s", i % 5, "");
        }
        CHECK_INT((long long)b.len, (long long)at);
        CHECK(b.p[b.len] == '\0');
    }
    CHECK(!b.oom);
    s = gpa_sb_take(&b);
    CHECK_STR(s, want);
    free(s);
    CHECK(b.p == NULL && b.len == 0);

    /* one printf far longer than the first allocation, after a short one: written whole */
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gpa_sb_puts(&b, "head:");
    gpa_sb_printf(&b, "%s|%s", big, "tail");
    CHECK_INT((long long)b.len, (long long)(5 + sizeof big - 1 + 5));
    CHECK(memcmp(b.p, "head:xxx", 8) == 0);
    CHECK_STR(b.p + b.len - 6, "x|tail");
    gpa_sb_free(&b);
    CHECK(b.p == NULL);

    /* a latched failure drops everything after it and hands back NULL */
    gpa_sb f = {0};
    gpa_sb_puts(&f, "kept until the failure");
    f.oom = true;
    gpa_sb_puts(&f, "never");
    CHECK(strstr(f.p, "never") == NULL);
    CHECK(gpa_sb_done(&f) == NULL);
    return check_done();
}
