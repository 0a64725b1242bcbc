/* mcp_kit.h - what the MCP fuzz targets (fuzz_mcp.c over stdio,
 * fuzz_mcphttp.c over HTTP) check and compare alike: the tool list a
 * server left (properties every transport keeps) and the outcome of a run
 * as one hash. */
#ifndef FUZZ_MCP_KIT_H
#define FUZZ_MCP_KIT_H

#include <stdint.h>

#include "mote/mote.h"
#include "mote/mote_json.h"
#include "mote/mote_mcp.h"

/* Traps unless the server's tools are within the table, each schema a
 * strict JSON object of valid UTF-8 (it goes into the model's request
 * body as it is), each name [A-Za-z0-9_-], 1 to 63 bytes, and no name
 * given twice. `js` is the caller's scratch. */
void mcp_kit_check_tools(struct mote_json *js, const struct mote_mcp_server *s);

/* The port a run begins with: zeroed, of this version, with the
 * target's clock and wait (the target adds its transport). */
void mcp_kit_port(struct mote_port *port, uint32_t (*now)(void *),
                  int (*wait)(void *, struct mote_pollfd *, unsigned, int32_t));

/* The loop on `port` and the MCP client on it (no hooks); traps when the
 * loop does not start. */
void mcp_kit_client(struct mote_loop *loop, struct mote_port *port, struct mote_mcp *mcp);

/* Starts the tool call a run makes (the first tool of the first server,
 * a fixed input) as a job, once that server is ready with tools and no
 * call was made yet (*job == 0); sets *job. Returns true when it started
 * the call now. */
bool mcp_kit_call(struct mote_loop *loop, struct mote_mcp *mcp, struct mote_mcp_call *call,
                  mote_job_id *job);

/* True when no call was made or it has ended. */
bool mcp_kit_call_over(struct mote_loop *loop, mote_job_id job);

/* Mixes n bytes into an FNV-1a hash. */
void mcp_kit_mix(uint32_t *hash, const void *p, size_t n);

/* Mixes what a run left: the server's state, message and tools, and the
 * call's end and result when one was made (job != 0). */
void mcp_kit_mix_outcome(uint32_t *hash, struct mote_loop *loop, const struct mote_mcp_server *s,
                         mote_job_id job, const struct mote_mcp_call *call);

#endif
