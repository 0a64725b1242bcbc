/*
 * serve_mcp.c - mote serve's MCP server apart from its transports
 * (serve_mcp.h): its sessions; JSON-RPC messages read strictly
 * (initialize, ping, tools/list with its cursor, tools/call of a device
 * tool or of `ask`, notifications/initialized and /cancelled, the
 * answer to an elicitation); the device's tools as offered. What a
 * channel writes is serve_mcp_out.c's.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

/* The protocol versions taken, newest first; those before V_NO_ELICIT
 * know elicitation. A client asking for another (a newer one) is
 * answered with the first: it goes on with it if it knows it. */
static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
#define V_NO_ELICIT 1
#define V_BATCH 1 /* 2025-03-26 takes batches (2025-06-18 removed them) */

/* JSON-RPC's error codes. */
#define RPC_PARSE (-32700)
#define RPC_INVALID (-32600)
#define RPC_METHOD (-32601)
#define RPC_PARAMS (-32602)
#define RPC_INTERNAL (-32603)
#define RPC_BUSY (-32000) /* mote's: no room now */

static const char ask_desc[] =
    "Ask this device's own agent (an LLM with the device's tools, under its approval policy) a "
    "question or give it a task, in plain words; the result is its final answer. Pass "
    "`conversation` to go on with an earlier conversation (its id is in the result); without "
    "it a new conversation begins.";
static const char ask_schema[] =
    "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\",\"description\":\"What to "
    "ask or do, in plain words.\"},\"conversation\":{\"type\":\"string\",\"description\":\"The id "
    "of a conversation to go on with (1 to 39 of A-Z a-z 0-9 _ -); a new one if it does not "
    "exist.\"}},\"required\":[\"prompt\"]}";
static const char instructions[] =
    "mote: the tools of this device (each call runs under the device's approval policy and may "
    "wait for a person's approval), and `ask`, which hands a question or a task to the device's "
    "own agent.";

void mote_serve_mcp_init(struct serve *sv)
{
    struct serve_mcp *m = &sv->mcp;
    unsigned i;

    memset(m, 0, offsetof(struct serve_mcp, follows));
    m->pipe.get_chan = -1;
    for (i = 0; i < MOTE_SERVE_MCP_SESSIONS; i++)
        m->sess[i].get_chan = -1;
    m->next_elicit = 1;
    m->pass_mcp = sv->conf.mcp_pass_tools;
    mote_serve_follow_init(sv);
}

static int sess_index(const struct serve *sv, const struct serve_mcp_sess *se)
{
    return se == &sv->mcp.pipe ? -1 : (int)(se - sv->mcp.sess);
}

struct serve_mcp_sess *mote_serve_mcp_find(struct serve *sv, const char *id)
{
    unsigned i, k, diff;

    if (id == NULL || strlen(id) != 32)
        return NULL;
    for (i = 0; i < MOTE_SERVE_MCP_SESSIONS; i++) {
        struct serve_mcp_sess *se = &sv->mcp.sess[i];

        if (!se->used)
            continue;
        /* compared whole, in constant time: an id is what a client holds */
        for (k = 0, diff = 0; k < 32; k++)
            diff |= (unsigned)(unsigned char)se->id[k] ^ (unsigned)(unsigned char)id[k];
        if (diff == 0) {
            se->used_at = ++sv->mcp.clock;
            return se;
        }
    }
    return NULL;
}

void mote_serve_mcp_end(struct serve *sv, struct serve_mcp_sess *se)
{
    int idx = sess_index(sv, se);
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind != SF_FREE && (f->kind == SF_CALL || f->kind == SF_ASK) && f->sess == idx &&
            f->sess_gen == se->gen)
            mote_serve_follow_cancel(sv, f);
    }
    if (se->get_chan >= 0) {
        sv->mcp.chans[se->get_chan].ended = true; /* its stream ends */
        mote_serve_chan_poke(sv, se->get_chan);
    }
    se->get_chan = -1;
    se->used = false;
}

/* Bytes for an id (a session's, our requests'): the kernel's generator
 * where the port has it, else the port's other bytes. */
