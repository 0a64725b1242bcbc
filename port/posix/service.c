/*
 * service.c - what a POSIX service needs beside the port: systemd's
 * notification socket without libsystemd, and a check that a secret's
 * file is private (see mote_posix.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"

_Static_assert(sizeof(((struct mote_posix_notify *)0)->path) ==
                   sizeof(((struct sockaddr_un *)0)->sun_path),
               "mote_posix_notify.path is a sun_path");

bool mote_posix_notify_take(struct mote_posix_notify *n)
{
    const char *v = getenv("NOTIFY_SOCKET");
    size_t len = v != NULL ? strlen(v) : 0;

    memset(n, 0, sizeof(*n));
    if (v == NULL)
        return false;
    /* a path, or an abstract name written with a leading '@' */
    if ((v[0] == '/' || v[0] == '@') && len < sizeof(n->path)) {
        memcpy(n->path, v, len);
        n->len = len;
    }
    /* Taken out: tools and MCP servers (their children) must not talk to
     * systemd in mote's name. */
    unsetenv("NOTIFY_SOCKET");
    return n->len > 0;
}

int mote_posix_notify(const struct mote_posix_notify *n, const char *msg)
{
    struct sockaddr_un sa;
    ssize_t sent;
    int fd, e;

    if (n->len == 0)
        return 0;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, n->path, n->len);
    if (n->path[0] == '@')
        sa.sun_path[0] = '\0'; /* an abstract socket */
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return mote_posix_err(errno);
    sent = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n->len));
    e = sent < 0 ? errno : 0;
    close(fd);
    return e != 0 ? mote_posix_err(e) : 0;
}

int mote_posix_private_file(const char *path)
{
    struct stat st;

    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : mote_posix_err(errno);
    if (!S_ISREG(st.st_mode))
        return MOTE_ERR_NOTREG; /* a link, a directory, ...: not read */
    if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
        return MOTE_ERR_PERM;
    return 0;
}
