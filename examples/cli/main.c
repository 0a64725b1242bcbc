/*
 * main.c - the mote command: a frontend of libmote's agent. It reads the
 * options and the environment, feeds terminal input to the session,
 * renders the session's events (untrusted text neutralised), and maps
 * signals, /quit and the end of input to mote_shutdown_begin(). The agent
 * itself - turns, tools, approval, recovery, the shutdown sequence - is in
 * the library (mote_agent.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../common/setup.h"
#include "../serve/serve.h"
#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_client.h"
#include "mote/mote_posix.h"
#include "mote/mote_show.h"
#include "opts.h"
#include "convs.h"
#include "edit.h"
#include "mcpui.h"
#include "mcplogin.h"
#include "../common/mcpconf.h"
#include "../common/oauth.h"

#define PROMPT_MAX (64 * 1024)
#define INPUT_MAX (64 * 1024)
#define DENY_REASON                                                                         \
    "refused: mote cannot ask for approval without a terminal (run it with --yes to allow " \
    "tools)"

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_session ses;
static struct mote_conv *conv;
static struct mote_llm_conf llm;
static struct mote_conv_conf cconf;
static struct mote_mcp mcp;
static bool have_mcp;
static struct cli_opts o;
static char prompt_buf[PROMPT_MAX];
static struct mote_json show_js; /* a call's input shown */
static char state_dir[1024];
static const char *model_name;

static struct {
    bool json;        /* --output-format stream-json */
    bool color;
    bool interactive;
    bool tty_in;
    bool editor;      /* input through the line editor (a terminal in and out) */
    bool spinner;     /* one while waiting for the first token */
    bool spinning;
    bool line_open;   /* stdout has an unfinished line */
    bool think_open;  /* stderr has an unfinished line of the model's thinking */
    unsigned spin_i;
    mote_timer_id spin_timer;
    char shown_id[MOTE_LLM_ID_MAX]; /* the call last shown (asked about) */
} ui;

static struct {
    bool requested;
    enum mote_sd_mode mode;
    int code;            /* the exit code it carries */
    const char *reason;
    bool by_signal;
    uint32_t last_int;   /* time of the last Ctrl+C during a turn */
    bool int_seen;
} sd;

static struct {
    char buf[INPUT_MAX + 2]; /* a line of INPUT_MAX bytes and its "\r\n" */
    size_t len;
    bool eof;
    bool too_long;       /* the line being read passed INPUT_MAX: refused whole */
    bool ahead_lost;     /* typed during a turn past the buffer: the rest dropped */
    mote_watch_id watch;
    bool prompt_shown;
    uint32_t ask_id;     /* the approval question open (0: none) */
    bool ask_cut;        /* the call shown for it has a part left out ("v" shows it) */
} in;

static bool failed;      /* the last turn ended in an error */
static bool unfinished;  /* the model stopped without finishing (exit 3 in one-shot) */

/* ---- output ---- */

static int out_sink(void *arg, const char *p, size_t n)
{
    fwrite(p, 1, n, (FILE *)arg);
    return 0;
}

/* An event as a line of stream-json (mote_event_json). */
static void json_event(const struct mote_event *ev)
{
    (void)mote_event_json(out_sink, stdout, ev);
    fflush(stdout);
}

int show_text(FILE *f, const char *s, size_t n)
{
    return mote_show_text(out_sink, f, s, n, MOTE_SHOW_TEXT);
}

/* A call for the person who approves it (mote_show_call): all of it, but
 * a long text's middle unless `whole`; the input is kept for "v".
 * Returns true if a part was left out. */
static bool show_ask(const char *name, const char *input, size_t len, bool whole)
{
    static char kept[MOTE_JOURNAL_LINE_MAX], kept_name[MOTE_LLM_NAME_MAX];
    static size_t kept_len;
    struct mote_show_plain p = {out_sink, stderr, ui.color, "answer v to see all of it"};
    struct mote_show_sink sink = mote_show_plain_sink(&p);

    if (name == NULL) {
        name = kept_name; /* the last call shown, again */
        input = kept;
        len = kept_len;
    } else {
        kept_len = len <= sizeof(kept) ? len : 0;
        memcpy(kept, input, kept_len);
        snprintf(kept_name, sizeof(kept_name), "%s", name);
    }
    return mote_show_call(&show_js, &pp.port, name, input, len, whole ? MOTE_SHOW_WHOLE : 0, &sink) > 0;
}

static void spin_clear(void)
{
    if (ui.spinning) {
        fputs("\r            \r", stderr);
        fflush(stderr);
        ui.spinning = false;
    }
}

/* The model's thinking shown so far ends (its line on stderr). */
static void think_end(void)
{
    if (ui.think_open) {
        fputs(ui.color ? "\033[0m\n" : "\n", stderr);
        fflush(stderr);
        ui.think_open = false;
    }
}

static void end_line(void)
{
    spin_clear();
    think_end();
    if (ui.line_open && !ui.json) {
        fputc('\n', stdout);
        ui.line_open = false;
    }
    fflush(stdout);
}

/* A message on stderr; `text` is untrusted. */
static void say(const char *color, const char *prefix, const char *text)
{
    end_line();
    if (ui.json) {
        fprintf(stderr, "%s", prefix);
        show_text(stderr, text, strlen(text));
        fputc('\n', stderr);
        return;
    }
    if (ui.color)
        fprintf(stderr, "\033[%sm", color);
    fputs(prefix, stderr);
    show_text(stderr, text, strlen(text));
    fputs(ui.color ? "\033[0m\n" : "\n", stderr);
}

/* An error; in stream-json, an event whose "code" names its cause
 * (mote_err_name: "connection_refused", "rate_limit", "storage", ...). */
static void show_error(const char *msg, int code)
{
    end_line();
    if (ui.json) {
        struct mote_event e = {.type = MOTE_EV_ERROR, .code = code, .text = msg, .len = strlen(msg)};

        json_event(&e);
        return;
    }
    say("31", "mote: ", msg);
}

