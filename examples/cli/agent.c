/*
 * agent.c - one conversation: user message -> journal -> model request ->
 * streamed answer -> journal -> tools (approved, journaled before they
 * run) -> results -> model again, until the model ends the turn. Every
 * step goes through mote_conv_next, and the journal is written before the
 * effect it makes recoverable.
 */
#define _GNU_SOURCE
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mote/mote_posix.h"

/* ---- the tools' definitions ---- */

static const struct mote_tool_def tool_defs[] = {
    {"shell",
     "Run a command with /bin/sh on the user's machine and get its output (stdout and stderr, "
     "cut at 16 KiB) and exit status. Runs in its own process group with a timeout.",
     "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\":"
     "\"the shell command\"}},\"required\":[\"command\"]}"},
    {"read_file", "Read a text file (at most 16 KiB).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}"},
    {"write_file", "Write a text file (replaced atomically).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":"
     "\"string\"}},\"required\":[\"path\",\"content\"]}"},
    {"list_dir", "List a directory's entries (a trailing / marks directories).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]}"},
};

/* ---- output ---- */

static int out_sink(void *arg, const char *p, size_t n)
{
    fwrite(p, 1, n, (FILE *)arg);
    return 0;
}

static void json_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    mote_json_escape_to(out_sink, f, s, n);
    fputc('"', f);
}

static void spin_clear(struct agent *a)
{
    if (a->spinning) {
        fputs("\r            \r", stderr);
        fflush(stderr);
        a->spinning = false;
    }
}

/* A spinner on stderr (terminals only) until the first token arrives. */
static void spin(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    static const char frames[] = "|/-\\";
    struct agent *a = arg;

    (void)t;
    if (a->got_first || a->st != MOTE_CONV_LLM_REQUESTING || a->shutting_down) {
        spin_clear(a);
        return;
    }
    fprintf(stderr, "\r%c waiting", frames[a->spin_i++ % 4]);
    fflush(stderr);
    a->spinning = true;
    if (mote_timer_start(loop, 120, spin, a, 0, NULL) < 0)
        spin_clear(a); /* no timer free: no spinner, nothing else lost */
}

static void end_line(struct agent *a)
{
    spin_clear(a);
    if (a->line_open && !a->json_out) {
        fputc('\n', stdout);
        a->line_open = false;
    }
    fflush(stdout);
}

static void say(struct agent *a, const char *color, const char *msg)
{
    end_line(a);
    if (a->json_out)
        return;
    if (a->color)
        fprintf(stderr, "\033[%sm%s\033[0m\n", color, msg);
    else
        fprintf(stderr, "%s\n", msg);
}

static void emit_error(struct agent *a, const char *msg)
{
    end_line(a);
    if (a->json_out) {
        printf("{\"type\":\"error\",\"message\":");
        json_str(stdout, msg, strlen(msg));
        printf("}\n");
        fflush(stdout);
    } else if (a->color) {
        fprintf(stderr, "\033[31mmote: %s\033[0m\n", msg);
    } else {
        fprintf(stderr, "mote: %s\n", msg);
    }
}

void agent_emit_shutdown(struct agent *a, const char *reason, int code)
{
    end_line(a);
    if (a->json_out) {
        printf("{\"type\":\"shutdown\",\"reason\":\"%s\",\"exit_code\":%d}\n", reason, code);
        fflush(stdout);
    }
}

/* A short, one-line form of a tool call's input for the display. */
static void short_input(const struct agent_call *c, char *out, size_t cap)
{
    static struct mote_json js;
    const char *keys[] = {"command", "path"};
    size_t i;

    out[0] = '\0';
    if (mote_json_parse(&js, c->input, c->input_len) > 0) {
        for (i = 0; i < 2; i++) {
            int t = mote_json_member(&js, 0, keys[i]);

            if (t >= 0 && mote_json_str(&js, t, out, cap) >= 0)
                break;
        }
    }
    if (out[0] == '\0')
        snprintf(out, cap, "%.*s", (int)(c->input_len < 80 ? c->input_len : 80), c->input);
    for (i = 0; out[i] != '\0'; i++) {
        if (out[i] == '\n' || out[i] == '\r' || out[i] == '\t')
            out[i] = ' ';
    }
    if (strlen(out) > 100)
        strcpy(out + 97, "...");
}

/* ---- the part source adds nothing: requests replay the journal ---- */

