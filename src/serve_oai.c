/*
 * serve_oai.c - mote serve's OpenAI-compatible front door (serve_mcp.h):
 * POST /v1/chat/completions takes the request's last user message as the
 * new prompt of a conversation (the X-Mote-Conversation header's, the
 * `user` field's, or a new one), runs the turn with the device's tools,
 * and answers in OpenAI's format: a streamed completion as its chunks
 * (the text as it streams, finish_reason, usage, [DONE]), another whole
 * once the turn ended; GET /v1/models names the model. Refusals and
 * failures are OpenAI error objects whose code is mote's.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

static int conn_index(const struct serve *sv, const struct mote_httpd_conn *c)
{
    return (int)(c - sv->http.conns);
}

static const char *model_name(const struct serve *sv)
{
    return sv->conf.conv->model != NULL ? sv->conf.conv->model : "mote";
}

/* An OpenAI error object into `buf`: {"error":{"message","type","param",
 * "code"}}, its type that of HTTP `status`. Returns its length (0: it
 * does not fit). */
static size_t error_body(char *buf, size_t cap, unsigned status, const char *code,
                         const char *message)
{
    struct mote_sb sb;
    struct mote_jw w;

    mote_sb_init(&sb, buf, cap);
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    mote_jw_key(&w, "error");
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "message", message);
    mote_jw_key(&w, "type");
    mote_jw_str(&w, status == 401   ? "authentication_error"
                    : status == 429 ? "rate_limit_error"
                    : status < 500  ? "invalid_request_error"
                                    : "server_error");
    mote_jw_key(&w, "param");
    mote_jw_null(&w);
    mote_jw_kstr(&w, "code", code);
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    return w.err == 0 ? sb.len : 0;
}

void mote_serve_oai_error(struct serve *sv, struct mote_httpd_conn *c, unsigned status,
                          const char *code, const char *message, const char *extra)
{
    char body[MOTE_JOB_ERRMSG_LEN + 400];
    size_t n = error_body(body, sizeof(body), status, code, message);

    if (status == 400 || status == 401 || status == 413 || status >= 500)
        c->keep_alive = false;
    mote_httpd_reply(c, status, body, n, extra);
    mote_httpd_say(&sv->http, "openai: refused: ", message, NULL);
}

/* The status and code of a failure `rc` (enum mote_err). */
static unsigned status_of(int rc)
{
    const char *n = mote_err_name(rc);
    size_t len = strlen(n);

    switch (rc) {
    case MOTE_ERR_BUSY:
    case MOTE_ERR_NOTSUP:
    case MOTE_ERR_CORRUPT:
    case MOTE_ERR_LOCKED:
        return 409;
    case MOTE_ERR_INVAL:
    case MOTE_ERR_BADMSG:
    case MOTE_ERR_TOO_LARGE:
        return 400;
    case MOTE_ERR_FULL:
    case MOTE_ERR_SHUTDOWN:
    case MOTE_ERR_OVERLOADED:
        return 503;
    case MOTE_ERR_RATE_LIMIT:
        return 429;
    case MOTE_ERR_LIMIT:
    case MOTE_ERR_CANCELED:
    case MOTE_ERR_STORAGE:
    case MOTE_ERR_IO:
        return 500;
    default:
        /* the model's failures: a gateway's, or its timeout */
        return len > 8 && strcmp(n + len - 8, "_timeout") == 0 ? 504 : 502;
    }
}

static void fail(struct serve *sv, struct mote_httpd_conn *c, int rc, const char *name,
                 const char *msg)
{
    unsigned st = status_of(rc);

    mote_serve_oai_error(sv, c, st, name != NULL ? name : mote_err_name(rc), msg,
                         st == 503 || st == 429 ? "Retry-After: 1\r\n" : NULL);
}

