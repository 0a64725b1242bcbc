/* mcpui.h - the chat's MCP commands (/prompts, /prompt) and questions. */
#ifndef MOTE_CLI_MCPUI_H
#define MOTE_CLI_MCPUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mote/mote_loop.h"
#include "mote/mote_mcp.h"

/* Untrusted text onto a terminal (mote_show.h; main.c): the last byte
 * written. */
int show_text(FILE *f, const char *s, size_t n);

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

/* Servers' questions are asked at the terminal (before the servers
 * start): `editor` starts the line editor after a prompt (false: none). */
void mcpui_elicit_on(struct mote_mcp *m, uint32_t timeout_ms,
                     bool (*editor)(const char *prompt, size_t width));
/* Every call approved (--yes) and nobody asked: a question whose every
 * field has a default is accepted with them, any other declined, each
 * said on stderr (one whose answer cannot be sent: cancelled after
 * timeout_ms); the capability is not declared (before the servers start). */
void mcpui_elicit_defaults(struct mote_mcp *m, uint32_t timeout_ms);
/* True while a question waits for the next line. */
bool mcpui_asking(void);
/* The next line for the question (NULL or n < 0: Ctrl+D, cancel). */
void mcpui_reply(const char *line, long n);

#endif
