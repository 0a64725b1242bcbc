/*
 * mote_mqtt.h - an MQTT 3.1.1 client in three layers, each usable alone:
 *
 *  1. the codec (src/mqtt_codec.c): encoders for the packets a client
 *     sends, an incremental parser for the ones a broker sends (bytes in
 *     any split, one at a time too), and a decoder that checks each
 *     packet strictly. No state beyond the parser, no I/O.
 *  2. the session (src/mqtt_session.c): the protocol's state without I/O
 *     (sans-I/O). Bytes from the connection go in (mote_mqtt_sess_feed),
 *     bytes to send come out (mote_mqtt_sess_out / _sent), time is passed
 *     in; it keeps the outgoing queue and its in-flight table (QoS 1
 *     packets resent with DUP after a reconnect), the incoming messages
 *     the application has not acknowledged yet (acknowledgements leave in
 *     the order the messages came), keep-alive and subscriptions.
 *  3. the driver (src/mqtt.c): a loop job that connects to mqtt://HOST:PORT
 *     or mqtts://HOST:PORT through the port (non-blocking resolve and
 *     connect, TLS with the same trust as the model client), runs the
 *     session over it, and reconnects with capped exponential backoff and
 *     jitter. It never blocks the loop and does bounded work per step.
 *
 * Memory: everything is in caller-owned structs sized by the MOTE_MQTT_*
 * macros of mote_config.h; nothing is allocated. struct mote_mqtt holds
 * the session (its receive buffer of MOTE_MQTT_PAYLOAD_MAX +
 * MOTE_MQTT_TOPIC_MAX bytes and its outgoing queue of MOTE_MQTT_OUT_MAX)
 * and a read buffer of MOTE_MQTT_RECV_BUF: about 53 KiB with the defaults
 * (docs/MQTT.md). The driver uses one loop watch, one timer and, for
 * mqtts://, one of the MOTE_TLS_SESSIONS for as long as it runs.
 *
 * Delivery: incoming QoS 1 and 2 messages are acknowledged only when the
 * application says so (mote_mqtt_ack), e.g. once it has stored the
 * message, so a message is never lost between the broker and storage.
 * Both are at least once for the application: a message the broker sends
 * again (after a reconnect) while the application still holds it is not
 * delivered twice, but one whose acknowledgement was lost with a
 * connection, or a redelivery to a new process, is; the application
 * recognises it by its content (a request id). Subscribing at QoS 1 at
 * most keeps a broker from sending QoS 2 at all.
 *
 * Threading: one thread, the loop's; no call blocks.
 */
#ifndef MOTE_MQTT_H
#define MOTE_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_dial.h"
#include "mote/mote_loop.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the codec ----------------------------------------------------------- */

/* Control packet types (the high nibble of a packet's first byte). */
enum mote_mqtt_type {
    MOTE_MQTT_CONNECT = 1,
    MOTE_MQTT_CONNACK = 2,
    MOTE_MQTT_PUBLISH = 3,
    MOTE_MQTT_PUBACK = 4,
    MOTE_MQTT_PUBREC = 5,
    MOTE_MQTT_PUBREL = 6,
    MOTE_MQTT_PUBCOMP = 7,
    MOTE_MQTT_SUBSCRIBE = 8,
    MOTE_MQTT_SUBACK = 9,
    MOTE_MQTT_UNSUBSCRIBE = 10,
    MOTE_MQTT_UNSUBACK = 11,
    MOTE_MQTT_PINGREQ = 12,
    MOTE_MQTT_PINGRESP = 13,
    MOTE_MQTT_DISCONNECT = 14,
};

/* CONNACK return codes. */
enum mote_mqtt_connack {
    MOTE_MQTT_ACCEPTED = 0,
    MOTE_MQTT_REFUSED_VERSION = 1,      /* unacceptable protocol version */
    MOTE_MQTT_REFUSED_ID = 2,           /* identifier rejected */
    MOTE_MQTT_REFUSED_UNAVAILABLE = 3,  /* server unavailable */
    MOTE_MQTT_REFUSED_CREDENTIALS = 4,  /* bad user name or password */
    MOTE_MQTT_REFUSED_UNAUTHORIZED = 5, /* not authorized */
};

