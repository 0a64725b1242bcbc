/*
 * base.c - what every group of the POSIX port stands on: errno mapped to
 * enum mote_err, random bytes that never block, hex names, opening a
 * regular file without waiting, reads and writes that survive EINTR, and
 * socket addresses. It calls no other
 * file of the port; they all call it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

int mote_posix_err(int e)
{
    switch (e) {
    case 0: return MOTE_ERR_IO;
    case EPERM: return MOTE_ERR_PERM;
    case ENOENT: return MOTE_ERR_NOENT;
    case EINTR: return MOTE_ERR_INTR;
    case EIO: return MOTE_ERR_IO;
    case E2BIG: return MOTE_ERR_TOO_LARGE;
    case EBADF: return MOTE_ERR_BADF;
    case EAGAIN: return MOTE_ERR_AGAIN;
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK: return MOTE_ERR_AGAIN;
#endif
    case ENOMEM: return MOTE_ERR_NOMEM;
    case EACCES: return MOTE_ERR_ACCES;
    case EBUSY: return MOTE_ERR_BUSY;
    case EEXIST: return MOTE_ERR_EXIST;
    case ENOTDIR: return MOTE_ERR_NOTDIR;
    case EISDIR: return MOTE_ERR_ISDIR;
    case EINVAL: return MOTE_ERR_INVAL;
    case EMFILE: return MOTE_ERR_MFILE;
    case ENFILE: return MOTE_ERR_MFILE;
    case EFBIG: return MOTE_ERR_FBIG;
    case ENOSPC: return MOTE_ERR_NOSPC;
    case EDQUOT: return MOTE_ERR_NOSPC;
    case EROFS: return MOTE_ERR_ROFS;
    case EPIPE: return MOTE_ERR_PIPE;
    case ERANGE: return MOTE_ERR_RANGE;
    case ENAMETOOLONG: return MOTE_ERR_NAMETOOLONG;
    case ENOSYS: return MOTE_ERR_NOSYS;
    case EPROTO: return MOTE_ERR_PROTO;
    case EBADMSG: return MOTE_ERR_BADMSG;
    case EOPNOTSUPP: return MOTE_ERR_NOTSUP;
    case EADDRINUSE: return MOTE_ERR_ADDRINUSE;
    case ENETUNREACH: return MOTE_ERR_NETUNREACH;
    case ECONNABORTED: return MOTE_ERR_CONNABORTED;
    case ECONNRESET: return MOTE_ERR_CONNRESET;
    case ENOBUFS: return MOTE_ERR_FULL;
    case ENOTCONN: return MOTE_ERR_NOTCONN;
    case ETIMEDOUT: return MOTE_ERR_TIMEDOUT;
    case ECONNREFUSED: return MOTE_ERR_CONNREFUSED;
    case EHOSTUNREACH: return MOTE_ERR_HOSTUNREACH;
    case EALREADY: return MOTE_ERR_ALREADY;
    case EINPROGRESS: return MOTE_ERR_INPROGRESS;
    case ECANCELED: return MOTE_ERR_CANCELED;
    default: return MOTE_ERR_IO;
    }
}

/* The fallback when the kernel's pool is not ready yet (early boot on a
 * device without a hardware RNG, where getrandom would block for
 * minutes): a splitmix64 stream seeded from both clocks, the pid and a
 * stack address. Unique and unpredictable enough for ids, temporary names
 * and jitter; not for keys (mote makes none: TLS seeds from mbedTLS's own
 * entropy source). */
static void weak_random(unsigned char *p, size_t len)
{
    static uint64_t state;
    struct timespec a, b;
    int here;

    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &b);
    state ^= ((uint64_t)a.tv_sec << 32) ^ (uint64_t)a.tv_nsec ^ ((uint64_t)b.tv_nsec << 20) ^
             ((uint64_t)b.tv_sec * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)getpid() << 40) ^
             (uint64_t)(uintptr_t)&here;
    while (len > 0) {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        size_t i;

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        for (i = 0; i < 8 && len > 0; i++, len--)
            *p++ = (unsigned char)(z >> (8 * i));
    }
}

