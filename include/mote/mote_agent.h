/*
 * mote_agent.h - the agent: a session of conversations on one loop, their
 * turns (model request -> streamed answer -> approved tool calls ->
 * results -> model again), recovery on open, and one shutdown.
 *
 * A struct mote_session, owned by the caller, runs on one struct
 * mote_loop and holds up to MOTE_MAX_CONVERSATIONS open conversations.
 * Each conversation has its own journal (STATE/conversations/ID.jsonl,
 * docs/JOURNAL.md), model configuration, tools and state; at most one turn
 * runs per conversation, and different conversations run turns at the
 * same time. The buffers a model request and a tool run need come from
 * pools (MOTE_MAX_STREAMS, MOTE_MAX_TOOL_RUNS): a conversation that finds
 * its pool empty waits for a slot, in order.
 *
 * Everything the agent has to say reaches the embedder as events through
 * one callback (struct mote_event): text, tool calls and results, approval
 * questions, turn ends, recovery notes, warnings, errors and the shutdown
 * report. The library never prints, reads a terminal or the environment.
 *
 * Calling rules. Every function here is called from the loop's thread.
 * The event callback runs only from inside the calls that run a turn of
 * the loop: mote_loop_poll(), mote_loop_ready() and mote_loop_timeout()
 * (mote inside another event loop), and mote_shutdown() and
 * mote_loop_wait_jobs(), which drive it; never from inside the other
 * mote_* calls. It may call any function of this header (sending,
 * approving, cancelling): such calls record what was asked and do the
 * work later in the loop, so nothing runs re-entrantly. Pointers in an
 * event are valid during the callback only. docs/EMBEDDING.md is the
 * guide (the loop, signals, another event loop, building).
 *
 * Every state change of a conversation goes through the pure transition
 * function mote_conv_next() (the library's src/conv.h); the journal is written
 * before the effect it makes recoverable.
 */
#ifndef MOTE_AGENT_H
#define MOTE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_client.h"
#include "mote/mote_config.h"
#include "mote/mote_journal.h"
#include "mote/mote_json.h"
#include "mote/mote_loop.h"
#include "mote/mote_mcp.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mote_session;
struct mote_conv;
struct mote_budget;
struct mote_stream;
struct mote_tool_run;

/* ---- events ---------------------------------------------------------- */

enum mote_ev {
    MOTE_EV_TEXT = 1,     /* text, len: a piece of the answer as it streams */
    MOTE_EV_THINKING,     /* text, len: a piece of the model's thinking (journaled in reason
                           * records, sent back where the provider needs it) */
    MOTE_EV_STATE,        /* state: the conversation's state changed */
    MOTE_EV_APPROVAL,     /* ask_id, id, name, input: may the call run? answer with
                           * mote_conv_approve(conv, ask_id, ...) */
    MOTE_EV_TOOL_CALL,    /* id, name, input: the call runs now */
    MOTE_EV_TOOL_RESULT,  /* id, name, text, len (the whole result), is_error */
    MOTE_EV_TURN_END,     /* stop_reason, usage: the turn ended with an answer */
    MOTE_EV_CANCELLED,    /* the turn was cancelled (mote_conv_cancel) */
    MOTE_EV_RECOVERY,     /* code (enum mote_recovery_action), text: what recovery did */
    MOTE_EV_WARNING,      /* text: something the user should know; nothing failed */
    MOTE_EV_ERROR,        /* code, text: the turn failed; fatal: storage failed (the
                           * conversation cannot go on) */
    MOTE_EV_MCP,          /* name (the server), text: a line of its story */
    MOTE_EV_RECORD,       /* offset, text, len: a journal line was written (len bytes
                           * at `offset` of the conversation's file, without "\n") */
    MOTE_EV_SHUTDOWN,     /* report: mote_shutdown finished */
    MOTE_EV_NOTE,         /* code, text: something the agent did by itself (a compaction) */
    MOTE_EV_APPROVAL_EXPIRED, /* ask_id, id, name, text, timeout_ms: nobody answered the
                           * question in time; the call is refused (the model reads
                           * `text`) and the turn goes on */
    MOTE_EV_BUDGET,       /* text, until, code (MOTE_ERR_BUDGET): the spend budget is
                           * reached; the turn's next request waits (nothing is sent)
                           * until `until` (UTC seconds) and then goes on by itself
                           * (mote_session_use_budget). Once per wait */
};

struct mote_usage {
    uint64_t input_tokens;
    uint64_t output_tokens;
    uint64_t cache_read_tokens;  /* read from the provider's prompt cache */
    uint64_t cache_write_tokens; /* written to it */
};

struct mote_shutdown_report;

struct mote_event {
    enum mote_ev type;
    struct mote_conv *conv;   /* NULL for session events (MCP, SHUTDOWN) */
    const char *text;         /* NUL-terminated; `len` bytes */
    size_t len;
    const char *id;           /* tool call id */
    const char *name;         /* tool name, or MCP server name */
    const char *input;        /* the call's input: a JSON object */
    size_t input_len;
    uint32_t ask_id;          /* APPROVAL */
    bool is_error;            /* TOOL_RESULT */
    bool fatal;               /* ERROR: storage failed */
    int code;                 /* ERROR: enum mote_err; RECOVERY: the action */
    enum mote_conv_state state;
    const char *stop_reason;  /* TURN_END: end_turn, max_tokens, ... */
    struct mote_usage usage;  /* TURN_END: the turn's last request */
    struct mote_usage turn_usage; /* TURN_END: every request of the turn (tool rounds) */
    uint64_t offset;          /* RECORD */
    const struct mote_shutdown_report *report;
    uint32_t timeout_ms;      /* APPROVAL, APPROVAL_EXPIRED: the question's deadline, ms
                               * after it was asked (0: none) */
    int64_t until;            /* BUDGET: when the budget frees, UTC seconds */
};

typedef void (*mote_event_fn)(void *arg, const struct mote_event *ev);

