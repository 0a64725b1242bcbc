/*
 * agent_session.c - the session's lifecycle and its conversations' API:
 * init and deinit, MCP servers attached, conversations created, opened
 * (with recovery), sent to, retried, compacted, cancelled, answered and
 * closed, and STATE/current (the most recent conversation). What a call
 * asks for is journaled or recorded here; the work runs from the loop.
 */
#include <string.h>

#include "agent_int.h"
#include "journal.h"          /* mote_jcheck_*: a conversation opened in steps */
#include "mote/mote_http.h" /* mote_url_parse */

void mote_session_conf_defaults(struct mote_session_conf *c)
{
    memset(c, 0, sizeof(*c));
}

void mote_conv_conf_defaults(struct mote_conv_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->approval = MOTE_APPROVE_ASK;
}

static void mcp_left_said(void *arg, const char *server, unsigned ended)
{
    struct mote_session *s = arg;
    struct mote_event ev;
    char m[160];
    struct mote_sb sb;

    mote_sb_init(&sb, m, sizeof(m));
    mote_sb_num(&sb, "ended ", ended,
                " process(es) it had left running when mote was killed with it");
    mote_emit_init(&ev, MOTE_EV_MCP, NULL);
    ev.name = server;
    ev.text = m;
    ev.len = sb.len;
    mote_emit(s, &ev);
}

int mote_session_init(struct mote_session *s, struct mote_loop *loop,
                      const struct mote_session_conf *conf)
{
    const struct mote_port *p = loop != NULL ? loop->port : NULL;

    if (conf == NULL || conf->on_event == NULL || p == NULL)
        return MOTE_ERR_INVAL;
    if (mote_port_missing(p, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS; /* conversations live in storage */
    /* The pools' and the journal's buffers are prepared when taken (a
     * session is most of a megabyte with the default limits; what a turn
     * does not use stays out of memory). */
    memset(s, 0, offsetof(struct mote_session, jbuf));
    memset(&s->jbuf, 0, offsetof(struct mote_jbuf, line));
    memset(s->conv, 0, sizeof(s->conv));
    mote_pool_init(s);
    s->loop = loop;
    s->port = p;
    s->conf = *conf;
    if (s->conf.tool_timeout_ms == 0)
        s->conf.tool_timeout_ms = MOTE_TOOL_TIMEOUT_MS;
    mote_cancel_init(&s->cancel, &loop->root);
    mote_turn_attach(s);
    /* What MCP servers of a mote killed with them left running. */
    (void)mote_mcp_left_sweep(p, &s->jbuf.json, mcp_left_said, s);
    return 0;
}

void mote_session_deinit(struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used || s->conv[i].loading)
            mote_journal_close(&s->conv[i].jr);
        s->conv[i].loading = false;
    }
    mote_pool_close_conns(s);
    if (s->defer_timer != 0)
        (void)mote_timer_stop(s->loop, s->defer_timer);
    if (s->ask_timer != 0)
        (void)mote_timer_stop(s->loop, s->ask_timer);
    s->ask_timer = 0;
    if (s->sd_timer != 0)
        (void)mote_timer_stop(s->loop, s->sd_timer);
    s->defer_timer = s->sd_timer = 0;
}

static void mcp_log(void *arg, const char *server, const char *msg)
{
    struct mote_session *s = arg;
    struct mote_event ev;

    mote_emit_init(&ev, MOTE_EV_MCP, NULL);
    ev.name = server;
    ev.text = msg;
    ev.len = strlen(msg);
    mote_emit(s, &ev);
}

void mote_session_use_mcp(struct mote_session *s, struct mote_mcp *m)
{
    s->mcp = m;
    if (m != NULL) {
        m->log = mcp_log;
        m->log_arg = s;
    }
}

static struct mote_conv *conv_slot(struct mote_session *s, const struct mote_conv_conf *conf)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used && !c->loading) {
            memset(c, 0, sizeof(*c));
            c->s = s;
            c->conf = *conf;
            c->jr.buf = &s->jbuf;
            c->jr.h = -1;
            mote_cancel_init(&c->turn, &s->cancel);
            return c;
        }
    }
    return NULL;
}

struct mote_conv *mote_conv_find(struct mote_session *s, const char *id)
{
    unsigned i;

    for (i = 0; id != NULL && i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used && strcmp(s->conv[i].jr.id, id) == 0)
            return &s->conv[i];
    }
    return NULL;
}

/* Records `id` as the most recent conversation. A failure is only a
 * warning: --continue then finds an older one. */
