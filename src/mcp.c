/*
 * mcp.c - the MCP protocol over any transport (see mote_mcp.h): the
 * servers' table, JSON-RPC messages written and read, initialize and
 * tools/list, the tools offered, calls as jobs, holds, and the
 * disconnect's schedule. The transports (mcp_stdio.c, mcp_http.c) carry
 * the messages and report through the table `up` below.
 */
#include "mote/mote_mcp.h"

#include <string.h>

#include "mcp_int.h"
#include "mcp_wire.h"
#include "mote/mote.h"
#include "util.h"

#define PROTOCOL_VERSION "2025-06-18"

static const struct mote_mcp_up up;

void mote_mcp_init(struct mote_mcp *m, struct mote_loop *loop, mote_mcp_log_fn log, void *arg)
{
    memset(m, 0, sizeof(*m));
    m->loop = loop;
    m->up = &up;
    m->log = log;
    m->log_arg = arg;
    m->timeout_ms = MOTE_MCP_TIMEOUT_MS;
    m->net.connect_timeout_ms = MOTE_LLM_CONNECT_TIMEOUT_MS;
    m->net.keep_idle_ms = MOTE_LLM_KEEP_IDLE_MS;
    m->net.tls_resume = MOTE_TLS_RESUME_MEMORY;
    m->net.tls_session_max_s = MOTE_TLS_SESSION_MAX_S;
}

/* A new server slot named `name`: its index, or < 0. */
static int server_new(struct mote_mcp *m, const char *name)
{
    struct mote_mcp_server *s;
    size_t i;

    if (m->n >= MOTE_MAX_MCP_SERVERS)
        return MOTE_ERR_FULL;
    if (name[0] == '\0' || strlen(name) > 24)
        return MOTE_ERR_INVAL;
    for (i = 0; name[i] != '\0'; i++) {
        if (!mote_mcp_name_char(name[i]))
            return MOTE_ERR_INVAL;
    }
    for (i = 0; i < m->n; i++) {
        if (strcmp(m->srv[i].name, name) == 0)
            return MOTE_ERR_EXIST; /* two servers of one name: whose tool is a__x? */
    }
    s = &m->srv[m->n];
    /* (the buffers at the end are written before they are read) */
    memset(s, 0, offsetof(struct mote_mcp_server, tools));
    s->m = m;
    mote_str_copy(s->name, sizeof(s->name), name);
    s->next_id = 1;
    return (int)m->n;
}

int mote_mcp_add(struct mote_mcp *m, const char *name, const char *const *argv,
                 const char *const *envp)
{
    int i;

    if (argv == NULL || argv[0] == NULL)
        return MOTE_ERR_INVAL;
    if ((i = server_new(m, name)) < 0)
        return i;
    m->srv[i].kind = MOTE_MCP_STDIO;
    m->srv[i].argv = argv;
    m->srv[i].envp = envp;
    m->srv[i].in_fd = m->srv[i].out_fd = m->srv[i].err_fd = -1;
    m->srv[i].left_h = -1;
    return (int)m->n++;
}

int mote_mcp_add_http(struct mote_mcp *m, const char *name, enum mote_mcp_kind kind,
                      const char *url, const char *const *headers)
{
    struct mote_url u;
    size_t i;
    int k;

    if (url == NULL || (kind != MOTE_MCP_HTTP && kind != MOTE_MCP_SSE))
        return MOTE_ERR_INVAL;
    {
        /* the URL without its query, for the parser of base URLs */
        char base[sizeof(u.host) + sizeof(u.path) + 16];
        size_t n = strcspn(url, "?#");

        if (n >= sizeof(base))
            return MOTE_ERR_TOO_LARGE;
        memcpy(base, url, n);
        base[n] = '\0';
        if ((k = mote_url_parse(&u, base)) < 0)
            return k;
        if (url[n] == '#')
            return MOTE_ERR_INVAL;
    }
    for (i = 0; url[i] != '\0'; i++) {
        if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
            return MOTE_ERR_INVAL; /* it goes into a request line as it is: ASCII */
    }
    for (i = 0; headers != NULL && headers[i] != NULL; i++) {
        const char *h = headers[i], *colon = strchr(h, ':');

        if (colon == NULL || colon == h || strpbrk(h, "\r\n") != NULL)
            return MOTE_ERR_INVAL;
    }
    if ((k = server_new(m, name)) < 0)
        return k;
    m->srv[k].kind = (uint8_t)kind;
    m->srv[k].url = url;
    m->srv[k].headers = headers;
    m->srv[k].to = u;
    return (int)m->n++;
}

/* ---- writing messages ---- */

static int out_sink(void *arg, const char *p, size_t n)
{
    struct mote_mcp_server *s = arg;

    if (s->outlen + n > sizeof(s->outbuf))
        return MOTE_ERR_FULL;
    memcpy(s->outbuf + s->outlen, p, n);
    s->outlen += n;
    return 0;
}

/* Writes one message of kind `kind` (MCP_MSG_*): a writer fills the
 * object's members after "jsonrpc"; the transport carries it. Returns 0
 * or MOTE_ERR_FULL (the queue is full). */
