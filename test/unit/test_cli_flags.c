/*
 * test_cli_flags.c - the subcommands' one flag parser (src/cli/flags.c) on a made-up table:
 * long, short and --long=VALUE forms, a bool refusing "=value", a missing value, callbacks,
 * the three meanings of "--", positional errors with and without the usage, and --help built
 * from the table's lines. stdout/stderr are captured into files around each parse.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/cli/flags.c"
#include "check.h"

typedef struct opts {
    const char *name, *pos[4];
    bool on;
    int calls;
    size_t n_pos;
} opts;

static int count(void *o, const char *v)
{
    ((opts *)o)->calls++;
    if (strcmp(v, "bad") == 0) {
        fprintf(stderr, "gpu-admission t: bad value\n");
        return 7;
    }
    return 0;
}

static int pos(void *o, const char *arg)
{
    opts *x = o;
    if (x->n_pos == 2) {
        fprintf(stderr, "gpu-admission t: too many\n");
        return GPA_CLI_USAGE;
    }
    x->pos[x->n_pos++] = arg;
    return 0;
}

static const gpa_cli_flag flags[] = {
    {"--name", "-n", GPA_CLI_STR, offsetof(opts, name), NULL, "  -n, --name X\n"},
    {"--on", NULL, GPA_CLI_BOOL, offsetof(opts, on), NULL, "      --on\n"},
    {"--count", NULL, GPA_CLI_CALL, 0, count, "      --count V\n"},
    {"--help", "-h", GPA_CLI_HELP, 0, NULL, "  -h, --help\n"},
};

static gpa_cli_spec spec = {
    .cmd = "t",
    .flags = flags,
    .n_flags = 4,
    .head = "usage: t\n",
    .tail = "end\n",
    .unknown = "unknown flag",
    .unknown_quoted = true,
    .error_rc = 3,
    .dashdash = GPA_CLI_DASHDASH_ENDS_FLAGS,
    .positional = pos,
};

static char out[4096], err[4096];

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void slurp(const char *path, char *buf)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, 4095, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    unlink(path);
}

/* parses the NULL-terminated args (argv[0] is "t") into *o */
static int parse(opts *o, ...)
{
    char *argv[16] = {"t"};
    int argc = 1;
    va_list ap;
    va_start(ap, o);
    for (char *a; (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    memset(o, 0, sizeof *o);
    char po[] = "/tmp/gpa-flags-out-XXXXXX", pe[] = "/tmp/gpa-flags-err-XXXXXX";
    int fo = mkstemp(po), fe = mkstemp(pe);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fo, 1);
    dup2(fe, 2);
    int rc = gpa_cli_parse(&spec, o, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so), close(se), close(fo), close(fe);
    slurp(po, out);
    slurp(pe, err);
    return rc;
}

int main(void)
{
    opts o;
    CHECK_INT(parse(&o, "-n", "a", "x", "--on", "y", NULL), GPA_CLI_CONTINUE);
    CHECK_STR(o.name, "a");
    CHECK(o.on);
    CHECK_INT(o.n_pos, 2);
    CHECK_STR(o.pos[1], "y");
    CHECK_INT(parse(&o, "--name=b=c", "--name", "-dash", NULL), GPA_CLI_CONTINUE);
    CHECK_STR(o.name, "-dash"); /* a value may start with '-'; the last one wins */
    CHECK_INT(parse(&o, "--name=", NULL), GPA_CLI_CONTINUE);
    CHECK_STR(o.name, "");
    /* "-" is stdin, a positional; "" too */
    CHECK_INT(parse(&o, "-", "", NULL), GPA_CLI_CONTINUE);
    CHECK_INT(o.n_pos, 2);

    /* a bool takes no value; a short flag has no =form; prefixes are not flags */
    CHECK_INT(parse(&o, "--on=1", NULL), 3);
    CHECK_STR(err, "gpu-admission t: unknown flag '--on=1'\nusage: t\n  -n, --name X\n"
                   "      --on\n      --count V\n  -h, --help\nend\n");
    CHECK_INT(parse(&o, "-n=a", NULL), 3);
    CHECK_INT(parse(&o, "--nam", "a", NULL), 3);
    CHECK_INT(parse(&o, "--name", NULL), 3);
    CHECK_STR(err, "gpu-admission t: --name needs a value\n");
    CHECK_INT(parse(&o, "x", "-n", NULL), 3);
    CHECK_STR(err, "gpu-admission t: -n needs a value\n");

    CHECK_INT(parse(&o, "--count", "1", "--count=bad", "--count", "2", NULL), 7);
    CHECK_INT(o.calls, 2); /* stops at the refused value */
    CHECK_STR(err, "gpu-admission t: bad value\n");

    /* --help: the table's lines on stdout, exit 0, even after other flags */
    CHECK_INT(parse(&o, "--on", "-h", "--bogus", NULL), 0);
    CHECK_STR(out, "usage: t\n  -n, --name X\n      --on\n      --count V\n  -h, --help\nend\n");
    CHECK_STR(err, "");

    /* a positional refused with GPA_CLI_USAGE: its line, then the usage, error_rc */
    CHECK_INT(parse(&o, "a", "b", "c", NULL), 3);
    CHECK(starts(err, "gpu-admission t: too many\nusage: t\n"));

    /* "--" ends the flags */
    CHECK_INT(parse(&o, "--", "-h", "--on", NULL), GPA_CLI_CONTINUE);
    CHECK_STR(o.pos[0], "-h");
    CHECK(!o.on);
    /* with no "--": an unknown flag, unquoted wording */
    spec.dashdash = GPA_CLI_DASHDASH_NONE;
    spec.unknown_quoted = false;
    CHECK_INT(parse(&o, "--", "x", NULL), 3);
    CHECK(starts(err, "gpu-admission t: unknown flag --\n"));
    /* "-- X" only as the last two arguments, before any positional */
    spec.dashdash = GPA_CLI_DASHDASH_LAST_ONE;
    CHECK_INT(parse(&o, "--on", "--", "-x", NULL), GPA_CLI_CONTINUE);
    CHECK_STR(o.pos[0], "-x");
    CHECK_INT(parse(&o, "--", "a", "b", NULL), 3);
    CHECK_INT(parse(&o, "a", "--", "b", NULL), 3);
    /* no positional callback: a positional is "unknown" */
    spec.positional = NULL;
    spec.unknown = "unknown argument";
    spec.unknown_quoted = true;
    CHECK_INT(parse(&o, "foo", NULL), 3);
    CHECK(starts(err, "gpu-admission t: unknown argument 'foo'\n"));
    return check_done();
}