static void id_bytes(struct serve *sv, unsigned char *r, size_t n)
{
    const struct mote_port *p = sv->port;
    int wfd = -1;

    memset(r, 0, n);
    if (MOTE_PORT_HAS(p, random_secret) && p->random_secret(p->ctx, r, n, &wfd) == 0)
        return;
    if (MOTE_PORT_HAS(p, random))
        (void)p->random(p->ctx, r, n);
}

/* A session for a client that initializes: a free slot, else the one
 * used least recently that runs nothing (its client, if it comes back,
 * gets 404 and makes a new one). NULL: every one runs something. */
static struct serve_mcp_sess *sess_new(struct serve *sv)
{
    static const char hex[] = "0123456789abcdef";
    struct serve_mcp_sess *se = NULL;
    unsigned char r[16];
    unsigned i, k;

    for (i = 0; i < MOTE_SERVE_MCP_SESSIONS && se == NULL; i++) {
        if (!sv->mcp.sess[i].used)
            se = &sv->mcp.sess[i];
    }
    for (i = 0; i < MOTE_SERVE_MCP_SESSIONS && (se == NULL || se->used); i++) {
        struct serve_mcp_sess *c = &sv->mcp.sess[i];
        bool busy = false;

        for (k = 0; k < MOTE_SERVE_FOLLOWS; k++)
            busy = busy || (sv->mcp.follows[k].kind != SF_FREE && sv->mcp.follows[k].sess == (int)i);
        if (!busy && (se == NULL || mote_before(c->used_at, se->used_at)))
            se = c;
    }
    if (se == NULL)
        return NULL;
    if (se->used) {
        mote_httpd_say(&sv->http, "mcp: let go of the session of ",
                       se->client[0] != '\0' ? se->client : "a client",
                       " (used least recently) for a new one");
        mote_serve_mcp_end(sv, se);
    }
    i = se->gen + 1;
    memset(se, 0, sizeof(*se));
    se->gen = i;
    se->used = true;
    se->get_chan = -1;
    se->used_at = ++sv->mcp.clock;
    se->list_gen = sv->mcp.list_gen;
    id_bytes(sv, r, sizeof(r));
    for (k = 0; k < sizeof(r); k++) {
        se->id[2 * k] = hex[r[k] >> 4];
        se->id[2 * k + 1] = hex[r[k] & 15u];
    }
    se->id[32] = '\0';
    return se;
}

/* ---- the tools offered -------------------------------------------------------------- */

struct offered {
    const char *name, *desc, *schema;
    bool read_only;
    bool ask;
};

static bool pass_mcp(const struct serve *sv)
{
    return sv->mcp.pass_mcp && sv->conf.conv->mcp && sv->conf.session->mcp != NULL;
}

/* The i-th tool offered: the registry's (when conversations offer it;
 * one named `ask` gives way to mote's), the MCP servers' (passed on when
 * configured so), then `ask`. False past the last. */
static bool offered(struct serve *sv, unsigned i, struct offered *o)
{
    const struct mote_session *s = sv->conf.session;
    unsigned k, t;

    memset(o, 0, sizeof(*o));
    if (sv->conf.conv->tools) {
        for (k = 0; k < s->ntools; k++) {
            const struct mote_tool *tl = s->tools[k];

            if (strcmp(tl->name, "ask") == 0)
                continue;
            if (i-- == 0) {
                o->name = tl->name;
                o->desc = tl->description != NULL ? tl->description : "";
                o->schema = tl->schema;
                o->read_only = (tl->flags & MOTE_TOOL_NO_APPROVAL) != 0;
                return true;
            }
        }
    }
    if (pass_mcp(sv)) {
        const struct mote_mcp *m = s->mcp;

        for (k = 0; k < m->n; k++) {
            const struct mote_mcp_server *srv = &m->srv[k];

            if (srv->state != MOTE_MCP_READY)
                continue;
            for (t = 0; t < srv->ntools; t++) {
                if (i-- == 0) {
                    o->name = srv->tools[t].name;
                    o->desc = srv->tools[t].desc;
                    o->schema = srv->tools[t].schema;
                    return true;
                }
            }
        }
    }
    if (i == 0) {
        o->name = "ask";
        o->desc = ask_desc;
        o->schema = ask_schema;
        o->ask = true;
        return true;
    }
    return false;
}