static void set_current(struct mote_conv *c)
{
    const struct mote_port *p = c->s->port;
    char line[MOTE_CONV_ID_MAX + 2];
    struct mote_src_bytes src;
    struct mote_sb sb;

    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_s(&sb, c->jr.id);
    mote_sb_s(&sb, "\n");
    src.p = line;
    src.len = sb.len;
    src.off = 0;
    if (p->st_write_atomic(p->ctx, "current", mote_produce_bytes, &src) < 0) {
        c->current_failed = true; /* a warning, from the loop */
        mote_session_defer(c->s);
    }
}

struct newest {
    char *id;
    size_t cap;
    int64_t mtime;
    bool found;
};

/* mote_session_list's callback: keeps the chat journal changed last. */
static int keep_newest(void *arg, const struct mote_conv_info *c)
{
    struct newest *n = arg;

    if (c->calls || c->damaged || c->newer || strlen(c->id) >= n->cap)
        return 0;
    if (n->found && (c->mtime < n->mtime || (c->mtime == n->mtime && strcmp(c->id, n->id) <= 0)))
        return 0;
    mote_str_copy(n->id, n->cap, c->id);
    n->mtime = c->mtime;
    n->found = true;
    return 0;
}

int mote_session_recent(struct mote_session *s, char *id, size_t cap)
{
    const struct mote_port *p = s->port;
    int h, n;
    size_t i;

    if (cap < 2)
        return MOTE_ERR_INVAL;
    h = p->st_open(p->ctx, "current", MOTE_ST_READ);
    if (h == MOTE_ERR_NOENT) {
        struct newest nw = {.id = id, .cap = cap};

        if ((n = mote_session_list(s, keep_newest, &nw)) < 0)
            return n;
        return nw.found ? 0 : MOTE_ERR_NOENT;
    }
    if (h < 0)
        return h;
    n = p->st_read(p->ctx, h, 0, id, cap - 1);
    p->st_close(p->ctx, h);
    if (n < 0)
        return n;
    id[n] = '\0';
    for (i = 0; i < (size_t)n && id[i] != '\n' && id[i] != '\r'; i++) {
    }
    id[i] = '\0';
    return i == 0 ? MOTE_ERR_NOENT : 0;
}

static void make_id(struct mote_session *s, char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[8];
    unsigned i;

    memset(r, 0, sizeof(r));
    if (MOTE_PORT_HAS(s->port, random))
        (void)s->port->random(s->port->ctx, r, sizeof(r));
    for (i = 0; i < sizeof(r); i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15u];
    }
    out[2 * sizeof(r)] = '\0';
}

/* An https:// URL on a port without TLS (a library built with TLS=none)
 * is refused when the conversation is configured, not at its first
 * request, with the build option named. */
static int check_conf(struct mote_session *s, const struct mote_conv_conf *conf)
{
    struct mote_url u;
    struct mote_sb sb;

    s->error[0] = '\0';
    if (conf == NULL || conf->llm == NULL || conf->model == NULL)
        return MOTE_ERR_INVAL;
    if (conf->llm->base_url == NULL || mote_url_parse(&u, conf->llm->base_url) < 0 || !u.tls ||
        mote_port_missing(s->port, MOTE_PORT_TLS) == NULL)
        return 0; /* (a bad URL is the request's to report) */
    mote_sb_init(&sb, s->error, sizeof(s->error));
    mote_sb_s(&sb, "an https:// URL needs TLS, but this library was built with TLS=none (its port "
                   "has no ");
    mote_sb_s(&sb, mote_port_missing(s->port, MOTE_PORT_TLS));
    mote_sb_s(&sb, "): build libmote with TLS=mbedtls, or use an http:// URL");
    return MOTE_ERR_NOTSUP;
}

const char *mote_session_error(const struct mote_session *s)
{
    return s->error;
}

enum mote_recovery_action mote_conv_recovery(const struct mote_conv *c)
{
    return c->recovered;
}

