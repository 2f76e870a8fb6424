/*
 * cmd_review.c - `gpu-admission review {mutate|validate} --policies DIR [FILE|-]`: answers one
 * AdmissionReview exactly as the server's POST /mutate or /validate would.
 *
 * stdout gets exactly the response body gpa_review_handle produced, followed by one "\n"
 * (always, tty or not), so `head -c -1` of this output equals the server's HTTP body byte for
 * byte. Must never: print anything else on stdout, or answer differently from the server.
 *
 * Exit codes: 0 a response was produced (allowed or denied: read `response.allowed`), 1 the
 * body is not an answerable AdmissionReview (the 400 Status body is still printed), usage
 * errors, unreadable input or an invalid policy set.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu_admission/policy.h"
#include "gpu_admission/review.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gpu-admission review {mutate|validate} --policies DIR [FILE|-]\n"
               "\n"
               "Reads one AdmissionReview (admission.k8s.io/v1 or v1beta1, JSON) from FILE or\n"
               "stdin and prints the response the webhook server would send for POST /mutate or\n"
               "POST /validate: exactly the HTTP body, then one newline.\n"
               "\n"
               "flags:\n"
               "  -p, --policies DIR  policy directory (*.yaml / *.yml files); required\n"
               "  -h, --help          show this help\n"
               "\n"
               "exit codes: 0 response produced (allowed or denied), 1 bad request (the 400\n"
               "Status body is printed), bad flags, unreadable input or invalid policies.\n");
}

int gpa_cmd_review(int argc, char **argv)
{
    const char *dir = NULL, *hook_name = NULL, *file = NULL;
    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && a[0] == '-' && a[1] != '\0') {
            if (strcmp(a, "--") == 0) {
                only_positional = true;
                continue;
            }
            if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                usage(stdout);
                return 0;
            }
            int r = gpa_cli_flag_value(&dir, argc, argv, &i, "--policies", "-p", "review");
            if (r < 0) return 1;
            if (r > 0) continue;
            fprintf(stderr, "gpu-admission review: unknown flag '%s'\n", a);
            usage(stderr);
            return 1;
        }
        if (!hook_name)
            hook_name = a;
        else if (!file)
            file = a;
        else {
            fprintf(stderr, "gpu-admission review: unexpected argument '%s'\n", a);
            usage(stderr);
            return 1;
        }
    }
    gpa_hook hook;
    if (hook_name && strcmp(hook_name, "mutate") == 0)
        hook = GPA_HOOK_MUTATE;
    else if (hook_name && strcmp(hook_name, "validate") == 0)
        hook = GPA_HOOK_VALIDATE;
    else {
        fprintf(stderr, "gpu-admission review: first argument must be 'mutate' or 'validate'%s%s\n",
                hook_name ? ", not " : "", hook_name ? hook_name : "");
        usage(stderr);
        return 1;
    }
    if (!dir) {
        fprintf(stderr, "gpu-admission review: --policies DIR is required\n");
        usage(stderr);
        return 1;
    }
    if (!file) file = "-";

    gpa_error err = {0};
    gpa_policy *p = NULL;
    if (gpa_policy_load_dir(&p, dir, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission review: policy set in %s is invalid:\n%s\n", dir,
                err.message);
        return 1;
    }
    size_t len = 0;
    char *body = gpa_cli_read_file(file, &len);
    if (!body) {
        fprintf(stderr, "gpu-admission review: cannot read %s: %s\n",
                strcmp(file, "-") == 0 ? "stdin" : file, strerror(errno));
        gpa_policy_unref(p);
        return 1;
    }
    gpa_review_result res;
    memset(&err, 0, sizeof err);
    int rc = gpa_review_handle(&res, p, hook, body, len, &err);
    int code = 0;
    if (res.body) {
        fwrite(res.body, 1, res.body_len, stdout);
        fputc('\n', stdout);
    }
    if (rc != GPA_OK) {
        fprintf(stderr, "gpu-admission review: %s: %s\n",
                res.http_status == 400 ? "bad request (HTTP 400)" : "internal error (HTTP 500)",
                err.message);
        code = 1;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gpu-admission review: cannot write stdout: %s\n", strerror(errno));
        code = 1;
    }
    gpa_review_result_clear(&res);
    free(body);
    gpa_policy_unref(p);
    return code;
}
