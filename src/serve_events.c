/*
 * serve_events.c - the session's events (mote_serve_event) told to the
 * API server's event streams: a new record to the streams at its offset,
 * live text and state changes to the streams that are caught up, the
 * shutdown's report kept for the last event. Each live event is
 * formatted once for every client.
 */
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_time.h"
#include "serve_int.h"
#include "util.h"

/* An event about a tool call opened: its "ask_id" (when `asked`: the
 * approval's events), "call_id" and "name". */
static void ev_open_call(struct serve *sv, struct mote_sb *k, struct mote_jw *w, const char *name,
                         const struct mote_event *ev, bool asked)
{
    mote_serve_ev_open(sv, k, w, name);
    if (asked) {
        mote_jw_kint(w, "ask_id", ev->ask_id);
    }
    mote_jw_kstr(w, "call_id", ev->id);
    mote_jw_kstr(w, "name", ev->name);
}

/* A new record of conversation `id` at `off`: sent at once to the
 * streams that are at it, if it fits (the others read it from storage). */
static void on_record(struct serve *sv, const char *id, uint64_t off, const char *text,
                      size_t len)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct serve_stream *st = mote_serve_follower(sv, i, id);
        struct mote_httpd_conn *c = &sv->http.conns[i];
        char d[24];
        size_t nd;

        if (st == NULL)
            continue;
        if (!st->in_record && !st->skip && st->told_state && st->pos == off) {
            nd = mote_u64_dec(off, d);
            if (mote_httpd_room(c) >= 4 + nd + 21 + len + 2) {
                (void)mote_httpd_outs(c, "id: ");
                (void)mote_httpd_out(c, d, nd);
                (void)mote_httpd_outs(c, "\nevent: record\ndata: ");
                (void)mote_httpd_out(c, text, len);
                (void)mote_httpd_outs(c, "\n\n");
                st->pos = off + len + 1;
            } else {
                st->told_state = false; /* behind: read from the journal, state told again */
            }
        }
        mote_httpd_poke(&sv->http, c);
    }
}

/* The session is down: event streams get the last event, then the
 * engine closes everything. */
static void on_shutdown(struct serve *sv, const struct mote_event *ev)
{
    if (ev->report != NULL) {
        sv->sd_timed_out = ev->report->timed_out;
        sv->sd_marked = ev->report->conversations_marked;
    }
    mote_str_copy(sv->sd_reason, sizeof(sv->sd_reason), ev->text);
    if (sv->pub->phase < MOTE_SERVE_FINAL) {
        sv->pub->phase = MOTE_SERVE_FINAL;
        mote_httpd_close(&sv->http, mote_loop_now(sv->loop) + sv->http.conf.flush_ms);
    }
}

