/*
 * settings.c - mote serve's settings: one table of options that is the
 * command line and, without the dashes, the keys of the configuration
 * file (conf.c), so the two cannot drift; a serve_set built from both (a
 * flag wins over the file), and what it makes for the session: the model
 * and its key, the system prompt, the tools' policy. docs/SERVE.md.
 */
#define _GNU_SOURCE
#include "settings.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/readfile.h"
#include "../common/setup.h"
#include "mote/mote_time.h"

#define SERVE_DEFAULT_SHUTDOWN_MS 30000
#define DENY_REASON "refused: the server's policy does not allow this tool"
#define ARGS_MAX 256 /* options of one command line */

enum {
    OPT_SOCKET = 600,
    OPT_LISTEN,
    OPT_ALLOW,
    OPT_DENY,
    OPT_ASK,
    OPT_APPROVAL,
    OPT_POLICY,
    OPT_SOCKET_GROUP,
    OPT_MQTT,
    OPT_MQTT_ID,
    OPT_MQTT_PREFIX,
    OPT_APPROVAL_TIMEOUT,
    OPT_CONFIG,
    OPT_API_KEY_FILE,
    OPT_MQTT_USERNAME,
    OPT_MQTT_PASSWORD_FILE,
    OPT_MQTT_CERT,
    OPT_MQTT_KEY,
    OPT_MQTT_DISCOVERY,
    OPT_MQTT_APPROVE,
    OPT_STATS_INTERVAL,
    OPT_PASS_MCP,
};

static const struct option serve_opts[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"deny", required_argument, NULL, OPT_DENY},
    {"ask", required_argument, NULL, OPT_ASK},
    {"approval", required_argument, NULL, OPT_APPROVAL},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
    {"api-key-file", required_argument, NULL, OPT_API_KEY_FILE},
    {"mqtt", required_argument, NULL, OPT_MQTT},
    {"mqtt-id", required_argument, NULL, OPT_MQTT_ID},
    {"mqtt-prefix", required_argument, NULL, OPT_MQTT_PREFIX},
    {"mqtt-username", required_argument, NULL, OPT_MQTT_USERNAME},
    {"mqtt-password-file", required_argument, NULL, OPT_MQTT_PASSWORD_FILE},
    {"mqtt-cert", required_argument, NULL, OPT_MQTT_CERT},
    {"mqtt-key", required_argument, NULL, OPT_MQTT_KEY},
    {"mqtt-approve", required_argument, NULL, OPT_MQTT_APPROVE},
    {"mqtt-discovery", required_argument, NULL, OPT_MQTT_DISCOVERY},
    {"stats-interval", required_argument, NULL, OPT_STATS_INTERVAL},
    {"pass-mcp-tools", no_argument, NULL, OPT_PASS_MCP},
    {"approval-timeout", required_argument, NULL, OPT_APPROVAL_TIMEOUT},
    {NULL, 0, NULL, 0},
};

/* Options a file or a command line may give more than once: each adds. */
static const char *const repeatable[] = {"allow", "deny", "ask", "budget-price", "schedule",
                                         NULL};

/* Options that are no setting (not in a file). */
static const char *const not_keys[] = {"help", "version", "config", NULL};

/* The command line, as read by set_args: applied by every set_build. */
static struct {
    int code;
    const char *arg;
    const char *name;
} args[ARGS_MAX];
static unsigned nargs;
static const char *config_path; /* --config */
static struct option table[128];
static size_t ntable;

/* The key the environment gave at start (it is taken out of it then):
 * what a reload uses when no --api-key-file is set. */
static char env_key[MOTE_LLM_KEY_MAX + 1];
static enum cli_provider env_provider;
static bool env_taken;

