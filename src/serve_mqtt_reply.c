/*
 * serve_mqtt_reply.c - the MQTT front door's requests that read
 * (docs/MQTT.md): "list" (the conversations, a page as GET
 * /v1/conversations gives it) and "read" (one conversation's records from
 * an offset, as GET /v1/conversations/ID gives them). Each is answered by
 * one message on PREFIX/reply/ID of at most MOTE_MQTT_PAYLOAD_MAX bytes: a
 * page and where the next one starts; a record larger than a message
 * comes in parts (its JSON text as a string, cut between characters).
 *
 * One reply is built at a time, over as many loop turns as its journals
 * take to read (their summaries, serve_disk.c); the request is
 * acknowledged once its reply is queued to the broker (a request the
 * broker sends again is answered again: reading has no effect). A request
 * that comes while a reply is built waits in the broker.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_mqtt.h"
#include "util.h"

/* Bytes kept free at a reply's end: ],"truncated":...,"next":{...}} */
#define TAIL 120
/* A record's wrapping in a page: {"offset":N,"data":...}, */
#define WRAP 40
/* Ids a list takes per turn when their summaries are known. */
#define PER_TURN 32

/* A reply's id names its topic: 1 to MOTE_JOURNAL_RID_MAX of
 * [A-Za-z0-9._:-] (no '/', '+', '#'). */
static bool reply_id_ok(const char *s)
{
    size_t n = strlen(s), i;

    for (i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return false;
    }
    return n > 0 && n <= MOTE_JOURNAL_RID_MAX;
}

static void put(struct mq_reply *y, const char *s, size_t n)
{
    if (y->len + n <= MOTE_MQTT_PAYLOAD_MAX) {
        memcpy(y->pay + y->len, s, n);
        y->len += n;
    }
}

static void puts_(struct mq_reply *y, const char *s)
{
    put(y, s, strlen(s));
}

static void putu(struct mq_reply *y, uint64_t v)
{
    char b[24];
    struct mote_sb sb;

    mote_sb_init(&sb, b, sizeof(b));
    mote_sb_u(&sb, v);
    put(y, b, sb.len);
}

/* The reply's end: the request acknowledged, the journal closed. */
static void end(struct mq *q)
{
    struct mq_reply *y = &q->reply;
    const struct mote_port *p = q->sv->port;

    if (y->st.sh >= 0)
        p->st_close(p->ctx, y->st.sh);
    y->st.sh = -1;
    if (y->ack != 0)
        (void)mote_mqtt_ack(q->client, y->ack); /* (STALE: the broker forgot it) */
    y->kind = 0;
    if (q->paused)
        mote_serve_mqtt_kick(q); /* a request the broker kept meanwhile */
}

/* Refused: the error on PREFIX/error (the request's id with it). */
static int refuse(struct mq *q, const char *code, const char *a, const char *b, const char *c)
{
    struct mq_reply *y = &q->reply;
    struct mq_req r;

    memset(&r, 0, sizeof(r));
    r.ack = y->ack;
    r.kind = (enum mq_kind)y->kind;
    memcpy(r.rid, y->rid, sizeof(r.rid));
    memcpy(r.conv, y->conv, sizeof(r.conv));
    y->ack = 0; /* (acknowledged by the refusal) */
    (void)mote_serve_mqtt_fail(q, &r, code, a, b, c);
    end(q);
    return MOTE_ERR_CANCELED;
}

/* A JSON string's characters (an id: nothing to escape). */
static void put_str(struct mq_reply *y, const char *s)
{
    puts_(y, "\"");
    puts_(y, s);
    puts_(y, "\"");
}

/* ---- list ------------------------------------------------------------------------ */

static int list_end(struct mq_reply *y, bool more)
{
    puts_(y, more ? "],\"truncated\":true,\"next\":" : "],\"truncated\":false,\"next\":null}");
    if (more) {
        put_str(y, y->cursor);
        puts_(y, "}");
    }
    y->built = true;
    return 0;
}

/* The next ids after the cursor, as their summaries are known. Returns 0
 * (built), MOTE_ERR_AGAIN (a journal is read first), or an end. */
