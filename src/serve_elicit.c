/*
 * serve_elicit.c - an MCP server's question (elicitation) under mote
 * serve (mote_serve.h: mote_serve_elicit_on): it goes to whoever
 * approves the calls of the conversation whose tool call it came during:
 * the `elicitation` event on its event streams and MQTT, GET and POST
 * /v1/conversations/ID/elicitation, MQTT's "elicit"; with the
 * conversation's approval deadline. Nobody there, or the deadline
 * passed: declined, or under the approval policy "allow" answered with
 * the form's own defaults when every field has one.
 */
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_mcp.h"
#include "serve_int.h"
#include "serve_mqtt.h"
#include "util.h"

static const char *const action_names[] = {"accept", "decline", "cancel"};

/* The conversation whose tool call server `srv` of m is answering, or NULL. */
static struct mote_conv *conv_of(struct serve *sv, struct mote_mcp *m, unsigned srv)
{
    struct mote_session *ses = sv->conf.session;
    const struct mote_mcp_call *call = srv < m->n ? m->srv[srv].call : NULL;
    unsigned i;

    for (i = 0; call != NULL && i < MOTE_ARRAY_LEN(ses->runs); i++) {
        if (ses->runs[i].used && ses->runs[i].conv != NULL && &ses->runs[i].st.mcp == call)
            return ses->runs[i].conv;
    }
    return NULL;
}

/* True when someone could answer conversation `id`'s question: an event
 * stream follows it, or MQTT is online and takes answers. */
static bool someone_there(struct serve *sv, const char *id)
{
    const struct mq *q = mote_serve_mqtt_of(sv);
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        if (mote_serve_follower(sv, i, id) != NULL)
            return true;
    }
    /* (read here, not asked of serve_mqtt.c: its requests answer questions) */
    return !sv->conf.mqtt_approve_off && q != NULL && q->phase != MQ_OFF &&
           q->client->sess.state == MOTE_MQTT_S_ONLINE;
}

/* The question's members (the form's: server, message, fields) and its deadline. */
static void put_question(struct serve *sv, const struct mote_serve_asks *sa, struct mote_jw *w)
{
    const struct mote_json *j = &sa->form.js;
    uint32_t now = mote_loop_now(sv->loop), end = sa->t0 + sa->timeout_ms;

    mote_jw_kint(w, "ask_id", sa->ask);
    mote_jw_key(w, "server");
    mote_jw_value(w, j, mote_json_member(j, 0, "server"));
    mote_jw_key(w, "message");
    mote_jw_value(w, j, mote_json_member(j, 0, "message"));
    mote_jw_key(w, "fields");
    mote_jw_value(w, j, mote_json_member(j, 0, "fields"));
    mote_jw_kint(w, "timeout_ms", sa->timeout_ms);
    if (sa->timeout_ms > 0) {
        mote_jw_key(w, "expires_in_ms");
        mote_jw_int(w, mote_before(now, end) ? (int64_t)(end - now) : 0);
    }
}

/* The question ended: its timer stopped, the `elicitation_end` event
 * ({"ask_id", "action", "by", "text"}) to the conversation's clients. */
static void ended(struct serve *sv, struct mote_serve_asks *sa, enum mote_mcp_action action,
                  const char *by, const char *text)
{
    struct mote_sb k;
    struct mote_jw w;

    if (sa->timer != 0)
        (void)mote_timer_stop(sv->loop, sa->timer);
    sa->timer = 0;
    mote_serve_ev_open(sv, &k, &w, "elicitation_end");
    mote_jw_kint(&w, "ask_id", sa->ask);
    mote_jw_kstr(&w, "action", action_names[action]);
    mote_jw_kstr(&w, "by", by);
    mote_jw_kstr(&w, "text", text);
    (void)mote_serve_ev_send(sv, &k, &w, sa->conv);
    sa->ask = 0;
}

/* Answered without anyone (`why`: nobody there, the deadline): the form's
 * defaults under the policy "allow", else declined. */
static void by_policy(struct serve *sv, struct mote_serve_asks *sa, uint32_t id, bool allow,
                      const char *by, const char *why)
{
    char reason[160], line[320];
    enum mote_mcp_action action = MOTE_MCP_DECLINE;
    struct mote_sb sb;

    reason[0] = '\0';
    sv->met.questions_policy++;
    if (allow && mote_mcp_form_defaults(&sa->form, &sa->a.q, reason, sizeof(reason)) == 0 &&
        mote_mcp_elicit_answer(sa->m, id, MOTE_MCP_ACCEPT, sa->form.content, sa->form.len,
                               reason, sizeof(reason)) == 0)
        action = MOTE_MCP_ACCEPT;
    else
        (void)mote_mcp_elicit_answer(sa->m, id, MOTE_MCP_DECLINE, NULL, 0, NULL, 0);
    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_join(&sb, "an MCP server's question (conversation ", sa->conv[0] ? sa->conv : "none",
                 "): ");
    mote_sb_join(&sb, why, action == MOTE_MCP_ACCEPT ? ": accepted with its defaults (approval "
                                                       "allow)"
                                                     : ": declined",
                 NULL);
    if (action != MOTE_MCP_ACCEPT && reason[0] != '\0')
        mote_sb_join(&sb, " (", reason, ")");
    mote_httpd_say(&sv->http, line, NULL, NULL);
    if (sa->ask != 0)
        ended(sv, sa, action, by, line);
}

