/*
 * mcp_elicit.c - a server's question for the user (MCP elicitation/create,
 * form mode): the request checked (a flat form of string, number,
 * integer and boolean fields), its form handed to the frontend (whoever
 * approves calls), the answer checked against the form and sent
 * re-encoded, a question nobody answers in time cancelled; everything
 * mote cannot ask is declined at once.
 */
#include <string.h>

#include "mcp_int.h"
#include "mcp_wire.h"
#include "mote/mote.h"
#include "util.h"

static void ask_in(struct mote_mcp_server *s, const struct mote_json *j, int id, int params);

void mote_mcp_elicit_on(struct mote_mcp *m, struct mote_mcp_asks *a, mote_mcp_ask_fn fn,
                        void *arg, uint32_t timeout_ms)
{
    memset(a, 0, sizeof(*a));
    a->fn = fn;
    a->arg = arg;
    a->timeout_ms = timeout_ms;
    m->asks = a;
    m->ask_in = ask_in;
}

/* What JSON value t is: a string, a number or a boolean (else 0). */
static int kind_of(const struct mote_json *j, int t)
{
    bool b;

    if (mote_json_type_of(j, t) == MOTE_JSON_STRING)
        return MOTE_MCP_F_STRING;
    if (mote_json_type_of(j, t) != MOTE_JSON_PRIMITIVE || mote_json_is_null(j, t))
        return 0;
    return mote_json_bool(j, t, &b) == 0 ? MOTE_MCP_F_BOOLEAN : MOTE_MCP_F_NUMBER;
}

static const char *const actions[] = {"accept", "decline", "cancel"};

/* Answers the request of id `rid` (JSON) with `action` and, for accept,
 * `content` (JSON, re-encoded already). */
static int send_action(struct mote_mcp_server *s, const char *rid, enum mote_mcp_action action,
                       const char *content, size_t len)
{
    char out[MOTE_MCP_ASK_MAX + 32];
    struct mote_sb sb;

    mote_sb_init(&sb, out, sizeof(out));
    mote_sb_s(&sb, "{\"action\":\"");
    mote_sb_s(&sb, actions[action]);
    mote_sb_s(&sb, "\"");
    if (content != NULL) {
        mote_sb_s(&sb, ",\"content\":");
        mote_sb_n(&sb, content, len);
    }
    mote_sb_s(&sb, "}");
    if (sb.len + 1 >= sizeof(out))
        return MOTE_ERR_TOO_LARGE;
    return mote_mcp_send_result(s, rid, out, sb.len);
}

/* Declines request `id` of j now, with a log line saying why. */
static void decline_now(struct mote_mcp_server *s, const struct mote_json *j, int id,
                        const char *why)
{
    char rid[64];
    struct mote_sb sb;
    struct mote_jw w;

    mote_sb_init(&sb, rid, sizeof(rid));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_value(&w, j, id);
    mcp_log(s, "declined the server's question: ", why, NULL);
    if (w.err == 0)
        (void)send_action(s, rid, MOTE_MCP_DECLINE, NULL, 0);
}

/* Adds string `s` (n bytes) to the names arena; false when full. */
static bool arena_add(struct mote_mcp_ask *q, const char *p, size_t n)
{
    if (q->names_len + n + 1 > sizeof(q->names) || memchr(p, '\0', n) != NULL)
        return false;
    memcpy(q->names + q->names_len, p, n);
    q->names_len = (uint16_t)(q->names_len + n);
    q->names[q->names_len++] = '\0';
    return true;
}

/* Adds string token t of j to the arena (unescaped). */
static bool arena_tok(struct mote_mcp_ask *q, const struct mote_json *j, int t)
{
    char v[256];
    int n = mote_json_cstr(j, t, v, sizeof(v));

    return n >= 0 && arena_add(q, v, (size_t)n);
}

/* Copies member `key` of property p (a string, number or boolean) into
 * the form, re-encoded. */
static void copy_member(struct mote_jw *w, const struct mote_json *j, int p, const char *key)
{
    int t = mote_json_member(j, p, key);

    if (kind_of(j, t) != 0) {
        mote_jw_key(w, key);
        mote_jw_value(w, j, t);
    }
}

