/*
 * mote_config.h - every compile-time limit of mote, in one place.
 *
 * Each macro is an #ifndef default, so any of them can be overridden with
 * -DNAME=VALUE or from a user header named by MOTE_CONFIG_FILE, which is
 * included first:
 *
 *     cc -DMOTE_CONFIG_FILE='"my_mote_config.h"' ...
 *     make CFLAGS='-Os -DMOTE_CONFIG_FILE="my_mote_config.h"'  (the Makefile quotes it)
 *
 * make install writes the build's values into mote/mote_build_config.h,
 * included below when it is there: a program built against an installed
 * library gets them with no flag.
 *
 * The same values must be used for every translation unit of a build (the
 * library and the program that includes its headers); the Makefile passes
 * them once for everything it compiles.
 *
 * Memory: all tables below are static arrays inside caller-owned structs.
 * `make size` and docs/BENCHMARKS.md report what they cost.
 */
#ifndef MOTE_CONFIG_H
#define MOTE_CONFIG_H

/* An installed library's configuration (make install writes it; the
 * source tree has none): its -DMOTE_* values and MOTE_CONFIG_FILE, so a
 * program built against it needs no -D flag. */
#if defined(__has_include)
#if __has_include("mote/mote_build_config.h")
#include "mote/mote_build_config.h"
#endif
#endif

#ifdef MOTE_CONFIG_FILE
#include MOTE_CONFIG_FILE
#endif

/* ---- jobs ------------------------------------------------------------ */

/* Slots in a loop's job table (active plus kept finished jobs).
 * Range 1..255. Each slot costs about sizeof(struct mote_job) bytes. */
#ifndef MOTE_MAX_JOBS
#define MOTE_MAX_JOBS 16
#endif

/* Finished jobs kept for /jobs and for continuations added late. Before
 * each spawn the older finished jobs beyond this count are freed, oldest
 * first. Active jobs are never freed. 0 keeps no finished job. */
#ifndef MOTE_MAX_INACTIVE_JOBS
#define MOTE_MAX_INACTIVE_JOBS 3
#endif

/* Continuations one job can hold at once (keyed by name). Range 1..32. */
#ifndef MOTE_JOB_MAX_CONTINUATIONS
#define MOTE_JOB_MAX_CONTINUATIONS 4
#endif

/* Bytes kept for a job's name, including the terminating NUL; longer names
 * are cut. */
#ifndef MOTE_JOB_NAME_LEN
#define MOTE_JOB_NAME_LEN 24
#endif

/* Bytes kept for a continuation's key, including the NUL; a longer key is
 * refused with MOTE_ERR_TOO_LARGE. */
#ifndef MOTE_CONT_KEY_LEN
#define MOTE_CONT_KEY_LEN 16
#endif

/* Bytes kept for a failed job's error message, including the NUL; longer
 * messages are cut at a UTF-8 character boundary. */
#ifndef MOTE_JOB_ERRMSG_LEN
#define MOTE_JOB_ERRMSG_LEN 256
#endif

/* ---- loop -------------------------------------------------------------- */

/* Timers armed at once in one loop (a kept connection holds one while it
 * is idle, instead of its request's). */
#ifndef MOTE_MAX_TIMERS
#define MOTE_MAX_TIMERS 16
#endif

/* File descriptors watched at once in one loop (the port's own signal
 * wake-up descriptor is not counted). The CLI needs up to 3 per MCP server
 * (stdout, stderr, stdin while a write waits), 1 for the model request (or
 * its stream slot's idle kept connection), 1 for a tool and 1 for its
 * input; mote serve one per connection
 * (MOTE_SERVE_MAX_CONNS) and one per listener. The build refuses a
 * MOTE_SERVE_MAX_CONNS that would leave fewer than MOTE_WATCH_RESERVE
 * for the rest, so clients can never take the watches of the model, the
 * tools and the MCP servers. A watch that does not fit is refused with
 * MOTE_ERR_FULL (the server answers 503). */
#ifndef MOTE_MAX_WATCHES
#define MOTE_MAX_WATCHES 64
#endif

/* Longest single wait of mote_loop_poll, in milliseconds, when no timer is
 * due sooner; a safety net against a lost wake-up. 0 is not allowed. */
#ifndef MOTE_LOOP_MAX_WAIT_MS
#define MOTE_LOOP_MAX_WAIT_MS 1000
#endif

/* ---- storage ----------------------------------------------------------- */

/* Longest storage name (a relative path such as "conversations/ID.jsonl"),
 * in bytes, including the NUL. */
#ifndef MOTE_STORAGE_NAME_MAX
#define MOTE_STORAGE_NAME_MAX 128
#endif

/* ---- JSON, SSE, HTTP ------------------------------------------------------ */

/* Tokens one JSON document may have (one SSE event's data, one MCP
 * message). Each costs 20 bytes in struct mote_json. More tokens give
 * MOTE_ERR_TOO_LARGE for that document. */
#ifndef MOTE_JSON_MAX_TOKENS
#define MOTE_JSON_MAX_TOKENS 1024
#endif

/* Deepest nesting of arrays and objects in one JSON document, levels (a
 * top-level object is 1). The parser refuses a deeper one with
 * MOTE_ERR_TOO_LARGE, so whatever it accepts the writer can re-emit (its
 * re-encoding takes one C stack frame per level: this bounds the stack). */
#ifndef MOTE_JSON_MAX_DEPTH
#define MOTE_JSON_MAX_DEPTH 64
#endif

/* Bytes of one SSE event's data (all its data: lines joined). A real
 * Anthropic web-search event carries a 34 KB line; the default takes 64 KiB.
 * A longer event fails the stream with MOTE_ERR_TOO_LARGE. */
#ifndef MOTE_SSE_DATA_MAX
#define MOTE_SSE_DATA_MAX 65536
#endif

/* Bytes kept of an SSE event name and of its id (longer ones are cut). */
#ifndef MOTE_SSE_NAME_MAX
#define MOTE_SSE_NAME_MAX 64
#endif

/* Longest HTTP response line (status, one header, a chunk size), bytes.
 * A longer one fails the response with MOTE_ERR_TOO_LARGE. */
#ifndef MOTE_HTTP_LINE_MAX
#define MOTE_HTTP_LINE_MAX 4096
#endif

/* Most bytes of a response's status line and headers together. */
#ifndef MOTE_HTTP_HEADER_MAX
#define MOTE_HTTP_HEADER_MAX 32768
#endif

/* ---- model client ------------------------------------------------------- */

/* Parallel tool calls of one model answer that mote runs. The calls past
 * them are journaled but never run: each gets an error result asking the
 * model to call it again (docs/LLM.md), so the conversation goes on. */
#ifndef MOTE_LLM_MAX_TOOL_CALLS
#define MOTE_LLM_MAX_TOOL_CALLS 8
#endif

/* Content blocks tracked in one Anthropic answer (text, tool use, ...). */
#ifndef MOTE_LLM_MAX_BLOCKS
#define MOTE_LLM_MAX_BLOCKS 32
#endif

/* Bytes of white space the request writer holds back at the end of a
 * piece of an answer's text, until the next part shows whether the text
 * goes on (then they are sent before it) or ends (then they are dropped:
 * no answer is sent ending in white space). A longer run at a piece's end
 * keeps only its last MOTE_LLM_WS_HOLD bytes. It sizes the writer's state
 * (struct mote_llm_wstate, in every struct mote_llm_body), not a limit on
 * any input. 1..255. */
#ifndef MOTE_LLM_WS_HOLD
#define MOTE_LLM_WS_HOLD 64
#endif

/* Bytes of one unescaped text delta or tool-input fragment (one SSE
 * event's worth), including the NUL. */
#ifndef MOTE_LLM_TEXT_MAX
#define MOTE_LLM_TEXT_MAX 16384
#endif

/* Bytes kept of a tool call id and of a tool name, including the NUL.
 * Longer ones fail the turn with MOTE_ERR_TOO_LARGE. */
#ifndef MOTE_LLM_ID_MAX
#define MOTE_LLM_ID_MAX 128
#endif
#ifndef MOTE_LLM_NAME_MAX
#define MOTE_LLM_NAME_MAX 128
#endif

/* Bytes of the tag a port gives each process it starts for a tool (the
 * environment variable MOTE_TOOL_TAG, kept in the tool_start record so
 * recovery finds what is left of the tool), including the NUL. */
#ifndef MOTE_PROC_TAG_MAX
#define MOTE_PROC_TAG_MAX 40
#endif

/* Bytes of the socket send and receive buffer of one model request. */
#ifndef MOTE_NET_BUF
#define MOTE_NET_BUF 4096
#endif

/* Bytes one step (of the model client, an MCP server's pipes, the shell
 * tool's output) reads or sends before it hands the loop back: a peer
 * that floods cannot delay a signal, a cancel or a deadline by more than
 * this much work. */
#ifndef MOTE_STEP_IO_BYTES
#define MOTE_STEP_IO_BYTES 16384
#endif

/* Bytes of a local file one step of a file tool reads or writes
 * (edit_file's search and copy, write_file's content) before it hands the
 * loop back: an edit of a large file never holds other jobs and clients
 * for more than this much work. At least 1024. */
#ifndef MOTE_STEP_FILE_BYTES
#define MOTE_STEP_FILE_BYTES 262144
#endif

/* Longest API key, bytes. */
#ifndef MOTE_LLM_KEY_MAX
#define MOTE_LLM_KEY_MAX 512
#endif

/* Torn tails kept aside per conversation (ID.jsonl.torn, .torn.2, ...). */
#ifndef MOTE_JOURNAL_TORN_MAX
#define MOTE_JOURNAL_TORN_MAX 9
#endif

/* Retention (mote_session_prune): how many of the oldest finished
 * conversations one pass over the journals notes for removal (on the
 * stack, about 60 bytes each); more than that over the limit takes more
 * passes. */
#ifndef MOTE_PRUNE_BATCH
#define MOTE_PRUNE_BATCH 16
#endif

/* Proxy credentials: bytes of "user:password", percent-decoded (longer
 * ones are refused at start with a message naming this limit); and the
 * header line they make (base64 is 4/3 of them, plus the header's name). */
#ifndef MOTE_PROXY_CRED_MAX
#define MOTE_PROXY_CRED_MAX 256
#endif
#ifndef MOTE_PROXY_AUTH_MAX
#define MOTE_PROXY_AUTH_MAX (MOTE_PROXY_CRED_MAX / 3 * 4 + 40)
#endif

/* Attempts of one model request in all (1 = never retry). */
#ifndef MOTE_LLM_MAX_ATTEMPTS
#define MOTE_LLM_MAX_ATTEMPTS 4
#endif

/* Default timeouts, ms: connect (resolve, TCP, TLS), first response byte
 * after the request was sent, and silence between bytes of the stream. */
#ifndef MOTE_LLM_CONNECT_TIMEOUT_MS
#define MOTE_LLM_CONNECT_TIMEOUT_MS 15000
#endif
#ifndef MOTE_LLM_FIRST_BYTE_TIMEOUT_MS
#define MOTE_LLM_FIRST_BYTE_TIMEOUT_MS 120000
#endif
/* The longest gap between two complete events of a stream: a server
 * that keeps sending a byte now and then but never completes an event is
 * cut off (providers send a ping every few seconds). */
