/*
 * serve_mqtt_out.c - what mote serve's MQTT front door sends (serve_mqtt.h):
 * each conversation's events on PREFIX/out/ID, the same objects as the
 * HTTP event stream in an envelope ({"event": NAME, "data": ...}; a
 * record with its "offset"), the errors about requests on PREFIX/error,
 * the retained status; and the front door's log lines.
 *
 * Events go out as they come while the client's queue has room; when it
 * has none, the conversation's place in its journal is kept and its
 * records are read from there as room comes (the HTTP event streams do
 * the same with a slow reader): a subscriber may miss a live preview
 * (text, state), never a record, and gets the state (with the question
 * waiting, if any) once its conversation has caught up.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_mqtt.h"
#include "util.h"

void mote_serve_mqtt_say(struct mq *q, const char *a, const char *b, const char *c)
{
    char line[240];
    struct mote_sb sb;
    size_t i;

    if (q->sv->conf.log == NULL)
        return;
    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_s(&sb, "mqtt: ");
    mote_sb_join(&sb, a, b, c);
    /* a request's id comes from outside: one line, no control bytes */
    for (i = 0; i < sb.len; i++) {
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7F)
            line[i] = '?';
    }
    q->sv->conf.log(q->sv->conf.log_arg, line);
}

void mote_serve_mqtt_kick(struct mq *q)
{
    struct serve *sv = q->sv;

    if (q->kick == 0 && mote_timer_start(sv->loop, 0, q->kick_fn, q, 0, &q->kick) < 0)
        q->kick = 0;
}

/* ---- publishing ----------------------------------------------------------------- */

static int publish(struct mq *q, const char *topic, const char *p, size_t n, bool retain)
{
    int rc = mote_mqtt_publish(q->client, topic, p, n, 1, retain);

    return rc < 0 ? rc : 0;
}

/* The retained status: online (with what a sender wants to know) or
 * offline with a reason. */
int mote_serve_mqtt_status(struct mq *q, const char *state, const char *reason)
{
    struct serve *sv = q->sv;
    struct mote_sb k;
    struct mote_jw w;

    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "state", state);
    if (reason != NULL) {
        mote_jw_kstr(&w, "reason", reason);
    } else {
        mote_jw_kstr(&w, "id", sv->conf.mqtt_id);
        mote_jw_kstr(&w, "version", mote_version());
        mote_jw_kstr(&w, "model", sv->conf.conv->model != NULL ? sv->conf.conv->model : "");
        mote_jw_kstr(&w, "in", q->t_in);
        mote_jw_kstr(&w, "error", q->t_error);
        mote_jw_kint(&w, "max_conversations", MOTE_MAX_CONVERSATIONS);
        mote_jw_kint(&w, "payload_max", MOTE_MQTT_PAYLOAD_MAX);
        mote_jw_kint(&w, "connects", q->connects);
    }
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return w.err;
    return publish(q, q->t_status, k.p, k.len, true);
}

void mote_serve_mqtt_stats(struct serve *sv, void (*json)(struct serve *, struct mote_jw *))
{
    struct mq *q = mote_serve_mqtt_of(sv);
    struct mote_sb k;
    struct mote_jw w;

    if (q == NULL || q->phase != MQ_RUN || q->client->sess.state != MOTE_MQTT_S_ONLINE)
        return;
    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_jw_init(&w, mote_sb_put, &k);
    json(sv, &w);
    if (w.err != 0 ||
        mote_str_join(q->topic, sizeof(q->topic), q->prefix, "/stats", NULL) !=
            strlen(q->prefix) + 6)
        return;
    /* (no room now: the next interval's) */
    (void)publish(q, q->topic, k.p, k.len, true);
}

/* The retained summary of the questions waiting: {"pending": [{"conversation",
 * "ask_id", "call_id", "name", "record", "input", "input_bytes", "timeout_ms",
 * "expires_in_ms"}, ...], "count"}, the question's input as the
 * conversation's approval event has it (inline up to 1 KiB). */
