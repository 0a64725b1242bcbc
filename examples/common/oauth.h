/* oauth.h - logging in to an MCP server over HTTP (the MCP authorization
 * spec: OAuth 2.1 with PKCE, protected resource and authorization server
 * metadata, client registration), and the tokens it keeps: one file per
 * server in STATE/mcp-auth/, mode 0600, never the journal. */
#ifndef MOTE_FE_OAUTH_H
#define MOTE_FE_OAUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mote/mote_loop.h"
#include "mote/mote_mcp.h"
#include "mote/mote_port.h"

#define FE_OAUTH_URL_MAX 600
#define FE_OAUTH_TOKEN_MAX 4096

/* A server's login settings: its "url" and "oauth" members in the MCP
 * configuration (${VAR} expanded). */
struct fe_oauth_srv {
    char name[32];
    char url[FE_OAUTH_URL_MAX];
    char client_id[FE_OAUTH_URL_MAX];     /* pre-registered ("" : none) */
    char client_secret[512];
    char metadata_url[FE_OAUTH_URL_MAX];  /* a Client ID Metadata Document's URL */
    char scope[512];
    char redirect[256];
    char key_file[FE_OAUTH_URL_MAX];      /* an EC P-256 key: private_key_jwt */
    char idp_token_ep[FE_OAUTH_URL_MAX];  /* "grant": "id_jag": the IdP's token endpoint, */
    char idp_client_id[256];              /*   the client there, */
    char id_token[FE_OAUTH_TOKEN_MAX];    /*   and the user's ID token it exchanges */
    bool cc;                              /* "grant": "client_credentials" */
    bool jag;                             /* "grant": "id_jag" (no person: an ID token) */
};

/* What a login keeps (the token file). */
struct fe_oauth_tok {
    char url[FE_OAUTH_URL_MAX];           /* the server it is for */
    char access[FE_OAUTH_TOKEN_MAX];
    char refresh[FE_OAUTH_TOKEN_MAX];
    char scope[512];
    char token_ep[FE_OAUTH_URL_MAX];
    char client_id[FE_OAUTH_URL_MAX];
    char client_secret[512];
    char resource[FE_OAUTH_URL_MAX];
    char key_file[FE_OAUTH_URL_MAX];      /* private_key_jwt: the key */
    char audience[FE_OAUTH_URL_MAX];      /* ... and the assertion's aud */
    uint8_t auth;                         /* how the client authenticates: FE_AUTH_* */
    bool cc;
    int64_t expires_at;                   /* Unix seconds; 0: not said */
};

enum { FE_AUTH_NONE = 0, FE_AUTH_BASIC, FE_AUTH_POST, FE_AUTH_JWT };

/* Reads server `name` of MCP configuration `path` into s. Returns 0, or
 * -1 with one line in err. */
int fe_oauth_read_conf(const char *path, const char *name, struct fe_oauth_srv *s, char *err,
                       size_t cap);

/* The whole login: discovery, registration, the user's authorization
 * (the address on `out`, the redirect read from `in`; messages on
 * `msg`) or client credentials, the token saved under state_dir.
 * `scope` ("" or NULL: by the rules) asks for these scopes. Returns 0 or
 * 1 (the reason said on msg). */
int fe_oauth_login(const struct mote_port *p, const struct fe_oauth_srv *s, const char *state_dir,
                   const char *scope, const char *ca_file, FILE *in, FILE *out, FILE *msg);

/* Removes server `name`'s token file: 0 (also when there was none) or 1. */
int fe_oauth_logout(const char *state_dir, const char *name, FILE *msg);

/* For each HTTP server of m with a token file for its URL (or, without
 * one, with "grant": "client_credentials" in `mcp_config`: a login
 * first): refreshes an expired token (a refresh token, or client
 * credentials), and adds
 * "Authorization: Bearer ..." to its headers (cf's arrays) unless it has
 * an Authorization header of its own. Problems are said on stderr; the
 * server then goes without (its 401 names the login). */
void fe_oauth_attach(const struct mote_port *p, struct mote_mcp *m, struct mote_mcp_conf *cf,
                     const char *state_dir, const char *ca_file, const char *mcp_config);

/* While the loop runs: every FE_OAUTH_TICK_MS, a token attached that
 * expires within FE_OAUTH_AHEAD_S is renewed (blocking for that
 * exchange: at most FE_OAUTH_STEP_MS) and its servers' next requests
 * carry the new one. Arms nothing when no token is attached. */
#define FE_OAUTH_TICK_MS 30000u
#define FE_OAUTH_AHEAD_S 120
void fe_oauth_tick_start(struct mote_loop *loop);

/* Parts used by the tests. */
int fe_oauth_param(const char *h, const char *name, char *out, size_t cap);
int fe_oauth_query(const char *url, const char *name, char *out, size_t cap);
bool fe_oauth_resource_ok(const char *resource, const char *server_url);

#endif