static int send_kind(struct mote_mcp_server *s, int kind, void (*fill)(struct mote_jw *, void *),
                     void *arg)
{
    size_t start = s->outlen;
    struct mote_jw w;

    if (s->state == MOTE_MCP_CLOSED)
        return MOTE_ERR_PIPE;
    mote_jw_init(&w, out_sink, s);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "jsonrpc", "2.0");
    fill(&w, arg);
    mote_jw_obj_end(&w);
    if (w.err != 0) {
        s->outlen = start; /* never half a message */
        return w.err;
    }
    return s->kind == MOTE_MCP_STDIO ? mote_mcp_stdio_queued(s, start)
                                     : mote_mcp_http_queued(s, start, kind);
}

static int send_msg(struct mote_mcp_server *s, void (*fill)(struct mote_jw *, void *), void *arg)
{
    return send_kind(s, MCP_MSG_NOTE, fill, arg);
}

struct req_args {
    int64_t id;
    const char *method;
    const char *cursor;
    const char *tool;
    const char *args;
    size_t args_len;
    const struct mote_json *idj; /* for responses: the request's id, token idt of idj */
    int idt;
    const char *raw_params;      /* another request's params (a JSON object, mcp_res.c) */
};

static void fill_request(struct mote_jw *w, void *arg)
{
    struct req_args *r = arg;

    mote_jw_kint(w, "id", r->id);
    mote_jw_kstr(w, "method", r->method);
    mote_jw_key(w, "params");
    if (r->raw_params != NULL) {
        mote_jw_raw(w, r->raw_params, strlen(r->raw_params));
        return;
    }
    mote_jw_obj(w);
    if (strcmp(r->method, "initialize") == 0) {
        mote_jw_kstr(w, "protocolVersion", PROTOCOL_VERSION);
        mote_jw_key(w, "capabilities"); /* (r->tool set: questions are taken) */
        mote_jw_raw(w, r->tool != NULL ? "{\"elicitation\":{}}" : "{}", r->tool != NULL ? 18 : 2);
        mote_jw_key(w, "clientInfo");
        mote_jw_obj(w);
        mote_jw_kstr(w, "name", "mote");
        mote_jw_kstr(w, "version", MOTE_VERSION_STRING);
        mote_jw_obj_end(w);
    } else if (strcmp(r->method, "tools/list") == 0) {
        if (r->cursor != NULL && r->cursor[0] != '\0') {
            mote_jw_kstr(w, "cursor", r->cursor);
        }
    } else if (strcmp(r->method, "tools/call") == 0) {
        mote_jw_kstr(w, "name", r->tool);
        mote_jw_key(w, "arguments");
        mote_jw_raw(w, r->args, r->args_len);
        /* its id as its progress token: a server's notifications/progress
         * for it give it its deadline again */
        mote_jw_key(w, "_meta");
        mote_jw_obj(w);
        mote_jw_kint(w, "progressToken", r->id);
        mote_jw_obj_end(w);
    }
    mote_jw_obj_end(w);
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg);

static int request(struct mote_mcp_server *s, int kind, struct req_args *r)
{
    int rc;

    r->id = s->next_id++;
    if (kind == MCP_REQ_LIST && r->cursor == NULL)
        s->pages = 0; /* a new list's first page */
    rc = send_kind(s,
                   kind == MCP_REQ_INIT   ? MCP_MSG_INIT
                   : kind == MCP_REQ_CALL ? MCP_MSG_CALL
                                      : MCP_MSG_REQUEST,
                   fill_request, r);
    if (rc < 0)
        return rc;
    s->req_id = r->id;
    s->req_kind = (uint8_t)kind;
    /* the server's own deadline for this kind ("startup_timeout_sec" for
     * initialize and tools/list, "tool_timeout_sec" for calls) */
    s->req_ms = kind == MCP_REQ_CALL ? s->call_ms : s->start_ms;
    if (s->req_ms == 0)
        s->req_ms = s->m->timeout_ms;
    s->call_t0 = mote_loop_now(s->m->loop);
    s->progress_said = 0;
    s->req_deadline = s->call_t0 + s->req_ms;
    if (s->timer != 0)
        (void)mote_timer_stop(s->m->loop, s->timer);
    if (mote_timer_start(s->m->loop, s->req_ms, on_timer, s, 0, &s->timer) < 0)
        s->timer = 0;
    return 0;
}

static void fill_initialized(struct mote_jw *w, void *arg)
{
    (void)arg;
    mote_jw_kstr(w, "method", "notifications/initialized");
}

static void fill_cancelled(struct mote_jw *w, void *arg)
{
    int64_t *id = arg;

    mote_jw_kstr(w, "method", "notifications/cancelled");
    mote_jw_key(w, "params");
    mote_jw_obj(w);
    mote_jw_kint(w, "requestId", *id);
    mote_jw_kstr(w, "reason", "cancelled by the user");
    mote_jw_obj_end(w);
}

