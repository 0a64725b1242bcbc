/* unatt.h - mote serve's options for a device nobody watches: the spend
 * budget and the schedules. docs/SERVE.md. */
#ifndef MOTE_FE_UNATT_H
#define MOTE_FE_UNATT_H

#include <getopt.h>
#include <stdbool.h>

#include "mote/mote_agent.h"
#include "mote/mote_budget.h"
#include "mote/mote_posix.h"

/* The settings: plain fields, filled by the options (and by a
 * configuration file where there is one). */
struct unatt_conf {
    struct mote_budget_conf budget;
    const char *schedules_file; /* --schedules FILE: fixed schedules (NULL: none) */
    const char *timezone;       /* --timezone ZONE: of schedules that name none (NULL: UTC) */
    bool no_schedules;          /* --no-schedules */
    bool no_schedule_tool;      /* --no-schedule-tool */
};

extern struct unatt_conf unatt;

/* The options' table (codes 700..799), for getopt_long. */
extern const struct option unatt_opts[];

/* Handles option `c` with `arg`: 1 (done), 0 (not one of these) or 2 (a
 * usage error, said on stderr). */
int unatt_option(int c, const char *arg);

/* Checks the settings against the model (`model`): 0 or 2 (said). */
int unatt_check(const char *model);

/* Opens the budget on the port's storage (the state directory is set)
 * and gives it to the session. Returns 0 or 1 (said). */
int unatt_start(struct mote_posix *pp, struct mote_session *ses);

/* A reload's settings `c` (the budget's limits; the budget opened if it
 * was not). Returns 0 or 1 (said). */
int unatt_reload(struct mote_posix *pp, struct mote_session *ses, const struct unatt_conf *c);

/* The schedules' settings into the server's conf (the runner's memory,
 * the fixed file read). Returns 0 or 2 (said). */
struct mote_serve_conf;
int unatt_serve_conf(struct mote_serve_conf *vc);

/* Closes what unatt_start opened. */
void unatt_end(void);

#endif
