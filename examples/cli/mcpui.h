/* mcpui.h - the chat's MCP commands (/prompts, /prompt) and questions. */
#ifndef MOTE_CLI_MCPUI_H
#define MOTE_CLI_MCPUI_H

#include <stdbool.h>
#include <stddef.h>

#include "mote/mote_loop.h"
#include "mote/mote_mcp.h"

/* `m` NULL: no MCP servers. `send` sends a text as the user's turn. */
void mcpui_init(struct mote_loop *loop, struct mote_mcp *m, void (*send)(const char *, size_t));

/* Takes /prompts and /prompt NAME [ARG=VALUE...]: true if it was one. */
bool mcpui_command(const char *line);
/* Starts a command that waited for the servers (each turn of the loop). */
void mcpui_poll(void);
/* True while a command waits or runs (the next lines wait). */
bool mcpui_busy(void);
/* Drops a command waiting or running (Ctrl+C). */
void mcpui_cancel(void);

#endif
