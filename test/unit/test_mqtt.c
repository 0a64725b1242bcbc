/* test_mqtt.c - the MQTT client: every packet encoded and decoded, the
 * parser on any split, malformed and oversize packets, the varint's
 * edges; the session's in-flight table, resends, deferred acks in order,
 * keep-alive, a clean stop; the driver on the test port against a fake
 * broker (reconnects, backoff, bounded steps). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../mqtt_drain.h"
#include "mote/mote.h"
#include "mote/mote_mqtt.h"
#include "mote_tport.h"

/* ---- helpers ------------------------------------------------------------- */

/* A packet the client wrote, split out of the bytes it sent. */
struct cpkt {
    uint8_t hdr;
    uint32_t len;
    const uint8_t *body;
};

/* Splits `n` bytes into packets (all must be whole). Returns the count. */
static unsigned split(const uint8_t *b, size_t n, struct cpkt *out, unsigned max)
{
    size_t at = 0;
    unsigned k = 0;

    while (at < n) {
        uint32_t rem = 0;
        int vl = mote_mqtt_varint_get(b + at + 1, n - at - 1, &rem);

        assert_true(vl > 0);
        assert_true(at + 1 + (size_t)vl + rem <= n);
        assert_true(k < max);
        out[k].hdr = b[at];
        out[k].len = rem;
        out[k].body = b + at + 1 + vl;
        k++;
        at += 1 + (size_t)vl + rem;
    }
    return k;
}

static unsigned id_of(const struct cpkt *p)
{
    return ((unsigned)p->body[0] << 8) | p->body[1];
}

/* Parses all of `n` bytes in pieces of `step` (0: at once) and collects
 * each packet's type, id, qos and payload length; returns the count, or
 * the parser's error. */
struct seen {
    uint8_t type, qos;
    uint16_t id;
    size_t len;
    bool oversize;
    char topic[64];
};

static struct mote_mqtt_parser P;

static int parse_all(const uint8_t *b, size_t n, size_t step, struct seen *out, unsigned max)
{
    size_t at = 0;
    unsigned k = 0;

    mote_mqtt_parser_init(&P);
    while (at < n) {
        struct mote_mqtt_packet pk;
        size_t piece = step == 0 || step > n - at ? n - at : step, used;
        int rc = mote_mqtt_parse(&P, b + at, piece, &used, &pk);

        if (rc < 0)
            return rc;
        assert_true(used <= piece);
        at += used;
        if (rc == 1) {
            assert_true(k < max);
            memset(&out[k], 0, sizeof(out[k]));
            out[k].type = pk.type;
            out[k].qos = pk.qos;
            out[k].id = pk.id;
            out[k].len = pk.len;
            out[k].oversize = pk.oversize;
            if (pk.topic != NULL)
                snprintf(out[k].topic, sizeof(out[k].topic), "%s", pk.topic);
            k++;
        } else {
            assert_int_equal(used, piece);
        }
    }
    return (int)k;
}

/* ---- the varint ----------------------------------------------------------- */

static void test_varint_edges(void **state)
{
    static const struct {
        uint32_t v;
        uint8_t b[4];
        int n;
    } cases[] = {
        {0, {0x00}, 1},
        {127, {0x7F}, 1},
        {128, {0x80, 0x01}, 2},
        {321, {0xC1, 0x02}, 2},
        {16383, {0xFF, 0x7F}, 2},
        {16384, {0x80, 0x80, 0x01}, 3},
        {2097151, {0xFF, 0xFF, 0x7F}, 3},
        {2097152, {0x80, 0x80, 0x80, 0x01}, 4},
        {268435455, {0xFF, 0xFF, 0xFF, 0x7F}, 4},
    };
    static const uint8_t five[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
    uint8_t out[4];
    uint32_t v;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int n = mote_mqtt_varint_put(out, cases[i].v);

        assert_int_equal(n, cases[i].n);
        assert_memory_equal(out, cases[i].b, (size_t)n);
        assert_int_equal(mote_mqtt_varint_get(cases[i].b, (size_t)n, &v), n);
        assert_int_equal(v, cases[i].v);
        /* one byte short: not complete yet */
        assert_int_equal(mote_mqtt_varint_get(cases[i].b, (size_t)n - 1, &v), 0);
    }
    assert_int_equal(mote_mqtt_varint_put(out, 268435456u), MOTE_ERR_RANGE);
    assert_int_equal(mote_mqtt_varint_get(five, 5, &v), MOTE_ERR_BADMSG);
    assert_int_equal(mote_mqtt_varint_get(five, 4, &v), MOTE_ERR_BADMSG);
}

/* ---- encoders --------------------------------------------------------------- */

static void test_encode_connect(void **state)
{
    static const uint8_t want[] = {
        0x10, 38,                               /* CONNECT, remaining length */
        0, 4, 'M', 'Q', 'T', 'T', 4,            /* protocol name, level 4 */
        0xEC,                                   /* user, password, will retain, QoS 1, will */
        0, 60,                                  /* keep-alive */
        0, 3, 'd', 'e', 'v',                    /* client id */
        0, 6, 'd', '/', 's', 't', 'a', 't',     /* will topic */
        0, 3, 'o', 'f', 'f',                    /* will payload */
        0, 4, 'u', 's', 'e', 'r',               /* user name */
        0, 2, 'p', 'w',                         /* password */
    };
    struct mote_mqtt_connect c;
    uint8_t b[128];

    (void)state;
    memset(&c, 0, sizeof(c));
    c.client_id = "dev";
    c.keep_alive_s = 60;
    c.will_topic = "d/stat";
    c.will_payload = "off";
    c.will_len = 3;
    c.will_qos = 1;
    c.will_retain = true;
    c.username = "user";
    c.password = "pw";
    c.password_len = 2;
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), sizeof(want));
    assert_memory_equal(b, want, sizeof(want));
    /* every byte must fit */
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(want) - 1, &c), MOTE_ERR_TOO_LARGE);

    /* the smallest: clean session, no will, no credentials */
    memset(&c, 0, sizeof(c));
    c.client_id = "a";
    c.clean_session = true;
    {
        static const uint8_t w2[] = {0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 0, 0, 1, 'a'};

        assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), sizeof(w2));
        assert_memory_equal(b, w2, sizeof(w2));
    }
    /* refusals */
    c.clean_session = false;
    c.client_id = "";
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), MOTE_ERR_INVAL);
    c.client_id = "bad\xff";
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), MOTE_ERR_INVAL);
    c.client_id = "ok";
    c.password = "pw";
    c.password_len = 2;
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), MOTE_ERR_INVAL);
    c.password = NULL;
    c.will_topic = "a/#";
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), MOTE_ERR_INVAL);
    c.will_topic = "a";
    c.will_qos = 3;
    assert_int_equal(mote_mqtt_enc_connect(b, sizeof(b), &c), MOTE_ERR_INVAL);
}

static void test_encode_publish_subscribe_acks(void **state)
{
    static const uint8_t q0[] = {0x31, 7, 0, 3, 'a', '/', 'b', 'h', 'i'};
    static const uint8_t q1[] = {0x3A, 9, 0, 3, 'a', '/', 'b', 0x12, 0x34, 'h', 'i'};
    static const uint8_t sub[] = {0x82, 8, 0x00, 0x07, 0, 3, 'a', '/', '#', 1};
    static const uint8_t puback[] = {0x40, 2, 0x01, 0x02};
    static const uint8_t pubrec[] = {0x50, 2, 0x01, 0x02};
    static const uint8_t pubrel[] = {0x62, 2, 0x01, 0x02};
    static const uint8_t pubcomp[] = {0x70, 2, 0x01, 0x02};
    uint8_t b[64];

    (void)state;
    /* QoS 0, retained */
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a/b", "hi", 2, 0, true, false, 0),
                     sizeof(q0));
    assert_memory_equal(b, q0, sizeof(q0));
    /* QoS 1, DUP, not retained */
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a/b", "hi", 2, 1, false, true, 0x1234),
                     sizeof(q1));
    assert_memory_equal(b, q1, sizeof(q1));
    /* an empty payload is a message too */
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a", NULL, 0, 0, true, false, 0), 5);
    /* refusals */
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a/+", "x", 1, 0, false, false, 0),
                     MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "", "x", 1, 0, false, false, 0),
                     MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "\xc3", "x", 1, 0, false, false, 0),
                     MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a", "x", 1, 1, false, false, 0),
                     MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a", "x", 1, 0, false, true, 0),
                     MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_publish(b, sizeof(b), "a", "x", 1, 3, false, false, 1),
                     MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_publish(b, 8, "a/b", "hi", 2, 0, false, false, 0),
                     MOTE_ERR_TOO_LARGE);

    assert_int_equal(mote_mqtt_enc_subscribe(b, sizeof(b), 7, "a/#", 1), sizeof(sub));
    assert_memory_equal(b, sub, sizeof(sub));
    assert_int_equal(mote_mqtt_enc_subscribe(b, sizeof(b), 0, "a", 1), MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_subscribe(b, sizeof(b), 1, "a#", 1), MOTE_ERR_INVAL);

    assert_int_equal(mote_mqtt_enc_ack(b, sizeof(b), MOTE_MQTT_PUBACK, 0x0102), 4);
    assert_memory_equal(b, puback, 4);
    assert_int_equal(mote_mqtt_enc_ack(b, sizeof(b), MOTE_MQTT_PUBREC, 0x0102), 4);
    assert_memory_equal(b, pubrec, 4);
    assert_int_equal(mote_mqtt_enc_ack(b, sizeof(b), MOTE_MQTT_PUBREL, 0x0102), 4);
    assert_memory_equal(b, pubrel, 4);
    assert_int_equal(mote_mqtt_enc_ack(b, sizeof(b), MOTE_MQTT_PUBCOMP, 0x0102), 4);
    assert_memory_equal(b, pubcomp, 4);
    assert_int_equal(mote_mqtt_enc_ack(b, sizeof(b), MOTE_MQTT_PUBACK, 0), MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_ack(b, sizeof(b), MOTE_MQTT_CONNACK, 1), MOTE_ERR_INVAL);
    assert_int_equal(mote_mqtt_enc_ack(b, 3, MOTE_MQTT_PUBACK, 1), MOTE_ERR_TOO_LARGE);

    assert_int_equal(mote_mqtt_enc_empty(b, sizeof(b), MOTE_MQTT_PINGREQ), 2);
    assert_int_equal(b[0], 0xC0);
    assert_int_equal(b[1], 0);
    assert_int_equal(mote_mqtt_enc_empty(b, sizeof(b), MOTE_MQTT_DISCONNECT), 2);
    assert_int_equal(b[0], 0xE0);
    assert_int_equal(mote_mqtt_enc_empty(b, sizeof(b), MOTE_MQTT_PUBACK), MOTE_ERR_INVAL);
}

