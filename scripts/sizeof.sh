#!/bin/sh
# sizeof.sh CC BUILDDIR - prints the static memory of mote's main structs.
set -eu
cc=$1
b=$2
mkdir -p "$b/tmp"
cat > "$b/tmp/sizeof.c" <<'C'
#include <stdio.h>
#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote/mote_agent.h"
#include "mote/mote_serve.h"
int main(void)
{
    printf("struct mote_loop: %zu bytes (MOTE_MAX_JOBS=%d, timers %d, watches %d)\n",
           sizeof(struct mote_loop), MOTE_MAX_JOBS, MOTE_MAX_TIMERS, MOTE_MAX_WATCHES);
    printf("one job slot (struct mote_job): %zu bytes\n", sizeof(struct mote_job));
    printf("one timer slot: %zu bytes, one watch slot: %zu bytes\n",
           sizeof(struct mote_timer_slot), sizeof(struct mote_watch_slot));
    printf("one model request (struct mote_llm_call): %zu bytes (SSE event %d, JSON tokens %d, net buffer %d)\n",
           sizeof(struct mote_llm_call), MOTE_SSE_DATA_MAX, MOTE_JSON_MAX_TOKENS, MOTE_NET_BUF);
    printf("struct mote_session: %zu bytes (%d conversations, %d stream slots, %d tool-run slots, "
           "journal buffer %zu)\n",
           sizeof(struct mote_session), MOTE_MAX_CONVERSATIONS, MOTE_MAX_STREAMS,
           MOTE_MAX_TOOL_RUNS, sizeof(struct mote_jbuf));
    printf("one conversation (struct mote_conv): %zu bytes\n", sizeof(struct mote_conv));
    printf("one stream slot (struct mote_stream): %zu bytes; one tool-run slot "
           "(struct mote_tool_run): %zu bytes\n",
           sizeof(struct mote_stream), sizeof(struct mote_tool_run));
    printf("MCP servers (struct mote_mcp, optional): %zu bytes (%d servers)\n",
           sizeof(struct mote_mcp), MOTE_MAX_MCP_SERVERS);
    /* issue 14: mote serve */
    printf("API server (struct mote_serve, mote serve): %zu bytes (%d connections: %zu bytes of "
           "state and %zu of buffers each; %d body buffers of %d)\n",
           sizeof(struct mote_serve), MOTE_SERVE_MAX_CONNS, sizeof(struct mote_serve_conn),
           sizeof(struct mote_serve_io), MOTE_SERVE_BODY_BUFS, MOTE_SERVE_BODY_MAX);
    return 0;
}
C
$cc -std=c11 -Iinclude -DJSMN_STATIC -DJSMN_STRICT -DJSMN_PARENT_LINKS -o "$b/tmp/sizeof" "$b/tmp/sizeof.c"
"$b/tmp/sizeof"
