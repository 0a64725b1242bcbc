/*
 * main.c - the mote command-line agent: options, the state directory,
 * interactive chat and one-shot mode, signals, and the one shutdown
 * sequence every trigger goes through.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "mcpconf.h"
#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote/mote_posix.h"
#include "opts.h"

#define DEFAULT_ANTHROPIC_MODEL "claude-sonnet-4-5"
#define DEFAULT_OPENAI_MODEL "gpt-4o-mini"
#define PROMPT_MAX (64 * 1024)
#define INPUT_MAX (64 * 1024)
#define HISTORY_MAX 500 /* lines kept in STATE/history */

enum sd_mode { SD_NONE, SD_CANCEL, SD_DRAIN };

static struct mote_posix pp;
static struct mote_loop loop;
static struct agent ag;
static struct mote_jbuf jbuf;
static struct mote_llm_conf conf;
static struct mote_mcp mcp;
static bool have_mcp;
static struct cli_opts o;
static char prompt_buf[PROMPT_MAX];
static char state_dir[1024];

static struct {
    enum sd_mode mode;   /* requested shutdown */
    int code;            /* exit code it carries */
    const char *reason;
    bool force;          /* a further Ctrl+C: stop waiting */
    bool by_signal;
    uint32_t last_int;   /* time of the last Ctrl+C during a turn */
    bool int_seen;
} sd;

static struct {
    char buf[INPUT_MAX];
    size_t len;
    bool eof;
    mote_watch_id watch;
    bool prompt_shown;
    bool tty;
} in;

static const char *model_name;

/* ---- configuration ---- */

static enum cli_provider pick_provider(void)
{
    const char *a = getenv("ANTHROPIC_API_KEY");
    const char *k = getenv("OPENAI_API_KEY");

    if (o.provider != CLI_PROVIDER_NONE)
        return o.provider;
    if (a != NULL && a[0] != '\0')
        return CLI_PROVIDER_ANTHROPIC;
    if (k != NULL && k[0] != '\0')
        return CLI_PROVIDER_OPENAI;
    return CLI_PROVIDER_NONE;
}

static unsigned long env_ms(const char *name, unsigned long def)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? strtoul(v, NULL, 10) : def;
}

static int configure(void)
{
    enum cli_provider prov = pick_provider();
    const char *key, *url;
    struct mote_url u;

    if (prov == CLI_PROVIDER_NONE) {
        fprintf(stderr, "mote: no API key: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
                        "(or pick one with --provider)\n");
        return 2;
    }
    {
        /* Each dialect's key, base-URL variable and public API root. */
        static const struct {
            enum mote_provider p;
            const char *key_env, *url_env, *url;
        } d[] = {{MOTE_PROVIDER_ANTHROPIC, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                  "https://api.anthropic.com"},
                 {MOTE_PROVIDER_OPENAI, "OPENAI_API_KEY", "OPENAI_BASE_URL",
                  "https://api.openai.com/v1"}};
        unsigned i = prov == CLI_PROVIDER_ANTHROPIC ? 0 : 1;

        mote_llm_conf_defaults(&conf);
        conf.provider = d[i].p;
        conf.key_env = d[i].key_env;
        key = getenv(d[i].key_env);
        url = o.base_url != NULL ? o.base_url : getenv(d[i].url_env);
        if (url == NULL || url[0] == '\0')
            url = d[i].url;
    }
    if (key == NULL || key[0] == '\0') {
        /* A local OpenAI-compatible server (Ollama, llama.cpp) needs no key. */
        if (!(prov == CLI_PROVIDER_OPENAI && o.base_url != NULL)) {
            fprintf(stderr, "mote: no API key: set %s\n", conf.key_env);
            return 2;
        }
        key = "";
    }
    if (strlen(key) > MOTE_LLM_KEY_MAX) {
        fprintf(stderr, "mote: %s is longer than %d bytes\n", conf.key_env, MOTE_LLM_KEY_MAX);
        return 2;
    }
    if (mote_url_parse(&u, url) < 0) {
        fprintf(stderr, "mote: bad base URL '%s': use http://host[:port][/path] or https://...\n",
                url);
        return 2;
    }
    if (u.tls && pp.port.tls_handshake == NULL) {
        fprintf(stderr, "mote: %s needs TLS, but this mote was built with TLS=none "
                        "(rebuild with make TLS=mbedtls, or use an http:// URL)\n", url);
        return 2;
    }
    if (o.ca_file != NULL && access(o.ca_file, R_OK) != 0) {
        fprintf(stderr, "mote: cannot read --ca-file %s: %s\n", o.ca_file, strerror(errno));
        return 2;
    }
    if (o.mcp_config != NULL) {
        char err[300];

        mote_mcp_init(&mcp, &loop, NULL, NULL);
        mcp.timeout_ms = (uint32_t)env_ms("MOTE_MCP_TIMEOUT_MS", MOTE_MCP_TIMEOUT_MS);
        if (mcpconf_load(o.mcp_config, &mcp, err, sizeof(err)) < 0) {
            fprintf(stderr, "mote: %s\n", err);
            return 2;
        }
        have_mcp = mcp.n > 0;
    }
    conf.base_url = url;
    conf.api_key = key;
    conf.ca_file = o.ca_file;
    /* Tuning knobs (milliseconds) for tests and slow links. */
    conf.idle_timeout_ms = (uint32_t)env_ms("MOTE_IDLE_TIMEOUT_MS", conf.idle_timeout_ms);
    conf.first_byte_timeout_ms =
        (uint32_t)env_ms("MOTE_FIRST_BYTE_TIMEOUT_MS", conf.first_byte_timeout_ms);
    conf.backoff_ms = (uint32_t)env_ms("MOTE_BACKOFF_MS", conf.backoff_ms);
    model_name = o.model != NULL ? o.model
                 : prov == CLI_PROVIDER_ANTHROPIC ? DEFAULT_ANTHROPIC_MODEL
                                                  : DEFAULT_OPENAI_MODEL;
    return 0;
}