/* Tool `name` is offered (*ask: it is mote's `ask`). */
static bool offers(struct serve *sv, const char *name, bool *ask)
{
    struct offered o;
    unsigned i;

    *ask = false;
    for (i = 0; offered(sv, i, &o); i++) {
        if (strcmp(o.name, name) == 0) {
            *ask = o.ask;
            return true;
        }
    }
    return false;
}

/* A hash of the tools offered (names, descriptions, schemas): a change
 * is a new list. */
static uint32_t tools_sig(struct serve *sv)
{
    uint32_t h = 2166136261u;
    struct offered o;
    unsigned i, k;
    const char *p;

    for (i = 0; offered(sv, i, &o); i++) {
        const char *parts[3] = {o.name, o.desc, o.schema};

        for (k = 0; k < 3; k++) {
            for (p = parts[k]; *p != '\0'; p++)
                h = (h ^ (unsigned char)*p) * 16777619u;
            h = (h ^ 0xffu) * 16777619u;
        }
    }
    return h != 0 ? h : 1u; /* (0: not taken yet) */
}

void mote_serve_mcp_tools_changed(struct serve *sv)
{
    unsigned i;

    sv->mcp.list_gen++;
    sv->mcp.list_sig = tools_sig(sv);
    for (i = 0; i < MOTE_SERVE_MCP_SESSIONS; i++) {
        struct serve_mcp_sess *se = &sv->mcp.sess[i];

        if (!se->used || !se->initialized)
            continue;
        se->list_changed = true;
        if (se->get_chan >= 0)
            mote_serve_chan_poke(sv, se->get_chan);
    }
    if (sv->mcp.pipe.used && sv->mcp.pipe.initialized) {
        sv->mcp.pipe.list_changed = true;
        mote_serve_chan_poke(sv, SERVE_CHAN_STDIO);
    }
}

void mote_serve_mcp_check_tools(struct serve *sv)
{
    uint32_t sig = tools_sig(sv);

    if (sv->mcp.list_sig == 0) {
        sv->mcp.list_sig = sig; /* the list at the start (the server listens) */
        return;
    }
    if (sig != sv->mcp.list_sig) {
        mote_httpd_say(&sv->http, "mcp: the tools offered changed: sessions are told", NULL, NULL);
        mote_serve_mcp_tools_changed(sv);
    }
}

/* ---- answers in sv->scratch, one a line ---------------------------------------------- */

struct ans {
    struct serve *sv;
    struct serve_mcp_in *in;
    struct mote_sb sb;
    size_t mark;
};

/* The raw JSON of token `t` (a string with its quotes). */
static const char *raw_of(const struct mote_json *j, int t, size_t *n)
{
    const char *r = mote_json_raw(j, t, n);

    if (r != NULL && mote_json_type_of(j, t) == MOTE_JSON_STRING) {
        r--;
        *n += 2;
    }
    return r;
}

/* A JSON-RPC id or a progress token (a string or an integer), raw, into
 * `out`. Returns 0, MOTE_ERR_INVAL (another type, a fraction) or
 * MOTE_ERR_TOO_LARGE. */