/* Answers a server's request: ping -> {}, anything else -> -32601. */
static void fill_answer(struct mote_jw *w, void *arg)
{
    struct req_args *r = arg;

    mote_jw_key(w, "id");
    mote_jw_value(w, r->idj, r->idt); /* re-encoded, never copied raw */
    if (r->method != NULL && strcmp(r->method, "ping") == 0) {
        mote_jw_key(w, "result");
        mote_jw_obj(w);
        mote_jw_obj_end(w);
        return;
    }
    if (r->method != NULL && strcmp(r->method, "elicitation/create") == 0) {
        mote_jw_key(w, "result"); /* nobody here to answer it */
        mote_jw_raw(w, "{\"action\":\"decline\"}", 20);
        return;
    }
    mote_jw_key(w, "error");
    mote_jw_obj(w);
    mote_jw_kint(w, "code", -32601);
    mote_jw_kstr(w, "message", "Method not found (mote offers no client features)");
    mote_jw_obj_end(w);
}

/* ---- the end of a call ---- */

static void call_finish(struct mote_mcp_server *s, const char *text, size_t len, bool is_error)
{
    struct mote_mcp_call *c = s->call;

    s->call = NULL;
    if (c == NULL)
        return;
    if (len >= sizeof(c->result))
        len = sizeof(c->result) - 1;
    memcpy(c->result, text, len);
    c->result[len] = '\0';
    mote_mcp_redact(s, c->result, len);
    c->len = len;
    c->is_error = is_error;
    c->done = true;
    (void)mote_job_wake(s->m->loop, c->job);
}

static void wake_waiting_calls(struct mote_loop *loop);

/* The pending request is given up: its answer is not awaited (a
 * transport over HTTP ends its exchange). */
static void drop_request(struct mote_mcp_server *s)
{
    s->req_id = 0;
    if (s->kind != MOTE_MCP_STDIO)
        mote_mcp_http_drop_request(s);
}

static void fail_server(struct mote_mcp_server *s, const char *why)
{
    /* sized for what it holds: the reasons are short */
    char m[sizeof(s->name) + sizeof(s->errmsg) + 64];
    struct mote_sb sb;

    if (s->state == MOTE_MCP_FAILED || s->state == MOTE_MCP_CLOSED)
        return;
    if (s->asking && s->m->ask_in != NULL)
        s->m->ask_in(s, NULL, -1, -1); /* its open question is over (mcp_elicit.c) */
    mote_str_copy(s->errmsg, sizeof(s->errmsg), why);
    mote_mcp_redact(s, s->errmsg, strlen(s->errmsg));
    mote_mcp_life_failed(s);
    if (s->kind == MOTE_MCP_STDIO)
        mcp_log(s, s->errmsg, s->loglen > 0 ? "; its stderr ends: " : NULL,
                s->loglen > 0 ? s->log : NULL);
    else
        mcp_log(s, s->errmsg, NULL, NULL);
    s->state = MOTE_MCP_FAILED;
    drop_request(s); /* (over HTTP: every exchange ends) */
    if (s->call != NULL) {
        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_s(&sb, "the MCP server '");
        mote_sb_s(&sb, s->name);
        mote_sb_s(&sb, "' failed during the call: ");
        mote_sb_s(&sb, s->errmsg);
        call_finish(s, m, sb.len, true);
    }
    wake_waiting_calls(s->m->loop); /* queued calls learn it is gone */
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_mcp_server *s = arg;

    (void)t;
    s->timer = 0;
    if (s->req_id == 0)
        return;
    if (mote_before(mote_loop_now(loop), s->req_deadline) || s->paused ||
        (s->asking && s->req_kind == MCP_REQ_CALL)) {
        /* Its deadline was given again (progress), the call waits for a
         * person's answer to the server's question, or its answer came
         * and waits unread while a request's body is out
         * (mote_mcp_hold): the server was on time. Looked at again later;
         * unhold reads the answer. */
        uint32_t ms = s->paused || s->asking ? mcp_timeout(s)
                                             : s->req_deadline - mote_loop_now(loop);

        if (mote_timer_start(loop, ms, on_timer, s, 0, &s->timer) < 0)
            s->timer = 0;
        return;
    }
    if (s->req_kind == MCP_REQ_CALL) {
        static const char msg[] = "the MCP server did not answer the call in time";
        struct mote_mcp_call *c = s->call;

        drop_request(s);
        if (c != NULL)
            (void)send_msg(s, fill_cancelled, &c->id);
        call_finish(s, msg, sizeof(msg) - 1, true);
        wake_waiting_calls(loop);
        return;
    }
    fail_server(s, s->req_kind == MCP_REQ_INIT ? "no answer to initialize in time"
                                           : "no answer to tools/list in time");
}

/* ---- reading messages ---- */

/* Says why the tool entry `t` of j is left out (its name when it has one). */
static void tool_skipped(struct mote_mcp_server *s, const struct mote_json *j, int t,
                         const char *why)
{
    char name[MOTE_MCP_NAME_MAX];

    s->skipped_tools++;
    if (mote_json_str(j, mote_json_member(j, t, "name"), name, sizeof(name)) <= 0)
        mote_str_copy(name, sizeof(name), "(unnamed)");
    mcp_log(s, "skipped the tool ", name, why);
}

/* One entry `t` of j, a tools array's: into the server's tools, or
 * skipped with a line saying why. */
