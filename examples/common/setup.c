/*
 * setup.c - what every mote frontend (the chat, mote serve) configures
 * the same way from its options and the environment: the model (provider,
 * key, base URL, proxy, timeouts, kept connections and TLS sessions), MCP
 * servers, the state directory, the
 * system prompt, the conversations' settings; and the start and the end
 * of the port, the loop and the session. Messages go to stderr; a usage
 * error returns 2.
 */
#define _GNU_SOURCE
#include "setup.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcpconf.h"
#include "mote/mote_client.h"
#include "readfile.h"

#define SYSTEM_MAX (32 * 1024) /* bytes of --system-file or MOTE.md kept */

static char system_buf[SYSTEM_MAX + 512];

/* MOTE_THINKING, read with the model (fe_model): --thinking's
 * configuration, the option first. */
static unsigned long thinking_env;

unsigned long fe_env_ms(const char *name, unsigned long def)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? strtoul(v, NULL, 10) : def;
}

/* Reads an API key and removes it from the environment, its bytes
 * included (/proc/self/environ shows the original block): tools and their
 * children never see it. */
const char *fe_take_secret(const char *name, char *out, size_t cap)
{
    char *v = getenv(name);
    size_t n;

    if (v == NULL)
        return NULL;
    n = strlen(v);
    if (n >= cap) {
        out[0] = '\0';
        memset(v, 0, n);
        unsetenv(name);
        return NULL;
    }
    memcpy(out, v, n + 1);
    memset(v, 0, n);
    unsetenv(name);
    return out;
}

/* What a frontend needs of each provider besides its profile: the
 * variable its key is read from (NULL: none, a local server's), its
 * public API root ("": none) and a model it serves ("": none). */
