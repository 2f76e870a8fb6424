/*
 * cmd_serve.c - `gpu-admission serve`: parse flags/environment, then run the server.
 *
 * Must never: start anything when a flag is unknown or a value is bad (exit 1 with one
 * clear line on stderr).
 */
#include <stdio.h>

#include "cli.h"

#ifdef GPA_HAVE_SERVER
#include "server.h"
#include "serve_config.h"

int gpa_cmd_serve(int argc, char **argv)
{
    static gpa_serve_config cfg; /* large (paths): keep it off the stack */
    gpa_error err = {0};
    if (gpa_serve_config_parse(&cfg, argc, argv, NULL, &err) != GPA_OK) {
        fprintf(stderr, "gpu-admission serve: %s\n", err.message);
        return 1;
    }
    if (cfg.help) {
        fputs(gpa_serve_usage(), stdout);
        return 0;
    }
    return gpa_server_run(&cfg);
}
#else
int gpa_cmd_serve(int argc, char **argv)
{
    (void)argc, (void)argv;
    fprintf(stderr, "gpu-admission serve: this build has no server (libmicrohttpd missing)\n");
    return 1;
}
#endif