static void spin(struct mote_loop *l, mote_timer_id t, void *arg)
{
    static const char frames[] = "|/-\\";

    (void)t, (void)arg;
    ui.spin_timer = 0;
    if (conv == NULL || mote_conv_state(conv) != MOTE_CONV_LLM_REQUESTING || sd.requested) {
        spin_clear();
        return;
    }
    fprintf(stderr, "\r%c waiting", frames[ui.spin_i++ % 4]);
    fflush(stderr);
    ui.spinning = true;
    if (mote_timer_start(l, 120, spin, NULL, 0, &ui.spin_timer) < 0)
        spin_clear(); /* no timer free: no spinner, nothing else lost */
}

static void show_call(const struct mote_event *ev)
{
    char s[128], name[80];

    end_line();
    if (ui.json) {
        json_event(ev);
        return;
    }
    mote_show_summary(&show_js, ev->input, ev->input_len, s, sizeof(s));
    mote_show_line(name, sizeof(name), ev->name, strlen(ev->name));
    if (ui.color)
        fprintf(stderr, "\033[36m* %s\033[0m %s\n", name, s);
    else
        fprintf(stderr, "* %s %s\n", name, s);
}

static void show_result(const struct mote_event *ev)
{
    char line[160];

    end_line();
    if (ui.json) {
        json_event(ev);
        return;
    }
    mote_show_result(ev->text, ev->len, line, sizeof(line));
    fprintf(stderr, ui.color ? "  \033[2m%s %s\033[0m\n" : "  %s %s\n", ev->is_error ? "x" : "=",
            line);
}

/* ---- shutdown requests ---- */

static void request_shutdown(enum mote_sd_mode mode, int code, const char *reason, bool by_signal)
{
    struct mote_shutdown_req req;

    memset(&req, 0, sizeof(req));
    req.reason = reason;
    req.mode = mode;
    req.timeout_ms = (uint32_t)o.shutdown_ms;
    if (sd.requested) {
        if (by_signal && mode == MOTE_SD_CANCEL) {
            if (sd.mode == MOTE_SD_DRAIN) {
                sd.mode = MOTE_SD_CANCEL; /* Ctrl+C during a drain: cancel now */
                sd.code = 130;
            } else {
                req.force = true; /* a further Ctrl+C: stop waiting */
            }
            (void)mote_shutdown_begin(&ses, &req);
        }
        return;
    }
    sd.requested = true;
    sd.mode = mode;
    sd.code = code;
    sd.reason = reason;
    sd.by_signal = by_signal;
    (void)mote_shutdown_begin(&ses, &req);
}

/* ---- the session's events ---- */

/* The line editor is used for input on a terminal in text mode, when it
 * draws on a terminal too (with stdout in a file the typing would land in
 * the file: input stays line-based, echoed by the terminal). Once it is
 * on, the terminal stays in its mode for the whole session: what is typed
 * during a turn (a paste too) waits for the next prompt, whole. */
static bool use_editor(void)
{
    return ui.editor;
}

/* Starts the editor's line after `prompt` (raw mode on); false if the
 * terminal refused (then input stays line-based). */
static bool editor_start(const char *prompt, size_t width)
{
    if (!use_editor())
        return false;
    if (!ed_active() && ed_enter(0, 1) < 0) {
        ui.editor = false;
        return false;
    }
    ed_start(prompt, width);
    return true;
}

/* A dim line after each answer: the tokens it took, as the provider said. */
static void show_usage(const struct mote_usage *u)
{
    end_line();
    fprintf(stderr, ui.color ? "\033[2m" : "");
    fprintf(stderr, "  [%llu tokens in, %llu out", (unsigned long long)u->input_tokens,
            (unsigned long long)u->output_tokens);
    if (u->cache_read_tokens > 0 || u->cache_write_tokens > 0)
        fprintf(stderr, "; cache: %llu read, %llu written", (unsigned long long)u->cache_read_tokens,
                (unsigned long long)u->cache_write_tokens);
    fprintf(stderr, ui.color ? "]\033[0m\n" : "]\n");
}

/* The approval question (after the call was shown). */
static void ask_again(void)
{
    static const char q[] = "  run it? [y/N] (a: always for this tool; other text: no, and why) ";
    static const char qv[] =
        "  run it? [y/N] (v: see all of it; a: always for this tool; other text: no, and why) ";

    fflush(stderr);
    if (editor_start(in.ask_cut ? qv : q, in.ask_cut ? sizeof(qv) - 1 : sizeof(q) - 1)) {
        in.prompt_shown = true;
    } else {
        fputs(in.ask_cut ? "  run it? [y/N/v] " : "  run it? [y/N] ", stderr);
        fflush(stderr);
    }
}

