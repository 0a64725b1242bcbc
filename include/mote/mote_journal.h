/*
 * mote_journal.h - durable conversations: the journal, the request parts
 * it replays, recovery, and the conversation states.
 *
 * A conversation is an append-only JSON Lines file,
 * STATE/conversations/ID.jsonl, one record per line, each written by a
 * single storage append and made durable (synced) at every turn boundary
 * and before any tool runs. The format is specified in docs/JOURNAL.md.
 *
 * Opening a journal checks every line. A torn or NUL-padded last line (a
 * crash in the middle of an append) is cut off, after a copy of it is kept
 * aside as ID.jsonl.torn; damage before the last line is reported with its
 * line number and the file is left untouched (MOTE_ERR_CORRUPT).
 *
 * Recovery is a pure function of the records (mote_recover): it says what
 * a restarted mote must do. Requests are built by streaming the records
 * through a part source (mote_journal_parts), so memory does not grow with
 * the conversation's length.
 *
 * Calling rules: a journal and its struct mote_jbuf belong to one thread.
 * A call blocks as long as the port's storage calls it makes (a sync
 * included), never longer. Pointers into j->buf (records read, request
 * parts) stay valid until the next call on any journal sharing it.
 */
#ifndef MOTE_JOURNAL_H
#define MOTE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_json.h"
#include "mote/mote_llm.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest format read and written (docs/JOURNAL.md): version 3 is a
 * calls journal (its open record's "kind": "calls": tool calls from
 * outside, never a model's turn); a chat journal is still written as
 * version 2 (MOTE_JOURNAL_CHAT_VERSION), so that older motes read it.
 * Version 1 journals are read and continued too. */
#define MOTE_JOURNAL_VERSION 3
#define MOTE_JOURNAL_CHAT_VERSION 2

/* The message of the synthetic result of a tool interrupted by a crash. */
#define MOTE_INTERRUPTED_TOOL "interrupted: the tool may or may not have run"

/* The result of a call that never started because its turn was cut. */
#define MOTE_NOT_RUN_TOOL "not run: mote stopped before this call started"

/* Record types (the "t" field). */
enum mote_rec {
    MOTE_REC_NONE = 0,
    MOTE_REC_OPEN,        /* header: format version, id */
    MOTE_REC_USER,        /* a user message */
    MOTE_REC_REQUEST,     /* a model request is about to be sent */
    MOTE_REC_ASSISTANT,   /* the model's complete answer: text and tool calls */
    MOTE_REC_TOOL_START,  /* a tool is about to run (its process group) */
    MOTE_REC_TOOL_RESULT, /* a tool call's result */
    MOTE_REC_MARK,        /* needs_recovery: a shutdown left the turn unfinished */
    MOTE_REC_AUTO,        /* an automatic continue was made on recovery */
    MOTE_REC_ERROR,       /* the turn failed; the user may /retry */
    MOTE_REC_TEXT,        /* a piece of a long answer's text, before its assistant record */
    MOTE_REC_CALL,        /* a tool call of a long answer, before its assistant record */
    MOTE_REC_CANCEL,      /* the user cancelled the turn: it ends here */
    MOTE_REC_ALLOW,       /* the user allowed every call of a tool in this conversation */
    MOTE_REC_COMPACT,     /* a summary that replaces everything before it in requests */
    MOTE_REC_REASON,      /* a piece of the model's reasoning, before its assistant record */
};

/* Token counts of one model request, as the provider reported them. */
struct mote_rec_usage {
    uint64_t input, output, cache_read, cache_write;
};

/* One tool call of an assistant record (pointers valid during a call). */
/* A refused call's "refused" when no fault is named (else it is the
 * fault, as mote_json_strict names it: "duplicate key \"NAME\"", ...). */
#define MOTE_REFUSED_INVALID "invalid" /* not one valid JSON object */
#define MOTE_REFUSED_CUT_OFF "cut_off" /* cut by the token limit */
#define MOTE_REFUSED_TOO_BIG "too_big" /* over what one record holds */

struct mote_call_rec {
    const char *id;
    const char *name;
    const char *input; /* a JSON object */
    size_t input_len;
    const char *refused; /* NULL, or why the input was refused (it is then {}): the call is
                          * never run, after a restart too */
    const char *extra;   /* NULL, or the call's provider extras: a JSON object (Gemini's
                          * {"google": {"thought_signature": ...}}), sent back with it */
    size_t extra_len;
};

/* A piece of a reasoning block (mote_journal_reason). */
#define MOTE_REASON_TEXT 0 /* its visible reasoning */
#define MOTE_REASON_SIG 1  /* its signature (or a redacted block's data, a Responses item's
                            * encrypted_content) */
