/*
 * serve.c - `mote serve`: a frontend of libmote's server (mote_serve.h).
 * It reads the options and the environment, sets the per-tool approval
 * policy, maps signals to the server's shutdown (SIGTERM, SIGHUP: drain;
 * SIGINT: cancel; a second signal: force), tells systemd when it is ready
 * and when it stops, and logs to stderr. The server itself - the HTTP
 * API, event streams from the journals, loading conversations on demand,
 * recovery on start, the MQTT front door (--mqtt) - is in the library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cli/opts.h"
#include "../common/readfile.h"
#include "../common/setup.h"
#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_posix.h"
#include "mote/mote_serve.h"
#include "mote/mote_time.h"
#include "serve.h"
#include "unatt.h"

#define SERVE_DEFAULT_SHUTDOWN_MS 30000
#define POLICY_MAX (16 * 1024) /* bytes of a --policy file */
#define DENY_REASON "refused: the server's policy does not allow this tool"

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
    OPT_PASS_MCP,
    OPT_APPROVAL_TIMEOUT,
};

static const struct option serve_opts[] = {
    {"socket", required_argument, NULL, OPT_SOCKET},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"deny", required_argument, NULL, OPT_DENY},
    {"ask", required_argument, NULL, OPT_ASK},
    {"approval", required_argument, NULL, OPT_APPROVAL},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
    {"mqtt", required_argument, NULL, OPT_MQTT},
    {"mqtt-id", required_argument, NULL, OPT_MQTT_ID},
    {"mqtt-prefix", required_argument, NULL, OPT_MQTT_PREFIX},
    {"pass-mcp-tools", no_argument, NULL, OPT_PASS_MCP},
    {"approval-timeout", required_argument, NULL, OPT_APPROVAL_TIMEOUT},
    {NULL, 0, NULL, 0},
};

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_session ses;
static struct mote_serve srv;
static struct mote_llm_conf llm;
static struct mote_conv_conf cconf;
static struct mote_mcp mcp;
static struct cli_opts o;
static const char *socket_path, *listen_addr, *policy_file, *socket_group;
static const char *mqtt_url, *mqtt_id, *mqtt_prefix;
static struct mote_serve_mqtt smq; /* the MQTT front door's memory (with --mqtt) */
static char mqtt_user[256], mqtt_pass[256], host_id[256];
static enum mote_approval approval = MOTE_APPROVE_ASK;
static bool approval_timeout_set;      /* --approval-timeout, or the policy's "timeout" */
static uint32_t approval_timeout_ms = MOTE_SERVE_APPROVAL_TIMEOUT_MS;
static struct mote_tool_rule rules[MOTE_SERVE_RULES_MAX];
static unsigned nrules;
static char state_dir[1024], sock_buf[1100], token[65];

static struct mote_posix_notify notify; /* systemd's socket, out of the environment */
static bool as_mcp;          /* `mote mcp`: MCP on stdin and stdout, for a client that spawned it */
static bool pass_mcp;        /* --pass-mcp-tools */
static struct mote_serve_mcp_stdio pipe_mem; /* `mote mcp`'s pipe (the library's memory) */

