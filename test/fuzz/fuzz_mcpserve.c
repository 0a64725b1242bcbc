/* fuzz_mcpserve - mote serve's MCP server (src/serve_mcp*.c,
 * src/serve_follow.c) and its OpenAI door (src/serve_oai.c) reading what
 * a client sends, on the test port: after an initialize, each part of
 * the input (parts end at a NUL byte) is the body of a POST to /mcp, or,
 * when the part begins with '@', of a POST to /v1/chat/completions, on a
 * connection of its own; the loop turns and time passes (progress ticks)
 * after each. The first byte picks the protocol version, the Accept the
 * client sends, and whether calls are asked about (the policy's ask).
 *
 * Properties:
 *  1. Every response is a complete HTTP/1.1 response with a known status,
 *     and every JSON it carries (a body, each event's data, each line of
 *     a chunked JSON array) is strict JSON (no member named twice).
 *  2. Once every client left, nothing is followed any more: every
 *     follow is free and no connection has a door (no state outlives its
 *     clients). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/serve_int.h"
#include "mote/mote_agent.h"
#include "mote/mote_serve.h"
#include "../../port/test/mote_tport.h"
#include "../serve_kit.h"

static struct mote_tport_resp script[1];
static struct mote_json js;

static int probe_step(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    (void)l, (void)self;
    mote_tool_out(run, run->input, run->input_len); /* the arguments, back */
    return MOTE_STEP_DONE;
}

static const struct mote_tool probe = {"probe", "echo", "{\"type\":\"object\"}", probe_step, NULL,
                                       NULL, 0};

static void turns(unsigned n)
{
    while (n-- > 0)
        (void)mote_loop_poll(&loop, 10);
}

/* JSON at p[0..n) (white space around it allowed) is strict. */
static void strict(const char *p, size_t n)
{
    while (n > 0 && (*p == ' ' || *p == '\n' || *p == '\r'))
        p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\r'))
        n--;
    if (n == 0)
        return; /* (an empty body: a 202, or a cancelled call's stream) */
    if (mote_json_parse(&js, p, n) <= 0 ||
        mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS, NULL, 0) < 0)
        __builtin_trap();
}

/* Checks one response in r (the whole of what a connection got). */
static void check_response(char *r, size_t len)
{
    static char body[MOTE_TPORT_PEER_OUT];
    char *b = strstr(r, "\r\n\r\n"), *p;
    unsigned status;
    size_t o = 0;

    if (len == 0)
        return; /* still waiting (a call that asks) */
    if (b == NULL || sscanf(r, "HTTP/1.1 %u", &status) != 1 || status < 200 || status > 599)
        __builtin_trap();
    b += 4;
    if (strstr(r, "Transfer-Encoding: chunked") != NULL && strstr(r, "\r\n0\r\n\r\n") == NULL)
        return; /* a stream not ended (a call waiting for approval) */
    if (strstr(r, "Transfer-Encoding: chunked") != NULL) {
        for (p = b;;) {
            unsigned long n = strtoul(p, NULL, 16);

            p = strstr(p, "\r\n");
            if (p == NULL)
                __builtin_trap();
            p += 2;
            if (n == 0)
                break;
            memcpy(body + o, p, n);
            o += n;
            p += n + 2;
        }
    } else {
        o = len - (size_t)(b - r);
        memcpy(body, b, o);
    }
    body[o] = '\0';
    if (strstr(r, "text/event-stream") != NULL) {
        for (p = body; (p = strstr(p, "data: ")) != NULL;) {
            char *e = strchr(p, '\n');

            if (e == NULL)
                __builtin_trap();
            if (strncmp(p + 6, "[DONE]", 6) != 0)
                strict(p + 6, (size_t)(e - p - 6));
            p = e;
        }
    } else {
        strict(body, o);
    }
}

static int post(const char *path, const char *sid, const char *accept, const char *body,
                size_t n)
{
    static char req[70000 + 512];
    int k = snprintf(req, 512,
                     "POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nAccept: "
                     "%s\r\n%s%s%sContent-Length: %zu\r\n\r\n",
                     path, accept, sid != NULL ? "Mcp-Session-Id: " : "",
                     sid != NULL ? sid : "", sid != NULL ? "\r\n" : "", n);
    int p = mote_tport_peer_connect(&tp, false);

    if (p < 0)
        return -1;
    memcpy(req + k, body, n);
    mote_tport_peer_write(&tp, p, req, (size_t)k + n);
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const accepts[] = {"application/json, text/event-stream",
                                          "application/json", "text/event-stream"};
    static const char *const versions[] = {"2025-06-18", "2025-03-26", "2025-11-25"};
    char init[256], sid[40] = "";
    int peers[64], np = 0, p;
    size_t off = 1;
    unsigned i;
    const char *h;

    if (size == 0 || size > 60000)
        return 0;
    kit_conf(script);
    if (data[0] & 16)
        cc.approval = MOTE_APPROVE_ASK;
    vc.mcp_page_bytes = 1024;
    if (kit_start(&probe, 1) < 0)
        __builtin_trap();
    snprintf(init, sizeof(init),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{\"elicitation\":{}},\"clientInfo\":{"
             "\"name\":\"fuzz\"}}}",
             versions[data[0] % 3]);
    p = post("/mcp", NULL, accepts[0], init, strlen(init));
    turns(3);
    h = strstr(mote_tport_peer_get(&tp, p)->out, "Mcp-Session-Id: ");
    if (h != NULL)
        snprintf(sid, sizeof(sid), "%.32s", h + 16);
    peers[np++] = p;
    while (off < size && np < 60) {
        const uint8_t *e = memchr(data + off, 0, size - off);
        size_t n = e != NULL ? (size_t)(e - (data + off)) : size - off;
        bool oai = n > 0 && data[off] == '@';

        p = oai ? post("/v1/chat/completions", NULL, "application/json", (const char *)data + off + 1,
                       n - 1)
                : post("/mcp", sid[0] != '\0' ? sid : NULL, accepts[(data[0] >> 2) % 3],
                       (const char *)data + off, n);
        if (p >= 0)
            peers[np++] = p;
        turns(4);
        mote_tport_advance(&tp, MOTE_SERVE_MCP_PROGRESS_MS);
        turns(2);
        off += n + 1;
    }
    turns(10);
    for (i = 0; i < (unsigned)np; i++) {
        struct mote_tport_peer *q = mote_tport_peer_get(&tp, peers[i]);

        q->out[q->out_len < MOTE_TPORT_PEER_OUT ? q->out_len : MOTE_TPORT_PEER_OUT - 1] = '\0';
        check_response(q->out, q->out_len);
        mote_tport_peer_close(&tp, peers[i]);
    }
    turns(10);
    {
        struct serve *sv = mote_serve_state(&srv);

        for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
            if (sv->mcp.chans[i].kind != SC_NONE && sv->http.conns[i].state == MOTE_HTTPD_FREE)
                __builtin_trap(); /* a door left on a closed connection */
        }
        for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
            const struct serve_follow *f = &sv->mcp.follows[i];

            /* a call or turn may still run (the loop has not ended it);
             * none is bound to a connection that is gone */
            if (f->kind != SF_FREE && f->chan >= 0)
                __builtin_trap();
        }
    }
    kit_stop();
    mote_tport_deinit(&tp);
    return 0;
}