#define MOTE_REASON_ID 2   /* its item id (Responses) */

struct mote_reason_rec {
    const char *fmt;   /* "thinking", "redacted", "reasoning_content", "reasoning",
                        * "responses" */
    unsigned block;    /* the block's number in its answer */
    uint8_t kind;      /* MOTE_REASON_* */
    const char *data;  /* len bytes of UTF-8 */
    size_t len;
};

/* The journal's working memory: one record's line, its unescaped strings
 * and its tokens (about 150 KiB with the default configuration). It is
 * scratch space, not state: journals of one thread can share one (a
 * session shares one among all its conversations). A journal that finds
 * the buffer holding another journal's record reads its own again. */
struct mote_jbuf {
    const void *owner;     /* the journal whose record is in `line` */
    uint64_t owner_off;    /* that record's offset */
    size_t line_len;
    char line[MOTE_JOURNAL_LINE_MAX];
    char text[MOTE_JOURNAL_LINE_MAX]; /* unescaped strings of the record read */
    struct mote_json json;
};

/* One conversation's journal, owned by the caller. The caller sets `buf`;
 * every other field is the journal's own, to read only. */
struct mote_journal {
    struct mote_jbuf *buf; /* set by the caller before create/open (shared scratch) */
    const struct mote_port *port;
    int h;                 /* storage handle, -1 when closed */
    int err;               /* first failure, sticky: nothing more is written */
    char id[MOTE_CONV_ID_MAX];
    char name[MOTE_STORAGE_NAME_MAX];
    uint64_t size;         /* bytes of complete records */
    uint32_t records;
    uint32_t version;      /* of the file's open record */
    bool calls_only;       /* a calls journal (mote_journal_create_calls) */
    uint64_t last_user_end; /* end of the last user record (0: none) */
    uint64_t compact_off;   /* offset of the last compact record (requests start there) */
    bool has_compact;
    /* opening report */
    bool repaired;         /* a torn tail was cut off (and kept aside) */
    uint32_t bad_line;     /* line number of damage before the tail */
    int64_t holder;        /* the process holding its lock (-1: one the port cannot
                            * name; 0: none, or not known) */
    /* reading */
    uint64_t rd_off;       /* offset of the next record to read */
    uint64_t cur_off;      /* offset of the record last read (in buf) */
    uint32_t rd_line;
    /* the part source's cursor (mote_journal_parts) */
    unsigned part_base;    /* index of the first part of the current record */
    unsigned part_n;       /* parts the current record yields */
    int part_type;         /* type of the record in `json` */
    bool part_valid;
    uint64_t ans_end;      /* end of the answer the cursor is in */
    uint8_t ans_mode;      /* how that answer is sent: all, text only, nothing */
    /* request ids (mote_journal_next_rid, mote_journal_rid_seen) */
    const char *next_rid;  /* the id the next user record carries (NULL: none) */
    size_t next_rid_len;
    uint32_t nrids;        /* user records with an id, in all (the ring's next slot is
                            * nrids % MOTE_JOURNAL_RIDS) */
    uint64_t rid_hash[MOTE_JOURNAL_RIDS]; /* the latest ids' hashes */
    uint64_t rid_off[MOTE_JOURNAL_RIDS];  /* and their user records' offsets */
};

/* Creates conversation `id` (conversations/ID.jsonl, new; `id` is 1 to
 * MOTE_CONV_ID_MAX - 1 bytes of [A-Za-z0-9_-]) and writes and syncs its
 * header, and takes the journal's lock. j->buf must point to a struct
 * mote_jbuf (it may be shared with other journals). Returns 0,
 * MOTE_ERR_EXIST (a non-empty file has the id), MOTE_ERR_INVAL (bad id,
 * or no j->buf), MOTE_ERR_NOSYS (the port has no storage),
 * MOTE_ERR_LOCKED (another process opened it first), or a storage
 * failure. */
