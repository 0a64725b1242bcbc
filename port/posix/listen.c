/*
 * listen.c - the serving members of the POSIX port: listeners on a Unix
 * socket (mode 0600, only ever taking over a stale socket of this user;
 * 0660 for a group it is opened to) and on TCP, non-blocking accept with
 * the Unix peer's credentials checked, and how much of what was sent a
 * peer has not taken.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define LISTENERS 4

/* What a listener made, to remove its socket file (and only it). */
/* Supplementary groups of a peer looked at (SO_PEERGROUPS); a peer with
 * more is judged by its primary group and the socket's mode alone. */
#define PEER_GROUPS 1024

static struct {
    int fd;          /* -1: free */
    bool unix_sock;
    bool grouped;    /* opened to group `gid` too */
    gid_t gid;
    dev_t dev;
    ino_t ino;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} lst[LISTENERS] = {{-1, false, false, 0, 0, 0, ""}, {-1, false, false, 0, 0, 0, ""},
                    {-1, false, false, 0, 0, 0, ""}, {-1, false, false, 0, 0, 0, ""}};

static int slot_free(void)
{
    int i;

    for (i = 0; i < LISTENERS; i++) {
        if (lst[i].fd < 0)
            return i;
    }
    return -1;
}

static int slot_of(int fd)
{
    int i;

    for (i = 0; i < LISTENERS && fd >= 0; i++) {
        if (lst[i].fd == fd)
            return i;
    }
    return -1;
}

/* Is someone listening on the socket at `sa`? */
static bool someone_listens(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    bool yes;

    if (fd < 0)
        return true; /* cannot tell: do not take it over */
    yes = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0 || errno != ECONNREFUSED;
    close(fd);
    return yes;
}

static int px_listen_unix(void *ctx, const char *path)
{
    struct sockaddr_un sa;
    struct stat st;
    mode_t old;
    int fd, k, e;

    (void)ctx;
    if ((k = slot_free()) < 0)
        return MOTE_ERR_FULL;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (path[0] == '\0' || strlen(path) >= sizeof(sa.sun_path))
        return MOTE_ERR_NAMETOOLONG;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (lstat(path, &st) == 0) {
        /* Only a socket of ours that nobody answers on is taken over. */
        if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
            return MOTE_ERR_EXIST;
        if (someone_listens(&sa))
            return MOTE_ERR_ADDRINUSE;
        if (unlink(path) < 0 && errno != ENOENT)
            return mote_posix_err(errno);
    } else if (errno != ENOENT) {
        return mote_posix_err(errno);
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return mote_posix_err(errno);
    /* Created 0600 from the start: no moment where another user could
     * connect. (The process is single-threaded where it creates files.) */
    old = umask(0177);
    e = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? errno : 0;
    umask(old);
    if (e == 0 && listen(fd, 128) < 0)
        e = errno;
    if (e == 0 && (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) ||
                   (st.st_mode & 0777) != 0600))
        e = EPERM;
    if (e != 0) {
        close(fd);
        return mote_posix_err(e);
    }
    lst[k].fd = fd;
    lst[k].unix_sock = true;
    lst[k].grouped = false;
    lst[k].dev = st.st_dev;
    lst[k].ino = st.st_ino;
    memcpy(lst[k].path, path, strlen(path) + 1);
    return fd;
}

/* The group `name` (a name, or digits: a number). 0, or MOTE_ERR_NOENT. */
static int group_id(const char *name, gid_t *out)
{
    struct group gr, *res = NULL;
    char buf[4096], *end;
    unsigned long v;

    if (name[0] >= '0' && name[0] <= '9') {
        errno = 0;
        v = strtoul(name, &end, 10);
        if (*end != '\0' || errno != 0 || v >= (unsigned long)(gid_t)-1)
            return MOTE_ERR_NOENT;
        *out = (gid_t)v;
        return 0;
    }
    if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) != 0 || res == NULL)
        return MOTE_ERR_NOENT;
    *out = gr.gr_gid;
    return 0;
}

