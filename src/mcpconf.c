/*
 * mcpconf.c - MCP configuration files, as Claude Code's .mcp.json writes
 * them: {"mcpServers": {"NAME": {"command": "...", "args": [...], "env":
 * {...}}}} for a process, {"type": "http"|"sse", "url": "...", "headers":
 * {...}} for a server over HTTP; ${VAR} and ${VAR:-default} expanded from
 * the caller's environment lookup. Into the arrays of mote_mcp_add and
 * mote_mcp_add_http (see mote_mcp.h). Every frontend reads the file its
 * own way and hands the bytes here.
 */
#include "mote/mote_mcp.h"

#include <string.h>

#include "util.h"

struct expand {
    struct mote_mcp_conf *cf;
    const char *server;
    char *err;
    size_t cap;
    int rc;
};

/* Appends s[0..n) at *at in the arena, never over `limit` (the start of
 * the text still to read). */
static bool put(struct expand *x, size_t *at, size_t limit, const char *s, size_t n)
{
    if (*at + n + 1 > limit) {
        x->rc = mote_why(x->err, x->cap, MOTE_ERR_TOO_LARGE, "server '", x->server,
                         "': too large to keep (MOTE_MCP_CONF_ARENA)");
        return false;
    }
    memmove(x->cf->arena + *at, s, n);
    *at += n;
    return true;
}

static bool var_char(char c, bool first)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

/* Unescapes string token `t` into the arena with ${VAR} and
 * ${VAR:-default} expanded (through cf->env: without one, as they are;
 * `secret`: the value goes into a header, a URL or a server's env, where
 * credentials go). NULL (x->rc, x->err say why) when it
 * does not fit or names a variable that is not set and has no default. */
static const char *keep(struct expand *x, int t, bool secret)
{
    struct mote_mcp_conf *cf = x->cf;
    char *start = cf->arena + cf->used;
    size_t room = sizeof(cf->arena) - cf->used, at = cf->used, src, i;
    int n = mote_json_cstr(&cf->json, t, start, room);

    if (n < 0) {
        x->rc = mote_why(x->err, x->cap, MOTE_ERR_TOO_LARGE, "server '", x->server,
                         "': too large to keep (MOTE_MCP_CONF_ARENA)");
        return NULL;
    }
    if (cf->env == NULL || memchr(start, '$', (size_t)n) == NULL) {
        cf->used += (size_t)n + 1;
        return start;
    }
    /* The raw text moves to the arena's end; the expansion is written
     * from the start, never over what is still to read. */
    src = sizeof(cf->arena) - (size_t)n - 1;
    memmove(cf->arena + src, start, (size_t)n + 1);
    for (i = 0; i < (size_t)n;) {
        const char *p = cf->arena + src + i, *close, *def;
        char name[64];
        size_t len, nl;
        const char *v;

        if (p[0] != '$' || p[1] != '{' || (close = memchr(p, '}', (size_t)n - i)) == NULL) {
            if (!put(x, &at, src + i, p, 1))
                return NULL;
            i++;
            continue;
        }
        len = (size_t)(close - p) + 1; /* "${...}" */
        def = memchr(p, ':', len);
        if (def != NULL && def[1] != '-')
            def = NULL;
        nl = (size_t)((def != NULL ? def : close) - (p + 2));
        if (nl == 0 || nl >= sizeof(name) || !var_char(p[2], true)) {
            if (!put(x, &at, src + i, p, 1)) /* not a variable: as it is */
                return NULL;
            i++;
            continue;
        }
        memcpy(name, p + 2, nl);
        name[nl] = '\0';
        for (nl = 1; name[nl] != '\0' && var_char(name[nl], false); nl++) {
        }
        if (name[nl] != '\0') {
            if (!put(x, &at, src + i, p, 1))
                return NULL;
            i++;
            continue;
        }
        v = cf->env(cf->env_arg, name, secret);
        if (v == NULL && def == NULL) {
            /* (the variable's name is shown, never a value) */
            struct mote_sb sb;

            mote_sb_init(&sb, x->err, x->cap);
            mote_sb_join(&sb, "server '", x->server, "': ${");
            mote_sb_join(&sb, name, "} is not set (a default: ${", name);
            mote_sb_s(&sb, ":-VALUE})");
            x->rc = MOTE_ERR_NOENT;
            return NULL;
        }
        if (v != NULL ? !put(x, &at, src + i, v, strlen(v))
                      : !put(x, &at, src + i, def + 2, (size_t)(close - (def + 2))))
            return NULL;
        i += len;
    }
    cf->arena[at] = '\0';
    start = cf->arena + cf->used;
    cf->used = at + 1;
    return start;
}