static void test_topic_and_filter_rules(void **state)
{
    (void)state;
    assert_true(mote_mqtt_topic_valid("mote/dev1/in"));
    assert_true(mote_mqtt_topic_valid("/"));
    assert_true(mote_mqtt_topic_valid("caf\xc3\xa9"));
    assert_false(mote_mqtt_topic_valid(""));
    assert_false(mote_mqtt_topic_valid("a/+/b"));
    assert_false(mote_mqtt_topic_valid("a/#"));
    assert_false(mote_mqtt_topic_valid("\xed\xa0\x80")); /* a surrogate */
    assert_true(mote_mqtt_filter_valid("#"));
    assert_true(mote_mqtt_filter_valid("+"));
    assert_true(mote_mqtt_filter_valid("a/+/b/#"));
    assert_true(mote_mqtt_filter_valid("+/+"));
    assert_false(mote_mqtt_filter_valid("a/#/b"));
    assert_false(mote_mqtt_filter_valid("a/b#"));
    assert_false(mote_mqtt_filter_valid("a+/b"));
    assert_false(mote_mqtt_filter_valid(""));
}

/* ---- decoding ---------------------------------------------------------------- */

static int dec(const uint8_t *raw, size_t n, struct mote_mqtt_packet *pk)
{
    static uint8_t body[256];
    const char *why = NULL;
    uint32_t rem = 0;
    int vl = mote_mqtt_varint_get(raw + 1, n - 1, &rem);
    int rc;

    assert_true(vl > 0);
    assert_int_equal(1 + (size_t)vl + rem, n);
    memcpy(body, raw + 1 + vl, rem);
    rc = mote_mqtt_decode(raw[0], body, rem, pk, &why);
    if (rc < 0)
        assert_true(why != NULL && why[0] != '\0');
    return rc;
}

#define DEC(pk, ...)                                                                               \
    dec((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}), (pk))

static void test_decode_connack(void **state)
{
    struct mote_mqtt_packet pk;
    unsigned code;

    (void)state;
    assert_int_equal(DEC(&pk, 0x20, 2, 0, 0), 0);
    assert_int_equal(pk.type, MOTE_MQTT_CONNACK);
    assert_false(pk.session_present);
    assert_int_equal(pk.code, MOTE_MQTT_ACCEPTED);
    assert_int_equal(DEC(&pk, 0x20, 2, 1, 0), 0);
    assert_true(pk.session_present);
    for (code = 1; code <= 5; code++) {
        uint8_t raw[4] = {0x20, 2, 0, (uint8_t)code};

        assert_int_equal(dec(raw, 4, &pk), 0);
        assert_int_equal(pk.code, code);
        assert_string_not_equal(mote_mqtt_connack_name(code), "unknown");
    }
    assert_string_equal(mote_mqtt_connack_name(4), "bad user name or password");
    assert_string_equal(mote_mqtt_connack_name(6), "unknown");
    /* malformed */
    assert_int_equal(DEC(&pk, 0x20, 2, 0, 6), MOTE_ERR_BADMSG);    /* unknown code */
    assert_int_equal(DEC(&pk, 0x20, 2, 2, 0), MOTE_ERR_BADMSG);    /* reserved ack flags */
    assert_int_equal(DEC(&pk, 0x21, 2, 0, 0), MOTE_ERR_BADMSG);    /* reserved header flags */
    assert_int_equal(DEC(&pk, 0x20, 3, 0, 0, 0), MOTE_ERR_BADMSG); /* length */
    assert_int_equal(DEC(&pk, 0x20, 2, 1, 5), MOTE_ERR_BADMSG);    /* refused with a session */
}

static void test_decode_publish(void **state)
{
    struct mote_mqtt_packet pk;

    (void)state;
    /* QoS 0 retained, topic "a/b", payload "hi" */
    assert_int_equal(DEC(&pk, 0x31, 7, 0, 3, 'a', '/', 'b', 'h', 'i'), 0);
    assert_int_equal(pk.type, MOTE_MQTT_PUBLISH);
    assert_int_equal(pk.qos, 0);
    assert_true(pk.retain);
    assert_false(pk.dup);
    assert_string_equal(pk.topic, "a/b");
    assert_int_equal(pk.topic_len, 3);
    assert_int_equal(pk.len, 2);
    assert_memory_equal(pk.payload, "hi", 3); /* NUL-terminated */
    /* QoS 1 DUP id 0x1234 */
    assert_int_equal(DEC(&pk, 0x3A, 7, 0, 1, 't', 0x12, 0x34, 'x', 'y'), 0);
    assert_int_equal(pk.qos, 1);
    assert_true(pk.dup);
    assert_int_equal(pk.id, 0x1234);
    assert_string_equal(pk.topic, "t");
    assert_string_equal((const char *)pk.payload, "xy");
    /* QoS 2, empty payload */
    assert_int_equal(DEC(&pk, 0x34, 5, 0, 1, 't', 0, 9), 0);
    assert_int_equal(pk.qos, 2);
    assert_int_equal(pk.id, 9);
    assert_int_equal(pk.len, 0);
    /* malformed */
    assert_int_equal(DEC(&pk, 0x36, 5, 0, 1, 't', 0, 9), MOTE_ERR_BADMSG);  /* QoS 3 */
    assert_int_equal(DEC(&pk, 0x38, 3, 0, 1, 't'), MOTE_ERR_BADMSG);        /* DUP, QoS 0 */
    assert_int_equal(DEC(&pk, 0x32, 5, 0, 1, 't', 0, 0), MOTE_ERR_BADMSG);  /* id 0 */
    assert_int_equal(DEC(&pk, 0x30, 3, 0, 1, '#'), MOTE_ERR_BADMSG);        /* wildcard */
    assert_int_equal(DEC(&pk, 0x30, 3, 0, 1, 0), MOTE_ERR_BADMSG);          /* NUL */
    assert_int_equal(DEC(&pk, 0x30, 3, 0, 1, 0xFF), MOTE_ERR_BADMSG);       /* not UTF-8 */
    assert_int_equal(DEC(&pk, 0x30, 2, 0, 0), MOTE_ERR_BADMSG);             /* empty topic */
    assert_int_equal(DEC(&pk, 0x30, 3, 0, 5, 'a'), MOTE_ERR_BADMSG);        /* topic too long */
    assert_int_equal(DEC(&pk, 0x32, 4, 0, 1, 't', 0), MOTE_ERR_BADMSG);     /* no room for id */
    assert_int_equal(DEC(&pk, 0x30, 1, 0), MOTE_ERR_BADMSG);                /* no topic length */
}