/* SUBACK's code for a refused subscription. */
#define MOTE_MQTT_SUB_FAILURE 0x80u

/* The largest remaining length the 4-byte varint holds. */
#define MOTE_MQTT_VARINT_MAX 268435455u

/* "accepted", "unacceptable protocol version", ... ("unknown" past 5). */
const char *mote_mqtt_connack_name(unsigned code);

/* "CONNECT", "PUBLISH", ... ("?" for 0 and 15). */
const char *mote_mqtt_type_name(unsigned type);

/* Writes `v` (at most MOTE_MQTT_VARINT_MAX) as a remaining length into
 * out[0..4). Returns the bytes used (1..4) or MOTE_ERR_RANGE. */
int mote_mqtt_varint_put(uint8_t *out, uint32_t v);

/* Reads a remaining length from in[0..n). Returns the bytes used (1..4)
 * and sets *v; 0 if `n` bytes are not enough yet; MOTE_ERR_BADMSG if a
 * fifth byte would be needed. */
int mote_mqtt_varint_get(const uint8_t *in, size_t n, uint32_t *v);

/* What CONNECT says. Strings are NUL-terminated UTF-8 without NUL (the
 * password is binary: `password_len` bytes). */
struct mote_mqtt_connect {
    const char *client_id;     /* "" only with clean_session */
    bool clean_session;        /* false: the broker keeps the session */
    uint16_t keep_alive_s;     /* 0: none */
    const char *will_topic;    /* NULL: no will */
    const void *will_payload;  /* will_len bytes (at most 65535) */
    size_t will_len;
    uint8_t will_qos;          /* 0..2 */
    bool will_retain;
    const char *username;      /* NULL: none */
    const void *password;      /* NULL: none (needs a user name in 3.1.1) */
    size_t password_len;
};

/* Encoders: each writes one whole packet into buf[0..cap) and returns its
 * length, or MOTE_ERR_TOO_LARGE (does not fit `cap`, or a field over
 * 65535 bytes) or MOTE_ERR_INVAL (a field the protocol forbids: a topic
 * name that is empty, not UTF-8, has a NUL or a wildcard; a bad filter;
 * a QoS over 2; packet id 0 where one is needed; a password without a
 * user name; an empty client id with a persistent session). Nothing is
 * written past `cap`; on an error buf's content is unspecified. */
int mote_mqtt_enc_connect(uint8_t *buf, size_t cap, const struct mote_mqtt_connect *c);

/* PUBLISH of `len` bytes of `payload` on `topic`; `id` (not 0) for QoS 1
 * and 2, ignored for QoS 0; `dup` only with QoS 1 and 2. */
int mote_mqtt_enc_publish(uint8_t *buf, size_t cap, const char *topic, const void *payload,
                          size_t len, unsigned qos, bool retain, bool dup, uint16_t id);

/* SUBSCRIBE to one `filter` ('+' and '#' as wildcards) at `qos` at most. */
int mote_mqtt_enc_subscribe(uint8_t *buf, size_t cap, uint16_t id, const char *filter,
                            unsigned qos);

/* PUBACK, PUBREC, PUBREL or PUBCOMP for packet `id`. */
int mote_mqtt_enc_ack(uint8_t *buf, size_t cap, enum mote_mqtt_type type, uint16_t id);

/* PINGREQ, PINGRESP or DISCONNECT (the packets without a body). */
int mote_mqtt_enc_empty(uint8_t *buf, size_t cap, enum mote_mqtt_type type);

/* True if `topic` (NUL-terminated) can be published to: 1..65535 bytes of
 * UTF-8 without NUL, '+' or '#'. */
bool mote_mqtt_topic_valid(const char *topic);

/* True if `filter` can be subscribed to: as a topic, with '+' standing
 * alone in its level and '#' alone in the last one. */
bool mote_mqtt_filter_valid(const char *filter);

/* A packet from the broker, as decoded. Pointers are into the parser's
 * buffer, valid until the next mote_mqtt_parse on it. */