static const struct {
    const char *name, *key_env, *url, *model;
} providers[] = {
    {"openai-responses", "OPENAI_API_KEY", "https://api.openai.com/v1", "gpt-5-codex"},
    {"gemini", "GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta/openai",
     "gemini-2.5-flash"},
    {"deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com/v1", "deepseek-chat"},
    {"mistral", "MISTRAL_API_KEY", "https://api.mistral.ai/v1", "mistral-small-latest"},
    {"groq", "GROQ_API_KEY", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile"},
    {"openrouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini"},
    {"kimi", "MOONSHOT_API_KEY", "https://api.moonshot.ai/v1", "kimi-k2-0905-preview"},
    {"ollama", NULL, "http://localhost:11434/v1", ""},
    {"llamacpp", NULL, "http://localhost:8080/v1", ""},
    {"vllm", NULL, "http://localhost:8000/v1", ""},
    {"openai-compatible", "OPENAI_API_KEY", "", ""},
    {"anthropic-compatible", "ANTHROPIC_API_KEY", "", ""},
};

/* The frontend's row of profile `pf` (NULL: none). */
static int provider_row(const struct mote_llm_profile *pf)
{
    size_t i;

    for (i = 0; pf != NULL && i < sizeof(providers) / sizeof(providers[0]); i++) {
        if (strcmp(providers[i].name, pf->name) == 0)
            return (int)i;
    }
    return -1;
}

int fe_model(const struct cli_opts *op, bool tls, struct mote_llm_conf *llm, const char **model)
{
    static char key_buf[MOTE_LLM_KEY_MAX + 1];
    static char other[MOTE_LLM_KEY_MAX + 1];
    const char *a = getenv("ANTHROPIC_API_KEY"), *k = getenv("OPENAI_API_KEY");
    enum cli_provider prov = op->provider;
    const char *profile = op->profile, *penv = getenv("MOTE_PROVIDER");
    const struct mote_llm_profile *pf;
    const char *key, *url;
    struct mote_url u;
    bool too_long = false;
    int rc;

    {
        const char *t = getenv("MOTE_THINKING");

        if (op->thinking == 0 && t != NULL && t[0] != '\0' &&
            cli_thinking_parse(t, &thinking_env) < 0) {
            fprintf(stderr, "mote: MOTE_THINKING wants a budget of tokens 1024..1000000, not "
                            "'%s'\n", cli_shown(t));
            return 2;
        }
    }
    /* MOTE_PROVIDER is --provider's configuration (the option first). */
    if (prov == CLI_PROVIDER_NONE && penv != NULL && penv[0] != '\0' &&
        cli_provider_parse(penv, &prov, &profile) < 0) {
        fprintf(stderr, "mote: MOTE_PROVIDER names no provider: '%s' (use %s)\n",
                cli_shown(penv), cli_provider_names());
        return 2;
    }
    pf = profile != NULL ? mote_llm_profile_find(profile) : NULL;
    if (prov == CLI_PROVIDER_NONE)
        prov = a != NULL && a[0] != '\0'   ? CLI_PROVIDER_ANTHROPIC
               : k != NULL && k[0] != '\0' ? CLI_PROVIDER_OPENAI
                                           : CLI_PROVIDER_NONE;
    if (prov == CLI_PROVIDER_NONE && op->api_key != NULL) {
        fprintf(stderr, "mote: a key read from a file needs --provider (anthropic or openai)\n");
        return 2;
    }
    if (prov == CLI_PROVIDER_NONE) {
        fprintf(stderr, "mote: no API key: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
                        "(or pick one with --provider)\n");
        return 2;
    }
    {
        /* Each dialect's key, base-URL variable and public API root. */
        static const struct {
            enum mote_provider p;
            const char *key_env, *other_env, *url_env, *url;
        } d[] = {{MOTE_PROVIDER_ANTHROPIC, "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
                  "ANTHROPIC_BASE_URL", "https://api.anthropic.com"},
                 {MOTE_PROVIDER_OPENAI, "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL",
                  "https://api.openai.com/v1"}};
        unsigned i = prov == CLI_PROVIDER_ANTHROPIC ? 0 : 1;
        /* A provider's own variable (DEEPSEEK_API_KEY) when it is set, else
         * the dialect's. */
        int row = provider_row(pf);
        const char *own = row >= 0 ? providers[row].key_env : NULL;
        const char *key_env = own != NULL && getenv(own) != NULL && getenv(own)[0] != '\0'
                                  ? own
                                  : d[i].key_env;
        const char *raw = getenv(key_env);

        mote_llm_conf_defaults(llm);
        llm->provider = d[i].p;
        llm->profile = pf;
        llm->key_env = key_env;
        too_long = op->api_key == NULL && raw != NULL && strlen(raw) > MOTE_LLM_KEY_MAX;
        key = fe_take_secret(key_env, key_buf, sizeof(key_buf));
        if (op->api_key != NULL)
            key = op->api_key; /* read by the frontend (a file): the environment's is dropped */
        /* the tools see none of the keys */
        (void)fe_take_secret(d[i].key_env, other, sizeof(other));
        (void)fe_take_secret(d[i].other_env, other, sizeof(other));
        for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++) {
            if (providers[i].key_env != NULL)
                (void)fe_take_secret(providers[i].key_env, other, sizeof(other));
        }
        i = prov == CLI_PROVIDER_ANTHROPIC ? 0 : 1;
        /* The base URL: the option; a named provider's own; the dialect's
         * variable; its public API. */
        url = op->base_url;
        if (url == NULL && row >= 0 && providers[row].url[0] != '\0')
            url = providers[row].url;
        if (url == NULL)
            url = getenv(d[i].url_env);
        if (url == NULL || url[0] == '\0')
            url = d[i].url;
    }
    if (too_long) {
        fprintf(stderr, "mote: %s is longer than %d bytes\n", llm->key_env, MOTE_LLM_KEY_MAX);
        return 2;
    }
    if (key == NULL || key[0] == '\0') {
        /* A local OpenAI-compatible server (Ollama, llama.cpp) needs no key. */
        if (!(prov == CLI_PROVIDER_OPENAI &&
              (op->base_url != NULL ||
               (provider_row(pf) >= 0 && providers[provider_row(pf)].key_env == NULL)))) {
            fprintf(stderr, "mote: no API key: set %s\n", llm->key_env);
            return 2;
        }
        key = "";
    }
    if (mote_url_parse(&u, url) < 0) {
        fprintf(stderr, "mote: bad base URL '%s': use http://host[:port][/path] or https://...\n",
                url);
        return 2;
    }
    if (u.tls && !tls) {
        fprintf(stderr, "mote: %s needs TLS, but this mote was built with TLS=none "
                        "(rebuild with make TLS=mbedtls, or use an http:// URL)\n", url);
        return 2;
    }
    if (op->ca_file != NULL && access(op->ca_file, R_OK) != 0) {
        fprintf(stderr, "mote: cannot read --ca-file %s: %s\n", op->ca_file, strerror(errno));
        return 2;
    }
    {
        /* The proxy, as curl takes it from the environment. */
        static const char *const https_vars[] = {"https_proxy", "HTTPS_PROXY", "all_proxy",
                                                 "ALL_PROXY", NULL};
        static const char *const http_vars[] = {"http_proxy", "HTTP_PROXY", "all_proxy",
                                                "ALL_PROXY", NULL};
        const char *const *v = u.tls ? https_vars : http_vars;
        static char auth[MOTE_PROXY_AUTH_MAX];
        struct mote_url pu;

        for (; *v != NULL && llm->proxy == NULL; v++) {
            const char *x = getenv(*v);

            if (x != NULL && x[0] != '\0') {
                llm->proxy = x;
                if ((rc = mote_proxy_parse(&pu, auth, sizeof(auth), x)) < 0) {
                    char why[240];

                    mote_proxy_error(rc, why, sizeof(why));
                    fprintf(stderr, "mote: %s: %s\n", *v, why);
                    return 2;
                }
            }
        }
        memset(auth, 0, sizeof(auth)); /* checked only: the client makes its own */
        llm->no_proxy = getenv("no_proxy");
        if (llm->no_proxy == NULL)
            llm->no_proxy = getenv("NO_PROXY");
    }
    llm->base_url = url;
    llm->api_key = key;
    llm->ca_file = op->ca_file; /* else $SSL_CERT_FILE, else the TLS backend's default */
    if (llm->ca_file == NULL && getenv("SSL_CERT_FILE") != NULL && getenv("SSL_CERT_FILE")[0] != '\0')
        llm->ca_file = getenv("SSL_CERT_FILE");
    /* Tuning knobs (milliseconds) for tests and slow links. */
    llm->connect_timeout_ms = (uint32_t)fe_env_ms("MOTE_CONNECT_TIMEOUT_MS", llm->connect_timeout_ms);
    llm->idle_timeout_ms = (uint32_t)fe_env_ms("MOTE_IDLE_TIMEOUT_MS", llm->idle_timeout_ms);
    llm->first_byte_timeout_ms =
        (uint32_t)fe_env_ms("MOTE_FIRST_BYTE_TIMEOUT_MS", llm->first_byte_timeout_ms);
    llm->event_timeout_ms = (uint32_t)fe_env_ms("MOTE_EVENT_TIMEOUT_MS", llm->event_timeout_ms);
    llm->backoff_ms = (uint32_t)fe_env_ms("MOTE_BACKOFF_MS", llm->backoff_ms);
    llm->request_timeout_ms =
        (uint32_t)fe_env_ms("MOTE_REQUEST_TIMEOUT_MS", llm->request_timeout_ms);
    /* The connection kept between requests, and the TLS sessions kept for
     * the next handshake: in STATE/tls for a one-shot run by default (the
     * next run from cron or a script resumes), in memory otherwise. */
    llm->keep_idle_ms = (uint32_t)(op->keep_alive_set ? op->keep_alive_ms
                                   : fe_env_ms("MOTE_KEEP_ALIVE_MS", llm->keep_idle_ms));
    {
        enum cli_tls_sessions ts = op->tls_sessions;
        const char *v = getenv("MOTE_TLS_SESSIONS");

        if (ts == CLI_TLS_UNSET && v != NULL && v[0] != '\0' &&
            cli_tls_sessions_parse(v, &ts) < 0) {
            fprintf(stderr, "mote: MOTE_TLS_SESSIONS is off, memory or disk, not '%s'\n",
                    cli_shown(v));
            return 2;
        }
        if (ts == CLI_TLS_UNSET)
            ts = op->prompt != NULL ? CLI_TLS_DISK : CLI_TLS_MEMORY;
        llm->tls_resume = ts == CLI_TLS_OFF      ? MOTE_TLS_RESUME_OFF
                          : ts == CLI_TLS_MEMORY ? MOTE_TLS_RESUME_MEMORY
                                                 : MOTE_TLS_RESUME_DISK;
    }
    *model = op->model != NULL                            ? op->model
             : provider_row(pf) >= 0 && providers[provider_row(pf)].model[0] != '\0'
                 ? providers[provider_row(pf)].model
             : prov == CLI_PROVIDER_ANTHROPIC               ? DEFAULT_ANTHROPIC_MODEL
                                                            : DEFAULT_OPENAI_MODEL;
    /* The Responses API: by name, or for a model OpenAI serves only there
     * (unless another provider was named). */
    if (pf != NULL && pf->dialect == MOTE_PROVIDER_OPENAI_RESPONSES) {
        llm->provider = MOTE_PROVIDER_OPENAI_RESPONSES;
    } else if (llm->provider == MOTE_PROVIDER_OPENAI && pf == NULL &&
               mote_llm_responses_only(*model)) {
        llm->provider = MOTE_PROVIDER_OPENAI_RESPONSES;
        llm->profile = mote_llm_profile_find("openai-responses");
    }
    return 0;
}

