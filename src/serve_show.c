/*
 * serve_show.c - the tool call waiting for approval as the library shows
 * it (mote_show.h), for the API's clients: its display in the approval
 * event and the state (when it fits there), and GET
 * /v1/conversations/ID/approval with all of it, so that a page, an MQTT
 * client and the CLI show a person the same thing.
 */
#include <string.h>

#include "mote/mote_show.h"
#include "serve_int.h"
#include "util.h"

bool mote_serve_show_into(struct serve *sv, struct mote_jw *w, size_t reserve, const char *name,
                          const char *input, size_t len)
{
    struct mote_sb *k = w->arg, ks;
    struct mote_jw ws;

    if (w->sink != mote_sb_put || w->err != 0)
        return false;
    ks = *k;
    ws = *w;
    if (k->cap > k->len + reserve) {
        k->cap -= reserve;
        mote_jw_key(w, "display");
        if (mote_show_call_json(&sv->json, sv->port, name, input, len, 0, w) >= 0 && w->err == 0) {
            k->cap = ks.cap;
            return true;
        }
    }
    *k = ks; /* it does not fit: as if never begun */
    *w = ws;
    mote_jw_key(w, "display");
    mote_jw_null(w);
    return false;
}

/* "whole" and "format" of the query: false (refused) if malformed. */
static bool show_query(struct mote_httpd_conn *c, bool *whole, bool *text)
{
    char q[16];

    *whole = *text = false;
    if (mote_hreq_query(&c->io->req, "whole", q, sizeof(q)) >= 0)
        *whole = !(strcmp(q, "0") == 0 || strcmp(q, "false") == 0 || strcmp(q, "no") == 0);
    if (mote_hreq_query(&c->io->req, "format", q, sizeof(q)) >= 0) {
        *text = strcmp(q, "text") == 0;
        if (!*text && strcmp(q, "json") != 0) {
            mote_httpd_error(c, 400, "bad_format", "\"format\" is json or text", NULL);
            return false;
        }
    }
    return true;
}

void mote_serve_http_show(struct serve *sv, struct mote_httpd_conn *c, const char *id)
{
    struct mote_conv *cv = mote_serve_find(sv, id);
    const struct mote_conv_call *call;
    uint32_t ask = cv != NULL ? mote_conv_pending(cv, &call) : 0;
    unsigned flags;
    bool whole, text;
    size_t len = 0;
    struct mote_sb k;
    struct mote_jw w;
    char *buf;
    int n, rc;

    if (!show_query(c, &whole, &text))
        return;
    if (ask == 0) {
        mote_httpd_error(c, 409, "no_question",
                         "no tool call of this conversation waits for an answer", NULL);
        return;
    }
    n = mote_journal_call_input(&cv->jr, call->rec_off, call->rec_idx, sv->scratch,
                                sizeof(sv->scratch), &len);
    if (n < 0) {
        mote_httpd_error(c, 500, "storage", "the call's input cannot be read from the journal",
                         NULL);
        return;
    }
    if ((buf = mote_httpd_pool_take(c)) == NULL) {
        mote_httpd_error(c, 503, "busy", "no buffer is free for the display: try again",
                         "Retry-After: 1\r\n");
        return;
    }
    flags = whole ? MOTE_SHOW_WHOLE : 0;
    mote_sb_init(&k, buf, MOTE_SERVE_BODY_MAX);
    if (text) {
        struct mote_show_plain p = {mote_sb_put, &k, false, "?whole=1 shows all of it"};
        struct mote_show_sink s = mote_show_plain_sink(&p);

        rc = mote_show_call(&sv->json, sv->port, call->name, sv->scratch, (size_t)n, flags, &s);
    } else {
        mote_jw_init(&w, mote_sb_put, &k);
        mote_jw_obj(&w);
        mote_jw_kstr(&w, "id", id);
        mote_jw_kint(&w, "ask_id", ask);
        mote_jw_kstr(&w, "call_id", call->id);
        mote_jw_kstr(&w, "name", call->name);
        mote_jw_kint(&w, "record", (int64_t)call->rec_off);
        mote_jw_kint(&w, "input_bytes", (int64_t)len);
        mote_jw_key(&w, "display");
        rc = mote_show_call_json(&sv->json, sv->port, call->name, sv->scratch, (size_t)n, flags,
                                 &w);
        mote_jw_obj_end(&w);
        if (w.err != 0)
            rc = w.err;
        else
            (void)mote_sb_put(&k, "\n", 1);
    }
    if (rc < 0) {
        mote_httpd_pool_put(c);
        mote_httpd_error(c, 413, "too_large",
                         "the display of this call is larger than a response buffer "
                         "(MOTE_SERVE_BODY_MAX): read its input from its record (?from=RECORD)",
                         NULL);
        return;
    }
    (void)mote_httpd_head(c, 200, text ? "text/plain; charset=utf-8" : "application/json", NULL,
                          true, k.len);
    mote_httpd_pool_send(c, k.len);
    mote_httpd_respond(c, false);
}