static void on_event(void *arg, const struct mote_event *ev)
{
    (void)arg;
    switch (ev->type) {
    case MOTE_EV_TEXT:
        spin_clear();
        think_end();
        if (ui.json) {
            json_event(ev);
        } else if (ev->len > 0) {
            ui.line_open = show_text(stdout, ev->text, ev->len) != '\n';
        }
        fflush(stdout);
        break;
    case MOTE_EV_THINKING:
        if (ui.json) {
            json_event(ev);
        } else if (!o.quiet && ev->len > 0) {
            /* on stderr, dim: stdout keeps the answer alone (-q: not shown) */
            spin_clear();
            if (ui.line_open) {
                fputc('\n', stdout);
                fflush(stdout);
                ui.line_open = false;
            }
            if (!ui.think_open)
                fputs(ui.color ? "\033[2mthinking: " : "thinking: ", stderr);
            ui.think_open = true;
            (void)show_text(stderr, ev->text, ev->len);
            fflush(stderr);
        }
        break;
    case MOTE_EV_STATE:
        if (ev->state == MOTE_CONV_LLM_REQUESTING && ui.spinner && !ui.spinning &&
            ui.spin_timer == 0 && mote_timer_start(&loop, 150, spin, NULL, 0, &ui.spin_timer) < 0)
            ui.spin_timer = 0;
        if (ev->state != MOTE_CONV_LLM_REQUESTING)
            spin_clear();
        break;
    case MOTE_EV_APPROVAL:
        if (ui.json) {
            show_call(ev);
        } else {
            end_line();
            in.ask_cut = show_ask(ev->name, ev->input, ev->input_len, false);
        }
        snprintf(ui.shown_id, sizeof(ui.shown_id), "%s", ev->id);
        /* Only an answer typed after the question answers it: what was
         * typed before (during the answer's stream) is dropped, here and
         * in the terminal's buffer. */
        if (in.len > 0 || in.too_long) {
            in.len = 0;
            in.too_long = false;
            fprintf(stderr, "  (what was typed before the question was set aside)\n");
        }
        if (ui.tty_in)
            tcflush(0, TCIFLUSH);
        in.ask_id = ev->ask_id;
        ask_again();
        break;
    case MOTE_EV_TOOL_CALL:
        if (strcmp(ui.shown_id, ev->id) != 0)
            show_call(ev);
        ui.shown_id[0] = '\0';
        break;
    case MOTE_EV_TOOL_RESULT:
        show_result(ev);
        break;
    case MOTE_EV_TURN_END:
        end_line();
        failed = false;
        unfinished = mote_stop_unfinished(ev->stop_reason);
        if (!ui.json && !o.quiet && (ev->turn_usage.input_tokens > 0 || ev->turn_usage.output_tokens > 0))
            show_usage(&ev->turn_usage);
        if (ui.json)
            json_event(ev);
        break;
    case MOTE_EV_NOTE:
        say("2", "", ev->text);
        break;
    case MOTE_EV_CANCELLED:
        in.ask_id = 0;
        say("33", "", "(cancelled)");
        in.prompt_shown = false;
        break;
    case MOTE_EV_RECOVERY:
        say("2", "mote: ", ev->text);
        if (ev->code == MOTE_RECOVER_TOOL_INTERRUPTED || ev->code == MOTE_RECOVER_LIMIT)
            failed = true;
        break;
    case MOTE_EV_WARNING:
        say("33", "mote: warning: ", ev->text);
        break;
    case MOTE_EV_ERROR:
        failed = true;
        in.ask_id = 0;
        if (ev->code == MOTE_ERR_LIMIT && ev->conv != NULL) {
            char m[120];

            snprintf(m, sizeof(m), "stopped after %u model requests (--max-turns); /retry goes on",
                     ev->conv->turns);
            show_error(m, ev->code);
        } else {
            show_error(ev->text, ev->code);
        }
        if (ev->fatal) {
            request_shutdown(MOTE_SD_CANCEL, 1, "storage", false);
        } else if (ui.interactive && !ui.json && ev->code != MOTE_ERR_LIMIT) {
            say("2", "", "(/retry sends the conversation again)");
        }
        break;
    case MOTE_EV_MCP: {
        char name[40];

        mote_show_line(name, sizeof(name), ev->name, strlen(ev->name));
        if (ui.json || !ui.color) {
            end_line();
            fprintf(stderr, "%smcp %s: ", ui.json ? "mote: " : "", name);
            show_text(stderr, ev->text, ev->len);
            fputc('\n', stderr);
        } else {
            char prefix[64];

            snprintf(prefix, sizeof(prefix), "mcp %s: ", name);
            say("2", prefix, ev->text);
        }
        break;
    }
    default:
        break;
    }
}

/* ---- the conversation ---- */

static int new_conversation(void)
{
    char id[MOTE_CONV_ID_MAX];
    unsigned char r[3];
    time_t t = time(NULL);
    struct tm tm;
    int rc;

    pp.port.random(pp.port.ctx, r, sizeof(r));
    gmtime_r(&t, &tm);
    /* (fields bounded: 23 bytes whatever the clock says, so MOTE_CONV_ID_MAX's
     * floor of 24 builds with -Wformat-truncation) */
    snprintf(id, sizeof(id), "%04u%02u%02u-%02u%02u%02u-%02x%02x%02x",
             (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)(tm.tm_mon + 1) % 100u,
             (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u,
             (unsigned)tm.tm_sec % 100u, r[0], r[1], r[2]);
    rc = mote_conv_create(&ses, &cconf, id, &conv);
    if (rc < 0) {
        char m[MOTE_POSIX_PATH_MAX + 100];

        snprintf(m, sizeof(m), "cannot create the conversation in %s: %s", state_dir,
                 mote_strerror(rc));
        fprintf(stderr, "mote: %s\n", m);
        if (ui.json)
            show_error(m, rc == MOTE_ERR_FULL || rc == MOTE_ERR_SHUTDOWN ? rc : MOTE_ERR_STORAGE);
        return 1;
    }
    return 0;
}

static int open_conversation(void)
{
    char id[MOTE_CONV_ID_MAX + 2];
    uint32_t bad = 0;
    bool repaired = false;
    int rc;

    if (o.resume == NULL && !o.cont)
        return new_conversation();
    if (o.resume != NULL) {
        snprintf(id, sizeof(id), "%s", o.resume);
    } else {
        rc = mote_session_recent(&ses, id, sizeof(id));
        if (rc == MOTE_ERR_NOENT) {
            fprintf(stderr, "mote: no conversation to continue yet: starting a new one\n");
            return new_conversation();
        }
        if (rc < 0) {
            fprintf(stderr, "mote: cannot read %s/current (the most recent conversation): %s\n",
                    state_dir, mote_strerror(rc));
            return 1;
        }
    }
    rc = mote_conv_open(&ses, &cconf, id, &conv, &bad, &repaired);
    if (rc == MOTE_ERR_NOENT && o.resume == NULL) {
        /* `current` names a journal that is gone, or empty (a start
         * killed before its first record): nothing to continue. */
        fprintf(stderr, "mote: conversation %s holds nothing yet: starting a new one\n", id);
        return new_conversation();
    }
    if (rc == MOTE_ERR_NOENT || rc == MOTE_ERR_INVAL) {
        fprintf(stderr, "mote: no conversation '%s' in %s/conversations\n", id, state_dir);
        return 2;
    }
    if (rc == MOTE_ERR_CORRUPT) {
        fprintf(stderr, "mote: conversation %s is damaged at line %u; it was left as it is\n", id,
                bad);
        return 1;
    }
    if (rc == MOTE_ERR_NOTSUP) {
        fprintf(stderr, "mote: conversation %s was written by a newer mote (its journal format is "
                        "unknown here); it was left as it is\n",
                id);
        return 1;
    }
    if (rc == MOTE_ERR_LOCKED) {
        if (ses.lock_holder > 0)
            fprintf(stderr, "mote: conversation %s is open in another mote process (pid %lld); "
                            "nothing was touched\n",
                    id, (long long)ses.lock_holder);
        else
            fprintf(stderr, "mote: conversation %s is open in another mote process; nothing was "
                            "touched\n",
                    id);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "mote: cannot open conversation %s: %s\n", id, mote_strerror(rc));
        return 1;
    }
    if (repaired)
        fprintf(stderr, "mote: conversation %s ended in a torn record (a crash while writing); it "
                        "was cut off and kept in %s.jsonl.torn\n",
                id, id);
    return 0;
}

