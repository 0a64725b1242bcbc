/*
 * serve.c - `mote serve`: a frontend of libmote's server (mote_serve.h).
 * It starts from its settings (settings.c: the options and the
 * configuration file), maps signals to the server (SIGHUP: reload.c's
 * reload; SIGTERM: drain; SIGINT: cancel; a second signal: force), tells
 * systemd when it is ready, reloading and stopping, and logs to stderr.
 * The server itself - the HTTP API, event streams from the journals,
 * loading conversations on demand, recovery on start, the MQTT front
 * door (--mqtt) - is in the library.
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
#include <sys/stat.h>
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
#include "reload.h"
#include "serve.h"
#include "settings.h"
#include "unatt.h"

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_session ses;
static struct mote_serve srv;
static struct mote_serve_mqtt smq; /* the MQTT front door's memory (with --mqtt) */
static char mqtt_user[256], mqtt_pass[SET_SECRET_MAX], host_id[64];
static char state_dir[1024], sock_buf[1100], token[65];
static const char *socket_path;

static struct mote_posix_notify notify; /* systemd's socket, out of the environment */
static bool as_mcp; /* `mote mcp`: MCP on stdin and stdout, for a client that spawned it */
static uint32_t watchdog_ms;    /* systemd's WatchdogSec= (0: none) */
static mote_timer_id watchdog;
static struct mote_serve_mcp_stdio pipe_mem; /* `mote mcp`'s pipe (the library's memory) */

static void log_line(void *arg, const char *line)
{
    (void)arg;
    fprintf(stderr, "mote %s\n", line);
}

static void say(const char *line)
{
    fprintf(stderr, "mote serve: %s\n", line);
}

static void on_event(void *arg, const struct mote_event *ev)
{
    (void)arg;
    if (ev->type == MOTE_EV_MCP)
        fprintf(stderr, "mote serve: mcp %s: %.*s\n", ev->name, (int)ev->len, ev->text);
    mote_serve_event(&srv, ev);
    rl_event(ev);
}

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    (void)l, (void)n, (void)arg;
    if (sig == MOTE_SIG_HUP && srv.sig == 0) {
        /* a reload: running turns and event streams go on */
        char msg[64];
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
                 (unsigned long long)t.tv_sec * 1000000ull + (unsigned long long)t.tv_nsec / 1000);
        (void)mote_posix_notify(&notify, msg);
        (void)rl_reload();
        (void)mote_posix_notify(&notify, "READY=1");
        return;
    }
    if (srv.sig == 0)
        (void)mote_posix_notify(&notify, "STOPPING=1");
    (void)mote_serve_signal(&srv, sig, (uint32_t)rl_cur()->o.shutdown_ms);
}

/* WATCHDOG=1 to systemd from a timer of the loop, at half the watchdog's
 * interval: only a loop that turns sends it, so systemd restarts a
 * wedged one. */
static void on_watchdog(struct mote_loop *l, mote_timer_id t, void *arg)
{
    (void)t, (void)arg;
    watchdog = 0;
    (void)mote_posix_notify(&notify, "WATCHDOG=1");
    if (mote_timer_start(l, watchdog_ms / 2, on_watchdog, NULL, 0, &watchdog) < 0)
        watchdog = 0;
}

/* $WATCHDOG_USEC (and $WATCHDOG_PID, if it names this process), taken
 * out of the environment like $NOTIFY_SOCKET: tools never see them. */
