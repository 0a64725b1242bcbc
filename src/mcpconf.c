/*
 * mcpconf.c - MCP configuration files: {"mcpServers": {"NAME":
 * {"command": "...", "args": [...], "env": {...}}}} into the argv and
 * envp arrays of mote_mcp_add (see mote_mcp.h). Every frontend reads the
 * file its own way and hands the bytes here.
 */
#include "mote/mote_mcp.h"

#include <string.h>

#include "util.h"

/* Unescapes string token `t` into the arena; NULL if it does not fit. */
static const char *keep_str(struct mote_mcp_conf *cf, int t)
{
    char *p = cf->arena + cf->used;
    int n = mote_json_cstr(&cf->json, t, p, sizeof(cf->arena) - cf->used);

    if (n < 0)
        return NULL;
    cf->used += (size_t)n + 1;
    return p;
}

/* "NAME=VALUE" from key token `k` and string value token `k + 1`. */
static const char *keep_pair(struct mote_mcp_conf *cf, int k)
{
    size_t start = cf->used;
    char *p = cf->arena + cf->used;
    int n = mote_json_cstr(&cf->json, k, p, sizeof(cf->arena) - cf->used);
    int v;

    if (n <= 0 || memchr(p, '=', (size_t)n) != NULL ||
        (size_t)n + 2 >= sizeof(cf->arena) - cf->used)
        return NULL;
    p[n] = '=';
    v = mote_json_cstr(&cf->json, k + 1, p + n + 1, sizeof(cf->arena) - cf->used - (size_t)n - 1);
    if (v < 0) {
        cf->used = start;
        return NULL;
    }
    cf->used += (size_t)n + 1 + (size_t)v + 1;
    return p;
}

int mote_mcp_conf_parse(struct mote_mcp_conf *cf, struct mote_mcp *m, const char *text,
                        size_t len, const char *const *base_env, char *err, size_t cap)
{
    struct mote_json *js = &cf->json;
    int servers, k, i, prc;
    char name[64];

    cf->used = 0;
    /* every string here becomes a C string (a command, an argument, a
     * variable, a name): a NUL in one would cut it unseen */
    if ((prc = mote_json_parse_object(js, text, len, err, cap)) < 0 ||
        (prc = mote_json_strict(js, 0, MOTE_JSON_NO_NUL, err, cap)) < 0)
        return prc;
    servers = mote_json_member(js, 0, "mcpServers");
    if (mote_json_type_of(js, servers) != MOTE_JSON_OBJECT)
        return mote_why(err, cap, MOTE_ERR_BADMSG, "no \"mcpServers\" object", NULL, NULL);
    if (js->tok[servers].size > (int)(MOTE_MAX_MCP_SERVERS - m->n)) {
        if (cap > 0) {
            struct mote_sb sb;

            mote_sb_init(&sb, err, cap);
            mote_sb_num(&sb, "", (uint64_t)js->tok[servers].size, " servers; this mote takes ");
            mote_sb_num(&sb, "", MOTE_MAX_MCP_SERVERS, " (MOTE_MAX_MCP_SERVERS)");
        }
        return MOTE_ERR_FULL;
    }
    k = servers + 1;
    for (i = 0; i < js->tok[servers].size; i++) {
        int def = k + 1, cmd = mote_json_member(js, def, "command");
        int args = mote_json_member(js, def, "args"), env = mote_json_member(js, def, "env");
        const char **av = cf->argv[m->n], **ev = cf->envp[m->n];
        int a = 0, e = 0, t, rc;

        if (mote_json_cstr(js, k, name, sizeof(name)) <= 0 ||
            mote_json_type_of(js, def) != MOTE_JSON_OBJECT ||
            mote_json_type_of(js, cmd) != MOTE_JSON_STRING) {
            return mote_why_num(err, cap, MOTE_ERR_BADMSG, "server ", (uint64_t)i + 1,
                                " needs a name and a \"command\" string");
        }
        for (t = 0; name[t] != '\0'; t++) {
            /* shown in the messages below: one line, no escape sequences
             * (mote_mcp_add refuses such a name anyway) */
            if ((unsigned char)name[t] < 0x20 || name[t] == 0x7f)
                name[t] = '?';
        }
        if ((av[a++] = keep_str(cf, cmd)) == NULL)
            return mote_why(err, cap, MOTE_ERR_TOO_LARGE, "too large to keep (MOTE_MCP_CONF_ARENA)",
                       NULL, NULL);
        if (args >= 0 && mote_json_type_of(js, args) != MOTE_JSON_ARRAY &&
            !mote_json_is_null(js, args))
            return mote_why(err, cap, MOTE_ERR_BADMSG, "server '", name,
                       "': \"args\" must be an array of strings");
        for (t = 0; mote_json_type_of(js, args) == MOTE_JSON_ARRAY && t < js->tok[args].size;
             t++) {
            int el = mote_json_elem(js, args, t);

            if (a >= MOTE_MCP_CONF_ARGS + 1 || mote_json_type_of(js, el) != MOTE_JSON_STRING ||
                (av[a] = keep_str(cf, el)) == NULL) {
                if (cap > 0) {
                    struct mote_sb sb;

                    mote_sb_init(&sb, err, cap);
                    mote_sb_join(&sb, "server '", name, "': \"args\" must be at most ");
                    mote_sb_num(&sb, "", MOTE_MCP_CONF_ARGS, " strings");
                }
                return MOTE_ERR_BADMSG;
            }
            a++;
        }
        av[a] = NULL;
        for (t = 0; base_env != NULL && base_env[t] != NULL && e < MOTE_MCP_CONF_ENV; t++)
            ev[e++] = base_env[t];
        if (env >= 0 && mote_json_type_of(js, env) != MOTE_JSON_OBJECT &&
            !mote_json_is_null(js, env))
            return mote_why(err, cap, MOTE_ERR_BADMSG, "server '", name,
                       "': \"env\" must map names to strings");
        {
            int kk = env + 1;

            for (t = 0; mote_json_type_of(js, env) == MOTE_JSON_OBJECT && t < js->tok[env].size;
                 t++) {
                if (e >= MOTE_MCP_CONF_ENV * 2 ||
                    mote_json_type_of(js, kk + 1) != MOTE_JSON_STRING ||
                    (ev[e] = keep_pair(cf, kk)) == NULL)
                    return mote_why(err, cap, MOTE_ERR_BADMSG, "server '", name,
                               "': \"env\" must map names to strings");
                e++;
                kk = mote_json_skip(js, kk + 1);
            }
        }
        ev[e] = NULL;
        rc = mote_mcp_add(m, name, av, ev);
        if (rc == MOTE_ERR_EXIST)
            return mote_why(err, cap, MOTE_ERR_EXIST, "two servers are named '", name, "'");
        if (rc < 0)
            return mote_why(err, cap, MOTE_ERR_INVAL, "bad server name '", name,
                       "' (use letters, digits, - and _, at most 24)");
        k = mote_json_skip(js, def);
    }
    return 0;
}