/* `--resume` without an id: the newest conversations, numbered, and the
 * user's choice (before the loop runs: a read through the port's wait, so
 * that Ctrl+C, SIGTERM and SIGHUP still end it). */
static char picked[MOTE_CONV_ID_MAX];

/* A line typed at the picker into buf (NUL-terminated, spaces around it
 * taken off). Returns 0, -1 at the end of input, or the exit code of a
 * signal that came meanwhile. */
static int picker_line(char *buf, size_t cap)
{
    size_t n = 0;

    for (;;) {
        struct mote_pollfd pf = {0, MOTE_POLL_IN, 0};
        uint8_t counts[MOTE_SIG_COUNT];
        char c;
        ssize_t r;
        int w = pp.port.wait(pp.port.ctx, &pf, 1, -1);

        if (pp.port.signals_take(pp.port.ctx, counts) > 0)
            return counts[MOTE_SIG_TERM] ? 143 : counts[MOTE_SIG_HUP] ? 129 : 130;
        if (w < 0)
            return -1;
        if (pf.revents == 0)
            continue;
        r = read(0, &c, 1);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return -1;
        if (c == '\n')
            break;
        if (n + 1 < cap)
            buf[n++] = c;
    }
    while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    n = strspn(buf, " \t");
    memmove(buf, buf + n, strlen(buf + n) + 1);
    return 0;
}

static int pick_conversation(void)
{
    char line[64], *end;
    unsigned long k;
    unsigned n;
    int rc;

    if (!isatty(0) || !isatty(2)) {
        fprintf(stderr, "mote: --resume without an id picks on a terminal; name one (see mote "
                        "--list)\n");
        return 2;
    }
    if ((rc = convs_load(&ses)) < 0) {
        fprintf(stderr, "mote: cannot list the conversations: %s\n", mote_strerror(rc));
        return 1;
    }
    if (convs_count() == 0 || (n = convs_print(stderr, true, 20)) == 0) {
        fprintf(stderr, "mote: no conversations to resume yet\n");
        return 2;
    }
    for (;;) {
        fprintf(stderr, "resume which (1-%u, Enter to cancel)? ", n);
        fflush(stderr);
        if ((rc = picker_line(line, sizeof(line))) != 0 || line[0] == '\0') {
            fprintf(stderr, "\n");
            return rc > 0 ? rc : 0; /* a signal, or cancelled: nothing opened */
        }
        k = strtoul(line, &end, 10);
        if (end != line && *end == '\0' && k >= 1 && k <= n)
            break;
    }
    snprintf(picked, sizeof(picked), "%s", convs_pick((unsigned)k, 20));
    o.resume = picked;
    return 0;
}

/* The retention limit, after this conversation is open (so it is never
 * the one removed). A failure here is told and does not stop the run. */
static void prune(void)
{
    struct mote_prune_report pr;
    int rc = mote_session_prune(&ses, o.keep, o.keep_bytes, &pr);

    if (rc < 0)
        fprintf(stderr, "mote: cannot remove old conversations: %s\n", mote_strerror(rc));
    else if (pr.count > 0 && !o.quiet)
        fprintf(stderr, "mote: removed %lu old finished conversation%s (%llu bytes; --keep %lu, "
                        "--keep-bytes %lu)\n",
                pr.count, pr.count == 1 ? "" : "s", (unsigned long long)pr.bytes, o.keep,
                o.keep_bytes);
}

/* `--list`: needs no API key. */
static int list_conversations(void)
{
    static struct mote_session_conf lconf;
    int rc;

    struct stat st;

    if ((rc = fe_state_path(&o, state_dir, sizeof(state_dir))) != 0)
        return rc;
    if (stat(state_dir, &st) < 0 && errno == ENOENT) {
        printf("  no conversations yet\n"); /* listing creates nothing */
        return 0;
    }
    if ((rc = fe_state_dir(&o, &pp, state_dir, sizeof(state_dir))) != 0)
        return rc;
    lconf.on_event = on_event; /* none come: no conversation is opened */
    if (mote_loop_init(&loop, &pp.port) < 0 || mote_session_init(&ses, &loop, &lconf) < 0) {
        fprintf(stderr, "mote: cannot start the event loop\n");
        return 1;
    }
    rc = convs_load(&ses);
    if (rc < 0) {
        fprintf(stderr, "mote: cannot list the conversations in %s: %s\n", state_dir,
                mote_strerror(rc));
        return 1;
    }
    convs_print(stdout, false, CONVS_MAX);
    mote_session_deinit(&ses);
    mote_loop_deinit(&loop);
    return 0;
}

