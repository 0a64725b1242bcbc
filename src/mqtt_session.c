/*
 * mqtt_session.c - the MQTT 3.1.1 client session without I/O: what to
 * send and when, what the broker's packets mean; the outgoing queue with
 * its in-flight table, the incoming messages awaiting the application's
 * acknowledgement, keep-alive and subscriptions.
 */
#include <string.h>

#include "mote/mote_mqtt.h"
#include "util.h"

void mote_mqtt_conf_defaults(struct mote_mqtt_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->keep_alive_s = MOTE_MQTT_KEEPALIVE_S;
    c->ping_timeout_ms = MOTE_MQTT_PING_TIMEOUT_MS;
    c->connect_timeout_ms = MOTE_MQTT_CONNECT_TIMEOUT_MS;
    c->backoff_ms = MOTE_MQTT_BACKOFF_MS;
    c->backoff_max_ms = MOTE_MQTT_BACKOFF_MAX_MS;
}

static void set_msg(struct mote_mqtt_sess *s, const char *a, const char *b, const char *c)
{
    struct mote_sb sb;

    mote_sb_init(&sb, s->errmsg, sizeof(s->errmsg));
    mote_sb_s(&sb, a);
    if (b != NULL)
        mote_sb_s(&sb, b);
    if (c != NULL)
        mote_sb_s(&sb, c);
}

static int emit(struct mote_mqtt_sess *s, struct mote_mqtt_event *ev)
{
    return s->on_event != NULL ? s->on_event(s->arg, ev) : 0;
}

static void note(struct mote_mqtt_sess *s, const char *text)
{
    struct mote_mqtt_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_NOTE;
    ev.text = text;
    (void)emit(s, &ev);
}

static void connect_fields(const struct mote_mqtt_conf *conf, struct mote_mqtt_connect *c)
{
    memset(c, 0, sizeof(*c));
    c->client_id = conf->client_id;
    c->clean_session = conf->clean_session;
    c->keep_alive_s = conf->keep_alive_s;
    c->will_topic = conf->will_topic;
    c->will_payload = conf->will_payload;
    c->will_len = conf->will_len;
    c->will_qos = conf->will_qos;
    c->will_retain = conf->will_retain;
    c->username = conf->username;
    c->password = conf->password;
    c->password_len = conf->password != NULL ? strlen(conf->password) : 0;
}

int mote_mqtt_sess_init(struct mote_mqtt_sess *s, const struct mote_mqtt_conf *conf,
                        mote_mqtt_event_fn fn, void *arg)
{
    struct mote_mqtt_connect cn;
    unsigned i;
    int rc;

    /* The buffers at the end are written before they are read: left
     * untouched here, their pages cost nothing until used. */
    memset(s, 0, offsetof(struct mote_mqtt_sess, parser));
    mote_mqtt_parser_init(&s->parser);
    s->conf = conf;
    s->on_event = fn;
    s->arg = arg;
    s->next_id = 1;
    connect_fields(conf, &cn);
    rc = mote_mqtt_enc_connect(s->ctl, sizeof(s->ctl), &cn);
    if (rc == MOTE_ERR_TOO_LARGE) {
        set_msg(s, "the client id, will and credentials do not fit one CONNECT packet "
                   "(MOTE_MQTT_CTL_MAX bytes)", NULL, NULL);
        return rc;
    }
    if (rc < 0) {
        set_msg(s,
                conf->client_id == NULL || conf->client_id[0] == '\0'
                    ? "the client id is empty (a persistent session needs one)"
                : conf->password != NULL && conf->username == NULL
                    ? "a password needs a user name (MQTT 3.1.1)"
                : conf->will_topic != NULL && !mote_mqtt_topic_valid(conf->will_topic)
                    ? "the will topic is not a valid topic name (empty, a wildcard, a NUL or "
                      "not UTF-8)"
                    : "the client id, will or user name is not valid UTF-8 without NUL "
                      "(or the will QoS is over 2)",
                NULL, NULL);
        return rc;
    }
    if (conf->nsubs > MOTE_MQTT_SUBS_MAX) {
        set_msg(s, "more subscriptions than MOTE_MQTT_SUBS_MAX", NULL, NULL);
        return MOTE_ERR_TOO_LARGE;
    }
    for (i = 0; i < conf->nsubs; i++) {
        rc = mote_mqtt_enc_subscribe(s->ctl, sizeof(s->ctl), 1, conf->subs[i].filter,
                                     conf->subs[i].qos);
        if (rc < 0) {
            set_msg(s, "the topic filter '", conf->subs[i].filter != NULL ? conf->subs[i].filter : "",
                    rc == MOTE_ERR_TOO_LARGE ? "' does not fit MOTE_MQTT_CTL_MAX"
                                             : "' is not a valid filter (or its QoS is over 2)");
            return rc;
        }
    }
    if (conf->ping_timeout_ms == 0) {
        set_msg(s, "the ping timeout is 0", NULL, NULL);
        return MOTE_ERR_INVAL;
    }
    return 0;
}

