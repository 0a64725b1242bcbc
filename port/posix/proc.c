/*
 * proc.c - the process group of the POSIX port.
 *
 * Every child runs under a supervisor: mote forks a small process (S,
 * named mote-sup) that forks the real child (C) in a new process group G
 * and then watches two things: C's exit and a "life" pipe whose write end
 * only mote holds.
 *  - C exits: S kills what is left of G (background children, a
 *    launcher's node process), then every process still below it, and
 *    exits with C's status, which mote reaps.
 *  - mote goes away, by any death including kill -9: the life pipe reads
 *    EOF, S sends SIGTERM to G, waits up to 300 ms, sends SIGKILL to G and
 *    then to every process still below it, and exits.
 *  - mote asks for a signal (proc_signal): it writes 'T' or 'K' into the
 *    life pipe and S signals G.
 *  - a held child (proc_spawn_held) waits before its exec on a gate pipe
 *    whose write end only S holds: mote's 'G' on the life pipe (proc_go)
 *    makes S open it; any end of S, or a signal, ends C unrun. Only S signals G, and only while C, G's
 *    leader, is not reaped: S sees C's exit without reaping it (waitid
 *    WNOWAIT), so C's pid - the group's id - cannot be reused by a stranger
 *    while G is still signalled; C is reaped with the rest, after the last
 *    signal to G. mote itself signals only S, its own unreaped child.
 * S runs in a session of its own (setsid), so a signal to mote's process
 * group (`kill -9 %1` in a shell) does not reach it and it outlives mote
 * long enough to clean up; on Linux it is a child subreaper, so what a
 * tool starts and leaves behind - a `setsid cmd &`, a daemon that forked
 * twice - is reparented to S, not to init, and S ends it too. C dies with
 * S (PR_SET_PDEATHSIG). Each child's environment carries MOTE_TOOL_TAG, a
 * random token its descendants inherit: when mote and S were both killed,
 * recovery finds a recorded tool's remaining processes by it
 * (proc_kill_recorded), never a stranger's.
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
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/resource.h>
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
#define ENV_MAX 1024 /* environment entries a child gets with its tag */
#define TAG_VAR "MOTE_TOOL_TAG="
#define TAG_LEN 16 /* hex digits */

extern char **environ;

static struct child {
    pid_t sup;   /* the supervisor: what mote reaps */
    pid_t group; /* the child's process group (0: not told yet) */
    int life;    /* write end of the life pipe */
    int ready;   /* read end of the ready pipe, until its end (-1) */
    int exec_err; /* the errno of a start that failed (the fork or the exec), else 0 */
    char tag[TAG_LEN + 1];
} kids[CHILDREN];

/* The environment of the child being started: `envp` (or mote's own) with
 * its tag first. Built before the fork, read by the forks only. */
static char *child_env[ENV_MAX + 2];
static char tag_entry[sizeof(TAG_VAR) + TAG_LEN];

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

static size_t put_uint(char *p, unsigned long v)
{
    char d[24];
    size_t n = 0, i;

    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++)
        p[i] = d[n - 1 - i];
    return n;
}

/* SIGKILLs each child of the calling process (on Linux the processes
 * reparented to it as subreaper are among them). Only async-signal-safe
 * calls: it runs in a fork of a process that may have threads. Returns
 * how many it signalled, or -1 if the list could not be read. */
static int kill_children(void)
{
    char path[64], buf[4096];
    size_t k = 0;
    long pid = 0;
    int fd, killed = 0;
    ssize_t n, i;
    bool in = false;

    memcpy(path, "/proc/", 6);
    k = 6 + put_uint(path + 6, (unsigned long)getpid());
    memcpy(path + k, "/task/", 6);
    k += 6 + put_uint(path + k + 6, (unsigned long)getpid());
    memcpy(path + k, "/children", 10);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        for (i = 0; i <= n; i++) {
            if (i < n && buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (buf[i] - '0');
                in = true;
            } else if (i < n && in) {
                if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0)
                    killed++;
                pid = 0;
                in = false;
            }
        }
    }
    if (in && pid > 1 && kill((pid_t)pid, SIGKILL) == 0)
        killed++;
    close(fd);
    return killed;
}

/* True once C has exited; it is left a zombie (not reaped), so its pid,
 * the group's id, stays taken. *status: its exit status, as a shell says. */