static int id_of(const struct mote_json *j, int t, char *out, size_t cap)
{
    int64_t v;
    const char *r;
    size_t n = 0;

    if (mote_json_type_of(j, t) == MOTE_JSON_PRIMITIVE) {
        if (mote_json_int(j, t, &v) < 0)
            return MOTE_ERR_INVAL;
    } else if (mote_json_type_of(j, t) != MOTE_JSON_STRING) {
        return MOTE_ERR_INVAL;
    }
    r = raw_of(j, t, &n);
    if (r == NULL || n + 1 > cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(out, r, n);
    out[n] = '\0';
    return 0;
}

void mote_serve_rpc_open(struct mote_jw *w, const char *id)
{
    mote_jw_obj(w);
    mote_jw_kstr(w, "jsonrpc", "2.0");
    mote_jw_key(w, "id");
    if (id != NULL && id[0] != '\0')
        mote_jw_raw(w, id, strlen(id));
    else
        mote_jw_null(w);
}

void mote_serve_rpc_error(struct mote_jw *w, const char *id, int code, const char *msg)
{
    mote_serve_rpc_open(w, id);
    mote_jw_key(w, "error");
    mote_jw_obj(w);
    mote_jw_kint(w, "code", code);
    mote_jw_kstr(w, "message", msg);
    mote_jw_obj_end(w);
    mote_jw_obj_end(w);
}

static void ans_begin(struct ans *a, struct mote_jw *w, const char *id)
{
    a->mark = a->sb.len;
    mote_jw_init(w, mote_sb_put, &a->sb);
    mote_serve_rpc_open(w, id);
}

static void ans_error(struct ans *a, const char *id, int code, const char *msg);

/* The answer begun at a->mark is whole: kept, or, when it did not fit,
 * taken back. */
static void ans_close(struct ans *a, struct mote_jw *w, const char *id)
{
    if (w->err != 0) {
        /* it does not fit what is left: said instead, in few bytes */
        a->sb.len = a->mark;
        a->sb.p[a->mark] = '\0';
        if (w->err == MOTE_ERR_TOO_LARGE && a->sb.cap - a->sb.len > 200)
            ans_error(a, id, RPC_INTERNAL, "the answer is larger than mote holds at once");
        return;
    }
    (void)mote_sb_put(&a->sb, "\n", 1);
    a->in->answers++;
}

static void ans_end(struct ans *a, struct mote_jw *w, const char *id)
{
    mote_jw_obj_end(w);
    ans_close(a, w, id);
}

static void ans_error(struct ans *a, const char *id, int code, const char *msg)
{
    struct mote_jw w;

    a->mark = a->sb.len;
    mote_jw_init(&w, mote_sb_put, &a->sb);
    mote_serve_rpc_error(&w, id, code, msg);
    ans_close(a, &w, id);
}

/* The whole body is refused (HTTP 400 with this error, id null). */
static void refuse(struct ans *a, int status, int code, const char *msg)
{
    a->sb.len = 0;
    a->sb.p[0] = '\0';
    a->in->answers = 0;
    a->in->refused = true;
    a->in->status = status;
    ans_error(a, NULL, code, msg);
}

/* ---- methods ---------------------------------------------------------------------- */

static void do_initialize(struct ans *a, const char *id, int params)
{
    struct serve *sv = a->sv;
    struct serve_mcp_in *in = a->in;
    const struct mote_json *j = &sv->json;
    int caps = mote_json_member(j, params, "capabilities");
    int info = mote_json_member(j, params, "clientInfo");
    int pv = mote_json_member(j, params, "protocolVersion");
    struct serve_mcp_sess *se;
    unsigned v = 0, i;
    struct mote_jw w;

    if (mote_json_type_of(j, pv) != MOTE_JSON_STRING) {
        ans_error(a, id, RPC_PARAMS, "initialize needs params.protocolVersion (a string)");
        return;
    }
    for (i = 0; i < MOTE_ARRAY_LEN(versions); i++) {
        if (mote_json_eq(j, pv, versions[i]))
            v = i;
    }
    if (in->http) {
        se = sess_new(sv);
        if (se == NULL) {
            ans_error(a, id, RPC_BUSY,
                      "busy: every MCP session (MOTE_SERVE_MCP_SESSIONS) runs a call; try again");
            return;
        }
        in->made = se;
    } else {
        se = &sv->mcp.pipe;
        i = se->gen + 1;
        memset(se, 0, sizeof(*se));
        se->gen = i;
        se->used = true;
        se->get_chan = -1;
        se->list_gen = sv->mcp.list_gen;
    }
    in->se = se;
    se->version = (uint8_t)v;
    se->elicit = v < V_NO_ELICIT &&
                 mote_json_type_of(j, mote_json_member(j, caps, "elicitation")) == MOTE_JSON_OBJECT;
    if (mote_json_cstr(j, mote_json_member(j, info, "name"), se->client, sizeof(se->client)) < 0)
        se->client[0] = '\0';
    for (i = 0; se->client[i] != '\0'; i++) {
        if ((unsigned char)se->client[i] < 0x20 || se->client[i] == 0x7f)
            se->client[i] = '?'; /* it goes to the log */
    }
    mote_httpd_say(&sv->http, "mcp: session of ", se->client[0] != '\0' ? se->client : "a client",
                   se->elicit ? " (it can be asked for approvals)" : "");
    ans_begin(a, &w, id);
    mote_jw_key(&w, "result");
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "protocolVersion", versions[v]);
    mote_jw_key(&w, "capabilities");
    mote_jw_obj(&w);
    mote_jw_key(&w, "tools");
    mote_jw_obj(&w);
    mote_jw_kbool(&w, "listChanged", true);
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    mote_jw_key(&w, "serverInfo");
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "name", "mote");
    mote_jw_kstr(&w, "version", mote_version());
    mote_jw_obj_end(&w);
    mote_jw_kstr(&w, "instructions", instructions);
    mote_jw_obj_end(&w);
    ans_end(a, &w, id);
}

