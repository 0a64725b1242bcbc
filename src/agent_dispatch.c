/*
 * agent_dispatch.c - which tool a call runs, and whether it may: the
 * session's tool registry and its name rule, the one resolution of a
 * call's name (registry or MCP, as the conversation offers them), the
 * approval policy and its question, and starting the approved call on a
 * run slot.
 *
 * Names are unique across the registry and the MCP servers: a registry
 * name never holds "__", and an MCP tool is always offered as
 * SERVER__TOOL (mcp.c keeps those unique among the servers). So a name
 * means one tool, and the policy a call meets is that of the tool it runs.
 */
#include <string.h>

#include "agent_int.h"
#include "mote/mote_time.h"

static void arm(struct mote_session *s);

static const struct mote_tool *find_tool(const struct mote_session *s, const char *name)
{
    unsigned i;

    for (i = 0; i < s->ntools; i++) {
        if (strcmp(s->tools[i]->name, name) == 0)
            return s->tools[i];
    }
    return NULL;
}

int mote_session_add_tool(struct mote_session *s, const struct mote_tool *tool)
{
    size_t n;

    if (tool == NULL || tool->name == NULL || tool->step == NULL || tool->schema == NULL)
        return MOTE_ERR_INVAL;
    n = strlen(tool->name);
    if (n == 0 || n > 64 || strstr(tool->name, "__") != NULL)
        return MOTE_ERR_INVAL; /* "__" is the MCP tools' SERVER__TOOL */
    if (!mote_word_chars(tool->name, n))
        return MOTE_ERR_INVAL;
    if (find_tool(s, tool->name) != NULL)
        return MOTE_ERR_EXIST;
    if (s->ntools >= MOTE_MAX_TOOLS)
        return MOTE_ERR_FULL;
    s->tools[s->ntools++] = tool;
    return 0;
}

/* What a call of `name` runs in conversation `c`: the registry's tool if
 * the conversation offers the registry (conf.tools; *tool set), else an
 * MCP server's if it offers theirs (conf.mcp; *tool NULL). False: no tool
 * of this conversation has that name. */
static bool resolve(const struct mote_conv *c, const char *name, const struct mote_tool **tool)
{
    const struct mote_session *s = c->s;
    unsigned srv, idx;

    *tool = c->conf.tools ? find_tool(s, name) : NULL;
    if (*tool != NULL)
        return true;
    return c->conf.mcp && s->mcp != NULL &&
           (mote_mcp_find(s->mcp, name, &srv, &idx) || mote_mcp_res_find(s->mcp, name, &idx));
}

bool mote_dispatch_always(const struct mote_conv *c, const char *name)
{
    unsigned i;

    for (i = 0; i < c->nallowed; i++) {
        if (strcmp(c->allowed[i], name) == 0)
            return true;
    }
    return false;
}

static const struct mote_tool_rule *rule_of(const struct mote_conv *c, const char *name)
{
    unsigned i;

    for (i = 0; c->conf.rules != NULL && i < c->conf.nrules; i++) {
        if (c->conf.rules[i].name != NULL && strcmp(c->conf.rules[i].name, name) == 0)
            return &c->conf.rules[i];
    }
    return NULL;
}

/* The policy of a call of `name` that runs `tool` (NULL: an MCP tool, or
 * none). */
static enum mote_approval policy_of(const struct mote_conv *c, const char *name,
                                    const struct mote_tool *tool)
{
    const struct mote_tool_rule *r = rule_of(c, name);
    enum mote_approval a;

    if (r != NULL)
        a = r->approval;
    else if (tool != NULL && (tool->flags & MOTE_TOOL_NO_APPROVAL) != 0)
        a = MOTE_APPROVE_ALLOW;
    else
        a = c->conf.approval;
    /* "always" (journaled) allows what would be asked about, and what the
     * default refuses, never what a rule refuses */
    if (a != MOTE_APPROVE_ALLOW && mote_dispatch_always(c, name) &&
        !(r != NULL && a == MOTE_APPROVE_DENY))
        a = MOTE_APPROVE_ALLOW;
    return a;
}

enum mote_approval mote_conv_policy(const struct mote_conv *c, const char *name)
{
    const struct mote_tool *tool;

    return policy_of(c, name, resolve(c, name, &tool) ? tool : NULL);
}

