/*
 * main.c - the mote command-line agent.
 *
 * Today: the full command line of CONTRACT.md, configuration checks, and
 * the one-shot mode (-p PROMPT / -p -) that streams one model answer to
 * stdout over HTTP or HTTPS. The tool loop, the journal, interactive chat
 * and the shutdown sequence land with their issues.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote/mote_posix.h"
#include "opts.h"

#define DEFAULT_ANTHROPIC_MODEL "claude-sonnet-4-5"
#define DEFAULT_OPENAI_MODEL "gpt-4o-mini"
#define PROMPT_MAX (256 * 1024)

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_llm_call call;
static struct mote_llm_conf conf;
static struct mote_llm_req req;
static char prompt_buf[PROMPT_MAX];
static const char *prompt;
static size_t prompt_len;
static int exit_sig; /* 129/130/143 once a signal asked to stop */
static bool printed_newline = true;

static enum cli_provider pick_provider(const struct cli_opts *o)
{
    const char *a = getenv("ANTHROPIC_API_KEY");
    const char *k = getenv("OPENAI_API_KEY");

    if (o->provider != CLI_PROVIDER_NONE)
        return o->provider;
    if (a != NULL && a[0] != '\0')
        return CLI_PROVIDER_ANTHROPIC;
    if (k != NULL && k[0] != '\0')
        return CLI_PROVIDER_OPENAI;
    return CLI_PROVIDER_NONE;
}

static int one_part(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    if (index > 0)
        return 0;
    memset(p, 0, sizeof(*p));
    p->role = MOTE_ROLE_USER;
    p->type = MOTE_PART_TEXT;
    p->text = prompt;
    p->text_len = prompt_len;
    return 1;
}

static int on_event(void *arg, const struct mote_llm_event *ev)
{
    (void)arg;
    if (ev->type == MOTE_LLM_TEXT) {
        fwrite(ev->text, 1, ev->len, stdout);
        fflush(stdout);
        printed_newline = ev->len > 0 && ev->text[ev->len - 1] == '\n';
    }
    return 0;
}

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    (void)n, (void)arg;
    if (exit_sig != 0) {
        mote_loop_break(l); /* a further signal: stop waiting */
        return;
    }
    exit_sig = sig == MOTE_SIG_INT ? 130 : sig == MOTE_SIG_TERM ? 143 : 129;
    mote_loop_stop_spawns(l);
    mote_loop_cancel_all(l);
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
    prompt = prompt_buf;
    prompt_len = n;
    return 0;
}

/* Fills conf/req from the options and the environment. Returns 0 or the
 * exit code of a configuration error (2), after one line on stderr. */
static int configure(const struct cli_opts *o)
{
    enum cli_provider prov = pick_provider(o);
    const char *key, *url;
    struct mote_url u;

    if (prov == CLI_PROVIDER_NONE) {
        fprintf(stderr, "mote: no API key: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
                        "(or pick one with --provider)\n");
        return 2;
    }
    mote_llm_conf_defaults(&conf);
    if (prov == CLI_PROVIDER_ANTHROPIC) {
        conf.provider = MOTE_PROVIDER_ANTHROPIC;
        conf.key_env = "ANTHROPIC_API_KEY";
        key = getenv("ANTHROPIC_API_KEY");
        url = o->base_url != NULL ? o->base_url : getenv("ANTHROPIC_BASE_URL");
        if (url == NULL || url[0] == '\0')
            url = "https://api.anthropic.com";
    } else {
        conf.provider = MOTE_PROVIDER_OPENAI;
        conf.key_env = "OPENAI_API_KEY";
        key = getenv("OPENAI_API_KEY");
        url = o->base_url != NULL ? o->base_url : getenv("OPENAI_BASE_URL");
        if (url == NULL || url[0] == '\0')
            url = "https://api.openai.com/v1";
    }
    if (key == NULL || key[0] == '\0') {
        /* A local OpenAI-compatible server (Ollama, llama.cpp) needs no key. */
        if (!(prov == CLI_PROVIDER_OPENAI && o->base_url != NULL)) {
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
    if (o->ca_file != NULL && access(o->ca_file, R_OK) != 0) {
        fprintf(stderr, "mote: cannot read --ca-file %s: %s\n", o->ca_file, strerror(errno));
        return 2;
    }
    conf.base_url = url;
    conf.api_key = key;
    conf.ca_file = o->ca_file;
    /* Test and tuning knobs (milliseconds), not part of the contract. */
    if (getenv("MOTE_IDLE_TIMEOUT_MS") != NULL)
        conf.idle_timeout_ms = (uint32_t)strtoul(getenv("MOTE_IDLE_TIMEOUT_MS"), NULL, 10);
    if (getenv("MOTE_FIRST_BYTE_TIMEOUT_MS") != NULL)
        conf.first_byte_timeout_ms =
            (uint32_t)strtoul(getenv("MOTE_FIRST_BYTE_TIMEOUT_MS"), NULL, 10);
    if (getenv("MOTE_BACKOFF_MS") != NULL)
        conf.backoff_ms = (uint32_t)strtoul(getenv("MOTE_BACKOFF_MS"), NULL, 10);
    memset(&req, 0, sizeof(req));
    req.provider = conf.provider;
    req.model = o->model != NULL ? o->model
                : prov == CLI_PROVIDER_ANTHROPIC ? DEFAULT_ANTHROPIC_MODEL
                                                 : DEFAULT_OPENAI_MODEL;
    req.max_tokens = 4096;
    req.parts = one_part;
    return 0;
}

static int one_shot(void)
{
    mote_job_id job;
    int rc, st;

    rc = mote_llm_call_init(&call, &conf, &req, on_event, NULL);
    if (rc < 0) {
        fprintf(stderr, "mote: %s\n", call.errmsg);
        return 2;
    }
    rc = mote_job_spawn(&loop, "model request", &mote_llm_call_ops, &call, NULL, &job);
    if (rc < 0) {
        fprintf(stderr, "mote: cannot start the request: %s\n", mote_strerror(rc));
        return 1;
    }
    for (;;) {
        st = mote_job_state(&loop, job);
        if (st != MOTE_JOB_RUNNING && st != MOTE_JOB_CANCELLING)
            break;
        rc = mote_loop_poll(&loop, -1);
        if (rc < 0) {
            fprintf(stderr, "mote: the event loop failed: %s\n", mote_strerror(rc));
            return 1;
        }
    }
    if (!printed_newline)
        fputc('\n', stdout);
    fflush(stdout);
    if (exit_sig != 0)
        return exit_sig;
    if (st != MOTE_JOB_DONE) {
        fprintf(stderr, "mote: %s\n", mote_job_error(&loop, job));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct cli_opts o;
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
    rc = configure(&o);
    if (rc != 0)
        return rc;
    if (o.prompt == NULL) {
        fprintf(stderr, "mote: interactive chat is not part of this build yet; use -p PROMPT\n");
        return 2;
    }
    if (strcmp(o.prompt, "-") == 0) {
        if (read_stdin_prompt() < 0)
            return 2;
    } else {
        prompt = o.prompt;
        prompt_len = strlen(o.prompt);
    }
    if (mote_posix_signals_install(&pp) < 0 || mote_loop_init(&loop, &pp.port) < 0) {
        fprintf(stderr, "mote: cannot start the event loop\n");
        return 1;
    }
    mote_loop_on_signal(&loop, on_signal, NULL);
    rc = one_shot();
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    return rc;
}
