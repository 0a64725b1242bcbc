/*
 * posix.c - the POSIX port's table: mote_posix_init fills struct mote_port
 * with the clock, wait, signals, random and resident-memory members kept
 * here and with each
 * group's members (storage.c, fs.c, net.c, listen.c, proc.c, the TLS
 * backend); the groups never call back into this file.
 *
 * Signals: the handler adds one to an atomic counter and writes a byte to
 * a non-blocking self-pipe. wait() polls the pipe's read end with the
 * caller's descriptors, so a signal that arrives at any moment, even
 * before poll() is entered, ends the wait. signals_take() drains the pipe
 * (when the last wait saw it readable: no system call on the turns
 * without a signal) and then swaps the counters to zero: a signal
 * arriving in between is counted now, its byte waking the next wait, or
 * left for the next call; never lost. A full pipe drops only the wake-up
 * byte, never the count. When another event loop watches the pipe
 * (signals_fd), signals_take drains it on every call.
 */
#define _GNU_SOURCE
#include "mote/mote_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_tls.h"
#include "posix_internal.h"

static atomic_uint sig_counts[MOTE_SIG_COUNT];
static volatile sig_atomic_t sig_wfd = -1;
static struct mote_posix *sig_owner;
static struct sigaction sig_old[MOTE_SIG_COUNT];
static struct sigaction sig_old_pipe;
static const int sig_native[MOTE_SIG_COUNT] = {SIGINT, SIGTERM, SIGHUP};

static uint32_t px_now_ms(void *ctx)
{
    struct mote_posix *pp = ctx;
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u) +
           pp->clock_offset;
}

static short to_poll(unsigned ev)
{
    return (short)(((ev & MOTE_POLL_IN) ? POLLIN : 0) | ((ev & MOTE_POLL_OUT) ? POLLOUT : 0));
}

static int px_wait(void *ctx, struct mote_pollfd *fds, unsigned nfds, int32_t timeout_ms)
{
    struct mote_posix *pp = ctx;
    struct pollfd pfd[MOTE_POSIX_MAX_POLL + 1];
    unsigned i, n = 0;
    int rc, ready = 0;

    if (nfds > MOTE_POSIX_MAX_POLL)
        return MOTE_ERR_TOO_LARGE;
    for (i = 0; i < nfds; i++) {
        pfd[i].fd = fds[i].fd;
        pfd[i].events = to_poll(fds[i].events);
        pfd[i].revents = 0;
        fds[i].revents = 0;
    }
    n = nfds;
    if (pp->sig_pipe[0] >= 0) {
        pfd[n].fd = pp->sig_pipe[0];
        pfd[n].events = POLLIN;
        pfd[n].revents = 0;
        n++;
    }
    rc = poll(pfd, n, timeout_ms < 0 ? -1 : timeout_ms);
    if (rc < 0)
        return errno == EINTR ? 0 : mote_posix_err(errno);
    /* The pipe is drained by the next signals_take only if it has
     * something: no read just to hear "would block" on every turn. */
    if (n > nfds && pfd[nfds].revents != 0)
        pp->sig_ready = true;
    for (i = 0; i < nfds; i++) {
        unsigned r = 0;

        if (pfd[i].revents & (POLLIN | POLLHUP))
            r |= MOTE_POLL_IN;
        if (pfd[i].revents & POLLOUT)
            r |= MOTE_POLL_OUT;
        if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
            r |= MOTE_POLL_ERR;
        fds[i].revents = (uint16_t)r;
        if (r != 0)
            ready++;
    }
    return ready;
}

static int px_signals_take(void *ctx, uint8_t counts[MOTE_SIG_COUNT])
{
    struct mote_posix *pp = ctx;
    char buf[64];
    unsigned s;
    int total = 0;

    if (pp->sig_pipe[0] >= 0 && (pp->sig_ready || pp->sig_fd_out)) {
        pp->sig_ready = false;
        while (read(pp->sig_pipe[0], buf, sizeof(buf)) > 0) {
        }
    }
    for (s = 0; s < MOTE_SIG_COUNT; s++) {
        unsigned n = atomic_exchange(&sig_counts[s], 0u);

        counts[s] = (uint8_t)(n > 255 ? 255 : n);
        total += (int)counts[s];
    }
    return total;
}

/* Another loop watches the pipe (mote_loop_host): it tells mote when the
 * pipe is readable, never this port's wait(), so signals_take drains the
 * pipe on each call from now on. */
static int px_signals_fd(void *ctx)
{
    struct mote_posix *pp = ctx;

    pp->sig_fd_out = true;
    return pp->sig_pipe[0];
}