static int pick_state_dir(void)
{
    const char *d = o.state_dir, *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
    int rc;

    if (d == NULL)
        d = getenv("MOTE_STATE_DIR");
    if (d != NULL && d[0] != '\0')
        snprintf(state_dir, sizeof(state_dir), "%s", d);
    else if (x != NULL && x[0] != '\0')
        snprintf(state_dir, sizeof(state_dir), "%s/mote", x);
    else if (h != NULL && h[0] != '\0')
        snprintf(state_dir, sizeof(state_dir), "%s/.local/state/mote", h);
    else {
        fprintf(stderr, "mote: no state directory: set --state-dir, MOTE_STATE_DIR or HOME\n");
        return 2;
    }
    rc = mote_posix_storage_root(&pp, state_dir);
    if (rc < 0) {
        fprintf(stderr, "mote: cannot use the state directory %s: %s\n", state_dir,
                mote_strerror(rc));
        return 2;
    }
    return 0;
}

/* ---- the conversation file ---- */

static int read_current(char *id, size_t cap)
{
    const struct mote_port *p = &pp.port;
    int h = p->st_open(p->ctx, "current", MOTE_ST_READ), n;

    if (h < 0)
        return h;
    n = p->st_read(p->ctx, h, 0, id, cap - 1);
    p->st_close(p->ctx, h);
    if (n <= 0)
        return MOTE_ERR_NOENT;
    id[n] = '\0';
    id[strcspn(id, "\r\n")] = '\0';
    return 0;
}

static int produce_str(void *arg, char *buf, size_t cap)
{
    const char **s = arg;
    size_t n = strlen(*s);

    if (n > cap)
        n = cap;
    memcpy(buf, *s, n);
    *s += n;
    return (int)n;
}

static void write_current(const char *id)
{
    char line[MOTE_CONV_ID_MAX + 2];
    const char *s = line;

    snprintf(line, sizeof(line), "%s\n", id);
    if (pp.port.st_write_atomic(pp.port.ctx, "current", produce_str, &s) < 0)
        fprintf(stderr, "mote: warning: cannot record the current conversation\n");
}