static void test_decode_acks_suback_pingresp(void **state)
{
    struct mote_mqtt_packet pk;

    (void)state;
    assert_int_equal(DEC(&pk, 0x40, 2, 0, 5), 0);
    assert_int_equal(pk.type, MOTE_MQTT_PUBACK);
    assert_int_equal(pk.id, 5);
    assert_int_equal(DEC(&pk, 0x50, 2, 0, 5), 0);
    assert_int_equal(pk.type, MOTE_MQTT_PUBREC);
    assert_int_equal(DEC(&pk, 0x62, 2, 0, 5), 0);
    assert_int_equal(pk.type, MOTE_MQTT_PUBREL);
    assert_int_equal(DEC(&pk, 0x70, 2, 0, 5), 0);
    assert_int_equal(pk.type, MOTE_MQTT_PUBCOMP);
    assert_int_equal(DEC(&pk, 0xB0, 2, 0, 5), 0);
    assert_int_equal(pk.type, MOTE_MQTT_UNSUBACK);
    assert_int_equal(DEC(&pk, 0xD0, 0), 0);
    assert_int_equal(pk.type, MOTE_MQTT_PINGRESP);
    assert_int_equal(DEC(&pk, 0x90, 6, 0, 7, 0, 1, 2, 0x80), 0);
    assert_int_equal(pk.type, MOTE_MQTT_SUBACK);
    assert_int_equal(pk.id, 7);
    assert_int_equal(pk.ncodes, 4);
    assert_int_equal(pk.codes[3], MOTE_MQTT_SUB_FAILURE);
    /* malformed */
    assert_int_equal(DEC(&pk, 0x60, 2, 0, 5), MOTE_ERR_BADMSG);       /* PUBREL needs flags 2 */
    assert_int_equal(DEC(&pk, 0x42, 2, 0, 5), MOTE_ERR_BADMSG);       /* PUBACK flags */
    assert_int_equal(DEC(&pk, 0x40, 3, 0, 5, 0), MOTE_ERR_BADMSG);    /* length */
    assert_int_equal(DEC(&pk, 0x40, 2, 0, 0), MOTE_ERR_BADMSG);       /* id 0 */
    assert_int_equal(DEC(&pk, 0x90, 3, 0, 7, 3), MOTE_ERR_BADMSG);    /* SUBACK code 3 */
    assert_int_equal(DEC(&pk, 0x90, 2, 0, 7), MOTE_ERR_BADMSG);       /* no code */
    assert_int_equal(DEC(&pk, 0xD0, 1, 0), MOTE_ERR_BADMSG);          /* PINGRESP body */
    /* what only a client sends, and the reserved types */
    assert_int_equal(DEC(&pk, 0x10, 0), MOTE_ERR_BADMSG);
    assert_int_equal(DEC(&pk, 0x82, 2, 0, 1), MOTE_ERR_BADMSG);
    assert_int_equal(DEC(&pk, 0xA2, 2, 0, 1), MOTE_ERR_BADMSG);
    assert_int_equal(DEC(&pk, 0xC0, 0), MOTE_ERR_BADMSG);
    assert_int_equal(DEC(&pk, 0xE0, 0), MOTE_ERR_BADMSG);
    assert_int_equal(DEC(&pk, 0x00, 0), MOTE_ERR_BADMSG);
    assert_int_equal(DEC(&pk, 0xF0, 0), MOTE_ERR_BADMSG);
}

/* ---- the parser ------------------------------------------------------------------ */

/* A stream of every kind of packet a broker sends, whole and in every
 * split from 1 byte up: the same packets come out. */
static void test_parser_any_split(void **state)
{
    static uint8_t stream[MOTE_MQTT_PAYLOAD_MAX + 512];
    static uint8_t big[MOTE_MQTT_PAYLOAD_MAX];
    struct seen whole[16], parts[16];
    size_t n = 0, step;
    int k, rc;

    (void)state;
    memset(big, 'z', sizeof(big));
#define ADD(...)                                                                                   \
    do {                                                                                           \
        static const uint8_t b_[] = {__VA_ARGS__};                                                 \
        memcpy(stream + n, b_, sizeof(b_));                                                        \
        n += sizeof(b_);                                                                           \
    } while (0)
    ADD(0x20, 2, 1, 0);
    ADD(0x90, 3, 0, 1, 1);
    ADD(0x30, 5, 0, 1, 't', 'h', 'i');
    ADD(0x32, 7, 0, 1, 't', 0, 3, 'h', 'i');
    ADD(0x34, 5, 0, 1, 't', 0, 4);
    ADD(0x40, 2, 0, 1);
    ADD(0x62, 2, 0, 4);
    ADD(0xD0, 0);
    /* a payload of exactly the limit is not oversize */
    rc = mote_mqtt_enc_publish(stream + n, sizeof(stream) - n, "big", big, sizeof(big), 1, false,
                               false, 77);
    assert_true(rc > 0);
    n += (size_t)rc;
    ADD(0xD0, 0);
#undef ADD
    k = parse_all(stream, n, 0, whole, 16);
    assert_int_equal(k, 10);
    assert_int_equal(whole[0].type, MOTE_MQTT_CONNACK);
    assert_int_equal(whole[2].type, MOTE_MQTT_PUBLISH);
    assert_string_equal(whole[2].topic, "t");
    assert_int_equal(whole[3].id, 3);
    assert_int_equal(whole[4].qos, 2);
    assert_int_equal(whole[8].len, MOTE_MQTT_PAYLOAD_MAX);
    assert_false(whole[8].oversize);
    assert_int_equal(whole[8].id, 77);
    assert_int_equal(whole[9].type, MOTE_MQTT_PINGRESP);
    for (step = 1; step <= 40; step++) {
        assert_int_equal(parse_all(stream, n, step, parts, 16), k);
        assert_memory_equal(parts, whole, sizeof(whole[0]) * (size_t)k);
    }
    assert_int_equal(parse_all(stream, n, 4093, parts, 16), k);
    assert_memory_equal(parts, whole, sizeof(whole[0]) * (size_t)k);
}

/* Oversize PUBLISHes are read through and reported, and the packet after
 * them parses: one a byte over the payload limit (kept in the buffer),
 * one far over it (skipped as it passes), and one whose topic is longer
 * than the whole buffer (its packet id picked out of the passing bytes). */
static void test_parser_oversize_keeps_framing(void **state)
{
    static uint8_t stream[3 * MOTE_MQTT_RXBUF + 70000 + 1024];
    static uint8_t payload[MOTE_MQTT_RXBUF + 50];
    static char topic[MOTE_MQTT_RXBUF + 100];
    struct seen s[8];
    size_t n = 0, step;
    int rc;

    (void)state;
    memset(payload, 'p', sizeof(payload));
    /* 1: a byte over the payload limit */
    rc = mote_mqtt_enc_publish(stream + n, sizeof(stream) - n, "a/b", payload,
                               MOTE_MQTT_PAYLOAD_MAX + 1, 1, false, false, 11);
    assert_true(rc > 0);
    n += (size_t)rc;
    stream[n++] = 0xD0;
    stream[n++] = 0;
    /* 2: larger than the whole buffer */
    rc = mote_mqtt_enc_publish(stream + n, sizeof(stream) - n, "c/d", payload, sizeof(payload), 1,
                               true, false, 12);
    assert_true(rc > 0);
    n += (size_t)rc;
    /* 3: a topic longer than the buffer, QoS 1 */
    memset(topic, 'x', sizeof(topic) - 1);
    topic[sizeof(topic) - 1] = '\0';
    rc = mote_mqtt_enc_publish(stream + n, sizeof(stream) - n, topic, "q", 1, 1, false, false,
                               0xABCD);
    assert_true(rc > 0);
    n += (size_t)rc;
    stream[n++] = 0x40;
    stream[n++] = 2;
    stream[n++] = 0;
    stream[n++] = 1;
    for (step = 0; step <= 3; step++) {
        size_t st = step == 0 ? 0 : step == 1 ? 1 : step == 2 ? 7 : 1000;

        assert_int_equal(parse_all(stream, n, st, s, 8), 5);
        assert_int_equal(s[0].type, MOTE_MQTT_PUBLISH);
        assert_true(s[0].oversize);
        assert_int_equal(s[0].id, 11);
        assert_int_equal(s[0].len, MOTE_MQTT_PAYLOAD_MAX + 1);
        assert_string_equal(s[0].topic, "a/b");
        assert_int_equal(s[1].type, MOTE_MQTT_PINGRESP);
        assert_true(s[2].oversize);
        assert_int_equal(s[2].id, 12);
        assert_int_equal(s[2].len, sizeof(payload));
        assert_string_equal(s[2].topic, "c/d");
        assert_true(s[3].oversize);
        assert_int_equal(s[3].id, 0xABCD);
        assert_int_equal(s[3].len, 1);
        assert_int_equal(strlen(s[3].topic), 63); /* (cut by this test's copy) */
        assert_int_equal(s[4].type, MOTE_MQTT_PUBACK);
    }
}

static void test_parser_malformed_is_sticky(void **state)
{
    static const uint8_t five[] = {0xD0, 0x80, 0x80, 0x80, 0x80, 0x01};
    static const uint8_t big_ctl[] = {0x90, 0xFF, 0xFF, 0x7F};
    static const uint8_t qos3[] = {0x36, 0xFF, 0xFF, 0x7F};
    static const uint8_t ok[] = {0xD0, 0};
    struct mote_mqtt_packet pk;
    size_t used;

    (void)state;
    mote_mqtt_parser_init(&P);
    assert_int_equal(mote_mqtt_parse(&P, five, sizeof(five), &used, &pk), MOTE_ERR_BADMSG);
    assert_non_null(strstr(P.why, "4 bytes"));
    /* sticky: nothing more is taken */
    assert_int_equal(mote_mqtt_parse(&P, ok, sizeof(ok), &used, &pk), MOTE_ERR_BADMSG);
    assert_int_equal(used, 0);
    /* a control packet longer than any a broker sends is not read through */
    mote_mqtt_parser_init(&P);
    assert_int_equal(mote_mqtt_parse(&P, big_ctl, sizeof(big_ctl), &used, &pk), MOTE_ERR_BADMSG);
    mote_mqtt_parser_init(&P);
    assert_int_equal(mote_mqtt_parse(&P, qos3, sizeof(qos3), &used, &pk), MOTE_ERR_BADMSG);
    /* one byte at a time, the same */
    {
        size_t i;
        int rc = 0;

        mote_mqtt_parser_init(&P);
        for (i = 0; i < sizeof(five) && rc == 0; i++)
            rc = mote_mqtt_parse(&P, five + i, 1, &used, &pk);
        assert_int_equal(rc, MOTE_ERR_BADMSG);
        assert_int_equal(i, 5); /* the fifth length byte */
    }
}