/* One property (name token k, schema k + 1): into the form. Returns 1
 * (taken), 0 (left out: optional, of a type mote cannot ask), or < 0 (the
 * form is declined; *why says so). */
static int take_field(struct mote_mcp_ask *q, struct mote_jw *w, const struct mote_json *j, int k,
                      int req, const char **why)
{
    int p = k + 1, type = mote_json_member(j, p, "type"), en = mote_json_member(j, p, "enum");
    int one = mote_json_member(j, p, "oneOf"), e, i, ft = 0;
    bool required = false;
    char name[64], other[64];

    for (i = 0; (e = mote_json_elem(j, req, i)) >= 0; i++)
        required = required || (mote_json_cstr(j, e, name, sizeof(name)) > 0 &&
                                 mote_json_cstr(j, k, other, sizeof(other)) > 0 &&
                                 strcmp(name, other) == 0);
    if (mote_json_eq(j, type, "string"))
        ft = MOTE_MCP_F_STRING;
    else if (mote_json_eq(j, type, "number"))
        ft = MOTE_MCP_F_NUMBER;
    else if (mote_json_eq(j, type, "integer"))
        ft = MOTE_MCP_F_INTEGER;
    else if (mote_json_eq(j, type, "boolean"))
        ft = MOTE_MCP_F_BOOLEAN;
    if (ft == 0 || mote_json_type_of(j, p) != MOTE_JSON_OBJECT) {
        *why = "a required field is not a string, number, integer or boolean (a form that is "
               "not flat)";
        return required ? -1 : 0;
    }
    if (q->nfields >= MOTE_MCP_ASK_FIELDS) {
        *why = "more fields than MOTE_MCP_ASK_FIELDS";
        return -1;
    }
    q->f[q->nfields].at = q->names_len;
    q->f[q->nfields].type = (uint8_t)ft;
    q->f[q->nfields].required = required;
    q->f[q->nfields].nchoices = 0;
    *why = "the form is over MOTE_MCP_ASK_MAX bytes";
    if (!arena_tok(q, j, k))
        return -1;
    mote_jw_obj(w);
    mote_jw_key(w, "name");
    mote_jw_value(w, j, k);
    mote_jw_key(w, "type");
    mote_jw_value(w, j, type);
    copy_member(w, j, p, "title");
    copy_member(w, j, p, "description");
    copy_member(w, j, p, "default");
    copy_member(w, j, p, "minimum");
    copy_member(w, j, p, "maximum");
    copy_member(w, j, p, "format");
    mote_jw_kbool(w, "required", required);
    if (ft == MOTE_MCP_F_STRING && (mote_json_type_of(j, en) == MOTE_JSON_ARRAY ||
                                    mote_json_type_of(j, one) == MOTE_JSON_ARRAY)) {
        /* a choice: "enum" (titles in "enumNames"), or "oneOf" of const/title */
        int names = mote_json_member(j, p, "enumNames"), n;

        mote_jw_key(w, "enum");
        mote_jw_arr(w);
        for (i = 0; (e = mote_json_elem(j, en >= 0 ? en : one, i)) >= 0; i++) {
            int v = en >= 0 ? e : mote_json_member(j, e, "const");

            if (mote_json_type_of(j, v) != MOTE_JSON_STRING || i >= 255 || !arena_tok(q, j, v))
                return -1;
            mote_jw_value(w, j, v);
            q->f[q->nfields].nchoices++;
        }
        mote_jw_arr_end(w);
        mote_jw_key(w, "enumTitles");
        mote_jw_arr(w);
        for (n = 0; n < i; n++) {
            int t = en >= 0 ? mote_json_elem(j, names, n)
                            : mote_json_member(j, mote_json_elem(j, one, n), "title");

            if (mote_json_type_of(j, t) != MOTE_JSON_STRING)
                t = en >= 0 ? mote_json_elem(j, en, n)
                            : mote_json_member(j, mote_json_elem(j, one, n), "const");
            mote_jw_value(w, j, t);
        }
        mote_jw_arr_end(w);
        if (i == 0) {
            *why = "a choice without values";
            return -1;
        }
    }
    mote_jw_obj_end(w);
    q->nfields++;
    return 1;
}

static void on_deadline(struct mote_loop *loop, mote_timer_id t, void *arg);