static int open_conversation(bool *resumed)
{
    char id[MOTE_CONV_ID_MAX];
    int rc;

    *resumed = false;
    if (o.resume != NULL || o.cont) {
        if (o.resume != NULL)
            snprintf(id, sizeof(id), "%s", o.resume);
        else if (read_current(id, sizeof(id)) < 0) {
            fprintf(stderr, "mote: no conversation to continue yet: starting a new one\n");
            goto fresh;
        }
        rc = mote_journal_open(&ag.jr, &pp.port, id);
        if (rc == MOTE_ERR_NOENT || rc == MOTE_ERR_INVAL) {
            fprintf(stderr, "mote: no conversation '%s' in %s/conversations\n", id, state_dir);
            return 2;
        }
        if (rc == MOTE_ERR_CORRUPT) {
            fprintf(stderr, "mote: conversation %s is damaged at line %u; it was left as it is\n",
                    id, ag.jr.bad_line);
            return 1;
        }
        if (rc < 0) {
            fprintf(stderr, "mote: cannot open conversation %s: %s\n", id, mote_strerror(rc));
            return 1;
        }
        if (ag.jr.repaired)
            fprintf(stderr, "mote: conversation %s ended in a torn record (a crash while writing);"
                            " it was cut off and kept in %s.jsonl.torn\n",
                    id, id);
        *resumed = true;
        write_current(id);
        return 0;
    }
fresh:
    {
        unsigned char r[3];
        time_t t = time(NULL);
        struct tm tm;

        pp.port.random(pp.port.ctx, r, sizeof(r));
        gmtime_r(&t, &tm);
        snprintf(id, sizeof(id), "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, r[0], r[1], r[2]);
    }
    rc = mote_journal_create(&ag.jr, &pp.port, id);
    if (rc < 0) {
        fprintf(stderr, "mote: cannot create the conversation in %s: %s\n", state_dir,
                mote_strerror(rc));
        return 1;
    }
    write_current(id);
    return 0;
}

/* ---- input history ---- */

static void history_append(const char *line, size_t n)
{
    const struct mote_port *p = &pp.port;
    char buf[INPUT_MAX + 1];
    int h;

    if (n == 0 || n >= sizeof(buf))
        return;
    h = p->st_open(p->ctx, "history", MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (h < 0)
        return; /* saved again (or warned about) at shutdown */
    memcpy(buf, line, n);
    buf[n] = '\n';
    (void)p->st_append(p->ctx, h, buf, n + 1);
    p->st_close(p->ctx, h);
}

struct hist_out {
    char *data;
    size_t len, off;
};

static int produce_hist(void *arg, char *buf, size_t cap)
{
    struct hist_out *h = arg;
    size_t n = h->len - h->off;

    if (n > cap)
        n = cap;
    memcpy(buf, h->data + h->off, n);
    h->off += n;
    return (int)n;
}

/* Rewrites STATE/history with its last HISTORY_MAX lines, atomically. */
static int history_save(void)
{
    const struct mote_port *p = &pp.port;
    static char data[HISTORY_MAX * 256];
    struct hist_out out = {data, 0, 0};
    int64_t size;
    uint64_t from = 0;
    int h, n, lines = 0;
    size_t i;

    h = p->st_open(p->ctx, "history", MOTE_ST_READ);
    if (h == MOTE_ERR_NOENT)
        return 0;
    if (h < 0)
        return h;
    size = p->st_size(p->ctx, h);
    if (size > (int64_t)sizeof(data))
        from = (uint64_t)size - sizeof(data);
    n = p->st_read(p->ctx, h, from, data, sizeof(data));
    p->st_close(p->ctx, h);
    if (n < 0)
        return n;
    out.len = (size_t)n;
    /* Keep whole lines only, the last HISTORY_MAX of them. */
    i = out.len;
    while (i > 0) {
        if (data[i - 1] == '\n' && i != out.len && ++lines >= HISTORY_MAX)
            break;
        i--;
    }
    if (from > 0 && i == 0) {
        char *nl = memchr(data, '\n', out.len);

        i = nl != NULL ? (size_t)(nl - data) + 1 : out.len;
    }
    out.off = i;
    return p->st_write_atomic(p->ctx, "history", produce_hist, &out);
}

static void mcp_log(void *arg, const char *server, const char *msg)
{
    (void)arg;
    if (ag.json_out) {
        fprintf(stderr, "mote: mcp %s: %s\n", server, msg);
        return;
    }
    fprintf(stderr, ag.color ? "\033[2mmcp %s: %s\033[0m\n" : "mcp %s: %s\n", server, msg);
}

/* ---- signals ---- */

static void request_shutdown(enum sd_mode mode, int code, const char *reason, bool by_signal)
{
    if (sd.mode != SD_NONE) {
        if (by_signal && mode == SD_CANCEL) {
            sd.force = true; /* a further Ctrl+C during shutdown */
            mote_loop_break(&loop);
        }
        return;
    }
    sd.mode = mode;
    sd.code = code;
    sd.reason = reason;
    sd.by_signal = by_signal;
    mote_loop_stop_spawns(&loop); /* the continuation chain ends here */
    ag.shutting_down = true;
}

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    uint32_t now = mote_loop_now(l);

    (void)arg;
    if (sig == MOTE_SIG_TERM) {
        request_shutdown(SD_DRAIN, 143, "SIGTERM", true);
        return;
    }
    if (sig == MOTE_SIG_HUP) {
        request_shutdown(SD_DRAIN, 129, "SIGHUP", true);
        return;
    }
    /* Ctrl+C */
    if (sd.mode != SD_NONE) {
        if (sd.mode == SD_DRAIN) {
            sd.code = 130; /* Ctrl+C during a drain: cancel now */
            sd.mode = SD_CANCEL;
            agent_cancel(&ag);
        } else {
            request_shutdown(SD_CANCEL, 130, "SIGINT", true);
        }
        return;
    }
    if (ag.interactive && (agent_busy(&ag) || ag.awaiting_approval) && n == 1 &&
        !(sd.int_seen && (uint32_t)(now - sd.last_int) < 1000u)) {
        sd.int_seen = true;
        sd.last_int = now;
        agent_cancel(&ag); /* back to the prompt */
        in.prompt_shown = false;
        return;
    }
    request_shutdown(SD_CANCEL, 130, "SIGINT", true);
}

/* ---- input ---- */

static void show_prompt(void)
{
    if (!ag.interactive || in.prompt_shown || agent_busy(&ag) || sd.mode != SD_NONE ||
        ag.awaiting_approval || in.eof || ag.json_out)
        return;
    fputs(ag.color ? "\033[1m> \033[0m" : "> ", stdout);
    fflush(stdout);
    in.prompt_shown = true;
}

static int walk_job(void *arg, const struct mote_job_info *info)
{
    uint32_t now = mote_loop_now(&loop);

    (void)arg;
    printf("  %-14s %-11s %6.1fs %s\n", info->name, mote_job_state_name(info->state),
           (double)((info->finished_ms != 0 ? info->finished_ms : now) - info->started_ms) / 1000.0,
           info->errmsg != NULL ? info->errmsg : "");
    return 0;
}

static void command(const char *line)
{
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0) {
        request_shutdown(SD_CANCEL, 0, "quit", false);
    } else if (strcmp(line, "/help") == 0) {
        printf("  /help   this list\n  /quit   leave (also /exit, Ctrl+D)\n"
               "  /jobs   the job table: running and recent jobs\n"
               "  /retry  send the conversation again after an error or an interruption\n"
               "  /new    start a new conversation\n"
               "  Ctrl+C cancels a running turn; at the prompt, or twice, it leaves.\n");
    } else if (strcmp(line, "/jobs") == 0) {
        unsigned a, i;

        mote_job_counts(&loop, &a, &i);
        printf("  %u active, %u recent\n", a, i);
        mote_job_walk(&loop, walk_job, NULL);
    } else if (strcmp(line, "/retry") == 0) {
        (void)agent_retry(&ag);
    } else if (strcmp(line, "/new") == 0) {
        bool resumed;
        struct cli_opts keep = o;

        mote_journal_close(&ag.jr);
        o.cont = false;
        o.resume = NULL;
        if (open_conversation(&resumed) != 0)
            request_shutdown(SD_CANCEL, 1, "storage", false);
        else
            printf("  (new conversation %s)\n", ag.jr.id);
        o = keep;
        ag.st = MOTE_CONV_IDLE;
        ag.failed = false;
    } else {
        printf("  unknown command %s (see /help)\n", line);
    }
}

