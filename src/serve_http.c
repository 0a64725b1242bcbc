/*
 * serve_http.c - the API server's HTTP front door: which endpoint a
 * request's path and method name, the bearer token of TCP clients, and
 * the engine's head and request handlers that send each request to its
 * handler (serve_handlers.c; /mcp to serve_mcp_http.c, the OpenAI
 * endpoints to serve_oai.c). A browser's request from another site is
 * refused first (/mcp has its own, loopback Origin rule); the page
 * (GET /) is the one thing served without the token.
 */
#include <string.h>

#include "mote/mote_sched.h"
#include "serve_int.h"
#include "util.h"

enum route {
    R_NONE = 0,
    R_PAGE,     /* / (the page: no token) */
    R_HEALTH,   /* /v1/health */
    R_LIST,     /* /v1/conversations */
    R_CONV,     /* /v1/conversations/ID */
    R_MESSAGES, /* /v1/conversations/ID/... */
    R_RETRY,
    R_CANCEL,
    R_APPROVAL,
    R_EVENTS,
    R_SCHEDULES, /* /v1/schedules */
    R_SCHEDULE,  /* /v1/schedules/ID */
    R_MCP,        /* /mcp: MCP's Streamable HTTP */
    R_OAI_CHAT,   /* /v1/chat/completions */
    R_OAI_MODELS, /* /v1/models */
    R_METRICS,    /* /v1/metrics */
    R_ELICIT,     /* /v1/conversations/ID/elicitation */
};

/* /v1/schedules[/ID]: the route, the id into `id`. */
static enum route schedule_route(const char *path, char *id)
{
    static const char base[] = "/v1/schedules";
    const char *rest = path + sizeof(base) - 1;
    size_t n;

    if (strncmp(path, base, sizeof(base) - 1) != 0)
        return R_NONE;
    if (rest[0] == '\0' || strcmp(rest, "/") == 0)
        return R_SCHEDULES;
    if (rest[0] != '/')
        return R_NONE;
    n = strlen(++rest);
    if (!mote_sched_id_ok(rest, n))
        return R_NONE;
    memcpy(id, rest, n + 1);
    return R_SCHEDULE;
}

/* The endpoint of `path`; the conversation's id into `id`. */
static enum route route_of(const char *path, char *id)
{
    static const char base[] = "/v1/conversations";
    static const struct {
        const char *suffix;
        enum route r;
    } subs[] = {{"", R_CONV},           {"/messages", R_MESSAGES}, {"/retry", R_RETRY},
                {"/cancel", R_CANCEL}, {"/approval", R_APPROVAL}, {"/events", R_EVENTS},
                {"/elicitation", R_ELICIT}};
    const char *rest, *slash;
    size_t n, i;

    if (strcmp(path, "/v1/health") == 0)
        return R_HEALTH;
    if (strcmp(path, "/") == 0)
        return R_PAGE;
    if (schedule_route(path, id) != R_NONE)
        return schedule_route(path, id);
    if (strcmp(path, "/mcp") == 0)
        return R_MCP;
    if (strcmp(path, "/v1/chat/completions") == 0)
        return R_OAI_CHAT;
    if (strcmp(path, "/v1/models") == 0)
        return R_OAI_MODELS;
    if (strcmp(path, "/v1/metrics") == 0)
        return R_METRICS;
    if (strncmp(path, base, sizeof(base) - 1) != 0)
        return R_NONE;
    rest = path + sizeof(base) - 1;
    if (rest[0] == '\0' || strcmp(rest, "/") == 0)
        return R_LIST;
    if (rest[0] != '/')
        return R_NONE;
    rest++;
    slash = strchr(rest, '/');
    n = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    if (!mote_serve_id_ok(rest, n))
        return R_NONE;
    memcpy(id, rest, n);
    id[n] = '\0';
    rest += n;
    for (i = 0; i < MOTE_ARRAY_LEN(subs); i++) {
        if (strcmp(rest, subs[i].suffix) == 0)
            return subs[i].r;
    }
    return R_NONE;
}

/* The methods a route takes ("Allow" for 405). */
static const char *allow_of(enum route r)
{
    switch (r) {
    case R_HEALTH:
    case R_PAGE: return "GET, HEAD";
    case R_LIST: return "GET, POST";
    case R_CONV: return "GET, DELETE";
    case R_EVENTS: return "GET";
    case R_SCHEDULES: return "GET, HEAD";
    case R_SCHEDULE: return "GET, HEAD, PUT, DELETE";
    case R_OAI_MODELS: return "GET";
    case R_METRICS: return "GET";
    case R_APPROVAL: return "GET, POST";
    case R_ELICIT: return "GET, POST";
    default: return "POST";
    }
}

static bool method_ok(enum route r, enum mote_hreq_method m)
{
    switch (r) {
    case R_HEALTH:
    case R_PAGE: return m == MOTE_HM_GET || m == MOTE_HM_HEAD;
    case R_LIST: return m == MOTE_HM_GET || m == MOTE_HM_POST;
    case R_CONV: return m == MOTE_HM_GET || m == MOTE_HM_DELETE;
    case R_EVENTS: return m == MOTE_HM_GET;
    case R_SCHEDULES: return m == MOTE_HM_GET || m == MOTE_HM_HEAD;
    case R_SCHEDULE:
        return m == MOTE_HM_GET || m == MOTE_HM_HEAD || m == MOTE_HM_PUT || m == MOTE_HM_DELETE;
    case R_OAI_MODELS: return m == MOTE_HM_GET;
    case R_METRICS: return m == MOTE_HM_GET;
    case R_APPROVAL: return m == MOTE_HM_GET || m == MOTE_HM_POST;
    case R_ELICIT: return m == MOTE_HM_GET || m == MOTE_HM_POST;
    default: return m == MOTE_HM_POST;
    }
}

