/* unatt.c - mote serve's options for a device nobody watches (see
 * unatt.h): the spend budget's limits and prices, read into plain fields
 * and handed to the library (mote_budget.h). */
#include "unatt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cli/opts.h"

struct unatt_conf unatt;
static struct mote_budget budget; /* the library's (its journal in STATE) */

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
    default: return 0;
    }
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
