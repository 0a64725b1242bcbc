/*
 * serve_follow.c - the calls and turns mote serve follows for a client of
 * its MCP server or its OpenAI-compatible endpoint (serve_mcp.h): each
 * started once its conversation is ready, its events taken (the text as
 * it streams, the tool it runs or waits for, a call's result, the turn's
 * end or failure), progress ticks, the approval to elicit, and the
 * channel told when it has something to write. What a channel writes is
 * its door's (serve_mcp.c, serve_oai.c).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

void mote_serve_follow_init(struct serve *sv)
{
    struct serve_mcp *m = &sv->mcp;
    unsigned i;

    /* the small parts only: a follow's text is written before it is read */
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++)
        memset(&m->follows[i], 0, offsetof(struct serve_follow, text));
}

void mote_serve_chan_poke(struct serve *sv, int chan)
{
    if (chan >= 0 && chan < MOTE_SERVE_MAX_CONNS) {
        struct mote_httpd_conn *c = &sv->http.conns[chan];

        if (c->state == MOTE_HTTPD_RESP)
            mote_httpd_poke(&sv->http, c);
    } else if (chan == SERVE_CHAN_STDIO && sv->mcp.pipe_out_w != 0) {
        (void)mote_watch_set(sv->loop, sv->mcp.pipe_out_w, MOTE_POLL_OUT);
    }
}

struct serve_follow *mote_serve_follow_new(struct serve *sv, enum serve_follow_kind kind,
                                           int chan)
{
    struct serve_mcp *m = &sv->mcp;
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &m->follows[i];

        if (f->kind != SF_FREE)
            continue;
        memset(f, 0, offsetof(struct serve_follow, text));
        f->kind = (uint8_t)kind;
        f->phase = SFP_WAIT;
        f->chan = (int16_t)chan;
        f->sess = -1;
        f->seq = ++m->seq;
        f->t0 = mote_loop_now(sv->loop);
        return f;
    }
    return NULL;
}

void mote_serve_follow_free(struct serve *sv, struct serve_follow *f)
{
    (void)sv;
    f->kind = SF_FREE;
}

unsigned mote_serve_follow_pending(const struct serve *sv, int chan)
{
    unsigned i, n = 0;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++)
        n += sv->mcp.follows[i].kind != SF_FREE && sv->mcp.follows[i].chan == chan;
    return n;
}

/* ---- text ------------------------------------------------------------------------ */

/* The bytes of the UTF-8 character that starts with `c` (1 for a byte
 * that starts none: it is one bad byte). */
static size_t char_len(unsigned char c)
{
    return c < 0xC2 ? 1u : c < 0xE0 ? 2u : c < 0xF0 ? 3u : c < 0xF5 ? 4u : 1u;
}

size_t mote_serve_json_piece(const char *text, size_t len, size_t *off, char *out, size_t room)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i = *off;

    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        size_t k = char_len(c), need;
        char e[8];

        if (c < 0x80) {
            if (c == '"' || c == '\\') {
                e[0] = '\\';
                e[1] = (char)c;
                need = 2;
            } else if (c == '\n' || c == '\r' || c == '\t') {
                e[0] = '\\';
                e[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
                need = 2;
            } else if (c < 0x20) {
                memcpy(e, "\\u00", 4);
                e[4] = hex[c >> 4];
                e[5] = hex[c & 15u];
                need = 6;
            } else {
                e[0] = (char)c;
                need = 1;
            }
            if (o + need > room)
                break;
            memcpy(out + o, e, need);
            o += need;
            i++;
            continue;
        }
        if (i + k > len || k == 1 || !mote_utf8_valid(text + i, k)) {
            /* a byte that is no character (or a cut one at the end) */
            if (o + 6 > room)
                break;
            memcpy(out + o, "\\ufffd", 6);
            o += 6;
            i++;
            continue;
        }
        if (o + k > room)
            break;
        memcpy(out + o, text + i, k);
        o += k;
        i += k;
    }
    *off = i;
    return o;
}