/* ---- the session (sans-I/O) ------------------------------------------------------- */

static struct mote_mqtt_sess S;
static struct mote_mqtt_conf CONF;

struct evs {
    unsigned n;
    enum mote_mqtt_ev type[64];
    uint32_t ack[64];
    uint16_t id[64];
    unsigned granted[64];
    bool dup[64], retain[64], oversize[64], sp[64];
    uint32_t retry[64];
    unsigned messages;   /* all of them, past the 64 kept */
    char topic[64][32];
    char payload[64][32];
    int answer;          /* what on_ev returns for messages */
    bool ack_at_once;    /* the application acknowledges in the callback */
    struct mote_mqtt_sess *sess;
};

static struct evs E;

static int on_ev(void *arg, const struct mote_mqtt_event *ev)
{
    struct evs *e = arg;
    unsigned i = e->n;

    if (ev->type == MOTE_MQTT_EV_MESSAGE && e->answer == 0)
        e->messages++;
    if (i >= 64)
        return 0;
    e->n++;
    e->type[i] = ev->type;
    e->ack[i] = ev->ack;
    e->id[i] = ev->id;
    e->granted[i] = ev->granted;
    e->dup[i] = ev->dup;
    e->retain[i] = ev->retain;
    e->oversize[i] = ev->oversize;
    e->sp[i] = ev->session_present;
    e->retry[i] = ev->retry_ms;
    e->topic[i][0] = e->payload[i][0] = '\0';
    if (ev->topic != NULL)
        snprintf(e->topic[i], sizeof(e->topic[i]), "%s", ev->topic);
    if (ev->payload != NULL)
        snprintf(e->payload[i], sizeof(e->payload[i]), "%s", (const char *)ev->payload);
    if (ev->type == MOTE_MQTT_EV_MESSAGE) {
        if (e->answer != 0) {
            int a = e->answer;

            e->answer = 0; /* once */
            e->n--;
            return a;
        }
        if (e->ack_at_once && ev->ack != 0)
            assert_int_equal(mote_mqtt_sess_ack(e->sess, ev->ack), 0);
    }
    return 0;
}

static unsigned count(enum mote_mqtt_ev t)
{
    unsigned i, k = 0;

    for (i = 0; i < E.n; i++)
        k += E.type[i] == t;
    return k;
}

/* Everything the session wants to write now, all of it "sent". */
static uint8_t wbuf[2 * MOTE_MQTT_OUT_MAX];

static size_t drain(uint32_t now)
{
    size_t total = mqtt_drain(&S, now, wbuf, sizeof(wbuf), 100);

    assert_true(total != (size_t)-1);
    return total;
}

/* The one packet the session writes at `now`, of type byte `hdr` (kept
 * until the next call). */
static const struct cpkt *one_sent(uint32_t now, uint8_t hdr)
{
    static struct cpkt pk[4];

    assert_int_equal(split(wbuf, drain(now), pk, 4), 1);
    assert_int_equal(pk[0].hdr, hdr);
    return &pk[0];
}

static void feed(uint32_t now, const uint8_t *b, size_t n)
{
    assert_int_equal(mote_mqtt_sess_feed(&S, now, b, n), (int)n);
}

#define FEED(now, ...)                                                                             \
    do {                                                                                           \
        static const uint8_t f_[] = {__VA_ARGS__};                                                 \
        feed((now), f_, sizeof(f_));                                                               \
    } while (0)

static int sess_setup(void **state)
{
    (void)state;
    memset(&E, 0, sizeof(E));
    E.sess = &S;
    mote_mqtt_conf_defaults(&CONF);
    CONF.client_id = "dev1";
    CONF.keep_alive_s = 10;
    CONF.ping_timeout_ms = 3000;
    CONF.will_topic = "mote/dev1/status";
    CONF.will_payload = "{\"state\":\"offline\"}";
    CONF.will_len = strlen(CONF.will_payload);
    CONF.will_qos = 1;
    CONF.will_retain = true;
    CONF.subs[0].filter = "mote/dev1/in";
    CONF.subs[0].qos = 1;
    CONF.nsubs = 1;
    return mote_mqtt_sess_init(&S, &CONF, on_ev, &E);
}

static int no_teardown(void **state)
{
    (void)state;
    return 0;
}

/* Connect, CONNACK, SUBSCRIBE, SUBACK. */
static void online(uint32_t now, bool session_present)
{
    mote_mqtt_sess_start(&S, now);
    (void)one_sent(now, 0x10);
    /* nothing else before CONNACK */
    assert_int_equal(drain(now), 0);
    if (session_present)
        FEED(now, 0x20, 2, 1, 0);
    else
        FEED(now, 0x20, 2, 0, 0);
    assert_int_equal(S.state, MOTE_MQTT_S_ONLINE);
}

static void test_session_connect_subscribe(void **state)
{
    const struct cpkt *sub;
    uint8_t suback[5] = {0x90, 3, 0, 0, 1};

    (void)state;
    online(1000, false);
    assert_int_equal(E.type[0], MOTE_MQTT_EV_CONNECTED);
    assert_false(E.sp[0]);
    sub = one_sent(1000, 0x82);
    assert_memory_equal(sub->body + 4, "mote/dev1/in", 12);
    suback[2] = sub->body[0];
    suback[3] = sub->body[1];
    feed(1000, suback, sizeof(suback));
    assert_int_equal(E.type[1], MOTE_MQTT_EV_SUBSCRIBED);
    assert_int_equal(E.granted[1], 1);
    /* a refused subscription is reported too (after a reconnect) */
    mote_mqtt_sess_lost(&S);
    online(2000, true);
    sub = one_sent(2000, 0x82); /* subscribed again: filters may change */
    suback[2] = sub->body[0];
    suback[3] = sub->body[1];
    suback[4] = 0x80;
    feed(2000, suback, sizeof(suback));
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_SUBSCRIBED);
    assert_int_equal(E.granted[E.n - 1], MOTE_MQTT_SUB_FAILURE);
}

static void test_session_refused_and_early_packets(void **state)
{
    (void)state;
    mote_mqtt_sess_start(&S, 0);
    (void)drain(0);
    {
        static const uint8_t refuse[] = {0x20, 2, 0, 4};

        assert_int_equal(mote_mqtt_sess_feed(&S, 0, refuse, sizeof(refuse)), MOTE_ERR_AUTH);
        assert_non_null(strstr(S.errmsg, "bad user name or password"));
    }
    mote_mqtt_sess_lost(&S);
    mote_mqtt_sess_start(&S, 0);
    (void)drain(0);
    {
        static const uint8_t early[] = {0x30, 3, 0, 1, 't'};

        assert_int_equal(mote_mqtt_sess_feed(&S, 0, early, sizeof(early)), MOTE_ERR_PROTO);
        assert_non_null(strstr(S.errmsg, "before CONNACK"));
    }
    mote_mqtt_sess_lost(&S);
    online(0, false);
    {
        static const uint8_t garbage[] = {0x10, 0};

        assert_int_equal(mote_mqtt_sess_feed(&S, 0, garbage, sizeof(garbage)), MOTE_ERR_BADMSG);
        assert_non_null(strstr(S.errmsg, "malformed"));
    }
}

static void test_session_publish_qos1_and_the_inflight_table(void **state)
{
    struct cpkt pk[MOTE_MQTT_INFLIGHT + 4];
    int ids[MOTE_MQTT_INFLIGHT];
    unsigned i, q, u;
    size_t n;
    uint8_t ack[4] = {0x40, 2, 0, 0};

    (void)state;
    online(0, false);
    (void)drain(0); /* the SUBSCRIBE */
    for (i = 0; i < MOTE_MQTT_INFLIGHT; i++) {
        ids[i] = mote_mqtt_sess_publish(&S, "mote/dev1/out/c", "x", 1, 1, false);
        assert_true(ids[i] >= 1);
        if (i > 0)
            assert_int_not_equal(ids[i], ids[i - 1]);
    }
    /* the table is full: refused, and EV_ROOM comes with an ack */
    assert_int_equal(mote_mqtt_sess_publish(&S, "t", "x", 1, 0, false), MOTE_ERR_FULL);
    n = drain(0);
    assert_int_equal(split(wbuf, n, pk, MOTE_MQTT_INFLIGHT + 4), MOTE_MQTT_INFLIGHT);
    for (i = 0; i < MOTE_MQTT_INFLIGHT; i++) {
        assert_int_equal(pk[i].hdr, 0x32);
        assert_int_equal(((unsigned)pk[i].body[17] << 8) | pk[i].body[18], (unsigned)ids[i]);
    }
    mote_mqtt_sess_counts(&S, &q, &u);
    assert_int_equal(q, MOTE_MQTT_INFLIGHT);
    assert_int_equal(u, MOTE_MQTT_INFLIGHT);
    ack[2] = (uint8_t)(ids[3] >> 8);
    ack[3] = (uint8_t)ids[3];
    feed(0, ack, 4);
    assert_int_equal(E.type[E.n - 2], MOTE_MQTT_EV_PUBLISHED);
    assert_int_equal(E.id[E.n - 2], ids[3]);
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_ROOM);
    assert_true(mote_mqtt_sess_publish(&S, "t", "x", 1, 1, false) >= 1);
    mote_mqtt_sess_counts(&S, &q, &u);
    assert_int_equal(q, MOTE_MQTT_INFLIGHT);
    assert_int_equal(u, MOTE_MQTT_INFLIGHT - 1);
    /* an ack for nothing in flight is noted and ignored */
    feed(0, ack, 4);
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_NOTE);
    /* limits of one publish */
    {
        static char longt[MOTE_MQTT_TOPIC_MAX + 2];
        static uint8_t big[MOTE_MQTT_PAYLOAD_MAX + 1];

        memset(longt, 'a', sizeof(longt) - 1);
        assert_int_equal(mote_mqtt_sess_publish(&S, longt, "x", 1, 0, false), MOTE_ERR_TOO_LARGE);
        assert_int_equal(mote_mqtt_sess_publish(&S, "t", big, sizeof(big), 0, false),
                         MOTE_ERR_TOO_LARGE);
        assert_int_equal(mote_mqtt_sess_publish(&S, "t", "x", 1, 2, false), MOTE_ERR_NOTSUP);
        assert_int_equal(mote_mqtt_sess_publish(&S, "t/#", "x", 1, 0, false), MOTE_ERR_INVAL);
    }
}

