/*
 * serve_mcp_stdio.c - MCP over a pipe pair (serve_mcp.h; conf.mcp_stdio):
 * for a client that spawned this process (`mote mcp`), newline-delimited
 * JSON-RPC read from in_fd and the answers, progress and the server's
 * requests written to out_fd, through the port's pipe members.
 *
 * Memory stays bounded whatever the client does: a line is read only
 * when everything written before has gone out (a client that never reads
 * is never read either), a line longer than the input buffer is answered
 * with an error and skipped, and a call's answer waits in its follow
 * until the pipe takes it. The end of the input is the client's end: the
 * server shuts down (pipe_ended).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

static void on_out(struct mote_loop *loop, mote_watch_id w, int fd, unsigned revents, void *arg);

static void watch_in(struct serve *sv, bool on)
{
    if (sv->mcp.pipe_in_w != 0)
        (void)mote_watch_set(sv->loop, sv->mcp.pipe_in_w, on ? MOTE_POLL_IN : 0u);
}

/* The client is gone (its input ended, or the pipe broke). */
static void ended(struct serve *sv, const char *why)
{
    if (sv->mcp.pipe_closed)
        return;
    sv->mcp.pipe_closed = true;
    watch_in(sv, false);
    mote_httpd_say(&sv->http, "mcp: ", why, NULL);
    if (sv->mcp.pipe_ended != NULL)
        sv->mcp.pipe_ended(sv);
}

/* Appends bytes to what waits to be written (it was empty: they fit). */
static void out_add(struct serve *sv, const char *p, size_t n)
{
    struct mote_serve_mcp_stdio *io = sv->conf.mcp_stdio;

    MOTE_ASSERT(sv->mcp.pipe_out_len + n <= sizeof(io->out));
    memcpy(io->out + sv->mcp.pipe_out_len, p, n);
    sv->mcp.pipe_out_len += n;
    if (sv->mcp.pipe_out_w != 0)
        (void)mote_watch_set(sv->loop, sv->mcp.pipe_out_w, MOTE_POLL_OUT);
}

static void one_line(struct serve *sv, const char *line, size_t n)
{
    struct serve_mcp_in in;

    memset(&in, 0, sizeof(in));
    in.se = sv->mcp.pipe.used ? &sv->mcp.pipe : NULL;
    in.chan = SERVE_CHAN_STDIO;
    in.sse = true; /* the pipe carries the server's messages too */
    mote_serve_mcp_handle(sv, &in, line, n);
    if (in.len > 0)
        out_add(sv, sv->scratch, in.len); /* its answers, a line each */
}

/* The complete lines read, while nothing waits to be written (so any
 * answer fits the out buffer). */
static void take_lines(struct serve *sv)
{
    struct mote_serve_mcp_stdio *io = sv->conf.mcp_stdio;

    while (!sv->mcp.pipe_closed && sv->mcp.pipe_out_len == 0) {
        char *nl = memchr(io->in, '\n', sv->mcp.pipe_in_len);
        size_t n, k;

        if (nl == NULL)
            break;
        n = (size_t)(nl - io->in);
        k = n;
        while (k > 0 && (io->in[k - 1] == '\r' || io->in[k - 1] == ' ' || io->in[k - 1] == '\t'))
            k--;
        if (sv->mcp.pipe_skip)
            sv->mcp.pipe_skip = false; /* the end of a line too long: dropped */
        else if (k > 0)
            one_line(sv, io->in, k);
        memmove(io->in, io->in + n + 1, sv->mcp.pipe_in_len - n - 1);
        sv->mcp.pipe_in_len -= n + 1;
    }
    watch_in(sv, !sv->mcp.pipe_closed && sv->mcp.pipe_out_len == 0);
}