/* The model's context window, tokens, from its name (0: unknown). */
uint32_t fe_window(const char *model)
{
    static const struct {
        const char *prefix;
        uint32_t tokens;
    } t[] = {{"claude-", 200000},   {"gpt-4.1", 1047576}, {"gpt-4o", 128000}, {"gpt-5", 400000},
             {"o1", 200000},        {"o3", 200000},       {"o4", 200000},     {"gpt-4-turbo", 128000},
             {"llama3.1", 131072}, {"llama3.2", 131072},  {"qwen2.5", 32768}, {"deepseek", 65536}};
    size_t i;

    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (strncmp(model, t[i].prefix, strlen(t[i].prefix)) == 0)
            return t[i].tokens;
    }
    return 0;
}

/* Reads `path` (at most SYSTEM_MAX bytes, a regular file) into
 * system_buf at `at`. Returns FE_READ_OK, another FE_READ_* code, or
 * READ_NUL: a NUL byte in it (a system prompt is text; passed on as a C
 * string it would end there, unseen). */
#define READ_NUL (-100)
static int read_into(const char *path, size_t at)
{
    size_t n;
    int rc = fe_read_file(path, system_buf + at, SYSTEM_MAX + 1, &n);

    if (rc == FE_READ_OK && memchr(system_buf + at, '\0', n) != NULL)
        return READ_NUL;
    return rc;
}

