/*
 * mcpconf.c - reads --mcp-config FILE for the frontends (the CLI and mote
 * serve): the file's bytes go to the library's parser
 * (mote_mcp_conf_parse); what only a program can know - the minimal
 * environment of a server: PATH, HOME, LANG - comes from here.
 */
#define _GNU_SOURCE
#include "mcpconf.h"

#include "../common/readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF_MAX (64 * 1024)

static char text[CONF_MAX];
static struct mote_mcp_conf conf;
static char env_buf[3][4096];
static const char *base_env[4];

int mcpconf_load(const char *path, struct mote_mcp *m, char *err, size_t cap)
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
    if (mote_mcp_conf_parse(&conf, m, text, n, base_env, why, sizeof(why)) < 0) {
        snprintf(err, cap, "--mcp-config %s: %s", path, why);
        return -1;
    }
    return 0;
}
