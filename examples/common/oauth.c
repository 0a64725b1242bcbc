/*
 * oauth.c - logging in to an MCP server over HTTP as the MCP
 * authorization spec asks (oauth.h):
 *
 *  1. the server's 401 and its WWW-Authenticate (resource_metadata,
 *     scope);
 *  2. its protected resource metadata (RFC 9728): the header's address,
 *     else /.well-known/oauth-protected-resource with the server's path,
 *     then without; its "resource" must name this server;
 *  3. the authorization server's metadata (RFC 8414, OpenID Connect
 *     discovery): with an issuer path, the path-inserted forms first,
 *     then the appended one; without any (the 2025-03-26 spec) the
 *     server's origin and its /authorize, /token and /register;
 *  4. the client: pre-registered ("oauth": client_id), a Client ID
 *     Metadata Document's URL when the server takes those, else dynamic
 *     registration (RFC 7591);
 *  5. the scope: asked for, else the 401's, else every scope the
 *     resource lists, else none; offline_access added when the
 *     authorization server lists it (a refresh token);
 *  6. the authorization code with PKCE (S256) and state, the resource
 *     indicator (RFC 8707) in both requests: the address is printed, the
 *     user opens it anywhere and pastes back where the browser was sent
 *     (a headless device has no browser); or client credentials;
 *  7. the token saved (temp file 0600, fsync, rename, fsync the
 *     directory).
 *
 * Every answer is bounded (FE_OAUTH_BODY_MAX bytes, strict JSON) and
 * every exchange has a deadline. Secrets (tokens, the client secret, the
 * code and its verifier) never reach a message.
 */
#define _GNU_SOURCE
#include "oauth.h"
#include "oauth_int.h"

#include "fetch.h"
#include "readfile.h"
#include "sha256.h"

#include "mote/mote_err.h"
#include "mote/mote_json.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_REDIRECT "http://127.0.0.1:8976/callback"

/* String member `key` of object `obj` (expanded) into out; "" when
 * absent or null. */
static bool conf_str(int obj, const char *key, char *out, size_t cap, const char *server,
                     char *err, size_t ecap)
{
    int t = obj >= 0 ? mote_json_member(&oa_js, obj, key) : -1;
    char raw[2048], why[160];

    out[0] = '\0';
    if (t < 0 || mote_json_is_null(&oa_js, t))
        return true;
    if (mote_json_type_of(&oa_js, t) != MOTE_JSON_STRING ||
        mote_json_cstr(&oa_js, t, raw, sizeof(raw)) < 0) {
        snprintf(err, ecap, "server '%s': \"%s\" must be a string", server, key);
        return false;
    }
    if (!oa_expand(raw, out, cap, why, sizeof(why))) {
        snprintf(err, ecap, "server '%s': \"%s\": %s", server, key, why);
        return false;
    }
    return true;
}

