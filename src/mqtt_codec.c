/*
 * mqtt_codec.c - MQTT 3.1.1 packets: encoders for what a client sends, a
 * strict decoder and an incremental parser for what a broker sends.
 * No state beyond the parser's, no I/O.
 */
#include <string.h>

#include "mote/mote_json.h"
#include "mote/mote_mqtt.h"

const char *mote_mqtt_connack_name(unsigned code)
{
    static const char *const names[] = {"accepted",
                                        "unacceptable protocol version",
                                        "identifier rejected",
                                        "server unavailable",
                                        "bad user name or password",
                                        "not authorized"};

    return code < sizeof(names) / sizeof(names[0]) ? names[code] : "unknown";
}

const char *mote_mqtt_type_name(unsigned type)
{
    static const char *const names[] = {"?",       "CONNECT",     "CONNACK",  "PUBLISH",
                                        "PUBACK",  "PUBREC",      "PUBREL",   "PUBCOMP",
                                        "SUBSCRIBE", "SUBACK",    "UNSUBSCRIBE", "UNSUBACK",
                                        "PINGREQ", "PINGRESP",    "DISCONNECT", "?"};

    return names[type & 15u];
}

int mote_mqtt_varint_put(uint8_t *out, uint32_t v)
{
    int n = 0;

    if (v > MOTE_MQTT_VARINT_MAX)
        return MOTE_ERR_RANGE;
    do {
        uint8_t b = (uint8_t)(v & 0x7Fu);

        v >>= 7;
        out[n++] = (uint8_t)(v != 0 ? b | 0x80u : b);
    } while (v != 0);
    return n;
}

int mote_mqtt_varint_get(const uint8_t *in, size_t n, uint32_t *v)
{
    uint32_t val = 0;
    size_t i;

    for (i = 0; i < 4; i++) {
        if (i >= n)
            return 0;
        val |= (uint32_t)(in[i] & 0x7Fu) << (7 * i);
        if ((in[i] & 0x80u) == 0) {
            *v = val;
            return (int)i + 1;
        }
    }
    return MOTE_ERR_BADMSG; /* a fifth byte */
}

/* ---- encoding ---------------------------------------------------------- */

/* A bounded writer: `over` is set once something did not fit. */
struct wr {
    uint8_t *p;
    size_t cap, len;
    bool over;
};

static void put(struct wr *w, const void *b, size_t n)
{
    if (n == 0)
        return; /* (b may be NULL then) */
    if (w->over || n > w->cap - w->len) {
        w->over = true;
        return;
    }
    memcpy(w->p + w->len, b, n);
    w->len += n;
}

static void put8(struct wr *w, unsigned v)
{
    uint8_t b = (uint8_t)v;

    put(w, &b, 1);
}

static void put16(struct wr *w, unsigned v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};

    put(w, b, 2);
}

/* A length-prefixed field. */
static void putfield(struct wr *w, const void *b, size_t n)
{
    put16(w, (unsigned)n);
    put(w, b, n);
}

/* The fixed header: first byte and remaining length. */
static int head(struct wr *w, unsigned first, size_t rem)
{
    uint8_t v[4];
    int n;

    if (rem > MOTE_MQTT_VARINT_MAX)
        return MOTE_ERR_TOO_LARGE;
    n = mote_mqtt_varint_put(v, (uint32_t)rem);
    put8(w, first);
    put(w, v, (size_t)n);
    return 0;
}

static int done(const struct wr *w)
{
    return w->over ? MOTE_ERR_TOO_LARGE : (int)w->len;
}

/* A UTF-8 string field's rules: at most 65535 bytes, valid, no NUL. */
static bool utf8_field(const char *s, size_t n)
{
    return n <= 65535 && memchr(s, '\0', n) == NULL && mote_utf8_valid(s, n);
}

static bool topic_ok(const char *t, size_t n)
{
    return n >= 1 && utf8_field(t, n) && memchr(t, '+', n) == NULL && memchr(t, '#', n) == NULL;
}

bool mote_mqtt_topic_valid(const char *topic)
{
    return topic != NULL && topic_ok(topic, strlen(topic));
}