uint32_t mote_conv_pending(const struct mote_conv *c, const struct mote_conv_call **call)
{
    bool open = c->used && c->st == MOTE_CONV_AWAITING_APPROVAL && !c->answered &&
                c->ask_id != 0 && c->call_i < c->ncalls;

    if (call != NULL)
        *call = open ? &c->calls[c->call_i] : NULL;
    return open ? c->ask_id : 0;
}

/* Reads call `i`'s input from the journal into `out`; returns its length
 * or < 0. */
static int load_input(struct mote_conv *c, unsigned i, char *out, size_t cap)
{
    return mote_journal_call_input(&c->jr, c->calls[i].rec_off, c->calls[i].rec_idx, out, cap,
                                   NULL);
}

/* True if a read of a call's input back failed for want of storage (the
 * conversation cannot go on), not because of what the record holds. */
static bool storage_broke(int n)
{
    return n < 0 && n != MOTE_ERR_TOO_LARGE && n != MOTE_ERR_CORRUPT;
}

/* ---- approvals' deadlines: one session timer at the earliest ---------------- */

/* "denied: nobody approved within 10 minutes" into m (cap bytes). */
static const char *expired_says(const struct mote_conv *c, char *m, size_t cap)
{
    char d[48];

    (void)mote_duration_say(d, sizeof(d), c->conf.approval_timeout_ms);
    (void)mote_str_join(m, cap, "denied: nobody approved within ", d,
                        " (the approval's deadline passed; the call did not run)");
    return m;
}

/* The question of `c` found unanswered at its deadline: answered no, as
 * if by the user, and said so. */
static void expire(struct mote_conv *c)
{
    const struct mote_conv_call *call = &c->calls[c->call_i];
    char m[160];
    struct mote_event ev;

    c->ask_timed = false;
    c->answered = true;
    c->answer = MOTE_ANSWER_NO;
    c->expired = true;
    c->refusal[0] = '\0';
    mote_emit_init(&ev, MOTE_EV_APPROVAL_EXPIRED, c);
    ev.ask_id = c->ask_id;
    ev.id = call->id;
    ev.name = call->name;
    ev.text = expired_says(c, m, sizeof(m));
    ev.len = strlen(m);
    ev.timeout_ms = c->conf.approval_timeout_ms;
    mote_emit(c->s, &ev);
    mote_session_defer(c->s);
}

static void on_ask_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_session *s = arg;
    uint32_t now = mote_loop_now(loop);
    unsigned i;

    (void)t;
    s->ask_timer = 0;
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used || !c->ask_timed)
            continue;
        if (mote_conv_pending(c, NULL) != c->ask_id)
            c->ask_timed = false; /* answered, cancelled or closed meanwhile */
        else if (!mote_before(now, c->ask_deadline))
            expire(c);
    }
    arm(s);
}

static void arm(struct mote_session *s)
{
    uint32_t now = mote_loop_now(s->loop), first = 0;
    bool any = false;
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        const struct mote_conv *c = &s->conv[i];

        if (c->used && c->ask_timed && (!any || mote_before(c->ask_deadline, first))) {
            first = c->ask_deadline;
            any = true;
        }
    }
    if (s->ask_timer != 0)
        (void)mote_timer_stop(s->loop, s->ask_timer);
    s->ask_timer = 0;
    if (any && mote_timer_start(s->loop, mote_before(now, first) ? first - now : 0, on_ask_timer,
                                s, 0, &s->ask_timer) < 0)
        s->ask_timer = 0; /* no timer free: the next question's arm tries again */
}

void mote_dispatch_ask(struct mote_conv *c)
{
    struct mote_conv_call *call;
    struct mote_event ev;
    int n;

    MOTE_ASSERT(c->call_i < c->ncalls);
    call = &c->calls[c->call_i];
    /* The input, read back into the journal's buffer: valid during the
     * event (approving never touches the journal). mote_dispatch_next read
     * it a moment ago: failing now, the storage failed, and nothing is
     * asked (never a question showing other than what would run). */
    n = load_input(c, c->call_i, c->s->jbuf.text, sizeof(c->s->jbuf.text));
    if (n < 0) {
        mote_conv_storage_failed(c, storage_broke(n) ? n : MOTE_ERR_IO);
        return;
    }
    c->ask_id++;
    if (c->ask_id == 0)
        c->ask_id = 1;
    c->answered = false;
    c->expired = false;
    c->ask_timed = c->conf.approval_timeout_ms > 0;
    if (c->ask_timed) {
        c->ask_deadline = mote_loop_now(c->s->loop) + c->conf.approval_timeout_ms;
        arm(c->s);
    }
    mote_emit_state(c);
    mote_emit_init(&ev, MOTE_EV_APPROVAL, c);
    ev.ask_id = c->ask_id;
    ev.id = call->id;
    ev.name = call->name;
    ev.input = c->s->jbuf.text;
    ev.input_len = (size_t)n;
    ev.timeout_ms = c->conf.approval_timeout_ms;
    mote_emit(c->s, &ev);
}

