/*
 * mcp_stdio.c - the stdio transport of MCP servers: the child process
 * (through the port's process group), newline-delimited messages on its
 * stdin and stdout, the tail of its stderr, its exit, the steps of its
 * disconnect (close stdin, SIGTERM, SIGKILL, reap), and its record in the
 * state while it runs (mcp_left.c: what a crash of mote leaves is ended
 * on the next start).
 */
#include <string.h>

#include "mcp_int.h"
#include "mote/mote.h"

/* ---- writing ---- */

static void flush_out(struct mote_mcp_server *s);

static void on_in_ready(struct mote_loop *loop, mote_watch_id w, int fd, unsigned rev, void *arg)
{
    (void)loop, (void)w, (void)fd, (void)rev;
    flush_out(arg);
}

static void flush_out(struct mote_mcp_server *s)
{
    const struct mote_port *p = s->m->loop->port;

    while (s->in_fd >= 0 && s->outoff < s->outlen) {
        int n = p->pipe_write(p->ctx, s->in_fd, s->outbuf + s->outoff, s->outlen - s->outoff);

        if (n == MOTE_ERR_AGAIN) {
            if (s->w_in == 0 && mote_watch_add(s->m->loop, s->in_fd, MOTE_POLL_OUT, on_in_ready,
                                               s, 0, &s->w_in) < 0)
                s->w_in = 0;
            return;
        }
        if (n <= 0) {
            s->outoff = s->outlen = 0; /* the server is gone; its exit is handled */
            return;
        }
        s->outoff += (size_t)n;
    }
    if (s->outoff == s->outlen)
        s->outoff = s->outlen = 0;
    if (s->w_in != 0) {
        (void)mote_watch_remove(s->m->loop, s->w_in);
        s->w_in = 0;
    }
}

int mote_mcp_stdio_queued(struct mote_mcp_server *s, size_t start)
{
    if (s->outlen + 1 > sizeof(s->outbuf)) {
        s->outlen = start; /* never half a message */
        return MOTE_ERR_FULL;
    }
    s->outbuf[s->outlen++] = '\n';
    flush_out(s);
    return 0;
}

/* ---- its end ---- */

static void on_err(struct mote_loop *loop, mote_watch_id w, int fd, unsigned rev, void *arg);
static void server_gone(struct mote_mcp_server *s);

static void on_exit_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_mcp_server *s = arg;

    (void)loop, (void)t;
    s->exit_timer = 0;
    server_gone(s);
}

/* It exited (reaped): nothing of it runs, so its record goes. */
static void exited(struct mote_mcp_server *s)
{
    s->exited = true;
    mote_mcp_left_clear(s->m->loop->port, s->left_h, s->left_name);
    s->left_h = -1;
}

/* Its stdout ended. The exit status follows within milliseconds: look for
 * it a few times (5 ms apart) so the message can say how it ended. */
static void server_gone(struct mote_mcp_server *s)
{
    const struct mote_port *p = s->m->loop->port;
    char why[96];
    struct mote_sb sb;

    if (!s->exited && p->proc_reap(p->ctx, s->pid, &s->status) == 0)
        exited(s);
    if (!s->exited && s->gone_tries < 40 && s->state != MOTE_MCP_CLOSED) {
        s->gone = true;
        s->gone_tries++;
        if (s->exit_timer != 0)
            (void)mote_timer_stop(s->m->loop, s->exit_timer);
        if (mote_timer_start(s->m->loop, 5, on_exit_timer, s, 0, &s->exit_timer) == 0)
            return;
    }
    s->gone = false;
    if (s->exited && s->err_fd >= 0 && s->w_err != 0)
        on_err(s->m->loop, s->w_err, s->err_fd, 0, s); /* its last words, all in the pipe now */
    mote_sb_init(&sb, why, sizeof(why));
    mote_sb_s(&sb, "the server exited");
    if (s->exited) {
        mote_sb_s(&sb, " (status ");
        mote_sb_i(&sb, s->status);
        mote_sb_s(&sb, ")");
    }
    if (s->state != MOTE_MCP_CLOSED)
        s->m->up->failed(s, why);
}

/* ---- reading ---- */

