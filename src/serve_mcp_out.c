/*
 * serve_mcp_out.c - what an MCP channel writes (serve_mcp.h), framed as
 * its transport frames messages: progress notifications, the elicited
 * approval of a call (its whole input, as the library shows a call), the
 * notification that withdraws it, a call's answer (written in parts as
 * the channel takes them, never interleaved with another message), and
 * the tool list's change.
 */
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_show.h"
#include "serve_int.h"
#include "util.h"

/* The framing of one message around msg[0..n) into dst (cap bytes):
 * the framed length, or 0 if it does not fit. */
static size_t framed(enum serve_frame frame, bool comma, const char *msg, size_t n, char *dst,
                     size_t cap)
{
    static const char sse[] = "event: message\ndata: ";
    size_t pre = frame == SF_FRAME_SSE ? sizeof(sse) - 1 : frame == SF_FRAME_JSON && comma ? 1 : 0;
    size_t post = frame == SF_FRAME_SSE ? 2 : frame == SF_FRAME_LINE ? 1 : 0;

    if (pre + n + post > cap)
        return 0;
    if (frame == SF_FRAME_SSE)
        memcpy(dst, sse, pre);
    else if (pre == 1)
        dst[0] = ',';
    memmove(dst + pre, msg, n);
    if (frame == SF_FRAME_SSE)
        memcpy(dst + pre + n, "\n\n", 2);
    else if (frame == SF_FRAME_LINE)
        dst[pre + n] = '\n';
    return pre + n + post;
}

/* A small message (in sv->resp, n bytes) written whole, or not now.
 * Returns the bytes written. */
static size_t put_small(struct serve *sv, enum serve_frame frame, bool *comma, size_t n,
                        char *out, size_t room)
{
    size_t k = framed(frame, *comma, sv->resp, n, out, room);

    if (k > 0 && frame == SF_FRAME_JSON)
        *comma = true;
    return k;
}

/* The display's pieces into the elicitation's message string (whole
 * characters, made safe by the display). */
static int to_message(void *arg, const char *p, size_t n)
{
    struct mote_jw *w = arg;

    mote_jw_str_more(w, p, n);
    return w->err;
}

static const char elicit_schema[] =
    "{\"type\":\"object\",\"properties\":{\"answer\":{\"type\":\"string\",\"title\":\"Run it?\","
    "\"enum\":[\"yes\",\"no\",\"always\"],\"enumNames\":[\"Yes, this once\",\"No\",\"Yes, and "
    "from now on for this tool in this conversation\"]},\"reason\":{\"type\":\"string\",\"title\":"
    "\"Why not (told to the model)\"}},\"required\":[\"answer\"]}";

static void more(struct mote_jw *w, const char *s)
{
    mote_jw_str_more(w, s, strlen(s));
}

/* A message of the server's own opened into sv->resp:
 * {"jsonrpc":"2.0","id":ID (a request; 0: a notification, none),
 * "method":METHOD; the caller adds its params and closes it. */
static void rpc_out(struct serve *sv, struct mote_sb *sb, struct mote_jw *w, int64_t id,
                    const char *method)
{
    mote_sb_init(sb, sv->resp, sizeof(sv->resp));
    mote_jw_init(w, mote_sb_put, sb);
    mote_jw_obj(w);
    mote_jw_kstr(w, "jsonrpc", "2.0");
    if (id != 0) {
        mote_jw_kint(w, "id", id);
    }
    mote_jw_kstr(w, "method", method);
}

/* The elicitation of follow f's approval into sv->resp: its length, or 0
 * (the question is gone, or the input is too large to show here). */
static size_t elicitation(struct serve *sv, struct serve_follow *f)
{
    struct mote_conv *cv = mote_serve_find(sv, f->conv);
    const struct mote_conv_call *call;
    struct mote_show_plain plain;
    struct mote_show_sink sink;
    struct mote_sb sb;
    struct mote_jw w;
    int n;

    if (cv == NULL || mote_conv_pending(cv, &call) != f->ask_id || call == NULL ||
        strcmp(call->id, f->ask_call) != 0)
        return 0;
    n = mote_journal_call_input(&cv->jr, call->rec_off, call->rec_idx, sv->scratch,
                                sizeof(sv->scratch), NULL);
    if (n < 0)
        return 0;
    rpc_out(sv, &sb, &w, sv->mcp.next_elicit, "elicitation/create");
    mote_jw_key(&w, "params");
    mote_jw_obj(&w);
    mote_jw_key(&w, "message");
    mote_jw_str_begin(&w);
    more(&w, "May this tool call run on the device (conversation ");
    more(&w, f->conv);
    more(&w, ")? All of its input is shown; what would not show, or would act on "
             "the text around it, is shown as a stand-in such as <U+202E>.\n\n");
    /* the library's display of a call, as every front door shows it */
    plain.out = to_message;
    plain.arg = &w;
    plain.color = false;
    plain.hint = NULL;
    sink = mote_show_plain_sink(&plain);
    if (mote_show_call(&sv->json, sv->port, call->name, sv->scratch, (size_t)n, MOTE_SHOW_WHOLE,
                       &sink) < 0 ||
        w.err != 0)
        return 0; /* larger than a message may be: the device's front doors ask */
    mote_jw_str_end(&w);
    mote_jw_key(&w, "requestedSchema");
    mote_jw_raw(&w, elicit_schema, sizeof(elicit_schema) - 1);
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return 0;
    f->elicit_id = sv->mcp.next_elicit++;
    return sb.len;
}

