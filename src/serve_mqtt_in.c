/*
 * serve_mqtt_in.c - requests to mote serve's MQTT front door (serve_mqtt.h):
 * a message on PREFIX/in is one JSON object, {"id", "conversation", and
 * "text" | "approve": {...} | "elicit": {...} | "cancel": true}, run
 * through the API's actions (serve_api.c, serve_elicit.c).
 *
 * Exactly once in effect: a message is acknowledged (PUBACK) only once
 * its user record, with the request's id, is journaled and synced, and
 * an id the journal holds already is acknowledged without running it
 * again (mote_journal_rid_seen); approvals and cancels are remembered by
 * id while mote runs. A request whose conversation is busy waits here,
 * unacknowledged, in a small table (its conversation's requests in
 * order); what does not fit waits in the broker: the client is told "not
 * now" (MOTE_ERR_AGAIN) and reads nothing more until the kick resumes it.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_mqtt.h"
#include "util.h"

/* The request is done with: acknowledged. */
static enum mq_res done(struct mq *q, uint32_t ack)
{
    if (ack != 0)
        (void)mote_mqtt_ack(q->client, ack); /* STALE: the broker forgot it meanwhile */
    return MQ_DONE;
}

static enum mq_res fail(struct mq *q, const struct mq_req *r, const char *code, const char *a,
                        const char *b, const char *c)
{
    return mote_serve_mqtt_fail(q, r, code, a, b, c);
}

/* A failure of the API's actions as an error. */
static enum mq_res fail_rc(struct mq *q, const struct mq_req *r, int rc, uint32_t bad)
{
    char n[24];
    struct mote_sb sb;

    switch (rc) {
    case MOTE_ERR_CORRUPT:
        mote_sb_init(&sb, n, sizeof(n));
        mote_sb_u(&sb, bad);
        return fail(q, r, "damaged", "the conversation is damaged at line ", n,
                    "; it is left as it is");
    case MOTE_ERR_NOTSUP:
        return fail(q, r, "newer", "the conversation was written by a newer mote", NULL, NULL);
    case MOTE_ERR_LOCKED:
        return fail(q, r, "locked", "the conversation is open in another process", NULL, NULL);
    case MOTE_ERR_TOO_LARGE:
        return fail(q, r, "too_large", "the message is larger than a journal record holds", NULL,
                    NULL);
    case MOTE_ERR_INVAL: return fail(q, r, "empty", "the message is empty", NULL, NULL);
    default: return fail(q, r, "storage", "storage failed: ", mote_strerror(rc), NULL);
    }
}

static bool waits_for(const struct mq *q, const char *conv, unsigned before)
{
    unsigned i;

    for (i = 0; i < before && i < q->nwait; i++) {
        if (strcmp(q->wait[i].conv, conv) == 0)
            return true;
    }
    return false;
}

/* A user message: journaled with its id (once), then acknowledged. */
static enum mq_res take_text(struct mq *q, const struct mq_req *r)
{
    struct serve *sv = q->sv;
    struct mote_conv *cv = NULL, *held;
    uint64_t off = 0;
    uint32_t bad = 0;
    int rc, seen;