/* ---- the outgoing queue ---------------------------------------------------- */

/* Drops dead entries (QoS 0 sent, QoS 1 acknowledged) and closes the gaps
 * in outbuf; not while a chunk of the queue is being written (its bytes
 * must stay where they are). */
static void gc(struct mote_mqtt_sess *s)
{
    unsigned i, j = 0;
    uint32_t pos = 0;

    if (s->w_src == MOTE_MQTT_W_OUT)
        return;
    for (i = 0; i < s->nout; i++) {
        struct mote_mqtt_out e = s->out[i];

        if (e.len == 0)
            continue; /* dead */
        if (e.off != pos)
            memmove(s->outbuf + pos, s->outbuf + e.off, e.len);
        e.off = pos;
        s->out[j++] = e;
        pos += e.len;
    }
    s->nout = j;
    s->out_end = pos;
}

static void room(struct mote_mqtt_sess *s)
{
    struct mote_mqtt_event ev;

    if (!s->want_room || s->w_src == MOTE_MQTT_W_OUT || s->nout == MOTE_MQTT_INFLIGHT ||
        MOTE_MQTT_OUT_MAX - s->out_end < s->room_need)
        return;
    s->want_room = false;
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_ROOM;
    (void)emit(s, &ev);
}

static bool id_in_use(const struct mote_mqtt_sess *s, uint16_t id)
{
    unsigned i;

    for (i = 0; i < s->nout; i++) {
        if (s->out[i].id == id && s->out[i].len != 0)
            return true;
    }
    for (i = 0; i < s->conf->nsubs; i++) {
        if (s->sub_id[i] == id)
            return true;
    }
    return false;
}

/* A packet id no packet in flight uses (there are at most
 * MOTE_MQTT_INFLIGHT + MOTE_MQTT_SUBS_MAX of those, far below 65535). */
static uint16_t new_id(struct mote_mqtt_sess *s)
{
    unsigned tries;

    for (tries = 0; tries < 65536u; tries++) {
        uint16_t id = s->next_id++;

        if (s->next_id == 0)
            s->next_id = 1;
        if (id != 0 && !id_in_use(s, id))
            return id;
    }
    MOTE_ASSERT(0);
    return 1;
}