static void on_in(struct mote_loop *loop, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    struct serve *sv = arg;
    struct mote_serve_mcp_stdio *io = sv->conf.mcp_stdio;
    const struct mote_port *p = sv->port;
    size_t room = sizeof(io->in) - sv->mcp.pipe_in_len;
    int n;

    (void)loop, (void)w, (void)revents;
    if (sv->mcp.pipe_closed)
        return;
    if (room == 0) {
        /* a line longer than any message taken: an error, then its end skipped */
        static const char err[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                                  "\"message\":\"Parse error: a message longer than "
                                  "MOTE_SERVE_BODY_MAX\"}}\n";

        sv->mcp.pipe_in_len = 0;
        sv->mcp.pipe_skip = true;
        out_add(sv, err, sizeof(err) - 1);
        watch_in(sv, false);
        return;
    }
    n = p->pipe_read(p->ctx, fd, io->in + sv->mcp.pipe_in_len, room);
    if (n == MOTE_ERR_AGAIN)
        return;
    if (n <= 0) {
        sv->mcp.pipe_eof = true;
        ended(sv, n == 0 || n == MOTE_ERR_PIPE ? "the client closed the pipe: shutting down"
                                               : "the pipe broke: shutting down");
        return;
    }
    if (sv->mcp.pipe_skip) {
        char *nl = memchr(io->in + sv->mcp.pipe_in_len, '\n', (size_t)n);

        if (nl == NULL)
            return; /* still the line too long */
        /* its end is here: what follows is read on */
        n -= (int)(nl + 1 - (io->in + sv->mcp.pipe_in_len));
        memmove(io->in + sv->mcp.pipe_in_len, nl + 1, (size_t)n);
        sv->mcp.pipe_skip = false;
    }
    sv->mcp.pipe_in_len += (size_t)n;
    take_lines(sv);
}

static void on_out(struct mote_loop *loop, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    struct serve *sv = arg;
    struct mote_serve_mcp_stdio *io = sv->conf.mcp_stdio;
    const struct mote_port *p = sv->port;
    unsigned rounds;

    (void)loop, (void)revents;
    for (rounds = 0; rounds < 8; rounds++) {
        bool idle = false, comma = false;
        int n;

        if (sv->mcp.pipe_out_off < sv->mcp.pipe_out_len) {
            n = p->pipe_write(p->ctx, fd, io->out + sv->mcp.pipe_out_off,
                              sv->mcp.pipe_out_len - sv->mcp.pipe_out_off);
            if (n == MOTE_ERR_AGAIN)
                return;
            if (n < 0) {
                sv->mcp.pipe_out_off = sv->mcp.pipe_out_len = 0;
                (void)mote_watch_set(sv->loop, w, 0);
                ended(sv, "the client stopped reading the pipe: shutting down");
                return;
            }
            sv->mcp.pipe_out_off += (size_t)n;
            if (sv->mcp.pipe_out_off < sv->mcp.pipe_out_len)
                return; /* the pipe is full: its readiness brings us back */
        }
        sv->mcp.pipe_out_off = sv->mcp.pipe_out_len = 0;
        sv->mcp.pipe_out_len = mote_serve_mcp_fill(sv, SERVE_CHAN_STDIO, SF_FRAME_LINE, &comma,
                                                   io->out, sizeof(io->out), &idle);
        if (sv->mcp.pipe_out_len == 0)
            break;
    }
    if (sv->mcp.pipe_out_len == 0) {
        (void)mote_watch_set(sv->loop, w, 0);
        take_lines(sv); /* lines that waited for the answers to go out */
    }
}

int mote_serve_mcp_stdio_start(struct serve *sv)
{
    struct mote_serve_mcp_stdio *io = sv->conf.mcp_stdio;

    if (io == NULL)
        return 0;
    sv->mcp.pipe_in_len = sv->mcp.pipe_out_len = sv->mcp.pipe_out_off = 0;
    sv->mcp.pipe_skip = sv->mcp.pipe_eof = sv->mcp.pipe_closed = false;
    if (mote_watch_add(sv->loop, io->in_fd, MOTE_POLL_IN, on_in, sv, 0, &sv->mcp.pipe_in_w) < 0)
        return MOTE_ERR_FULL;
    if (mote_watch_add(sv->loop, io->out_fd, 0, on_out, sv, 0, &sv->mcp.pipe_out_w) < 0) {
        (void)mote_watch_remove(sv->loop, sv->mcp.pipe_in_w);
        sv->mcp.pipe_in_w = 0;
        return MOTE_ERR_FULL;
    }
    return 0;
}

bool mote_serve_mcp_stdio_flushed(const struct serve *sv)
{
    return sv->conf.mcp_stdio == NULL || sv->mcp.pipe_out_w == 0 ||
           sv->mcp.pipe_out_len == 0 || sv->mcp.pipe_closed;
}

void mote_serve_mcp_stdio_stop(struct serve *sv)
{
    if (sv->mcp.pipe_in_w != 0)
        (void)mote_watch_remove(sv->loop, sv->mcp.pipe_in_w);
    if (sv->mcp.pipe_out_w != 0)
        (void)mote_watch_remove(sv->loop, sv->mcp.pipe_out_w);
    sv->mcp.pipe_in_w = sv->mcp.pipe_out_w = 0;
    sv->mcp.pipe_closed = true;
}
