/* fuzz_mcphttp - the HTTP transports of MCP (src/mcp_http.c, src/mcp_wire.c)
 * reading a server's responses on arbitrary bytes: the HTTP heads
 * (status, Mcp-Session-Id, Content-Type), bodies framed by length, chunks
 * or the connection's end, JSON bodies and event streams (the endpoint
 * event of HTTP+SSE, messages split anywhere), and what the protocol
 * makes of the messages (initialize, tools/list, tools/call, pings,
 * notifications, a session lost and made again).
 *
 * The server is a stand-in behind a port of its own: each complete
 * request mote sends on a connection is answered by the next response of
 * the input (after its first byte: [length: 2 bytes][bytes]...), read in
 * pieces; when the responses run out, every connection ends. A tool call
 * is made once the server is ready. The first byte picks Streamable HTTP
 * or HTTP+SSE, the piece size of the split run, and whether the call is
 * cancelled a turn later.
 *
 * Properties:
 *  1. The outcome - the server's state and message, its tool list, the
 *     call's result, and every byte mote sent - is the same each time the
 *     same responses come split the same way. (Across splits it may
 *     differ: with three channels, which of them is free when a message
 *     is queued depends on how far each response got; the ordering rules
 *     - initialize, the event stream, `initialized`, then the rest - hold
 *     either way and are checked by the integration tests.)
 *  2. What mote sends is well formed whatever came: every request's head
 *     is lines of printable ASCII (a session id from the server included),
 *     every POST's body is strict JSON; every tool schema is a strict
 *     JSON object, tool names are [A-Za-z0-9_-], unique.
 *  3. The configured header's value is never in what mote keeps (the
 *     call's result, the server's message, tool descriptions).
 *  4. Memory stays bounded: everything is in static structs (ASan checks
 *     every access), whatever the responses' lengths.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_json.h"
#include "mote/mote_mcp.h"

#include "mcp_kit.h"

#define RESOLVE_FD 90
#define FD0 100
#define CONNS 32
#define SENT_MAX (1u << 20)
#define SECRET "Bearer fuzz-secret-0123456789"

static struct conn {
    bool open, stream;      /* stream: its request was a GET (an event stream) */
    unsigned waiting;       /* complete requests not yet answered */
    const uint8_t *seg;     /* the response being read */
    size_t seg_len, seg_at;
    size_t head_len, body_need; /* the request being received */
    char req[8192];
    size_t req_len;
} conns[CONNS];

static struct {
    const uint8_t *data;
    size_t size, at;
    size_t piece;
    bool sse;
    unsigned nconn;
    uint32_t now;
    size_t sent_len;
    uint64_t sent_total;
    char sent[SENT_MAX];
} fs;

static uint32_t f_now(void *ctx)
{
    (void)ctx;
    return fs.now;
}

static bool more(void)
{
    return fs.at + 2 <= fs.size;
}

/* The next response from the input for connection `c`. */
static bool take(struct conn *c)
{
    size_t n;

    if (!more())
        return false;
    n = (size_t)fs.data[fs.at] << 8 | fs.data[fs.at + 1];
    fs.at += 2;
    if (n > fs.size - fs.at)
        n = fs.size - fs.at;
    c->seg = fs.data + fs.at;
    c->seg_len = n;
    c->seg_at = 0;
    fs.at += n;
    c->waiting--;
    return true;
}

/* Whether any connection waits for an answer. */
static bool anyone_waiting(void)
{
    unsigned i;

    for (i = 0; i < fs.nconn; i++) {
        if (conns[i].open && conns[i].waiting > 0)
            return true;
    }
    return false;
}

/* An event stream takes the next response as more of itself when no
 * request waits (HTTP+SSE's answers come that way). */
static bool stream_takes(const struct conn *c)
{
    return fs.sse && c->stream && c->waiting == 0 && c->seg_len > 0 && !anyone_waiting() && more();
}

static bool readable(struct conn *c)
{
    return c->seg_at < c->seg_len || (c->waiting > 0 && more()) || stream_takes(c) || !more();
}

static int f_wait(void *ctx, struct mote_pollfd *fds, unsigned n, int32_t timeout)
{
    unsigned i;
    int ready = 0;

    (void)ctx;
    for (i = 0; i < n; i++) {
        int k = fds[i].fd - FD0;

        fds[i].revents = 0;
        if (fds[i].fd == RESOLVE_FD)
            fds[i].revents = MOTE_POLL_IN;
        else if (k >= 0 && k < CONNS && conns[k].open)
            fds[i].revents = (fds[i].events & MOTE_POLL_OUT) |
                             (readable(&conns[k]) ? (fds[i].events & MOTE_POLL_IN) : 0u);
        ready += fds[i].revents != 0;
    }
    if (ready == 0 && timeout > 0)
        fs.now += (uint32_t)timeout; /* nothing to do: time passes */
    return ready;
}