bool mote_mqtt_filter_valid(const char *f)
{
    size_t n, i;

    if (f == NULL)
        return false;
    n = strlen(f);
    if (n < 1 || !utf8_field(f, n))
        return false;
    for (i = 0; i < n; i++) {
        bool starts = i == 0 || f[i - 1] == '/';
        bool ends = i + 1 == n || f[i + 1] == '/';

        if (f[i] == '+' && !(starts && ends))
            return false;
        if (f[i] == '#' && !(starts && i + 1 == n))
            return false;
    }
    return true;
}

int mote_mqtt_enc_connect(uint8_t *buf, size_t cap, const struct mote_mqtt_connect *c)
{
    struct wr w = {buf, cap, 0, false};
    size_t idn = c->client_id != NULL ? strlen(c->client_id) : 0, rem;
    size_t wtn = 0, un = 0;
    unsigned flags = 0;
    int rc;

    if (c->client_id == NULL || !utf8_field(c->client_id, idn) ||
        (idn == 0 && !c->clean_session))
        return idn > 65535 ? MOTE_ERR_TOO_LARGE : MOTE_ERR_INVAL;
    rem = 10 + 2 + idn;
    if (c->will_topic != NULL) {
        wtn = strlen(c->will_topic);
        if (wtn > 65535 || c->will_len > 65535)
            return MOTE_ERR_TOO_LARGE;
        if (!topic_ok(c->will_topic, wtn) || c->will_qos > 2 ||
            (c->will_len > 0 && c->will_payload == NULL))
            return MOTE_ERR_INVAL;
        rem += 2 + wtn + 2 + c->will_len;
        flags |= 0x04u | ((unsigned)c->will_qos << 3) | (c->will_retain ? 0x20u : 0u);
    }
    if (c->username != NULL) {
        un = strlen(c->username);
        if (un > 65535)
            return MOTE_ERR_TOO_LARGE;
        if (!utf8_field(c->username, un))
            return MOTE_ERR_INVAL;
        rem += 2 + un;
        flags |= 0x80u;
    }
    if (c->password != NULL) {
        if (c->username == NULL)
            return MOTE_ERR_INVAL; /* MQTT 3.1.1: no password without a user name */
        if (c->password_len > 65535)
            return MOTE_ERR_TOO_LARGE;
        rem += 2 + c->password_len;
        flags |= 0x40u;
    }
    if (c->clean_session)
        flags |= 0x02u;
    if ((rc = head(&w, MOTE_MQTT_CONNECT << 4, rem)) < 0)
        return rc;
    putfield(&w, "MQTT", 4);
    put8(&w, 4); /* protocol level: 3.1.1 */
    put8(&w, flags);
    put16(&w, c->keep_alive_s);
    putfield(&w, c->client_id, idn);
    if (c->will_topic != NULL) {
        putfield(&w, c->will_topic, wtn);
        putfield(&w, c->will_payload, c->will_len);
    }
    if (c->username != NULL)
        putfield(&w, c->username, un);
    if (c->password != NULL)
        putfield(&w, c->password, c->password_len);
    return done(&w);
}

int mote_mqtt_enc_publish(uint8_t *buf, size_t cap, const char *topic, const void *payload,
                          size_t len, unsigned qos, bool retain, bool dup, uint16_t id)
{
    struct wr w = {buf, cap, 0, false};
    size_t tn = topic != NULL ? strlen(topic) : 0;
    int rc;

    if (tn > 65535)
        return MOTE_ERR_TOO_LARGE;
    if (topic == NULL || !topic_ok(topic, tn) || qos > 2 || (qos > 0 && id == 0) ||
        (qos == 0 && dup) || (len > 0 && payload == NULL))
        return MOTE_ERR_INVAL;
    if (len > MOTE_MQTT_VARINT_MAX)
        return MOTE_ERR_TOO_LARGE;
    rc = head(&w, (MOTE_MQTT_PUBLISH << 4) | (dup ? 0x08u : 0u) | (qos << 1) | (retain ? 1u : 0u),
              2 + tn + (qos > 0 ? 2 : 0) + len);
    if (rc < 0)
        return rc;
    putfield(&w, topic, tn);
    if (qos > 0)
        put16(&w, id);
    put(&w, payload, len);
    return done(&w);
}

