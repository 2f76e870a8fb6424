/*
 * test_cel_emit.c - the exporters' CEL building blocks (src/tools/cel_emit.c): a namespace
 * glob's regular expression accepts exactly what the engine's glob matcher accepts (every
 * glob of a small alphabet against every name of it, so a lost anchor or a wrong wildcard
 * shows), and string literals escape what CEL would otherwise read as syntax.
 *
 * The regex is checked with POSIX ERE (regcomp): the exporter writes only literals, '.', ".*",
 * '|', escaped punctuation and one non-capturing group "(?:", which ERE spells "(".
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/tools/cel_emit.h"
#include "check.h"
#include "gpu_admission/glob.h"
#include "policy/policy_model.h"

static char *ere_of(const char *glob)
{
    gpa_sb b = {0};
    gpa_cel_glob_regex(&b, glob);
    char *rx = gpa_sb_done(&b);
    char *q = strstr(rx, "(?:");
    if (q) memmove(q + 1, q + 3, strlen(q + 3) + 1);
    return rx;
}

static int n_checked;

static void same(const char *glob, const char *name)
{
    char *rx = ere_of(glob);
    regex_t re;
    if (regcomp(&re, rx, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "regex %s of glob %s does not compile\n", rx, glob);
        CHECK(0);
        free(rx);
        return;
    }
    bool want = gpa_glob_match(glob, name), got = regexec(&re, name, 0, NULL, 0) == 0;
    if (want != got)
        fprintf(stderr, "glob %s name %s: glob %d regex %s %d\n", glob, name, want, rx, got);
    CHECK(want == got);
    n_checked++;
    regfree(&re);
    free(rx);
}

/* every string over alphabet of length <= max, written into buf at depth */
static void each(char *buf, size_t depth, size_t max, const char *alpha,
                 void (*fn)(const char *, void *), void *arg)
{
    buf[depth] = '\0';
    fn(buf, arg);
    if (depth == max) return;
    for (const char *a = alpha; *a; a++) {
        buf[depth] = *a;
        each(buf, depth + 1, max, alpha, fn, arg);
    }
}

static void with_name(const char *name, void *glob)
{
    same((const char *)glob, name);
}

static void with_glob(const char *glob, void *unused)
{
    (void)unused;
    if (!*glob) return;
    char name[8];
    each(name, 0, 4, "a.b-", with_name, (void *)glob);
}

static char *text(void (*fn)(gpa_sb *, const char *), const char *arg)
{
    gpa_sb b = {0};
    fn(&b, arg);
    return gpa_sb_done(&b);
}

int main(void)
{
    /* globs over {a, ., *, ?} up to 4 long against names over {a, ., b, -} up to 4 long */
    char g[8];
    each(g, 0, 4, "a.*?", with_glob, NULL);
    CHECK(n_checked > 10000);
    same("research-*", "research-a");
    same("research-*", "xresearch-a");
    same("research-*", "research-a\n");
    same("sandbox", "sandbox2");

    char *s = text(gpa_cel_glob_regex, "a.b*");
    CHECK_STR(s, "^(?:a\\.b.*)$");
    free(s);
    s = text(gpa_cel_quote, "it's a \\ \"x\"\n\x01");
    CHECK_STR(s, "'it\\'s a \\\\ \\\"x\\\"\\n\\x01'");
    free(s);

    /* literal globs as list membership, wildcards in one anchored alternation, "*" true */
    gpa_strlist l = {3, (char *[]){"sandbox", "research-*", "r?"}};
    gpa_sb b = {0};
    gpa_cel_globs_match(&b, "ns", &l);
    s = gpa_sb_done(&b);
    CHECK_STR(s, "(ns in ['sandbox'] || ns.matches('^(?:research-.*|r.)$'))");
    free(s);
    gpa_strlist any = {2, (char *[]){"a", "*"}};
    gpa_cel_globs_match(&b, "ns", &any);
    s = gpa_sb_done(&b);
    CHECK_STR(s, "true");
    free(s);
    return check_done();
}
