/*
 * tools.c - the built-in tools, over the port: shell (the process group),
 * read_file, write_file, edit_file and list_dir (the file-system group),
 * each a registry tool (struct mote_tool) the embedder adds with
 * mote_session_add_builtin_tools.
 */
#include <string.h>

#include "agent_int.h"

/* Unescapes string member `key` in place, inside the input's own text
 * (an unescaped string is never longer than its escaped form), so a long
 * command needs no buffer of its own. The input's text is changed: read
 * everything else first. Returns the NUL-terminated string, or NULL (also
 * for one holding a NUL, \u0000: as a C string it would end there, and
 * what ran would be less than what was asked and shown). */
static const char *arg_in_place_n(struct mote_tool_run *run, const char *key, size_t *out_len)
{
    int t = mote_json_member(&run->json, 0, key), n;
    size_t len;
    char *p;

    if (mote_json_type_of(&run->json, t) != MOTE_JSON_STRING)
        return NULL;
    p = run->in_buf + run->json.tok[t].start;
    len = (size_t)(run->json.tok[t].end - run->json.tok[t].start);
    if (!mote_utf8_valid(p, len))
        return NULL; /* inputs are journaled re-encoded: this does not happen */
    n = mote_json_unescape(p, len, p, len + 1u);
    if (n < 0 || memchr(p, '\0', (size_t)n) != NULL)
        return NULL;
    p[n] = '\0';
    if (out_len != NULL)
        *out_len = (size_t)n;
    return p;
}

static const char *arg_in_place(struct mote_tool_run *run, const char *key)
{
    return arg_in_place_n(run, key, NULL);
}

/* Output from outside, made readable: control bytes other than newline and
 * tab become '?'. */
static void clean(char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];

        if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f)
            s[i] = '?';
    }
}

static void say_err(struct mote_tool_run *run, const char *what, const char *path, int rc)
{
    mote_tool_outs(run, what);
    mote_tool_outs(run, path);
    mote_tool_outs(run, ": ");
    mote_tool_outs(run, mote_strerror(rc));
    run->is_error = true;
}

/* ---- shell -------------------------------------------------------------- */

/* What the shell tool keeps while it runs, in the run's st.builtin. */
struct mote_shell_state {
    int64_t pid;
    int out_fd;
    bool started, exited, killed, timed_out, eof;
    bool held;     /* started with proc_spawn_held: it runs once recorded */
    bool recorded; /* its tool_start is durable (and a held one let go) */
    int status;
    mote_watch_id watch;
    mote_timer_id timer;
};

/* Whether port `p` can hold a start until it is journaled. */
static bool can_hold(const struct mote_port *p)
{
    return MOTE_PORT_HAS(p, proc_spawn_held) && MOTE_PORT_HAS(p, proc_go);
}

_Static_assert(sizeof(struct mote_shell_state) <= sizeof(((struct mote_tool_run *)0)->st.builtin),
               "the shell tool's state does not fit mote_tool_run's st.builtin");

static struct mote_shell_state *shell_state(struct mote_tool_run *run)
{
    return (struct mote_shell_state *)(void *)run->st.builtin;
}

static int shell_start(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_shell_state *t = shell_state(run);
    const char *argv[4] = {"/bin/sh", "-c", NULL, NULL};
    int fds[3], rc;

    t->started = true;
    t->out_fd = -1;
    run->out_keep_end = true; /* errors are usually at the end of a long output */
    argv[2] = arg_in_place(run, "command");
    if (argv[2] == NULL) {
        mote_tool_outs(run, "shell needs {\"command\": \"...\"}");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    /* Held where the port can: nothing of the command runs before its
     * group is journaled (shell_record). */
    t->held = can_hold(p);
    rc = t->held ? p->proc_spawn_held(p->ctx, argv, run->session->conf.tool_env, true, fds, &t->pid)
                 : p->proc_spawn(p->ctx, argv, run->session->conf.tool_env, true, fds, &t->pid);
    if (rc < 0) {
        mote_tool_outs(run, "cannot run the command: ");
        mote_tool_outs(run, mote_strerror(rc));
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    p->pipe_close(p->ctx, fds[0]); /* no input */
    t->out_fd = fds[1];
    (void)self;
    return MOTE_STEP_PENDING;
}

/* The call's tool_start, with the process group for the recovery of a
 * crash while it runs, then a held command is let go. The port learns
 * the group from the supervisor a moment after the spawn: until then
 * this asks again on each step. Returns true once done (or when it can
 * no longer be: the command is killed). */
static bool shell_record(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_shell_state *t = shell_state(run);
    int rc = mote_tool_started_process(run, t->pid);

    if (rc == MOTE_ERR_AGAIN)
        return false;
    if (rc < 0) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL); /* held: it never runs */
        t->killed = true;
        mote_tool_fail(loop, self, "cannot journal the tool's process group");
        return true;
    }
    t->recorded = true;
    if (t->held && p->proc_go(p->ctx, t->pid) < 0) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL);
        t->killed = true;
    }
    return true;
}

