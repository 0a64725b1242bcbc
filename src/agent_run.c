/*
 * agent_run.c - a tool call's run: what a tool may do while it runs (the
 * mote_tool_* API of mote_agent.h: write its result, fail, see its
 * deadline, read its input, record a process it started), the job that
 * steps a registry tool, and the result the run leaves when it ends.
 */
#include <string.h>

#include "agent_int.h"

void mote_tool_out(struct mote_tool_run *run, const char *data, size_t len)
{
    size_t room = run->out_len < run->out_cap ? run->out_cap - run->out_len : 0;
    size_t take = len < room ? len : room;

    memcpy(run->out + run->out_len, data, take);
    run->out_len += take;
    run->out_dropped += len - take;
}

void mote_tool_outs(struct mote_tool_run *run, const char *s)
{
    mote_tool_out(run, s, strlen(s));
}

void mote_tool_fail(struct mote_loop *loop, mote_job_id self, const char *msg)
{
    (void)mote_job_set_error(loop, self, msg);
}

bool mote_tool_timed_out(const struct mote_loop *loop, const struct mote_tool_run *run)
{
    return !mote_before(mote_loop_now(loop), run->deadline);
}

int mote_tool_arg(const struct mote_tool_run *run, const char *key, char *out, size_t cap)
{
    int t = mote_json_member(&run->json, 0, key);

    if (mote_json_type_of(&run->json, t) != MOTE_JSON_STRING)
        return MOTE_ERR_INVAL;
    return mote_json_str(&run->json, t, out, cap);
}

int mote_tool_started_process(struct mote_tool_run *run, int64_t pid)
{
    const struct mote_port *p = run->session->port;
    struct mote_conv *c = run->conv;
    int64_t g = MOTE_PORT_HAS(p, proc_group) ? p->proc_group(p->ctx, pid) : 0;
    bool held = MOTE_PORT_HAS(p, proc_spawn_held) && MOTE_PORT_HAS(p, proc_go);
    uint64_t start, before = c->jr.size;
    char tag[MOTE_PROC_TAG_MAX];
    int rc;

    MOTE_ASSERT(run->used && c != NULL && c->run == run);
    /* Where the port can hold a start, its group is worth the wait (the
     * program has not run); where it cannot, the program runs already:
     * the record goes now, with what is known. */
    if (g == MOTE_ERR_AGAIN && held)
        return MOTE_ERR_AGAIN;
    start = g > 0 && MOTE_PORT_HAS(p, proc_start_time) ? p->proc_start_time(p->ctx, g) : 0;
    tag[0] = '\0';
    if (MOTE_PORT_HAS(p, proc_tag) && p->proc_tag(p->ctx, pid, tag, sizeof(tag)) < 0)
        tag[0] = '\0';
    rc = mote_journal_tool_start(&c->jr, run->call_id, g > 0 ? g : 0, start, tag);
    if (!mote_conv_journaled(c, rc, before))
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (c->call_i < c->ncalls)
        c->calls[c->call_i].started = true;
    return 0;
}

static int run_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct mote_tool_run *run = task;

    return run->tool->step(loop, self, run);
}

static void run_release(struct mote_loop *loop, void *task)
{
    struct mote_tool_run *run = task;

    if (run->tool->release != NULL)
        run->tool->release(loop, run);
}

const struct mote_task_ops mote_run_ops = {"tool", run_step, run_release};

void mote_tool_note(struct mote_tool_run *run, const char *a, uint64_t num, const char *b)
{
    char text[200];
    struct mote_sb sb;
    bool nl = run->out_len > 0 && run->out[run->out_len - 1] != '\n';

    mote_sb_init(&sb, text, sizeof(text));
    mote_sb_num(&sb, a, num, b);
    if (run->out_len + sb.len + nl <= sizeof(run->out_buf)) {
        if (nl)
            run->out[run->out_len++] = '\n';
        memcpy(run->out + run->out_len, text, sb.len);
        run->out_len += sb.len;
    }
}

void mote_run_finish(struct mote_tool_run *run, enum mote_job_state how, const char *errmsg,
                     bool shutting_down)
{
    bool mcp = run->tool == NULL;

    if (mcp) {
        const struct mote_mcp_call *m = &run->st.mcp;

        run->out_len = 0;
        if (how == MOTE_JOB_DONE) {
            mote_tool_out(run, m->result, m->len);
            run->is_error = m->is_error;
        }
    }
    if (how == MOTE_JOB_FAILED) {
        run->out_len = 0;
        mote_tool_outs(run, "the tool failed: ");
        mote_tool_outs(run, errmsg);
        run->is_error = true;
    } else if (how == MOTE_JOB_CANCELLED) {
        if (run->out_len == 0 || mcp)
            mote_tool_outs(run, shutting_down ? "killed: mote was shutting down"
                                : mcp         ? "cancelled by the user (the MCP server was told)"
                                              : "cancelled by the user");
        run->is_error = true;
    }
    if (run->out_dropped > 0)
        mote_tool_note(run, "[output cut: ", run->out_dropped, " more bytes not shown]");
}