static void on_out(struct mote_loop *loop, mote_watch_id w, int fd, unsigned rev, void *arg)
{
    struct mote_mcp_server *s = arg;
    const struct mote_port *p = loop->port;
    size_t moved; /* a flood waits for the next turn: the watch fires again */

    (void)rev;
    if (mcp_must_wait(s)) {
        /* A new tool list is on its way while a request's body is being
         * sent with the old one: it waits in the pipe until the body is
         * out (mote_mcp_unhold reads it). */
        (void)mote_watch_remove(loop, w);
        s->w_out = 0;
        s->paused = true;
        return;
    }
    for (moved = 0; moved < MOTE_STEP_IO_BYTES;) {
        size_t at = s->inlen, i, room = sizeof(s->inbuf) - s->inlen,
               left = MOTE_STEP_IO_BYTES - moved;
        int n = p->pipe_read(p->ctx, fd, s->inbuf + at, room < left ? room : left);

        if (n == MOTE_ERR_AGAIN)
            return;
        if (n <= 0) {
            (void)mote_watch_remove(loop, s->w_out);
            s->w_out = 0;
            p->pipe_close(p->ctx, s->out_fd);
            s->out_fd = -1;
            server_gone(s);
            return;
        }
        moved += (size_t)n;
        /* The bytes read go through mcp_in.c in place: what it keeps of
         * the line is written at s->inlen, never past the byte read. */
        for (i = at; i < at + (size_t)n; i++) {
            char c = s->inbuf[i];

            if (c == '\n') {
                size_t len = s->inlen;

                s->inlen = 0;
                if (s->dropped_line) {
                    s->dropped_line = false;
                    mote_mcp_in_reset(s);
                    continue;
                }
                mote_mcp_in_end(s, s->inbuf, &len);
                s->m->up->message(s, s->inbuf, len);
                continue;
            }
            if (s->dropped_line)
                continue; /* (the rest of a line over the limit) */
            if (!mote_mcp_in_put(s, s->inbuf, &s->inlen, sizeof(s->inbuf), c)) {
                s->inlen = 0;
                s->dropped_line = true;
                mote_mcp_in_reset(s);
                mcp_log(s, "dropped a message over MOTE_MCP_LINE_MAX bytes", NULL, NULL);
                if (s->req_id != 0)
                    s->m->up->request_failed(s, "the MCP server's answer was over the size "
                                                "limit (MOTE_MCP_LINE_MAX)");
            }
        }
    }
}

static void on_err(struct mote_loop *loop, mote_watch_id w, int fd, unsigned rev, void *arg)
{
    struct mote_mcp_server *s = arg;
    const struct mote_port *p = loop->port;
    char buf[512];
    size_t moved = 0;
    int n = MOTE_ERR_AGAIN;

    (void)w, (void)rev;
    while (moved < MOTE_STEP_IO_BYTES &&
           (n = p->pipe_read(p->ctx, fd, buf,
                             MOTE_STEP_IO_BYTES - moved < sizeof(buf) ? MOTE_STEP_IO_BYTES - moved
                                                                      : sizeof(buf))) > 0) {
        size_t i;

        moved += (size_t)n;
        /* Keep the tail, as one line of printable text. */
        for (i = 0; i < (size_t)n; i++) {
            char c = buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t' ? ' ' : buf[i];

            if ((unsigned char)c < 0x20)
                continue;
            if (s->loglen + 1 >= sizeof(s->log)) {
                memmove(s->log, s->log + sizeof(s->log) / 2, s->loglen - sizeof(s->log) / 2);
                s->loglen -= sizeof(s->log) / 2;
            }
            s->log[s->loglen++] = c;
        }
        s->log[s->loglen] = '\0';
    }
    if (n == 0 || (n < 0 && n != MOTE_ERR_AGAIN)) {
        (void)mote_watch_remove(loop, s->w_err);
        s->w_err = 0;
        p->pipe_close(p->ctx, s->err_fd);
        s->err_fd = -1;
    }
}

void mote_mcp_stdio_resume(struct mote_mcp_server *s)
{
    if (s->paused && s->out_fd >= 0 &&
        mote_watch_add(s->m->loop, s->out_fd, MOTE_POLL_IN, on_out, s, 0, &s->w_out) == 0)
        s->paused = false; /* the new list is read now */
}

/* ---- start ---- */

