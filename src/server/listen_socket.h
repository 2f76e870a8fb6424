/*
 * listen_socket.h - opening the listening sockets from --listen / --metrics-listen values:
 * ":8443" (all addresses, IPv6 dual-stack when available), "0.0.0.0:8443", "127.0.0.1:0"
 * (a free port, reported back), "[::1]:8443", "localhost:8443".
 *
 * Must never: leave a socket open on failure, or bind something other than what was asked.
 */
#ifndef GPA_LISTEN_SOCKET_H
#define GPA_LISTEN_SOCKET_H

#include "gpu_admission/common.h"

/* A non-blocking listening socket in *fd and the port actually bound in *port. */
int gpa_listen_socket(int *fd, unsigned *port, const char *addr, gpa_error *err);

#endif