int mote_serve_mqtt_approvals(struct mq *q, bool force, bool closing)
{
    struct serve *sv = q->sv;
    struct mote_session *s = sv->conf.session;
    uint32_t h = 2166136261u, count = 0;
    struct mote_sb k;
    struct mote_jw w;
    unsigned i;
    size_t j;
    int rc;

    q->appr_due = false;
    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "pending");
    mote_jw_arr(&w);
    for (i = 0; i < MOTE_MAX_CONVERSATIONS && !closing; i++) {
        struct mote_conv *cv = &s->conv[i];

        if (!cv->used || mote_conv_pending(cv, NULL) == 0)
            continue;
        mote_jw_obj(&w);
        mote_jw_kstr(&w, "conversation", mote_conv_id(cv));
        mote_serve_question_json(sv, cv, &w, SERVE_INPUT_INLINE_MAX);
        mote_jw_obj_end(&w);
        count++;
    }
    mote_jw_arr_end(&w);
    mote_jw_kint(&w, "count", count);
    if (closing) {
        mote_jw_kstr(&w, "reason", "mote stopped: questions are asked again when it is back");
    }
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return w.err;
    /* the same questions (the expiry's countdown aside) are not published again */
    for (j = 0; j < k.len; j++) {
        if (k.len - j > 16 && memcmp(k.p + j, "\"expires_in_ms\":", 16) == 0) {
            while (j < k.len && k.p[j] != ',' && k.p[j] != '}')
                j++;
        }
        h = (h ^ (unsigned char)k.p[j]) * 16777619u;
    }
    h |= 1u;
    if (!force && h == q->appr_hash)
        return 0;
    rc = publish(q, q->t_approvals, k.p, k.len, true);
    if (rc == 0)
        q->appr_hash = h;
    else
        q->appr_due = true;
    return rc;
}

/* {"id", "conversation", "error", "message"} on PREFIX/error. */
int mote_serve_mqtt_error(struct mq *q, const char *rid, const char *conv, const char *code,
                          const char *a, const char *b, const char *c)
{
    char m[200];
    struct mote_sb k;
    struct mote_jw w;

    mote_str_join(m, sizeof(m), a, b, c);
    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "id");
    if (rid != NULL && rid[0] != '\0')
        mote_jw_str(&w, rid);
    else
        mote_jw_null(&w);
    mote_jw_key(&w, "conversation");
    if (conv != NULL && conv[0] != '\0')
        mote_jw_str(&w, conv);
    else
        mote_jw_null(&w);
    mote_jw_kstr(&w, "error", code);
    mote_jw_kstr(&w, "message", m);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return w.err;
    return publish(q, q->t_error, k.p, k.len, false);
}

/* Refused: the error on PREFIX/error and in the log, then acknowledged.
 * A request never waits for room to publish (the broker's PUBACKs that
 * make room may be behind the next message in the connection): when the
 * client's queue is full, the error is in the log only. */
enum mq_res mote_serve_mqtt_fail(struct mq *q, const struct mq_req *r, const char *code,
                                 const char *a, const char *b, const char *c)
{
    int rc = mote_serve_mqtt_error(q, r->rid, r->conv, code, a, b, c);
    char what[MOTE_JOURNAL_RID_MAX + 48];

    mote_str_join(what, sizeof(what), r->rid[0] != '\0' ? r->rid : "(no id)", " refused: ", code);
    mote_serve_mqtt_say(q, "request ", what,
                        rc < 0 ? " (the queue to the broker is full: said here only)" : NULL);
    if (r->ack != 0)
        (void)mote_mqtt_ack(q->client, r->ack); /* STALE: the broker forgot it meanwhile */
    return MQ_DONE;
}

/* ---- the conversations' events ------------------------------------------------- */

static struct mq_out *out_find(struct mq *q, const char *id)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MQTT_OUTS; i++) {
        if (q->outs[i].used && strcmp(q->outs[i].st.conv_id, id) == 0)
            return &q->outs[i];
    }
    return NULL;
}