static int px_listen_group(void *ctx, int lfd, const char *group)
{
    int k = slot_of(lfd);
    struct stat st;
    gid_t gid;
    int rc;

    (void)ctx;
    if (k < 0 || !lst[k].unix_sock)
        return MOTE_ERR_BADF;
    if ((rc = group_id(group, &gid)) < 0)
        return rc;
    /* The group first, then its bits: at no moment may anyone but this
     * user and the group reach it. Only the socket this listener made. */
    if (lstat(lst[k].path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_dev != lst[k].dev ||
        st.st_ino != lst[k].ino)
        return MOTE_ERR_EXIST;
    if (lchown(lst[k].path, (uid_t)-1, gid) < 0)
        return errno == EPERM ? MOTE_ERR_PERM : mote_posix_err(errno);
    if (chmod(lst[k].path, 0660) < 0) {
        int e = errno;

        (void)chmod(lst[k].path, 0600);
        return mote_posix_err(e);
    }
    lst[k].gid = gid;
    lst[k].grouped = true;
    return 0;
}

/* Is the peer on Unix socket `fd` one to serve on listener k: this user,
 * root, or (a socket opened to a group) a member of the group, by its
 * primary group or one of its supplementary groups? */
static bool peer_welcome(int fd, int k)
{
    struct ucred cr;
    socklen_t n = sizeof(cr);
    static gid_t groups[PEER_GROUPS];
    socklen_t gl = sizeof(groups);
    size_t i;

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0)
        return false;
    if (cr.uid == geteuid() || cr.uid == 0)
        return true;
    if (!lst[k].grouped)
        return false;
    if (cr.gid == lst[k].gid)
        return true;
#ifdef SO_PEERGROUPS
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0) {
        for (i = 0; i < gl / sizeof(groups[0]); i++) {
            if (groups[i] == lst[k].gid)
                return true;
        }
        return false;
    }
    /* An older kernel: the socket's mode (0660, the group) let it connect */
    return errno == ENOPROTOOPT;
#else
    (void)groups, (void)gl, (void)i;
    return true; /* the socket's mode (0660, the group) let it connect */
#endif
}

static int px_listen_tcp(void *ctx, const struct mote_addr *a, struct mote_addr *bound)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1, k;

    (void)ctx;
    if ((k = slot_free()) < 0)
        return MOTE_ERR_FULL;
    if ((len = mote_posix_sockaddr(a, &ss)) == 0)
        return MOTE_ERR_INVAL;
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return mote_posix_err(errno);
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (a->family == 6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
        int e = errno;

        close(fd);
        return mote_posix_err(e);
    }
    len = sizeof(ss);
    *bound = *a;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        bound->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
    lst[k].fd = fd;
    lst[k].unix_sock = false;
    lst[k].grouped = false;
    lst[k].path[0] = '\0';
    return fd;
}

static int px_accept(void *ctx, int lfd)
{
    int k = slot_of(lfd);

    (void)ctx;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? MOTE_ERR_AGAIN
                                                           : mote_posix_err(errno);
        }
        if (k >= 0 && lst[k].unix_sock && !peer_welcome(fd, k)) {
            /* Belt and braces beside the socket's mode: only this user,
             * root, or the group it is opened to is served. */
            close(fd);
            continue;
        }
        if (k >= 0 && !lst[k].unix_sock) {
            /* A response streams in parts (an event, a call's answer, the
             * body's end): each goes at once, never held back for the
             * ACK of the one before (Nagle against the peer's delayed
             * ACK costs 40 ms a part). */
            int one = 1;

            (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        return fd;
    }
}

static void px_unlisten(void *ctx, int lfd)
{
    int k = slot_of(lfd);
    struct stat st;

    (void)ctx;
    if (k >= 0) {
        if (lst[k].unix_sock && lstat(lst[k].path, &st) == 0 && S_ISSOCK(st.st_mode) &&
            st.st_dev == lst[k].dev && st.st_ino == lst[k].ino)
            (void)unlink(lst[k].path);
        lst[k].fd = -1;
        lst[k].grouped = false;
    }
    if (lfd >= 0)
        close(lfd);
}

static int px_shutdown(void *ctx, int fd)
{
    (void)ctx;
    return shutdown(fd, SHUT_WR) < 0 ? mote_posix_err(errno) : 0;
}

/* What the peer has not taken of what was sent: Linux's SIOCOUTQ (the
 * same request number as TIOCOUTQ) counts, on a Unix stream socket, the
 * bytes the peer has not read yet. */
static int px_unread(void *ctx, int fd)
{
#if defined(__linux__) && defined(TIOCOUTQ)
    int n = 0;

    (void)ctx;
    if (ioctl(fd, TIOCOUTQ, &n) < 0)
        return mote_posix_err(errno);
    return n;
#else
    (void)ctx, (void)fd;
    return MOTE_ERR_NOSYS;
#endif
}

void mote_posix_listen_fill(struct mote_port *port)
{
    port->net_shutdown = px_shutdown;
    port->net_unread = px_unread;
    port->net_listen_unix = px_listen_unix;
    port->net_listen_tcp = px_listen_tcp;
    port->net_accept = px_accept;
    port->net_unlisten = px_unlisten;
    port->net_listen_group = px_listen_group;
}
