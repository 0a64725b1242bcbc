/*
 * mcp_tool.c - an MCP server's tool as mote offers it to the model: its
 * name (SERVER__TOOL, or a valid unique form of it) and its inputSchema,
 * re-encoded. Used by the protocol (mcp.c) as it takes a tool list.
 */
#include <string.h>

#include "mcp_int.h"
#include "mote/mote.h"

bool mote_mcp_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

static bool name_taken(const struct mote_mcp *m, const struct mote_mcp_tool *self,
                       const char *name)
{
    unsigned i, k;

    for (i = 0; i < m->n; i++) {
        for (k = 0; k < m->srv[i].ntools; k++) {
            if (&m->srv[i].tools[k] != self && strcmp(m->srv[i].tools[k].name, name) == 0)
                return true;
        }
    }
    return false;
}

/* The name offered to the model: SERVER__TOOL when that is a valid name
 * ([A-Za-z0-9_-], at most 63 bytes) that no other tool has; else the
 * valid characters of it (others as _), shortened, with "_" and 8 hex
 * digits of a hash of the server's and the tool's names: two tools never
 * share a name (a call maps back to its server and tool through it). Every
 * form keeps "SERVER__" (a server's name is at most 24 bytes), and a
 * registry tool's name never holds "__" (mote_session_add_tool): no MCP
 * tool is named like one of the registry. */
void mote_mcp_tool_name(struct mote_mcp_server *s, struct mote_mcp_tool *tool)
{
    static const char hexd[] = "0123456789abcdef";
    char *out = tool->name;
    size_t cap = sizeof(tool->name), full = strlen(s->name) + 2 + strlen(tool->remote), i;
    bool exact = full < cap;
    struct mote_sb sb;
    uint32_t h = 2166136261u, salt;

    mote_sb_init(&sb, out, cap);
    mote_sb_s(&sb, s->name);
    mote_sb_s(&sb, "__");
    mote_sb_s(&sb, tool->remote);
    for (i = 0; out[i] != '\0'; i++) {
        if (!mote_mcp_name_char(out[i])) {
            out[i] = '_';
            exact = false;
        }
    }
    if (exact && !name_taken(s->m, tool, out))
        return;
    for (i = 0; s->name[i] != '\0'; i++)
        h = (h ^ (unsigned char)s->name[i]) * 16777619u;
    h = (h ^ 0u) * 16777619u;
    for (i = 0; tool->remote[i] != '\0'; i++)
        h = (h ^ (unsigned char)tool->remote[i]) * 16777619u;
    for (salt = 0; salt < 16; salt++) {
        uint32_t v = h + salt * 0x9e3779b9u;
        size_t keep = strlen(out) < cap - 10 ? strlen(out) : cap - 10;

        out[keep] = '_';
        for (i = 0; i < 8; i++)
            out[keep + 1 + i] = hexd[(v >> (28 - 4 * i)) & 15];
        out[keep + 9] = '\0';
        if (!name_taken(s->m, tool, out))
            return;
        out[keep] = '\0';
    }
}

struct fixed {
    char *p;
    size_t cap, len;
};

static int fixed_sink(void *arg, const char *p, size_t n)
{
    struct fixed *f = arg;

    if (f->len + n >= f->cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(f->p + f->len, p, n);
    f->len += n;
    f->p[f->len] = '\0';
    return 0;
}

/* A tool's inputSchema as mote offers it: re-encoded (never copied raw),
 * with "type": "object" added when the server left it out (the providers
 * require an object schema). Returns 0, or < 0: not an object schema,
 * or too large for MOTE_MCP_SCHEMA_MAX. */
int mote_mcp_take_schema(const struct mote_json *j, int schema, char *out, size_t cap)
{
    struct fixed f = {out, cap, 0};
    struct mote_jw w;
    int type = mote_json_member(j, schema, "type"), k, i;

    if (mote_json_type_of(j, schema) != MOTE_JSON_OBJECT)
        return MOTE_ERR_INVAL;
    if (type >= 0 && !mote_json_eq(j, type, "object"))
        return MOTE_ERR_INVAL;
    mote_jw_init(&w, fixed_sink, &f);
    mote_jw_obj(&w);
    if (type < 0) {
        mote_jw_kstr(&w, "type", "object");
    }
    for (i = 0, k = schema + 1; i < j->tok[schema].size && w.err == 0; i++) {
        char key[128];

        if (mote_json_str(j, k, key, sizeof(key)) < 0)
            return MOTE_ERR_TOO_LARGE;
        mote_jw_key(&w, key);
        mote_jw_value(&w, j, k + 1);
        k = mote_json_skip(j, k + 1);
    }
    mote_jw_obj_end(&w);
    return w.err;
}
