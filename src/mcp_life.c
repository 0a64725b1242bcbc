/*
 * mcp_life.c - an MCP server's deadlines, progress and restarts: the
 * progress a server sends for the pending call gives the call its
 * deadline again (mcp.c's timer keeps it), and a stdio server that
 * exited after it was ready is started again by the next call of one of
 * its tools, a bounded number of times, after a wait that doubles (see
 * docs/MCP.md). The protocol (mcp.c) calls in; the new start's
 * initialize goes back through the protocol's table (up->restarted).
 */
#include <string.h>

#include "mcp_int.h"
#include "mcp_wire.h"
#include "mote/mote.h"

void mote_mcp_life_failed(struct mote_mcp_server *s)
{
    s->restarting = false;
    if (s->kind == MOTE_MCP_STDIO && s->was_ready) {
        /* started again by a call, after a wait that doubles each time */
        unsigned sh = s->restarts < 6 ? s->restarts : 6;
        uint32_t at = mote_loop_now(s->m->loop) + ((uint32_t)MOTE_MCP_RESTART_MS << sh);

        s->restart_at = at != 0 ? at : 1;
    }
}

bool mote_mcp_restartable(const struct mote_mcp_server *s)
{
    static const int max = MOTE_MCP_RESTART_MAX; /* (0 at the floors) */

    return s->kind == MOTE_MCP_STDIO && s->state == MOTE_MCP_FAILED && s->was_ready &&
           s->exited && (int)s->restarts < max && !s->m->dc;
}

/* ---- progress ---- */

/* The number token `t` of j as its text (at most 15 bytes), after `sep`,
 * into sb; nothing when it is not a number. */
static void say_number(struct mote_sb *sb, const struct mote_json *j, int t, const char *sep)
{
    char num[16];
    size_t n = 0, i;
    const char *raw = mote_json_type_of(j, t) == MOTE_JSON_PRIMITIVE ? mote_json_raw(j, t, &n)
                                                                      : NULL;

    for (i = 0; raw != NULL && i < n && i + 1 < sizeof(num); i++)
        num[i] = (raw[i] >= '0' && raw[i] <= '9') || raw[i] == '.' ? raw[i] : '?';
    num[raw != NULL ? i : 0] = '\0';
    if (num[0] == '\0')
        return;
    mote_sb_s(sb, sep);
    mote_sb_s(sb, num);
}

void mote_mcp_progress(struct mote_mcp_server *s, int params)
{
    static const uint32_t log_ms = MOTE_MCP_PROGRESS_LOG_MS; /* (0 at the floors) */
    struct mote_json *j = &s->m->json;
    uint32_t now = mote_loop_now(s->m->loop), until, limit;
    int64_t token;

    if (s->req_id == 0 || s->req_kind != MCP_REQ_CALL ||
        mote_json_int(j, mote_json_member(j, params, "progressToken"), &token) < 0 ||
        token != s->req_id)
        return; /* (not the pending call's: a late one, or another token) */
    if (MOTE_MCP_PROGRESS_MAX_MS > 0) {
        /* the call's deadline from now, never past its start's bound; the
         * protocol's timer, when it fires, finds it later and waits on */
        until = now + s->req_ms;
        limit = s->call_t0 + (uint32_t)MOTE_MCP_PROGRESS_MAX_MS;
        if (mote_before(limit, until))
            until = limit;
        if (mote_before(s->req_deadline, until)) {
            s->req_deadline = until;
            if (s->kind != MOTE_MCP_STDIO)
                mote_mcp_http_progress(s); /* (the exchange's own deadline) */
        }
    }
    if (s->progress_said == 0 || now - s->progress_said >= log_ms) {
        char line[200], text[120];
        struct mote_sb sb;
        size_t i;

        s->progress_said = now != 0 ? now : 1;
        mote_sb_init(&sb, line, sizeof(line));
        mote_sb_s(&sb, "progress");
        say_number(&sb, j, mote_json_member(j, params, "progress"), " ");
        say_number(&sb, j, mote_json_member(j, params, "total"), "/");
        if (mote_json_str(j, mote_json_member(j, params, "message"), text, sizeof(text)) > 0) {
            for (i = 0; text[i] != '\0'; i++) {
                if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
                    text[i] = '?';
            }
            mote_sb_s(&sb, ": ");
            mote_sb_s(&sb, text);
        }
        mote_mcp_redact(s, line, sb.len);
        mcp_log(s, line, NULL, NULL);
    }
}

