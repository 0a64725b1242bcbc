/*
 * agent_int.h - what the agent's files share with each other and with no
 * one else: the buffers of a model request (struct mote_stream), the
 * shutdown's phases, and the functions one agent file offers the others.
 *
 * The files are layered, and calls go down only:
 *
 *   agent_session.c  agent_shutdown.c   the API: the session and its
 *                                       conversations; the shutdown
 *   agent_turn.c                        the hub: each transition's effects,
 *                                       the jobs' ends, the deferred work
 *   agent_request.c  agent_dispatch.c  agent_recover.c
 *   agent_answer.c   agent_run.c       (tools.c, the built-in tools, sits
 *                                       on agent_run.c and agent_dispatch.c)
 *   agent_journal.c  agent_pool.c
 *   agent_state.c    agent_event.c
 *
 * Where a lower file must make a higher one act, it goes through a hook
 * of struct mote_session that the higher one set: run_deferred (the hub's
 * deferred work, run by mote_session_defer's timer) and shutdown_step (the
 * shutdown's progress, called when work ends). Job continuations are
 * passed down as arguments (mote_request_start, mote_dispatch_start).
 */
#ifndef MOTE_AGENT_INT_H
#define MOTE_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_agent.h"
#include "conv.h"
#include "util.h"

/* JSON tokens a record adds around one tool input (its keys, id, name,
 * the record's own fields), kept free so the reader parses it back. */
#define MOTE_CALL_REC_TOKENS 32

/* Model requests a turn makes when conf.max_turns is 0. */
#define MOTE_DEFAULT_MAX_TURNS 25u

/* ---- the model request's buffers (the session's stream pool) ---------- */

struct mote_stream {
    /* The slot's connection, kept from one request to the next (each
     * request's call uses it: one per origin, closed when idle for
     * keep_idle_ms and at shutdown). mote_stream_get leaves it as it is. */
    struct mote_conn conn;
    bool used;
    struct mote_conv *conv;
    struct mote_llm_req req;
    bool mcp_held;
    size_t text_len;          /* answer text not yet journaled */
    bool spilled;             /* text or call records were written for this answer */
    size_t arena_len;         /* tool inputs of this answer (calls not yet journaled) */
    unsigned arena_first;     /* first call whose input is in the arena */
    uint32_t in_off[MOTE_LLM_MAX_TOOL_CALLS];
    uint32_t in_len[MOTE_LLM_MAX_TOOL_CALLS];
    bool too_large[MOTE_LLM_MAX_TOOL_CALLS];
    uint16_t in_tok[MOTE_LLM_MAX_TOOL_CALLS]; /* JSON tokens of each input (checked) */
    /* A call's provider extras (Gemini's thought signature): right before
     * its input in the arena, ex_len bytes (0: none) of ex_tok tokens. */
    uint16_t ex_len[MOTE_LLM_MAX_TOOL_CALLS];
    uint8_t ex_tok[MOTE_LLM_MAX_TOOL_CALLS];
    /* The answer's reasoning not journaled yet: one piece of one block
     * (rs), written as a reason record when it fills or the piece ends. */
    size_t rs_len;
    uint8_t rs_kind;          /* MOTE_REASON_* of the piece held */
    unsigned rs_block;
    const char *rs_fmt;       /* its format (a static string; NULL: nothing held yet) */
    /* Calls past the table (MOTE_LLM_SLOT_OVER, one at a time): the open
     * one's id, name and input fill the arena (the table's calls are
     * journaled when the first starts); each is journaled as a call record
     * when it ends, and answered unrun after the assistant record. */
    bool over_open;
    bool over_big;            /* its input did not fit the arena */
    uint32_t over_in;         /* where its input begins in the arena */
    unsigned nover;           /* journaled so far */
    uint64_t over_off;        /* the call record of the first */
    /* From here on, written before read: mote_stream_get clears only what
     * is above (from `used`), so the pages of a slot never used stay
     * untouched. */
    struct mote_tool_def defs[MOTE_MAX_TOOLS + MOTE_MAX_MCP_SERVERS * MOTE_MCP_MAX_TOOLS +
                             MOTE_MCP_RES_TOOLS];
    char text[MOTE_ANSWER_TEXT_MAX];
    char rs[MOTE_ANSWER_REASON_MAX];
    char arena[MOTE_JOURNAL_LINE_MAX];
    struct mote_llm_call call;
};

_Static_assert(sizeof(struct mote_stream) <= sizeof(struct mote_stream_area),
               "MOTE_STREAM_SIZE (mote_agent.h) is smaller than struct mote_stream");
_Static_assert(_Alignof(struct mote_stream) <= _Alignof(struct mote_stream_area),
               "struct mote_stream_area is less aligned than struct mote_stream");