static const char *read_why(int rc)
{
    if (rc == READ_NUL)
        return "holds a NUL byte (not text)";
    if (rc == FE_READ_TOO_LONG)
        return "longer than 32 KiB";
    return fe_read_why(rc);
}

/* The system prompt: --system, --system-file, or mote's own with the
 * instructions of MOTE.md or AGENTS.md in the working directory. */
int fe_system(const struct cli_opts *op, const char **system)
{
    static const char *const files[] = {"MOTE.md", "AGENTS.md"};
    size_t i, n;
    int got;

    if (op->system != NULL) {
        *system = op->system;
        return 0;
    }
    if (op->system_file != NULL) {
        got = read_into(op->system_file, 0);
        if (got < 0) {
            fprintf(stderr, "mote: cannot read --system-file %s: %s\n", op->system_file,
                    read_why(got));
            return 2;
        }
        *system = system_buf;
        return 0;
    }
    *system = SYSTEM_PROMPT;
    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        if (access(files[i], F_OK) != 0)
            continue;
        n = (size_t)snprintf(system_buf, sizeof(system_buf) - SYSTEM_MAX - 1,
                             "%s\n\nInstructions from %s in the working directory:\n",
                             SYSTEM_PROMPT, files[i]);
        got = read_into(files[i], n);
        if (got < 0) {
            fprintf(stderr, "mote: warning: %s is %s; it is not used\n", files[i],
                    got == FE_READ_ERRNO ? "unreadable" : read_why(got));
            break;
        }
        *system = system_buf;
        break;
    }
    return 0;
}

