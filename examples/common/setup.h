/* setup.h - configuration every mote frontend shares (setup.c). */
#ifndef MOTE_FE_SETUP_H
#define MOTE_FE_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cli/opts.h"
#include "mote/mote_agent.h"
#include "mote/mote_client.h"
#include "mote/mote_loop.h"
#include "mote/mote_mcp.h"
#include "mote/mote_posix.h"

#define DEFAULT_ANTHROPIC_MODEL "claude-sonnet-4-5"
#define DEFAULT_OPENAI_MODEL "gpt-4o-mini"
#define SYSTEM_PROMPT                                                                      \
    "You are mote, a small agent running on the user's machine. Be brief. Use the tools " \
    "when they help; say what you did."

/* The model from the options and the environment (CONTRACT.md): provider,
 * key (taken out of the environment, both providers' keys), base URL,
 * CA file, proxy, the MOTE_*_TIMEOUT_MS knobs, --keep-alive
 * (MOTE_KEEP_ALIVE_MS) and --tls-sessions (MOTE_TLS_SESSIONS; disk for -p,
 * else memory); `tls`: this build has TLS.
 * Returns 0, or 2 after one line on stderr. */
int fe_model(const struct cli_opts *o, bool tls, struct mote_llm_conf *llm, const char **model);

/* --mcp-config: the servers into `m` (on `loop`). Returns 0 or 2. */
int fe_mcp(const struct cli_opts *o, struct mote_mcp *m, struct mote_loop *loop, bool *have);

/* fe_mcp with the servers' strings in `cf` (NULL: the one static set). */
int fe_mcp_with(const struct cli_opts *o, struct mote_mcp *m, struct mote_mcp_conf *cf,
                struct mote_loop *loop, bool *have);

/* The state directory (--state-dir, $MOTE_STATE_DIR, $XDG_STATE_HOME/mote,
 * ~/.local/state/mote) into `dir` and the port's storage root. 0 or 2. */
int fe_state_dir(const struct cli_opts *o, struct mote_posix *pp, char *dir, size_t cap);

/* The loop, the signal handlers and the session on `pp`, and the
 * built-in tools unless `no_tools`; a failure is said on stderr, with
 * `who` ("mote", "mote serve") first. Returns 0 or 1 (the exit code). */
int fe_session_start(struct mote_posix *pp, struct mote_loop *loop, struct mote_session *ses,
                     const struct mote_session_conf *sc, bool no_tools, const char *who);

/* Only the state directory's path (from the options and the environment),
 * nothing created or checked. Returns 0 or 2 (none can be named). */
int fe_state_path(const struct cli_opts *o, char *dir, size_t cap);

/* The system prompt: --system, --system-file, or mote's own with MOTE.md
 * or AGENTS.md of the working directory. 0 or 2. */
int fe_system(const struct cli_opts *o, const char **system);

/* The POSIX port into `pp`; a failure is said on stderr with `who` first.
 * Returns 0 or 1 (the exit code). */
int fe_port_start(struct mote_posix *pp, const char *who);

/* What every frontend's conversations take from the options: the model
 * (`llm`, `model`), the answer's token limit, the context window (from
 * the option or the model's name), the turn cap, tools and MCP unless
 * --no-tools. The approval, the deny reason and the system prompt are
 * the frontend's. */
void fe_conv_conf(const struct cli_opts *o, const struct mote_llm_conf *llm, const char *model,
                  struct mote_conv_conf *cc);

/* The MCP servers of `m` offered to the session and started, in parallel
 * (nothing waits for them). */
void fe_mcp_start(struct mote_session *ses, struct mote_mcp *m, struct mote_loop *loop);

/* After the shutdown's exit code is told: a signal arriving from then on
 * (a /quit racing a SIGTERM) stays pending, so the default action that
 * restoring the handlers brings back cannot turn the exit into a death by
 * that signal. Then the session, the loop and the port are released. */
void fe_end(struct mote_session *ses, struct mote_loop *loop, struct mote_posix *pp);

/* The model's context window, tokens, from its name (0: unknown). */
uint32_t fe_window(const char *model);

/* A number of milliseconds from the environment, or `def`. */
unsigned long fe_env_ms(const char *name, unsigned long def);

/* Reads a secret from the environment and removes it, its bytes included
 * (/proc/self/environ shows the original block): tools never see it.
 * NULL if unset or longer than cap - 1 (then out is ""). */
const char *fe_take_secret(const char *name, char *out, size_t cap);

#endif