static int list_more(struct mq *q)
{
    struct serve *sv = q->sv;
    struct mq_reply *y = &q->reply;
    unsigned k;

    for (k = 0; k < PER_TURN; k++) {
        char id[MOTE_CONV_ID_MAX];
        const struct serve_sum *e = NULL;
        int64_t holder = 0;
        size_t n;
        int rc = mote_serve_next_id(sv, y->cursor, id);

        if (rc == 0 || (rc > 0 && y->count >= y->limit))
            return list_end(y, rc > 0);
        if (rc > 0)
            rc = mote_serve_sum(sv, id, &e, &holder);
        if (rc == MOTE_ERR_AGAIN)
            return rc;
        if (rc == MOTE_ERR_NOENT) {
            mote_str_copy(y->cursor, sizeof(y->cursor), id); /* gone since (or empty) */
            continue;
        }
        if (rc < 0)
            return refuse(q, "storage", "storage failed: ", mote_strerror(rc), NULL);
        n = mote_serve_list_entry(sv, id, e, holder);
        if (n == 0 || y->len + 1 + n + TAIL > MOTE_MQTT_PAYLOAD_MAX) {
            if (y->count > 0)
                return list_end(y, true);
            return refuse(q, "too_large", "one conversation's entry does not fit a message "
                                          "(MOTE_MQTT_PAYLOAD_MAX)",
                          NULL, NULL);
        }
        if (y->count > 0)
            puts_(y, ",");
        put(y, sv->resp, n);
        y->count++;
        mote_str_copy(y->cursor, sizeof(y->cursor), id);
    }
    return MOTE_ERR_AGAIN; /* (a turn's share: the next disk turn goes on) */
}

/* ---- read ------------------------------------------------------------------------ */

/* The record at `off` of at most `end`: its length (to its newline), or
 * < 0. Reads it through once, in pieces. */
static int64_t record_len(struct serve *sv, struct mq_reply *y, uint64_t off, uint64_t end)
{
    const struct mote_port *p = sv->port;
    uint64_t at = off;

    while (at < end && at - off <= MOTE_JOURNAL_LINE_MAX) {
        size_t want = end - at < sizeof(sv->small) ? (size_t)(end - at) : sizeof(sv->small);
        int n = p->st_read(p->ctx, y->st.sh, at, sv->small, want);
        const char *nl;

        if (n <= 0)
            return n < 0 ? n : MOTE_ERR_CORRUPT;
        nl = memchr(sv->small, '\n', (size_t)n);
        if (nl != NULL)
            return (int64_t)(at - off) + (nl - sv->small);
        at += (uint64_t)n;
    }
    return MOTE_ERR_CORRUPT;
}

/* A part of the record at `off` (`len` bytes) from y->at: its JSON text
 * as a string, cut between two UTF-8 characters, as much as fits. */
static int read_part(struct mq *q, uint64_t off, uint64_t len, uint64_t end)
{
    struct serve *sv = q->sv;
    const struct mote_port *p = sv->port;
    struct mq_reply *y = &q->reply;
    size_t room, take, i;
    int n;

    if (y->at >= len)
        return refuse(q, "bad_offset", "\"at\" is past the end of the record", NULL, NULL);
    puts_(y, "],\"part\":{\"offset\":");
    putu(y, off);
    puts_(y, ",\"bytes\":");
    putu(y, len);
    puts_(y, ",\"at\":");
    putu(y, y->at);
    puts_(y, ",\"text\":\"");
    /* each byte escaped takes 2 at most ('"', '\\': a journal line holds
     * no control character) */
    room = (MOTE_MQTT_PAYLOAD_MAX - y->len - TAIL) / 2;
    take = len - y->at < room ? (size_t)(len - y->at) : room;
    if (take > sizeof(sv->scratch))
        take = sizeof(sv->scratch);
    n = p->st_read(p->ctx, y->st.sh, off + y->at, sv->scratch, take);
    if (n != (int)take)
        return refuse(q, "storage", "the journal could not be read", NULL, NULL);
    if (y->at + take < len) {
        /* not inside a character: back to the start of the one cut */
        while (take > 0 && ((unsigned char)sv->scratch[take] & 0xC0u) == 0x80u)
            take--;
        if (take == 0)
            return refuse(q, "too_large", "no part of the record fits a message", NULL, NULL);
    }
    for (i = 0; i < take; i++) {
        char c = sv->scratch[i];

        if (c == '"' || c == '\\')
            put(y, "\\", 1);
        put(y, &c, 1);
    }
    puts_(y, "\"},\"next\":");
    if (y->at + take < len) {
        puts_(y, "{\"from\":");
        putu(y, off);
        puts_(y, ",\"at\":");
        putu(y, y->at + take);
        puts_(y, "}}");
    } else if (off + len + 1 < end) {
        puts_(y, "{\"from\":");
        putu(y, off + len + 1);
        puts_(y, "}}");
    } else {
        puts_(y, "null}");
    }
    y->built = true;
    return 0;
}

