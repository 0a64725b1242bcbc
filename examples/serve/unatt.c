/* unatt.c - mote serve's options for a device nobody watches (see
 * unatt.h): the spend budget's limits and prices and the schedules'
 * settings, read into plain fields and handed to the library
 * (mote_budget.h, mote_serve.h's schedules). */
#include "unatt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/opts.h"
#include "../common/readfile.h"
#include "mote/mote_serve.h"
#include "mote/mote_time.h"

#define SCHEDULES_MAX (256 * 1024) /* bytes of a --schedules file */

struct unatt_conf unatt;
static struct mote_budget budget; /* the library's (its journal in STATE) */
static struct mote_serve_sched sched; /* the schedules' runner's memory */
static char fixed[SCHEDULES_MAX];

enum {
    OPT_REQ_HOUR = 700,
    OPT_REQ_DAY,
    OPT_IN_HOUR,
    OPT_IN_DAY,
    OPT_OUT_HOUR,
    OPT_OUT_DAY,
    OPT_CACHED_HOUR,
    OPT_CACHED_DAY,
    OPT_COST_HOUR,
    OPT_COST_DAY,
    OPT_PRICE,
    OPT_SCHEDULES,
    OPT_TIMEZONE,
    OPT_NO_SCHEDULES,
    OPT_NO_SCHEDULE_TOOL,
};

const struct option unatt_opts[] = {
    {"budget-requests-hour", required_argument, NULL, OPT_REQ_HOUR},
    {"budget-requests-day", required_argument, NULL, OPT_REQ_DAY},
    {"budget-input-hour", required_argument, NULL, OPT_IN_HOUR},
    {"budget-input-day", required_argument, NULL, OPT_IN_DAY},
    {"budget-output-hour", required_argument, NULL, OPT_OUT_HOUR},
    {"budget-output-day", required_argument, NULL, OPT_OUT_DAY},
    {"budget-cached-hour", required_argument, NULL, OPT_CACHED_HOUR},
    {"budget-cached-day", required_argument, NULL, OPT_CACHED_DAY},
    {"budget-cost-hour", required_argument, NULL, OPT_COST_HOUR},
    {"budget-cost-day", required_argument, NULL, OPT_COST_DAY},
    {"budget-price", required_argument, NULL, OPT_PRICE},
    {"schedules", required_argument, NULL, OPT_SCHEDULES},
    {"timezone", required_argument, NULL, OPT_TIMEZONE},
    {"no-schedules", no_argument, NULL, OPT_NO_SCHEDULES},
    {"no-schedule-tool", no_argument, NULL, OPT_NO_SCHEDULE_TOOL},
    {NULL, 0, NULL, 0},
};

/* The option's name, for a message. */
static const char *name_of(int c)
{
    const struct option *o;

    for (o = unatt_opts; o->name != NULL; o++) {
        if (o->val == c)
            return o->name;
    }
    return "?";
}

static int tokens(int c, const char *arg, uint64_t *out)
{
    unsigned long v;

    if (cli_number(arg, 4000000000ul, &v) < 0) {
        fprintf(stderr, "mote serve: --%s wants a number 0..4000000000 (0: no limit), not '%s'\n",
                name_of(c), cli_shown(arg));
        return 2;
    }
    *out = v;
    return 1;
}

