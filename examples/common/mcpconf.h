/* mcpconf.h - the --mcp-config file. */
#ifndef MOTE_CLI_MCPCONF_H
#define MOTE_CLI_MCPCONF_H

#include <stddef.h>

#include "mote/mote_mcp.h"

/* Reads `path` and adds its servers to `m`. Returns 0, or -1 with one line
 * of explanation in `err`. */
int mcpconf_load(const char *path, struct mote_mcp *m, char *err, size_t cap);

/* The strings of the servers mcpconf_load added (their header arrays
 * may take one more line before the servers start). */
struct mote_mcp_conf *mcpconf_conf(void);

/* The value of variable `name` that a header, a URL or an "env" took out
 * of the environment (mcpconf_load), or NULL. */
const char *mcpconf_secret(const char *name);

/* The same with the servers' strings in `cf` (it must outlive `m`), for a
 * program that keeps two sets of servers (a reload). */
int mcpconf_load_with(const char *path, struct mote_mcp *m, struct mote_mcp_conf *cf, char *err,
                      size_t cap);

#endif
