/*
 * test_glob.c - namespace globs: validation messages, '*' and '?' semantics, and that a
 * pathological pattern on a long input stays fast (no exponential backtracking).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gpu_admission/glob.h"

int main(void)
{
    gpa_error e = {0};
    CHECK_INT(gpa_glob_validate("research-*", &e), GPA_OK);
    CHECK_INT(gpa_glob_validate("a?c.d-*", &e), GPA_OK);
    CHECK_INT(gpa_glob_validate("*", &e), GPA_OK);
    CHECK_INT(gpa_glob_validate("", &e), GPA_EPARSE);
    CHECK_CONTAINS(e.message, "empty");
    CHECK_INT(gpa_glob_validate(NULL, &e), GPA_EPARSE);
    CHECK_INT(gpa_glob_validate("Research", &e), GPA_EPARSE);
    CHECK_CONTAINS(e.message, "'R' at position 1");
    CHECK_INT(gpa_glob_validate("ns[0-9]", &e), GPA_EPARSE);
    CHECK_CONTAINS(e.message, "'[' at position 3");
    CHECK_INT(gpa_glob_validate("a_b", &e), GPA_EPARSE);
    CHECK_INT(gpa_glob_validate("a b", &e), GPA_EPARSE);
    CHECK_INT(gpa_glob_validate("a/b", &e), GPA_EPARSE);
    CHECK_INT(gpa_glob_validate("a\xc3\xa9", &e), GPA_EPARSE);
    CHECK_CONTAINS(e.message, "0xc3");

    CHECK(gpa_glob_match("research-*", "research-a"));
    CHECK(gpa_glob_match("research-*", "research-"));
    CHECK(!gpa_glob_match("research-*", "research"));
    CHECK(!gpa_glob_match("research-*", "xresearch-a"));
    CHECK(gpa_glob_match("sandbox", "sandbox"));
    CHECK(!gpa_glob_match("sandbox", "sandbox2"));
    CHECK(!gpa_glob_match("sandbox", "sandbo"));
    CHECK(gpa_glob_match("*", ""));
    CHECK(gpa_glob_match("*", "anything"));
    CHECK(gpa_glob_match("a?c", "abc"));
    CHECK(!gpa_glob_match("a?c", "ac"));
    CHECK(!gpa_glob_match("a?c", "abbc"));
    CHECK(gpa_glob_match("*-prod", "team-a-prod"));
    CHECK(!gpa_glob_match("*-prod", "team-a-prod2"));
    CHECK(gpa_glob_match("a*b*c", "axxbyyc"));
    CHECK(gpa_glob_match("a*b*c", "abcbc"));
    CHECK(!gpa_glob_match("a*b*c", "axxbyy"));
    CHECK(gpa_glob_match("*a*", "bab"));
    CHECK(gpa_glob_match("**x", "x"));
    CHECK(gpa_glob_match("?*", "a"));
    CHECK(!gpa_glob_match("?*", ""));
    CHECK(!gpa_glob_match("", "a"));
    CHECK(gpa_glob_match("", ""));
    CHECK(!gpa_glob_match(NULL, "a"));

    /* pathological: naive backtracking is exponential in the number of stars here */
    size_t n = 200000;
    char *s = malloc(n + 1);
    memset(s, 'a', n);
    s[n] = '\0';
    clock_t t0 = clock();
    CHECK(!gpa_glob_match("*a*a*a*a*a*a*a*a*b", s));
    s[n - 1] = 'b';
    CHECK(gpa_glob_match("*a*a*a*a*a*a*a*a*b", s));
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(secs < 0.5);
    free(s);
    /* intersection: is there a namespace both globs match? (policy lint) */
    CHECK(gpa_glob_intersects("inference-*", "inference-a"));
    CHECK(gpa_glob_intersects("inference-*", "*-a"));
    CHECK(gpa_glob_intersects("*", "sandbox"));
    CHECK(gpa_glob_intersects("research-*", "research-?"));
    CHECK(gpa_glob_intersects("a*b*c", "*bbb*"));
    CHECK(gpa_glob_intersects("ab?d", "a*d"));
    CHECK(gpa_glob_intersects("*x", "x*"));
    CHECK(!gpa_glob_intersects("inference-*", "research-*"));
    CHECK(!gpa_glob_intersects("inference-*", "sandbox"));
    CHECK(!gpa_glob_intersects("notebooks", "ml-platform"));
    CHECK(!gpa_glob_intersects("a?", "a"));
    CHECK(!gpa_glob_intersects("a*b", "*c"));
    CHECK(!gpa_glob_intersects("prod-*", "prod"));
    CHECK(gpa_glob_intersects("prod*", "prod"));
    /* agrees with matching on a literal side */
    {
        const char *globs[] = {"*", "a*", "*a", "a?c", "?", "a*b*c", "ab", "*-*", "x?y*"};
        const char *words[] = {"a", "abc", "ac", "ab", "a-b", "xzy", "xzyq", "", "aabbcc"};
        for (size_t g = 0; g < sizeof globs / sizeof *globs; g++)
            for (size_t w = 0; w < sizeof words / sizeof *words; w++)
                if (*words[w])
                    CHECK_INT(gpa_glob_intersects(globs[g], words[w]),
                              gpa_glob_match(globs[g], words[w]));
    }
    return check_done();
}