struct mote_mqtt_packet {
    uint8_t type;             /* enum mote_mqtt_type */
    uint8_t flags;            /* the first byte's low nibble */
    uint16_t id;              /* packet id (PUBLISH QoS > 0, acks, SUBACK) */
    /* CONNACK */
    bool session_present;
    uint8_t code;             /* enum mote_mqtt_connack */
    /* SUBACK: one code per filter (0..2 granted, MOTE_MQTT_SUB_FAILURE) */
    const uint8_t *codes;
    size_t ncodes;
    /* PUBLISH */
    uint8_t qos;
    bool retain, dup;
    const char *topic;        /* NUL-terminated (cut at MOTE_MQTT_TOPIC_MAX if oversize) */
    size_t topic_len;         /* the topic's whole length */
    const uint8_t *payload;   /* NUL-terminated; NULL when oversize */
    size_t len;               /* the payload's length (also when oversize) */
    bool oversize;            /* topic over MOTE_MQTT_TOPIC_MAX or payload over
                               * MOTE_MQTT_PAYLOAD_MAX: skipped, framing kept */
};

/* Checks and decodes one packet a broker sent: its first byte `hdr` and
 * body `body[0..len)` (the body must have one writable byte past `len`:
 * topic and payload get NUL-terminated in place). Returns 0, or
 * MOTE_ERR_BADMSG with a static explanation in *why: a packet a broker
 * never sends (CONNECT, SUBSCRIBE, ...), reserved flags set, a length that
 * does not match the type, QoS 3, packet id 0, a topic that is empty, not
 * UTF-8 or holds a NUL or a wildcard, an unknown return code. A PUBLISH
 * whose topic or payload is over the limits comes back with `oversize`
 * (its topic cut) rather than an error. */
int mote_mqtt_decode(uint8_t hdr, uint8_t *body, size_t len, struct mote_mqtt_packet *out,
                     const char **why);

/* The incremental parser. */
enum mote_mqtt_pstate { MOTE_MQTT_P_HDR = 0, MOTE_MQTT_P_LEN, MOTE_MQTT_P_BODY, MOTE_MQTT_P_SKIP };

#define MOTE_MQTT_RXBUF (MOTE_MQTT_TOPIC_MAX + MOTE_MQTT_PAYLOAD_MAX + 4)

struct mote_mqtt_parser {
    uint8_t state;            /* enum mote_mqtt_pstate */
    uint8_t hdr;              /* the packet's first byte */
    uint8_t nlen;             /* remaining-length bytes read */
    uint8_t lenb[4];
    int err;                  /* first error, sticky */
    const char *why;          /* its explanation */
    uint32_t rem;             /* the packet's remaining length */
    uint32_t got;             /* body bytes taken */
    /* skipping an oversize PUBLISH: its topic length and packet id */
    uint32_t tlen;
    uint16_t skip_id;
    uint8_t buf[MOTE_MQTT_RXBUF + 1];
};

void mote_mqtt_parser_init(struct mote_mqtt_parser *p);

/* Takes bytes from data[0..n). Returns 1 when a packet is complete (in
 * *out; *used says how many bytes it took, the rest is for the next
 * call), 0 when all `n` were taken and the packet is not complete yet
 * (*used = n), or the sticky error MOTE_ERR_BADMSG (p->why explains).
 * An oversize PUBLISH is read through and skipped without being kept, so
 * the next packet parses normally. */
int mote_mqtt_parse(struct mote_mqtt_parser *p, const uint8_t *data, size_t n, size_t *used,
                    struct mote_mqtt_packet *out);

/* ---- events (session and driver) ------------------------------------------ */

enum mote_mqtt_ev {
    MOTE_MQTT_EV_CONNECTED = 1, /* CONNACK accepted: session_present */
    MOTE_MQTT_EV_SUBSCRIBED,    /* SUBACK: filter, granted (MOTE_MQTT_SUB_FAILURE: refused) */
    MOTE_MQTT_EV_MESSAGE,       /* a message: topic, payload, len, qos, retain, dup,
                                 * oversize, ack (QoS 1/2: pass it to mote_mqtt_ack) */
    MOTE_MQTT_EV_PUBLISHED,     /* the broker acknowledged QoS 1 packet `id` */
    MOTE_MQTT_EV_ROOM,          /* a publish refused with MOTE_ERR_FULL may be tried again */
    MOTE_MQTT_EV_OFFLINE,       /* a connection ended or an attempt failed: text, err,
                                 * retry_ms (0: no retry: the client stopped) */
    MOTE_MQTT_EV_NOTE,          /* something worth a log line: text */
};