size_t mote_serve_follow_write(struct serve_follow *f, const char *head, size_t hn,
                               const char *tail, size_t tn, char *out, size_t room)
{
    size_t w = 0, k;

    if (f->out_part == 0) {
        f->out_part = 1;
        f->out_off = 0;
    }
    while (w < room && f->out_part < 4) {
        if (f->out_part == 1 || f->out_part == 3) {
            const char *p = f->out_part == 1 ? head : tail;
            size_t n = f->out_part == 1 ? hn : tn;

            k = n - f->out_off < room - w ? n - f->out_off : room - w;
            memcpy(out + w, p + f->out_off, k);
            w += k;
            f->out_off += k;
            if (f->out_off < n)
                break;
            f->out_part++;
            f->out_off = 0;
            continue;
        }
        k = mote_serve_json_piece(f->text, f->text_len, &f->out_off, out + w, room - w);
        w += k;
        if (f->out_off >= f->text_len) {
            f->out_part = 3;
            f->out_off = 0;
        } else if (k == 0) {
            break; /* the next character needs more room */
        }
    }
    return w;
}

/* Appends to f's text; what does not fit is counted. A stream's text
 * that was sent is let go first. */
static void text_add(struct serve_follow *f, const char *p, size_t n)
{
    size_t room;

    if (f->kind == SF_OAI_STREAM && f->sent > 0 && f->text_len + n > sizeof(f->text)) {
        memmove(f->text, f->text + f->sent, f->text_len - f->sent);
        f->text_len -= f->sent;
        f->sent = 0;
    }
    room = sizeof(f->text) - f->text_len;
    if (n > room) {
        /* whole characters only */
        size_t k = room;

        while (k > 0 && k < n && ((unsigned char)p[k] & 0xC0) == 0x80)
            k--;
        f->overflow = true;
        f->dropped += n - k;
        n = k;
    }
    memcpy(f->text + f->text_len, p, n);
    f->text_len += n;
}

static void text_set(struct serve_follow *f, const char *p, size_t n)
{
    f->text_len = f->sent = 0;
    f->overflow = false;
    f->dropped = 0;
    text_add(f, p, n);
}

/* ---- the outcome ------------------------------------------------------------------ */

static void done(struct serve *sv, struct serve_follow *f)
{
    f->phase = SFP_DONE;
    f->progress_due = false;
    if (f->elicit == SE_DUE)
        f->elicit = SE_NONE;
    if (f->gone_done || f->chan == SERVE_CHAN_NONE) {
        int chan = f->chan;

        mote_serve_follow_free(sv, f); /* nobody takes its answer */
        mote_serve_chan_poke(sv, chan); /* (its stream may end now) */
        return;
    }
    if (f->kind == SF_OAI && sv->mcp.oai_answer != NULL)
        sv->mcp.oai_answer(sv, f);
    else
        mote_serve_chan_poke(sv, f->chan);
}

static void fail(struct serve *sv, struct serve_follow *f, int code, const char *a,
                 const char *b)
{
    char m[MOTE_JOB_ERRMSG_LEN + 120];
    struct mote_sb sb;

    mote_sb_init(&sb, m, sizeof(m));
    mote_sb_join(&sb, a, b, NULL);
    f->is_error = true;
    f->err_code = code;
    if (f->kind == SF_OAI_STREAM)
        mote_str_copy(f->err, sizeof(f->err), m); /* what streamed stays, the error ends it */
    else
        text_set(f, m, sb.len);
    done(sv, f);
}

/* ---- starting -------------------------------------------------------------------- */

/* A new calls conversation for session `se` ("mcp-" and 16 hex digits). */
static int calls_conv(struct serve *sv, struct serve_mcp_sess *se, struct mote_conv **cv)
{
    static const char hex[] = "0123456789abcdef";
    const struct mote_port *p = sv->port;
    unsigned char r[8];
    char id[MOTE_CONV_ID_MAX];
    unsigned i;
    int rc;

    if (sv->pub->phase != MOTE_SERVE_RUN)
        return MOTE_ERR_SHUTDOWN;
    memset(r, 0, sizeof(r));
    if (MOTE_PORT_HAS(p, random))
        (void)p->random(p->ctx, r, sizeof(r));
    memcpy(id, "mcp-", 4);
    for (i = 0; i < sizeof(r); i++) {
        id[4 + 2 * i] = hex[r[i] >> 4];
        id[5 + 2 * i] = hex[r[i] & 15u];
    }
    id[4 + 2 * sizeof(r)] = '\0';
    if ((rc = mote_serve_make_room(sv)) < 0)
        return rc;
    rc = mote_conv_create_calls(sv->conf.session, sv->conf.conv, id, cv);
    if (rc < 0)
        return rc;
    mote_serve_touch(sv, *cv);
    mote_str_copy(se->conv, sizeof(se->conv), id);
    mote_httpd_say(&sv->http, "mcp: conversation ", id, " made for an MCP session's calls");
    return 0;
}