#ifndef MOTE_LLM_EVENT_TIMEOUT_MS
#define MOTE_LLM_EVENT_TIMEOUT_MS 180000
#endif
#ifndef MOTE_LLM_IDLE_TIMEOUT_MS
#define MOTE_LLM_IDLE_TIMEOUT_MS 90000
#endif
/* The whole of one model request, ms: every attempt, backoff and the
 * stream to its end (a stream that stays alive with pings but never ends
 * is cut here). 0: no overall deadline; at most 2^31 - 1. The default is
 * Claude Code's API timeout; a slow local model writing a long answer
 * may need more. */
#ifndef MOTE_LLM_REQUEST_TIMEOUT_MS
#define MOTE_LLM_REQUEST_TIMEOUT_MS 600000
#endif

/* Retry backoff, ms: first delay (doubled each attempt, plus up to 50%
 * jitter) and the cap, which also bounds a server's Retry-After. */
#ifndef MOTE_LLM_BACKOFF_MS
#define MOTE_LLM_BACKOFF_MS 1000
#endif
#ifndef MOTE_LLM_BACKOFF_MAX_MS
#define MOTE_LLM_BACKOFF_MAX_MS 30000
#endif

/* Kept connections (struct mote_conn): how long one may stay idle before
 * it is closed, ms (0: a connection per request, sent with "connection:
 * close"). Below the idle limits of what fronts the public APIs (AWS
 * load balancers 60 s, nginx 75 s, Cloudflare 400 s); servers with
 * shorter ones (Node and uvicorn, so vLLM, 5 s; llama.cpp's 5 s) close
 * first, which an idle connection notices at once (docs/LLM.md). */
#ifndef MOTE_LLM_KEEP_IDLE_MS
#define MOTE_LLM_KEEP_IDLE_MS 50000
#endif
/* After a stream's last event, how long the end of its response (the
 * chunked body's last chunk) is waited for, ms: the answer is complete
 * by then, and a response that does not end in time costs only its
 * connection, which is closed instead of kept. */
#ifndef MOTE_LLM_TAIL_MS
#define MOTE_LLM_TAIL_MS 2000
#endif

/* ---- conversations ------------------------------------------------------ */

/* Longest journal record (one JSON line), bytes. A journal keeps two
 * buffers of this size (the raw line and its unescaped strings). Tool
 * output is cut so its record fits. */
#ifndef MOTE_JOURNAL_LINE_MAX
#define MOTE_JOURNAL_LINE_MAX 65536
#endif

/* Bytes of a conversation id, including the NUL (at least 24: the ids mote
 * makes take 23). */
#ifndef MOTE_CONV_ID_MAX
#define MOTE_CONV_ID_MAX 40
#endif

/* Request ids the journal remembers per conversation, for a front door
 * that must never run a request twice (mote serve --mqtt: a broker sends
 * a message again after a reconnect): the latest user records that carry
 * an id (the "rid" field), rebuilt from the journal when it is opened.
 * Each costs 16 bytes of struct mote_journal. At least
 * MOTE_MQTT_RX_INFLIGHT: the messages a broker can send again are the
 * ones not acknowledged yet. 1..4096. */
#ifndef MOTE_JOURNAL_RIDS
#define MOTE_JOURNAL_RIDS 32
#endif

/* The longest request id, bytes of UTF-8 (without a NUL). 1..1024. */
#ifndef MOTE_JOURNAL_RID_MAX
#define MOTE_JOURNAL_RID_MAX 64
#endif

/* Automatic continues in a row on recovery before mote waits for the user. */
#ifndef MOTE_MAX_AUTO_CONTINUES
#define MOTE_MAX_AUTO_CONTINUES 2
#endif

/* ---- the agent (mote_agent.h) -------------------------------------------- */

/* Conversations a session holds open at once (the CLI uses 1, mote serve
 * many). Each costs sizeof(struct mote_conv) (`make size`). Range 1..64. */
#ifndef MOTE_MAX_CONVERSATIONS
#define MOTE_MAX_CONVERSATIONS 4
#endif

/* Model requests that stream at the same moment (a pool of buffers shared
 * by the conversations: a request finding none free waits for one). Each
 * costs a stream slot (MOTE_STREAM_SIZE, `make size`). Range 1..MOTE_MAX_CONVERSATIONS. */
#ifndef MOTE_MAX_STREAMS
#define MOTE_MAX_STREAMS 2
#endif

/* Tool calls that run at the same moment (a pool, as above). Each costs
 * sizeof(struct mote_tool_run). Range 1..MOTE_MAX_CONVERSATIONS. */
#ifndef MOTE_MAX_TOOL_RUNS
#define MOTE_MAX_TOOL_RUNS 2
#endif

/* Tools a session can register (built-in and the embedder's; MCP servers'
 * tools are counted by MOTE_MCP_MAX_TOOLS). Range 1..64. */
#ifndef MOTE_MAX_TOOLS
#define MOTE_MAX_TOOLS 16
#endif

/* Bytes of a tool call's result kept (more is counted and the model is
 * told how much was cut; the shell keeps the first and the last half). */
#ifndef MOTE_TOOL_OUTPUT_MAX
#define MOTE_TOOL_OUTPUT_MAX 16384
#endif

/* Largest file edit_file searches, bytes (it reads the file through
 * twice, MOTE_STEP_FILE_BYTES a loop turn: to search, then to copy it
 * with the change; a larger one is refused with a message). */
#ifndef MOTE_EDIT_FILE_MAX
#define MOTE_EDIT_FILE_MAX (8u * 1024u * 1024u)
#endif

/* Bytes of private state an embedder's tool may keep in its run
 * (struct mote_tool_run, st.user). */
#ifndef MOTE_TOOL_STATE_MAX
#define MOTE_TOOL_STATE_MAX 256
#endif

/* Bytes of an answer's text held while it streams; a longer answer goes
 * to the journal in pieces (text records), so no answer is cut. At least
 * 256 and at most MOTE_JOURNAL_TEXT_SAFE. */
#ifndef MOTE_ANSWER_TEXT_MAX
#define MOTE_ANSWER_TEXT_MAX 8192
#endif

/* Tools one conversation can have answered "always" for. */
#ifndef MOTE_CONV_ALLOWED_MAX
#define MOTE_CONV_ALLOWED_MAX 8
#endif

/* Default deadline of one tool call, ms (struct mote_session_conf
 * overrides it). */
#ifndef MOTE_TOOL_TIMEOUT_MS
#define MOTE_TOOL_TIMEOUT_MS 120000
#endif

/* After a shutdown's timeout cut what still ran, how long it waits for
 * the cut jobs to stop (they close sockets and kill process groups on
 * their next step), ms. */
#ifndef MOTE_SHUTDOWN_GRACE_MS
#define MOTE_SHUTDOWN_GRACE_MS 200
#endif

/* Most of the shutdown's time given to MCP servers to exit (close stdin,
 * SIGTERM at 2/5 of it, SIGKILL at 4/5), ms; never more than the
 * shutdown's own timeout. */
#ifndef MOTE_MCP_DISCONNECT_MS
#define MOTE_MCP_DISCONNECT_MS 3000
#endif

/* Lines kept in STATE/history when it is rewritten at shutdown, and the
 * longest line saved (longer input is not saved). */
#ifndef MOTE_HISTORY_MAX
#define MOTE_HISTORY_MAX 500
#endif
#ifndef MOTE_HISTORY_LINE_MAX
#define MOTE_HISTORY_LINE_MAX 4096
#endif

/* The line editor (mote_edit.h): the longest input line, bytes (a longer
 * one is refused whole), and the bytes of recall history it keeps (the
 * oldest lines make room). struct mote_edit holds the line twice and the
 * history once; only a program that declares one pays for it. */
#ifndef MOTE_EDIT_LINE_MAX
#define MOTE_EDIT_LINE_MAX 65536
#endif
#ifndef MOTE_EDIT_HISTORY_BYTES
#define MOTE_EDIT_HISTORY_BYTES 65536
#endif

/* ---- MCP ------------------------------------------------------------------- */

/* MCP servers at once, and tools kept per server (more are skipped, with
 * a message). */
#ifndef MOTE_MAX_MCP_SERVERS
#define MOTE_MAX_MCP_SERVERS 4
#endif
#ifndef MOTE_MCP_MAX_TOOLS
#define MOTE_MCP_MAX_TOOLS 24
#endif

/* Bytes of a tool's description and input schema kept (a longer
 * description is cut; a longer schema makes the tool skipped). */
#ifndef MOTE_MCP_DESC_MAX
#define MOTE_MCP_DESC_MAX 256
#endif
#ifndef MOTE_MCP_SCHEMA_MAX
#define MOTE_MCP_SCHEMA_MAX 2048
#endif

/* Longest message line from a server, bytes (longer ones are dropped and
 * fail the request they answered). */
#ifndef MOTE_MCP_LINE_MAX
#define MOTE_MCP_LINE_MAX 65536
#endif

/* Bytes of messages queued to one server; of one call's result text; of
 * the kept tail of a server's stderr. */
#ifndef MOTE_MCP_OUT_MAX
#define MOTE_MCP_OUT_MAX 20480
#endif
/* Bytes of an MCP server's own name for a tool, including the NUL (the
 * name offered to the model is at most 64 bytes: a longer or clashing one
 * is shortened with a hash of the whole name, docs/MCP.md). */
#ifndef MOTE_MCP_NAME_MAX
#define MOTE_MCP_NAME_MAX 128
#endif
#ifndef MOTE_MCP_RESULT_MAX
#define MOTE_MCP_RESULT_MAX 16384
#endif
#ifndef MOTE_MCP_LOG_MAX
#define MOTE_MCP_LOG_MAX 2048
#endif

/* Deadline of one MCP request (initialize, tools/list, tools/call), ms. */
#ifndef MOTE_MCP_TIMEOUT_MS
#define MOTE_MCP_TIMEOUT_MS 30000
#endif

/* MCP servers over HTTP (Streamable HTTP and HTTP+SSE; docs/MCP.md).
 * Bytes of a server's URL path with its query (and of an HTTP+SSE
 * endpoint's), including the NUL: a longer URL is refused in the
 * configuration, a longer endpoint fails the server. Range 16..4096. */
#ifndef MOTE_MCP_PATH_MAX
#define MOTE_MCP_PATH_MAX 512
#endif
/* Bytes of a session id (Mcp-Session-Id) kept, including the NUL; a
 * server that gives a longer one fails. Range 16..1024. */
#ifndef MOTE_MCP_SESSION_MAX
#define MOTE_MCP_SESSION_MAX 128
#endif
/* Bytes of one message on Streamable HTTP's GET stream (the server's
 * notifications and pings; answers come on their POST, up to
 * MOTE_MCP_LINE_MAX); a longer one is dropped with a log line. Range
 * 256..MOTE_MCP_LINE_MAX. */
#ifndef MOTE_MCP_NOTE_MAX
#define MOTE_MCP_NOTE_MAX 4096
#endif
/* Messages waiting for their HTTP exchange per server (a request, the
 * notifications and answers sent meanwhile); one more is refused as a
 * full queue (MOTE_ERR_FULL, a log line). Range 2..64. */
#ifndef MOTE_MCP_QUEUE_MAX
#define MOTE_MCP_QUEUE_MAX 8
#endif
/* tools/list pages fetched for one list (a server's nextCursor that never
 * ends): the list stops there, with a log line, and the server is ready
 * with what came. Range 1..255. */
#ifndef MOTE_MCP_PAGES_MAX
#define MOTE_MCP_PAGES_MAX 32
#endif
/* Headers per server in the configuration ("headers"); more are refused
 * with a message. Range 1..64. */