/* The cursor "GEN.INDEX" into *start; false if it is not one of this
 * list's. */
static bool cursor_of(const struct serve *sv, const char *s, unsigned *start)
{
    const char *dot = strchr(s, '.');
    uint64_t g, i;

    if (dot == NULL || mote_dec_parse(s, (size_t)(dot - s), &g) < 0 ||
        mote_dec_parse(dot + 1, strlen(dot + 1), &i) < 0 || g != sv->mcp.list_gen ||
        i > 100000)
        return false;
    *start = (unsigned)i;
    return true;
}

static void do_list(struct ans *a, const char *id, int params)
{
    struct serve *sv = a->sv;
    const struct mote_json *j = &sv->json;
    int ct = mote_json_member(j, params, "cursor");
    unsigned start = 0, i, n = 0;
    size_t page_end;
    struct offered o;
    struct mote_jw w;
    char cur[48];

    if (ct >= 0 && !mote_json_is_null(j, ct)) {
        if (mote_json_cstr(j, ct, cur, sizeof(cur)) < 0 || !cursor_of(sv, cur, &start)) {
            ans_error(a, id, RPC_PARAMS,
                      "not a cursor of this tool list (it may have changed): list from the start");
            return;
        }
    }
    ans_begin(a, &w, id);
    page_end = a->sb.len + (sv->conf.mcp_page_bytes > 0 && sv->conf.mcp_page_bytes < MOTE_SERVE_MCP_PAGE
                                ? sv->conf.mcp_page_bytes
                                : MOTE_SERVE_MCP_PAGE);
    mote_jw_key(&w, "result");
    mote_jw_obj(&w);
    mote_jw_key(&w, "tools");
    mote_jw_arr(&w);
    for (i = start; offered(sv, i, &o); i++) {
        size_t before = a->sb.len;

        /* a page holds what fits MOTE_SERVE_MCP_PAGE, and one tool at least */
        if (n > 0 && a->sb.len >= page_end)
            break;
        mote_jw_obj(&w);
        mote_jw_kstr(&w, "name", o.name);
        mote_jw_kstr(&w, "description", o.desc);
        mote_jw_key(&w, "inputSchema");
        mote_jw_raw(&w, o.schema, strlen(o.schema));
        if (o.read_only) {
            mote_jw_key(&w, "annotations");
            mote_jw_obj(&w);
            mote_jw_kbool(&w, "readOnlyHint", true);
            mote_jw_obj_end(&w);
        }
        mote_jw_obj_end(&w);
        if (w.err != 0 || (n > 0 && a->sb.len > page_end)) {
            if (n == 0)
                break; /* one alone does not fit: said below */
            /* the next page begins with it */
            a->sb.len = before;
            a->sb.p[before] = '\0';
            w.err = 0;
            break;
        }
        n++;
    }
    mote_jw_arr_end(&w);
    if (offered(sv, start + n, &o) && n > 0) {
        struct mote_sb cb;

        mote_sb_init(&cb, cur, sizeof(cur));
        mote_sb_u(&cb, sv->mcp.list_gen);
        mote_sb_s(&cb, ".");
        mote_sb_u(&cb, start + n);
        mote_jw_kstr(&w, "nextCursor", cur);
    }
    mote_jw_obj_end(&w);
    ans_end(a, &w, id);
}

/* tools/call: a device tool in the session's calls conversation, or
 * `ask`; its answer comes later on the channel. */