void mote_serve_event(struct mote_serve *pub, const struct mote_event *ev)
{
    struct serve *sv = mote_serve_state(pub);
    const char *id = ev->conv != NULL ? mote_conv_id(ev->conv) : "";
    struct mote_sb k;
    struct mote_jw w;

    if (ev->conv != NULL)
        mote_serve_touch(sv, ev->conv);
    mote_serve_metrics_event(sv, ev);
    mote_serve_mqtt_event(sv, ev);
    mote_serve_sched_event(sv, ev);
    mote_serve_follow_event(sv, ev);
    switch (ev->type) {
    case MOTE_EV_MCP:
        mote_serve_mcp_check_tools(sv); /* an MCP server's list may have changed */
        return;
    case MOTE_EV_RECORD:
        mote_serve_sum_record(sv, id, ev->offset, ev->text, ev->len);
        on_record(sv, id, ev->offset, ev->text, ev->len);
        return;
    case MOTE_EV_TEXT:
    case MOTE_EV_THINKING:
        mote_serve_ev_open(sv, &k, &w, ev->type == MOTE_EV_TEXT ? "text" : "thinking");
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        break;
    case MOTE_EV_STATE:
        mote_serve_ev_open(sv, &k, &w, "state");
        mote_jw_kstr(&w, "state", mote_conv_state_name(ev->state));
        mote_jw_kbool(&w, "loaded", true);
        mote_jw_kbool(&w, "busy", mote_conv_busy(ev->conv));
        if (!mote_conv_busy(ev->conv))
            mote_serve_recover_soon(sv); /* a slot may be free for one waiting */
        break;
    case MOTE_EV_APPROVAL: {
        const struct mote_conv_call *call;

        ev_open_call(sv, &k, &w, "approval", ev, true);
        mote_jw_key(&w, "input");
        if (ev->input_len > 0 && ev->input_len + 512 < sizeof(sv->ev))
            mote_jw_raw(&w, ev->input, ev->input_len);
        else
            mote_jw_null(&w);
        mote_jw_kint(&w, "input_bytes", (int64_t)ev->input_len);
        if (ev->conv != NULL && mote_conv_pending(ev->conv, &call) == ev->ask_id) {
            mote_jw_key(&w, "record"); /* where the whole input is, inline or not */
            mote_jw_int(&w, (int64_t)call->rec_off);
            mote_serve_deadline_json(sv, ev->conv, &w);
        }
        (void)mote_serve_show_into(sv, &w, 8, ev->name, ev->input, ev->input_len);
        mote_httpd_say(&sv->http, "conversation ", id, " waits for an approval");
        break;
    }
    case MOTE_EV_BUDGET: {
        char iso[MOTE_ISO_MAX];

        mote_serve_ev_open(sv, &k, &w, "budget");
        mote_jw_kstr(&w, "code", "budget");
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        mote_iso_write(iso, ev->until, 0, true);
        mote_jw_kstr(&w, "until", iso);
        mote_httpd_say(&sv->http, id, ": ", ev->text);
        break;
    }
    case MOTE_EV_APPROVAL_EXPIRED:
        ev_open_call(sv, &k, &w, "approval_expired", ev, true);
        mote_jw_kint(&w, "timeout_ms", ev->timeout_ms);
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        mote_httpd_say(&sv->http, id, ": ", ev->text);
        break;
    case MOTE_EV_TOOL_CALL:
        ev_open_call(sv, &k, &w, "tool_call", ev, false);
        break;
    case MOTE_EV_TOOL_RESULT:
        ev_open_call(sv, &k, &w, "tool_result", ev, false);
        mote_jw_kbool(&w, "is_error", ev->is_error);
        mote_jw_kint(&w, "bytes", (int64_t)ev->len);
        break;
    case MOTE_EV_TURN_END:
        mote_serve_ev_open(sv, &k, &w, "turn_end");
        mote_jw_kstr(&w, "stop_reason", ev->stop_reason != NULL ? ev->stop_reason : "");
        mote_jw_key(&w, "usage");
        mote_jw_obj(&w);
        mote_jw_kint(&w, "input_tokens", (int64_t)ev->turn_usage.input_tokens);
        mote_jw_kint(&w, "output_tokens", (int64_t)ev->turn_usage.output_tokens);
        mote_jw_kint(&w, "cache_read_tokens", (int64_t)ev->turn_usage.cache_read_tokens);
        mote_jw_kint(&w, "cache_write_tokens", (int64_t)ev->turn_usage.cache_write_tokens);
        mote_jw_obj_end(&w);
        mote_serve_recover_soon(sv);
        break;
    case MOTE_EV_CANCELLED:
        mote_serve_ev_open(sv, &k, &w, "cancelled");
        break;
    case MOTE_EV_RECOVERY:
        mote_serve_ev_open(sv, &k, &w, "recovery");
        mote_jw_kstr(&w, "action", mote_recovery_name((enum mote_recovery_action)ev->code));
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        mote_httpd_say(&sv->http, id, ": ", ev->text);
        break;
    case MOTE_EV_WARNING:
    case MOTE_EV_NOTE:
        mote_serve_ev_open(sv, &k, &w, ev->type == MOTE_EV_WARNING ? "warning" : "note");
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        break;
    case MOTE_EV_ERROR:
        mote_serve_ev_open(sv, &k, &w, "error");
        mote_jw_kstr(&w, "code",
                     mote_err_name(ev->code)); /* stable: "rate_limit", "storage", ... */
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        mote_jw_kbool(&w, "fatal", ev->fatal);
        mote_httpd_say(&sv->http, id, ": ", ev->text);
        mote_serve_recover_soon(sv);
        break;
    case MOTE_EV_SHUTDOWN:
        on_shutdown(sv, ev);
        return;
    default:
        return;
    }
    (void)mote_serve_ev_send(sv, &k, &w, id);
}