/* The queue's bytes fill before its table: refused, then room again as
 * the broker acknowledges. */
static void test_session_out_buffer_full(void **state)
{
    static uint8_t big[MOTE_MQTT_PAYLOAD_MAX];
    unsigned k = 0;
    int rc, first = 0;
    uint8_t ack[4] = {0x40, 2, 0, 0};

    (void)state;
    online(0, false);
    (void)drain(0);
    while ((rc = mote_mqtt_sess_publish(&S, "t", big, sizeof(big), 1, false)) > 0) {
        if (k++ == 0)
            first = rc;
    }
    assert_int_equal(rc, MOTE_ERR_FULL);
    assert_int_equal(k, MOTE_MQTT_OUT_MAX / (sizeof(big) + 8));
    (void)drain(0);
    ack[2] = (uint8_t)(first >> 8);
    ack[3] = (uint8_t)first;
    feed(0, ack, 4);
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_ROOM);
    assert_true(mote_mqtt_sess_publish(&S, "t", big, sizeof(big), 1, false) > 0);
}

/* After a reconnect, QoS 1 packets not acknowledged go again, in order,
 * with their ids and DUP; QoS 0 ones already sent do not; the one not
 * yet sent goes without DUP. */
static void test_session_resend_with_dup(void **state)
{
    struct cpkt pk[8];
    int a, b, c;
    size_t n;
    uint8_t ack[4] = {0x40, 2, 0, 0};

    (void)state;
    online(0, true);
    (void)drain(0);
    a = mote_mqtt_sess_publish(&S, "q/1", "A", 1, 1, false);
    assert_int_equal(mote_mqtt_sess_publish(&S, "q/0", "Z", 1, 0, false), 0);
    b = mote_mqtt_sess_publish(&S, "q/1", "B", 1, 1, true);
    n = drain(0);
    assert_int_equal(split(wbuf, n, pk, 8), 3);
    c = mote_mqtt_sess_publish(&S, "q/1", "C", 1, 1, false); /* queued, not sent */
    ack[2] = (uint8_t)(a >> 8);
    ack[3] = (uint8_t)a;
    mote_mqtt_sess_lost(&S);
    online(5000, true);
    n = drain(5000);
    assert_int_equal(split(wbuf, n, pk, 8), 4); /* SUBSCRIBE, A, B, C */
    assert_int_equal(pk[0].hdr, 0x82);
    assert_int_equal(pk[1].hdr, 0x3A); /* DUP, QoS 1 */
    assert_int_equal(id_of(&(struct cpkt){0, 0, pk[1].body + 5}), (unsigned)a);
    assert_int_equal(pk[1].body[7], 'A');
    assert_int_equal(pk[2].hdr, 0x3B); /* DUP, QoS 1, retained */
    assert_int_equal(id_of(&(struct cpkt){0, 0, pk[2].body + 5}), (unsigned)b);
    assert_int_equal(pk[3].hdr, 0x32); /* never sent: no DUP */
    assert_int_equal(id_of(&(struct cpkt){0, 0, pk[3].body + 5}), (unsigned)c);
    /* acknowledged now: gone for good */
    feed(5000, ack, 4);
    mote_mqtt_sess_lost(&S);
    online(6000, true);
    n = drain(6000);
    assert_int_equal(split(wbuf, n, pk, 8), 3); /* SUBSCRIBE, B, C */
    assert_int_equal(pk[1].body[7], 'B');
}

/* The same bytes come back until they are reported sent, whatever is
 * published meanwhile (a TLS write that would block is repeated as it
 * was). */
static void test_session_chunk_is_stable(void **state)
{
    const uint8_t *p1, *p2;
    size_t n1, n2;

    (void)state;
    online(0, false);
    (void)drain(0);
    assert_true(mote_mqtt_sess_publish(&S, "a", "1", 1, 1, false) > 0);
    n1 = mote_mqtt_sess_out(&S, 0, &p1);
    assert_true(n1 > 0);
    assert_true(mote_mqtt_sess_publish(&S, "a", "2", 1, 1, false) > 0);
    n2 = mote_mqtt_sess_out(&S, 0, &p2);
    assert_int_equal(n1, n2);
    assert_ptr_equal(p1, p2);
    mote_mqtt_sess_sent(&S, 0, 3); /* a part */
    n2 = mote_mqtt_sess_out(&S, 0, &p2);
    assert_int_equal(n2, n1 - 3);
    assert_ptr_equal(p2, p1 + 3);
    mote_mqtt_sess_sent(&S, 0, n2);
    n2 = mote_mqtt_sess_out(&S, 0, &p2); /* now the second */
    assert_true(n2 > 0);
    assert_int_equal(p2[n2 - 1], '2');
}

static void publish_in(uint32_t now, unsigned qos, uint16_t id, const char *payload, bool dup)
{
    uint8_t b[128];
    int n = mote_mqtt_enc_publish(b, sizeof(b), "mote/dev1/in", payload, strlen(payload), qos,
                                  false, dup, id);

    assert_true(n > 0);
    feed(now, b, (size_t)n);
}

/* A QoS 1 message is acknowledged only when the application says so, and
 * acknowledgements leave in the order the messages came. */
static void test_session_deferred_acks_in_order(void **state)
{
    struct cpkt pk[8];
    uint32_t h7, h8;
    size_t n;

    (void)state;
    online(0, false);
    (void)drain(0);
    publish_in(0, 1, 7, "first", false);
    publish_in(0, 1, 8, "second", false);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 2);
    h7 = E.ack[E.n - 2];
    h8 = E.ack[E.n - 1];
    assert_string_equal(E.payload[E.n - 2], "first");
    assert_int_not_equal(h7, 0);
    assert_int_equal(drain(0), 0); /* no PUBACK before the application's */
    assert_int_equal(mote_mqtt_sess_ack(&S, h8), 0);
    assert_int_equal(drain(0), 0); /* 7 is still held: 8 waits */
    assert_int_equal(mote_mqtt_sess_ack(&S, h8), MOTE_ERR_ALREADY);
    assert_int_equal(mote_mqtt_sess_ack(&S, h7), 0);
    n = drain(0);
    assert_int_equal(split(wbuf, n, pk, 8), 2);
    assert_int_equal(pk[0].hdr, 0x40);
    assert_int_equal(id_of(&pk[0]), 7);
    assert_int_equal(id_of(&pk[1]), 8);
    assert_int_equal(mote_mqtt_sess_ack(&S, h7), MOTE_ERR_STALE); /* done and freed */
    assert_int_equal(mote_mqtt_sess_ack(&S, 0), MOTE_ERR_STALE);
    /* QoS 0: delivered, nothing to acknowledge */
    publish_in(0, 0, 0, "zero", false);
    assert_int_equal(E.ack[E.n - 1], 0);
    assert_int_equal(drain(0), 0);
}

/* The broker sends a held message again after a reconnect (persistent
 * session): it is not delivered twice, and the acknowledgement given
 * later goes on the new connection. Without the session, the handle is
 * stale. */
static void test_session_redelivery_and_lost_session(void **state)
{
    uint32_t h;

    (void)state;
    online(0, false);
    (void)drain(0);
    publish_in(0, 1, 21, "job", false);
    h = E.ack[E.n - 1];
    mote_mqtt_sess_lost(&S);
    online(100, true);
    (void)drain(100);
    publish_in(100, 1, 21, "job", true);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 1);
    assert_int_equal(mote_mqtt_sess_ack(&S, h), 0);
    assert_int_equal(id_of(one_sent(100, 0x40)), 21);
    /* an ack owed to a session the broker lost */
    publish_in(100, 1, 22, "job2", false);
    h = E.ack[E.n - 1];
    mote_mqtt_sess_lost(&S);
    online(200, false);
    assert_int_equal(mote_mqtt_sess_ack(&S, h), MOTE_ERR_STALE);
}

/* Every slot held: the session stops taking bytes (the broker keeps the
 * rest) until an acknowledgement went out. */