/* "NAME=VALUE" from key token `k` and string value token `k + 1`. */
static const char *keep_pair(struct expand *x, int k)
{
    struct mote_mcp_conf *cf = x->cf;
    size_t start = cf->used;
    char *p = cf->arena + cf->used;
    int n = mote_json_cstr(&cf->json, k, p, sizeof(cf->arena) - cf->used);

    if (n <= 0 || memchr(p, '=', (size_t)n) != NULL ||
        (size_t)n + 2 >= sizeof(cf->arena) - cf->used)
        return NULL;
    cf->used += (size_t)n + 1; /* the value goes after "NAME=" */
    if (keep(x, k + 1, true) == NULL) { /* (a server's env: its tokens) */
        cf->used = start;
        return NULL;
    }
    p[n] = '=';
    return p;
}

/* A header's name: an HTTP token. */
static bool token(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char c = s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              strchr("!#$%&'*+-.^_`|~", c) != NULL))
            return false;
    }
    return n > 0;
}

/* "Name: value" for each member of object token `obj` into hv (at most
 * MOTE_MCP_CONF_HEADERS, NULL-terminated). Returns 0 or the error. */
static int keep_headers(struct expand *x, int obj, const char **hv)
{
    struct mote_mcp_conf *cf = x->cf;
    int k = obj + 1, t, h = 0;

    for (t = 0; t < cf->json.tok[obj].size; t++) {
        size_t nl, vl, i;
        char *p = cf->arena + cf->used;
        const char *v;
        int n;

        if (h >= MOTE_MCP_CONF_HEADERS) {
            struct mote_sb sb;

            mote_sb_init(&sb, x->err, x->cap);
            mote_sb_join(&sb, "server '", x->server, "': more than ");
            mote_sb_num(&sb, "", MOTE_MCP_CONF_HEADERS, " headers (MOTE_MCP_CONF_HEADERS)");
            return MOTE_ERR_FULL;
        }
        n = mote_json_cstr(&cf->json, k, p, sizeof(cf->arena) - cf->used);
        if (n <= 0 || !token(p, (size_t)n) ||
            mote_json_type_of(&cf->json, k + 1) != MOTE_JSON_STRING)
            return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                            "': \"headers\" must map header names to strings");
        nl = (size_t)n;
        cf->used += nl + 2; /* "Name: " with the value after it */
        if (cf->used >= sizeof(cf->arena))
            return mote_why(x->err, x->cap, MOTE_ERR_TOO_LARGE, "server '", x->server,
                            "': too large to keep (MOTE_MCP_CONF_ARENA)");
        v = keep(x, k + 1, true); /* (right after "Name: ") */
        if (v == NULL)
            return x->rc;
        vl = strlen(v);
        for (i = 0; i < vl; i++) {
            if ((unsigned char)v[i] < 0x20 && v[i] != '\t') {
                /* a line break from the environment would start another
                 * header (the value is not shown: it is a secret) */
                p[nl] = '\0';
                x->rc = mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                                 "': a header's value has a control character (a line break?)");
                return x->rc;
            }
        }
        p[nl] = ':';
        p[nl + 1] = ' ';
        hv[h++] = p;
        k = mote_json_skip(&cf->json, k + 1);
    }
    hv[h] = NULL;
    return 0;
}

/* A deadline of server definition `def`: member `key`, seconds (a
 * number, fractions to the ms), into *ms (0 when absent or null). A
 * value that is not a number above 0 and at most MOTE_MCP_DEADLINE_MAX_MS
 * is refused. */
