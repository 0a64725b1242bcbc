/*
 * oauth_tok.c - the tokens of the MCP servers logged in to (oauth.h):
 * the token endpoint's requests (a code, a refresh token or client
 * credentials, the client authenticated with none, Basic or the form),
 * the token files (STATE/mcp-auth/NAME.json: mode 0600, written whole:
 * temp, fsync, rename, fsync the directory), and at the start of a run
 * each server's token renewed when expired and sent as its bearer.
 * Secrets are wiped from the buffers that held them.
 */
#define _GNU_SOURCE
#include "oauth_int.h"

#include "fetch.h"
#include "mcpconf.h"
#include "setup.h"
#include "readfile.h"
#include "sha256.h"

#include "mote/mote_err.h"
#include "mote/mote_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint32_t oa_step_ms(void)
{
    return (uint32_t)fe_env_ms("MOTE_OAUTH_STEP_MS", FE_OAUTH_STEP_MS);
}

/* The client's assertion (private_key_jwt, RFC 7523 2.2): a JWT of
 * iss = sub = the client, aud = the authorization server, 5 minutes,
 * signed ES256 with its key file; added to the form. 0 or -1 (err). */
static int assertion(const struct mote_port *p, const struct fe_oauth_tok *t, char *form,
                     size_t cap, size_t *at, char *err, size_t ecap)
{
    static char key[8192], jwt[4096], claims[3072];
    uint8_t digest[32], sig[64], id[12];
    char jti[24];
    size_t n = 0, kn;
    int64_t now = (int64_t)time(NULL);
    int rc = fe_read_file(t->key_file, key, sizeof(key), &kn);

    if (rc < 0) {
        snprintf(err, ecap, "cannot read the private key %.300s: %s", t->key_file,
                 fe_read_why(rc));
        return -1;
    }
    if (p->random(p->ctx, id, sizeof(id)) < 0 || fe_b64url(id, sizeof(id), jti, sizeof(jti)) < 0)
        jti[0] = '\0';
    snprintf(claims, sizeof(claims), "%lld,\"exp\":%lld,\"jti\":\"%s\"}", (long long)now,
             (long long)now + 300, jti);
    {
        char head[2900];
        size_t h = 0;

        if (!oa_cat(head, sizeof(head), &h, "{\"iss\":") ||
            !oa_json_str(head, sizeof(head), &h, t->client_id) ||
            !oa_cat(head, sizeof(head), &h, ",\"sub\":") ||
            !oa_json_str(head, sizeof(head), &h, t->client_id) ||
            !oa_cat(head, sizeof(head), &h, ",\"aud\":") ||
            !oa_json_str(head, sizeof(head), &h, t->audience) ||
            !oa_cat(head, sizeof(head), &h, ",\"iat\":") ||
            !oa_cat(head, sizeof(head), &h, claims))
            goto long_;
        memcpy(claims, head, h + 1);
    }
    /* base64url("{"alg":"ES256","typ":"JWT"}") */
    if (!oa_cat(jwt, sizeof(jwt), &n, "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9."))
        goto long_;
    if ((rc = fe_b64url((const uint8_t *)claims, strlen(claims), jwt + n, sizeof(jwt) - n)) < 0)
        goto long_;
    n += (size_t)rc;
    fe_sha256(jwt, n, digest);
    rc = mote_tls_sign_es256(key, kn + 1, digest, sig, err, ecap); /* (PEM: its NUL counted) */
    memset(key, 0, sizeof(key));
    if (rc < 0)
        return -1;
    if (!oa_cat(jwt, sizeof(jwt), &n, ".") ||
        (rc = fe_b64url(sig, sizeof(sig), jwt + n, sizeof(jwt) - n)) < 0)
        goto long_;
    if (!oa_param(form, cap, at, "client_assertion_type",
                  "urn:ietf:params:oauth:client-assertion-type:jwt-bearer") ||
        !oa_param(form, cap, at, "client_assertion", jwt))
        goto long_;
    return 0;
long_:
    snprintf(err, ecap, "the client's assertion is too long");
    return -1;
}