static int create(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                  bool calls, struct mote_conv **out)
{
    struct mote_conv *c;
    char gen[24];
    int rc;

    *out = NULL;
    if (s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if ((rc = check_conf(s, conf)) < 0)
        return rc;
    if (id == NULL) {
        make_id(s, gen);
        id = gen;
    }
    if (mote_conv_find(s, id) != NULL)
        return MOTE_ERR_BUSY;
    c = conv_slot(s, conf);
    if (c == NULL)
        return MOTE_ERR_FULL;
    rc = calls ? mote_journal_create_calls(&c->jr, s->port, id)
               : mote_journal_create(&c->jr, s->port, id);
    if (rc < 0)
        return rc;
    c->used = true;
    c->st = c->st_told = MOTE_CONV_IDLE;
    if (!calls)
        set_current(c); /* (a calls journal is never the chat --continue goes on with) */
    *out = c;
    return 0;
}

int mote_conv_set_conf(struct mote_conv *c, const struct mote_conv_conf *conf)
{
    int rc;

    if (mote_conv_busy(c) || c->llm_job != 0 || c->tool_job != 0 || c->loading)
        return MOTE_ERR_BUSY;
    if ((rc = check_conf(c->s, conf)) < 0)
        return rc;
    c->conf = *conf;
    return 0;
}

int mote_conv_create(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                     struct mote_conv **out)
{
    return create(s, conf, id, false, out);
}

int mote_conv_create_calls(struct mote_session *s, const struct mote_conv_conf *conf,
                           const char *id, struct mote_conv **out)
{
    return create(s, conf, id, true, out);
}

bool mote_conv_calls(const struct mote_conv *c)
{
    return c->jr.calls_only;
}

/* A load of conversation `id` under way, or NULL. */
static struct mote_conv *loading(struct mote_session *s, const char *id)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].loading && strcmp(s->conv[i].jr.id, id) == 0)
            return &s->conv[i];
    }
    return NULL;
}