static bool leader_exited(pid_t c, int *status)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)c, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid != c)
        return false;
    *status = si.si_code == CLD_EXITED ? si.si_status & 0xff : 128 + si.si_status;
    return true;
}

/* Ends group `c` and every process still below the supervisor, reaping
 * them, for at most about 2 s (a process that forks faster than it can be
 * killed is the only one to survive that). Called with C not reaped: G is
 * signalled while C holds its id, never after C is reaped. */
static void end_all(pid_t c)
{
    bool leader_gone = false;
    int i, st;

    kill(-c, SIGKILL);
    for (i = 0; i < 200; i++) {
        pid_t r;

        while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
            if (r == c)
                leader_gone = true;
        }
        if (r < 0 && errno == ECHILD)
            return;
        if (kill_children() < 0 && !leader_gone) {
            /* No list of children: the group is what can be ended, while
             * its leader still holds the id. */
            kill(-c, SIGKILL);
        }
        sleep_ms(10);
    }
}

/* Closes every descriptor but the `n` in `keep` (-1 entries ignored):
 * mote's own files - a conversation's journal, whose lock would otherwise
 * outlive mote in the supervisor - stay out of the supervisor and the
 * tool. close_range where the kernel has it, else one by one up to a
 * bound. Async-signal-safe. */
static void close_others(const int *keep, int n)
{
    int lo = 3;

    for (;;) {
        int hi = -1, i;

        /* the next kept descriptor at or above lo */
        for (i = 0; i < n; i++) {
            if (keep[i] >= lo && (hi < 0 || keep[i] < hi))
                hi = keep[i];
        }
        if (hi != lo) {
            unsigned last = hi < 0 ? ~0u : (unsigned)hi - 1;
#ifdef SYS_close_range
            if (syscall(SYS_close_range, (unsigned)lo, last, 0u) != 0)
#endif
            {
                /* (getrlimit: what sysconf(_SC_OPEN_MAX) asks, without
                 * sysconf's table in a static build) */
                struct rlimit rl;
                long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                               ? (long)rl.rlim_cur : 65536, fd;

                if (max < 0 || max > 65536)
                    max = 65536;
                for (fd = lo; fd <= (long)last && fd < max; fd++)
                    (void)close((int)fd);
            }
        }
        if (hi < 0)
            return;
        lo = hi + 1;
    }
}

/* In the child, after its exec failed: why, on its stderr (what reads the
 * child's output sees it), as a shell says it before its 127.
 * Async-signal-safe: writes only. */
static void say_exec_failed(const char *prog, int e)
{
    const char *why = e == ENOENT    ? "not found"
                      : e == EACCES  ? "permission denied"
                      : e == ENOEXEC ? "not an executable"
                      : e == ENOMEM  ? "out of memory"
                                     : "cannot be started";

    (void)!write(2, "mote: cannot run ", 17);
    (void)!write(2, prog, strlen(prog));
    (void)!write(2, ": ", 2);
    (void)!write(2, why, strlen(why));
    (void)!write(2, "\n", 1);
}