static void take_tool(struct mote_mcp_server *s, const struct mote_json *j, int t)
{
    int schema = mote_json_member(j, t, "inputSchema"), rc;
    struct mote_mcp_tool *tool;

    if (s->ntools >= MOTE_MCP_MAX_TOOLS) {
        if (s->skipped_tools++ == 0) /* (said once per list) */
            mcp_log(s, "more tools than MOTE_MCP_MAX_TOOLS: the rest are skipped", NULL, NULL);
        return;
    }
    tool = &s->tools[s->ntools];
    if (mote_json_type_of(j, t) != MOTE_JSON_OBJECT) {
        tool_skipped(s, j, -1, ": its entry is not an object");
        return;
    }
    if (mote_json_str(j, mote_json_member(j, t, "name"), tool->remote, sizeof(tool->remote)) <= 0) {
        tool_skipped(s, j, -1, ": no name, or one over MOTE_MCP_NAME_MAX bytes");
        return;
    }
    if (mote_json_eq(j, mote_json_path(j, t, "execution.taskSupport"), "required")) {
        /* (such a tool is called only as a task: a plain call always fails) */
        tool_skipped(s, j, t, ": it requires task support (execution.taskSupport), which mote "
                              "does not have");
        return;
    }
    rc = mote_mcp_take_schema(j, schema, tool->schema, sizeof(tool->schema));
    if (rc < 0) {
        tool_skipped(s, j, t, rc == MOTE_ERR_INVAL ? ": its inputSchema is not an object schema"
                                                   : ": its inputSchema is over "
                                                     "MOTE_MCP_SCHEMA_MAX bytes");
        return;
    }
    if (mote_json_str(j, mote_json_member(j, t, "description"), s->m->text, sizeof(s->m->text)) < 0)
        s->m->text[0] = '\0';
    mote_str_copy(tool->desc, sizeof(tool->desc), s->m->text);
    mote_mcp_redact(s, tool->desc, strlen(tool->desc));
    mote_mcp_redact_json(s, tool->schema, strlen(tool->schema)); /* (it may echo a header) */
    tool->name[0] = '\0';
    s->ntools++; /* counted before naming: name_taken skips itself */
    mote_mcp_tool_name(s, tool);
    MOTE_ASSERT(strstr(tool->name, "__") != NULL);
}

/* A new list replaces the old one from its first entry on. */
static void list_begins(struct mote_mcp_server *s)
{
    if (s->relisting && !(s->in_flags & MCP_IN_BEGAN)) {
        s->ntools = 0;
        s->skipped_tools = 0;
    }
    s->in_flags |= MCP_IN_BEGAN;
}

static void take_tools(struct mote_mcp_server *s, int result)
{
    struct mote_json *j = &s->m->json;
    int tools = mote_json_member(j, result, "tools"), k, t;

    list_begins(s);
    for (k = 0; (t = mote_json_elem(j, tools, k)) >= 0; k++)
        take_tool(s, j, t);
}

/* An entry of a tools/list answer, as mcp_in.c reads it: parsed on its
 * own (its own budget of MOTE_JSON_MAX_TOKENS values). */
static void up_tool(struct mote_mcp_server *s, const char *entry, size_t len, const char *name,
                    size_t name_len)
{
    struct mote_json *j = &s->m->json;
    char shown[64];
    size_t i;

    list_begins(s);
    if (mote_json_parse(j, entry, len) <= 0) {
        /* named by the raw bytes of its name (printable ASCII shown) */
        for (i = 0; name != NULL && i < name_len && i + 1 < sizeof(shown); i++)
            shown[i] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
        shown[name != NULL ? i : 0] = '\0';
        s->skipped_tools++;
        mcp_log(s, "skipped the tool ", name != NULL ? shown : "(unnamed)",
                ": its entry is not valid JSON, or has more than MOTE_JSON_MAX_TOKENS values "
                "or MOTE_JSON_MAX_DEPTH levels");
        return;
    }
    take_tool(s, j, 0);
}

