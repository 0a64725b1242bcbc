/* opts.c - parsing of the mote command line. */
#include "opts.h"
#include "mote/mote_show.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote_llm.h"

enum {
    OPT_PROVIDER = 256,
    OPT_MODEL,
    OPT_BASE_URL,
    OPT_CA_FILE,
    OPT_STATE_DIR,
    OPT_CONTINUE,
    OPT_RESUME,
    OPT_MCP_CONFIG,
    OPT_NO_TOOLS,
    OPT_YES,
    OPT_SHUTDOWN_TIMEOUT,
    OPT_MAX_TURNS,
    OPT_OUTPUT_FORMAT,
    OPT_VERSION,
    OPT_HELP,
    OPT_SYSTEM,
    OPT_SYSTEM_FILE,
    OPT_MAX_TOKENS,
    OPT_CONTEXT_WINDOW,
    OPT_QUIET,
    OPT_LIST,
    OPT_KEEP,
    OPT_KEEP_BYTES,
    OPT_TLS_SESSIONS,
    OPT_KEEP_ALIVE,
    OPT_THINKING,
};

/* The options every frontend takes (the chat and mote serve). */
const struct option cli_common_opts[] = {
    {"provider", required_argument, NULL, OPT_PROVIDER},
    {"model", required_argument, NULL, OPT_MODEL},
    {"base-url", required_argument, NULL, OPT_BASE_URL},
    {"ca-file", required_argument, NULL, OPT_CA_FILE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"mcp-config", required_argument, NULL, OPT_MCP_CONFIG},
    {"no-tools", no_argument, NULL, OPT_NO_TOOLS},
    {"yes", no_argument, NULL, OPT_YES},
    {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN_TIMEOUT},
    {"max-turns", required_argument, NULL, OPT_MAX_TURNS},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, OPT_HELP},
    {"system", required_argument, NULL, OPT_SYSTEM},
    {"system-file", required_argument, NULL, OPT_SYSTEM_FILE},
    {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
    {"context-window", required_argument, NULL, OPT_CONTEXT_WINDOW},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"keep-bytes", required_argument, NULL, OPT_KEEP_BYTES},
    {"tls-sessions", required_argument, NULL, OPT_TLS_SESSIONS},
    {"keep-alive", required_argument, NULL, OPT_KEEP_ALIVE},
    {"thinking", required_argument, NULL, OPT_THINKING},
    {NULL, 0, NULL, 0},
};

/* The chat's own. */
static const struct option chat_opts[] = {
    {"continue", no_argument, NULL, OPT_CONTINUE},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"list", no_argument, NULL, OPT_LIST},
    {NULL, 0, NULL, 0},
};

size_t cli_opts_join(struct option *out, size_t cap, const struct option *more)
{
    size_t n = 0, i;

    for (i = 0; cli_common_opts[i].name != NULL && n + 1 < cap; i++)
        out[n++] = cli_common_opts[i];
    for (i = 0; more[i].name != NULL && n + 1 < cap; i++)
        out[n++] = more[i];
    memset(&out[n], 0, sizeof(out[n]));
    return n;
}

/* An argument as it may be shown in a message: one line, control
 * characters neutralised, cut at a length. */
const char *cli_shown(const char *s)
{
    static char b[2][100];
    static unsigned k;

    k ^= 1u;
    mote_show_line(b[k], sizeof(b[k]), s, strlen(s));
    return b[k];
}

