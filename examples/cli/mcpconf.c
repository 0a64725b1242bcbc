/*
 * mcpconf.c - reads --mcp-config: {"mcpServers": {"NAME": {"command":
 * "...", "args": [...], "env": {...}}}} into argv/envp arrays for
 * mote_mcp_add. A server's environment is minimal: PATH, HOME, LANG and
 * what its "env" names (never the API keys unless it names them).
 */
#define _GNU_SOURCE
#include "mcpconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote_json.h"

#define CONF_MAX (64 * 1024)
#define ARENA_MAX (64 * 1024)
#define MAX_ARGS 32
#define MAX_ENV 32

static char text[CONF_MAX];
static char arena[ARENA_MAX];
static size_t arena_len;
static struct mote_json js;
static const char *argvs[MOTE_MAX_MCP_SERVERS][MAX_ARGS + 1];
static const char *envps[MOTE_MAX_MCP_SERVERS][MAX_ENV + 4];
static char names[MOTE_MAX_MCP_SERVERS][32];

static const char *keep(const char *s, size_t n)
{
    char *p;

    if (arena_len + n + 1 > sizeof(arena))
        return NULL;
    p = arena + arena_len;
    memcpy(p, s, n);
    p[n] = '\0';
    arena_len += n + 1;
    return p;
}

static const char *str(int t)
{
    static char buf[8192];
    int n = mote_json_str(&js, t, buf, sizeof(buf));

    return n < 0 ? NULL : keep(buf, (size_t)n);
}

static const char *env_pair(const char *name, const char *value)
{
    char buf[8192];
    int n = snprintf(buf, sizeof(buf), "%s=%s", name, value);

    return n < 0 || (size_t)n >= sizeof(buf) ? NULL : keep(buf, (size_t)n);
}

int mcpconf_load(const char *path, struct mote_mcp *m, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    int servers, k, prc;

    arena_len = 0; /* each load starts afresh */
    if (f == NULL) {
        snprintf(err, cap, "cannot read --mcp-config %s: %s", path, strerror(errno));
        return -1;
    }
    n = fread(text, 1, sizeof(text), f);
    fclose(f);
    if (n == sizeof(text)) {
        snprintf(err, cap, "--mcp-config %s is larger than %d bytes", path, CONF_MAX);
        return -1;
    }
    prc = mote_json_parse(&js, text, n);
    if (prc == MOTE_ERR_TOO_LARGE) {
        snprintf(err, cap, "--mcp-config %s has more than %d JSON values (MOTE_JSON_MAX_TOKENS)",
                 path, MOTE_JSON_MAX_TOKENS);
        return -1;
    }
    if (prc <= 0 || mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT) {
        snprintf(err, cap, "--mcp-config %s is not a JSON object", path);
        return -1;
    }
    servers = mote_json_member(&js, 0, "mcpServers");
    if (mote_json_type_of(&js, servers) != MOTE_JSON_OBJECT) {
        snprintf(err, cap, "--mcp-config %s has no \"mcpServers\" object", path);
        return -1;
    }
    if (js.tok[servers].size > MOTE_MAX_MCP_SERVERS) {
        snprintf(err, cap, "--mcp-config %s names %d servers; this mote takes %d "
                           "(MOTE_MAX_MCP_SERVERS)",
                 path, js.tok[servers].size, MOTE_MAX_MCP_SERVERS);
        return -1;
    }
    k = servers + 1;
    for (int i = 0; i < js.tok[servers].size; i++) {
        int def = k + 1, cmd = mote_json_member(&js, def, "command");
        int args = mote_json_member(&js, def, "args"), env = mote_json_member(&js, def, "env");
        const char **av = argvs[m->n], **ev = envps[m->n];
        int a = 0, e = 0, t, rc;
        const char *v;

        if (mote_json_str(&js, k, names[m->n], sizeof(names[0])) <= 0 ||
            mote_json_type_of(&js, def) != MOTE_JSON_OBJECT ||
            mote_json_type_of(&js, cmd) != MOTE_JSON_STRING) {
            snprintf(err, cap, "--mcp-config %s: server %d needs a name and a \"command\" string",
                     path, i + 1);
            return -1;
        }
        av[a++] = str(cmd);
        for (t = 0; mote_json_type_of(&js, args) == MOTE_JSON_ARRAY && t < js.tok[args].size; t++) {
            int el = mote_json_elem(&js, args, t);

            if (a >= MAX_ARGS || mote_json_type_of(&js, el) != MOTE_JSON_STRING ||
                (av[a] = str(el)) == NULL) {
                snprintf(err, cap, "--mcp-config %s: server '%s': \"args\" must be at most %d "
                                   "strings",
                         path, names[m->n], MAX_ARGS);
                return -1;
            }
            a++;
        }
        av[a] = NULL;
        /* A minimal environment: PATH, HOME, LANG, then its own. */
        if ((v = getenv("PATH")) != NULL)
            ev[e++] = env_pair("PATH", v);
        if ((v = getenv("HOME")) != NULL)
            ev[e++] = env_pair("HOME", v);
        if ((v = getenv("LANG")) != NULL)
            ev[e++] = env_pair("LANG", v);
        {
            int kk = env + 1;

            for (t = 0; mote_json_type_of(&js, env) == MOTE_JSON_OBJECT && t < js.tok[env].size;
                 t++) {
                char name[256];
                const char *val;

                if (e >= MAX_ENV + 3 || mote_json_str(&js, kk, name, sizeof(name)) <= 0 ||
                    mote_json_type_of(&js, kk + 1) != MOTE_JSON_STRING ||
                    (val = str(kk + 1)) == NULL || (ev[e] = env_pair(name, val)) == NULL) {
                    snprintf(err, cap, "--mcp-config %s: server '%s': \"env\" must map names to "
                                       "strings",
                             path, names[m->n]);
                    return -1;
                }
                e++;
                kk = mote_json_skip(&js, kk + 1);
            }
        }
        ev[e] = NULL;
        if (av[0] == NULL) {
            snprintf(err, cap, "--mcp-config %s is too large to keep", path);
            return -1;
        }
        rc = mote_mcp_add(m, names[m->n], av, ev);
        if (rc == MOTE_ERR_EXIST) {
            snprintf(err, cap, "--mcp-config %s: two servers are named '%s'", path, names[m->n]);
            return -1;
        }
        if (rc < 0) {
            snprintf(err, cap, "--mcp-config %s: bad server name '%s' (use letters, digits, - "
                               "and _, at most 24)",
                     path, names[m->n]);
            return -1;
        }
        k = mote_json_skip(&js, def);
    }
    return 0;
}