/* Event `ev` as one line of JSON to `sink` (the stream-json format of
 * `mote --output-format stream-json`, docs/CLI.md, for any front door
 * that streams events to a program): "text" and "thinking" {text};
 * "tool_call" {id, name, input} (an approval's call too); "tool_result"
 * {id, name, is_error, text}; "turn_end" {stop_reason, usage:
 * {input_tokens, output_tokens, and cache_read_input_tokens,
 * cache_creation_input_tokens when there are any}}; "error" {code
 * (mote_err_name), message}. Returns 1 (written), 0 (another event:
 * nothing written) or the sink's error. */
int mote_event_json(mote_sink_fn sink, void *arg, const struct mote_event *ev);

/* True when a turn's `stop_reason` (MOTE_EV_TURN_END) says the answer is
 * not finished: max_tokens, refusal, content_filter,
 * model_context_window_exceeded, pause_turn (a one-shot run exits 3). */
bool mote_stop_unfinished(const char *stop_reason);

/* ---- tools ------------------------------------------------------------ */

/* A tool runs each call as a job: `step` is the task's step (see
 * mote_loop.h: MOTE_STEP_*, or < 0 to fail with a message set by
 * mote_tool_fail). It sees cancellation through mote_job_cancelled(loop,
 * self) and must stop when it is set; run->deadline is when it must have
 * ended (mote_tool_timed_out). It writes its result with mote_tool_out()
 * (capped at run->out_cap; what does not fit is counted, and the agent
 * says so to the model). `release` (may be NULL) frees what the run holds;
 * it must not block. */
struct mote_tool {
    const char *name;         /* [A-Za-z0-9_-], 1..64 bytes, without "__" */
    const char *description;
    const char *schema;       /* a JSON Schema object (text) */
    int (*step)(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run);
    void (*release)(struct mote_loop *loop, struct mote_tool_run *run);
    void *arg;                /* the tool's own (run->tool->arg) */
    unsigned flags;           /* MOTE_TOOL_* */
};

#define MOTE_TOOL_NO_APPROVAL 0x1u /* runs without asking (it changes nothing) */
#define MOTE_TOOL_OWN_START 0x2u   /* journals its call's start itself: one tool_start, by
                                    * mote_tool_started_process, before anything of the call
                                    * runs (a process held until then: proc_spawn_held); the
                                    * agent writes none for it. Without it the agent writes the
                                    * call's tool_start before the tool's first step */

/* One call being run (from the session's pool). */
struct mote_tool_run {
    bool used;
    const struct mote_tool *tool;  /* NULL for an MCP tool */
    struct mote_session *session;
    struct mote_conv *conv;
    const char *call_id;
    const char *input;        /* the call's input: a JSON object, as journaled */
    size_t input_len;
    uint32_t deadline;        /* loop clock */
    uint32_t timeout_ms;      /* what the deadline came from */
    char *out;                /* the result */
    size_t out_len, out_cap;
    uint64_t out_dropped;     /* bytes of output over out_cap */
    bool out_keep_end;        /* the tool's: past out_cap, keep the output's start and its
                               * end (the last bytes) and drop the middle (mote_tool_out) */
    bool out_ended;           /* the kept end was put in place: nothing more is kept */
    size_t out_head;          /* keeping the end: bytes of the start (0: nothing dropped
                               * yet); out[out_head, out_cap) holds the end, a ring */
    size_t out_ring;          /* where the oldest byte of the end is in that ring */
    bool is_error;
    struct mote_json json;    /* the input parsed (token 0: the object) */
    char in_buf[MOTE_JOURNAL_LINE_MAX];
    char out_buf[MOTE_TOOL_OUTPUT_MAX + 256]; /* room for the notes after the output */
    union {
        struct mote_mcp_call mcp;                /* an MCP server's tool */
        uint64_t builtin[16];                    /* a built-in tool's (the library's) */
        unsigned char user[MOTE_TOOL_STATE_MAX]; /* an embedder's tool */
    } st;
};

/* Appends `len` bytes to the run's result; what passes run->out_cap is
 * counted in run->out_dropped. Past out_cap, a run with out_keep_end set
 * keeps the start (half of out_cap) and the latest bytes (the rest), in
 * the same buffer: when the result is read (the first note, the run's
 * end) a line "[... N bytes of output dropped here ...]" stands between
 * them, both cut at whole characters and, near the cut, whole lines. */
void mote_tool_out(struct mote_tool_run *run, const char *data, size_t len);

/* Appends a NUL-terminated string. */
void mote_tool_outs(struct mote_tool_run *run, const char *s);

/* Appends a note about the output on a line of its own: `a`, then, where
 * `b` is not NULL, the number `num` and `b` ("[timed out after ", 500,
 * " ms]"). It may pass run->out_cap (the buffer keeps room for notes); a
 * note that does not fit even there is left out. */
void mote_tool_note(struct mote_tool_run *run, const char *a, uint64_t num, const char *b);

/* For a step about to return < 0: the message the result will carry. */
void mote_tool_fail(struct mote_loop *loop, mote_job_id self, const char *msg);

/* True once run->deadline has passed. */
bool mote_tool_timed_out(const struct mote_loop *loop, const struct mote_tool_run *run);

/* Unescapes string member `key` of the input into `out` (cap bytes).
 * Returns the length, or < 0 (missing, not a string, too long, or holding
 * a NUL - \u0000 - where C would end it: MOTE_ERR_BADMSG). */
int mote_tool_arg(const struct mote_tool_run *run, const char *key, char *out, size_t cap);

/* Records that the call started a process (its handle from proc_spawn or
 * proc_spawn_held): a tool_start record with its group, the group
 * leader's start time and its tag, synced, so a crash from now on is
 * recovered by killing what is left of it. Never waits: while the port
 * does not know the group yet (proc_group says MOTE_ERR_AGAIN) nothing is
 * written and MOTE_ERR_AGAIN is returned - call it again on a later step;
 * a process started with proc_spawn_held waits meanwhile, and is let go
 * (proc_go) once this returns 0. A port that cannot hold a start gives
 * the record at once, with the tag and no group if it is not known yet.
 * For a tool with MOTE_TOOL_OWN_START this is its call's one tool_start;
 * for another, a second one after the agent's (recovery takes the last).
 * Returns 0, MOTE_ERR_AGAIN, or a storage error. */
