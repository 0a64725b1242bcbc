/*
 * clock.c - the POSIX port's real-time clock (clock_gettime, and
 * adjtimex's word on whether NTP keeps it synchronised) and its time
 * zones (the zoneinfo directory's TZif files, opened for the file-system
 * group's fs_read).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

static int clock_real(void *ctx, int64_t *ms)
{
    struct timespec ts;
    struct timex tx;
    int st;

    (void)ctx;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return mote_posix_err(errno);
    *ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    /* modes 0 only reads; a sandbox that forbids it leaves "unknown" */
    memset(&tx, 0, sizeof(tx));
    st = adjtimex(&tx);
    if (st < 0)
        return MOTE_CLOCK_UNKNOWN;
    return st == TIME_ERROR || (tx.status & STA_UNSYNC) != 0 ? MOTE_CLOCK_UNSYNCED
                                                              : MOTE_CLOCK_SYNCED;
}

static int tz_open(void *ctx, const char *name)
{
    const struct mote_posix *pp = ctx;
    const char *dir = pp->zoneinfo != NULL && pp->zoneinfo[0] != '\0' ? pp->zoneinfo
                                                                       : "/usr/share/zoneinfo";
    char path[MOTE_POSIX_PATH_MAX + 128];
    struct stat sb;
    int fd, n;

    /* the core checked the name (no "..", no leading '/'); the directory
     * is the system's: its links (Etc/UTC -> ../UTC) are followed */
    if (name[0] == '/' || strstr(name, "..") != NULL)
        return MOTE_ERR_INVAL;
    n = snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return MOTE_ERR_NAMETOOLONG;
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return errno == ENOTDIR ? MOTE_ERR_NOENT : mote_posix_err(errno);
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return MOTE_ERR_NOENT; /* a directory ("Europe"), a device: no zone */
    }
    return fd;
}

void mote_posix_clock_fill(struct mote_port *port)
{
    port->clock_real = clock_real;
    port->tz_open = tz_open;
}