/* A progress notification for f into sv->resp: its length. */
static size_t progress_note(struct serve *sv, struct serve_follow *f)
{
    uint32_t secs = (mote_loop_now(sv->loop) - f->t0) / 1000u;
    struct mote_conv *cv = f->conv[0] != '\0' ? mote_serve_find(sv, f->conv) : NULL;
    bool asking = cv != NULL && mote_conv_state(cv) == MOTE_CONV_AWAITING_APPROVAL;
    char m[MOTE_LLM_NAME_MAX + 120];
    struct mote_sb sb, mb;
    struct mote_jw w;

    mote_sb_init(&mb, m, sizeof(m));
    if (f->phase == SFP_WAIT)
        mote_sb_s(&mb, "waiting for its conversation");
    else if (asking)
        mote_sb_join(&mb, "waiting for approval of ", f->what,
                     f->elicit != SE_NONE ? " (asked here)" : " on the device");
    else if (f->kind == SF_CALL || f->what[0] != '\0')
        mote_sb_join(&mb, "running ", f->what[0] != '\0' ? f->what : "the call", NULL);
    else
        mote_sb_s(&mb, "the agent is answering");
    mote_sb_num(&mb, " (", secs, " s)");
    rpc_out(sv, &sb, &w, 0, "notifications/progress");
    mote_jw_key(&w, "params");
    mote_jw_obj(&w);
    mote_jw_key(&w, "progressToken");
    mote_jw_raw(&w, f->token, strlen(f->token));
    mote_jw_kint(&w, "progress", (int64_t)++f->progress);
    mote_jw_key(&w, "message");
    if (f->kind == SF_ASK && f->sent < f->text_len && !asking) {
        /* the answer as it streams: what came since the last note */
        size_t k = f->text_len - f->sent > 1024 ? 1024 : f->text_len - f->sent;

        while (k > 0 && f->sent + k < f->text_len &&
               ((unsigned char)f->text[f->sent + k] & 0xC0) == 0x80)
            k--;
        mote_jw_strn(&w, f->text + f->sent, k);
        f->sent += k;
    } else {
        mote_jw_str(&w, m);
    }
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    return w.err == 0 ? sb.len : 0;
}

/* A notification without id into sv->resp: its length. */
static size_t note(struct serve *sv, const char *method, int64_t cancel_id)
{
    struct mote_sb sb;
    struct mote_jw w;

    rpc_out(sv, &sb, &w, 0, method);
    if (cancel_id != 0) {
        mote_jw_key(&w, "params");
        mote_jw_obj(&w);
        mote_jw_kint(&w, "requestId", cancel_id);
        mote_jw_kstr(&w, "reason", "answered on the device");
        mote_jw_obj_end(&w);
    }
    mote_jw_obj_end(&w);
    return w.err == 0 ? sb.len : 0;
}

/* The head and tail of f's answer (a tools/call result), framed, into
 * h and t. */