static void close_ask(struct mote_mcp *m);

static void ask_in(struct mote_mcp_server *s, const struct mote_json *j, int id, int params)
{
    struct mote_mcp *m = s->m;
    struct mote_mcp_asks *a = m->asks;
    struct mote_mcp_ask *q = &a->q;
    int schema = j != NULL ? mote_json_member(j, params, "requestedSchema") : -1;
    int props = j != NULL ? mote_json_member(j, schema, "properties") : -1, req, k, i, rc;
    const char *why = NULL;
    struct mote_sb sb;
    struct mote_jw w;

    if (j == NULL) {
        /* its server stopped (mcp.c): a question of its is over */
        if (q->id != 0 && m->srv + q->srv == s) {
            mcp_log(s, "the server stopped: its question is closed", NULL, NULL);
            a->fn(a->arg, q, true);
            close_ask(m);
        }
        return;
    }

    if (a->fn == NULL)
        {
        decline_now(s, j, id, "nobody can answer it here");
        return;
    }
    if (q->id != 0)
        {
        decline_now(s, j, id, "another question is open");
        return;
    }
    if (mote_json_member(j, params, "mode") >= 0 &&
        !mote_json_eq(j, mote_json_member(j, params, "mode"), "form"))
        {
        decline_now(s, j, id, "only forms are taken (not URL mode)");
        return;
    }
    if (mote_json_type_of(j, props) != MOTE_JSON_OBJECT ||
        (mote_json_member(j, schema, "type") >= 0 &&
         !mote_json_eq(j, mote_json_member(j, schema, "type"), "object")))
        {
        decline_now(s, j, id, "its requestedSchema is not an object of properties");
        return;
    }
    memset(q, 0, offsetof(struct mote_mcp_ask, names));
    q->names_len = 0;
    mote_sb_init(&sb, q->rid, sizeof(q->rid));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_value(&w, j, id);
    if (w.err != 0)
        {
        decline_now(s, j, id, "its id is too long");
        return;
    }
    mote_sb_init(&sb, q->form, sizeof(q->form));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "server", s->name);
    mote_jw_key(&w, "message");
    if (mote_json_type_of(j, mote_json_member(j, params, "message")) == MOTE_JSON_STRING)
        mote_jw_value(&w, j, mote_json_member(j, params, "message"));
    else
        mote_jw_str(&w, "");
    mote_jw_key(&w, "fields");
    mote_jw_arr(&w);
    req = mote_json_member(j, schema, "required");
    for (i = 0, k = props + 1; i < j->tok[props].size; i++, k = mote_json_skip(j, k + 1)) {
        if ((rc = take_field(q, &w, j, k, req, &why)) < 0)
            {
        decline_now(s, j, id, why);
        return;
    }
    }
    mote_jw_arr_end(&w);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        {
        decline_now(s, j, id, "the form is over MOTE_MCP_ASK_MAX bytes");
        return;
    }
    mote_mcp_redact(s, q->form, sb.len);
    q->form_len = sb.len;
    q->srv = (uint8_t)(s - m->srv);
    q->id = ++a->next_id != 0 ? a->next_id : ++a->next_id;
    s->asking = 1;
    q->timer = 0;
    if (a->timeout_ms > 0 &&
        mote_timer_start(m->loop, a->timeout_ms, on_deadline, m, 0, &q->timer) < 0)
        q->timer = 0;
    a->fn(a->arg, q, false);
}

/* The question ends (answered or not). */
static void close_ask(struct mote_mcp *m)
{
    struct mote_mcp_ask *q = &m->asks->q;

    if (q->timer != 0)
        (void)mote_timer_stop(m->loop, q->timer);
    q->timer = 0;
    m->srv[q->srv].asking = 0;
    q->id = 0;
}

static void on_deadline(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_mcp *m = arg;
    struct mote_mcp_ask *q = &m->asks->q;
    struct mote_mcp_server *s = &m->srv[q->srv];

    (void)loop, (void)t;
    q->timer = 0;
    if (q->id == 0)
        return;
    mcp_log(s, "nobody answered the server's question in time: cancelled", NULL, NULL);
    (void)send_action(s, q->rid, MOTE_MCP_CANCEL, NULL, 0);
    m->asks->fn(m->asks->arg, q, true); /* (q->id still names it) */
    close_ask(m);
}