static int shell_step(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_shell_state *t = shell_state(run);
    char buf[4096];
    size_t moved = 0; /* bytes read in this step */
    bool more = false;
    int rc;

    if (!t->started) {
        rc = shell_start(loop, self, run);
        if (rc != MOTE_STEP_PENDING)
            return rc;
    }
    if (!t->recorded && !t->killed && !mote_job_cancelled(loop, self) &&
        !mote_tool_timed_out(loop, run) && !shell_record(loop, self, run)) {
        /* the group is not known yet: soon again (nothing runs meanwhile) */
        if (t->timer != 0)
            (void)mote_timer_stop(loop, t->timer);
        t->timer = 0;
        if (mote_timer_start(loop, 1, NULL, NULL, self, &t->timer) < 0)
            return MOTE_ERR_FULL;
        return MOTE_STEP_PENDING;
    }
    if (mote_job_cancelled(loop, self) && !t->killed) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL); /* the whole group */
        t->killed = true;
    }
    if (!t->killed && !t->exited && mote_tool_timed_out(loop, run)) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL);
        t->killed = t->timed_out = true;
    }
    /* What there is to read, MOTE_STEP_IO_BYTES at most per step: a
     * command that floods its output cannot keep the loop from signals,
     * cancels and other jobs. */
    while (!t->eof) {
        int n;

        if (moved >= MOTE_STEP_IO_BYTES) {
            more = true;
            break;
        }
        n = p->pipe_read(p->ctx, t->out_fd, buf,
                         MOTE_STEP_IO_BYTES - moved < sizeof(buf) ? MOTE_STEP_IO_BYTES - moved
                                                                   : sizeof(buf));
        if (n > 0) {
            clean(buf, (size_t)n);
            mote_tool_out(run, buf, (size_t)n);
            moved += (size_t)n;
            continue;
        }
        if (n == 0 || n != MOTE_ERR_AGAIN)
            t->eof = true;
        break;
    }
    if (!t->exited) {
        /* The supervisor ends the group when the command exits: nothing
         * is signalled after this (the pid may belong to another). */
        rc = p->proc_reap(p->ctx, t->pid, &t->status);
        if (rc == 0 || (rc < 0 && rc != MOTE_ERR_AGAIN)) {
            t->exited = true;
            if (rc < 0)
                t->status = -1;
        }
    }
    if (t->exited && (t->eof || t->killed)) {
        if (t->out_fd >= 0)
            p->pipe_close(p->ctx, t->out_fd);
        t->out_fd = -1;
        if (mote_job_cancelled(loop, self))
            return MOTE_STEP_CANCELLED; /* the agent says why (a cancel, a shutdown) */
        if (t->timed_out) {
            mote_tool_note(run, "[timed out after ", run->timeout_ms, " ms: the command was killed]");
        } else {
            char b[48];
            struct mote_sb sb;

            mote_sb_init(&sb, b, sizeof(b));
            mote_sb_s(&sb, "[exit status ");
            mote_sb_i(&sb, t->status);
            mote_sb_s(&sb, run->out_dropped > 0 ? ", output cut]" : "]");
            mote_tool_note(run, b, 0, NULL);
        }
        run->is_error = t->timed_out || t->status != 0;
        return MOTE_STEP_DONE;
    }
    /* Wake on output, and every 50 ms for the exit and the deadline. */
    if (t->eof && t->watch != 0) {
        (void)mote_watch_remove(loop, t->watch);
        t->watch = 0;
    }
    if (t->out_fd >= 0 && !t->eof && t->watch == 0 &&
        mote_watch_add(loop, t->out_fd, MOTE_POLL_IN, NULL, NULL, self, &t->watch) < 0)
        return MOTE_ERR_FULL;
    if (t->timer != 0)
        (void)mote_timer_stop(loop, t->timer);
    t->timer = 0;
    if (more) {
        (void)mote_job_wake(loop, self); /* more to read: next turn */
        return MOTE_STEP_PENDING;
    }
    /* Soon once it was killed or its output ended (the exit is close). */
    if (mote_timer_start(loop, t->killed || t->eof ? 2 : 50, NULL, NULL, self, &t->timer) < 0)
        return MOTE_ERR_FULL;
    return MOTE_STEP_PENDING;
}

static void shell_release(struct mote_loop *loop, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_shell_state *t = shell_state(run);

    /* Never waits: a command still running (only when the loop is torn
     * down with the job active: a cancelled job ends once the command's
     * exit is reaped) is killed; its supervisor ends the group and exits,
     * and is reaped by whoever reaps the process's children next (it is
     * not waited for here). */
    if (t->started && !t->exited && t->pid != 0)
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL);
    if (t->out_fd >= 0)
        p->pipe_close(p->ctx, t->out_fd);
    t->out_fd = -1;
}

/* ---- read_file ------------------------------------------------------------ */

/* Integer member `key` of the input: `def` when absent, < 0 when it is
 * there but not a whole number >= 0. */
static int64_t arg_count(const struct mote_tool_run *run, const char *key, int64_t def)
{
    int t = mote_json_member(&run->json, 0, key);
    int64_t v;

    if (t < 0 || (mote_json_type_of(&run->json, t) == MOTE_JSON_PRIMITIVE &&
                  run->json.text[run->json.tok[t].start] == 'n'))
        return def; /* absent, or null */
    if (mote_json_int(&run->json, t, &v) < 0 || v < 0)
        return -1;
    return v;
}

/* How many bytes at the end of s[0..n) are an unfinished UTF-8 character
 * (its lead byte and fewer continuation bytes than it announces): 0 when
 * it ends on a character boundary, or when the bytes are not UTF-8. */
