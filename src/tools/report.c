/*
 * report.c - the text, JSON and JUnit XML reports of a `gpu-admission test` run (report.h).
 * The bytes are the command's documented output (docs/cli.md, docs/policy-tests.md): a CI
 * parses them, so a change here is a change of the interface.
 *
 * Must never: do I/O (the caller prints the gpa_sb), or write XML a parser would refuse.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpu_admission/report.h"

/* ---- text ---- */

static void print_indented(gpa_sb *o, const char *text, const char *pad)
{
    const char *s = text;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        gpa_sb_printf(o, "%s%.*s\n", pad, (int)n, s);
        s += n + (nl ? 1 : 0);
    }
}

static void text_decision(gpa_sb *o, const gpa_judgement *j)
{
    gpa_sb_printf(o, "        decision: %s", j->allowed ? "allowed" : "denied");
    gpa_sb_printf(o, ", rule %s, pool %s", j->rule ? j->rule : "(none)",
                  j->pool ? j->pool : "(none)");
    if (j->reason) gpa_sb_printf(o, ", reason %s", j->reason);
    gpa_sb_put(o, "\n", 1);
    if (j->message) gpa_sb_printf(o, "        message: %s\n", j->message);
    for (size_t i = 0; i < j->n_warnings; i++)
        gpa_sb_printf(o, "        warning: %s\n", j->warnings[i]);
}

void gpa_report_text(gpa_sb *o, const gpa_report_suite *runs, size_t n_runs, bool verbose)
{
    size_t p = 0, f = 0, s = 0;
    for (size_t i = 0; i < n_runs; i++) {
        const gpa_report_suite *r = &runs[i];
        const char *sname = gpa_suite_name(r->f, r->idx);
        for (size_t c = 0; c < r->n; c++) {
            const gpa_report_case *cr = &r->cases[c];
            static const char *tags[] = {"PASS", "FAIL", "SKIP"};
            gpa_sb_printf(o, "%s  %s/%s\n", tags[cr->status], sname, cr->name);
            if (cr->status == GPA_REPORT_FAIL) {
                gpa_sb_printf(o, "      %s:%d\n", gpa_suite_path(r->f, r->idx), cr->line);
                for (size_t k = 0; k < cr->r.n_failures; k++) {
                    const gpa_case_failure *fl = &cr->r.failures[k];
                    gpa_sb_printf(o, "      %s: expected %s, got %s\n", fl->key, fl->expected,
                                  fl->actual);
                    if (fl->diff) print_indented(o, fl->diff, "        ");
                }
            }
            if (verbose && cr->status != GPA_REPORT_SKIP && cr->r.decision.judged)
                text_decision(o, &cr->r.decision);
        }
        p += r->passed;
        f += r->failed;
        s += r->skipped;
    }
    gpa_sb_printf(o, "%zu passed, %zu failed, %zu skipped\n", p, f, s);
}

/* ---- JSON ---- */

static cJSON *decision_json(const gpa_judgement *j)
{
    cJSON *d = cJSON_CreateObject();
    if (!d) return NULL;
    cJSON_AddBoolToObject(d, "judged", j->judged);
    cJSON_AddBoolToObject(d, "allowed", j->allowed);
    j->rule ? (void)cJSON_AddStringToObject(d, "rule", j->rule)
            : (void)cJSON_AddNullToObject(d, "rule");
    j->pool ? (void)cJSON_AddStringToObject(d, "pool", j->pool)
            : (void)cJSON_AddNullToObject(d, "pool");
    j->reason ? (void)cJSON_AddStringToObject(d, "reason", j->reason)
              : (void)cJSON_AddNullToObject(d, "reason");
    j->message ? (void)cJSON_AddStringToObject(d, "message", j->message)
               : (void)cJSON_AddNullToObject(d, "message");
    cJSON *w = cJSON_AddArrayToObject(d, "warnings");
    for (size_t i = 0; w && i < j->n_warnings; i++)
        cJSON_AddItemToArray(w, cJSON_CreateString(j->warnings[i]));
    return d;
}

bool gpa_report_json(gpa_sb *o, const gpa_report_suite *runs, size_t n_runs)
{
    static const char *names[] = {"pass", "fail", "skip"};
    cJSON *root = cJSON_CreateObject();
    cJSON *suites = cJSON_AddArrayToObject(root, "suites");
    size_t p = 0, f = 0, s = 0;
    for (size_t i = 0; suites && i < n_runs; i++) {
        const gpa_report_suite *r = &runs[i];
        cJSON *sj = cJSON_CreateObject();
        cJSON_AddItemToArray(suites, sj);
        cJSON_AddStringToObject(sj, "name", gpa_suite_name(r->f, r->idx));
        cJSON_AddStringToObject(sj, "file", gpa_suite_path(r->f, r->idx));
        cJSON *cases = cJSON_AddArrayToObject(sj, "cases");
        for (size_t c = 0; cases && c < r->n; c++) {
            const gpa_report_case *cr = &r->cases[c];
            cJSON *cj = cJSON_CreateObject();
            cJSON_AddItemToArray(cases, cj);
            cJSON_AddStringToObject(cj, "name", cr->name);
            cJSON_AddNumberToObject(cj, "line", cr->line);
            cJSON_AddStringToObject(cj, "status", names[cr->status]);
            if (cr->status == GPA_REPORT_SKIP) continue;
            if (cr->r.decision.judged || cr->r.n_failures == 0)
                cJSON_AddItemToObject(cj, "decision", decision_json(&cr->r.decision));
            cJSON *fa = cJSON_AddArrayToObject(cj, "failures");
            for (size_t k = 0; fa && k < cr->r.n_failures; k++) {
                const gpa_case_failure *fl = &cr->r.failures[k];
                cJSON *fj = cJSON_CreateObject();
                cJSON_AddItemToArray(fa, fj);
                cJSON_AddStringToObject(fj, "key", fl->key);
                cJSON_AddStringToObject(fj, "expected", fl->expected);
                cJSON_AddStringToObject(fj, "actual", fl->actual);
                if (fl->diff) cJSON_AddStringToObject(fj, "diff", fl->diff);
            }
        }
        p += r->passed;
        f += r->failed;
        s += r->skipped;
    }
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(sum, "passed", (double)p);
    cJSON_AddNumberToObject(sum, "failed", (double)f);
    cJSON_AddNumberToObject(sum, "skipped", (double)s);
    char *txt = cJSON_Print(root);
    bool ok = txt != NULL;
    if (txt) {
        gpa_sb_puts(o, txt);
        gpa_sb_put(o, "\n", 1);
    }
    free(txt);
    cJSON_Delete(root);
    return ok;
}