struct mote_mqtt_event {
    enum mote_mqtt_ev type;
    bool session_present;
    const char *filter;
    unsigned granted;
    const char *topic;          /* NUL-terminated */
    const uint8_t *payload;     /* NUL-terminated; NULL if oversize */
    size_t len;
    unsigned qos;
    bool retain, dup, oversize;
    uint32_t ack;               /* handle for mote_mqtt_ack (0 for QoS 0) */
    uint16_t id;
    const char *text;           /* a sentence for a log (NUL-terminated) */
    int err;                    /* OFFLINE: why, an enum mote_err */
    uint32_t retry_ms;
};

/* The application's callback. For MOTE_MQTT_EV_MESSAGE it may return
 * MOTE_ERR_AGAIN: "not now": the message is kept and offered again after
 * mote_mqtt_resume (or mote_mqtt_sess_resume); the client reads nothing
 * more meanwhile. Any other return is ignored. It may call publish, ack
 * and disconnect; it must not free the client. */
typedef int (*mote_mqtt_event_fn)(void *arg, const struct mote_mqtt_event *ev);

/* ---- the session (sans-I/O) ---------------------------------------------- */

struct mote_mqtt_sub {
    const char *filter;
    uint8_t qos;                /* the most wanted: 0 or 1 (2 is allowed too) */
};

/* What a client is; every pointer must outlive the client. */
struct mote_mqtt_conf {
    const char *url;            /* mqtt://HOST[:PORT] (1883) or mqtts://HOST[:PORT] (8883);
                                 * the driver only */
    const char *client_id;
    const char *username;       /* NULL: none */
    const char *password;       /* NULL: none */
    const char *ca_file;        /* mqtts: NULL uses the port's default roots (mote_tls.h) */
    bool clean_session;         /* default false: a persistent session */
    uint16_t keep_alive_s;
    const char *will_topic;     /* NULL: no will */
    const char *will_payload;   /* will_len bytes */
    size_t will_len;
    uint8_t will_qos;
    bool will_retain;
    struct mote_mqtt_sub subs[MOTE_MQTT_SUBS_MAX];
    unsigned nsubs;
    uint32_t ping_timeout_ms;
    uint32_t connect_timeout_ms; /* the driver only */
    uint32_t backoff_ms;         /* the driver only */
    uint32_t backoff_max_ms;     /* the driver only */
    const char *cert_file;       /* mqtts: a client certificate (PEM chain) for a broker that
                                  * asks for one (mutual TLS: AWS IoT Core), with */
    const char *key_file;        /*   its private key (PEM); NULL, NULL: none. The driver
                                  * only (the port's tls_connect) */
};

/* Fills the defaults (MOTE_MQTT_* of mote_config.h; no will, no
 * subscriptions, clean_session false). */
void mote_mqtt_conf_defaults(struct mote_mqtt_conf *c);

enum mote_mqtt_sstate {
    MOTE_MQTT_S_OFFLINE = 0,    /* no connection */
    MOTE_MQTT_S_CONNECTING,     /* CONNECT queued or sent, no CONNACK yet */
    MOTE_MQTT_S_ONLINE,         /* CONNACK accepted */
    MOTE_MQTT_S_DONE,           /* DISCONNECT sent: close the connection */
};

/* An outgoing PUBLISH held in the queue. */
struct mote_mqtt_out {
    uint32_t off, len;          /* its bytes in outbuf */
    uint16_t id;                /* packet id (QoS 1), 0 for QoS 0 */
    uint8_t qos;
    bool sent;                  /* all of it went out on this connection */
    bool touched;               /* some of it went out (on any connection) */
};