static int deadline(struct expand *x, int def, const char *key, uint32_t *ms)
{
    const struct mote_json *js = &x->cf->json;
    int t = mote_json_member(js, def, key);
    const char *raw;
    size_t n = 0, i;
    uint32_t v = 0, scale = 1000; /* ms (at most 10 times the bound: 32 bits) */
    bool dot = false, digit = false;

    *ms = 0;
    if (t < 0 || mote_json_is_null(js, t))
        return 0;
    raw = mote_json_type_of(js, t) == MOTE_JSON_PRIMITIVE ? mote_json_raw(js, t, &n) : NULL;
    for (i = 0; raw != NULL && i < n; i++) {
        if (raw[i] == '.' && !dot && digit) {
            dot = true;
            continue;
        }
        if (raw[i] < '0' || raw[i] > '9' || v > (uint32_t)MOTE_MCP_DEADLINE_MAX_MS)
            break;
        digit = true;
        if (!dot) {
            v = v * 10u + (uint32_t)(raw[i] - '0') * 1000u;
        } else if (scale > 1) {
            scale /= 10u;
            v += (uint32_t)(raw[i] - '0') * scale;
        }
    }
    if (raw == NULL || i < n || !digit || raw[n - 1] == '.' || v == 0 ||
        v > (uint32_t)MOTE_MCP_DEADLINE_MAX_MS) {
        struct mote_sb sb;

        mote_sb_init(&sb, x->err, x->cap);
        mote_sb_join(&sb, "server '", x->server, "': \"");
        mote_sb_join(&sb, key, "\" must be a number of seconds above 0 and at most ", NULL);
        mote_sb_num(&sb, "", (uint64_t)MOTE_MCP_DEADLINE_MAX_MS / 1000u,
                    " (MOTE_MCP_DEADLINE_MAX_MS)");
        return MOTE_ERR_BADMSG;
    }
    *ms = v;
    return 0;
}

/* The kind a server's "type" names (none: by what it has). */
static int kind_of(struct expand *x, int def, int *kind)
{
    const struct mote_json *js = &x->cf->json;
    int type = mote_json_member(js, def, "type");

    *kind = mote_json_member(js, def, "command") >= 0 || mote_json_member(js, def, "url") < 0
                ? MOTE_MCP_STDIO
                : MOTE_MCP_HTTP;
    if (type < 0 || mote_json_is_null(js, type))
        return 0;
    if (mote_json_eq(js, type, "stdio"))
        *kind = MOTE_MCP_STDIO;
    else if (mote_json_eq(js, type, "http") || mote_json_eq(js, type, "streamable-http"))
        *kind = MOTE_MCP_HTTP;
    else if (mote_json_eq(js, type, "sse"))
        *kind = MOTE_MCP_SSE;
    else
        return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                        "': \"type\" must be \"stdio\", \"http\" or \"sse\"");
    return 0;
}

static int add_http(struct expand *x, struct mote_mcp *m, int def, int kind)
{
    struct mote_mcp_conf *cf = x->cf;
    const struct mote_json *js = &cf->json;
    int url = mote_json_member(js, def, "url"), hdr = mote_json_member(js, def, "headers"), rc;
    const char **hv = cf->headers[m->n];
    const char *u;

    if (mote_json_type_of(js, url) != MOTE_JSON_STRING)
        return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                        "' needs a \"url\" string");
    if ((u = keep(x, url, true)) == NULL) /* (a URL may hold a key: ?key=${KEY}) */
        return x->rc;
    hv[0] = NULL;
    if (hdr >= 0 && !mote_json_is_null(js, hdr)) {
        if (mote_json_type_of(js, hdr) != MOTE_JSON_OBJECT)
            return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                            "': \"headers\" must map header names to strings");
        if ((rc = keep_headers(x, hdr, hv)) < 0)
            return rc;
    }
    rc = mote_mcp_add_http(m, x->server, (enum mote_mcp_kind)kind, u, hv);
    /* (the URL is not shown: it may hold a key) */
    if (rc == MOTE_ERR_INVAL || rc == MOTE_ERR_TOO_LARGE)
        return mote_why(x->err, x->cap, MOTE_ERR_INVAL, "server '", x->server,
                        "': \"url\" must be http[s]://host[:port][/path]");
    return rc;
}