void mote_serve_oai_models(struct serve *sv, struct mote_httpd_conn *c)
{
    char body[400];
    struct mote_sb sb;
    struct mote_jw w;

    mote_sb_init(&sb, body, sizeof(body));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "object", "list");
    mote_jw_key(&w, "data");
    mote_jw_arr(&w);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "id", model_name(sv));
    mote_jw_kstr(&w, "object", "model");
    mote_jw_kint(&w, "created", 0);
    mote_jw_kstr(&w, "owned_by", "mote");
    mote_jw_obj_end(&w);
    mote_jw_arr_end(&w);
    mote_jw_obj_end(&w);
    mote_httpd_reply(c, 200, body, w.err == 0 ? sb.len : 0, NULL);
}

/* The text of the last message (token `m`) into sv->scratch: a string,
 * or text parts joined by newlines. Returns its length, or < 0 with the
 * reason in *why. */
static int prompt_of(struct serve *sv, int m, const char **why)
{
    const struct mote_json *j = &sv->json;
    int content = mote_json_member(j, m, "content"), k, n;
    size_t o = 0;

    if (!mote_json_eq(j, mote_json_member(j, m, "role"), "user")) {
        *why = "the last message must be the user's (its text is the new prompt)";
        return MOTE_ERR_INVAL;
    }
    if (mote_json_type_of(j, content) == MOTE_JSON_STRING) {
        n = mote_json_str(j, content, sv->scratch, sizeof(sv->scratch));
        *why = "the message is longer than MOTE_SERVE_BODY_MAX";
        return n;
    }
    if (mote_json_type_of(j, content) != MOTE_JSON_ARRAY) {
        *why = "content must be a string or an array of text parts";
        return MOTE_ERR_INVAL;
    }
    for (k = 0; k < j->tok[content].size; k++) {
        int part = mote_json_elem(j, content, k);

        if (!mote_json_eq(j, mote_json_member(j, part, "type"), "text")) {
            *why = "only text parts are taken (no images, audio or files)";
            return MOTE_ERR_INVAL;
        }
        if (o > 0 && o < sizeof(sv->scratch))
            sv->scratch[o++] = '\n';
        n = mote_json_str(j, mote_json_member(j, part, "text"), sv->scratch + o,
                          sizeof(sv->scratch) - o);
        if (n < 0) {
            *why = "a text part must have its text (a string), and all of them fit "
                   "MOTE_SERVE_BODY_MAX";
            return n;
        }
        o += (size_t)n;
    }
    return (int)o;
}

/* The conversation's id: X-Mote-Conversation (as it is, or refused), or
 * the `user` field (as it is when it is an id, else "u-" and a hash of
 * it: one conversation per user). False: a bad header. */
static bool conv_of(struct serve *sv, struct mote_httpd_conn *c, struct serve_follow *f)
{
    const struct mote_json *j = &sv->json;
    const char *h = c->io->req.conversation;
    int ut = mote_json_member(j, 0, "user");
    char user[256];
    int n;

    if (h != NULL) {
        if (!mote_serve_id_ok(h, strlen(h)))
            return false;
        mote_str_copy(f->conv, sizeof(f->conv), h);
        f->named = true;
        return true;
    }
    n = mote_json_type_of(j, ut) == MOTE_JSON_STRING ? mote_json_str(j, ut, user, sizeof(user))
                                                      : -1;
    if (n > 0 && mote_serve_id_ok(user, (size_t)n)) {
        mote_str_copy(f->conv, sizeof(f->conv), user);
        f->named = true;
    } else if (n > 0 || n == MOTE_ERR_TOO_LARGE) {
        static const char hex[] = "0123456789abcdef";
        uint64_t hsh = 14695981039346656037ull;
        const char *p;
        size_t len, i;

        p = mote_json_raw(j, ut, &len);
        for (i = 0; i < len; i++)
            hsh = (hsh ^ (unsigned char)p[i]) * 1099511628211ull;
        memcpy(f->conv, "u-", 2);
        for (i = 0; i < 16; i++)
            f->conv[2 + i] = hex[(hsh >> (60 - 4 * i)) & 15u];
        f->conv[18] = '\0';
        f->named = true;
    }
    return true;
}

