/*
 * dir_watch.c - inotify over a few directories (see dir_watch.h).
 *
 * Must never: follow events into subdirectories (the ..data machinery lives there and is
 * seen through the rename of the symlink in the watched directory itself). The watched path
 * itself may be a symlink to a directory: it is followed.
 */
#include "dir_watch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB |            \
     IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

int gpa_dir_watch_open(gpa_dir_watch *w, gpa_error *err)
{
    memset(w, 0, sizeof *w);
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0) return gpa_fail(err, GPA_EIO, "inotify: %s", strerror(errno));
    return GPA_OK;
}

int gpa_dir_watch_add(gpa_dir_watch *w, const char *dir, unsigned kinds, gpa_error *err)
{
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->dirs[i].dir, dir) == 0) {
            w->dirs[i].kinds |= kinds;
            return GPA_OK;
        }
    if (w->n == GPA_WATCH_MAX || strlen(dir) >= sizeof w->dirs[0].dir)
        return gpa_fail(err, GPA_EINVAL, "cannot watch %s", dir);
    int wd = inotify_add_watch(w->fd, dir, WATCH_MASK);
    if (wd < 0)
        return gpa_fail(err, GPA_EIO, "cannot watch directory %s: %s", dir, strerror(errno));
    strcpy(w->dirs[w->n].dir, dir);
    w->dirs[w->n].wd = wd;
    w->dirs[w->n].kinds = kinds;
    w->n++;
    return GPA_OK;
}

unsigned gpa_dir_watch_drain(gpa_dir_watch *w)
{
    unsigned kinds = 0;
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            for (int i = 0; i < w->n; i++) {
                if (w->dirs[i].wd != ev->wd) continue;
                kinds |= w->dirs[i].kinds;
                if (ev->mask & IN_IGNORED) w->dirs[i].wd = -1;
            }
            if (ev->mask & IN_Q_OVERFLOW)
                for (int i = 0; i < w->n; i++)
                    kinds |= w->dirs[i].kinds;
            p += sizeof *ev + ev->len;
        }
    }
    return kinds;
}

unsigned gpa_dir_watch_rearm(gpa_dir_watch *w)
{
    unsigned kinds = 0;
    for (int i = 0; i < w->n; i++) {
        if (w->dirs[i].wd >= 0) continue;
        int wd = inotify_add_watch(w->fd, w->dirs[i].dir, WATCH_MASK);
        if (wd >= 0) {
            w->dirs[i].wd = wd;
            kinds |= w->dirs[i].kinds;
        }
    }
    return kinds;
}

void gpa_dir_watch_close(gpa_dir_watch *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
}