/* ---- JUnit XML ---- */

/* XML 1.0 text: & < > " ' escaped; characters XML cannot hold at all (C0 controls but tab, LF,
 * CR; invalid UTF-8) written as U+FFFD so the file always parses. Valid UTF-8 passes as is. */
static void xml_escape(gpa_sb *o, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char c = *p;
        if (c == '&')
            gpa_sb_puts(o, "&amp;");
        else if (c == '<')
            gpa_sb_puts(o, "&lt;");
        else if (c == '>')
            gpa_sb_puts(o, "&gt;");
        else if (c == '"')
            gpa_sb_puts(o, "&quot;");
        else if (c == '\'')
            gpa_sb_puts(o, "&apos;");
        else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            gpa_sb_puts(o, "\xEF\xBF\xBD");
        else if (c < 0x80)
            gpa_sb_put(o, (const char *)&c, 1);
        else {
            /* a complete, shortest-form UTF-8 sequence, no surrogates, <= U+10FFFF */
            int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
            if (c > 0xF4) n = 0;
            bool ok = n > 0;
            for (int i = 1; ok && i < n; i++)
                ok = (p[i] & 0xC0) == 0x80;
            if (ok && n == 3 && ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0)))
                ok = false;
            if (ok && n == 4 && ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90)))
                ok = false;
            /* U+FFFE / U+FFFF are not XML characters either */
            if (ok && n == 3 && c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF))
                ok = false;
            if (!ok) {
                gpa_sb_puts(o, "\xEF\xBF\xBD");
                p++;
                continue;
            }
            gpa_sb_put(o, (const char *)p, (size_t)n);
            p += n;
            continue;
        }
        p++;
    }
}

void gpa_report_junit(gpa_sb *o, const gpa_report_suite *runs, size_t n_runs)
{
    size_t p = 0, f = 0, s = 0;
    for (size_t i = 0; i < n_runs; i++) {
        p += runs[i].passed;
        f += runs[i].failed;
        s += runs[i].skipped;
    }
    gpa_sb_puts(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    gpa_sb_printf(o,
                  "<testsuites name=\"gpu-admission test\" tests=\"%zu\" failures=\"%zu\" "
                  "errors=\"0\" skipped=\"%zu\">\n",
                  p + f + s, f, s);
    for (size_t i = 0; i < n_runs; i++) {
        const gpa_report_suite *r = &runs[i];
        const char *sname = gpa_suite_name(r->f, r->idx);
        gpa_sb_puts(o, "  <testsuite name=\"");
        xml_escape(o, sname);
        gpa_sb_puts(o, "\" file=\"");
        xml_escape(o, gpa_suite_path(r->f, r->idx));
        gpa_sb_printf(o, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\">\n", r->n,
                      r->failed, r->skipped);
        for (size_t c = 0; c < r->n; c++) {
            const gpa_report_case *cr = &r->cases[c];
            gpa_sb_puts(o, "    <testcase name=\"");
            xml_escape(o, cr->name);
            gpa_sb_puts(o, "\" classname=\"");
            xml_escape(o, sname);
            gpa_sb_puts(o, "\" file=\"");
            xml_escape(o, gpa_suite_path(r->f, r->idx));
            gpa_sb_printf(o, "\" line=\"%d\"", cr->line);
            if (cr->status == GPA_REPORT_PASS) {
                gpa_sb_puts(o, "/>\n");
                continue;
            }
            gpa_sb_puts(o, ">\n");
            if (cr->status == GPA_REPORT_SKIP) {
                gpa_sb_puts(o, "      <skipped/>\n");
            } else {
                const gpa_case_failure *f0 = cr->r.n_failures ? &cr->r.failures[0] : NULL;
                gpa_sb_puts(o, "      <failure message=\"");
                if (f0) {
                    xml_escape(o, f0->key);
                    gpa_sb_puts(o, ": expected ");
                    xml_escape(o, f0->expected);
                    gpa_sb_puts(o, ", got ");
                    xml_escape(o, f0->actual);
                }
                gpa_sb_puts(o, "\" type=\"expectation\">");
                for (size_t k = 0; k < cr->r.n_failures; k++) {
                    const gpa_case_failure *fl = &cr->r.failures[k];
                    xml_escape(o, fl->key);
                    gpa_sb_puts(o, ": expected ");
                    xml_escape(o, fl->expected);
                    gpa_sb_puts(o, ", got ");
                    xml_escape(o, fl->actual);
                    gpa_sb_put(o, "\n", 1);
                    if (fl->diff) xml_escape(o, fl->diff);
                }
                gpa_sb_puts(o, "</failure>\n");
            }
            gpa_sb_puts(o, "    </testcase>\n");
        }
        gpa_sb_puts(o, "  </testsuite>\n");
    }
    gpa_sb_puts(o, "</testsuites>\n");
}
