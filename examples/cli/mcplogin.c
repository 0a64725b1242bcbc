/*
 * mcplogin.c - `mote mcp login NAME [--mcp-config FILE] [--state-dir DIR]
 * [--scope "A B"] [--ca-file FILE]` and `mote mcp logout NAME ...`: an
 * MCP server over HTTP that asks for OAuth is logged in to once; later
 * runs use the token kept (examples/common/oauth.c).
 */
#define _GNU_SOURCE
#include "mcplogin.h"

#include "opts.h"
#include "../common/setup.h"

#include "../common/oauth.h"

#include "mote/mote_posix.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: mote mcp login NAME [--mcp-config FILE] [--state-dir DIR] [--scope \"A B\"]\n"
          "                           [--ca-file FILE]\n"
          "       mote mcp logout NAME [--state-dir DIR]\n"
          "Logs in to MCP server NAME of the configuration (OAuth: the address to open is\n"
          "printed; paste back where the browser was sent). The token is kept in\n"
          "STATE/mcp-auth/NAME.json (mode 0600); later runs send it.\n",
          f);
}

bool cli_is_mcp_login(int argc, char **argv)
{
    return argc > 2 && strcmp(argv[1], "mcp") == 0 &&
           (strcmp(argv[2], "login") == 0 || strcmp(argv[2], "logout") == 0);
}

int cli_mcp_login(int argc, char **argv)
{
    static const struct option longs[] = {{"mcp-config", required_argument, NULL, 'm'},
                                          {"state-dir", required_argument, NULL, 's'},
                                          {"scope", required_argument, NULL, 'c'},
                                          {"ca-file", required_argument, NULL, 'a'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    static struct cli_opts o;
    static struct mote_posix pp;
    static struct fe_oauth_srv srv;
    bool out = strcmp(argv[2], "logout") == 0;
    const char *scope = NULL, *name;
    char state_dir[1024], err[600];
    int c, rc;

    memset(&o, 0, sizeof(o));
    optind = 3; /* after "mcp login" */
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'm':
            o.mcp_config = optarg;
            break;
        case 's':
            o.state_dir = optarg;
            break;
        case 'c':
            scope = optarg;
            break;
        case 'a':
            o.ca_file = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || argv[optind][0] == '\0') {
        usage(stderr);
        return 2;
    }
    name = argv[optind];
    if (strlen(name) > 24 || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_-") != strlen(name)) {
        fprintf(stderr, "mote: bad server name '%.40s' (letters, digits, - and _, at most 24)\n",
                name);
        return 2;
    }
    if (o.mcp_config == NULL)
        o.mcp_config = getenv("MOTE_MCP_CONFIG");
    if (o.ca_file == NULL && getenv("SSL_CERT_FILE") != NULL && getenv("SSL_CERT_FILE")[0] != '\0')
        o.ca_file = getenv("SSL_CERT_FILE");
    if ((rc = fe_port_start(&pp, "mote")) != 0)
        return rc;
    if ((rc = fe_state_dir(&o, &pp, state_dir, sizeof(state_dir))) != 0)
        return rc;
    if (out)
        return fe_oauth_logout(state_dir, name, stderr);
    if (o.mcp_config == NULL) {
        fprintf(stderr, "mote: mcp login needs --mcp-config FILE (or MOTE_MCP_CONFIG)\n");
        return 2;
    }
    if (fe_oauth_read_conf(o.mcp_config, name, &srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "mote: %s\n", err);
        return 2;
    }
    rc = fe_oauth_login(&pp.port, &srv, state_dir, scope, o.ca_file, stdin, stdout, stderr);
    memset(&srv, 0, sizeof(srv));
    mote_posix_deinit(&pp);
    return rc;
}