/* Seconds of the real-time clock (the journal just written), 0 unknown. */
static int64_t created_of(struct serve *sv, const char *id)
{
    const struct mote_port *p = sv->port;
    char name[MOTE_STORAGE_NAME_MAX];
    int64_t t = 0;

    if (!MOTE_PORT_HAS(p, st_time) || id[0] == '\0')
        return 0;
    mote_serve_journal_name(name, id);
    return p->st_time(p->ctx, name, &t) == 0 ? t : 0;
}

void mote_serve_oai_request(struct serve *sv, struct mote_httpd_conn *c, const char *body,
                            size_t len)
{
    const struct mote_json *j = &sv->json;
    int idx = conn_index(sv, c), msgs, st, so, n;
    struct serve_follow *f;
    const char *why = NULL;
    char err[120], extra[MOTE_CONV_ID_MAX + 40];
    bool stream = false, usage = false;
    struct mote_sb sb;

    if (mote_json_parse_object(&sv->json, body, len, err, sizeof(err)) < 0) {
        mote_serve_oai_error(sv, c, 400, "bad_json", err, NULL);
        return;
    }
    msgs = mote_json_member(j, 0, "messages");
    if (mote_json_type_of(j, msgs) != MOTE_JSON_ARRAY || j->tok[msgs].size == 0) {
        mote_serve_oai_error(sv, c, 400, "bad_field", "messages must be an array, not empty",
                             NULL);
        return;
    }
    st = mote_json_member(j, 0, "stream");
    so = mote_json_member(j, 0, "stream_options");
    if ((st >= 0 && !mote_json_is_null(j, st) && mote_json_bool(j, st, &stream) < 0) ||
        (so >= 0 && !mote_json_is_null(j, so) &&
         mote_json_member(j, so, "include_usage") >= 0 &&
         mote_json_bool(j, mote_json_member(j, so, "include_usage"), &usage) < 0)) {
        mote_serve_oai_error(sv, c, 400, "bad_field",
                             "stream and stream_options.include_usage are true or false", NULL);
        return;
    }
    n = prompt_of(sv, mote_json_elem(j, msgs, j->tok[msgs].size - 1), &why);
    if (n <= 0) {
        mote_serve_oai_error(sv, c, n == MOTE_ERR_TOO_LARGE ? 413 : 400,
                             n == 0 ? "empty" : "bad_field",
                             n == 0 ? "the user's message is empty" : why, NULL);
        return;
    }
    f = mote_serve_follow_new(sv, stream ? SF_OAI_STREAM : SF_OAI, idx);
    if (f == NULL) {
        mote_serve_oai_error(sv, c, 503, "busy",
                             "busy: as many answers are followed as mote follows at once "
                             "(MOTE_SERVE_FOLLOWS); try again",
                             "Retry-After: 1\r\n");
        return;
    }
    if (!conv_of(sv, c, f)) {
        mote_serve_follow_free(sv, f);
        mote_serve_oai_error(sv, c, 400, "bad_id",
                             "X-Mote-Conversation must be 1 to 39 of A-Z a-z 0-9 _ -", NULL);
        return;
    }
    f->include_usage = usage;
    (void)mote_serve_follow_start(sv, f, NULL, sv->scratch, (size_t)n);
    if (f->phase == SFP_DONE) {
        char m[MOTE_JOB_ERRMSG_LEN + 120];

        mote_str_copy(m, sizeof(m), f->kind == SF_OAI_STREAM ? f->err : "");
        if (m[0] == '\0') {
            size_t k = f->text_len < sizeof(m) - 1 ? f->text_len : sizeof(m) - 1;

            memcpy(m, f->text, k);
            m[k] = '\0';
        }
        const char *name = f->err_name;

        n = f->err_code;
        mote_serve_follow_free(sv, f);
        fail(sv, c, n, name, m);
        return;
    }
    f->created = created_of(sv, f->conv);
    memset(&sv->mcp.chans[idx], 0, sizeof(sv->mcp.chans[idx]));
    sv->mcp.chans[idx].kind = stream ? SC_OAI_STREAM : SC_OAI_JSON;
    if (!stream) {
        mote_httpd_defer(c); /* answered whole once the turn ended */
        return;
    }
    mote_sb_init(&sb, extra, sizeof(extra));
    mote_sb_join(&sb, "X-Mote-Conversation: ", f->conv, "\r\n");
    if (!mote_httpd_stream_head(c, "text/event-stream", extra, false)) {
        sv->mcp.chans[idx].kind = SC_NONE;
        mote_serve_follow_chan_gone(sv, idx);
        c->out_len = 0;
        mote_serve_oai_error(sv, c, 500, "internal", "the response head does not fit", NULL);
        return;
    }
    c->pings = true;
    mote_httpd_respond(c, true);
}