/* The text of a tools/call result: text items kept, others summarised. */
static void call_result(struct mote_mcp_server *s, int result)
{
    struct mote_json *j = &s->m->json;
    int content = mote_json_member(j, result, "content"), k;
    char *out = s->m->text;
    /* A result holds MOTE_MCP_RESULT_MAX bytes; its tail is kept for the
     * note that says it was cut. */
    size_t cap = MOTE_MCP_RESULT_MAX - 160, len = 0;
    bool is_error = false, cut = (s->in_flags & MCP_IN_CUT) != 0;

    s->in_flags &= (uint8_t)~MCP_IN_CUT;
    (void)mote_json_bool(j, mote_json_member(j, result, "isError"), &is_error);
    for (k = 0;; k++) {
        int item = mote_json_elem(j, content, k);
        int type = mote_json_member(j, item, "type");
        struct mote_sb sb;
        char kind[32];

        if (item < 0)
            break;
        if (len + 2 >= cap) {
            cut = true;
            break;
        }
        if (len > 0)
            out[len++] = '\n';
        if (mote_json_eq(j, type, "text")) {
            int n = mote_json_str(j, mote_json_member(j, item, "text"), out + len, cap - len);

            if (n == MOTE_ERR_TOO_LARGE) { /* what fits, and a note below */
                n = (int)strlen(out + len);
                cut = true;
            } else if (n < 0) {
                n = 0;
            }
            len += (size_t)n;
            continue;
        }
        if (mote_json_str(j, type, kind, sizeof(kind)) < 0)
            mote_str_copy(kind, sizeof(kind), "unknown");
        mote_sb_init(&sb, out + len, cap - len);
        mote_sb_s(&sb, "[");
        mote_sb_s(&sb, kind);
        mote_sb_s(&sb, " content");
        {
            char extra[128];

            if (mote_json_str(j, mote_json_member(j, item, "mimeType"), extra, sizeof(extra)) > 0 ||
                mote_json_str(j, mote_json_path(j, item, "resource.uri"), extra, sizeof(extra)) > 0) {
                mote_sb_s(&sb, ": ");
                mote_sb_s(&sb, extra);
            }
        }
        mote_sb_s(&sb, " not shown]");
        len += sb.len;
    }
    if (len == 0 && mote_json_member(j, result, "structuredContent") >= 0) {
        size_t n;
        const char *raw = mote_json_raw(j, mote_json_member(j, result, "structuredContent"), &n);

        len = n < cap - 1 ? n : cap - 1;
        cut = n > len;
        memcpy(out, raw, len);
    }
    if (cut) {
        /* Said to the model, as the shell tool does, never cut silently. */
        struct mote_sb sb;

        mote_sb_init(&sb, out + len, MOTE_MCP_RESULT_MAX - len);
        mote_sb_s(&sb, "\n[result cut: the server sent more than ");
        mote_sb_u(&sb, (uint64_t)cap);
        mote_sb_s(&sb, " bytes (MOTE_MCP_RESULT_MAX); the rest is not shown]");
        len += sb.len;
    }
    out[len] = '\0';
    call_finish(s, out, len, is_error);
}

/* The result of another request than tools/call: its call's `take`
 * writes the text; it may send the call again (to the next server). */
static void other_result(struct mote_mcp_server *s, int result)
{
    struct mote_mcp_call *c = s->call;
    bool cut = (s->in_flags & MCP_IN_CUT) != 0;

    s->in_flags &= (uint8_t)~MCP_IN_CUT;
    s->call = NULL;
    c->done = !c->take(c, &s->m->json, result, cut);
    c->sent = c->done;
    mote_mcp_redact(s, c->result, c->len);
    (void)mote_job_wake(s->m->loop, c->job);
}

static void relist_if_free(struct mote_mcp_server *s);

static void handle_response(struct mote_mcp_server *s, int64_t id)
{
    struct mote_json *j = &s->m->json;
    int result = mote_json_member(j, 0, "result");
    int error = mote_json_member(j, 0, "error");
    struct req_args r;

    if (id != s->req_id || s->req_id == 0)
        return; /* late (a timed-out or cancelled request): ignored */
    s->req_id = 0;
    if (s->timer != 0)
        (void)mote_timer_stop(s->m->loop, s->timer);
    s->timer = 0;
    if (error >= 0) {
        char msg[200], text[256];
        int64_t code = 0;
        struct mote_sb sb;

        (void)mote_json_int(j, mote_json_member(j, error, "code"), &code);
        if (mote_json_str(j, mote_json_member(j, error, "message"), text, sizeof(text)) < 0)
            text[0] = '\0';
        mote_sb_init(&sb, msg, sizeof(msg));
        mote_sb_s(&sb, "MCP error ");
        mote_sb_i(&sb, code);
        mote_sb_s(&sb, ": ");
        mote_sb_s(&sb, text);
        mote_mcp_redact(s, msg, sb.len);
        if (s->req_kind == MCP_REQ_CALL)
            call_finish(s, msg, sb.len, true);
        else
            fail_server(s, msg);
        return;
    }
    if (mote_json_type_of(j, result) != MOTE_JSON_OBJECT) {
        if (s->req_kind == MCP_REQ_CALL)
            call_finish(s, "the MCP server sent a result that is not an object", 50, true);
        else
            fail_server(s, "the MCP server sent a result that is not an object");
        return;
    }
    switch (s->req_kind) {
    case MCP_REQ_INIT:
        if (s->kind != MOTE_MCP_STDIO) {
            /* the version the session speaks, sent with each request */
            char v[sizeof(s->version)];
            int n = mote_json_str(j, mote_json_member(j, result, "protocolVersion"), v, sizeof(v));
            int i;

            for (i = 0; i < n && ((v[i] >= '0' && v[i] <= '9') || v[i] == '-'); i++) {
            }
            mote_str_copy(s->version, sizeof(s->version), n > 0 && i == n ? v : PROTOCOL_VERSION);
        }
        s->caps = (uint8_t)((mote_json_path(j, result, "capabilities.resources") >= 0) |
                            (mote_json_path(j, result, "capabilities.prompts") >= 0) << 1);
        if (send_msg(s, fill_initialized, NULL) < 0) {
            fail_server(s, "cannot write to the server");
            return;
        }
        s->state = MOTE_MCP_LISTING;
        memset(&r, 0, sizeof(r));
        r.method = "tools/list";
        if (request(s, MCP_REQ_LIST, &r) < 0)
            fail_server(s, "cannot write to the server");
        break;
    case MCP_REQ_LIST: {
        int next = mote_json_member(j, result, "nextCursor");

        take_tools(s, result); /* (the entries mcp_in.c did not take already) */
        s->relisting = false;
        s->in_flags &= (uint8_t)~MCP_IN_BEGAN;
        if (mote_json_type_of(j, next) == MOTE_JSON_STRING &&
            ++s->pages >= MOTE_MCP_PAGES_MAX) {
            mcp_log(s, "the tool list goes on past MOTE_MCP_PAGES_MAX pages: the rest is not "
                       "fetched", NULL, NULL);
        } else if (mote_json_type_of(j, next) == MOTE_JSON_STRING &&
                   mote_json_str(j, next, s->cursor, sizeof(s->cursor)) > 0) {
            memset(&r, 0, sizeof(r));
            r.method = "tools/list";
            r.cursor = s->cursor;
            if (request(s, MCP_REQ_LIST, &r) < 0)
                fail_server(s, "cannot write to the server");
            break;
        }
        if (s->state == MOTE_MCP_READY) {
            mcp_log(s, "tool list updated", NULL, NULL);
            break;
        }
        s->state = MOTE_MCP_READY;
        s->was_ready = true;
        s->restarting = false;
        {
            char n[64];
            struct mote_sb sb;

            mote_sb_init(&sb, n, sizeof(n));
            mote_sb_num(&sb, "ready, ", s->ntools, " tools");
            if (s->skipped_tools > 0) {
                mote_sb_s(&sb, " (");
                mote_sb_u(&sb, s->skipped_tools);
                mote_sb_s(&sb, " skipped)");
            }
            mcp_log(s, n, NULL, NULL);
        }
        break;
    }
    case MCP_REQ_CALL:
        if (s->call != NULL && s->call->take != NULL)
            other_result(s, result);
        else
            call_result(s, result);
        break;
    default:
        break;
    }
    relist_if_free(s);
    wake_waiting_calls(s->m->loop); /* a call queued behind this request */
}