bool mote_mcp_stdio_start(struct mote_mcp_server *s)
{
    const struct mote_port *p = s->m->loop->port;
    int fds[3], rc;
    bool held;

    if (mote_port_missing(p, MOTE_PORT_PROC) != NULL) {
        /* every member a server's life uses, checked once here */
        char why[80];
        struct mote_sb sb;

        mote_sb_init(&sb, why, sizeof(why));
        mote_sb_s(&sb, "this port cannot run processes (no ");
        mote_sb_s(&sb, mote_port_missing(p, MOTE_PORT_PROC));
        mote_sb_s(&sb, ")");
        s->m->up->failed(s, why);
        return false;
    }
    /* Held where the port can: nothing of the server runs (nothing it
     * could start in a session of its own) before its record is on disk. */
    held = MOTE_PORT_HAS(p, proc_spawn_held) && MOTE_PORT_HAS(p, proc_go);
    rc = held ? p->proc_spawn_held(p->ctx, s->argv, s->envp, false, fds, &s->pid)
              : p->proc_spawn(p->ctx, s->argv, s->envp, false, fds, &s->pid);
    if (rc < 0) {
        s->m->up->failed(s, rc == MOTE_ERR_NOENT ? "cannot start: command not found"
                                                 : "cannot start the command");
        return false;
    }
    s->in_fd = fds[0];
    s->out_fd = fds[1];
    s->err_fd = fds[2];
    /* Recorded before it runs (mcp_left.c). A server whose record cannot
     * be written still runs: only a crash that kills mote, the supervisor
     * and the server at once then leaves what it started. */
    s->left_h = mote_mcp_left_record(p, s->name, s->pid, s->left_name, sizeof(s->left_name));
    if (s->left_h < 0 && s->left_h != MOTE_ERR_NOSYS)
        mcp_log(s, "cannot record its process in the state (if mote is killed with it, what "
                   "it started may be left running): ",
                mote_strerror(s->left_h), NULL);
    if (held && p->proc_go(p->ctx, s->pid) < 0) {
        s->m->up->failed(s, "cannot start the command");
        return false;
    }
    if (mote_watch_add(s->m->loop, s->out_fd, MOTE_POLL_IN, on_out, s, 0, &s->w_out) < 0 ||
        mote_watch_add(s->m->loop, s->err_fd, MOTE_POLL_IN, on_err, s, 0, &s->w_err) < 0) {
        s->m->up->failed(s, "no free watch (MOTE_MAX_WATCHES)");
        return false;
    }
    return true;
}

/* ---- disconnect ---- */

void mote_mcp_stdio_dc_begin(struct mote_mcp_server *s)
{
    const struct mote_port *p = s->m->loop->port;

    if (s->pid == 0 || s->exited)
        return;
    if (s->w_in != 0)
        (void)mote_watch_remove(s->m->loop, s->w_in);
    s->w_in = 0;
    if (s->in_fd >= 0)
        p->pipe_close(p->ctx, s->in_fd); /* 1: close its stdin */
    s->in_fd = -1;
    s->state = MOTE_MCP_CLOSED;
    mcp_log(s, "disconnecting: stdin closed", NULL, NULL);
}

bool mote_mcp_stdio_dc_poll(struct mote_mcp_server *s, bool term, bool kill, uint32_t el)
{
    const struct mote_port *p = s->m->loop->port;

    if (s->pid == 0 || s->exited)
        return true;
    if (p->proc_reap(p->ctx, s->pid, &s->status) == 0) {
        char msg[80];
        struct mote_sb sb;

        exited(s);
        mote_sb_init(&sb, msg, sizeof(msg));
        mote_sb_s(&sb, "exited (status ");
        mote_sb_i(&sb, s->status);
        mote_sb_s(&sb, ") after ");
        mote_sb_u(&sb, el);
        mote_sb_s(&sb, " ms");
        mcp_log(s, msg, NULL, NULL);
        return true;
    }
    if (term && !kill) {
        p->proc_signal(p->ctx, s->pid, MOTE_PROC_TERM); /* 2: SIGTERM the group */
        mcp_log(s, "still running: SIGTERM sent to its process group", NULL, NULL);
    }
    if (kill) {
        p->proc_signal(p->ctx, s->pid, MOTE_PROC_KILL); /* 3: SIGKILL the group */
        mcp_log(s, "still running: SIGKILL sent to its process group", NULL, NULL);
    }
    return false;
}

void mote_mcp_stdio_dc_end(struct mote_mcp_server *s)
{
    const struct mote_port *p = s->m->loop->port;

    if (s->w_out != 0)
        (void)mote_watch_remove(s->m->loop, s->w_out);
    if (s->w_err != 0)
        (void)mote_watch_remove(s->m->loop, s->w_err);
    s->w_out = s->w_err = 0;
    if (s->out_fd >= 0)
        p->pipe_close(p->ctx, s->out_fd);
    if (s->err_fd >= 0)
        p->pipe_close(p->ctx, s->err_fd);
    s->out_fd = s->err_fd = -1;
    if (s->exit_timer != 0)
        (void)mote_timer_stop(s->m->loop, s->exit_timer);
    s->exit_timer = 0;
}

void mote_mcp_stdio_reset(struct mote_mcp_server *s)
{
    const struct mote_port *p = s->m->loop->port;

    if (s->w_in != 0)
        (void)mote_watch_remove(s->m->loop, s->w_in);
    s->w_in = 0;
    if (s->in_fd >= 0)
        p->pipe_close(p->ctx, s->in_fd);
    s->in_fd = -1;
    mote_mcp_stdio_dc_end(s);
    mote_mcp_left_clear(p, s->left_h, s->left_name); /* (cleared at its exit already) */
    s->left_h = -1;
    s->left_name[0] = '\0';
    s->pid = 0;
    s->exited = s->gone = false;
    s->gone_tries = 0;
    s->status = 0;
    s->outoff = s->loglen = 0;
    s->log[0] = '\0';
}