/* The follow of channel `chan`, or NULL. */
static struct serve_follow *follow_of(struct serve *sv, int chan)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        if (sv->mcp.follows[i].kind != SF_FREE && sv->mcp.follows[i].chan == chan)
            return &sv->mcp.follows[i];
    }
    return NULL;
}

static const char *finish_of(const char *stop)
{
    if (strcmp(stop, "max_tokens") == 0 || strcmp(stop, "length") == 0)
        return "length";
    if (strcmp(stop, "refusal") == 0 || strcmp(stop, "content_filter") == 0)
        return "content_filter";
    return "stop";
}

/* {"id":..,"object":..,"created":..,"model":.. (the members every
 * answer of f opens with). */
static void opening(struct serve *sv, struct serve_follow *f, struct mote_jw *w,
                    const char *object)
{
    char id[MOTE_CONV_ID_MAX + 40];
    struct mote_sb sb;

    mote_sb_init(&sb, id, sizeof(id));
    mote_sb_join(&sb, "chatcmpl-", f->conv, "-");
    mote_sb_u(&sb, f->user_off);
    mote_jw_obj(w);
    mote_jw_kstr(w, "id", id);
    mote_jw_kstr(w, "object", object);
    mote_jw_kint(w, "created", f->created);
    mote_jw_kstr(w, "model", model_name(sv));
}

static void usage_obj(struct mote_jw *w, const struct mote_usage *u)
{
    uint64_t prompt = u->input_tokens + u->cache_read_tokens + u->cache_write_tokens;

    mote_jw_key(w, "usage");
    mote_jw_obj(w);
    mote_jw_kint(w, "prompt_tokens", (int64_t)prompt);
    mote_jw_kint(w, "completion_tokens", (int64_t)u->output_tokens);
    mote_jw_kint(w, "total_tokens", (int64_t)(prompt + u->output_tokens));
    mote_jw_key(w, "prompt_tokens_details");
    mote_jw_obj(w);
    mote_jw_kint(w, "cached_tokens", (int64_t)u->cache_read_tokens);
    mote_jw_obj_end(w);
    mote_jw_obj_end(w);
}

/* "usage":{...} as text (a member after others). */
static void usage_str(struct mote_sb *sb, const struct mote_usage *u)
{
    uint64_t prompt = u->input_tokens + u->cache_read_tokens + u->cache_write_tokens;

    mote_sb_num(sb, "\"usage\":{\"prompt_tokens\":", prompt, ",\"completion_tokens\":");
    mote_sb_num(sb, "", u->output_tokens, ",\"total_tokens\":");
    mote_sb_num(sb, "", prompt + u->output_tokens, ",\"prompt_tokens_details\":{\"cached_tokens\":");
    mote_sb_num(sb, "", u->cache_read_tokens, "}}");
}