static void on_deadline(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_serve_asks *sa = arg;
    struct serve *sv = mote_serve_state(sa->srv);
    struct mote_conv *cv = mote_conv_find(sv->conf.session, sa->conv);

    (void)loop, (void)t;
    sa->timer = 0;
    if (sa->ask == 0)
        return;
    by_policy(sv, sa, sa->ask, cv != NULL && cv->conf.approval == MOTE_APPROVE_ALLOW, "deadline",
              "nobody answered within its deadline");
}

static void on_ask(void *arg, const struct mote_mcp_ask *q, bool closed)
{
    struct mote_serve_asks *sa = arg;
    struct serve *sv = mote_serve_state(sa->srv);
    struct mote_conv *cv;
    struct mote_sb k;
    struct mote_jw w;

    if (closed) {
        if (sa->ask != 0 && sa->ask == q->id)
            ended(sv, sa, MOTE_MCP_CANCEL, "server", "its MCP server stopped");
        return;
    }
    sa->ask = 0;
    sa->conv[0] = '\0';
    sv->met.questions++;
    cv = conv_of(sv, sa->m, q->srv);
    if (cv == NULL || sv->pub->phase != MOTE_SERVE_RUN) {
        by_policy(sv, sa, q->id, false, "nobody",
                  cv == NULL ? "it came outside a conversation's tool call"
                             : "mote is shutting down");
        return;
    }
    mote_str_copy(sa->conv, sizeof(sa->conv), mote_conv_id(cv));
    if (mote_mcp_form_begin(&sa->form, q) < 0) {
        by_policy(sv, sa, q->id, false, "nobody", "its form cannot be read");
        return;
    }
    if (!someone_there(sv, sa->conv)) {
        by_policy(sv, sa, q->id, cv->conf.approval == MOTE_APPROVE_ALLOW, "nobody",
                  "nobody follows the conversation (no event stream, no MQTT)");
        return;
    }
    sa->ask = q->id;
    sa->timeout_ms = cv->conf.approval_timeout_ms;
    sa->t0 = mote_loop_now(sv->loop);
    mote_serve_ev_open(sv, &k, &w, "elicitation");
    put_question(sv, sa, &w);
    if (!mote_serve_ev_send(sv, &k, &w, sa->conv)) {
        sa->ask = 0; /* nobody could be shown it */
        by_policy(sv, sa, q->id, cv->conf.approval == MOTE_APPROVE_ALLOW, "nobody",
                  "its form is larger than an event (MOTE_SERVE_OUT_BUF)");
        return;
    }
    sa->timer = 0;
    if (sa->timeout_ms > 0 &&
        mote_timer_start(sv->loop, sa->timeout_ms, on_deadline, sa, 0, &sa->timer) < 0)
        sa->timer = 0;
    mote_httpd_say(&sv->http, "conversation ", sa->conv, " waits for an MCP server's question");
}

/* The open question of conversation `id`, or NULL. */
static struct mote_serve_asks *open_of(struct serve *sv, const char *id)
{
    struct mote_serve_asks *sa;

    for (sa = sv->asks; sa != NULL; sa = sa->next) {
        if (sa->ask != 0 && strcmp(sa->conv, id) == 0)
            return sa;
    }
    return NULL;
}

/* A stream that caught up with conversation `id` (after its state event):
 * the open question again, if any (a client that came or fell behind
 * never misses it). */
static bool tell(struct serve *sv, struct mote_httpd_conn *c, const char *id)
{
    struct mote_serve_asks *sa = open_of(sv, id);
    struct mote_sb k;
    struct mote_jw w;

    if (sa == NULL)
        return true;
    mote_serve_ev_open(sv, &k, &w, "elicitation");
    put_question(sv, sa, &w);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return true; /* (not sent when it was asked either) */
    k.cap += 2;
    (void)mote_sb_put(&k, "\n\n", 2);
    return mote_httpd_out(c, k.p, k.len);
}

