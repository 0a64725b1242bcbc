/*
 * mcp_res.c - the MCP servers' resources as tools the model calls
 * (list_mcp_resources, list_mcp_resource_templates, read_mcp_resource):
 * their definitions, the model's input checked and turned into a
 * resources/list, resources/templates/list or resources/read request, and
 * the answers written as text (a blob summarised: its type and size). The
 * requests go as calls (struct mote_mcp_call with `method` and `take`,
 * sent by mcp.c, whose answer buffer cuts long strings as for tools/call).
 */
#include <string.h>

#include "mcp_int.h"
#include "mote/mote.h"
#include "util.h"

enum { RES_LIST, RES_TEMPLATES, RES_READ };

static const char *const res_names[MOTE_MCP_RES_TOOLS] = {
    "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"};

static const char *const res_desc[MOTE_MCP_RES_TOOLS] = {
    "Lists the resources the MCP servers offer (uri, name, type, description): every "
    "server's, or only `server`'s; with `cursor` (given by an earlier answer) the next page "
    "of that server's. Read one with read_mcp_resource.",
    "Lists the resource templates the MCP servers offer (URI templates to fill in and read "
    "with read_mcp_resource): every server's, or only `server`'s; `cursor` as for "
    "list_mcp_resources.",
    "Reads a resource of an MCP server by its URI: its text (cut when long); binary "
    "content is only summarised (type and size).",
};

static const char *const res_schema[MOTE_MCP_RES_TOOLS] = {
    "{\"type\":\"object\",\"properties\":{\"server\":{\"type\":\"string\",\"description\":"
    "\"the MCP server's name (all servers when left out)\"},\"cursor\":{\"type\":\"string\","
    "\"description\":\"the cursor an earlier answer gave (needs server)\"}}}",
    "{\"type\":\"object\",\"properties\":{\"server\":{\"type\":\"string\",\"description\":"
    "\"the MCP server's name (all servers when left out)\"},\"cursor\":{\"type\":\"string\","
    "\"description\":\"the cursor an earlier answer gave (needs server)\"}}}",
    "{\"type\":\"object\",\"properties\":{\"server\":{\"type\":\"string\",\"description\":"
    "\"the MCP server's name\"},\"uri\":{\"type\":\"string\",\"description\":\"the "
    "resource's URI\"}},\"required\":[\"server\",\"uri\"]}",
};

static const char *const res_method[MOTE_MCP_RES_TOOLS] = {
    "resources/list", "resources/templates/list", "resources/read"};

/* Room kept at the end of a result for the note that says it was cut. */
#define NOTE_ROOM 200u

static bool offers(const struct mote_mcp_server *s)
{
    return mcp_offers(s, MOTE_MCP_CAP_RESOURCES);
}

static unsigned next_offering(const struct mote_mcp *m, unsigned from)
{
    return mcp_next_offering(m, from, MOTE_MCP_CAP_RESOURCES);
}

unsigned mote_mcp_res_defs(const struct mote_mcp *m, struct mote_tool_def *defs, unsigned max)
{
    unsigned k;

    if (next_offering(m, 0) >= m->n)
        return 0;
    for (k = 0; k < MOTE_MCP_RES_TOOLS && k < max; k++) {
        defs[k].name = res_names[k];
        defs[k].description = res_desc[k];
        defs[k].schema = res_schema[k];
    }
    return k;
}

bool mote_mcp_res_find(const struct mote_mcp *m, const char *name, unsigned *which)
{
    unsigned k;

    if (next_offering(m, 0) >= m->n)
        return false;
    for (k = 0; k < MOTE_MCP_RES_TOOLS; k++) {
        if (strcmp(res_names[k], name) == 0) {
            *which = k;
            return true;
        }
    }
    return false;
}

/* Appends the names of the servers that offer resources to `sb`. */
static void say_servers(const struct mote_mcp *m, struct mote_sb *sb)
{
    unsigned i, n = 0;

    for (i = 0; i < m->n; i++) {
        if (offers(&m->srv[i])) {
            mote_sb_s(sb, n++ > 0 ? ", " : "");
            mote_sb_s(sb, m->srv[i].name);
        }
    }
    if (n == 0)
        mote_sb_s(sb, "none");
}

static bool res_take(struct mote_mcp_call *c, const struct mote_json *j, int result, bool cut);