static void test_session_rx_table_full_pauses(void **state)
{
    static uint8_t b[MOTE_MQTT_RX_INFLIGHT * 40 + 64];
    size_t n = 0;
    unsigned i;
    int rc;

    (void)state;
    online(0, false);
    (void)drain(0);
    for (i = 0; i <= MOTE_MQTT_RX_INFLIGHT; i++) {
        rc = mote_mqtt_enc_publish(b + n, sizeof(b) - n, "mote/dev1/in", "m", 1, 1, false, false,
                                   (uint16_t)(100 + i));
        assert_true(rc > 0);
        n += (size_t)rc;
    }
    rc = mote_mqtt_sess_feed(&S, 0, b, n);
    assert_true(rc > 0);
    assert_true((size_t)rc == n); /* the last one was parsed, and is held */
    assert_true(mote_mqtt_sess_paused(&S));
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), MOTE_MQTT_RX_INFLIGHT);
    {
        static const uint8_t ping[] = {0xD0, 0};

        assert_int_equal(mote_mqtt_sess_feed(&S, 0, ping, 2), 0); /* nothing taken */
    }
    assert_int_equal(mote_mqtt_sess_ack(&S, E.ack[E.n - MOTE_MQTT_RX_INFLIGHT]), 0);
    assert_int_equal(mote_mqtt_sess_resume(&S, 0), 0);
    assert_true(mote_mqtt_sess_paused(&S)); /* the PUBACK has not gone out yet */
    (void)drain(0);
    assert_int_equal(mote_mqtt_sess_resume(&S, 0), 0);
    assert_false(mote_mqtt_sess_paused(&S));
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), MOTE_MQTT_RX_INFLIGHT + 1);
}

/* The application says "not now": the message waits, then comes again. */
static void test_session_application_pause(void **state)
{
    (void)state;
    online(0, false);
    (void)drain(0);
    E.answer = MOTE_ERR_AGAIN;
    {
        uint8_t b[64];
        int n = mote_mqtt_enc_publish(b, sizeof(b), "mote/dev1/in", "later", 5, 1, false, false, 5);
        static const uint8_t ping[] = {0xD0, 0};

        assert_int_equal(mote_mqtt_sess_feed(&S, 0, b, (size_t)n), n);
        assert_true(mote_mqtt_sess_paused(&S));
        assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 0);
        assert_int_equal(mote_mqtt_sess_feed(&S, 0, ping, 2), 0);
        assert_int_equal(mote_mqtt_sess_resume(&S, 0), 0);
        assert_false(mote_mqtt_sess_paused(&S));
        assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 1);
        assert_string_equal(E.payload[E.n - 1], "later");
        assert_int_equal(mote_mqtt_sess_feed(&S, 0, ping, 2), 2);
    }
}

static void test_session_qos2_flow(void **state)
{
    (void)state;
    E.ack_at_once = true;
    online(0, false);
    (void)drain(0);
    publish_in(0, 2, 0x0A0B, "two", false);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 1);
    assert_int_equal(id_of(one_sent(0, 0x50)), 0x0A0B); /* PUBREC */
    FEED(0, 0x62, 2, 0x0A, 0x0B);
    assert_int_equal(id_of(one_sent(0, 0x70)), 0x0A0B); /* PUBCOMP */
    /* a PUBREL whose PUBCOMP was lost is answered again */
    FEED(0, 0x62, 2, 0x0A, 0x0B);
    (void)one_sent(0, 0x70);
}

/* QoS 2 is exactly once to the application: a PUBLISH whose PUBREC went
 * out, sent again before its PUBREL (the PUBREC lost with a connection,
 * the broker restarted from its store), is answered with PUBREC again and
 * never delivered a second time; its PUBREL then frees the id. */
static void test_session_qos2_once_across_a_reconnect(void **state)
{
    (void)state;
    E.ack_at_once = true;
    online(0, false);
    (void)drain(0);
    publish_in(0, 2, 0x0C0D, "once", false);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 1);
    (void)one_sent(0, 0x50); /* PUBREC written... */
    mote_mqtt_sess_lost(&S); /* ...and lost with the connection */
    online(100, true);
    (void)drain(100);
    publish_in(100, 2, 0x0C0D, "once", true);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 1); /* not delivered again */
    assert_int_equal(id_of(one_sent(100, 0x50)), 0x0C0D); /* PUBREC again */
    FEED(100, 0x62, 2, 0x0C, 0x0D); /* PUBREL */
    (void)one_sent(100, 0x70); /* PUBCOMP */
    /* the id is free again: a new message with it is a new message */
    publish_in(100, 2, 0x0C0D, "next", false);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 2);
    /* within one connection too: sent again before the PUBREL */
    (void)drain(100);
    publish_in(100, 2, 0x0C0D, "next", true);
    assert_int_equal(count(MOTE_MQTT_EV_MESSAGE), 2);
}

static void test_session_oversize_message_is_reported_and_acked(void **state)
{
    static uint8_t b[MOTE_MQTT_PAYLOAD_MAX + 64];
    static uint8_t big[MOTE_MQTT_PAYLOAD_MAX + 1];
    int rc;

    (void)state;
    E.ack_at_once = true;
    online(0, false);
    (void)drain(0);
    rc = mote_mqtt_enc_publish(b, sizeof(b), "mote/dev1/in", big, sizeof(big), 1, false, false, 3);
    feed(0, b, (size_t)rc);
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_MESSAGE);
    assert_true(E.oversize[E.n - 1]);
    assert_string_equal(E.topic[E.n - 1], "mote/dev1/in");
    assert_int_equal(id_of(one_sent(0, 0x40)), 3);
    publish_in(0, 1, 4, "after", false);
    assert_string_equal(E.payload[E.n - 1], "after");
}

static void test_session_keepalive(void **state)
{
    (void)state;
    online(0, false);
    (void)drain(0);
    assert_int_equal(mote_mqtt_sess_tick(&S, 0), 10000);
    assert_int_equal(mote_mqtt_sess_tick(&S, 4000), 6000);
    assert_int_equal(mote_mqtt_sess_tick(&S, 10000), 0);
    (void)one_sent(10000, 0xC0);
    assert_int_equal(mote_mqtt_sess_tick(&S, 11000), 2000);
    FEED(11500, 0xD0, 0);
    assert_int_equal(mote_mqtt_sess_tick(&S, 11500), 10000 - 1500); /* since the PINGREQ */
    /* no answer this time */
    assert_int_equal(mote_mqtt_sess_tick(&S, 20000), 0);
    (void)drain(20000);
    assert_true(mote_mqtt_sess_tick(&S, 22999) > 0);
    assert_int_equal(mote_mqtt_sess_tick(&S, 23000), MOTE_ERR_TIMEDOUT);
    assert_non_null(strstr(S.errmsg, "PINGREQ"));
    /* a ping that cannot be written counts too */
    mote_mqtt_sess_lost(&S);
    online(30000, false);
    (void)drain(30000);
    assert_int_equal(mote_mqtt_sess_tick(&S, 40000), 0);
    assert_true(mote_mqtt_sess_tick(&S, 42000) > 0);
    assert_int_equal(mote_mqtt_sess_tick(&S, 43000), MOTE_ERR_TIMEDOUT);
}

/* The clean stop: the caller's last retained status goes out and is
 * acknowledged, then DISCONNECT; nothing new is taken meanwhile. */
static void test_session_clean_disconnect(void **state)
{
    int id;
    uint8_t ack[4] = {0x40, 2, 0, 0};

    (void)state;
    online(0, false);
    (void)drain(0);
    id = mote_mqtt_sess_publish(&S, "mote/dev1/status", "{\"state\":\"offline\"}", 19, 1, true);
    assert_true(id > 0);
    mote_mqtt_sess_disconnect(&S);
    assert_int_equal(mote_mqtt_sess_publish(&S, "t", "x", 1, 0, false), MOTE_ERR_SHUTDOWN);
    (void)one_sent(0, 0x33); /* QoS 1, retained */
    assert_int_equal(drain(0), 0);     /* DISCONNECT waits for the PUBACK */
    ack[2] = (uint8_t)(id >> 8);
    ack[3] = (uint8_t)id;
    feed(0, ack, 4);
    (void)one_sent(0, 0xE0);
    assert_int_equal(S.state, MOTE_MQTT_S_DONE);
}

static void test_session_init_refusals(void **state)
{
    static char huge[MOTE_MQTT_CTL_MAX];

    (void)state;
    CONF.client_id = "";
    assert_int_equal(mote_mqtt_sess_init(&S, &CONF, on_ev, &E), MOTE_ERR_INVAL);
    assert_non_null(strstr(S.errmsg, "client id"));
    CONF.client_id = "dev";
    CONF.password = "pw";
    assert_int_equal(mote_mqtt_sess_init(&S, &CONF, on_ev, &E), MOTE_ERR_INVAL);
    assert_non_null(strstr(S.errmsg, "user name"));
    CONF.password = NULL;
    memset(huge, 'w', sizeof(huge) - 1);
    CONF.will_payload = huge;
    CONF.will_len = sizeof(huge) - 1;
    assert_int_equal(mote_mqtt_sess_init(&S, &CONF, on_ev, &E), MOTE_ERR_TOO_LARGE);
    assert_non_null(strstr(S.errmsg, "MOTE_MQTT_CTL_MAX"));
    CONF.will_len = 3;
    CONF.subs[0].filter = "a/#/b";
    assert_int_equal(mote_mqtt_sess_init(&S, &CONF, on_ev, &E), MOTE_ERR_INVAL);
    assert_non_null(strstr(S.errmsg, "a/#/b"));
}