/* Handles complete lines while the agent can take them. */
static void drain_input(void)
{
    while (sd.mode == SD_NONE) {
        char *nl = memchr(in.buf, '\n', in.len);
        size_t n;
        char line[INPUT_MAX];

        if (nl == NULL) {
            if (!in.eof || in.len == 0)
                break;
            nl = in.buf + in.len; /* a last line without newline */
        }
        if (agent_busy(&ag) && !ag.awaiting_approval) {
            /* Lines wait for the turn to end; on a terminal /quit and
             * /exit do not (from a pipe they keep their place in line). */
            size_t k = (size_t)(nl - in.buf);

            if (!in.tty || !((k == 5 && memcmp(in.buf, "/quit", 5) == 0) ||
                             (k == 5 && memcmp(in.buf, "/exit", 5) == 0)))
                break;
        }
        n = (size_t)(nl - in.buf);
        memcpy(line, in.buf, n);
        line[n] = '\0';
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        {
            size_t used = nl < in.buf + in.len ? n + 1 : n; /* with its newline */

            memmove(in.buf, in.buf + used, in.len - used);
            in.len -= used;
        }
        in.prompt_shown = false;
        if (ag.awaiting_approval) {
            agent_approval(&ag, line[0] == 'y' || line[0] == 'Y');
            continue;
        }
        if (n == 0)
            continue;
        history_append(line, n);
        if (line[0] == '/') {
            command(line);
            continue;
        }
        if (!agent_user(&ag, line, n))
            fprintf(stderr, "mote: busy; the message was dropped\n");
    }
    if (in.eof && in.len == 0 && !agent_busy(&ag) && !ag.awaiting_approval && sd.mode == SD_NONE)
        request_shutdown(SD_CANCEL, 0, "end of input", false);
}