void agent_init(struct agent *a, struct mote_loop *loop, struct mote_llm_conf *conf,
                const char *model, bool tools)
{
    a->loop = loop;
    a->port = loop->port;
    a->conf = conf;
    a->st = MOTE_CONV_IDLE;
    memset(&a->req, 0, sizeof(a->req));
    a->req.provider = conf->provider;
    a->req.model = model;
    a->req.max_tokens = 4096;
    a->req.system = "You are mote, a small agent running on the user's machine. Be brief. "
                    "Use the tools when they help; say what you did.";
    a->tools_on = tools;
    a->req.tools = a->all_tools;
    a->req.ntools = 0;
    a->req.parts = mote_journal_parts;
    a->req.parts_arg = &a->jr;
    if (a->max_turns == 0)
        a->max_turns = 25;
    if (a->tool_timeout_ms == 0)
        a->tool_timeout_ms = 120000;
}

bool agent_busy(const struct agent *a)
{
    return a->st == MOTE_CONV_LLM_REQUESTING || a->st == MOTE_CONV_STREAMING ||
           a->st == MOTE_CONV_TOOL_EXECUTING;
}

static void journal_failed(struct agent *a, int rc)
{
    char m[200];

    snprintf(m, sizeof(m), "cannot write the conversation journal: %s", mote_strerror(rc));
    emit_error(a, m);
    a->failed = true;
    snprintf(a->last_error, sizeof(a->last_error), "%.150s", m);
}

/* ---- model requests ---- */

static void on_llm_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg);

static int on_event(void *arg, const struct mote_llm_event *ev)
{
    struct agent *a = arg;
    struct agent_call *c;

    if (!a->got_first) {
        a->got_first = true;
        spin_clear(a);
        a->st = mote_conv_next(a->st, MOTE_CEV_FIRST_BYTE).state;
    }
    switch (ev->type) {
    case MOTE_LLM_TEXT:
        if (a->text_len + ev->len <= sizeof(a->text)) {
            memcpy(a->text + a->text_len, ev->text, ev->len);
            a->text_len += ev->len;
        } else {
            a->text_cut = true; /* shown, but not all of it kept */
        }
        if (a->json_out) {
            printf("{\"type\":\"text\",\"text\":");
            json_str(stdout, ev->text, ev->len);
            printf("}\n");
        } else {
            fwrite(ev->text, 1, ev->len, stdout);
            a->line_open = ev->len > 0 && ev->text[ev->len - 1] != '\n';
        }
        fflush(stdout);
        break;
    case MOTE_LLM_TOOL_START:
        if (ev->slot >= MOTE_LLM_MAX_TOOL_CALLS)
            return MOTE_ERR_FULL;
        c = &a->calls[ev->slot];
        memset(c, 0, sizeof(*c));
        snprintf(c->id, sizeof(c->id), "%s", ev->id);
        snprintf(c->name, sizeof(c->name), "%s", ev->name);
        if (ev->slot + 1 > a->ncalls)
            a->ncalls = ev->slot + 1;
        break;
    case MOTE_LLM_TOOL_ARGS:
        c = &a->calls[ev->slot];
        if (c->input_len + ev->len < sizeof(c->input)) {
            memcpy(c->input + c->input_len, ev->text, ev->len);
            c->input_len += ev->len;
        } else {
            c->too_long = true;
        }
        break;
    case MOTE_LLM_STOP:
        snprintf(a->stop, sizeof(a->stop), "%.*s", (int)ev->len, ev->text);
        break;
    case MOTE_LLM_USAGE:
        a->in_tokens = ev->in_tokens;
        a->out_tokens = ev->out_tokens;
        break;
    default:
        break;
    }
    return 0;
}

/* The tools offered now: the built-in ones and those of the MCP servers
 * that are ready. */
static void gather_tools(struct agent *a)
{
    unsigned n = 0, i;

    if (a->tools_on) {
        for (i = 0; i < sizeof(tool_defs) / sizeof(tool_defs[0]); i++)
            a->all_tools[n++] = tool_defs[i];
        if (a->mcp != NULL)
            n += mote_mcp_tool_defs(a->mcp, a->all_tools + n,
                                    (unsigned)(sizeof(a->all_tools) / sizeof(a->all_tools[0])) - n);
    }
    a->req.ntools = n;
}

static void start_request(struct agent *a)
{
    int rc;

    gather_tools(a);
    a->got_first = false;
    a->text_len = 0;
    a->text_cut = false;
    a->ncalls = 0;
    a->stop[0] = '\0';
    rc = mote_llm_call_init(&a->call, a->conf, &a->req, on_event, a);
    if (rc == 0)
        rc = mote_job_spawn(a->loop, "model request", &mote_llm_call_ops, &a->call,
                            &a->turn_cancel, &a->llm_job);
    if (rc == 0)
        rc = mote_job_then(a->loop, a->llm_job, "agent", on_llm_done, a);
    if (rc < 0) {
        char m[200];

        snprintf(m, sizeof(m), "cannot start the model request: %s",
                 rc == MOTE_ERR_SHUTDOWN ? "shutting down" : mote_strerror(rc));
        emit_error(a, m);
        a->st = MOTE_CONV_ERROR;
        a->failed = true;
        return;
    }
    a->turns++;
    if (a->spinner && !a->spinning && mote_timer_start(a->loop, 150, spin, a, 0, NULL) < 0)
        a->spinning = false;
}

