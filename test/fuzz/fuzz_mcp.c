/* fuzz_mcp - the MCP client (src/mcp.c) reading a server's stdout on
 * arbitrary bytes: the newline-delimited framing, responses and errors,
 * initialize and tools/list results (pages, cursors, schemas), tools/call
 * results, notifications (tools/list_changed) and server requests (ping).
 *
 * The server is a stand-in behind a port of its own: its stdout is the
 * input after the first byte, one line per loop turn; a tool call is made
 * once the server is ready. The first byte picks the piece size of the
 * split run, whether the tool lists are held (as a request's body would)
 * and whether the call is cancelled a line later.
 *
 * Properties:
 *  1. The outcome - the server's state and message, its tool list, the
 *     call's result, and every byte mote wrote to the server - does not
 *     depend on how the lines are split into reads.
 *  2. What mote makes of the input is strict JSON wherever it goes on as
 *     JSON: every line written to the server (answers to its requests
 *     echo its ids), and every tool schema (it goes into the model's
 *     request body as it is) parses with mote's strict parser, is UTF-8
 *     and a schema is an object; tool names are [A-Za-z0-9_-], at most 63
 *     bytes, and unique.
 *  3. Memory stays bounded: everything is in static structs (ASan checks
 *     every access), whatever the lines' lengths.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_json.h"
#include "mote/mote_mcp.h"

#include "mcp_kit.h"

#define IN_FD 100  /* the server's stdin: mote writes */
#define OUT_FD 101 /* its stdout: the input */
#define ERR_FD 102 /* its stderr: empty */
#define WROTE_MAX (1u << 20)

static struct {
    const uint8_t *data;
    size_t size, at;
    size_t piece;      /* 0: as much as asked (up to the line's end) */
    bool line_given;   /* a line ended in this turn: the next waits */
    bool eof_given, err_eof;
    unsigned lines;
    uint32_t now;
    size_t wrote_len;
    uint64_t wrote_total;
    char wrote[WROTE_MAX];
} fs;

static uint32_t f_now(void *ctx)
{
    (void)ctx;
    return fs.now;
}

static int f_wait(void *ctx, struct mote_pollfd *fds, unsigned n, int32_t timeout)
{
    unsigned i;
    int ready = 0;

    (void)ctx;
    fs.line_given = false; /* a new turn: the next line may come */
    for (i = 0; i < n; i++) {
        fds[i].revents = 0;
        if (fds[i].fd == OUT_FD && !fs.eof_given)
            fds[i].revents = MOTE_POLL_IN;
        else if (fds[i].fd == ERR_FD && !fs.err_eof)
            fds[i].revents = MOTE_POLL_IN;
        else if (fds[i].fd == IN_FD)
            fds[i].revents = MOTE_POLL_OUT;
        ready += fds[i].revents != 0;
    }
    if (ready == 0 && timeout > 0)
        fs.now += (uint32_t)timeout; /* nothing to do: time passes */
    return ready;
}

static int f_spawn(void *ctx, const char *const *argv, const char *const *envp, bool merge,
                   int fds[3], int64_t *pid)
{
    (void)ctx, (void)argv, (void)envp, (void)merge;
    fds[0] = IN_FD;
    fds[1] = OUT_FD;
    fds[2] = ERR_FD;
    *pid = 4242;
    return 0;
}

static int f_signal(void *ctx, int64_t pid, int which)
{
    (void)ctx, (void)pid, (void)which;
    return 0;
}

static int f_reap(void *ctx, int64_t pid, int *status)
{
    (void)ctx, (void)pid;
    if (!fs.eof_given)
        return MOTE_ERR_AGAIN; /* it runs while its stdout is open */
    *status = 0;
    return 0;
}

static int f_read(void *ctx, int fd, void *buf, size_t n)
{
    const uint8_t *nl;
    size_t take;

    (void)ctx;
    if (fd == ERR_FD) {
        fs.err_eof = true;
        return 0;
    }
    if (fd != OUT_FD)
        return MOTE_ERR_INVAL;
    if (fs.at == fs.size) {
        fs.eof_given = true;
        return 0;
    }
    if (fs.line_given)
        return MOTE_ERR_AGAIN; /* one line per turn */
    take = fs.size - fs.at;
    if (take > n)
        take = n;
    if (fs.piece > 0 && take > fs.piece)
        take = fs.piece;
    nl = memchr(fs.data + fs.at, '\n', take);
    if (nl != NULL) {
        take = (size_t)(nl - (fs.data + fs.at)) + 1;
        fs.line_given = true;
        fs.lines++;
    }
    memcpy(buf, fs.data + fs.at, take);
    fs.at += take;
    return (int)take;
}