int mote_tool_started_process(struct mote_tool_run *run, int64_t pid);

/* The built-in tools, built on the port: "shell" (processes: a new
 * process group under the port's supervisor, stdout and stderr together,
 * killed as a group on cancel, timeout and exit), "read_file",
 * "write_file" (atomic, keeping the file's mode, owner and group, through
 * a symlink to its target; refusing what is not a regular file, a
 * read-only file and one with other hard links: fs_replace's contract),
 * "list_dir" and "edit_file" (replaces one unique exact string, atomic
 * like write_file) (the file system group). read_file takes an offset and
 * a length, ends on a whole UTF-8 character and says when the file's size
 * is unknown. */
#define MOTE_TOOL_SHELL 0x1u
#define MOTE_TOOL_READ_FILE 0x2u
#define MOTE_TOOL_WRITE_FILE 0x4u
#define MOTE_TOOL_LIST_DIR 0x8u
#define MOTE_TOOL_EDIT_FILE 0x10u
#define MOTE_TOOLS_BUILTIN 0x1Fu

/* Registers the built-in tools in `which` that the session's port can
 * run (shell needs the process group, the others the file-system group;
 * the ones it cannot are left out). Returns how many were added, or
 * MOTE_ERR_FULL. */
int mote_session_add_builtin_tools(struct mote_session *s, unsigned which);

/* Registers `tool` (it must outlive the session). Names are unique
 * across the registry and the MCP servers' tools, which are offered as
 * SERVER__TOOL: a registry name never holds "__". Returns 0,
 * MOTE_ERR_EXIST (a tool of that name), MOTE_ERR_INVAL (a bad name: empty,
 * over 64 bytes, a byte outside [A-Za-z0-9_-], or "__"; or no step or
 * schema) or MOTE_ERR_FULL (MOTE_MAX_TOOLS). */
int mote_session_add_tool(struct mote_session *s, const struct mote_tool *tool);

/* ---- the session ------------------------------------------------------ */

struct mote_session_conf {
    mote_event_fn on_event;
    void *arg;
    /* The environment of tool processes (NULL: the process's own, which
     * should no longer hold API keys: read them, then remove them). */
    const char *const *tool_env;
    uint32_t tool_timeout_ms;     /* deadline of one tool call; 0: MOTE_TOOL_TIMEOUT_MS */
};

/* Fills `c` with the defaults: every member 0 or NULL (the tool deadline
 * MOTE_TOOL_TIMEOUT_MS, the process's own environment for tools). Set
 * on_event after it. */
void mote_session_conf_defaults(struct mote_session_conf *c);

/* Approval policy of a conversation (for calls of tools that need it). */
enum mote_approval {
    MOTE_APPROVE_ASK = 0, /* ask the embedder: MOTE_EV_APPROVAL */
    MOTE_APPROVE_ALLOW,   /* every call runs */
    MOTE_APPROVE_DENY,    /* every call is refused; the model reads deny_reason */
};

/* One rule of a conversation's per-tool policy: the calls of tool `name`
 * (as the model sees it: "shell", "files__read") are decided by
 * `approval`, whatever the conversation's default and the tool's
 * MOTE_TOOL_NO_APPROVAL flag say. */
struct mote_tool_rule {
    const char *name;
    enum mote_approval approval;
};

/* A per-tool policy from JSON (a service's --policy file): {"default":
 * "ask"|"allow"|"deny", "timeout": "10m", "tools": {"NAME": "allow", ...}}
 * ("timeout": an approval's deadline, mote_duration_parse; "0" or
 * "none": none), parsed from a
 * buffer (the frontend reads the file). Rules keep the order of the
 * file; names are 1 to 64 bytes. */
struct mote_policy {
    bool has_default;                  /* "default" was given */
    enum mote_approval approval;       /* ... and says this */
    bool has_timeout;                  /* "timeout" was given: */
    uint32_t timeout_ms;               /* ... a question's deadline (0: none) */
    unsigned nrules;
    struct mote_tool_rule rules[MOTE_SERVE_RULES_MAX];
    char names[MOTE_SERVE_RULES_MAX][65]; /* what rules[i].name points to */
    struct mote_json json;
};

/* Parses policy `text` (len bytes) into `pol` (the rules point into it:
 * it must outlive their use). Returns 0, or < 0 with one line in `err`
 * (cap bytes): MOTE_ERR_BADMSG (not the format: not an object, a value
 * that is not ask, allow or deny, a bad name), MOTE_ERR_TOO_LARGE (over
 * MOTE_JSON_MAX_TOKENS values), MOTE_ERR_FULL (more than
 * MOTE_SERVE_RULES_MAX rules). Never blocks, allocates nothing. */
int mote_policy_parse(struct mote_policy *pol, const char *text, size_t len, char *err,
                      size_t cap) MOTE_MUST_CHECK;

/* The longest approval deadline taken (24 days: the loop's timers count ms
 * in 32 bits). */
#define MOTE_APPROVAL_TIMEOUT_MAX_MS 2073600000u

/* "ask", "allow" or "deny" into *a: 0, or MOTE_ERR_INVAL. */
int mote_approval_parse(const char *s, enum mote_approval *a);

enum mote_answer {
    MOTE_ANSWER_NO = 0,
    MOTE_ANSWER_YES,
    MOTE_ANSWER_ALWAYS,   /* yes, and for every later call of this tool in this
                           * conversation (journaled: kept on reopening) */
};

