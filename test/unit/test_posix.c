/* test_posix.c - the POSIX port: real signals wake the loop, storage. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_posix.h"
#include "sig_seen.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <grp.h>
#include <sys/wait.h>

/* getrandom as the port sees it: this definition wins over libc's at link
 * time, so a test can play early boot (the pool not ready: a blocking
 * call would hang, a non-blocking one says EAGAIN). */
static int pool_not_ready;
static unsigned blocking_calls;

ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
    if (!(flags & GRND_NONBLOCK))
        blocking_calls++;
    if (pool_not_ready) {
        if (!(flags & GRND_NONBLOCK))
            return (ssize_t)len; /* would have blocked for minutes: counted */
        errno = EAGAIN;
        return -1;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

static struct mote_posix pp;
static struct mote_loop loop;
static char dir[256];

static int setup(void **state)
{
    (void)state;
    if (mote_posix_init(&pp) < 0 || mote_posix_signals_install(&pp) < 0)
        return -1;
    snprintf(dir, sizeof(dir), "/tmp/mote-test-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    return mote_loop_init(&loop, &pp.port);
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_real_signal_wakes_loop(void **state)
{
    struct sseen s = {{0}, 0};
    uint32_t t0;
    int rc;

    (void)state;
    mote_loop_on_signal(&loop, on_sig, &s);
    assert_int_equal(kill(getpid(), SIGINT), 0);
    t0 = mote_loop_now(&loop);
    rc = mote_loop_poll(&loop, 10000);
    /* The wait ended because of the signal, not the 10 s timeout. */
    assert_true((uint32_t)(mote_loop_now(&loop) - t0) < 5000);
    assert_int_equal(rc, 1);
    assert_int_equal(s.count[MOTE_SIG_INT], 1);
    assert_int_equal(s.calls, 1);
    /* Seen once: the next turn reports nothing. */
    assert_int_equal(mote_loop_poll(&loop, 0), 0);
    assert_int_equal(s.calls, 1);
    /* Two TERM and one HUP between turns: all counted. */
    assert_int_equal(kill(getpid(), SIGTERM), 0);
    assert_int_equal(kill(getpid(), SIGHUP), 0);
    assert_int_equal(kill(getpid(), SIGTERM), 0);
    assert_int_equal(mote_loop_poll(&loop, 10000), 2);
    assert_int_equal(s.count[MOTE_SIG_TERM], 2);
    assert_int_equal(s.count[MOTE_SIG_HUP], 1);
    /* SIGPIPE is ignored: this process is still here. */
    assert_int_equal(kill(getpid(), SIGPIPE), 0);
    assert_int_equal(mote_loop_poll(&loop, 0), 0);
}

/* A job that raises a signal from inside its step. */
static int raiser_step(struct mote_loop *l, mote_job_id self, void *p)
{
    (void)l, (void)self, (void)p;
    kill(getpid(), SIGTERM);
    return MOTE_STEP_DONE;
}

static const struct mote_task_ops raiser_ops = {"raiser", raiser_step, NULL};

static void test_signal_during_step_not_lost(void **state)
{
    struct sseen s = {{0}, 0};
    mote_job_id id;
    uint32_t t0;

    (void)state;
    mote_loop_on_signal(&loop, on_sig, &s);
    assert_int_equal(mote_job_spawn(&loop, "r", &raiser_ops, NULL, NULL, &id), 0);
    (void)mote_loop_poll(&loop, 0); /* the step raises after signals were taken */
    assert_int_equal(mote_job_state(&loop, id), MOTE_JOB_DONE);
    t0 = mote_loop_now(&loop);
    assert_true(mote_loop_poll(&loop, 10000) >= 1);
    assert_true((uint32_t)(mote_loop_now(&loop) - t0) < 5000);
    assert_int_equal(s.count[MOTE_SIG_TERM], 1);
}

static void test_clock_monotonic(void **state)
{
    uint32_t a, b;

    (void)state;
    pp.clock_offset = 0xFFFFFFFFu - 5u; /* wraps within the test */
    a = mote_loop_now(&loop);
    usleep(20000);
    b = mote_loop_now(&loop);
    assert_true((int32_t)(b - a) >= 15);
    pp.clock_offset = 0;
}

static void test_random(void **state)
{
    unsigned char a[32], b[32];

    (void)state;
    assert_int_equal(pp.port.random(pp.port.ctx, a, sizeof(a)), 0);
    assert_int_equal(pp.port.random(pp.port.ctx, b, sizeof(b)), 0);
    assert_memory_not_equal(a, b, sizeof(a));
}

static int produce_text(void *arg, char *buf, size_t cap)
{
    const char **p = arg;
    size_t n = strlen(*p);

    if (n > cap)
        n = cap;
    memcpy(buf, *p, n);
    *p += n;
    return (int)n;
}

static int produce_fail(void *arg, char *buf, size_t cap)
{
    (void)arg, (void)buf, (void)cap;
    return MOTE_ERR_NOSPC;
}

static int count_entries(void *arg, const char *name)
{
    (void)name;
    (*(int *)arg)++;
    return 0;
}

static void test_storage(void **state)
{
    const struct mote_port *p = &pp.port;
    char root[300], path[400], buf[64];
    const char *text = "first version\n";
    struct stat sb;
    int h, n = 0;

    (void)state;
    snprintf(root, sizeof(root), "%s/a/b/state", dir);
    assert_int_equal(mote_posix_storage_root(&pp, root), 0);
    assert_int_equal(stat(root, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    assert_int_equal(p->st_mkdir(p->ctx, "conversations"), 0);
    assert_int_equal(p->st_mkdir(p->ctx, "conversations"), 0); /* exists: fine */
    snprintf(path, sizeof(path), "%s/conversations", root);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);

    /* Append, sync, read back, size, truncate. */
    h = p->st_open(p->ctx, "conversations/x.jsonl", MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    assert_true(h >= 0);
    assert_int_equal(p->st_append(p->ctx, h, "hello\n", 6), 6);
    assert_int_equal(p->st_append(p->ctx, h, "world\n", 6), 6);
    assert_int_equal(p->st_sync(p->ctx, h), 0);
    assert_int_equal(p->st_size(p->ctx, h), 12);
    assert_int_equal(p->st_read(p->ctx, h, 6, buf, sizeof(buf)), 6);
    assert_memory_equal(buf, "world\n", 6);
    assert_int_equal(p->st_read(p->ctx, h, 12, buf, sizeof(buf)), 0);
    assert_int_equal(p->st_truncate(p->ctx, h, 6), 0);
    assert_int_equal(p->st_size(p->ctx, h), 6);
    p->st_close(p->ctx, h);
    snprintf(path, sizeof(path), "%s/conversations/x.jsonl", root);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    /* Atomic replace; a failing producer leaves the old content. */
    assert_int_equal(p->st_write_atomic(p->ctx, "history", produce_text, &text), 0);
    assert_int_equal(p->st_write_atomic(p->ctx, "history", produce_fail, NULL), MOTE_ERR_NOSPC);
    h = p->st_open(p->ctx, "history", MOTE_ST_READ);
    assert_true(h >= 0);
    assert_int_equal(p->st_read(p->ctx, h, 0, buf, sizeof(buf)), 14);
    assert_memory_equal(buf, "first version\n", 14);
    p->st_close(p->ctx, h);
    snprintf(path, sizeof(path), "%s/history", root);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);

    /* Listing leaves no temporary file behind. */
    assert_int_equal(p->st_list(p->ctx, "", count_entries, &n), 0);
    assert_int_equal(n, 2); /* conversations/ and history */

    /* Hostile names. */
    assert_int_equal(p->st_open(p->ctx, "../escape", MOTE_ST_APPEND | MOTE_ST_CREATE),
                     MOTE_ERR_INVAL);
    assert_int_equal(p->st_open(p->ctx, "a/../../escape", MOTE_ST_READ), MOTE_ERR_INVAL);
    assert_int_equal(p->st_open(p->ctx, "/etc/passwd", MOTE_ST_READ), MOTE_ERR_INVAL);
    memset(buf, 'a', sizeof(buf));
    {
        char longname[MOTE_STORAGE_NAME_MAX + 8];

        memset(longname, 'n', sizeof(longname));
        longname[sizeof(longname) - 1] = '\0';
        assert_int_equal(p->st_open(p->ctx, longname, MOTE_ST_READ), MOTE_ERR_NAMETOOLONG);
    }
    assert_int_equal(p->st_open(p->ctx, "missing", MOTE_ST_READ), MOTE_ERR_NOENT);
    assert_int_equal(p->st_remove(p->ctx, "history"), 0);
    assert_int_equal(p->st_remove(p->ctx, "history"), MOTE_ERR_NOENT);
}

/* A link planted at a name a temporary file could have (a guessable
 * NAME.tmp.PID) is never written through; the state's files are not
 * opened through links; a loose root is refused. */
static void test_storage_hardening(void **state)
{
    const struct mote_port *p = &pp.port;
    char root[300], path[400], victim[400], buf[64];
    const char *text = "new current\n";
    FILE *f;
    int h;

    (void)state;
    snprintf(root, sizeof(root), "%s/hard", dir);
    assert_int_equal(mote_posix_storage_root(&pp, root), 0);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/current.tmp.%ld", root, (long)getpid());
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(p->st_write_atomic(p->ctx, "current", produce_text, &text), 0);
    f = fopen(victim, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "precious\n");
    unlink(path);
    /* a link in the state is not followed */
    snprintf(path, sizeof(path), "%s/history", root);
    assert_int_equal(symlink(victim, path), 0);
    h = p->st_open(p->ctx, "history", MOTE_ST_APPEND | MOTE_ST_CREATE);
    assert_true(h < 0);
    /* a root others may write to, or not a directory */
    assert_int_equal(chmod(root, 0777), 0);
    assert_int_equal(mote_posix_storage_root(&pp, root), MOTE_ERR_PERM);
    assert_int_equal(chmod(root, 0750), 0);
    assert_int_equal(mote_posix_storage_root(&pp, root), 0);
    assert_int_equal(mote_posix_storage_root(&pp, victim), MOTE_ERR_NOTDIR);
}

/* Anything in the state that is not
 * a regular file - a FIFO, a directory, a link - is refused at once with
 * MOTE_ERR_NOTREG, for reading and for appending; a FIFO is never waited
 * on (opening one for reading blocks until a writer comes: mote hung on
 * `--list` and at start). The FIFO is tried with a peer holding it open
 * (an open then does not block, and must not hand out the FIFO) and
 * without one (an open for reading would block: the alarm ends the test
 * then). */
static void test_storage_refuses_what_is_not_a_file(void **state)
{
    const struct mote_port *p = &pp.port;
    static const unsigned how[] = {MOTE_ST_READ, MOTE_ST_READ | MOTE_ST_APPEND,
                                   MOTE_ST_APPEND | MOTE_ST_CREATE};
    char root[300], path[400];
    unsigned i;
    int h, peer, fl;

    (void)state;
    snprintf(root, sizeof(root), "%s/state", dir);
    assert_int_equal(mote_posix_storage_root(&pp, root), 0);
    assert_int_equal(p->st_mkdir(p->ctx, "conversations"), 0);
    snprintf(path, sizeof(path), "%s/conversations/fifo.jsonl", root);
    assert_int_equal(mkfifo(path, 0600), 0);
    peer = open(path, O_RDWR | O_NONBLOCK); /* a FIFO with both ends open */
    assert_true(peer >= 0);
    for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
        h = p->st_open(p->ctx, "conversations/fifo.jsonl", how[i]);
        if (h >= 0)
            p->st_close(p->ctx, h);
        assert_int_equal(h, MOTE_ERR_NOTREG);
    }
    close(peer);
    alarm(20); /* a blocking open would wait here forever */
    for (i = 0; i < sizeof(how) / sizeof(how[0]); i++)
        assert_int_equal(p->st_open(p->ctx, "conversations/fifo.jsonl", how[i]), MOTE_ERR_NOTREG);
    alarm(0);
    /* a directory, a link (to a regular file), where a file should be */
    snprintf(path, sizeof(path), "%s/history", root);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(p->st_open(p->ctx, "history", MOTE_ST_READ), MOTE_ERR_NOTREG);
    assert_int_equal(p->st_open(p->ctx, "history", MOTE_ST_APPEND | MOTE_ST_CREATE),
                     MOTE_ERR_NOTREG);
    snprintf(path, sizeof(path), "%s/current", root);
    assert_int_equal(symlink("/etc/hostname", path), 0);
    assert_int_equal(p->st_open(p->ctx, "current", MOTE_ST_READ), MOTE_ERR_NOTREG);
    assert_string_equal(mote_strerror(MOTE_ERR_NOTREG), "not a regular file");
    /* a regular file still opens, and blocks as before */
    h = p->st_open(p->ctx, "conversations/x.jsonl", MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    assert_true(h >= 0);
    fl = fcntl(h, F_GETFL);
    assert_true(fl >= 0 && (fl & O_NONBLOCK) == 0);
    assert_int_equal(p->st_append(p->ctx, h, "x\n", 2), 2);
    p->st_close(p->ctx, h);
}

static int produce_once(void *arg, char *buf, size_t cap)
{
    const char **t = arg;
    size_t n = strlen(*t);

    if (n > cap)
        n = cap;
    memcpy(buf, *t, n);
    *t += n;
    return (int)n;
}

static void put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void assert_file(const char *path, const char *text)
{
    char buf[256];
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, text);
}

/* A file replaced by root keeps its
 * owner and group (the service user can still read its config) and its
 * set-user-ID bit stays with that owner, never with root. */
static void test_fs_replace_keeps_the_owner(void **state)
{
    const struct mote_port *p = &pp.port;
    char conf[400], prog[400];
    const char *text;
    struct stat sb;

    (void)state;
    if (geteuid() != 0) {
        skip(); /* only root can make files of another user */
        return;
    }
    snprintf(conf, sizeof(conf), "%s/service.conf", dir);
    snprintf(prog, sizeof(prog), "%s/helper", dir);
    put(conf, "level = info\n", 0600);
    put(prog, "#!/bin/sh\necho v1\n", 0755);
    assert_int_equal(chown(conf, 65534, 65534), 0);
    assert_int_equal(chown(prog, 65534, 65534), 0);
    assert_int_equal(chmod(prog, 04755), 0); /* chown cleared it */
    text = "level = debug\n";
    assert_int_equal(p->fs_replace(p->ctx, conf, produce_once, &text), 0);
    assert_int_equal(stat(conf, &sb), 0);
    assert_int_equal(sb.st_uid, 65534);
    assert_int_equal(sb.st_gid, 65534);
    assert_int_equal(sb.st_mode & 07777, 0600);
    assert_file(conf, "level = debug\n");
    text = "#!/bin/sh\necho v2\n";
    assert_int_equal(p->fs_replace(p->ctx, prog, produce_once, &text), 0);
    assert_int_equal(stat(prog, &sb), 0);
    assert_int_equal(sb.st_uid, 65534);
    assert_int_equal(sb.st_gid, 65534);
    assert_int_equal(sb.st_mode & 07777, 04755); /* setuid, but still nobody's */
}

/* What a child running as uid/gid 65534 (nobody) got from fs_replace on
 * `path`, as its exit status: 0 if rc was `want`. */
static int replace_as_nobody(const char *path, int want)
{
    pid_t pid = fork();
    int st;

    assert_true(pid >= 0);
    if (pid == 0) {
        const char *text = "changed\n";
        const struct mote_port *p = &pp.port;

        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
            setresuid(65534, 65534, 65534) < 0)
            _exit(100);
        _exit(p->fs_replace(p->ctx, path, produce_once, &text) == want ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* What a rename cannot keep
 * is refused before anything is written - a read-only file (even for
 * root), a file the caller may not write (the rename would replace it all
 * the same: the directory is what it checks), a file with other hard
 * links (they would keep the old text) - and where the owner cannot be
 * kept (a user may not give files away), the set-user-ID bit is dropped
 * and the caller is told. */
static void test_fs_replace_refusals(void **state)
{
    const struct mote_port *p = &pp.port;
    char ro[400], linked[400], other[400], sub[300], theirs[400], shared[400];
    const char *text = "changed\n";
    struct stat sb;

    (void)state;
    snprintf(ro, sizeof(ro), "%s/ro.txt", dir);
    put(ro, "locked = 1\n", 0444);
    assert_int_equal(p->fs_replace(p->ctx, ro, produce_once, &text), MOTE_ERR_ACCES);
    assert_file(ro, "locked = 1\n");
    snprintf(linked, sizeof(linked), "%s/hard.txt", dir);
    snprintf(other, sizeof(other), "%s/hard2.txt", dir);
    put(linked, "shared = 1\n", 0644);
    assert_int_equal(link(linked, other), 0);
    text = "changed\n";
    assert_int_equal(p->fs_replace(p->ctx, linked, produce_once, &text), MOTE_ERR_LINKED);
    assert_int_equal(stat(linked, &sb), 0);
    assert_int_equal(sb.st_nlink, 2);
    assert_file(other, "shared = 1\n");
    assert_file(linked, "shared = 1\n");
    /* No temporary file left behind by a refusal. */
    {
        int n = 0;

        assert_int_equal(mote_posix_storage_root(&pp, dir), 0);
        assert_int_equal(p->st_list(p->ctx, "", count_entries, &n), 0);
        assert_int_equal(n, 3);
    }
    if (geteuid() != 0)
        return; /* the rest plays another user */
    /* a directory nobody owns, with a root file nobody may not write, and
     * a group-writable setuid file of another user in nobody's group */
    snprintf(sub, sizeof(sub), "%s/nobody", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(chown(sub, 65534, 65534), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    snprintf(theirs, sizeof(theirs), "%s/root.conf", sub);
    put(theirs, "root's\n", 0644);
    assert_int_equal(replace_as_nobody(theirs, MOTE_ERR_ACCES), 0);
    assert_int_equal(stat(theirs, &sb), 0);
    assert_int_equal(sb.st_uid, 0);
    assert_file(theirs, "root's\n");
    snprintf(shared, sizeof(shared), "%s/shared.sh", sub);
    put(shared, "#!/bin/sh\n", 0775);
    assert_int_equal(chown(shared, 4321, 65534), 0);
    assert_int_equal(chmod(shared, 06775), 0);
    assert_int_equal(replace_as_nobody(shared, MOTE_FS_OWNER_LOST), 0);
    assert_int_equal(stat(shared, &sb), 0);
    assert_int_equal(sb.st_uid, 65534); /* could not be given back */
    assert_int_equal(sb.st_gid, 65534);
    assert_int_equal(sb.st_mode & 07777, 02775); /* no setuid of the wrong user */
    assert_file(shared, "changed\n");
}

/* An offset past what an off_t
 * holds is past the end (0), not "invalid argument". */
static void test_fs_read_huge_offset(void **state)
{
    const struct mote_port *p = &pp.port;
    char path[400], buf[16];
    int h;

    (void)state;
    snprintf(path, sizeof(path), "%s/f.txt", dir);
    put(path, "0123456789\n", 0644);
    h = p->fs_open(p->ctx, path);
    assert_true(h >= 0);
    assert_int_equal(p->fs_read(p->ctx, h, 9223372036854775807ull, buf, sizeof(buf)), 0);
    assert_int_equal(p->fs_read(p->ctx, h, 9223372036854775800ull, buf, sizeof(buf)), 0);
    assert_int_equal(p->fs_read(p->ctx, h, UINT64_MAX, buf, sizeof(buf)), 0);
    assert_int_equal(p->fs_read(p->ctx, h, 5, buf, sizeof(buf)), 6);
    p->fs_close(p->ctx, h);
}

/* At early boot the port's random source must not block the
 * loop: it asks without blocking and falls back (documented) on EAGAIN. */
static void test_random_never_blocks(void **state)
{
    unsigned char a[32], b[32];
    size_t i, zero = 0;

    (void)state;
    blocking_calls = 0;
    pool_not_ready = 1;
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    assert_int_equal(pp.port.random(pp.port.ctx, a, sizeof(a)), 0);
    assert_int_equal(pp.port.random(pp.port.ctx, b, sizeof(b)), 0);
    pool_not_ready = 0;
    assert_int_equal(blocking_calls, 0);
    assert_memory_not_equal(a, b, sizeof(a));
    for (i = 0; i < sizeof(a); i++)
        zero += a[i] == 0;
    assert_true(zero < 8);
}

/* Reads the merged output of child `pid` to its end and reaps it. */
static int output_and_status(int fd, int64_t pid, char *out, size_t cap, int *status)
{
    const struct mote_port *p = &pp.port;
    size_t have = 0;
    int i, n, rc = MOTE_ERR_AGAIN;

    for (i = 0; i < 500; i++) {
        n = p->pipe_read(p->ctx, fd, out + have, cap - 1 - have);
        if (n > 0) {
            have += (size_t)n;
            continue;
        }
        if (n == 0 || n == MOTE_ERR_PIPE)
            break;
        usleep(10000);
    }
    out[have] = '\0';
    for (i = 0; i < 500 && rc == MOTE_ERR_AGAIN; i++) {
        rc = p->proc_reap(p->ctx, pid, status);
        if (rc == MOTE_ERR_AGAIN)
            usleep(10000);
    }
    return rc;
}

/* ---- the file tools in steps ---- */

static struct mote_session tses;
static struct mote_tool_run trun;
static const struct mote_tool *ttool;
static struct mote_port wp;      /* the POSIX port, counting what a step moves */
static size_t step_moved, step_max, steps_taken, one_shot_replaces, commits_again;

static int w_fs_read(void *ctx, int h, uint64_t off, void *buf, size_t len)
{
    int n = pp.port.fs_read(ctx, h, off, buf, len);

    step_moved += n > 0 ? (size_t)n : 0;
    return n;
}

static int w_replace_write(void *ctx, int h, const void *buf, size_t len)
{
    step_moved += len;
    return pp.port.fs_replace_write(ctx, h, buf, len);
}

static int w_replace_commit(void *ctx, int h, int *fd)
{
    int rc = pp.port.fs_replace_commit(ctx, h, fd);

    commits_again += rc == MOTE_ERR_AGAIN;
    return rc;
}

static int w_fs_replace(void *ctx, const char *path, mote_produce_fn produce, void *arg)
{
    one_shot_replaces++;
    return pp.port.fs_replace(ctx, path, produce, arg);
}

static void ev_none(void *arg, const struct mote_event *e)
{
    (void)arg, (void)e;
}

static int tool_task_step(struct mote_loop *l, mote_job_id self, void *task)
{
    int rc;

    step_moved = 0;
    rc = ttool->step(l, self, task);
    steps_taken++;
    if (step_moved > step_max)
        step_max = step_moved;
    return rc;
}

static void tool_task_release(struct mote_loop *l, void *task)
{
    if (ttool->release != NULL)
        ttool->release(l, task);
}

static const struct mote_task_ops tool_task = {"tool", tool_task_step, tool_task_release};

/* Runs built-in tool `which` with `input` on the counting port, cancelled
 * after `cancel_after` steps (0: never), to its end. Returns its job's
 * end state; the result is in trun.out. */
static int run_tool(struct mote_loop *l, unsigned which, const char *input, size_t cancel_after)
{
    struct mote_session_conf sc;
    mote_job_id job;
    int i, st;

    memset(&sc, 0, sizeof(sc));
    sc.on_event = ev_none;
    assert_int_equal(mote_session_init(&tses, l, &sc), 0);
    assert_int_equal(mote_session_add_builtin_tools(&tses, which), 1);
    ttool = tses.tools[0];
    memset(&trun, 0, offsetof(struct mote_tool_run, json));
    trun.used = true;
    trun.tool = ttool;
    trun.session = &tses;
    trun.out = trun.out_buf;
    trun.out_cap = MOTE_TOOL_OUTPUT_MAX;
    trun.timeout_ms = 60000;
    trun.deadline = mote_loop_now(l) + trun.timeout_ms;
    memset(&trun.st, 0, sizeof(trun.st));
    strcpy(trun.in_buf, input);
    trun.input = trun.in_buf;
    trun.input_len = strlen(input);
    assert_true(mote_json_parse(&trun.json, trun.in_buf, trun.input_len) > 0);
    step_max = steps_taken = one_shot_replaces = commits_again = 0;
    assert_int_equal(mote_job_spawn(l, "tool", &tool_task, &trun, NULL, &job), 0);
    for (i = 0; i < 100000 && (mote_job_state(l, job) == MOTE_JOB_RUNNING ||
                               mote_job_state(l, job) == MOTE_JOB_CANCELLING); i++) {
        if (cancel_after > 0 && steps_taken >= cancel_after)
            (void)mote_job_cancel(l, job);
        assert_true(mote_loop_poll(l, 1000) >= 0);
    }
    st = mote_job_state(l, job);
    trun.out[trun.out_len] = '\0';
    mote_session_deinit(&tses);
    return st;
}

/* How many entries of `d` start with `prefix`. */
static int entries(const char *d, const char *prefix)
{
    char cmd[400], line[64];
    FILE *f;
    int n = -1;

    snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c '^%s'", d, prefix);
    f = popen(cmd, "r");
    if (f != NULL && fgets(line, sizeof(line), f) != NULL)
        n = atoi(line);
    if (f != NULL)
        pclose(f);
    return n;
}

/* edit_file on an 8 MiB file works in steps: no step reads or writes
 * more than about MOTE_STEP_FILE_BYTES (the search, then the copy), and
 * the commit's sync and rename are not a step's (the port's helper thread:
 * the first commit call says "not yet"). The result is the edit, the
 * mode kept; a cancel during the search leaves the file unchanged and no
 * temporary file behind. */
static void test_file_tools_work_in_steps(void **state)
{
    struct mote_loop l;
    char path[320], input[600];
    struct stat sb;
    FILE *f;
    size_t i, bound = 2 * (MOTE_STEP_FILE_BYTES + MOTE_TOOL_OUTPUT_MAX);
    char tail[80];

    (void)state;
    wp = pp.port;
    wp.fs_read = w_fs_read;
    wp.fs_replace_write = w_replace_write;
    wp.fs_replace_commit = w_replace_commit;
    wp.fs_replace = w_fs_replace;
    assert_int_equal(mote_loop_init(&l, &wp), 0);
    snprintf(path, sizeof(path), "%s/big.txt", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    for (i = 0; i < 8u * 1024u * 1024u / 64u - 1u; i++)
        fputs("0123456789 0123456789 0123456789 0123456789 0123456789 01234567\n", f);
    fputs("the last line, to change, with some more words to fill it out..\n", f);
    fclose(f);
    assert_int_equal(chmod(path, 0640), 0);
    snprintf(input, sizeof(input),
             "{\"path\":\"%s\",\"old_string\":\"to change\",\"new_string\":\"EDITED\"}", path);
    /* cancelled in its search: unchanged, nothing left */
    assert_int_equal(run_tool(&l, MOTE_TOOL_EDIT_FILE, input, 3), MOTE_JOB_CANCELLED);
    assert_non_null(strstr(trun.out, "the file is unchanged"));
    assert_int_equal(entries(dir, ".mote-"), 0);
    /* to the end */
    assert_int_equal(run_tool(&l, MOTE_TOOL_EDIT_FILE, input, 0), MOTE_JOB_DONE);
    assert_non_null(strstr(trun.out, "edited "));
    assert_non_null(strstr(trun.out, "at line 131072"));
    print_message("edit_file: %zu steps, at most %zu bytes in one\n", steps_taken, step_max);
    assert_true(steps_taken >= 8u * 1024u * 1024u / MOTE_STEP_FILE_BYTES);
    assert_true(step_max <= bound);
    assert_int_equal(one_shot_replaces, 0);
    assert_true(commits_again >= 1);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fseek(f, -61, SEEK_END), 0);
    assert_int_equal(fread(tail, 1, 61, f), 61);
    fclose(f);
    tail[61] = '\0';
    assert_string_equal(tail, "the last line, EDITED, with some more words to fill it out..\n");
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0640);
    assert_int_equal(sb.st_size, 8 * 1024 * 1024 - 3);
    assert_int_equal(entries(dir, ".mote-"), 0);
    /* write_file: the content, committed apart from the step */
    snprintf(input, sizeof(input), "{\"path\":\"%s/new.txt\",\"content\":\"hello\\n\"}", dir);
    assert_int_equal(run_tool(&l, MOTE_TOOL_WRITE_FILE, input, 0), MOTE_JOB_DONE);
    assert_non_null(strstr(trun.out, "wrote 6 bytes to "));
    assert_int_equal(one_shot_replaces, 0);
    assert_true(commits_again >= 1);
    snprintf(path, sizeof(path), "%s/new.txt", dir);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 6);
    mote_loop_deinit(&l);
}

/* The group of child `pid`, asked until the port knows it (proc_group
 * never waits: the supervisor says it a moment after the spawn). */
static int64_t group_of(int64_t pid)
{
    const struct mote_port *p = &pp.port;
    int64_t g = MOTE_ERR_AGAIN;
    struct timespec t0, t;

    /* bounded in time, not in tries: a loaded machine may take seconds
     * to run the child as far as its own group */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        g = p->proc_group(p->ctx, pid);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (g != MOTE_ERR_AGAIN || t.tv_sec - t0.tv_sec > 30)
            return g;
        usleep(1000);
    }
}

/* A held start runs nothing of its program until proc_go: the child
 * waits in its own group (still mote's image: no exec), so the group can
 * be journaled first; a held child that is killed never runs it. */
static void test_held_spawn_runs_only_after_go(void **state)
{
    const struct mote_port *p = &pp.port;
    const char *av[4] = {"sh", "-c", "echo ran", NULL};
    char self[512], exe[512], path[64], out[256], shell[PATH_MAX];
    int64_t pid = 0, g;
    int fds[3], status = -1;
    ssize_t n;

    (void)state;
    assert_true(MOTE_PORT_HAS(p, proc_spawn_held) && MOTE_PORT_HAS(p, proc_go));
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    assert_true(n > 0);
    self[n] = '\0';
    assert_int_equal(p->proc_spawn_held(p->ctx, av, NULL, true, fds, &pid), 0);
    p->pipe_close(p->ctx, fds[0]);
    g = group_of(pid);
    assert_true(g > 1);
    /* the group's leader is still this program (under qemu-user, the
     * emulator running it), not the shell, and has said nothing */
    snprintf(path, sizeof(path), "/proc/%lld/exe", (long long)g);
    n = readlink(path, exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    if (strcmp(exe, self) != 0)
        assert_non_null(strstr(exe, "qemu-"));
    assert_non_null(realpath("/bin/sh", shell));
    assert_string_not_equal(exe, shell);
    assert_int_equal(p->pipe_read(p->ctx, fds[1], out, sizeof(out)), MOTE_ERR_AGAIN);
    assert_int_equal(p->proc_reap(p->ctx, pid, &status), MOTE_ERR_AGAIN);
    assert_int_equal(p->proc_go(p->ctx, pid), 0);
    assert_int_equal(output_and_status(fds[1], pid, out, sizeof(out), &status), 0);
    p->pipe_close(p->ctx, fds[1]);
    assert_int_equal(status, 0);
    assert_string_equal(out, "ran\n");
    assert_int_equal(p->proc_go(p->ctx, pid), MOTE_ERR_NOENT); /* reaped */
    /* killed while held: the program never ran */
    av[2] = "echo ran";
    assert_int_equal(p->proc_spawn_held(p->ctx, av, NULL, true, fds, &pid), 0);
    p->pipe_close(p->ctx, fds[0]);
    assert_true(group_of(pid) > 1);
    assert_int_equal(p->proc_signal(p->ctx, pid, MOTE_PROC_KILL), 0);
    assert_int_equal(output_and_status(fds[1], pid, out, sizeof(out), &status), 0);
    p->pipe_close(p->ctx, fds[1]);
    assert_string_equal(out, "");
    assert_true(status != 0);
}

/* Writes program `name` in the test's directory (to `path`): a script
 * whose interpreter is not there, so only its exec finds it unrunnable. */
static const char *bad_interp(char *path, size_t cap, const char *name)
{
    int fd;

    snprintf(path, cap, "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "#!/nonexistent/interp\n", 22), 22);
    close(fd);
    return path;
}

/* The spawn does not wait for the child's exec: a program that is not
 * there is said at once (a look in PATH), one that only its exec finds
 * unrunnable says why on its output and exits 127, its group known. */
static void test_spawn_without_waiting_for_the_exec(void **state)
{
    const struct mote_port *p = &pp.port;
    const char *argv[2] = {NULL, NULL};
    char path[320], out[512];
    int64_t pid = 0;
    int fds[3], status = 0;

    (void)state;
    argv[0] = "/nonexistent/program";
    assert_int_equal(p->proc_spawn(p->ctx, argv, NULL, true, fds, &pid), MOTE_ERR_NOENT);
    argv[0] = "mote-no-such-program-in-path";
    assert_int_equal(p->proc_spawn(p->ctx, argv, NULL, true, fds, &pid), MOTE_ERR_NOENT);
    /* found, but its interpreter is not: only the exec can tell */
    argv[0] = bad_interp(path, sizeof(path), "badinterp");
    assert_int_equal(p->proc_spawn(p->ctx, argv, NULL, true, fds, &pid), 0);
    p->pipe_close(p->ctx, fds[0]);
    assert_true(group_of(pid) > 1);
    assert_int_equal(output_and_status(fds[1], pid, out, sizeof(out), &status), 0);
    p->pipe_close(p->ctx, fds[1]);
    assert_int_equal(status, 127);
    assert_non_null(strstr(out, "mote: cannot run "));
    assert_non_null(strstr(out, "badinterp: not found"));
    /* and one that runs: its output, its status */
    {
        const char *av[4] = {"sh", "-c", "echo ran; exit 3", NULL};

        assert_int_equal(p->proc_spawn(p->ctx, av, NULL, true, fds, &pid), 0);
    }
    p->pipe_close(p->ctx, fds[0]);
    assert_true(group_of(pid) > 1);
    assert_int_equal(output_and_status(fds[1], pid, out, sizeof(out), &status), 0);
    p->pipe_close(p->ctx, fds[1]);
    assert_int_equal(status, 3);
    assert_string_equal(out, "ran\n");
}

/* A program only its exec finds unrunnable: its failure (said on the ready
 * pipe by the child) may come before the supervisor says the group; the
 * group is known all the same, every time. */
static void test_exec_failure_never_hides_the_group(void **state)
{
    const struct mote_port *p = &pp.port;
    const char *argv[2] = {NULL, NULL};
    char path[320], out[512];
    int64_t pid = 0;
    int fds[3], status = 0, i;

    (void)state;
    argv[0] = bad_interp(path, sizeof(path), "badinterp2");
    for (i = 0; i < 500; i++) {
        assert_int_equal(p->proc_spawn(p->ctx, argv, NULL, true, fds, &pid), 0);
        p->pipe_close(p->ctx, fds[0]);
        assert_true(group_of(pid) > 1);
        assert_int_equal(output_and_status(fds[1], pid, out, sizeof(out), &status), 0);
        p->pipe_close(p->ctx, fds[1]);
        assert_int_equal(status, 127);
    }
}

/* Secrets never come from the fallback: before the pool is ready the
 * port says so (a descriptor to wait on, nothing written), and never
 * blocks; once it is, the bytes are getrandom's. */
static void test_random_secret_waits_for_the_pool(void **state)
{
    unsigned char a[32], zero[32];
    int fd = 7;

    (void)state;
    memset(zero, 0, sizeof(zero));
    memset(a, 0xAA, sizeof(a));
    blocking_calls = 0;
    pool_not_ready = 1;
    assert_int_equal(pp.port.random_secret(pp.port.ctx, a, sizeof(a), &fd), MOTE_ERR_AGAIN);
    assert_memory_equal(a, zero, sizeof(a));
    assert_true(fd >= 0); /* /dev/random, readable once the pool is */
    pool_not_ready = 0;
    assert_int_equal(blocking_calls, 0);
    assert_int_equal(pp.port.random_secret(pp.port.ctx, a, sizeof(a), &fd), 0);
    assert_int_equal(fd, -1);
    assert_memory_not_equal(a, zero, sizeof(a));
}

/* Out of descriptors is said for what it is. */
static void test_err_mfile(void **state)
{
    (void)state;
    assert_int_equal(mote_posix_err(EMFILE), MOTE_ERR_MFILE);
    assert_int_equal(mote_posix_err(ENFILE), MOTE_ERR_MFILE);
    assert_string_equal(mote_strerror(MOTE_ERR_MFILE), "too many open files");
}

/* A program built with other MOTE_* values (its struct mote_posix of
 * another size) is refused before the port writes into its struct. */
static void test_init_refuses_other_config(void **state)
{
    static struct mote_posix other;

    (void)state;
    memset(&other, 0x5a, sizeof(other));
    assert_int_equal(mote_posix_init_checked(&other, MOTE_CONFIG_SIGNATURE ^ 1ul),
                     MOTE_ERR_CONFIG);
    assert_int_equal(((unsigned char *)&other)[0], 0x5a);
    assert_int_equal(((unsigned char *)&other)[sizeof(other) - 1], 0x5a);
}

/* A token's file others may read is refused. */
static void test_private_file(void **state)
{
    char path[400], link[400];
    FILE *f;

    (void)state;
    snprintf(path, sizeof(path), "%s/secret", dir);
    assert_int_equal(mote_posix_private_file(path), 0); /* missing: fine */
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(mote_posix_private_file(path), 0);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(mote_posix_private_file(path), MOTE_ERR_PERM);
    assert_int_equal(chmod(path, 0620), 0);
    assert_int_equal(mote_posix_private_file(path), MOTE_ERR_PERM);
    assert_int_equal(chmod(path, 0600), 0);
    snprintf(link, sizeof(link), "%s/secret.link", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(mote_posix_private_file(link), MOTE_ERR_NOTREG);
    assert_int_equal(mote_posix_private_file(dir), MOTE_ERR_NOTREG);
}

/* NOTIFY_SOCKET is taken out of the environment,
 * and the message still reaches the socket. */
static void test_notify_taken(void **state)
{
    struct mote_posix_notify n;
    char path[400], buf[64];
    struct sockaddr_un sa;
    int fd;
    ssize_t got;

    (void)state;
    unsetenv("NOTIFY_SOCKET");
    assert_false(mote_posix_notify_take(&n));
    assert_int_equal(mote_posix_notify(&n, "READY=1"), 0); /* none: nothing */
    snprintf(path, sizeof(path), "%s/notify", dir);
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    assert_true(strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(setenv("NOTIFY_SOCKET", path, 1), 0);
    assert_true(mote_posix_notify_take(&n));
    assert_null(getenv("NOTIFY_SOCKET"));
    assert_int_equal(mote_posix_notify(&n, "READY=1"), 0);
    got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    assert_int_equal(got, 7);
    assert_memory_equal(buf, "READY=1", 7);
    close(fd);
    /* not a path nor an abstract name: ignored, and taken out too */
    assert_int_equal(setenv("NOTIFY_SOCKET", "relative", 1), 0);
    assert_false(mote_posix_notify_take(&n));
    assert_null(getenv("NOTIFY_SOCKET"));
}

static int count_fs(void *arg, const char *name, unsigned type)
{
    (void)name, (void)type;
    (*(int *)arg)++;
    return 0;
}

/* The file tools' paths: links followed by the port itself, relative ones
 * from their own directory, through directories, with a loop refused;
 * "file/" is no directory. */
static void test_fs_paths_follow_links(void **state)
{
    const struct mote_port *p = &pp.port;
    char real[700], sub[400], a[600], b[700], via[600], lp[600], path[800];
    const char *text = "new\n";
    struct mote_fs_stat st;
    int n = 0, fd;

    (void)state;
    snprintf(sub, sizeof(sub), "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(real, sizeof(real), "%s/real.txt", sub);
    put(real, "old\n", 0644);
    snprintf(a, sizeof(a), "%s/a", dir);
    assert_int_equal(symlink("sub/real.txt", a), 0);           /* relative to dir */
    snprintf(b, sizeof(b), "%s/b", sub);
    assert_int_equal(symlink("../a", b), 0);                   /* a link to a link */
    snprintf(via, sizeof(via), "%s/via", dir);
    assert_int_equal(symlink(sub, via), 0);                    /* a directory on the way */
    snprintf(path, sizeof(path), "%s/b", via);
    assert_int_equal(p->fs_replace(p->ctx, path, produce_once, (text = "new\n", &text)), 0);
    assert_file(real, "new\n");
    assert_true(lstat(b, &(struct stat){0}) == 0);
    assert_int_equal(p->fs_stat(p->ctx, path, &st), 0);
    assert_int_equal(st.type, MOTE_FS_FILE);
    assert_int_equal(st.size, 4);
    fd = p->fs_open(p->ctx, a);
    assert_true(fd >= 0);
    p->fs_close(p->ctx, fd);
    assert_int_equal(p->fs_list(p->ctx, via, count_fs, &n), 0);
    assert_int_equal(n, 2);
    snprintf(path, sizeof(path), "%s/", real);
    assert_int_equal(p->fs_replace(p->ctx, path, produce_once, (text = "new\n", &text)), MOTE_ERR_NOTDIR);
    snprintf(path, sizeof(path), "%s/", sub);
    assert_int_equal(p->fs_replace(p->ctx, path, produce_once, (text = "new\n", &text)), MOTE_ERR_ISDIR);
    snprintf(lp, sizeof(lp), "%s/loop", dir);
    assert_int_equal(symlink("loop", lp), 0);
    assert_int_equal(p->fs_replace(p->ctx, lp, produce_once, &text), MOTE_ERR_INVAL);
    assert_int_equal(p->fs_open(p->ctx, lp), MOTE_ERR_INVAL);
    /* a new file through a dangling link of one's own: created at its target */
    snprintf(path, sizeof(path), "%s/dangling", dir);
    assert_int_equal(symlink("sub/made.txt", path), 0);
    assert_int_equal(p->fs_replace(p->ctx, path, produce_once, (text = "new\n", &text)), 0);
    snprintf(path, sizeof(path), "%s/made.txt", sub);
    assert_file(path, "new\n");
}

/* The kernel's protected_symlinks rule, kept by the port whatever the
 * system's setting: another user's link in a sticky directory anyone may
 * write is not followed (not to read, write, list or look), a link of the
 * directory's owner or of the caller is. */
static void test_fs_sticky_links(void **state)
{
    const struct mote_port *p = &pp.port;
    char pub[600], victim[600], planted[700], mine[700], gone[600], path[700];
    const char *text;
    struct mote_fs_stat st;
    int n = 0, fd;

    (void)state;
    if (geteuid() != 0) {
        skip(); /* only root can plant a link of another user */
        return;
    }
    snprintf(pub, sizeof(pub), "%s/pub", dir);
    assert_int_equal(mkdir(pub, 0755), 0);
    assert_int_equal(chmod(pub, 01777), 0);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    put(victim, "ORIGINAL\n", 0644);
    snprintf(planted, sizeof(planted), "%s/planted", pub);
    assert_int_equal(symlink(victim, planted), 0);
    assert_int_equal(lchown(planted, 65534, 65534), 0);
    assert_int_equal(p->fs_replace(p->ctx, planted, produce_once, (text = "PWNED\n", &text)), MOTE_ERR_ACCES);
    assert_file(victim, "ORIGINAL\n");
    assert_int_equal(p->fs_open(p->ctx, planted), MOTE_ERR_ACCES);
    assert_int_equal(p->fs_stat(p->ctx, planted, &st), MOTE_ERR_ACCES);
    /* ... nor as a directory on the way */
    snprintf(path, sizeof(path), "%s/dirlink", pub);
    assert_int_equal(symlink(dir, path), 0);
    assert_int_equal(lchown(path, 65534, 65534), 0);
    snprintf(path, sizeof(path), "%s/dirlink/victim", pub);
    assert_int_equal(p->fs_replace(p->ctx, path, produce_once, (text = "new\n", &text)), MOTE_ERR_ACCES);
    snprintf(path, sizeof(path), "%s/dirlink", pub);
    assert_int_equal(p->fs_list(p->ctx, path, count_fs, &n), MOTE_ERR_ACCES);
    assert_file(victim, "ORIGINAL\n");
    /* dangling: nothing is created at its target */
    snprintf(gone, sizeof(gone), "%s/gone", dir);
    snprintf(path, sizeof(path), "%s/dangling", pub);
    assert_int_equal(symlink(gone, path), 0);
    assert_int_equal(lchown(path, 65534, 65534), 0);
    assert_int_equal(p->fs_replace(p->ctx, path, produce_once, (text = "new\n", &text)), MOTE_ERR_ACCES);
    assert_int_equal(access(gone, F_OK), -1);
    /* the caller's own link is followed */
    snprintf(mine, sizeof(mine), "%s/mine", pub);
    assert_int_equal(symlink(victim, mine), 0);
    fd = p->fs_open(p->ctx, mine);
    assert_true(fd >= 0);
    p->fs_close(p->ctx, fd);
    /* outside a sticky directory, another user's link is followed */
    assert_int_equal(chmod(pub, 0777), 0);
    fd = p->fs_open(p->ctx, planted);
    assert_true(fd >= 0);
    p->fs_close(p->ctx, fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_real_signal_wakes_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_refuses_other_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_during_step_not_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock_monotonic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_never_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_secret_waits_for_the_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storage_hardening, setup, teardown),
        cmocka_unit_test_setup_teardown(test_err_mfile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_notify_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_storage_refuses_what_is_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_replace_keeps_the_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_replace_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_read_huge_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_without_waiting_for_the_exec, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_failure_never_hides_the_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_spawn_runs_only_after_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_tools_work_in_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_paths_follow_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fs_sticky_links, setup, teardown),
    };

    return cmocka_run_group_tests_name("posix", tests, NULL, NULL);
}