#ifndef MOTE_MCP_CONF_HEADERS
#define MOTE_MCP_CONF_HEADERS 8
#endif
/* Bytes of the params of a resources or prompts request mote makes (a
 * resource's URI, a prompt's name and arguments, a cursor, as JSON); an
 * input that makes longer params is refused with an error result. Range
 * 256..MOTE_MCP_OUT_MAX. */
#ifndef MOTE_MCP_PARAMS_MAX
#define MOTE_MCP_PARAMS_MAX 1024
#endif
/* A server's elicitation question (elicitation/create): fields kept (a
 * form with more is declined), and bytes of the form as the frontend gets
 * it (JSON; a longer one is declined). Ranges 1..64 and 512..65535. */
#ifndef MOTE_MCP_ASK_FIELDS
#define MOTE_MCP_ASK_FIELDS 16
#endif
#ifndef MOTE_MCP_ASK_MAX
#define MOTE_MCP_ASK_MAX 4096
#endif
/* Bytes of the hint a frontend shows when a line typed for a question's
 * field is refused (mote_mcp_form_reply: "(at least 1)", with the
 * field's bound). Range 64..1024. */
#ifndef MOTE_MCP_FORM_HINT_MAX
#define MOTE_MCP_FORM_HINT_MAX 96
#endif
/* After a server's event stream ended or could not be opened, the wait
 * before the next attempt, ms: doubled for each failure in a row, at most
 * 64 times this. Range 1..60000. */
#ifndef MOTE_MCP_RETRY_MS
#define MOTE_MCP_RETRY_MS 500
#endif
/* Resuming a broken Streamable HTTP event stream (a GET with
 * Last-Event-ID, docs/MCP.md). Bytes of a stream's last event id kept,
 * including the NUL: a longer id, or one with a byte outside visible
 * ASCII (a NUL, a space), is ignored, never cut. Range 16..1024. */
#ifndef MOTE_MCP_EVENT_ID_MAX
#define MOTE_MCP_EVENT_ID_MAX 128
#endif
/* A server's `retry:` (the wait before a broken stream is opened again,
 * ms) is taken within MIN..MAX (a smaller or larger one is raised or
 * lowered to it). Ranges 0..60000 and MIN..3600000. */
#ifndef MOTE_MCP_SSE_RETRY_MIN_MS
#define MOTE_MCP_SSE_RETRY_MIN_MS 100
#endif
#ifndef MOTE_MCP_SSE_RETRY_MAX_MS
#define MOTE_MCP_SSE_RETRY_MAX_MS 60000
#endif
/* Resumptions in a row that bring no new event before the request they
 * carry fails ("the event stream broke ... not resumed"); 0: a request's
 * broken stream is never resumed. Range 0..255. */
#ifndef MOTE_MCP_RESUME_MAX
#define MOTE_MCP_RESUME_MAX 5
#endif
/* The scope an MCP server over HTTP says it wants when it refuses a
 * token (403 with WWW-Authenticate's scope="..."), kept to name it in
 * the error (and the login that asks for it), bytes with the NUL; a
 * longer one is not named. Per server. Range 16..1024. */
#ifndef MOTE_MCP_SCOPE_MAX
#define MOTE_MCP_SCOPE_MAX 128
#endif

/* MCP deadlines per server, progress, restarts (docs/MCP.md).
 * The longest deadline a configuration may give a server
 * ("startup_timeout_sec", "tool_timeout_sec"), ms; a longer one is
 * refused with a message. Range 1000..86400000. */
#ifndef MOTE_MCP_DEADLINE_MAX_MS
#define MOTE_MCP_DEADLINE_MAX_MS 3600000
#endif
/* The longest a tools/call may last while the server keeps sending
 * notifications/progress for it (each one gives it the call's deadline
 * again), from its start, ms; 0: progress never extends a call. Range
 * 0..86400000. */
#ifndef MOTE_MCP_PROGRESS_MAX_MS
#define MOTE_MCP_PROGRESS_MAX_MS 3600000
#endif
/* At most one log line per call's progress in this many ms (the rest are
 * still taken: they extend the deadline); 0: every one said. Range
 * 0..600000. */
#ifndef MOTE_MCP_PROGRESS_LOG_MS
#define MOTE_MCP_PROGRESS_LOG_MS 1000
#endif
/* Times a stdio server that exited after it was ready is started again
 * in one run (on the next call of one of its tools); 0: never. Range
 * 0..255. */
#ifndef MOTE_MCP_RESTART_MAX
#define MOTE_MCP_RESTART_MAX 3
#endif
/* The wait between a stdio server's exit and its first restart, ms,
 * doubled for each restart after it (at most 64 times this). Range
 * 1..60000. */
#ifndef MOTE_MCP_RESTART_MS
#define MOTE_MCP_RESTART_MS 1000
#endif

/* ---- TLS (port/tls_mbedtls.c; mote_tls.h) ------------------------------------ */

/* TLS sessions open at once in the process (one per model request that
 * streams over https). Range 1..64. */
#ifndef MOTE_TLS_SESSIONS
#define MOTE_TLS_SESSIONS 4
#endif

/* Bytes a session takes from the socket in one receive, ahead of
 * mbedTLS: a TLS record (one or more SSE events) then costs one receive
 * call, not two (its header, then its body), and a short read tells that
 * the socket is empty, so no call is made only to hear "would block".
 * Larger records go straight into mbedTLS's buffer. At least 64. */
#ifndef MOTE_TLS_READAHEAD
#define MOTE_TLS_READAHEAD 2048
#endif

/* Looking for roots in a bundle: bytes read at a time, the longest root
 * certificate taken (DER bytes; longer ones are skipped and counted: the
 * largest of Debian's 140 roots has 2,007), the largest CA file read
 * (bytes; a larger one fails the handshake with a message), and how many
 * certificates of a server's chain are looked up in one pass (a longer
 * chain's further ones cost a pass each). */
#ifndef MOTE_TLS_READ_CHUNK
#define MOTE_TLS_READ_CHUNK 8192
#endif
#ifndef MOTE_TLS_CERT_MAX
#define MOTE_TLS_CERT_MAX 4096
#endif
#ifndef MOTE_TLS_BUNDLE_MAX
#define MOTE_TLS_BUNDLE_MAX (4UL * 1024UL * 1024UL)
#endif
#ifndef MOTE_TLS_CHAIN_MAX
#define MOTE_TLS_CHAIN_MAX 8
#endif

/* Bytes of the fixed arena every mbedTLS allocation comes from, in a build
 * whose mbedTLS has MBEDTLS_MEMORY_BUFFER_ALLOC_C (make tiny): TLS memory
 * is then bounded (a handshake needs about 50 KiB, docs/BENCHMARKS.md).
 * Other builds use the C library's heap. */
#ifndef MOTE_TLS_ARENA
#define MOTE_TLS_ARENA (160 * 1024)
#endif

/* ---- the POSIX port (port/posix; mote_posix.h) ------------------------------ */

/* Bytes of the storage root's path kept in struct mote_posix, including the
 * NUL (a longer root gives MOTE_ERR_NAMETOOLONG). At least 64. */
#ifndef MOTE_POSIX_PATH_MAX
#define MOTE_POSIX_PATH_MAX 1024
#endif

/* TLS sessions kept for resumption (mote_tls_peer.resume): how many
 * servers' sessions the process keeps in memory (0: none, every
 * handshake is a full one); the largest session kept, bytes of mbedTLS's
 * serialised form (about 150 plus the ticket, plus the server's
 * certificate where mbedTLS keeps it, as Debian's build does; a larger
 * one is not kept); and the oldest session offered, seconds since its
 * full handshake (RFC 5246 suggests at most 24 hours; a ticket's own
 * lifetime and mote_llm_conf.tls_session_max_s can make it shorter). */
#ifndef MOTE_TLS_SESSION_CACHE
#define MOTE_TLS_SESSION_CACHE 4
#endif
#ifndef MOTE_TLS_SESSION_BYTES
#define MOTE_TLS_SESSION_BYTES 4096
#endif
#ifndef MOTE_TLS_SESSION_MAX_S
#define MOTE_TLS_SESSION_MAX_S 86400
#endif

/* Session files kept in storage (MOTE_TLS_RESUME_DISK: tls/HASH, one per
 * server): at most this many, the most recently written; older ones, and
 * any older than MOTE_TLS_SESSION_MAX_S, are removed when a session is
 * written. At least 1, at most 256. */
#ifndef MOTE_TLS_SESSION_FILES
#define MOTE_TLS_SESSION_FILES 8
#endif

/* ---- checks -------------------------------------------------------------- */

#if MOTE_MAX_JOBS < 1 || MOTE_MAX_JOBS > 255
#error "MOTE_MAX_JOBS must be 1..255: a job handle keeps the slot index in 8 bits"
#endif

#if MOTE_MAX_INACTIVE_JOBS < 0
#error "MOTE_MAX_INACTIVE_JOBS must be 0 or more"
#endif

#if MOTE_MAX_INACTIVE_JOBS >= MOTE_MAX_JOBS
#error "MOTE_MAX_INACTIVE_JOBS must be smaller than MOTE_MAX_JOBS, or no slot is left for an active job: raise MOTE_MAX_JOBS or lower MOTE_MAX_INACTIVE_JOBS"
#endif

#if MOTE_JOB_MAX_CONTINUATIONS < 1 || MOTE_JOB_MAX_CONTINUATIONS > 32
#error "MOTE_JOB_MAX_CONTINUATIONS must be 1..32 (a pending-bit mask of 32 bits)"
#endif

#if MOTE_JOB_NAME_LEN < 2 || MOTE_CONT_KEY_LEN < 2 || MOTE_JOB_ERRMSG_LEN < 16
#error "MOTE_JOB_NAME_LEN and MOTE_CONT_KEY_LEN must be at least 2, MOTE_JOB_ERRMSG_LEN at least 16"
#endif

#if MOTE_MAX_TIMERS < 1 || MOTE_MAX_WATCHES < 1
#error "MOTE_MAX_TIMERS and MOTE_MAX_WATCHES must be at least 1"
#endif

#if MOTE_LOOP_MAX_WAIT_MS < 1 || MOTE_LOOP_MAX_WAIT_MS > 86400000
#error "MOTE_LOOP_MAX_WAIT_MS must be 1..86400000 ms"
#endif

#if MOTE_JSON_MAX_TOKENS < 16
#error "MOTE_JSON_MAX_TOKENS must be at least 16"
#endif

#if MOTE_SSE_DATA_MAX < 1024 || MOTE_SSE_NAME_MAX < 16
#error "MOTE_SSE_DATA_MAX must be at least 1024 and MOTE_SSE_NAME_MAX at least 16"
#endif

#if MOTE_HTTP_LINE_MAX < 256 || MOTE_HTTP_HEADER_MAX < MOTE_HTTP_LINE_MAX
#error "MOTE_HTTP_LINE_MAX must be at least 256 and MOTE_HTTP_HEADER_MAX at least MOTE_HTTP_LINE_MAX"
#endif

#if MOTE_LLM_MAX_TOOL_CALLS < 1 || MOTE_LLM_MAX_TOOL_CALLS > 255 || MOTE_LLM_MAX_BLOCKS < 2 || MOTE_LLM_MAX_BLOCKS > 255
#error "MOTE_LLM_MAX_TOOL_CALLS must be 1..255 and MOTE_LLM_MAX_BLOCKS 2..255"
#endif
#if MOTE_LLM_WS_HOLD < 1 || MOTE_LLM_WS_HOLD > 255
#error "MOTE_LLM_WS_HOLD must be 1..255 (its count is one byte of the writer's state)"
#endif