void set_usage(FILE *out)
{
    fputs("usage: mote serve [options]    the agent as a service: an HTTP API on a Unix socket\n"
          "\n"
          "  --config FILE                settings as `key = value` lines, the keys these\n"
          "                               options' names (default /etc/mote/mote.conf if it\n"
          "                               exists); a flag wins over the file; SIGHUP reloads\n"
          "  --socket PATH                the socket (default STATE/mote.sock, mode 0600)\n"
          "  --socket-group GROUP         the socket also for GROUP's members (mode 0660),\n"
          "                               e.g. a local web UI running as another user\n"
          "  --listen 127.0.0.1:PORT      also loopback TCP (a bearer token: MOTE_SERVE_TOKEN,\n"
          "                               else the 0600 file STATE/serve.token); a browser's\n"
          "                               page at http://127.0.0.1:PORT/\n"
          "  --api-key-file FILE          the model's API key from FILE (its first line; not\n"
          "                               readable by others), e.g. a systemd credential;\n"
          "                               default: the provider's variable, else\n"
          "                               $CREDENTIALS_DIRECTORY/api-key\n"
          "  --approval ask|allow|deny    tools without a rule (default ask: the call waits\n"
          "                               for POST .../approval)\n"
          "  --allow TOOL, --deny TOOL, --ask TOOL   a rule for one tool (repeatable)\n"
          "  --policy FILE                rules from {\"default\": \"ask\", \"tools\": {\"shell\":\n"
          "                               \"allow\", ...}} (the command line's come first)\n"
          "  --approval-timeout DURATION  a question nobody answers is answered no after\n"
          "                               this (default 10m; 90s, 2h; 0: never)\n"
          "  --budget-requests-hour N, --budget-requests-day N   model requests (UTC hours,\n"
          "                               days); --budget-input-*, --budget-output-*,\n"
          "                               --budget-cached-* tokens; --budget-cost-* money\n"
          "                               with --budget-price MODEL=IN,OUT[,CACHED] per million\n"
          "                               tokens: when one is reached turns wait (0: no limit)\n"
          "  --schedules FILE             fixed schedules ({\"schedules\": [...]}) besides\n"
          "                               STATE/schedules.json (the API's, MQTT's, the agent's)\n"
          "  --timezone ZONE              the zone of schedules that name none (default UTC)\n"
          "  --no-schedules, --no-schedule-tool   no schedules; none made by the agent\n"
          "  --shutdown-timeout MS        SIGTERM waits this long for turns (default 30000)\n"
          "  --keep N, --keep-bytes N     finished conversations kept on disk (default 100,\n"
          "                               8388608 bytes; 0: no limit): the oldest are removed\n"
          "                               at start and as conversations are created\n"
          "  --stats-interval DURATION    GET /v1/metrics's numbers also as the retained\n"
          "                               PREFIX/stats (JSON) every DURATION (default 60s;\n"
          "                               0: never)\n"
          "  --mqtt mqtt://HOST[:PORT]    also on an MQTT broker (mqtts:// for TLS, with\n"
          "                               --ca-file): requests on PREFIX/in, each\n"
          "                               conversation's events on PREFIX/out/ID, errors on\n"
          "                               PREFIX/error, the retained PREFIX/status\n"
          "                               (docs/MQTT.md)\n"
          "  --mqtt-id ID                 the MQTT client id (default: mote- and 16 hex digits\n"
          "                               made from /etc/machine-id, else STATE/device-id)\n"
          "  --mqtt-prefix P              the topics' prefix (default mote/ID)\n"
          "  --mqtt-username NAME, --mqtt-password-file FILE   the broker's credentials\n"
          "                               (default MOTE_MQTT_USERNAME, MOTE_MQTT_PASSWORD,\n"
          "                               $CREDENTIALS_DIRECTORY/mqtt-password)\n"
          "  --mqtt-cert FILE, --mqtt-key FILE   mqtts:// with a client certificate (PEM chain)\n"
          "                               and its key (PEM, not readable by others): mutual\n"
          "                               TLS, AWS IoT Core\n"
          "  --mqtt-approve on|off        answers to approvals over MQTT (default on: anyone\n"
          "                               who may publish to PREFIX/in may approve)\n"
          "  --mqtt-discovery PREFIX      Home Assistant MQTT discovery under PREFIX\n"
          "                               (homeassistant): status, last answer, approvals,\n"
          "                               tokens today, budget left, a prompt; off (default):\n"
          "                               none, and an earlier run's entities cleared\n"
          "  --pass-mcp-tools             MCP clients of /mcp see the tools of --mcp-config's\n"
          "                               servers too (besides the device's own and `ask`)\n"
          "  and the model options of mote --help (--provider, --model, --base-url,\n"
          "  --ca-file, --state-dir, --mcp-config, --no-tools, --yes, --max-turns,\n"
          "  --system, --system-file, --max-tokens, --context-window, --keep-alive,\n"
          "  --tls-sessions: default memory).\n"
          "\n"
          "MCP at /mcp and the OpenAI-compatible /v1/chat/completions are served on the\n"
          "same listeners.\n"
          "\n"
          "usage: mote mcp [options]      MCP over stdin and stdout, for a client that spawns\n"
          "                               mote (the same options; no socket unless --socket)\n"
          "\n"
          "Exit: 0 after a drain that finished, 143 when SIGTERM's timeout (or a second\n"
          "signal) cut a turn, 130 after SIGINT, 1 on a failure (also during a shutdown: it\n"
          "wins), 2 on a usage error. SIGHUP reloads the configuration. docs/SERVE.md\n",
          out);
}

