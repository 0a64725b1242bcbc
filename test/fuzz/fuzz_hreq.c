/* fuzz_hreq - the server's HTTP/1.1 request parser (mote_hreq.h) and its
 * chunked body decoder.
 * Properties:
 *  - the outcome (state, status, where the head ended, every decoded
 *    field) does not depend on how the bytes are split;
 *  - a refusal has a status of the documented set and a one-line reason;
 *  - an accepted head ended with an empty line, its path starts with '/'
 *    and holds no space or control byte, Content-Length is what its digits
 *    say;
 *  - an accepted request written back in canonical form parses to the
 *    same fields (what the server acts on is what the client sent);
 *  - a chunked request is never also framed by a Content-Length, and is
 *    not kept alive if it had one; its body (the bytes after the head)
 *    decodes to the same bytes, the same end and the same refusal
 *    however it is split, never more than the room given. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mote/mote_hreq.h"

static struct mote_hreq r;
static char a[MOTE_SERVE_HEAD_MAX + 2048], b[MOTE_SERVE_HEAD_MAX + 2048];

#define OR_NONE(s) ((s) != NULL ? (s) : "(none)")

/* The fields of the MCP and OpenAI doors and the page's, one string
 * (cap bytes). */
static const char *more_fields(char *out, size_t cap)
{
    snprintf(out, cap, "%s|%s|%s|%s|%s|%u", OR_NONE(r.accept), OR_NONE(r.origin),
             OR_NONE(r.mcp_session_id), OR_NONE(r.mcp_protocol_version), OR_NONE(r.conversation),
             r.accept_gzip);
    return out;
}

/* A summary of the outcome, comparable between runs. */
static size_t outcome(int rc, size_t used, char *out, size_t cap)
{
    static char more[MOTE_SERVE_HEAD_MAX + 64];
    int n;

    if (rc == MOTE_HREQ_DONE)
        n = snprintf(out, cap, "D|%zu|%d|%s|%s|%s?%s|%u|%d|%d|%llu|%d|%d|%s|%s|%s|%s|%s|%u", used,
                     r.method, r.method_name, mote_hreq_method_name(r.method), r.path, r.query,
                     r.minor, r.chunked, r.has_length, (unsigned long long)r.content_length,
                     r.keep_alive,
                     r.expect_continue, r.host ? r.host : "(none)",
                     r.authorization ? r.authorization : "(none)",
                     r.last_event_id ? r.last_event_id : "(none)",
                     r.content_type ? r.content_type : "(none)", more_fields(more, sizeof(more)),
                     r.fields);
    else
        n = snprintf(out, cap, "%d|%u|%s|%zu", rc, r.status, r.why ? r.why : "", used);
    return n < 0 ? 0 : (size_t)n;
}

/* Feeds in pieces of 1 + data[k] % mod bytes (mod 0: at once). */
static int run(const uint8_t *data, size_t size, unsigned mod, size_t *used)
{
    size_t off = 0, k = 0;
    int rc = MOTE_HREQ_READING;

    mote_hreq_reset(&r);
    while (off < size && rc == MOTE_HREQ_READING) {
        size_t n = mod == 0 ? size - off : 1 + data[k++ % size] % mod, u = 0;

        if (n > size - off)
            n = size - off;
        rc = mote_hreq_feed(&r, (const char *)data + off, n, &u);
        if (u > n)
            __builtin_trap();
        off += u;
        if (rc == MOTE_HREQ_READING && u != n)
            __builtin_trap(); /* while reading, everything given is taken */
    }
    *used = off;
    return rc;
}

static void check_done(const uint8_t *data, size_t used)
{
    const char *p;
    uint64_t cl = 0;

    if (used < 2 || data[used - 1] != '\n')
        __builtin_trap();
    if (r.path[0] != '/')
        __builtin_trap();
    for (p = r.path; *p != '\0'; p++) {
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7F || *p == '?')
            __builtin_trap();
    }
    for (p = r.query; *p != '\0'; p++) {
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7F)
            __builtin_trap();
    }
    if (r.minor > 1 || (r.minor == 1 && r.host == NULL))
        __builtin_trap();
    if (!r.has_length && r.content_length != 0)
        __builtin_trap();
    if (r.chunked && (r.has_length || r.minor != 1))
        __builtin_trap();
    (void)cl;
}

/* The request written back canonically. */
static size_t canonical(char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s %s%s%s HTTP/1.%u\r\n", r.method_name, r.path,
                     r.query[0] != '\0' ? "?" : "", r.query, r.minor);
    size_t len = n > 0 ? (size_t)n : 0;

#define ADD(...)                                                                   \
    do {                                                                           \
        int k_ = snprintf(out + len, cap > len ? cap - len : 0, __VA_ARGS__);       \
        len += k_ > 0 ? (size_t)k_ : 0;                                             \
    } while (0)
    if (r.host != NULL)
        ADD("Host: %s\r\n", r.host);
    if (r.has_length)
        ADD("Content-Length: %llu\r\n", (unsigned long long)r.content_length);
    if (r.chunked)
        ADD("Transfer-Encoding: chunked\r\n");
    ADD("Connection: %s\r\n", r.keep_alive ? "keep-alive" : "close");
    if (r.expect_continue)
        ADD("Expect: 100-continue\r\n");
    if (r.authorization != NULL)
        ADD("Authorization: %s\r\n", r.authorization);
    if (r.last_event_id != NULL)
        ADD("Last-Event-ID: %s\r\n", r.last_event_id);
    if (r.content_type != NULL)
        ADD("Content-Type: %s\r\n", r.content_type);
    if (r.accept != NULL)
        ADD("Accept: %s\r\n", r.accept);
    if (r.origin != NULL)
        ADD("Origin: %s\r\n", r.origin);
    if (r.accept_gzip != 0)
        ADD("Accept-Encoding: %s\r\n",
            r.accept_gzip == 1 ? "gzip" : r.accept_gzip == 2 ? "gzip;q=0" : "*");
    if (r.mcp_session_id != NULL)
        ADD("Mcp-Session-Id: %s\r\n", r.mcp_session_id);
    if (r.mcp_protocol_version != NULL)
        ADD("MCP-Protocol-Version: %s\r\n", r.mcp_protocol_version);
    if (r.conversation != NULL)
        ADD("X-Mote-Conversation: %s\r\n", r.conversation);
    ADD("\r\n");