void mote_serve_mqtt_out_free(struct mq *q, struct mq_out *o)
{
    const struct mote_port *p = q->sv->port;

    if (o->st.sh >= 0)
        p->st_close(p->ctx, o->st.sh);
    o->st.sh = -1;
    o->used = false;
}

/* True if out stream `o` has published everything and its conversation
 * is idle: its slot may go to another conversation. */
static bool out_idle(struct mq *q, struct mq_out *o)
{
    struct mote_conv *cv = mote_conv_find(q->sv->conf.session, o->st.conv_id);

    return o->live && o->st.pos == mote_serve_conv_end(q->sv, &o->st) &&
           (cv == NULL || !mote_conv_busy(cv));
}

/* A conversation's events from the record at `off` on (NULL: every slot
 * is behind, or its journal cannot be read: said). */
static struct mq_out *out_new(struct mq *q, const char *id, uint64_t off)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MQTT_OUTS * 2; i++) {
        struct mq_out *o = &q->outs[i % MOTE_SERVE_MQTT_OUTS];

        /* a free slot first, else one whose conversation is idle */
        if (o->used && (i < MOTE_SERVE_MQTT_OUTS || !out_idle(q, o)))
            continue;
        if (o->used)
            mote_serve_mqtt_out_free(q, o);
        /* its journal is opened only while records are read from it */
        memset(&o->st, 0, sizeof(o->st));
        o->st.sh = -1;
        o->st.disk_size = UINT64_MAX;
        mote_str_copy(o->st.conv_id, sizeof(o->st.conv_id), id);
        o->used = true;
        o->live = true;
        o->st.pos = off;
        return o;
    }
    if (q->lost_events++ == 0)
        mote_serve_mqtt_say(q, "every MOTE_SERVE_MQTT_OUTS slot is behind: the events of ", id,
                            " are left out (said once)");
    return NULL;
}

/* PREFIX/out/ID into q->topic. */
static const char *out_topic(struct mq *q, const char *id)
{
    mote_str_join(q->topic, sizeof(q->topic), q->prefix, "/out/", id);
    return q->topic;
}

/* {"event":"record","offset":N,"data": (the envelope's head) into q->pay. */
static size_t record_head(struct mq *q, uint64_t off)
{
    struct mote_sb k;

    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_sb_s(&k, "{\"event\":\"record\",\"offset\":");
    mote_sb_u(&k, off);
    mote_sb_s(&k, ",\"data\":");
    return k.len;
}

/* A record too large for one message: its offset and size, no data. */
static int publish_record_stub(struct mq *q, const char *id, uint64_t off, uint64_t len)
{
    struct mote_sb k;

    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_sb_s(&k, "{\"event\":\"record\",\"offset\":");
    mote_sb_u(&k, off);
    mote_sb_s(&k, ",\"bytes\":");
    mote_sb_u(&k, len);
    mote_sb_s(&k, ",\"data\":null}");
    if (k.len + 1 >= k.cap)
        return MOTE_ERR_TOO_LARGE; /* a payload limit too small even for this */
    return publish(q, out_topic(q, id), k.p, k.len, false);
}

/* A record of `len` bytes (`line`, without its newline) at `off`. */
static int publish_record(struct mq *q, const char *id, uint64_t off, const char *line, size_t len)
{
    size_t room = sizeof(q->pay) - 1, h = record_head(q, off);

    if (h >= room || len + 1 > room - h)
        return publish_record_stub(q, id, off, len);
    memcpy(q->pay + h, line, len);
    q->pay[h + len] = '}';
    return publish(q, out_topic(q, id), q->pay, h + len + 1, false);
}

/* The record at o's place, read from its journal (up to `end`), published.
 * Returns 0 (o->st.pos moved on), MOTE_ERR_FULL (no room now), or a
 * failure to read it. */