static void watchdog_take(void)
{
    const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
    unsigned long long us = usec != NULL ? strtoull(usec, NULL, 10) : 0;

    if (pid != NULL && strtol(pid, NULL, 10) != (long)getpid())
        us = 0; /* meant for another process */
    if (us >= 2000 && us / 1000 < UINT32_MAX)
        watchdog_ms = (uint32_t)(us / 1000);
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
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
    if (rl_cur()->listen_addr == NULL) {
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

/* FNV-1a, 64 bits. */
static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* What st_write_atomic writes: the bytes of `arg` (a struct bytes). */
struct bytes {
    const char *p;
    size_t len, off;
};

static int produce(void *arg, char *buf, size_t cap)
{
    struct bytes *b = arg;
    size_t n = b->len - b->off < cap ? b->len - b->off : cap;

    memcpy(buf, b->p + b->off, n);
    b->off += n;
    return (int)n;
}

/* The default MQTT client id: "mote-" and 16 hex digits made one way from
 * the machine's id (/etc/machine-id, as systemd writes it; a program's
 * own id from it, so the machine's id itself never goes on the network),
 * else from STATE/device-id (made once, random: a device without a
 * machine id, as OpenWrt). Unique per device, stable across restarts.
 * Returns 0 or 2 (said). */
static int default_client_id(void)
{
    static const char *const files[] = {"/etc/machine-id", "/var/lib/dbus/machine-id"};
    const char *over = getenv("MOTE_MACHINE_ID_FILE"); /* (tests) */
    char id[128];
    size_t n = 0, i;
    uint64_t h;

    for (i = 0; i < (over != NULL ? 1u : 2u) && n == 0; i++) {
        const char *path = over != NULL ? over : files[i];
        FILE *f = path[0] != '\0' ? fopen(path, "re") : NULL;

        if (f == NULL)
            continue;
        n = fread(id, 1, sizeof(id) - 1, f);
        fclose(f);
        while (n > 0 && (id[n - 1] == '\n' || id[n - 1] == ' '))
            n--;
    }
    if (n < 16) {
        /* this device's own, kept in the state directory */
        static const char hex[] = "0123456789abcdef";
        unsigned char r[16];
        struct bytes src;
        int h2 = pp.port.st_open(pp.port.ctx, "device-id", MOTE_ST_READ), k;

        n = 0;
        if (h2 >= 0) {
            k = pp.port.st_read(pp.port.ctx, h2, 0, id, 32);
            pp.port.st_close(pp.port.ctx, h2);
            n = k == 32 ? 32 : 0;
        }
        if (n == 0) {
            memset(r, 0, sizeof(r));
            (void)pp.port.random(pp.port.ctx, r, sizeof(r));
            for (i = 0; i < 16; i++) {
                id[2 * i] = hex[r[i] >> 4];
                id[2 * i + 1] = hex[r[i] & 15u];
            }
            id[32] = '\n';
            src.p = id;
            src.len = 33;
            src.off = 0;
            if (pp.port.st_write_atomic(pp.port.ctx, "device-id", produce, &src) < 0) {
                fprintf(stderr, "mote serve: no /etc/machine-id, and STATE/device-id cannot be "
                                "written: give --mqtt-id\n");
                return 2;
            }
            n = 32;
        }
    }
    h = fnv(14695981039346656037ULL, "mote mqtt client id\n", 20);
    h = fnv(h, id, n);
    snprintf(host_id, sizeof(host_id), "mote-%016llx", (unsigned long long)h);
    return 0;
}

/* --mqtt: the client id and the credentials (--mqtt-username and
 * --mqtt-password-file, else MOTE_MQTT_USERNAME and MOTE_MQTT_PASSWORD,
 * taken out of the environment whether or not --mqtt is given: tools
 * never see them; else the systemd credential "mqtt-password"). */
static int mqtt_setup(struct mote_serve_conf *vc)
{
    const struct serve_set *s = rl_cur();
    const char *user = fe_take_secret("MOTE_MQTT_USERNAME", mqtt_user, sizeof(mqtt_user));
    const char *pass = fe_take_secret("MOTE_MQTT_PASSWORD", mqtt_pass, sizeof(mqtt_pass));
    const char *cred = getenv("CREDENTIALS_DIRECTORY");
    int rc;

    if (s->mqtt_url == NULL) {
        memset(mqtt_pass, 0, sizeof(mqtt_pass));
        return 0;
    }
    if (s->mqtt_user != NULL)
        user = s->mqtt_user;
    if (s->mqtt_pass_file != NULL) {
        if ((rc = set_secret_file(s->mqtt_pass_file, "--mqtt-password-file", mqtt_pass,
                                  sizeof(mqtt_pass))) != 0)
            return rc;
        pass = mqtt_pass;
    } else if ((pass == NULL || pass[0] == '\0') && cred != NULL && cred[0] != '\0' &&
               user != NULL) {
        char path[1200];

        snprintf(path, sizeof(path), "%s/mqtt-password", cred);
        if (access(path, F_OK) == 0) {
            if ((rc = set_secret_file(path, "the credential", mqtt_pass, sizeof(mqtt_pass))) != 0)
                return rc;
            pass = mqtt_pass;
        }
    }
    vc->mqtt_id = s->mqtt_id;
    if (vc->mqtt_id == NULL) {
        if ((rc = default_client_id()) != 0)
            return rc;
        vc->mqtt_id = host_id;
    }
    if (strncmp(s->mqtt_url, "mqtts://", 8) == 0 && pp.port.tls_handshake == NULL) {
        fprintf(stderr, "mote serve: %s needs TLS, but this mote was built with TLS=none "
                        "(rebuild with make TLS=mbedtls, or use an mqtt:// URL)\n",
                s->mqtt_url);
        return 2;
    }
    if (pass != NULL && pass[0] != '\0' && (user == NULL || user[0] == '\0')) {
        fprintf(stderr, "mote serve: an MQTT password needs a user name too (--mqtt-username, "
                        "MOTE_MQTT_USERNAME)\n");
        return 2;
    }
    if (s->mqtt_key != NULL) {
        struct stat st;

        if (stat(s->mqtt_key, &st) == 0 && (st.st_mode & 007) != 0) {
            fprintf(stderr, "mote serve: --mqtt-key %s may be read by others: it is not used "
                            "(chmod o-rwx it)\n",
                    s->mqtt_key);
            return 2;
        }
    }
    vc->mqtt_cert_file = s->mqtt_cert;
    vc->mqtt_key_file = s->mqtt_key;
    vc->mqtt_approve_off = !s->mqtt_approve;
    vc->mqtt_discovery = s->mqtt_discovery;
    vc->mqtt_url = s->mqtt_url;
    vc->mqtt = &smq;
    vc->mqtt_prefix = s->mqtt_prefix;
    vc->mqtt_username = user != NULL && user[0] != '\0' ? user : NULL;
    vc->mqtt_password = vc->mqtt_username != NULL && pass != NULL && pass[0] != '\0' ? pass : NULL;
    vc->mqtt_ca_file = s->o.ca_file;
    if (vc->mqtt_ca_file == NULL && getenv("SSL_CERT_FILE") != NULL &&
        getenv("SSL_CERT_FILE")[0] != '\0')
        vc->mqtt_ca_file = getenv("SSL_CERT_FILE");
    /* tuning knobs for tests and slow links */
    vc->mqtt_keep_alive_s = (uint16_t)fe_env_ms("MOTE_MQTT_KEEPALIVE_S", 0);
    vc->mqtt_backoff_max_ms = (uint32_t)fe_env_ms("MOTE_MQTT_BACKOFF_MAX_MS", 0);
    return 0;
}

/* One mote serve per state directory: the second says who has it. */
static int claim_state(void)
{
    int64_t holder = 0;
    int rc = mote_serve_claim(&pp.port, &holder);

    if (rc == MOTE_ERR_LOCKED) {
        if (holder > 0)
            fprintf(stderr, "mote serve: another mote serve (pid %lld) uses the state directory "
                            "%s: one per state directory (give this one its own --state-dir)\n",
                    (long long)holder, state_dir);
        else
            fprintf(stderr, "mote serve: another mote serve uses the state directory %s: one per "
                            "state directory (give this one its own --state-dir)\n",
                    state_dir);
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "mote serve: cannot lock the state directory %s: %s\n", state_dir,
                mote_strerror(rc));
        return 1;
    }
    return 0; /* (held until the process ends) */
}

static int start(void)
{
    static struct mote_session_conf sconf;
    static struct mote_serve_conf vconf;
    struct serve_set *s;
    struct rl_ctx rc_ctx;
    int rc;

    if ((rc = rl_first(pp.port.tls_handshake != NULL)) != 0)
        return rc;
    s = rl_cur();
    if ((rc = rl_mcp_load(&pp, &loop)) != 0 ||
        (rc = fe_state_dir(&s->o, &pp, state_dir, sizeof(state_dir))) != 0 ||
        (!as_mcp && (rc = claim_state()) != 0))
        return rc;
    socket_path = s->socket_path;
    if (socket_path == NULL && !as_mcp) {
        snprintf(sock_buf, sizeof(sock_buf), "%s/mote.sock", state_dir);
        socket_path = sock_buf;
    }
    sconf.on_event = on_event;
    sconf.tool_timeout_ms = (uint32_t)fe_env_ms("MOTE_TOOL_TIMEOUT_MS", MOTE_TOOL_TIMEOUT_MS);
    if ((rc = fe_session_start(&pp, &loop, &ses, &sconf, s->o.no_tools, "mote serve")) != 0 ||
        (rc = unatt_start(&pp, &ses)) != 0)
        return rc;
    mote_loop_on_signal(&loop, on_signal, NULL);
    if ((rc = token_setup()) != 0 || (rc = mqtt_setup(&vconf)) != 0)
        return rc;
    if ((rc = unatt_serve_conf(&vconf)) != 0)
        return rc;
    vconf.session = &ses;
    vconf.conv = &s->cconf;
    vconf.socket_path = socket_path;
    vconf.socket_group = s->socket_group;
    vconf.listen = s->listen_addr;
    vconf.keep = s->o.keep;
    vconf.keep_bytes = s->o.keep_bytes;
    vconf.token = token;
    vconf.page = mote_cli_page;
    vconf.log = log_line;
    vconf.mcp_pass_tools = s->pass_mcp;
    vconf.stats_ms = s->stats_ms;
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
        pipe_mem.shutdown_ms = (uint32_t)s->o.shutdown_ms;
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
                    cli_shown(s->socket_group));
        else if (srv.group_failed)
            fprintf(stderr, "mote serve: --socket-group: cannot give %s to group '%s': %s (mote "
                            "must be a member of it)\n",
                    socket_path, cli_shown(s->socket_group), mote_strerror(rc));
        else if (rc == MOTE_ERR_INVAL)
            fprintf(stderr, "mote serve: --listen wants a loopback address: 127.0.0.1:PORT or "
                            "[::1]:PORT, not '%s'\n",
                    cli_shown(s->listen_addr));
        else if (rc == MOTE_ERR_ADDRINUSE && srv.lfd[0] < 0)
            fprintf(stderr, "mote serve: another server listens on %s\n", socket_path);
        else if (rc == MOTE_ERR_EXIST)
            fprintf(stderr, "mote serve: %s exists and is not a socket of this user; it was "
                            "left as it is\n",
                    socket_path);
        else
            fprintf(stderr, "mote serve: cannot listen on %s: %s\n",
                    srv.lfd[0] < 0 ? socket_path : s->listen_addr, mote_strerror(rc));
        mote_serve_deinit(&srv);
        return rc == MOTE_ERR_INVAL || (srv.group_failed && rc == MOTE_ERR_NOENT) ? 2 : 1;
    }
    memset(&rc_ctx, 0, sizeof(rc_ctx));
    rc_ctx.pp = &pp;
    rc_ctx.loop = &loop;
    rc_ctx.ses = &ses;
    rc_ctx.srv = &srv;
    rc_ctx.say = say;
    rl_mcp_start(&rc_ctx);
    if (as_mcp)
        fprintf(stderr, "mote mcp: %s, model %s; MCP on stdin and stdout%s%s", mote_version(),
                s->cconf.model, socket_path != NULL ? ", also listening on " : "",
                socket_path != NULL ? socket_path : "");
    else
        fprintf(stderr, "mote serve: %s, model %s; listening on %s", mote_version(),
                s->cconf.model, socket_path);
    if (s->socket_group != NULL)
        fprintf(stderr, " (group %s)", s->socket_group);
    if (s->listen_addr != NULL) {
        /* the address as given ([::1], localhost, 127.x.y.z), the port bound */
        const char *colon = strrchr(s->listen_addr, ':');

        fprintf(stderr, " and %.*s:%u", (int)(colon - s->listen_addr), s->listen_addr,
                (unsigned)srv.tcp_port);
    }
    if (s->config != NULL)
        fprintf(stderr, "; configuration %s", s->config);
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
    bool help, version;
    int rc, code, loop_rc = 0;

    as_mcp = strcmp(argv[0], "mcp") == 0;
    rc = set_args(argc, argv, &help, &version);

    if (rc != 0)
        return rc;
    if (help) {
        set_usage(stdout);
        return 0;
    }
    if (version) {
        printf("mote %s\n", mote_version());
        return 0;
    }
    if ((rc = fe_port_start(&pp, "mote serve")) != 0)
        return rc;
    (void)mote_posix_notify_take(&notify);
    watchdog_take();
    if ((rc = start()) != 0)
        return rc;
    if (watchdog_ms > 0 &&
        mote_timer_start(&loop, watchdog_ms / 2, on_watchdog, NULL, 0, &watchdog) < 0) {
        fprintf(stderr, "mote serve: no timer for systemd's watchdog\n");
        return 1;
    }
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
    rl_end();
    fe_end(&ses, &loop, &pp);
    unatt_end();
    return code;
}