/* A completion answered whole: its turn ended. */
static void oai_answer(struct serve *sv, struct serve_follow *f)
{
    struct mote_httpd_conn *c;
    char extra[MOTE_CONV_ID_MAX + 40];
    struct mote_sb sb;

    if (f->chan < 0 || f->chan >= MOTE_SERVE_MAX_CONNS) {
        mote_serve_follow_free(sv, f);
        return;
    }
    c = &sv->http.conns[f->chan];
    if (!c->deferred)
        return; /* (answered already) */
    if (f->is_error) {
        char m[MOTE_JOB_ERRMSG_LEN + 120];
        size_t k = f->text_len < sizeof(m) - 1 ? f->text_len : sizeof(m) - 1;
        int rc = f->err_code;
        const char *name = f->err_name;

        memcpy(m, f->text, k);
        m[k] = '\0';
        mote_serve_follow_free(sv, f);
        fail(sv, c, rc, name, m);
        mote_httpd_poke(&sv->http, c);
        return;
    }
    mote_sb_init(&sb, extra, sizeof(extra));
    mote_sb_join(&sb, "X-Mote-Conversation: ", f->conv, "\r\n");
    if (!mote_httpd_stream_head(c, "application/json", extra, false)) {
        mote_serve_follow_free(sv, f);
        c->out_len = 0;
        mote_serve_oai_error(sv, c, 500, "internal", "the response head does not fit", NULL);
        mote_httpd_poke(&sv->http, c);
        return;
    }
    mote_httpd_respond(c, true);
    mote_httpd_poke(&sv->http, c);
}

void mote_serve_oai_init(struct serve *sv)
{
    sv->mcp.oai_answer = oai_answer;
}

/* A whole completion's body, in parts as the connection takes them. */
static size_t fill_whole(struct serve *sv, struct serve_follow *f, char *out, size_t room)
{
    char hb[MOTE_CONV_ID_MAX + 400], tb[400];
    struct mote_sb h, t;
    struct mote_jw w;

    mote_sb_init(&h, hb, sizeof(hb));
    mote_jw_init(&w, mote_sb_put, &h);
    opening(sv, f, &w, "chat.completion");
    mote_sb_s(&h, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"");
    mote_sb_init(&t, tb, sizeof(tb));
    if (f->overflow)
        mote_sb_num(&t, "\\n[", f->dropped, " more bytes of the answer are in its conversation]");
    mote_sb_s(&t, "\"},\"logprobs\":null,\"finish_reason\":\"");
    mote_sb_s(&t, finish_of(f->stop));
    mote_sb_s(&t, "\"}],");
    usage_str(&t, &f->usage);
    mote_sb_s(&t, "}");
    return mote_serve_follow_write(f, hb, h.len, tb, t.len, out, room);
}

/* One event "data: JSON\n\n" (JSON in sv->resp) into out, whole or not. */
static size_t event(struct serve *sv, size_t n, char *out, size_t room)
{
    if (n == 0 || n + 8 > room)
        return 0;
    memcpy(out, "data: ", 6);
    memcpy(out + 6, sv->resp, n);
    memcpy(out + 6 + n, "\n\n", 2);
    return n + 8;
}

/* A chunk with delta `delta` (raw JSON) and finish_reason into sv->resp. */
static size_t chunk_json(struct serve *sv, struct serve_follow *f, const char *delta,
                         const char *finish, bool usage)
{
    struct mote_sb sb;
    struct mote_jw w;

    mote_sb_init(&sb, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &sb);
    opening(sv, f, &w, "chat.completion.chunk");
    mote_jw_key(&w, "choices");
    mote_jw_arr(&w);
    if (!usage) {
        mote_jw_obj(&w);
        mote_jw_kint(&w, "index", 0);
        mote_jw_key(&w, "delta");
        mote_jw_raw(&w, delta, strlen(delta));
        mote_jw_key(&w, "finish_reason");
        if (finish != NULL)
            mote_jw_str(&w, finish);
        else
            mote_jw_null(&w);
        mote_jw_obj_end(&w);
    }
    mote_jw_arr_end(&w);
    if (usage)
        usage_obj(&w, &f->usage);
    mote_jw_obj_end(&w);
    return w.err == 0 ? sb.len : 0;
}