static void usage(FILE *out)
{
    fputs("usage: mote serve [options]    the agent as a service: an HTTP API on a Unix socket\n"
          "\n"
          "  --socket PATH                the socket (default STATE/mote.sock, mode 0600)\n"
          "  --socket-group GROUP         the socket also for GROUP's members (mode 0660),\n"
          "                               e.g. a local web UI running as another user\n"
          "  --listen 127.0.0.1:PORT      also loopback TCP (a bearer token: MOTE_SERVE_TOKEN,\n"
          "                               else the 0600 file STATE/serve.token)\n"
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
          "  --mqtt mqtt://HOST[:PORT]    also on an MQTT broker (mqtts:// for TLS, with\n"
          "                               --ca-file): requests on PREFIX/in, each\n"
          "                               conversation's events on PREFIX/out/ID, errors on\n"
          "                               PREFIX/error, the retained PREFIX/status; user name\n"
          "                               and password from MOTE_MQTT_USERNAME and\n"
          "                               MOTE_MQTT_PASSWORD (docs/MQTT.md)\n"
          "  --mqtt-id ID                 the MQTT client id (default: the host name)\n"
          "  --mqtt-prefix P              the topics' prefix (default mote/ID)\n"
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
          "Exit: 0 after a drain that finished, 143/129 when SIGTERM/SIGHUP's timeout (or a\n"
          "second signal) cut a turn, 130 after SIGINT, 1 on a failure (also during a\n"
          "shutdown: it wins), 2 on a usage error. docs/SERVE.md\n",
          out);
}

static int add_rule(const char *name, enum mote_approval a)
{
    if (name[0] == '\0' || strlen(name) > 64) {
        fprintf(stderr, "mote serve: a tool name is 1 to 64 characters, not '%s'\n",
                cli_shown(name));
        return 2;
    }
    if (nrules >= MOTE_SERVE_RULES_MAX) {
        fprintf(stderr, "mote serve: more than %d tool rules (MOTE_SERVE_RULES_MAX)\n",
                MOTE_SERVE_RULES_MAX);
        return 2;
    }
    rules[nrules].name = name;
    rules[nrules].approval = a;
    nrules++;
    return 0;
}

static int parse(int argc, char **argv)
{
    static struct option all[96];
    size_t n;
    bool approval_set = false;
    int c, k;

    memset(&o, 0, sizeof(o));
    o.shutdown_ms = SERVE_DEFAULT_SHUTDOWN_MS;
    o.max_turns = CLI_DEFAULT_MAX_TURNS;
    o.keep = CLI_DEFAULT_KEEP;
    o.keep_bytes = CLI_DEFAULT_KEEP_BYTES;
    n = cli_opts_join(all, sizeof(all) / sizeof(all[0]), serve_opts);
    for (k = 0; unatt_opts[k].name != NULL && n + 1 < sizeof(all) / sizeof(all[0]); k++)
        all[n++] = unatt_opts[k];
    all[n] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":", all, NULL)) != -1) {
        switch (c) {
        case OPT_SOCKET:
            socket_path = optarg;
            break;
        case OPT_SOCKET_GROUP:
            if (optarg[0] == '\0') {
                fprintf(stderr, "mote serve: --socket-group wants a group name or number\n");
                return 2;
            }
            socket_group = optarg;
            break;
        case OPT_LISTEN:
            listen_addr = optarg;
            break;
        case OPT_ALLOW:
        case OPT_DENY:
        case OPT_ASK:
            if (add_rule(optarg, c == OPT_ALLOW  ? MOTE_APPROVE_ALLOW
                                 : c == OPT_DENY ? MOTE_APPROVE_DENY
                                                 : MOTE_APPROVE_ASK) != 0)
                return 2;
            break;
        case OPT_APPROVAL:
            if (mote_approval_parse(optarg, &approval) < 0) {
                fprintf(stderr, "mote serve: --approval is ask, allow or deny, not '%s'\n",
                        cli_shown(optarg));
                return 2;
            }
            approval_set = true;
            break;
        case OPT_POLICY:
            policy_file = optarg;
            break;
        case OPT_APPROVAL_TIMEOUT: {
            uint64_t ms;

            if (mote_duration_parse(optarg, &ms) < 0 || ms > MOTE_APPROVAL_TIMEOUT_MAX_MS) {
                fprintf(stderr, "mote serve: --approval-timeout wants a duration such as 10m, "
                                "90s or 0 (none), at most 24 days, not '%s'\n",
                        cli_shown(optarg));
                return 2;
            }
            approval_timeout_ms = (uint32_t)ms;
            approval_timeout_set = true;
            break;
        }
        case OPT_MQTT:
            mqtt_url = optarg;
            break;
        case OPT_MQTT_ID:
            mqtt_id = optarg;
            break;
        case OPT_MQTT_PREFIX:
            mqtt_prefix = optarg;
            break;
        case OPT_PASS_MCP:
            pass_mcp = true;
            break;
        case ':':
            fprintf(stderr, "mote serve: option '%s' needs a value (see mote serve --help)\n",
                    cli_shown(argv[optind - 1]));
            return 2;
        default:
            if ((k = cli_common(&o, c, optarg, stderr)) == 2 ||
                (k == 0 && (k = unatt_option(c, optarg)) == 2))
                return 2;
            if (k == 1)
                break;
            fprintf(stderr, "mote serve: unknown option '%s' (see mote serve --help)\n",
                    cli_shown(argv[optind - 1]));
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "mote serve: unexpected argument '%s'\n", cli_shown(argv[optind]));
        return 2;
    }
    if (o.yes && !approval_set)
        approval = MOTE_APPROVE_ALLOW;
    if (o.system != NULL && o.system_file != NULL) {
        fprintf(stderr, "mote serve: --system and --system-file cannot be used together\n");
        return 2;
    }
    if (mqtt_url == NULL && (mqtt_id != NULL || mqtt_prefix != NULL)) {
        fprintf(stderr, "mote serve: --mqtt-id and --mqtt-prefix need --mqtt URL\n");
        return 2;
    }
    return 0;
}