    if (sv->pub->phase != MOTE_SERVE_RUN)
        return MQ_LATER;
    cv = mote_serve_find(sv, r->conv);
    if (cv == NULL) {
        rc = mote_serve_load(sv, r->conv, &cv, &bad);
        if (rc == MOTE_ERR_NOENT) {
            rc = mote_serve_create(sv, r->conv, &cv);
            if (rc == 0)
                mote_serve_mqtt_say(q, "conversation ", r->conv, " created for a request");
            else if (rc == MOTE_ERR_EXIST)
                rc = mote_serve_load(sv, r->conv, &cv, &bad);
        }
        if (rc == MOTE_ERR_FULL || rc == MOTE_ERR_AGAIN)
            return MQ_WAIT; /* every slot is busy (when a turn ends), or its journal is
                             * long or another one loads (when the load ends) */
        if (rc == MOTE_ERR_SHUTDOWN)
            return MQ_LATER;
        if (rc < 0)
            return fail_rc(q, r, rc, bad);
    }
    seen = mote_journal_rid_seen(&cv->jr, r->rid, strlen(r->rid));
    if (seen < 0)
        return fail_rc(q, r, seen, 0);
    if (seen > 0) {
        mote_serve_mqtt_say(q, "request ", r->rid, " is in the journal already: not run again");
        return done(q, r->ack);
    }
    if (mote_conv_busy(cv)) {
        if (mote_conv_state(cv) == MOTE_CONV_AWAITING_APPROVAL)
            return fail(q, r, "busy",
                        "the conversation waits for an approval: answer it (\"approve\") or "
                        "cancel the turn, then send the message again",
                        NULL, NULL);
        return MQ_WAIT;
    }
    held = cv;
    if (mote_journal_next_rid(&held->jr, r->rid, strlen(r->rid)) < 0)
        return fail(q, r, "bad_field", "\"id\" must be UTF-8 without NUL", NULL, NULL);
    rc = mote_serve_send(sv, r->conv, r->text, r->len, false, &cv, &off, &bad);
    (void)mote_journal_next_rid(&held->jr, NULL, 0); /* taken, or never to be */
    if (rc == MOTE_ERR_BUSY || rc == MOTE_ERR_FULL || rc == MOTE_ERR_AGAIN)
        return MQ_WAIT;
    if (rc == MOTE_ERR_SHUTDOWN)
        return MQ_LATER;
    if (rc < 0)
        return fail_rc(q, r, rc, bad);
    return done(q, r->ack); /* journaled and synced: now the broker may forget it */
}

/* FNV-1a of an approval's or a cancel's id (with its conversation). */
static uint64_t ctl_hash(const struct mq_req *r)
{
    uint64_t h = 14695981039346656037ULL;
    const char *parts[2] = {r->conv, r->rid};
    unsigned k;

    for (k = 0; k < 2; k++) {
        const char *s;

        for (s = parts[k]; *s != '\0'; s++) {
            h ^= (unsigned char)*s;
            h *= 1099511628211ULL;
        }
        h ^= 0xFFu;
        h *= 1099511628211ULL;
    }
    return h;
}

static bool ctl_seen(const struct mq *q, uint64_t h)
{
    unsigned i, n = q->nctl < MOTE_SERVE_MQTT_WAIT ? q->nctl : MOTE_SERVE_MQTT_WAIT;

    for (i = 0; i < n; i++) {
        if (q->ctl_done[i] == h)
            return true;
    }
    return false;
}

/* True if conversation `id` exists (loaded or on disk). */
static bool known(struct serve *sv, const char *id)
{
    struct serve_look look;
    uint32_t bad;

    return mote_serve_look(sv, id, &look, &bad) != MOTE_ERR_NOENT;
}

/* An approval or a cancel that was done: remembered, acknowledged. */
static enum mq_res ctl_ok(struct mq *q, const struct mq_req *r, uint64_t h)
{
    q->ctl_done[q->nctl++ % MOTE_SERVE_MQTT_WAIT] = h;
    return done(q, r->ack);
}

/* "approve": {"call_id", "answer", "reason", "ask_id"} in token `t`. */
static enum mq_res take_approve(struct mq *q, const struct mq_req *r, int t, uint64_t h)
{
    struct serve *sv = q->sv;
    const struct mote_json *js = &sv->json;
    char call_id[MOTE_LLM_ID_MAX], answer[16], reason[200];
    int tc = mote_json_member(js, t, "call_id"), ta = mote_json_member(js, t, "answer");
    int tr = mote_json_member(js, t, "reason"), tk = mote_json_member(js, t, "ask_id");
    enum mote_answer a;
    struct mote_conv *cv;
    int64_t ask = 0;
    int rc;