static int publish_next_record(struct mq *q, struct mq_out *o, uint64_t end)
{
    const struct mote_port *p = q->sv->port;
    uint64_t off = o->st.pos, at;
    size_t room = sizeof(q->pay) - 1, h = record_head(q, off), want;
    size_t cap = h + 2 <= room ? room - h - 1 : 0; /* the line's bytes, '}' after them */
    const char *nl;
    int n, rc;

    want = end - off < cap ? (size_t)(end - off) : cap;
    n = want > 0 ? p->st_read(p->ctx, o->st.sh, off, q->pay + h, want) : 0;
    if (n < 0)
        return n;
    nl = n > 0 ? memchr(q->pay + h, '\n', (size_t)n) : NULL;
    if (nl != NULL && h + (size_t)(nl - (q->pay + h)) < room) {
        size_t len = (size_t)(nl - (q->pay + h));

        q->pay[h + len] = '}';
        rc = publish(q, out_topic(q, o->st.conv_id), q->pay, h + len + 1, false);
        if (rc == 0)
            o->st.pos = off + len + 1;
        return rc;
    }
    if (want > 0 && ((size_t)n < want || want == (size_t)(end - off)))
        return MOTE_ERR_CORRUPT; /* the journal ends inside a record it counted */
    /* too large for one message: find its end, publish its size */
    at = off + (uint64_t)n;
    while (at < end) {
        size_t k = end - at < sizeof(q->pay) ? (size_t)(end - at) : sizeof(q->pay);

        n = p->st_read(p->ctx, o->st.sh, at, q->pay, k);
        if (n <= 0)
            return n < 0 ? n : MOTE_ERR_CORRUPT;
        nl = memchr(q->pay, '\n', (size_t)n);
        if (nl != NULL) {
            at += (uint64_t)(nl - q->pay);
            rc = publish_record_stub(q, o->st.conv_id, off, at - off);
            if (rc == 0)
                o->st.pos = at + 1;
            return rc;
        }
        at += (uint64_t)n;
    }
    return MOTE_ERR_CORRUPT;
}

/* {"event":"state","data":{"state","loaded","busy","approval"}}: what a
 * subscriber that missed live events needs to go on (the question
 * waiting, above all). */
static int publish_state(struct mq *q, struct mq_out *o)
{
    struct serve *sv = q->sv;
    struct mote_conv *cv = mote_conv_find(sv->conf.session, o->st.conv_id);
    struct mote_sb k;
    struct mote_jw w;

    if (cv != NULL && cv->jr.h < 0)
        cv = NULL; /* closed by the shutdown */
    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "event", "state");
    mote_jw_key(&w, "data");
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "state", cv != NULL ? mote_conv_state_name(mote_conv_state(cv)) : "idle");
    mote_jw_kbool(&w, "loaded", cv != NULL);
    mote_jw_kbool(&w, "busy", cv != NULL && mote_conv_busy(cv));
    mote_serve_approval_json(sv, cv, &w, SERVE_INPUT_INLINE_MAX);
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return 0; /* too large for a message: the records have it */
    return publish(q, out_topic(q, o->st.conv_id), k.p, k.len, false);
}

/* Publishes what the conversations behind have in their journals, as far
 * as the client's queue takes it; a conversation caught up and idle
 * lets its slot go. Returns false when the queue is full (the client's
 * MOTE_MQTT_EV_ROOM brings it back). */