/* ---- signals ---- */

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    uint32_t now = mote_loop_now(l);

    (void)arg;
    if (sig == MOTE_SIG_TERM) {
        request_shutdown(MOTE_SD_DRAIN, 143, "SIGTERM", true);
        return;
    }
    if (sig == MOTE_SIG_HUP) {
        request_shutdown(MOTE_SD_DRAIN, 129, "SIGHUP", true);
        return;
    }
    /* Ctrl+C */
    if (!sd.requested && ui.interactive && mcpui_busy() && n == 1) {
        mcpui_cancel(); /* a /prompt still being fetched */
        in.prompt_shown = false;
        return;
    }
    if (!sd.requested && ui.interactive && conv != NULL && mote_conv_busy(conv) && n == 1 &&
        !(sd.int_seen && (uint32_t)(now - sd.last_int) < 1000u)) {
        sd.int_seen = true;
        sd.last_int = now;
        (void)mote_conv_cancel(conv); /* back to the prompt */
        in.prompt_shown = false;
        return;
    }
    request_shutdown(MOTE_SD_CANCEL, 130, "SIGINT", true);
}

/* ---- input ---- */

/* A text from the MCP commands (/prompt) as the user's turn. */
static void send_turn(const char *text, size_t len)
{
    int rc = mote_conv_send(conv, text, len);

    if (rc < 0)
        fprintf(stderr, "mote: the prompt was not sent: %s\n",
                rc == MOTE_ERR_TOO_LARGE ? "it does not fit one journal record" : mote_strerror(rc));
}

static void drain_input(void);

static void show_prompt(void)
{
    if (!ui.interactive || in.prompt_shown || conv == NULL || mote_conv_busy(conv) ||
        mcpui_busy() ||
        sd.requested || in.eof || ui.json)
        return;
    fflush(stdout);
    in.ahead_lost = false;
    if (editor_start(ui.color ? "\033[1m> \033[0m" : "> ", 2)) {
        in.prompt_shown = true;
        drain_input(); /* what was typed ahead goes into the new line */
        return;
    }
    fputs(ui.color ? "\033[1m> \033[0m" : "> ", stdout);
    fflush(stdout);
    in.prompt_shown = true;
}

static int walk_job(void *arg, const struct mote_job_info *info)
{
    uint32_t now = mote_loop_now(&loop);

    (void)arg;
    printf("  %-14s %-11s %6.1fs ", info->name, mote_job_state_name(info->state),
           (double)((info->finished_ms != 0 ? info->finished_ms : now) - info->started_ms) / 1000.0);
    show_text(stdout, info->errmsg != NULL ? info->errmsg : "",
                info->errmsg != NULL ? strlen(info->errmsg) : 0);
    fputc('\n', stdout);
    return 0;
}

static void command(const char *line)
{
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0) {
        request_shutdown(MOTE_SD_CANCEL, 0, "quit", false);
    } else if (strcmp(line, "/help") == 0) {
        printf("  /help     this list\n  /quit     leave (also /exit, Ctrl+D)\n"
               "  /jobs     the job table: running and recent jobs\n"
               "  /retry    send the conversation again after an error or an interruption\n"
               "  /new      start a new conversation\n"
               "  /compact  summarise the conversation now (later requests start there)\n"
               "  /usage    tokens used by this conversation\n"
               "  /conversations  the conversations on disk (mote --resume ID opens one)\n"
               "  /prompts  the MCP servers' prompts; /prompt NAME [ARG=VALUE...] sends one\n"
               "  Ctrl+C cancels a running turn; at the prompt, or twice, it leaves.\n");
    } else if (strcmp(line, "/jobs") == 0) {
        unsigned a, i;

        mote_job_counts(&loop, &a, &i);
        printf("  %u active, %u recent\n", a, i);
        mote_job_walk(&loop, walk_job, NULL);
    } else if (strcmp(line, "/compact") == 0) {
        int rc = mote_conv_compact(conv);

        if (rc < 0)
            fprintf(stderr, "mote: cannot compact now: %s\n",
                    rc == MOTE_ERR_ALREADY ? "nothing said yet" : mote_strerror(rc));
    } else if (strcmp(line, "/usage") == 0) {
        const struct mote_usage *t = &conv->total, *l = &conv->usage;

        printf("  this conversation: %llu input, %llu output tokens", (unsigned long long)t->input_tokens,
               (unsigned long long)t->output_tokens);
        if (t->cache_read_tokens > 0 || t->cache_write_tokens > 0)
            printf(" (cache: %llu read, %llu written)", (unsigned long long)t->cache_read_tokens,
                   (unsigned long long)t->cache_write_tokens);
        printf("\n  the last request: %llu input, %llu output", (unsigned long long)l->input_tokens,
               (unsigned long long)l->output_tokens);
        if (cconf.context_window > 0)
            printf(" (context window %u tokens; summarised at %u%%)", cconf.context_window, 80u);
        printf("\n");
    } else if (strcmp(line, "/conversations") == 0) {
        int rc = convs_load(&ses);

        if (rc < 0)
            fprintf(stderr, "mote: cannot list the conversations: %s\n", mote_strerror(rc));
        else
            convs_print(stdout, false, 20);
    } else if (strcmp(line, "/retry") == 0) {
        int rc = mote_conv_retry(conv);

        if (rc == MOTE_ERR_ALREADY)
            fprintf(stderr, "mote: nothing to retry: the last answer is complete (send a "
                            "message)\n");
        else if (rc < 0)
            fprintf(stderr, "mote: cannot retry: %s\n", mote_strerror(rc));
        failed = false;
    } else if (mcpui_command(line)) {
        /* (/prompts, /prompt: mcpui.c) */
    } else if (strcmp(line, "/new") == 0) {
        if (mote_conv_close(conv) < 0 || new_conversation() != 0)
            request_shutdown(MOTE_SD_CANCEL, 1, "storage", false);
        else
            printf("  (new conversation %s)\n", mote_conv_id(conv));
        failed = false;
    } else {
        char s[80];

        mote_show_line(s, sizeof(s), line, strlen(line));
        printf("  unknown command %s (see /help)\n", s);
    }
}