static void answer_parts(struct serve *sv, struct serve_follow *f, enum serve_frame frame,
                         bool comma, struct mote_sb *h, struct mote_sb *t)
{
    if (frame == SF_FRAME_SSE)
        mote_sb_s(h, "event: message\ndata: ");
    else if (frame == SF_FRAME_JSON && comma)
        mote_sb_s(h, ",");
    mote_sb_s(h, "{\"jsonrpc\":\"2.0\",\"id\":");
    mote_sb_s(h, f->rpc_id);
    mote_sb_s(h, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
    if (f->overflow)
        mote_sb_num(t, "\\n[", f->dropped, " more bytes left out here]");
    mote_sb_s(t, "\"}");
    if (f->kind == SF_ASK && !f->is_error) {
        mote_sb_s(t, ",{\"type\":\"text\",\"text\":\"conversation: ");
        mote_sb_s(t, f->conv); /* [A-Za-z0-9_-]: nothing to escape */
        mote_sb_s(t, " (pass it as `conversation` to go on with it)\"}");
    }
    mote_sb_s(t, "],\"isError\":");
    mote_sb_s(t, f->is_error ? "true" : "false");
    mote_sb_s(t, "}}");
    if (frame == SF_FRAME_SSE)
        mote_sb_s(t, "\n\n");
    else if (frame == SF_FRAME_LINE)
        mote_sb_s(t, "\n");
    (void)sv;
}

size_t mote_serve_mcp_fill(struct serve *sv, int chan, enum serve_frame frame, bool *comma,
                           char *out, size_t room, bool *idle)
{
    struct serve_mcp_sess *se = NULL;
    size_t w = 0, n;
    unsigned i;

    *idle = false;
    /* an answer half out goes on first: messages never interleave */
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];
        char hb[MOTE_SERVE_MCP_ID_MAX + 96], tb[MOTE_CONV_ID_MAX + 160];
        struct mote_sb h, t;

        if (f->kind == SF_FREE || f->chan != chan || f->out_part == 0 || f->out_part >= 4)
            continue;
        mote_sb_init(&h, hb, sizeof(hb));
        mote_sb_init(&t, tb, sizeof(tb));
        answer_parts(sv, f, frame, f->lead_comma, &h, &t); /* the same head as it began */
        w += mote_serve_follow_write(f, hb, h.len, tb, t.len, out + w, room - w);
        if (f->out_part < 4)
            return w;
        mote_serve_follow_free(sv, f);
    }
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind == SF_FREE || f->chan != chan || f->gone_done)
            continue;
        if (f->elicit == SE_DUE) {
            n = frame == SF_FRAME_JSON ? 0 : elicitation(sv, f);
            if (n == 0) {
                f->elicit = SE_NONE; /* the device's front doors answer it */
                f->progress_due = f->token[0] != '\0';
            } else if ((n = put_small(sv, frame, comma, n, out + w, room - w)) > 0) {
                w += n;
                f->elicit = SE_SENT;
            } else {
                sv->mcp.next_elicit--; /* not sent: the same id next time */
                return w;
            }
        }
        if (f->elicit == SE_CANCEL) {
            n = note(sv, "notifications/cancelled", f->elicit_id);
            if ((n = put_small(sv, frame, comma, n, out + w, room - w)) == 0)
                return w;
            w += n;
            f->elicit = SE_NONE;
        }
        if (f->progress_due && f->token[0] != '\0' && frame != SF_FRAME_JSON &&
            f->phase != SFP_DONE) {
            uint64_t before = f->progress;
            size_t sent = f->sent;

            n = progress_note(sv, f);
            if (n > 0 && (n = put_small(sv, frame, comma, n, out + w, room - w)) == 0) {
                f->progress = before; /* not sent: the same next time */
                f->sent = sent;
                return w;
            }
            w += n;
            f->progress_due = false;
        }
        if (f->phase == SFP_DONE) {
            char hb[MOTE_SERVE_MCP_ID_MAX + 96], tb[MOTE_CONV_ID_MAX + 160];
            struct mote_sb h, t;

            mote_sb_init(&h, hb, sizeof(hb));
            mote_sb_init(&t, tb, sizeof(tb));
            f->lead_comma = *comma;
            answer_parts(sv, f, frame, f->lead_comma, &h, &t);
            if (frame == SF_FRAME_JSON)
                *comma = true;
            w += mote_serve_follow_write(f, hb, h.len, tb, t.len, out + w, room - w);
            if (f->out_part < 4)
                return w;
            mote_serve_follow_free(sv, f);
        }
    }
    /* the session's own messages: on its GET stream, or the pipe */
    if (chan == SERVE_CHAN_STDIO)
        se = &sv->mcp.pipe;
    else if (chan >= 0 && sv->mcp.chans[chan].kind == SC_MCP_GET)
        se = mote_serve_mcp_sess(sv, sv->mcp.chans[chan].sess);
    if (se != NULL && se->used && se->list_changed) {
        n = note(sv, "notifications/tools/list_changed", 0);
        if ((n = put_small(sv, frame, comma, n, out + w, room - w)) == 0)
            return w;
        w += n;
        se->list_changed = false;
    }
    *idle = mote_serve_follow_pending(sv, chan) == 0;
    return w;
}