int fe_oauth_read_conf(const char *path, const char *name, struct fe_oauth_srv *s, char *err,
                       size_t cap)
{
    char *text = oa_body; /* (free until the login's first exchange) */
    size_t n;
    int rc = fe_read_file(path, text, sizeof(oa_body), &n), servers, def, oa, t;
    char grant[64];

    memset(s, 0, sizeof(*s));
    if (rc < 0) {
        snprintf(err, cap, "cannot read --mcp-config %s: %s", path, fe_read_why(rc));
        return -1;
    }
    if (mote_json_parse_object(&oa_js, text, n, err, cap) < 0 ||
        mote_json_strict(&oa_js, 0, MOTE_JSON_NO_NUL, err, cap) < 0)
        return -1;
    servers = mote_json_member(&oa_js, 0, "mcpServers");
    def = servers >= 0 && mote_json_type_of(&oa_js, servers) == MOTE_JSON_OBJECT
              ? mote_json_member(&oa_js, servers, name)
              : -1;
    if (def < 0 || mote_json_type_of(&oa_js, def) != MOTE_JSON_OBJECT) {
        snprintf(err, cap, "--mcp-config %s has no server '%s'", path, name);
        return -1;
    }
    snprintf(s->name, sizeof(s->name), "%s", name);
    if (!conf_str(def, "url", s->url, sizeof(s->url), name, err, cap))
        return -1;
    if (s->url[0] == '\0') {
        snprintf(err, cap, "server '%s' is not over HTTP (no \"url\"): only those log in", name);
        return -1;
    }
    oa = mote_json_member(&oa_js, def, "oauth");
    if (oa >= 0 && !mote_json_is_null(&oa_js, oa) && mote_json_type_of(&oa_js, oa) != MOTE_JSON_OBJECT) {
        snprintf(err, cap, "server '%s': \"oauth\" must be an object", name);
        return -1;
    }
    if (oa >= 0 && mote_json_is_null(&oa_js, oa))
        oa = -1;
    if (!conf_str(oa, "client_id", s->client_id, sizeof(s->client_id), name, err, cap) ||
        !conf_str(oa, "client_secret", s->client_secret, sizeof(s->client_secret), name, err,
                  cap) ||
        !conf_str(oa, "client_metadata_url", s->metadata_url, sizeof(s->metadata_url), name, err,
                  cap) ||
        !conf_str(oa, "scope", s->scope, sizeof(s->scope), name, err, cap) ||
        !conf_str(oa, "redirect_uri", s->redirect, sizeof(s->redirect), name, err, cap) ||
        !conf_str(oa, "private_key_file", s->key_file, sizeof(s->key_file), name, err, cap) ||
        !conf_str(oa, "idp_token_endpoint", s->idp_token_ep, sizeof(s->idp_token_ep), name, err,
                  cap) ||
        !conf_str(oa, "idp_client_id", s->idp_client_id, sizeof(s->idp_client_id), name, err,
                  cap) ||
        !conf_str(oa, "id_token", s->id_token, sizeof(s->id_token), name, err, cap) ||
        !conf_str(oa, "grant", grant, sizeof(grant), name, err, cap))
        return -1;
    if (strcmp(grant, "client_credentials") == 0) {
        s->cc = true;
    } else if (strcmp(grant, "id_jag") == 0) {
        s->jag = true;
    } else if (grant[0] != '\0' && strcmp(grant, "authorization_code") != 0) {
        snprintf(err, cap, "server '%s': \"grant\" must be \"authorization_code\", "
                           "\"client_credentials\" or \"id_jag\"", name);
        return -1;
    }
    if (s->jag && (s->client_id[0] == '\0' || s->idp_token_ep[0] == '\0' ||
                   s->id_token[0] == '\0' || strncmp(s->idp_token_ep, "http", 4) != 0)) {
        snprintf(err, cap, "server '%s': \"id_jag\" needs \"client_id\", \"idp_token_endpoint\" "
                           "(an http(s) address) and \"id_token\" in \"oauth\"", name);
        return -1;
    }
    if (s->cc && (s->client_id[0] == '\0' ||
                  (s->client_secret[0] == '\0' && s->key_file[0] == '\0'))) {
        snprintf(err, cap, "server '%s': client credentials need \"client_id\" and "
                           "\"client_secret\" (or \"private_key_file\") in \"oauth\"", name);
        return -1;
    }
    if (s->redirect[0] == '\0')
        snprintf(s->redirect, sizeof(s->redirect), "%s", DEFAULT_REDIRECT);
    for (t = 0; s->url[t] != '\0'; t++) {
        if ((unsigned char)s->url[t] <= 0x20 || (unsigned char)s->url[t] >= 0x7f) {
            snprintf(err, cap, "server '%s': \"url\" must be http[s]://host[:port][/path]", name);
            return -1;
        }
    }
    return 0;
}

/* ---- the exchanges ---- */

struct login {
    const struct mote_port *p;
    const struct fe_oauth_srv *s;
    const char *ca_file;
    FILE *msg;
    char www[512];                       /* the 401's WWW-Authenticate */
    char prm_scopes[512];                /* the resource's scopes_supported */
    char resource[FE_OAUTH_URL_MAX];
    char issuer[FE_OAUTH_URL_MAX];
    char as_issuer[FE_OAUTH_URL_MAX];    /* the metadata's "issuer" ("" if none) */
    bool legacy;                         /* no resource metadata: the 2025-03-26 way */
    char auth_ep[FE_OAUTH_URL_MAX], token_ep[FE_OAUTH_URL_MAX], reg_ep[FE_OAUTH_URL_MAX];
    char as_scopes[512];
    bool cimd, auth_basic, auth_post, auth_none, s256, no_methods;
    struct fe_oauth_tok tok;
};

static void say(struct login *l, const char *what)
{
    fprintf(l->msg, "mote: mcp %s: %s\n", l->s->name, what);
}

/* One request; `f` gets body/cap here. 0, or 1 said. */
static int ask(struct login *l, struct fe_fetch *f, const char *what)
{
    char line[500];

    f->ca_file = l->ca_file;
    if (f->timeout_ms == 0)
        f->timeout_ms = oa_step_ms();
    if (fe_fetch(l->p, f) < 0) {
        snprintf(line, sizeof(line), "%s: %s", what, f->err);
        say(l, line);
        return 1;
    }
    return 0;
}