/* The next complete line, taken out of the buffer (a last line without a
 * newline counts at the end of input). Returns its length or -1. */
static ssize_t take_line(char *line, size_t cap)
{
    char *nl = memchr(in.buf, '\n', in.len);
    size_t n, used;

    if (nl == NULL) {
        if (!in.eof || in.len == 0)
            return -1;
        nl = in.buf + in.len;
    }
    n = (size_t)(nl - in.buf);
    used = nl < in.buf + in.len ? n + 1 : n;
    if (n >= cap)
        n = cap - 1;
    memcpy(line, in.buf, n);
    line[n] = '\0';
    memmove(in.buf, in.buf + used, in.len - used);
    in.len -= used;
    if (n > 0 && line[n - 1] == '\r')
        line[--n] = '\0';
    return (ssize_t)n;
}

/* The next line: through the line editor on a terminal (only while its
 * prompt or question is up: what is typed meanwhile waits in the
 * buffer), else as take_line(). Returns its length, -1 (none yet), -2
 * (refused: too long) or -3 (Ctrl+D on an empty line). */
static ssize_t get_line(char *line, size_t cap)
{
    size_t used = 0, len = 0;
    enum ed_result r;

    if (!use_editor())
        return take_line(line, cap);
    if (!ed_started() || in.len == 0)
        return -1;
    r = ed_feed(in.buf, in.len, &used, line, &len);
    memmove(in.buf, in.buf + used, in.len - used);
    in.len -= used;
    if (r == ED_MORE)
        return -1;
    if (r == ED_EOF)
        return -3;
    if (r == ED_REFUSED) {
        fprintf(stderr, "mote: an input longer than %d bytes was refused whole\n", ED_LINE_MAX);
        return -2;
    }
    return (ssize_t)len;
}

/* The end of the first line in the buffer ('\n', or '\r' from a terminal
 * in the editor's mode), or NULL. */
static char *first_eol(void)
{
    char *nl = memchr(in.buf, '\n', in.len);
    char *cr = use_editor() ? memchr(in.buf, '\r', in.len) : NULL;

    return cr != NULL && (nl == NULL || cr < nl) ? cr : nl;
}

static bool is_quit(const char *p, size_t k)
{
    return k == 5 && (memcmp(p, "/quit", 5) == 0 || memcmp(p, "/exit", 5) == 0);
}

static char in_line[ED_LINE_MAX + 1]; /* a whole editor in_line and its NUL */

/* Lines for a server's open question (mcpui.c), in any mode. */
static void drain_question(void)
{
    while (!sd.requested && mcpui_asking()) {
        ssize_t n = get_line(in_line, sizeof(in_line));

        if (n == -1 && !in.eof)
            break;
        if (n >= 0)
            in_line[n] = '\0';
        mcpui_reply(n >= 0 ? in_line : NULL, n >= 0 ? (long)n : -1); /* (end of input: cancel) */
        in.prompt_shown = false;
    }
}

/* Handles complete lines while the session can take them. */
static void drain_input(void)
{
    while (!sd.requested) {
        ssize_t n;

        if (mcpui_asking()) {
            drain_question();
            if (mcpui_asking())
                break;
            continue;
        }

        if (in.ask_id != 0) {
            /* The answer to the open question (only a in_line typed after it). */
            const char *why;
            int a;

            n = get_line(in_line, sizeof(in_line));
            if (n == -1) {
                if (!in.eof)
                    break;
                n = 0; /* end of input answers no */
            }
            if (n < 0)
                n = 0; /* Ctrl+D answers no (the session goes on), as does a refused in_line */
            in_line[n] = '\0';
            a = mote_show_answer(in_line, in.ask_cut, &why);
            if (a == MOTE_SHOW_VIEW) {
                (void)show_ask(NULL, NULL, 0, true); /* then the same question */
                in.prompt_shown = false;
                ask_again();
                continue;
            }
            (void)mote_conv_approve(conv, in.ask_id, (enum mote_answer)a, why);
            in.ask_id = 0;
            in.prompt_shown = false;
            continue;
        }
        if (conv != NULL && (mote_conv_busy(conv) || mcpui_busy())) {
            /* Lines wait for the turn to end; on a terminal /quit and
             * /exit do not (from a pipe they keep their place in in_line). */
            char *nl = first_eol();
            size_t k = nl != NULL ? (size_t)(nl - in.buf) : in.len;

            if (k > 0 && in.buf[k - 1] == '\r')
                k--;
            if (!ui.tty_in || nl == NULL || !is_quit(in.buf, k))
                break;
            in.len -= (size_t)(nl - in.buf) + 1;
            memmove(in.buf, nl + 1, in.len);
            command("/quit");
            continue;
        }
        n = get_line(in_line, sizeof(in_line));
        if (n == -1)
            break;
        if (n == -3) {
            in.eof = true; /* Ctrl+D on an empty in_line: the end of input */
            in.len = 0;
            break;
        }
        in.prompt_shown = false;
        if (n <= 0)
            continue;
        if (use_editor())
            ed_history_add(in_line, (size_t)n);
        (void)mote_history_add(&ses, in_line, (size_t)n);
        if (in_line[0] == '/') {
            command(in_line);
            continue;
        }
        {
            int rc = mote_conv_send(conv, in_line, (size_t)n);

            if (rc == MOTE_ERR_INVAL)
                continue; /* only blanks: nothing to send */
            if (rc == MOTE_ERR_TOO_LARGE)
                fprintf(stderr, "mote: the message was not sent: it does not fit one journal "
                                "record (%zd bytes; at most %d once JSON-escaped: a quote, a "
                                "backslash or a control character takes two bytes or more)\n",
                        n, MOTE_JOURNAL_LINE_MAX - 64);
            else if (rc < 0)
                fprintf(stderr, "mote: the message was not sent: %s\n", mote_strerror(rc));
        }
    }
    if (in.eof && in.len == 0 && conv != NULL && !mote_conv_busy(conv) && !mcpui_busy() &&
        !sd.requested)
        request_shutdown(MOTE_SD_CANCEL, 0, "end of input", false);
}

