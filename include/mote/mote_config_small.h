/*
 * mote_config_small.h - a small configuration: what to pick for a router
 * with 64 MB of RAM and 8-16 MB of flash (OpenWrt class), where mote is one
 * service among many and should stay near 1 MiB.
 *
 *     make CFLAGS='-Os -DMOTE_CONFIG_FILE="mote/mote_config_small.h"'   (make install then
 *         installs it with the library: programs need no -D flag)
 *     make tiny TINY_CFLAGS='-DMOTE_CONFIG_FILE="mote/mote_config_small.h"'
 *
 * One conversation at a time with one request and one tool call in
 * flight; records, events and lines a quarter of the defaults; one MCP
 * server; MQTT messages of 8 KiB. `make check-small` builds the library
 * and the CLI with it (-Werror) and runs the agent's integration tests
 * against it;
 * `make size` with the same CFLAGS shows what the structs cost
 * (docs/BENCHMARKS.md has the figures).
 *
 * What it gives up: a model event over 16 KiB (Anthropic's web-search
 * results can be 34 KB) fails the turn with MOTE_ERR_TOO_LARGE; a tool's
 * output is cut at 4 KiB (the model is told); an MCP server's tool list
 * over 16 KiB a line is refused; a journal record over 8 KiB reaches an
 * MQTT subscriber as its offset and size only. Everything else works as
 * with the defaults.
 */
#ifndef MOTE_CONFIG_SMALL_H
#define MOTE_CONFIG_SMALL_H

/* the loop */
#define MOTE_MAX_JOBS 8
#define MOTE_MAX_INACTIVE_JOBS 2
#define MOTE_MAX_TIMERS 8
#define MOTE_MAX_WATCHES 12
/* (mote serve: 3 connections beside the watches its turns need) */
#define MOTE_SERVE_MAX_CONNS 3

/* parsing */
#define MOTE_JSON_MAX_TOKENS 512
#define MOTE_SSE_DATA_MAX 16384
#define MOTE_HTTP_LINE_MAX 2048
#define MOTE_HTTP_HEADER_MAX 16384
#define MOTE_LLM_MAX_TOOL_CALLS 4
#define MOTE_LLM_MAX_BLOCKS 16
#define MOTE_LLM_TEXT_MAX 4096
#define MOTE_NET_BUF 2048
#define MOTE_STEP_IO_BYTES 8192

/* conversations and the agent */
#define MOTE_JOURNAL_LINE_MAX 16384
#define MOTE_MAX_CONVERSATIONS 1
#define MOTE_MAX_STREAMS 1
#define MOTE_MAX_TOOL_RUNS 1
#define MOTE_MAX_TOOLS 8
#define MOTE_TOOL_OUTPUT_MAX 4096
#define MOTE_ANSWER_TEXT_MAX 2048
#define MOTE_ANSWER_REASON_MAX 1024
#define MOTE_HISTORY_MAX 100
#define MOTE_HISTORY_LINE_MAX 1024
#define MOTE_EDIT_LINE_MAX 4096
#define MOTE_EDIT_HISTORY_BYTES 16384

/* MCP */
#define MOTE_MAX_MCP_SERVERS 1
#define MOTE_MCP_MAX_TOOLS 8
#define MOTE_MCP_SCHEMA_MAX 1024
#define MOTE_MCP_LINE_MAX 16384
#define MOTE_MCP_OUT_MAX 4096
#define MOTE_MCP_RESULT_MAX 4096
#define MOTE_MCP_LOG_MAX 512

/* TLS: two sessions (the model's https and, for mote serve --mqtt
 * mqtts://, the broker's); the arena for the tiny build */
#define MOTE_TLS_SESSIONS 2
#define MOTE_TLS_READ_CHUNK 4096
#define MOTE_TLS_ARENA (96 * 1024)

/* MQTT (mote serve --mqtt): messages up to 8 KiB (a larger journal
 * record goes out as its offset and size), half the queues */
#define MOTE_MQTT_PAYLOAD_MAX 8192
#define MOTE_MQTT_OUT_MAX 16384
#define MOTE_MQTT_INFLIGHT 8
#define MOTE_MQTT_RX_INFLIGHT 8
#define MOTE_JOURNAL_RIDS 16
#define MOTE_SERVE_MQTT_OUTS 8
#define MOTE_SERVE_MQTT_WAIT 4
#define MOTE_SERVE_MQTT_WAIT_BYTES 4096

#endif /* MOTE_CONFIG_SMALL_H */
