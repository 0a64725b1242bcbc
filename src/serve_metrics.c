/*
 * serve_metrics.c - what mote serve counts, and how it shows it: GET
 * /v1/metrics in Prometheus's text format (0.0.4), and the same numbers
 * as one JSON object for the retained PREFIX/stats on the broker.
 *
 * Counters come from the session's events: turns by how they ended, model
 * requests (the journal's request records), tokens by kind (each loaded
 * conversation's total, its growth counted once), errors by code, tool
 * calls, approvals. Gauges are read when asked: conversations loaded and
 * busy, questions waiting, the budget left, journals on disk and their
 * bytes, resident memory (the port's mem_resident), and the loop's lag,
 * measured by a timer every second (how late it fires).
 */
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_budget.h"
#include "mote/mote_time.h"
#include "serve_int.h"
#include "util.h"

#define TICK_MS 1000u
#define DAY_MS 86400000

static const char *const token_kinds[4] = {"input", "output", "cache_read", "cache_write"};

/* ---- counting ---------------------------------------------------------------------- */

static int64_t day_now(struct serve *sv)
{
    int64_t ms;

    if (!MOTE_PORT_HAS(sv->port, clock_real) ||
        sv->port->clock_real(sv->port->ctx, &ms) < 0 || ms < DAY_MS)
        return -1;
    return mote_time_div(ms, DAY_MS, NULL); /* (no 64-bit division in the core) */
}

/* A conversation's tokens: the growth of its total since last seen, once
 * (a conversation new in its slot, loaded with its history, counts from
 * there). */
static void tokens_of(struct serve *sv, const struct mote_conv *cv)
{
    struct serve_metrics *m = &sv->met;
    size_t i = (size_t)(cv - sv->conf.session->conv);
    const struct mote_usage *t = &cv->total;
    struct mote_usage *seen;
    uint64_t now[4], was[4];
    int64_t day;
    unsigned k;

    if (i >= MOTE_MAX_CONVERSATIONS)
        return;
    seen = &m->seen[i];
    if (strcmp(m->seen_id[i], cv->jr.id) != 0) {
        mote_str_copy(m->seen_id[i], sizeof(m->seen_id[i]), cv->jr.id);
        *seen = *t;
        return;
    }
    now[0] = t->input_tokens, now[1] = t->output_tokens;
    now[2] = t->cache_read_tokens, now[3] = t->cache_write_tokens;
    was[0] = seen->input_tokens, was[1] = seen->output_tokens;
    was[2] = seen->cache_read_tokens, was[3] = seen->cache_write_tokens;
    if (memcmp(now, was, sizeof(now)) == 0)
        return;
    day = day_now(sv);
    if (day != m->day) {
        memset(m->tokens_day, 0, sizeof(m->tokens_day));
        m->day = day;
    }
    for (k = 0; k < 4; k++) {
        if (now[k] > was[k]) {
            m->tokens[k] += now[k] - was[k];
            m->tokens_day[k] += now[k] - was[k];
        }
    }
    *seen = *t;
}

static void count_error(struct serve_metrics *m, int code)
{
    unsigned i;

    for (i = 0; i < m->ncodes; i++) {
        if (m->errors[i].code == code) {
            m->errors[i].n++;
            return;
        }
    }
    if (m->ncodes == SERVE_MET_CODES) {
        m->errors_other++;
        return;
    }
    m->errors[m->ncodes].code = code;
    m->errors[m->ncodes].n = 1;
    m->ncodes++;
}