/* ---- restarts ---- */

/* Starts server `s` again: a new process; its initialize (the protocol's),
 * then a tool list that replaces the old one. */
static void restart(struct mote_mcp_server *s)
{
    char line[80];
    struct mote_sb sb;

    s->restarts++;
    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_num(&sb, "starting the server again (", s->restarts, " of ");
    mote_sb_num(&sb, "", MOTE_MCP_RESTART_MAX, ", MOTE_MCP_RESTART_MAX)");
    mcp_log(s, line, NULL, NULL);
    mote_mcp_stdio_reset(s);
    s->req_id = 0;
    s->call = NULL;
    s->inlen = s->outlen = 0;
    s->dropped_line = s->paused = s->relist = false;
    s->in_flags = 0;
    mote_mcp_in_reset(s);
    s->relisting = true; /* (its new list replaces the old one) */
    s->restarting = true;
    s->state = MOTE_MCP_STARTING;
    if (!mote_mcp_stdio_start(s)) {
        s->state = MOTE_MCP_FAILED; /* (said by the transport) */
        s->restarting = false;
        return;
    }
    s->m->up->restarted(s);
}

static void on_restart_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_mcp_server *s = arg;

    (void)loop, (void)t;
    s->timer = 0;
    if (mote_mcp_restartable(s))
        restart(s); /* (the calls that wait are woken when it is ready or failed) */
}

/* The call keeps its tool's name in its result buffer (nothing else is
 * there yet) until the new list is in. */
static void keep_name(struct mote_mcp_call *c, const struct mote_mcp_server *s)
{
    if (!c->renamed && c->tool < s->ntools) {
        mote_str_copy(c->result, sizeof(c->result), s->tools[c->tool].remote);
        c->renamed = true;
    }
}

bool mote_mcp_restart_wait(struct mote_mcp_call *c, struct mote_mcp_server *s)
{
    struct mote_loop *loop = s->m->loop;
    uint32_t now = mote_loop_now(loop);
    struct mote_sb sb;

    if (s->restarting && (s->state == MOTE_MCP_STARTING || s->state == MOTE_MCP_LISTING)) {
        keep_name(c, s);
        return true;
    }
    if (mote_mcp_restartable(s)) {
        keep_name(c, s);
        if (s->restart_at != 0 && mote_before(now, s->restart_at)) {
            if (s->timer != 0)
                (void)mote_timer_stop(loop, s->timer);
            if (mote_timer_start(loop, s->restart_at - now, on_restart_timer, s, 0, &s->timer) ==
                0)
                return true;
            s->timer = 0; /* (no timer: now) */
        }
        restart(s);
        if (s->state == MOTE_MCP_STARTING)
            return true;
    }
    mote_sb_init(&sb, c->result, sizeof(c->result));
    mote_sb_s(&sb, "the MCP server is not running");
    if (s->errmsg[0] != '\0' && s->state == MOTE_MCP_FAILED) {
        mote_sb_s(&sb, ": ");
        mote_sb_s(&sb, s->errmsg);
    }
    c->len = sb.len;
    c->is_error = true;
    c->renamed = false;
    return false;
}

bool mote_mcp_call_refind(struct mote_mcp_call *c, struct mote_mcp_server *s)
{
    static const char msg[] = "the MCP server was started again and no longer offers this tool";
    unsigned k;

    c->renamed = false;
    for (k = 0; k < s->ntools && strcmp(s->tools[k].remote, c->result) != 0; k++) {
    }
    if (k < s->ntools) {
        c->tool = k;
        return true;
    }
    memcpy(c->result, msg, sizeof(msg));
    c->len = sizeof(msg) - 1;
    c->is_error = true;
    return false;
}