int mote_mqtt_sess_publish(struct mote_mqtt_sess *s, const char *topic, const void *payload,
                           size_t len, unsigned qos, bool retain)
{
    size_t tn, rem, need;
    uint16_t id = 0;
    int rc;

    if (s->closing || s->state == MOTE_MQTT_S_DONE)
        return MOTE_ERR_SHUTDOWN;
    if (qos == 2)
        return MOTE_ERR_NOTSUP;
    if (qos > 2 || topic == NULL)
        return MOTE_ERR_INVAL;
    tn = strlen(topic);
    if (tn > MOTE_MQTT_TOPIC_MAX || len > MOTE_MQTT_PAYLOAD_MAX)
        return MOTE_ERR_TOO_LARGE;
    if (!mote_mqtt_topic_valid(topic) || (len > 0 && payload == NULL))
        return MOTE_ERR_INVAL;
    rem = 2 + tn + (qos > 0 ? 2 : 0) + len;
    need = 1 + (rem < 128 ? 1 : rem < 16384 ? 2 : rem < 2097152 ? 3 : 4) + rem;
    if (s->nout == MOTE_MQTT_INFLIGHT || MOTE_MQTT_OUT_MAX - s->out_end < need)
        gc(s);
    if (s->nout == MOTE_MQTT_INFLIGHT || MOTE_MQTT_OUT_MAX - s->out_end < need) {
        if (!s->want_room || need < s->room_need)
            s->room_need = (uint32_t)need; /* told when the smallest refused one fits */
        s->want_room = true;
        return MOTE_ERR_FULL;
    }
    if (qos > 0)
        id = new_id(s);
    rc = mote_mqtt_enc_publish(s->outbuf + s->out_end, MOTE_MQTT_OUT_MAX - s->out_end, topic,
                               payload, len, qos, retain, false, id);
    if (rc < 0)
        return rc;
    MOTE_ASSERT((size_t)rc == need);
    s->out[s->nout].off = s->out_end;
    s->out[s->nout].len = (uint32_t)rc;
    s->out[s->nout].id = id;
    s->out[s->nout].qos = (uint8_t)qos;
    s->out[s->nout].sent = false;
    s->out[s->nout].touched = false;
    s->nout++;
    s->out_end += (uint32_t)rc;
    return id;
}

void mote_mqtt_sess_counts(const struct mote_mqtt_sess *s, unsigned *queued, unsigned *unacked)
{
    unsigned i, q = 0, u = 0;

    for (i = 0; i < s->nout; i++) {
        if (s->out[i].len == 0)
            continue;
        q++;
        if (s->out[i].qos > 0 && s->out[i].sent)
            u++;
    }
    if (queued != NULL)
        *queued = q;
    if (unacked != NULL)
        *unacked = u;
}

/* ---- incoming messages ------------------------------------------------------ */

static struct mote_mqtt_rx *rx_find(struct mote_mqtt_sess *s, uint16_t id)
{
    unsigned i;

    for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++) {
        if (s->rx[i].state != MOTE_MQTT_RX_FREE && s->rx[i].id == id)
            return &s->rx[i];
    }
    return NULL;
}

static struct mote_mqtt_rx *rx_new(struct mote_mqtt_sess *s, uint16_t id, unsigned qos,
                                   enum mote_mqtt_rxstate st)
{
    unsigned i;

    for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++) {
        struct mote_mqtt_rx *r = &s->rx[i];

        if (r->state != MOTE_MQTT_RX_FREE)
            continue;
        if (++s->rx_gen == 0)
            s->rx_gen = 1;
        r->state = (uint8_t)st;
        r->qos = (uint8_t)qos;
        r->id = id;
        r->gen = s->rx_gen;
        r->seq = ++s->rx_seq;
        r->inctl = false;
        return r;
    }
    return NULL;
}

static uint32_t rx_handle(const struct mote_mqtt_sess *s, const struct mote_mqtt_rx *r)
{
    return ((uint32_t)r->gen << 16) | (uint32_t)(r - s->rx + 1);
}

int mote_mqtt_sess_ack(struct mote_mqtt_sess *s, uint32_t ack)
{
    uint32_t i = (ack & 0xFFFFu);
    struct mote_mqtt_rx *r;

    if (i == 0 || i > MOTE_MQTT_RX_INFLIGHT)
        return MOTE_ERR_STALE;
    r = &s->rx[i - 1];
    if (r->state == MOTE_MQTT_RX_FREE || r->gen != (uint16_t)(ack >> 16))
        return MOTE_ERR_STALE;
    if (r->state != MOTE_MQTT_RX_HELD)
        return MOTE_ERR_ALREADY;
    r->state = MOTE_MQTT_RX_ACK;
    return 0;
}

