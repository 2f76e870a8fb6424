/*
 * serve_config.h - the settings of `gpu-admission serve`, from flags and their environment
 * twins (GPU_ADMISSION_<FLAG>, flags win), validated before anything is started.
 *
 * Must never: start listeners, read certificate or policy files (only names them), or
 * accept a value it cannot fully parse.
 */
#ifndef GPA_SERVE_CONFIG_H
#define GPA_SERVE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu_admission/common.h"

typedef struct gpa_serve_config {
    char policies[4096];
    char tls_cert[4096];
    char tls_key[4096];
    char client_ca[4096];
    char listen[256];
    char metrics_listen[256];
    unsigned threads;
    const char *threads_source; /* "flag" (--threads or its environment twin), else where the
                                   default came from: "cgroup", "affinity" or "cpus" */
    size_t max_body;
    unsigned shutdown_grace_ms;
    unsigned reload_interval_ms;
    unsigned idle_timeout_s;
    unsigned max_connections;
    unsigned max_connections_per_ip;
    unsigned header_timeout_ms;         /* handshake + request headers; 0 = no deadline */
    unsigned min_body_rate;             /* bytes/s over GPA_BODY_RATE_WINDOW_MS; 0 = no minimum */
    int log_level;                      /* gpa_log_level */
    char ignore_label_namespaces[4096]; /* comma-separated names allowed to carry the
                                           gpu-admission.io/ignore label; "" = none */
    char excluded_namespaces[4096];     /* names the webhooks leave out; their Namespace
                                           CREATE is refused but to the creators below */
    char excluded_namespace_creators[4096]; /* user:NAME / group:NAME, comma-separated */
    bool help;                              /* --help was given: print gpa_serve_usage and exit 0 */
} gpa_serve_config;

/* env may be NULL (then getenv is used); it lets tests pass a fake environment. */
typedef const char *(*gpa_getenv_fn)(const char *name);

/* Fills cfg from defaults, then the environment, then argv (argv[0] is the subcommand name).
 * GPA_EINVAL with a one-line message naming the flag on any unknown flag or bad value. */
int gpa_serve_config_parse(gpa_serve_config *cfg, int argc, char **argv, gpa_getenv_fn env,
                           gpa_error *err);

/* Parsers shared with tests: "7Mi", "7MiB", "512Ki", "1M", "1048576" (bytes). */
int gpa_parse_size(size_t *out, const char *s);
/* "5s", "500ms", "2m", "1h", "0", bare number = seconds; result in milliseconds. */
int gpa_parse_duration_ms(unsigned *out, const char *s);
/* A size per second: "1Ki", "1KiB/s", "512/s", "0" (bytes per second). */
int gpa_parse_rate(unsigned *out, const char *s);

const char *gpa_serve_usage(void);

#endif