#if MOTE_MCP_RESULT_MAX < 1024 || MOTE_MCP_RESULT_MAX > MOTE_MCP_LINE_MAX
#error "MOTE_MCP_RESULT_MAX must be 1024..MOTE_MCP_LINE_MAX"
#endif
#if MOTE_MCP_PARAMS_MAX < 256 || MOTE_MCP_PARAMS_MAX > MOTE_MCP_OUT_MAX
#error "MOTE_MCP_PARAMS_MAX must be 256..MOTE_MCP_OUT_MAX"
#endif
#if MOTE_MCP_ASK_FIELDS < 1 || MOTE_MCP_ASK_FIELDS > 64
#error "MOTE_MCP_ASK_FIELDS must be 1..64"
#endif
#if MOTE_MCP_ASK_MAX < 512 || MOTE_MCP_ASK_MAX > 65535
#error "MOTE_MCP_ASK_MAX must be 512..65535 (offsets are 16 bits)"
#endif
#if MOTE_MCP_FORM_HINT_MAX < 64 || MOTE_MCP_FORM_HINT_MAX > 1024
#error "MOTE_MCP_FORM_HINT_MAX must be 64..1024"
#endif
#if MOTE_PROC_TAG_MAX < 17
#error "MOTE_PROC_TAG_MAX must be at least 17 (the POSIX port's tags are 16 hex digits)"
#endif
#if MOTE_LLM_TEXT_MAX < 256 || MOTE_LLM_ID_MAX < 32 || MOTE_LLM_NAME_MAX < 32
#error "MOTE_LLM_TEXT_MAX must be at least 256, MOTE_LLM_ID_MAX and MOTE_LLM_NAME_MAX at least 32"
#endif

#if MOTE_NET_BUF < 1024 || MOTE_LLM_MAX_ATTEMPTS < 1
#error "MOTE_NET_BUF must be at least 1024 (the request head must fit) and MOTE_LLM_MAX_ATTEMPTS at least 1"
#endif

#if MOTE_JOURNAL_LINE_MAX < 4096 || MOTE_CONV_ID_MAX < 24
#error "MOTE_JOURNAL_LINE_MAX must be at least 4096 and MOTE_CONV_ID_MAX at least 24 (the ids mote makes, 20260102-030405-a1b2c3, take 23 bytes)"
#endif

#if MOTE_MAX_CONVERSATIONS < 1 || MOTE_MAX_CONVERSATIONS > 64
#error "MOTE_MAX_CONVERSATIONS must be 1..64"
#endif

#if MOTE_MAX_STREAMS < 1 || MOTE_MAX_STREAMS > MOTE_MAX_CONVERSATIONS || \
    MOTE_MAX_TOOL_RUNS < 1 || MOTE_MAX_TOOL_RUNS > MOTE_MAX_CONVERSATIONS
#error "MOTE_MAX_STREAMS and MOTE_MAX_TOOL_RUNS must be 1..MOTE_MAX_CONVERSATIONS"
#endif

#if MOTE_MAX_TOOLS < 1 || MOTE_MAX_TOOLS > 64 || MOTE_CONV_ALLOWED_MAX < 1
#error "MOTE_MAX_TOOLS must be 1..64 and MOTE_CONV_ALLOWED_MAX at least 1"
#endif

#if MOTE_TOOL_OUTPUT_MAX < 1024 || MOTE_TOOL_OUTPUT_MAX > MOTE_JOURNAL_LINE_MAX / 2
#error "MOTE_TOOL_OUTPUT_MAX must be 1024..MOTE_JOURNAL_LINE_MAX/2 (a result must fit one journal record)"
#endif

#if MOTE_ANSWER_TEXT_MAX < 256 || MOTE_ANSWER_TEXT_MAX > (MOTE_JOURNAL_LINE_MAX - 256) / 6
#error "MOTE_ANSWER_TEXT_MAX must be 256..(MOTE_JOURNAL_LINE_MAX-256)/6 (a piece, escaped, must fit one journal record)"
#endif

#if MOTE_STEP_FILE_BYTES < 1024
#error "MOTE_STEP_FILE_BYTES must be at least 1024"
#endif

#if MOTE_TOOL_STATE_MAX < 16 || MOTE_HISTORY_MAX < 1 || MOTE_HISTORY_LINE_MAX < 64
#error "MOTE_TOOL_STATE_MAX must be at least 16, MOTE_HISTORY_MAX at least 1, MOTE_HISTORY_LINE_MAX at least 64"
#endif

#if MOTE_PRUNE_BATCH < 1 || MOTE_PRUNE_BATCH > 256
#error "MOTE_PRUNE_BATCH must be 1..256 (a table on the stack of mote_session_prune)"
#endif
#if MOTE_JSON_MAX_DEPTH < 8 || MOTE_JSON_MAX_DEPTH > 1024
#error "MOTE_JSON_MAX_DEPTH must be 8..1024 (MCP schemas nest; each level is a stack frame)"
#endif

#if MOTE_STORAGE_NAME_MAX < 16
#error "MOTE_STORAGE_NAME_MAX must be at least 16"
#endif
#if MOTE_POSIX_PATH_MAX < 64
#error "MOTE_POSIX_PATH_MAX must be at least 64"
#endif

/* ---- the API server (mote_serve.h) ------------------------------------------ */

/* Connections served at once (listeners not counted); one more is
 * accepted, answered 503 and closed. Each costs
 * MOTE_SERVE_CONN_SIZE bytes (`make size`) and a loop watch. */
#ifndef MOTE_SERVE_MAX_CONNS
#define MOTE_SERVE_MAX_CONNS 32
#endif

/* Of those, connections the TCP listener may hold at once (the rest are
 * kept for the Unix socket, whose clients are this user: clients without
 * the token cannot lock them out). One more on TCP is answered 503 and
 * closed. 1..MOTE_SERVE_MAX_CONNS. */
#ifndef MOTE_SERVE_TCP_CONNS
#define MOTE_SERVE_TCP_CONNS (MOTE_SERVE_MAX_CONNS - MOTE_SERVE_MAX_CONNS / 4)
#endif

/* The shortest bearer token the TCP listener takes, bytes (a shorter one
 * is refused at start: it could be guessed). The token file's is 64. */
#ifndef MOTE_SERVE_TOKEN_MIN
#define MOTE_SERVE_TOKEN_MIN 16
#endif

/* Conversations in one page of GET /v1/conversations when the request
 * does not say (?limit=N); a page also ends when its body is full
 * (MOTE_SERVE_BODY_MAX). The rest: ?after= the page's "next". */
#ifndef MOTE_SERVE_LIST_PAGE
#define MOTE_SERVE_LIST_PAGE 100
#endif

/* Bytes of a request's head (request line and headers). A longer request
 * line is refused with 414, longer headers with 431. */
#ifndef MOTE_SERVE_HEAD_MAX
#define MOTE_SERVE_HEAD_MAX 4096
#endif

/* Bytes of a connection's receive buffer; a request body up to this size
 * stays in it, a larger one takes a buffer of the body pool. */
#ifndef MOTE_SERVE_IN_BUF
#define MOTE_SERVE_IN_BUF 2048
#endif

/* Bytes of a connection's send buffer: a response, or the part of an
 * event stream on its way. A slow reader is never given more: the server
 * keeps its place in the journal instead. */
#ifndef MOTE_SERVE_OUT_BUF
#define MOTE_SERVE_OUT_BUF 4096
#endif

/* The largest request body (a long user message), bytes; a larger one is
 * refused with 413. */
#ifndef MOTE_SERVE_BODY_MAX
#define MOTE_SERVE_BODY_MAX 65536
#endif

/* Buffers of MOTE_SERVE_BODY_MAX bytes shared by the connections (large
 * bodies on their way in, the conversation list on its way out); a request
 * that finds none free is answered 503. */
#ifndef MOTE_SERVE_BODY_BUFS
#define MOTE_SERVE_BODY_BUFS 2
#endif

/* Deadlines, ms: the whole head from its first byte (a client sending a
 * byte a second is dropped with 408), the body after the head, an idle
 * connection between requests, and a response the client does not read
 * (no byte taken for this long). */
#ifndef MOTE_SERVE_HEADER_TIMEOUT_MS
#define MOTE_SERVE_HEADER_TIMEOUT_MS 10000
#endif
#ifndef MOTE_SERVE_BODY_TIMEOUT_MS
#define MOTE_SERVE_BODY_TIMEOUT_MS 30000
#endif
#ifndef MOTE_SERVE_IDLE_TIMEOUT_MS
#define MOTE_SERVE_IDLE_TIMEOUT_MS 60000
#endif
#ifndef MOTE_SERVE_SEND_TIMEOUT_MS
#define MOTE_SERVE_SEND_TIMEOUT_MS 60000
#endif

/* An event stream with nothing to say sends a comment this often, ms (a
 * dead peer is found, proxies keep the stream). */
#ifndef MOTE_SERVE_PING_MS
#define MOTE_SERVE_PING_MS 15000
#endif

/* After the shutdown, how long clients get to take the final event, ms. */
#ifndef MOTE_SERVE_FLUSH_MS
#define MOTE_SERVE_FLUSH_MS 1000
#endif

/* Conversations needing recovery remembered at start (more are found by
 * listing again once these are done). */
#ifndef MOTE_SERVE_RECOVER_MAX
#define MOTE_SERVE_RECOVER_MAX 16
#endif

/* An MCP configuration parsed by mote_mcp_conf_parse: bytes of the
 * strings kept (commands, arguments, environment), arguments and
 * environment entries per server. More is refused with a message. */
#ifndef MOTE_MCP_CONF_ARENA
#define MOTE_MCP_CONF_ARENA 65536
#endif
#ifndef MOTE_MCP_CONF_ARGS
#define MOTE_MCP_CONF_ARGS 32
#endif
#ifndef MOTE_MCP_CONF_ENV
#define MOTE_MCP_CONF_ENV 32
#endif

/* Per-tool approval rules a server keeps (--allow/--deny/--ask). */
#ifndef MOTE_SERVE_RULES_MAX
#define MOTE_SERVE_RULES_MAX 32
#endif

/* Bytes of journal the server reads per loop turn when it reads journals
 * it does not hold (the list, the state of a conversation not loaded,
 * retention): a longer journal is read over more turns, so that other
 * clients are answered meanwhile. A line up to MOTE_JOURNAL_LINE_MAX is
 * read whole and may pass it. 4096..16 MiB. */
#ifndef MOTE_SERVE_SCAN_STEP
#define MOTE_SERVE_SCAN_STEP 65536
#endif

/* Journals whose summary (state, size, user messages, first words) the
 * server keeps, about 340 bytes each: a journal is read again only when
 * it changed, or when its summary made room for another's. At least the
 * list's page (MOTE_SERVE_LIST_PAGE) and the retention's --keep keep
 * listings and retention from reading the same journals again.
 * 1..65536. */
#ifndef MOTE_SERVE_SUMMARIES
#define MOTE_SERVE_SUMMARIES 128
#endif

/* How long `mote serve` waits at its start, at most, for the kernel's
 * random generator to be seeded when it must make the token file (early
 * boot), ms; then it exits 1 saying so (a service manager starts it
 * again). 0: it does not wait. */