/* Returns 0 (handled), MOTE_MQTT_HOLD_ROOM (no slot), MOTE_MQTT_HOLD_APP
 * (the application said "not now"), or < 0. */
static int on_publish(struct mote_mqtt_sess *s, const struct mote_mqtt_packet *p)
{
    struct mote_mqtt_event ev;
    struct mote_mqtt_rx *r = NULL;
    char text[MOTE_MQTT_TOPIC_MAX + 160];
    int rc;

    if (p->qos > 0) {
        r = rx_find(s, p->id);
        if (r != NULL && r->state == MOTE_MQTT_RX_REC) {
            /* QoS 2 sent again before its PUBREL (its PUBREC lost with a
             * connection): delivered already; the PUBREC goes out again */
            r->state = MOTE_MQTT_RX_ACK;
            return 0;
        }
        if (r != NULL && r->state != MOTE_MQTT_RX_COMP)
            return 0; /* sent again (after a reconnect): the application has it */
        if (r != NULL) {
            note(s, "the broker reused a packet id before its PUBCOMP (ignored)");
            return 0;
        }
        r = rx_new(s, p->id, p->qos, MOTE_MQTT_RX_HELD);
        if (r == NULL)
            return MOTE_MQTT_HOLD_ROOM; /* read nothing more until an ack went out */
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_MESSAGE;
    ev.topic = p->topic;
    ev.payload = p->payload;
    ev.len = p->len;
    ev.qos = p->qos;
    ev.retain = p->retain;
    ev.dup = p->dup;
    ev.oversize = p->oversize;
    ev.ack = r != NULL ? rx_handle(s, r) : 0;
    if (p->oversize) {
        struct mote_sb sb;

        mote_sb_init(&sb, text, sizeof(text));
        mote_sb_s(&sb, "a message of ");
        mote_sb_u(&sb, p->len);
        mote_sb_s(&sb, " bytes on a topic of ");
        mote_sb_u(&sb, p->topic_len);
        mote_sb_s(&sb, " bytes is over the limits (MOTE_MQTT_PAYLOAD_MAX ");
        mote_sb_u(&sb, MOTE_MQTT_PAYLOAD_MAX);
        mote_sb_s(&sb, ", MOTE_MQTT_TOPIC_MAX ");
        mote_sb_u(&sb, MOTE_MQTT_TOPIC_MAX);
        mote_sb_s(&sb, "): skipped");
        ev.text = text;
    }
    rc = emit(s, &ev);
    if (rc == MOTE_ERR_AGAIN) {
        if (r != NULL && r->state == MOTE_MQTT_RX_HELD)
            r->state = MOTE_MQTT_RX_FREE;
        return MOTE_MQTT_HOLD_APP;
    }
    return 0;
}

/* ---- the broker's packets ---------------------------------------------------- */

static int on_connack(struct mote_mqtt_sess *s, const struct mote_mqtt_packet *p)
{
    struct mote_mqtt_event ev;
    unsigned i;
    char code[24];
    struct mote_sb sb;

    if (s->state != MOTE_MQTT_S_CONNECTING) {
        set_msg(s, "the broker sent a second CONNACK", NULL, NULL);
        return MOTE_ERR_PROTO;
    }
    if (p->code != MOTE_MQTT_ACCEPTED) {
        mote_sb_init(&sb, code, sizeof(code));
        mote_sb_s(&sb, " (CONNACK ");
        mote_sb_u(&sb, p->code);
        mote_sb_s(&sb, ")");
        set_msg(s, "the broker refused the connection: ", mote_mqtt_connack_name(p->code), code);
        return p->code == MOTE_MQTT_REFUSED_CREDENTIALS || p->code == MOTE_MQTT_REFUSED_UNAUTHORIZED
                   ? MOTE_ERR_AUTH
                   : MOTE_ERR_CONNREFUSED;
    }
    s->state = MOTE_MQTT_S_ONLINE;
    s->session_present = p->session_present;
    if (!p->session_present) {
        /* The broker kept nothing: acknowledgements owed to the old
         * session mean nothing now (their handles go stale). */
        for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++)
            s->rx[i].state = MOTE_MQTT_RX_FREE;
    }
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_CONNECTED;
    ev.session_present = p->session_present;
    (void)emit(s, &ev);
    return 0;
}