/* ---- the driver, on the test port against a fake broker --------------------------------- */

#define RES_FD 40
#define CONN_FD 41

struct broker {
    bool refuse;             /* connections are refused */
    bool sp;                 /* CONNACK's session present */
    bool auto_puback;        /* acknowledge QoS 1 publishes */
    bool answer_pings;
    bool silent;             /* never send CONNACK */
    bool open;
    bool peer_closed;
    unsigned connects;
    size_t chunk;            /* bytes per recv (0: all) */
    uint8_t to[300000];      /* broker -> client */
    size_t to_len, to_off;
    uint8_t from[65536];     /* client -> broker, not yet looked at */
    size_t from_len;
    /* what the broker saw, in order */
    unsigned nseen;
    uint8_t seen_hdr[256];
    uint16_t seen_id[256];
    /* bytes given to the client since the last wait */
    size_t since_wait, max_per_wait;
};

static struct mote_tport tp;
static struct mote_loop lp;
static struct mote_mqtt M;
static struct broker B;

static void b_ready(void)
{
    tp.fd_ready[CONN_FD] = B.open ? (uint16_t)(MOTE_POLL_OUT | (B.to_off < B.to_len || B.peer_closed
                                                                     ? MOTE_POLL_IN
                                                                     : 0u))
                                  : 0;
}

static void b_put(const void *p, size_t n)
{
    assert_true(B.to_len + n <= sizeof(B.to));
    memcpy(B.to + B.to_len, p, n);
    B.to_len += n;
    b_ready();
}

/* The broker reads what the client sent and answers. */
static void b_run(void)
{
    size_t at = 0;

    while (at < B.from_len) {
        uint32_t rem = 0;
        int vl = mote_mqtt_varint_get(B.from + at + 1, B.from_len - at - 1, &rem);
        uint8_t h;
        const uint8_t *body;

        if (vl <= 0 || at + 1 + (size_t)vl + rem > B.from_len)
            break;
        h = B.from[at];
        body = B.from + at + 1 + vl;
        if (B.nseen < 256) {
            B.seen_hdr[B.nseen] = h;
            B.seen_id[B.nseen] = 0;
        }
        switch (h >> 4) {
        case MOTE_MQTT_CONNECT:
            if (!B.silent) {
                uint8_t ca[4] = {0x20, 2, B.sp ? 1 : 0, 0};

                b_put(ca, 4);
            }
            break;
        case MOTE_MQTT_SUBSCRIBE: {
            uint8_t sa[5] = {0x90, 3, body[0], body[1], 1};

            b_put(sa, 5);
            break;
        }
        case MOTE_MQTT_PUBLISH:
            if (((h >> 1) & 3) == 1) {
                unsigned tl = ((unsigned)body[0] << 8) | body[1];
                uint8_t pa[4] = {0x40, 2, body[2 + tl], body[3 + tl]};

                if (B.nseen < 256)
                    B.seen_id[B.nseen] = (uint16_t)(((unsigned)body[2 + tl] << 8) | body[3 + tl]);
                if (B.auto_puback)
                    b_put(pa, 4);
            }
            break;
        case MOTE_MQTT_PUBACK:
            if (B.nseen < 256)
                B.seen_id[B.nseen] = (uint16_t)(((unsigned)body[0] << 8) | body[1]);
            break;
        case MOTE_MQTT_PINGREQ:
            if (B.answer_pings) {
                static const uint8_t pr[2] = {0xD0, 0};

                b_put(pr, 2);
            }
            break;
        default:
            break;
        }
        B.nseen++;
        at += 1 + (size_t)vl + rem;
    }
    memmove(B.from, B.from + at, B.from_len - at);
    B.from_len -= at;
}

static void on_wait(struct mote_tport *t, int32_t timeout_ms, void *arg)
{
    (void)t, (void)timeout_ms, (void)arg;
    if (B.since_wait > B.max_per_wait)
        B.max_per_wait = B.since_wait;
    B.since_wait = 0;
    b_run();
    b_ready();
}

static int f_resolve(void *ctx, const char *host, uint16_t port, int *wait_fd)
{
    (void)ctx, (void)host, (void)port;
    *wait_fd = RES_FD;
    tp.fd_ready[RES_FD] = MOTE_POLL_IN;
    return 0;
}

static int f_resolve_result(void *ctx, int req, struct mote_addr *out, unsigned max)
{
    (void)ctx, (void)req, (void)max;
    memset(out, 0, sizeof(*out));
    out->family = 4;
    out->port = 1883;
    out->addr[0] = 127;
    out->addr[3] = 1;
    return 1;
}

static void f_resolve_end(void *ctx, int req)
{
    (void)ctx, (void)req;
    tp.fd_ready[RES_FD] = 0;
}

static int f_connect(void *ctx, const struct mote_addr *a)
{
    (void)ctx, (void)a;
    if (B.refuse)
        return MOTE_ERR_CONNREFUSED;
    assert_false(B.open);
    B.open = true;
    B.peer_closed = false;
    B.to_len = B.to_off = B.from_len = 0;
    B.connects++;
    b_ready();
    return CONN_FD;
}

static int f_connect_done(void *ctx, int fd)
{
    (void)ctx, (void)fd;
    return 0;
}

static int f_send(void *ctx, int fd, const void *buf, size_t n)
{
    (void)ctx;
    assert_int_equal(fd, CONN_FD);
    if (!B.open || B.peer_closed)
        return MOTE_ERR_PIPE;
    if (n > sizeof(B.from) - B.from_len)
        n = sizeof(B.from) - B.from_len;
    if (n == 0)
        return MOTE_ERR_AGAIN;
    memcpy(B.from + B.from_len, buf, n);
    B.from_len += n;
    return (int)n;
}

static int f_recv(void *ctx, int fd, void *buf, size_t n)
{
    size_t k;

    (void)ctx;
    assert_int_equal(fd, CONN_FD);
    if (B.to_off == B.to_len)
        return B.peer_closed ? 0 : MOTE_ERR_AGAIN;
    k = B.to_len - B.to_off;
    if (k > n)
        k = n;
    if (B.chunk != 0 && k > B.chunk)
        k = B.chunk;
    memcpy(buf, B.to + B.to_off, k);
    B.to_off += k;
    B.since_wait += k;
    b_ready();
    return (int)k;
}

static void f_close(void *ctx, int fd)
{
    (void)ctx;
    assert_int_equal(fd, CONN_FD);
    B.open = false;
    b_ready();
}

static int drv_setup(void **state)
{
    (void)state;
    memset(&B, 0, sizeof(B));
    B.auto_puback = B.answer_pings = true;
    mote_tport_init(&tp, 0xFFFFFFFFu - 5000u); /* the clock wraps during the tests */
    tp.port.net_resolve = f_resolve;
    tp.port.net_resolve_result = f_resolve_result;
    tp.port.net_resolve_end = f_resolve_end;
    tp.port.net_connect = f_connect;
    tp.port.net_connect_done = f_connect_done;
    tp.port.net_send = f_send;
    tp.port.net_recv = f_recv;
    tp.port.net_close = f_close;
    tp.on_wait = on_wait;
    assert_int_equal(mote_loop_init(&lp, &tp.port), 0);
    (void)sess_setup(state);
    CONF.url = "mqtt://broker.test:1883";
    CONF.backoff_ms = 1000;
    CONF.backoff_max_ms = 8000;
    CONF.connect_timeout_ms = 5000;
    assert_int_equal(mote_mqtt_init(&M, &CONF, on_ev, &E), 0);
    E.sess = &M.sess;
    return 0;
}

static int drv_teardown(void **state)
{
    (void)state;
    mote_loop_deinit(&lp);
    assert_false(B.open); /* the connection was closed */
    mote_tport_deinit(&tp);
    return 0;
}

/* Polls until cond() holds (at most `turns` loop turns). */
static void run_until(bool (*cond)(void), unsigned turns)
{
    unsigned i;

    for (i = 0; i < turns && !cond(); i++)
        assert_true(mote_loop_poll(&lp, 100) >= 0);
    assert_true(cond());
}

static bool is_online(void)
{
    return mote_mqtt_online(&M);
}

static bool is_offline(void)
{
    return !mote_mqtt_online(&M);
}

static bool in_backoff(void)
{
    return M.phase == MOTE_MQTT_PH_BACKOFF;
}

static mote_job_id JOB;

static bool job_ended(void)
{
    int st = mote_job_state(&lp, JOB);

    return st != MOTE_JOB_RUNNING && st != MOTE_JOB_CANCELLING;
}

static unsigned seen_count(uint8_t mask, uint8_t hdr)
{
    unsigned i, k = 0;

    for (i = 0; i < B.nseen && i < 256; i++)
        k += (B.seen_hdr[i] & mask) == hdr;
    return k;
}

static bool pubacked(void)
{
    return count(MOTE_MQTT_EV_PUBLISHED) > 0;
}

static bool got_message(void)
{
    return count(MOTE_MQTT_EV_MESSAGE) > 0;
}

static bool broker_got_puback(void)
{
    return seen_count(0xF0, 0x40) > 0;
}

