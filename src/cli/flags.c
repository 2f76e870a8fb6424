/*
 * flags.c - the one flag parser of the subcommands (curl's aliases[] table is the model):
 * each command describes its flags as rows of a gpa_cli_flag table and gpa_cli_parse walks
 * argv against it; the command's --help text is the table's help lines between a head and a
 * tail, so a flag cannot be accepted without being listed.
 *
 * Must never: exit, or print anything but the documented error lines and usage text (the
 * caller decides the exit code it was told); accept a flag the table does not name.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

void gpa_cli_usage(const gpa_cli_spec *spec, FILE *f)
{
    fputs(spec->head, f);
    for (size_t i = 0; i < spec->n_flags; i++)
        fputs(spec->flags[i].help, f);
    fputs(spec->tail, f);
}

/* The row argv[i] names: exact long or short form, or "--long=value" for a row taking a
 * value (value set then). */
static const gpa_cli_flag *find(const gpa_cli_spec *spec, const char *a, const char **value)
{
    *value = NULL;
    for (size_t i = 0; i < spec->n_flags; i++) {
        const gpa_cli_flag *fl = &spec->flags[i];
        if (strcmp(a, fl->lng) == 0 || (fl->shrt && strcmp(a, fl->shrt) == 0)) return fl;
        size_t n = strlen(fl->lng);
        if (fl->kind >= GPA_CLI_STR && strncmp(a, fl->lng, n) == 0 && a[n] == '=') {
            *value = a + n + 1;
            return fl;
        }
    }
    return NULL;
}

static int refuse_unknown(const gpa_cli_spec *spec, const char *a)
{
    const char *q = spec->unknown_quoted ? "'" : "";
    fprintf(stderr, "gpu-admission %s: %s %s%s%s\n", spec->cmd, spec->unknown, q, a, q);
    gpa_cli_usage(spec, stderr);
    return spec->error_rc;
}

static int take_positional(const gpa_cli_spec *spec, void *opts, const char *a)
{
    int rc = spec->positional(opts, a);
    if (rc != GPA_CLI_USAGE) return rc;
    gpa_cli_usage(spec, stderr);
    return spec->error_rc;
}

int gpa_cli_parse(const gpa_cli_spec *spec, void *opts, int argc, char **argv)
{
    char *base = opts;
    bool only_positional = false;
    int n_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool flag_like = a[0] == '-' && a[1] != '\0';
        if (!only_positional && strcmp(a, "--") == 0) {
            if (spec->dashdash == GPA_CLI_DASHDASH_ENDS_FLAGS) {
                only_positional = true;
                continue;
            }
            /* `check -- DIR`: only a lone last DIR may follow, before any other DIR */
            if (spec->dashdash == GPA_CLI_DASHDASH_LAST_ONE && i + 2 == argc && n_positional == 0 &&
                spec->positional) {
                int rc = take_positional(spec, opts, argv[++i]);
                if (rc) return rc;
                continue;
            }
        }
        if (only_positional || !flag_like) {
            if (!spec->positional) return refuse_unknown(spec, a);
            int rc = take_positional(spec, opts, a);
            if (rc) return rc;
            n_positional++;
            continue;
        }
        const char *value = NULL;
        const gpa_cli_flag *fl = find(spec, a, &value);
        if (!fl) return refuse_unknown(spec, a);
        if (fl->kind == GPA_CLI_HELP) {
            gpa_cli_usage(spec, stdout);
            return 0;
        }
        if (fl->kind == GPA_CLI_BOOL) {
            *(bool *)(base + fl->off) = true;
            continue;
        }
        if (!value) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gpu-admission %s: %s needs a value\n", spec->cmd, a);
                return spec->error_rc;
            }
            value = argv[++i];
        }
        if (fl->kind == GPA_CLI_STR) {
            *(const char **)(base + fl->off) = value;
        } else {
            int rc = fl->call(opts, value);
            if (rc) return rc;
        }
    }
    return GPA_CLI_CONTINUE;
}