int fe_port_start(struct mote_posix *pp, const char *who)
{
    int rc = mote_posix_init(pp);

    if (rc < 0) {
        fprintf(stderr, "%s: cannot start the POSIX port: %s\n", who, mote_strerror(rc));
        return 1;
    }
    pp->zoneinfo = getenv("TZDIR"); /* (NULL: the system's, /usr/share/zoneinfo) */
    return 0;
}

void fe_conv_conf(const struct cli_opts *op, const struct mote_llm_conf *llm, const char *model,
                  struct mote_conv_conf *cc)
{
    cc->llm = llm;
    cc->model = model;
    cc->max_tokens = op->max_tokens > 0 ? (uint32_t)op->max_tokens : 4096u;
    cc->context_window =
        op->context_window > 0 ? (uint32_t)op->context_window : fe_window(model);
    cc->max_turns = (unsigned)op->max_turns;
    cc->thinking_budget = (uint32_t)(op->thinking > 0 ? op->thinking : thinking_env);
    cc->tools = !op->no_tools;
    cc->mcp = !op->no_tools;
}

void fe_mcp_start(struct mote_session *ses, struct mote_mcp *m, struct mote_loop *loop)
{
    m->loop = loop;
    mote_session_use_mcp(ses, m);
    mote_mcp_start_all(m);
}

void fe_end(struct mote_session *ses, struct mote_loop *loop, struct mote_posix *pp)
{
    sigset_t late;

    sigemptyset(&late);
    sigaddset(&late, SIGINT);
    sigaddset(&late, SIGTERM);
    sigaddset(&late, SIGHUP);
    sigprocmask(SIG_BLOCK, &late, NULL);
    mote_session_deinit(ses);
    mote_loop_deinit(loop);
    mote_posix_deinit(pp);
}

int fe_session_start(struct mote_posix *pp, struct mote_loop *loop, struct mote_session *ses,
                     const struct mote_session_conf *sc, bool no_tools, const char *who)
{
    int rc = mote_loop_init(loop, &pp->port);

    if (rc == MOTE_ERR_CONFIG) {
        fprintf(stderr, "%s: this program and libmote were built with different MOTE_* values\n",
                who);
        return 1;
    }
    if (rc < 0 || mote_posix_signals_install(pp) < 0 || mote_session_init(ses, loop, sc) < 0) {
        fprintf(stderr, "%s: cannot start the event loop\n", who);
        return 1;
    }
    if (!no_tools && mote_session_add_builtin_tools(ses, MOTE_TOOLS_BUILTIN) < 0) {
        fprintf(stderr, "%s: cannot register the tools\n", who);
        return 1;
    }
    return 0;
}

int fe_state_path(const struct cli_opts *op, char *state_dir, size_t cap)
{
    const char *d = op->state_dir, *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");

    if (d == NULL)
        d = getenv("MOTE_STATE_DIR");
    if (d != NULL && d[0] != '\0')
        snprintf(state_dir, cap, "%s", d);
    else if (x != NULL && x[0] != '\0')
        snprintf(state_dir, cap, "%s/mote", x);
    else if (h != NULL && h[0] != '\0')
        snprintf(state_dir, cap, "%s/.local/state/mote", h);
    else {
        fprintf(stderr, "mote: no state directory: set --state-dir, MOTE_STATE_DIR or HOME\n");
        return 2;
    }
    return 0;
}

