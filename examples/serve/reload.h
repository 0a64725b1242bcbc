/* reload.h - mote serve's configurations over its life (reload.c): the
 * one in use, a reload on SIGHUP, the MCP servers that go with it. */
#ifndef MOTE_FE_RELOAD_H
#define MOTE_FE_RELOAD_H

#include <stdbool.h>

#include "mote/mote_agent.h"
#include "mote/mote_loop.h"
#include "mote/mote_posix.h"
#include "mote/mote_serve.h"
#include "settings.h"

/* What a reload works on (serve.c's). */
struct rl_ctx {
    struct mote_posix *pp;
    struct mote_loop *loop;
    struct mote_session *ses;
    struct mote_serve *srv;
    void (*say)(const char *line); /* a line for the log */
};

/* The configuration in use (after rl_first). */
struct serve_set *rl_cur(void);

/* The first configuration: built from the command line and the file, and
 * made (set_build, set_make). Returns 0 or 2 (said). */
int rl_first(bool tls);

/* The MCP servers of the configuration in use, read (before the session
 * starts: a bad file is a usage error), with the tokens of those logged
 * in to (renewed through pp's port when expired). Returns 0 or 2 (said). */
int rl_mcp_load(struct mote_posix *pp, struct mote_loop *loop);

/* Then offered to the session and started (the server listens). */
void rl_mcp_start(const struct rl_ctx *ctx);

/* SIGHUP: the configuration read again and, if all of it is good, put in
 * use for new turns (running ones keep theirs); else refused with its
 * reason, the old one staying. Said in the log either way. Returns 0
 * (reloaded, or waiting for older turns to end) or -1 (refused). */
int rl_reload(void);

/* Every event of the session: a turn's end lets the conversations take
 * the settings in use, and lets MCP servers a reload changed be swapped
 * once no turn runs. */
void rl_event(const struct mote_event *ev);

/* The end: MCP servers a reload replaced are stopped now. */
void rl_end(void);

#endif