#ifndef MOTE_SERVE_SECRET_WAIT_MS
#define MOTE_SERVE_SECRET_WAIT_MS 30000
#endif

/* Loop watches kept for everything but the server's connections: 2 per
 * model request (a name lookup, then its socket), 2 per tool run, 3 per
 * MCP server, and the server's 2 listeners. MOTE_SERVE_MAX_CONNS plus
 * this must fit MOTE_MAX_WATCHES (the build says so otherwise); raise it
 * for descriptors of an embedder's own on the same loop. */
#ifndef MOTE_WATCH_RESERVE
#define MOTE_WATCH_RESERVE                                                                         \
    (2 * MOTE_MAX_STREAMS + 2 * MOTE_MAX_TOOL_RUNS + 3 * MOTE_MAX_MCP_SERVERS + 2)
#endif

#if MOTE_SERVE_MAX_CONNS < 1 || MOTE_SERVE_MAX_CONNS > 1024
#error "MOTE_SERVE_MAX_CONNS must be 1..1024"
#endif
#if MOTE_SERVE_TCP_CONNS < 1 || MOTE_SERVE_TCP_CONNS > MOTE_SERVE_MAX_CONNS
#error "MOTE_SERVE_TCP_CONNS must be 1..MOTE_SERVE_MAX_CONNS"
#endif
#if MOTE_SERVE_TOKEN_MIN < 1
#error "MOTE_SERVE_TOKEN_MIN must be at least 1"
#endif
#if MOTE_SERVE_LIST_PAGE < 1 || MOTE_SERVE_LIST_PAGE > MOTE_SERVE_BODY_MAX / MOTE_CONV_ID_MAX
#error "MOTE_SERVE_LIST_PAGE must be 1..MOTE_SERVE_BODY_MAX / MOTE_CONV_ID_MAX"
#endif
#if MOTE_SERVE_HEAD_MAX < 512 || MOTE_SERVE_IN_BUF < 256 || MOTE_SERVE_OUT_BUF < 1024 || \
    MOTE_SERVE_OUT_BUF > 65536
#error "MOTE_SERVE_HEAD_MAX must be at least 512, MOTE_SERVE_IN_BUF at least 256, MOTE_SERVE_OUT_BUF 1024..65536"
#endif
#if MOTE_SERVE_BODY_MAX < MOTE_SERVE_IN_BUF || MOTE_SERVE_BODY_BUFS < 1
#error "MOTE_SERVE_BODY_MAX must be at least MOTE_SERVE_IN_BUF and MOTE_SERVE_BODY_BUFS at least 1"
#endif
#if MOTE_SERVE_RECOVER_MAX < 1 || MOTE_SERVE_RULES_MAX < 1
#error "MOTE_SERVE_RECOVER_MAX and MOTE_SERVE_RULES_MAX must be at least 1"
#endif
#if MOTE_SERVE_MAX_CONNS + MOTE_WATCH_RESERVE > MOTE_MAX_WATCHES
#error "MOTE_SERVE_MAX_CONNS connections and MOTE_WATCH_RESERVE (the model requests', tools' and MCP servers' watches, and 2 listeners) must fit MOTE_MAX_WATCHES: raise MOTE_MAX_WATCHES or lower MOTE_SERVE_MAX_CONNS"
#endif
#if MOTE_SERVE_SCAN_STEP < 4096 || MOTE_SERVE_SCAN_STEP > 16777216
#error "MOTE_SERVE_SCAN_STEP must be 4096..16777216 bytes"
#endif
#if MOTE_SERVE_SUMMARIES < 1 || MOTE_SERVE_SUMMARIES > 65536
#error "MOTE_SERVE_SUMMARIES must be 1..65536"
#endif
#if MOTE_MCP_CONF_ARENA < 1024 || MOTE_MCP_CONF_ARGS < 1 || MOTE_MCP_CONF_ENV < 4
#error "MOTE_MCP_CONF_ARENA must be at least 1024, MOTE_MCP_CONF_ARGS at least 1, MOTE_MCP_CONF_ENV at least 4"
#endif
/* ---- end of the API server's block ---- */

#if MOTE_EDIT_LINE_MAX < 80 || MOTE_EDIT_HISTORY_BYTES < 2
#error "MOTE_EDIT_LINE_MAX must be at least 80 and MOTE_EDIT_HISTORY_BYTES at least 2"
#endif

#if MOTE_TLS_SESSIONS < 1 || MOTE_TLS_SESSIONS > 64 || MOTE_TLS_READAHEAD < 64 || \
    MOTE_TLS_CHAIN_MAX < 1
#error "MOTE_TLS_SESSIONS must be 1..64, MOTE_TLS_READAHEAD at least 64, MOTE_TLS_CHAIN_MAX at least 1"
#endif
#if MOTE_TLS_SESSION_CACHE < 0 || MOTE_TLS_SESSION_CACHE > 64 || MOTE_TLS_SESSION_BYTES < 512 || \
    MOTE_TLS_SESSION_MAX_S < 1
#error "MOTE_TLS_SESSION_CACHE must be 0..64, MOTE_TLS_SESSION_BYTES at least 512 and MOTE_TLS_SESSION_MAX_S at least 1"
#endif
#if MOTE_TLS_SESSION_FILES < 1 || MOTE_TLS_SESSION_FILES > 256
#error "MOTE_TLS_SESSION_FILES must be 1..256"
#endif

#if MOTE_TLS_READ_CHUNK < 512 || MOTE_TLS_CERT_MAX < 1024 || MOTE_TLS_BUNDLE_MAX < 65536 || \
    MOTE_TLS_ARENA < 32768
#error "MOTE_TLS_READ_CHUNK must be at least 512, MOTE_TLS_CERT_MAX 1024, MOTE_TLS_BUNDLE_MAX 65536 and MOTE_TLS_ARENA 32768"
#endif

/* ---- the MQTT client (mote_mqtt.h) ---------------------------------------- */

/* The largest message payload, bytes, received or published. A message
 * from the broker with a larger payload is skipped (its bytes are read and
 * dropped, so the connection stays in step) and reported as oversize; it
 * is still acknowledged like any other. mote_mqtt_publish refuses a larger
 * one with MOTE_ERR_TOO_LARGE. 1..16777216. struct mote_mqtt keeps one
 * receive buffer of this size plus MOTE_MQTT_TOPIC_MAX. */
#ifndef MOTE_MQTT_PAYLOAD_MAX
#define MOTE_MQTT_PAYLOAD_MAX 16384
#endif

/* The longest topic name, bytes of UTF-8, received or published. A
 * message on a longer topic is oversize (as above); a publish to one is
 * refused with MOTE_ERR_TOO_LARGE. 8..65535. */
#ifndef MOTE_MQTT_TOPIC_MAX
#define MOTE_MQTT_TOPIC_MAX 256
#endif

/* Bytes of outgoing PUBLISH packets held: the ones not sent yet and the
 * QoS 1 ones the broker has not acknowledged (kept to be sent again, with
 * DUP, after a reconnect). A publish that does not fit is refused with
 * MOTE_ERR_FULL until acknowledgements make room (MOTE_MQTT_EV_ROOM). At
 * least one largest packet: MOTE_MQTT_PAYLOAD_MAX + MOTE_MQTT_TOPIC_MAX + 8. */
#ifndef MOTE_MQTT_OUT_MAX
#define MOTE_MQTT_OUT_MAX 32768
#endif

/* Outgoing PUBLISH packets held at once (the in-flight table: unsent ones
 * and unacknowledged QoS 1 ones); one more is refused with MOTE_ERR_FULL,
 * as above. 1..1024. */
#ifndef MOTE_MQTT_INFLIGHT
#define MOTE_MQTT_INFLIGHT 16
#endif

/* Incoming QoS 1 and 2 messages the application holds unacknowledged at
 * once (an acknowledgement can wait until the message is stored). When
 * every slot is held the client stops reading: what does not fit waits in
 * the broker. 1..1024. */
#ifndef MOTE_MQTT_RX_INFLIGHT
#define MOTE_MQTT_RX_INFLIGHT 16
#endif

/* Topic filters one client subscribes to. 1..32. */
#ifndef MOTE_MQTT_SUBS_MAX
#define MOTE_MQTT_SUBS_MAX 4
#endif

/* Bytes for control packets: CONNECT (client id, will topic and payload,
 * user name, password), one SUBSCRIBE, acknowledgements, pings. A
 * configuration whose CONNECT or SUBSCRIBE does not fit is refused by
 * mote_mqtt_init with MOTE_ERR_TOO_LARGE. 64..65535. */
#ifndef MOTE_MQTT_CTL_MAX
#define MOTE_MQTT_CTL_MAX 1024
#endif

/* Bytes read from the connection at a time. 64..65536. */
#ifndef MOTE_MQTT_RECV_BUF
#define MOTE_MQTT_RECV_BUF 2048
#endif

/* The default keep-alive, seconds: a PINGREQ goes out when nothing was
 * sent or received for this long, and the broker drops a client silent
 * for 1.5 times it. 0: no keep-alive (a dead link is found only by TCP).
 * 0..65535. */
#ifndef MOTE_MQTT_KEEPALIVE_S
#define MOTE_MQTT_KEEPALIVE_S 60
#endif

/* How long a PINGREQ waits for its PINGRESP before the connection counts
 * as lost, ms. At least 1. */
#ifndef MOTE_MQTT_PING_TIMEOUT_MS
#define MOTE_MQTT_PING_TIMEOUT_MS 10000
#endif

/* The deadline of one connection attempt, ms: resolve, TCP, TLS and the
 * broker's CONNACK. At least 1. */
#ifndef MOTE_MQTT_CONNECT_TIMEOUT_MS
#define MOTE_MQTT_CONNECT_TIMEOUT_MS 15000
#endif

/* Reconnect backoff, ms: the first delay, doubled after each attempt that
 * fails or whose connection lasted less than the cap, with jitter (a delay
 * d becomes d/2..d), and the cap. 1..MOTE_MQTT_BACKOFF_MAX_MS. */
#ifndef MOTE_MQTT_BACKOFF_MS
#define MOTE_MQTT_BACKOFF_MS 1000
#endif
#ifndef MOTE_MQTT_BACKOFF_MAX_MS
#define MOTE_MQTT_BACKOFF_MAX_MS 60000
#endif

#if MOTE_MQTT_PAYLOAD_MAX < 1 || MOTE_MQTT_PAYLOAD_MAX > 16777216 || MOTE_MQTT_TOPIC_MAX < 8 || \
    MOTE_MQTT_TOPIC_MAX > 65535
#error "MOTE_MQTT_PAYLOAD_MAX must be 1..16777216 and MOTE_MQTT_TOPIC_MAX 8..65535"
#endif
#if MOTE_MQTT_OUT_MAX < MOTE_MQTT_PAYLOAD_MAX + MOTE_MQTT_TOPIC_MAX + 8
#error "MOTE_MQTT_OUT_MAX must hold one largest packet: at least MOTE_MQTT_PAYLOAD_MAX + MOTE_MQTT_TOPIC_MAX + 8"
#endif
#if MOTE_MQTT_INFLIGHT < 1 || MOTE_MQTT_INFLIGHT > 1024 || MOTE_MQTT_RX_INFLIGHT < 1 || \
    MOTE_MQTT_RX_INFLIGHT > 1024 || MOTE_MQTT_SUBS_MAX < 1 || MOTE_MQTT_SUBS_MAX > 32
