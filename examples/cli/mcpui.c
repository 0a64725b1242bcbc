/*
 * mcpui.c - the chat's MCP commands and questions: /prompts lists the
 * servers' prompts, /prompt NAME [NAME=VALUE...] sends a prompt's
 * messages as the user's turn (both wait for the servers to start), and a
 * server's elicitation question is asked at the terminal, field by field.
 */
#include "mcpui.h"

#include <stdio.h>
#include <stdlib.h>
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

static int out_sink(void *arg, const char *p, size_t n)
{
    fwrite(p, 1, n, (FILE *)arg);
    return 0;
}

/* A server's text onto the terminal, neutralised (mote_show.h). */
static void show(FILE *f, const char *s, size_t n)
{
    (void)mote_show_text(out_sink, f, s, n, MOTE_SHOW_TEXT);
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
        show(stderr, c->result, c->len);
        fputc('\n', stderr);
        return;
    }
    if (!ui.get) {
        show(stdout, c->result, c->len);
        fflush(stdout);
        return;
    }
    fputs("  (the prompt, sent as your message:)\n", stderr);
    show(stderr, c->result, c->len);
    fputc('\n', stderr);
    ui.send(c->result, c->len);
}

/* Starts the command kept in ui.line. */
static void start(void)
{
    char *name = ui.line + (ui.get ? 7 : 8), *args;
    int rc;

    ui.pending = false;
    if (ui.get) {
        name += strspn(name, " \t");
        args = name + strcspn(name, " \t");
        if (*args != '\0')
            *args++ = '\0';
        if (name[0] == '\0') {
            fprintf(stderr, "mote: /prompt NAME [ARG=VALUE...] (/prompts lists them)\n");
            return;
        }
        (void)mote_mcp_prompt_init(&ui.call, ui.m, name, args);
    } else {
        mote_mcp_prompts_init(&ui.call, ui.m);
    }
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
    bool get = strncmp(line, "/prompt", 7) == 0 && (line[7] == ' ' || line[7] == '\t' ||
                                                     line[7] == '\0');

    if (!get && strcmp(line, "/prompts") != 0)
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
    ui.get = get;
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

struct outbuf {
    char *p;
    size_t cap, len;
};

static struct {
    struct mote_mcp_asks asks;
    bool open;
    uint32_t id;
    int fields;           /* token of the form's fields */
    int field;            /* the field being asked (index) */
    struct outbuf sb;     /* the answer's JSON as it grows */
    struct mote_jw w;
    char out[MOTE_MCP_ASK_MAX];
    struct mote_json js;  /* the form */
    bool (*editor)(const char *prompt, size_t width);
    char prompt[512];
} q;

static int sb_put(void *arg, const char *p, size_t n)
{
    struct outbuf *sb = arg;

    if (sb->len + n >= sb->cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(sb->p + sb->len, p, n);
    sb->len += n;
    sb->p[sb->len] = '\0';
    return 0;
}

/* The answer's JSON starts again. */
static void answer_begin(void)
{
    q.sb.p = q.out;
    q.sb.cap = sizeof(q.out);
    q.sb.len = 0;
    mote_jw_init(&q.w, sb_put, &q.sb);
    mote_jw_obj(&q.w);
}

static int member(int t, const char *key)
{
    return mote_json_member(&q.js, t, key);
}

/* A string of the form into buf (neutralised for the terminal). */
static const char *form_str(int t, char *buf, size_t cap)
{
    char raw[256];

    buf[0] = '\0';
    if (mote_json_str(&q.js, t, raw, sizeof(raw)) < 0 && raw[0] == '\0')
        return buf;
    mote_show_line(buf, cap, raw, strlen(raw));
    return buf;
}

/* Shows the question of field q.field. */
static void ask_field(void)
{
    int f = mote_json_elem(&q.js, q.fields, q.field), en = member(f, "enum"), e, i;
    char a[200], b[200], c[64];
    bool req = false;
    FILE *o = stderr;
    size_t n = 0;

    (void)mote_json_bool(&q.js, member(f, "required"), &req);
    fprintf(o, "  %s", form_str(member(f, "name"), a, sizeof(a)));
    if (member(f, "title") >= 0 || member(f, "description") >= 0)
        fprintf(o, " (%s%s%s)", form_str(member(f, "title"), a, sizeof(a)),
                member(f, "title") >= 0 && member(f, "description") >= 0 ? ": " : "",
                form_str(member(f, "description"), b, sizeof(b)));
    for (i = 0; (e = mote_json_elem(&q.js, en, i)) >= 0; i++)
        fprintf(o, "%s %d) %s", i == 0 ? "\n   " : "", i + 1,
                form_str(mote_json_elem(&q.js, member(f, "enumTitles"), i), a, sizeof(a)));
    fputc('\n', o);
    form_str(member(f, "type"), c, sizeof(c));
    if (member(f, "default") >= 0) {
        size_t dl;
        const char *d = mote_json_raw(&q.js, member(f, "default"), &dl);

        mote_show_line(b, sizeof(b), d, dl);
    } else {
        b[0] = '\0';
    }
    n = (size_t)snprintf(q.prompt, sizeof(q.prompt), "  %s%s%s%s%s> ",
                         i > 0 ? "choice" : strcmp(c, "boolean") == 0 ? "y/n" : c,
                         req ? ", required" : ", Enter: none",
                         b[0] != '\0' ? ", default " : "", b,
                         "; /decline, /cancel ");
    if (n >= sizeof(q.prompt))
        n = sizeof(q.prompt) - 1;
    fflush(o);
    if (q.editor == NULL || !q.editor(q.prompt, n)) {
        fputs(q.prompt, o);
        fflush(o);
    }
}

static void on_ask(void *arg, const struct mote_mcp_ask *a, bool closed)
{
    char msg[1024], srv[64];

    (void)arg;
    if (closed) {
        if (q.open && q.id == a->id)
            fprintf(stderr, "\n  (nobody answered the server's question in time: cancelled)\n");
        q.open = false;
        return;
    }
    if (mote_json_parse(&q.js, a->form, a->form_len) <= 0) {
        (void)mote_mcp_elicit_answer(ui.m, a->id, MOTE_MCP_DECLINE, NULL, 0, NULL, 0);
        return;
    }
    q.open = true;
    q.id = a->id;
    q.fields = member(0, "fields");
    q.field = 0;
    fprintf(stderr, "\n  mcp %s asks: %s\n", form_str(member(0, "server"), srv, sizeof(srv)),
            form_str(member(0, "message"), msg, sizeof(msg)));
    answer_begin();
    if (mote_json_elem(&q.js, q.fields, 0) < 0) {
        mcpui_reply("", 0); /* no fields: a yes is all it asks */
        return;
    }
    ask_field();
}

void mcpui_elicit_on(struct mote_mcp *m, uint32_t timeout_ms,
                     bool (*editor)(const char *prompt, size_t width))
{
    q.editor = editor;
    mote_mcp_elicit_on(m, &q.asks, on_ask, NULL, timeout_ms);
}

bool mcpui_asking(void)
{
    return q.open;
}

static void finish(enum mote_mcp_action action)
{
    char err[200];
    int rc;

    mote_jw_obj_end(&q.w);
    err[0] = '\0';
    rc = mote_mcp_elicit_answer(ui.m, q.id, action, action == MOTE_MCP_ACCEPT ? q.out : NULL,
                                q.sb.len, err, sizeof(err));
    if (rc == MOTE_ERR_INVAL && action == MOTE_MCP_ACCEPT) {
        fprintf(stderr, "  the answer does not fit the form: %s; again:\n", err);
        answer_begin();
        q.field = 0;
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

/* True when s is a JSON number (RFC 8259 6; `integer`: without a
 * fraction or exponent, at most 18 digits). */
static bool json_number(const char *s, bool integer)
{
    size_t d = 0;

    s += *s == '-';
    if (*s == '0' && s[1] >= '0' && s[1] <= '9')
        return false;
    while (*s >= '0' && *s <= '9')
        s++, d++;
    if (d == 0 || (integer && (d > 18 || *s != '\0')))
        return false;
    if (*s == '.') {
        for (d = 0, s++; *s >= '0' && *s <= '9'; s++, d++) {
        }
        if (d == 0)
            return false;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        s += *s == '+' || *s == '-';
        for (d = 0; *s >= '0' && *s <= '9'; s++, d++) {
        }
        if (d == 0)
            return false;
    }
    return *s == '\0';
}

void mcpui_reply(const char *line, long n)
{
    int f = mote_json_elem(&q.js, q.fields, q.field), en = member(f, "enum"), e;
    char type[16], *end;
    bool req = false;

    if (!q.open)
        return;
    if (line == NULL || n < 0 || strcmp(line, "/cancel") == 0 || strcmp(line, "/decline") == 0) {
        finish(line != NULL && n >= 0 && strcmp(line, "/decline") == 0 ? MOTE_MCP_DECLINE
                                                                      : MOTE_MCP_CANCEL);
        return;
    }
    if (f >= 0) {
        (void)mote_json_bool(&q.js, member(f, "required"), &req);
        form_str(member(f, "type"), type, sizeof(type));
        if (line[0] == '\0' && req && member(f, "default") >= 0) {
            char name[128];

            (void)mote_json_str(&q.js, member(f, "name"), name, sizeof(name));
            mote_jw_key(&q.w, name); /* (the default, re-encoded) */
            mote_jw_value(&q.w, &q.js, member(f, "default"));
        } else if (line[0] == '\0' && !req) {
            /* nothing: left out (a default is the server's to apply) */
        } else if (line[0] == '\0') {
            fprintf(stderr, "  (required)\n");
            ask_field();
            return;
        } else {
            char name[128];

            (void)mote_json_str(&q.js, member(f, "name"), name, sizeof(name));
            if (en >= 0) {
                long k = strtol(line, &end, 10);
                int i;

                e = -1;
                if (*end == '\0' && k >= 1)
                    e = mote_json_elem(&q.js, en, (int)k - 1);
                for (i = 0; e < 0 && mote_json_elem(&q.js, en, i) >= 0; i++) {
                    if (mote_json_eq(&q.js, mote_json_elem(&q.js, en, i), line))
                        e = mote_json_elem(&q.js, en, i);
                }
                if (e < 0) {
                    fprintf(stderr, "  (one of the choices: its number or its value)\n");
                    ask_field();
                    return;
                }
                mote_jw_key(&q.w, name);
                mote_jw_value(&q.w, &q.js, e);
            } else if (strcmp(type, "boolean") == 0) {
                bool yes = strcmp(line, "y") == 0 || strcmp(line, "yes") == 0 ||
                           strcmp(line, "true") == 0;

                if (!yes && strcmp(line, "n") != 0 && strcmp(line, "no") != 0 &&
                    strcmp(line, "false") != 0) {
                    fprintf(stderr, "  (y or n)\n");
                    ask_field();
                    return;
                }
                mote_jw_key(&q.w, name);
                mote_jw_bool(&q.w, yes);
            } else if (strcmp(type, "string") == 0) {
                mote_jw_key(&q.w, name);
                mote_jw_str(&q.w, line);
            } else {
                bool integer = strcmp(type, "integer") == 0;

                (void)end;
                if (!json_number(line, integer)) {
                    fprintf(stderr, "  (a number%s)\n", integer ? " without a fraction" : "");
                    ask_field();
                    return;
                }
                mote_jw_key(&q.w, name);
                mote_jw_raw(&q.w, line, strlen(line)); /* (checked: a JSON number) */
            }
        }
        q.field++;
        if (mote_json_elem(&q.js, q.fields, q.field) >= 0) {
            ask_field();
            return;
        }
    }
    finish(MOTE_MCP_ACCEPT);
}