void mote_posix_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        /* Never blocks: the loop's thread must not wait for entropy. */
        ssize_t n = getrandom(p, len, GRND_NONBLOCK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            weak_random(p, len); /* EAGAIN (pool not ready), ENOSYS, ... */
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

int mote_posix_random_secret(void *buf, size_t len, int *wait_fd)
{
    /* /dev/random turns readable once the kernel's pool is initialised:
     * a descriptor to wait on (opened once, kept). */
    static int pool_fd = -1;
    unsigned char *p = buf;
    size_t left = len;

    *wait_fd = -1;
    while (left > 0) {
        ssize_t n = getrandom(p, left, GRND_NONBLOCK);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            memset(buf, 0, len); /* nothing of a half-made secret stays */
            if (pool_fd < 0)
                pool_fd = open("/dev/random", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            *wait_fd = pool_fd;
            return MOTE_ERR_AGAIN;
        }
        if (n <= 0) {
            memset(buf, 0, len);
            return n < 0 && errno == ENOSYS ? MOTE_ERR_NOSYS : mote_posix_err(n < 0 ? errno : EIO);
        }
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

void mote_posix_random_hex(char *out, size_t digits)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[32];
    size_t i;

    while (digits > 0) {
        size_t n = digits < 2 * sizeof(r) ? (digits + 1) / 2 : sizeof(r);

        mote_posix_random_bytes(r, n);
        for (i = 0; i < 2 * n && digits > 0; i++, digits--)
            *out++ = hex[(i & 1) ? r[i / 2] & 15u : r[i / 2] >> 4];
    }
    *out = '\0';
}

int mote_posix_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return mote_posix_err(errno);
        }
        if (w == 0)
            return MOTE_ERR_NOSPC;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int mote_posix_open_file(const char *path, int flags, unsigned mode)
{
    struct stat sb;
    int fd;

    do {
        fd = open(path, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, (mode_t)mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        /* A link (with O_NOFOLLOW), a FIFO with no reader, a device with
         * nothing behind it, a directory. */
        if (errno == ELOOP || errno == ENXIO || errno == ENODEV || errno == EISDIR)
            return MOTE_ERR_NOTREG;
        return mote_posix_err(errno);
    }
    /* What was opened, not what the name was a moment ago. */
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return MOTE_ERR_NOTREG;
    }
    return fd;
}

int mote_posix_pread(int fd, uint64_t offset, void *buf, size_t len)
{
    ssize_t n;

    /* Past what an off_t holds is past any end (pread would say EINVAL). */
    if (offset >= (uint64_t)INT64_MAX)
        return 0;
    if (len > (uint64_t)INT64_MAX - offset)
        len = (size_t)((uint64_t)INT64_MAX - offset);
    if (len > 0x7FFFFFFF)
        len = 0x7FFFFFFF;
    do {
        n = pread(fd, buf, len, (off_t)offset);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? mote_posix_err(errno) : (int)n;
}

int mote_posix_read(int fd, void *buf, size_t len)
{
    ssize_t n;

    if (len > 0x7FFFFFFF)
        len = 0x7FFFFFFF;
    do {
        n = read(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? mote_posix_err(errno) : (int)n;
}

int mote_posix_write(int fd, const void *buf, size_t len)
{
    ssize_t n;

    if (len > 0x7FFFFFFF)
        len = 0x7FFFFFFF;
    do {
        n = write(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? mote_posix_err(errno) : (int)n;
}

void mote_posix_close(void *ctx, int fd)
{
    (void)ctx;
    if (fd >= 0)
        close(fd);
}

unsigned mote_posix_sockaddr(const struct mote_addr *a, void *out)
{
    struct sockaddr_storage *ss = out;

    memset(ss, 0, sizeof(*ss));
    if (a->family == 4) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

        s4->sin_family = AF_INET;
        s4->sin_port = htons(a->port);
        memcpy(&s4->sin_addr, a->addr, 4);
        return sizeof(*s4);
    }
    if (a->family == 6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(a->port);
        memcpy(&s6->sin6_addr, a->addr, 16);
        return sizeof(*s6);
    }
    return 0;
}
