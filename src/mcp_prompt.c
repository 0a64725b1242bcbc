/*
 * mcp_prompt.c - the MCP servers' prompts for a frontend's commands
 * (mote_mcp.h: mote_mcp_prompts_init, mote_mcp_prompt_init): prompts/list
 * over every server that declares prompts, written as lines; prompts/get
 * with the arguments typed as NAME=VALUE, its messages written as the
 * text of one user turn (text kept, other content summarised). The
 * requests go as calls (struct mote_mcp_call with `method` and `take`).
 */
#include <string.h>

#include "mcp_int.h"
#include "mote/mote.h"
#include "util.h"

enum { P_LIST, P_GET };

/* Room kept at the end of a result for the note that says it was cut. */
#define NOTE_ROOM 200u

static bool offers(const struct mote_mcp_server *s)
{
    return mcp_offers(s, MOTE_MCP_CAP_PROMPTS);
}

static unsigned next_offering(const struct mote_mcp *m, unsigned from)
{
    return mcp_next_offering(m, from, MOTE_MCP_CAP_PROMPTS);
}

/* Appends string `t` of j to `sb` (at most `max` bytes, "..." when cut). */
static void put_str(struct mote_sb *sb, const struct mote_json *j, int t, size_t max)
{
    char v[256];
    int n = mote_json_cstr(j, t, v, max < sizeof(v) ? max : sizeof(v));

    if (n < 0 && n != MOTE_ERR_TOO_LARGE)
        return;
    mote_sb_s(sb, v);
    if (n == MOTE_ERR_TOO_LARGE)
        mote_sb_s(sb, "...");
}

/* A prompts/list page: "SERVER/NAME: description (arguments: a*, b)". */
static bool take_list(struct mote_mcp_call *c, const struct mote_json *j, int result,
                      struct mote_sb *sb)
{
    struct mote_mcp_server *s = &c->m->srv[c->srv];
    int arr = mote_json_member(j, result, "prompts"), next, k, t;

    for (k = 0; (t = mote_json_elem(j, arr, k)) >= 0; k++) {
        int name = mote_json_member(j, t, "name"), a, i;
        size_t at = sb->len;

        if (mote_json_type_of(j, name) != MOTE_JSON_STRING)
            continue; /* (nothing to ask for by name) */
        if (sb->len + NOTE_ROOM >= sb->cap) {
            mote_sb_s(sb, "(more prompts not shown)\n");
            return false;
        }
        mote_sb_s(sb, s->name);
        mote_sb_s(sb, "/");
        put_str(sb, j, name, 128);
        if (mote_json_type_of(j, mote_json_member(j, t, "description")) == MOTE_JSON_STRING) {
            mote_sb_s(sb, ": ");
            put_str(sb, j, mote_json_member(j, t, "description"), 200);
        }
        for (i = 0; (a = mote_json_elem(j, mote_json_member(j, t, "arguments"), i)) >= 0; i++) {
            bool req = false;

            mote_sb_s(sb, i == 0 ? " (arguments: " : ", ");
            put_str(sb, j, mote_json_member(j, a, "name"), 64);
            (void)mote_json_bool(j, mote_json_member(j, a, "required"), &req);
            mote_sb_s(sb, req ? "*" : "");
        }
        mote_sb_s(sb, i > 0 ? ")\n" : "\n");
        if (sb->len + NOTE_ROOM >= sb->cap) {
            sb->len = at;
            sb->p[at] = '\0';
        }
    }
    next = mote_json_member(j, result, "nextCursor");
    if (mote_json_type_of(j, next) == MOTE_JSON_STRING && ++c->tool < MOTE_MCP_PAGES_MAX) {
        char cur[256];
        struct mote_sb pb;
        struct mote_jw w;

        if (mote_json_cstr(j, next, cur, sizeof(cur)) <= 0)
            return false;
        mote_sb_init(&pb, c->params, sizeof(c->params));
        mote_jw_init(&w, mote_sb_put, &pb);
        mote_jw_obj(&w);
        mote_jw_kstr(&w, "cursor", cur);
        mote_jw_obj_end(&w);
        return w.err == 0; /* the next page of the same server */
    }
    return false;
}