static void test_driver_connect_publish_receive(void **state)
{
    uint8_t b[64];
    int n;

    (void)state;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(is_online, 50);
    assert_int_equal(M.connects, 1);
    assert_int_equal(B.seen_hdr[0], 0x10);
    assert_true(mote_mqtt_publish(&M, "mote/dev1/status", "{\"state\":\"online\"}", 18, 1, true) >
                0);
    run_until(pubacked, 50);
    assert_int_equal(seen_count(0xFF, 0x33), 1);
    /* a message in; the application acknowledges it after "storing" */
    n = mote_mqtt_enc_publish(b, sizeof(b), "mote/dev1/in", "{\"text\":\"hi\"}", 13, 1, false,
                              false, 99);
    b_put(b, (size_t)n);
    run_until(got_message, 50);
    assert_string_equal(E.payload[E.n - 1], "{\"text\":\"hi\"}");
    assert_int_equal(seen_count(0xF0, 0x40), 0);
    assert_int_equal(mote_mqtt_ack(&M, E.ack[E.n - 1]), 0);
    run_until(broker_got_puback, 50);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
    assert_int_equal(mote_job_state(&lp, JOB), MOTE_JOB_CANCELLED);
    assert_int_equal(seen_count(0xF0, 0xE0), 0); /* no DISCONNECT: the will stands */
}

/* Refused connections back off: doubling, capped, with jitter within
 * d/2..d; the delay starts over once a connection lasted. */
static void test_driver_backoff(void **state)
{
    uint32_t want = 1000;
    unsigned f;

    (void)state;
    B.refuse = true;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    for (f = 1; f <= 6; f++) {
        uint32_t left;

        run_until(in_backoff, 50);
        assert_int_equal(M.fails, f);
        left = M.deadline - mote_loop_now(&lp);
        assert_true(left >= want / 2 && left <= want);
        assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_OFFLINE);
        assert_true(E.n > 0);
        /* the wait happens on the loop's clock, then the next attempt */
        {
            unsigned guard;

            for (guard = 0; guard < 100 && M.fails == f; guard++)
                assert_true(mote_loop_poll(&lp, 10000) >= 0);
        }
        want = want * 2 > 8000 ? 8000 : want * 2;
    }
    /* the broker is back: online, and a lasting connection resets the count */
    B.refuse = false;
    run_until(is_online, 100);
    tp.now += 9000;
    B.peer_closed = true;
    b_ready();
    run_until(in_backoff, 50);
    assert_int_equal(M.fails, 1);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
}

/* The broker drops the connection with a QoS 1 packet unacknowledged: it
 * goes again, with DUP, after the reconnect. */
static void test_driver_reconnect_resends(void **state)
{
    int id;
    unsigned i;

    (void)state;
    B.auto_puback = false;
    B.sp = true;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(is_online, 50);
    id = mote_mqtt_publish(&M, "mote/dev1/out/c1", "{\"type\":\"text\"}", 15, 1, false);
    assert_true(id > 0);
    for (i = 0; i < 20 && seen_count(0xFF, 0x32) == 0; i++)
        assert_true(mote_loop_poll(&lp, 100) >= 0);
    assert_int_equal(seen_count(0xFF, 0x32), 1);
    B.peer_closed = true;
    b_ready();
    run_until(is_offline, 50);
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_OFFLINE);
    B.auto_puback = true;
    run_until(is_online, 100);
    run_until(pubacked, 50);
    assert_int_equal(seen_count(0xFF, 0x3A), 1); /* DUP */
    assert_int_equal(B.seen_id[B.nseen - 1], (uint16_t)id);
    assert_int_equal(B.connects, 2);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
}

static bool dropped_for_ping(void)
{
    unsigned i;

    for (i = 0; i < E.n; i++) {
        if (E.type[i] == MOTE_MQTT_EV_OFFLINE && M.errmsg[0] != '\0' &&
            strstr(M.errmsg, "PINGREQ") != NULL)
            return true;
    }
    return false;
}

static void test_driver_keepalive_finds_a_dead_link(void **state)
{
    uint32_t t0;

    (void)state;
    CONF.keep_alive_s = 2;
    CONF.ping_timeout_ms = 1000;
    B.answer_pings = false;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(is_online, 50);
    t0 = mote_loop_now(&lp);
    run_until(dropped_for_ping, 200);
    /* after the keep-alive and the ping timeout, not much later */
    assert_true(mote_loop_now(&lp) - t0 >= 3000);
    assert_true(mote_loop_now(&lp) - t0 <= 3000 + 1100);
    assert_int_equal(seen_count(0xFF, 0xC0), 1);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
}

static bool no_connack_reported(void)
{
    return count(MOTE_MQTT_EV_OFFLINE) > 0 && strstr(M.errmsg, "no CONNACK") != NULL;
}

static void test_driver_connect_timeout(void **state)
{
    (void)state;
    B.silent = true;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(no_connack_reported, 200);
    assert_int_equal(seen_count(0xF0, 0x10), 1);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
}

static bool malformed_reported(void)
{
    return count(MOTE_MQTT_EV_OFFLINE) > 0 && strstr(M.errmsg, "malformed") != NULL;
}

static void test_driver_malformed_packet_reconnects(void **state)
{
    static const uint8_t bad[] = {0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};

    (void)state;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(is_online, 50);
    b_put(bad, sizeof(bad));
    run_until(malformed_reported, 50);
    run_until(is_online, 100);
    assert_int_equal(B.connects, 2);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
}

/* A clean stop: the final retained status goes out and is acknowledged,
 * then DISCONNECT, then the job ends DONE. */
static void test_driver_clean_disconnect(void **state)
{
    unsigned i;

    (void)state;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(is_online, 50);
    assert_true(mote_mqtt_publish(&M, "mote/dev1/status", "{\"state\":\"offline\"}", 19, 1, true) >
                0);
    assert_int_equal(mote_mqtt_disconnect(&M, 5000), 0);
    assert_int_equal(mote_mqtt_disconnect(&M, 5000), MOTE_ERR_ALREADY);
    run_until(job_ended, 50);
    assert_int_equal(mote_job_state(&lp, JOB), MOTE_JOB_DONE);
    b_run();
    for (i = 0; i < B.nseen && B.seen_hdr[i] != 0x33; i++)
        ;
    assert_true(i < B.nseen);
    assert_int_equal(B.seen_hdr[B.nseen - 1], 0xE0);
    assert_int_equal(E.type[E.n - 1], MOTE_MQTT_EV_OFFLINE);
    assert_int_equal(E.retry[E.n - 1], 0); /* no retry: the client stopped */
}

/* A broker flooding the client: no step takes more than its budget (plus
 * one read), so the loop keeps turning. */
static void test_driver_bounded_steps(void **state)
{
    static uint8_t b[256];
    unsigned i, want = 2000;
    int n;

    (void)state;
    assert_int_equal(mote_mqtt_start(&M, &lp, NULL, &JOB), 0);
    run_until(is_online, 50);
    n = mote_mqtt_enc_publish(b, sizeof(b), "mote/dev1/in", "0123456789012345678901234567890123456789"
                                                           "0123456789012345678901234567890123456789",
                              80, 0, false, false, 0);
    for (i = 0; i < want; i++)
        b_put(b, (size_t)n);
    B.max_per_wait = 0;
    for (i = 0; i < 200 && E.messages < want; i++)
        assert_true(mote_loop_poll(&lp, 100) >= 0);
    assert_int_equal(E.messages, want);
    assert_true(B.to_off == B.to_len);
    assert_true(B.max_per_wait > 0);
    assert_true(B.max_per_wait <= MOTE_STEP_IO_BYTES + MOTE_MQTT_RECV_BUF);
    assert_int_equal(mote_job_cancel(&lp, JOB), 0);
    run_until(job_ended, 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_edges),
        cmocka_unit_test(test_encode_connect),
        cmocka_unit_test(test_encode_publish_subscribe_acks),
        cmocka_unit_test(test_topic_and_filter_rules),
        cmocka_unit_test(test_decode_connack),
        cmocka_unit_test(test_decode_publish),
        cmocka_unit_test(test_decode_acks_suback_pingresp),
        cmocka_unit_test(test_parser_any_split),
        cmocka_unit_test(test_parser_oversize_keeps_framing),
        cmocka_unit_test(test_parser_malformed_is_sticky),
        cmocka_unit_test_setup_teardown(test_session_connect_subscribe, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_refused_and_early_packets, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_publish_qos1_and_the_inflight_table, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_out_buffer_full, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_resend_with_dup, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_chunk_is_stable, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_deferred_acks_in_order, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_redelivery_and_lost_session, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_rx_table_full_pauses, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_application_pause, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_qos2_flow, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_qos2_once_across_a_reconnect, sess_setup,
                                        no_teardown),
        cmocka_unit_test_setup_teardown(test_session_oversize_message_is_reported_and_acked, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_keepalive, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_clean_disconnect, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_session_init_refusals, sess_setup, no_teardown),
        cmocka_unit_test_setup_teardown(test_driver_connect_publish_receive, drv_setup, drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_backoff, drv_setup, drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_reconnect_resends, drv_setup, drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_keepalive_finds_a_dead_link, drv_setup,
                                        drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_connect_timeout, drv_setup, drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_malformed_packet_reconnects, drv_setup,
                                        drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_clean_disconnect, drv_setup, drv_teardown),
        cmocka_unit_test_setup_teardown(test_driver_bounded_steps, drv_setup, drv_teardown),
    };

    return cmocka_run_group_tests_name("mqtt", tests, NULL, NULL);
}