/* The follow waits: its input is kept in its text, to start when a slot or
 * the conversation's load allows (`load`: the disk worker is asked to go
 * on). Input too long to keep: the follow fails as busy, saying `why`. */
static int wait_for(struct serve *sv, struct serve_follow *f, const char *input, size_t len,
                    bool load, const char *why)
{
    if (!f->kept) {
        if (len > sizeof(f->text)) {
            fail(sv, f, MOTE_ERR_BUSY, why, NULL);
            return MOTE_ERR_BUSY;
        }
        if (input != f->text)
            memmove(f->text, input, len);
        f->text_len = len;
        f->kept = true;
    }
    if (load)
        mote_serve_disk_kick(sv);
    return 0;
}

static void progress_arm(struct serve *sv);

/* The call runs, or the turn: its text starts afresh. */
static void running(struct serve *sv, struct serve_follow *f)
{
    f->phase = SFP_RUN;
    f->kept = false;
    f->text_len = f->sent = 0;
    f->total = 0;
    if (f->token[0] != '\0')
        progress_arm(sv);
}

static int start_call(struct serve *sv, struct serve_follow *f, const char *input, size_t len)
{
    struct serve_mcp_sess *se = mote_serve_mcp_sess(sv, f->sess);
    struct mote_conv *cv = NULL;
    uint32_t bad = 0;
    int rc;

    if (se == NULL || !se->used || se->gen != f->sess_gen) {
        fail(sv, f, MOTE_ERR_STALE, "the MCP session ended", NULL);
        return MOTE_ERR_STALE;
    }
    if (se->conv[0] == '\0') {
        rc = calls_conv(sv, se, &cv);
    } else {
        rc = mote_serve_load(sv, se->conv, &cv, &bad);
        if (rc == MOTE_ERR_NOENT || rc == MOTE_ERR_CORRUPT || rc == MOTE_ERR_NOTSUP)
            rc = calls_conv(sv, se, &cv); /* gone (retention), or unusable: a new one */
    }
    if (rc == 0 && mote_conv_busy(cv))
        rc = MOTE_ERR_BUSY; /* another call of the session runs: this one waits */
    if (rc == 0) {
        mote_str_copy(f->conv, sizeof(f->conv), se->conv);
        rc = mote_conv_call(cv, f->what, input, len, f->call_id, sizeof(f->call_id));
        if (rc == 0) {
            running(sv, f);
            return 0;
        }
        if (rc == MOTE_ERR_BADMSG || rc == MOTE_ERR_TOO_LARGE) {
            fail(sv, f, rc,
                 rc == MOTE_ERR_BADMSG ? cv->last_error
                                       : "the arguments are larger than one journal record holds",
                 NULL);
            return rc;
        }
    }
    if (rc == MOTE_ERR_AGAIN || rc == MOTE_ERR_BUSY || rc == MOTE_ERR_FULL)
        return wait_for(sv, f, input, len, rc == MOTE_ERR_AGAIN,
                        "busy: another call of this session runs, and these arguments are too "
                        "large to wait (MOTE_SERVE_FOLLOW_TEXT)");
    fail(sv, f, rc, "the call cannot start: ", mote_strerror(rc));
    return rc;
}