void mote_serve_metrics_event(struct serve *sv, const struct mote_event *ev)
{
    struct serve_metrics *m = &sv->met;

    if (ev->conv != NULL)
        tokens_of(sv, ev->conv);
    switch (ev->type) {
    case MOTE_EV_RECORD:
        if (ev->len > 14 && memcmp(ev->text, "{\"t\":\"request\"", 14) == 0)
            m->model_requests++;
        return;
    case MOTE_EV_TURN_END: m->turns_answered++; return;
    case MOTE_EV_CANCELLED: m->turns_cancelled++; return;
    case MOTE_EV_ERROR:
        m->turns_failed++;
        count_error(m, ev->code);
        return;
    case MOTE_EV_TOOL_RESULT:
        m->tool_calls++;
        m->tool_errors += ev->is_error;
        return;
    case MOTE_EV_APPROVAL: m->approvals_asked++; return;
    case MOTE_EV_APPROVAL_EXPIRED: m->approvals_expired++; return;
    default: return;
    }
}

/* ---- the loop's lag, the stats' interval --------------------------------------------- */

static void on_tick(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct serve *sv = arg;
    struct serve_metrics *m = &sv->met;
    uint32_t now = mote_loop_now(loop);

    (void)t;
    m->tick = 0;
    m->lag_ms = mote_before(m->tick_due, now) ? now - m->tick_due : 0;
    if (m->lag_ms > m->lag_max_ms)
        m->lag_max_ms = m->lag_ms;
    if (sv->conf.stats_ms > 0) {
        if (m->stats_left_ms > TICK_MS) {
            m->stats_left_ms -= TICK_MS;
        } else {
            m->stats_left_ms = sv->conf.stats_ms;
            mote_serve_mqtt_stats(sv, mote_serve_metrics_json);
            m->lag_max_ms = m->lag_ms; /* the most since the last stats */
        }
    }
    if (sv->pub->phase != MOTE_SERVE_RUN && sv->pub->phase != MOTE_SERVE_DRAIN)
        return;
    m->tick_due = now + TICK_MS;
    if (mote_timer_start(loop, TICK_MS, on_tick, sv, 0, &m->tick) < 0)
        m->tick = 0;
}

void mote_serve_metrics_start(struct serve *sv)
{
    struct serve_metrics *m = &sv->met;

    m->started = mote_loop_now(sv->loop);
    m->day = day_now(sv);
    m->stats_left_ms = 5000; /* the first stats soon after the start */
    m->tick_due = m->started + TICK_MS;
    if (m->tick == 0 && mote_timer_start(sv->loop, TICK_MS, on_tick, sv, 0, &m->tick) < 0)
        m->tick = 0;
}

void mote_serve_metrics_stop(struct serve *sv)
{
    if (sv->met.tick != 0)
        (void)mote_timer_stop(sv->loop, sv->met.tick);
    sv->met.tick = 0;
}

/* ---- what is shown ---------------------------------------------------------------------- */

/* The gauges, read now. */
struct snap {
    unsigned loaded, busy, pending, budget_waiting;
    unsigned long on_disk;
    uint64_t journal_bytes;
    bool disk_ok;
    bool have_rss;
    uint64_t rss;
    uint32_t uptime_s;
    int64_t day;
    bool mqtt;
    bool mqtt_online;
    uint32_t mqtt_connects;
};

static void snap_take(struct serve *sv, struct snap *s)
{
    struct mote_session *ses = sv->conf.session;
    const struct mote_conv_call *call;
    unsigned i;
    int rc;

    memset(s, 0, sizeof(*s));
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *cv = &ses->conv[i];

        if (!cv->used)
            continue;
        s->loaded++;
        s->busy += mote_conv_busy(cv);
        s->pending += mote_conv_pending(cv, &call) != 0;
        s->budget_waiting += cv->want_budget;
        tokens_of(sv, cv);
    }
    rc = mote_session_tally(sv->conf.session, &s->on_disk, &s->journal_bytes);
    s->disk_ok = rc == 0 || rc == MOTE_ERR_NOENT; /* NOENT: none was ever made */
    s->have_rss = MOTE_PORT_HAS(sv->port, mem_resident) &&
                  sv->port->mem_resident(sv->port->ctx, &s->rss) == 0;
    s->uptime_s = (mote_loop_now(sv->loop) - sv->met.started) / 1000u;
    s->day = day_now(sv);
    if (s->day != sv->met.day) {
        memset(sv->met.tokens_day, 0, sizeof(sv->met.tokens_day));
        sv->met.day = s->day;
    }
    s->mqtt = mote_serve_mqtt_info(sv, &s->mqtt_online, &s->mqtt_connects);
}