struct mote_conv_conf {
    const struct mote_llm_conf *llm; /* endpoint, key, timeouts (must outlive the conv) */
    const char *model;
    const char *system;       /* the system prompt, or NULL */
    uint32_t max_tokens;      /* 0: 4096 */
    unsigned max_turns;       /* model requests per user message; 0: 25 */
    bool tools;               /* offer the session's tools */
    bool mcp;                 /* and those of the session's MCP servers */
    enum mote_approval approval; /* for tools without a rule that need approval */
    const char *deny_reason;  /* what a refused call's result says (DENY) */
    const struct mote_tool_rule *rules; /* per-tool policy (NULL: none; must outlive the
                               * conv): the first rule naming a tool decides; an
                               * "always" answer (journaled) then allows an ASK tool,
                               * never a DENY one */
    unsigned nrules;
    uint32_t context_window;  /* the model's context, tokens (0: unknown, never compacts
                               * by itself) */
    uint32_t thinking_budget; /* Anthropic: extended thinking with this budget of tokens (0:
                               * not asked) */
    unsigned compact_percent; /* compact when a request used this much of it; 0: 80 */
    uint32_t approval_timeout_ms; /* a question nobody answers within this is answered no
                               * by itself: the call is refused with "denied: nobody
                               * approved within ..." (journaled like any answer) and
                               * the turn goes on; 0: it waits for ever */
};

/* Fills `c` with the defaults: max_tokens 4096, max_turns 25, no tools,
 * approval MOTE_APPROVE_ASK, no rules, no system prompt, never compacts
 * by itself (every member 0 or NULL). Set llm and model after it. */
void mote_conv_conf_defaults(struct mote_conv_conf *c);

/* Pending calls of one conversation's answer (inputs stay in the journal). */
struct mote_conv_call {
    char id[MOTE_LLM_ID_MAX];
    char name[MOTE_LLM_NAME_MAX];
    uint64_t rec_off;         /* the journal record holding its input */
    int16_t rec_idx;          /* index in that record's "calls", -1: a call record */
    bool bad_input;           /* not a JSON object, or an ambiguous one (`why`): refused
                               * when its turn comes */
    bool cut_off;             /* its input was cut by the token limit (max_tokens) */
    bool too_big;             /* its input is over what one journal record holds (bytes,
                               * or JSON values: MOTE_JSON_MAX_TOKENS) */
    bool started;             /* a run began (tool_start written) */
    bool has_result;
    char why[64];             /* an ambiguous input's fault: "duplicate key \"NAME\"", "a NUL
                               * (\u0000) in member \"NAME\"" (mote_json_strict); "" */
};

struct mote_conv {
    struct mote_session *s;
    bool used;
    enum mote_conv_state st;
    enum mote_conv_state st_told;  /* last state the embedder was told */
    struct mote_conv_conf conf;
    struct mote_journal jr;
    struct mote_cancel turn;       /* this turn's flag (child of the session's) */
    unsigned turns;                /* model requests in this turn */
    unsigned autos;                /* automatic continues in a row */
    uint32_t queue_seq;            /* order among waiters for a pool slot */
    /* the answer of the last request */
    struct mote_stream *stream;
    mote_job_id llm_job;
    bool got_first;
    char stop[32];
    struct mote_usage usage;       /* of the last request */
    struct mote_usage total;       /* of every request journaled */
    struct mote_usage turn_usage;  /* of this turn's requests */
    unsigned ncalls, call_i;
    struct mote_conv_call calls[MOTE_LLM_MAX_TOOL_CALLS];
    /* tools */
    const struct mote_tool *run_tool; /* what call call_i runs, resolved at dispatch: a
                                   * registry tool, or NULL for an MCP server's */
    struct mote_tool_run *run;
    mote_job_id tool_job;
    uint32_t ask_id;               /* the question being asked (0: none) */
    bool want_run;                 /* waiting for a run slot */
    enum mote_answer answer;       /* given for ask_id */
    bool answered;
    char refusal[200];             /* the reason given with a no */
    bool expired;                  /* the no is the question's deadline (approval_timeout_ms) */
    /* the spend budget (mote_session_use_budget) */
    uint64_t budget_id;            /* the request reserved and not settled (0: none) */
    bool want_budget;              /* the next request waits for the budget */
    bool budget_told;              /* MOTE_EV_BUDGET was told for this wait */
    bool ask_timed;                /* the question has a deadline, at ask_deadline */
    uint32_t ask_deadline;         /* loop clock */
    unsigned nallowed;             /* tools answered "always" */
    char allowed[MOTE_CONV_ALLOWED_MAX][MOTE_LLM_NAME_MAX];
    /* deferred work (done from the loop: mote_session_defer) */
    bool want_send;                /* waiting for a stream slot */
    bool want_cancel;
    bool want_next;                /* go on with the tool round */
    /* compaction */
    bool compacting;               /* the request is the summarising one */
    bool compact_resume;           /* the turn goes on after it */
    bool compact_want;             /* asked for (mote_conv_compact) */
    unsigned compact_n;            /* index of the request's last part (the instruction) */
    bool compact_shrink;           /* the summarising request's tool results are cut to fit */
    /* over the context window (a request refused as too long) */
    bool ovf_tried;                /* this turn compacted after one already (once a turn) */
    uint32_t ctx_learned;          /* the window a server gave, tokens (0: none) */
    uint32_t ovf_used;             /* the tokens it counted in the refused request (0: none) */
    uint64_t ovf_bytes;            /* that request's body, bytes */
    /* recovery */
    struct mote_recovery rec;
    bool rec_pending;
    enum mote_recovery_action recovered; /* what opening it decided (mote_conv_recovery) */
    /* the last failure */
    char last_error[MOTE_JOB_ERRMSG_LEN];
    bool storage_failed;
    bool err_pending;              /* an error to tell from the loop */
    bool err_fatal;
    int err_code;
    bool current_failed;           /* STATE/current could not be written: a warning */
    bool loading;                  /* the slot is a load's (mote_conv_load_*), not open yet */
};

/* The buffers of one model request, while it streams (the client, the
 * answer's text and tool inputs until they are journaled), and the
 * connection kept from one request to the next: the library's
 * struct mote_stream, kept here as an area of its size so that a session
 * can be allocated statically. */