#error "MOTE_MQTT_INFLIGHT and MOTE_MQTT_RX_INFLIGHT must be 1..1024, MOTE_MQTT_SUBS_MAX 1..32"
#endif
#if MOTE_MQTT_CTL_MAX < 64 || MOTE_MQTT_CTL_MAX > 65535 || MOTE_MQTT_RECV_BUF < 64 || \
    MOTE_MQTT_RECV_BUF > 65536
#error "MOTE_MQTT_CTL_MAX must be 64..65535 and MOTE_MQTT_RECV_BUF 64..65536"
#endif
#if MOTE_MQTT_KEEPALIVE_S < 0 || MOTE_MQTT_KEEPALIVE_S > 65535 || MOTE_MQTT_PING_TIMEOUT_MS < 1 || \
    MOTE_MQTT_CONNECT_TIMEOUT_MS < 1
#error "MOTE_MQTT_KEEPALIVE_S must be 0..65535, MOTE_MQTT_PING_TIMEOUT_MS and MOTE_MQTT_CONNECT_TIMEOUT_MS at least 1"
#endif
#if MOTE_MQTT_BACKOFF_MS < 1 || MOTE_MQTT_BACKOFF_MAX_MS < MOTE_MQTT_BACKOFF_MS
#error "MOTE_MQTT_BACKOFF_MS must be at least 1 and MOTE_MQTT_BACKOFF_MAX_MS at least MOTE_MQTT_BACKOFF_MS"
#endif
/* ---- end of the MQTT client's block ---- */
#if MOTE_MCP_PATH_MAX < 16 || MOTE_MCP_PATH_MAX > 4096 || MOTE_MCP_SESSION_MAX < 16 || \
    MOTE_MCP_SESSION_MAX > 1024
#error "MOTE_MCP_PATH_MAX must be 16..4096 and MOTE_MCP_SESSION_MAX 16..1024"
#endif
#if MOTE_MCP_NOTE_MAX < 256 || MOTE_MCP_NOTE_MAX > MOTE_MCP_LINE_MAX || MOTE_MCP_QUEUE_MAX < 2 || \
    MOTE_MCP_QUEUE_MAX > 64
#error "MOTE_MCP_NOTE_MAX must be 256..MOTE_MCP_LINE_MAX and MOTE_MCP_QUEUE_MAX 2..64"
#endif
#if MOTE_MCP_PAGES_MAX < 1 || MOTE_MCP_PAGES_MAX > 255
#error "MOTE_MCP_PAGES_MAX must be 1..255 (its count is one byte)"
#endif
#if MOTE_MCP_CONF_HEADERS < 1 || MOTE_MCP_CONF_HEADERS > 64 || MOTE_MCP_RETRY_MS < 1 || \
    MOTE_MCP_RETRY_MS > 60000
#error "MOTE_MCP_CONF_HEADERS must be 1..64 and MOTE_MCP_RETRY_MS 1..60000"
#endif
#if MOTE_MCP_DEADLINE_MAX_MS < 1000 || MOTE_MCP_DEADLINE_MAX_MS > 86400000 || \
    MOTE_MCP_PROGRESS_MAX_MS < 0 || MOTE_MCP_PROGRESS_MAX_MS > 86400000 || \
    MOTE_MCP_PROGRESS_LOG_MS < 0 || MOTE_MCP_PROGRESS_LOG_MS > 600000
#error "MOTE_MCP_DEADLINE_MAX_MS must be 1000..86400000, MOTE_MCP_PROGRESS_MAX_MS 0..86400000 and MOTE_MCP_PROGRESS_LOG_MS 0..600000"
#endif
#if MOTE_MCP_EVENT_ID_MAX < 16 || MOTE_MCP_EVENT_ID_MAX > 1024 || MOTE_MCP_RESUME_MAX < 0 || \
    MOTE_MCP_RESUME_MAX > 255
#error "MOTE_MCP_EVENT_ID_MAX must be 16..1024 and MOTE_MCP_RESUME_MAX 0..255"
#endif
#if MOTE_MCP_SCOPE_MAX < 16 || MOTE_MCP_SCOPE_MAX > 1024
#error "MOTE_MCP_SCOPE_MAX must be 16..1024"
#endif
#if MOTE_MCP_SSE_RETRY_MIN_MS < 0 || MOTE_MCP_SSE_RETRY_MIN_MS > 60000 || \
    MOTE_MCP_SSE_RETRY_MAX_MS < MOTE_MCP_SSE_RETRY_MIN_MS || MOTE_MCP_SSE_RETRY_MAX_MS > 3600000 || \
    MOTE_MCP_SSE_RETRY_MAX_MS < 1
#error "MOTE_MCP_SSE_RETRY_MIN_MS must be 0..60000 and MOTE_MCP_SSE_RETRY_MAX_MS 1..3600000, at least MIN"
#endif
#if MOTE_MCP_RESTART_MAX < 0 || MOTE_MCP_RESTART_MAX > 255 || MOTE_MCP_RESTART_MS < 1 || \
    MOTE_MCP_RESTART_MS > 60000
#error "MOTE_MCP_RESTART_MAX must be 0..255 and MOTE_MCP_RESTART_MS 1..60000"
#endif

/* ---- mote serve's MQTT front door (mote_serve.h, docs/MQTT.md) --------------- */

/* Conversations whose events are on their way to PREFIX/out/ID at once
 * (about 100 bytes each: an id and a place in its journal). A
 * conversation holds one while it runs a turn and while the client's
 * queue is behind its journal (the records are read from there as the
 * queue makes room); one more behind at once has its events left out,
 * said in the log. 1..256. */
#ifndef MOTE_SERVE_MQTT_OUTS
#define MOTE_SERVE_MQTT_OUTS 32
#endif

/* Messages on PREFIX/in kept waiting for their conversation (a turn runs
 * in it, or every conversation slot is busy), unacknowledged, and the
 * bytes of their texts. A message that does not fit waits in the broker
 * (the client stops taking messages until one leaves). 1..1024; bytes at
 * least 64. */
#ifndef MOTE_SERVE_MQTT_WAIT
#define MOTE_SERVE_MQTT_WAIT 8
#endif
#ifndef MOTE_SERVE_MQTT_WAIT_BYTES
#define MOTE_SERVE_MQTT_WAIT_BYTES 16384
#endif

/* The clean end of the broker's connection at shutdown, ms: the last
 * events and the "offline" status go out and are acknowledged, then
 * DISCONNECT; past it the connection is closed and the broker publishes
 * the will. At least 1. */
#ifndef MOTE_SERVE_MQTT_STOP_MS
#define MOTE_SERVE_MQTT_STOP_MS 2000
#endif

#if MOTE_JOURNAL_RIDS < 1 || MOTE_JOURNAL_RIDS > 4096 || MOTE_JOURNAL_RID_MAX < 1 || \
    MOTE_JOURNAL_RID_MAX > 1024
#error "MOTE_JOURNAL_RIDS must be 1..4096 and MOTE_JOURNAL_RID_MAX 1..1024"
#endif
#if MOTE_JOURNAL_RIDS < MOTE_MQTT_RX_INFLIGHT
#error "MOTE_JOURNAL_RIDS must be at least MOTE_MQTT_RX_INFLIGHT: a broker may send that many messages again"
#endif
#if MOTE_SERVE_MQTT_OUTS < 1 || MOTE_SERVE_MQTT_OUTS > 256 || MOTE_SERVE_MQTT_WAIT < 1 || \
    MOTE_SERVE_MQTT_WAIT > 1024 || MOTE_SERVE_MQTT_WAIT_BYTES < 64 || MOTE_SERVE_MQTT_STOP_MS < 1
#error "MOTE_SERVE_MQTT_OUTS must be 1..256, MOTE_SERVE_MQTT_WAIT 1..1024, MOTE_SERVE_MQTT_WAIT_BYTES at least 64 and MOTE_SERVE_MQTT_STOP_MS at least 1"
#endif
/* ---- end of mote serve's MQTT block ---- */

/* ---- mote serve's MCP server and OpenAI-compatible endpoint (docs/SERVE.md) ---- */

/* MCP sessions kept at once (Streamable HTTP), about 200 bytes each. A
 * client that initializes when every one is taken takes the place of the
 * one used least recently that runs no call (its client, coming back,
 * gets 404 and initializes again, as the protocol says). 1..1024. */
#ifndef MOTE_SERVE_MCP_SESSIONS
#define MOTE_SERVE_MCP_SESSIONS 8
#endif

/* Calls, `ask` turns and chat completions followed for their clients at
 * once, MCP and OpenAI together (each keeps MOTE_SERVE_FOLLOW_TEXT
 * bytes); one more is answered busy. 1..256. */
#ifndef MOTE_SERVE_FOLLOWS
#define MOTE_SERVE_FOLLOWS 4
#endif

/* Bytes a followed call or turn keeps for its client: a call's result
 * (a tool's whole output, MOTE_TOOL_OUTPUT_MAX and its notes), an
 * answer's text, what a streamed completion's client has not taken yet;
 * more is left out and said so (a stream that falls that far behind
 * ends with an error; the journal keeps everything). At least
 * MOTE_TOOL_OUTPUT_MAX + 1024; at most 16 MiB. */
#ifndef MOTE_SERVE_FOLLOW_TEXT
#define MOTE_SERVE_FOLLOW_TEXT (MOTE_TOOL_OUTPUT_MAX + 4096)
#endif

/* Bytes of a tools/list page (a page holds one tool at least; the rest
 * follow nextCursor). 1024..MOTE_SERVE_BODY_MAX - 1024. */
#ifndef MOTE_SERVE_MCP_PAGE
#define MOTE_SERVE_MCP_PAGE 32768
#endif

/* Messages in one JSON-RPC batch (protocol version 2025-03-26 only).
 * 1..64. */
#ifndef MOTE_SERVE_MCP_BATCH
#define MOTE_SERVE_MCP_BATCH 16
#endif

/* Bytes of a JSON-RPC id or a progress token as JSON (a longer one is
 * refused). 16..1024. */
#ifndef MOTE_SERVE_MCP_ID_MAX
#define MOTE_SERVE_MCP_ID_MAX 128
#endif

/* A running call or turn whose client gave a progress token is told
 * how it stands this often, ms (and as its answer streams). 100..600000. */
#ifndef MOTE_SERVE_MCP_PROGRESS_MS
#define MOTE_SERVE_MCP_PROGRESS_MS 1000
#endif

#if MOTE_SERVE_MCP_SESSIONS < 1 || MOTE_SERVE_MCP_SESSIONS > 1024 || MOTE_SERVE_FOLLOWS < 1 || \
    MOTE_SERVE_FOLLOWS > 256
#error "MOTE_SERVE_MCP_SESSIONS must be 1..1024 and MOTE_SERVE_FOLLOWS 1..256"
#endif
#if MOTE_SERVE_FOLLOW_TEXT < MOTE_TOOL_OUTPUT_MAX + 1024 || MOTE_SERVE_FOLLOW_TEXT > 16777216
#error "MOTE_SERVE_FOLLOW_TEXT must be at least MOTE_TOOL_OUTPUT_MAX + 1024 (a call's whole result) and at most 16 MiB"
#endif
#if MOTE_SERVE_MCP_PAGE < 1024 || MOTE_SERVE_MCP_PAGE > MOTE_SERVE_BODY_MAX - 1024
#error "MOTE_SERVE_MCP_PAGE must be 1024..MOTE_SERVE_BODY_MAX - 1024 (a page is answered from one buffer of that size)"
#endif
#if MOTE_SERVE_MCP_BATCH < 1 || MOTE_SERVE_MCP_BATCH > 64 || MOTE_SERVE_MCP_ID_MAX < 16 || \
    MOTE_SERVE_MCP_ID_MAX > 1024 || MOTE_SERVE_MCP_PROGRESS_MS < 100 || \
    MOTE_SERVE_MCP_PROGRESS_MS > 600000