int mote_journal_create(struct mote_journal *j, const struct mote_port *port,
                        const char *id) MOTE_MUST_CHECK;

/* The same for a calls journal: tool calls from outside the model (mote
 * serve's MCP server), each an assistant record with one call, its
 * tool_start and its tool_result; never a model's turn. Its open record
 * says "v": 3 and "kind": "calls", so that a mote older than this format
 * leaves it alone instead of sending it to a model. */
int mote_journal_create_calls(struct mote_journal *j, const struct mote_port *port,
                              const char *id) MOTE_MUST_CHECK;

/* Opens conversation `id` to continue it, checking every line and (for a
 * torn tail) repairing it, and takes the journal's lock (held until
 * mote_journal_close). j->buf as for mote_journal_create. Returns 0
 * (j->repaired tells if the tail was cut; the cut bytes are kept in
 * ID.jsonl.torn, or .torn.2 and on when that exists), MOTE_ERR_NOENT
 * (missing or empty), MOTE_ERR_CORRUPT (j->bad_line has the line; the
 * file is untouched), MOTE_ERR_NOTSUP (a newer format than
 * MOTE_JOURNAL_VERSION: untouched), MOTE_ERR_LOCKED (j->holder says who
 * holds it; untouched), MOTE_ERR_INVAL, MOTE_ERR_NOSYS, or a storage
 * failure. On failure the journal is closed. */
int mote_journal_open(struct mote_journal *j, const struct mote_port *port,
                      const char *id) MOTE_MUST_CHECK;

/* Opens conversation `id` to read it only (for a listing): the same
 * checks, but nothing is written, not even a torn tail's repair
 * (j->repaired then says one would be made, and reading stops before the
 * tail), and no lock is kept (j->holder != 0: another process has it
 * open). Never write to a journal opened so. */
int mote_journal_peek(struct mote_journal *j, const struct mote_port *port,
                      const char *id) MOTE_MUST_CHECK;

/* Takes the exclusive lock on a journal opened by mote_journal_peek (to
 * remove it): 0, MOTE_ERR_LOCKED (j->holder says who holds it),
 * MOTE_ERR_BADF (closed), or a storage failure. */
int mote_journal_lock(struct mote_journal *j) MOTE_MUST_CHECK;

/* Closes the journal's file and drops its lock; a closed journal may be
 * closed again. */
void mote_journal_close(struct mote_journal *j);

/* Record writers. Each formats one record in j->buf->line (where it stays
 * after the write), appends it with one write and makes it durable (all
 * but mote_journal_text and mote_journal_call). A short or failed write
 * is cut back so no partial line stays. Strings are written escaped, with
 * bytes that are not UTF-8 replaced; tool inputs go in as they are.
 * Return 0; MOTE_ERR_TOO_LARGE (the record would pass
 * MOTE_JOURNAL_LINE_MAX or MOTE_JSON_MAX_TOKENS) or MOTE_ERR_BADMSG (a
 * tool input that is not one JSON object of UTF-8), both with nothing
 * written and the journal still usable; MOTE_ERR_BADF (closed); or a
 * storage failure, which is sticky: every later write returns it. The
 * records and their fields are those of docs/JOURNAL.md. */

/* A user message: `len` bytes of `text` (with the request id set by
 * mote_journal_next_rid, if any: the record's "rid"). */
int mote_journal_user(struct mote_journal *j, const char *text, size_t len);
/* A model request about to be sent; `attempt` counts from 1. */
int mote_journal_request(struct mote_journal *j, uint32_t attempt);
/* The end of an answer: the rest of its text, `stop` (the provider's stop
 * reason; NULL: ""), `interrupted` (the stream was cut: its calls never
 * run), and its `ncalls` tool calls (each input one JSON object, or empty
 * for {}). */
int mote_journal_assistant(struct mote_journal *j, const char *text, size_t len,
                           const char *stop, bool interrupted, const struct mote_call_rec *calls,
                           unsigned ncalls);
/* The same with the request's token counts (NULL: none). */
int mote_journal_answer(struct mote_journal *j, const char *text, size_t len, const char *stop,
                        bool interrupted, const struct mote_call_rec *calls, unsigned ncalls,
                        const struct mote_rec_usage *usage);
