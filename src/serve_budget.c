/*
 * serve_budget.c - the spend budget (mote_budget.h) as mote serve shows
 * it: its limits, what the hour and the day used, whether turns wait and
 * until when (GET /v1/health's "budget"), and a conversation's usage.
 */
#include <string.h>

#include "mote/mote_budget.h"
#include "mote/mote_time.h"
#include "serve_int.h"
#include "util.h"

void mote_serve_usage_json(struct mote_jw *w, const struct mote_rec_usage *u)
{
    mote_jw_obj(w);
    mote_jw_kint(w, "input_tokens", (int64_t)u->input);
    mote_jw_kint(w, "output_tokens", (int64_t)u->output);
    mote_jw_kint(w, "cache_read_tokens", (int64_t)u->cache_read);
    mote_jw_kint(w, "cache_write_tokens", (int64_t)u->cache_write);
    mote_jw_obj_end(w);
}

static void limit(struct mote_jw *w, const char *key, uint64_t v)
{
    if (v == 0)
        return;
    mote_jw_key(w, key);
    mote_jw_int(w, (int64_t)v);
}

static void when(struct mote_jw *w, const char *key, int64_t t)
{
    char iso[MOTE_ISO_MAX];

    mote_iso_write(iso, t, 0, true);
    mote_jw_key(w, key);
    mote_jw_str(w, iso);
}

static void window(struct mote_jw *w, const char *key, const struct mote_budget_window *win)
{
    mote_jw_key(w, key);
    mote_jw_obj(w);
    when(w, "start", win->start);
    mote_jw_kint(w, "requests", win->requests);
    mote_jw_kint(w, "input_tokens", (int64_t)win->input);
    mote_jw_kint(w, "output_tokens", (int64_t)win->output);
    mote_jw_kint(w, "cached_tokens", (int64_t)win->cached);
    mote_jw_kint(w, "cost_micro", mote_time_div((int64_t)win->cost_pico, 1000000u, NULL));
    mote_jw_obj_end(w);
}

void mote_serve_budget_json(struct serve *sv, struct mote_jw *w)
{
    struct mote_budget *b = sv->conf.session->budget;
    const struct mote_budget_conf *c;
    unsigned i, waiting = 0;
    bool blocked;

    mote_jw_key(w, "budget");
    if (b == NULL || !b->open) {
        mote_jw_null(w);
        return;
    }
    c = &b->conf;
    blocked = mote_budget_blocked(b); /* (the windows rolled to now) */
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++)
        waiting += sv->conf.session->conv[i].used && sv->conf.session->conv[i].want_budget;
    mote_jw_obj(w);
    mote_jw_key(w, "limits");
    mote_jw_obj(w);
    limit(w, "requests_hour", c->requests_hour);
    limit(w, "requests_day", c->requests_day);
    limit(w, "input_tokens_hour", c->input_hour);
    limit(w, "input_tokens_day", c->input_day);
    limit(w, "output_tokens_hour", c->output_hour);
    limit(w, "output_tokens_day", c->output_day);
    limit(w, "cached_tokens_hour", c->cached_hour);
    limit(w, "cached_tokens_day", c->cached_day);
    limit(w, "cost_micro_hour", c->cost_hour);
    limit(w, "cost_micro_day", c->cost_day);
    mote_jw_obj_end(w);
    window(w, "hour", &b->hour);
    window(w, "day", &b->day);
    mote_jw_kint(w, "in_flight", b->nholds);
    mote_jw_kbool(w, "spent", blocked || b->err < 0);
    mote_jw_kint(w, "waiting", waiting);
    mote_jw_key(w, "reason");
    if (b->err < 0)
        mote_jw_str(w, "the budget's journal cannot be written: nothing is sent");
    else if (blocked)
        mote_jw_str(w, b->why);
    else
        mote_jw_null(w);
    if (blocked)
        when(w, "until", b->until);
    else {
        mote_jw_key(w, "until");
        mote_jw_null(w);
    }
    mote_jw_obj_end(w);
}