void cli_usage(FILE *out)
{
    fputs("usage: mote [options]              interactive chat (stdin may be a pipe)\n"
          "       mote -p PROMPT [options]    one-shot: run the turn, print the answer\n"
          "       mote -p - [options]         one-shot, prompt read from stdin\n"
          "       mote serve [options]        the agent as a service (mote serve --help)\n"
          "\n"
          "options:\n"
          "  --provider NAME              API dialect (anthropic, openai, openai-responses)\n"
          "                               or a provider:\n"
          "                               gemini, deepseek, mistral, groq, openrouter,\n"
          "                               kimi, ollama, llamacpp, vllm (default: from the\n"
          "                               API key set; MOTE_PROVIDER)\n"
          "  --model NAME                 model name sent to the API\n"
          "  --base-url URL               API root, http:// or https://\n"
          "  --ca-file FILE               CA bundle to verify the server\n"
          "  --state-dir DIR              conversations and history\n"
          "  --continue                   resume the most recent conversation\n"
          "  --resume [ID]                resume conversation ID (without one, pick from\n"
          "                               the list on a terminal)\n"
          "  --list                       list the conversations (id, last activity,\n"
          "                               state, first words) and exit\n"
          "  --keep N                     keep at most N finished conversations (default 100;\n"
          "                               0: no limit); the oldest are removed\n"
          "  --keep-bytes N               ... and at most N bytes of them (default 8388608)\n"
          "  -q, --quiet                  no token usage line after each answer, no\n"
          "                               thinking shown\n"
          "  --mcp-config FILE            MCP servers ({\"mcpServers\": {...}})\n"
          "  --no-tools                   offer no tools to the model\n"
          "  --yes                        approve every tool call (and, with nobody to\n"
          "                               ask, an MCP server's question of defaults only)\n"
          "  --shutdown-timeout MS        how long shutdown waits (default 5000)\n"
          "  --max-turns N                cap on model requests per prompt (default 25)\n"
          "  --output-format text|stream-json\n"
          "  --system TEXT                the system prompt (replaces mote's own)\n"
          "  --system-file FILE           the system prompt from a file\n"
          "                               (default: mote's own, plus MOTE.md or AGENTS.md\n"
          "                               from the working directory if there is one)\n"
          "  --max-tokens N               the answer's token limit (default 4096)\n"
          "  --thinking BUDGET            Anthropic's extended thinking, BUDGET tokens\n"
          "                               (1024 and up; MOTE_THINKING): its thinking is kept\n"
          "                               and sent back, shown on stderr (not with -q)\n"
          "  --context-window N           the model's context, tokens; near it the\n"
          "                               conversation is summarised (default: by model)\n"
          "  --tls-sessions off|memory|disk  TLS sessions kept to resume the next handshake:\n"
          "                               disk keeps them in STATE/tls for the next run\n"
          "                               (default: disk with -p, else memory;\n"
          "                               MOTE_TLS_SESSIONS)\n"
          "  --keep-alive MS              an idle connection to the API is closed after\n"
          "                               MS (default 50000; 0: one per request)\n"
          "  --version, --help\n"
          "\n"
          "API keys come from ANTHROPIC_API_KEY or OPENAI_API_KEY only.\n",
          out);
}