/* Tool call `call_id` is about to run: its process group `pgid` (0: no
 * process), the group leader's `start_time` (proc_start_time; 0: none)
 * and the processes' `tag` (NULL or "": none). */
int mote_journal_tool_start(struct mote_journal *j, const char *call_id, int64_t pgid,
                            uint64_t start_time, const char *tag);
/* Call `call_id`'s result: `len` bytes of `text`, `is_error` if it failed. */
int mote_journal_tool_result(struct mote_journal *j, const char *call_id, const char *text,
                             size_t len, bool is_error);
/* A shutdown left the turn unfinished; `state` is "needs_recovery". */
int mote_journal_mark(struct mote_journal *j, const char *state);
/* Recovery went on by itself (an automatic continue). */
int mote_journal_auto(struct mote_journal *j);
/* The turn failed with `message`; the user may retry. */
int mote_journal_error(struct mote_journal *j, const char *message);
/* Pieces of an answer too long for one record (not synced: the assistant
 * record that follows them is). An answer's text pieces come first, then
 * its call records, then the assistant record with the rest. */
int mote_journal_text(struct mote_journal *j, const char *text, size_t len);
int mote_journal_call(struct mote_journal *j, const struct mote_call_rec *call);
/* A piece of the answer's reasoning, written while it streams (not
 * synced), byte for byte as it came: the pieces of one block in order,
 * its text before its signature. */
int mote_journal_reason(struct mote_journal *j, const struct mote_reason_rec *r);
/* The user cancelled the turn: it ends here. */
int mote_journal_cancel(struct mote_journal *j);
/* The user allowed every later call of `tool` in this conversation. */
int mote_journal_allow(struct mote_journal *j, const char *tool);
/* A compaction: `summary` stands for everything before it in requests;
 * `resume`: it was made in the middle of a turn, which goes on after it. */
int mote_journal_compact(struct mote_journal *j, const char *summary, size_t len, bool resume);

/* Request ids: a front door that must never run a request twice (a
 * broker delivers a message again after a reconnect) names each user
 * message by the sender's id. mote_journal_next_rid sets the id the next
 * user record carries: `len` bytes of `rid` (1..MOTE_JOURNAL_RID_MAX of
 * UTF-8 without NUL), which must stay valid until that record is written
 * or the id is taken back (rid NULL); mote_journal_user takes it (written
 * or not). Returns 0, or MOTE_ERR_INVAL (empty, a NUL, not UTF-8) or
 * MOTE_ERR_TOO_LARGE, with no id set.
 *
 * mote_journal_rid_seen says whether one of the latest MOTE_JOURNAL_RIDS
 * user records with an id carries `rid` (the index is rebuilt when the
 * journal is opened; a match of its hash is checked against the record
 * itself, so it is exact). Returns 1 (seen), 0, MOTE_ERR_BADF (closed) or
 * a read failure. Uses j->buf like a record read. */
int mote_journal_next_rid(struct mote_journal *j, const char *rid, size_t len);
int mote_journal_rid_seen(struct mote_journal *j, const char *rid, size_t len);

/* The longest text (unescaped bytes) one record can always hold, whatever
 * its characters: each may take 6 bytes escaped (\u00XX). */
#define MOTE_JOURNAL_TEXT_SAFE ((MOTE_JOURNAL_LINE_MAX - 256) / 6)

/* Bytes the assistant record would take with `text` and `calls` (a
 * counting pass of its writer, with room for a usage member and the
 * newline), or the JSON writer's error (< 0). Writes nothing. */
int64_t mote_journal_assistant_size(const char *text, size_t len, const char *stop,
                                    bool interrupted, const struct mote_call_rec *calls,
                                    unsigned ncalls);

/* Reads records from the start: mote_journal_rewind, then
 * mote_journal_next until it returns 0. Each record's JSON is in
 * j->buf->json (token 0 the object; j->cur_off its offset) until another
 * call on a journal sharing the buffer. mote_journal_next returns the
 * record's type (> 0), 0 at the end, MOTE_ERR_CORRUPT (a line that is no
 * record: the file changed since it was opened), MOTE_ERR_BADF (closed),
 * or a read failure. Both move the part source's cursor (it starts over
 * on its next call). */