void mote_serve_elicit_on(struct mote_serve *pub, struct mote_serve_asks *sa, struct mote_mcp *m)
{
    struct serve *sv = mote_serve_state(pub);
    struct mote_serve_asks *p;

    for (p = sv->asks; p != NULL && p != sa; p = p->next) {
    }
    if (p == NULL) {
        memset(sa, 0, sizeof(*sa));
        sa->next = sv->asks;
        sv->asks = sa;
    }
    sa->srv = pub;
    sa->m = m;
    sa->ask = 0;
    sa->timer = 0;
    sv->elicit_tell = tell;
    /* (the deadline is the conversation's, kept here: the library's none) */
    mote_mcp_elicit_on(m, &sa->a, on_ask, sa, 0);
}

void mote_serve_elicit_off(struct mote_serve *pub, struct mote_serve_asks *sa)
{
    struct serve *sv = mote_serve_state(pub);
    struct mote_serve_asks **pp;

    if (sa->ask != 0) {
        (void)mote_mcp_elicit_answer(sa->m, sa->ask, MOTE_MCP_CANCEL, NULL, 0, NULL, 0);
        ended(sv, sa, MOTE_MCP_CANCEL, "server", "its MCP servers were replaced (a reload)");
    }
    for (pp = &sv->asks; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == sa) {
            *pp = sa->next;
            break;
        }
    }
}

int mote_serve_elicit_answer(struct serve *sv, const char *id, uint32_t ask,
                             enum mote_mcp_action action, const char *content, size_t len,
                             char *err, size_t cap, const char *by)
{
    struct mote_serve_asks *sa = open_of(sv, id);
    int rc;

    if (sa == NULL)
        return MOTE_ERR_NOENT;
    if (ask != 0 && ask != sa->ask)
        return MOTE_ERR_STALE;
    rc = mote_mcp_elicit_answer(sa->m, sa->ask, action, content, len, err, cap);
    if (rc == MOTE_ERR_INVAL || rc == MOTE_ERR_FULL)
        return rc; /* (the question stays open) */
    mote_httpd_say(&sv->http, "mcp question answered: ", action_names[action], NULL);
    ended(sv, sa, action, by, rc == 0 ? "answered" : "its server could not be told");
    return rc;
}

bool mote_serve_elicit_json(struct serve *sv, const char *id, struct mote_jw *w)
{
    struct mote_serve_asks *sa = open_of(sv, id);

    if (sa == NULL)
        return false;
    put_question(sv, sa, w);
    return true;
}

const char *mote_serve_elicit_take(struct serve *sv, const struct mote_json *js, int t,
                                   const char *id, const char *by, char *msg, size_t cap,
                                   const char **action)
{
    int ta = mote_json_member(js, t, "action"), tk = mote_json_member(js, t, "ask_id");
    int tc = mote_json_member(js, t, "content"), rc;
    const char *content = NULL, *code = "bad_field", *m;
    char name[16], err[200];
    size_t clen = 0;
    int64_t ask = 0;
    unsigned a = 3;
    struct mote_sb sb;

    err[0] = '\0';
    if (mote_json_type_of(js, ta) == MOTE_JSON_STRING && mote_json_cstr(js, ta, name, 16) >= 0)
        for (a = 0; a < 3 && strcmp(name, action_names[a]) != 0; a++) {
        }
    if (a == 3) {
        m = "\"action\" is accept, decline or cancel";
    } else if (tk >= 0 &&
               (mote_json_int(js, tk, &ask) < 0 || ask < 1 || ask > (int64_t)UINT32_MAX)) {
        m = "\"ask_id\" must be a number from 1 to 4294967295";
    } else if (a == MOTE_MCP_ACCEPT && mote_json_type_of(js, tc) != MOTE_JSON_OBJECT) {
        m = "accept needs \"content\": an object of the form's fields";
    } else {
        if (a == MOTE_MCP_ACCEPT)
            content = mote_json_raw(js, tc, &clen);
        *action = action_names[a];
        rc = mote_serve_elicit_answer(sv, id, (uint32_t)ask, (enum mote_mcp_action)a, content,
                                      clen, err, sizeof(err), by);
        if (rc == 0)
            return NULL;
        code = rc == MOTE_ERR_NOENT   ? "no_question"
               : rc == MOTE_ERR_STALE ? "stale"
               : rc == MOTE_ERR_INVAL ? "bad_content"
               : rc == MOTE_ERR_FULL  ? "busy"
                                      : "mcp_failed";
        m = rc == MOTE_ERR_NOENT   ? "no MCP server's question waits in this conversation"
            : rc == MOTE_ERR_STALE ? "that question is not the one waiting for an answer"
            : rc == MOTE_ERR_INVAL ? "the answer does not fit the form (the question stays open): "
            : rc == MOTE_ERR_FULL  ? "the MCP server's queue is full: try again"
                                   : "the MCP server could not be told (the question is over)";
    }
    mote_sb_init(&sb, msg, cap);
    mote_sb_join(&sb, m, err, NULL);
    return code;
}

