/*
 * server.h - `gpu-admission serve`: the webhook HTTPS listener, the plain-HTTP metrics and
 * probe listener, reloads (inotify, SIGHUP, periodic) and graceful shutdown, around the
 * review codec.
 *
 * Must never: start serving before a valid policy set and certificate are loaded, or exit
 * on SIGTERM before the grace period and the drain are over.
 */
#ifndef GPA_SERVER_H
#define GPA_SERVER_H

#include "serve_config.h"

/* Runs until SIGTERM/SIGINT; returns the process exit code (0 clean shutdown, 1 startup
 * failure: invalid policy set, unusable certificate, address in use, ...). */
int gpa_server_run(const gpa_serve_config *cfg);

#endif
