/* settings.h - mote serve's settings (settings.c): one table of options
 * that is both the command line and the configuration file's keys, read
 * into a struct serve_set, and what the session is given from it. */
#ifndef MOTE_FE_SETTINGS_H
#define MOTE_FE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "../cli/opts.h"
#include "conf.h"
#include "mote/mote_agent.h"
#include "mote/mote_client.h"
#include "mote/mote_mcp.h"
#include "unatt.h"

#define SET_POLICY_MAX (16 * 1024) /* bytes of a --policy file */
#define SET_SYSTEM_MAX (33 * 1024) /* the system prompt (setup.c's, with its header) */
#define SET_SECRET_MAX 512         /* bytes of a secret read from a file (a key, a password) */

/* One configuration: what the command line and the file give, and what it
 * makes for the session. The one in use and the ones running turns may
 * still use after a reload exist at once (reload.c). */
struct serve_set {
    struct cli_opts o;
    struct unatt_conf unatt;
    const char *config;        /* the file read, or NULL */
    const char *socket_path, *listen_addr, *policy_file, *socket_group;
    const char *mqtt_url, *mqtt_id, *mqtt_prefix, *mqtt_user, *mqtt_pass_file;
    const char *mqtt_cert, *mqtt_key, *mqtt_discovery;
    bool mqtt_approve;         /* approvals over MQTT (default on) */
    bool pass_mcp;             /* --pass-mcp-tools */
    uint32_t stats_ms;         /* PREFIX/stats every this (0: never) */
    const char *api_key_file;
    enum mote_approval approval;
    bool approval_set;
    bool approval_timeout_set;
    uint32_t approval_timeout_ms;
    unsigned nrules;
    struct mote_tool_rule rules[MOTE_SERVE_RULES_MAX];
    /* made by set_make */
    struct mote_llm_conf llm;
    struct mote_conv_conf cconf;
    char key[MOTE_LLM_KEY_MAX + 1];
    char system[SET_SYSTEM_MAX];
    struct mote_policy pol;
    char policy_text[SET_POLICY_MAX];
    char file[CONF_MAX];
};

/* Reads the command line (argv[0] is "serve"): unknown options and
 * missing values are refused now; the values are applied by set_build.
 * Returns 0, or 2 (said on stderr). *help / *version: asked for. */
int set_args(int argc, char **argv, bool *help, bool *version);

/* Builds `s` afresh: the command line, then the configuration file
 * (--config FILE, else CONF_DEFAULT_PATH if it exists), a key the
 * command line also gives left out (a flag wins; repeatable ones add
 * after the command line's). Refusals go to stderr with the file's line.
 * Returns 0 or 2. */
int set_build(struct serve_set *s);

/* What `s` makes for the session: the model (key from --api-key-file,
 * else the one the environment had at start), the system prompt, the
 * policy file, the conversations' settings. `tls`: this build has TLS.
 * Returns 0 or 2 (said on stderr). */
int set_make(struct serve_set *s, bool tls);

/* The settings of `now` that only a start takes, named one by one on
 * stderr where they differ from `before` (a reload keeps the old ones).
 * Returns how many differ. */
int set_start_only(const struct serve_set *before, const struct serve_set *now);

/* A secret from file `path`: its first line (a trailing newline or CR
 * dropped), 1 to cap - 1 visible ASCII bytes, from a regular file that
 * others cannot read. Returns 0, or 2 (said on stderr, `what` naming it). */
int set_secret_file(const char *path, const char *what, char *out, size_t cap);

/* Prints mote serve --help. */
void set_usage(FILE *out);

#endif