bool mote_serve_mqtt_pump(struct mq *q)
{
    struct serve *sv = q->sv;
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MQTT_OUTS; i++) {
        struct mq_out *o = &q->outs[(q->rr + i) % MOTE_SERVE_MQTT_OUTS];
        unsigned budget = 64; /* records at a time: the loop's other work goes on */

        if (o->used && o->st.sh < 0) {
            char name[MOTE_STORAGE_NAME_MAX];
            int h;

            mote_serve_journal_name(name, o->st.conv_id);
            h = sv->port->st_open(sv->port->ctx, name, MOTE_ST_READ);
            if (h < 0) {
                mote_serve_mqtt_say(q, "cannot read the journal of ", o->st.conv_id,
                                    ": its events are not published");
                mote_serve_mqtt_out_free(q, o);
                continue;
            }
            o->st.sh = h;
        }
        while (o->used) {
            uint64_t end = mote_serve_conv_end(sv, &o->st);
            struct mote_conv *cv;
            int rc;

            if (o->st.pos < end) {
                if (budget-- == 0) {
                    mote_serve_mqtt_kick(q);
                    break;
                }
                o->live = false;
                rc = publish_next_record(q, o, end);
                if (rc == MOTE_ERR_FULL) {
                    q->rr = (q->rr + i) % MOTE_SERVE_MQTT_OUTS;
                    return false;
                }
                if (rc < 0) {
                    mote_serve_mqtt_say(q, "cannot publish the events of ", o->st.conv_id,
                                        ": stopped");
                    mote_serve_mqtt_out_free(q, o);
                }
                continue;
            }
            if (!o->live) {
                rc = publish_state(q, o);
                if (rc == MOTE_ERR_FULL) {
                    q->rr = (q->rr + i) % MOTE_SERVE_MQTT_OUTS;
                    return false;
                }
                o->live = true;
            }
            cv = mote_conv_find(sv->conf.session, o->st.conv_id);
            if (cv == NULL || cv->jr.h < 0 || !mote_conv_busy(cv))
                mote_serve_mqtt_out_free(q, o); /* the next record opens it again */
            break;
        }
        if (o->used && o->st.sh >= 0) {
            sv->port->st_close(sv->port->ctx, o->st.sh); /* open only while read */
            o->st.sh = -1;
        }
    }
    return true;
}

void mote_serve_mqtt_live(struct serve *sv, const char *id, const char *frame, size_t len)
{
    struct mq *q = mote_serve_mqtt_of(sv);
    struct mq_out *o;
    const char *name, *nl, *data;
    size_t nn, dn;
    struct mote_sb k;

    if (q == NULL || q->phase < MQ_RUN || q->phase >= MQ_STOP || (o = out_find(q, id)) == NULL ||
        !o->live)
        return;
    if (o->st.pos != mote_serve_conv_end(sv, &o->st)) {
        o->live = false; /* behind: the records first, then the state */
        mote_serve_mqtt_kick(q);
        return;
    }
    /* "event: NAME\ndata: JSON\n\n" */
    if (len < 16 || memcmp(frame, "event: ", 7) != 0 ||
        (nl = memchr(frame + 7, '\n', len - 7)) == NULL || (size_t)(frame + len - nl) < 9 ||
        memcmp(nl, "\ndata: ", 7) != 0)
        return;
    name = frame + 7;
    nn = (size_t)(nl - name);
    data = nl + 7;
    dn = (size_t)(frame + len - data) - 2;
    mote_sb_init(&k, q->pay, sizeof(q->pay));
    mote_sb_s(&k, "{\"event\":\"");
    mote_sb_n(&k, name, nn);
    mote_sb_s(&k, "\",\"data\":");
    if (k.len + dn + 2 > k.cap)
        return; /* larger than a message: the records have it */
    mote_sb_n(&k, data, dn);
    mote_sb_s(&k, "}");
    if (publish(q, out_topic(q, id), k.p, k.len, false) < 0) {
        o->live = false; /* missed: the state is told once there is room */
        mote_serve_mqtt_kick(q);
    }
}

/* A new record of conversation `id`: published at once if its stream is
 * at it and it fits, else read from the journal later. */
void mote_serve_mqtt_record(struct mq *q, const char *id, uint64_t off, const char *line,
                            size_t len)
{
    struct mq_out *o = out_find(q, id);

    if (o == NULL && (o = out_new(q, id, off)) == NULL)
        return;
    if (o->live && o->st.pos == off && publish_record(q, id, off, line, len) == 0) {
        o->st.pos = off + len + 1;
        return;
    }
    o->live = false;
    mote_serve_mqtt_kick(q);
}
