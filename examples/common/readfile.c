/* readfile.c - a small file read at start without blocking, only if it is
 * a regular file (see readfile.h). */
#define _GNU_SOURCE
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fe_read_file(const char *path, char *buf, size_t cap, size_t *len)
{
    struct stat sb;
    size_t n = 0;
    int fd, saved;

    *len = 0;
    if (cap > 0)
        buf[0] = '\0';
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return errno == ENXIO || errno == ENODEV ? FE_READ_NOTREG : FE_READ_ERRNO;
    if (fstat(fd, &sb) < 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return FE_READ_ERRNO;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return FE_READ_NOTREG;
    }
    while (cap > 0 && n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            saved = errno;
            close(fd);
            errno = saved;
            return FE_READ_ERRNO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n >= cap)
        return FE_READ_TOO_LONG;
    buf[n] = '\0';
    *len = n;
    return FE_READ_OK;
}

const char *fe_read_why(int rc)
{
    switch (rc) {
    case FE_READ_OK: return "read";
    case FE_READ_TOO_LONG: return "too long";
    case FE_READ_NOTREG: return "not a regular file (a FIFO, a device or a directory)";
    default: return strerror(errno);
    }
}