/* The result of a call that does not run: why (`m`, `cap` bytes, holds
 * what is composed). */
static const char *bad_input_says(const struct mote_conv_call *call, char *m, size_t cap)
{
    struct mote_sb sb;

    if (call->why[0] != '\0') {
        mote_sb_init(&sb, m, cap);
        mote_sb_s(&sb, "refused, not run: the tool input is ambiguous: ");
        mote_sb_s(&sb, call->why);
        mote_sb_s(&sb, strncmp(call->why, "duplicate", 9) == 0
                           ? " (a member given twice: JSON readers differ on which one counts, "
                             "so what is shown could differ from what runs); send each member "
                             "once"
                           : " (a string ends at a NUL where it is used, as a command or a "
                             "path, so what runs would not be all that was sent); send it "
                             "without the NUL");
        return m;
    }
    if (call->cut_off)
        return "not run: the answer reached the token limit (max_tokens) before this call's "
               "input was complete";
    if (call->too_big)
        return "not run: the tool input is larger than mote keeps in one journal record (too "
               "many bytes or JSON values); send it in smaller parts";
    return "the tool input was not one valid JSON object (RFC 8259: complete, UTF-8, with "
           "control characters inside strings escaped, such as \\n for a newline)";
}

enum mote_dispatch mote_dispatch_next(struct mote_conv *c)
{
    while (c->call_i < c->ncalls) {
        struct mote_conv_call *call = &c->calls[c->call_i];
        const struct mote_tool *tool = NULL;
        const char *say = NULL; /* the result of a call that does not run */
        char m[MOTE_LLM_NAME_MAX + sizeof(c->refusal) + 200];
        struct mote_sb sb;

        if (c->st != MOTE_CONV_TOOL_EXECUTING || c->tool_job != 0 || c->want_run)
            return MOTE_DISPATCH_WAIT;
        if (call->has_result) {
            c->call_i++;
            continue;
        }
        if (c->s->sd_phase != MOTE_SDP_NONE)
            return MOTE_DISPATCH_DRAIN; /* no new tool starts; it runs after a restart */
        if (call->bad_input) {
            say = bad_input_says(call, m, sizeof(m));
        } else if (!resolve(c, call->name, &tool)) {
            mote_sb_init(&sb, m, sizeof(m));
            mote_sb_s(&sb, "unknown tool '");
            mote_sb_s(&sb, call->name);
            mote_sb_s(&sb, "'");
            say = m;
        } else if (c->answered) {
            /* the user's answer to this very call's question */
            c->answered = false;
            if (c->answer == MOTE_ANSWER_NO && c->expired) {
                c->expired = false;
                say = expired_says(c, m, sizeof(m));
            } else if (c->answer == MOTE_ANSWER_NO) {
                mote_sb_init(&sb, m, sizeof(m));
                mote_sb_s(&sb, "the user refused to run this tool call");
                if (c->refusal[0] != '\0') {
                    mote_sb_s(&sb, ": ");
                    mote_sb_s(&sb, c->refusal);
                }
                say = m;
            }
        } else {
            enum mote_approval policy = policy_of(c, call->name, tool);

            if (policy == MOTE_APPROVE_DENY)
                say = c->conf.deny_reason != NULL
                          ? c->conf.deny_reason
                          : "refused: the user's policy does not allow tools";
            else if (policy == MOTE_APPROVE_ASK) {
                /* A question shows the whole input: one that cannot be
                 * read back is never asked about (it could not run
                 * either). */
                int n = load_input(c, c->call_i, c->s->jbuf.text, sizeof(c->s->jbuf.text));

                if (n >= 0)
                    return MOTE_DISPATCH_ASK;
                if (storage_broke(n)) {
                    mote_conv_storage_failed(c, n);
                    return MOTE_DISPATCH_WAIT;
                }
                say = "not run: its input could not be read back from the journal, so it "
                      "could not be shown for approval";
            }
        }
        if (say != NULL) {
            mote_emit_state(c); /* (tool_executing: told before the result) */
            if (!mote_conv_give_result_s(c, say, true))
                return MOTE_DISPATCH_WAIT;
            continue;
        }
        c->run_tool = tool;
        return MOTE_DISPATCH_RUN;
    }
    return c->st == MOTE_CONV_TOOL_EXECUTING ? MOTE_DISPATCH_ROUND_DONE : MOTE_DISPATCH_WAIT;
}