    if (mote_json_type_of(js, t) != MOTE_JSON_OBJECT ||
        mote_json_type_of(js, tc) != MOTE_JSON_STRING ||
        mote_json_cstr(js, tc, call_id, sizeof(call_id)) < 0 ||
        mote_json_type_of(js, ta) != MOTE_JSON_STRING ||
        mote_json_cstr(js, ta, answer, sizeof(answer)) < 0)
        return fail(q, r, "bad_field",
                    "\"approve\" needs \"call_id\" and \"answer\" (yes, no or always), strings "
                    "with no NUL",
                    NULL, NULL);
    reason[0] = '\0';
    if (!mote_json_is_null(js, tr) && (mote_json_type_of(js, tr) != MOTE_JSON_STRING ||
                                       mote_json_cstr(js, tr, reason, sizeof(reason)) < 0))
        return fail(q, r, "bad_field", "\"reason\" must be a string (short enough, with no NUL)",
                    NULL, NULL);
    if (tk >= 0 && (mote_json_int(js, tk, &ask) < 0 || ask < 1 || ask > (int64_t)UINT32_MAX))
        return fail(q, r, "bad_field", "\"ask_id\" must be a number from 1 to 4294967295", NULL,
                    NULL);
    if (strcmp(answer, "yes") == 0)
        a = MOTE_ANSWER_YES;
    else if (strcmp(answer, "no") == 0)
        a = MOTE_ANSWER_NO;
    else if (strcmp(answer, "always") == 0)
        a = MOTE_ANSWER_ALWAYS;
    else
        return fail(q, r, "bad_field", "\"answer\" is yes, no or always", NULL, NULL);
    rc = mote_serve_approve(sv, r->conv, call_id, (uint32_t)ask, a,
                            reason[0] != '\0' ? reason : NULL, &cv);
    if (rc == MOTE_ERR_SHUTDOWN)
        return MQ_LATER; /* the call stays pending: asked again on the next start */
    if (rc == MOTE_ERR_NOENT)
        return known(sv, r->conv)
                   ? fail(q, r, "no_question",
                          "no tool call of this conversation waits for an answer", NULL, NULL)
                   : fail(q, r, "unknown_conversation", "no such conversation", NULL, NULL);
    if (rc < 0)
        return fail(q, r, "stale", "that call is not the one waiting for an answer", NULL, NULL);
    return ctl_ok(q, r, h);
}

/* "elicit": {"action", "content", "ask_id"} in token `t`: the answer to
 * an MCP server's question (serve_elicit.c). */
static enum mq_res take_elicit(struct mq *q, const struct mq_req *r, int t, uint64_t h)
{
    const char *code, *action;
    char m[260];

    if (mote_json_type_of(&q->sv->json, t) != MOTE_JSON_OBJECT)
        return fail(q, r, "bad_field", "\"elicit\" must be an object", NULL, NULL);
    code = mote_serve_elicit_take(q->sv, &q->sv->json, t, r->conv, "mqtt", m, sizeof(m), &action);
    if (code == NULL)
        return ctl_ok(q, r, h);
    if (code[0] == 'n' && !known(q->sv, r->conv))
        return fail(q, r, "unknown_conversation", "no such conversation", NULL, NULL);
    return fail(q, r, code, m, NULL, NULL);
}

static enum mq_res take_cancel(struct mq *q, const struct mq_req *r, uint64_t h)
{
    struct mote_conv *cv;

    if (mote_serve_cancel(q->sv, r->conv, &cv) == 0)
        return ctl_ok(q, r, h);
    return known(q->sv, r->conv)
               ? fail(q, r, "idle", "no turn is running in this conversation", NULL, NULL)
               : fail(q, r, "unknown_conversation", "no such conversation", NULL, NULL);
}

/* An approval, an answer to an MCP server's question or a cancel: run at
 * once (a busy conversation is what they are for), once per id. */
static enum mq_res take_ctl(struct mq *q, const struct mq_req *r, int approve_tok)
{
    uint64_t h = ctl_hash(r);

    if (ctl_seen(q, h)) {
        mote_serve_mqtt_say(q, "request ", r->rid, " was done already: not again");
        return done(q, r->ack);
    }
    if ((r->kind == MQ_APPROVE || r->kind == MQ_ELICIT) && q->sv->conf.mqtt_approve_off)
        return fail(q, r, "approve_off",
                    "approvals over MQTT are off (--mqtt-approve off): answer on the device's "
                    "API",
                    NULL, NULL);
    if (r->kind == MQ_ELICIT)
        return take_elicit(q, r, approve_tok, h);
    return r->kind == MQ_APPROVE ? take_approve(q, r, approve_tok, h) : take_cancel(q, r, h);
}

/* A string member `key` of the request into out (cap bytes), a C string:
 * 1, 0 when it is missing, -1 when it is there but no string, too long,
 * or holding a NUL (which would cut it). */
static int str_member(struct serve *sv, const char *key, char *out, size_t cap)
{
    int t = mote_json_member(&sv->json, 0, key);

    out[0] = '\0';
    if (t < 0)
        return 0;
    if (mote_json_type_of(&sv->json, t) != MOTE_JSON_STRING ||
        mote_json_cstr(&sv->json, t, out, cap) < 0) {
        out[0] = '\0';
        return -1;
    }
    return 1;
}