/* --policy FILE: {"default": "ask", "tools": {"NAME": "allow", ...}}
 * (parsed by the library: mote_policy_parse). */
static int load_policy(void)
{
    static char text[POLICY_MAX];
    static struct mote_policy pol;
    char err[200];
    size_t n;
    unsigned i;
    int rc;

    if (policy_file == NULL)
        return 0;
    rc = fe_read_file(policy_file, text, sizeof(text), &n);
    if (rc == FE_READ_TOO_LONG) {
        fprintf(stderr, "mote serve: --policy %s is larger than %d bytes\n", policy_file,
                POLICY_MAX - 1);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "mote serve: cannot read --policy %s: %s\n", policy_file,
                fe_read_why(rc));
        return 2;
    }
    if (mote_policy_parse(&pol, text, n, err, sizeof(err)) < 0) {
        fprintf(stderr, "mote serve: --policy %s: %s\n", policy_file, err);
        return 2;
    }
    if (pol.has_default)
        approval = pol.approval;
    if (pol.has_timeout && !approval_timeout_set)
        approval_timeout_ms = pol.timeout_ms; /* the command line's wins */
    for (i = 0; i < pol.nrules; i++) {
        if (add_rule(pol.rules[i].name, pol.rules[i].approval) != 0)
            return 2;
    }
    return 0;
}

static void log_line(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "mote %s\n", line);
}

static void on_event(void *arg, const struct mote_event *ev)
{
    (void)arg;
    if (ev->type == MOTE_EV_MCP)
        fprintf(stderr, "mote serve: mcp %s: %.*s\n", ev->name, (int)ev->len, ev->text);
    mote_serve_event(&srv, ev);
}

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    (void)l, (void)n, (void)arg;
    if (srv.sig == 0)
        (void)mote_posix_notify(&notify, "STOPPING=1");
    (void)mote_serve_signal(&srv, sig, (uint32_t)o.shutdown_ms);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* The token file, made from the kernel's generator once it is seeded: at
 * early boot that waits (the loop does not run yet; nothing else is
 * served), at most MOTE_SERVE_SECRET_WAIT_MS, on the descriptor the port
 * names, and in rests of 50 ms where it names none or it turns readable
 * too soon. Returns mote_serve_token's result. */