/* Stream slot i of the session's pool. */
static inline struct mote_stream *mote_stream_slot(struct mote_session *s, unsigned i)
{
    MOTE_ASSERT(i < MOTE_MAX_STREAMS);
    return (struct mote_stream *)(void *)&s->streams[i];
}

/* ---- the shutdown's phases (mote_session.sd_phase) ----------------------- */

enum mote_sd_phase {
    MOTE_SDP_NONE = 0,
    MOTE_SDP_WAIT, /* turns stop or drain */
    MOTE_SDP_CUT,  /* after the timeout: cut, mark, wait briefly for the cancelled jobs */
    MOTE_SDP_MCP,  /* MCP servers disconnect */
    MOTE_SDP_DONE,
};

/* ---- agent_event.c: what the embedder is told ---------------------------- */

/* An event of `type` about `c` (NULL: the session's), its text "". */
void mote_emit_init(struct mote_event *ev, enum mote_ev type, struct mote_conv *c);

/* Hands `ev` to the embedder's callback. */
void mote_emit(struct mote_session *s, const struct mote_event *ev);

/* An event with a text and a code. */
void mote_emit_text(struct mote_conv *c, enum mote_ev type, const char *text, int code);

/* MOTE_EV_STATE, if the state changed since the embedder last heard it
 * (inside an API call: later, from the deferred work). */
void mote_emit_state(struct mote_conv *c);

/* MOTE_EV_ERROR with c->last_error (inside an API call: later). */
void mote_emit_error(struct mote_conv *c, int code, bool fatal);

/* Sets c->last_error to a, then b (may be NULL). */
void mote_conv_fail_msg(struct mote_conv *c, const char *a, const char *b);

/* Runs the session's deferred work (s->run_deferred) from the loop: a 0 ms
 * timer, so never inside the caller's call. */
void mote_session_defer(struct mote_session *s);

/* ---- agent_state.c: transitions below the hub ----------------------------- */

/* A transition whose only possible effect is stopping the jobs (the
 * answer's first byte, a storage failure): the files below the hub make
 * these themselves; every other goes through mote_turn_apply. */
void mote_conv_move(struct mote_conv *c, enum mote_conv_event e);

/* The KILL_TOOLS effect: cancels the running tool's job, and with
 * `request` the model request's too. */
void mote_conv_stop_jobs(struct mote_conv *c, bool request);

/* The shutdown's next step, if one began (s->shutdown_step). */
static inline void mote_shutdown_poll(struct mote_session *s)
{
    if (s->shutdown_step != NULL)
        s->shutdown_step(s);
}

/* ---- agent_pool.c: the stream and run pools ------------------------------ */

/* Both pools free, every slot's connection closed (at session init). */
void mote_pool_init(struct mote_session *s);

/* Closes the stream slots' kept connections: an idle one now, one in use
 * when its request ends (mote_conn_close). Idempotent. */
void mote_pool_close_conns(struct mote_session *s);

/* A free stream slot for `c`, or NULL. */
struct mote_stream *mote_stream_get(struct mote_session *s, struct mote_conv *c);

/* Frees c->stream (if any); a waiter may take it. */
void mote_stream_put(struct mote_conv *c);

/* A free run slot for `c`, prepared, or NULL. */
struct mote_tool_run *mote_run_get(struct mote_session *s, struct mote_conv *c);

/* Frees c->run (if any); a waiter may take it. */
void mote_run_put(struct mote_conv *c);

/* The conversation that asked first for a slot of the stream pool
 * (`stream`) or the run pool, or NULL. */
struct mote_conv *mote_pool_first_waiter(struct mote_session *s, bool stream);

/* ---- agent_journal.c: the turn's journal writes -------------------------- */

/* Checks the result of a journal write begun at offset `before`: true if
 * it went well (then MOTE_EV_RECORD tells it). A write refused whole
 * (MOTE_ERR_TOO_LARGE, nothing written) is false and left to the caller;
 * any other failure makes the conversation's storage failed. */
bool mote_conv_journaled(struct mote_conv *c, int rc, uint64_t before);

/* The journal cannot be written: the conversation stops (ERROR, jobs
 * cancelled) and the embedder hears it as a fatal error. Once. */
void mote_conv_storage_failed(struct mote_conv *c, int rc);

/* Answers the calls past the table that `o` has left
 * (mote_recover_over_next), one record at a time, each told; says how
 * many with a warning. False if the journal failed. */
bool mote_conv_answer_over(struct mote_conv *c, struct mote_over *o);

/* Journals the result of call c->call_i (cut so that its record fits),
 * tells it, and moves the round to the next call. False if the journal
 * failed. */
bool mote_conv_give_result(struct mote_conv *c, const char *text, size_t len, bool is_error);
bool mote_conv_give_result_s(struct mote_conv *c, const char *text, bool is_error);

/* ---- agent_answer.c: assembling an answer -------------------------------- */

/* The model request's event callback (struct mote_llm_call's): text,
 * thinking, tool calls and their inputs, the stop reason and usage. */
