/*
 * proc.c - the process group of the POSIX port.
 *
 * Every child runs under a supervisor: mote forks a small process (S) that
 * forks the real child (C) in a new process group G and then watches two
 * things: C's exit and a "life" pipe whose write end only mote holds.
 *  - C exits: S kills what is left of G (background children, a
 *    launcher's node process) and exits with C's status, which mote reaps.
 *  - mote goes away, by any death including kill -9: the life pipe reads
 *    EOF, S sends SIGTERM to G, waits up to 300 ms, sends SIGKILL, exits.
 * S ignores the terminal's signals (it is in mote's group) and C dies with
 * S (PR_SET_PDEATHSIG), so nothing of a child outlives mote.
 *
 * Start times come from /proc/PID/stat, to tell a process from a later one
 * that reuses its pid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define CHILDREN 32

extern char **environ;

static struct child {
    pid_t sup;   /* the supervisor: what mote reaps */
    pid_t group; /* the child's process group */
    int life;    /* write end of the life pipe */
} kids[CHILDREN];

static struct child *find(int64_t pid)
{
    int i;

    for (i = 0; i < CHILDREN; i++) {
        if (kids[i].sup != 0 && kids[i].sup == (pid_t)pid)
            return &kids[i];
    }
    return NULL;
}

static struct child *free_slot(void)
{
    int i;

    for (i = 0; i < CHILDREN; i++) {
        if (kids[i].sup == 0)
            return &kids[i];
    }
    return NULL;
}

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static int chld_w = -1;

static void on_chld(int sig)
{
    int saved = errno;
    char b = 1;

    (void)sig;
    (void)!write(chld_w, &b, 1);
    errno = saved;
}

/* The supervisor's life: never returns. */
static void supervise(const char *const *argv, const char *const *envp, int in[2], int out[2],
                      int err[2], bool merge_err, int ready_w, int life_r)
{
    pid_t c;
    int st = 0, i;
    int chld[2];

    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    /* SIGCHLD wakes the wait below at once: no polling. */
    if (pipe2(chld, O_CLOEXEC | O_NONBLOCK) == 0) {
        struct sigaction sa;

        memset(&sa, 0, sizeof(sa));
        chld_w = chld[1];
        sa.sa_handler = on_chld;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
        sigaction(SIGCHLD, &sa, NULL);
    } else {
        chld[0] = chld[1] = -1;
    }
    /* Records on the ready pipe are int64: > 0 the group id, < 0 -errno
     * (each one write of 8 bytes, so they never interleave). */
    c = fork();
    if (c < 0) {
        int64_t m = -(int64_t)errno;

        (void)!write(ready_w, &m, sizeof(m));
        _exit(127);
    }
    if (c == 0) {
        sigset_t none;
        pid_t sup = getppid();

        setpgid(0, 0);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != sup)
            _exit(127);
#endif
        for (i = 1; i < NSIG; i++) {
            if (i != SIGKILL && i != SIGSTOP)
                signal(i, SIG_DFL);
        }
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        close(life_r);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(merge_err ? out[1] : err[1], 2);
        if (envp != NULL)
            environ = (char **)envp;
        execvp(argv[0], (char *const *)argv);
        {
            int64_t m = -(int64_t)errno;

            (void)!write(ready_w, &m, sizeof(m));
        }
        _exit(127);
    }
    setpgid(c, c);
    /* Tell mote the group, then let the exec report (or close) the pipe. */
    {
        int64_t g = c;

        (void)!write(ready_w, &g, sizeof(g));
    }
    close(ready_w);
    close_pair(in);
    close_pair(out);
    if (!merge_err)
        close_pair(err);
    for (;;) {
        struct pollfd p[2] = {{life_r, POLLIN, 0}, {chld[0], POLLIN, 0}};
        pid_t r = waitpid(c, &st, WNOHANG);
        char drain[16];

        if (r == c) {
            kill(-c, SIGKILL); /* whatever it left behind */
            _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
        }
        if (poll(p, chld[0] >= 0 ? 2 : 1, chld[0] >= 0 ? 1000 : 50) <= 0)
            continue;
        if (chld[0] >= 0 && (p[1].revents & POLLIN))
            while (read(chld[0], drain, sizeof(drain)) > 0) {
            }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char b;

            if (read(life_r, &b, 1) <= 0) {
                /* mote is gone, or let go of the child: end it. */
                kill(-c, SIGTERM);
                for (i = 0; i < 30 && waitpid(c, &st, WNOHANG) == 0; i++)
                    sleep_ms(10);
                kill(-c, SIGKILL);
                waitpid(c, &st, 0);
                _exit(128 + SIGTERM);
            }
        }
    }
}

