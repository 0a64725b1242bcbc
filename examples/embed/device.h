/*
 * device.h - the device's part of the embed examples: the agent it runs
 * (one conversation, a custom tool), what it shows, how it stops. main.c
 * runs it on mote's own loop, loop.c inside libev's.
 */
#ifndef EMBED_DEVICE_H
#define EMBED_DEVICE_H

#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_posix.h"

struct device {
    struct mote_posix pp;
    struct mote_loop loop;
    struct mote_session ses;
    struct mote_llm_conf llm;
    struct mote_conv *conv;
};

/* Starts the port, the loop and the session (state in ./embed-state),
 * maps SIGINT and SIGTERM to the shutdown, and sends `prompt` to a new
 * conversation with the model at $MOTE_EMBED_URL. Returns 0, or 1 with a
 * message on stderr. */
int device_start(struct device *d, const char *prompt);

/* The shutdown once the turn is over: cancel what is left (nothing,
 * unless a signal began a shutdown first: that one goes on as it is). */
extern const struct mote_shutdown_req device_done;

/* After MOTE_EV_SHUTDOWN: releases everything. Returns the exit status
 * (1 if the turn failed). */
int device_finish(struct device *d);

#endif