static int make_token(bool *created)
{
    long bound = fe_env_ms("MOTE_SERVE_SECRET_WAIT_MS", MOTE_SERVE_SECRET_WAIT_MS), left;
    struct timespec t0;
    bool said = false;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while ((rc = mote_serve_token(&pp.port, "serve.token", token, created)) == MOTE_ERR_AGAIN &&
           (left = bound - ms_since(&t0)) > 0) {
        unsigned char probe;
        int fd = -1;
        struct pollfd pf;
        struct timespec rest = {0, 50000000L};

        if (!said) {
            fprintf(stderr, "mote serve: waiting for the kernel's random generator to be seeded "
                            "(early boot) to make the token\n");
            said = true;
        }
        if (pp.port.random_secret(pp.port.ctx, &probe, 1, &fd) != MOTE_ERR_AGAIN)
            continue;
        pf.fd = fd;
        pf.events = POLLIN;
        if (fd >= 0)
            (void)poll(&pf, 1, (int)(left < 1000 ? left : 1000));
        nanosleep(&rest, NULL);
    }
    return rc;
}

/* The TCP listener's token: MOTE_SERVE_TOKEN (always taken out of the
 * environment: tools never see it), else the 0600 file serve.token. */
static int token_setup(void)
{
    const char *v = getenv("MOTE_SERVE_TOKEN");
    size_t n = v != NULL ? strlen(v) : 0, i;
    bool created = false, printable = true;
    char path[1200];
    int rc;

    for (i = 0; i < n; i++)
        printable = printable && v[i] > 0x20 && v[i] < 0x7F;
    (void)fe_take_secret("MOTE_SERVE_TOKEN", token, sizeof(token));
    if (listen_addr == NULL) {
        memset(token, 0, sizeof(token));
        return 0;
    }
    if (n > 0) {
        /* the operator set one: it is used, or mote serve does not start */
        if (n < MOTE_SERVE_TOKEN_MIN || n >= sizeof(token) || !printable) {
            fprintf(stderr, "mote serve: MOTE_SERVE_TOKEN must be %d to %d visible ASCII "
                            "characters (it has %zu%s)\n",
                    MOTE_SERVE_TOKEN_MIN, (int)sizeof(token) - 1, n,
                    printable ? "" : ", some of them not visible");
            return 2;
        }
        return 0;
    }
    snprintf(path, sizeof(path), "%s/serve.token", state_dir);
    rc = mote_posix_private_file(path);
    if (rc < 0) {
        fprintf(stderr, "mote serve: %s is %s; it is not used (fix: chmod 600 it, owned by you, "
                        "or remove it to have a new one made)\n",
                path, rc == MOTE_ERR_PERM    ? "readable by others or not yours"
                      : rc == MOTE_ERR_NOTREG ? "not a regular file"
                                             : mote_strerror(rc));
        return 1;
    }
    rc = make_token(&created);
    if (rc == MOTE_ERR_AGAIN) {
        fprintf(stderr, "mote serve: the kernel's random generator is not seeded after %ld ms: "
                        "no token is made from anything weaker; start again later, or set "
                        "MOTE_SERVE_TOKEN\n",
                (long)fe_env_ms("MOTE_SERVE_SECRET_WAIT_MS", MOTE_SERVE_SECRET_WAIT_MS));
        return 1;
    }
    if (rc == MOTE_ERR_CORRUPT) {
        fprintf(stderr, "mote serve: %s is not a token (64 hex digits); remove it to have a "
                        "new one made\n",
                path);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "mote serve: cannot make the token file %s: %s\n", path,
                mote_strerror(rc));
        return 1;
    }
    if (created)
        fprintf(stderr, "mote serve: made the token file %s (mode 0600)\n", path);
    return 0;
}

/* --mqtt: the client id (default: the host name) and the credentials,
 * taken out of the environment whether or not --mqtt is given (tools
 * never see them). */
