/*
 * serve_mqtt.h - what the MQTT front door's files share (internal):
 *
 *   serve_mqtt.c      its life: settings, the client's job and events, the
 *                     loop's turn, the shutdown
 *   serve_mqtt_in.c   requests from PREFIX/in: parsed, run once, waiting
 *   serve_mqtt_out.c  what goes to the broker: the conversations' events
 *                     (PREFIX/out/ID), errors, the status; the log
 *
 * The front door's state lives in struct mote_serve_mqtt's area.
 */
#ifndef MOTE_SERVE_MQTT_H
#define MOTE_SERVE_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_int.h"

/* A conversation's events on their way to PREFIX/out/ID. */
struct mq_out {
    bool used;
    bool live;              /* caught up and told: live events go out */
    struct serve_stream st; /* its journal and the next record to publish */
};

/* A request waiting for its conversation (unacknowledged). */
struct mq_wait {
    uint32_t ack;      /* the client's handle (0: QoS 0) */
    uint32_t off, len; /* its text in the pool */
    char rid[MOTE_JOURNAL_RID_MAX + 1];
    char conv[MOTE_CONV_ID_MAX];
};

enum mq_phase { MQ_OFF = 0, MQ_READY, MQ_RUN, MQ_DRAIN, MQ_STOP };

/* What a request asks (parsed from its JSON). */
enum mq_kind { MQ_TEXT = 1, MQ_APPROVE, MQ_CANCEL, MQ_LIST, MQ_READ, MQ_ELICIT };

/* A request, as parsed. */
struct mq_req {
    uint32_t ack;
    enum mq_kind kind;
    char rid[MOTE_JOURNAL_RID_MAX + 1];
    char conv[MOTE_CONV_ID_MAX];
    const char *text; /* MQ_TEXT: its text (sv->scratch or the pool) */
    size_t len;
};

/* A reply being built (serve_mqtt_reply.c): one at a time. */
struct mq_reply {
    uint8_t kind;      /* 0: none; MQ_LIST or MQ_READ */
    bool built;        /* the payload is complete: it waits for room to go */
    uint32_t ack;      /* its request's handle */
    uint32_t limit;    /* list: at most this many */
    uint32_t count;    /* list: entries so far */
    size_t len;        /* of the payload so far */
    uint64_t from, at; /* read: the record, and where in it */
    char rid[MOTE_JOURNAL_RID_MAX + 1];
    char conv[MOTE_CONV_ID_MAX];
    char cursor[MOTE_CONV_ID_MAX]; /* list: the last id written */
    struct serve_stream st;        /* read: the journal */
    char topic[MOTE_MQTT_TOPIC_MAX + 1];
    char pay[MOTE_MQTT_PAYLOAD_MAX + 1];
};

/* How an attempt at a request ended. */
enum mq_res {
    MQ_DONE = 0, /* acknowledged (done, refused with an error, or a repeat) */
    MQ_WAIT,     /* its conversation is busy (or no slot is free): later */
    MQ_LATER,    /* not now (shutting down): the broker keeps it */
};

struct mq {
    struct serve *sv;
    struct mote_mqtt *client;
    struct mote_mqtt_conf mc;
    uint8_t phase;   /* enum mq_phase */
    bool paused;     /* a message was answered "not now" */
    bool status_due; /* the online status waits for room */
    mote_job_id job;
    mote_timer_id kick;    /* waiting requests and late events, on the next turn */
    mote_timer_fn kick_fn; /* what the kick runs (serve_mqtt.c) */
    bool appr_due;         /* the approvals' summary changed (or found no room) */
    bool ha_due;           /* Home Assistant's announcements wait for room */
    bool ha_marked;        /* STATE/mqtt-discovery says what was announced */
    uint8_t ha_step;       /* 0: clear an earlier run's; 1: announce; 2: done */
    uint8_t ha_k;          /* the entity the step goes on with */
    uint32_t appr_hash;    /* the summary last published (FNV-1a; 0: none yet) */
    uint32_t connects;
    uint32_t lost_events; /* conversations whose events were left out (no slot) */
    unsigned nwait;
    uint32_t pool_used;
    struct mq_wait wait[MOTE_SERVE_MQTT_WAIT];
    /* the latest approvals and cancels done (their ids' hashes): a broker
     * sending one again does not cancel the next turn */
    uint64_t ctl_done[MOTE_SERVE_MQTT_WAIT];
    unsigned nctl;
    unsigned rr; /* the out stream served first next time */
    struct mq_out outs[MOTE_SERVE_MQTT_OUTS];
    char prefix[MOTE_MQTT_TOPIC_MAX + 1];
    char t_status[MOTE_MQTT_TOPIC_MAX + 1];
    char t_in[MOTE_MQTT_TOPIC_MAX + 1];
    char t_error[MOTE_MQTT_TOPIC_MAX + 1];
    char t_approvals[MOTE_MQTT_TOPIC_MAX + 1];
    char topic[MOTE_MQTT_TOPIC_MAX + 1];
    char pool[MOTE_SERVE_MQTT_WAIT_BYTES];
    char pay[MOTE_MQTT_PAYLOAD_MAX + 1];
    struct mq_reply reply; /* (its payload last: touched only when used) */
};