static void on_stdin(struct mote_loop *l, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    char scratch[4096];
    ssize_t n;

    (void)l, (void)w, (void)revents, (void)arg;
    if (use_editor()) {
        /* Raw bytes for the editor: at a prompt they are fed at once;
         * during a turn they wait, up to the buffer's size. */
        size_t room = sizeof(in.buf) - in.len;

        n = read(fd, room > 0 ? in.buf + in.len : scratch, room > 0 ? room : sizeof(scratch));
        if (n > 0 && room > 0) {
            in.len += (size_t)n;
        } else if (n > 0) {
            if (!in.ahead_lost)
                fprintf(stderr, "\nmote: what was typed during the turn passed %d bytes; the "
                                "rest was dropped\n",
                        INPUT_MAX);
            in.ahead_lost = true;
        }
    } else {
        if (in.len == sizeof(in.buf) && memchr(in.buf, '\n', in.len) == NULL) {
            /* A line longer than the buffer: refused whole, up to its end. */
            if (!in.too_long)
                fprintf(stderr, "mote: an input line longer than %d bytes was refused\n",
                        INPUT_MAX);
            in.too_long = true;
            in.len = 0;
        }
        n = read(fd, in.buf + in.len, sizeof(in.buf) - in.len);
        if (n > 0) {
            size_t start = in.len;

            in.len += (size_t)n;
            if (in.too_long) {
                /* drop the rest of the long line, keep what follows it */
                char *nl = memchr(in.buf + start, '\n', in.len - start);

                if (nl == NULL) {
                    in.len = 0;
                } else {
                    size_t used = (size_t)(nl - in.buf) + 1;

                    memmove(in.buf, in.buf + used, in.len - used);
                    in.len -= used;
                    in.too_long = false;
                }
            }
        }
    }
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        in.eof = true;
        (void)mote_watch_remove(&loop, in.watch);
        in.watch = 0;
    }
}