/* Runs the effects of a transition, journal first. */
static void effects(struct agent *a, struct mote_conv_step s, const char *user, size_t ulen,
                    const char *errmsg)
{
    int rc = 0;

    a->st = s.state;
    if ((s.effects & MOTE_CEFF_JOURNAL_USER) && (rc = mote_journal_user(&a->jr, user, ulen)) < 0)
        goto fail;
    if (s.effects & MOTE_CEFF_JOURNAL_PARTIAL) {
        if (a->text_len > 0 || a->got_first)
            rc = mote_journal_assistant(&a->jr, a->text, a->text_len, a->stop, true, NULL, 0);
        if (rc < 0)
            goto fail;
    }
    if ((s.effects & MOTE_CEFF_JOURNAL_ERROR) && (rc = mote_journal_error(&a->jr, errmsg)) < 0)
        goto fail;
    if ((s.effects & MOTE_CEFF_JOURNAL_MARK) &&
        (rc = mote_journal_mark(&a->jr, "needs_recovery")) < 0)
        goto fail;
    if ((s.effects & MOTE_CEFF_JOURNAL_REQUEST) && (rc = mote_journal_request(&a->jr, 1)) < 0)
        goto fail;
    if (s.effects & MOTE_CEFF_SEND) {
        if (a->shutting_down) {
            /* Drain: no new request; the journal says it is due. */
            a->st = MOTE_CONV_NEEDS_RECOVERY;
            return;
        }
        start_request(a);
    }
    return;
fail:
    journal_failed(a, rc);
    a->st = MOTE_CONV_ERROR;
}

static void begin_turn(struct agent *a)
{
    mote_cancel_init(&a->turn_cancel, &a->loop->root);
    a->turns = 0;
    a->failed = false;
    a->last_error[0] = '\0';
}

bool agent_user(struct agent *a, const char *text, size_t len)
{
    if (agent_busy(a) || a->shutting_down)
        return false;
    begin_turn(a);
    effects(a, mote_conv_next(a->st, MOTE_CEV_USER), text, len, NULL);
    return true;
}

bool agent_retry(struct agent *a)
{
    if (agent_busy(a) || a->shutting_down)
        return false;
    if (a->st == MOTE_CONV_IDLE && !a->failed) {
        say(a, "2", "(nothing to retry: the last turn ended normally)");
        return false;
    }
    begin_turn(a);
    effects(a, mote_conv_next(a->st == MOTE_CONV_IDLE ? MOTE_CONV_ERROR : a->st, MOTE_CEV_RETRY),
            NULL, 0, NULL);
    return true;
}

/* ---- tools ---- */

static void next_tool(struct agent *a);

static void tool_result(struct agent *a, const char *text, size_t len, bool is_error)
{
    struct agent_call *c = &a->calls[a->tool_i];
    int rc;

    if (a->json_out) {
        printf("{\"type\":\"tool_result\",\"id\":");
        json_str(stdout, c->id, strlen(c->id));
        printf(",\"name\":");
        json_str(stdout, c->name, strlen(c->name));
        printf(",\"is_error\":%s,\"text\":", is_error ? "true" : "false");
        json_str(stdout, text, len);
        printf("}\n");
        fflush(stdout);
    } else {
        char first[120];
        size_t n = 0;
        unsigned lines = 0;
        size_t i;
        bool more;

        for (i = 0; i < len; i++)
            lines += text[i] == '\n';
        lines += len > 0 && text[len - 1] != '\n';
        while (n < len && n < sizeof(first) - 1 && text[n] != '\n') {
            first[n] = text[n];
            n++;
        }
        first[n] = '\0';
        more = lines > 1 || (n < len && text[n] != '\n');
        if (more)
            fprintf(stderr, a->color ? "  \033[2m%s %s ... (%u lines)\033[0m\n" : "  %s %s ... (%u lines)\n",
                    is_error ? "x" : "=", first, lines);
        else
            fprintf(stderr, a->color ? "  \033[2m%s %s\033[0m\n" : "  %s %s\n", is_error ? "x" : "=",
                    first);
    }
    rc = mote_journal_tool_result(&a->jr, c->id, text, len, is_error);
    if (rc < 0)
        journal_failed(a, rc);
    a->tool_i++;
}

/* Keeps tool output journal-safe: control bytes other than newline and tab
 * become '?', so escaping can at most double the size. */
static void clean_output(char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            s[i] = '?';
    }
}