static int on_puback(struct mote_mqtt_sess *s, const struct mote_mqtt_packet *p)
{
    struct mote_mqtt_event ev;
    unsigned i;

    for (i = 0; i < s->nout; i++) {
        struct mote_mqtt_out *e = &s->out[i];

        if (e->len != 0 && e->qos == 1 && e->id == p->id && e->touched)
            break;
    }
    if (i == s->nout) {
        note(s, "the broker acknowledged a packet id not in flight (ignored)");
        return 0;
    }
    s->out[i].len = 0; /* dead: gc drops it */
    s->out[i].id = 0;
    gc(s);
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_PUBLISHED;
    ev.id = p->id;
    (void)emit(s, &ev);
    room(s);
    return 0;
}

static int on_suback(struct mote_mqtt_sess *s, const struct mote_mqtt_packet *p)
{
    struct mote_mqtt_event ev;
    unsigned i;

    for (i = 0; i < s->conf->nsubs; i++) {
        if (s->sub_id[i] == p->id)
            break;
    }
    if (i == s->conf->nsubs) {
        note(s, "the broker sent a SUBACK for no SUBSCRIBE (ignored)");
        return 0;
    }
    if (p->ncodes != 1) {
        set_msg(s, "the broker sent a SUBACK with more return codes than filters", NULL, NULL);
        return MOTE_ERR_PROTO;
    }
    s->sub_id[i] = 0;
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_SUBSCRIBED;
    ev.filter = s->conf->subs[i].filter;
    ev.granted = p->codes[0];
    if (p->codes[0] == MOTE_MQTT_SUB_FAILURE)
        ev.text = "the broker refused the subscription";
    (void)emit(s, &ev);
    return 0;
}

/* Returns 0, MOTE_MQTT_HOLD_* (hold the packet) or < 0. */
static int handle(struct mote_mqtt_sess *s, const struct mote_mqtt_packet *p)
{
    if (s->state != MOTE_MQTT_S_ONLINE && p->type != MOTE_MQTT_CONNACK) {
        set_msg(s, "the broker sent ", mote_mqtt_type_name(p->type), " before CONNACK");
        return MOTE_ERR_PROTO;
    }
    switch (p->type) {
    case MOTE_MQTT_CONNACK:
        return on_connack(s, p);
    case MOTE_MQTT_PUBLISH:
        return on_publish(s, p);
    case MOTE_MQTT_PUBACK:
        return on_puback(s, p);
    case MOTE_MQTT_PUBREL: {
        /* The PUBREC went out (the id is kept until now, so that the
         * message sent again is not delivered again), or the PUBCOMP was
         * lost with a connection (or the id was forgotten with a lost
         * session): answer it. A PUBREL for a message not acknowledged
         * yet comes too early: ignored. */
        struct mote_mqtt_rx *r = rx_find(s, p->id);

        if (r != NULL && r->qos == 2 && !r->inctl &&
            (r->state == MOTE_MQTT_RX_REC || r->state == MOTE_MQTT_RX_ACK)) {
            r->state = MOTE_MQTT_RX_COMP;
            return 0;
        }
        if (r != NULL) {
            if (r->state != MOTE_MQTT_RX_COMP)
                note(s, "the broker sent PUBREL before PUBREC (ignored)");
            return 0;
        }
        return rx_new(s, p->id, 2, MOTE_MQTT_RX_COMP) != NULL ? 0 : MOTE_MQTT_HOLD_ROOM;
    }
    case MOTE_MQTT_SUBACK:
        return on_suback(s, p);
    case MOTE_MQTT_PINGRESP:
        s->ping_out = false;
        return 0;
    default:
        /* PUBREC, PUBCOMP, UNSUBACK: answers to what this client never
         * sends (QoS 2, UNSUBSCRIBE). */
        note(s, "the broker answered a packet this client never sends (ignored)");
        return 0;
    }
}