static int f_resolve(void *ctx, const char *host, uint16_t port, int *wait_fd)
{
    (void)ctx, (void)host, (void)port;
    *wait_fd = RESOLVE_FD;
    return 1;
}

static int f_resolve_result(void *ctx, int req, struct mote_addr *out, unsigned max)
{
    (void)ctx, (void)req;
    if (max < 1)
        return MOTE_ERR_DNS;
    memset(out, 0, sizeof(*out));
    out->family = 4;
    out->port = 80;
    out->addr[0] = 127;
    out->addr[3] = 1;
    return 1;
}

static void f_resolve_end(void *ctx, int req)
{
    (void)ctx, (void)req;
}

static int f_connect(void *ctx, const struct mote_addr *a)
{
    struct conn *c;

    (void)ctx, (void)a;
    if (fs.nconn >= CONNS)
        return MOTE_ERR_CONNREFUSED;
    c = &conns[fs.nconn];
    memset(c, 0, sizeof(*c));
    c->open = true;
    return FD0 + (int)fs.nconn++;
}

static int f_connect_done(void *ctx, int fd)
{
    (void)ctx, (void)fd;
    return 0;
}

static struct mote_json js;

/* Property 2 on one request (head and body). */
static void check_request(const char *r, size_t head, size_t len)
{
    size_t i;

    for (i = 0; i < head; i++) {
        unsigned char ch = (unsigned char)r[i];

        if (ch == '\r' && i + 1 < head && r[i + 1] == '\n') {
            i++;
            continue;
        }
        if (ch < 0x20 || ch > 0x7e)
            __builtin_trap(); /* a head with a byte that is not printable ASCII */
    }
    if (len > head && (mote_json_parse(&js, r + head, len - head) <= 0 ||
                       !mote_utf8_valid(r + head, len - head) ||
                       mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT))
        __builtin_trap(); /* a POST whose body is not strict JSON */
}

static int f_send(void *ctx, int fd, const void *buf, size_t n)
{
    int k = fd - FD0;
    struct conn *c;
    size_t keep = n < SENT_MAX - fs.sent_len ? n : SENT_MAX - fs.sent_len, i;

    (void)ctx;
    if (k < 0 || k >= CONNS || !conns[k].open)
        return MOTE_ERR_PIPE;
    c = &conns[k];
    memcpy(fs.sent + fs.sent_len, buf, keep);
    fs.sent_len += keep;
    fs.sent_total += n;
    for (i = 0; i < n; i++) {
        if (c->req_len < sizeof(c->req))
            c->req[c->req_len] = ((const char *)buf)[i];
        c->req_len++;
        if (c->req_len == 4 && memcmp(c->req, "GET ", 4) == 0)
            c->stream = true;
        if (c->head_len == 0 && c->req_len >= 4 && c->req_len <= sizeof(c->req) &&
            memcmp(c->req + c->req_len - 4, "\r\n\r\n", 4) == 0) {
            const char *cl = NULL;
            size_t h;

            c->head_len = c->req_len;
            for (h = 0; h + 16 < c->head_len; h++) {
                if (memcmp(c->req + h, "\r\nContent-Length:", 17) == 0) {
                    cl = c->req + h + 17;
                    break;
                }
            }
            c->body_need = 0;
            while (cl != NULL && (*cl == ' ' || (*cl >= '0' && *cl <= '9'))) {
                if (*cl != ' ')
                    c->body_need = c->body_need * 10 + (size_t)(*cl - '0');
                cl++;
            }
        }
        if (c->head_len != 0 && c->req_len == c->head_len + c->body_need) {
            if (c->req_len <= sizeof(c->req))
                check_request(c->req, c->head_len, c->req_len);
            c->waiting++;
            c->req_len = c->head_len = c->body_need = 0;
        }
    }
    return (int)n;
}

static int f_recv(void *ctx, int fd, void *buf, size_t n)
{
    int k = fd - FD0;
    struct conn *c;
    size_t take_n;

    (void)ctx;
    if (k < 0 || k >= CONNS || !conns[k].open)
        return MOTE_ERR_BADF;
    c = &conns[k];
    if (c->seg_at == c->seg_len) {
        if (!more())
            return 0; /* the responses ran out: every connection ends */
        if (stream_takes(c))
            c->waiting++;
        if (c->waiting == 0 || !take(c))
            return MOTE_ERR_AGAIN;
    }
    take_n = c->seg_len - c->seg_at;
    if (take_n > n)
        take_n = n;
    if (fs.piece > 0 && take_n > fs.piece)
        take_n = fs.piece;
    memcpy(buf, c->seg + c->seg_at, take_n);
    c->seg_at += take_n;
    return (int)take_n;
}