static void do_call(struct ans *a, const char *id, int params)
{
    struct serve *sv = a->sv;
    struct serve_mcp_in *in = a->in;
    const struct mote_json *j = &sv->json;
    int nt = mote_json_member(j, params, "name"), at = mote_json_member(j, params, "arguments");
    int meta = mote_json_member(j, params, "_meta");
    int tok = mote_json_member(j, meta, "progressToken");
    char name[MOTE_LLM_NAME_MAX];
    struct serve_follow *f;
    const char *args = "{}";
    size_t args_len = 2;
    bool ask;
    int rc;

    if (mote_json_cstr(j, nt, name, sizeof(name)) <= 0) {
        ans_error(a, id, RPC_PARAMS, "tools/call needs params.name (a tool's name)");
        return;
    }
    if (at >= 0 && !mote_json_is_null(j, at)) {
        if (mote_json_type_of(j, at) != MOTE_JSON_OBJECT) {
            ans_error(a, id, RPC_PARAMS, "params.arguments must be an object");
            return;
        }
        args = mote_json_raw(j, at, &args_len);
    }
    if (!offers(sv, name, &ask)) {
        char m[MOTE_LLM_NAME_MAX + 40];

        mote_str_join(m, sizeof(m), "unknown tool: ", name, NULL);
        ans_error(a, id, RPC_PARAMS, m);
        return;
    }
    if (tok >= 0 && mote_json_type_of(j, tok) != MOTE_JSON_STRING &&
        mote_json_type_of(j, tok) != MOTE_JSON_PRIMITIVE) {
        ans_error(a, id, RPC_PARAMS, "_meta.progressToken must be a string or an integer");
        return;
    }
    f = mote_serve_follow_new(sv, ask ? SF_ASK : SF_CALL, in->chan);
    if (f == NULL) {
        ans_error(a, id, RPC_BUSY,
                  "busy: mote runs as many calls as it follows at once (MOTE_SERVE_FOLLOWS); try "
                  "again");
        return;
    }
    mote_str_copy(f->rpc_id, sizeof(f->rpc_id), id);
    if (tok >= 0 && id_of(j, tok, f->token, sizeof(f->token)) < 0) {
        mote_serve_follow_free(sv, f);
        ans_error(a, id, RPC_PARAMS, "_meta.progressToken must be a string or an integer");
        return;
    }
    f->sess = (int16_t)sess_index(sv, in->se);
    f->sess_gen = in->se->gen;
    in->started++;
    if (!ask) {
        (void)mote_serve_follow_start(sv, f, name, args, args_len);
        return;
    }
    /* ask: the prompt, kept in the follow while its conversation loads */
    {
        int pt = mote_json_member(j, at, "prompt"), ct = mote_json_member(j, at, "conversation");
        int n = mote_json_type_of(j, pt) == MOTE_JSON_STRING
                    ? mote_json_str(j, pt, f->text, sizeof(f->text))
                    : MOTE_ERR_INVAL;
        const char *bad = n > 0 ? NULL
                                : "`prompt` must be a string that is not empty, of at most "
                                  "MOTE_SERVE_FOLLOW_TEXT bytes";

        if (bad == NULL && ct >= 0 && !mote_json_is_null(j, ct)) {
            rc = mote_json_cstr(j, ct, f->conv, sizeof(f->conv));
            f->named = true;
            if (rc <= 0 || !mote_serve_id_ok(f->conv, (size_t)rc))
                bad = "`conversation` must be 1 to 39 of A-Z a-z 0-9 _ -";
        }
        if (bad != NULL) {
            /* a tool's input error is the tool's result (the model reads it) */
            f->is_error = true;
            f->text_len = strlen(bad);
            memcpy(f->text, bad, f->text_len);
            f->phase = SFP_DONE;
            return;
        }
        f->text_len = (size_t)n;
        f->kept = true;
        (void)mote_serve_follow_start(sv, f, NULL, f->text, f->text_len);
    }
}