int mote_conv_load_begin(struct mote_session *s, const struct mote_conv_conf *conf,
                         const char *id, struct mote_conv_load *ld)
{
    char recent[MOTE_CONV_ID_MAX + 2];
    struct mote_conv *c;
    int rc;

    memset(ld, 0, sizeof(*ld));
    if (s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if ((rc = check_conf(s, conf)) < 0)
        return rc;
    if (id == NULL) {
        rc = mote_session_recent(s, recent, sizeof(recent));
        if (rc < 0)
            return rc;
        id = recent;
    }
    if (mote_conv_find(s, id) != NULL || loading(s, id) != NULL)
        return MOTE_ERR_BUSY;
    c = conv_slot(s, conf);
    if (c == NULL)
        return MOTE_ERR_FULL;
    /* Locked before anything is read or repaired: a conversation another
     * process writes is never touched, not even its tools. */
    rc = mote_jcheck_start(&c->jr, s->port, id, false, &ld->check);
    if (rc < 0) {
        s->lock_holder = c->jr.holder; /* MOTE_ERR_LOCKED: recovery never ran */
        return rc;
    }
    c->loading = true;
    mote_recover_begin(&ld->walk, &c->rec);
    ld->s = s;
    ld->c = c;
    ld->active = true;
    return 0;
}

void mote_conv_load_end(struct mote_conv_load *ld)
{
    if (!ld->active)
        return;
    mote_journal_close(&ld->c->jr);
    ld->c->loading = false;
    ld->active = false;
}

/* The load read everything: the conversation is open, its recovery
 * decided (applied and told from the loop). */
static void load_settle(struct mote_session *s, struct mote_conv *c)
{
    c->used = true;
    c->st = c->st_told = MOTE_CONV_NEEDS_RECOVERY;
    c->recovered = c->rec.action;
    mote_conv_recover_load(c);
    if (c->rec.action == MOTE_RECOVER_IDLE) {
        /* nothing to do: settled now (no effect, no event needed) */
        bool err = c->rec.last_error[0] != '\0' && !c->rec.cancelled;

        s->in_api++;
        (void)mote_turn_apply(c, err ? MOTE_CEV_RECOVER_ERROR : MOTE_CEV_RECOVER_IDLE, NULL);
        s->in_api--;
        c->st_told = c->st;
        if (err)
            mote_str_copy(c->last_error, sizeof(c->last_error), c->rec.last_error);
    } else {
        c->rec_pending = true; /* applied and told from the loop */
        mote_session_defer(s);
    }
    if (!c->jr.calls_only)
        set_current(c);
}

int mote_conv_load_step(struct mote_conv_load *ld, size_t budget, struct mote_conv **out,
                        uint32_t *bad_line, bool *repaired)
{
    struct mote_conv *c = ld->c;
    size_t spent = 0;
    int t;

    *out = NULL;
    if (bad_line != NULL)
        *bad_line = 0;
    if (repaired != NULL)
        *repaired = false;
    if (!ld->active)
        return MOTE_ERR_BADF;
    if (ld->s->sd_phase != MOTE_SDP_NONE) {
        mote_conv_load_end(ld);
        return MOTE_ERR_SHUTDOWN;
    }
    /* Each record as the check passes it: the recovery's walk takes it
     * (one pass over the file, what mote_recover would decide). */
    do {
        t = mote_jcheck_next(&c->jr, &ld->check, &spent);
        if (t > 0)
            mote_recover_take(&c->jr, t, &ld->walk, &c->rec);
    } while (t != 0 && (t > 0 || t == MOTE_ERR_AGAIN) && spent < budget);
    if (t < 0 && t != MOTE_ERR_AGAIN) {
        if (bad_line != NULL)
            *bad_line = c->jr.bad_line;
        mote_conv_load_end(ld);
        return t;
    }
    if (t != 0)
        return 1; /* more on the next call */
    t = mote_jcheck_finish(&c->jr, &ld->check, false); /* (it closes the file on failure) */
    ld->active = false;
    c->loading = false;
    if (t < 0) {
        if (bad_line != NULL)
            *bad_line = c->jr.bad_line;
        return t;
    }
    mote_recover_end(&ld->walk, &c->rec);
    if (repaired != NULL)
        *repaired = c->jr.repaired;
    load_settle(ld->s, c);
    *out = c;
    return 0;
}

int mote_conv_open(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                   struct mote_conv **out, uint32_t *bad_line, bool *repaired)
{
    /* Big (the recovery's walk): on the stack for this call only. */
    struct mote_conv_load ld;
    int rc;

    *out = NULL;
    if (bad_line != NULL)
        *bad_line = 0;
    if (repaired != NULL)
        *repaired = false;
    rc = mote_conv_load_begin(s, conf, id, &ld);
    if (rc < 0)
        return rc;
    do {
        rc = mote_conv_load_step(&ld, SIZE_MAX, out, bad_line, repaired);
    } while (rc > 0); /* (an unbounded budget reads to the end at once) */
    return rc;
}

static void begin_turn(struct mote_conv *c)
{
    mote_cancel_init(&c->turn, &c->s->cancel);
    c->turns = 0;
    memset(&c->turn_usage, 0, sizeof(c->turn_usage));
    c->last_error[0] = '\0';
    c->answered = false;
    c->ovf_tried = c->compact_shrink = false;
}

/* Why a turn cannot begin now (0: it can): shutting down, storage failed
 * (where the turn writes before anything else), calls from outside only
 * (no model turn), or busy. */
static int turn_refused(const struct mote_conv *c, bool storage)
{
    if (c->s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (storage && c->storage_failed)
        return c->jr.err != 0 ? c->jr.err : MOTE_ERR_IO;
    if (c->jr.calls_only)
        return MOTE_ERR_NOTSUP;
    return mote_conv_busy(c) ? MOTE_ERR_BUSY : 0;
}

int mote_conv_send(struct mote_conv *c, const char *text, size_t len)
{
    size_t i;
    int rc;

    rc = turn_refused(c, true);
    if (rc != 0)
        return rc;
    if ((mote_conv_next(c->st, MOTE_CEV_USER).effects & MOTE_CEFF_JOURNAL_USER) == 0)
        return MOTE_ERR_BUSY;
    for (i = 0; i < len; i++) {
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            break;
    }
    if (i == len)
        return MOTE_ERR_INVAL; /* nothing to say */
    begin_turn(c);
    c->s->in_api++;
    rc = mote_turn_apply_text(c, MOTE_CEV_USER, text, len);
    c->s->in_api--;
    mote_session_defer(c->s); /* the state change is told from the loop */
    return rc;
}

int mote_conv_retry(struct mote_conv *c)
{
    int rc;

    rc = turn_refused(c, true);
    if (rc != 0)
        return rc;
    /* Only what ends with something for the model to answer: a finished
     * answer sent again would be a prefill it continues (and a second
     * assistant record in a row). */
    rc = mote_journal_retryable(&c->jr);
    if (rc <= 0)
        return rc < 0 ? rc : MOTE_ERR_ALREADY;
    begin_turn(c);
    c->s->in_api++;
    rc = mote_turn_apply(c, MOTE_CEV_RETRY, NULL);
    c->s->in_api--;
    mote_session_defer(c->s);
    return rc;
}

int mote_conv_compact(struct mote_conv *c)
{
    int rc = turn_refused(c, false);

    if (rc != 0)
        return rc;
    if (c->jr.last_user_end == 0)
        return MOTE_ERR_ALREADY; /* nothing said yet */
    begin_turn(c);
    c->s->in_api++;
    mote_turn_compact(c, false);
    c->s->in_api--;
    mote_session_defer(c->s);
    return c->storage_failed ? MOTE_ERR_IO : 0;
}

int mote_conv_call(struct mote_conv *c, const char *name, const char *input, size_t len,
                   char *call_id, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    struct mote_session *s = c->s;
    struct mote_conv_call *k = &c->calls[0];
    unsigned char r[8];
    struct mote_sb sb;
    struct mote_jw w;
    char why[96];
    size_t n = name != NULL ? strlen(name) : 0, i;
    int rc;

    if (call_id != NULL && cap > 0)
        call_id[0] = '\0';
    if (s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (c->storage_failed)
        return c->jr.err != 0 ? c->jr.err : MOTE_ERR_IO;
    if (!c->jr.calls_only)
        return MOTE_ERR_NOTSUP; /* a chat's calls are its model's */
    if (mote_conv_busy(c) ||
        (mote_conv_next(c->st, MOTE_CEV_CALL).effects & MOTE_CEFF_JOURNAL_CALL) == 0)
        return MOTE_ERR_BUSY;
    if (n == 0 || n >= sizeof(k->name) || !mote_word_chars(name, n) || call_id == NULL ||
        cap < 27)
        return MOTE_ERR_INVAL;
    if (input == NULL || len == 0) {
        input = "{}";
        len = 2;
    }
    /* One object that every JSON reader reads alike (no member twice, no
     * NUL), written back canonically: what is journaled, asked about and
     * run is one input. */
    c->last_error[0] = '\0';
    rc = mote_json_parse_object(&s->jbuf.json, input, len, why, sizeof(why));
    if (rc >= 0)
        rc = mote_json_strict(&s->jbuf.json, 0, MOTE_JSON_NO_NUL, why, sizeof(why));
    if (rc < 0) {
        mote_conv_fail_msg(c, "the call's input is refused: ", why);
        return rc == MOTE_ERR_TOO_LARGE ? rc : MOTE_ERR_BADMSG;
    }
    mote_sb_init(&sb, s->jbuf.text, sizeof(s->jbuf.text));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_value(&w, &s->jbuf.json, 0);
    if (w.err != 0)
        return w.err == MOTE_ERR_INVAL ? MOTE_ERR_BADMSG : MOTE_ERR_TOO_LARGE;
    begin_turn(c);
    memset(r, 0, sizeof(r));
    if (MOTE_PORT_HAS(s->port, random))
        (void)s->port->random(s->port->ctx, r, sizeof(r));
    memset(k, 0, sizeof(*k));
    memcpy(k->id, "call_mote_", 10);
    for (i = 0; i < sizeof(r); i++) {
        k->id[10 + 2 * i] = hex[r[i] >> 4];
        k->id[11 + 2 * i] = hex[r[i] & 15u];
    }
    k->id[10 + 2 * sizeof(r)] = '\0';
    memcpy(k->name, name, n + 1);
    k->rec_off = c->jr.size;
    k->rec_idx = 0;
    c->ncalls = 1;
    c->call_i = 0;
    s->in_api++;
    rc = mote_turn_apply_text(c, MOTE_CEV_CALL, s->jbuf.text, sb.len);
    s->in_api--;
    if (rc < 0 && c->st != MOTE_CONV_TOOL_EXECUTING)
        c->ncalls = 0; /* refused whole: nothing was written */
    else
        mote_str_copy(call_id, cap, k->id);
    mote_session_defer(s); /* the state change is told from the loop */
    return rc;
}

int mote_conv_cancel(struct mote_conv *c)
{
    if (!mote_conv_busy(c))
        return MOTE_ERR_ALREADY;
    mote_cancel_set(&c->turn);
    if (c->llm_job != 0)
        (void)mote_job_cancel(c->s->loop, c->llm_job);
    else if (c->tool_job != 0)
        (void)mote_job_cancel(c->s->loop, c->tool_job);
    else {
        c->want_cancel = true; /* nothing runs: the deferred work ends the turn */
        mote_session_defer(c->s);
    }
    return 0;
}

int mote_conv_approve(struct mote_conv *c, uint32_t ask_id, enum mote_answer a,
                      const char *reason)
{
    if (c->st != MOTE_CONV_AWAITING_APPROVAL || ask_id == 0 || ask_id != c->ask_id ||
        c->answered)
        return MOTE_ERR_STALE;
    c->answered = true;
    c->answer = a;
    c->expired = false;
    c->ask_timed = false; /* answered in time: its deadline no longer counts */
    mote_str_copy(c->refusal, sizeof(c->refusal), reason != NULL ? reason : "");
    mote_session_defer(c->s);
    return 0;
}

int mote_conv_close(struct mote_conv *c)
{
    if (mote_conv_busy(c) || c->llm_job != 0 || c->tool_job != 0)
        return MOTE_ERR_BUSY;
    mote_journal_close(&c->jr);
    c->used = false;
    return 0;
}