static int read_stdin_prompt(void)
{
    size_t n = 0;

    while (n < sizeof(prompt_buf)) {
        ssize_t r = read(0, prompt_buf + n, sizeof(prompt_buf) - n);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (n == sizeof(prompt_buf)) {
        fprintf(stderr, "mote: the prompt on stdin is longer than %d bytes\n", PROMPT_MAX);
        return -1;
    }
    while (n > 0 && (prompt_buf[n - 1] == '\n' || prompt_buf[n - 1] == '\r'))
        n--;
    prompt_buf[n] = '\0';
    return 0;
}

static int recall_line(void *arg, const char *line, size_t len)
{
    (void)arg;
    ed_history_add(line, len);
    return 0;
}

/* ---- the end ---- */

static int finish(const struct mote_shutdown_report *r)
{
    int code = sd.code;

    ed_leave();
    end_line();
    if (r->cut[0] != '\0')
        fprintf(stderr, "mote: %s did not stop in time\n", r->cut);
    if (r->left[0] != '\0')
        fprintf(stderr, "mote: %s still ran after it was cancelled\n", r->left);
    if (r->timed_out)
        fprintf(stderr, "mote: shutdown timed out after %lu ms; the conversation is marked for "
                        "recovery (mote --continue finishes it)\n",
                o.shutdown_ms);
    if (r->history_err < 0)
        fprintf(stderr, "mote: warning: cannot save the input history in %s: %s\n", state_dir,
                mote_strerror(r->history_err));
    if (r->mcp_left > 0)
        fprintf(stderr, "mote: warning: an MCP server did not exit; its supervisor ends it\n");
    if (r->storage_err < 0 && code == 0)
        code = 1;
    if (!sd.by_signal && r->timed_out)
        code = 1;
    if (ui.json) {
        printf("{\"type\":\"shutdown\",\"reason\":\"%s\",\"exit_code\":%d}\n",
               sd.reason != NULL ? sd.reason : "end", code);
        fflush(stdout);
    }
    return code;
}

int main(int argc, char **argv)
{
    static struct mote_session_conf sconf;
    const char *prompt = NULL;
    bool sent = false;
    int rc;

    if (cli_is_mcp_login(argc, argv))
        return cli_mcp_login(argc, argv); /* an MCP server's OAuth login */
    if (argc > 1 && (strcmp(argv[1], "serve") == 0 || strcmp(argv[1], "mcp") == 0))
        return serve_main(argc - 1, argv + 1); /* examples/serve: the agent as a service (and
                                                * `mote mcp`: its MCP server on stdio) */
    {
        /* mote serve's token is no business of the chat's tools */
        char token[256];

        (void)fe_take_secret("MOTE_SERVE_TOKEN", token, sizeof(token));
        memset(token, 0, sizeof(token));
    }
    if ((rc = cli_parse(&o, argc, argv, stderr)) != 0)
        return rc;
    if (o.help) {
        cli_usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("mote %s\n", mote_version());
        return 0;
    }
    if ((rc = fe_port_start(&pp, "mote")) != 0)
        return rc;
    if (o.list) {
        rc = list_conversations();
        mote_posix_deinit(&pp);
        return rc;
    }
    if ((rc = fe_model(&o, pp.port.tls_handshake != NULL, &llm, &model_name)) != 0 ||
        (rc = fe_mcp(&o, &mcp, &loop, &have_mcp)) != 0 ||
        (rc = fe_state_dir(&o, &pp, state_dir, sizeof(state_dir))) != 0)
        return rc;
    if (have_mcp) /* the tokens of servers logged in to (mote mcp login) */
        fe_oauth_attach(&pp.port, &mcp, mcpconf_conf(), state_dir, mcp.net.ca_file);
    if (o.prompt != NULL) {
        if (strcmp(o.prompt, "-") == 0) {
            if (read_stdin_prompt() < 0)
                return 2;
            prompt = prompt_buf;
        } else {
            prompt = o.prompt;
        }
    }
    ui.interactive = o.prompt == NULL;
    ui.tty_in = isatty(0);
    ui.json = o.format == CLI_FORMAT_STREAM_JSON;
    ui.editor = ui.tty_in && isatty(1) && !ui.json;
    ui.color = isatty(1) && getenv("NO_COLOR") == NULL && !ui.json;
    ui.spinner = isatty(1) && isatty(2) && !ui.json;
    sconf.on_event = on_event;
    sconf.tool_timeout_ms = (uint32_t)fe_env_ms("MOTE_TOOL_TIMEOUT_MS", MOTE_TOOL_TIMEOUT_MS);
    fe_conv_conf(&o, &llm, model_name, &cconf);
    if ((rc = fe_system(&o, &cconf.system)) != 0)
        return rc;
    cconf.approval = o.yes ? MOTE_APPROVE_ALLOW
                     : (ui.tty_in && (o.prompt == NULL || strcmp(o.prompt, "-") != 0))
                         ? MOTE_APPROVE_ASK
                         : MOTE_APPROVE_DENY;
    cconf.deny_reason = DENY_REASON;
    if ((rc = fe_session_start(&pp, &loop, &ses, &sconf, o.no_tools, "mote")) != 0)
        return rc;
    mote_loop_on_signal(&loop, on_signal, NULL);
    if (have_mcp && ui.tty_in && (ui.interactive || cconf.approval == MOTE_APPROVE_ASK))
        mcpui_elicit_on(&mcp, cconf.approval_timeout_ms, editor_start); /* servers' questions */
    else if (have_mcp && cconf.approval == MOTE_APPROVE_ALLOW)
        mcpui_elicit_defaults(&mcp, sconf.tool_timeout_ms); /* a form of defaults only taken */
    if (have_mcp) {
        fe_mcp_start(&ses, &mcp, &loop); /* the prompt does not wait for them */
        fe_oauth_tick_start(&loop);     /* tokens renewed before they expire */
    }
    mcpui_init(&loop, have_mcp ? &mcp : NULL, send_turn);
    if (o.resume_pick && ((rc = pick_conversation()) != 0 || o.resume == NULL))
        return rc;
    if ((rc = open_conversation()) != 0)
        return rc;
    prune();
    if (ui.interactive || cconf.approval == MOTE_APPROVE_ASK) {
        if (mote_watch_add(&loop, 0, MOTE_POLL_IN, on_stdin, NULL, 0, &in.watch) < 0) {
            fprintf(stderr, "mote: cannot watch the input\n");
            return 1;
        }
    }
    if (ui.interactive && use_editor()) {
        /* Up and Ctrl+R recall what was typed before, in any conversation. */
        (void)mote_history_read(&ses, recall_line, NULL);
        atexit(ed_leave);
    }
    if (use_editor() && ed_watch_signals(&loop) < 0)
        fprintf(stderr, "mote: warning: Ctrl+Z and window changes will not redraw the line\n");
    if (ui.interactive && !ui.json && ui.tty_in)
        fprintf(stderr, "mote %s - %s, conversation %s. /help for commands.\n", mote_version(),
                model_name, mote_conv_id(conv));
    while (!mote_shutdown_done(&ses)) {
        if (!sd.requested) {
            if (!ui.interactive) {
                drain_question();
                if (!mote_conv_busy(conv)) {
                    if (!sent && prompt != NULL && !(have_mcp && !mote_mcp_settled(&mcp))) {
                        /* one-shot: after any recovery, and once the MCP
                         * servers offer their tools */
                        sent = true;
                        failed = false;
                        unfinished = false;
                        rc = mote_conv_send(conv, prompt, strlen(prompt));
                        if (rc == MOTE_ERR_INVAL) {
                            fprintf(stderr, "mote: the prompt is empty\n");
                            sd.code = 2;
                            request_shutdown(MOTE_SD_CANCEL, 2, "done", false);
                        } else if (rc < 0) {
                            fprintf(stderr, "mote: cannot send the prompt: %s\n",
                                    mote_strerror(rc));
                            request_shutdown(MOTE_SD_CANCEL, 1, "done", false);
                        }
                    } else if (sent || prompt == NULL) {
                        request_shutdown(MOTE_SD_CANCEL, failed ? 1 : unfinished ? 3 : 0,
                                         "done", false);
                    }
                }
            } else {
                mcpui_poll();
                drain_input();
                show_prompt();
            }
        }
        rc = mote_loop_poll(&loop, -1);
        if (rc < 0) {
            fprintf(stderr, "mote: the event loop failed: %s\n", mote_strerror(rc));
            request_shutdown(MOTE_SD_CANCEL, 1, "fatal", true);
            sd.by_signal = false;
            sd.code = 1;
            if (!mote_shutdown_done(&ses)) {
                struct mote_shutdown_req force = {"fatal", MOTE_SD_CANCEL, 0, true};

                (void)mote_shutdown_begin(&ses, &force);
            }
            break;
        }
    }
    if (ui.interactive && in.prompt_shown)
        fputc('\n', stdout);
    rc = finish(&ses.report);
    fflush(stdout);
    fe_end(&ses, &loop, &pp);
    return rc;
}