static int start_turn(struct serve *sv, struct serve_follow *f, const char *text, size_t len)
{
    struct mote_conv *cv = NULL;
    uint64_t off = 0;
    uint32_t bad = 0;
    int rc;

    /* a named conversation goes on (made when it does not exist yet);
     * else a new one */
    rc = f->named ? mote_serve_send(sv, f->conv, text, len, false, &cv, &off, &bad)
                  : MOTE_ERR_NOENT;
    if (rc == MOTE_ERR_NOENT) {
        rc = mote_serve_create(sv, f->named ? f->conv : NULL, &cv);
        if (rc == 0) {
            mote_str_copy(f->conv, sizeof(f->conv), mote_conv_id(cv));
            rc = mote_serve_send(sv, f->conv, text, len, false, &cv, &off, &bad);
        }
    }
    if (rc == 0) {
        f->user_off = off;
        running(sv, f);
        return 0;
    }
    if (rc == MOTE_ERR_AGAIN)
        return wait_for(sv, f, text, len, true,
                        "busy: the conversation is being loaded, and this message is too long to "
                        "wait (MOTE_SERVE_FOLLOW_TEXT)");
    switch (rc) {
    case MOTE_ERR_BUSY:
        fail(sv, f, rc, "busy: a turn runs in conversation ", f->conv);
        break;
    case MOTE_ERR_FULL:
        fail(sv, f, rc, "busy: every conversation slot holds a running turn; try again", NULL);
        break;
    case MOTE_ERR_NOTSUP:
        if (cv != NULL) {
            f->err_name = "calls_only";
            fail(sv, f, rc, "this conversation holds an MCP client's tool calls, not a chat: ",
                 f->conv);
        } else {
            fail(sv, f, rc, "the conversation was written by a newer mote: ", f->conv);
        }
        break;
    case MOTE_ERR_INVAL:
        fail(sv, f, rc, "the message is empty", NULL);
        break;
    case MOTE_ERR_SHUTDOWN:
        fail(sv, f, rc, "mote is shutting down", NULL);
        break;
    case MOTE_ERR_CORRUPT:
        fail(sv, f, rc, "the conversation's journal is damaged: ", f->conv);
        break;
    case MOTE_ERR_LOCKED:
        fail(sv, f, rc, "the conversation is open in another process: ", f->conv);
        break;
    default:
        fail(sv, f, rc, "the turn cannot start: ", mote_strerror(rc));
        break;
    }
    return rc;
}

int mote_serve_follow_start(struct serve *sv, struct serve_follow *f, const char *name,
                            const char *input, size_t len)
{
    if (f->kind == SF_CALL) {
        if (name != NULL)
            mote_str_copy(f->what, sizeof(f->what), name);
        return start_call(sv, f, input, len);
    }
    return start_turn(sv, f, input, len);
}

/* Follows waiting for their conversation try again. True while one waits
 * for a load (a disk turn soon). */
static bool retry_waiting(struct serve *sv)
{
    bool more = false;
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind == SF_FREE || f->phase != SFP_WAIT || !f->kept)
            continue;
        if (sv->pub->phase != MOTE_SERVE_RUN) {
            fail(sv, f, MOTE_ERR_SHUTDOWN, "mote is shutting down", NULL);
            continue;
        }
        (void)mote_serve_follow_start(sv, f, NULL, f->text, f->text_len);
        more = more || (f->kind != SF_FREE && f->phase == SFP_WAIT && sv->load.active);
    }
    return more;
}

bool mote_serve_follow_disk_turn(struct serve *sv)
{
    return retry_waiting(sv);
}

/* ---- progress ---------------------------------------------------------------------- */

static void on_progress(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct serve *sv = arg;
    bool any = false;
    unsigned i;

    (void)loop, (void)t;
    sv->mcp.timer = 0;
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind == SF_FREE || f->token[0] == '\0' || f->phase == SFP_DONE)
            continue;
        any = true;
        f->progress_due = true;
        mote_serve_chan_poke(sv, f->chan);
    }
    if (any)
        progress_arm(sv);
}

static void progress_arm(struct serve *sv)
{
    if (sv->mcp.timer == 0 &&
        mote_timer_start(sv->loop, MOTE_SERVE_MCP_PROGRESS_MS, on_progress, sv, 0,
                         &sv->mcp.timer) < 0)
        sv->mcp.timer = 0; /* no timer free: the events still bring progress */
}

static void progress(struct serve *sv, struct serve_follow *f)
{
    if (f->token[0] != '\0' && f->phase == SFP_RUN) {
        f->progress_due = true;
        mote_serve_chan_poke(sv, f->chan);
    }
}

/* ---- events ------------------------------------------------------------------------ */

/* The session's elicitation: a client that takes it, on a channel that
 * can carry a request (an event stream or the pipe). */