int mote_mqtt_enc_subscribe(uint8_t *buf, size_t cap, uint16_t id, const char *filter,
                            unsigned qos)
{
    struct wr w = {buf, cap, 0, false};
    size_t fn = filter != NULL ? strlen(filter) : 0;
    int rc;

    if (fn > 65535)
        return MOTE_ERR_TOO_LARGE;
    if (!mote_mqtt_filter_valid(filter) || qos > 2 || id == 0)
        return MOTE_ERR_INVAL;
    if ((rc = head(&w, (MOTE_MQTT_SUBSCRIBE << 4) | 0x02u, 2 + 2 + fn + 1)) < 0)
        return rc;
    put16(&w, id);
    putfield(&w, filter, fn);
    put8(&w, qos);
    return done(&w);
}

int mote_mqtt_enc_ack(uint8_t *buf, size_t cap, enum mote_mqtt_type type, uint16_t id)
{
    struct wr w = {buf, cap, 0, false};

    if ((type != MOTE_MQTT_PUBACK && type != MOTE_MQTT_PUBREC && type != MOTE_MQTT_PUBREL &&
         type != MOTE_MQTT_PUBCOMP) ||
        id == 0)
        return MOTE_ERR_INVAL;
    put8(&w, ((unsigned)type << 4) | (type == MOTE_MQTT_PUBREL ? 0x02u : 0u));
    put8(&w, 2);
    put16(&w, id);
    return done(&w);
}

int mote_mqtt_enc_empty(uint8_t *buf, size_t cap, enum mote_mqtt_type type)
{
    struct wr w = {buf, cap, 0, false};

    if (type != MOTE_MQTT_PINGREQ && type != MOTE_MQTT_PINGRESP && type != MOTE_MQTT_DISCONNECT)
        return MOTE_ERR_INVAL;
    put8(&w, (unsigned)type << 4);
    put8(&w, 0);
    return done(&w);
}

/* ---- decoding ---------------------------------------------------------- */

/* How much of topic t[0..n) to keep when it is over MOTE_MQTT_TOPIC_MAX:
 * the limit, moved back to a character's start. */
static size_t topic_keep(const uint8_t *t, size_t n)
{
    size_t k = n > MOTE_MQTT_TOPIC_MAX ? MOTE_MQTT_TOPIC_MAX : n;

    if (k < n) {
        while (k > 0 && (t[k] & 0xC0u) == 0x80u)
            k--;
    }
    return k;
}

static unsigned get16(const uint8_t *p)
{
    return ((unsigned)p[0] << 8) | p[1];
}

static int bad(const char **why, const char *text)
{
    *why = text;
    return MOTE_ERR_BADMSG;
}

/* A PUBLISH's body: topic, packet id, payload. */
static int dec_publish(uint8_t hdr, uint8_t *body, size_t len, struct mote_mqtt_packet *o,
                       const char **why)
{
    size_t tn, at;

    o->qos = (uint8_t)((hdr >> 1) & 3u);
    o->retain = (hdr & 1u) != 0;
    o->dup = (hdr & 8u) != 0;
    if (o->qos == 3)
        return bad(why, "a PUBLISH with QoS 3");
    if (o->qos == 0 && o->dup)
        return bad(why, "a QoS 0 PUBLISH with the DUP flag");
    if (len < 2)
        return bad(why, "a PUBLISH too short for its topic");
    tn = get16(body);
    at = 2 + tn + (o->qos > 0 ? 2u : 0u);
    if (at > len)
        return bad(why, "a PUBLISH shorter than its topic and packet id");
    if (!topic_ok((const char *)body + 2, tn))
        return bad(why, "a PUBLISH whose topic is empty, not UTF-8, or has a NUL or a wildcard");
    if (o->qos > 0) {
        o->id = (uint16_t)get16(body + 2 + tn);
        if (o->id == 0)
            return bad(why, "a PUBLISH with packet id 0");
    }
    o->topic_len = tn;
    o->len = len - at;
    o->oversize = tn > MOTE_MQTT_TOPIC_MAX || o->len > MOTE_MQTT_PAYLOAD_MAX;
    /* The topic moves 2 bytes down to end in a NUL (the packet id or
     * the payload follow it, both already read or still in place). */
    if (o->oversize) {
        size_t keep = topic_keep(body + 2, tn);

        memmove(body, body + 2, keep);
        body[keep] = '\0';
        o->payload = NULL;
    } else {
        o->payload = body + at;
        body[len] = '\0';
        memmove(body, body + 2, tn);
        body[tn] = '\0';
    }
    o->topic = (const char *)body;
    return 0;
}

