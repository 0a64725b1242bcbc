/* opts.c - parsing of the mote command line. */
#include "opts.h"
#include "render.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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
};

static const struct option long_opts[] = {
    {"provider", required_argument, NULL, OPT_PROVIDER},
    {"model", required_argument, NULL, OPT_MODEL},
    {"base-url", required_argument, NULL, OPT_BASE_URL},
    {"ca-file", required_argument, NULL, OPT_CA_FILE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"continue", no_argument, NULL, OPT_CONTINUE},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"mcp-config", required_argument, NULL, OPT_MCP_CONFIG},
    {"no-tools", no_argument, NULL, OPT_NO_TOOLS},
    {"yes", no_argument, NULL, OPT_YES},
    {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN_TIMEOUT},
    {"max-turns", required_argument, NULL, OPT_MAX_TURNS},
    {"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, OPT_HELP},
    {"system", required_argument, NULL, OPT_SYSTEM},
    {"system-file", required_argument, NULL, OPT_SYSTEM_FILE},
    {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
    {"context-window", required_argument, NULL, OPT_CONTEXT_WINDOW},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"list", no_argument, NULL, OPT_LIST},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"keep-bytes", required_argument, NULL, OPT_KEEP_BYTES},
    {NULL, 0, NULL, 0},
};

/* An argument as it may be shown in a message: one line, control
 * characters neutralised, cut at a length. */
static const char *shown(const char *s)
{
    static char b[2][100];
    static unsigned k;

    k ^= 1u;
    render_line(b[k], sizeof(b[k]), s, strlen(s));
    return b[k];
}

void cli_usage(FILE *out)
{
    fputs("usage: mote [options]              interactive chat (stdin may be a pipe)\n"
          "       mote -p PROMPT [options]    one-shot: run the turn, print the answer\n"
          "       mote -p - [options]         one-shot, prompt read from stdin\n"
          "\n"
          "options:\n"
          "  --provider anthropic|openai  API dialect (default: from the API key set)\n"
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
          "  -q, --quiet                  no token usage line after each answer\n"
          "  --mcp-config FILE            MCP servers ({\"mcpServers\": {...}})\n"
          "  --no-tools                   offer no tools to the model\n"
          "  --yes                        approve every tool call\n"
          "  --shutdown-timeout MS        how long shutdown waits (default 5000)\n"
          "  --max-turns N                cap on model requests per prompt (default 25)\n"
          "  --output-format text|stream-json\n"
          "  --system TEXT                the system prompt (replaces mote's own)\n"
          "  --system-file FILE           the system prompt from a file\n"
          "                               (default: mote's own, plus MOTE.md or AGENTS.md\n"
          "                               from the working directory if there is one)\n"
          "  --max-tokens N               the answer's token limit (default 4096)\n"
          "  --context-window N           the model's context, tokens; near it the\n"
          "                               conversation is summarised (default: by model)\n"
          "  --version, --help\n"
          "\n"
          "API keys come from ANTHROPIC_API_KEY or OPENAI_API_KEY only.\n",
          out);
}

static int number(const char *s, unsigned long max, unsigned long *out)
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

int cli_parse(struct cli_opts *o, int argc, char **argv, FILE *err)
{
    int c;

    memset(o, 0, sizeof(*o));
    o->shutdown_ms = CLI_DEFAULT_SHUTDOWN_MS;
    o->max_turns = CLI_DEFAULT_MAX_TURNS;
    o->keep = CLI_DEFAULT_KEEP;
    o->keep_bytes = CLI_DEFAULT_KEEP_BYTES;
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
        case OPT_PROVIDER:
            if (strcmp(optarg, "anthropic") == 0)
                o->provider = CLI_PROVIDER_ANTHROPIC;
            else if (strcmp(optarg, "openai") == 0)
                o->provider = CLI_PROVIDER_OPENAI;
            else {
                fprintf(err, "mote: unknown provider '%s' (use anthropic or openai)\n", shown(optarg));
                return 2;
            }
            break;
        case OPT_MODEL:
            o->model = optarg;
            break;
        case OPT_BASE_URL:
            o->base_url = optarg;
            break;
        case OPT_CA_FILE:
            o->ca_file = optarg;
            break;
        case OPT_STATE_DIR:
            o->state_dir = optarg;
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
        case OPT_KEEP:
            if (number(optarg, 1000000ul, &o->keep) < 0) {
                fprintf(err, "mote: --keep wants a number 0..1000000, not '%s'\n", shown(optarg));
                return 2;
            }
            break;
        case OPT_KEEP_BYTES:
            if (number(optarg, 4000000000ul, &o->keep_bytes) < 0) {
                fprintf(err, "mote: --keep-bytes wants a number of bytes, not '%s'\n", shown(optarg));
                return 2;
            }
            break;
        case OPT_MCP_CONFIG:
            o->mcp_config = optarg;
            break;
        case OPT_NO_TOOLS:
            o->no_tools = true;
            break;
        case OPT_YES:
            o->yes = true;
            break;
        case OPT_SHUTDOWN_TIMEOUT:
            if (number(optarg, 3600000ul, &o->shutdown_ms) < 0) {
                fprintf(err, "mote: --shutdown-timeout wants milliseconds 0..3600000, not '%s'\n",
                        shown(optarg));
                return 2;
            }
            break;
        case OPT_MAX_TURNS:
            if (number(optarg, 10000ul, &o->max_turns) < 0 || o->max_turns == 0) {
                fprintf(err, "mote: --max-turns wants a number 1..10000, not '%s'\n", shown(optarg));
                return 2;
            }
            break;
        case OPT_OUTPUT_FORMAT:
            if (strcmp(optarg, "text") == 0)
                o->format = CLI_FORMAT_TEXT;
            else if (strcmp(optarg, "stream-json") == 0)
                o->format = CLI_FORMAT_STREAM_JSON;
            else {
                fprintf(err, "mote: unknown output format '%s' (use text or stream-json)\n",
                        shown(optarg));
                return 2;
            }
            break;
        case OPT_VERSION:
            o->version = true;
            break;
        case OPT_HELP:
            o->help = true;
            break;
        case OPT_SYSTEM:
            o->system = optarg;
            break;
        case OPT_SYSTEM_FILE:
            o->system_file = optarg;
            break;
        case OPT_MAX_TOKENS:
            if (number(optarg, 1000000ul, &o->max_tokens) < 0 || o->max_tokens == 0) {
                fprintf(err, "mote: --max-tokens wants a number 1..1000000, not '%s'\n", shown(optarg));
                return 2;
            }
            break;
        case OPT_CONTEXT_WINDOW:
            if (number(optarg, 100000000ul, &o->context_window) < 0 || o->context_window < 1000) {
                fprintf(err, "mote: --context-window wants tokens 1000..100000000, not '%s'\n",
                        shown(optarg));
                return 2;
            }
            break;
        case ':':
            fprintf(err, "mote: option '%s' needs a value (see mote --help)\n",
                    shown(argv[optind - 1]));
            return 2;
        case '?':
        default:
            if (optopt != 0) {
                char letter[2] = {(char)optopt, '\0'};

                fprintf(err, "mote: unknown option '-%s' (see mote --help)\n", shown(letter));
            } else {
                fprintf(err, "mote: unknown option '%s' (see mote --help)\n",
                        shown(argv[optind - 1]));
            }
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(err, "mote: unexpected argument '%s' (see mote --help)\n", shown(argv[optind]));
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
