/*
 * config_floors.h - every limit of mote_config.h at the lowest value its
 * #error checks accept. make check-small builds the library and the CLI
 * with it under -Werror (issue 12.6: a value the checks take must build;
 * the CLI's id format failed -Wformat-truncation with them). Built only,
 * not run: some of these are too small to hold a conversation's names.
 */
#define MOTE_MAX_JOBS 1
#define MOTE_PRUNE_BATCH 1
#define MOTE_MAX_INACTIVE_JOBS 0
#define MOTE_JOB_MAX_CONTINUATIONS 1
#define MOTE_JOB_NAME_LEN 2
#define MOTE_CONT_KEY_LEN 2
#define MOTE_JOB_ERRMSG_LEN 16
#define MOTE_MAX_TIMERS 1
/* a connection and what one turn and one MCP server need (MOTE_WATCH_RESERVE) */
#define MOTE_MAX_WATCHES 10
#define MOTE_SERVE_MAX_CONNS 1
#define MOTE_MAX_MCP_SERVERS 1
#define MOTE_SERVE_SCAN_STEP 4096
#define MOTE_SERVE_SUMMARIES 1
#define MOTE_SERVE_SECRET_WAIT_MS 0
#define MOTE_LOOP_MAX_WAIT_MS 1
#define MOTE_STORAGE_NAME_MAX 16
#define MOTE_JSON_MAX_TOKENS 16
#define MOTE_SSE_DATA_MAX 1024
#define MOTE_SSE_NAME_MAX 16
#define MOTE_HTTP_LINE_MAX 256
#define MOTE_HTTP_HEADER_MAX 256
#define MOTE_LLM_MAX_TOOL_CALLS 1
#define MOTE_LLM_MAX_BLOCKS 2
#define MOTE_LLM_TEXT_MAX 256
#define MOTE_LLM_ID_MAX 32
#define MOTE_LLM_NAME_MAX 32
#define MOTE_PROC_TAG_MAX 17
#define MOTE_NET_BUF 1024
#define MOTE_LLM_MAX_ATTEMPTS 1
#define MOTE_JOURNAL_LINE_MAX 4096
#define MOTE_CONV_ID_MAX 24
#define MOTE_MAX_CONVERSATIONS 1
#define MOTE_MAX_STREAMS 1
#define MOTE_MAX_TOOL_RUNS 1
#define MOTE_MAX_TOOLS 1
#define MOTE_CONV_ALLOWED_MAX 1
#define MOTE_TOOL_OUTPUT_MAX 1024
#define MOTE_ANSWER_TEXT_MAX 256
#define MOTE_ANSWER_REASON_MAX 256
#define MOTE_TOOL_STATE_MAX 16
#define MOTE_HISTORY_MAX 1
#define MOTE_HISTORY_LINE_MAX 64
#define MOTE_EDIT_LINE_MAX 80
#define MOTE_EDIT_HISTORY_BYTES 2
#define MOTE_MCP_RESULT_MAX 1024
#define MOTE_MCP_LINE_MAX 1024
#define MOTE_MCP_NOTE_MAX 256
#define MOTE_MCP_QUEUE_MAX 2
#define MOTE_TLS_SESSIONS 1
#define MOTE_TLS_SESSION_FILES 1
#define MOTE_TLS_READAHEAD 64
#define MOTE_TLS_CHAIN_MAX 1
#define MOTE_TLS_READ_CHUNK 512
#define MOTE_TLS_CERT_MAX 1024
#define MOTE_TLS_BUNDLE_MAX 65536
#define MOTE_TLS_ARENA 32768
#define MOTE_MQTT_PAYLOAD_MAX 1
#define MOTE_MQTT_TOPIC_MAX 8
#define MOTE_MQTT_OUT_MAX 17
#define MOTE_MQTT_INFLIGHT 1
#define MOTE_MQTT_RX_INFLIGHT 1
#define MOTE_MQTT_SUBS_MAX 1
#define MOTE_MQTT_CTL_MAX 64
#define MOTE_MQTT_RECV_BUF 64
#define MOTE_JOURNAL_RIDS 1
#define MOTE_JOURNAL_RID_MAX 1
#define MOTE_SERVE_MQTT_OUTS 1
#define MOTE_SERVE_MQTT_WAIT 1
#define MOTE_SERVE_MQTT_WAIT_BYTES 64
#define MOTE_SERVE_MQTT_STOP_MS 1
/* unattended devices */
#define MOTE_TZ_NAME_MAX 16
#define MOTE_TZ_TRANSITIONS 2
#define MOTE_TZ_TYPES 2
#define MOTE_TZ_FILE_MAX 1024
#define MOTE_SCHED_MAX 1
#define MOTE_SCHED_ID_MAX 2
#define MOTE_SCHED_PROMPT_MAX 64
#define MOTE_SCHED_ZONES 1
#define MOTE_SCHED_JUMP_MS 1000
#define MOTE_SCHED_LOG_MAX 4096
#define MOTE_BUDGET_MODEL_MAX 8
#define MOTE_BUDGET_PRICES 1
#define MOTE_BUDGET_HOLDS 1
#define MOTE_BUDGET_LOG_MAX 4096