#error "MOTE_SERVE_MCP_BATCH must be 1..64, MOTE_SERVE_MCP_ID_MAX 16..1024 and MOTE_SERVE_MCP_PROGRESS_MS 100..600000"
#endif
/* ---- end of mote serve's MCP and OpenAI block ---- */

/* ---- unattended devices: approvals' deadlines, time zones, schedules, the
 * spend budget (mote_time.h, mote_sched.h, mote_budget.h) ---- */

/* How long mote serve lets a tool call wait for an approval before it is
 * answered no by itself ("denied: nobody approved within 10 minutes"),
 * ms, unless --approval-timeout says otherwise; 0: it waits for ever.
 * The interactive CLI has none unless asked. */
#ifndef MOTE_SERVE_APPROVAL_TIMEOUT_MS
#define MOTE_SERVE_APPROVAL_TIMEOUT_MS 600000
#endif

/* The longest time zone name, bytes with the NUL ("America/Argentina/
 * ComodRivadavia" is 32). 16..256. */
#ifndef MOTE_TZ_NAME_MAX
#define MOTE_TZ_NAME_MAX 64
#endif

/* Transitions of a zone's table kept, from the time it is read on (two a
 * year where daylight saving is kept: 32 years); later times follow the
 * file's POSIX TZ rule. 2..4096. */
#ifndef MOTE_TZ_TRANSITIONS
#define MOTE_TZ_TRANSITIONS 64
#endif

/* Local time types of a zone kept (offsets it ever uses). 2..256. */
#ifndef MOTE_TZ_TYPES
#define MOTE_TZ_TYPES 16
#endif

/* The largest zoneinfo (TZif) file read, bytes (Debian's largest is
 * under 6 KB). 1024..1048576. */
#ifndef MOTE_TZ_FILE_MAX
#define MOTE_TZ_FILE_MAX 8192
#endif

/* The real-time clock counts as set (plausible) from this time on,
 * seconds since 1970 (a device without a battery-backed clock boots in
 * 1970, or at its build date); earlier, wall-clock schedules wait, unless
 * the port says the clock is synchronised. Default 2026-01-01T00:00:00Z. */
#ifndef MOTE_CLOCK_FLOOR_S
#define MOTE_CLOCK_FLOOR_S 1767225600
#endif

/* Schedules mote serve holds (from its file, the API, MQTT and the
 * agent's schedule tool). Each costs about MOTE_SCHED_PROMPT_MAX + 300
 * bytes. 1..1024. */
#ifndef MOTE_SCHED_MAX
#define MOTE_SCHED_MAX 16
#endif

/* The longest schedule id, bytes with the NUL ([A-Za-z0-9_-]); with the
 * occurrence's time it names the conversation of an occurrence, so it
 * must leave 16 bytes of MOTE_CONV_ID_MAX. 2..MOTE_CONV_ID_MAX - 16. */
#ifndef MOTE_SCHED_ID_MAX
#define MOTE_SCHED_ID_MAX (MOTE_CONV_ID_MAX - 16)
#endif

/* The longest prompt of a schedule, bytes with the NUL. 64..65536. */
#ifndef MOTE_SCHED_PROMPT_MAX
#define MOTE_SCHED_PROMPT_MAX 2048
#endif

/* The longest rule of a schedule as given (a cron expression, an
 * interval, a time), bytes with the NUL. 32..1024. */
#ifndef MOTE_SCHED_RULE_MAX
#define MOTE_SCHED_RULE_MAX 128
#endif

/* Time zones the schedules use at once (UTC needs none). 1..64. */
#ifndef MOTE_SCHED_ZONES
#define MOTE_SCHED_ZONES 4
#endif

/* How old a missed occurrence may be, by default, for the catch-up after
 * downtime to run it (the most recent one only; the others are logged
 * as skipped), seconds. A schedule sets its own with "max_late". */
#ifndef MOTE_SCHED_MAX_LATE_S
#define MOTE_SCHED_MAX_LATE_S 3600
#endif

/* A change of the real-time clock against the monotonic one larger than
 * this is a jump (journaled; wall-clock occurrences it passes over are
 * skipped, never run), ms. 1000..3600000. */
#ifndef MOTE_SCHED_JUMP_MS
#define MOTE_SCHED_JUMP_MS 10000
#endif

/* The schedules' journal (STATE/schedules.jsonl) is rewritten with only
 * what is still needed once it is larger than this, bytes. 4096..2^30. */
#ifndef MOTE_SCHED_LOG_MAX
#define MOTE_SCHED_LOG_MAX 262144
#endif

/* The budget (mote_budget.h): the longest model name a price names,
 * bytes with the NUL; prices kept (one per model); requests reserved and
 * not settled at once (one per conversation: MOTE_MAX_CONVERSATIONS is
 * enough); the budget's journal (STATE/budget.jsonl) is rewritten with
 * what the current day holds once it is larger than MOTE_BUDGET_LOG_MAX
 * bytes. */
#ifndef MOTE_BUDGET_MODEL_MAX
#define MOTE_BUDGET_MODEL_MAX 64
#endif
#ifndef MOTE_BUDGET_PRICES
#define MOTE_BUDGET_PRICES 8
#endif
#ifndef MOTE_BUDGET_HOLDS
#define MOTE_BUDGET_HOLDS (2 * MOTE_MAX_CONVERSATIONS)
#endif
#ifndef MOTE_BUDGET_LOG_MAX
#define MOTE_BUDGET_LOG_MAX 65536
#endif

#if MOTE_BUDGET_MODEL_MAX < 8 || MOTE_BUDGET_MODEL_MAX > 256 || MOTE_BUDGET_PRICES < 1 || \
    MOTE_BUDGET_PRICES > 256 || MOTE_BUDGET_HOLDS < MOTE_MAX_CONVERSATIONS || \
    MOTE_BUDGET_HOLDS > 1024 || MOTE_BUDGET_LOG_MAX < 4096 || MOTE_BUDGET_LOG_MAX > 1073741824
#error "MOTE_BUDGET_MODEL_MAX must be 8..256, MOTE_BUDGET_PRICES 1..256, MOTE_BUDGET_HOLDS MOTE_MAX_CONVERSATIONS..1024, MOTE_BUDGET_LOG_MAX 4096..2^30"
#endif
#if MOTE_TZ_NAME_MAX < 16 || MOTE_TZ_NAME_MAX > 256 || MOTE_TZ_TRANSITIONS < 2 || \
    MOTE_TZ_TRANSITIONS > 4096 || MOTE_TZ_TYPES < 2 || MOTE_TZ_TYPES > 256 || \
    MOTE_TZ_FILE_MAX < 1024 || MOTE_TZ_FILE_MAX > 1048576
#error "MOTE_TZ_NAME_MAX must be 16..256, MOTE_TZ_TRANSITIONS 2..4096, MOTE_TZ_TYPES 2..256, MOTE_TZ_FILE_MAX 1024..1048576"
#endif
#if MOTE_SCHED_MAX < 1 || MOTE_SCHED_MAX > 1024 || MOTE_SCHED_ID_MAX < 2 || \
    MOTE_SCHED_ID_MAX > MOTE_CONV_ID_MAX - 16 || MOTE_SCHED_PROMPT_MAX < 64 || \
    MOTE_SCHED_PROMPT_MAX > 65536 || MOTE_SCHED_ZONES < 1 || MOTE_SCHED_ZONES > 64
#error "MOTE_SCHED_MAX must be 1..1024, MOTE_SCHED_ID_MAX 2..MOTE_CONV_ID_MAX-16, MOTE_SCHED_PROMPT_MAX 64..65536, MOTE_SCHED_ZONES 1..64"
#endif
#if MOTE_SCHED_RULE_MAX < 32 || MOTE_SCHED_RULE_MAX > 1024
#error "MOTE_SCHED_RULE_MAX must be 32..1024"
#endif
#if MOTE_SCHED_JUMP_MS < 1000 || MOTE_SCHED_JUMP_MS > 3600000 || MOTE_SCHED_LOG_MAX < 4096 || \
    MOTE_SCHED_LOG_MAX > 1073741824
#error "MOTE_SCHED_JUMP_MS must be 1000..3600000 and MOTE_SCHED_LOG_MAX 4096..2^30"
#endif
/* ---- end of the unattended devices' block ---- */

/* ---- providers: reasoning ---- */

/* Bytes of an answer's reasoning (a thinking block, reasoning_content)
 * held while it streams; more goes to the journal in pieces (reason
 * records), so reasoning of any length costs no more memory. At least 256
 * and at most (MOTE_JOURNAL_LINE_MAX - 256) / 6. */
#ifndef MOTE_ANSWER_REASON_MAX
#define MOTE_ANSWER_REASON_MAX 4096
#endif

#if MOTE_ANSWER_REASON_MAX < 256 || MOTE_ANSWER_REASON_MAX > (MOTE_JOURNAL_LINE_MAX - 256) / 6
#error "MOTE_ANSWER_REASON_MAX must be 256..(MOTE_JOURNAL_LINE_MAX-256)/6 (a piece, escaped, must fit one journal record)"
#endif

/* The share of the model's context window (percent) a tool result may
 * take in a request: a longer one is sent cut, its start and its end,
 * with the cut said to the model (the journal keeps it whole). 1..100;
 * needs a known window (--context-window, the model's name, or a server
 * that said it). */
#ifndef MOTE_CONTEXT_RESULT_SHARE
#define MOTE_CONTEXT_RESULT_SHARE 25
#endif

/* Bytes a token is taken for when a share of the window is turned into
 * bytes and no server said better (3: English text is about 4, code and
 * JSON about 3; fewer cuts more). 1..8. */
#ifndef MOTE_CONTEXT_BYTES_PER_TOKEN
#define MOTE_CONTEXT_BYTES_PER_TOKEN 3
#endif

#if MOTE_CONTEXT_RESULT_SHARE < 1 || MOTE_CONTEXT_RESULT_SHARE > 100 || \
    MOTE_CONTEXT_BYTES_PER_TOKEN < 1 || MOTE_CONTEXT_BYTES_PER_TOKEN > 8
#error "MOTE_CONTEXT_RESULT_SHARE must be 1..100 and MOTE_CONTEXT_BYTES_PER_TOKEN 1..8"
#endif
/* ---- end of the providers' block ---- */

/* ---- the configuration's signature --------------------------------------
 * A hash (FNV-1a over the values) of every macro above. The library keeps
 * the one it was built with; mote_loop_init() is a macro that passes the
 * caller's, so a program built with other values (its structs laid out
 * differently) gets MOTE_ERR_CONFIG instead of memory corruption. */
