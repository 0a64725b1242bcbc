/*
 * serve_none.c - `mote serve` in a build made without it (make SERVE=0,
 * make tiny's default): the CLI agent alone is the smallest mote; the
 * service adds about 40 KB (docs/BENCHMARKS.md). `make tiny SERVE=1`
 * builds both.
 */
#include <stdio.h>

#include "../serve/serve.h"

int serve_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    fprintf(stderr, "mote: this mote was built without mote serve (build it with make SERVE=1)\n");
    return 2;
}