/* notifications/cancelled: the client's call of that id stops. */
static void do_cancelled(struct ans *a, int params)
{
    struct serve *sv = a->sv;
    const struct mote_json *j = &sv->json;
    char rid[MOTE_SERVE_MCP_ID_MAX];
    int idx = a->in->se != NULL ? sess_index(sv, a->in->se) : -2;
    unsigned i;

    if (a->in->se == NULL ||
        id_of(j, mote_json_member(j, params, "requestId"), rid, sizeof(rid)) < 0)
        return; /* a notification has no answer, even when it is wrong */
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind != SF_FREE && (f->kind == SF_CALL || f->kind == SF_ASK) && f->sess == idx &&
            f->sess_gen == a->in->se->gen && strcmp(f->rpc_id, rid) == 0) {
            mote_httpd_say(&sv->http, "mcp: the client cancelled its call of ", f->what, NULL);
            mote_serve_follow_cancel(sv, f);
        }
    }
}

/* The client's answer to a request of ours: an elicited approval. */
static void take_answer(struct ans *a, int t)
{
    struct serve *sv = a->sv;
    const struct mote_json *j = &sv->json;
    int res = mote_json_member(j, t, "result"), act = mote_json_member(j, res, "action");
    int content = mote_json_member(j, res, "content");
    int idx = a->in->se != NULL ? sess_index(sv, a->in->se) : -2;
    enum mote_answer ans = MOTE_ANSWER_NO;
    char reason[160] = "declined in the MCP client";
    struct mote_conv *cv;
    int64_t id = 0;
    unsigned i;

    if (a->in->se == NULL || mote_json_int(j, mote_json_member(j, t, "id"), &id) < 0)
        return;
    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind == SF_FREE || f->elicit != SE_SENT || f->elicit_id != id || f->sess != idx ||
            f->sess_gen != a->in->se->gen)
            continue;
        f->elicit = SE_NONE;
        if (res < 0)
            return; /* an error: the device's front doors still answer it */
        if (mote_json_eq(j, act, "accept")) {
            int at = mote_json_member(j, content, "answer"), rt = mote_json_member(j, content, "reason");

            if (mote_json_eq(j, at, "yes"))
                ans = MOTE_ANSWER_YES;
            else if (mote_json_eq(j, at, "always"))
                ans = MOTE_ANSWER_ALWAYS;
            else if (!mote_json_eq(j, at, "no"))
                return; /* not one of the answers: nothing is decided */
            if (rt >= 0 && mote_json_cstr(j, rt, reason, sizeof(reason)) < 0)
                mote_str_copy(reason, sizeof(reason), "refused in the MCP client");
            if (ans == MOTE_ANSWER_NO && rt < 0)
                mote_str_copy(reason, sizeof(reason), "refused in the MCP client");
        } else if (!mote_json_eq(j, act, "decline") && !mote_json_eq(j, act, "cancel")) {
            return;
        }
        if (mote_serve_approve(sv, f->conv, f->ask_call, f->ask_id, ans,
                               ans == MOTE_ANSWER_NO ? reason : NULL, &cv) == 0)
            mote_httpd_say(&sv->http, "mcp: approval answered by the client of ", f->conv, NULL);
        return;
    }
}