static int shell_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct shell_task *t = task;
    const struct mote_port *p = loop->port;
    uint32_t now = mote_loop_now(loop);
    char buf[4096];
    int rc;

    if (mote_job_cancelled(loop, self) && !t->killed) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL); /* the whole group */
        t->killed = true;
    }
    if (!t->killed && !t->exited && (int32_t)(now - t->deadline) >= 0) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL);
        t->killed = t->timed_out = true;
    }
    /* Read what there is. */
    while (!t->eof) {
        ssize_t n = read(t->out_fd, buf, sizeof(buf));

        if (n > 0) {
            /* Room is kept for the notes that end the result. */
            size_t room = sizeof(t->out) - 512, keep = t->len < room ? room - t->len : 0;

            if ((size_t)n < keep)
                keep = (size_t)n;
            memcpy(t->out + t->len, buf, keep);
            t->len += keep;
            t->dropped += (uint64_t)n - keep;
            continue;
        }
        if (n == 0)
            t->eof = true;
        else if (errno != EAGAIN && errno != EINTR)
            t->eof = true;
        break;
    }
    if (!t->exited) {
        rc = p->proc_reap(p->ctx, t->pid, &t->status);
        if (rc == 0) {
            t->exited = true;
            /* Nothing of it may outlive it: background children too. */
            p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL);
        }
    }
    if (t->exited && (t->eof || t->killed)) {
        if (t->out_fd >= 0)
            close(t->out_fd);
        t->out_fd = -1;
        return mote_job_cancelled(loop, self) ? MOTE_STEP_CANCELLED : MOTE_STEP_DONE;
    }
    /* Wake on output, and every 50 ms for the exit and the deadline. */
    if (t->eof && t->watch != 0) {
        (void)mote_watch_remove(loop, t->watch);
        t->watch = 0;
    }
    if (t->out_fd >= 0 && !t->eof && t->watch == 0 &&
        mote_watch_add(loop, t->out_fd, MOTE_POLL_IN, NULL, NULL, self, &t->watch) < 0)
        return MOTE_ERR_FULL;
    if (t->timer != 0)
        (void)mote_timer_stop(loop, t->timer);
    /* Soon once it was killed or its output ended (the exit is close). */
    if (mote_timer_start(loop, t->killed || t->eof ? 2 : 50, NULL, NULL, self, &t->timer) < 0)
        return MOTE_ERR_FULL;
    return MOTE_STEP_PENDING;
}

static void shell_release(struct mote_loop *loop, void *task)
{
    struct shell_task *t = task;
    const struct mote_port *p = loop->port;
    int st;

    if (!t->exited) {
        p->proc_signal(p->ctx, t->pid, MOTE_PROC_KILL);
        /* SIGKILL cannot be ignored: the reap is immediate enough. */
        for (int i = 0; i < 200 && p->proc_reap(p->ctx, t->pid, &st) == MOTE_ERR_AGAIN; i++)
            usleep(1000);
        t->exited = true;
    }
    if (t->out_fd >= 0)
        close(t->out_fd);
    t->out_fd = -1;
}

static const struct mote_task_ops shell_ops = {"shell", shell_step, shell_release};

static void on_tool_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                         const char *errmsg, void *arg)
{
    struct agent *a = arg;
    struct shell_task *t = &a->shell;
    char note[160];
    size_t n;

    (void)loop, (void)job;
    clean_output(t->out, t->len);
    n = t->len;
    if (how == MOTE_JOB_CANCELLED) {
        snprintf(note, sizeof(note), "%s[cancelled by the user: the command was killed]",
                 n > 0 && t->out[n - 1] != '\n' ? "\n" : "");
    } else if (how == MOTE_JOB_FAILED) {
        snprintf(note, sizeof(note), "[the tool failed: %s]", errmsg);
    } else if (t->timed_out) {
        snprintf(note, sizeof(note), "%s[timed out after %u ms: the command was killed]",
                 n > 0 && t->out[n - 1] != '\n' ? "\n" : "", a->tool_timeout_ms);
    } else {
        snprintf(note, sizeof(note), "%s[exit status %d%s]", n > 0 && t->out[n - 1] != '\n' ? "\n" : "",
                 t->status, t->dropped > 0 ? ", output cut" : "");
    }
    if (t->dropped > 0) {
        char cut[80];

        snprintf(cut, sizeof(cut), "\n[output cut: %llu more bytes not shown]",
                 (unsigned long long)t->dropped);
        if (n + strlen(cut) < sizeof(t->out)) {
            memcpy(t->out + n, cut, strlen(cut));
            n += strlen(cut);
        }
    }
    if (n + strlen(note) < sizeof(t->out)) {
        memcpy(t->out + n, note, strlen(note));
        n += strlen(note);
    }
    a->tool_job = 0;
    tool_result(a, t->out, n, how != MOTE_JOB_DONE || t->status != 0);
    if (how == MOTE_JOB_CANCELLED) {
        /* The rest of this turn's calls: cancelled too, so none dangles. */
        while (a->tool_i < a->ncalls)
            tool_result(a, "cancelled by the user before it ran", 35, true);
        effects(a, mote_conv_next(a->st, MOTE_CEV_CANCELLED), NULL, 0, NULL);
        say(a, "33", "(cancelled)");
        return;
    }
    next_tool(a);
}