bool mote_mqtt_sess_paused(const struct mote_mqtt_sess *s)
{
    return s->held != 0;
}

int mote_mqtt_sess_resume(struct mote_mqtt_sess *s, uint32_t now)
{
    int rc;

    (void)now;
    if (s->held == 0)
        return 0;
    rc = handle(s, &s->pkt);
    if (rc < 0)
        return rc;
    s->held = (uint8_t)rc;
    return 0;
}

int mote_mqtt_sess_feed(struct mote_mqtt_sess *s, uint32_t now, const uint8_t *data, size_t n)
{
    size_t at = 0, used;
    int rc;

    if (s->state == MOTE_MQTT_S_OFFLINE || s->state == MOTE_MQTT_S_DONE)
        return (int)n; /* nothing is expected: dropped */
    if (s->held == MOTE_MQTT_HOLD_ROOM && (rc = mote_mqtt_sess_resume(s, now)) < 0)
        return rc;
    while (s->held == 0 && at < n) {
        rc = mote_mqtt_parse(&s->parser, data + at, n - at, &used, &s->pkt);
        at += used;
        s->last_rx = now;
        if (rc < 0) {
            set_msg(s, "a malformed packet from the broker: ", s->parser.why, NULL);
            s->err = rc;
            return rc;
        }
        if (rc == 0)
            break;
        rc = handle(s, &s->pkt);
        if (rc < 0) {
            s->err = rc;
            return rc;
        }
        s->held = (uint8_t)rc;
    }
    return (int)at;
}

/* ---- writing ------------------------------------------------------------- */

/* The oldest message still owed an acknowledgement, if it is acknowledged
 * and not yet in ctl (acknowledgements leave in arrival order: a message
 * the application holds keeps back those after it). */
static struct mote_mqtt_rx *next_ack(struct mote_mqtt_sess *s)
{
    struct mote_mqtt_rx *best = NULL;
    unsigned i;

    for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++) {
        struct mote_mqtt_rx *r = &s->rx[i];

        if ((r->state != MOTE_MQTT_RX_HELD && r->state != MOTE_MQTT_RX_ACK) || r->inctl)
            continue;
        if (best == NULL || mote_before(r->seq, best->seq))
            best = r;
    }
    return best != NULL && best->state == MOTE_MQTT_RX_ACK ? best : NULL;
}

static bool ctl_add(struct mote_mqtt_sess *s, int len)
{
    if (len <= 0)
        return false;
    s->ctl_len += (uint32_t)len;
    return true;
}

/* Fills ctl with control packets: PUBCOMPs, acknowledgements in order, a
 * PINGREQ, SUBSCRIBEs, and at the end of a clean stop DISCONNECT. */
static void fill_ctl(struct mote_mqtt_sess *s, uint32_t now)
{
    uint8_t *b = s->ctl;
    size_t cap = sizeof(s->ctl);
    struct mote_mqtt_rx *r;
    unsigned i;

    for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++) {
        r = &s->rx[i];
        if (r->state == MOTE_MQTT_RX_COMP && !r->inctl &&
            ctl_add(s, mote_mqtt_enc_ack(b + s->ctl_len, cap - s->ctl_len, MOTE_MQTT_PUBCOMP,
                                         r->id)))
            r->inctl = true;
    }
    while ((r = next_ack(s)) != NULL &&
           ctl_add(s, mote_mqtt_enc_ack(b + s->ctl_len, cap - s->ctl_len,
                                        r->qos == 2 ? MOTE_MQTT_PUBREC : MOTE_MQTT_PUBACK, r->id)))
        r->inctl = true;
    if (s->ping_due && ctl_add(s, mote_mqtt_enc_empty(b + s->ctl_len, cap - s->ctl_len,
                                                      MOTE_MQTT_PINGREQ))) {
        s->ping_due = false;
        s->ping_out = true;
        s->ping_sent = now;
    }
    for (i = 0; i < s->conf->nsubs && !s->closing; i++) {
        uint16_t id;
        int len;

        if (s->sub_sent & (1u << i))
            continue;
        id = new_id(s);
        len = mote_mqtt_enc_subscribe(b + s->ctl_len, cap - s->ctl_len, id, s->conf->subs[i].filter,
                                      s->conf->subs[i].qos);
        if (!ctl_add(s, len))
            break;
        s->sub_id[i] = id;
        s->sub_sent |= 1u << i;
    }
    if (s->closing && s->ctl_len == 0 && s->nout == 0 &&
        ctl_add(s, mote_mqtt_enc_empty(b, cap, MOTE_MQTT_DISCONNECT)))
        s->disc = true;
}