/* Puts a text request in the waiting table (its text copied). False if
 * it does not fit. */
static bool wait_add(struct mq *q, const struct mq_req *r)
{
    struct mq_wait *w;

    if (q->nwait == MOTE_SERVE_MQTT_WAIT || r->len > sizeof(q->pool) - q->pool_used)
        return false;
    w = &q->wait[q->nwait++];
    w->ack = r->ack;
    w->off = q->pool_used;
    w->len = (uint32_t)r->len;
    memcpy(q->pool + w->off, r->text, r->len);
    q->pool_used += (uint32_t)r->len;
    memcpy(w->rid, r->rid, sizeof(w->rid));
    memcpy(w->conv, r->conv, sizeof(w->conv));
    return true;
}

static void wait_remove(struct mq *q, unsigned i)
{
    struct mq_wait *w = &q->wait[i];
    uint32_t off = w->off, len = w->len;
    unsigned k;

    memmove(q->pool + off, q->pool + off + len, q->pool_used - off - len);
    q->pool_used -= len;
    memmove(&q->wait[i], &q->wait[i + 1], (q->nwait - i - 1) * sizeof(q->wait[0]));
    q->nwait--;
    for (k = i; k < q->nwait; k++)
        q->wait[k].off -= len;
}

/* Tries the waiting requests, in order (a conversation's own in the
 * order they came). */
void mote_serve_mqtt_wait_run(struct mq *q)
{
    unsigned i = 0;

    while (i < q->nwait) {
        struct mq_wait *w = &q->wait[i];
        struct mq_req r;
        enum mq_res res;

        if (waits_for(q, w->conv, i)) {
            i++;
            continue;
        }
        memset(&r, 0, sizeof(r));
        r.kind = MQ_TEXT;
        r.ack = w->ack;
        memcpy(r.rid, w->rid, sizeof(r.rid));
        memcpy(r.conv, w->conv, sizeof(r.conv));
        r.text = q->pool + w->off;
        r.len = w->len;
        res = take_text(q, &r);
        if (res == MQ_DONE)
            wait_remove(q, i);
        else if (res == MQ_LATER)
            return; /* the shutdown: they stay with the broker */
        else
            i++;
    }
}