int oa_token_request(const struct mote_port *p, struct fe_oauth_tok *t, char *form, size_t cap,
                         size_t at, const char *ca_file, char *err, size_t ecap)
{
    static char auth[2048];
    const char *hdr[4] = {"Content-Type: application/x-www-form-urlencoded",
                          "Accept: application/json", NULL, NULL};
    struct fe_fetch f;
    char line[300], type[32], refresh[FE_OAUTH_TOKEN_MAX];
    int64_t in = 0;
    int e;

    if (t->auth == FE_AUTH_BASIC) {
        char cred[1600];
        size_t c = 0;

        memcpy(auth, "Authorization: Basic ", 21);
        if (!oa_enc(cred, sizeof(cred), &c, t->client_id) || !oa_cat(cred, sizeof(cred), &c, ":") ||
            !oa_enc(cred, sizeof(cred), &c, t->client_secret) ||
            fe_b64((const uint8_t *)cred, c, auth + 21, sizeof(auth) - 21) < 0) {
            snprintf(err, ecap, "the client's credentials are too long");
            return -1;
        }
        memset(cred, 0, sizeof(cred));
        hdr[2] = auth;
    } else if (!oa_param(form, cap, &at, "client_id", t->client_id) ||
               (t->auth == FE_AUTH_POST &&
                !oa_param(form, cap, &at, "client_secret", t->client_secret))) {
        snprintf(err, ecap, "the token request is too long");
        return -1;
    }
    if (t->auth == FE_AUTH_JWT && assertion(p, t, form, cap, &at, err, ecap) < 0)
        return -1;
    fe_fetch_init(&f, "POST", t->token_ep, hdr, form, at, oa_body, sizeof(oa_body));
    f.ca_file = ca_file;
    f.timeout_ms = oa_step_ms();
    e = fe_fetch(p, &f);
    memset(auth, 0, sizeof(auth));
    memset(form, 0, at);
    if (e < 0) {
        snprintf(err, ecap, "the token request: %s", f.err);
        return -1;
    }
    if (f.status != 200) {
        char code[64] = "";

        if (mote_json_parse_object(&oa_js, f.out, f.len, NULL, 0) >= 0)
            (void)oa_doc_str("error", code, sizeof(code));
        for (e = 0; code[e] != '\0'; e++) {
            if ((unsigned char)code[e] < 0x20 || (unsigned char)code[e] >= 0x7f)
                code[e] = '?';
        }
        snprintf(err, ecap, "the authorization server refused the token request (HTTP %d%s%s)",
                 f.status, code[0] != '\0' ? ": " : "", code);
        return -1;
    }
    if (mote_json_parse_object(&oa_js, f.out, f.len, line, sizeof(line)) < 0 ||
        mote_json_strict(&oa_js, 0, MOTE_JSON_NO_NUL, line, sizeof(line)) < 0 ||
        !oa_doc_str("access_token", t->access, sizeof(t->access)) || t->access[0] == '\0' ||
        !oa_doc_str("token_type", type, sizeof(type)) || strcasecmp(type, "Bearer") != 0 ||
        !oa_doc_str("refresh_token", refresh, sizeof(refresh))) {
        memset(oa_body, 0, f.len);
        snprintf(err, ecap, "the token answer is not a Bearer access token");
        return -1;
    }
    for (e = 0; t->access[e] != '\0'; e++) {
        if ((unsigned char)t->access[e] <= 0x20 || (unsigned char)t->access[e] >= 0x7f) {
            memset(oa_body, 0, f.len);
            snprintf(err, ecap, "the access token has a byte a header cannot carry");
            return -1;
        }
    }
    if (refresh[0] != '\0')
        memcpy(t->refresh, refresh, sizeof(refresh));
    /* expires_in: a number (some servers send a string of digits); a
     * value that is not one, or not above 0, is taken as 5 minutes (renewed
     * early rather than never); absent: not said */
    e = mote_json_member(&oa_js, 0, "expires_in");
    if (e >= 0 && mote_json_type_of(&oa_js, e) == MOTE_JSON_STRING) {
        char num[24];

        if (oa_doc_str("expires_in", num, sizeof(num)) && num[0] >= '0' && num[0] <= '9' &&
            strspn(num, "0123456789") == strlen(num) && strlen(num) < 12)
            in = strtoll(num, NULL, 10);
    } else if (e >= 0) {
        (void)mote_json_int(&oa_js, e, &in);
    }
    t->expires_at = e < 0                             ? 0
                    : in > 0 && in < 10ll * 366 * 86400 ? (int64_t)time(NULL) + in
                                                      : (int64_t)time(NULL) + 300;
    if (mote_json_member(&oa_js, 0, "scope") >= 0) {
        char granted[sizeof(t->scope)];

        if (oa_doc_str("scope", granted, sizeof(granted)) && granted[0] != '\0')
            memcpy(t->scope, granted, sizeof(granted)); /* (what was granted, when said) */
    }
    memset(oa_body, 0, f.len);
    memset(refresh, 0, sizeof(refresh));
    return 0;
}


