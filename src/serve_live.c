/*
 * serve_live.c - one live event of a conversation (serve_int.h:
 * mote_serve_ev_open, mote_serve_ev_send), formatted once in sv->ev and
 * sent to every event stream of the conversation that is caught up, and
 * to MQTT (PREFIX/out/ID).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

/* The event stream of connection i following conversation `id`, or NULL. */
struct serve_stream *mote_serve_follower(struct serve *sv, unsigned i, const char *id)
{
    struct serve_stream *st = &sv->streams[i];

    if (st->kind != SERVE_STREAM_EVENTS || st->gone || strcmp(st->conv_id, id) != 0)
        return NULL;
    MOTE_ASSERT(sv->http.conns[i].state == MOTE_HTTPD_RESP);
    return st;
}

void mote_serve_ev_open(struct serve *sv, struct mote_sb *k, struct mote_jw *w, const char *name)
{
    mote_sb_init(k, sv->ev, sizeof(sv->ev) - 2);
    (void)mote_sb_put(k, "event: ", 7);
    (void)mote_sb_put(k, name, strlen(name));
    (void)mote_sb_put(k, "\ndata: ", 7);
    mote_jw_init(w, mote_sb_put, k);
    mote_jw_obj(w);
}

bool mote_serve_ev_send(struct serve *sv, struct mote_sb *k, struct mote_jw *w, const char *id)
{
    unsigned i;

    mote_jw_obj_end(w);
    if (w->err != 0)
        return false; /* larger than a live event may be: the record has it */
    k->cap += 2;
    (void)mote_sb_put(k, "\n\n", 2);
    mote_serve_mqtt_live(sv, id, k->p, k->len);
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct serve_stream *st = mote_serve_follower(sv, i, id);
        struct mote_httpd_conn *c = &sv->http.conns[i];

        if (st == NULL || !st->told_state || !mote_serve_caught_up(sv, st))
            continue;
        /* No room (a slow reader): it is behind now, and is told the
         * state (with a pending approval) once it has room. */
        if (!mote_httpd_out(c, k->p, k->len))
            st->told_state = false;
        mote_httpd_poke(&sv->http, c);
    }
    return true;
}