static bool can_elicit(struct serve *sv, const struct serve_follow *f)
{
    struct serve_mcp_sess *se = mote_serve_mcp_sess(sv, f->sess);

    if (se == NULL || !se->used || se->gen != f->sess_gen || !se->elicit)
        return false;
    if (f->chan == SERVE_CHAN_STDIO)
        return true;
    return f->chan >= 0 && sv->mcp.chans[f->chan].kind == SC_MCP_SSE;
}

/* The call `id` was answered elsewhere (it runs, or was refused): an
 * elicitation of it is withdrawn. */
static void elicit_over(struct serve *sv, struct serve_follow *f, const char *id)
{
    if (f->elicit == SE_NONE || strcmp(f->ask_call, id) != 0)
        return;
    if (f->elicit == SE_SENT) {
        f->elicit = SE_CANCEL;
        mote_serve_chan_poke(sv, f->chan);
    } else if (f->elicit == SE_DUE) {
        f->elicit = SE_NONE;
    }
}

/* True when no front door but the pipe could answer an approval: no
 * listener, no broker (`mote mcp` alone). */
static bool pipe_alone(const struct serve *sv)
{
    return sv->conf.mcp_stdio != NULL && sv->http.lfd[0] < 0 && sv->http.lfd[1] < 0 &&
           sv->conf.mqtt_url == NULL;
}

static void on_approval(struct serve *sv, struct serve_follow *f, const struct mote_event *ev)
{
    struct mote_conv *cv;

    mote_str_copy(f->what, sizeof(f->what), ev->name);
    if ((f->kind == SF_CALL || f->kind == SF_ASK) && can_elicit(sv, f)) {
        f->ask_id = ev->ask_id;
        mote_str_copy(f->ask_call, sizeof(f->ask_call), ev->id);
        f->elicit = SE_DUE;
        mote_serve_chan_poke(sv, f->chan);
    } else if (pipe_alone(sv)) {
        /* nobody could ever answer it: refused now, never left waiting */
        (void)mote_serve_approve(sv, f->conv, ev->id, ev->ask_id, MOTE_ANSWER_NO,
                                 "nobody can be asked: the MCP client takes no elicitation and "
                                 "this mote has no other front door (allow the tool with --allow "
                                 "NAME or --approval allow, or give --socket)",
                                 &cv);
    }
    progress(sv, f);
}

static void on_text(struct serve *sv, struct serve_follow *f, const struct mote_event *ev)
{
    if (f->kind == SF_CALL)
        return;
    if (f->round_new) {
        f->round_new = false;
        if (f->kind == SF_ASK)
            text_set(f, "", 0); /* the answer that counts is the last one */
        else if (f->total > 0)
            text_add(f, "\n\n", 2); /* a completion has every answer of the turn */
    }
    text_add(f, ev->text, ev->len);
    f->total += ev->len;
    if (f->kind == SF_OAI_STREAM) {
        if (f->overflow) {
            /* the client reads slower than the answer streams: it is told
             * so, and the turn goes on (the journal has it all) */
            fail(sv, f, MOTE_ERR_FULL,
                 "the client reads slower than the answer streams (MOTE_SERVE_FOLLOW_TEXT "
                 "behind): the rest is in conversation ",
                 f->conv);
            return;
        }
        mote_serve_chan_poke(sv, f->chan);
        return;
    }
    progress(sv, f);
}

/* A follow's turn ended (TURN_END, ERROR, CANCELLED, or it was cut). */
static void turn_over(struct serve *sv, struct serve_follow *f, const struct mote_event *ev)
{
    switch (ev->type) {
    case MOTE_EV_TURN_END:
        mote_str_copy(f->stop, sizeof(f->stop), ev->stop_reason != NULL ? ev->stop_reason : "");
        f->usage = ev->turn_usage;
        if (f->kind == SF_CALL && f->call_id[0] != '\0')
            fail(sv, f, MOTE_ERR_IO, "the call ended without a result", NULL);
        else
            done(sv, f);
        break;
    case MOTE_EV_ERROR:
        fail(sv, f, ev->code, ev->text, NULL);
        break;
    case MOTE_EV_CANCELLED:
        fail(sv, f, MOTE_ERR_CANCELED, "cancelled on the device", NULL);
        break;
    default:
        fail(sv, f, MOTE_ERR_SHUTDOWN,
             f->kind == SF_CALL ? "mote stopped while the call ran: it may or may not have run"
                                : "mote stopped before the turn ended (it goes on after a restart)",
             NULL);
        break;
    }
}

