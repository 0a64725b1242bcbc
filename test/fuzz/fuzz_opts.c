/* fuzz_opts - the CLI's option parser on arbitrary argument vectors (the
 * input's NUL-separated fields). Properties: it returns 0 or 2 (a usage
 * error, said on one line), and every string option it keeps points into
 * the argument vector it was given. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../examples/cli/opts.h"

#define MAX_ARGS 32

static char store[8192];
static char *argv[MAX_ARGS + 2];
static char errbuf[4096];

static int inside(const char *p, int argc)
{
    int i;

    if (p == NULL)
        return 1;
    for (i = 0; i < argc; i++) {
        if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cli_opts o;
    size_t n = size < sizeof(store) - 1 ? size : sizeof(store) - 1, i = 0;
    int argc = 1, rc;
    FILE *err;

    memcpy(store, data, n);
    store[n] = '\0';
    argv[0] = "mote";
    while (i < n && argc < MAX_ARGS) {
        argv[argc++] = store + i;
        i += strlen(store + i) + 1;
    }
    argv[argc] = NULL;
    err = fmemopen(errbuf, sizeof(errbuf), "w");
    if (err == NULL)
        return 0;
    optind = 0; /* glibc: start getopt afresh */
    memset(&o, 0, sizeof(o));
    rc = cli_parse(&o, argc, argv, err);
    fclose(err);
    if (rc != 0 && rc != 2)
        __builtin_trap();
    if (rc == 2 && strchr(errbuf, '\n') != strrchr(errbuf, '\n'))
        __builtin_trap(); /* one line */
    if (rc == 0 && !(inside(o.prompt, argc) && inside(o.model, argc) && inside(o.base_url, argc) &&
                     inside(o.ca_file, argc) && inside(o.state_dir, argc) &&
                     inside(o.resume, argc) && inside(o.mcp_config, argc) &&
                     inside(o.system, argc) && inside(o.system_file, argc)))
        __builtin_trap();
    return 0;
}