/* (three parentheses a step: clang takes at most 256 nested in all) */
#define MOTE_SIG_(h, v) (((h) ^ (unsigned long)(v)) * 16777619UL & 0xFFFFFFFFUL)
#define MOTE_SIG_0_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_MAX_JOBS), MOTE_MAX_INACTIVE_JOBS), MOTE_JOB_MAX_CONTINUATIONS), MOTE_JOB_NAME_LEN), MOTE_CONT_KEY_LEN), MOTE_JOB_ERRMSG_LEN), MOTE_MAX_TIMERS), MOTE_MAX_WATCHES)
#define MOTE_SIG_1_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_0_, MOTE_LOOP_MAX_WAIT_MS), MOTE_STORAGE_NAME_MAX), MOTE_JSON_MAX_TOKENS), MOTE_SSE_DATA_MAX), MOTE_SSE_NAME_MAX), MOTE_HTTP_LINE_MAX), MOTE_HTTP_HEADER_MAX), MOTE_LLM_MAX_TOOL_CALLS)
#define MOTE_SIG_2_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_1_, MOTE_LLM_MAX_BLOCKS), MOTE_LLM_TEXT_MAX), MOTE_LLM_ID_MAX), MOTE_LLM_NAME_MAX), MOTE_PROC_TAG_MAX), MOTE_NET_BUF), MOTE_STEP_IO_BYTES), MOTE_LLM_KEY_MAX)
#define MOTE_SIG_3_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_2_, MOTE_JOURNAL_TORN_MAX), MOTE_PROXY_CRED_MAX), MOTE_PROXY_AUTH_MAX), MOTE_LLM_MAX_ATTEMPTS), MOTE_LLM_CONNECT_TIMEOUT_MS), MOTE_LLM_FIRST_BYTE_TIMEOUT_MS), MOTE_LLM_EVENT_TIMEOUT_MS), MOTE_LLM_IDLE_TIMEOUT_MS)
#define MOTE_SIG_4_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_3_, MOTE_LLM_BACKOFF_MS), MOTE_LLM_BACKOFF_MAX_MS), MOTE_JOURNAL_LINE_MAX), MOTE_CONV_ID_MAX), MOTE_MAX_AUTO_CONTINUES), MOTE_MAX_CONVERSATIONS), MOTE_MAX_STREAMS), MOTE_MAX_TOOL_RUNS)
#define MOTE_SIG_5_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_4_, MOTE_MAX_TOOLS), MOTE_TOOL_OUTPUT_MAX), MOTE_EDIT_FILE_MAX), MOTE_TOOL_STATE_MAX), MOTE_ANSWER_TEXT_MAX), MOTE_CONV_ALLOWED_MAX), MOTE_TOOL_TIMEOUT_MS), MOTE_SHUTDOWN_GRACE_MS)
#define MOTE_SIG_6_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_5_, MOTE_MCP_DISCONNECT_MS), MOTE_HISTORY_MAX), MOTE_HISTORY_LINE_MAX), MOTE_MAX_MCP_SERVERS), MOTE_MCP_MAX_TOOLS), MOTE_MCP_DESC_MAX), MOTE_MCP_SCHEMA_MAX), MOTE_MCP_LINE_MAX)
#define MOTE_SIG_7_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_6_, MOTE_MCP_OUT_MAX), MOTE_MCP_NAME_MAX), MOTE_MCP_RESULT_MAX), MOTE_MCP_LOG_MAX), MOTE_MCP_TIMEOUT_MS)
#define MOTE_SIG_EDIT_ MOTE_SIG_(MOTE_SIG_(MOTE_SIG_7_, MOTE_EDIT_LINE_MAX), MOTE_EDIT_HISTORY_BYTES)
/* mote serve's limits: a chain of its own, joined at the top (compilers
 * cap the nesting of brackets, and the chain above is near clang's 256) */
#define MOTE_SIG_SERVE_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_SERVE_MAX_CONNS), MOTE_SERVE_TCP_CONNS), MOTE_SERVE_TOKEN_MIN), MOTE_SERVE_LIST_PAGE), MOTE_SERVE_HEAD_MAX), MOTE_SERVE_IN_BUF), MOTE_SERVE_OUT_BUF), MOTE_SERVE_BODY_MAX), MOTE_SERVE_BODY_BUFS), MOTE_SERVE_HEADER_TIMEOUT_MS), MOTE_SERVE_BODY_TIMEOUT_MS), MOTE_SERVE_IDLE_TIMEOUT_MS), MOTE_SERVE_SEND_TIMEOUT_MS), MOTE_SERVE_PING_MS), MOTE_SERVE_FLUSH_MS), MOTE_SERVE_RECOVER_MAX), MOTE_SERVE_RULES_MAX), MOTE_MCP_CONF_ARENA), MOTE_MCP_CONF_ARGS), MOTE_MCP_CONF_ENV)
/* the TLS limits, a chain of their own too */
#define MOTE_SIG_TLS_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_TLS_SESSIONS), MOTE_TLS_READAHEAD), MOTE_TLS_READ_CHUNK), MOTE_TLS_CERT_MAX), MOTE_TLS_BUNDLE_MAX), MOTE_TLS_CHAIN_MAX), MOTE_TLS_ARENA)
/* the rest, on the short chain */
#define MOTE_SIG_MORE_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_SERVE_, MOTE_JSON_MAX_DEPTH), MOTE_PRUNE_BATCH), MOTE_POSIX_PATH_MAX), MOTE_LLM_WS_HOLD)
/* the MQTT client's limits, a chain of their own */
#define MOTE_SIG_MQTT_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_MQTT_PAYLOAD_MAX), MOTE_MQTT_TOPIC_MAX), MOTE_MQTT_OUT_MAX), MOTE_MQTT_INFLIGHT), MOTE_MQTT_RX_INFLIGHT), MOTE_MQTT_SUBS_MAX), MOTE_MQTT_CTL_MAX), MOTE_MQTT_RECV_BUF), MOTE_MQTT_KEEPALIVE_S), MOTE_MQTT_PING_TIMEOUT_MS), MOTE_MQTT_CONNECT_TIMEOUT_MS), MOTE_MQTT_BACKOFF_MS), MOTE_MQTT_BACKOFF_MAX_MS)
/* kept connections and TLS sessions: a chain of their own */
#define MOTE_SIG_WIRE_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_LLM_KEEP_IDLE_MS), MOTE_LLM_TAIL_MS), MOTE_TLS_SESSION_CACHE), MOTE_TLS_SESSION_BYTES), MOTE_TLS_SESSION_MAX_S), MOTE_LLM_REQUEST_TIMEOUT_MS), MOTE_TLS_SESSION_FILES)
/* the service's limits (mote serve on a device), a chain of their own */
#define MOTE_SIG_SVC_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_SERVE_SCAN_STEP), MOTE_SERVE_SUMMARIES), MOTE_SERVE_SECRET_WAIT_MS), MOTE_WATCH_RESERVE), MOTE_STEP_FILE_BYTES)
/* MCP servers over HTTP, and tools/list pages: a chain of their own */
#define MOTE_SIG_MCPHTTP_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_MCP_PATH_MAX), MOTE_MCP_SESSION_MAX), MOTE_MCP_NOTE_MAX), MOTE_MCP_QUEUE_MAX), MOTE_MCP_CONF_HEADERS), MOTE_MCP_RETRY_MS), MOTE_MCP_PAGES_MAX), MOTE_MCP_PARAMS_MAX), MOTE_MCP_ASK_FIELDS), MOTE_MCP_ASK_MAX)
/* mote serve's MQTT front door and the journal's request ids: a chain of their own */
#define MOTE_SIG_SMQTT_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_JOURNAL_RIDS), MOTE_JOURNAL_RID_MAX), MOTE_SERVE_MQTT_OUTS), MOTE_SERVE_MQTT_WAIT), MOTE_SERVE_MQTT_WAIT_BYTES), MOTE_SERVE_MQTT_STOP_MS)
/* the providers' limits: a chain of their own */
#define MOTE_SIG_PROV_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_ANSWER_REASON_MAX), MOTE_CONTEXT_RESULT_SHARE), MOTE_CONTEXT_BYTES_PER_TOKEN), MOTE_MCP_FORM_HINT_MAX)
/* mote serve's MCP server and OpenAI endpoint: a chain of their own */
#define MOTE_SIG_SMCP_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_SERVE_MCP_SESSIONS), MOTE_SERVE_FOLLOWS), MOTE_SERVE_FOLLOW_TEXT), MOTE_SERVE_MCP_PAGE), MOTE_SERVE_MCP_BATCH), MOTE_SERVE_MCP_ID_MAX), MOTE_SERVE_MCP_PROGRESS_MS)
/* unattended devices: a chain of their own */
#define MOTE_SIG_UNATT_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_TZ_NAME_MAX), MOTE_TZ_TRANSITIONS), MOTE_TZ_TYPES), MOTE_TZ_FILE_MAX), MOTE_SCHED_MAX), MOTE_SCHED_ID_MAX), MOTE_SCHED_PROMPT_MAX), MOTE_SCHED_ZONES), MOTE_SERVE_APPROVAL_TIMEOUT_MS), MOTE_CLOCK_FLOOR_S), MOTE_SCHED_MAX_LATE_S), MOTE_SCHED_JUMP_MS), MOTE_SCHED_LOG_MAX)
#define MOTE_SIG_BUDGET_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_BUDGET_MODEL_MAX), MOTE_BUDGET_PRICES), MOTE_BUDGET_HOLDS), MOTE_BUDGET_LOG_MAX), MOTE_SCHED_RULE_MAX)
/* Streamable HTTP resumption: a chain of its own */
#define MOTE_SIG_MCPRES_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_MCP_EVENT_ID_MAX), MOTE_MCP_SSE_RETRY_MIN_MS), MOTE_MCP_SSE_RETRY_MAX_MS), MOTE_MCP_RESUME_MAX), MOTE_MCP_SCOPE_MAX)
/* MCP deadlines, progress and restarts: a chain of their own */
#define MOTE_SIG_MCPLIFE_ \
    MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(MOTE_SIG_(2166136261UL, MOTE_MCP_DEADLINE_MAX_MS), MOTE_MCP_PROGRESS_MAX_MS), MOTE_MCP_PROGRESS_LOG_MS), MOTE_MCP_RESTART_MAX), MOTE_MCP_RESTART_MS)
#define MOTE_CONFIG_SIGNATURE ((MOTE_SIG_PROV_ * 29UL & 0xFFFFFFFFUL) ^ (MOTE_SIG_UNATT_ * 19UL & 0xFFFFFFFFUL) ^ (MOTE_SIG_BUDGET_ * 23UL & 0xFFFFFFFFUL) ^ MOTE_SIG_EDIT_ ^ MOTE_SIG_MORE_ ^ (MOTE_SIG_TLS_ * 3UL & 0xFFFFFFFFUL) ^ \
                               (MOTE_SIG_MQTT_ * 5UL & 0xFFFFFFFFUL) ^ (MOTE_SIG_WIRE_ * 7UL & 0xFFFFFFFFUL) ^ \
                               (MOTE_SIG_SVC_ * 11UL & 0xFFFFFFFFUL) ^ (MOTE_SIG_MCPHTTP_ * 13UL & 0xFFFFFFFFUL) ^ \
                               (MOTE_SIG_SMQTT_ * 17UL & 0xFFFFFFFFUL) ^ (MOTE_SIG_SMCP_ * 23UL & 0xFFFFFFFFUL) ^ \
                               (MOTE_SIG_MCPLIFE_ * 31UL & 0xFFFFFFFFUL) ^ (MOTE_SIG_MCPRES_ * 37UL & 0xFFFFFFFFUL))

#endif /* MOTE_CONFIG_H */
