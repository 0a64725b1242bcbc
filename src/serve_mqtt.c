/*
 * serve_mqtt.c - mote serve's MQTT front door (docs/MQTT.md): the same
 * session's conversations on a broker through the library's client
 * (mote_mqtt.h). This file is its life: the settings checked, the
 * client's job started, its events (connected, messages, room, offline)
 * handed on, the loop's turn for what waits, the one shutdown (the last
 * events, the "offline" status, DISCONNECT). Requests are
 * serve_mqtt_in.c's, what goes out serve_mqtt_out.c's.
 *
 * Topics: PREFIX/status (retained: online, the will offline), PREFIX/in
 * (requests, QoS 1), PREFIX/out/ID (a conversation's events, QoS 1),
 * PREFIX/error (what was wrong with a request), PREFIX/approvals
 * (retained: the questions waiting for an answer).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_mqtt.h"
#include "util.h"

#define WILL "{\"state\":\"offline\",\"reason\":\"connection lost\"}"

static int on_mqtt(void *arg, const struct mote_mqtt_event *ev);
static void on_kick(struct mote_loop *loop, mote_timer_id t, void *arg);

/* ---- setting up --------------------------------------------------------------- */

static int refuse(struct serve *sv, const char *a, const char *b)
{
    mote_str_join(sv->conf.mqtt->errmsg, sizeof(sv->conf.mqtt->errmsg), a, b, NULL);
    return MOTE_ERR_CONFIG;
}

/* prefix + suffix into out (MOTE_MQTT_TOPIC_MAX + 1 bytes); false if it
 * is too long. */
static bool topic_of(char *out, const char *prefix, const char *suffix)
{
    return mote_str_join(out, MOTE_MQTT_TOPIC_MAX + 1, prefix, suffix, NULL) ==
           strlen(prefix) + strlen(suffix);
}

int mote_serve_mqtt_init(struct serve *sv)
{
    const struct mote_serve_conf *c = &sv->conf;
    struct mq *q;
    int rc;

    if (c->mqtt_url == NULL)
        return 0;
    if (c->mqtt == NULL)
        return MOTE_ERR_CONFIG;
    c->mqtt->errmsg[0] = '\0';
    q = mote_serve_mqtt_of(sv);
    /* the small fields only: the buffers are written before they are read */
    memset(q, 0, offsetof(struct mq, prefix));
    q->reply.kind = 0;
    q->reply.st.sh = -1;
    q->sv = sv;
    q->client = &c->mqtt->client;
    q->kick_fn = on_kick;
    if (c->mqtt_id == NULL || c->mqtt_id[0] == '\0')
        return refuse(sv, "the MQTT client id is empty", NULL);
    if (c->mqtt_prefix != NULL) {
        if (!topic_of(q->prefix, c->mqtt_prefix, ""))
            return refuse(sv, "the MQTT topic prefix is too long", NULL);
    } else if (!topic_of(q->prefix, "mote/", c->mqtt_id)) {
        return refuse(sv, "the MQTT client id is too long for the topic prefix mote/ID", NULL);
    }
    /* PREFIX/out/ID and PREFIX/reply/ID must fit with the longest ids */
    if (strlen(q->prefix) + 5 + MOTE_CONV_ID_MAX - 1 > MOTE_MQTT_TOPIC_MAX ||
        strlen(q->prefix) + 7 + MOTE_JOURNAL_RID_MAX > MOTE_MQTT_TOPIC_MAX)
        return refuse(sv,
                      "the MQTT topic prefix is too long (PREFIX/out/ID must fit "
                      "MOTE_MQTT_TOPIC_MAX)",
                      NULL);
    if (!mote_mqtt_topic_valid(q->prefix) || q->prefix[strlen(q->prefix) - 1] == '/')
        return refuse(sv,
                      "the MQTT topic prefix must be a topic name: no '+', '#', NUL or "
                      "'/' at its end, and not empty",
                      NULL);
    (void)topic_of(q->t_status, q->prefix, "/status");
    (void)topic_of(q->t_in, q->prefix, "/in");
    (void)topic_of(q->t_error, q->prefix, "/error");
    (void)topic_of(q->t_approvals, q->prefix, "/approvals");
    mote_mqtt_conf_defaults(&q->mc);
    q->mc.url = c->mqtt_url;
    q->mc.client_id = c->mqtt_id;
    q->mc.username = c->mqtt_username;
    q->mc.password = c->mqtt_password;
    q->mc.ca_file = c->mqtt_ca_file;
    q->mc.cert_file = c->mqtt_cert_file;
    q->mc.key_file = c->mqtt_key_file;
    q->mc.clean_session = false; /* the broker keeps what comes while mote is away */
    if (c->mqtt_keep_alive_s != 0)
        q->mc.keep_alive_s = c->mqtt_keep_alive_s;
    if (c->mqtt_backoff_max_ms != 0) {
        q->mc.backoff_max_ms = c->mqtt_backoff_max_ms;
        if (q->mc.backoff_ms > q->mc.backoff_max_ms)
            q->mc.backoff_ms = q->mc.backoff_max_ms;
    }
    q->mc.will_topic = q->t_status;
    q->mc.will_payload = WILL;
    q->mc.will_len = sizeof(WILL) - 1;
    q->mc.will_qos = 1;
    q->mc.will_retain = true;
    q->mc.subs[0].filter = q->t_in;
    q->mc.subs[0].qos = 1;
    q->mc.nsubs = 1;
    rc = mote_mqtt_init(q->client, &q->mc, on_mqtt, q);
    if (rc < 0)
        return refuse(sv, "MQTT: ", q->client->errmsg);
    q->phase = MQ_READY;
    return 0;
}