/* ---- the token file ---- */

static void file_of(const char *state_dir, const char *name, char *out, size_t cap, bool dir)
{
    if (dir)
        snprintf(out, cap, "%s/mcp-auth", state_dir);
    else
        snprintf(out, cap, "%s/mcp-auth/%s.json", state_dir, name);
}

int oa_save(const char *state_dir, const char *name, const struct fe_oauth_tok *t,
                char *err, size_t ecap)
{
    char *out = oa_body; /* (the answer it came from is read) */
    const size_t cap = sizeof(oa_body);
    char path[1200], tmp[1300], dir[1100], num[32];
    size_t at = 0;
    int fd, dfd;
    ssize_t w;

    file_of(state_dir, name, dir, sizeof(dir), true);
    file_of(state_dir, name, path, sizeof(path), false);
    {
        /* a name of its own: two writers (a login, a run's renewal) never
         * rename each other's half-written file */
        static unsigned seq;

        snprintf(tmp, sizeof(tmp), "%s.%ld.%u.tmp", path, (long)getpid(), ++seq);
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(err, ecap, "cannot make %.300s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(num, sizeof(num), "%lld", (long long)t->expires_at);
    if (!oa_cat(out, cap, &at, "{\"url\":") || !oa_json_str(out, cap, &at, t->url) ||
        !oa_cat(out, cap, &at, ",\"access_token\":") ||
        !oa_json_str(out, cap, &at, t->access) ||
        !oa_cat(out, cap, &at, ",\"refresh_token\":") ||
        !oa_json_str(out, cap, &at, t->refresh) ||
        !oa_cat(out, cap, &at, ",\"expires_at\":") || !oa_cat(out, cap, &at, num) ||
        !oa_cat(out, cap, &at, ",\"scope\":") || !oa_json_str(out, cap, &at, t->scope) ||
        !oa_cat(out, cap, &at, ",\"token_endpoint\":") ||
        !oa_json_str(out, cap, &at, t->token_ep) ||
        !oa_cat(out, cap, &at, ",\"client_id\":") ||
        !oa_json_str(out, cap, &at, t->client_id) ||
        !oa_cat(out, cap, &at, ",\"client_secret\":") ||
        !oa_json_str(out, cap, &at, t->client_secret) ||
        !oa_cat(out, cap, &at, ",\"resource\":") ||
        !oa_json_str(out, cap, &at, t->resource) ||
        !oa_cat(out, cap, &at,
             t->auth == FE_AUTH_BASIC  ? ",\"auth\":\"client_secret_basic\""
             : t->auth == FE_AUTH_POST ? ",\"auth\":\"client_secret_post\""
             : t->auth == FE_AUTH_JWT  ? ",\"auth\":\"private_key_jwt\""
                                       : ",\"auth\":\"none\"") ||
        !oa_cat(out, cap, &at, ",\"private_key_file\":") ||
        !oa_json_str(out, cap, &at, t->key_file) || !oa_cat(out, cap, &at, ",\"audience\":") ||
        !oa_json_str(out, cap, &at, t->audience) ||
        !oa_cat(out, cap, &at, t->cc ? ",\"grant\":\"client_credentials\"}\n"
                                          : ",\"grant\":\"authorization_code\"}\n")) {
        snprintf(err, ecap, "the token is too long to keep");
        return -1;
    }
    (void)unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, ecap, "cannot write %.300s: %s", tmp, strerror(errno));
        memset(out, 0, at);
        return -1;
    }
    w = write(fd, out, at);
    memset(out, 0, at);
    if (w != (ssize_t)at || fsync(fd) < 0) {
        snprintf(err, ecap, "cannot write %.300s: %s", tmp, w < 0 ? strerror(errno) : "short write");
        close(fd);
        (void)unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        snprintf(err, ecap, "cannot replace %.300s: %s", path, strerror(errno));
        (void)unlink(tmp);
        return -1;
    }
    if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* Reads server `name`'s token file: 1 read, 0 none, -1 unreadable
 * (said in err). */
int oa_load(const char *state_dir, const char *name, struct fe_oauth_tok *t, char *err,
                size_t ecap)
{
    char *text = oa_body;
    char path[1200], a[32], g[32];
    size_t n;
    int rc, e;
    int64_t v = 0;

    memset(t, 0, sizeof(*t));
    file_of(state_dir, name, path, sizeof(path), false);
    rc = fe_read_file(path, text, sizeof(oa_body), &n);
    if (rc == FE_READ_ERRNO && errno == ENOENT)
        return 0;
    if (rc < 0 || mote_json_parse_object(&oa_js, text, n, NULL, 0) < 0 ||
        !oa_doc_str("url", t->url, sizeof(t->url)) ||
        !oa_doc_str("access_token", t->access, sizeof(t->access)) ||
        !oa_doc_str("refresh_token", t->refresh, sizeof(t->refresh)) ||
        !oa_doc_str("scope", t->scope, sizeof(t->scope)) ||
        !oa_doc_str("token_endpoint", t->token_ep, sizeof(t->token_ep)) ||
        !oa_doc_str("client_id", t->client_id, sizeof(t->client_id)) ||
        !oa_doc_str("client_secret", t->client_secret, sizeof(t->client_secret)) ||
        !oa_doc_str("resource", t->resource, sizeof(t->resource)) || !oa_doc_str("auth", a, sizeof(a)) ||
        !oa_doc_str("private_key_file", t->key_file, sizeof(t->key_file)) ||
        !oa_doc_str("audience", t->audience, sizeof(t->audience)) ||
        !oa_doc_str("grant", g, sizeof(g))) {
        memset(text, 0, sizeof(oa_body));
        snprintf(err, ecap, "%.300s is not a token file of mote's (log in again)", path);
        return -1;
    }
    e = mote_json_member(&oa_js, 0, "expires_at");
    t->expires_at = e >= 0 && mote_json_int(&oa_js, e, &v) == 0 ? v : 0;
    memset(text, 0, n); /* (the tokens are in t now) */
    t->auth = strcmp(a, "client_secret_basic") == 0  ? FE_AUTH_BASIC
              : strcmp(a, "client_secret_post") == 0 ? FE_AUTH_POST
              : strcmp(a, "private_key_jwt") == 0    ? FE_AUTH_JWT
                                                     : FE_AUTH_NONE;
    t->cc = strcmp(g, "client_credentials") == 0;
    return 1;
}


int fe_oauth_logout(const char *state_dir, const char *name, FILE *msg)
{
    char path[1200];

    file_of(state_dir, name, path, sizeof(path), false);
    if (unlink(path) < 0) {
        if (errno == ENOENT) {
            fprintf(msg, "mote: mcp %s: no login was kept\n", name);
            return 0;
        }
        fprintf(msg, "mote: mcp %s: cannot remove %s: %s\n", name, path, strerror(errno));
        return 1;
    }
    fprintf(msg, "mote: mcp %s: logged out\n", name);
    return 0;
}

/* ---- at the start of a run ---- */

/* A new access token for t (its refresh token, or client credentials). */
static int renew(const struct mote_port *p, struct fe_oauth_tok *t, const char *ca_file, char *err,
                 size_t ecap)
{
    static char form[FE_OAUTH_FORM_MAX];
    size_t at = 0;

    if (!(t->cc ? oa_param(form, sizeof(form), &at, "grant_type", "client_credentials") &&
                      (t->scope[0] == '\0' || oa_param(form, sizeof(form), &at, "scope", t->scope))
                : oa_param(form, sizeof(form), &at, "grant_type", "refresh_token") &&
                      oa_param(form, sizeof(form), &at, "refresh_token", t->refresh)) ||
        (t->resource[0] != '\0' && !oa_param(form, sizeof(form), &at, "resource", t->resource))) {
        memset(form, 0, sizeof(form));
        snprintf(err, ecap, "the renewal request is too long");
        return -1;
    }
    return oa_token_request(p, t, form, sizeof(form), at, ca_file, err, ecap);
}

/* A server's bearer while its configuration lives: the header line its
 * requests carry (rewritten in place when renewed: a request's head is
 * built whole from it, between two steps of the loop), and what the
 * renewal needs. Two configurations may live at once (mote serve's
 * reload). */
struct bearer {
    const struct mote_mcp_conf *cf;  /* NULL: free */
    const struct mote_mcp *m;
    unsigned k;
    const char *ca_file;
    int64_t expires_at;
    bool said;                       /* a failed renewal was said */
    char state_dir[1024];
    char line[FE_OAUTH_TOKEN_MAX + 32];
};

static struct bearer bearers[2 * MOTE_MAX_MCP_SERVERS];
static struct fe_oauth_tok tok;
static const struct mote_port *tick_port;
static bool ticking;
static uint32_t tick_ms = FE_OAUTH_TICK_MS;

/* Brings server k's token up to date (its file read again: a new login
 * meanwhile is taken; renewed when it expires within `margin` s) into
 * tok. 0, 1 (no login kept), or -1 said (the server goes on with what it
 * had). */
static int fresh(const struct mote_port *p, const struct mote_mcp *m, unsigned k,
                 const char *state_dir, const char *ca_file, int64_t margin, bool quiet)
{
    const char *name = m->srv[k].name;
    char err[400], why[500];
    int rc;

    err[0] = why[0] = '\0';
    if ((rc = oa_load(state_dir, name, &tok, err, sizeof(err))) <= 0) {
        if (rc == 0)
            return 1;
        snprintf(why, sizeof(why), "%s", err);
    } else if (strcmp(tok.url, m->srv[k].url) != 0) {
        snprintf(why, sizeof(why), "the login kept is for another address: log in again (mote "
                                   "mcp login %s)", name);
    } else if (tok.expires_at == 0 || tok.expires_at > (int64_t)time(NULL) + margin) {
        return 0;
    } else if (!tok.cc && tok.refresh[0] == '\0') {
        snprintf(why, sizeof(why), "the login has expired: mote mcp login %s", name);
    } else if (renew(p, &tok, ca_file, err, sizeof(err)) < 0 ||
               oa_save(state_dir, name, &tok, err, sizeof(err)) < 0) {
        snprintf(why, sizeof(why), "the token could not be renewed (%.300s): mote mcp login %s",
                 err, name);
    } else {
        return 0;
    }
    if (!quiet)
        fprintf(stderr, "mote: mcp %s: %s\n", name, why);
    return -1;
}

/* Server k's "oauth" of the configuration, read with every variable it
 * takes out of the environment (a tool never sees a client's secret or
 * an ID token): 0, or -1 said (a variable not set, a bad member). */
static int read_conf(const struct mote_mcp *m, unsigned k, const char *mcp_config,
                     struct fe_oauth_srv *srv)
{
    char err[400];
    int rc;

    if (mcp_config == NULL)
        return -1;
    oa_scrub = true;
    oa_lookup = mcpconf_secret; /* (a variable the headers or the URL took already) */
    rc = fe_oauth_read_conf(mcp_config, m->srv[k].name, srv, err, sizeof(err));
    oa_scrub = false;
    if (rc < 0)
        fprintf(stderr, "mote: %s\n", err);
    return rc;
}

void fe_oauth_attach(const struct mote_port *p, struct mote_mcp *m, struct mote_mcp_conf *cf,
                     const char *state_dir, const char *ca_file, const char *mcp_config)
{
    static struct fe_oauth_srv srv;
    unsigned k, b;

    tick_port = p;
    for (b = 0; b < sizeof(bearers) / sizeof(bearers[0]); b++) {
        if (bearers[b].cf == cf)
            bearers[b].cf = NULL; /* (its servers are being replaced) */
    }
    for (k = 0; k < m->n && k < MOTE_MAX_MCP_SERVERS; k++) {
        const char **hv = cf->headers[k];
        struct bearer *e = NULL;
        bool conf;
        int h, rc;

        if (m->srv[k].kind != MOTE_MCP_HTTP && m->srv[k].kind != MOTE_MCP_SSE)
            continue;
        for (h = 0; hv[h] != NULL; h++) {
            if (strncasecmp(hv[h], "Authorization:", 14) == 0)
                break;
        }
        if (hv[h] != NULL || h >= MOTE_MCP_CONF_HEADERS)
            continue; /* its own Authorization header wins */
        for (b = 0; b < sizeof(bearers) / sizeof(bearers[0]) && e == NULL; b++) {
            if (bearers[b].cf == NULL)
                e = &bearers[b];
        }
        conf = read_conf(m, k, mcp_config, &srv) == 0 && strcmp(srv.url, m->srv[k].url) == 0;
        if (e == NULL || (rc = fresh(p, m, k, state_dir, ca_file, 30, false)) < 0)
            continue;
        /* no login kept: one that needs no person (client credentials, an
         * ID token) is made now */
        if (rc == 1 && (!conf || !(srv.cc || srv.jag) ||
                        fe_oauth_login(p, &srv, state_dir, NULL, ca_file, NULL, NULL, stderr) != 0 ||
                        fresh(p, m, k, state_dir, ca_file, 30, false) != 0))
            continue;
        e->cf = cf;
        e->m = m;
        e->k = k;
        e->ca_file = ca_file;
        e->expires_at = tok.expires_at;
        snprintf(e->state_dir, sizeof(e->state_dir), "%s", state_dir);
        snprintf(e->line, sizeof(e->line), "Authorization: Bearer %s", tok.access);
        hv[h] = e->line;
        hv[h + 1] = NULL;
    }
    memset(&tok, 0, sizeof(tok));
    memset(&srv, 0, sizeof(srv));
}

static void on_tick(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    int64_t now = (int64_t)time(NULL);
    size_t b;

    (void)t, (void)arg;
    for (b = 0; b < sizeof(bearers) / sizeof(bearers[0]); b++) {
        struct bearer *e = &bearers[b];

        if (e->cf == NULL || e->expires_at == 0 || e->expires_at > now + FE_OAUTH_AHEAD_S)
            continue;
        /* (a failure is said once, and tried again at the next tick: an
         * authorization server's outage ends, a login made meanwhile is
         * read from the file) */
        if (fresh(tick_port, e->m, e->k, e->state_dir, e->ca_file, FE_OAUTH_AHEAD_S, e->said) != 0) {
            e->said = true;
            memset(&tok, 0, sizeof(tok));
            continue;
        }
        e->said = false;
        e->expires_at = tok.expires_at;
        snprintf(e->line, sizeof(e->line), "Authorization: Bearer %s", tok.access);
        memset(&tok, 0, sizeof(tok));
    }
    if (mote_timer_start(loop, tick_ms, on_tick, NULL, 0, NULL) < 0)
        ticking = false;
}

void fe_oauth_tick_start(struct mote_loop *loop)
{
    size_t b;

    tick_ms = (uint32_t)fe_env_ms("MOTE_OAUTH_TICK_MS", FE_OAUTH_TICK_MS); /* (tests) */
    for (b = 0; b < sizeof(bearers) / sizeof(bearers[0]); b++) {
        if (bearers[b].cf != NULL && !ticking)
            ticking = mote_timer_start(loop, tick_ms, on_tick, NULL, 0, NULL) == 0;
    }
}
