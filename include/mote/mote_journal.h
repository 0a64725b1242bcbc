/*
 * mote_journal.h - durable conversations: the journal, recovery, and the
 * conversation state machine.
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

#define MOTE_JOURNAL_VERSION 1

/* The message of the synthetic result of a tool interrupted by a crash. */
#define MOTE_INTERRUPTED_TOOL "interrupted: the tool may or may not have run"

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
};

/* One tool call of an assistant record (pointers valid during a call). */
struct mote_call_rec {
    const char *id;
    const char *name;
    const char *input; /* a JSON object */
    size_t input_len;
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

struct mote_journal {
    struct mote_jbuf *buf; /* set by the caller before create/open (shared scratch) */
    const struct mote_port *port;
    int h;                 /* storage handle, -1 when closed */
    int err;               /* first failure, sticky: nothing more is written */
    char id[MOTE_CONV_ID_MAX];
    char name[MOTE_STORAGE_NAME_MAX];
    uint64_t size;         /* bytes of complete records */
    uint32_t records;
    /* opening report */
    bool repaired;         /* a torn tail was cut off (and kept aside) */
    uint32_t bad_line;     /* line number of damage before the tail */
    /* reading */
    uint64_t rd_off;       /* offset of the next record to read */
    uint64_t cur_off;      /* offset of the record last read (in buf) */
    uint32_t rd_line;
    /* part source cursor */
    unsigned part_base;    /* index of the first part of the current record */
    unsigned part_n;       /* parts the current record yields */
    int part_type;         /* type of the record in `json` */
    bool part_valid;
};

/* Creates conversation `id` (conversations/ID.jsonl, new) and writes and
 * syncs its header. j->buf must point to a struct mote_jbuf (it may be
 * shared with other journals). Returns 0, MOTE_ERR_EXIST, MOTE_ERR_INVAL
 * (bad id, or no j->buf), or a storage failure. */
int mote_journal_create(struct mote_journal *j, const struct mote_port *port,
                        const char *id) MOTE_MUST_CHECK;

/* Opens conversation `id`, checking and (for a torn tail) repairing it.
 * Returns 0 (j->repaired tells if the tail was cut), MOTE_ERR_NOENT,
 * MOTE_ERR_CORRUPT (j->bad_line has the line; the file is untouched), or
 * a storage failure. */
int mote_journal_open(struct mote_journal *j, const struct mote_port *port,
                      const char *id) MOTE_MUST_CHECK;

void mote_journal_close(struct mote_journal *j);

/* Record writers. Each formats one record, appends it with one write and
 * (when `sync`) makes it durable. A short or failed write is cut back so
 * no partial line stays. Return 0 or the (sticky) failure. */
int mote_journal_user(struct mote_journal *j, const char *text, size_t len);
int mote_journal_request(struct mote_journal *j, uint32_t attempt);
int mote_journal_assistant(struct mote_journal *j, const char *text, size_t len,
                           const char *stop, bool interrupted, const struct mote_call_rec *calls,
                           unsigned ncalls);
int mote_journal_tool_start(struct mote_journal *j, const char *call_id, int64_t pgid,
                            uint64_t start_time);
int mote_journal_tool_result(struct mote_journal *j, const char *call_id, const char *text,
                             size_t len, bool is_error);
int mote_journal_mark(struct mote_journal *j, const char *state);
int mote_journal_auto(struct mote_journal *j);
int mote_journal_error(struct mote_journal *j, const char *message);

/* Reads records from the start: mote_journal_rewind, then
 * mote_journal_next until it returns 0. Each record's JSON is in
 * j->buf->json (token 0 the object) until another journal call; returns
 * its type (> 0), 0 at the end, or < 0. */
void mote_journal_rewind(struct mote_journal *j);
int mote_journal_next(struct mote_journal *j);

/* A mote_part_fn over the journal (arg = the journal): user messages,
 * assistant text and tool calls, tool results, in order. */
int mote_journal_parts(void *arg, unsigned index, struct mote_part *p);

/* ---- recovery ---------------------------------------------------------- */

enum mote_recovery_action {
    MOTE_RECOVER_IDLE = 0,        /* nothing unfinished */
    MOTE_RECOVER_CONTINUE,        /* send the request again, without user input */
    MOTE_RECOVER_TOOL_INTERRUPTED, /* tools were cut off: write error results, go idle */
    MOTE_RECOVER_LIMIT,           /* would continue, but 2 automatic continues in a row were made */
};

struct mote_recovery {
    enum mote_recovery_action action;
    unsigned autos;               /* automatic continues since the last user message */
    unsigned nmissing;            /* tool calls with no result */
    char missing[MOTE_LLM_MAX_TOOL_CALLS][MOTE_LLM_ID_MAX];
    bool started[MOTE_LLM_MAX_TOOL_CALLS]; /* the tool had begun running */
    unsigned nkill;               /* process groups recorded for them */
    int64_t kill_pgid[MOTE_LLM_MAX_TOOL_CALLS];
    uint64_t kill_start[MOTE_LLM_MAX_TOOL_CALLS];
    char last_error[160];         /* the message of a trailing error record */
};

/* Decides what an interrupted conversation needs, from its records alone.
 * Returns 0 or a read failure. Writes nothing. */
int mote_recover(struct mote_journal *j, struct mote_recovery *r) MOTE_MUST_CHECK;

/* Applies a TOOL_INTERRUPTED decision: writes the synthetic error result
 * for every call without one and an error record that ends the turn (so a
 * later restart does not send by itself: the user can /retry), synced. */
int mote_recover_apply(struct mote_journal *j, const struct mote_recovery *r);

/* ---- the conversation state machine ----------------------------------- */

enum mote_conv_state {
    MOTE_CONV_IDLE = 0,
    MOTE_CONV_LLM_REQUESTING, /* a request is being sent (attempt in conv) */
    MOTE_CONV_STREAMING,
    MOTE_CONV_TOOL_EXECUTING,
    MOTE_CONV_ERROR,
    MOTE_CONV_NEEDS_RECOVERY,
};

enum mote_conv_event {
    MOTE_CEV_USER = 1,      /* the user sent a message */
    MOTE_CEV_RETRY,         /* /retry or a recovery continue */
    MOTE_CEV_FIRST_BYTE,    /* the answer started */
    MOTE_CEV_ANSWER_DONE,   /* the answer ended with no tool call */
    MOTE_CEV_ANSWER_TOOLS,  /* the answer ended with tool calls */
    MOTE_CEV_TOOLS_DONE,    /* every call has its result */
    MOTE_CEV_FAILED,        /* the request or a tool failed */
    MOTE_CEV_CANCELLED,     /* the user cancelled the turn */
    MOTE_CEV_SHUTDOWN_CUT,  /* shutdown timed out with the turn unfinished */
    MOTE_CEV_TURN_LIMIT,    /* --max-turns reached */
};

/* Effects, in the order they must happen (bits). Journal effects come
 * before the effects they make recoverable. */
#define MOTE_CEFF_JOURNAL_USER 0x001u      /* write the user record */
#define MOTE_CEFF_JOURNAL_REQUEST 0x002u   /* write a request record, sync */
#define MOTE_CEFF_SEND 0x004u              /* start the model request */
#define MOTE_CEFF_JOURNAL_ANSWER 0x008u    /* write the assistant record, sync */
#define MOTE_CEFF_RUN_TOOLS 0x010u         /* tool_start (synced) then run each tool */
#define MOTE_CEFF_JOURNAL_ERROR 0x020u     /* write an error record, sync */
#define MOTE_CEFF_JOURNAL_PARTIAL 0x040u   /* write the streamed text as interrupted */
#define MOTE_CEFF_JOURNAL_MARK 0x080u      /* write needs_recovery, sync */
#define MOTE_CEFF_KILL_TOOLS 0x100u        /* kill the running tools' groups */

struct mote_conv_step {
    enum mote_conv_state state;
    unsigned effects;
};

/* The transition function: pure, total. An event that makes no sense in
 * a state leaves the state as it is, with no effect. */
struct mote_conv_step mote_conv_next(enum mote_conv_state s, enum mote_conv_event e);

const char *mote_conv_state_name(enum mote_conv_state s);

#endif /* MOTE_JOURNAL_H */