/* Constant-time comparison of "Bearer TOKEN" with the server's token. */
static bool authorized(const struct serve *sv, const struct mote_httpd_conn *c)
{
    const char *h = c->io->req.authorization, *tok = sv->conf.token;
    size_t n, k, i;
    unsigned diff = 0;

    if (c->listener == 0)
        return true; /* the socket's mode is the Unix socket's access control */
    /* the scheme is case-insensitive (RFC 9110 11.1), then 1*SP */
    if (h == NULL || tok == NULL || !mote_ascii_ieq(h, "bearer", 6) || h[6] != ' ')
        return false;
    h += 6;
    while (*h == ' ')
        h++;
    n = strlen(h);
    k = strlen(tok);
    diff = n != k;
    for (i = 0; i < k; i++)
        diff |= (unsigned)(unsigned char)tok[i] ^ (unsigned)(unsigned char)(i < n ? h[i] : 0);
    return diff == 0;
}

void mote_serve_on_head(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    char id[MOTE_CONV_ID_MAX];
    enum route r;

    r = route_of(c->io->req.path, id);
    if (r != R_MCP && !mote_serve_origin_ok(&c->io->req)) {
        /* a page of another site: never reaches an endpoint, whatever
         * token it holds (a defence beside the token) */
        static const char why[] =
            "a page of another site may not use this API (Origin is not this host)";

        if (r == R_OAI_CHAT || r == R_OAI_MODELS)
            mote_serve_oai_error(sv, c, 403, "cross_origin", why, NULL);
        else
            mote_httpd_error(c, 403, "cross_origin", why, NULL);
        return;
    }
    if (r != R_PAGE && !authorized(sv, c)) {
        static const char why[] =
            "send Authorization: Bearer TOKEN (the token file or MOTE_SERVE_TOKEN)";

        /* closed after the answer: one guess per connection; each door in
         * its own format */
        if (r == R_OAI_CHAT || r == R_OAI_MODELS)
            mote_serve_oai_error(sv, c, 401, "unauthorized", why, "WWW-Authenticate: Bearer\r\n");
        else
            mote_httpd_error(c, 401, "unauthorized", why, "WWW-Authenticate: Bearer\r\n");
        return;
    }
    if (r == R_MCP) {
        mote_serve_mcp_http_head(sv, c);
        return;
    }
    if (r == R_NONE) {
        mote_httpd_error(c, 404, "not_found", "no such endpoint (see docs/SERVE.md)", NULL);
        return;
    }
    if (!method_ok(r, c->io->req.method)) {
        char allow[64];
        struct mote_sb sb;

        mote_sb_init(&sb, allow, sizeof(allow));
        mote_sb_s(&sb, "Allow: ");
        mote_sb_s(&sb, allow_of(r));
        mote_sb_s(&sb, "\r\n");
        if (r == R_OAI_CHAT || r == R_OAI_MODELS)
            mote_serve_oai_error(sv, c, c->io->req.method == MOTE_HM_OTHER ? 501 : 405, "method",
                                 "this method is not served here", allow);
        else
            mote_httpd_error(c, c->io->req.method == MOTE_HM_OTHER ? 501 : 405, "method",
                             "this method is not served here", allow);
    }
}

void mote_serve_on_request(void *app, struct mote_httpd_conn *c, const char *body, size_t len)
{
    struct serve *sv = app;
    char id[MOTE_CONV_ID_MAX];
    enum mote_hreq_method m = c->io->req.method;

    sv->met.http_requests++;
    switch (route_of(c->io->req.path, id)) {
    case R_PAGE:
        mote_serve_http_page(sv, c);
        break;
    case R_METRICS:
        mote_serve_http_metrics(sv, c);
        break;
    case R_HEALTH:
        mote_serve_http_health(sv, c);
        break;
    case R_LIST:
        if (m == MOTE_HM_POST)
            mote_serve_http_create(sv, c, body, len);
        else
            mote_serve_http_list(sv, c);
        break;
    case R_CONV:
        if (m == MOTE_HM_DELETE)
            mote_serve_http_delete(sv, c, id);
        else
            mote_serve_http_get(sv, c, id);
        break;
    case R_MESSAGES:
        mote_serve_http_message(sv, c, id, body, len, false);
        break;
    case R_RETRY:
        mote_serve_http_message(sv, c, id, body, len, true);
        break;
    case R_CANCEL:
        mote_serve_http_cancel(sv, c, id);
        break;
    case R_APPROVAL:
        if (m == MOTE_HM_GET)
            mote_serve_http_show(sv, c, id);
        else
            mote_serve_http_approval(sv, c, id, body, len);
        break;
    case R_EVENTS:
        mote_serve_http_events(sv, c, id);
        break;
    case R_ELICIT:
        mote_serve_http_elicit(sv, c, id, body, len);
        break;
    case R_SCHEDULES:
        mote_serve_http_schedules(sv, c, NULL, body, len);
        break;
    case R_SCHEDULE:
        mote_serve_http_schedules(sv, c, id, body, len);
        break;
    case R_MCP:
        mote_serve_mcp_http_request(sv, c, body, len);
        break;
    case R_OAI_CHAT:
        mote_serve_oai_request(sv, c, body, len);
        break;
    case R_OAI_MODELS:
        mote_serve_oai_models(sv, c);
        break;
    default:
        MOTE_ASSERT(0); /* on_head took only requests with a route */
        mote_httpd_error(c, 404, "not_found", "no such endpoint", NULL);
        break;
    }
}
