/* agent.h - one conversation driven through the journal, the model client
 * and the built-in tools (the CLI's side of DESIGN.md's conv module). */
#ifndef MOTE_CLI_AGENT_H
#define MOTE_CLI_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote/mote_journal.h"
#include "mote/mote_mcp.h"

#define AGENT_TEXT_MAX 49152       /* bytes of one answer's text kept */
#define AGENT_TOOL_INPUT_MAX 16384 /* bytes of one tool call's input */
#define AGENT_TOOL_OUTPUT_MAX 16384 /* bytes of one tool's output kept */

enum approval { APPROVE_ASK, APPROVE_YES, APPROVE_REFUSE };

struct agent_call {
    char id[MOTE_LLM_ID_MAX];
    char name[MOTE_LLM_NAME_MAX];
    char input[AGENT_TOOL_INPUT_MAX];
    size_t input_len;
    bool too_long;
};

struct shell_task {
    struct agent *a;
    int64_t pid;
    int out_fd;
    bool exited, killed, timed_out, eof;
    int status;
    uint32_t deadline;
    mote_watch_id watch;
    mote_timer_id timer;
    size_t len;            /* bytes kept */
    uint64_t dropped;      /* bytes over the cap */
    char out[AGENT_TOOL_OUTPUT_MAX];
};

struct agent {
    struct mote_loop *loop;
    const struct mote_port *port;
    struct mote_journal jr;
    bool open;
    enum mote_conv_state st;
    struct mote_llm_conf *conf;
    struct mote_llm_req req;
    struct mote_llm_call call;
    mote_job_id llm_job;
    mote_job_id tool_job;
    struct mote_cancel turn_cancel; /* parent of this turn's jobs */
    /* the answer being streamed */
    bool got_first;
    char text[AGENT_TEXT_MAX];
    size_t text_len;
    bool text_cut;
    struct agent_call calls[MOTE_LLM_MAX_TOOL_CALLS];
    unsigned ncalls;
    char stop[32];
    uint64_t in_tokens, out_tokens;
    /* tools */
    unsigned tool_i;
    bool awaiting_approval;
    struct shell_task shell;
    struct mote_mcp *mcp;  /* NULL without --mcp-config */
    struct mote_mcp_call mcall;
    bool tools_on;
    struct mote_tool_def all_tools[4 + MOTE_MAX_MCP_SERVERS * MOTE_MCP_MAX_TOOLS];
    /* settings */
    unsigned max_turns, turns;
    enum approval approval;
    bool json_out;         /* --output-format stream-json */
    bool color;
    bool interactive;
    bool shutting_down;    /* no new turn, no new tool */
    bool line_open;        /* stdout has an unfinished line */
    bool spinner;          /* show one while waiting for the first token */
    bool spinning;         /* it is on screen */
    unsigned spin_i;
    uint32_t tool_timeout_ms;
    char last_error[MOTE_JOB_ERRMSG_LEN];
    bool failed;           /* the last turn ended in an error */
};

/* Prepares the agent (tools on or off) for conversation journal `jr`,
 * already created or opened by the caller. */
void agent_init(struct agent *a, struct mote_loop *loop, struct mote_llm_conf *conf,
                const char *model, bool tools);

/* A new user message: journals it and starts a turn. false if busy. */
bool agent_user(struct agent *a, const char *text, size_t len);

/* /retry: sends the conversation again (after an error or a cut). */
bool agent_retry(struct agent *a);

/* Applies the recovery rules to an opened conversation: kills leftover
 * tool groups, writes synthetic results, continues by itself if the rules
 * say so. Prints what it did. */
int agent_recover(struct agent *a);

/* True while a turn runs (a request or a tool). */
bool agent_busy(const struct agent *a);

/* Cancels the running turn (Ctrl+C): the model request and any tool's
 * process group. */
void agent_cancel(struct agent *a);

/* Shutdown left the turn unfinished: the streamed text as a closed record,
 * running tools killed, the conversation marked needs_recovery. */
void agent_shutdown_cut(struct agent *a);

/* An answer to a pending approval question. */
void agent_approval(struct agent *a, bool yes);

/* Emits one stream-json event line or a message (stderr in text mode). */
void agent_emit_shutdown(struct agent *a, const char *reason, int code);

#endif