static int px_random(void *ctx, void *buf, size_t len)
{
    (void)ctx;
    mote_posix_random_bytes(buf, len);
    return 0;
}

static int px_random_secret(void *ctx, void *buf, size_t len, int *wait_fd)
{
    (void)ctx;
    return mote_posix_random_secret(buf, len, wait_fd);
}

static void on_signal(int sig)
{
    int saved = errno;
    unsigned s;

    for (s = 0; s < MOTE_SIG_COUNT; s++) {
        if (sig_native[s] == sig) {
            char b = (char)s;

            atomic_fetch_add(&sig_counts[s], 1u);
            if (sig_wfd >= 0)
                (void)!write(sig_wfd, &b, 1);
        }
    }
    errno = saved;
}

static int set_nonblock_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return mote_posix_err(errno);
    return 0;
}

/* This process's resident memory: /proc/self/statm's second field
 * (pages). */
static int px_mem_resident(void *ctx, uint64_t *bytes)
{
    char buf[128];
    const char *p;
    uint64_t pages = 0;
    long page = sysconf(_SC_PAGESIZE);
    ssize_t n;
    int fd;

    (void)ctx;
    do {
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return mote_posix_err(errno);
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0 || page <= 0)
        return MOTE_ERR_IO;
    buf[n] = '\0';
    p = strchr(buf, ' ');
    if (p == NULL)
        return MOTE_ERR_IO;
    for (p++; *p >= '0' && *p <= '9'; p++)
        pages = pages * 10 + (uint64_t)(*p - '0');
    *bytes = pages * (uint64_t)page;
    return 0;
}

int mote_posix_init_checked(struct mote_posix *pp, unsigned long config_signature)
{
    if (config_signature != MOTE_CONFIG_SIGNATURE)
        return MOTE_ERR_CONFIG; /* the caller's struct may be smaller than ours */
    memset(pp, 0, sizeof(*pp));
    pp->sig_pipe[0] = pp->sig_pipe[1] = -1;
    if (pipe(pp->sig_pipe) < 0)
        return mote_posix_err(errno);
    if (set_nonblock_cloexec(pp->sig_pipe[0]) < 0 || set_nonblock_cloexec(pp->sig_pipe[1]) < 0) {
        mote_posix_deinit(pp);
        return MOTE_ERR_IO;
    }
    pp->port.size = sizeof(pp->port);
    pp->port.version = MOTE_PORT_VERSION;
    pp->port.ctx = pp;
    pp->port.now_ms = px_now_ms;
    pp->port.wait = px_wait;
    pp->port.signals_take = px_signals_take;
    pp->port.signals_fd = px_signals_fd;
    pp->port.random = px_random;
    pp->port.random_secret = px_random_secret;
    pp->port.mem_resident = px_mem_resident;
    mote_posix_storage_fill(&pp->port);
    mote_posix_net_fill(&pp->port);
    mote_posix_proc_fill(&pp->port);
    mote_posix_fs_fill(&pp->port);
    mote_posix_listen_fill(&pp->port);
    mote_posix_clock_fill(&pp->port);
    mote_tls_fill(&pp->port);
    return 0;
}

int mote_posix_signals_install(struct mote_posix *pp)
{
    struct sigaction sa;
    struct sigaction ign;
    unsigned s;

    if (sig_owner != NULL)
        return sig_owner == pp ? 0 : MOTE_ERR_BUSY;
    for (s = 0; s < MOTE_SIG_COUNT; s++)
        atomic_store(&sig_counts[s], 0u);
    sig_wfd = pp->sig_pipe[1];
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (s = 0; s < MOTE_SIG_COUNT; s++)
        sigaction(sig_native[s], &sa, &sig_old[s]);
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &sig_old_pipe);
    sig_owner = pp;
    pp->sig_installed = true;
    return 0;
}

void mote_posix_signals_restore(struct mote_posix *pp)
{
    unsigned s;

    if (sig_owner != pp || !pp->sig_installed)
        return;
    for (s = 0; s < MOTE_SIG_COUNT; s++)
        sigaction(sig_native[s], &sig_old[s], NULL);
    sigaction(SIGPIPE, &sig_old_pipe, NULL);
    sig_wfd = -1;
    sig_owner = NULL;
    pp->sig_installed = false;
}

void mote_posix_deinit(struct mote_posix *pp)
{
    /* files written behind (TLS sessions) or left by a tool: their end */
    mote_posix_replace_drain(2000);
    mote_posix_signals_restore(pp);
    if (pp->sig_pipe[0] >= 0)
        close(pp->sig_pipe[0]);
    if (pp->sig_pipe[1] >= 0)
        close(pp->sig_pipe[1]);
    pp->sig_pipe[0] = pp->sig_pipe[1] = -1;
}