/* ---- the table ---------------------------------------------------------------- */

static void table_make(void)
{
    size_t k;

    if (ntable > 0)
        return;
    ntable = cli_opts_join(table, sizeof(table) / sizeof(table[0]), serve_opts);
    for (k = 0; unatt_opts[k].name != NULL && ntable + 1 < sizeof(table) / sizeof(table[0]); k++)
        table[ntable++] = unatt_opts[k];
    memset(&table[ntable], 0, sizeof(table[0]));
}

static bool in_list(const char *const *list, const char *name)
{
    for (; *list != NULL; list++) {
        if (strcmp(*list, name) == 0)
            return true;
    }
    return false;
}

static const struct option *by_name(const char *name)
{
    size_t i;

    for (i = 0; i < ntable; i++) {
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    }
    return NULL;
}

static const struct option *by_code(int code)
{
    size_t i;

    for (i = 0; i < ntable; i++) {
        if (table[i].val == code)
            return &table[i];
    }
    return NULL;
}

int set_args(int argc, char **argv, bool *help, bool *version)
{
    int c;

    table_make();
    *help = *version = false;
    nargs = 0;
    config_path = NULL;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":", table, NULL)) != -1) {
        const struct option *op = by_code(c);

        if (c == ':') {
            fprintf(stderr, "mote serve: option '%s' needs a value (see mote serve --help)\n",
                    cli_shown(argv[optind - 1]));
            return 2;
        }
        if (op == NULL) {
            fprintf(stderr, "mote serve: unknown option '%s' (see mote serve --help)\n",
                    cli_shown(argv[optind - 1]));
            return 2;
        }
        if (strcmp(op->name, "help") == 0) {
            *help = true;
            continue;
        }
        if (strcmp(op->name, "version") == 0) {
            *version = true;
            continue;
        }
        if (c == OPT_CONFIG) {
            config_path = optarg;
            continue;
        }
        if (nargs == ARGS_MAX) {
            fprintf(stderr, "mote serve: more than %d options\n", ARGS_MAX);
            return 2;
        }
        args[nargs].code = c;
        args[nargs].arg = optarg;
        args[nargs].name = op->name;
        nargs++;
    }
    if (optind < argc) {
        fprintf(stderr, "mote serve: unexpected argument '%s'\n", cli_shown(argv[optind]));
        return 2;
    }
    return 0;
}

/* ---- one option applied ------------------------------------------------------- */

static int add_rule(struct serve_set *s, const char *name, enum mote_approval a)
{
    if (name[0] == '\0' || strlen(name) > 64) {
        fprintf(stderr, "mote serve: a tool name is 1 to 64 characters, not '%s'\n",
                cli_shown(name));
        return 2;
    }
    if (s->nrules >= MOTE_SERVE_RULES_MAX) {
        fprintf(stderr, "mote serve: more than %d tool rules (MOTE_SERVE_RULES_MAX)\n",
                MOTE_SERVE_RULES_MAX);
        return 2;
    }
    s->rules[s->nrules].name = name;
    s->rules[s->nrules].approval = a;
    s->nrules++;
    return 0;
}

static int duration(const char *name, const char *arg, uint64_t max, uint64_t *ms)
{
    if (mote_duration_parse(arg, ms) < 0 || *ms > max) {
        fprintf(stderr, "mote serve: --%s wants a duration such as 10m, 90s or 0 (none), not "
                        "'%s'\n",
                name, cli_shown(arg));
        return 2;
    }
    return 0;
}