static int start_shell(struct agent *a, const char *cmd)
{
    const struct mote_port *p = a->port;
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    struct shell_task *t = &a->shell;
    int fds[3], rc;
    int64_t pid;

    memset(t, 0, sizeof(*t));
    t->a = a;
    t->out_fd = -1;
    /* Durable before it runs: a crash now leaves a call that recovery
     * closes with an error, never re-runs. */
    rc = mote_journal_tool_start(&a->jr, a->calls[a->tool_i].id, 0, 0);
    if (rc < 0)
        return rc;
    rc = p->proc_spawn(p->ctx, argv, NULL, true, fds, &pid);
    if (rc < 0)
        return rc;
    close(fds[0]); /* no input */
    t->pid = pid;
    t->out_fd = fds[1];
    t->deadline = mote_loop_now(a->loop) + a->tool_timeout_ms;
    /* Its group, for the recovery of a crash while it runs. */
    {
        int64_t g = p->proc_group(p->ctx, pid);

        rc = mote_journal_tool_start(&a->jr, a->calls[a->tool_i].id, g > 0 ? g : 0,
                                     g > 0 ? p->proc_start_time(p->ctx, g) : 0);
    }
    if (rc < 0) {
        p->proc_signal(p->ctx, pid, MOTE_PROC_KILL);
        return rc;
    }
    rc = mote_job_spawn(a->loop, "shell", &shell_ops, t, &a->turn_cancel, &a->tool_job);
    if (rc == 0)
        rc = mote_job_then(a->loop, a->tool_job, "agent", on_tool_done, a);
    if (rc < 0) {
        shell_release(a->loop, t);
        return rc;
    }
    return 0;
}

static bool path_arg(const struct agent_call *c, const char *key, char *out, size_t cap)
{
    static struct mote_json js;

    return mote_json_parse(&js, c->input, c->input_len) > 0 &&
           mote_json_str(&js, mote_json_member(&js, 0, key), out, cap) >= 0;
}

static void run_read_file(struct agent *a, const struct agent_call *c)
{
    static char buf[AGENT_TOOL_OUTPUT_MAX + 64];
    char path[1024];
    ssize_t n;
    int fd;

    if (!path_arg(c, "path", path, sizeof(path))) {
        tool_result(a, "read_file needs {\"path\": \"...\"}", 31, true);
        return;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(buf, sizeof(buf), "cannot open %s: %s", path, strerror(errno));
        tool_result(a, buf, strlen(buf), true);
        return;
    }
    n = read(fd, buf, AGENT_TOOL_OUTPUT_MAX);
    if (n < 0) {
        snprintf(buf, sizeof(buf), "cannot read %s: %s", path, strerror(errno));
        close(fd);
        tool_result(a, buf, strlen(buf), true);
        return;
    }
    {
        char more;

        if (n == AGENT_TOOL_OUTPUT_MAX && read(fd, &more, 1) == 1) {
            const char *note = "\n[file cut at 16 KiB]";

            memcpy(buf + n, note, strlen(note));
            n += (ssize_t)strlen(note);
        }
    }
    close(fd);
    clean_output(buf, (size_t)n);
    tool_result(a, buf, (size_t)n, false);
}

