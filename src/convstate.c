/* convstate.c - the conversation state machine: one pure, total function
 * from (state, event) to (state, effects), which the agent carries out
 * in order (conv.h); and the states' names. */
#include "conv.h"

#include "util.h"

struct mote_conv_step mote_conv_next(enum mote_conv_state s, enum mote_conv_event e)
{
    struct mote_conv_step r = {s, 0};
    bool talking = s == MOTE_CONV_LLM_REQUESTING || s == MOTE_CONV_STREAMING;
    bool tools = s == MOTE_CONV_TOOL_EXECUTING || s == MOTE_CONV_AWAITING_APPROVAL;
    bool compacting = s == MOTE_CONV_COMPACTING;
    bool active = talking || tools || compacting;
    bool resting = s == MOTE_CONV_IDLE || s == MOTE_CONV_ERROR || s == MOTE_CONV_NEEDS_RECOVERY;

    switch (e) {
    case MOTE_CEV_USER:
        if (resting) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_USER | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_RETRY:
        if (resting) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_FIRST_BYTE:
        if (s == MOTE_CONV_LLM_REQUESTING)
            r.state = MOTE_CONV_STREAMING;
        break;
    case MOTE_CEV_ANSWER_DONE:
        if (talking) {
            r.state = MOTE_CONV_IDLE;
            r.effects = MOTE_CEFF_JOURNAL_ANSWER;
        }
        break;
    case MOTE_CEV_ANSWER_TOOLS:
        if (talking) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_JOURNAL_ANSWER | MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_ASK:
        if (s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_AWAITING_APPROVAL;
            r.effects = MOTE_CEFF_ASK;
        }
        break;
    case MOTE_CEV_ANSWERED:
        if (s == MOTE_CONV_AWAITING_APPROVAL) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_TOOLS_DONE:
        if (s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_TURN_LIMIT:
        if (s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_ERROR;
            r.effects = MOTE_CEFF_JOURNAL_ERROR;
        }
        break;
    case MOTE_CEV_FAILED:
        if (active) {
            r.state = MOTE_CONV_ERROR;
            r.effects = (talking ? MOTE_CEFF_JOURNAL_PARTIAL
                         : tools ? MOTE_CEFF_KILL_TOOLS
                                 : 0u) |
                        MOTE_CEFF_JOURNAL_ERROR;
        }
        break;
    case MOTE_CEV_CANCELLED:
        if (active) {
            /* a summary being written is not an answer: nothing partial */
            r.state = MOTE_CONV_IDLE;
            r.effects = talking ? MOTE_CEFF_JOURNAL_PARTIAL
                        : tools ? MOTE_CEFF_KILL_TOOLS | MOTE_CEFF_JOURNAL_CANCEL
                                : MOTE_CEFF_JOURNAL_CANCEL;
        }
        break;
    case MOTE_CEV_SHUTDOWN_CUT:
        if (active) {
            r.state = MOTE_CONV_NEEDS_RECOVERY;
            r.effects = (talking ? MOTE_CEFF_JOURNAL_PARTIAL
                         : tools ? MOTE_CEFF_KILL_TOOLS
                                 : 0u) |
                        MOTE_CEFF_JOURNAL_MARK;
        }
        break;
    case MOTE_CEV_ANSWER_PAUSED:
        if (talking) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_ANSWER | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_COMPACT:
        if (s == MOTE_CONV_IDLE || s == MOTE_CONV_ERROR || s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_COMPACTING;
            r.effects = MOTE_CEFF_SEND_COMPACT;
        }
        break;
    case MOTE_CEV_OVERFLOW:
        if (s == MOTE_CONV_LLM_REQUESTING) {
            /* nothing came: the request record stays the turn's, the
             * summary's compact record (resume) comes after it */
            r.state = MOTE_CONV_COMPACTING;
            r.effects = MOTE_CEFF_SEND_COMPACT;
        }
        break;
    case MOTE_CEV_COMPACTED:
        if (compacting) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_COMPACT | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_COMPACTED_IDLE:
        if (compacting) {
            r.state = MOTE_CONV_IDLE;
            r.effects = MOTE_CEFF_JOURNAL_COMPACT;
        }
        break;
    case MOTE_CEV_CALL:
        if (resting) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_JOURNAL_CALL | MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_CALL_DONE:
        if (s == MOTE_CONV_TOOL_EXECUTING)
            r.state = MOTE_CONV_IDLE;
        break;
    case MOTE_CEV_DRAIN_STOP:
        if (active) {
            r.state = MOTE_CONV_NEEDS_RECOVERY;
            r.effects = MOTE_CEFF_JOURNAL_MARK;
        }
        break;
    case MOTE_CEV_STORAGE_FAILED:
        if (s != MOTE_CONV_ERROR) {
            r.state = MOTE_CONV_ERROR;
            r.effects = MOTE_CEFF_KILL_TOOLS; /* nothing can be journaled any more */
        }
        break;
    case MOTE_CEV_RECOVER_CONTINUE:
        if (s == MOTE_CONV_NEEDS_RECOVERY) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_AUTO | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_RECOVER_TOOLS:
        if (s == MOTE_CONV_NEEDS_RECOVERY) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_JOURNAL_AUTO | MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_RECOVER_CLOSE:
        if (s == MOTE_CONV_NEEDS_RECOVERY) {
            r.state = MOTE_CONV_ERROR;
            r.effects = MOTE_CEFF_JOURNAL_CLOSE;
        }
        break;
    case MOTE_CEV_RECOVER_IDLE:
        if (s == MOTE_CONV_NEEDS_RECOVERY)
            r.state = MOTE_CONV_IDLE;
        break;
    case MOTE_CEV_RECOVER_ERROR:
        if (s == MOTE_CONV_NEEDS_RECOVERY)
            r.state = MOTE_CONV_ERROR;
        break;
    }
    return r;
}

const char *mote_conv_state_name(enum mote_conv_state s)
{
    static const char *const names[] = {"idle",  "llm_requesting", "streaming",
                                        "tool_executing", "error", "needs_recovery",
                                        "awaiting_approval", "compacting"};

    return (unsigned)s < MOTE_ARRAY_LEN(names) ? names[s] : "?";
}

const char *mote_recovery_name(enum mote_recovery_action a)
{
    static const char *const names[] = {"idle", "continue", "tool_interrupted", "limit",
                                        "resume_tools"};

    return (unsigned)a < MOTE_ARRAY_LEN(names) ? names[a] : "?";
}