void mote_journal_rewind(struct mote_journal *j);
int mote_journal_next(struct mote_journal *j);

/* Reads a tool call's input back from its record: the record at offset
 * `rec_off` (struct mote_rec_call's or struct mote_conv_call's rec_off),
 * its call number `rec_idx` in the "calls" of an assistant record, or the
 * call record itself when `rec_idx` < 0. Copies the input's JSON object,
 * as journaled, into `out` (cap bytes) with a NUL after it; *full_len
 * (when not NULL) gets its length whenever the call was found, 0
 * otherwise. Reads through j->buf->line and j->buf->json, never
 * j->buf->text (which may be `out`), and leaves the reading and part
 * cursors where they were. Returns the length (< cap),
 * MOTE_ERR_TOO_LARGE (it needs cap > *full_len; nothing copied),
 * MOTE_ERR_CORRUPT (no such call or no object there), MOTE_ERR_BADF
 * (closed), or a read failure. */
int mote_journal_call_input(struct mote_journal *j, uint64_t rec_off, int rec_idx, char *out,
                            size_t cap, size_t *full_len) MOTE_MUST_CHECK;

/* Whether sending the conversation again (a retry) has something to
 * send: 1 if the request would end with what the model answers (a user
 * message, tool results, a summary: after an error, a cancel, an
 * interrupted tool, the turn limit), 0 if it would end with the model's
 * own complete answer (the turn is finished: a retry would make it
 * continue that answer) or be empty, or a read failure. Reads the last
 * records back from the end (at most a few), through j->buf. */
int mote_journal_retryable(struct mote_journal *j) MOTE_MUST_CHECK;

/* A mote_part_fn over the journal (arg = the journal): user messages,
 * assistant text and tool calls, tool results, in order, from the last
 * compact record (as a user message with its summary) if there is one.
 * Returns 1 with part `index` in *p (its pointers into j->buf, valid
 * until the next call on a journal sharing it), 0 past the last part,
 * MOTE_ERR_CORRUPT (a record lacks what its part needs), or a read
 * failure. Asking for an earlier index than the last starts over from
 * the beginning. */
int mote_journal_parts(void *arg, unsigned index, struct mote_part *p);

/* ---- recovery ---------------------------------------------------------- */

enum mote_recovery_action {
    MOTE_RECOVER_IDLE = 0,         /* nothing unfinished */
    MOTE_RECOVER_CONTINUE,         /* send the request again, without user input */
    MOTE_RECOVER_TOOL_INTERRUPTED, /* a tool was cut off while it ran: error results, the
                                    * user retries (a tool is never run again by itself) */
    MOTE_RECOVER_LIMIT,            /* would go on, but MOTE_MAX_AUTO_CONTINUES automatic
                                    * continues in a row were made */
    MOTE_RECOVER_RESUME_TOOLS,     /* tool calls the model asked for never started, or
                                    * calls past the table have no result yet: the round
                                    * goes on with them (approval as usual; those past
                                    * the table are answered first, unrun) */
};

/* The calls of one answer past the first MOTE_LLM_MAX_TOOL_CALLS, which
 * no table holds and no tool runs: each is answered with an error result
 * (mote_recover_over_next) right after the answer's assistant record, so
 * every call the next request carries has its result. Where they are is
 * a place in the journal, walked one call at a time. */
struct mote_over {
    uint64_t off;  /* the record of the next call to look at */
    int16_t idx;   /* its index in that record's "calls" (-1: a call record, or an
                    * assistant record's first call) */
    unsigned skip; /* calls answered already, passed over first */
    unsigned left; /* calls to answer after them */
};

/* Answers the next call of `o`: passes over o->skip calls, then writes
 * one tool_result record (is_error, synced) saying the call was not run
 * because the answer had more than MOTE_LLM_MAX_TOOL_CALLS calls and
 * asking the model to call it again; moves `o` past it. The calls are
 * read from the answer's call records (text records between them are
 * passed over), then from its assistant record's "calls". Returns 1 when
 * a result was written, 0 when none is left (o->left was 0, or the
 * answer has fewer calls than counted: then o->left becomes 0), or a
 * reader's or writer's failure (o unchanged). Moves no reading or part
 * cursor. */