#undef ADD
    return len;
}

/* The chunked body after the head, in pieces of 1 + data[k] % mod bytes
 * (mod 0: at once), into a room of `room` bytes: a summary of the
 * outcome. */
static size_t body_run(const uint8_t *data, size_t size, size_t head, unsigned mod, size_t room,
                       char *out, size_t cap)
{
    static char dec[4096];
    size_t off = head, got = 0, k = 0, used, made;
    uint32_t hash = 2166136261u;
    int rc = MOTE_HREQ_READING, n;

    if (run(data, size, 0, &used) != MOTE_HREQ_DONE || !r.chunked)
        return 0;
    while (off < size && rc == MOTE_HREQ_READING) {
        size_t p = mod == 0 ? size - off : 1 + data[k++ % size] % mod;

        if (p > size - off)
            p = size - off;
        rc = mote_hreq_body(&r, (const char *)data + off, p, &used, dec + got, room - got, &made);
        if (used > p || made > room - got || (rc == MOTE_HREQ_READING && used != p))
            __builtin_trap();
        off += used;
        got += made;
    }
    for (k = 0; k < got; k++)
        hash = (hash ^ (unsigned char)dec[k]) * 16777619u;
    n = snprintf(out, cap, "%d|%u|%zu|%zu|%08x", rc, rc == MOTE_HREQ_BAD ? r.status : 0u, off, got,
                 (unsigned)hash);
    if (rc == MOTE_HREQ_BAD && r.status != 400 && r.status != 413 && r.status != 431)
        __builtin_trap();
    return n < 0 ? 0 : (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t used, used2, na, nb, len;
    unsigned mods[] = {1, 3, 17, 200};
    static char canon[MOTE_SERVE_HEAD_MAX * 2];
    int rc, rc2, i;

    if (size == 0)
        return 0;
    rc = run(data, size, 0, &used);
    na = outcome(rc, used, a, sizeof(a));
    if (rc == MOTE_HREQ_BAD) {
        unsigned s = r.status;

        if (!(s == 400 || s == 411 || s == 413 || s == 414 || s == 417 || s == 431 ||
              s == 501 || s == 505) || r.why == NULL || r.why[0] == '\0' || strchr(r.why, '\n') != NULL)
            __builtin_trap();
    } else if (rc == MOTE_HREQ_DONE) {
        check_done(data, used);
    }
    for (i = 0; i < 4; i++) {
        rc2 = run(data, size, mods[i], &used2);
        nb = outcome(rc2, used2, b, sizeof(b));
        if (na != nb || memcmp(a, b, na) != 0)
            __builtin_trap(); /* the split changed the outcome */
    }
    if (rc != MOTE_HREQ_DONE)
        return 0;
    if (r.chunked) {
        size_t head = used, rooms[2] = {4096, 1 + data[0] % 64};
        unsigned j;

        for (j = 0; j < 2; j++) {
            na = body_run(data, size, head, 0, rooms[j], a, sizeof(a));
            for (i = 0; i < 4; i++) {
                nb = body_run(data, size, head, mods[i], rooms[j], b, sizeof(b));
                if (na != nb || memcmp(a, b, na) != 0)
                    __builtin_trap(); /* the split changed the body */
            }
        }
        rc = run(data, size, 0, &used);
    }
    /* Round trip: the canonical form of what was decoded decodes the same. */
    rc = run(data, size, 0, &used);
    len = canonical(canon, sizeof(canon));
    if (len >= sizeof(canon) || len > MOTE_SERVE_HEAD_MAX)
        return 0;
    {
        static char m1[sizeof(a)], more[MOTE_SERVE_HEAD_MAX + 64];
        size_t n1;
        n1 = snprintf(m1, sizeof(m1), "%d|%s|%s|%u|%d|%d|%llu|%d|%d|%s|%s|%s|%s|%s", r.method,
                      r.path, r.query, r.minor, r.chunked, r.has_length,
                      (unsigned long long)r.content_length, r.keep_alive, r.expect_continue,
                      r.host ? r.host : "(none)", r.authorization ? r.authorization : "(none)",
                      r.last_event_id ? r.last_event_id : "(none)",
                      r.content_type ? r.content_type : "(none)", more_fields(more, sizeof(more)));
        rc2 = run((const uint8_t *)canon, len, 0, &used2);
        if (rc2 != MOTE_HREQ_DONE || used2 != len)
            __builtin_trap(); /* what was accepted, written canonically, is accepted */
        nb = snprintf(b, sizeof(b), "%d|%s|%s|%u|%d|%d|%llu|%d|%d|%s|%s|%s|%s|%s", r.method, r.path,
                      r.query, r.minor, r.chunked, r.has_length, (unsigned long long)r.content_length,
                      r.keep_alive, r.expect_continue, r.host ? r.host : "(none)",
                      r.authorization ? r.authorization : "(none)",
                      r.last_event_id ? r.last_event_id : "(none)",
                      r.content_type ? r.content_type : "(none)", more_fields(more, sizeof(more)));
        if (n1 != nb || memcmp(m1, b, n1) != 0)
            __builtin_trap();
    }
    return 0;
}