size_t mote_mqtt_sess_out(struct mote_mqtt_sess *s, uint32_t now, const uint8_t **p)
{
    unsigned i, j;
    uint32_t len;

    if (s->w_src != MOTE_MQTT_W_NONE) {
        *p = (s->w_src == MOTE_MQTT_W_CTL ? s->ctl : s->outbuf) + s->w_off + s->w_done;
        return s->w_len - s->w_done;
    }
    if (s->state == MOTE_MQTT_S_OFFLINE || s->state == MOTE_MQTT_S_DONE)
        return 0;
    if (s->ctl_len == 0 && s->state == MOTE_MQTT_S_ONLINE) {
        if (s->closing)
            gc(s); /* (DISCONNECT waits for an empty queue) */
        fill_ctl(s, now);
    }
    if (s->ctl_len > 0) {
        s->w_src = MOTE_MQTT_W_CTL;
        s->w_off = s->w_done = 0;
        s->w_len = s->ctl_len;
        *p = s->ctl;
        return s->w_len;
    }
    if (s->state != MOTE_MQTT_S_ONLINE)
        return 0;
    for (i = 0; i < s->nout && (s->out[i].sent || s->out[i].len == 0); i++)
        ;
    if (i == s->nout)
        return 0;
    /* A run of unsent packets that lie one after the other. */
    len = s->out[i].len;
    for (j = i + 1; j < s->nout && !s->out[j].sent && s->out[j].len != 0 &&
                    s->out[j].off == s->out[j - 1].off + s->out[j - 1].len;
         j++)
        len += s->out[j].len;
    s->w_src = MOTE_MQTT_W_OUT;
    s->w_off = s->out[i].off;
    s->w_len = len;
    s->w_done = 0;
    s->w_first = i;
    s->w_count = j - i;
    *p = s->outbuf + s->w_off;
    return len;
}

void mote_mqtt_sess_sent(struct mote_mqtt_sess *s, uint32_t now, size_t n)
{
    unsigned i;

    if (s->w_src == MOTE_MQTT_W_NONE || n == 0)
        return;
    MOTE_ASSERT(n <= s->w_len - s->w_done);
    s->w_done += (uint32_t)n;
    s->last_tx = now;
    if (s->w_src == MOTE_MQTT_W_OUT) {
        for (i = s->w_first; i < s->w_first + s->w_count; i++) {
            if (s->out[i].off < s->w_off + s->w_done)
                s->out[i].touched = true;
        }
    }
    if (s->w_done < s->w_len)
        return;
    if (s->w_src == MOTE_MQTT_W_CTL) {
        s->ctl_len = 0;
        for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++) {
            struct mote_mqtt_rx *r = &s->rx[i];

            if (!r->inctl)
                continue;
            r->inctl = false;
            if (r->state == MOTE_MQTT_RX_ACK && r->qos == 2)
                r->state = MOTE_MQTT_RX_REC; /* until the broker's PUBREL */
            else if (r->state == MOTE_MQTT_RX_ACK || r->state == MOTE_MQTT_RX_COMP)
                r->state = MOTE_MQTT_RX_FREE;
        }
        if (s->disc)
            s->state = MOTE_MQTT_S_DONE;
    } else {
        for (i = s->w_first; i < s->w_first + s->w_count; i++) {
            s->out[i].sent = true;
            if (s->out[i].qos == 0)
                s->out[i].len = 0; /* at most once: done */
        }
    }
    s->w_src = MOTE_MQTT_W_NONE;
    gc(s);
    room(s);
}