/* The supervisor's life: never returns. */
static void supervise(const char *const *argv, const char *const *envp, int in[2], int out[2],
                      int err[2], bool merge_err, int ready_w, int life_r, bool held)
{
    pid_t c;
    int st = 0, i;
    int chld[2], gate[2] = {-1, -1};

    {
        int keep[] = {in[0], in[1], out[0], out[1], err[0], err[1], ready_w, life_r};

        close_others(keep, (int)(sizeof(keep) / sizeof(keep[0])));
    }
    /* Out of mote's session and process group: a signal to mote's group
     * (the shell's kill -9 %1) leaves the supervisor to clean up. */
    (void)setsid();
#ifdef __linux__
    prctl(PR_SET_NAME, "mote-sup", 0, 0, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
#endif
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
    if (held && pipe2(gate, O_CLOEXEC) < 0) {
        int64_t m = -(int64_t)errno;

        (void)!write(ready_w, &m, sizeof(m));
        _exit(127);
    }
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
        if (child_env[0] != NULL)
            environ = child_env;
        else if (envp != NULL)
            environ = (char **)envp;
        if (held) {
            /* Held: the program runs only once S opens the gate (mote's
             * proc_go); S's end (mote gone) closes it unopened. */
            char go = 0;
            ssize_t k;

            close(gate[1]);
            do {
                k = read(gate[0], &go, 1);
            } while (k < 0 && errno == EINTR);
            if (k != 1 || go != 'G')
                _exit(127);
            close(gate[0]);
        }
        execvp(argv[0], (char *const *)argv);
        {
            int64_t m = -(int64_t)errno;

            (void)!write(ready_w, &m, sizeof(m));
            say_exec_failed(argv[0], errno);
        }
        _exit(127);
    }
    setpgid(c, c);
    if (held)
        close(gate[0]);
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
        char drain[16];
        ssize_t n;

        if (leader_exited(c, &st)) {
            end_all(c); /* whatever it left behind */
            _exit(st);
        }
        if (poll(p, chld[0] >= 0 ? 2 : 1, chld[0] >= 0 ? 1000 : 50) <= 0)
            continue;
        if (chld[0] >= 0 && (p[1].revents & POLLIN))
            while (read(chld[0], drain, sizeof(drain)) > 0) {
            }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        n = read(life_r, drain, sizeof(drain));
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0) {
            /* mote's requests, sent to G only while C is not reaped (it
             * is not: this loop never reaps it) */
            if (leader_exited(c, &st))
                continue; /* its end comes first, at the top */
            for (i = 0; i < n; i++) {
                if (drain[i] == 'T' || drain[i] == 'K')
                    kill(-c, drain[i] == 'K' ? SIGKILL : SIGTERM);
                if (drain[i] == 'G' && gate[1] >= 0) {
                    (void)!write(gate[1], "G", 1);
                    close(gate[1]);
                    gate[1] = -1;
                }
            }
            continue;
        }
        /* EOF: mote is gone, or let go of the child: end it. */
        kill(-c, SIGTERM);
        for (i = 0; i < 30 && !leader_exited(c, &st); i++)
            sleep_ms(10);
        end_all(c);
        _exit(128 + SIGTERM);
    }
}

/* child_env = the tag, then `envp` (NULL: mote's environment) without any
 * tag it held. Left empty (the child gets envp as it is) if too long. */
static void build_env(const char *const *envp, const char *tag)
{
    const char *const *e = envp != NULL ? envp : (const char *const *)environ;
    size_t n = 0, i;

    memcpy(tag_entry, TAG_VAR, sizeof(TAG_VAR) - 1);
    memcpy(tag_entry + sizeof(TAG_VAR) - 1, tag, TAG_LEN + 1);
    child_env[n++] = tag_entry;
    for (i = 0; e != NULL && e[i] != NULL; i++) {
        if (strncmp(e[i], TAG_VAR, sizeof(TAG_VAR) - 1) == 0)
            continue;
        if (n >= ENV_MAX) {
            child_env[0] = NULL;
            return;
        }
        child_env[n++] = (char *)e[i];
    }
    child_env[n] = NULL;
}

/* Whether `file` can be run, as execvp would look for it (in the PATH of
 * the environment the child gets, if it has one): 0 or an errno. A quick
 * look before the fork, so that a missing program is said at once; what
 * only the exec can tell comes later (the child's stderr and its 127). */
