/*
 * mcpui.c - the chat's MCP commands and questions: /prompts lists the
 * servers' prompts, /prompt NAME [NAME=VALUE...] sends a prompt's
 * messages as the user's turn (both wait for the servers to start), and a
 * server's elicitation question is asked at the terminal, field by field.
 */
#include "mcpui.h"

#include <stdio.h>
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_show.h"

static struct {
    struct mote_loop *loop;
    struct mote_mcp *m;
    void (*send)(const char *text, size_t len);
    bool pending;        /* a command waits for the servers to start */
    bool running;        /* its request is out */
    bool get;            /* /prompt (else /prompts) */
    char line[1024];     /* the command */
    mote_job_id job;
    struct mote_mcp_call call;
} ui;

void mcpui_init(struct mote_loop *loop, struct mote_mcp *m, void (*send)(const char *, size_t))
{
    ui.loop = loop;
    ui.m = m;
    ui.send = send;
}

static void done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                 const char *errmsg, void *arg)
{
    struct mote_mcp_call *c = &ui.call;

    (void)loop, (void)job, (void)arg;
    ui.running = false;
    ui.job = 0;
    if (how != MOTE_JOB_DONE) {
        fprintf(stderr, "mote: the prompt was not fetched: %s\n",
                errmsg != NULL ? errmsg : "cancelled");
        return;
    }
    if (c->is_error) {
        fputs("mote: ", stderr);
        (void)show_text(stderr, c->result, c->len);
        fputc('\n', stderr);
        return;
    }
    if (!ui.get) {
        (void)show_text(stdout, c->result, c->len);
        fflush(stdout);
        return;
    }
    fputs("  (the prompt, sent as your message:)\n", stderr);
    (void)show_text(stderr, c->result, c->len);
    fputc('\n', stderr);
    ui.send(c->result, c->len);
}

/* Starts the command kept in ui.line. */
static void start(void)
{
    int rc;

    ui.pending = false;
    ui.get = mote_mcp_prompt_command(&ui.call, ui.m, ui.line) == 1;
    rc = mote_job_spawn(ui.loop, ui.get ? "prompt" : "prompts", &mote_mcp_call_ops, &ui.call,
                        NULL, &ui.job);
    if (rc == 0)
        rc = mote_job_then(ui.loop, ui.job, "cli", done, NULL);
    if (rc < 0) {
        fprintf(stderr, "mote: cannot ask the MCP servers: %s\n", mote_strerror(rc));
        if (ui.job != 0)
            (void)mote_job_cancel(ui.loop, ui.job);
        ui.job = 0;
        return;
    }
    ui.running = true;
}

bool mcpui_command(const char *line)
{
    if (mote_mcp_prompt_command(NULL, NULL, line) < 0)
        return false;
    if (ui.m == NULL) {
        fprintf(stderr, "mote: no MCP server is configured (--mcp-config)\n");
        return true;
    }
    if (strlen(line) >= sizeof(ui.line)) {
        fprintf(stderr, "mote: the command is longer than %zu bytes\n", sizeof(ui.line) - 1);
        return true;
    }
    memcpy(ui.line, line, strlen(line) + 1);
    ui.pending = true;
    mcpui_poll();
    return true;
}

void mcpui_poll(void)
{
    if (ui.pending && !ui.running && mote_mcp_settled(ui.m))
        start();
}

bool mcpui_busy(void)
{
    return ui.pending || ui.running;
}

void mcpui_cancel(void)
{
    ui.pending = false;
    if (ui.running && ui.job != 0)
        (void)mote_job_cancel(ui.loop, ui.job);
}

/* ---- a server's question (elicitation), field by field ---- */

static struct {
    struct mote_mcp_asks asks;
    bool open;
    struct mote_mcp_form form; /* the walk (mote_mcp.h) */
    bool (*editor)(const char *prompt, size_t width);
    char text[1024], prompt[512];
} q;

/* Shows the question of the field being asked. */
static void ask_field(void)
{
    size_t n = mote_mcp_form_field(&q.form, q.text, sizeof(q.text), q.prompt, sizeof(q.prompt));

    fputs(q.text, stderr);
    fflush(stderr);
    if (q.editor == NULL || !q.editor(q.prompt, n)) {
        fputs(q.prompt, stderr);
        fflush(stderr);
    }
}

