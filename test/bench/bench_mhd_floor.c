/*
 * bench_mhd_floor.c - the floor of the webhook's HTTP stack: libmicrohttpd + GnuTLS started
 * with exactly the webhook listener's settings (webhook_http.h: daemon flags, TLS priorities,
 * per-connection memory, thread pool, one corked record per answer), answering every POST
 * with a constant body after reading the request body as the webhook does. No codec, no
 * engine, no log line, no metrics.
 *
 * bench_server.sh --reference drives it with the same wrk load as the webhook and nginx: the
 * difference to the webhook is what the review work costs in place, the difference to nginx
 * is what the mandated libraries cost against nginx + OpenSSL on this machine.
 *
 *   bench_mhd_floor --cert-dir DIR [--threads N] [--answer-bytes N]
 *
 * Listens on 127.0.0.1 on a free port, prints "port N" on stdout, runs until SIGTERM/SIGINT.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls_cork.h"
#include "webhook_http.h"

/* Per request: the body copy the webhook also keeps (its codec reads a NUL-terminated
 * copy), grown the same way. */
typedef struct {
    char *buf;
    size_t len, cap;
} floor_req;

static char *answer;
static size_t answer_len;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)cls, (void)url, (void)version;
    floor_req *rq = *req_cls;
    if (!rq) {
        if (strcmp(method, "POST") != 0) return MHD_NO;
        rq = calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        rq->cap = 65536 + 1;
        rq->buf = malloc(rq->cap);
        if (!rq->buf) {
            free(rq);
            return MHD_NO;
        }
        *req_cls = rq;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->len + n + 1 > rq->cap) return MHD_NO; /* a floor, not a webhook: no growth */
        memcpy(rq->buf + rq->len, upload_data, n);
        rq->len += n;
        return MHD_YES;
    }
    rq->buf[rq->len] = '\0';
    struct MHD_Response *r =
        MHD_create_response_from_buffer(answer_len, answer, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    gpa_tls_cork(c, answer_len);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    if (ret != MHD_YES) gpa_tls_uncork(c);
    MHD_destroy_response(r);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)toe;
    gpa_tls_uncork(c);
    floor_req *rq = *req_cls;
    *req_cls = NULL;
    if (!rq) return;
    free(rq->buf);
    free(rq);
}

static char *slurp(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = calloc(1, 65536);
    size_t n = s ? fread(s, 1, 65535, f) : 0;
    fclose(f);
    if (s && n == 0) {
        free(s);
        s = NULL;
    }
    return s;
}

int main(int argc, char **argv)
{
    const char *cert_dir = NULL;
    unsigned threads = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    answer_len = 2104;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--cert-dir") == 0)
            cert_dir = argv[i + 1];
        else if (strcmp(argv[i], "--threads") == 0)
            threads = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--answer-bytes") == 0)
            answer_len = strtoul(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "bench_mhd_floor: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    char *crt = cert_dir ? slurp(cert_dir, "tls.crt") : NULL;
    char *key = cert_dir ? slurp(cert_dir, "tls.key") : NULL;
    if (!crt || !key || threads < 1 || answer_len < 2 || answer_len > 65536) {
        fprintf(stderr, "usage: bench_mhd_floor --cert-dir DIR [--threads N] "
                        "[--answer-bytes 2..65536]\n");
        return 2;
    }
    /* A JSON string of the answer's size: what matters is its length. */
    answer = malloc(answer_len);
    if (!answer) return 1;
    memset(answer, 'x', answer_len);
    answer[0] = '"';
    answer[answer_len - 1] = '"';

    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* pool threads inherit it; main waits below */

    struct sockaddr_in loopback = {.sin_family = AF_INET, .sin_port = 0};
    loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        GPA_WEBHOOK_DAEMON_FLAGS, 0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&loopback, MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 0,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GPA_CONNECTION_MEMORY,
        MHD_OPTION_HTTPS_MEM_CERT, crt, MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_HTTPS_PRIORITIES,
        GPA_TLS_PRIORITIES, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_mhd_floor: libmicrohttpd refused to start\n");
        return 1;
    }
    const union MHD_DaemonInfo *pi = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("port %u\n", pi ? (unsigned)pi->port : 0u);
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    free(answer);
    free(crt);
    free(key);
    return 0;
}