static void on_stdin(struct mote_loop *l, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    ssize_t n;

    (void)l, (void)w, (void)revents, (void)arg;
    if (in.len >= sizeof(in.buf) - 1) {
        /* A line longer than the buffer: refuse it rather than split it. */
        fprintf(stderr, "mote: input line longer than %d bytes was dropped\n", INPUT_MAX);
        in.len = 0;
    }
    n = read(fd, in.buf + in.len, sizeof(in.buf) - 1 - in.len);
    if (n > 0)
        in.len += (size_t)n;
    else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        in.eof = true;
        (void)mote_watch_remove(&loop, in.watch);
        in.watch = 0;
    }
}

/* ---- the shutdown sequence ---- */

static int name_job(void *arg, const struct mote_job_info *info)
{
    (void)arg;
    if (info->state == MOTE_JOB_RUNNING || info->state == MOTE_JOB_CANCELLING)
        fprintf(stderr, "mote: %s (%s) did not stop in time\n", info->name,
                mote_job_state_name(info->state));
    return 0;
}

static int shutdown_sequence(void)
{
    unsigned long timeout = o.shutdown_ms;
    bool timed_out = false;
    int rc, code = sd.code;

    /* 1. no new work (done when it was requested); 2. cancel or drain */
    if (sd.mode == SD_CANCEL)
        agent_cancel(&ag);
    /* 3. wait, bounded */
    rc = sd.force ? MOTE_ERR_INTR : mote_loop_wait_jobs(&loop, (uint32_t)timeout);
    if (rc == MOTE_ERR_TIMEDOUT || rc == MOTE_ERR_INTR) {
        timed_out = rc == MOTE_ERR_TIMEDOUT;
        if (timed_out)
            mote_job_walk(&loop, name_job, NULL);
        /* 4. what streamed so far as a closed record; marked for recovery */
        agent_shutdown_cut(&ag);
        mote_loop_cancel_all(&loop);
        (void)mote_loop_wait_jobs(&loop, 50); /* closes sockets, kills groups */
        if (timed_out)
            fprintf(stderr, "mote: shutdown timed out after %lu ms; the conversation is marked "
                            "for recovery (mote --continue finishes it)\n",
                    timeout);
    } else if (ag.st == MOTE_CONV_NEEDS_RECOVERY) {
        /* drained with work left (tool calls or a request due) */
        if (mote_journal_mark(&ag.jr, "needs_recovery") < 0)
            fprintf(stderr, "mote: warning: cannot mark the conversation for recovery\n");
    }
    /* 5. the input history */
    if (ag.interactive && (rc = history_save()) < 0)
        fprintf(stderr, "mote: warning: cannot save the input history in %s: %s\n", state_dir,
                mote_strerror(rc));
    /* 6. every MCP server, in parallel, inside what is left of the budget */
    if (have_mcp) {
        uint32_t budget = sd.force ? 0u : (uint32_t)(timeout < 3000 ? timeout : 3000);

        if (mote_mcp_disconnect_all(&mcp, budget) > 0)
            fprintf(stderr, "mote: warning: an MCP server did not exit; its supervisor ends it\n");
    }
    /* 7. storage */
    mote_journal_close(&ag.jr);
    if (!sd.by_signal && timed_out)
        code = 1;
    agent_emit_shutdown(&ag, sd.reason != NULL ? sd.reason : "end", code);
    return code;
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

int main(int argc, char **argv)
{
    const char *prompt = NULL;
    bool resumed, sent = false;
    int rc = cli_parse(&o, argc, argv, stderr);

    if (rc != 0)
        return rc;
    if (o.help) {
        cli_usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("mote %s\n", mote_version());
        return 0;
    }
    if (mote_posix_init(&pp) < 0) {
        fprintf(stderr, "mote: cannot start the POSIX port\n");
        return 1;
    }
    if ((rc = configure()) != 0 || (rc = pick_state_dir()) != 0)
        return rc;
    if (o.prompt != NULL) {
        if (strcmp(o.prompt, "-") == 0) {
            if (read_stdin_prompt() < 0)
                return 2;
            prompt = prompt_buf;
        } else {
            prompt = o.prompt;
        }
    }
    ag.interactive = o.prompt == NULL;
    in.tty = isatty(0);
    ag.json_out = o.format == CLI_FORMAT_STREAM_JSON;
    ag.color = isatty(1) && getenv("NO_COLOR") == NULL && !ag.json_out;
    ag.spinner = isatty(1) && isatty(2) && !ag.json_out;
    ag.max_turns = (unsigned)o.max_turns;
    ag.tool_timeout_ms = (uint32_t)env_ms("MOTE_TOOL_TIMEOUT_MS", 120000);
    ag.approval = o.yes ? APPROVE_YES
                  : (isatty(0) && (o.prompt == NULL || strcmp(o.prompt, "-") != 0))
                      ? APPROVE_ASK
                      : APPROVE_REFUSE;
    if (mote_posix_signals_install(&pp) < 0 || mote_loop_init(&loop, &pp.port) < 0) {
        fprintf(stderr, "mote: cannot start the event loop\n");
        return 1;
    }
    mote_loop_on_signal(&loop, on_signal, NULL);
    ag.jr.buf = &jbuf;
    if ((rc = open_conversation(&resumed)) != 0)
        return rc;
    agent_init(&ag, &loop, &conf, model_name, !o.no_tools);
    if (have_mcp) {
        /* the loop exists now: the servers start in parallel, the prompt
         * does not wait for them */
        mcp.loop = &loop;
        mcp.log = mcp_log;
        ag.mcp = &mcp;
        mote_mcp_start_all(&mcp);
    }
    if (ag.interactive || ag.approval == APPROVE_ASK) {
        if (mote_watch_add(&loop, 0, MOTE_POLL_IN, on_stdin, NULL, 0, &in.watch) < 0) {
            fprintf(stderr, "mote: cannot watch the input\n");
            return 1;
        }
    }
    if (ag.interactive && !ag.json_out && isatty(0))
        fprintf(stderr, "mote %s - %s, conversation %s. /help for commands.\n", mote_version(),
                model_name, ag.jr.id);
    if (resumed && (rc = agent_recover(&ag)) < 0) {
        fprintf(stderr, "mote: cannot recover the conversation: %s\n", mote_strerror(rc));
        return 1;
    }
    for (;;) {
        if (sd.mode != SD_NONE)
            break;
        if (!ag.interactive) {
            if (!agent_busy(&ag) && !ag.awaiting_approval) {
                if (sent || prompt == NULL || ag.jr.err != 0)
                    break;
                if (ag.failed && resumed) {
                    /* recovery ended in an error: report it, do not go on */
                    break;
                }
                if (have_mcp && !mote_mcp_settled(&mcp)) {
                    /* one-shot: the first request offers the MCP tools */
                    if (mote_loop_poll(&loop, -1) < 0)
                        break;
                    continue;
                }
                sent = true;
                if (!agent_user(&ag, prompt, strlen(prompt)))
                    break;
                continue;
            }
        } else {
            drain_input();
            show_prompt();
            if (sd.mode != SD_NONE)
                break;
        }
        if (ag.jr.err != 0 && !agent_busy(&ag)) {
            request_shutdown(SD_CANCEL, 1, "storage", false);
            break;
        }
        rc = mote_loop_poll(&loop, -1);
        if (rc < 0) {
            fprintf(stderr, "mote: the event loop failed: %s\n", mote_strerror(rc));
            request_shutdown(SD_CANCEL, 1, "fatal", false);
            break;
        }
    }
    if (sd.mode == SD_NONE) {
        /* one-shot finished */
        sd.mode = SD_CANCEL;
        sd.code = ag.failed || ag.jr.err != 0 ? 1 : 0;
        sd.reason = "done";
        mote_loop_stop_spawns(&loop);
        ag.shutting_down = true;
    }
    if (ag.interactive && in.prompt_shown)
        fputc('\n', stdout);
    rc = shutdown_sequence();
    fflush(stdout);
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    return rc;
}