/* One content block of a prompt's message. */
static void put_content(struct mote_sb *sb, const struct mote_json *j, int ct, bool *cut)
{
    int type = mote_json_member(j, ct, "type"), text = mote_json_member(j, ct, "text");
    char kind[32];

    if (mote_json_eq(j, type, "resource") &&
        mote_json_type_of(j, mote_json_path(j, ct, "resource.text")) == MOTE_JSON_STRING)
        text = mote_json_path(j, ct, "resource.text"); /* an embedded text resource */
    if ((mote_json_eq(j, type, "text") || mote_json_eq(j, type, "resource")) &&
        mote_json_type_of(j, text) == MOTE_JSON_STRING) {
        size_t room = sb->cap - sb->len > NOTE_ROOM ? sb->cap - sb->len - NOTE_ROOM : 0;
        int n = room > 1 ? mote_json_str(j, text, sb->p + sb->len, room) : MOTE_ERR_TOO_LARGE;
        size_t got = room > 1 ? strlen(sb->p + sb->len) : 0;

        if (n == MOTE_ERR_TOO_LARGE)
            *cut = true;
        /* (a NUL in the text ends it: the turn is a C string) */
        sb->len += n >= 0 && (size_t)n < got ? (size_t)n : got;
        sb->p[sb->len] = '\0';
        return;
    }
    if (mote_json_str(j, type, kind, sizeof(kind)) <= 0)
        mote_str_copy(kind, sizeof(kind), "unknown");
    mote_sb_s(sb, "[");
    mote_sb_s(sb, kind);
    mote_sb_s(sb, " content");
    if (mote_json_type_of(j, mote_json_member(j, ct, "mimeType")) == MOTE_JSON_STRING) {
        mote_sb_s(sb, ": ");
        put_str(sb, j, mote_json_member(j, ct, "mimeType"), 64);
    } else if (mote_json_type_of(j, mote_json_member(j, ct, "uri")) == MOTE_JSON_STRING) {
        mote_sb_s(sb, ": ");
        put_str(sb, j, mote_json_member(j, ct, "uri"), 200);
    } else if (mote_json_type_of(j, mote_json_path(j, ct, "resource.uri")) == MOTE_JSON_STRING) {
        mote_sb_s(sb, ": ");
        put_str(sb, j, mote_json_path(j, ct, "resource.uri"), 200);
    }
    mote_sb_s(sb, " not shown]");
}

/* A prompts/get answer: its messages as one text. False: malformed. */
static bool take_get(const struct mote_json *j, int result, struct mote_sb *sb, bool *cut)
{
    int arr = mote_json_member(j, result, "messages"), k, t;

    if (mote_json_type_of(j, arr) != MOTE_JSON_ARRAY || mote_json_elem(j, arr, 0) < 0) {
        mote_sb_s(sb, "the MCP server's prompt has no messages");
        return false;
    }
    for (k = 0; (t = mote_json_elem(j, arr, k)) >= 0; k++) {
        int ct = mote_json_member(j, t, "content"), role = mote_json_member(j, t, "role"), i, e;

        if (sb->len + NOTE_ROOM >= sb->cap) {
            *cut = true;
            break;
        }
        if (k > 0)
            mote_sb_s(sb, "\n\n");
        if (!mote_json_eq(j, role, "user")) {
            mote_sb_s(sb, "(");
            put_str(sb, j, role, 16);
            mote_sb_s(sb, ") ");
        }
        if (mote_json_type_of(j, ct) == MOTE_JSON_ARRAY) {
            for (i = 0; (e = mote_json_elem(j, ct, i)) >= 0; i++) {
                if (i > 0)
                    mote_sb_s(sb, "\n");
                put_content(sb, j, e, cut);
            }
        } else if (mote_json_type_of(j, ct) == MOTE_JSON_OBJECT) {
            put_content(sb, j, ct, cut);
        } else {
            mote_sb_s(sb, "[a message without content]");
        }
    }
    return true;
}

static bool prompt_take(struct mote_mcp_call *c, const struct mote_json *j, int result, bool cut)
{
    struct mote_sb sb;
    bool again = false;
    unsigned nx;

    /* (after what the servers before this one gave) */
    mote_sb_init(&sb, c->result + c->len, sizeof(c->result) - c->len);
    c->is_error = false;
    if (c->which == P_GET) {
        c->is_error = !take_get(j, result, &sb, &cut);
    } else {
        again = take_list(c, j, result, &sb);
        if (!again) {
            nx = next_offering(c->m, c->srv + 1);
            if (nx < c->m->n && sb.len + NOTE_ROOM < sb.cap) {
                c->srv = nx; /* the next server's prompts */
                c->tool = 0;
                mote_str_copy(c->params, sizeof(c->params), "{}");
                again = true;
            }
        }
    }
    if (cut)
        mote_sb_num(&sb, "\n[cut: the server sent more than ", MOTE_MCP_RESULT_MAX,
                    " bytes (MOTE_MCP_RESULT_MAX); the rest is not shown]");
    c->len += sb.len;
    return again;
}

void mote_mcp_prompts_init(struct mote_mcp_call *c, struct mote_mcp *m)
{
    mote_mcp_call_init(c, m, next_offering(m, 0), 0, NULL, 0);
    c->method = "prompts/list";
    c->take = prompt_take;
    c->which = P_LIST;
    mote_str_copy(c->params, sizeof(c->params), "{}");
    if (c->srv >= m->n)
        mcp_refuse(c, "no MCP server offers prompts (yet)", NULL, NULL);
}