static int mqtt_setup(struct mote_serve_conf *vc)
{
    const char *user = fe_take_secret("MOTE_MQTT_USERNAME", mqtt_user, sizeof(mqtt_user));
    const char *pass = fe_take_secret("MOTE_MQTT_PASSWORD", mqtt_pass, sizeof(mqtt_pass));

    if (mqtt_url == NULL) {
        memset(mqtt_pass, 0, sizeof(mqtt_pass));
        return 0;
    }
    if (mqtt_id == NULL) {
        if (gethostname(host_id, sizeof(host_id) - 1) != 0 || host_id[0] == '\0') {
            fprintf(stderr, "mote serve: no host name for the MQTT client id: give --mqtt-id\n");
            return 2;
        }
        mqtt_id = host_id;
    }
    if (strncmp(mqtt_url, "mqtts://", 8) == 0 && pp.port.tls_handshake == NULL) {
        fprintf(stderr, "mote serve: %s needs TLS, but this mote was built with TLS=none "
                        "(rebuild with make TLS=mbedtls, or use an mqtt:// URL)\n",
                mqtt_url);
        return 2;
    }
    if (pass != NULL && pass[0] != '\0' && (user == NULL || user[0] == '\0')) {
        fprintf(stderr, "mote serve: MOTE_MQTT_PASSWORD needs MOTE_MQTT_USERNAME too\n");
        return 2;
    }
    vc->mqtt_url = mqtt_url;
    vc->mqtt = &smq;
    vc->mqtt_id = mqtt_id;
    vc->mqtt_prefix = mqtt_prefix;
    vc->mqtt_username = user != NULL && user[0] != '\0' ? user : NULL;
    vc->mqtt_password = vc->mqtt_username != NULL && pass != NULL && pass[0] != '\0' ? pass : NULL;
    vc->mqtt_ca_file = o.ca_file;
    if (vc->mqtt_ca_file == NULL && getenv("SSL_CERT_FILE") != NULL &&
        getenv("SSL_CERT_FILE")[0] != '\0')
        vc->mqtt_ca_file = getenv("SSL_CERT_FILE");
    /* tuning knobs for tests and slow links */
    vc->mqtt_keep_alive_s = (uint16_t)fe_env_ms("MOTE_MQTT_KEEPALIVE_S", 0);
    vc->mqtt_backoff_max_ms = (uint32_t)fe_env_ms("MOTE_MQTT_BACKOFF_MAX_MS", 0);
    return 0;
}

