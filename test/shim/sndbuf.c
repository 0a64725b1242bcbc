/*
 * sndbuf.c - a test shim (LD_PRELOAD) that gives every TCP socket the
 * program opens a send buffer of $MOTE_TEST_SNDBUF bytes: on loopback the
 * kernel otherwise takes megabytes at once, and a request larger than
 * the buffer then goes out in several sends only when its peer reads.
 * Nothing else of the program changes. Built by the tests that use it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>

int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);
    const char *v = getenv("MOTE_TEST_SNDBUF");
    int fd, n;

    if (real == NULL)
        real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    fd = real(domain, type, protocol);
    if (fd >= 0 && v != NULL && (domain == AF_INET || domain == AF_INET6) &&
        (type & 0xf) == SOCK_STREAM) {
        n = atoi(v);
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n));
    }
    return fd;
}