int cli_number(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_provider_parse(const char *name, enum cli_provider *prov, const char **profile)
{
    const struct mote_llm_profile *p = mote_llm_profile_find(name);

    if (p == NULL)
        return -1;
    *prov = p->dialect == MOTE_PROVIDER_ANTHROPIC ? CLI_PROVIDER_ANTHROPIC : CLI_PROVIDER_OPENAI;
    /* (openai-responses: the OpenAI key and root, its own dialect) */
    /* a dialect's name: the profile is the host's */
    *profile = strcmp(name, "anthropic") == 0 || strcmp(name, "openai") == 0 ? NULL : p->name;
    return 0;
}

int cli_thinking_parse(const char *s, unsigned long *out)
{
    return cli_number(s, 1000000ul, out) < 0 || *out < 1024 ? -1 : 0;
}

const char *cli_provider_names(void)
{
    static char names[400];
    const struct mote_llm_profile *p;
    size_t n = 0;
    unsigned i;

    if (names[0] != '\0')
        return names;
    for (i = 0; (p = mote_llm_profile_at(i)) != NULL; i++) {
        int k = snprintf(names + n, sizeof(names) - n, "%s%s", i > 0 ? ", " : "", p->name);

        if (k < 0 || (size_t)k >= sizeof(names) - n)
            break;
        n += (size_t)k;
    }
    return names;
}

int cli_tls_sessions_parse(const char *s, enum cli_tls_sessions *out)
{
    if (strcmp(s, "off") == 0)
        *out = CLI_TLS_OFF;
    else if (strcmp(s, "memory") == 0)
        *out = CLI_TLS_MEMORY;
    else if (strcmp(s, "disk") == 0)
        *out = CLI_TLS_DISK;
    else
        return -1;
    return 0;
}

int cli_common(struct cli_opts *o, int c, const char *arg, FILE *err)
{
    switch (c) {
    case OPT_TLS_SESSIONS:
        if (cli_tls_sessions_parse(arg, &o->tls_sessions) < 0) {
            fprintf(err, "mote: --tls-sessions is off, memory or disk, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_KEEP_ALIVE:
        if (cli_number(arg, 3600000ul, &o->keep_alive_ms) < 0) {
            fprintf(err, "mote: --keep-alive wants milliseconds 0..3600000, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        o->keep_alive_set = true;
        return 1;
    case OPT_KEEP:
        if (cli_number(arg, 1000000ul, &o->keep) < 0) {
            fprintf(err, "mote: --keep wants a number 0..1000000, not '%s'\n", cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_KEEP_BYTES:
        if (cli_number(arg, 4000000000ul, &o->keep_bytes) < 0) {
            fprintf(err, "mote: --keep-bytes wants a number of bytes, not '%s'\n", cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_PROVIDER:
        if (cli_provider_parse(arg, &o->provider, &o->profile) < 0) {
            fprintf(err, "mote: unknown provider '%s' (use %s)\n", cli_shown(arg),
                    cli_provider_names());
            return 2;
        }
        return 1;
    case OPT_MODEL:
        o->model = arg;
        return 1;
    case OPT_BASE_URL:
        o->base_url = arg;
        return 1;
    case OPT_CA_FILE:
        o->ca_file = arg;
        return 1;
    case OPT_STATE_DIR:
        o->state_dir = arg;
        return 1;
    case OPT_MCP_CONFIG:
        o->mcp_config = arg;
        return 1;
    case OPT_NO_TOOLS:
        o->no_tools = true;
        return 1;
    case OPT_YES:
        o->yes = true;
        return 1;
    case OPT_SHUTDOWN_TIMEOUT:
        if (cli_number(arg, 3600000ul, &o->shutdown_ms) < 0) {
            fprintf(err, "mote: --shutdown-timeout wants milliseconds 0..3600000, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_MAX_TURNS:
        if (cli_number(arg, 10000ul, &o->max_turns) < 0 || o->max_turns == 0) {
            fprintf(err, "mote: --max-turns wants a number 1..10000, not '%s'\n", cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_VERSION:
        o->version = true;
        return 1;
    case OPT_HELP:
        o->help = true;
        return 1;
    case OPT_SYSTEM:
        o->system = arg;
        return 1;
    case OPT_SYSTEM_FILE:
        o->system_file = arg;
        return 1;
    case OPT_MAX_TOKENS:
        if (cli_number(arg, 1000000ul, &o->max_tokens) < 0 || o->max_tokens == 0) {
            fprintf(err, "mote: --max-tokens wants a number 1..1000000, not '%s'\n", cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_CONTEXT_WINDOW:
        if (cli_number(arg, 100000000ul, &o->context_window) < 0 || o->context_window < 1000) {
            fprintf(err, "mote: --context-window wants tokens 1000..100000000, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        return 1;
    case OPT_THINKING:
        if (cli_thinking_parse(arg, &o->thinking) < 0) {
            fprintf(err, "mote: --thinking wants a budget of tokens 1024..1000000, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        return 1;
    default:
        return 0;
    }
}

int cli_parse(struct cli_opts *o, int argc, char **argv, FILE *err)
{
    static struct option long_opts[48];
    int c, k;

    memset(o, 0, sizeof(*o));
    o->shutdown_ms = CLI_DEFAULT_SHUTDOWN_MS;
    o->max_turns = CLI_DEFAULT_MAX_TURNS;
    o->keep = CLI_DEFAULT_KEEP;
    o->keep_bytes = CLI_DEFAULT_KEEP_BYTES;
    cli_opts_join(long_opts, sizeof(long_opts) / sizeof(long_opts[0]), chat_opts);
    opterr = 0;
    optind = 0; /* a full restart of getopt (glibc, musl): cli_parse may run again */
    /* --resume without an id (the last argument, or an option next):
     * picked from the list. */
    for (c = 1; c < argc; c++) {
        if (strcmp(argv[c], "--") == 0)
            break;
        if (strcmp(argv[c], "--resume") == 0 && (c + 1 == argc || argv[c + 1][0] == '-')) {
            o->resume_pick = true;
            argv[c] = (char *)"--resume=";
        }
    }
    while ((c = getopt_long(argc, argv, ":p:q", long_opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            o->prompt = optarg;
            break;
        case OPT_CONTINUE:
            o->cont = true;
            break;
        case OPT_RESUME:
            if (optarg[0] != '\0')
                o->resume = optarg;
            break;
        case 'q':
        case OPT_QUIET:
            o->quiet = true;
            break;
        case OPT_LIST:
            o->list = true;
            break;
        case OPT_OUTPUT_FORMAT:
            if (strcmp(optarg, "text") == 0)
                o->format = CLI_FORMAT_TEXT;
            else if (strcmp(optarg, "stream-json") == 0)
                o->format = CLI_FORMAT_STREAM_JSON;
            else {
                fprintf(err, "mote: unknown output format '%s' (use text or stream-json)\n",
                        cli_shown(optarg));
                return 2;
            }
            break;
        case ':':
            fprintf(err, "mote: option '%s' needs a value (see mote --help)\n",
                    cli_shown(argv[optind - 1]));
            return 2;
        case '?':
        default:
            if (c >= OPT_PROVIDER && (k = cli_common(o, c, optarg, err)) != 0) {
                if (k == 2)
                    return 2;
                break;
            }
            if (optopt != 0) {
                char letter[2] = {(char)optopt, '\0'};

                fprintf(err, "mote: unknown option '-%s' (see mote --help)\n", cli_shown(letter));
            } else {
                fprintf(err, "mote: unknown option '%s' (see mote --help)\n",
                        cli_shown(argv[optind - 1]));
            }
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "mote: unexpected argument '%s' (see mote --help)\n", cli_shown(argv[optind]));
        return 2;
    }
    if (o->cont && (o->resume != NULL || o->resume_pick)) {
        fprintf(err, "mote: --continue and --resume cannot be used together\n");
        return 2;
    }
    if (o->system != NULL && o->system_file != NULL) {
        fprintf(err, "mote: --system and --system-file cannot be used together\n");
        return 2;
    }
    return 0;
}
