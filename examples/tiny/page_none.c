/*
 * page_none.c - mote serve without its page (make PAGE=0): GET / is
 * 404 and the binary is smaller by the page (docs/BENCHMARKS.md); the
 * API is the same.
 */
#include <stddef.h>

#include "../serve/serve.h"

const struct mote_serve_page *const mote_cli_page = NULL;
