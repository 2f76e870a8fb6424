/*
 * dir_watch.h - inotify on the policy and certificate directories.
 *
 * Kubernetes updates mounted ConfigMaps and Secrets by swapping a "..data" symlink, so the
 * files a server opened never change in place: the directory is what must be watched.
 *
 * Must never: block (the fd is non-blocking and drained from the main loop's poll).
 */
#ifndef GPA_DIR_WATCH_H
#define GPA_DIR_WATCH_H

#include "gpu_admission/common.h"

#define GPA_WATCH_MAX 4

typedef struct gpa_dir_watch {
    int fd;
    int n;
    struct {
        char dir[4096];
        int wd;         /* -1 when the directory vanished; re-added by gpa_dir_watch_rearm */
        unsigned kinds; /* bitmask the caller chose for this directory */
    } dirs[GPA_WATCH_MAX];
} gpa_dir_watch;

int gpa_dir_watch_open(gpa_dir_watch *w, gpa_error *err);
/* Watches dir for kinds (the same directory given twice merges the kinds). */
int gpa_dir_watch_add(gpa_dir_watch *w, const char *dir, unsigned kinds, gpa_error *err);
/* Reads every pending event; returns the OR of the kinds of the directories that changed. */
unsigned gpa_dir_watch_drain(gpa_dir_watch *w);
/* Re-adds watches whose directory was removed and came back; returns their kinds. */
unsigned gpa_dir_watch_rearm(gpa_dir_watch *w);
void gpa_dir_watch_close(gpa_dir_watch *w);

#endif