/* True when value t of j fits field f of q (*why otherwise). */
static bool fits(const struct mote_mcp_ask *q, unsigned f, const struct mote_json *j, int t,
                 const char **why)
{
    int ty = kind_of(j, t);
    const char *c = q->names + q->f[f].at;
    unsigned i;
    int64_t v;

    switch (q->f[f].type) {
    case MOTE_MCP_F_STRING:
        if (ty != MOTE_MCP_F_STRING) {
            *why = "is not a string";
            return false;
        }
        for (i = 0; i < q->f[f].nchoices; i++) {
            c += strlen(c) + 1;
            if (mote_json_eq(j, t, c))
                return true;
        }
        *why = "is not one of its choices";
        return q->f[f].nchoices == 0;
    case MOTE_MCP_F_NUMBER:
        *why = "is not a number";
        return ty == MOTE_MCP_F_NUMBER;
    case MOTE_MCP_F_INTEGER:
        *why = "is not an integer";
        return ty == MOTE_MCP_F_NUMBER && mote_json_int(j, t, &v) == 0;
    default:
        *why = "is not true or false";
        return ty == MOTE_MCP_F_BOOLEAN;
    }
}

int mote_mcp_elicit_answer(struct mote_mcp *m, uint32_t id, enum mote_mcp_action action,
                           const char *content, size_t len, char *err, size_t cap)
{
    struct mote_mcp_ask *q = m->asks != NULL ? &m->asks->q : NULL;
    struct mote_json *j = &m->json;
    char out[MOTE_MCP_ASK_MAX];
    const char *why = NULL, *name = "";
    struct mote_sb sb;
    struct mote_jw w;
    unsigned f;
    int rc, k, i;

    if (q == NULL || q->id == 0 || q->id != id)
        return MOTE_ERR_NOENT;
    if (action != MOTE_MCP_ACCEPT) {
        rc = send_action(&m->srv[q->srv], q->rid, action == MOTE_MCP_CANCEL ? action
                                                                          : MOTE_MCP_DECLINE,
                         NULL, 0);
        if (rc != MOTE_ERR_FULL)
            close_ask(m); /* (sent, or its server cannot be told: over either way) */
        return rc < 0 ? rc : 0;
    }
    rc = content != NULL ? mote_json_parse(j, content, len) : MOTE_ERR_INVAL;
    if (rc <= 0 || mote_json_type_of(j, 0) != MOTE_JSON_OBJECT ||
        mote_json_strict(j, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, NULL, 0) < 0) {
        why = "the answer is not a JSON object (strict: no duplicate keys, no NUL)";
        goto bad;
    }
    mote_sb_init(&sb, out, sizeof(out));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    for (f = 0; f < q->nfields; f++) {
        int t;

        name = q->names + q->f[f].at;
        t = mote_json_member(j, 0, name);
        if (t < 0 && q->f[f].required) {
            why = "is required";
            goto bad;
        }
        if (t < 0)
            continue;
        if (!fits(q, f, j, t, &why))
            goto bad;
        mote_jw_key(&w, name);
        mote_jw_value(&w, j, t);
    }
    for (i = 0, k = 1; i < j->tok[0].size; i++, k = mote_json_skip(j, k + 1)) {
        for (f = 0; f < q->nfields && !mote_json_eq(j, k, q->names + q->f[f].at); f++) {
        }
        if (f == q->nfields) {
            name = "";
            why = "the answer names a field the form does not have";
            goto bad;
        }
    }
    mote_jw_obj_end(&w);
    if (w.err != 0) {
        name = "";
        why = "the answer is over MOTE_MCP_ASK_MAX bytes";
        goto bad;
    }
    rc = send_action(&m->srv[q->srv], q->rid, MOTE_MCP_ACCEPT, out, sb.len);
    if (rc != MOTE_ERR_FULL)
        close_ask(m);
    return rc < 0 ? rc : 0;
bad:
    if (err != NULL && cap > 0) {
        mote_sb_init(&sb, err, cap);
        mote_sb_join(&sb, name, name[0] != '\0' ? " " : "", why);
    }
    return MOTE_ERR_INVAL;
}
