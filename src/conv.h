/* conv.h - the conversation state machine's events, effects and
 * transition function (internal: the agent drives it; frontends see only
 * the states, enum mote_conv_state in mote_journal.h). */
#ifndef MOTE_CONV_INTERNAL_H
#define MOTE_CONV_INTERNAL_H

#include "mote/mote_journal.h"

enum mote_conv_event {
    MOTE_CEV_USER = 1,      /* the user sent a message */
    MOTE_CEV_RETRY,         /* /retry */
    MOTE_CEV_FIRST_BYTE,    /* the answer started */
    MOTE_CEV_ANSWER_DONE,   /* the answer ended with no tool call */
    MOTE_CEV_ANSWER_TOOLS,  /* the answer ended with tool calls */
    MOTE_CEV_TOOLS_DONE,    /* every call has its result */
    MOTE_CEV_FAILED,        /* the request or a tool failed */
    MOTE_CEV_CANCELLED,     /* the user cancelled the turn */
    MOTE_CEV_SHUTDOWN_CUT,  /* shutdown timed out with the turn unfinished */
    MOTE_CEV_TURN_LIMIT,    /* --max-turns reached */
    MOTE_CEV_ASK,           /* a call needs the user's approval */
    MOTE_CEV_ANSWERED,      /* the user answered it */
    MOTE_CEV_DRAIN_STOP,    /* a drain reached new work it must not start */
    MOTE_CEV_STORAGE_FAILED, /* the journal cannot be written: nothing more runs */
    MOTE_CEV_RECOVER_CONTINUE, /* on open: send the request again */
    MOTE_CEV_RECOVER_TOOLS, /* on open: go on with calls that never started */
    MOTE_CEV_RECOVER_CLOSE, /* on open: close the round (interrupted, or the limit) */
    MOTE_CEV_RECOVER_IDLE,  /* on open: nothing to do */
    MOTE_CEV_RECOVER_ERROR, /* on open: the last turn had failed */
    MOTE_CEV_ANSWER_PAUSED, /* the answer stopped with pause_turn: ask again */
    MOTE_CEV_COMPACT,       /* summarise the conversation now (by hand, or it is full) */
    MOTE_CEV_COMPACTED,     /* the summary is in; the turn (if any) goes on */
    MOTE_CEV_COMPACTED_IDLE, /* the summary is in; nothing else to do */
    MOTE_CEV_CALL,          /* a call from outside the model (a calls journal) */
    MOTE_CEV_CALL_DONE,     /* its result is in: the turn ends, no model request */
    MOTE_CEV_OVERFLOW,      /* the request is over the model's context window: summarise,
                             * then ask again */
};

/* Effects (bits). The agent carries out a step's effects journal first:
 * each record is written before the effect it makes recoverable (user,
 * auto and request records before the send, the assistant record before
 * any tool runs). */
#define MOTE_CEFF_JOURNAL_USER 0x001u      /* write the user record */
#define MOTE_CEFF_JOURNAL_AUTO 0x200u      /* write an auto record (recovery goes on by itself) */
#define MOTE_CEFF_JOURNAL_REQUEST 0x002u   /* write a request record, sync */
#define MOTE_CEFF_SEND 0x004u              /* start the model request */
#define MOTE_CEFF_JOURNAL_ANSWER 0x008u    /* write the assistant record, sync */
#define MOTE_CEFF_RUN_TOOLS 0x010u         /* tool_start (synced) then run each tool */
#define MOTE_CEFF_JOURNAL_ERROR 0x020u     /* write an error record, sync */
#define MOTE_CEFF_JOURNAL_PARTIAL 0x040u   /* write the streamed text as interrupted */
#define MOTE_CEFF_JOURNAL_MARK 0x080u      /* write needs_recovery, sync */
#define MOTE_CEFF_KILL_TOOLS 0x100u        /* kill the running tools' groups */
#define MOTE_CEFF_JOURNAL_CANCEL 0x400u    /* results for calls not run, then a cancel record */
#define MOTE_CEFF_JOURNAL_CLOSE 0x800u     /* mote_recover_apply: close the round */
#define MOTE_CEFF_ASK 0x1000u              /* ask the user (MOTE_EV_APPROVAL) */
#define MOTE_CEFF_SEND_COMPACT 0x2000u     /* start the summarising request */
#define MOTE_CEFF_JOURNAL_COMPACT 0x4000u  /* write the compact record, sync */
#define MOTE_CEFF_JOURNAL_CALL 0x8000u     /* write the call's assistant record, sync */

struct mote_conv_step {
    enum mote_conv_state state;
    unsigned effects; /* MOTE_CEFF_* bits */
};

/* The transition from state `s` on event `e`: pure and total. An event
 * that makes no sense in a state leaves the state as it is, with no
 * effect. */
struct mote_conv_step mote_conv_next(enum mote_conv_state s, enum mote_conv_event e);

#endif /* MOTE_CONV_INTERNAL_H */