static void run_write_file(struct agent *a, const struct agent_call *c)
{
    static struct mote_json js;
    static char content[AGENT_TOOL_INPUT_MAX];
    char path[1024], tmp[1100], msg[1200];
    int fd, n;

    if (mote_json_parse(&js, c->input, c->input_len) <= 0 ||
        mote_json_str(&js, mote_json_member(&js, 0, "path"), path, sizeof(path)) < 0 ||
        (n = mote_json_str(&js, mote_json_member(&js, 0, "content"), content, sizeof(content))) <
            0) {
        tool_result(a, "write_file needs {\"path\": \"...\", \"content\": \"...\"}", 50, true);
        return;
    }
    /* Atomic: a temporary file beside it, synced, renamed over it. */
    snprintf(tmp, sizeof(tmp), "%s.mote-tmp.%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, content, (size_t)n) != n || fsync(fd) < 0 || close(fd) < 0 ||
        rename(tmp, path) < 0) {
        snprintf(msg, sizeof(msg), "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
        tool_result(a, msg, strlen(msg), true);
        return;
    }
    snprintf(msg, sizeof(msg), "wrote %d bytes to %s", n, path);
    tool_result(a, msg, strlen(msg), false);
}

static void run_list_dir(struct agent *a, const struct agent_call *c)
{
    static char buf[AGENT_TOOL_OUTPUT_MAX];
    char path[1024];
    struct dirent *de;
    size_t len = 0;
    unsigned count = 0;
    DIR *d;

    if (!path_arg(c, "path", path, sizeof(path)))
        snprintf(path, sizeof(path), ".");
    d = opendir(path);
    if (d == NULL) {
        snprintf(buf, sizeof(buf), "cannot list %s: %s", path, strerror(errno));
        tool_result(a, buf, strlen(buf), true);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        int n;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        count++;
        n = snprintf(buf + len, sizeof(buf) - len, "%s%s\n", de->d_name,
                     de->d_type == DT_DIR ? "/" : "");
        if (n < 0 || (size_t)n >= sizeof(buf) - len - 40) {
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "[list cut]\n");
            break;
        }
        len += (size_t)n;
    }
    closedir(d);
    if (count == 0)
        len = (size_t)snprintf(buf, sizeof(buf), "(empty)\n");
    clean_output(buf, len);
    tool_result(a, buf, len, false);
}

static void on_mcp_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg)
{
    struct agent *a = arg;
    struct mote_mcp_call *c = &a->mcall;

    (void)loop, (void)job;
    a->tool_job = 0;
    if (how == MOTE_JOB_CANCELLED) {
        tool_result(a, "cancelled by the user (the MCP server was told)", 47, true);
        while (a->tool_i < a->ncalls)
            tool_result(a, "cancelled by the user before it ran", 35, true);
        effects(a, mote_conv_next(a->st, MOTE_CEV_CANCELLED), NULL, 0, NULL);
        say(a, "33", "(cancelled)");
        return;
    }
    if (how == MOTE_JOB_FAILED) {
        tool_result(a, errmsg, strlen(errmsg), true);
    } else {
        clean_output(c->result, c->len);
        tool_result(a, c->result, c->len, c->is_error);
    }
    next_tool(a);
}

/* Runs call a->tool_i (approved). */
static void run_tool(struct agent *a)
{
    struct agent_call *c = &a->calls[a->tool_i];
    static struct mote_json js;
    int rc;

    if (c->too_long || c->input_len == 0 || mote_json_parse(&js, c->input, c->input_len) <= 0) {
        tool_result(a, "the tool input was not a complete JSON object", 45, true);
        return;
    }
    if (strcmp(c->name, "shell") == 0) {
        char cmd[AGENT_TOOL_INPUT_MAX];

        if (mote_json_str(&js, mote_json_member(&js, 0, "command"), cmd, sizeof(cmd)) < 0) {
            tool_result(a, "shell needs {\"command\": \"...\"}", 30, true);
            return;
        }
        rc = start_shell(a, cmd);
        if (rc < 0) {
            char m[160];

            snprintf(m, sizeof(m), "cannot run the command: %s", mote_strerror(rc));
            tool_result(a, m, strlen(m), true);
            return;
        }
        a->tool_i = a->tool_i; /* the result comes from on_tool_done */
        return;
    }
    {
        unsigned srv, tool;

        if (a->mcp != NULL && mote_mcp_find(a->mcp, c->name, &srv, &tool)) {
            rc = mote_journal_tool_start(&a->jr, c->id, 0, 0);
            if (rc == 0) {
                mote_mcp_call_init(&a->mcall, a->mcp, srv, tool, c->input, c->input_len);
                rc = mote_job_spawn(a->loop, "mcp call", &mote_mcp_call_ops, &a->mcall,
                                    &a->turn_cancel, &a->tool_job);
            }
            if (rc == 0)
                rc = mote_job_then(a->loop, a->tool_job, "agent", on_mcp_done, a);
            if (rc < 0) {
                a->tool_job = 0;
                tool_result(a, "cannot start the MCP call", 25, true);
            }
            return;
        }
    }
    /* The quick local tools run at once; journaled before they run. */
    rc = mote_journal_tool_start(&a->jr, c->id, 0, 0);
    if (rc < 0) {
        journal_failed(a, rc);
        tool_result(a, "cannot journal the tool call", 28, true);
        return;
    }
    if (strcmp(c->name, "read_file") == 0)
        run_read_file(a, c);
    else if (strcmp(c->name, "write_file") == 0)
        run_write_file(a, c);
    else if (strcmp(c->name, "list_dir") == 0)
        run_list_dir(a, c);
    else {
        char m[200];

        snprintf(m, sizeof(m), "unknown tool '%s'", c->name);
        tool_result(a, m, strlen(m), true);
    }
}

