/* oauth_int.h - what the parts of the MCP servers' login share (oauth.c
 * the login, oauth_tok.c the tokens, oauth_util.c text and documents). */
#ifndef MOTE_FE_OAUTH_INT_H
#define MOTE_FE_OAUTH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oauth.h"

#include "mote/mote_json.h"

#define FE_OAUTH_BODY_MAX (64 * 1024) /* an answer of an authorization server */
#define FE_OAUTH_STEP_MS 15000u       /* the deadline of one exchange */
/* a token request's form: a token or a code percent-encoded (three times
 * its bytes at most), an assertion, the addresses */
#define FE_OAUTH_FORM_MAX (4 * FE_OAUTH_TOKEN_MAX + 8192)

extern char oa_body[FE_OAUTH_BODY_MAX]; /* the answer being read */
extern struct mote_json oa_js;          /* the document parsed */

/* Appending to buf (cap) at *at; false when it does not fit: s as it is,
 * percent-encoded (all but RFC 3986's unreserved), "&name=value" (no '&'
 * at 0), s as a JSON string. */
bool oa_cat(char *buf, size_t cap, size_t *at, const char *s);
bool oa_enc(char *buf, size_t cap, size_t *at, const char *s);
bool oa_param(char *buf, size_t cap, size_t *at, const char *name, const char *v);
bool oa_json_str(char *buf, size_t cap, size_t *at, const char *s);

/* a, b and c joined into out; "" when it does not fit. */
void oa_join3(char *out, size_t cap, const char *a, const char *b, const char *c);

/* scheme://host[:port] of url into out, *path at the rest; the path
 * without query or trailing '/'. */
bool oa_origin(const char *url, char *out, size_t cap, const char **path);
bool oa_path(const char *url, char *out, size_t cap);

/* s with ${NAME} and ${NAME:-default} from the environment; with
 * oa_scrub, a variable taken (but those every process has: PATH, HOME,
 * ...) is then removed from it, its bytes too (a tool never sees it). */
extern bool oa_scrub;
/* Where a variable no longer in the environment is found (NULL: none). */
extern const char *(*oa_lookup)(const char *name);
bool oa_expand(const char *s, char *out, size_t cap, char *err, size_t ecap);

/* Members of the document in oa_js: a string ("" if absent; false when
 * not a string that fits, or one with a control character), an array of
 * strings joined by spaces. */
bool oa_doc_str(const char *key, char *out, size_t cap);
bool oa_doc_list(const char *key, char *out, size_t cap);

/* Whether space-separated `list` holds word w. */
bool oa_has_word(const char *list, const char *w);

/* The deadline of one exchange, ms: FE_OAUTH_STEP_MS, or
 * $MOTE_OAUTH_STEP_MS (a slow link, the tests). */
uint32_t oa_step_ms(void);

/* The token endpoint's request: `form` (at bytes: the grant and its
 * parameters) with the client's authentication; the answer into t. 0 or
 * -1 with err. `form` is wiped. */
int oa_token_request(const struct mote_port *p, struct fe_oauth_tok *t, char *form, size_t cap,
                     size_t at, const char *ca_file, char *err, size_t ecap);

/* The token file of server `name`: written whole (0600), read (1, 0 none,
 * -1 unreadable). */
int oa_save(const char *state_dir, const char *name, const struct fe_oauth_tok *t, char *err,
            size_t ecap);
int oa_load(const char *state_dir, const char *name, struct fe_oauth_tok *t, char *err,
            size_t ecap);

#endif
