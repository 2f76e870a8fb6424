/*
 * jsonlog.h - the server's log: one JSON object per line on stderr (ts, level, msg, then
 * fields), written with a single write(2) so lines from concurrent threads never interleave.
 *
 * Two modes. Synchronous (the default, and for the CLI): each line is one write(2). Queued
 * (the server, between gpa_log_queue_start and gpa_log_queue_stop): request threads copy the
 * line into a buffer under a short lock and poke an eventfd when the queue was empty (or
 * passes half full); the server's main loop writes everything queued with one write(2) a few
 * tens of milliseconds later, so under load one write carries hundreds of lines. A slow or blocked
 * stderr then stalls only the main loop's flush, never a request, and a full buffer drops lines
 * (counted) instead of waiting.
 *
 * Must never: block a request thread on the log destination, allocate per line, or print
 * anything that is not one complete JSON line.
 */
#ifndef GPA_JSONLOG_H
#define GPA_JSONLOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { GPA_LOG_DEBUG = 0, GPA_LOG_INFO, GPA_LOG_WARN, GPA_LOG_ERROR } gpa_log_level;

/* Parses "debug" | "info" | "warn" | "error"; -1 when unknown. */
int gpa_log_level_parse(const char *s);
void gpa_log_set_level(gpa_log_level l);
bool gpa_log_enabled(gpa_log_level l);
/* Where lines go (default 2 = stderr); tests may point it elsewhere. */
void gpa_log_set_fd(int fd);

/* A line under construction, on the caller's stack. Fields that do not fit are dropped
 * (the line stays valid JSON and gets "truncated":true). */
typedef struct gpa_logline {
    char buf[4096];
    size_t len;
    bool truncated;
} gpa_logline;

void gpa_log_begin(gpa_logline *l, gpa_log_level level, const char *msg);
/* A NULL value is written as JSON null. */
void gpa_log_str(gpa_logline *l, const char *key, const char *value);
/* Longest value gpa_log_str_max / gpa_log_strs keep. */
#define GPA_LOG_VALUE_MAX 512
/* gpa_log_str with value cut to at most max bytes (4..GPA_LOG_VALUE_MAX) on a UTF-8
 * boundary, ending "..." when cut: for values a client chooses the length of. */
void gpa_log_str_max(gpa_logline *l, const char *key, const char *value, size_t max);
/* A JSON array of n strings, each cut as gpa_log_str_max does; all of it or none of it
 * (the line marked truncated). A NULL element is written as "". */
void gpa_log_strs(gpa_logline *l, const char *key, const char *const *values, size_t n,
                  size_t max_each);
void gpa_log_int(gpa_logline *l, const char *key, long long value);
void gpa_log_double(gpa_logline *l, const char *key, double value, int decimals);
void gpa_log_bool(gpa_logline *l, const char *key, bool value);
void gpa_log_end(gpa_logline *l);

/* Queued mode: wake_fd (an eventfd, or -1) is written when the queue goes from empty to
 * non-empty and when it passes GPA_LOG_QUEUE_HIGH, so the flusher can sleep until there is
 * something to write. */
int gpa_log_queue_start(int wake_fd);
/* Queued bytes past which the wake fd is poked again: the flusher should write at once. */
#define GPA_LOG_QUEUE_HIGH (256u * 1024u)
size_t gpa_log_queued(void);
/* Writes everything queued so far (the flusher only). */
void gpa_log_flush(void);
/* Flushes and returns to synchronous writes. */
void gpa_log_queue_stop(void);
/* Lines dropped because the queue was full. */
unsigned long gpa_log_dropped(void);

/* Shorthand for a line with only a message and an optional "error" field. */
void gpa_log_msg(gpa_log_level level, const char *msg, const char *error);

#endif