/* One limit of the budget: its name, the limit and what is left of it
 * (cost: micro-units of money). */
struct limit {
    const char *name;
    uint64_t limit, used;
    bool money;
};

static unsigned limits_of(struct serve *sv, struct limit *out)
{
    struct mote_budget *b = sv->conf.session->budget;
    const struct mote_budget_conf *c;
    unsigned n = 0;

    if (b == NULL || !b->open)
        return 0;
    (void)mote_budget_blocked(b); /* (the windows rolled to now) */
    c = &b->conf;
#define LIM(nm, l, u, mon)                                                                         \
    do {                                                                                           \
        if ((l) > 0) {                                                                             \
            out[n].name = (nm);                                                                    \
            out[n].limit = (l);                                                                    \
            out[n].used = (u);                                                                     \
            out[n].money = (mon);                                                                  \
            n++;                                                                                   \
        }                                                                                          \
    } while (0)
    LIM("requests_hour", c->requests_hour, b->hour.requests, false);
    LIM("requests_day", c->requests_day, b->day.requests, false);
    LIM("input_tokens_hour", c->input_hour, b->hour.input, false);
    LIM("input_tokens_day", c->input_day, b->day.input, false);
    LIM("output_tokens_hour", c->output_hour, b->hour.output, false);
    LIM("output_tokens_day", c->output_day, b->day.output, false);
    LIM("cached_tokens_hour", c->cached_hour, b->hour.cached, false);
    LIM("cached_tokens_day", c->cached_day, b->day.cached, false);
    LIM("cost_hour", c->cost_hour,
        (uint64_t)mote_time_div((int64_t)b->hour.cost_pico, 1000000u, NULL), true);
    LIM("cost_day", c->cost_day,
        (uint64_t)mote_time_div((int64_t)b->day.cost_pico, 1000000u, NULL), true);
#undef LIM
    return n;
}

/* A number of micro-units as a decimal ("2.500000"). */
static void sb_micro(struct mote_sb *b, uint64_t v)
{
    char frac[8];
    unsigned k;
    uint32_t f;

    mote_sb_u(b, (uint64_t)mote_time_div((int64_t)v, 1000000u, &f));
    for (k = 0; k < 6; k++) {
        frac[5 - k] = (char)('0' + f % 10u);
        f /= 10u;
    }
    frac[6] = '\0';
    mote_sb_s(b, ".");
    mote_sb_s(b, frac);
}

/* A label's value, escaped as the text format wants (\\, \", \n). */
static void sb_label(struct mote_sb *b, const char *v)
{
    for (; *v != '\0'; v++) {
        if (*v == '\\' || *v == '"')
            mote_sb_n(b, "\\", 1);
        if (*v == '\n')
            mote_sb_s(b, "\\n");
        else
            mote_sb_n(b, v, 1);
    }
}

static void family(struct mote_sb *b, const char *name, const char *type, const char *help)
{
    mote_sb_join(b, "# HELP ", name, " ");
    mote_sb_join(b, help, "\n# TYPE ", name);
    mote_sb_join(b, " ", type, "\n");
}

/* name{label="value"} n */
static void sample(struct mote_sb *b, const char *name, const char *label, const char *value,
                   uint64_t n)
{
    mote_sb_s(b, name);
    if (label != NULL) {
        mote_sb_join(b, "{", label, "=\"");
        sb_label(b, value);
        mote_sb_s(b, "\"}");
    }
    mote_sb_s(b, " ");
    mote_sb_u(b, n);
    mote_sb_s(b, "\n");
}

static void one(struct mote_sb *b, const char *name, const char *type, const char *help,
                uint64_t n)
{
    family(b, name, type, help);
    sample(b, name, NULL, NULL, n);
}

