/* setup.h - configuration every mote frontend shares (setup.c). */
#ifndef MOTE_FE_SETUP_H
#define MOTE_FE_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cli/opts.h"
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
 * CA file, proxy, the MOTE_*_TIMEOUT_MS knobs; `tls`: this build has TLS.
 * Returns 0, or 2 after one line on stderr. */
int fe_model(const struct cli_opts *o, bool tls, struct mote_llm_conf *llm, const char **model);

/* --mcp-config: the servers into `m` (on `loop`). Returns 0 or 2. */
int fe_mcp(const struct cli_opts *o, struct mote_mcp *m, struct mote_loop *loop, bool *have);

/* The state directory (--state-dir, $MOTE_STATE_DIR, $XDG_STATE_HOME/mote,
 * ~/.local/state/mote) into `dir` and the port's storage root. 0 or 2. */
int fe_state_dir(const struct cli_opts *o, struct mote_posix *pp, char *dir, size_t cap);

/* The system prompt: --system, --system-file, or mote's own with MOTE.md
 * or AGENTS.md of the working directory. 0 or 2. */
int fe_system(const struct cli_opts *o, const char **system);

/* The model's context window, tokens, from its name (0: unknown). */
uint32_t fe_window(const char *model);

/* A number of milliseconds from the environment, or `def`. */
unsigned long fe_env_ms(const char *name, unsigned long def);

/* Reads a secret from the environment and removes it, its bytes included
 * (/proc/self/environ shows the original block): tools never see it.
 * NULL if unset or longer than cap - 1 (then out is ""). */
const char *fe_take_secret(const char *name, char *out, size_t cap);

#endif