/* A new tools/list after tools/list_changed, once the server is idle. */
static void relist_if_free(struct mote_mcp_server *s)
{
    struct req_args r;

    if (!s->relist || s->req_id != 0 || s->state != MOTE_MCP_READY || s->m->holds > 0 ||
        s->calls_waiting > 0)
        return; /* (calls go first: a list that keeps changing waits between them) */
    /* The old list stays offered until the new one is in. */
    s->relist = false;
    s->relisting = true;
    memset(&r, 0, sizeof(r));
    r.method = "tools/list";
    if (request(s, MCP_REQ_LIST, &r) < 0)
        fail_server(s, "cannot write to the server");
}

/* One message from the server (a line of stdio may end in CRLF). */
static void handle_line(struct mote_mcp_server *s, const char *line, size_t len)
{
    struct mote_json *j = &s->m->json;
    int method, id, rc;
    int64_t num;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--; /* Windows servers end lines in CRLF */
    if (len == 0)
        return;
    rc = mote_json_parse(j, line, len);
    if (rc <= 0) {
        mcp_log(s, rc == MOTE_ERR_TOO_LARGE
                    ? "ignored a message over MOTE_JSON_MAX_TOKENS JSON values or "
                      "MOTE_JSON_MAX_DEPTH levels"
                    : "ignored a line that is not valid JSON (RFC 8259; raw control characters "
                      "inside strings, say)",
             NULL, NULL);
        return;
    }
    if (mote_json_type_of(j, 0) != MOTE_JSON_OBJECT) {
        mcp_log(s, "ignored a line that is not a JSON-RPC message", NULL, NULL);
        return;
    }
    method = mote_json_member(j, 0, "method");
    id = mote_json_member(j, 0, "id");
    if (method >= 0) {
        char name[64];

        if (mote_json_str(j, method, name, sizeof(name)) < 0)
            name[0] = '\0';
        if (id >= 0 && !mote_json_is_null(j, id) && s->m->ask_in != NULL &&
            strcmp(name, "elicitation/create") == 0) {
            s->m->ask_in(s, j, id, mote_json_member(j, 0, "params")); /* (mcp_elicit.c) */
            return;
        }
        if (id >= 0 && !mote_json_is_null(j, id)) {
            struct req_args r;

            memset(&r, 0, sizeof(r));
            r.method = name;
            r.idj = j;
            r.idt = id;
            (void)send_msg(s, fill_answer, &r);
        }
        if (strcmp(name, "notifications/tools/list_changed") == 0) {
            s->relist = true; /* fetched again as soon as nothing is pending */
            relist_if_free(s);
        }
        if (strcmp(name, "notifications/progress") == 0)
            mote_mcp_progress(s, mote_json_member(j, 0, "params")); /* (mcp_life.c) */
        /* other notifications (logging, progress): nothing to do */
        return;
    }
    if (mote_json_int(j, id, &num) == 0)
        handle_response(s, num);
    else if (mote_json_type_of(j, id) == MOTE_JSON_STRING) {
        /* Our ids are numbers; a server that echoes them as strings. */
        char b[24];
        int64_t v = 0;
        int n = mote_json_str(j, id, b, sizeof(b)), i;

        for (i = 0; i < n && b[i] >= '0' && b[i] <= '9'; i++)
            v = v * 10 + (b[i] - '0');
        if (n > 0 && i == n)
            handle_response(s, v);
    }
}