#define MOTE_STREAM_SIZE                                                                          \
    (sizeof(struct mote_llm_call) + sizeof(struct mote_llm_req) + sizeof(struct mote_conn) +      \
     (MOTE_MAX_TOOLS + MOTE_MAX_MCP_SERVERS * MOTE_MCP_MAX_TOOLS + MOTE_MCP_RES_TOOLS) *          \
         sizeof(struct mote_tool_def) +                                                           \
     MOTE_ANSWER_TEXT_MAX + MOTE_JOURNAL_LINE_MAX + MOTE_LLM_MAX_TOOL_CALLS * 11u + 96u +       \
     MOTE_ANSWER_REASON_MAX + MOTE_LLM_MAX_TOOL_CALLS * 6u + 32u)

#ifdef __cplusplus
#define MOTE_ALIGN_MAX alignas(max_align_t)
#else
#define MOTE_ALIGN_MAX _Alignas(max_align_t)
#endif
struct mote_stream_area {
    MOTE_ALIGN_MAX unsigned char bytes[MOTE_STREAM_SIZE];
};

enum mote_sd_mode {
    MOTE_SD_CANCEL = 0, /* cancel every running turn (Ctrl+C, /quit) */
    MOTE_SD_DRAIN,      /* let running answers finish; start nothing new (SIGTERM) */
};

struct mote_shutdown_req {
    const char *reason;    /* static text for the report ("SIGTERM", "quit", ...) */
    enum mote_sd_mode mode;
    uint32_t timeout_ms;   /* how long to wait for turns to stop or finish */
    bool force;            /* stop waiting now (the second Ctrl+C) */
};

struct mote_shutdown_report {
    const char *reason;
    enum mote_sd_mode mode;
    bool forced;              /* a forced request cut the waits short */
    bool timed_out;           /* the timeout passed with work unfinished */
    unsigned jobs_cancelled;  /* jobs asked to stop */
    unsigned jobs_left;       /* jobs still active at the end (ignored their cancel) */
    unsigned conversations_marked; /* marked needs_recovery */
    unsigned mcp_left;        /* MCP servers that had not exited (their supervisor ends them) */
    int history_err;          /* 0 or why the history could not be saved */
    int storage_err;          /* 0 or the first storage failure of a journal */
    char cut[MOTE_JOB_ERRMSG_LEN];  /* what the timeout cut ("model request (ID)", ...) */
    char left[MOTE_JOB_ERRMSG_LEN]; /* what still ran after its cancel */
};

struct mote_session {
    struct mote_loop *loop;
    const struct mote_port *port;
    struct mote_session_conf conf;
    struct mote_cancel cancel;   /* parent of every turn's flag */
    mote_timer_id defer_timer;   /* 0-ms timer that runs deferred work */
    mote_timer_id ask_timer;     /* the earliest approval deadline of the conversations */
    struct mote_budget *budget;  /* the spend budget (NULL: none) */
    mote_timer_id budget_timer;  /* a wait for it ends */
    /* the library's budget hooks (mote_session_use_budget sets them: a
     * program without a budget links none of it) */
    int (*budget_gate)(struct mote_conv *c);
    void (*budget_done)(struct mote_conv *c, bool answered);
    uint32_t queue_seq;
    unsigned ntools;
    const struct mote_tool *tools[MOTE_MAX_TOOLS];
    struct mote_mcp *mcp;
    unsigned in_api;             /* inside an API call: events wait for the loop */
    bool history_used;           /* mote_history_add was called: saved at shutdown */
    int64_t lock_holder;         /* after MOTE_ERR_LOCKED from mote_conv_open: who has
                                  * it open (a process id; -1: unknown) */
    char error[MOTE_JOB_ERRMSG_LEN]; /* mote_session_error */
    struct mote_llm_memo llm_memo; /* keys the model servers refused or needed, per origin */
    /* shutdown */
    uint8_t sd_phase;            /* the library's enum mote_sd_phase */
    struct mote_shutdown_req sd;
    uint32_t sd_deadline;
    uint32_t sd_cut_until;
    mote_timer_id sd_timer;
    struct mote_shutdown_report report;
    /* the library's hooks: the hub's deferred work, the shutdown's next step
     * (set by the files that own them, called by lower ones) */
    void (*run_deferred)(struct mote_session *s);
    void (*shutdown_step)(struct mote_session *s);
    struct mote_jbuf jbuf;       /* the journals' shared working memory */
    struct mote_conv conv[MOTE_MAX_CONVERSATIONS];
    struct mote_stream_area streams[MOTE_MAX_STREAMS];
    struct mote_tool_run runs[MOTE_MAX_TOOL_RUNS];
};

/* Prepares `s` on `loop` (which must outlive it). The built-in tools are
 * not registered yet (mote_session_add_builtin_tools). Returns 0, or
 * MOTE_ERR_INVAL (no callback, or a port without storage). */
int mote_session_init(struct mote_session *s, struct mote_loop *loop,
                      const struct mote_session_conf *conf) MOTE_MUST_CHECK;

/* Releases what the session holds (journals are closed; jobs still active
 * are left to mote_loop_deinit). Call after mote_shutdown. */
void mote_session_deinit(struct mote_session *s);

/* Offers the tools of MCP servers `m` (started by the caller with
 * mote_mcp_start_all; it must outlive the session) to conversations whose
 * conf has `mcp`; mote_shutdown disconnects them. Their log lines become
 * MOTE_EV_MCP events. */
void mote_session_use_mcp(struct mote_session *s, struct mote_mcp *m);

/* Holds every conversation's model requests to budget `b` (mote_budget.h,
 * opened by the caller; it must outlive the session; NULL: none): each
 * request is reserved before it is sent and settled when it ends; when
 * the budget is reached the turn waits (MOTE_EV_BUDGET; busy, nothing
 * sent) and goes on by itself once it frees, or is cancelled (the
 * shutdown marks it for recovery, as a turn waiting for a slot). A budget
 * whose journal cannot be written sends nothing: the turn fails. */
void mote_session_use_budget(struct mote_session *s, struct mote_budget *b);

/* True while any conversation's turn runs or waits for an answer. */
bool mote_session_busy(const struct mote_session *s);

/* ---- conversations ---------------------------------------------------- */