static void show_call(struct agent *a, const struct agent_call *c)
{
    char s[128];

    end_line(a);
    if (a->json_out) {
        printf("{\"type\":\"tool_call\",\"id\":");
        json_str(stdout, c->id, strlen(c->id));
        printf(",\"name\":");
        json_str(stdout, c->name, strlen(c->name));
        printf(",\"input\":");
        if (c->input_len > 0 && !c->too_long)
            fwrite(c->input, 1, c->input_len, stdout);
        else
            printf("{}");
        printf("}\n");
        fflush(stdout);
        return;
    }
    short_input(c, s, sizeof(s));
    if (a->color)
        fprintf(stderr, "\033[36m* %s\033[0m %s\n", c->name, s);
    else
        fprintf(stderr, "* %s %s\n", c->name, s);
}

void agent_approval(struct agent *a, bool yes)
{
    if (!a->awaiting_approval)
        return;
    a->awaiting_approval = false;
    if (yes)
        run_tool(a);
    else
        tool_result(a, "the user refused to run this tool call", 38, true);
    if (a->tool_job == 0)
        next_tool(a);
}

/* Goes through the calls in order; ends the round when all have results. */
static void next_tool(struct agent *a)
{
    while (a->tool_i < a->ncalls && a->tool_job == 0 && !a->awaiting_approval) {
        struct agent_call *c = &a->calls[a->tool_i];

        if (a->shutting_down) {
            tool_result(a, "not run: mote was shutting down", 31, true);
            continue;
        }
        show_call(a, c);
        if (a->approval == APPROVE_REFUSE) {
            tool_result(a, "refused: mote cannot ask for approval without a terminal (run it "
                           "with --yes to allow tools)", 92, true);
            continue;
        }
        if (a->approval == APPROVE_ASK) {
            a->awaiting_approval = true;
            fprintf(stderr, "  run it? [y/N] ");
            fflush(stderr);
            return;
        }
        run_tool(a);
    }
    if (a->tool_i < a->ncalls)
        return; /* a shell job or an approval is pending */
    /* Every call has its result: the next request, or the end. */
    if (a->shutting_down) {
        a->st = MOTE_CONV_NEEDS_RECOVERY;
        return;
    }
    if (a->turns >= a->max_turns) {
        char m[120];

        snprintf(m, sizeof(m), "stopped after %u model requests (--max-turns); /retry goes on",
                 a->turns);
        effects(a, mote_conv_next(a->st, MOTE_CEV_TURN_LIMIT), NULL, 0, m);
        emit_error(a, m);
        a->failed = true;
        return;
    }
    effects(a, mote_conv_next(a->st, MOTE_CEV_TOOLS_DONE), NULL, 0, NULL);
}

static void turn_end(struct agent *a)
{
    end_line(a);
    if (a->json_out) {
        printf("{\"type\":\"turn_end\",\"stop_reason\":");
        json_str(stdout, a->stop, strlen(a->stop));
        printf(",\"usage\":{\"input_tokens\":%llu,\"output_tokens\":%llu}}\n",
               (unsigned long long)a->in_tokens, (unsigned long long)a->out_tokens);
        fflush(stdout);
    }
}

static void on_llm_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg)
{
    struct agent *a = arg;
    struct mote_call_rec recs[MOTE_LLM_MAX_TOOL_CALLS];
    unsigned i;
    int rc;

    (void)loop, (void)job;
    a->llm_job = 0;
    if (how == MOTE_JOB_CANCELLED) {
        if (a->st == MOTE_CONV_NEEDS_RECOVERY)
            return; /* the shutdown cut it and wrote everything */
        effects(a, mote_conv_next(a->st, MOTE_CEV_CANCELLED), NULL, 0, NULL);
        say(a, "33", "(cancelled)");
        return;
    }
    if (how == MOTE_JOB_FAILED) {
        snprintf(a->last_error, sizeof(a->last_error), "%s", errmsg);
        effects(a, mote_conv_next(a->st, MOTE_CEV_FAILED), NULL, 0, errmsg);
        emit_error(a, errmsg);
        if (a->interactive && !a->json_out)
            say(a, "2", "(/retry sends the conversation again)");
        a->failed = true;
        return;
    }
    /* The answer is complete: journal it before anything runs. */
    for (i = 0; i < a->ncalls; i++) {
        struct agent_call *c = &a->calls[i];
        static struct mote_json js;

        recs[i].id = c->id;
        recs[i].name = c->name;
        recs[i].input = c->input;
        recs[i].input_len = c->input_len;
        if (c->too_long || c->input_len == 0 || mote_json_parse(&js, c->input, c->input_len) <= 0 ||
            mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT) {
            recs[i].input = "{}"; /* unusable input: the tool refuses it */
            recs[i].input_len = 2;
            c->too_long = true;
        }
    }
    if (a->text_cut)
        say(a, "33", "(the answer was longer than mote keeps: the journal has its start)");
    rc = mote_journal_assistant(&a->jr, a->text, a->text_len, a->stop, false, recs, a->ncalls);
    if (rc < 0) {
        journal_failed(a, rc);
        a->st = MOTE_CONV_ERROR;
        return;
    }
    if (a->ncalls == 0 || a->shutting_down) {
        a->st = mote_conv_next(a->st, MOTE_CEV_ANSWER_DONE).state;
        if (a->ncalls > 0) {
            a->st = MOTE_CONV_NEEDS_RECOVERY; /* calls left for the next start */
            return;
        }
        turn_end(a);
        return;
    }
    a->st = mote_conv_next(a->st, MOTE_CEV_ANSWER_TOOLS).state;
    a->tool_i = 0;
    next_tool(a);
}