/* The next word of *p (blanks skipped): a NAME=VALUE, the value in double
 * quotes when it holds blanks (\" and \\ inside). Its name and value go
 * into out (NUL between them); false at the end or on a bad word. */
static bool next_arg(const char **p, char *out, size_t cap, const char **value, bool *bad)
{
    const char *s = *p + strspn(*p, " \t");
    size_t n = 0;
    bool quoted = false, named = false;

    *bad = false;
    if (*s == '\0')
        return false;
    for (; *s != '\0' && (quoted || (*s != ' ' && *s != '\t')); s++) {
        char ch = *s;

        if (ch == '"' && named && (quoted || s[-1] == '=')) {
            quoted = !quoted;
            continue;
        }
        if (ch == '\\' && quoted && (s[1] == '"' || s[1] == '\\'))
            ch = *++s;
        if (ch == '=' && !named) {
            named = true;
            ch = '\0';
            *value = out + n + 1;
        }
        if (n + 1 >= cap) {
            *bad = true;
            return false;
        }
        out[n++] = ch;
    }
    out[n] = '\0';
    *p = s;
    *bad = !named || quoted || out[0] == '\0';
    return !*bad;
}

int mote_mcp_prompt_init(struct mote_mcp_call *c, struct mote_mcp *m, const char *name,
                         const char *args)
{
    const char *slash = strchr(name, '/'), *p = args != NULL ? args : "";
    char *word = c->result; /* (the result's buffer holds each word meanwhile) */
    unsigned i, srv = m->n;
    struct mote_sb sb;
    struct mote_jw w;
    size_t sl = slash != NULL ? (size_t)(slash - name) : 0;
    bool bad;

    mote_mcp_call_init(c, m, 0, 0, NULL, 0);
    c->method = "prompts/get";
    c->take = prompt_take;
    c->which = P_GET;
    for (i = 0; i < m->n; i++) {
        if (!offers(&m->srv[i]))
            continue;
        if (slash != NULL ? strlen(m->srv[i].name) == sl && memcmp(m->srv[i].name, name, sl) == 0
                          : srv == m->n) {
            srv = i;
        } else if (slash == NULL) {
            mcp_refuse(c, "more than one MCP server offers prompts: say which, as SERVER/",
                   name, " (/prompts lists them)");
            return MOTE_ERR_INVAL;
        }
    }
    if (srv >= m->n) {
        mcp_refuse(c, "no MCP server that offers prompts is named so: ", name,
               " (/prompts lists them)");
        return MOTE_ERR_NOENT;
    }
    c->srv = srv;
    name = slash != NULL ? slash + 1 : name;
    mote_sb_init(&sb, c->params, sizeof(c->params));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "name", name);
    mote_jw_key(&w, "arguments");
    mote_jw_obj(&w);
    for (;;) {
        const char *value = NULL;

        if (!next_arg(&p, word, sizeof(c->result), &value, &bad))
            break;
        mote_jw_key(&w, word);
        mote_jw_str(&w, value);
    }
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    if (bad) {
        mcp_refuse(c, "a prompt's arguments are NAME=VALUE words (a value with blanks in double "
                  "quotes)", NULL, NULL);
        return MOTE_ERR_INVAL;
    }
    if (name[0] == '\0' || w.err != 0) {
        mcp_refuse(c, name[0] == '\0' ? "no prompt named" : "the arguments are over "
                                                         "MOTE_MCP_PARAMS_MAX bytes",
               NULL, NULL);
        return MOTE_ERR_INVAL;
    }
    return 0;
}

int mote_mcp_prompt_command(struct mote_mcp_call *c, struct mote_mcp *m, const char *line)
{
    char name[2 * MOTE_MCP_NAME_MAX];
    const char *p = line + 7;
    size_t n;

    if (strcmp(line, "/prompts") == 0) {
        if (c != NULL)
            mote_mcp_prompts_init(c, m);
        return 0;
    }
    if (strncmp(line, "/prompt", 7) != 0 || (*p != '\0' && *p != ' ' && *p != '\t'))
        return MOTE_ERR_NOENT;
    if (c == NULL)
        return 1;
    p += strspn(p, " \t");
    n = strcspn(p, " \t");
    mote_mcp_call_init(c, m, 0, 0, NULL, 0);
    if (n == 0 || n >= sizeof(name)) {
        mcp_refuse(c, n == 0 ? "/prompt NAME [ARG=VALUE...] (/prompts lists them)"
                         : "the prompt's name is too long", NULL, NULL);
        return 1;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    (void)mote_mcp_prompt_init(c, m, name, p + n);
    return 1;
}