/* Gives loaded conversation `c` new settings (a reload of the frontend's
 * configuration: another model, key, policy, limits) for its next turn.
 * Only between turns: the settings of a turn that runs stay its own until
 * it ends. `conf` is copied; what it points to must outlive the
 * conversation's use of it (its next turn's end). Returns 0,
 * MOTE_ERR_BUSY (a turn runs or waits for an answer: call again once it
 * ended), or MOTE_ERR_NOTSUP (as mote_conv_create: an https:// URL
 * without TLS). Never blocks. */
int mote_conv_set_conf(struct mote_conv *c, const struct mote_conv_conf *conf) MOTE_MUST_CHECK;

/* Starts a new conversation (a new journal; `id` NULL makes one from the
 * time and random bytes) and makes it the most recent (STATE/current).
 * Returns 0 and *out, MOTE_ERR_FULL (MOTE_MAX_CONVERSATIONS open),
 * MOTE_ERR_SHUTDOWN, MOTE_ERR_NOTSUP (an https:// URL, and the port has
 * no TLS: a library built with TLS=none; mote_session_error says so), or
 * a storage failure. */
int mote_conv_create(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                     struct mote_conv **out) MOTE_MUST_CHECK;

/* A conversation of calls from outside the model (mote serve's MCP
 * server): its journal is a calls journal (docs/JOURNAL.md, version 3);
 * each turn is one call, mote_conv_call, under the conversation's policy
 * and approval like a model's; it never sends anything to a model
 * (mote_conv_send, mote_conv_retry and mote_conv_compact answer
 * MOTE_ERR_NOTSUP), it is never the most recent conversation
 * (STATE/current), and recovery never runs a call again nor goes on by
 * itself: a call cut by a crash gets an error result. Returns as
 * mote_conv_create. */
int mote_conv_create_calls(struct mote_session *s, const struct mote_conv_conf *conf,
                           const char *id, struct mote_conv **out) MOTE_MUST_CHECK;

/* True if `c` is a calls conversation (mote_conv_create_calls; a journal
 * opened says so in its open record). */
bool mote_conv_calls(const struct mote_conv *c);

/* Runs tool `name` with `input` (len bytes: a JSON object; NULL or 0:
 * {}) in calls conversation `c`: the input is checked (no member twice,
 * no NUL in a string: MOTE_ERR_BADMSG, with c->last_error saying why)
 * and journaled canonically in an assistant record with this one call,
 * synced, before this returns; then the call goes through the
 * conversation's policy (MOTE_EV_APPROVAL when it asks), runs
 * (MOTE_EV_TOOL_CALL, MOTE_EV_TOOL_RESULT with the whole result) and the
 * turn ends (MOTE_EV_TURN_END, stop_reason "call"), all from the loop.
 * The call's id (mote's own, "call_mote_" and 16 hex digits) goes into
 * `call_id` (cap at least 27 bytes): the events' id. mote_conv_cancel
 * stops it. Returns 0, MOTE_ERR_NOTSUP (not a calls conversation),
 * MOTE_ERR_BUSY (a call runs), MOTE_ERR_SHUTDOWN, MOTE_ERR_INVAL (a name
 * that is empty, too long or not of [A-Za-z0-9_-]), MOTE_ERR_BADMSG,
 * MOTE_ERR_TOO_LARGE (over what one journal record or
 * MOTE_JSON_MAX_TOKENS holds), or a storage failure. */
int mote_conv_call(struct mote_conv *c, const char *name, const char *input, size_t len,
                   char *call_id, size_t cap) MOTE_MUST_CHECK;

/* What mote_session_list tells of one conversation on disk. */
struct mote_conv_info {
    const char *id;
    uint64_t bytes;                      /* of its complete records */
    enum mote_recovery_action state;     /* what opening it would do (IDLE: nothing) */
    bool loaded;                         /* open in this session */
    int64_t holder;                      /* open in another process: its id (-1: unknown) */
    bool torn;                           /* ends in a torn record (repaired on open) */
    bool damaged;                        /* cannot be opened: damage at bad_line */
    bool newer;                          /* written by a newer mote (journal format): left alone */
    uint32_t bad_line;
    unsigned user_messages;
    char first[64];                      /* the first user message's start, one line */
    bool not_file;                       /* not a regular file (a symlink, a FIFO): never
                                          * opened, left alone; damaged is set too */
    int64_t mtime;                       /* its journal's last change, seconds of the
                                          * real-time clock (0: the port cannot tell) */
    bool calls;                          /* a calls journal (mote_conv_create_calls) */
};

/* True if conversation `c` is finished: nothing for recovery to do, whole,
 * and open nowhere (here or in another process). Only finished ones are
 * ever removed, and only they count against a retention limit. */
bool mote_conv_info_finished(const struct mote_conv_info *c);

/* What conversation `c` is, in a few words for a listing, into `buf`
 * (`cap` bytes; 32 hold every one): "idle", "needs recovery",
 * "interrupted tool", "open here", "open (pid N)", "open elsewhere",
 * "damaged (line N)", "newer format", "not a regular file". Returns buf. */
const char *mote_conv_info_say(const struct mote_conv_info *c, char *buf, size_t cap);

/* Calls `fn` for each conversation in STATE/conversations (in no
 * particular order; return non-zero to stop). Each journal is read, never
 * written (one another process holds is safe). Returns 0 or a storage
 * failure. Uses the session's journal scratch: not from inside a turn's
 * event callback. */
int mote_session_list(struct mote_session *s, int (*fn)(void *arg, const struct mote_conv_info *c),
                      void *arg);

/* The same for conversation `id` alone: `fn` is called once. Returns 0,
 * MOTE_ERR_NOENT (none, or an empty file), MOTE_ERR_INVAL (not an id) or
 * a storage failure. Same scratch rule as mote_session_list. */
int mote_session_info(struct mote_session *s, const char *id,
                      int (*fn)(void *arg, const struct mote_conv_info *c), void *arg);

/* Removes conversation `id` from disk, if it is finished: MOTE_ERR_BUSY
 * if it is open here, needs recovery, ends torn, is damaged or is not a
 * regular file (those stay for the user), MOTE_ERR_LOCKED if another
 * process has it open,
 * MOTE_ERR_NOENT if there is none. */
