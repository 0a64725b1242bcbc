/* serve.h - `mote serve`: the agent as a device service (docs/SERVE.md). */
#ifndef MOTE_FE_SERVE_H
#define MOTE_FE_SERVE_H

/* Runs `mote serve` (argv[0] is "serve"); returns the exit code. */
int serve_main(int argc, char **argv);

struct mote_serve_page;
/* The page at GET / (scripts/page.sh makes it from examples/serve/page/),
 * or NULL in a build without it (make PAGE=0: examples/tiny/page_none.c). */
extern const struct mote_serve_page *const mote_cli_page;

#endif