/* GETs a metadata document: 1 when it is a JSON object (in oa_js), 0 when
 * the server has none there (any other answer), -1 said (the exchange
 * failed: an unreachable or hostile server). */
static int get_doc(struct login *l, const char *url, const char *what)
{
    static const char *const hdr[] = {"Accept: application/json", "MCP-Protocol-Version: 2025-11-25",
                                      NULL};
    struct fe_fetch f;
    char line[500];

    fe_fetch_init(&f, "GET", url, hdr, NULL, 0, oa_body, sizeof(oa_body));
    if (ask(l, &f, what) != 0)
        return -1;
    if (f.status != 200)
        return 0;
    if (mote_json_parse_object(&oa_js, f.out, f.len, line, sizeof(line)) < 0 ||
        mote_json_strict(&oa_js, 0, MOTE_JSON_NO_NUL, line, sizeof(line)) < 0) {
        char m[700];

        snprintf(m, sizeof(m), "%s at %.300s is not a JSON object (%.200s)", what, url, line);
        say(l, m);
        return -1;
    }
    return 1;
}


/* An address credentials may go to: https, or http on this machine
 * (OAuth 2.1 1.5: loopback redirects and tests). */
static bool http_url(const char *u)
{
    const char *x, *h;
    char o[FE_OAUTH_URL_MAX];

    if (!oa_origin(u, o, sizeof(o), &x))
        return false;
    if (strncmp(o, "https://", 8) == 0)
        return true;
    h = o + 7; /* (after "http://") */
    {
        static const char *const loop[] = {"127.0.0.1", "localhost", "[::1]"};
        size_t i, n;

        for (i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
            n = strlen(loop[i]);
            if (strncmp(h, loop[i], n) == 0 && (h[n] == '\0' || h[n] == ':'))
                return true;
        }
    }
    return false;
}

/* 1: the 401 (or 403) and its header; 2: the server needs no login;
 * -1 said. A server may take initialize without a token and want one
 * from the next request on: then tools/list asks too. */
static int probe(struct login *l)
{
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"mote\",\"version\":"
        "\"login\"}}}";
    static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
    char sess[300];
    const char *hdr[5] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream",
                          "MCP-Protocol-Version: 2025-11-25", NULL, NULL};
    struct fe_fetch f;
    char line[300];
    int i;

    for (i = 0; i < 2; i++) {
        fe_fetch_init(&f, "POST", l->s->url, hdr, i == 0 ? init : list,
                      i == 0 ? sizeof(init) - 1 : sizeof(list) - 1, oa_body, sizeof(oa_body));
        if (ask(l, &f, "the server") != 0)
            return -1;
        if (f.status == 401 || f.status == 403) {
            snprintf(l->www, sizeof(l->www), "%s", f.www_auth);
            return 1;
        }
        if (f.status < 200 || f.status >= 300) {
            snprintf(line, sizeof(line), "the server answered HTTP %d (not 401): not a login",
                     f.status);
            say(l, line);
            return -1;
        }
        if (i == 0 && f.session[0] != '\0') {
            snprintf(sess, sizeof(sess), "Mcp-Session-Id: %s", f.session);
            hdr[3] = sess;
        }
    }
    return 2;
}

/* The protected resource's metadata: 0 found (or none: the 2025-03-26
 * way), -1 said. */
