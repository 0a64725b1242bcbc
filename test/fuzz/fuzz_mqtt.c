/* fuzz_mqtt - the MQTT packet parser and the client session on arbitrary
 * bytes from a broker.
 * Properties: (1) what the parser makes of the bytes (each packet's
 * fields, or the error and where it came) does not depend on how they
 * are split: fed at once and in pieces whose sizes come from the input,
 * the transcripts match; (2) a session fed the bytes after its CONNACK,
 * acknowledging what it gets, only ever writes whole, well-formed
 * packets, and never more bytes than its buffers hold. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../mqtt_drain.h"
#include "mote/mote_mqtt.h"

static struct mote_mqtt_parser parser;
static struct mote_mqtt_sess sess;
static struct mote_mqtt_conf conf;

struct transcript {
    uint32_t hash;
    unsigned packets;
    int err;
    size_t err_at;
};

static void mix(struct transcript *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        t->hash = (t->hash ^ b[i]) * 16777619u;
}

static void mix_packet(struct transcript *t, const struct mote_mqtt_packet *pk)
{
    uint32_t v[8] = {pk->type, pk->flags, pk->id, pk->session_present, pk->code, pk->qos,
                     (uint32_t)pk->len, pk->oversize};

    t->packets++;
    mix(t, v, sizeof(v));
    if (pk->topic != NULL)
        mix(t, pk->topic, strlen(pk->topic));
    if (pk->payload != NULL) {
        if (pk->payload[pk->len] != '\0')
            __builtin_trap(); /* payloads are NUL-terminated */
        mix(t, pk->payload, pk->len);
    }
    if (pk->codes != NULL)
        mix(t, pk->codes, pk->ncodes);
    if (pk->type == MOTE_MQTT_PUBLISH && pk->topic_len <= MOTE_MQTT_TOPIC_MAX &&
        strlen(pk->topic) != pk->topic_len)
        __builtin_trap(); /* a topic within the limit comes whole */
}

static void parse(const uint8_t *data, size_t size, bool split, struct transcript *t)
{
    size_t at = 1;

    memset(t, 0, sizeof(*t));
    mote_mqtt_parser_init(&parser);
    while (at < size) {
        size_t piece = split ? 1 + (data[at - 1] % 32u) : size - at, used;
        struct mote_mqtt_packet pk;
        int rc;

        if (piece > size - at)
            piece = size - at;
        rc = mote_mqtt_parse(&parser, data + at, piece, &used, &pk);
        if (used > piece)
            __builtin_trap();
        at += used;
        if (rc < 0) {
            t->err = rc;
            t->err_at = at;
            return;
        }
        if (rc == 1)
            mix_packet(t, &pk);
        else if (used != piece)
            __builtin_trap();
    }
}

/* The packets the session wrote: each whole, of a type a client sends. */
static void check_out(const uint8_t *b, size_t n)
{
    size_t at = 0;

    while (at < n) {
        uint32_t rem = 0;
        int vl = mote_mqtt_varint_get(b + at + 1, n - at - 1, &rem);
        unsigned type = b[at] >> 4;

        if (vl <= 0 || at + 1 + (size_t)vl + rem > n)
            __builtin_trap();
        if (type != MOTE_MQTT_PUBACK && type != MOTE_MQTT_PUBREC && type != MOTE_MQTT_PUBCOMP &&
            type != MOTE_MQTT_SUBSCRIBE && type != MOTE_MQTT_PINGREQ &&
            type != MOTE_MQTT_PUBLISH && type != MOTE_MQTT_CONNECT &&
            type != MOTE_MQTT_DISCONNECT)
            __builtin_trap();
        at += 1 + (size_t)vl + rem;
    }
}

static int on_event(void *arg, const struct mote_mqtt_event *ev)
{
    (void)arg;
    if (ev->type == MOTE_MQTT_EV_MESSAGE) {
        if (ev->oversize != (ev->payload == NULL))
            __builtin_trap();
        if (ev->ack != 0 && (ev->len & 1u) == 0)
            (void)mote_mqtt_sess_ack(&sess, ev->ack); /* (odd lengths stay held) */
        if (ev->len == 3)
            return MOTE_ERR_AGAIN; /* "not now" */
    }
    return 0;
}

static size_t drain(uint32_t now)
{
    static uint8_t w[MOTE_MQTT_OUT_MAX + MOTE_MQTT_CTL_MAX];
    size_t total = mqtt_drain(&sess, now, w, sizeof(w), 64);

    if (total == (size_t)-1)
        __builtin_trap();
    check_out(w, total);
    return total;
}

static void session(const uint8_t *data, size_t size)
{
    static const uint8_t connack[] = {0x20, 2, 1, 0};
    size_t at = 1;
    uint32_t now = 0;
    unsigned rounds = 0;

    mote_mqtt_conf_defaults(&conf);
    conf.client_id = "fuzz";
    conf.keep_alive_s = 5;
    conf.subs[0].filter = "mote/fuzz/in";
    conf.subs[0].qos = 1;
    conf.nsubs = 1;
    if (mote_mqtt_sess_init(&sess, &conf, on_event, NULL) < 0)
        __builtin_trap();
    mote_mqtt_sess_start(&sess, now);
    (void)drain(now);
    if (mote_mqtt_sess_feed(&sess, now, connack, sizeof(connack)) != (int)sizeof(connack))
        __builtin_trap();
    (void)mote_mqtt_sess_publish(&sess, "mote/fuzz/status", "{}", 2, 1, true);
    while (at < size && rounds++ < 4096) {
        size_t piece = 1 + (data[at - 1] % 64u);
        int rc;

        if (piece > size - at)
            piece = size - at;
        rc = mote_mqtt_sess_feed(&sess, now, data + at, piece);
        if (rc < 0)
            break; /* malformed: the driver would close the connection */
        if ((size_t)rc > piece)
            __builtin_trap();
        at += (size_t)rc;
        if (mote_mqtt_sess_paused(&sess) && (mote_mqtt_sess_resume(&sess, now) < 0))
            break;
        now += data[at - 1 < size ? at - 1 : 0] * 50u;
        if (mote_mqtt_sess_tick(&sess, now) < 0)
            break;
        (void)drain(now);
        if ((data[at - 1 < size ? at - 1 : 0] & 7u) == 0)
            (void)mote_mqtt_sess_publish(&sess, "mote/fuzz/out", data, at % 200, 1, false);
    }
    mote_mqtt_sess_lost(&sess);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct transcript a, b;

    if (size < 1)
        return 0;
    parse(data, size, false, &a);
    parse(data, size, true, &b);
    if (a.err != b.err || a.packets != b.packets || a.hash != b.hash ||
        (a.err != 0 && a.err_at != b.err_at))
        __builtin_trap(); /* the split changed what was seen */
    session(data, size);
    return 0;
}