/* Option `c` with `arg` into `s`. Returns 0 or 2 (said). */
static int apply(struct serve_set *s, int c, const char *arg)
{
    uint64_t ms;
    bool b;
    int k;

    switch (c) {
    case OPT_SOCKET: s->socket_path = arg; return 0;
    case OPT_SOCKET_GROUP:
        if (arg[0] == '\0') {
            fprintf(stderr, "mote serve: --socket-group wants a group name or number\n");
            return 2;
        }
        s->socket_group = arg;
        return 0;
    case OPT_LISTEN: s->listen_addr = arg; return 0;
    case OPT_ALLOW: return add_rule(s, arg, MOTE_APPROVE_ALLOW);
    case OPT_DENY: return add_rule(s, arg, MOTE_APPROVE_DENY);
    case OPT_ASK: return add_rule(s, arg, MOTE_APPROVE_ASK);
    case OPT_APPROVAL:
        if (mote_approval_parse(arg, &s->approval) < 0) {
            fprintf(stderr, "mote serve: --approval is ask, allow or deny, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        s->approval_set = true;
        return 0;
    case OPT_POLICY: s->policy_file = arg; return 0;
    case OPT_APPROVAL_TIMEOUT:
        if (duration("approval-timeout", arg, MOTE_APPROVAL_TIMEOUT_MAX_MS, &ms) != 0)
            return 2;
        s->approval_timeout_ms = (uint32_t)ms;
        s->approval_timeout_set = true;
        return 0;
    case OPT_STATS_INTERVAL:
        if (duration("stats-interval", arg, 86400000u, &ms) != 0)
            return 2;
        if (ms != 0 && ms < 1000) {
            fprintf(stderr, "mote serve: --stats-interval is at least 1s (or 0: never)\n");
            return 2;
        }
        s->stats_ms = (uint32_t)ms;
        return 0;
    case OPT_API_KEY_FILE: s->api_key_file = arg; return 0;
    case OPT_PASS_MCP: s->pass_mcp = true; return 0;
    case OPT_MQTT: s->mqtt_url = arg; return 0;
    case OPT_MQTT_ID: s->mqtt_id = arg; return 0;
    case OPT_MQTT_PREFIX: s->mqtt_prefix = arg; return 0;
    case OPT_MQTT_USERNAME: s->mqtt_user = arg; return 0;
    case OPT_MQTT_PASSWORD_FILE: s->mqtt_pass_file = arg; return 0;
    case OPT_MQTT_CERT: s->mqtt_cert = arg; return 0;
    case OPT_MQTT_KEY: s->mqtt_key = arg; return 0;
    case OPT_MQTT_DISCOVERY:
        if (arg[0] == '\0' || strchr(arg, '+') != NULL || strchr(arg, '#') != NULL ||
            arg[strlen(arg) - 1] == '/') {
            fprintf(stderr, "mote serve: --mqtt-discovery wants a topic prefix (homeassistant), "
                            "or off, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        s->mqtt_discovery = strcmp(arg, "off") == 0 ? NULL : arg;
        return 0;
    case OPT_MQTT_APPROVE:
        if (conf_bool(arg, &b) < 0) {
            fprintf(stderr, "mote serve: --mqtt-approve is on or off, not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        s->mqtt_approve = b;
        return 0;
    default:
        if ((k = cli_common(&s->o, c, arg, stderr)) == 2 ||
            (k == 0 && (k = unatt_option(c, arg)) == 2))
            return 2;
        if (k == 1)
            return 0;
        fprintf(stderr, "mote serve: option %d is not handled\n", c);
        return 2;
    }
}

/* ---- the file ------------------------------------------------------------------- */

struct file_ctx {
    struct serve_set *s;
    const char *path;
    unsigned seen[128]; /* the line of each table entry's last setting (0: none) */
};

static bool given_on_command_line(int code)
{
    unsigned i;

    for (i = 0; i < nargs; i++) {
        if (args[i].code == code)
            return true;
    }
    return false;
}

static int file_item(void *arg, const struct conf_item *it)
{
    struct file_ctx *f = arg;
    const struct option *op = by_name(it->key);
    size_t at;
    bool rep;

    if (op == NULL || in_list(not_keys, it->key)) {
        fprintf(stderr, "mote serve: %s, line %u: unknown key '%s' (the keys are mote serve's "
                        "options without their dashes: mote serve --help)\n",
                f->path, it->line, cli_shown(it->key));
        return 2;
    }
    at = (size_t)(op - table);
    rep = in_list(repeatable, op->name);
    if (!rep && f->seen[at] != 0) {
        fprintf(stderr, "mote serve: %s, line %u: '%s' was set on line %u already\n", f->path,
                it->line, op->name, f->seen[at]);
        return 2;
    }
    f->seen[at] = it->line;
    if (!rep && given_on_command_line(op->val))
        return 0; /* the flag wins */
    if (op->has_arg == no_argument) {
        bool on;

        if (conf_bool(it->value, &on) < 0) {
            fprintf(stderr, "mote serve: %s, line %u: %s is true or false, not '%s'\n", f->path,
                    it->line, op->name, cli_shown(it->value));
            return 2;
        }
        if (!on)
            return 0;
    }
    if (apply(f->s, op->val, op->has_arg == no_argument ? NULL : it->value) != 0) {
        fprintf(stderr, "mote serve: %s, line %u: %s = %s: refused (above)\n", f->path, it->line,
                op->name, cli_shown(it->value));
        return 2;
    }
    return 0;
}

static int read_config(struct serve_set *s)
{
    static struct file_ctx f;
    const char *path = config_path != NULL ? config_path : CONF_DEFAULT_PATH;
    char err[300];
    size_t len;
    int rc = conf_read(path, config_path == NULL, s->file, sizeof(s->file), &len, err,
                       sizeof(err));

    if (rc > 0)
        return 0; /* no default file: the command line alone */
    if (rc < 0) {
        fprintf(stderr, "mote serve: --config: %s\n", err);
        return 2;
    }
    s->config = path;
    memset(&f, 0, sizeof(f));
    f.s = s;
    f.path = path;
    rc = conf_parse(s->file, len, file_item, &f, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "mote serve: %s, %s\n", path, err);
    return rc != 0 ? 2 : 0;
}

int set_build(struct serve_set *s)
{
    unsigned i;
    int rc;

    table_make();
    memset(s, 0, offsetof(struct serve_set, llm));
    s->o.shutdown_ms = SERVE_DEFAULT_SHUTDOWN_MS;
    s->o.max_turns = CLI_DEFAULT_MAX_TURNS;
    s->o.keep = CLI_DEFAULT_KEEP;
    s->o.keep_bytes = CLI_DEFAULT_KEEP_BYTES;
    s->approval = MOTE_APPROVE_ASK;
    s->approval_timeout_ms = MOTE_SERVE_APPROVAL_TIMEOUT_MS;
    s->mqtt_approve = true;
    s->stats_ms = 60000;
    memset(&unatt, 0, sizeof(unatt)); /* (unatt_option fills it) */
    for (i = 0; i < nargs; i++) {
        if (apply(s, args[i].code, args[i].arg) != 0)
            return 2;
    }
    if ((rc = read_config(s)) != 0)
        return rc;
    s->unatt = unatt;
    if (s->o.yes && !s->approval_set)
        s->approval = MOTE_APPROVE_ALLOW;
    if (s->o.system != NULL && s->o.system_file != NULL) {
        fprintf(stderr, "mote serve: --system and --system-file cannot be used together\n");
        return 2;
    }
    if (s->mqtt_url == NULL &&
        (s->mqtt_id != NULL || s->mqtt_prefix != NULL || s->mqtt_cert != NULL ||
         s->mqtt_key != NULL || s->mqtt_discovery != NULL)) {
        fprintf(stderr, "mote serve: --mqtt-id, --mqtt-prefix, --mqtt-cert, --mqtt-key and "
                        "--mqtt-discovery need --mqtt URL\n");
        return 2;
    }
    if ((s->mqtt_cert == NULL) != (s->mqtt_key == NULL)) {
        fprintf(stderr, "mote serve: --mqtt-cert and --mqtt-key go together\n");
        return 2;
    }
    return 0;
}

/* ---- what a set makes ------------------------------------------------------------ */

int set_secret_file(const char *path, const char *what, char *out, size_t cap)
{
    static char buf[SET_SECRET_MAX + 2];
    struct stat sb;
    size_t n, i;
    int rc;

    out[0] = '\0';
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 007) != 0) {
        fprintf(stderr, "mote serve: %s %s may be read by others: it is not used (chmod o-rwx "
                        "it, or make it a systemd credential)\n",
                what, path);
        return 2;
    }
    rc = fe_read_file(path, buf, sizeof(buf), &n);
    if (rc != FE_READ_OK) {
        fprintf(stderr, "mote serve: cannot read %s %s: %s\n", what, path,
                rc == FE_READ_TOO_LONG ? "longer than a secret" : fe_read_why(rc));
        return 2;
    }
    for (i = 0; i < n && buf[i] != '\n'; i++)
        ;
    if (i > 0 && buf[i - 1] == '\r')
        i--;
    n = i;
    for (i = 0; i < n && buf[i] > 0x20 && buf[i] < 0x7F; i++)
        ;
    if (n == 0 || i < n || n >= cap) {
        fprintf(stderr, "mote serve: %s %s must hold 1 to %zu visible ASCII characters on its "
                        "first line\n",
                what, path, cap - 1);
        memset(buf, 0, sizeof(buf));
        return 2;
    }
    memcpy(out, buf, n);
    out[n] = '\0';
    memset(buf, 0, sizeof(buf));
    return 0;
}

/* The key for `s`: --api-key-file, else what the environment had at
 * start (taken out of it by the first set made, and kept for reloads),
 * else the systemd credential "api-key". */
static int key_of(struct serve_set *s)
{
    const char *cred = getenv("CREDENTIALS_DIRECTORY");
    char path[1200];

    s->key[0] = '\0';
    if (!env_taken) {
        const char *a = getenv("ANTHROPIC_API_KEY"), *k = getenv("OPENAI_API_KEY");
        const char *name;
        enum cli_provider p = s->o.provider;

        if (p == CLI_PROVIDER_NONE)
            p = a != NULL && a[0] != '\0'   ? CLI_PROVIDER_ANTHROPIC
                : k != NULL && k[0] != '\0' ? CLI_PROVIDER_OPENAI
                                            : CLI_PROVIDER_NONE;
        name = p == CLI_PROVIDER_OPENAI ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
        if (p != CLI_PROVIDER_NONE && getenv(name) != NULL &&
            fe_take_secret(name, env_key, sizeof(env_key)) == NULL) {
            fprintf(stderr, "mote serve: %s is longer than %d bytes\n", name, MOTE_LLM_KEY_MAX);
            return 2;
        }
        env_provider = p;
        env_taken = true;
    }
    if (s->api_key_file != NULL)
        return set_secret_file(s->api_key_file, "--api-key-file", s->key, sizeof(s->key));
    if (env_key[0] != '\0' &&
        (s->o.provider == CLI_PROVIDER_NONE || s->o.provider == env_provider)) {
        s->o.provider = env_provider;
        memcpy(s->key, env_key, sizeof(s->key));
        return 0;
    }
    if (cred != NULL && cred[0] != '\0') {
        snprintf(path, sizeof(path), "%s/api-key", cred);
        if (access(path, F_OK) == 0)
            return set_secret_file(path, "the credential", s->key, sizeof(s->key));
    }
    return 0; /* none: fe_model says so (a local server needs none) */
}

/* --policy FILE: {"default": "ask", "tools": {"NAME": "allow", ...}}
 * (parsed by the library: mote_policy_parse). */
static int load_policy(struct serve_set *s)
{
    char err[200];
    size_t n;
    unsigned i;
    int rc;

    if (s->policy_file == NULL)
        return 0;
    rc = fe_read_file(s->policy_file, s->policy_text, sizeof(s->policy_text), &n);
    if (rc == FE_READ_TOO_LONG) {
        fprintf(stderr, "mote serve: --policy %s is larger than %d bytes\n", s->policy_file,
                SET_POLICY_MAX - 1);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "mote serve: cannot read --policy %s: %s\n", s->policy_file,
                fe_read_why(rc));
        return 2;
    }
    if (mote_policy_parse(&s->pol, s->policy_text, n, err, sizeof(err)) < 0) {
        fprintf(stderr, "mote serve: --policy %s: %s\n", s->policy_file, err);
        return 2;
    }
    if (s->pol.has_default)
        s->approval = s->pol.approval;
    if (s->pol.has_timeout && !s->approval_timeout_set)
        s->approval_timeout_ms = s->pol.timeout_ms; /* the command line's wins */
    for (i = 0; i < s->pol.nrules; i++) {
        if (add_rule(s, s->pol.rules[i].name, s->pol.rules[i].approval) != 0)
            return 2;
    }
    return 0;
}

int set_make(struct serve_set *s, bool tls)
{
    const char *model, *system;
    int rc;

    if ((rc = key_of(s)) != 0)
        return rc;
    s->o.api_key = s->key[0] != '\0' ? s->key : NULL;
    if ((rc = fe_model(&s->o, tls, &s->llm, &model)) != 0)
        return rc;
    s->llm.api_key = s->key; /* this set's own copy (fe_model's buffer is reused) */
    if ((rc = fe_system(&s->o, &system)) != 0 || (rc = load_policy(s)) != 0)
        return rc;
    if (system != NULL && system != s->o.system) {
        size_t n = strlen(system);

        if (n >= sizeof(s->system))
            n = sizeof(s->system) - 1;
        memcpy(s->system, system, n);
        s->system[n] = '\0';
        system = s->system;
    }
    memset(&s->cconf, 0, sizeof(s->cconf));
    fe_conv_conf(&s->o, &s->llm, model, &s->cconf);
    s->cconf.system = system;
    s->cconf.approval = s->approval;
    s->cconf.deny_reason = DENY_REASON;
    s->cconf.rules = s->rules;
    s->cconf.nrules = s->nrules;
    s->cconf.approval_timeout_ms = s->approval_timeout_ms;
    return unatt_check(model);
}

/* ---- a reload: what only a start takes --------------------------------------------- */

static bool differ(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

int set_start_only(const struct serve_set *a, const struct serve_set *b)
{
    const struct {
        const char *name, *x, *y;
    } str[] = {
        {"socket", a->socket_path, b->socket_path},
        {"socket-group", a->socket_group, b->socket_group},
        {"listen", a->listen_addr, b->listen_addr},
        {"state-dir", a->o.state_dir, b->o.state_dir},
        {"mqtt", a->mqtt_url, b->mqtt_url},
        {"mqtt-id", a->mqtt_id, b->mqtt_id},
        {"mqtt-prefix", a->mqtt_prefix, b->mqtt_prefix},
        {"mqtt-username", a->mqtt_user, b->mqtt_user},
        {"mqtt-password-file", a->mqtt_pass_file, b->mqtt_pass_file},
        {"mqtt-cert", a->mqtt_cert, b->mqtt_cert},
        {"mqtt-key", a->mqtt_key, b->mqtt_key},
        {"mqtt-discovery", a->mqtt_discovery, b->mqtt_discovery},
        {"schedules", a->unatt.schedules_file, b->unatt.schedules_file},
        {"timezone", a->unatt.timezone, b->unatt.timezone},
    };
    size_t i;
    int n = 0;

    for (i = 0; i < sizeof(str) / sizeof(str[0]); i++) {
        if (differ(str[i].x, str[i].y)) {
            fprintf(stderr, "mote serve: reload: %s changed: it takes effect at the next start\n",
                    str[i].name);
            n++;
        }
    }
    if (a->o.keep != b->o.keep || a->o.keep_bytes != b->o.keep_bytes ||
        a->o.tls_sessions != b->o.tls_sessions || a->mqtt_approve != b->mqtt_approve ||
        a->stats_ms != b->stats_ms || a->unatt.no_schedules != b->unatt.no_schedules ||
        a->unatt.no_schedule_tool != b->unatt.no_schedule_tool) {
        fprintf(stderr, "mote serve: reload: keep, keep-bytes, tls-sessions, mqtt-approve, "
                        "stats-interval, no-schedules or no-schedule-tool changed: it takes "
                        "effect at the next start\n");
        n++;
    }
    return n;
}