static int start(void)
{
    static struct mote_session_conf sconf;
    static struct mote_serve_conf vconf;
    bool have_mcp = false;
    int rc;

    if ((rc = fe_model(&o, pp.port.tls_handshake != NULL, &llm, &cconf.model)) != 0 ||
        (rc = fe_mcp(&o, &mcp, &loop, &have_mcp)) != 0 ||
        (rc = fe_state_dir(&o, &pp, state_dir, sizeof(state_dir))) != 0 ||
        (rc = fe_system(&o, &cconf.system)) != 0 || (rc = load_policy()) != 0)
        return rc;
    if (socket_path == NULL && !as_mcp) {
        snprintf(sock_buf, sizeof(sock_buf), "%s/mote.sock", state_dir);
        socket_path = sock_buf;
    }
    fe_conv_conf(&o, &llm, cconf.model, &cconf);
    cconf.approval = approval;
    cconf.deny_reason = DENY_REASON;
    cconf.rules = rules;
    cconf.nrules = nrules;
    cconf.approval_timeout_ms = approval_timeout_ms;
    sconf.on_event = on_event;
    sconf.tool_timeout_ms = (uint32_t)fe_env_ms("MOTE_TOOL_TIMEOUT_MS", MOTE_TOOL_TIMEOUT_MS);
    if ((rc = unatt_check(cconf.model)) != 0)
        return rc;
    if ((rc = fe_session_start(&pp, &loop, &ses, &sconf, o.no_tools, "mote serve")) != 0 ||
        (rc = unatt_start(&pp, &ses)) != 0)
        return rc;
    mote_loop_on_signal(&loop, on_signal, NULL);
    if ((rc = token_setup()) != 0 || (rc = mqtt_setup(&vconf)) != 0)
        return rc;
    if ((rc = unatt_serve_conf(&vconf)) != 0)
        return rc;
    vconf.session = &ses;
    vconf.conv = &cconf;
    vconf.socket_path = socket_path;
    vconf.socket_group = socket_group;
    vconf.listen = listen_addr;
    vconf.keep = o.keep;
    vconf.keep_bytes = o.keep_bytes;
    vconf.token = token;
    vconf.log = log_line;
    vconf.mcp_pass_tools = pass_mcp;
    if (as_mcp) {
        /* the client talks on stdin and stdout: nothing else may write
         * there (the log goes to stderr) */
        if (fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK) < 0 ||
            fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK) < 0) {
            fprintf(stderr, "mote mcp: cannot make stdin and stdout non-blocking: %s\n",
                    strerror(errno));
            return 1;
        }
        pipe_mem.in_fd = 0;
        pipe_mem.out_fd = 1;
        pipe_mem.shutdown_ms = (uint32_t)o.shutdown_ms;
        vconf.mcp_stdio = &pipe_mem;
    }
    /* tuning knobs (ms) for tests and slow links */
    vconf.header_timeout_ms = (uint32_t)fe_env_ms("MOTE_SERVE_HEADER_TIMEOUT_MS", 0);
    vconf.body_timeout_ms = (uint32_t)fe_env_ms("MOTE_SERVE_BODY_TIMEOUT_MS", 0);
    vconf.idle_timeout_ms = (uint32_t)fe_env_ms("MOTE_SERVE_IDLE_TIMEOUT_MS", 0);
    vconf.send_timeout_ms = (uint32_t)fe_env_ms("MOTE_SERVE_SEND_TIMEOUT_MS", 0);
    vconf.ping_ms = (uint32_t)fe_env_ms("MOTE_SERVE_PING_MS", 0);
    vconf.flush_ms = (uint32_t)fe_env_ms("MOTE_SERVE_FLUSH_MS", 0);
    vconf.mcp_page_bytes = (uint32_t)fe_env_ms("MOTE_SERVE_MCP_PAGE", 0);
    if ((rc = mote_serve_init(&srv, &loop, &vconf)) < 0) {
        if (rc == MOTE_ERR_CONFIG) {
            fprintf(stderr, "mote serve: --mqtt: %s\n", smq.errmsg);
            return 2;
        }
        fprintf(stderr, "mote serve: cannot serve on this port: %s%s\n", mote_strerror(rc),
                srv.missing != NULL ? srv.missing : "");
        return 1;
    }
    if ((rc = mote_serve_listen(&srv)) < 0) {
        if (srv.group_failed && rc == MOTE_ERR_NOENT)
            fprintf(stderr, "mote serve: --socket-group: no group '%s'\n",
                    cli_shown(socket_group));
        else if (srv.group_failed)
            fprintf(stderr, "mote serve: --socket-group: cannot give %s to group '%s': %s (mote "
                            "must be a member of it)\n",
                    socket_path, cli_shown(socket_group), mote_strerror(rc));
        else if (rc == MOTE_ERR_INVAL)
            fprintf(stderr, "mote serve: --listen wants a loopback address: 127.0.0.1:PORT or "
                            "[::1]:PORT, not '%s'\n",
                    cli_shown(listen_addr));
        else if (rc == MOTE_ERR_ADDRINUSE && srv.lfd[0] < 0)
            fprintf(stderr, "mote serve: another server listens on %s\n", socket_path);
        else if (rc == MOTE_ERR_EXIST)
            fprintf(stderr, "mote serve: %s exists and is not a socket of this user; it was "
                            "left as it is\n",
                    socket_path);
        else
            fprintf(stderr, "mote serve: cannot listen on %s: %s\n",
                    srv.lfd[0] < 0 ? socket_path : listen_addr, mote_strerror(rc));
        mote_serve_deinit(&srv);
        return rc == MOTE_ERR_INVAL || (srv.group_failed && rc == MOTE_ERR_NOENT) ? 2 : 1;
    }
    if (have_mcp)
        fe_mcp_start(&ses, &mcp, &loop);
    if (as_mcp)
        fprintf(stderr, "mote mcp: %s, model %s; MCP on stdin and stdout%s%s", mote_version(),
                cconf.model, socket_path != NULL ? ", also listening on " : "",
                socket_path != NULL ? socket_path : "");
    else
        fprintf(stderr, "mote serve: %s, model %s; listening on %s", mote_version(), cconf.model,
                socket_path);
    if (socket_group != NULL)
        fprintf(stderr, " (group %s)", socket_group);
    if (listen_addr != NULL) {
        /* the address as given ([::1], localhost, 127.x.y.z), the port bound */
        const char *colon = strrchr(listen_addr, ':');

        fprintf(stderr, " and %.*s:%u", (int)(colon - listen_addr), listen_addr,
                (unsigned)srv.tcp_port);
    }
    fputc('\n', stderr);
    rc = mote_serve_recover(&srv);
    if (rc < 0)
        fprintf(stderr, "mote serve: cannot list the conversations: %s\n", mote_strerror(rc));
    else if (rc > 0)
        fprintf(stderr, "mote serve: %d conversation(s) need recovery\n", rc);
    return 0;
}