static void on_ask(void *arg, const struct mote_mcp_ask *a, bool closed)
{
    int n;

    (void)arg;
    if (closed) {
        if (q.open && q.form.id == a->id)
            fprintf(stderr, "\n  (the server's question is closed: nobody answered in time, or "
                            "the server stopped)\n");
        q.open = false;
        return;
    }
    if ((n = mote_mcp_form_begin(&q.form, a)) < 0) {
        (void)mote_mcp_elicit_answer(ui.m, a->id, MOTE_MCP_DECLINE, NULL, 0, NULL, 0);
        return;
    }
    q.open = true;
    (void)mote_mcp_form_title(&q.form, q.text, sizeof(q.text));
    fprintf(stderr, "\n  %s\n", q.text);
    if (n == 0)
        mcpui_reply("", 0); /* no fields: a yes is all it asks */
    else
        ask_field();
}

void mcpui_elicit_on(struct mote_mcp *m, uint32_t timeout_ms,
                     bool (*editor)(const char *prompt, size_t width))
{
    q.editor = editor;
    mote_mcp_elicit_on(m, &q.asks, on_ask, NULL, timeout_ms);
}

/* A question answered by --yes alone: the server's own defaults, the only
 * values nobody has to type, else declined (mote_mcp_form_defaults). */
static void on_ask_defaults(void *arg, const struct mote_mcp_ask *a, bool closed)
{
    struct mote_mcp *m = arg;
    char shown[512], why[160];
    int rc;

    if (closed)
        return;
    rc = mote_mcp_form_defaults(&q.form, a, why, sizeof(why));
    (void)mote_mcp_form_title(&q.form, q.text, sizeof(q.text));
    fprintf(stderr, "%s\n", q.text);
    if (rc == 0) {
        snprintf(why, sizeof(why), "its answer was not sent");
        if (mote_mcp_elicit_answer(m, a->id, MOTE_MCP_ACCEPT, q.form.content, q.form.len, why,
                                   sizeof(why)) == 0) {
            mote_show_line(shown, sizeof(shown), q.form.content, q.form.len);
            fprintf(stderr, "  (--yes: accepted with its defaults: %s)\n", shown);
            return;
        }
    }
    fprintf(stderr, "  (--yes: declined: %s, and nobody to ask)\n", why);
    (void)mote_mcp_elicit_answer(m, a->id, MOTE_MCP_DECLINE, NULL, 0, NULL, 0);
}

void mcpui_elicit_defaults(struct mote_mcp *m, uint32_t timeout_ms)
{
    mote_mcp_elicit_on(m, &q.asks, on_ask_defaults, m, timeout_ms);
    q.asks.undeclared = true;
}

bool mcpui_asking(void)
{
    return q.open;
}

static void finish(enum mote_mcp_action action)
{
    char err[200];
    int rc;

    err[0] = '\0';
    rc = mote_mcp_elicit_answer(ui.m, q.form.id, action,
                                action == MOTE_MCP_ACCEPT ? q.form.content : NULL, q.form.len,
                                err, sizeof(err));
    if (rc == MOTE_ERR_INVAL && action == MOTE_MCP_ACCEPT) {
        fprintf(stderr, "  the answer does not fit the form: %s; again:\n", err);
        mote_mcp_form_restart(&q.form);
        ask_field();
        return;
    }
    if (rc < 0 && rc != MOTE_ERR_NOENT)
        fprintf(stderr, "  the answer was not sent: %s\n", mote_strerror(rc));
    else if (rc == 0)
        fprintf(stderr, "  (%s)\n", action == MOTE_MCP_ACCEPT    ? "sent"
                                    : action == MOTE_MCP_DECLINE ? "declined"
                                                                 : "cancelled");
    q.open = false;
}

void mcpui_reply(const char *line, long n)
{
    const char *hint = NULL;
    enum mote_mcp_form_step step;

    if (!q.open)
        return;
    step = line == NULL || n < 0 ? MOTE_MCP_FORM_CANCEL : mote_mcp_form_reply(&q.form, line, &hint);
    if (step == MOTE_MCP_FORM_AGAIN)
        fprintf(stderr, "  %s\n", hint);
    if (step == MOTE_MCP_FORM_AGAIN || step == MOTE_MCP_FORM_NEXT)
        ask_field();
    else
        finish(step == MOTE_MCP_FORM_DONE      ? MOTE_MCP_ACCEPT
               : step == MOTE_MCP_FORM_DECLINE ? MOTE_MCP_DECLINE
                                               : MOTE_MCP_CANCEL);
}