/* ---- the transports' side ---- */

static void up_request_failed(struct mote_mcp_server *s, const char *why)
{
    if (s->req_id == 0)
        return;
    if (s->req_kind == MCP_REQ_CALL) {
        drop_request(s);
        call_finish(s, why, strlen(why), true);
        wake_waiting_calls(s->m->loop);
        return;
    }
    fail_server(s, why);
}

static void up_renewed(struct mote_mcp_server *s)
{
    mcp_log(s, "a new session started: the tool list is fetched again", NULL, NULL);
    s->relist = true;
    relist_if_free(s);
}

static void fill_result(struct mote_jw *w, void *arg)
{
    struct req_args *r = arg; /* (cursor: the id; args: the result) */

    mote_jw_key(w, "id");
    mote_jw_raw(w, r->cursor, strlen(r->cursor));
    mote_jw_key(w, "result");
    mote_jw_raw(w, r->args, r->args_len);
}

int mote_mcp_send_result(struct mote_mcp_server *s, const char *rid, const char *result,
                         size_t len)
{
    struct req_args r = {.cursor = rid, .args = result, .args_len = len};

    return send_msg(s, fill_result, &r);
}

/* The capability initialize declares: "elicitation" when questions are
 * taken and the frontend wants it said (else NULL). */
static const char *asks_declared(const struct mote_mcp *m)
{
    return m->ask_in != NULL && !m->asks->undeclared ? "elicitation" : NULL;
}

/* A stdio server that exited is started again (mcp_life.c made it
 * ready for it): initialize, as at its first start. */
static void up_restarted(struct mote_mcp_server *s)
{
    struct req_args r;

    memset(&r, 0, sizeof(r));
    r.method = "initialize";
    r.tool = asks_declared(s->m);
    if (request(s, MCP_REQ_INIT, &r) < 0)
        fail_server(s, "cannot write to the server");
}

static const struct mote_mcp_up up = {handle_line, fail_server, up_request_failed, up_renewed,
                                      up_tool, up_restarted};

void mote_mcp_start_all(struct mote_mcp *m)
{
    unsigned i;

    for (i = 0; i < m->n; i++) {
        struct mote_mcp_server *s = &m->srv[i];
        struct req_args r;
        bool ok;

        if (s->state != MOTE_MCP_OFF)
            continue;
        ok = s->kind == MOTE_MCP_STDIO ? mote_mcp_stdio_start(s) : mote_mcp_http_start(s);
        if (!ok) {
            s->state = MOTE_MCP_FAILED; /* (said by the transport) */
            continue;
        }
        s->state = MOTE_MCP_STARTING;
        memset(&r, 0, sizeof(r));
        r.method = "initialize";
        r.tool = asks_declared(m);
        if (request(s, MCP_REQ_INIT, &r) < 0)
            fail_server(s, "cannot write to the server");
    }
}

bool mote_mcp_settled(const struct mote_mcp *m)
{
    unsigned i;

    for (i = 0; i < m->n; i++) {
        if (m->srv[i].state == MOTE_MCP_STARTING || m->srv[i].state == MOTE_MCP_LISTING)
            return false;
    }
    return true;
}

unsigned mote_mcp_tool_defs(const struct mote_mcp *m, struct mote_tool_def *defs, unsigned max)
{
    unsigned i, k, n = 0;

    for (i = 0; i < m->n; i++) {
        const struct mote_mcp_server *s = &m->srv[i];

        if (s->state != MOTE_MCP_READY && !mote_mcp_restartable(s) && !s->restarting)
            continue;
        for (k = 0; k < s->ntools && n < max; k++) {
            defs[n].name = s->tools[k].name;
            defs[n].description = s->tools[k].desc;
            defs[n].schema = s->tools[k].schema;
            n++;
        }
    }
    return n;
}

bool mote_mcp_find(const struct mote_mcp *m, const char *name, unsigned *srv, unsigned *tool)
{
    unsigned i, k;

    for (i = 0; i < m->n; i++) {
        for (k = 0; k < m->srv[i].ntools; k++) {
            if (strcmp(m->srv[i].tools[k].name, name) == 0) {
                *srv = i;
                *tool = k;
                return true;
            }
        }
    }
    return false;
}


/* ---- holds and disconnect ---- */

void mote_mcp_hold(struct mote_mcp *m)
{
    m->holds++;
}

void mote_mcp_unhold(struct mote_mcp *m)
{
    unsigned i;

    if (m->holds > 0 && --m->holds == 0) {
        for (i = 0; i < m->n; i++) {
            struct mote_mcp_server *s = &m->srv[i];

            if (s->kind == MOTE_MCP_STDIO)
                mote_mcp_stdio_resume(s);
            else
                mote_mcp_http_resume(s);
            relist_if_free(s);
        }
    }
}

void mote_mcp_disconnect_begin(struct mote_mcp *m, uint32_t budget_ms)
{
    unsigned i;

    if (m->dc)
        return;
    m->dc = true;
    m->dc_t0 = mote_loop_now(m->loop);
    m->dc_budget = budget_ms;
    m->dc_termed = m->dc_killed = false;
    for (i = 0; i < m->n; i++) {
        struct mote_mcp_server *s = &m->srv[i];

        if (s->kind == MOTE_MCP_STDIO)
            mote_mcp_stdio_dc_begin(s);
        else
            mote_mcp_http_dc_begin(s);
    }
}