int unatt_option(int c, const char *arg)
{
    struct mote_budget_conf *b = &unatt.budget;
    unsigned long v;
    uint64_t u;

    switch (c) {
    case OPT_REQ_HOUR:
    case OPT_REQ_DAY:
        if (cli_number(arg, 1000000ul, &v) < 0) {
            fprintf(stderr, "mote serve: --%s wants a number 0..1000000 (0: no limit), not '%s'\n",
                    name_of(c), cli_shown(arg));
            return 2;
        }
        *(c == OPT_REQ_HOUR ? &b->requests_hour : &b->requests_day) = (uint32_t)v;
        return 1;
    case OPT_IN_HOUR: return tokens(c, arg, &b->input_hour);
    case OPT_IN_DAY: return tokens(c, arg, &b->input_day);
    case OPT_OUT_HOUR: return tokens(c, arg, &b->output_hour);
    case OPT_OUT_DAY: return tokens(c, arg, &b->output_day);
    case OPT_CACHED_HOUR: return tokens(c, arg, &b->cached_hour);
    case OPT_CACHED_DAY: return tokens(c, arg, &b->cached_day);
    case OPT_COST_HOUR:
    case OPT_COST_DAY:
        if (mote_budget_money_parse(arg, &u) < 0) {
            fprintf(stderr, "mote serve: --%s wants an amount of money such as 2.50 (0: no "
                            "limit), not '%s'\n",
                    name_of(c), cli_shown(arg));
            return 2;
        }
        *(c == OPT_COST_HOUR ? &b->cost_hour : &b->cost_day) = u;
        return 1;
    case OPT_PRICE:
        if (b->nprices >= MOTE_BUDGET_PRICES) {
            fprintf(stderr, "mote serve: more than %d --budget-price (MOTE_BUDGET_PRICES)\n",
                    MOTE_BUDGET_PRICES);
            return 2;
        }
        if (mote_budget_price_parse(arg, &b->prices[b->nprices]) < 0) {
            fprintf(stderr, "mote serve: --budget-price wants MODEL=INPUT,OUTPUT[,CACHED], the "
                            "prices per million tokens (claude-x=3,15,0.30), not '%s'\n",
                    cli_shown(arg));
            return 2;
        }
        b->nprices++;
        return 1;
    case OPT_SCHEDULES:
        unatt.schedules_file = arg;
        return 1;
    case OPT_TIMEZONE:
        if (strcmp(arg, "UTC") != 0 && !mote_tz_name_ok(arg)) {
            fprintf(stderr, "mote serve: --timezone wants an IANA zone name (Europe/Paris), not "
                            "'%s'\n",
                    cli_shown(arg));
            return 2;
        }
        unatt.timezone = arg;
        return 1;
    case OPT_NO_SCHEDULES:
        unatt.no_schedules = true;
        return 1;
    case OPT_NO_SCHEDULE_TOOL:
        unatt.no_schedule_tool = true;
        return 1;
    default: return 0;
    }
}

int unatt_serve_conf(struct mote_serve_conf *vc)
{
    size_t n = 0;
    int rc;

    if (unatt.no_schedules)
        return 0;
    if (unatt.schedules_file != NULL) {
        rc = fe_read_file(unatt.schedules_file, fixed, sizeof(fixed), &n);
        if (rc < 0) {
            fprintf(stderr, "mote serve: cannot read --schedules %s: %s\n", unatt.schedules_file,
                    rc == FE_READ_TOO_LONG ? "too large" : fe_read_why(rc));
            return 2;
        }
        vc->sched_fixed = fixed;
        vc->sched_fixed_len = n;
    }
    vc->sched = &sched;
    vc->sched_tz = unatt.timezone;
    vc->sched_tool = !unatt.no_schedule_tool;
    return 0;
}

int unatt_check(const char *model)
{
    const struct mote_budget_conf *b = &unatt.budget;
    unsigned i;
    bool priced = false;

    for (i = 0; i < b->nprices; i++)
        priced = priced || strcmp(b->prices[i].model, "*") == 0 ||
                 (model != NULL && strcmp(b->prices[i].model, model) == 0);
    if ((b->cost_hour != 0 || b->cost_day != 0) && !priced) {
        fprintf(stderr, "mote serve: --budget-cost-hour and --budget-cost-day need the model's "
                        "price: --budget-price %s=INPUT,OUTPUT[,CACHED] (per million tokens; "
                        "'*' for any model)\n",
                model != NULL ? cli_shown(model) : "MODEL");
        return 2;
    }
    return 0;
}

int unatt_start(struct mote_posix *pp, struct mote_session *ses)
{
    char err[200];

    if (!mote_budget_any(&unatt.budget))
        return 0;
    if (mote_budget_open(&budget, &pp->port, &unatt.budget, err, sizeof(err)) < 0) {
        fprintf(stderr, "mote serve: the budget: %s\n", err);
        return 1;
    }
    mote_session_use_budget(ses, &budget);
    if (mote_budget_blocked(&budget))
        fprintf(stderr, "mote serve: %s\n", budget.why);
    return 0;
}

void unatt_end(void)
{
    mote_budget_close(&budget);
}

int unatt_reload(struct mote_posix *pp, struct mote_session *ses, const struct unatt_conf *c)
{
    unatt = *c;
    if (budget.open) {
        budget.conf = c->budget; /* the next reservation checks the new limits */
        return 0;
    }
    return unatt_start(pp, ses);
}