int mote_dispatch_start(struct mote_conv *c, mote_cont_fn done)
{
    struct mote_session *s = c->s;
    const struct mote_tool *tool = c->run_tool;
    struct mote_conv_call *call;
    struct mote_tool_run *run;
    struct mote_event ev;
    unsigned srv = 0, idx = 0, res = MOTE_MCP_RES_TOOLS;
    uint64_t before;
    int n, rc;

    MOTE_ASSERT(c->call_i < c->ncalls && c->tool_job == 0);
    call = &c->calls[c->call_i];
    if (tool == NULL && (s->mcp == NULL || !mote_mcp_find(s->mcp, call->name, &srv, &idx)) &&
        (s->mcp == NULL || !mote_mcp_res_find(s->mcp, call->name, &res)))
        /* its server's tool list changed while the call waited for a slot */
        return mote_conv_give_result_s(c, "not run: the MCP server no longer offers this tool",
                                       true)
                   ? 1
                   : MOTE_ERR_IO;
    run = mote_run_get(s, c);
    if (run == NULL) {
        c->want_run = true;
        c->queue_seq = ++s->queue_seq;
        return 0;
    }
    c->want_run = false;
    c->run = run;
    run->tool = tool;
    run->call_id = call->id;
    n = load_input(c, c->call_i, run->in_buf, sizeof(run->in_buf));
    if (n < 0 || mote_json_parse(&run->json, run->in_buf, (size_t)n) <= 0) {
        mote_run_put(c);
        if (storage_broke(n)) {
            mote_conv_storage_failed(c, n);
            return n;
        }
        return mote_conv_give_result_s(c, "the tool input could not be read back", true)
                   ? 1
                   : MOTE_ERR_IO;
    }
    run->input = run->in_buf;
    run->input_len = (size_t)n;
    run->timeout_ms = s->conf.tool_timeout_ms;
    run->deadline = mote_loop_now(s->loop) + run->timeout_ms;
    /* Durable before it runs: a crash now leaves a call that recovery
     * closes with an error, never runs again. A tool that records its own
     * start (its process, held until then) writes the call's one record. */
    if (tool == NULL || (tool->flags & MOTE_TOOL_OWN_START) == 0) {
        before = c->jr.size;
        rc = mote_journal_tool_start(&c->jr, call->id, 0, 0, NULL);
        if (!mote_conv_journaled(c, rc, before)) {
            mote_run_put(c);
            return rc < 0 ? rc : MOTE_ERR_IO;
        }
        call->started = true;
    }
    mote_emit_state(c); /* tool_executing, before the call it runs */
    mote_emit_init(&ev, MOTE_EV_TOOL_CALL, c);
    ev.id = call->id;
    ev.name = call->name;
    ev.input = run->input;
    ev.input_len = run->input_len;
    mote_emit(s, &ev);
    if (tool == NULL) {
        if (res < MOTE_MCP_RES_TOOLS) /* a resource tool (its input parsed above) */
            mote_mcp_res_call_init(&run->st.mcp, s->mcp, res, &run->json, run->input,
                                   run->input_len);
        else
            mote_mcp_call_init(&run->st.mcp, s->mcp, srv, idx, run->input, run->input_len);
        rc = mote_job_spawn(s->loop, call->name, &mote_mcp_call_ops, &run->st.mcp, &c->turn,
                            &c->tool_job);
    } else {
        rc = mote_job_spawn(s->loop, call->name, &mote_run_ops, run, &c->turn, &c->tool_job);
    }
    if (rc == 0)
        rc = mote_job_then(s->loop, c->tool_job, "agent", done, c);
    if (rc < 0) {
        if (c->tool_job != 0)
            (void)mote_job_cancel(s->loop, c->tool_job);
        c->tool_job = 0;
        mote_run_put(c);
        return mote_conv_give_result_s(c, rc == MOTE_ERR_SHUTDOWN
                                              ? "not run: mote was shutting down"
                                              : "cannot start the tool",
                                       true)
                   ? 1
                   : MOTE_ERR_IO;
    }
    return 0;
}
