/* mcplogin.h - `mote mcp login NAME` and `mote mcp logout NAME`. */
#ifndef MOTE_CLI_MCPLOGIN_H
#define MOTE_CLI_MCPLOGIN_H

#include <stdbool.h>

/* Whether argv (after "mote") is one of these commands. */
bool cli_is_mcp_login(int argc, char **argv);

/* Runs it: the exit code (0, 1 failed, 2 usage). argv[0] is "mcp". */
int cli_mcp_login(int argc, char **argv);

#endif