/* An incoming QoS 1 or 2 message not finished yet. */
enum mote_mqtt_rxstate {
    MOTE_MQTT_RX_FREE = 0,
    MOTE_MQTT_RX_HELD,          /* delivered, the application has not acknowledged */
    MOTE_MQTT_RX_ACK,           /* acknowledged: PUBACK (QoS 1) or PUBREC (QoS 2) to send */
    MOTE_MQTT_RX_COMP,          /* QoS 2: the broker's PUBREL came, PUBCOMP to send */
    MOTE_MQTT_RX_REC,           /* QoS 2: PUBREC sent, the broker's PUBREL not yet come: the
                                 * same id sent again is not delivered again */
};

struct mote_mqtt_rx {
    uint8_t state;              /* enum mote_mqtt_rxstate */
    uint8_t qos;
    bool inctl;                 /* its acknowledgement is in ctl, being written */
    uint16_t id;
    uint16_t gen;               /* part of the ack handle */
    uint32_t seq;               /* arrival order */
};

/* Why a parsed packet waits (struct mote_mqtt_sess.held). */
#define MOTE_MQTT_HOLD_ROOM 1 /* every slot for incoming messages is held */
#define MOTE_MQTT_HOLD_APP 2  /* the application said "not now" */

/* Where the chunk being written comes from. */
enum { MOTE_MQTT_W_NONE = 0, MOTE_MQTT_W_CTL, MOTE_MQTT_W_OUT };

struct mote_mqtt_sess {
    const struct mote_mqtt_conf *conf;
    mote_mqtt_event_fn on_event;
    void *arg;
    uint8_t state;              /* enum mote_mqtt_sstate */
    bool closing;               /* mote_mqtt_sess_disconnect was called */
    bool session_present;
    bool want_room;             /* a publish was refused: EV_ROOM when there is room */
    uint32_t room_need;         /* the bytes it needed */
    uint8_t held;               /* a parsed packet waits: MOTE_MQTT_HOLD_* */
    bool ping_out;              /* a PINGREQ waits for its PINGRESP */
    bool ping_due;              /* a PINGREQ is to be sent */
    bool disc;                  /* DISCONNECT is in ctl */
    uint32_t last_tx, last_rx, ping_sent, ping_due_at; /* ms */
    uint16_t next_id;
    uint32_t rx_seq;
    uint16_t rx_gen;
    uint32_t sub_sent;          /* bit i: subs[i] was asked for on this connection */
    uint16_t sub_id[MOTE_MQTT_SUBS_MAX];
    int err;                    /* the last protocol error */
    char errmsg[MOTE_JOB_ERRMSG_LEN];
    /* writing: the current chunk stays the same until it is all sent */
    uint8_t w_src;
    uint32_t w_off, w_len, w_done;
    unsigned w_first, w_count; /* out entries in the chunk */
    /* control packets */
    uint32_t ctl_len;
    uint8_t ctl[MOTE_MQTT_CTL_MAX];
    /* the outgoing queue, in order */
    unsigned nout;
    uint32_t out_end;
    struct mote_mqtt_out out[MOTE_MQTT_INFLIGHT];
    struct mote_mqtt_rx rx[MOTE_MQTT_RX_INFLIGHT];
    struct mote_mqtt_packet pkt; /* the held packet */
    struct mote_mqtt_parser parser;
    uint8_t outbuf[MOTE_MQTT_OUT_MAX];
};

/* Prepares `s` for `conf`. Returns 0, MOTE_ERR_INVAL (a field the protocol
 * forbids: s->errmsg says which) or MOTE_ERR_TOO_LARGE (CONNECT or a
 * SUBSCRIBE over MOTE_MQTT_CTL_MAX, or a will over 65535 bytes). */
int mote_mqtt_sess_init(struct mote_mqtt_sess *s, const struct mote_mqtt_conf *conf,
                        mote_mqtt_event_fn fn, void *arg);

/* A connection is up (TCP and TLS): CONNECT is queued, the parser reset.
 * `now` is the caller's monotonic ms, as in every call below. */
void mote_mqtt_sess_start(struct mote_mqtt_sess *s, uint32_t now);