int mote_answer_event(void *arg, const struct mote_llm_event *ev);

/* Journals the answer held in c->stream: the assistant record, after as
 * many text and call records as it takes to fit. `interrupted`: what
 * streamed before a cancel, a failure or a cut. Returns 0 or < 0. */
int mote_answer_commit(struct mote_conv *c, bool interrupted);

/* ---- agent_request.c: starting a model request -------------------------- */

/* Starts the turn's model request (c->compacting: the summarising one) on
 * a stream slot, `done` continuing its job; with no slot free, marks `c`
 * a waiter (want_send). Returns 0, MOTE_ERR_SHUTDOWN (nothing may start
 * now), or another failure (c->last_error says it); the slot is freed on
 * failure. */
int mote_request_start(struct mote_conv *c, mote_cont_fn done);

/* ---- agent_run.c: a tool's run ------------------------------------------- */

/* The task ops of a registry tool's run (the job steps run->tool). */
extern const struct mote_task_ops mote_run_ops;

/* Makes the run's result final once its job ended `how`: an MCP call's
 * result copied, a failure or cancel said, a cut output noted.
 * `shutting_down`: the shutdown killed it. */
void mote_run_finish(struct mote_tool_run *run, enum mote_job_state how, const char *errmsg,
                     bool shutting_down);

/* ---- agent_budget.c: the spend budget before each request -----------------
 * Reached through the session's hooks (budget_gate, budget_done), which
 * mote_session_use_budget sets:
 *   budget_gate(c): reserves the budget for c's next request: 1 (go on:
 *     reserved, or reserved already), 0 (it waits: c->want_budget, told
 *     and tried again from the deferred work) or < 0 (the budget's
 *     journal failed: c->last_error says it; nothing may be sent);
 *   budget_done(c, answered): settles c's reservation, if any, with its
 *     last request's usage (`answered`) or nothing. */

/* ---- agent_dispatch.c: which tool runs, and whether it may --------------- */

/* What the round does next with call c->call_i. */
enum mote_dispatch {
    MOTE_DISPATCH_WAIT = 0, /* nothing now: a tool runs, a slot is awaited, or storage failed */
    MOTE_DISPATCH_RUN,      /* the call may run: mote_dispatch_start */
    MOTE_DISPATCH_ASK,      /* the call needs the user's answer */
    MOTE_DISPATCH_DRAIN,    /* shutting down: no tool starts */
    MOTE_DISPATCH_ROUND_DONE, /* every call has its result */
};

/* Goes through the calls in order, giving the results of those that do
 * not run (bad input, an unknown tool, refused) until one may run, needs
 * asking, or none is left. The tool a call runs is resolved here, once,
 * by one rule (docs/AGENT.md, "Tool names"). */
enum mote_dispatch mote_dispatch_next(struct mote_conv *c);

/* Starts call c->call_i (approved) on a run slot, `done` continuing its
 * job; with no slot free, marks `c` a waiter (want_run). Returns 0 (the
 * result comes with `done`, or later), 1 (a result was given at once) or
 * < 0 (storage failed). */
int mote_dispatch_start(struct mote_conv *c, mote_cont_fn done);

/* The ASK effect: asks the embedder about call c->call_i
 * (MOTE_EV_APPROVAL, with its input). */
void mote_dispatch_ask(struct mote_conv *c);

/* True if tool `name` was answered "always" in this conversation. */
bool mote_dispatch_always(const struct mote_conv *c, const char *name);

/* ---- agent_recover.c: applying recovery -------------------------------- */

/* Takes over what mote_recover found in a journal just opened: the
 * "always" answers, the counters, the last answer's calls. */
void mote_conv_recover_load(struct mote_conv *c);

/* Begins applying recovery (from the loop): ends leftover processes, says
 * what happens, and returns the transition to apply. */
enum mote_conv_event mote_conv_recover_begin(struct mote_conv *c);

/* After that transition: the state and what is left to say. */
void mote_conv_recover_end(struct mote_conv *c);

/* ---- agent_turn.c: the hub ------------------------------------------------ */

/* Runs the transition for `e` and carries out its effects, journal first.
 * `arg` is the user's text (USER) or the error message (JOURNAL_ERROR).
 * Returns 0, or < 0 when a journal write failed (then the conversation is
 * in ERROR) or a user message was refused whole (state unchanged). */
int mote_turn_apply_text(struct mote_conv *c, enum mote_conv_event e, const char *arg,
                         size_t len);
int mote_turn_apply(struct mote_conv *c, enum mote_conv_event e, const char *errmsg);

/* Starts summarising the conversation; `resume`: the turn goes on after. */
void mote_turn_compact(struct mote_conv *c, bool resume);

/* Makes the session's deferred work the hub's (s->run_deferred). */
void mote_turn_attach(struct mote_session *s);

#endif /* MOTE_AGENT_INT_H */