_Static_assert(sizeof(struct mq) <= sizeof(((struct mote_serve_mqtt *)0)->area),
               "MOTE_SERVE_MQTT_AREA_SIZE (mote_serve.h) is smaller than the front door's state");
_Static_assert(_Alignof(struct mq) <= _Alignof(max_align_t),
               "the front door's state needs more alignment than its area has");

static inline struct mq *mote_serve_mqtt_of(const struct serve *sv)
{
    return sv->conf.mqtt_url != NULL && sv->conf.mqtt != NULL
               ? (struct mq *)(void *)sv->conf.mqtt->area.bytes
               : NULL;
}

/* ---- serve_mqtt_out.c ---------------------------------------------------------- */

/* A line for the log: "mqtt: " and the parts (b, c may be NULL). */
void mote_serve_mqtt_say(struct mq *q, const char *a, const char *b, const char *c);
/* The kick (q->kick_fn) on the loop's next turn. */
void mote_serve_mqtt_kick(struct mq *q);
/* The retained status: "online" (reason NULL) or "offline" with a reason.
 * Returns 0 or the client's refusal (MOTE_ERR_FULL: no room now). */
int mote_serve_mqtt_status(struct mq *q, const char *state, const char *reason);
/* {"id", "conversation", "error": code, "message": a b c} on PREFIX/error.
 * Returns 0 or the client's refusal. */
int mote_serve_mqtt_error(struct mq *q, const char *rid, const char *conv, const char *code,
                          const char *a, const char *b, const char *c);
/* A request refused: the error on PREFIX/error and in the log, then the
 * request acknowledged. Returns MQ_DONE. */
enum mq_res mote_serve_mqtt_fail(struct mq *q, const struct mq_req *r, const char *code,
                                 const char *a, const char *b, const char *c);
/* The retained summary of the questions waiting (PREFIX/approvals), if it
 * changed since it was last published (or `force`, or `closing`: no
 * question can be answered while mote is away). Returns 0 or the
 * client's refusal (MOTE_ERR_FULL: q->appr_due stays set). */
int mote_serve_mqtt_approvals(struct mq *q, bool force, bool closing);
/* A new record of conversation `id` (the session's MOTE_EV_RECORD). */
void mote_serve_mqtt_record(struct mq *q, const char *id, uint64_t off, const char *line,
                            size_t len);
/* Publishes what the conversations behind have in their journals, as
 * far as the client's queue takes it. False when the queue is full. */
bool mote_serve_mqtt_pump(struct mq *q);
/* Lets an out stream go (its journal closed). */
void mote_serve_mqtt_out_free(struct mq *q, struct mq_out *o);

/* ---- serve_mqtt_in.c ------------------------------------------------------------ */

/* ---- serve_mqtt_ha.c ---------------------------------------------------------------- */

/* Home Assistant's discovery (conf.mqtt_discovery): an earlier run's
 * entities cleared where they no longer hold, then this run's announced
 * (each connection). Returns 0, or MOTE_ERR_FULL (no room now: call again
 * later). */
int mote_serve_mqtt_ha(struct mq *q);
/* A record of conversation `id`: an answer that ends a turn goes to the
 * retained PREFIX/last. */
void mote_serve_mqtt_last(struct mq *q, const char *id, uint64_t off, const char *line,
                          size_t len);

/* ---- serve_mqtt_reply.c --------------------------------------------------------- */

/* A "list" or "read" request (its object at token `t` of sv->json): the
 * reply begins (built over the next turns, then published on
 * PREFIX/reply/ID, then the request acknowledged). Returns MQ_DONE (begun,
 * or refused: said), or MQ_LATER (a reply is being built: the broker
 * keeps this one). */
enum mq_res mote_serve_mqtt_reply_take(struct mq *q, const struct mq_req *r, int t);
/* The reply under way goes on (the kick, a disk turn). Returns true while
 * it waits for a journal to be read. */
bool mote_serve_mqtt_reply_turn(struct mq *q);
/* Lets go of the reply under way (the server ends). */
void mote_serve_mqtt_reply_stop(struct mq *q);

/* A message on PREFIX/in. Returns 0, or MOTE_ERR_AGAIN for "not now"
 * (q->paused is set: the kick resumes the client). */
int mote_serve_mqtt_message(struct mq *q, const struct mote_mqtt_event *ev);
/* Tries the waiting requests again, in order. */
void mote_serve_mqtt_wait_run(struct mq *q);

#endif /* MOTE_SERVE_MQTT_H */