static void seconds(struct mote_sb *b, const char *name, uint32_t ms)
{
    mote_sb_s(b, name);
    mote_sb_s(b, " ");
    sb_micro(b, (uint64_t)ms * 1000u);
    mote_sb_s(b, "\n");
}

static void prometheus(struct serve *sv, struct mote_sb *b)
{
    const struct serve_metrics *m = &sv->met;
    struct limit lim[10];
    struct snap s;
    unsigned i, n;

    snap_take(sv, &s);
    family(b, "mote_info", "gauge", "The version of mote and the model new turns use.");
    mote_sb_s(b, "mote_info{version=\"");
    sb_label(b, mote_version());
    mote_sb_s(b, "\",model=\"");
    sb_label(b, sv->conf.conv->model != NULL ? sv->conf.conv->model : "");
    mote_sb_s(b, "\"} 1\n");
    one(b, "mote_uptime_seconds", "gauge", "Seconds since the server started.", s.uptime_s);
    family(b, "mote_turns_total", "counter", "Turns ended, by how: answered, cancelled, failed.");
    sample(b, "mote_turns_total", "end", "answered", m->turns_answered);
    sample(b, "mote_turns_total", "end", "cancelled", m->turns_cancelled);
    sample(b, "mote_turns_total", "end", "failed", m->turns_failed);
    one(b, "mote_model_requests_total", "counter",
        "Requests sent to the model (each attempt of each tool round).", m->model_requests);
    family(b, "mote_tokens_total", "counter", "Tokens of the model's answers, by kind.");
    for (i = 0; i < 4; i++)
        sample(b, "mote_tokens_total", "kind", token_kinds[i], m->tokens[i]);
    family(b, "mote_tokens_today", "gauge",
           "Tokens since the day began (UTC; since the start without a real-time clock).");
    for (i = 0; i < 4; i++)
        sample(b, "mote_tokens_today", "kind", token_kinds[i], m->tokens_day[i]);
    family(b, "mote_errors_total", "counter", "Turns that failed, by the error's code.");
    for (i = 0; i < m->ncodes; i++)
        sample(b, "mote_errors_total", "code", mote_err_name(m->errors[i].code), m->errors[i].n);
    sample(b, "mote_errors_total", "code", "other", m->errors_other);
    family(b, "mote_tool_calls_total", "counter", "Tool calls ended, by result.");
    sample(b, "mote_tool_calls_total", "result", "ok", m->tool_calls - m->tool_errors);
    sample(b, "mote_tool_calls_total", "result", "error", m->tool_errors);
    one(b, "mote_approvals_asked_total", "counter", "Tool calls that asked for approval.",
        m->approvals_asked);
    one(b, "mote_approvals_expired_total", "counter",
        "Questions nobody answered before their deadline.", m->approvals_expired);
    one(b, "mote_approvals_pending", "gauge", "Tool calls waiting for approval now.", s.pending);
    one(b, "mote_mcp_questions_total", "counter", "MCP servers' questions to the users.",
        m->questions);
    one(b, "mote_mcp_questions_unanswered_total", "counter",
        "MCP servers' questions the policy answered: nobody there, or the deadline.",
        m->questions_policy);
    n = limits_of(sv, lim);
    if (n > 0) {
        family(b, "mote_budget_limit", "gauge",
               "The spend budget's limits (cost in units of money).");
        for (i = 0; i < n; i++) {
            mote_sb_s(b, "mote_budget_limit{limit=\"");
            mote_sb_s(b, lim[i].name);
            mote_sb_s(b, "\"} ");
            if (lim[i].money)
                sb_micro(b, lim[i].limit);
            else
                mote_sb_u(b, lim[i].limit);
            mote_sb_s(b, "\n");
        }
        family(b, "mote_budget_remaining", "gauge",
               "What is left of each limit in its hour or day (cost in units of money).");
        for (i = 0; i < n; i++) {
            uint64_t left = lim[i].used < lim[i].limit ? lim[i].limit - lim[i].used : 0;

            mote_sb_s(b, "mote_budget_remaining{limit=\"");
            mote_sb_s(b, lim[i].name);
            mote_sb_s(b, "\"} ");
            if (lim[i].money)
                sb_micro(b, left);
            else
                mote_sb_u(b, left);
            mote_sb_s(b, "\n");
        }
        one(b, "mote_budget_waiting", "gauge", "Turns waiting for the budget to free.",
            s.budget_waiting);
    }
    one(b, "mote_conversations_loaded", "gauge", "Conversations loaded.", s.loaded);
    one(b, "mote_conversations_busy", "gauge", "Conversations whose turn runs.", s.busy);
    if (s.disk_ok) {
        one(b, "mote_conversations_stored", "gauge", "Conversations on disk.", s.on_disk);
        one(b, "mote_journal_bytes", "gauge", "Bytes of the conversations' journals.",
            s.journal_bytes);
    }
    if (s.have_rss)
        one(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
            s.rss);
    family(b, "mote_loop_lag_seconds", "gauge", "How late the loop's last 1 s timer fired.");
    seconds(b, "mote_loop_lag_seconds", m->lag_ms);
    family(b, "mote_loop_lag_max_seconds", "gauge",
           "The most the loop's timer was late since the last stats (or the start).");
    seconds(b, "mote_loop_lag_max_seconds", m->lag_max_ms);
    one(b, "mote_http_requests_total", "counter", "HTTP requests answered.", m->http_requests);
    one(b, "mote_http_connections", "gauge", "HTTP connections open.", sv->http.nconns);
    one(b, "mote_http_refused_total", "counter", "Connections refused (every slot taken).",
        sv->http.refused);
    if (s.mqtt) {
        one(b, "mote_mqtt_requests_total", "counter", "Requests taken from the broker.",
            m->mqtt_requests);
        one(b, "mote_mqtt_connected", "gauge", "1 while connected to the broker.",
            s.mqtt_online);
        one(b, "mote_mqtt_connects_total", "counter", "Connections made to the broker.",
            s.mqtt_connects);
    }
}