void mote_mcp_res_call_init(struct mote_mcp_call *c, struct mote_mcp *m, unsigned which,
                            const struct mote_json *j, const char *args, size_t len)
{
    char server[32], cursor[256];
    int ts = mote_json_member(j, 0, "server"), tc = mote_json_member(j, 0, "cursor");
    int tu = mote_json_member(j, 0, "uri"), rc;
    struct mote_sb sb;
    struct mote_jw w;
    unsigned i;

    mote_mcp_call_init(c, m, 0, 0, args, len);
    c->method = res_method[which < MOTE_MCP_RES_TOOLS ? which : 0];
    c->take = res_take;
    c->which = (uint8_t)which;
    server[0] = cursor[0] = '\0';
    if (which >= MOTE_MCP_RES_TOOLS || mote_json_type_of(j, 0) != MOTE_JSON_OBJECT) {
        mcp_refuse(c, "the input is not an object", NULL, NULL);
        return;
    }
    if (ts >= 0 && mote_json_cstr(j, ts, server, sizeof(server)) < 0) {
        mcp_refuse(c, "\"server\" is not the name of an MCP server", NULL, NULL);
        return;
    }
    if (tc >= 0 && (which == RES_READ || mote_json_cstr(j, tc, cursor, sizeof(cursor)) < 0)) {
        mcp_refuse(c, "\"cursor\" is not a cursor an answer gave", NULL, NULL);
        return;
    }
    if (server[0] == '\0' && (which == RES_READ || cursor[0] != '\0')) {
        mcp_refuse(c, "\"server\" is needed (servers with resources: ", NULL, NULL);
        mote_sb_init(&sb, c->result + c->len, sizeof(c->result) - c->len);
        say_servers(m, &sb);
        mote_sb_s(&sb, ")");
        c->len += sb.len;
        return;
    }
    if (server[0] != '\0') {
        for (i = 0; i < m->n && strcmp(m->srv[i].name, server) != 0; i++) {
        }
        if (i >= m->n || !offers(&m->srv[i])) {
            mcp_refuse(c, "no MCP server named '", server, "' offers resources now (servers with "
                                                       "resources: ");
            mote_sb_init(&sb, c->result + c->len, sizeof(c->result) - c->len);
            say_servers(m, &sb);
            mote_sb_s(&sb, ")");
            c->len += sb.len;
            return;
        }
        c->srv = i;
        c->which |= 0x80u; /* one server: its next page is said with its cursor */
    } else {
        c->srv = next_offering(m, 0);
    }
    mote_sb_init(&sb, c->params, sizeof(c->params));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    if (cursor[0] != '\0') {
        mote_jw_kstr(&w, "cursor", cursor);
    }
    if (which == RES_READ) {
        /* (the result's buffer holds the URI meanwhile) */
        rc = mote_json_cstr(j, tu, c->result, sizeof(c->result));
        if (rc <= 0) {
            mcp_refuse(c, rc == MOTE_ERR_TOO_LARGE ? "\"uri\" is over MOTE_MCP_RESULT_MAX bytes"
                                               : "\"uri\" is needed: a resource's URI "
                                                 "(list_mcp_resources gives them)",
                   NULL, NULL);
            return;
        }
        mote_jw_kstr(&w, "uri", c->result);
        c->result[0] = '\0';
    }
    mote_jw_obj_end(&w);
    if (w.err != 0)
        mcp_refuse(c, "the request is over MOTE_MCP_PARAMS_MAX bytes (a URI that long?)", NULL,
               NULL);
}

/* Appends string member `key` of item `t` to `sb` between `pre` and
 * `post` (cut to `max` bytes when it is longer); false when it has none. */
static bool put_member(struct mote_sb *sb, const struct mote_json *j, int t, const char *key,
                       const char *pre, const char *post, size_t max)
{
    char v[256];
    int n = mote_json_cstr(j, mote_json_member(j, t, key), v, max < sizeof(v) ? max : sizeof(v));

    if (n < 0 && n != MOTE_ERR_TOO_LARGE)
        return false;
    if (v[0] == '\0')
        return false;
    mote_sb_s(sb, pre);
    mote_sb_s(sb, v);
    if (n == MOTE_ERR_TOO_LARGE)
        mote_sb_s(sb, "...");
    mote_sb_s(sb, post);
    return true;
}

/* A resources/list or resources/templates/list answer: one line per
 * entry. */
static void take_list(struct mote_mcp_call *c, const struct mote_json *j, int result,
                      struct mote_sb *sb, bool *cut)
{
    bool templates = (c->which & 0x7fu) == RES_TEMPLATES;
    int arr = mote_json_member(j, result, templates ? "resourceTemplates" : "resources");
    int next = mote_json_member(j, result, "nextCursor"), k, t;
    unsigned shown = 0, total = 0;