int mote_session_remove(struct mote_session *s, const char *id);

/* How many journals STATE/conversations holds and their bytes, from the
 * storage alone (none is read; an empty file does not count): the cheap
 * first look of retention. Returns 0, or the listing's failure
 * (MOTE_ERR_NOENT: no conversation was ever made). */
int mote_session_tally(const struct mote_session *s, unsigned long *count, uint64_t *bytes);

/* What mote_session_prune removed. */
struct mote_prune_report {
    unsigned long count;
    uint64_t bytes;
};

/* Retention: removes the oldest finished conversations (by their
 * journals' last change, st_time; by name where the port cannot tell)
 * until at most `keep` finished ones are left (0: any number) and they
 * take at most `keep_bytes` (0: any size). A conversation that needs
 * recovery, is torn, damaged, of a newer format or open (here or in
 * another process) is never removed and does not count. Within the limits
 * no journal is read (their sizes are enough). Same scratch rule as
 * mote_session_list. Returns 0 (*out says what went) or a storage
 * failure. */
int mote_session_prune(struct mote_session *s, unsigned long keep, uint64_t keep_bytes,
                       struct mote_prune_report *out);

/* Opens conversation `id` (NULL: the most recent one, from
 * STATE/current) and applies recovery (docs/JOURNAL.md): leftover tool
 * processes are killed, interrupted tool calls get their error results, a
 * turn cut short continues by itself. What it did is told as
 * MOTE_EV_RECOVERY events from the next loop turn. Returns 0 and *out,
 * MOTE_ERR_NOENT (no such conversation, or none yet), MOTE_ERR_CORRUPT
 * (damage before the last line: *out is NULL, the file untouched; the
 * line is in `bad_line` if not NULL), MOTE_ERR_NOTSUP (a newer journal
 * format: untouched), MOTE_ERR_BUSY (already open),
 * MOTE_ERR_LOCKED (another process has it open: nothing was touched, not
 * even its tools; s->lock_holder names the process), MOTE_ERR_FULL,
 * MOTE_ERR_NOTSUP (as mote_conv_create), or a storage failure.
 * `repaired`, if not NULL, tells whether a torn last record was cut off
 * (kept in ID.jsonl.torn); mote_conv_recovery(*out) tells what recovery
 * it decided. */
int mote_conv_open(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                   struct mote_conv **out, uint32_t *bad_line, bool *repaired) MOTE_MUST_CHECK;

/* mote_conv_open in steps, for a program that serves others from the same
 * loop (mote serve): the journal is checked and recovery decided in one
 * pass, `budget` bytes a call, so a long conversation never holds the
 * loop. The load keeps a conversation slot (not open yet: mote_conv_find
 * does not see it) and the journal's lock from its begin to its end.
 * Caller-owned; one per conversation being opened. */
struct mote_conv_load {
    struct mote_session *s;
    struct mote_conv *c;           /* the slot it fills */
    struct mote_jcheck check;
    struct mote_recover_walk walk;
    bool active;                   /* begun, not ended */
};

/* Begins opening `id` (NULL: the most recent): the slot taken, the file
 * opened and locked, nothing read. Returns 0, or what mote_conv_open
 * returns before it reads (MOTE_ERR_SHUTDOWN, MOTE_ERR_NOTSUP,
 * MOTE_ERR_BUSY - open, or being loaded -, MOTE_ERR_FULL, MOTE_ERR_NOENT,
 * MOTE_ERR_LOCKED with s->lock_holder, a storage failure). */
int mote_conv_load_begin(struct mote_session *s, const struct mote_conv_conf *conf,
                         const char *id, struct mote_conv_load *ld) MOTE_MUST_CHECK;

/* Reads on: whole lines until `budget` bytes were read (a line over
 * MOTE_JOURNAL_LINE_MAX is read a chunk per call). Returns 1 while there
 * is more; 0 once the conversation is open, as mote_conv_open leaves it
 * (*out, `bad_line`, `repaired`; recovery runs from the next loop turn);
 * or mote_conv_open's failure (the load then ended: file closed, slot
 * free). Blocks no longer than its reads (and, at the end, the repair
 * of a torn tail). */
int mote_conv_load_step(struct mote_conv_load *ld, size_t budget, struct mote_conv **out,
                        uint32_t *bad_line, bool *repaired) MOTE_MUST_CHECK;

/* Ends a load that is not finished: its file closed, its lock dropped,
 * the slot free. A finished, failed or ended load may be ended again. */
void mote_conv_load_end(struct mote_conv_load *ld);

/* What mote_conv_open decided for conversation `c`: MOTE_RECOVER_IDLE
 * (nothing was unfinished; also for a conversation made by
 * mote_conv_create), MOTE_RECOVER_CONTINUE (the answer that was cut short
 * is asked for again, by itself), MOTE_RECOVER_TOOL_INTERRUPTED (a tool
 * was cut off: its call got an error result, the user retries),
 * MOTE_RECOVER_RESUME_TOOLS (calls that never started go on, approval as
 * usual) or MOTE_RECOVER_LIMIT (it would continue, but the automatic
 * continues are used up: the user retries). Set when mote_conv_open
 * returns; the work itself runs from the next loop turn and is told as
 * MOTE_EV_RECOVERY events. */
enum mote_recovery_action mote_conv_recovery(const struct mote_conv *c);

/* Why the last mote_conv_create or mote_conv_open of session `s` failed,
 * in a sentence, when its code alone does not say it ("" otherwise): an
 * https:// URL on a library built without TLS names the build option. */
const char *mote_session_error(const struct mote_session *s);

/* Sends a user message: it is journaled (durable) before this returns,
 * and the turn starts. Returns 0, MOTE_ERR_BUSY (a turn runs),
 * MOTE_ERR_INVAL (empty), MOTE_ERR_SHUTDOWN, or a storage failure. */
int mote_conv_send(struct mote_conv *c, const char *text, size_t len) MOTE_MUST_CHECK;

