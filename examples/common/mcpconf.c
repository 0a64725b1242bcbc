/*
 * mcpconf.c - reads --mcp-config FILE for the frontends (the CLI and mote
 * serve): the file's bytes go to the library's parser
 * (mote_mcp_conf_parse); what only a program can know - the minimal
 * environment of a server (PATH, HOME, LANG), the variables ${VAR} names
 * - comes from here. A variable a header, a URL or a server's "env"
 * takes is a secret: its value is copied here and taken out of the
 * environment (its bytes too), so no tool and no server process sees it
 * (but for the variables every process has anyway: PATH, HOME, ...).
 */
#define _GNU_SOURCE
#include "mcpconf.h"

#include "readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF_MAX (64 * 1024)

static char text[CONF_MAX];
static struct mote_mcp_conf conf;
static char env_buf[3][4096];
static const char *base_env[4];

/* Secrets taken out of the environment: "NAME\0VALUE\0" one after
 * another, so a second header naming the same variable finds it. */
static char secrets[8192];
static size_t secrets_len;

static const char *find_secret(const char *name)
{
    size_t at = 0;

    while (at < secrets_len) {
        const char *n = secrets + at, *v = n + strlen(n) + 1;

        if (strcmp(n, name) == 0)
            return v;
        at = (size_t)(v + strlen(v) + 1 - secrets);
    }
    return NULL;
}

/* Variables that are never credentials, and that the tools need: left
 * in the environment whatever names them. */
static bool plain_var(const char *name)
{
    static const char *const names[] = {"PATH", "HOME", "LANG", "USER", "LOGNAME", "SHELL",
                                        "TERM", "TMPDIR", "PWD", "TZ", "HOSTNAME"};
    size_t i;

    if (strncmp(name, "LC_", 3) == 0)
        return true;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i]) == 0)
            return true;
    }
    return false;
}

static const char *lookup(void *arg, const char *name, bool secret)
{
    const char *kept = find_secret(name);
    char *v;
    size_t nl, vl;

    (void)arg;
    if (kept != NULL)
        return kept;
    v = getenv(name);
    if (v == NULL || !secret || plain_var(name))
        return v;
    nl = strlen(name);
    vl = strlen(v);
    if (secrets_len + nl + vl + 2 > sizeof(secrets))
        return NULL; /* (then refused as not set: never left where tools see it) */
    memcpy(secrets + secrets_len, name, nl + 1);
    memcpy(secrets + secrets_len + nl + 1, v, vl + 1);
    kept = secrets + secrets_len + nl + 1;
    secrets_len += nl + vl + 2;
    memset(v, 0, vl); /* /proc/self/environ shows the original block */
    unsetenv(name);
    return kept;
}

const char *mcpconf_secret(const char *name)
{
    return find_secret(name);
}

struct mote_mcp_conf *mcpconf_conf(void)
{
    return &conf;
}

int mcpconf_load(const char *path, struct mote_mcp *m, char *err, size_t cap)
{
    return mcpconf_load_with(path, m, &conf, err, cap);
}

int mcpconf_load_with(const char *path, struct mote_mcp *m, struct mote_mcp_conf *cf, char *err,
                      size_t cap)
{
    static const char *const names[] = {"PATH", "HOME", "LANG"};
    char why[240];
    size_t n, i, e = 0;
    int rc = fe_read_file(path, text, sizeof(text), &n);

    if (rc == FE_READ_TOO_LONG) {
        snprintf(err, cap, "--mcp-config %s is larger than %d bytes", path, CONF_MAX - 1);
        return -1;
    }
    if (rc < 0) {
        snprintf(err, cap, "cannot read --mcp-config %s: %s", path, fe_read_why(rc));
        return -1;
    }
    for (i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        int k;

        if (v == NULL)
            continue;
        k = snprintf(env_buf[e], sizeof(env_buf[e]), "%s=%s", names[i], v);
        if (k > 0 && (size_t)k < sizeof(env_buf[e]))
            base_env[e] = env_buf[e], e++;
    }
    base_env[e] = NULL;
    cf->env = lookup;
    cf->env_arg = NULL;
    if (mote_mcp_conf_parse(cf, m, text, n, base_env, why, sizeof(why)) < 0) {
        snprintf(err, cap, "--mcp-config %s: %s", path, why);
        return -1;
    }
    return 0;
}