/* The connection is gone: what was sent of the QoS 1 packets is kept to
 * be sent again with DUP, QoS 0 packets already sent are dropped, a
 * partly written chunk is forgotten (the next connection starts clean). */
void mote_mqtt_sess_lost(struct mote_mqtt_sess *s);

/* Bytes from the connection. Returns how many it took (fewer than `n`
 * when delivery is paused: the application returned MOTE_ERR_AGAIN, or
 * every MOTE_MQTT_RX_INFLIGHT slot is held, which is tried again here
 * and by mote_mqtt_sess_resume; offer the rest later), or
 * < 0: a protocol error (MOTE_ERR_BADMSG malformed, MOTE_ERR_PROTO a valid
 * packet that does not fit the conversation, MOTE_ERR_AUTH or
 * MOTE_ERR_CONNREFUSED a refused CONNACK); s->errmsg explains, and the
 * connection must be closed. */
int mote_mqtt_sess_feed(struct mote_mqtt_sess *s, uint32_t now, const uint8_t *data, size_t n);

/* True while delivery is paused (see above). */
bool mote_mqtt_sess_paused(const struct mote_mqtt_sess *s);

/* Offers a held message again (after the application said "not now").
 * Returns 0, or < 0 as mote_mqtt_sess_feed. */
int mote_mqtt_sess_resume(struct mote_mqtt_sess *s, uint32_t now);

/* The next bytes to write: sets *p and returns their count (0: nothing to
 * send now). The same bytes come back until mote_mqtt_sess_sent says they
 * went out (a TLS write that would block must be repeated with the same
 * buffer). */
size_t mote_mqtt_sess_out(struct mote_mqtt_sess *s, uint32_t now, const uint8_t **p);

/* `n` bytes of the last mote_mqtt_sess_out went out. */
void mote_mqtt_sess_sent(struct mote_mqtt_sess *s, uint32_t now, size_t n);

/* Keep-alive: queues a PINGREQ when one is due. Returns the ms until it
 * wants to be called again (UINT32_MAX: no deadline), or MOTE_ERR_TIMEDOUT
 * when a PINGREQ had no answer within the ping timeout (s->errmsg). */
int64_t mote_mqtt_sess_tick(struct mote_mqtt_sess *s, uint32_t now);

/* Queues a PUBLISH (QoS 0 or 1) whether online or not (it goes out when
 * the connection is up). Returns the packet id (QoS 1, >= 1) or 0 (QoS
 * 0), or MOTE_ERR_INVAL (topic, QoS), MOTE_ERR_NOTSUP (QoS 2),
 * MOTE_ERR_TOO_LARGE (topic over MOTE_MQTT_TOPIC_MAX, payload over
 * MOTE_MQTT_PAYLOAD_MAX), MOTE_ERR_FULL (no room now: MOTE_MQTT_EV_ROOM
 * tells when), MOTE_ERR_SHUTDOWN (disconnecting). */
int mote_mqtt_sess_publish(struct mote_mqtt_sess *s, const char *topic, const void *payload,
                           size_t len, unsigned qos, bool retain);

/* The application is done with message `ack` (the event's handle): its
 * PUBACK (or PUBREC) is queued; acknowledgements leave in the order the
 * messages arrived. Returns 0, MOTE_ERR_ALREADY (acknowledged before) or
 * MOTE_ERR_STALE (the broker lost the session since, or not a handle). */
int mote_mqtt_sess_ack(struct mote_mqtt_sess *s, uint32_t ack);

/* Begins a clean end: no new publish is taken; once everything queued
 * went out (and QoS 1 was acknowledged) DISCONNECT is sent and the state
 * becomes MOTE_MQTT_S_DONE. */
void mote_mqtt_sess_disconnect(struct mote_mqtt_sess *s);

/* Outgoing packets held, and of them the QoS 1 ones not acknowledged. */
void mote_mqtt_sess_counts(const struct mote_mqtt_sess *s, unsigned *queued, unsigned *unacked);

/* ---- the driver (a loop job) ---------------------------------------------- */