static int runnable(const char *file, const char *const *envp)
{
    const char *path = NULL, *p;
    char buf[4096];
    struct stat st;
    size_t i, n = strlen(file);
    int e = ENOENT;

    if (n == 0)
        return ENOENT;
    if (strchr(file, '/') != NULL) {
        if (stat(file, &st) < 0)
            return errno;
        return S_ISREG(st.st_mode) && access(file, X_OK) == 0 ? 0 : EACCES;
    }
    for (i = 0; envp != NULL && envp[i] != NULL; i++) {
        if (strncmp(envp[i], "PATH=", 5) == 0)
            path = envp[i] + 5;
    }
    if (envp == NULL)
        path = getenv("PATH");
    if (path == NULL)
        path = "/bin:/usr/bin"; /* execvp's default */
    for (p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

        if (len == 0) {
            buf[0] = '.'; /* an empty entry: the working directory */
            len = 1;
        } else if (len < sizeof(buf) - n - 2) {
            memcpy(buf, p, len);
        } else {
            len = 0;
        }
        if (len > 0 && len + n + 2 <= sizeof(buf)) {
            buf[len] = '/';
            memcpy(buf + len + 1, file, n + 1);
            if (stat(buf, &st) == 0) {
                if (S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                    return 0;
                e = EACCES; /* as execvp: found, not runnable, look on */
            }
        }
        if (end == NULL)
            return e;
        p = end;
    }
}

/* Takes what the supervisor said on the ready pipe so far: the group, a
 * start that failed, the pipe's end (the exec). Never waits. */
static void hear(struct child *c)
{
    while (c->ready >= 0) {
        int64_t m;
        ssize_t n = read(c->ready, &m, sizeof(m));

        if (n == (ssize_t)sizeof(m)) {
            if (m > 0)
                c->group = (pid_t)m;
            else
                c->exec_err = (int)-m;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return; /* nothing more for now */
        close(c->ready); /* the end: the exec happened, or failed and said so */
        c->ready = -1;
    }
}

static int spawn(const char *const *argv, const char *const *envp, bool merge_err, int fds[3],
                 int64_t *out_pid, bool held)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, ready[2] = {-1, -1};
    int life[2] = {-1, -1};
    struct child *slot = free_slot();
    pid_t sup;
    int e = 0;

    if (slot == NULL)
        return MOTE_ERR_FULL;
    if ((e = runnable(argv[0], envp)) != 0)
        return e == ENOENT ? MOTE_ERR_NOENT : mote_posix_err(e);
    mote_posix_random_hex(slot->tag, TAG_LEN);
    build_env(envp, slot->tag);
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
        supervise(argv, envp, in, out, err, merge_err, ready[1], life[0], held);
    }
    /* Nothing is waited for: the supervisor says the group on the ready
     * pipe (proc_group hears it), and a child that cannot be run says why
     * on its stderr and exits 127, which the reap reports. */
    close(ready[1]);
    close(life[0]);
    close(in[0]);
    close(out[1]);
    if (!merge_err)
        close(err[1]);
    fcntl(ready[0], F_SETFL, O_NONBLOCK);
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(life[1], F_SETFL, O_NONBLOCK); /* signal requests never block mote */
    if (!merge_err)
        fcntl(err[0], F_SETFL, O_NONBLOCK);
    fds[0] = in[1];
    fds[1] = out[0];
    fds[2] = merge_err ? -1 : err[0];
    slot->sup = sup;
    slot->group = 0;
    slot->exec_err = 0;
    slot->ready = ready[0];
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

static int px_spawn(void *ctx, const char *const *argv, const char *const *envp, bool merge_err,
                    int fds[3], int64_t *pid)
{
    (void)ctx;
    return spawn(argv, envp, merge_err, fds, pid, false);
}

static int px_spawn_held(void *ctx, const char *const *argv, const char *const *envp,
                         bool merge_err, int fds[3], int64_t *pid)
{
    (void)ctx;
    return spawn(argv, envp, merge_err, fds, pid, true);
}

/* A request to the supervisor of `c`: one byte on the life pipe. */
static int tell_sup(const struct child *c, char b)
{
    ssize_t n;

    do {
        n = write(c->life, &b, 1);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EPIPE)
        return MOTE_ERR_NOENT; /* the supervisor has ended: so has the group */
    if (n < 0 && errno != EAGAIN) /* EAGAIN: it is ending the group already */
        return mote_posix_err(errno);
    return 0;
}

static int px_go(void *ctx, int64_t pid)
{
    struct child *c = find(pid);

    (void)ctx;
    return c != NULL ? tell_sup(c, 'G') : MOTE_ERR_NOENT;
}

static int px_signal(void *ctx, int64_t pid, int which)
{
    struct child *c = find(pid);

    (void)ctx;
    /* Only a child of this run that mote has not reaped: a handle already
     * reaped, or a pid from elsewhere, may name a stranger by now. The
     * group is signalled by its supervisor, which knows whether the
     * group's leader is reaped (mote cannot): a request on the life pipe. */
    if (c == NULL)
        return MOTE_ERR_NOENT;
    /* (The supervisor signals its own child's group, never another: a
     * request before it made the group waits in the pipe.) */
    return tell_sup(c, which == MOTE_PROC_KILL ? 'K' : 'T');
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
        if (c->ready >= 0)
            close(c->ready);
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
    if (c == NULL)
        return MOTE_ERR_NOENT;
    /* The supervisor says it right after its fork (the exec is not waited
     * for): until then, the caller asks again later. A failed exec says so
     * on the same pipe, and may say it first: the group may still come
     * until the pipe ends (a failed fork says only its error). */
    hear(c);
    if (c->group > 0)
        return c->group;
    return c->exec_err != 0 && c->ready < 0 ? mote_posix_err(c->exec_err) : MOTE_ERR_AGAIN;
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
    {
        /* (strtoull, not sscanf: scanf would bring 12 KB of libc into a
         * static build) */
        char *end;

        start = strtoull(p, &end, 10);
        if (end == p)
            return 0;
    }
    return start == 0 ? 1 : start;
}

static int px_tag(void *ctx, int64_t pid, char *buf, size_t cap)
{
    struct child *c = find(pid);
    size_t n;

    (void)ctx;
    if (c == NULL)
        return MOTE_ERR_NOENT;
    n = strlen(c->tag);
    if (n + 1 > cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(buf, c->tag, n + 1);
    return (int)n;
}

/* True if `len` bytes at `needle` are in `n` bytes at `hay` (memmem is a
 * GNU extension, and 1 KB of libc in a static build). */
static bool has_bytes(const char *hay, size_t n, const char *needle, size_t len)
{
    size_t i;

    for (i = 0; i + len <= n; i++) {
        if (hay[i] == needle[0] && memcmp(hay + i, needle, len) == 0)
            return true;
    }
    return false;
}

/* True if process `pid`'s environment holds exactly `entry` (NUL-framed). */
static bool env_has(long pid, const char *entry, size_t len)
{
    char path[64], buf[4096 + 64];
    size_t keep = 1;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false; /* gone, or not ours */
    buf[0] = '\0';   /* the first entry is framed like the others */
    while ((n = read(fd, buf + keep, sizeof(buf) - keep)) > 0) {
        size_t have = keep + (size_t)n;

        if (has_bytes(buf, have, entry, len)) {
            close(fd);
            return true;
        }
        keep = len - 1 < have ? len - 1 : have;
        memmove(buf, buf + have - keep, keep);
    }
    close(fd);
    return false;
}

static int px_kill_recorded(void *ctx, int64_t pgid, uint64_t start, const char *tag)
{
    char entry[sizeof(TAG_VAR) + TAG_LEN + 2];
    size_t tl = tag != NULL ? strlen(tag) : 0, i;
    int count = 0;
    bool ok = tl == TAG_LEN;
    DIR *d;
    struct dirent *de;

    for (i = 0; ok && i < tl; i++)
        ok = (tag[i] >= '0' && tag[i] <= '9') || (tag[i] >= 'a' && tag[i] <= 'f');
    /* The group, only while its leader is the very process recorded. */
    if (pgid > 1 && start != 0 && px_start_time(ctx, pgid) == start &&
        kill(-(pid_t)pgid, SIGKILL) == 0)
        count++;
    if (!ok)
        return count;
    /* Every process of ours with the tag, whatever its group. */
    entry[0] = '\0';
    memcpy(entry + 1, TAG_VAR, sizeof(TAG_VAR) - 1);
    memcpy(entry + sizeof(TAG_VAR), tag, TAG_LEN);
    entry[sizeof(TAG_VAR) + TAG_LEN] = '\0';
    d = opendir("/proc");
    if (d == NULL)
        return count > 0 ? count : mote_posix_err(errno);
    while ((de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);

        if (*end != '\0' || pid <= 1 || pid == (long)getpid())
            continue;
        if (env_has(pid, entry, sizeof(TAG_VAR) + TAG_LEN + 1) && kill((pid_t)pid, SIGKILL) == 0)
            count++;
    }
    closedir(d);
    return count;
}

static int px_pipe_read(void *ctx, int fd, void *buf, size_t n)
{
    (void)ctx;
    return mote_posix_read(fd, buf, n);
}

static int px_pipe_write(void *ctx, int fd, const void *buf, size_t n)
{
    (void)ctx;
    return mote_posix_write(fd, buf, n);
}

void mote_posix_proc_fill(struct mote_port *port)
{
    port->pipe_read = px_pipe_read;
    port->pipe_write = px_pipe_write;
    port->pipe_close = mote_posix_close;
    port->proc_spawn = px_spawn;
    port->proc_signal = px_signal;
    port->proc_reap = px_reap;
    port->proc_start_time = px_start_time;
    port->proc_group = px_group;
    port->proc_tag = px_tag;
    port->proc_kill_recorded = px_kill_recorded;
    port->proc_spawn_held = px_spawn_held;
    port->proc_go = px_go;
}