int serve_main(int argc, char **argv)
{
    const struct mote_shutdown_report *r = &ses.report;
    int rc, code, loop_rc = 0;

    as_mcp = strcmp(argv[0], "mcp") == 0;
    rc = parse(argc, argv);

    if (rc != 0)
        return rc;
    if (o.help) {
        usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("mote %s\n", mote_version());
        return 0;
    }
    if ((rc = fe_port_start(&pp, "mote serve")) != 0)
        return rc;
    (void)mote_posix_notify_take(&notify);
    if ((rc = start()) != 0)
        return rc;
    {
        char status[1300];

        snprintf(status, sizeof(status), "READY=1\nSTATUS=serving on %s",
                 socket_path != NULL ? socket_path : "stdin and stdout (MCP)");
        (void)mote_posix_notify(&notify, status);
    }
    while (!mote_serve_done(&srv)) {
        loop_rc = mote_loop_poll(&loop, -1);
        if (loop_rc < 0) {
            struct mote_shutdown_req force = {"fatal", MOTE_SD_CANCEL, 0, true};

            fprintf(stderr, "mote serve: the event loop failed: %s\n", mote_strerror(loop_rc));
            mote_serve_deinit(&srv);
            (void)mote_shutdown_begin(&ses, &force);
            break;
        }
    }
    if (r->cut[0] != '\0')
        fprintf(stderr, "mote serve: %s did not finish in time (marked for recovery)\n", r->cut);
    if (r->left[0] != '\0')
        fprintf(stderr, "mote serve: %s still ran after it was cancelled\n", r->left);
    if (r->mcp_left > 0)
        fprintf(stderr, "mote serve: warning: an MCP server did not exit; its supervisor ends "
                        "it\n");
    if (r->storage_err < 0)
        fprintf(stderr, "mote serve: a journal could not be written: %s\n",
                mote_strerror(r->storage_err));
    code = mote_serve_exit_code(&srv, loop_rc);
    fprintf(stderr, "mote serve: stopped (%s, %u conversation(s) marked for recovery), exit %d\n",
            r->reason != NULL ? r->reason : "?", r->conversations_marked, code);
    mote_serve_deinit(&srv);
    fe_end(&ses, &loop, &pp);
    unatt_end();
    return code;
}