/* A message on PREFIX/in. Returns MOTE_ERR_AGAIN for "not now". */
int mote_serve_mqtt_message(struct mq *q, const struct mote_mqtt_event *ev)
{
    struct serve *sv = q->sv;
    const struct mote_json *js = &sv->json;
    struct mq_req r;
    enum mq_res res;
    int rc, n, tt, ta, tc, tl, tr, te, kinds;

    memset(&r, 0, sizeof(r));
    r.ack = ev->ack;
    if (strcmp(ev->topic, q->t_in) != 0) {
        (void)done(q, ev->ack); /* not a topic of ours */
        return 0;
    }
    if (q->phase != MQ_RUN || sv->pub->phase != MOTE_SERVE_RUN)
        goto later; /* shutting down: the broker keeps it for the next start */
    if (ev->oversize) {
        char m[80];
        struct mote_sb sb;

        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_num(&sb, "the message has ", ev->len, " bytes; at most ");
        mote_sb_num(&sb, "", MOTE_MQTT_PAYLOAD_MAX, " are taken (MOTE_MQTT_PAYLOAD_MAX)");
        res = fail(q, &r, "too_large", m, NULL, NULL);
        goto out;
    }
    /* as strict as an HTTP body: one object, no key twice in any object
     * of it (compared unescaped) */
    rc = mote_json_parse_object(&sv->json, (const char *)ev->payload, ev->len, NULL, 0);
    if (rc <= 0) {
        res = fail(q, &r, rc == MOTE_ERR_TOO_LARGE ? "too_large" : "bad_json",
                   rc == MOTE_ERR_TOO_LARGE ? "the JSON has too many values"
                                            : "the message must be one JSON object (each key "
                                              "once in every object)",
                   NULL, NULL);
        goto out;
    }
    n = str_member(sv, "id", r.rid, sizeof(r.rid));
    if (n <= 0 || r.rid[0] == '\0') {
        char m[24];
        struct mote_sb sb;

        r.rid[0] = '\0';
        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_u(&sb, MOTE_JOURNAL_RID_MAX);
        res = fail(q, &r, "bad_field", "\"id\" (the request's id) must be a string of 1 to ", m,
                   " bytes with no NUL (MOTE_JOURNAL_RID_MAX)");
        goto out;
    }
    if (mote_json_member(js, 0, "schedule") >= 0 ||
        mote_json_member(js, 0, "schedule_delete") >= 0) {
        /* a schedule put or removed (docs/SERVE.md, "Schedules") */
        const char *code = "bad_field";
        char m[200];

        if (ev->retain)
            res = fail(q, &r, "retained", "a retained message on the request topic is not taken",
                       NULL, NULL);
        else if (mote_serve_sched_request(sv, js, 0, &code, m, sizeof(m)) < 0)
            res = fail(q, &r, code, m, NULL, NULL);
        else
            res = done(q, r.ack);
        goto out;
    }
    tl = mote_json_member(js, 0, "list");
    n = str_member(sv, "conversation", r.conv, sizeof(r.conv));
    if (n <= 0 || !mote_serve_id_ok(r.conv, strlen(r.conv))) {
        r.conv[0] = '\0';
        if (tl < 0 || n != 0) { /* (a list needs none) */
            res = fail(q, &r, "bad_field",
                       "\"conversation\" must be 1 to 39 of A-Z, a-z, 0-9, '_' and '-'", NULL,
                       NULL);
            goto out;
        }
    }
    if (ev->retain) {
        /* a retained request comes again with each new subscription (a
         * reconnect, a restart): requests are sent once */
        res = fail(q, &r, "retained",
                   "a retained message on the request topic is not taken: publish requests "
                   "without the retain flag (and clear this one: an empty retained message)",
                   NULL, NULL);
        goto out;
    }
    tt = mote_json_member(js, 0, "text");
    ta = mote_json_member(js, 0, "approve");
    tc = mote_json_member(js, 0, "cancel");
    tr = mote_json_member(js, 0, "read");
    te = mote_json_member(js, 0, "elicit");
    kinds = (tt >= 0) + (ta >= 0) + (tc >= 0) + (tl >= 0) + (tr >= 0) + (te >= 0);
    if (kinds != 1) {
        res = fail(q, &r, "bad_field",
                   "a request has one of \"text\", \"approve\": {...}, \"elicit\": {...}, "
                   "\"cancel\": true, \"list\": {...} and \"read\": {...}",
                   NULL, NULL);
        goto out;
    }
    if (te >= 0) {
        r.kind = MQ_ELICIT;
        res = take_ctl(q, &r, te);
        goto out;
    }
    if (tl >= 0 || tr >= 0) {
        r.kind = tl >= 0 ? MQ_LIST : MQ_READ;
        res = mote_serve_mqtt_reply_take(q, &r, tl >= 0 ? tl : tr);
        goto out;
    }
    if (tc >= 0) {
        bool yes = false;

        if (mote_json_bool(js, tc, &yes) < 0 || !yes) {
            res = fail(q, &r, "bad_field", "\"cancel\" must be true", NULL, NULL);
            goto out;
        }
        r.kind = MQ_CANCEL;
        res = take_ctl(q, &r, -1);
        goto out;
    }
    if (ta >= 0) {
        r.kind = MQ_APPROVE;
        res = take_ctl(q, &r, ta);
        goto out;
    }
    r.kind = MQ_TEXT;
    if (mote_json_type_of(js, tt) != MOTE_JSON_STRING) {
        res = fail(q, &r, "bad_field", "\"text\" must be a string", NULL, NULL);
        goto out;
    }
    n = mote_json_str(js, tt, sv->scratch, sizeof(sv->scratch));
    if (n < 0) {
        res = fail(q, &r, "too_large", "the message is too long", NULL, NULL);
        goto out;
    }
    r.text = sv->scratch;
    r.len = (size_t)n;
    /* after the requests of its conversation that wait already */
    res = waits_for(q, r.conv, q->nwait) ? MQ_WAIT : take_text(q, &r);
    if (res == MQ_WAIT && !wait_add(q, &r))
        goto later; /* the table is full: the broker keeps it */
out:
    if (res != MQ_LATER) {
        sv->met.mqtt_requests++;
        return 0;
    }
later:
    q->paused = true;
    return MOTE_ERR_AGAIN;
}