/* ---- the client's events, the loop's turn ----------------------------------------- */

/* Waiting requests, the conversations behind, a paused client: on the
 * loop's next turn (never inside the session's own events). */
static void on_kick(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mq *q = arg;

    (void)loop, (void)t;
    q->kick = 0;
    if (q->status_due && q->phase == MQ_RUN && mote_serve_mqtt_status(q, "online", NULL) == 0)
        q->status_due = false;
    if (q->appr_due && q->phase >= MQ_RUN && q->phase < MQ_STOP)
        (void)mote_serve_mqtt_approvals(q, false, false);
    if (q->ha_due && q->phase == MQ_RUN)
        q->ha_due = mote_serve_mqtt_ha(q) == MOTE_ERR_FULL;
    if (q->phase < MQ_STOP)
        (void)mote_serve_mqtt_pump(q); /* (first: a slot it frees may start a waiting request) */
    if (q->phase == MQ_RUN) {
        mote_serve_mqtt_wait_run(q);
        (void)mote_serve_mqtt_reply_turn(q);
    }
    if (q->paused && q->phase == MQ_RUN && q->reply.kind == 0) {
        q->paused = false;
        (void)mote_mqtt_resume(q->client);
    }
}

static int on_mqtt(void *arg, const struct mote_mqtt_event *ev)
{
    struct mq *q = arg;
    char n[24];
    struct mote_sb sb;

    switch (ev->type) {
    case MOTE_MQTT_EV_CONNECTED:
        q->connects++;
        mote_serve_mqtt_say(q, "connected to ", q->mc.url,
                            ev->session_present ? " (the broker kept the session)"
                                                : " (a new session)");
        q->status_due = mote_serve_mqtt_status(q, "online", NULL) == MOTE_ERR_FULL;
        (void)mote_serve_mqtt_approvals(q, true, false); /* (no room: appr_due, the kick) */
        if (q->ha_step == 2)
            q->ha_step = 1; /* announced again (a broker may have lost them) */
        q->ha_k = 0;
        q->ha_due = mote_serve_mqtt_ha(q) == MOTE_ERR_FULL;
        if (!ev->session_present)
            q->sv->met.stats_left_ms = 1000; /* (the stats soon, retained again) */
        mote_serve_mqtt_kick(q);
        return 0;
    case MOTE_MQTT_EV_SUBSCRIBED:
        if (ev->granted == MOTE_MQTT_SUB_FAILURE)
            mote_serve_mqtt_say(q, "the broker refused the subscription to ", ev->filter,
                                ": no request reaches mote (check the broker's access rules)");
        return 0;
    case MOTE_MQTT_EV_MESSAGE: return mote_serve_mqtt_message(q, ev);
    case MOTE_MQTT_EV_ROOM: mote_serve_mqtt_kick(q); return 0;
    case MOTE_MQTT_EV_OFFLINE:
        mote_sb_init(&sb, n, sizeof(n));
        if (ev->retry_ms > 0) {
            mote_sb_num(&sb, "; again in ", ev->retry_ms, " ms");
            mote_serve_mqtt_say(q, ev->text, n, NULL);
        } else {
            mote_serve_mqtt_say(q, ev->text, NULL, NULL);
        }
        return 0;
    case MOTE_MQTT_EV_NOTE: mote_serve_mqtt_say(q, ev->text, NULL, NULL); return 0;
    default: return 0;
    }
}

int mote_serve_mqtt_start(struct serve *sv)
{
    struct mq *q = mote_serve_mqtt_of(sv);
    int rc;

    if (q == NULL || q->phase != MQ_READY)
        return 0;
    rc = mote_mqtt_start(q->client, sv->loop, NULL, &q->job);
    if (rc < 0)
        return rc;
    q->phase = MQ_RUN;
    mote_serve_mqtt_say(q, "connecting to ", q->mc.url, NULL);
    return 0;
}

/* The session is down: the last events, the offline status, DISCONNECT
 * (or, if the status finds no room, the connection closed: the will). */
static void final(struct mq *q, const char *reason)
{
    if (q->phase >= MQ_STOP || q->phase < MQ_RUN)
        return;
    if (!mote_serve_mqtt_pump(q))
        mote_serve_mqtt_say(q, "the broker's queue is full: some events are not published", NULL,
                            NULL);
    q->phase = MQ_STOP;
    (void)mote_serve_mqtt_approvals(q, false, true);
    if (mote_serve_mqtt_status(q, "offline", reason) < 0) {
        mote_serve_mqtt_say(
            q, "no room for the offline status: closing (the broker publishes the will)", NULL,
            NULL);
        (void)mote_job_cancel(q->sv->loop, q->job);
        return;
    }
    (void)mote_mqtt_disconnect(q->client, MOTE_SERVE_MQTT_STOP_MS);
}

