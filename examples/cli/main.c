/*
 * main.c - the mote command-line agent.
 *
 * This file grows into the agent as the client, journal, shutdown and tool
 * pieces land; today it parses the full command line of CONTRACT.md,
 * checks the configuration, and answers --help and --version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote.h"
#include "opts.h"

static enum cli_provider pick_provider(const struct cli_opts *o)
{
    const char *a = getenv("ANTHROPIC_API_KEY");
    const char *k = getenv("OPENAI_API_KEY");

    if (o->provider != CLI_PROVIDER_NONE)
        return o->provider;
    if (a != NULL && a[0] != '\0')
        return CLI_PROVIDER_ANTHROPIC;
    if (k != NULL && k[0] != '\0')
        return CLI_PROVIDER_OPENAI;
    return CLI_PROVIDER_NONE;
}

int main(int argc, char **argv)
{
    struct cli_opts o;
    int rc = cli_parse(&o, argc, argv, stderr);

    if (rc != 0)
        return rc;
    if (o.help) {
        cli_usage(stdout);
        return 0;
    }
    if (o.version) {
        printf("mote %s\n", mote_version());
        return 0;
    }
    if (pick_provider(&o) == CLI_PROVIDER_NONE) {
        fprintf(stderr, "mote: no API key: set ANTHROPIC_API_KEY or OPENAI_API_KEY "
                        "(or pick one with --provider)\n");
        return 2;
    }
    fprintf(stderr, "mote: the agent loop is not part of this build yet\n");
    return 1;
}