/* One message (token t of sv->json). */
static void one(struct ans *a, int t, bool in_batch)
{
    struct serve *sv = a->sv;
    struct serve_mcp_in *in = a->in;
    const struct mote_json *j = &sv->json;
    int mt = mote_json_member(j, t, "method"), it = mote_json_member(j, t, "id");
    int params = mote_json_member(j, t, "params");
    char id[MOTE_SERVE_MCP_ID_MAX], method[48];
    bool request;

    id[0] = '\0';
    if (mote_json_type_of(j, t) != MOTE_JSON_OBJECT ||
        !mote_json_eq(j, mote_json_member(j, t, "jsonrpc"), "2.0")) {
        ans_error(a, NULL, RPC_INVALID, "not a JSON-RPC 2.0 message (an object with \"jsonrpc\": "
                                        "\"2.0\")");
        return;
    }
    if (it >= 0 && id_of(j, it, id, sizeof(id)) < 0) {
        ans_error(a, NULL, RPC_INVALID, "an id is a string or an integer, at most "
                                        "MOTE_SERVE_MCP_ID_MAX bytes");
        return;
    }
    if (mt < 0) {
        if (it >= 0 && (mote_json_member(j, t, "result") >= 0 ||
                        mote_json_member(j, t, "error") >= 0)) {
            take_answer(a, t);
            return;
        }
        ans_error(a, id, RPC_INVALID, "a message needs a method (or is an answer: result, error)");
        return;
    }
    request = it >= 0;
    if (mote_json_cstr(j, mt, method, sizeof(method)) <= 0) {
        if (request)
            ans_error(a, id, RPC_METHOD, "unknown method");
        return;
    }
    if (params >= 0 && mote_json_type_of(j, params) != MOTE_JSON_OBJECT) {
        if (request)
            ans_error(a, id, RPC_PARAMS, "params must be an object");
        return;
    }
    if (!request) {
        if (strcmp(method, "notifications/initialized") == 0 && in->se != NULL)
            in->se->initialized = true;
        else if (strcmp(method, "notifications/cancelled") == 0)
            do_cancelled(a, params);
        return; /* others (progress, roots changed) need nothing */
    }
    if (strcmp(method, "initialize") == 0) {
        if (in_batch)
            ans_error(a, id, RPC_INVALID, "initialize cannot be in a batch");
        else
            do_initialize(a, id, params);
        return;
    }
    if (in->se == NULL) {
        if (in->http) {
            refuse(a, 400, RPC_INVALID,
                   "Bad Request: no Mcp-Session-Id header (initialize first: its answer has one)");
            return;
        }
        if (strcmp(method, "ping") != 0) {
            ans_error(a, id, RPC_INVALID, "not initialized: send initialize first");
            return;
        }
    }
    if (strcmp(method, "ping") == 0) {
        struct mote_jw w;

        ans_begin(a, &w, id);
        mote_jw_key(&w, "result");
        mote_jw_obj(&w);
        mote_jw_obj_end(&w);
        ans_end(a, &w, id);
    } else if (strcmp(method, "tools/list") == 0) {
        do_list(a, id, params);
    } else if (strcmp(method, "tools/call") == 0) {
        if (sv->pub->phase != MOTE_SERVE_RUN)
            ans_error(a, id, RPC_BUSY, "mote is shutting down");
        else
            do_call(a, id, params);
    } else {
        ans_error(a, id, RPC_METHOD, "method not found (mote serves tools only)");
    }
}

void mote_serve_mcp_handle(struct serve *sv, struct serve_mcp_in *in, const char *body,
                           size_t len)
{
    struct mote_json *j = &sv->json;
    struct ans a;
    char why[96];
    int rc, k, n;

    a.sv = sv;
    a.in = in;
    in->answers = 0;
    in->started = 0;
    in->made = NULL;
    in->refused = false;
    in->batch = false;
    in->status = 200;
    mote_sb_init(&a.sb, sv->scratch, sizeof(sv->scratch));
    if (in->se != NULL)
        in->se->used_at = ++sv->mcp.clock;
    rc = mote_json_parse(j, body, len);
    if (rc == MOTE_ERR_TOO_LARGE) {
        refuse(&a, 400, RPC_PARSE, "Parse error: more JSON values than mote reads at once "
                                   "(MOTE_JSON_MAX_TOKENS)");
        goto out;
    }
    if (rc < 0 ||
        mote_json_strict(j, 0, MOTE_JSON_NO_DUP_KEYS, why, sizeof(why)) < 0) {
        if (rc >= 0)
            refuse(&a, 400, RPC_PARSE, why[0] != '\0' ? why : "Parse error");
        else
            refuse(&a, 400, RPC_PARSE, "Parse error: not one complete JSON value");
        goto out;
    }
    if (mote_json_type_of(j, 0) != MOTE_JSON_ARRAY) {
        one(&a, 0, false);
        goto out;
    }
    n = j->tok[0].size;
    if (n == 0 || n > MOTE_SERVE_MCP_BATCH) {
        refuse(&a, 400, RPC_INVALID,
               n == 0 ? "an empty batch" : "more messages in a batch than MOTE_SERVE_MCP_BATCH");
        goto out;
    }
    if (in->se == NULL || in->se->version != V_BATCH) {
        refuse(&a, 400, RPC_INVALID,
               "batches are taken in protocol version 2025-03-26 only: send one message a request");
        goto out;
    }
    in->batch = true;
    for (k = 0; k < n && !in->refused; k++)
        one(&a, mote_json_elem(j, 0, k), true);
out:
    in->len = a.sb.len;
}