static int read_build(struct mq *q)
{
    struct serve *sv = q->sv;
    const struct mote_port *p = sv->port;
    struct mq_reply *y = &q->reply;
    struct serve_look look;
    uint32_t bad = 0;
    uint64_t off, endo;
    unsigned count = 0;
    char n[24];
    struct mote_sb sb;
    int rc = mote_serve_look(sv, y->conv, &look, &bad);

    if (rc == MOTE_ERR_AGAIN)
        return rc;
    if (rc == MOTE_ERR_NOENT || rc == MOTE_ERR_INVAL)
        return refuse(q, "unknown_conversation", "no such conversation", NULL, NULL);
    if (rc == MOTE_ERR_CORRUPT) {
        mote_sb_init(&sb, n, sizeof(n));
        mote_sb_u(&sb, bad);
        return refuse(q, "damaged", "the conversation is damaged at line ", n, NULL);
    }
    if (rc == MOTE_ERR_NOTSUP)
        return refuse(q, "newer", "the conversation was written by a newer mote", NULL, NULL);
    if (rc < 0 || (rc = mote_serve_stream_open(sv, &y->st, y->conv)) < 0)
        return refuse(q, "storage", "storage failed: ", mote_strerror(rc), NULL);
    endo = mote_serve_conv_end(sv, &y->st);
    if (y->from > endo || !mote_serve_record_start(sv, &y->st, y->from, endo))
        return refuse(q, "bad_offset",
                      "\"from\" must be the offset of a record (an event id) or 0", NULL, NULL);
    puts_(y, "{\"id\":");
    put_str(y, y->rid);
    puts_(y, ",\"conversation\":");
    put_str(y, y->conv);
    puts_(y, ",\"state\":");
    put_str(y, look.state);
    puts_(y, ",\"size\":");
    putu(y, endo);
    puts_(y, ",\"records\":[");
    off = y->from;
    if (y->at > 0 && off < endo) {
        int64_t len = record_len(sv, y, off, endo);

        if (len < 0)
            return refuse(q, "storage", "the journal could not be read", NULL, NULL);
        return read_part(q, off, (uint64_t)len, endo);
    }
    while (off < endo) {
        size_t mark = y->len, head, room, want, k;
        const char *nl;
        int got;

        if (y->len + WRAP + TAIL + 2 > MOTE_MQTT_PAYLOAD_MAX)
            break;
        if (count > 0)
            puts_(y, ",");
        puts_(y, "{\"offset\":");
        putu(y, off);
        puts_(y, ",\"data\":");
        head = y->len;
        room = MOTE_MQTT_PAYLOAD_MAX - head - TAIL - 1;
        want = endo - off < room ? (size_t)(endo - off) : room;
        got = p->st_read(p->ctx, y->st.sh, off, y->pay + head, want);
        if (got < 0)
            return refuse(q, "storage", "the journal could not be read", NULL, NULL);
        nl = memchr(y->pay + head, '\n', (size_t)got);
        if (nl == NULL) {
            int64_t len;

            y->len = mark; /* (what was read is dropped) */
            if (count > 0)
                break; /* it begins the next page */
            len = record_len(sv, y, off, endo);
            if (len < 0)
                return refuse(q, "storage", "the journal could not be read", NULL, NULL);
            return read_part(q, off, (uint64_t)len, endo); /* larger than a message */
        }
        k = (size_t)(nl - (y->pay + head));
        y->len = head + k;
        puts_(y, "}");
        off += k + 1;
        count++;
    }
    puts_(y, "],\"next\":");
    if (off < endo) {
        puts_(y, "{\"from\":");
        putu(y, off);
        puts_(y, "}}");
    } else {
        puts_(y, "null}");
    }
    y->built = true;
    return 0;
}

/* ---- the reply's life ----------------------------------------------------------------- */

enum mq_res mote_serve_mqtt_reply_take(struct mq *q, const struct mq_req *r, int t)
{
    struct serve *sv = q->sv;
    const struct mote_json *js = &sv->json;
    struct mq_reply *y = &q->reply;
    int tk;
    int64_t v;