void mote_serve_mqtt_event(struct serve *sv, const struct mote_event *ev)
{
    struct mq *q = mote_serve_mqtt_of(sv);

    if (q == NULL || q->phase < MQ_RUN)
        return;
    switch (ev->type) {
    case MOTE_EV_RECORD:
        if (ev->conv != NULL && q->phase < MQ_STOP)
            mote_serve_mqtt_record(q, mote_conv_id(ev->conv), ev->offset, ev->text, ev->len);
        if (ev->conv != NULL && q->phase < MQ_STOP && sv->conf.mqtt_discovery != NULL &&
            strcmp(sv->conf.mqtt_discovery, "off") != 0)
            mote_serve_mqtt_last(q, mote_conv_id(ev->conv), ev->offset, ev->text, ev->len);
        return;
    case MOTE_EV_BUDGET:
        if (ev->conv != NULL && q->phase == MQ_RUN)
            (void)mote_serve_mqtt_error(q, NULL, mote_conv_id(ev->conv), "budget", ev->text, NULL,
                                        NULL);
        return;
    case MOTE_EV_APPROVAL:
    case MOTE_EV_APPROVAL_EXPIRED:
        q->appr_due = true;
        mote_serve_mqtt_kick(q);
        return;
    case MOTE_EV_STATE:
    case MOTE_EV_TURN_END:
    case MOTE_EV_ERROR:
        q->appr_due = true; /* (a question answered or cancelled: the summary is checked) */
        if (q->nwait > 0 || q->paused || q->appr_due)
            mote_serve_mqtt_kick(q); /* a conversation may be free for a waiting request */
        return;
    case MOTE_EV_SHUTDOWN:
        final(q, ev->text != NULL && ev->text[0] != '\0' ? ev->text : "stopped");
        return;
    default: return;
    }
}

bool mote_serve_mqtt_info(const struct serve *sv, bool *online, uint32_t *connects)
{
    const struct mq *q = mote_serve_mqtt_of(sv);

    *online = false;
    *connects = 0;
    if (q == NULL || q->phase == MQ_OFF)
        return false;
    *online = q->client->sess.state == MOTE_MQTT_S_ONLINE;
    *connects = q->connects;
    return true;
}

void mote_serve_mqtt_reconf(struct serve *sv)
{
    struct mq *q = mote_serve_mqtt_of(sv);

    if (q == NULL || q->phase != MQ_RUN || q->client->sess.state != MOTE_MQTT_S_ONLINE)
        return;
    q->status_due = true; /* (the kick publishes it, with room) */
    mote_serve_mqtt_kick(q);
}

bool mote_serve_mqtt_disk(struct serve *sv)
{
    struct mq *q = mote_serve_mqtt_of(sv);

    return q != NULL && q->phase == MQ_RUN && q->reply.kind != 0 && !q->reply.built &&
           mote_serve_mqtt_reply_turn(q);
}

void mote_serve_mqtt_loaded(struct serve *sv)
{
    struct mq *q = mote_serve_mqtt_of(sv);

    if (q != NULL && q->phase == MQ_RUN && q->nwait > 0)
        mote_serve_mqtt_kick(q);
}

void mote_serve_mqtt_shutdown(struct serve *sv, const struct mote_shutdown_req *req)
{
    struct mq *q = mote_serve_mqtt_of(sv);

    if (q == NULL || q->phase < MQ_RUN)
        return;
    if (q->phase == MQ_RUN) {
        q->phase = MQ_DRAIN; /* no request is taken: the broker keeps them */
        if (q->nwait > 0)
            mote_serve_mqtt_say(
                q,
                "requests waiting for a conversation stay with the broker for the next "
                "start",
                NULL, NULL);
    }
    if (req != NULL && req->force && !mote_serve_mqtt_stopped(sv)) {
        q->phase = MQ_STOP;
        (void)mote_job_cancel(sv->loop, q->job); /* now: the broker publishes the will */
    }
}

bool mote_serve_mqtt_stopped(const struct serve *sv)
{
    const struct mq *q = mote_serve_mqtt_of(sv);

    return q == NULL || q->phase < MQ_RUN || q->client->phase == MOTE_MQTT_PH_DONE;
}

void mote_serve_mqtt_deinit(struct serve *sv)
{
    struct mq *q = mote_serve_mqtt_of(sv);
    unsigned i;

    if (q == NULL || q->phase == MQ_OFF)
        return;
    if (q->kick != 0)
        (void)mote_timer_stop(sv->loop, q->kick);
    q->kick = 0;
    for (i = 0; i < MOTE_SERVE_MQTT_OUTS; i++) {
        if (q->outs[i].used)
            mote_serve_mqtt_out_free(q, &q->outs[i]);
    }
    mote_serve_mqtt_reply_stop(q);
    if (!mote_serve_mqtt_stopped(sv))
        (void)mote_job_cancel(sv->loop, q->job);
    q->phase = MQ_OFF;
}