static void disconnect_end(struct mote_mcp *m)
{
    unsigned i;

    for (i = 0; i < m->n; i++) {
        struct mote_mcp_server *s = &m->srv[i];

        if (s->kind == MOTE_MCP_STDIO)
            mote_mcp_stdio_dc_end(s);
        else
            mote_mcp_http_dc_end(s);
        if (s->timer != 0)
            (void)mote_timer_stop(m->loop, s->timer);
        s->timer = 0;
    }
}

int mote_mcp_disconnect_poll(struct mote_mcp *m, bool force)
{
    uint32_t el = mote_loop_now(m->loop) - m->dc_t0;
    bool term = !m->dc_termed && (force || el >= m->dc_budget * 2u / 5u);
    bool kill = !m->dc_killed && (force || el >= m->dc_budget * 4u / 5u);
    unsigned i, left = 0;

    if (!m->dc)
        mote_mcp_disconnect_begin(m, 0);
    for (i = 0; i < m->n; i++) {
        struct mote_mcp_server *s = &m->srv[i];
        bool done = s->kind == MOTE_MCP_STDIO ? mote_mcp_stdio_dc_poll(s, term, kill, el)
                                              : mote_mcp_http_dc_poll(s, force || kill, el);

        left += !done;
    }
    m->dc_termed = m->dc_termed || term;
    m->dc_killed = m->dc_killed || kill;
    if (left > 0 && !force && el < m->dc_budget + 200u)
        return (int)left;
    disconnect_end(m);
    return -(int)left;
}

/* ---- calls ---- */

void mote_mcp_call_init(struct mote_mcp_call *c, struct mote_mcp *m, unsigned srv, unsigned tool,
                        const char *args, size_t args_len)
{
    memset(c, 0, sizeof(*c));
    c->m = m;
    c->srv = srv;
    c->tool = tool;
    c->args = args;
    c->args_len = args_len;
}

/* The call no longer waits for its server to be free. */
static void stop_waiting(struct mote_mcp_call *c)
{
    if (c->waiting) {
        c->waiting = false;
        c->m->srv[c->srv].calls_waiting--;
    }
}

static int call_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct mote_mcp_call *c = task;
    struct mote_mcp_server *s = &c->m->srv[c->srv];

    c->job = self;
    if (mote_job_cancelled(loop, self)) {
        if (c->sent && !c->done && s->call == c) {
            s->call = NULL;
            drop_request(s);
            (void)send_msg(s, fill_cancelled, &c->id);
            wake_waiting_calls(loop);
        }
        return MOTE_STEP_CANCELLED;
    }
    if (c->done)
        return MOTE_STEP_DONE;
    if (!c->sent) {
        struct req_args r;
        int rc;

        if (s->state != MOTE_MCP_READY) /* (started again, or gone: mcp_life.c) */
            return mote_mcp_restart_wait(c, s) ? MOTE_STEP_PENDING : MOTE_STEP_DONE;
        if (c->renamed && !mote_mcp_call_refind(c, s))
            return MOTE_STEP_DONE;
        if (s->kind == MOTE_MCP_STDIO && (s->out_fd < 0 || s->gone))
            return MOTE_STEP_PENDING; /* its stdout ended: woken once its exit is known */
        if (s->req_id != 0) {
            if (!c->waiting) {
                c->waiting = true;
                s->calls_waiting++;
            }
            return MOTE_STEP_PENDING; /* another request: woken when it ends */
        }
        stop_waiting(c);
        memset(&r, 0, sizeof(r));
        r.method = c->method != NULL ? c->method : "tools/call"; /* (or another request) */
        r.raw_params = c->method != NULL ? c->params : NULL;
        r.tool = c->method != NULL ? NULL : s->tools[c->tool].remote;
        r.args = c->args_len > 0 ? c->args : "{}";
        r.args_len = c->args_len > 0 ? c->args_len : 2;
        rc = request(s, MCP_REQ_CALL, &r);
        if (rc < 0) {
            static const char msg[] = "cannot send the call to the MCP server";

            memcpy(c->result, msg, sizeof(msg));
            c->len = sizeof(msg) - 1;
            c->is_error = true;
            return MOTE_STEP_DONE;
        }
        c->id = r.id;
        c->sent = true;
        s->call = c;
    }
    return MOTE_STEP_PENDING;
}

/* Calls wait while their server has a request pending; any end of a
 * request wakes them to try again. */
static void wake_waiting_calls(struct mote_loop *loop)
{
    (void)mote_job_wake_all(loop, &mote_mcp_call_ops);
}

static void call_release(struct mote_loop *loop, void *task)
{
    struct mote_mcp_call *c = task;
    struct mote_mcp_server *s = &c->m->srv[c->srv];

    if (s->call == c)
        s->call = NULL;
    stop_waiting(c);
    relist_if_free(s);
    wake_waiting_calls(loop);
}

const struct mote_task_ops mote_mcp_call_ops = {"mcp", call_step, call_release};
