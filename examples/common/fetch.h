/* fetch.h - one HTTP request and its whole answer, blocking, for the
 * frontends' commands that talk to a server outside the loop (an MCP
 * server's authorization: discovery, registration, tokens). */
#ifndef MOTE_FE_FETCH_H
#define MOTE_FE_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_port.h"

struct fe_fetch {
    /* the caller's */
    const char *method;           /* "GET", "POST" */
    const char *url;              /* http[s]://host[:port][/path][?query] */
    const char *const *headers;   /* "Name: value" lines, NULL-terminated; may be NULL */
    const char *body;             /* NULL: none */
    size_t body_len;
    const char *ca_file;          /* NULL: the default roots */
    uint32_t timeout_ms;          /* for the whole exchange */
    char *out;                    /* the answer's body (NUL-terminated) */
    size_t cap;                   /* its size: a longer body is an error */
    /* the answer */
    int status;
    size_t len;
    char www_auth[512];           /* WWW-Authenticate (the first; "" if none) */
    char location[1024];          /* Location ("" if none) */
    char content_type[64];
    char session[256];            /* Mcp-Session-Id ("" if none) */
    char err[300];                /* why it failed: one line, never a header's value */
};

/* Prepares f for a request (everything else zero): the method, the URL,
 * the header lines and the body (NULL: none), and the buffer the answer
 * goes to. */
void fe_fetch_init(struct fe_fetch *f, const char *method, const char *url,
                   const char *const *headers, const char *body, size_t body_len, char *out,
                   size_t cap);

/* Sends the request and reads the answer (any status) into f. Returns 0,
 * or < 0 with f->err: the connection, TLS, the deadline, a body over
 * f->cap (MOTE_ERR_TOO_LARGE), a malformed answer. Proxies come from the
 * environment (https_proxy, http_proxy, no_proxy), as for the model. */
int fe_fetch(const struct mote_port *p, struct fe_fetch *f);

#endif