static int find_resource(struct login *l)
{
    char cand[3][FE_OAUTH_URL_MAX], origin[FE_OAUTH_URL_MAX], path[FE_OAUTH_URL_MAX];
    const char *x;
    int n = 0, i, rc;

    if (!oa_origin(l->s->url, origin, sizeof(origin), &x) ||
        !oa_path(l->s->url, path, sizeof(path))) {
        say(l, "the server's \"url\" is not an http(s) address");
        return -1;
    }
    if (fe_oauth_param(l->www, "resource_metadata", cand[n], sizeof(cand[n])) > 0) {
        if (!http_url(cand[n])) {
            say(l, "the server's resource_metadata is not an https address (or http on this "
                   "machine)");
            return -1;
        }
        n++;
    }
    if (path[0] != '\0')
        oa_join3(cand[n++], sizeof(cand[0]), origin, "/.well-known/oauth-protected-resource", path);
    oa_join3(cand[n++], sizeof(cand[0]), origin, "/.well-known/oauth-protected-resource", "");
    for (i = 0; i < n; i++) {
        int as;
        char line[800];

        if ((rc = get_doc(l, cand[i], "the protected resource metadata")) < 0)
            return -1;
        if (rc == 0)
            continue;
        as = mote_json_member(&oa_js, 0, "authorization_servers");
        if (mote_json_type_of(&oa_js, as) != MOTE_JSON_ARRAY || oa_js.tok[as].size < 1 ||
            mote_json_type_of(&oa_js, mote_json_elem(&oa_js, as, 0)) != MOTE_JSON_STRING ||
            mote_json_cstr(&oa_js, mote_json_elem(&oa_js, as, 0), l->issuer, sizeof(l->issuer)) < 0 ||
            !http_url(l->issuer) || !oa_doc_str("resource", l->resource, sizeof(l->resource)) ||
            !oa_doc_list("scopes_supported", l->prm_scopes, sizeof(l->prm_scopes))) {
            snprintf(line, sizeof(line),
                     "the protected resource metadata at %.300s has no authorization server "
                     "(or a malformed member)", cand[i]);
            say(l, line);
            return -1;
        }
        if (l->resource[0] != '\0' && !fe_oauth_resource_ok(l->resource, l->s->url)) {
            snprintf(line, sizeof(line),
                     "the protected resource metadata is for %.250s, not for this server: "
                     "refused (its tokens would go to another resource)", l->resource);
            say(l, line);
            return -1;
        }
        if (l->resource[0] == '\0')
            snprintf(l->resource, sizeof(l->resource), "%s", l->s->url);
        return 0;
    }
    /* no metadata: the authorization server is the MCP server's origin */
    snprintf(l->issuer, sizeof(l->issuer), "%s", origin);
    l->legacy = true;
    snprintf(l->resource, sizeof(l->resource), "%s", l->s->url);
    return 0;
}

/* Whether two issuer identifiers are one (a trailing '/' aside). */
static bool same_issuer(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);

    while (na > 0 && a[na - 1] == '/')
        na--;
    while (nb > 0 && b[nb - 1] == '/')
        nb--;
    return na == nb && strncmp(a, b, na) == 0;
}

/* The authorization server's metadata, or its 2025-03-26 defaults. */
static int find_server(struct login *l)
{
    char cand[3][FE_OAUTH_URL_MAX], origin[FE_OAUTH_URL_MAX], path[FE_OAUTH_URL_MAX];
    char methods[512], pkce[256];
    const char *x;
    int n = 0, i, rc;
    bool cimd = false;

    if (!oa_origin(l->issuer, origin, sizeof(origin), &x) ||
        !oa_path(l->issuer, path, sizeof(path))) {
        say(l, "the authorization server's address is not an http(s) address");
        return -1;
    }
    if (path[0] != '\0') {
        oa_join3(cand[n++], sizeof(cand[0]), origin, "/.well-known/oauth-authorization-server", path);
        oa_join3(cand[n++], sizeof(cand[0]), origin, "/.well-known/openid-configuration", path);
        oa_join3(cand[n++], sizeof(cand[0]), origin, path, "/.well-known/openid-configuration");
    } else {
        oa_join3(cand[n++], sizeof(cand[0]), origin, "/.well-known/oauth-authorization-server", "");
        oa_join3(cand[n++], sizeof(cand[0]), origin, "/.well-known/openid-configuration", "");
    }
    for (i = 0; i < n; i++) {
        int t;

        if ((rc = get_doc(l, cand[i], "the authorization server metadata")) < 0)
            return -1;
        if (rc == 0)
            continue;
        if (!oa_doc_str("authorization_endpoint", l->auth_ep, sizeof(l->auth_ep)) ||
            !oa_doc_str("token_endpoint", l->token_ep, sizeof(l->token_ep)) ||
            !oa_doc_str("registration_endpoint", l->reg_ep, sizeof(l->reg_ep)) ||
            !oa_doc_str("issuer", l->as_issuer, sizeof(l->as_issuer)) ||
            !oa_doc_list("scopes_supported", l->as_scopes, sizeof(l->as_scopes)) ||
            !oa_doc_list("token_endpoint_auth_methods_supported", methods, sizeof(methods)) ||
            !oa_doc_list("code_challenge_methods_supported", pkce, sizeof(pkce)) ||
            !http_url(l->token_ep) || (l->auth_ep[0] != '\0' && !http_url(l->auth_ep)) ||
            (l->reg_ep[0] != '\0' && !http_url(l->reg_ep))) {
            say(l, "the authorization server metadata lacks a token_endpoint (or has a "
                   "malformed member)");
            return -1;
        }
        if (l->as_issuer[0] != '\0' && !l->legacy && !same_issuer(l->as_issuer, l->issuer)) {
            char m[800];

            snprintf(m, sizeof(m), "the authorization server metadata names the issuer %.250s, "
                                   "not %.250s: refused (RFC 8414 3.3)", l->as_issuer, l->issuer);
            say(l, m);
            return -1;
        }
        if (l->legacy && l->as_issuer[0] != '\0' && oa_origin(l->as_issuer, origin, sizeof(origin), &x) &&
            same_issuer(origin, l->issuer))
            snprintf(l->issuer, sizeof(l->issuer), "%s", l->as_issuer); /* (the 2025-03-26 way:
                                                                        * the origin's own word) */
        t = mote_json_member(&oa_js, 0, "client_id_metadata_document_supported");
        if (t >= 0 && mote_json_bool(&oa_js, t, &cimd) < 0)
            cimd = false;
        l->cimd = cimd;
        l->no_methods = methods[0] == '\0';
        l->auth_basic = l->no_methods || oa_has_word(methods, "client_secret_basic");
        l->auth_post = oa_has_word(methods, "client_secret_post");
        l->auth_none = oa_has_word(methods, "none");
        if (!oa_has_word(pkce, "S256")) {
            say(l, "the authorization server does not say it supports PKCE with S256: refused "
                   "(the MCP authorization spec requires it)");
            return -1;
        }
        return 0;
    }
    oa_join3(l->auth_ep, sizeof(l->auth_ep), origin, "/authorize", "");
    oa_join3(l->token_ep, sizeof(l->token_ep), origin, "/token", "");
    oa_join3(l->reg_ep, sizeof(l->reg_ep), origin, "/register", "");
    l->auth_basic = l->no_methods = l->auth_none = true;
    return 0;
}