void agent_cancel(struct agent *a)
{
    if (a->awaiting_approval) {
        a->awaiting_approval = false;
        while (a->tool_i < a->ncalls)
            tool_result(a, "cancelled by the user before it ran", 35, true);
        effects(a, mote_conv_next(a->st, MOTE_CEV_CANCELLED), NULL, 0, NULL);
        say(a, "33", "(cancelled)");
        return;
    }
    mote_cancel_set(&a->turn_cancel);
    if (a->llm_job != 0)
        (void)mote_job_cancel(a->loop, a->llm_job);
    if (a->tool_job != 0)
        (void)mote_job_cancel(a->loop, a->tool_job);
}

void agent_shutdown_cut(struct agent *a)
{
    if (!agent_busy(a) && a->st != MOTE_CONV_NEEDS_RECOVERY)
        return;
    if (a->tool_job != 0 && a->tool_i < a->ncalls) {
        /* The running tool is killed: its result says so, then the rest. */
        const struct mote_port *p = a->port;

        p->proc_signal(p->ctx, a->shell.pid, MOTE_PROC_KILL);
    }
    if (agent_busy(a))
        effects(a, mote_conv_next(a->st, MOTE_CEV_SHUTDOWN_CUT), NULL, 0, NULL);
    else if (mote_journal_mark(&a->jr, "needs_recovery") < 0)
        journal_failed(a, a->jr.err);
    mote_cancel_set(&a->turn_cancel);
}

int agent_recover(struct agent *a)
{
    const struct mote_port *p = a->port;
    struct mote_recovery r;
    unsigned i;
    int rc = mote_recover(&a->jr, &r);

    if (rc < 0)
        return rc;
    for (i = 0; i < r.nkill; i++) {
        uint64_t now_start = p->proc_start_time(p->ctx, r.kill_pgid[i]);

        /* Only the very process that was recorded: a reused pid has
         * another start time. */
        if (now_start != 0 && now_start == r.kill_start[i] &&
            p->proc_signal(p->ctx, r.kill_pgid[i], MOTE_PROC_KILL) == 0) {
            char m[120];

            snprintf(m, sizeof(m), "killed the leftover tool process group %lld",
                     (long long)r.kill_pgid[i]);
            say(a, "33", m);
        }
    }
    switch (r.action) {
    case MOTE_RECOVER_TOOL_INTERRUPTED:
        if ((rc = mote_recover_apply(&a->jr, &r)) < 0)
            return rc;
        a->st = MOTE_CONV_ERROR;
        emit_error(a, "the last turn was interrupted while a tool ran (" MOTE_INTERRUPTED_TOOL
                      "); /retry to go on");
        snprintf(a->last_error, sizeof(a->last_error), "interrupted tool");
        a->failed = true;
        break;
    case MOTE_RECOVER_CONTINUE:
        say(a, "2", "(continuing the interrupted turn)");
        if ((rc = mote_journal_auto(&a->jr)) < 0)
            return rc;
        begin_turn(a);
        effects(a, mote_conv_next(MOTE_CONV_NEEDS_RECOVERY, MOTE_CEV_RETRY), NULL, 0, NULL);
        break;
    case MOTE_RECOVER_LIMIT:
        a->st = MOTE_CONV_ERROR;
        emit_error(a, "the last turn was interrupted again; not continuing by itself "
                      "(2 automatic continues in a row): /retry to go on");
        a->failed = true;
        break;
    case MOTE_RECOVER_IDLE:
        a->st = r.last_error[0] != '\0' ? MOTE_CONV_ERROR : MOTE_CONV_IDLE;
        break;
    }
    return 0;
}