    if (y->kind != 0)
        return MQ_LATER; /* one at a time: the broker keeps it meanwhile */
    if (!reply_id_ok(r->rid))
        return mote_serve_mqtt_fail(q, r, "bad_field",
                                    "the \"id\" of a list or a read names its reply's topic "
                                    "(PREFIX/reply/ID): 1 to 64 of A-Z, a-z, 0-9, '.', '_', ':' "
                                    "and '-'",
                                    NULL, NULL);
    if (mote_json_type_of(js, t) != MOTE_JSON_OBJECT)
        return mote_serve_mqtt_fail(q, r, "bad_field",
                                    "\"list\" and \"read\" are objects ({} for the defaults)",
                                    NULL, NULL);
    memset(y, 0, offsetof(struct mq_reply, st));
    y->st.kind = SERVE_STREAM_NONE;
    y->st.sh = -1;
    y->limit = MOTE_SERVE_LIST_PAGE;
    if (r->kind == MQ_LIST) {
        tk = mote_json_member(js, t, "after");
        if (tk >= 0 &&
            (mote_json_type_of(js, tk) != MOTE_JSON_STRING ||
             mote_json_cstr(js, tk, y->cursor, sizeof(y->cursor)) < 0 ||
             !mote_serve_id_ok(y->cursor, strlen(y->cursor))))
            return mote_serve_mqtt_fail(q, r, "bad_cursor",
                                        "\"after\" is a conversation id (the \"next\" of the "
                                        "page before)",
                                        NULL, NULL);
        tk = mote_json_member(js, t, "limit");
        if (tk >= 0 && (mote_json_int(js, tk, &v) < 0 || v < 1 || v > MOTE_SERVE_LIST_PAGE))
            return mote_serve_mqtt_fail(q, r, "bad_limit",
                                        "\"limit\" is a number of conversations: 1 to "
                                        "MOTE_SERVE_LIST_PAGE",
                                        NULL, NULL);
        if (tk >= 0)
            y->limit = (uint32_t)v;
    } else {
        const char *keys[2] = {"from", "at"};
        uint64_t *vals[2] = {&y->from, &y->at};
        unsigned k;

        for (k = 0; k < 2; k++) {
            tk = mote_json_member(js, t, keys[k]);
            if (tk < 0)
                continue;
            if (mote_json_int(js, tk, &v) < 0 || v < 0)
                return mote_serve_mqtt_fail(q, r, "bad_offset",
                                            "\"from\" and \"at\" are offsets: numbers from 0 (a "
                                            "reply's \"next\")",
                                            NULL, NULL);
            *vals[k] = (uint64_t)v;
        }
    }
    if (mote_str_join(y->topic, sizeof(y->topic), q->prefix, "/reply/", r->rid) !=
        strlen(q->prefix) + 7 + strlen(r->rid))
        return mote_serve_mqtt_fail(q, r, "bad_field", "the reply's topic is too long", NULL,
                                    NULL);
    y->kind = (uint8_t)r->kind;
    y->ack = r->ack;
    memcpy(y->rid, r->rid, sizeof(y->rid));
    memcpy(y->conv, r->conv, sizeof(y->conv));
    if (r->kind == MQ_LIST) {
        puts_(y, "{\"id\":");
        put_str(y, y->rid);
        puts_(y, ",\"conversations\":[");
    }
    (void)mote_serve_mqtt_reply_turn(q);
    return MQ_DONE; /* (acknowledged once the reply is queued) */
}

bool mote_serve_mqtt_reply_turn(struct mq *q)
{
    struct mq_reply *y = &q->reply;
    int rc;

    if (y->kind == 0)
        return false;
    if (!y->built) {
        rc = y->kind == MQ_LIST ? list_more(q) : read_build(q);
        if (rc == MOTE_ERR_AGAIN) {
            mote_serve_disk_kick(q->sv);
            return true;
        }
        if (rc < 0)
            return false; /* refused: said and ended */
    }
    rc = mote_mqtt_publish(q->client, y->topic, y->pay, y->len, 1, false);
    if (rc == MOTE_ERR_FULL)
        return false; /* again when there is room (MOTE_MQTT_EV_ROOM: the kick) */
    if (rc < 0)
        mote_serve_mqtt_say(q, "the reply to ", y->rid, " could not be published");
    end(q);
    return false;
}

void mote_serve_mqtt_reply_stop(struct mq *q)
{
    const struct mote_port *p = q->sv->port;

    if (q->reply.st.sh >= 0)
        p->st_close(p->ctx, q->reply.st.sh);
    q->reply.st.sh = -1;
    q->reply.kind = 0;
}