    for (k = 0; (t = mote_json_elem(j, arr, k)) >= 0; k++) {
        size_t at = sb->len;

        total++;
        if (*cut || sb->len + NOTE_ROOM >= sb->cap)
            continue;
        mote_sb_s(sb, "- ");
        if (!put_member(sb, j, t, templates ? "uriTemplate" : "uri", "", "", 256)) {
            sb->len = at;
            sb->p[at] = '\0';
            continue; /* (no URI: nothing the model could read) */
        }
        (void)put_member(sb, j, t, "name", " (", ")", 128);
        (void)put_member(sb, j, t, "mimeType", " [", "]", 64);
        (void)put_member(sb, j, t, "description", ": ", "", 200);
        mote_sb_s(sb, "\n");
        if (sb->len + NOTE_ROOM >= sb->cap) {
            sb->len = at; /* (a line cut in the middle: left out whole) */
            sb->p[at] = '\0';
            *cut = true;
            continue;
        }
        shown++;
    }
    if (total == 0)
        mote_sb_s(sb, templates ? "(no resource templates)\n" : "(no resources)\n");
    else if (shown < total)
        mote_sb_num(sb, "(", total - shown, " more not shown: the answer is too long)\n");
    if (mote_json_type_of(j, next) == MOTE_JSON_STRING) {
        char cur[256];

        if (mote_json_cstr(j, next, cur, sizeof(cur)) > 0) {
            mote_sb_s(sb, "(more: call again with server \"");
            mote_sb_s(sb, c->m->srv[c->srv].name);
            mote_sb_s(sb, "\" and cursor \"");
            mote_sb_s(sb, cur);
            mote_sb_s(sb, "\")\n");
        }
    }
}

/* A resources/read answer: each content's text, a blob summarised.
 * False: it has no contents array. */
static bool take_read(const struct mote_json *j, int result, struct mote_sb *sb, bool *cut)
{
    int arr = mote_json_member(j, result, "contents"), k, t;

    if (mote_json_type_of(j, arr) != MOTE_JSON_ARRAY) {
        mote_sb_s(sb, "the MCP server's answer has no \"contents\" array");
        return false;
    }

    for (k = 0; (t = mote_json_elem(j, arr, k)) >= 0; k++) {
        int text = mote_json_member(j, t, "text"), blob = mote_json_member(j, t, "blob");
        size_t room;

        if (sb->len + NOTE_ROOM >= sb->cap) {
            *cut = true;
            break;
        }
        if (k > 0)
            mote_sb_s(sb, "\n");
        if (mote_json_type_of(j, blob) == MOTE_JSON_STRING) {
            size_t n;

            (void)mote_json_raw(j, blob, &n);
            mote_sb_s(sb, "[binary content");
            (void)put_member(sb, j, t, "uri", " of ", "", 256);
            (void)put_member(sb, j, t, "mimeType", ", ", "", 64);
            mote_sb_num(sb, ", ", n / 4u * 3u, *cut ? " bytes or more" : " bytes");
            mote_sb_s(sb, " (base64): not shown]\n");
            continue;
        }
        if (k > 0 || mote_json_elem(j, arr, 1) >= 0) {
            (void)put_member(sb, j, t, "uri", "", "", 256);
            (void)put_member(sb, j, t, "mimeType", " [", "]", 64);
            mote_sb_s(sb, ":\n");
        }
        room = sb->cap - sb->len > NOTE_ROOM ? sb->cap - sb->len - NOTE_ROOM : 0;
        if (mote_json_type_of(j, text) == MOTE_JSON_STRING && room > 1) {
            int n = mote_json_str(j, text, sb->p + sb->len, room);

            if (n == MOTE_ERR_TOO_LARGE) {
                n = (int)strlen(sb->p + sb->len);
                *cut = true;
            } else if (n < 0) {
                n = 0;
            }
            /* (a NUL in the text ends it: what the model sees is a C string) */
            sb->len += strlen(sb->p + sb->len) < (size_t)n ? strlen(sb->p + sb->len) : (size_t)n;
            sb->p[sb->len] = '\0';
        } else if (mote_json_type_of(j, text) != MOTE_JSON_STRING) {
            mote_sb_s(sb, "[content without text or blob]");
        }
    }
    if (k == 0 && !*cut)
        mote_sb_s(sb, "(the resource is empty)");
    return true;
}

static bool res_take(struct mote_mcp_call *c, const struct mote_json *j, int result, bool cut)
{
    struct mote_mcp *m = c->m;
    bool one = (c->which & 0x80u) != 0;
    struct mote_sb sb;
    unsigned nx;

    /* (the result's last NOTE_ROOM bytes are kept for the notes) */
    /* (after what the servers before this one gave) */
    mote_sb_init(&sb, c->result + c->len, sizeof(c->result) - c->len);
    c->is_error = false;
    if ((c->which & 0x7fu) == RES_READ) {
        c->is_error = !take_read(j, result, &sb, &cut);
    } else {
        if (!one) {
            mote_sb_s(&sb, "server ");
            mote_sb_s(&sb, m->srv[c->srv].name);
            mote_sb_s(&sb, ":\n");
        }
        take_list(c, j, result, &sb, &cut);
    }
    if (cut) {
        mote_sb_num(&sb, "\n[result cut: the server sent more than ", MOTE_MCP_RESULT_MAX,
                    " bytes (MOTE_MCP_RESULT_MAX); the rest is not shown]\n");
    }
    c->len += sb.len;
    if (one || (c->which & 0x7fu) == RES_READ)
        return false;
    nx = next_offering(m, c->srv + 1);
    if (nx >= m->n || sb.len + NOTE_ROOM >= sb.cap)
        return false;
    c->srv = nx; /* the next server's list, appended */
    return true;
}