/* A streamed completion: its chunks as the text comes, then its end. */
static size_t fill_stream(struct serve *sv, struct serve_follow *f, char *out, size_t room,
                          bool *over)
{
    size_t w = 0, n;

    *over = false;
    if (!f->role_sent) {
        n = event(sv, chunk_json(sv, f, "{\"role\":\"assistant\",\"content\":\"\"}", NULL, false),
                  out, room);
        if (n == 0)
            return 0;
        w += n;
        f->role_sent = true;
    }
    while (f->sent < f->text_len) {
        /* the chunk's JSON around its text: made with an empty text, cut
         * where the text goes */
        size_t pre, post, k, before = f->sent;
        const char *mark;

        n = chunk_json(sv, f, "{\"content\":\"\"}", NULL, false);
        mark = n > 0 ? strstr(sv->resp, "\"delta\":{\"content\":\"") : NULL;
        if (mark == NULL)
            return w;
        pre = (size_t)(mark - sv->resp) + 20;
        post = n - pre;
        if (w + 6 + pre + post + 2 + 8 > room)
            return w;
        memcpy(out + w, "data: ", 6);
        memcpy(out + w + 6, sv->resp, pre);
        k = mote_serve_json_piece(f->text, f->text_len, &f->sent, out + w + 6 + pre,
                                  room - w - 6 - pre - post - 2);
        if (k == 0 && f->sent == before)
            return w;
        memcpy(out + w + 6 + pre + k, sv->resp + pre, post);
        memcpy(out + w + 6 + pre + k + post, "\n\n", 2);
        w += 6 + pre + k + post + 2;
    }
    if (f->phase != SFP_DONE)
        return w;
    if (f->is_error) {
        /* the model's failure after the stream began: a server error */
        n = error_body(sv->resp, sizeof(sv->resp), 500,
                       f->err_name != NULL ? f->err_name : mote_err_name(f->err_code), f->err);
        if (n == 0 || w + n + 8 + 14 > room)
            return w;
        w += event(sv, n, out + w, room - w);
    } else {
        size_t a = chunk_json(sv, f, "{}", finish_of(f->stop), false), b;

        if (a == 0 || w + a + 8 > room)
            return w;
        w += event(sv, a, out + w, room - w);
        if (f->include_usage) {
            b = chunk_json(sv, f, "{}", NULL, true);
            if (b == 0 || w + b + 8 + 14 > room) {
                f->include_usage = false; /* (said next time without it) */
                return w;
            }
            w += event(sv, b, out + w, room - w);
        }
    }
    if (w + 14 > room)
        return w;
    memcpy(out + w, "data: [DONE]\n\n", 14);
    *over = true;
    return w + 14;
}

bool mote_serve_oai_fill(struct serve *sv, struct mote_httpd_conn *c)
{
    int idx = conn_index(sv, c);
    struct serve_follow *f = follow_of(sv, idx);
    size_t mark, room, n;
    bool over = false;

    if (c->deferred)
        return false; /* answered once its turn ends */
    if (f == NULL)
        return mote_httpd_end_once(c);
    room = mote_httpd_chunk_room(c, 64, &mark);
    if (room == 0)
        return false;
    if (sv->mcp.chans[idx].kind == SC_OAI_STREAM) {
        n = fill_stream(sv, f, c->io->out + c->out_len, room, &over);
    } else {
        n = fill_whole(sv, f, c->io->out + c->out_len, room);
        over = f->out_part >= 4;
    }
    c->out_len += n;
    mote_httpd_chunk_close(c, mark);
    if (over) {
        mote_serve_follow_free(sv, f);
        mote_httpd_chunk_end(c);
        c->ended = true;
        return true;
    }
    return n > 0;
}

void mote_serve_oai_ping(struct serve *sv, struct mote_httpd_conn *c)
{
    struct serve_follow *f = follow_of(sv, conn_index(sv, c));
    size_t mark;

    if (sv->mcp.chans[conn_index(sv, c)].kind != SC_OAI_STREAM ||
        (f != NULL && f->out_part > 0) || !mote_httpd_chunk_open(c, &mark))
        return;
    (void)mote_httpd_outs(c, ": ping\n\n");
    mote_httpd_chunk_close(c, mark);
}

void mote_serve_oai_done(struct serve *sv, struct mote_httpd_conn *c)
{
    int idx = conn_index(sv, c);

    mote_serve_follow_chan_gone(sv, idx);
    memset(&sv->mcp.chans[idx], 0, sizeof(sv->mcp.chans[idx]));
}
