/* agent_json.c - the session's events as JSON lines (mote_event_json in
 * mote_agent.h): the stream-json format a program reads from mote. */
#include "mote/mote_agent.h"
#include "mote/mote_err.h"
#include "mote/mote_json.h"

int mote_event_json(mote_sink_fn sink, void *arg, const struct mote_event *ev)
{
    const struct mote_usage *u = &ev->turn_usage;
    bool result = ev->type == MOTE_EV_TOOL_RESULT;
    struct mote_jw w;

    switch (ev->type) {
    case MOTE_EV_TEXT:
    case MOTE_EV_THINKING:
    case MOTE_EV_APPROVAL:
    case MOTE_EV_TOOL_CALL:
    case MOTE_EV_TOOL_RESULT:
    case MOTE_EV_TURN_END:
    case MOTE_EV_ERROR:
        break;
    default:
        return 0; /* not in the format: nothing written */
    }
    mote_jw_init(&w, sink, arg);
    mote_jw_obj(&w);
    mote_jw_key(&w, "type");
    switch (ev->type) {
    case MOTE_EV_TEXT:
    case MOTE_EV_THINKING:
        mote_jw_str(&w, ev->type == MOTE_EV_TEXT ? "text" : "thinking");
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        break;
    case MOTE_EV_APPROVAL:
    case MOTE_EV_TOOL_CALL:
    case MOTE_EV_TOOL_RESULT:
        mote_jw_str(&w, result ? "tool_result" : "tool_call");
        mote_jw_kstr(&w, "id", ev->id);
        mote_jw_kstr(&w, "name", ev->name);
        mote_jw_key(&w, result ? "is_error" : "input");
        if (result)
            mote_jw_bool(&w, ev->is_error);
        else if (ev->input_len > 0)
            mote_jw_raw(&w, ev->input, ev->input_len); /* as journaled: strict JSON */
        else
            mote_jw_raw(&w, "{}", 2);
        if (result) {
            mote_jw_key(&w, "text");
            mote_jw_strn(&w, ev->text, ev->len);
        }
        break;
    case MOTE_EV_TURN_END:
        mote_jw_str(&w, "turn_end");
        mote_jw_kstr(&w, "stop_reason", ev->stop_reason != NULL ? ev->stop_reason : "");
        mote_jw_key(&w, "usage");
        mote_jw_obj(&w);
        mote_jw_kint(&w, "input_tokens", (int64_t)u->input_tokens);
        mote_jw_kint(&w, "output_tokens", (int64_t)u->output_tokens);
        if (u->cache_read_tokens > 0 || u->cache_write_tokens > 0) {
            mote_jw_kint(&w, "cache_read_input_tokens", (int64_t)u->cache_read_tokens);
            mote_jw_kint(&w, "cache_creation_input_tokens", (int64_t)u->cache_write_tokens);
        }
        mote_jw_obj_end(&w);
        break;
    default:
        mote_jw_str(&w, "error");
        mote_jw_kstr(&w, "code", mote_err_name(ev->code));
        mote_jw_key(&w, "message");
        mote_jw_strn(&w, ev->text, ev->len);
        break;
    }
    mote_jw_obj_end(&w);
    if (w.err == 0)
        w.err = sink(arg, "\n", 1);
    return w.err < 0 ? w.err : 1;
}