enum mote_mqtt_phase {
    MOTE_MQTT_PH_IDLE = 0,
    MOTE_MQTT_PH_RESOLVE,
    MOTE_MQTT_PH_CONNECT,
    MOTE_MQTT_PH_HANDSHAKE,
    MOTE_MQTT_PH_MQTT,          /* the session runs (CONNECT sent, or online) */
    MOTE_MQTT_PH_BACKOFF,
    MOTE_MQTT_PH_DONE,
};

const char *mote_mqtt_phase_name(enum mote_mqtt_phase p);

struct mote_mqtt {
    const struct mote_mqtt_conf *conf;
    /* the broker */
    bool tls;
    uint16_t port;
    char host[256];
    /* the job */
    struct mote_loop *loop;
    mote_job_id job;
    uint8_t phase;              /* enum mote_mqtt_phase */
    bool stopping;              /* mote_mqtt_disconnect was called */
    bool resume;                /* mote_mqtt_resume was called */
    uint32_t stop_deadline;
    uint32_t fails;             /* attempts in a row that failed or did not last */
    uint32_t online_at;         /* when the session came online (0: not this time) */
    bool was_online;
    uint32_t deadline;          /* of the connection attempt, or of the backoff */
    uint32_t connects;          /* connections that came online, in all */
    /* the connection */
    int fd, tlsh;
    struct mote_dial dial;      /* lookup, connect, TLS (dial.c) */
    mote_watch_id watch;
    mote_timer_id timer;
    unsigned want;              /* MOTE_POLL_* a TLS call asked for */
    uint32_t r_off, r_len;
    char errmsg[MOTE_JOB_ERRMSG_LEN];
    struct mote_mqtt_sess sess;
    uint8_t rbuf[MOTE_MQTT_RECV_BUF];
};

/* Prepares `c` for `conf` (which must outlive it), reporting to `fn`.
 * Returns 0, MOTE_ERR_CONFIG (a bad URL: c->errmsg says why) or
 * mote_mqtt_sess_init's errors (c->errmsg). Never blocks. */
int mote_mqtt_init(struct mote_mqtt *c, const struct mote_mqtt_conf *conf, mote_mqtt_event_fn fn,
                   void *arg);

/* Spawns the client's job on `loop` (cancel flag parent `parent`, NULL:
 * the loop's root). It connects at once and keeps reconnecting until
 * mote_mqtt_disconnect ends it (DONE) or it is cancelled (CANCELLED: the
 * connection is closed without DISCONNECT, so the broker publishes the
 * will, as for a crash). Once per mote_mqtt_init: again gives
 * MOTE_ERR_ALREADY. Otherwise returns mote_job_spawn's result; `job` may
 * be NULL. */
int mote_mqtt_start(struct mote_mqtt *c, struct mote_loop *loop, const struct mote_cancel *parent,
                    mote_job_id *job) MOTE_MUST_CHECK;

/* The job's ops, for a caller that spawns it itself (mote_mqtt_start
 * does). */
extern const struct mote_task_ops mote_mqtt_ops;

/* mote_mqtt_sess_publish through the job (which is woken). */
int mote_mqtt_publish(struct mote_mqtt *c, const char *topic, const void *payload, size_t len,
                      unsigned qos, bool retain);

/* mote_mqtt_sess_ack through the job (which is woken). */
int mote_mqtt_ack(struct mote_mqtt *c, uint32_t ack);

/* Offers a message held back by MOTE_ERR_AGAIN again, on the job's next
 * step. Returns 0. */
int mote_mqtt_resume(struct mote_mqtt *c);

/* Ends the client cleanly: what is queued (the caller's final retained
 * status, say) goes out and QoS 1 is acknowledged, then DISCONNECT (the
 * broker drops the will), then the connection closes and the job ends
 * DONE. If that is not done within `timeout_ms`, or the client is not
 * connected, the connection is closed without DISCONNECT at once (the
 * broker then publishes the will). Returns 0, or MOTE_ERR_ALREADY. */
int mote_mqtt_disconnect(struct mote_mqtt *c, uint32_t timeout_ms);

/* True while the session is online (CONNACK accepted). */
bool mote_mqtt_online(const struct mote_mqtt *c);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_MQTT_H */