static int px_spawn(void *ctx, const char *const *argv, const char *const *envp, bool merge_err,
                    int fds[3], int64_t *out_pid)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, ready[2] = {-1, -1};
    int life[2] = {-1, -1};
    struct child *slot = free_slot();
    int64_t group = 0;
    pid_t sup;
    int e = 0;
    ssize_t n;

    (void)ctx;
    if (slot == NULL)
        return MOTE_ERR_FULL;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        (!merge_err && pipe2(err, O_CLOEXEC) < 0) || pipe2(ready, O_CLOEXEC) < 0 ||
        pipe2(life, O_CLOEXEC) < 0) {
        e = errno;
        goto fail;
    }
    sup = fork();
    if (sup < 0) {
        e = errno;
        goto fail;
    }
    if (sup == 0) {
        close(ready[0]);
        close(life[1]);
        supervise(argv, envp, in, out, err, merge_err, ready[1], life[0]);
    }
    close(ready[1]);
    ready[1] = -1;
    close(life[0]);
    life[0] = -1;
    /* Records until EOF (the exec closed the last write end). */
    for (;;) {
        int64_t m;

        n = read(ready[0], &m, sizeof(m));
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(m))
            break;
        if (m > 0)
            group = m;
        else
            e = (int)-m;
    }
    if (group == 0 && e == 0)
        e = ECHILD;
    close(ready[0]);
    ready[0] = -1;
    close(in[0]);
    close(out[1]);
    in[0] = out[1] = -1;
    if (!merge_err) {
        close(err[1]);
        err[1] = -1;
    }
    if (e != 0) {
        close(life[1]);
        waitpid(sup, NULL, 0);
        close(in[1]);
        close(out[0]);
        if (!merge_err)
            close(err[0]);
        return e == ENOENT ? MOTE_ERR_NOENT : mote_posix_err(e);
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    if (!merge_err)
        fcntl(err[0], F_SETFL, O_NONBLOCK);
    fds[0] = in[1];
    fds[1] = out[0];
    fds[2] = merge_err ? -1 : err[0];
    slot->sup = sup;
    slot->group = (pid_t)group;
    slot->life = life[1];
    *out_pid = sup;
    return 0;
fail:
    close_pair(in);
    close_pair(out);
    close_pair(err);
    close_pair(ready);
    close_pair(life);
    return mote_posix_err(e);
}

static int px_signal(void *ctx, int64_t pid, int which)
{
    struct child *c = find(pid);
    pid_t g = c != NULL ? c->group : (pid_t)pid;

    (void)ctx;
    if (g <= 1)
        return MOTE_ERR_INVAL; /* never the whole system */
    if (kill(-g, which == MOTE_PROC_KILL ? SIGKILL : SIGTERM) < 0)
        return errno == ESRCH ? MOTE_ERR_NOENT : mote_posix_err(errno);
    return 0;
}

static int px_reap(void *ctx, int64_t pid, int *status)
{
    struct child *c = find(pid);
    int st = 0;
    pid_t r;

    (void)ctx;
    do {
        r = waitpid((pid_t)pid, &st, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return MOTE_ERR_AGAIN;
    if (c != NULL) {
        close(c->life);
        memset(c, 0, sizeof(*c));
    }
    if (r < 0)
        return mote_posix_err(errno);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    return 0;
}

static int64_t px_group(void *ctx, int64_t pid)
{
    struct child *c = find(pid);

    (void)ctx;
    return c != NULL ? c->group : MOTE_ERR_NOENT;
}

static uint64_t px_start_time(void *ctx, int64_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long long start = 0;
    FILE *f;
    size_t n;
    int field;

    (void)ctx;
    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 22 (starttime); the command name (field 2) may hold spaces,
     * so count from its closing parenthesis. */
    p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
        return 0; /* a zombie no longer runs anything */
    for (field = 2; *p != '\0' && field < 22; p++) {
        if (*p == ' ')
            field++;
    }
    if (sscanf(p, "%llu", &start) != 1)
        return 0;
    return start == 0 ? 1 : start;
}

static int px_pipe_read(void *ctx, int fd, void *buf, size_t n)
{
    ssize_t r;

    (void)ctx;
    do {
        r = read(fd, buf, n);
    } while (r < 0 && errno == EINTR);
    return r < 0 ? mote_posix_err(errno) : (int)r;
}

static int px_pipe_write(void *ctx, int fd, const void *buf, size_t n)
{
    ssize_t r;

    (void)ctx;
    do {
        r = write(fd, buf, n);
    } while (r < 0 && errno == EINTR);
    return r < 0 ? mote_posix_err(errno) : (int)r;
}

static void px_pipe_close(void *ctx, int fd)
{
    (void)ctx;
    if (fd >= 0)
        close(fd);
}

void mote_posix_proc_fill(struct mote_port *port)
{
    port->pipe_read = px_pipe_read;
    port->pipe_write = px_pipe_write;
    port->pipe_close = px_pipe_close;
    port->proc_spawn = px_spawn;
    port->proc_signal = px_signal;
    port->proc_reap = px_reap;
    port->proc_start_time = px_start_time;
    port->proc_group = px_group;
}