static int add_stdio(struct expand *x, struct mote_mcp *m, int def, const char *const *base_env)
{
    struct mote_mcp_conf *cf = x->cf;
    const struct mote_json *js = &cf->json;
    int cmd = mote_json_member(js, def, "command"), args = mote_json_member(js, def, "args");
    int env = mote_json_member(js, def, "env");
    const char **av = cf->argv[m->n], **ev = cf->envp[m->n];
    int a = 0, e = 0, t;

    if (mote_json_type_of(js, cmd) != MOTE_JSON_STRING)
        return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                        "' needs a \"command\" string (or \"type\": \"http\" and a \"url\")");
    if ((av[a++] = keep(x, cmd, false)) == NULL)
        return x->rc;
    if (args >= 0 && mote_json_type_of(js, args) != MOTE_JSON_ARRAY && !mote_json_is_null(js, args))
        return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                        "': \"args\" must be an array of strings");
    for (t = 0; mote_json_type_of(js, args) == MOTE_JSON_ARRAY && t < js->tok[args].size; t++) {
        int el = mote_json_elem(js, args, t);

        if (a >= MOTE_MCP_CONF_ARGS + 1 || mote_json_type_of(js, el) != MOTE_JSON_STRING) {
            if (x->cap > 0) {
                struct mote_sb sb;

                mote_sb_init(&sb, x->err, x->cap);
                mote_sb_join(&sb, "server '", x->server, "': \"args\" must be at most ");
                mote_sb_num(&sb, "", MOTE_MCP_CONF_ARGS, " strings");
            }
            return MOTE_ERR_BADMSG;
        }
        if ((av[a++] = keep(x, el, false)) == NULL)
            return x->rc;
    }
    av[a] = NULL;
    for (t = 0; base_env != NULL && base_env[t] != NULL && e < MOTE_MCP_CONF_ENV; t++)
        ev[e++] = base_env[t];
    if (env >= 0 && mote_json_type_of(js, env) != MOTE_JSON_OBJECT && !mote_json_is_null(js, env))
        return mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                        "': \"env\" must map names to strings");
    {
        int kk = env + 1;

        for (t = 0; mote_json_type_of(js, env) == MOTE_JSON_OBJECT && t < js->tok[env].size; t++) {
            x->rc = 0;
            if (e >= MOTE_MCP_CONF_ENV * 2 || mote_json_type_of(js, kk + 1) != MOTE_JSON_STRING ||
                (ev[e] = keep_pair(x, kk)) == NULL)
                return x->rc < 0 ? x->rc
                                 : mote_why(x->err, x->cap, MOTE_ERR_BADMSG, "server '", x->server,
                                            "': \"env\" must map names to strings");
            e++;
            kk = mote_json_skip(js, kk + 1);
        }
    }
    ev[e] = NULL;
    return mote_mcp_add(m, x->server, av, ev);
}

int mote_mcp_conf_parse(struct mote_mcp_conf *cf, struct mote_mcp *m, const char *text,
                        size_t len, const char *const *base_env, char *err, size_t cap)
{
    struct mote_json *js = &cf->json;
    int servers, k, i, prc;
    char name[64];
    struct expand x;

    cf->used = 0;
    /* every string here becomes a C string (a command, an argument, a
     * variable, a URL, a header, a name): a NUL in one would cut it unseen */
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
        int def = k + 1, kind, rc, t;
        uint32_t start_ms, call_ms;

        if (mote_json_cstr(js, k, name, sizeof(name)) <= 0 ||
            mote_json_type_of(js, def) != MOTE_JSON_OBJECT)
            return mote_why_num(err, cap, MOTE_ERR_BADMSG, "server ", (uint64_t)i + 1,
                                " needs a name and a \"command\" string or a \"url\"");
        for (t = 0; name[t] != '\0'; t++) {
            /* shown in the messages below: one line, no escape sequences
             * (mote_mcp_add refuses such a name anyway) */
            if ((unsigned char)name[t] < 0x20 || name[t] == 0x7f)
                name[t] = '?';
        }
        for (t = 0; name[t] != '\0' && (var_char(name[t], false) || name[t] == '-'); t++) {
        }
        if (name[t] != '\0' || t > 24)
            return mote_why(err, cap, MOTE_ERR_INVAL, "bad server name '", name,
                            "' (use letters, digits, - and _, at most 24)");
        x.cf = cf;
        x.server = name;
        x.err = err;
        x.cap = cap;
        x.rc = 0;
        if ((rc = kind_of(&x, def, &kind)) < 0)
            return rc;
        if ((rc = deadline(&x, def, "startup_timeout_sec", &start_ms)) < 0 ||
            (rc = deadline(&x, def, "tool_timeout_sec", &call_ms)) < 0)
            return rc;
        rc = kind == MOTE_MCP_STDIO ? add_stdio(&x, m, def, base_env) : add_http(&x, m, def, kind);
        if (rc == MOTE_ERR_EXIST)
            return mote_why(err, cap, MOTE_ERR_EXIST, "two servers are named '", name, "'");
        if (rc < 0)
            return rc;
        m->srv[rc].start_ms = start_ms;
        m->srv[rc].call_ms = call_ms;
        k = mote_json_skip(js, def);
    }
    return 0;
}