static size_t utf8_cut(const char *s, size_t n)
{
    size_t back;

    for (back = 1; back <= 3 && back <= n; back++) {
        unsigned char b = (unsigned char)s[n - back];
        size_t len;

        if ((b & 0xC0u) == 0x80u)
            continue; /* a continuation byte: its lead is further back */
        len = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
        return len > back ? back : 0;
    }
    return 0;
}

static int read_file_step(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_fs_stat st;
    const char *path;
    char buf[4096];
    int64_t from = arg_count(run, "offset", 0), want = arg_count(run, "length", -2);
    uint64_t off, end, size;
    bool eof = false, more = false, empty;
    char b[200];
    struct mote_sb sb;
    int h, n = 0;

    (void)self;
    path = arg_in_place(run, "path");
    if (path == NULL || from < 0 || want == -1) {
        mote_tool_outs(run, "read_file needs {\"path\": \"...\"} and, if given, a whole number "
                            ">= 0 for \"offset\" and \"length\"");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    h = p->fs_open(p->ctx, path);
    if (h < 0) {
        say_err(run, h == MOTE_ERR_INVAL ? "not a regular file: " : "cannot open ", path,
                h);
        return MOTE_STEP_DONE;
    }
    /* The size stat gives is only a hint: reading goes on to the real end
     * (a file growing meanwhile; /proc and /sys, where it is 0). */
    size = MOTE_PORT_HAS(p, fs_stat) && p->fs_stat(p->ctx, path, &st) == 0 ? st.size : 0;
    off = (uint64_t)from;
    end = want < 0 || (uint64_t)want > UINT64_MAX - off ? UINT64_MAX : off + (uint64_t)want;
    /* Never more than fits: what is read is shown, so the end said is
     * the real one. */
    while (off < end && run->out_len < run->out_cap) {
        size_t ask = sizeof(buf);

        if (ask > end - off)
            ask = (size_t)(end - off);
        if (ask > run->out_cap - run->out_len)
            ask = run->out_cap - run->out_len;
        n = p->fs_read(p->ctx, h, off, buf, ask);
        if (n <= 0) {
            eof = n == 0;
            break;
        }
        clean(buf, (size_t)n);
        mote_tool_out(run, buf, (size_t)n);
        off += (uint64_t)n;
    }
    if (n >= 0 && !eof && off > (uint64_t)from) {
        /* Stopped by the cap or the length: end on a whole character
         * (the next read starts with it), and find out whether the file
         * goes on (its size may be unknown). */
        size_t cut = utf8_cut(run->out, run->out_len);

        if (cut > 0 && cut < run->out_len) {
            run->out_len -= cut;
            off -= cut;
            more = true;
        } else {
            char probe;

            n = p->fs_read(p->ctx, h, off, &probe, 1);
            eof = n == 0;
            more = n > 0;
            n = 0; /* (a failing probe only leaves it unknown) */
        }
    }
    /* Nothing at a later offset of what stat calls empty: empty indeed,
     * or a file of unknown size (/proc)? Its start tells. */
    empty = n >= 0 && eof && off == (uint64_t)from && from > 0 && size == 0 &&
            p->fs_read(p->ctx, h, 0, buf, 1) == 0;
    p->fs_close(p->ctx, h);
    if (n < 0) {
        run->out_len = 0;
        run->out_dropped = 0;
        say_err(run, "cannot read ", path, n);
        return MOTE_STEP_DONE;
    }
    mote_sb_init(&sb, b, sizeof(b));
    if (off == (uint64_t)from && eof) {
        /* Nothing there: the end, or past it. */
        if (from == 0) {
            mote_tool_note(run, "[empty file]", 0, NULL);
            return MOTE_STEP_DONE;
        }
        if (size == (uint64_t)from) {
            mote_sb_s(&sb, "[offset ");
            mote_sb_u(&sb, (uint64_t)from);
            mote_sb_s(&sb, " is the end of the file (");
            mote_sb_u(&sb, size);
            mote_sb_s(&sb, " bytes): nothing more to read]");
        } else if (empty) {
            mote_sb_s(&sb, "[offset past the end: the file is empty]");
        } else if (size != 0 && size < (uint64_t)from) {
            mote_sb_s(&sb, "[offset past the end: the file has ");
            mote_sb_u(&sb, size);
            mote_sb_s(&sb, " bytes]");
        } else {
            /* its size unknown (0 from stat) or changing */
            mote_sb_s(&sb, "[nothing at offset ");
            mote_sb_u(&sb, (uint64_t)from);
            mote_sb_s(&sb, ": it is at or past the end of the file]");
        }
        mote_tool_note(run, b, 0, NULL);
        return MOTE_STEP_DONE;
    }
    if (eof && from == 0)
        return MOTE_STEP_DONE; /* the whole file */
    /* Part of the file: say which part, of how much, and how to read on. */
    mote_sb_s(&sb, "[bytes ");
    mote_sb_u(&sb, (uint64_t)from);
    mote_sb_s(&sb, "-");
    mote_sb_u(&sb, off);
    if (eof) {
        mote_sb_s(&sb, " of ");
        mote_sb_u(&sb, off); /* the end was reached: that is the size */
    } else if (size > off) {
        mote_sb_s(&sb, " of ");
        mote_sb_u(&sb, size);
    } else {
        /* More than stat said (0 on /proc and /sys): the size is unknown. */
        mote_sb_s(&sb, " of a file whose size is not known");
        if (more)
            mote_sb_s(&sb, " (more follows)");
    }
    if (!eof) {
        mote_sb_s(&sb, "; read on with offset ");
        mote_sb_u(&sb, off);
    }
    mote_sb_s(&sb, "]");
    mote_tool_note(run, b, 0, NULL);
    return MOTE_STEP_DONE;
}

/* ---- write_file ------------------------------------------------------------ */

/* A mode as ls's octal ("0644"). */
static void sb_mode(struct mote_sb *sb, uint32_t mode)
{
    char o[6];
    int i;

    o[0] = '0';
    for (i = 0; i < 4; i++)
        o[1 + i] = (char)('0' + ((mode >> (3 * (3 - i))) & 7u));
    o[5] = '\0';
    mote_sb_s(sb, mode > 07777 ? "?" : (mode & 07000) != 0 ? o : o + 1);
}

/* Why fs_replace did not replace `path` (rc < 0): the file is unchanged. */
static void say_not_replaced(struct mote_tool_run *run, const struct mote_port *p,
                             const char *path, int rc)
{
    struct mote_fs_stat st;
    char b[80];
    struct mote_sb sb;

    if (rc == MOTE_ERR_INVAL) {
        say_err(run, "refused: not a regular file: ", path, rc);
        return;
    }
    if (rc == MOTE_ERR_ACCES && p->fs_stat(p->ctx, path, &st) == 0 && st.type == MOTE_FS_FILE) {
        mote_sb_init(&sb, b, sizeof(b));
        mote_sb_s(&sb, " is not writable (mode ");
        sb_mode(&sb, st.mode);
        mote_tool_outs(run, "refused: ");
        mote_tool_outs(run, path);
        mote_tool_out(run, b, sb.len);
        mote_tool_outs(run, (st.mode & 0222u) == 0
                                ? "; read-only: an editor would not write it either). Only if "
                                  "it is meant to change, make it writable first (chmod u+w) "
                                  "and ask the user; the file is unchanged"
                                : ", and mote's user may not write it); the file is unchanged");
        run->is_error = true;
        return;
    }
    if (rc == MOTE_ERR_LINKED) {
        mote_tool_outs(run, "refused: ");
        mote_tool_outs(run, path);
        mote_tool_outs(run, " has other hard links: replacing it would leave them with the old "
                            "text; the file is unchanged (to change the text under every "
                            "name, write through them with shell)");
        run->is_error = true;
        return;
    }
    say_err(run, "cannot write (the file is unchanged) ", path, rc);
}

/* After a replacement: what was not kept. */
static void say_replaced(struct mote_tool_run *run, int rc)
{
    if (rc == MOTE_FS_OWNER_LOST)
        mote_tool_outs(run, "; note: its owner or group could not be kept (mote's user may not "
                            "give files away): it now belongs to mote's user, and a "
                            "setuid/setgid bit, if any, was dropped");
}

/* ---- write_file and edit_file: a replacement in steps -------------------- */

/* Where a file tool's run is. */
enum file_phase {
    FILE_START = 0, /* the first step: the arguments, the checks */
    FILE_SEARCH,    /* edit_file: the old file read through, old_string counted */
    FILE_COPY,      /* the new content written into the replacement */
    FILE_COMMIT,    /* the replacement's sync and rename, apart from the loop */
};

/* What write_file and edit_file keep between steps, in the run's
 * st.builtin. Strings are offsets into run->in_buf (unescaped there by
 * the first step); edit_file's search window is run->out_buf, whose
 * carried bytes stay between steps (the result is written after). */
struct mote_file_state {
    bool live;            /* the first step ran: the handles below mean something */
    uint8_t phase;        /* enum file_phase */
    bool crlf;            /* a line of the old file ends in CR LF */
    char last;            /* the byte before the window's new ones */
    int h;                /* edit_file: the old file (-1: none) */
    int rh;               /* the replacement (-1: none) */
    int count;            /* edit_file: places old_string occurs */
    uint32_t path, old, old_len, with, with_len; /* in run->in_buf */
    uint32_t have;        /* search: bytes carried in the window */
    mote_watch_id watch;  /* commit: its descriptor */
    mote_timer_id timer;
    uint64_t base;        /* search: the file offset of the window's first byte */
    uint64_t lines;       /* search: newlines before `base` */
    uint64_t at, line;    /* the match: its offset and line */
    uint64_t pos;         /* copy: bytes of the new content written */
};

_Static_assert(sizeof(struct mote_file_state) <= sizeof(((struct mote_tool_run *)0)->st.builtin),
               "the file tools' state does not fit mote_tool_run's st.builtin");

static struct mote_file_state *file_state(struct mote_tool_run *run)
{
    return (struct mote_file_state *)(void *)run->st.builtin;
}

static const char *in_str(const struct mote_tool_run *run, uint32_t off)
{
    return run->in_buf + off;
}

/* Whether port `p` replaces a file in steps (else fs_replace, at once). */
static bool steps_replace(const struct mote_port *p)
{
    return MOTE_PORT_HAS(p, fs_replace_begin) && MOTE_PORT_HAS(p, fs_replace_write) &&
           MOTE_PORT_HAS(p, fs_replace_commit) && MOTE_PORT_HAS(p, fs_replace_end);
}

/* Lets go of what the run holds: the replacement (an uncommitted one is
 * abandoned, the file unchanged; a commit under way ends on its own),
 * the old file, the watch and the timer. */
static void file_release(struct mote_loop *loop, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_file_state *f = file_state(run);

    if (!f->live)
        return; /* (the job ended before its first step) */
    if (f->watch != 0)
        (void)mote_watch_remove(loop, f->watch);
    if (f->timer != 0)
        (void)mote_timer_stop(loop, f->timer);
    f->watch = f->timer = 0;
    if (f->rh >= 0)
        p->fs_replace_end(p->ctx, f->rh);
    if (f->h >= 0)
        p->fs_close(p->ctx, f->h);
    f->rh = f->h = -1;
}

/* The next piece of edit_file's new content into `buf` (cap bytes): the
 * old file's bytes before the match, new_string, the old file's bytes
 * after it, read through the handle that was searched (what is written
 * is what was checked). Returns the count, 0 at the end, or < 0. */
static int edit_chunk(const struct mote_port *p, struct mote_tool_run *run, char *buf, size_t cap)
{
    struct mote_file_state *f = file_state(run);
    int n;

    if (f->pos < f->at) {
        size_t ask = f->at - f->pos < cap ? (size_t)(f->at - f->pos) : cap;

        n = p->fs_read(p->ctx, f->h, f->pos, buf, ask);
        if (n <= 0)
            return n < 0 ? n : MOTE_ERR_IO; /* shorter than it was */
    } else if (f->pos < f->at + f->with_len) {
        size_t k = (size_t)(f->at + f->with_len - f->pos);

        n = (int)(k < cap ? k : cap);
        memcpy(buf, in_str(run, f->with) + (f->pos - f->at), (size_t)n);
    } else {
        n = p->fs_read(p->ctx, f->h, f->pos - f->with_len + f->old_len, buf, cap);
        if (n <= 0)
            return n;
    }
    f->pos += (uint64_t)n;
    return n;
}

/* fs_replace's producer, for a port that replaces at once. */
static int edit_produce(void *arg, char *buf, size_t cap)
{
    struct mote_tool_run *run = arg;

    return edit_chunk(run->session->port, run, buf, cap);
}

/* The next piece of write_file's content (at f->pos). */
static size_t write_chunk(struct mote_tool_run *run, const char **at)
{
    struct mote_file_state *f = file_state(run);
    size_t left = f->with_len - (size_t)f->pos;

    *at = in_str(run, f->with) + f->pos;
    return left < MOTE_STEP_FILE_BYTES ? left : MOTE_STEP_FILE_BYTES;
}

/* What the tool says once the file is replaced (rc >= 0). */
static void say_done(struct mote_tool_run *run, bool edit, int rc)
{
    struct mote_file_state *f = file_state(run);
    const char *path = in_str(run, f->path);
    char b[200];
    struct mote_sb sb;

    mote_sb_init(&sb, b, sizeof(b));
    if (!edit) {
        mote_sb_s(&sb, "wrote ");
        mote_sb_u(&sb, f->with_len);
        mote_sb_s(&sb, " bytes to ");
        mote_tool_out(run, b, sb.len);
        mote_tool_outs(run, path);
        say_replaced(run, rc);
        return;
    }
    mote_sb_s(&sb, "edited ");
    mote_tool_out(run, b, sb.len);
    mote_tool_outs(run, path);
    mote_sb_init(&sb, b, sizeof(b));
    mote_sb_s(&sb, ": replaced ");
    mote_sb_u(&sb, f->old_len);
    mote_sb_s(&sb, " bytes at line ");
    mote_sb_u(&sb, f->line);
    mote_sb_s(&sb, " with ");
    mote_sb_u(&sb, f->with_len);
    mote_sb_s(&sb, " bytes");
    mote_tool_out(run, b, sb.len);
    say_replaced(run, rc);
}

/* Copies the new content into the replacement, MOTE_STEP_FILE_BYTES a
 * step (edit_file through the window buffer), then commits it: its sync
 * and rename run apart from the loop, which wakes on the port's
 * descriptor. Returns a step result. */
static int file_save(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run,
                     bool edit)
{
    const struct mote_port *p = loop->port;
    struct mote_file_state *f = file_state(run);
    size_t spent = 0;
    int rc, fd = -1;

    while (f->phase == FILE_COPY) {
        const char *data = run->out_buf;
        size_t n;

        if (spent >= MOTE_STEP_FILE_BYTES) {
            (void)mote_job_wake(loop, self); /* more next turn */
            return MOTE_STEP_PENDING;
        }
        if (edit) {
            rc = edit_chunk(p, run, run->out_buf, MOTE_TOOL_OUTPUT_MAX);
            n = rc > 0 ? (size_t)rc : 0;
        } else {
            n = write_chunk(run, &data);
            f->pos += n;
            rc = (int)n;
        }
        if (rc == 0) {
            f->phase = FILE_COMMIT;
            break;
        }
        if (rc > 0)
            rc = p->fs_replace_write(p->ctx, f->rh, data, n);
        if (rc < 0) {
            file_release(loop, run);
            say_err(run, "cannot write (the file is unchanged) ", in_str(run, f->path), rc);
            return MOTE_STEP_DONE;
        }
        spent += n;
    }
    rc = p->fs_replace_commit(p->ctx, f->rh, &fd);
    if (rc == MOTE_ERR_AGAIN) {
        if (fd >= 0 && f->watch == 0 &&
            mote_watch_add(loop, fd, MOTE_POLL_IN, NULL, NULL, self, &f->watch) < 0)
            fd = -1;
        if (fd < 0) {
            /* nothing to wait on: ask again soon */
            if (f->timer != 0)
                (void)mote_timer_stop(loop, f->timer);
            f->timer = 0;
            if (mote_timer_start(loop, 2, NULL, NULL, self, &f->timer) < 0)
                return MOTE_ERR_FULL;
        }
        return MOTE_STEP_PENDING;
    }
    file_release(loop, run);
    if (rc < 0) {
        say_not_replaced(run, p, in_str(run, f->path), rc);
        return MOTE_STEP_DONE;
    }
    say_done(run, edit, rc);
    return MOTE_STEP_DONE;
}

/* A cancel or the deadline before the commit: the replacement abandoned,
 * the file unchanged; during the commit, the commit goes on (it cannot be
 * taken back) and the result says so. Returns a step result, or 0 to go
 * on. */
static int file_stop(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    struct mote_file_state *f = file_state(run);
    bool saving = f->phase == FILE_COMMIT;

    if (mote_job_cancelled(loop, self)) {
        file_release(loop, run);
        mote_tool_outs(run, saving ? "cancelled by the user while the file was being saved: it "
                                     "may or may not have been changed"
                                   : "cancelled by the user: the file is unchanged");
        run->is_error = true;
        return MOTE_STEP_CANCELLED;
    }
    if (!saving && mote_tool_timed_out(loop, run)) {
        file_release(loop, run);
        mote_tool_note(run, "timed out after ", run->timeout_ms, " ms: the file is unchanged");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    return 0;
}

static void file_init(struct mote_tool_run *run)
{
    struct mote_file_state *f = file_state(run);

    memset(f, 0, sizeof(*f));
    f->live = true;
    f->h = f->rh = -1;
}

/* Starts the replacement of f->path (after its checks), or replaces it at
 * once on a port without steps. Returns a step result, or 0 when the
 * copy begins. */
static int file_begin(struct mote_loop *loop, struct mote_tool_run *run, bool edit)
{
    const struct mote_port *p = loop->port;
    struct mote_file_state *f = file_state(run);
    const char *path = in_str(run, f->path);
    int rc;

    if (!steps_replace(p)) {
        struct mote_src_bytes c;

        c.p = in_str(run, f->with);
        c.len = f->with_len;
        c.off = 0;
        rc = edit ? p->fs_replace(p->ctx, path, edit_produce, run)
                  : p->fs_replace(p->ctx, path, mote_produce_bytes, &c);
        file_release(loop, run);
        if (rc < 0)
            say_not_replaced(run, p, path, rc);
        else
            say_done(run, edit, rc);
        return MOTE_STEP_DONE;
    }
    rc = p->fs_replace_begin(p->ctx, path);
    if (rc < 0) {
        file_release(loop, run);
        say_not_replaced(run, p, path, rc);
        return MOTE_STEP_DONE;
    }
    f->rh = rc;
    f->pos = 0;
    f->phase = FILE_COPY;
    return 0;
}

static int write_file_step(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    struct mote_file_state *f = file_state(run);
    int tp = mote_json_member(&run->json, 0, "path");
    int tc = mote_json_member(&run->json, 0, "content");
    const char *path, *content;
    int rc;

    if (f->phase != FILE_START) {
        rc = file_stop(loop, self, run);
        return rc != 0 ? rc : file_save(loop, self, run, false);
    }
    file_init(run);
    if (mote_json_type_of(&run->json, tp) != MOTE_JSON_STRING ||
        mote_json_type_of(&run->json, tc) != MOTE_JSON_STRING ||
        (content = arg_in_place(run, "content")) == NULL) {
        mote_tool_outs(run, "write_file needs {\"path\": \"...\", \"content\": \"...\"}");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    f->with = (uint32_t)(content - run->in_buf);
    f->with_len = (uint32_t)strlen(content);
    path = arg_in_place(run, "path");
    if (path == NULL || path[0] == '\0') {
        mote_tool_outs(run, "write_file needs a path");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    f->path = (uint32_t)(path - run->in_buf);
    rc = file_begin(loop, run, false);
    return rc != 0 ? rc : file_save(loop, self, run, false);
}

/* One read of edit_file's search: the file's next bytes after the bytes
 * the window carries, each place old_string occurs (overlapping ones
 * too) counted, the first one's offset and line kept, CR LF endings
 * noticed; the last len - 1 bytes stay (a match may start there).
 * Returns the bytes read (0: the end of the file) or < 0. */
static int search_chunk(const struct mote_port *p, struct mote_tool_run *run)
{
    struct mote_file_state *f = file_state(run);
    char *w = run->out_buf;
    const char *old = in_str(run, f->old);
    size_t cap = MOTE_TOOL_OUTPUT_MAX, have = f->have, len = f->old_len, i;
    int n = p->fs_read(p->ctx, f->h, f->base + have, w + have, cap - have);

    if (n <= 0)
        return n;
    for (i = have; i < have + (size_t)n; i++) {
        if (w[i] == '\n' && (i > have ? w[i - 1] : f->last) == '\r')
            f->crlf = true;
    }
    have += (size_t)n;
    f->last = w[have - 1];
    for (i = 0; i + len <= have; i++) {
        if (w[i] == old[0] && memcmp(w + i, old, len) == 0 && f->count++ == 0) {
            size_t k;

            f->at = f->base + i;
            f->line = f->lines + 1;
            for (k = 0; k < i; k++)
                f->line += w[k] == '\n';
        }
    }
    if (have >= len) {
        size_t drop = have - (len - 1);

        for (i = 0; i < drop; i++)
            f->lines += w[i] == '\n';
        memmove(w, w + drop, have - drop);
        have -= drop;
        f->base += drop;
    }
    f->have = (uint32_t)have;
    return n;
}

/* "refused: the file has N bytes, more than edit_file handles". */
static int say_too_large(struct mote_tool_run *run, uint64_t size)
{
    char b[200];
    struct mote_sb sb;

    mote_sb_init(&sb, b, sizeof(b));
    mote_sb_s(&sb, "refused: the file has ");
    mote_sb_u(&sb, size);
    mote_sb_s(&sb, " bytes, more than edit_file handles (");
    mote_sb_u(&sb, MOTE_EDIT_FILE_MAX);
    mote_sb_s(&sb, "); use write_file or shell: ");
    mote_tool_out(run, b, sb.len);
    mote_tool_outs(run, in_str(run, file_state(run)->path));
    run->is_error = true;
    return MOTE_STEP_DONE;
}

/* edit_file's search, MOTE_STEP_FILE_BYTES a step; once through, the
 * verdict: refused (missing or not unique), or the replacement begins. */
static int edit_search(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_file_state *f = file_state(run);
    const char *path = in_str(run, f->path);
    size_t spent = 0;
    char b[200];
    struct mote_sb sb;
    int n, rc;

    do {
        if (spent >= MOTE_STEP_FILE_BYTES) {
            (void)mote_job_wake(loop, self); /* more next turn */
            return MOTE_STEP_PENDING;
        }
        n = search_chunk(p, run);
        if (n > 0 && f->base + f->have > MOTE_EDIT_FILE_MAX) {
            file_release(loop, run); /* it grew past the limit while read */
            return say_too_large(run, f->base + f->have);
        }
        spent += n > 0 ? (size_t)n : 0;
    } while (n > 0);
    if (n < 0 || f->count != 1) {
        file_release(loop, run);
        if (n < 0) {
            say_err(run, "cannot read ", path, n);
            return MOTE_STEP_DONE;
        }
        mote_sb_init(&sb, b, sizeof(b));
        if (f->count == 0) {
            mote_sb_s(&sb, "refused: old_string was not found in ");
        } else {
            mote_sb_s(&sb, "refused: old_string occurs ");
            mote_sb_u(&sb, (uint64_t)f->count);
            mote_sb_s(&sb, " times (it must be unique; give more of the text around it) in ");
        }
        mote_tool_out(run, b, sb.len);
        mote_tool_outs(run, path);
        if (f->count == 0 && f->crlf && memchr(in_str(run, f->old), '\n', f->old_len) != NULL)
            mote_tool_outs(run, "; the file has CRLF (\\r\\n) line endings: write each line "
                                "break in old_string and new_string as \\r\\n");
        mote_tool_outs(run, "; the file is unchanged");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    rc = file_begin(loop, run, true);
    if (rc != 0)
        return rc;
    (void)mote_job_wake(loop, self); /* the copy, from the next turn */
    return MOTE_STEP_PENDING;
}

static int edit_file_step(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    struct mote_file_state *f = file_state(run);
    struct mote_fs_stat st;
    const char *path, *old, *with;
    size_t old_len = 0, with_len = 0;
    char b[200];
    struct mote_sb sb;
    int h, rc;

    if (f->phase != FILE_START) {
        rc = file_stop(loop, self, run);
        if (rc != 0)
            return rc;
        return f->phase == FILE_SEARCH ? edit_search(loop, self, run)
                                       : file_save(loop, self, run, true);
    }
    file_init(run);
    if (mote_json_type_of(&run->json, mote_json_member(&run->json, 0, "new_string")) !=
            MOTE_JSON_STRING ||
        (old = arg_in_place_n(run, "old_string", &old_len)) == NULL ||
        (with = arg_in_place_n(run, "new_string", &with_len)) == NULL ||
        (path = arg_in_place(run, "path")) == NULL || path[0] == '\0') {
        mote_tool_outs(run, "edit_file needs {\"path\": \"...\", \"old_string\": \"...\", "
                            "\"new_string\": \"...\"}");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    f->path = (uint32_t)(path - run->in_buf);
    f->old = (uint32_t)(old - run->in_buf);
    f->old_len = (uint32_t)old_len;
    f->with = (uint32_t)(with - run->in_buf);
    f->with_len = (uint32_t)with_len;
    mote_sb_init(&sb, b, sizeof(b));
    if (old_len == 0 || old_len > MOTE_TOOL_OUTPUT_MAX / 2) {
        mote_sb_s(&sb, "refused: old_string must be 1 to ");
        mote_sb_u(&sb, MOTE_TOOL_OUTPUT_MAX / 2);
        mote_sb_s(&sb, " bytes");
        mote_tool_out(run, b, sb.len);
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    if (old_len == with_len && memcmp(old, with, old_len) == 0) {
        mote_tool_outs(run, "refused: old_string and new_string are the same (nothing to change)");
        run->is_error = true;
        return MOTE_STEP_DONE;
    }
    h = p->fs_open(p->ctx, path);
    if (h < 0) {
        say_err(run, h == MOTE_ERR_INVAL ? "refused: not a regular file: " : "cannot open ",
                path, h);
        return MOTE_STEP_DONE;
    }
    f->h = h;
    rc = p->fs_stat(p->ctx, path, &st);
    if (rc == 0 && (st.mode & 0222u) == 0) {
        /* As an editor: a read-only file is not written (fs_replace
         * refuses it too; said here before any search). */
        file_release(loop, run);
        say_not_replaced(run, p, path, MOTE_ERR_ACCES);
        return MOTE_STEP_DONE;
    }
    if (rc == 0 && st.size > MOTE_EDIT_FILE_MAX) {
        file_release(loop, run);
        return say_too_large(run, st.size);
    }
    if (rc < 0) {
        file_release(loop, run);
        say_err(run, "cannot read ", path, rc);
        return MOTE_STEP_DONE;
    }
    f->phase = FILE_SEARCH;
    return edit_search(loop, self, run);
}

/* ---- list_dir ------------------------------------------------------------- */

static int list_one(void *arg, const char *name, unsigned type)
{
    struct mote_tool_run *run = arg;

    mote_tool_outs(run, name);
    mote_tool_outs(run, type == MOTE_FS_DIR ? "/\n" : "\n");
    return run->out_dropped > 0 ? 1 : 0;
}

static int list_dir_step(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    const struct mote_port *p = loop->port;
    const char *path = arg_in_place(run, "path");
    int rc;

    (void)self;
    if (path == NULL || path[0] == '\0')
        path = ".";
    rc = p->fs_list(p->ctx, path, list_one, run);
    if (rc < 0) {
        run->out_len = 0;
        run->out_dropped = 0;
        say_err(run, "cannot list ", path, rc);
        return MOTE_STEP_DONE;
    }
    if (run->out_dropped > 0) {
        run->out_dropped = 0;
        mote_tool_note(run, "[list cut]", 0, NULL);
    } else if (run->out_len == 0) {
        mote_tool_outs(run, "(empty)\n");
    }
    clean(run->out, run->out_len);
    return MOTE_STEP_DONE;
}

/* ---- the registry entries -------------------------------------------------- */

#define SHELL_DESCRIPTION                                                                      \
    "Run a command with /bin/sh on the user's machine and get its output (stdout and stderr; "  \
    "past 16 KiB its start and its end, with the bytes dropped between them counted) and exit "  \
    "status. Runs in its own process group with a timeout."
#define SHELL_SCHEMA                                                                           \
    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\":"      \
    "\"the shell command\"}},\"required\":[\"command\"]}"

static const struct mote_tool builtin[] = {
    /* the call's one tool_start is the shell's, its command held until then */
    {"shell", SHELL_DESCRIPTION, SHELL_SCHEMA, shell_step, shell_release, NULL,
     MOTE_TOOL_OWN_START},
    {"read_file",
     "Read a text file: at most 16 KiB at a time, from byte `offset` (default 0) for `length` "
     "bytes (default: to the end or the cap). A result that is not the whole file ends with "
     "[bytes FROM-TO of SIZE; read on with offset TO] (the size may be unknown, as in /proc).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"offset\":{"
     "\"type\":\"integer\",\"minimum\":0},\"length\":{\"type\":\"integer\",\"minimum\":0}},"
     "\"required\":[\"path\"]}",
     read_file_step, NULL, NULL, 0},
    {"write_file",
     "Write a text file (replaced atomically, keeping its mode and owner). Refused for a "
     "read-only file and for one with other hard links.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":"
     "\"string\"}},\"required\":[\"path\",\"content\"]}",
     write_file_step, file_release, NULL, 0},
    {"list_dir", "List a directory's entries (a trailing / marks directories).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}",
     list_dir_step, NULL, NULL, 0},
    {"edit_file",
     "Edit a text file: replace old_string, which must occur exactly once in the file (include "
     "enough of the text around it), with new_string. Atomic; the file keeps its mode and owner. "
     "Refused, with the file unchanged, when old_string is missing or not unique, or the file is "
     "read-only or has other hard links.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"old_string\":{"
     "\"type\":\"string\",\"description\":\"the exact text to replace\"},\"new_string\":{"
     "\"type\":\"string\",\"description\":\"the text to put in its place\"}},\"required\":["
     "\"path\",\"old_string\",\"new_string\"]}",
     edit_file_step, file_release, NULL, 0},
};

/* The shell on a port that cannot hold a start: the agent's tool_start
 * comes before the command runs, the group's after it started. */
static const struct mote_tool shell_unheld = {"shell", SHELL_DESCRIPTION, SHELL_SCHEMA, shell_step,
                                              shell_release, NULL, 0};

int mote_session_add_builtin_tools(struct mote_session *s, unsigned which)
{
    const struct mote_port *p = s->port;
    /* Each group checked whole, once, here: a tool the port cannot run
     * (edit_file calls fs_stat, say) is not offered. */
    bool procs = mote_port_missing(p, MOTE_PORT_PROC) == NULL;
    bool files = mote_port_missing(p, MOTE_PORT_FS) == NULL;
    unsigned i;
    int n = 0, rc;

    for (i = 0; i < MOTE_ARRAY_LEN(builtin); i++) {
        if ((which & (1u << i)) == 0 || (i == 0 ? !procs : !files))
            continue; /* the port cannot run it: not offered */
        rc = mote_session_add_tool(s, i == 0 && !can_hold(p) ? &shell_unheld : &builtin[i]);
        if (rc == MOTE_ERR_EXIST)
            continue;
        if (rc < 0)
            return rc;
        n++;
    }
    return n;
}