int fe_state_dir(const struct cli_opts *op, struct mote_posix *pp, char *state_dir,
                 size_t cap)
{
    int rc = fe_state_path(op, state_dir, cap);

    if (rc != 0)
        return rc;
    rc = mote_posix_storage_root(pp, state_dir);
    if (rc == MOTE_ERR_PERM) {
        fprintf(stderr, "mote: the state directory %s is not safe: another user owns it or may "
                        "write to it (fix: chmod 700 %s, owned by you)\n",
                state_dir, state_dir);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "mote: cannot use the state directory %s: %s\n", state_dir,
                mote_strerror(rc));
        return 2;
    }
    {
        /* mote's own directories in it are real ones: a link would carry
         * the journals (and their removal by retention) elsewhere */
        static const char *const dirs[] = {"conversations", "tls", "mcp-auth"};
        size_t i;

        for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
            char path[1200];
            struct stat sb;

            snprintf(path, sizeof(path), "%s/%s", state_dir, dirs[i]);
            if (lstat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
                fprintf(stderr, "mote: %s is %s: mote keeps its state in directories of its "
                                "own (remove it, or give --state-dir where it points)\n",
                        path, S_ISLNK(sb.st_mode) ? "a link" : "not a directory");
                return 2;
            }
        }
    }
    return 0;
}

/* The first of `names` set in the environment, or NULL. */
static const char *env_first(const char *const *names)
{
    for (; *names != NULL; names++) {
        const char *v = getenv(*names);

        if (v != NULL && v[0] != '\0')
            return v;
    }
    return NULL;
}

int fe_mcp(const struct cli_opts *op, struct mote_mcp *m, struct mote_loop *loop, bool *have)
{
    return fe_mcp_with(op, m, NULL, loop, have);
}

int fe_mcp_with(const struct cli_opts *op, struct mote_mcp *m, struct mote_mcp_conf *cf,
                struct mote_loop *loop, bool *have)
{
    /* the proxies as curl takes them, and as the model's (fe_model) */
    static const char *const https_vars[] = {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                                             NULL};
    static const char *const http_vars[] = {"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY",
                                            NULL};
    static const char *const no_vars[] = {"no_proxy", "NO_PROXY", NULL};
    char err[300];

    *have = false;
    if (op->mcp_config == NULL)
        return 0;
    mote_mcp_init(m, loop, NULL, NULL);
    m->timeout_ms = (uint32_t)fe_env_ms("MOTE_MCP_TIMEOUT_MS", MOTE_MCP_TIMEOUT_MS);
    /* servers over HTTP: the model's trust store (--ca-file, then
     * $SSL_CERT_FILE), proxies and connect deadline */
    m->net.ca_file = op->ca_file;
    if (m->net.ca_file == NULL && getenv("SSL_CERT_FILE") != NULL &&
        getenv("SSL_CERT_FILE")[0] != '\0')
        m->net.ca_file = getenv("SSL_CERT_FILE");
    m->net.https_proxy = env_first(https_vars);
    m->net.http_proxy = env_first(http_vars);
    m->net.no_proxy = env_first(no_vars);
    m->net.connect_timeout_ms =
        (uint32_t)fe_env_ms("MOTE_CONNECT_TIMEOUT_MS", m->net.connect_timeout_ms);
    if ((cf != NULL ? mcpconf_load_with(op->mcp_config, m, cf, err, sizeof(err))
                    : mcpconf_load(op->mcp_config, m, err, sizeof(err))) < 0) {
        fprintf(stderr, "mote: %s\n", err);
        return 2;
    }
    *have = m->n > 0;
    return 0;
}
