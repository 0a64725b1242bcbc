/*
 * slowstore.c - a test shim (LD_PRELOAD) that makes every flock(2),
 * fsync(2) and fdatasync(2) of the program take $MOTE_TEST_SYNC_MS
 * milliseconds more (a slow flash): the moments between a spawn and the
 * durable record of what was spawned become long enough for a test to see
 * what runs in them. Nothing else of the program changes. Built by the
 * tests that use it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/file.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void slow(void)
{
    const char *v = getenv("MOTE_TEST_SYNC_MS");
    long ms = v != NULL ? atol(v) : 0;
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) < 0) {
    }
}

int fsync(int fd)
{
    static int (*real)(int);

    if (real == NULL)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    slow();
    return real(fd);
}

int fdatasync(int fd)
{
    static int (*real)(int);

    if (real == NULL)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    slow();
    return real(fd);
}

int flock(int fd, int op)
{
    static int (*real)(int, int);

    if (real == NULL)
        real = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    if (!(op & LOCK_UN))
        slow();
    return real(fd, op);
}