/* ---- the connection's life ------------------------------------------------------ */

void mote_mqtt_sess_start(struct mote_mqtt_sess *s, uint32_t now)
{
    struct mote_mqtt_connect cn;
    int rc;

    mote_mqtt_parser_init(&s->parser);
    s->state = MOTE_MQTT_S_CONNECTING;
    s->held = 0;
    s->ping_out = s->ping_due = s->disc = false;
    s->session_present = false;
    s->last_tx = s->last_rx = now;
    s->sub_sent = 0;
    memset(s->sub_id, 0, sizeof(s->sub_id));
    s->w_src = MOTE_MQTT_W_NONE;
    connect_fields(s->conf, &cn);
    rc = mote_mqtt_enc_connect(s->ctl, sizeof(s->ctl), &cn);
    MOTE_ASSERT(rc > 0); /* checked by mote_mqtt_sess_init */
    s->ctl_len = rc > 0 ? (uint32_t)rc : 0;
}

void mote_mqtt_sess_lost(struct mote_mqtt_sess *s)
{
    unsigned i;

    s->state = MOTE_MQTT_S_OFFLINE;
    s->held = 0;
    s->ping_out = s->ping_due = s->disc = false;
    s->w_src = MOTE_MQTT_W_NONE;
    s->ctl_len = 0;
    memset(s->sub_id, 0, sizeof(s->sub_id));
    for (i = 0; i < MOTE_MQTT_RX_INFLIGHT; i++) {
        struct mote_mqtt_rx *r = &s->rx[i];

        r->inctl = false;
        if (r->state == MOTE_MQTT_RX_COMP)
            r->state = MOTE_MQTT_RX_FREE; /* the broker sends its PUBREL again */
    }
    for (i = 0; i < s->nout; i++) {
        struct mote_mqtt_out *e = &s->out[i];

        if (e->len != 0 && e->qos > 0 && e->touched)
            s->outbuf[e->off] |= 0x08u; /* DUP: the broker may have it */
        e->sent = false;
    }
    gc(s);
}

void mote_mqtt_sess_disconnect(struct mote_mqtt_sess *s)
{
    s->closing = true;
}

int64_t mote_mqtt_sess_tick(struct mote_mqtt_sess *s, uint32_t now)
{
    uint32_t ka = (uint32_t)s->conf->keep_alive_s * 1000u, idle, tx, rx;

    if (s->state != MOTE_MQTT_S_ONLINE || ka == 0)
        return UINT32_MAX;
    if (s->ping_out) {
        uint32_t waited = now - s->ping_sent;

        if (s->held != 0)
            return s->conf->ping_timeout_ms; /* not reading: an answer could not be seen */
        if (waited >= s->conf->ping_timeout_ms) {
            set_msg(s, "the broker did not answer a PINGREQ in time (the link is down?)", NULL,
                    NULL);
            return MOTE_ERR_TIMEDOUT;
        }
        return s->conf->ping_timeout_ms - waited;
    }
    if (s->ping_due) {
        /* Queued but not written yet: the connection does not take it. */
        uint32_t waited = now - s->ping_due_at;

        if (waited >= s->conf->ping_timeout_ms) {
            set_msg(s, "a PINGREQ could not be sent in time (the broker does not read)", NULL,
                    NULL);
            return MOTE_ERR_TIMEDOUT;
        }
        return s->conf->ping_timeout_ms - waited;
    }
    tx = now - s->last_tx;
    rx = now - s->last_rx;
    idle = tx > rx ? tx : rx;
    if (idle >= ka) {
        s->ping_due = true;
        s->ping_due_at = now;
        return 0;
    }
    return ka - idle;
}