static void on_result(struct serve *sv, struct serve_follow *f, const struct mote_event *ev)
{
    elicit_over(sv, f, ev->id);
    if (f->kind != SF_CALL || strcmp(ev->id, f->call_id) != 0)
        return;
    text_set(f, ev->text, ev->len);
    f->is_error = ev->is_error;
    f->call_id[0] = '\0'; /* its result is in */
}

void mote_serve_follow_event(struct serve *sv, const struct mote_event *ev)
{
    const char *id;
    unsigned i;

    if (ev->type == MOTE_EV_SHUTDOWN) {
        mote_serve_follow_shutdown(sv);
        return;
    }
    if (ev->conv == NULL)
        return;
    id = mote_conv_id(ev->conv);
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind == SF_FREE || f->phase != SFP_RUN || strcmp(f->conv, id) != 0)
            continue;
        switch (ev->type) {
        case MOTE_EV_TEXT:
            on_text(sv, f, ev);
            break;
        case MOTE_EV_TOOL_CALL:
            elicit_over(sv, f, ev->id);
            mote_str_copy(f->what, sizeof(f->what), ev->name);
            f->round_new = true;
            progress(sv, f);
            break;
        case MOTE_EV_APPROVAL:
            on_approval(sv, f, ev);
            break;
        case MOTE_EV_TOOL_RESULT:
            on_result(sv, f, ev);
            break;
        case MOTE_EV_TURN_END:
        case MOTE_EV_ERROR:
        case MOTE_EV_CANCELLED:
            turn_over(sv, f, ev);
            break;
        case MOTE_EV_STATE:
            if (ev->state == MOTE_CONV_NEEDS_RECOVERY)
                turn_over(sv, f, ev); /* cut by the shutdown */
            break;
        default:
            break;
        }
    }
    /* a conversation came to rest: those waiting for it, or for a slot */
    if ((ev->type == MOTE_EV_STATE && !mote_conv_busy(ev->conv)) || ev->type == MOTE_EV_TURN_END)
        (void)retry_waiting(sv);
}

/* ---- the client ------------------------------------------------------------------- */

void mote_serve_follow_cancel(struct serve *sv, struct serve_follow *f)
{
    struct mote_conv *cv;

    if (f->phase == SFP_RUN) {
        f->gone_done = true; /* its end frees it */
        (void)mote_serve_cancel(sv, f->conv, &cv);
        return;
    }
    if (f->phase == SFP_WAIT || f->out_part == 0) {
        int chan = f->chan;

        mote_serve_follow_free(sv, f);
        mote_serve_chan_poke(sv, chan);
    } else {
        f->gone_done = true; /* its answer is half out: it ends */
    }
}

void mote_serve_follow_chan_gone(struct serve *sv, int chan)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];
        struct mote_conv *cv;

        if (f->kind == SF_FREE || f->chan != chan)
            continue;
        f->chan = SERVE_CHAN_NONE;
        if (f->phase != SFP_RUN) {
            mote_serve_follow_free(sv, f);
        } else if (f->kind == SF_OAI || f->kind == SF_OAI_STREAM) {
            /* a chat client that goes away stopped its answer */
            mote_httpd_say(&sv->http, "chat completion's client left: cancelling the turn of ",
                           f->conv, NULL);
            (void)mote_serve_cancel(sv, f->conv, &cv);
        }
        /* an MCP call goes on (a cancel is a message); its result goes nowhere */
    }
}

void mote_serve_follow_shutdown(struct serve *sv)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind != SF_FREE && f->phase != SFP_DONE)
            fail(sv, f, MOTE_ERR_SHUTDOWN,
                 f->kind == SF_CALL && f->phase == SFP_RUN
                     ? "mote stopped while the call ran: it may or may not have run"
                     : "mote is shutting down",
                 NULL);
    }
    if (sv->mcp.timer != 0)
        (void)mote_timer_stop(sv->loop, sv->mcp.timer);
    sv->mcp.timer = 0;
}