int mote_recover_over_next(struct mote_journal *j, struct mote_over *o) MOTE_MUST_CHECK;

/* One tool call of the last answer, as the journal tells it. */
struct mote_rec_call {
    char id[MOTE_LLM_ID_MAX];
    char name[MOTE_LLM_NAME_MAX];
    uint64_t rec_off;              /* the record holding its input */
    int16_t rec_idx;               /* index in that record's calls; -1: a call record */
    bool started;                  /* a tool_start was written */
    bool has_result;
    int64_t pgid;                  /* from the tool_start record (0: none) */
    uint64_t start;
    char tag[MOTE_PROC_TAG_MAX];   /* the processes' tag ("": none recorded) */
    char refused[64];              /* the call record's "refused" ("": its input was good) */
};

struct mote_recovery {
    enum mote_recovery_action action;
    unsigned autos;               /* automatic continues since the last user message */
    unsigned ncalls;              /* calls of the last answer (its first
                                   * MOTE_LLM_MAX_TOOL_CALLS) */
    struct mote_rec_call calls[MOTE_LLM_MAX_TOOL_CALLS];
    unsigned nover;               /* its calls past them (never run) */
    struct mote_over over;        /* where they are: over.skip of them have their result
                                   * (always the first ones), over.left have none */
    unsigned nmissing;            /* of them, without a result */
    unsigned nstarted;            /* of those, begun (tool_start) */
    unsigned nkill;               /* process groups recorded for begun ones */
    int64_t kill_pgid[MOTE_LLM_MAX_TOOL_CALLS];
    uint64_t kill_start[MOTE_LLM_MAX_TOOL_CALLS];
    char kill_tag[MOTE_LLM_MAX_TOOL_CALLS][MOTE_PROC_TAG_MAX];
    bool cancelled;               /* the last turn ended by the user's cancel */
    bool calls_only;              /* a calls journal: a call without a result is closed
                                   * (TOOL_INTERRUPTED), never run or continued */
    char last_error[160];         /* the message of a trailing error record */
    unsigned nallowed;            /* tools allowed for every call ("allow" records) */
    char allowed[MOTE_CONV_ALLOWED_MAX][MOTE_LLM_NAME_MAX];
    struct mote_rec_usage total;  /* tokens of every request journaled */
    struct mote_rec_usage last;   /* of the last one (how full the context is) */
    unsigned compactions;
};

/* mote_recover's running state between records (the call records seen
 * before their answer, the last significant record). */
struct mote_recover_walk {
    struct mote_rec_call pend[MOTE_LLM_MAX_TOOL_CALLS]; /* call records before their answer */
    unsigned npend;
    unsigned nover_pend;          /* and how many more, past the table */
    uint64_t over_pend;           /* the first of those */
    int last;                     /* enum mote_rec */
    bool compact_resume;
    bool paused;
};

/* mote_recover in parts, for a reader that has the records one at a time
 * (mote_jscan): begin, then take with each record as it is in j->buf
 * (`t` its type, j->cur_off its offset), then end. The same decision as
 * mote_recover over the same records. */
void mote_recover_begin(struct mote_recover_walk *w, struct mote_recovery *r);
void mote_recover_take(struct mote_journal *j, int t, struct mote_recover_walk *w,
                       struct mote_recovery *r);
void mote_recover_end(struct mote_recover_walk *w, struct mote_recovery *r);

/* Decides what an interrupted conversation needs, from its records alone,
 * into *r. Writes nothing; moves the reading cursor (as
 * mote_journal_rewind). Returns 0, or what mote_journal_next returned
 * when it failed (*r is then incomplete). */
int mote_recover(struct mote_journal *j, struct mote_recovery *r) MOTE_MUST_CHECK;

/* ---- a journal read in steps ------------------------------------------
 * What a listing needs of a journal (mote_journal_peek's checks,
 * mote_recover's decision, the user messages' count and the first one's
 * words) in one pass, a bounded number of bytes at a time, so that a
 * caller on an event loop reads a long journal over many steps instead
 * of in one (docs/JOURNAL.md "Opening"). */