/* The client: its id (and secret) and how it authenticates. */
static int find_client(struct login *l)
{
    struct fe_oauth_tok *t = &l->tok;
    const struct fe_oauth_srv *s = l->s;
    static char req[4096];
    size_t at = 0;
    struct fe_fetch f;
    static const char *const hdr[] = {"Content-Type: application/json",
                                      "Accept: application/json", NULL};
    char method[64], line[300];

    if (s->client_id[0] != '\0') {
        snprintf(t->client_id, sizeof(t->client_id), "%s", s->client_id);
        snprintf(t->client_secret, sizeof(t->client_secret), "%s", s->client_secret);
    } else if (l->cimd && s->metadata_url[0] != '\0') {
        snprintf(t->client_id, sizeof(t->client_id), "%s", s->metadata_url);
    } else {
        if (l->reg_ep[0] == '\0') {
            say(l, "the authorization server offers no registration: give a pre-registered "
                   "\"client_id\" in this server's \"oauth\"");
            return -1;
        }
        if (!oa_cat(req, sizeof(req), &at, "{\"client_name\":\"mote\",\"redirect_uris\":[") ||
            !oa_json_str(req, sizeof(req), &at, s->redirect) ||
            !oa_cat(req, sizeof(req), &at,
                 "],\"grant_types\":[\"authorization_code\",\"refresh_token\"],"
                 "\"response_types\":[\"code\"],\"token_endpoint_auth_method\":") ||
            !oa_cat(req, sizeof(req), &at,
                 l->auth_none || !(l->auth_basic || l->auth_post)
                     ? "\"none\""
                     : l->auth_basic ? "\"client_secret_basic\"" : "\"client_secret_post\"") ||
            (l->tok.scope[0] != '\0' && (!oa_cat(req, sizeof(req), &at, ",\"scope\":") ||
                                         !oa_json_str(req, sizeof(req), &at, l->tok.scope))) ||
            !oa_cat(req, sizeof(req), &at, "}")) {
            say(l, "the registration request is too long");
            return -1;
        }
        fe_fetch_init(&f, "POST", l->reg_ep, hdr, req, at, oa_body, sizeof(oa_body));
        if (ask(l, &f, "the registration") != 0)
            return -1;
        if (f.status != 200 && f.status != 201) {
            snprintf(line, sizeof(line), "the authorization server refused the registration "
                                         "(HTTP %d)", f.status);
            say(l, line);
            return -1;
        }
        if (mote_json_parse_object(&oa_js, f.out, f.len, line, sizeof(line)) < 0 ||
            !oa_doc_str("client_id", t->client_id, sizeof(t->client_id)) || t->client_id[0] == '\0' ||
            !oa_doc_str("client_secret", t->client_secret, sizeof(t->client_secret)) ||
            !oa_doc_str("token_endpoint_auth_method", method, sizeof(method))) {
            say(l, "the registration's answer has no client_id");
            return -1;
        }
        if (strcmp(method, "client_secret_post") == 0)
            t->auth = FE_AUTH_POST;
        else if (strcmp(method, "client_secret_basic") == 0)
            t->auth = FE_AUTH_BASIC;
        else if (strcmp(method, "none") == 0)
            t->auth = FE_AUTH_NONE, t->client_secret[0] = '\0';
        else
            t->auth = t->client_secret[0] == '\0' ? FE_AUTH_NONE
                      : l->auth_basic             ? FE_AUTH_BASIC
                                                  : FE_AUTH_POST;
        return 0;
    }
    t->auth = t->client_secret[0] == '\0' ? FE_AUTH_NONE
              : l->auth_basic             ? FE_AUTH_BASIC
              : l->auth_post              ? FE_AUTH_POST
                                          : FE_AUTH_BASIC;
    return 0;
}