int mote_mqtt_decode(uint8_t hdr, uint8_t *body, size_t len, struct mote_mqtt_packet *o,
                     const char **why)
{
    unsigned type = hdr >> 4, flags = hdr & 15u;
    size_t i;

    memset(o, 0, sizeof(*o));
    o->type = (uint8_t)type;
    o->flags = (uint8_t)flags;
    switch (type) {
    case MOTE_MQTT_PUBLISH:
        return dec_publish(hdr, body, len, o, why);
    case MOTE_MQTT_CONNACK:
        if (flags != 0 || len != 2)
            return bad(why, "a CONNACK with reserved flags or not 2 bytes long");
        if ((body[0] & 0xFEu) != 0)
            return bad(why, "a CONNACK with reserved acknowledge flags set");
        if (body[1] > MOTE_MQTT_REFUSED_UNAUTHORIZED)
            return bad(why, "a CONNACK with an unknown return code");
        o->session_present = (body[0] & 1u) != 0;
        o->code = body[1];
        if (o->code != 0 && o->session_present)
            return bad(why, "a CONNACK refusing the connection with a session present");
        return 0;
    case MOTE_MQTT_PUBACK:
    case MOTE_MQTT_PUBREC:
    case MOTE_MQTT_PUBREL:
    case MOTE_MQTT_PUBCOMP:
    case MOTE_MQTT_UNSUBACK:
        if (flags != (type == MOTE_MQTT_PUBREL ? 2u : 0u))
            return bad(why, "an acknowledgement with reserved flags set");
        if (len != 2)
            return bad(why, "an acknowledgement that is not 2 bytes long");
        o->id = (uint16_t)get16(body);
        if (o->id == 0)
            return bad(why, "an acknowledgement of packet id 0");
        return 0;
    case MOTE_MQTT_SUBACK:
        if (flags != 0 || len < 3)
            return bad(why, "a SUBACK with reserved flags or no return code");
        o->id = (uint16_t)get16(body);
        if (o->id == 0)
            return bad(why, "a SUBACK of packet id 0");
        for (i = 2; i < len; i++) {
            if (body[i] > 2 && body[i] != MOTE_MQTT_SUB_FAILURE)
                return bad(why, "a SUBACK with an unknown return code");
        }
        o->codes = body + 2;
        o->ncodes = len - 2;
        return 0;
    case MOTE_MQTT_PINGRESP:
        if (flags != 0 || len != 0)
            return bad(why, "a PINGRESP with reserved flags or a body");
        return 0;
    default:
        return bad(why, type == 0 || type == 15 ? "a packet of reserved type 0 or 15"
                                                : "a packet only a client sends "
                                                  "(CONNECT, SUBSCRIBE, PINGREQ, ...)");
    }
}

/* ---- the incremental parser ------------------------------------------------ */

void mote_mqtt_parser_init(struct mote_mqtt_parser *p)
{
    p->state = MOTE_MQTT_P_HDR;
    p->nlen = 0;
    p->err = 0;
    p->why = "";
    p->rem = p->got = p->tlen = 0;
    p->skip_id = 0;
}

static int fail(struct mote_mqtt_parser *p, const char *why)
{
    p->err = MOTE_ERR_BADMSG;
    p->why = why;
    return p->err;
}

/* The packet is complete: decode it (or report what was skipped). */
static int finish(struct mote_mqtt_parser *p, struct mote_mqtt_packet *out)
{
    int rc;

    p->state = MOTE_MQTT_P_HDR;
    if (p->got == p->rem && p->rem <= MOTE_MQTT_RXBUF) {
        rc = mote_mqtt_decode(p->hdr, p->buf, p->rem, out, &p->why);
        if (rc < 0)
            p->err = rc;
        return rc < 0 ? rc : 1;
    }
    /* An oversize PUBLISH read through: what it was, from what was kept. */
    {
        unsigned qos = (p->hdr >> 1) & 3u;
        size_t keep;

        memset(out, 0, sizeof(*out));
        out->type = MOTE_MQTT_PUBLISH;
        out->flags = (uint8_t)(p->hdr & 15u);
        out->qos = (uint8_t)qos;
        out->retain = (p->hdr & 1u) != 0;
        out->dup = (p->hdr & 8u) != 0;
        out->oversize = true;
        if (p->tlen < 1 || 2 + p->tlen + (qos > 0 ? 2u : 0u) > p->rem)
            return fail(p, "a PUBLISH shorter than its topic and packet id");
        if (qos > 0 && p->skip_id == 0)
            return fail(p, "a PUBLISH with packet id 0");
        out->id = p->skip_id;
        out->topic_len = p->tlen;
        out->len = p->rem - 2 - p->tlen - (qos > 0 ? 2u : 0u);
        /* The topic's kept part (the whole topic when it is within the
         * limit) is held to a topic's rules like any other. */
        keep = topic_keep(p->buf + 2, p->tlen);
        if (!topic_ok((const char *)p->buf + 2, keep))
            return fail(p, "a PUBLISH whose topic is empty, not UTF-8, or has a NUL or a wildcard");
        memmove(p->buf, p->buf + 2, keep);
        p->buf[keep] = '\0';
        out->topic = (const char *)p->buf;
        return 1;
    }
}

