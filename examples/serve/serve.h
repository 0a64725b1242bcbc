/* serve.h - `mote serve`: the agent as a device service (docs/SERVE.md). */
#ifndef MOTE_FE_SERVE_H
#define MOTE_FE_SERVE_H

/* Runs `mote serve` (argv[0] is "serve"); returns the exit code. */
int serve_main(int argc, char **argv);

/* systemd's notification socket ($NOTIFY_SOCKET): sends `msg` as one
 * datagram ("READY=1", "STOPPING=1"); nothing if it is not set. */
void serve_notify(const char *msg);

#endif