/* The scope to ask for (into tok.scope). */
static void pick_scope(struct login *l, const char *asked)
{
    char *sc = l->tok.scope;
    size_t at;

    sc[0] = '\0';
    if (asked != NULL && asked[0] != '\0')
        snprintf(sc, sizeof(l->tok.scope), "%s", asked);
    else if (l->s->scope[0] != '\0')
        snprintf(sc, sizeof(l->tok.scope), "%s", l->s->scope);
    else if (fe_oauth_param(l->www, "scope", sc, sizeof(l->tok.scope)) > 0)
        ;
    else
        snprintf(sc, sizeof(l->tok.scope), "%s", l->prm_scopes);
    at = strlen(sc);
    if (!l->s->cc && !l->s->jag && oa_has_word(l->as_scopes, "offline_access") && !oa_has_word(sc, "offline_access"))
        (void)((at == 0 || oa_cat(sc, sizeof(l->tok.scope), &at, " ")) &&
               oa_cat(sc, sizeof(l->tok.scope), &at, "offline_access"));
}

/* The token endpoint's request: `form` (grant and its parameters) with
 * the client's authentication; the answer into tok. */

/* ---- the login ---- */

static int authorize(struct login *l, FILE *in, FILE *out, char *form, size_t cap, size_t *at)
{
    static char url[8192];
    uint8_t raw[32];
    char verifier[64], challenge[64], state[32], line[8192], code[2048], got[128];
    size_t u = 0;
    int i;

    if (l->p->random(l->p->ctx, raw, sizeof(raw)) < 0 ||
        fe_b64url(raw, 32, verifier, sizeof(verifier)) < 0) {
        say(l, "no random bytes for PKCE");
        return -1;
    }
    fe_sha256(verifier, strlen(verifier), raw);
    (void)fe_b64url(raw, 32, challenge, sizeof(challenge));
    if (l->p->random(l->p->ctx, raw, 16) < 0) {
        say(l, "no random bytes for the state");
        return -1;
    }
    (void)fe_b64url(raw, 16, state, sizeof(state));
    if (!oa_cat(url, sizeof(url), &u, l->auth_ep) ||
        !oa_cat(url, sizeof(url), &u, strchr(l->auth_ep, '?') != NULL ? "&" : "?")) {
        say(l, "the authorization address is too long");
        return -1;
    }
    {
        size_t q = 0;
        char *qs = url + u;
        size_t qcap = sizeof(url) - u;

        if (!oa_param(qs, qcap, &q, "response_type", "code") ||
            !oa_param(qs, qcap, &q, "client_id", l->tok.client_id) ||
            !oa_param(qs, qcap, &q, "redirect_uri", l->s->redirect) ||
            !oa_param(qs, qcap, &q, "code_challenge", challenge) ||
            !oa_param(qs, qcap, &q, "code_challenge_method", "S256") ||
            !oa_param(qs, qcap, &q, "state", state) ||
            !oa_param(qs, qcap, &q, "resource", l->resource) ||
            (l->tok.scope[0] != '\0' && !oa_param(qs, qcap, &q, "scope", l->tok.scope))) {
            say(l, "the authorization address is too long");
            return -1;
        }
    }
    fprintf(l->msg,
            "mote: mcp %s: open this address in a browser and log in; then paste here the "
            "address the browser was sent to (it starts with %s):\n",
            l->s->name, l->s->redirect);
    fprintf(out, "%s\n", url);
    fflush(out);
    fflush(l->msg);
    if (fgets(line, sizeof(line), in) == NULL) {
        say(l, "nothing was pasted: not logged in");
        return -1;
    }
    line[strcspn(line, "\r\n")] = '\0';
    for (i = 0; line[i] == ' ' || line[i] == '\t'; i++) {
    }
    memmove(line, line + i, strlen(line + i) + 1);
    if (strchr(line, '?') != NULL) {
        if (fe_oauth_query(line, "error", got, sizeof(got)) >= 0) {
            char m[300];

            snprintf(m, sizeof(m), "the authorization server said: %s", got);
            say(l, m);
            return -1;
        }
        if (fe_oauth_query(line, "state", got, sizeof(got)) < 0 || strcmp(got, state) != 0) {
            say(l, "the pasted address's state is not this login's: refused (an old or "
                   "forged redirect)");
            return -1;
        }
        if (fe_oauth_query(line, "code", code, sizeof(code)) <= 0) {
            say(l, "the pasted address has no code");
            return -1;
        }
    } else {
        if (strlen(line) >= sizeof(code)) {
            say(l, "the pasted code is too long");
            return -1;
        }
        memcpy(code, line, strlen(line) + 1);
        for (i = 0; code[i] != '\0'; i++) {
            if ((unsigned char)code[i] <= 0x20 || (unsigned char)code[i] >= 0x7f)
                break;
        }
        if (code[0] == '\0' || code[i] != '\0') {
            say(l, "paste the whole address the browser was sent to");
            return -1;
        }
    }
    if (!oa_param(form, cap, at, "grant_type", "authorization_code") ||
        !oa_param(form, cap, at, "code", code) ||
        !oa_param(form, cap, at, "redirect_uri", l->s->redirect) ||
        !oa_param(form, cap, at, "code_verifier", verifier) ||
        !oa_param(form, cap, at, "resource", l->resource)) {
        say(l, "the token request is too long");
        return -1;
    }
    memset(code, 0, sizeof(code));
    memset(verifier, 0, sizeof(verifier));
    return 0;
}