/* Skipping: the topic's length and the packet id are picked out of the
 * bytes as they pass (the topic itself is kept only as far as the buffer
 * goes: it is only reported). */
static void skim(struct mote_mqtt_parser *p, const uint8_t *d, size_t k)
{
    uint32_t at = p->got, i;

    for (i = 0; i < k && at + i < 2; i++)
        p->tlen = (p->tlen << 8) | d[i];
    if (at + k > 2) {
        uint32_t id0 = 2 + p->tlen; /* where the packet id starts */

        if (id0 >= at && id0 < at + k)
            p->skip_id = (uint16_t)((unsigned)d[id0 - at] << 8 | (p->skip_id & 0xFFu));
        if (id0 + 1 >= at && id0 + 1 < at + k)
            p->skip_id = (uint16_t)((p->skip_id & 0xFF00u) | d[id0 + 1 - at]);
    }
    if (at < MOTE_MQTT_RXBUF) {
        uint32_t take = k < MOTE_MQTT_RXBUF - at ? (uint32_t)k : MOTE_MQTT_RXBUF - at;

        memcpy(p->buf + at, d, take);
    }
}

int mote_mqtt_parse(struct mote_mqtt_parser *p, const uint8_t *data, size_t n, size_t *used,
                    struct mote_mqtt_packet *out)
{
    size_t i = 0;

    *used = 0;
    if (p->err < 0)
        return p->err;
    while (i < n) {
        switch (p->state) {
        case MOTE_MQTT_P_HDR:
            p->hdr = data[i++];
            p->nlen = 0;
            p->rem = p->got = p->tlen = 0;
            p->skip_id = 0;
            p->state = MOTE_MQTT_P_LEN;
            break;
        case MOTE_MQTT_P_LEN: {
            int rc;

            p->lenb[p->nlen++] = data[i++];
            rc = mote_mqtt_varint_get(p->lenb, p->nlen, &p->rem);
            if (rc < 0 || (rc == 0 && p->nlen == 4)) {
                *used = i;
                return fail(p, "a remaining length longer than 4 bytes");
            }
            if (rc == 0)
                break;
            if (p->rem > MOTE_MQTT_RXBUF) {
                if ((p->hdr >> 4) != MOTE_MQTT_PUBLISH) {
                    *used = i;
                    return fail(p, "a control packet longer than any a broker sends");
                }
                if (((p->hdr >> 1) & 3u) == 3) {
                    *used = i;
                    return fail(p, "a PUBLISH with QoS 3");
                }
                p->state = MOTE_MQTT_P_SKIP;
            } else {
                p->state = MOTE_MQTT_P_BODY;
            }
            if (p->rem == 0) {
                int r;

                *used = i;
                r = finish(p, out);
                return r;
            }
            break;
        }
        case MOTE_MQTT_P_BODY:
        case MOTE_MQTT_P_SKIP: {
            size_t k = n - i < p->rem - p->got ? n - i : p->rem - p->got;

            if (p->state == MOTE_MQTT_P_BODY)
                memcpy(p->buf + p->got, data + i, k);
            else
                skim(p, data + i, k);
            p->got += (uint32_t)k;
            i += k;
            if (p->got == p->rem) {
                *used = i;
                return finish(p, out);
            }
            break;
        }
        default:
            *used = i;
            return fail(p, "parser state broken");
        }
    }
    *used = i;
    return 0;
}