static int f_write(void *ctx, int fd, const void *buf, size_t n)
{
    size_t keep = n < WROTE_MAX - fs.wrote_len ? n : WROTE_MAX - fs.wrote_len;

    (void)ctx;
    if (fd != IN_FD)
        __builtin_trap(); /* mote writes to the server's stdin only */
    memcpy(fs.wrote + fs.wrote_len, buf, keep);
    fs.wrote_len += keep;
    fs.wrote_total += n;
    return (int)n;
}

static void f_close(void *ctx, int fd)
{
    (void)ctx, (void)fd;
}

static struct mote_port port;
static struct mote_loop loop;
static struct mote_mcp mcp;
static struct mote_mcp_call call;
static struct mote_json js;
static const char *const argv[] = {"server", NULL};

struct outcome {
    uint32_t hash;
    uint64_t wrote;
};

/* Property 2 on the lines written since the last look (from *from). */
static void check_wrote(size_t *from)
{
    size_t a = *from;

    while (a < fs.wrote_len) {
        const char *nl = memchr(fs.wrote + a, '\n', fs.wrote_len - a);
        size_t len;

        if (nl == NULL)
            break; /* the capture's cap cut it */
        len = (size_t)(nl - (fs.wrote + a));
        if (mote_json_parse(&js, fs.wrote + a, len) <= 0 || !mote_utf8_valid(fs.wrote + a, len) ||
            mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT)
            __builtin_trap(); /* mote wrote a line that is not strict JSON */
        a += len + 1;
    }
    *from = a;
}

static void run(const uint8_t *data, size_t size, size_t piece, bool hold, bool cancel,
                struct outcome *o)
{
    const struct mote_mcp_server *s = &mcp.srv[0];
    mote_job_id job = 0;
    unsigned turn, call_line = 0;
    size_t checked = 0;
    bool held = false;

    memset(&fs, 0, offsetof(__typeof__(fs), wrote));
    fs.data = data;
    fs.size = size;
    fs.piece = piece;
    fs.now = 1000;
    memset(o, 0, sizeof(*o));
    mcp_kit_port(&port, f_now, f_wait);
    port.proc_spawn = f_spawn;
    port.proc_signal = f_signal;
    port.proc_reap = f_reap;
    port.pipe_read = f_read;
    port.pipe_write = f_write;
    port.pipe_close = f_close;
    mcp_kit_client(&loop, &port, &mcp);
    if (mote_mcp_add(&mcp, "f", argv, NULL) != 0)
        __builtin_trap();
    mote_mcp_start_all(&mcp);
    /* One line per turn, then the timers (request deadlines, the exit):
     * bounded by the lines and the waits a request can take. */
    for (turn = 0; turn < size + 400; turn++) {
        if (mcp_kit_call(&loop, &mcp, &call, &job)) {
            call_line = fs.lines;
            if (hold && !held) {
                mote_mcp_hold(&mcp);
                held = true;
            }
        }
        if (cancel && job != 0 && fs.lines == call_line + 1)
            (void)mote_job_cancel(&loop, job);
        if (held && fs.at == fs.size) {
            mote_mcp_unhold(&mcp);
            held = false;
        }
        if (mote_loop_poll(&loop, -1) < 0)
            __builtin_trap();
        check_wrote(&checked);
        if (fs.eof_given && s->state != MOTE_MCP_STARTING && s->state != MOTE_MCP_LISTING &&
            s->state != MOTE_MCP_READY && !s->gone &&
            mcp_kit_call_over(&loop, job))
            break;
    }
    if (held)
        mote_mcp_unhold(&mcp);
    mcp_kit_check_tools(&js, s); /* property 2 on the tool list */
    mote_mcp_disconnect_begin(&mcp, 0);
    while (mote_mcp_disconnect_poll(&mcp, true) > 0) {
    }
    check_wrote(&checked);
    /* The outcome. */
    mcp_kit_mix_outcome(&o->hash, &loop, s, job, &call);
    mcp_kit_mix(&o->hash, fs.wrote, fs.wrote_len);
    o->wrote = fs.wrote_total;
    mote_loop_deinit(&loop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct outcome whole, split;
    bool hold, cancel;

    if (size < 1)
        return 0;
    hold = (data[0] & 0x10) != 0;
    cancel = (data[0] & 0x20) != 0;
    run(data + 1, size - 1, 0, hold, cancel, &whole);
    run(data + 1, size - 1, 1 + (data[0] & 0x0f), hold, cancel, &split);
    if (whole.hash != split.hash || whole.wrote != split.wrote)
        __builtin_trap(); /* the split changed the outcome */
    return 0;
}