/* SEP-990 (enterprise-managed authorization): the user's ID token is
 * exchanged at the enterprise's identity provider (RFC 8693) for an
 * identity assertion grant (ID-JAG) naming this authorization server and
 * resource, which the authorization server takes as a JWT bearer grant
 * (RFC 7523 2.1). Into the form; 0 or -1 said. */
static int id_jag(struct login *l, char *form, size_t cap, size_t *at)
{
    static const char *const hdr[] = {"Content-Type: application/x-www-form-urlencoded",
                                      "Accept: application/json", NULL};
    static char req[FE_OAUTH_FORM_MAX], grant[FE_OAUTH_TOKEN_MAX];
    const struct fe_oauth_srv *s = l->s;
    struct fe_fetch f;
    char type[96], line[300];
    size_t n = 0;
    int rc;

    if (!oa_param(req, sizeof(req), &n, "grant_type",
                  "urn:ietf:params:oauth:grant-type:token-exchange") ||
        !oa_param(req, sizeof(req), &n, "requested_token_type",
                  "urn:ietf:params:oauth:token-type:id-jag") ||
        !oa_param(req, sizeof(req), &n, "audience",
                  l->issuer) ||
        !oa_param(req, sizeof(req), &n, "resource", l->resource) ||
        (l->tok.scope[0] != '\0' && !oa_param(req, sizeof(req), &n, "scope", l->tok.scope)) ||
        !oa_param(req, sizeof(req), &n, "subject_token", s->id_token) ||
        !oa_param(req, sizeof(req), &n, "subject_token_type",
                  "urn:ietf:params:oauth:token-type:id_token") ||
        (s->idp_client_id[0] != '\0' &&
         !oa_param(req, sizeof(req), &n, "client_id", s->idp_client_id))) {
        say(l, "the token exchange request is too long");
        return -1;
    }
    fe_fetch_init(&f, "POST", s->idp_token_ep, hdr, req, n, oa_body, sizeof(oa_body));
    rc = ask(l, &f, "the identity provider's token exchange");
    memset(req, 0, sizeof(req));
    if (rc != 0)
        return -1;
    if (f.status != 200 || mote_json_parse_object(&oa_js, f.out, f.len, NULL, 0) < 0 ||
        !oa_doc_str("access_token", grant, sizeof(grant)) || grant[0] == '\0' ||
        !oa_doc_str("issued_token_type", type, sizeof(type)) ||
        strcmp(type, "urn:ietf:params:oauth:token-type:id-jag") != 0) {
        memset(oa_body, 0, f.len);
        snprintf(line, sizeof(line), "the identity provider did not give an identity assertion "
                                     "grant (HTTP %d)", f.status);
        say(l, line);
        return -1;
    }
    memset(oa_body, 0, f.len);
    if (!oa_param(form, cap, at, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") ||
        !oa_param(form, cap, at, "assertion", grant) ||
        (l->tok.scope[0] != '\0' && !oa_param(form, cap, at, "scope", l->tok.scope)) ||
        !oa_param(form, cap, at, "resource", l->resource)) {
        memset(grant, 0, sizeof(grant));
        say(l, "the token request is too long");
        return -1;
    }
    memset(grant, 0, sizeof(grant));
    return 0;
}

int fe_oauth_login(const struct mote_port *p, const struct fe_oauth_srv *s, const char *state_dir,
                   const char *scope, const char *ca_file, FILE *in, FILE *out, FILE *msg)
{
    static struct login l;
    static char form[FE_OAUTH_FORM_MAX];
    size_t at = 0;
    char err[600];
    int rc;

    memset(&l, 0, sizeof(l));
    l.p = p;
    l.s = s;
    l.ca_file = ca_file;
    l.msg = msg;
    if ((rc = probe(&l)) < 0)
        return 1;
    if (rc == 2 && !s->cc && !s->jag) {
        say(&l, "the server answers without a login: nothing to do");
        return 0;
    }
    if (find_resource(&l) < 0 || find_server(&l) < 0)
        return 1;
    pick_scope(&l, scope);
    snprintf(l.tok.url, sizeof(l.tok.url), "%s", s->url);
    snprintf(l.tok.token_ep, sizeof(l.tok.token_ep), "%s", l.token_ep);
    snprintf(l.tok.resource, sizeof(l.tok.resource), "%s", l.resource);
    l.tok.cc = s->cc;
    if (s->jag) {
        snprintf(l.tok.client_id, sizeof(l.tok.client_id), "%s", s->client_id);
        snprintf(l.tok.client_secret, sizeof(l.tok.client_secret), "%s", s->client_secret);
        l.tok.auth = s->client_secret[0] == '\0' ? FE_AUTH_NONE
                     : l.auth_basic               ? FE_AUTH_BASIC
                                                  : FE_AUTH_POST;
        if (id_jag(&l, form, sizeof(form), &at) < 0)
            return 1;
    } else if (s->cc) {
        snprintf(l.tok.client_id, sizeof(l.tok.client_id), "%s", s->client_id);
        snprintf(l.tok.client_secret, sizeof(l.tok.client_secret), "%s", s->client_secret);
        l.tok.auth = s->key_file[0] != '\0' ? FE_AUTH_JWT
                     : l.auth_basic        ? FE_AUTH_BASIC
                                           : FE_AUTH_POST;
        snprintf(l.tok.key_file, sizeof(l.tok.key_file), "%s", s->key_file);
        snprintf(l.tok.audience, sizeof(l.tok.audience), "%s",
                 l.issuer);
        if (!oa_param(form, sizeof(form), &at, "grant_type", "client_credentials") ||
            (l.tok.scope[0] != '\0' && !oa_param(form, sizeof(form), &at, "scope", l.tok.scope)) ||
            !oa_param(form, sizeof(form), &at, "resource", l.resource)) {
            say(&l, "the token request is too long");
            return 1;
        }
    } else {
        if (l.auth_ep[0] == '\0') {
            say(&l, "the authorization server has no authorization_endpoint");
            return 1;
        }
        if (find_client(&l) < 0 || authorize(&l, in, out, form, sizeof(form), &at) < 0)
            return 1;
    }
    if (oa_token_request(p, &l.tok, form, sizeof(form), at, ca_file, err, sizeof(err)) < 0 ||
        oa_save(state_dir, s->name, &l.tok, err, sizeof(err)) < 0) {
        say(&l, err);
        memset(&l.tok, 0, sizeof(l.tok));
        return 1;
    }
    snprintf(err, sizeof(err), "logged in%s%.200s (the token is kept in %.120s/mcp-auth/%s.json)",
             l.tok.scope[0] != '\0' ? "; scope: " : "", l.tok.scope, state_dir, s->name);
    say(&l, err);
    memset(&l.tok, 0, sizeof(l.tok));
    return 0;
}