/* Sends the conversation again (after an error, a cancel or a turn
 * limit). Only a conversation whose request would end with something for
 * the model to answer (a user message, tool results, a summary:
 * mote_journal_retryable) is sent again. Returns 0, MOTE_ERR_ALREADY
 * (nothing to retry: the last answer is complete, or nothing was said;
 * nothing is written or sent), MOTE_ERR_BUSY, MOTE_ERR_SHUTDOWN or a
 * storage failure. */
int mote_conv_retry(struct mote_conv *c) MOTE_MUST_CHECK;

/* Cancels the running turn: the model request and any tool stop; what
 * streamed so far is journaled as an interrupted answer, tool calls not
 * run get "cancelled" results, and the turn ends (a reopening never sends
 * it again). MOTE_EV_CANCELLED follows. Returns 0 or MOTE_ERR_ALREADY
 * (nothing runs). */
int mote_conv_cancel(struct mote_conv *c);

/* Answers approval question `ask_id` (from MOTE_EV_APPROVAL). `reason`
 * (may be NULL) goes to the model with a no. Returns 0, or
 * MOTE_ERR_STALE if that question is not the one pending (an answer
 * typed before the question was asked answers nothing). */
int mote_conv_approve(struct mote_conv *c, uint32_t ask_id, enum mote_answer a,
                      const char *reason);

enum mote_conv_state mote_conv_state(const struct mote_conv *c);

/* What the conversation's policy does with a call of tool `name` now:
 * its rule, else ALLOW if the call would run a registry tool registered
 * with MOTE_TOOL_NO_APPROVAL (a registry tool runs only in a conversation
 * whose conf has `tools`), else the default; an ASK tool answered
 * "always" gives ALLOW. */
enum mote_approval mote_conv_policy(const struct mote_conv *c, const char *name);

/* The call waiting for an answer (state MOTE_CONV_AWAITING_APPROVAL):
 * its question's ask_id, or 0 if none; `call` (may be NULL) is set to the
 * call (its id, name and the journal record holding its input). */
uint32_t mote_conv_pending(const struct mote_conv *c, const struct mote_conv_call **call);

/* True while a turn runs or waits for an approval. */
bool mote_conv_busy(const struct mote_conv *c);

const char *mote_conv_id(const struct mote_conv *c);

/* Summarises the conversation now (the model writes the summary; the
 * journal gets a compact record and later requests start from it; the
 * whole history stays on disk). MOTE_EV_NOTE tells when it starts and
 * ends. Returns 0, MOTE_ERR_BUSY (a turn runs) or MOTE_ERR_ALREADY
 * (nothing to summarise). A conversation whose conf has a context_window
 * compacts by itself when a request used compact_percent of it. */
int mote_conv_compact(struct mote_conv *c);

/* Closes an idle conversation (its slot is free again). Returns 0 or
 * MOTE_ERR_BUSY. */
int mote_conv_close(struct mote_conv *c);

/* The open conversation `id`, or NULL. */
struct mote_conv *mote_conv_find(struct mote_session *s, const char *id);

/* The id of the most recent conversation (STATE/current) into `id` (cap
 * bytes). Where STATE/current is missing (a start killed between its
 * journal and STATE/current, or a file lost), the chat journal changed
 * last (then the greatest id) is taken, found by mote_session_list: a
 * conversation on disk is never left behind for a new one. Returns 0,
 * MOTE_ERR_NOENT (none yet), or the storage failure that kept it from
 * being read (an unreadable STATE/current is an error, never taken as
 * "none"). Uses the session's journal scratch, as mote_session_list. */
int mote_session_recent(struct mote_session *s, char *id, size_t cap);

/* ---- shutdown --------------------------------------------------------- */

/* Starts the shutdown (idempotent; any trigger): no new turn or job
 * starts, running turns are cancelled (CANCEL) or may finish (DRAIN) for
 * up to req->timeout_ms; then what is still running is cut: streamed text
 * is journaled as a closed record, running tools are killed, the
 * conversation is marked needs_recovery. Then the input history is
 * rewritten, the MCP servers disconnected, the journals closed, and
 * MOTE_EV_SHUTDOWN reports. A later request with `force` (the second
 * Ctrl+C) cuts every remaining wait short, MCP included; a later request
 * in CANCEL mode turns a drain into a cancel. Never runs the loop:
 * the caller's mote_loop_poll() drives it. Returns 0, or MOTE_ERR_ALREADY
 * if it had finished. */
int mote_shutdown_begin(struct mote_session *s, const struct mote_shutdown_req *req);

/* mote_shutdown_begin, then drives the loop until the shutdown is done,
 * and copies the report. A shutdown that already began (a signal's drain)
 * is joined as it is: its mode and reason stay, and only req->force cuts
 * its waits short; a drain is never turned into a cancel here. So a
 * program's loop can be: poll while the turn runs and no shutdown began,
 * then mote_shutdown (README, examples/embed). For the top level of a
 * program only: inside a loop callback it returns MOTE_ERR_BUSY (use
 * mote_shutdown_begin there). Returns 0 or the loop's failure. */
int mote_shutdown(struct mote_session *s, const struct mote_shutdown_req *req,
                  struct mote_shutdown_report *out);

/* True once the shutdown finished (MOTE_EV_SHUTDOWN was delivered). */
bool mote_shutdown_done(const struct mote_session *s);

/* True once a shutdown began. */
bool mote_shutting_down(const struct mote_session *s);

/* ---- input history (STATE/history) -------------------------------------- */

/* Appends one input line (newlines in it become spaces). Errors are
 * returned, not reported: the history is a convenience. */
int mote_history_add(struct mote_session *s, const char *line, size_t len);

/* Calls `fn` for each saved line, oldest first, until it returns
 * non-zero. Returns 0, the callback's value, or a storage error
 * (MOTE_ERR_NOENT: no history yet). */
int mote_history_read(struct mote_session *s, int (*fn)(void *arg, const char *line, size_t len),
                      void *arg);

/* Rewrites STATE/history atomically with its last MOTE_HISTORY_MAX lines
 * (mote_shutdown does it). */
int mote_history_save(struct mote_session *s);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_AGENT_H */