static void f_close(void *ctx, int fd)
{
    int k = fd - FD0;

    (void)ctx;
    if (k >= 0 && k < CONNS)
        conns[k].open = false;
}

static struct mote_port port;
static struct mote_loop loop;
static struct mote_mcp mcp;
static struct mote_mcp_call call;
static const char *const headers[] = {"Authorization: " SECRET, NULL};

struct outcome {
    uint32_t hash;
    uint64_t sent;
};

static void no_secret(const char *s)
{
    if (strstr(s, SECRET) != NULL || strstr(s, &SECRET[7]) != NULL)
        __builtin_trap(); /* the header's value in what mote keeps */
}

/* Properties 2 and 3 on the tool list and what mote keeps. */
static void check_kept(bool with_call)
{
    const struct mote_mcp_server *s = &mcp.srv[0];
    unsigned k;

    mcp_kit_check_tools(&js, s);
    for (k = 0; k < s->ntools; k++)
        no_secret(s->tools[k].desc);
    no_secret(s->errmsg);
    if (with_call)
        no_secret(call.result);
}

static void run(const uint8_t *data, size_t size, size_t piece, bool sse, bool cancel,
                struct outcome *o)
{
    const struct mote_mcp_server *s = &mcp.srv[0];
    mote_job_id job = 0;
    unsigned turn, call_turn = 0;
    int left;

    memset(&fs, 0, offsetof(__typeof__(fs), sent));
    memset(conns, 0, sizeof(conns));
    fs.data = data;
    fs.size = size;
    fs.piece = piece;
    fs.sse = sse;
    fs.now = 1000;
    memset(o, 0, sizeof(*o));
    mcp_kit_port(&port, f_now, f_wait);
    port.net_resolve = f_resolve;
    port.net_resolve_result = f_resolve_result;
    port.net_resolve_end = f_resolve_end;
    port.net_connect = f_connect;
    port.net_connect_done = f_connect_done;
    port.net_send = f_send;
    port.net_recv = f_recv;
    port.net_close = f_close;
    mcp_kit_client(&loop, &port, &mcp);
    mcp.timeout_ms = 2000;
    if (mote_mcp_add_http(&mcp, "f", sse ? MOTE_MCP_SSE : MOTE_MCP_HTTP,
                          sse ? "http://h.example/sse" : "http://h.example/mcp", headers) != 0)
        __builtin_trap();
    mote_mcp_start_all(&mcp);
    /* Bounded: the responses, and the waits the deadlines take. */
    for (turn = 0; turn < size + 600; turn++) {
        if (mcp_kit_call(&loop, &mcp, &call, &job)) {
            call_turn = turn;
        }
        if (cancel && job != 0 && turn == call_turn + 2)
            (void)mote_job_cancel(&loop, job);
        if (mote_loop_poll(&loop, -1) < 0)
            __builtin_trap();
        if (!more() && s->state != MOTE_MCP_STARTING && s->state != MOTE_MCP_LISTING &&
            mcp_kit_call_over(&loop, job))
            break;
    }
    check_kept(job != 0);
    mote_mcp_disconnect_begin(&mcp, 1000);
    for (turn = 0; turn < 200 && (left = mote_mcp_disconnect_poll(&mcp, turn > 100)) > 0; turn++) {
        if (mote_loop_poll(&loop, 5) < 0)
            __builtin_trap();
    }
    mcp_kit_mix_outcome(&o->hash, &loop, s, job, &call);
    mcp_kit_mix(&o->hash, fs.sent, fs.sent_len);
    o->sent = fs.sent_total;
    if (getenv("MOTE_FUZZ_DEBUG") != NULL) /* (by hand: what each run made of it) */
        fprintf(stderr, "piece %zu: state %u '%s' tools %u call %s '%s' sent %llu:\n%.*s\n", piece,
                s->state, s->errmsg, s->ntools,
                job != 0 ? mote_job_state_name(mote_job_state(&loop, job)) : "-",
                call.result, (unsigned long long)fs.sent_total, (int)fs.sent_len, fs.sent);
    mote_loop_deinit(&loop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct outcome whole, split, again;
    bool sse, cancel;

    if (size < 1)
        return 0;
    sse = (data[0] & 0x10) != 0;
    cancel = (data[0] & 0x20) != 0;
    run(data + 1, size - 1, 0, sse, cancel, &whole);
    run(data + 1, size - 1, 1 + (data[0] & 0x0f), sse, cancel, &split);
    run(data + 1, size - 1, 1 + (data[0] & 0x0f), sse, cancel, &again);
    if (split.hash != again.hash || split.sent != again.sent)
        __builtin_trap(); /* the same input, another outcome */
    (void)whole;
    return 0;
}