void mote_serve_http_metrics(struct serve *sv, struct mote_httpd_conn *c)
{
    char *buf = mote_httpd_pool_take(c);
    struct mote_sb b;

    if (buf == NULL) {
        mote_httpd_error(c, 503, "busy", "no buffer free for the metrics: try again",
                         "Retry-After: 1\r\n");
        return;
    }
    mote_sb_init(&b, buf, MOTE_SERVE_BODY_MAX);
    prometheus(sv, &b);
    if (b.len >= MOTE_SERVE_BODY_MAX - 1) {
        mote_httpd_pool_put(c);
        mote_httpd_error(c, 500, "internal", "the metrics do not fit the body buffer", NULL);
        return;
    }
    (void)mote_httpd_head(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, true, b.len);
    mote_httpd_pool_send(c, b.len);
    mote_httpd_respond(c, false);
}

void mote_serve_metrics_json(struct serve *sv, struct mote_jw *w)
{
    const struct serve_metrics *m = &sv->met;
    struct limit lim[10];
    struct snap s;
    unsigned i, n;

    snap_take(sv, &s);
    mote_jw_obj(w);
    mote_jw_kstr(w, "version", mote_version());
    mote_jw_kstr(w, "model", sv->conf.conv->model != NULL ? sv->conf.conv->model : "");
    mote_jw_kint(w, "uptime_s", s.uptime_s);
    mote_jw_key(w, "turns");
    mote_jw_obj(w);
    mote_jw_kint(w, "answered", (int64_t)m->turns_answered);
    mote_jw_kint(w, "cancelled", (int64_t)m->turns_cancelled);
    mote_jw_kint(w, "failed", (int64_t)m->turns_failed);
    mote_jw_obj_end(w);
    mote_jw_kint(w, "model_requests", (int64_t)m->model_requests);
    mote_jw_key(w, "tokens");
    mote_jw_obj(w);
    for (i = 0; i < 4; i++) {
        mote_jw_key(w, token_kinds[i]);
        mote_jw_int(w, (int64_t)m->tokens[i]);
    }
    mote_jw_obj_end(w);
    mote_jw_key(w, "tokens_today");
    mote_jw_obj(w);
    for (i = 0; i < 4; i++) {
        mote_jw_key(w, token_kinds[i]);
        mote_jw_int(w, (int64_t)m->tokens_day[i]);
    }
    mote_jw_obj_end(w);
    mote_jw_key(w, "errors");
    mote_jw_obj(w);
    for (i = 0; i < m->ncodes; i++) {
        mote_jw_key(w, mote_err_name(m->errors[i].code));
        mote_jw_int(w, (int64_t)m->errors[i].n);
    }
    mote_jw_kint(w, "other", (int64_t)m->errors_other);
    mote_jw_obj_end(w);
    mote_jw_kint(w, "tool_calls", (int64_t)m->tool_calls);
    mote_jw_kint(w, "tool_errors", (int64_t)m->tool_errors);
    mote_jw_key(w, "approvals");
    mote_jw_obj(w);
    mote_jw_kint(w, "pending", s.pending);
    mote_jw_kint(w, "asked", (int64_t)m->approvals_asked);
    mote_jw_kint(w, "expired", (int64_t)m->approvals_expired);
    mote_jw_obj_end(w);
    mote_jw_key(w, "budget");
    n = limits_of(sv, lim);
    if (sv->conf.session->budget == NULL || !sv->conf.session->budget->open) {
        mote_jw_null(w);
    } else {
        mote_jw_obj(w);
        for (i = 0; i < n; i++) {
            mote_jw_key(w, lim[i].name);
            mote_jw_obj(w);
            mote_jw_key(w, lim[i].money ? "limit_micro" : "limit");
            mote_jw_int(w, (int64_t)lim[i].limit);
            mote_jw_key(w, lim[i].money ? "left_micro" : "left");
            mote_jw_int(w, (int64_t)(lim[i].used < lim[i].limit ? lim[i].limit - lim[i].used : 0));
            mote_jw_obj_end(w);
        }
        mote_jw_kint(w, "waiting", s.budget_waiting);
        mote_jw_obj_end(w);
    }
    /* the tightest limit, in percent of it (Home Assistant's "budget left") */
    mote_jw_key(w, "budget_left_pct");
    if (n == 0) {
        mote_jw_null(w);
    } else {
        uint64_t least = 100;

        for (i = 0; i < n; i++) {
            uint64_t left = lim[i].used < lim[i].limit ? lim[i].limit - lim[i].used : 0;
            uint64_t pct = 100;

            /* (the whole percent below: no 64-bit division in the core) */
            while (pct > 0 && pct * lim[i].limit > left * 100u)
                pct--;

            least = pct < least ? pct : least;
        }
        mote_jw_int(w, (int64_t)least);
    }
    mote_jw_key(w, "conversations");
    mote_jw_obj(w);
    mote_jw_kint(w, "loaded", s.loaded);
    mote_jw_kint(w, "busy", s.busy);
    mote_jw_kint(w, "stored", (int64_t)s.on_disk);
    mote_jw_obj_end(w);
    mote_jw_kint(w, "journal_bytes", (int64_t)s.journal_bytes);
    mote_jw_key(w, "rss_bytes");
    if (s.have_rss)
        mote_jw_int(w, (int64_t)s.rss);
    else
        mote_jw_null(w);
    mote_jw_kint(w, "loop_lag_ms", m->lag_ms);
    mote_jw_kint(w, "loop_lag_max_ms", m->lag_max_ms);
    mote_jw_kint(w, "http_requests", (int64_t)m->http_requests);
    mote_jw_kint(w, "mqtt_requests", (int64_t)m->mqtt_requests);
    mote_jw_obj_end(w);
}