/* The line check's place in a file (mote_journal_peek's, in steps). */
struct mote_jcheck {
    uint64_t file_size;           /* the size when the check began */
    uint64_t good;                /* where the complete records end so far */
    uint64_t long_off;            /* in a line over the limit: the next byte to look at */
    uint32_t line;                /* lines checked */
    bool in_long;
    bool done;
};

/* Bytes of a scan's `first` (the first user message's start). */
#define MOTE_JSCAN_FIRST 64

struct mote_jscan {
    struct mote_journal j;        /* read only, as mote_journal_peek opens it */
    struct mote_jcheck check;
    struct mote_recover_walk walk;
    struct mote_recovery r;       /* once done: what opening it would do */
    unsigned user_messages;
    char first[MOTE_JSCAN_FIRST]; /* the first user message's start, on one line */
    bool done;
};

/* Starts reading conversation `id` read only (nothing is written, no lock
 * kept; s->j.holder != 0: another process has it open). `buf` is scratch
 * shared as for any journal: nothing of it is relied on between steps.
 * Returns 0, or what mote_journal_peek returns on failure (MOTE_ERR_NOENT
 * for a missing or empty file, MOTE_ERR_NOTREG, a storage failure); the
 * scan is then closed. */
int mote_jscan_begin(struct mote_jscan *s, struct mote_jbuf *buf, const struct mote_port *port,
                     const char *id) MOTE_MUST_CHECK;

/* Reads on: whole lines until `budget` bytes were read (a line up to
 * MOTE_JOURNAL_LINE_MAX may pass it; a longer one is read a chunk of
 * that size per call). Returns 1 while there is more, 0 once done (then
 * s->j.size, s->j.repaired, s->r, s->user_messages and s->first hold the
 * answer; the file stays open, and locked if mote_journal_lock(&s->j)
 * took it, until mote_jscan_end), or a failure as mote_journal_peek's
 * (MOTE_ERR_CORRUPT with s->j.bad_line, MOTE_ERR_NOTSUP, a read failure),
 * the file then closed. Never blocks longer than its reads. */
int mote_jscan_step(struct mote_jscan *s, size_t budget) MOTE_MUST_CHECK;

/* Ends a scan, done or not: its file is closed (and a lock dropped); an
 * ended scan may be ended again. */
void mote_jscan_end(struct mote_jscan *s);

/* Closes an unfinished tool round for good (TOOL_INTERRUPTED, or LIMIT
 * with calls left), from `r` as mote_recover left it: the calls past the
 * table without a result get theirs (mote_recover_over_next: an agent
 * that answered them already moved r->over on), then a call that had
 * begun gets MOTE_INTERRUPTED_TOOL, one that never started
 * MOTE_NOT_RUN_TOOL, then an error record ends the turn (a later restart
 * does not send by itself: the user can /retry). Synced. Does nothing for
 * other decisions. Returns 0 or a writer's failure (see the record
 * writers). */
int mote_recover_apply(struct mote_journal *j, const struct mote_recovery *r);

/* ---- conversation states ----------------------------------------------
 * A conversation's state, as the agent reports it (mote_conv_state(),
 * MOTE_EV_STATE). The agent moves between them through its internal
 * state machine, journal first (docs/AGENT.md). */

enum mote_conv_state {
    MOTE_CONV_IDLE = 0,
    MOTE_CONV_LLM_REQUESTING, /* a request is being sent (or waits for a stream slot) */
    MOTE_CONV_STREAMING,
    MOTE_CONV_TOOL_EXECUTING,
    MOTE_CONV_ERROR,
    MOTE_CONV_NEEDS_RECOVERY,
    MOTE_CONV_AWAITING_APPROVAL, /* a tool call waits for the user's answer */
    MOTE_CONV_COMPACTING,        /* the model summarises the conversation */
};

/* The state's name as the API and the event streams spell it ("idle",
 * "llm_requesting", ...): a static string; "?" for a value outside the
 * enum. */
const char *mote_conv_state_name(enum mote_conv_state s);

/* The recovery action's name as the API and the event streams spell it
 * ("idle", "continue", "tool_interrupted", "limit", "resume_tools"): a
 * static string; "?" for a value outside the enum. */
const char *mote_recovery_name(enum mote_recovery_action a);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_JOURNAL_H */
