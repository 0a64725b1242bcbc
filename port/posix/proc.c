/*
 * proc.c - the process group of the POSIX port: children in their own
 * process group with non-blocking pipes, PR_SET_PDEATHSIG on Linux, group
 * signals, non-blocking reaping, and start times from /proc for telling a
 * process from a later one that reuses its pid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

extern char **environ;

static void close_pair(int p[2])
{
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
}

static int px_spawn(void *ctx, const char *const *argv, const char *const *envp, bool merge_err,
                    int fds[3], int64_t *out_pid)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, ready[2] = {-1, -1};
    pid_t parent = getpid(), pid;
    int e = 0;
    ssize_t n;

    (void)ctx;
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        (!merge_err && pipe2(err, O_CLOEXEC) < 0) || pipe2(ready, O_CLOEXEC) < 0) {
        e = errno;
        goto fail;
    }
    pid = fork();
    if (pid < 0) {
        e = errno;
        goto fail;
    }
    if (pid == 0) {
        /* The child: its own group, dies with mote, then exec. */
        sigset_t none;
        int i;

        setpgid(0, 0);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127); /* mote died before the line above */
#endif
        for (i = 1; i < NSIG; i++) {
            if (i != SIGKILL && i != SIGSTOP)
                signal(i, SIG_DFL);
        }
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(merge_err ? out[1] : err[1], 2);
        if (envp != NULL)
            environ = (char **)envp;
        execvp(argv[0], (char *const *)argv);
        e = errno;
        (void)!write(ready[1], &e, sizeof(e));
        _exit(127);
    }
    setpgid(pid, pid); /* also from here: no race with the first kill */
    close(ready[1]);
    ready[1] = -1;
    /* The exec either happened (the pipe closes on exec) or sent errno. */
    do {
        n = read(ready[0], &e, sizeof(e));
    } while (n < 0 && errno == EINTR);
    close(ready[0]);
    ready[0] = -1;
    close(in[0]);
    close(out[1]);
    if (!merge_err)
        close(err[1]);
    if (n == (ssize_t)sizeof(e)) {
        waitpid(pid, NULL, 0);
        close(in[1]);
        close(out[0]);
        if (!merge_err)
            close(err[0]);
        return mote_posix_err(e);
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    if (!merge_err)
        fcntl(err[0], F_SETFL, O_NONBLOCK);
    fds[0] = in[1];
    fds[1] = out[0];
    fds[2] = merge_err ? -1 : err[0];
    *out_pid = pid;
    (void)parent;
    return 0;
fail:
    close_pair(in);
    close_pair(out);
    close_pair(err);
    close_pair(ready);
    return mote_posix_err(e);
}

static int px_signal(void *ctx, int64_t pgid, int which)
{
    (void)ctx;
    if (pgid <= 1)
        return MOTE_ERR_INVAL; /* never the whole system */
    if (kill(-(pid_t)pgid, which == MOTE_PROC_KILL ? SIGKILL : SIGTERM) < 0)
        return errno == ESRCH ? MOTE_ERR_NOENT : mote_posix_err(errno);
    return 0;
}

static int px_reap(void *ctx, int64_t pid, int *status)
{
    int st = 0;
    pid_t r;

    (void)ctx;
    do {
        r = waitpid((pid_t)pid, &st, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return MOTE_ERR_AGAIN;
    if (r < 0)
        return mote_posix_err(errno);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    return 0;
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

void mote_posix_proc_fill(struct mote_port *port)
{
    port->proc_spawn = px_spawn;
    port->proc_signal = px_signal;
    port->proc_reap = px_reap;
    port->proc_start_time = px_start_time;
}
