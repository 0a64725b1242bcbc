/*
 * agent_run.c - a tool call's run: what a tool may do while it runs (the
 * mote_tool_* API of mote_agent.h: write its result, fail, see its
 * deadline, read its input, record a process it started), the job that
 * steps a registry tool, and the result the run leaves when it ends.
 */
#include <string.h>

#include "agent_int.h"

/* Keeping the end of a long output: out[out_head, out_cap) is a ring of
 * the latest bytes, out_ring where the oldest is. Every byte that comes
 * drops one (the oldest of the ring, or itself). */
static void keep_end(struct mote_tool_run *run, const char *data, size_t len)
{
    size_t r, first;

    if (run->out_head == 0) {
        run->out_head = run->out_cap / 2;
        run->out_ring = 0;
    }
    r = run->out_cap - run->out_head;
    run->out_dropped += len;
    if (len >= r) {
        memcpy(run->out + run->out_head, data + len - r, r);
        run->out_ring = 0;
        return;
    }
    first = r - run->out_ring < len ? r - run->out_ring : len;
    memcpy(run->out + run->out_head + run->out_ring, data, first);
    memcpy(run->out + run->out_head, data + first, len - first);
    run->out_ring = (run->out_ring + len) % r;
}

static void reverse(char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n / 2; i++) {
        char t = p[i];

        p[i] = p[n - 1 - i];
        p[n - 1 - i] = t;
    }
}

static bool utf8_cont(char ch)
{
    return ((unsigned char)ch & 0xC0u) == 0x80u;
}

/* Puts a kept end in place: the ring turned so its oldest byte comes
 * first, the start cut after its last whole character (and line, if one
 * ends near the cut), the end begun at its first whole character (and
 * line), and the line saying how much was dropped between them. Once;
 * nothing more is kept after it. */
static void end_in_place(struct mote_tool_run *run)
{
    char *o = run->out;
    size_t h = run->out_head, cap = run->out_cap, r, hend, t0, win, i, back;
    char mark[96];
    struct mote_sb sb;

    if (run->out_ended || h == 0)
        return;
    run->out_ended = true;
    r = cap - h;
    reverse(o + h, run->out_ring);
    reverse(o + h + run->out_ring, r - run->out_ring);
    reverse(o + h, r);
    /* the start: no character cut short at its end */
    hend = h;
    for (back = 1; back <= 3 && back <= hend; back++) {
        unsigned char b = (unsigned char)o[hend - back];
        size_t need;

        if (utf8_cont((char)b))
            continue;
        need = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
        if (need > back)
            hend -= back;
        break;
    }
    t0 = h;
    while (t0 < cap && t0 < h + 3 && utf8_cont(o[t0]))
        t0++;
    win = h / 4 < 256 ? h / 4 : 256;
    for (i = 0; i < win && i < hend; i++) {
        if (o[hend - 1 - i] == '\n') {
            hend -= i;
            break;
        }
    }
    for (i = 0; i < win && t0 + i < cap; i++) {
        if (o[t0 + i] == '\n') {
            t0 += i + 1;
            break;
        }
    }
    run->out_dropped += (h - hend) + (t0 - h);
    mote_sb_init(&sb, mark, sizeof(mark));
    if (hend > 0 && o[hend - 1] != '\n')
        mote_sb_s(&sb, "\n");
    mote_sb_num(&sb, "[... ", run->out_dropped, " bytes of output dropped here ...]\n");
    MOTE_ASSERT(sb.len <= sizeof(run->out_buf) - MOTE_TOOL_OUTPUT_MAX);
    memmove(o + hend + sb.len, o + t0, cap - t0);
    memcpy(o + hend, mark, sb.len);
    run->out_len = hend + sb.len + (cap - t0);
    run->out_head = 0;
}

void mote_tool_out(struct mote_tool_run *run, const char *data, size_t len)
{
    size_t room = run->out_len < run->out_cap ? run->out_cap - run->out_len : 0;
    size_t take = len < room ? len : room;

    memcpy(run->out + run->out_len, data, take);
    run->out_len += take;
    if (take == len)
        return;
    if (run->out_keep_end && !run->out_ended && run->out_cap >= 64 &&
        run->out_cap <= MOTE_TOOL_OUTPUT_MAX && run->out == run->out_buf)
        keep_end(run, data + take, len - take);
    else
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
    return mote_json_cstr(&run->json, t, out, cap);
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
    bool nl;

    end_in_place(run);
    nl = run->out_len > 0 && run->out[run->out_len - 1] != '\n';
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

    end_in_place(run);
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
        /* Who stopped it: the user, or the shutdown when the time it gives
         * running work to finish (its drain, the shutdown timeout) ran
         * out - nobody cancelled then. */
        const char *why = shutting_down
                              ? "killed: mote was shutting down, and the tool had not ended when "
                                "the time given to finish running work (the shutdown timeout) "
                                "ran out"
                          : mcp ? "cancelled by the user (the MCP server was told)"
                                : "cancelled by the user: the tool was stopped";

        if (mcp) {
            mote_tool_outs(run, why);
        } else {
            char note[200];

            (void)mote_str_join(note, sizeof(note), "[", why, "]");
            mote_tool_note(run, note, 0, NULL);
        }
        run->is_error = true;
    }
    if (run->out_dropped > 0)
        mote_tool_note(run, "[output cut: ", run->out_dropped,
                       run->out_ended ? " bytes in the middle not shown: the start and the end "
                                        "are kept]"
                                      : " more bytes not shown]");
}
