/* opts.h - the mote command line (CONTRACT.md, "Command line"). */
#ifndef MOTE_CLI_OPTS_H
#define MOTE_CLI_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_provider { CLI_PROVIDER_NONE, CLI_PROVIDER_ANTHROPIC, CLI_PROVIDER_OPENAI };
enum cli_format { CLI_FORMAT_TEXT, CLI_FORMAT_STREAM_JSON };
/* --tls-sessions: where TLS sessions are kept for resumption (UNSET:
 * MOTE_TLS_SESSIONS, else disk for -p and memory otherwise). */
enum cli_tls_sessions { CLI_TLS_UNSET, CLI_TLS_OFF, CLI_TLS_MEMORY, CLI_TLS_DISK };

#define CLI_DEFAULT_SHUTDOWN_MS 5000
#define CLI_DEFAULT_MAX_TURNS 25
#define CLI_DEFAULT_KEEP 100                 /* finished conversations kept */
#define CLI_DEFAULT_KEEP_BYTES (8ul << 20)   /* ... and their bytes, for small flash */

struct cli_opts {
    const char *prompt;      /* -p; "-" reads stdin; NULL: interactive */
    enum cli_provider provider;
    const char *profile;     /* --provider NAME of a provider's profile (deepseek, ...):
                              * NULL: picked from the base URL's host */
    const char *model;
    const char *base_url;
    const char *ca_file;
    const char *state_dir;
    bool cont;               /* --continue */
    const char *resume;      /* --resume ID */
    const char *mcp_config;
    bool no_tools;
    bool yes;
    unsigned long shutdown_ms;
    unsigned long max_turns;
    enum cli_format format;
    bool help;
    bool version;
    const char *system;      /* --system TEXT */
    const char *system_file; /* --system-file FILE */
    unsigned long max_tokens;      /* --max-tokens; 0: the default */
    unsigned long context_window;  /* --context-window; 0: from the model's name */
    unsigned long thinking;        /* --thinking BUDGET (tokens; 0: none) */
    bool quiet;                    /* -q: no usage line */
    bool list;                     /* --list */
    bool resume_pick;              /* --resume without an id */
    unsigned long keep;            /* --keep: finished conversations kept (0: all) */
    unsigned long keep_bytes;      /* --keep-bytes (0: no limit) */
    enum cli_tls_sessions tls_sessions; /* --tls-sessions */
    bool keep_alive_set;           /* --keep-alive was given: */
    unsigned long keep_alive_ms;   /* an idle connection to the API closes after this */
    const char *api_key;           /* the key, when a frontend read it (not from the
                                    * environment): fe_model takes it as it is */
};

/* --provider NAME (or MOTE_PROVIDER): a dialect (anthropic, openai) or a
 * provider's profile (mote_llm_profile_find). 0 and *prov, *profile
 * (NULL for a dialect: picked by host), or -1. */
int cli_provider_parse(const char *name, enum cli_provider *prov, const char **profile);

/* --thinking BUDGET (or MOTE_THINKING): 0 and *out (1024..1000000), or -1. */
int cli_thinking_parse(const char *s, unsigned long *out);

/* The names --provider takes, for messages ("anthropic, openai, gemini,
 * ..."). */
const char *cli_provider_names(void);

/* "off", "memory" or "disk": 0 and *out, or -1. */
int cli_tls_sessions_parse(const char *s, enum cli_tls_sessions *out);

/* Parses argv. Returns 0, or 2 after printing one line to `err` (usage
 * error: the exit code CONTRACT.md gives). */
int cli_parse(struct cli_opts *o, int argc, char **argv, FILE *err);

/* Prints the --help text. */
void cli_usage(FILE *out);

/* ---- shared with the other frontends (mote serve) ---- */

/* The options every frontend takes: --provider, --model, --base-url,
 * --ca-file, --state-dir, --mcp-config, --no-tools, --yes,
 * --shutdown-timeout, --max-turns, --system, --system-file, --max-tokens,
 * --context-window, --keep, --keep-bytes, --tls-sessions, --keep-alive,
 * --version, --help. Their codes are 256..511. */
extern const struct option cli_common_opts[];

/* The common options then `more` into `out` (cap entries, terminated).
 * Returns the count. */
size_t cli_opts_join(struct option *out, size_t cap, const struct option *more);

/* Handles common option `c` with its argument: 1 (done), 0 (not a common
 * option) or 2 (a usage error, said in one line on `err`). */
int cli_common(struct cli_opts *o, int c, const char *arg, FILE *err);

/* `s` as it may be shown in a message (one line, neutralised, cut). */
const char *cli_shown(const char *s);

/* A decimal number 0..max: 0, or -1. */
int cli_number(const char *s, unsigned long max, unsigned long *out);

#endif
