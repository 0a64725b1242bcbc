/*
 * reload.c - mote serve's configurations over its life (see reload.h).
 *
 * A reload builds a whole new configuration (settings.c) in a set of its
 * own and puts it in use only if every part of it is good: the server's
 * conversations take it for their next turns (mote_serve_reconf), while
 * a running turn keeps the set it began with, which is therefore never
 * written while such a turn runs: three sets take turns, and a reload
 * that finds none free waits for a turn to end. MCP servers a reload
 * changes are started, and the old ones stopped, once no turn runs (a
 * turn may be inside a call to one of them).
 */
#define _GNU_SOURCE
#include "reload.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/oauth.h"
#include "../common/setup.h"
#include "unatt.h"

#define SETS 3
#define MCP_STOP_MS 5000 /* old MCP servers get this long to exit */
#define MCP_POLL_MS 25   /* and are looked at this often meanwhile */

static struct serve_set sets[SETS];
static int cur = -1;
static bool tls;
static struct rl_ctx ctx;
static struct mote_posix *load_pp; /* the port the MCP servers' tokens are renewed through */
static bool started;  /* rl_mcp_start ran: reloads may apply */
static bool pending;  /* a reload waits for a free set */
static mote_timer_id soon; /* the work an event asked for, on the next loop turn */

/* MCP servers: the ones in use, the next ones (a reload), the old ones
 * stopping. An instance is -1 for none. */
static struct mote_mcp mcps[2];
static struct mote_mcp_conf mcpcfs[2];
static struct mote_serve_asks asks[2]; /* their questions, to the server's front doors */
static int mcp_cur = -1, mcp_old = -1;
static int mcp_next = -2; /* -2: no change waits; -1: none (removed); else the instance */
static bool mcp_told;
static mote_timer_id mcp_timer;

static void say(const char *a, const char *b, const char *c)
{
    char line[600];

    snprintf(line, sizeof(line), "%s%s%s", a, b != NULL ? b : "", c != NULL ? c : "");
    if (ctx.say != NULL)
        ctx.say(line);
    else
        fprintf(stderr, "mote serve: %s\n", line);
}

struct serve_set *rl_cur(void)
{
    return &sets[cur];
}

int rl_first(bool has_tls)
{
    int rc;

    tls = has_tls;
    cur = 0;
    if ((rc = set_build(&sets[0])) != 0 || (rc = set_make(&sets[0], tls)) != 0)
        return rc;
    return 0;
}

/* ---- which set is free ------------------------------------------------------------ */

/* True if a conversation's turn (or load) runs on the settings of set k. */
static bool set_used(int k)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        const struct mote_conv *c = &ctx.ses->conv[i];

        if ((c->used || c->loading) && c->conf.llm == &sets[k].llm &&
            (c->loading || mote_conv_busy(c) || c->llm_job != 0 || c->tool_job != 0))
            return true;
    }
    return false;
}

static bool any_turn(void)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        const struct mote_conv *c = &ctx.ses->conv[i];

        if ((c->used || c->loading) &&
            (c->loading || mote_conv_busy(c) || c->llm_job != 0 || c->tool_job != 0))
            return true;
    }
    return false;
}

/* Idle conversations take the set in use now (a busy one, at its next
 * turn: mote_serve_send), so no idle one points into an older set. */
static void idle_take_cur(void)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &ctx.ses->conv[i];

        if (c->used && c->conf.llm != &sets[cur].llm &&
            mote_conv_set_conf(c, &sets[cur].cconf) < 0)
            continue; /* a turn runs: it takes them with its next one */
    }
}

/* ---- MCP servers ---------------------------------------------------------------------- */

/* The MCP configuration file the latest servers were read from ("":
 * none), and its identity then: a reload reads it again only if either
 * changed. */
static char mcp_path[1024];
static struct stat mcp_pst;

static bool mcp_changed(const char *path)
{
    struct stat sb;

    if (path == NULL || mcp_path[0] == '\0')
        return (path == NULL) != (mcp_path[0] == '\0');
    return strcmp(path, mcp_path) != 0 || stat(path, &sb) != 0 || sb.st_dev != mcp_pst.st_dev ||
           sb.st_ino != mcp_pst.st_ino || sb.st_size != mcp_pst.st_size ||
           sb.st_mtim.tv_sec != mcp_pst.st_mtim.tv_sec ||
           sb.st_mtim.tv_nsec != mcp_pst.st_mtim.tv_nsec;
}

/* The servers of set `s` into instance k. Returns 0 (*have: any), or 2
 * (the last servers' file stays the one compared). */
static int mcp_load(struct serve_set *s, int k, bool *have)
{
    struct stat st;
    int rc;

    *have = false;
    memset(&st, 0, sizeof(st));
    if (s->o.mcp_config != NULL)
        (void)stat(s->o.mcp_config, &st);
    rc = fe_mcp_with(&s->o, &mcps[k], &mcpcfs[k], ctx.loop, have);
    if (rc != 0)
        return rc;
    if (*have && load_pp != NULL) {
        /* the tokens of servers logged in to (mote mcp login) */
        char dir[1024];

        if (fe_state_path(&s->o, dir, sizeof(dir)) == 0)
            fe_oauth_attach(&load_pp->port, &mcps[k], &mcpcfs[k], dir, mcps[k].net.ca_file,
                            s->o.mcp_config);
        if (started)
            fe_oauth_tick_start(ctx.loop); /* (a reload's tokens: renewed too) */
    }
    snprintf(mcp_path, sizeof(mcp_path), "%s", s->o.mcp_config != NULL ? s->o.mcp_config : "");
    mcp_pst = st;
    return 0;
}

int rl_mcp_load(struct mote_posix *pp, struct mote_loop *loop)
{
    bool have = false;
    int rc;

    load_pp = pp;
    ctx.loop = loop;
    if ((rc = mcp_load(&sets[cur], 0, &have)) != 0)
        return rc;
    mcp_cur = have ? 0 : -1;
    return 0;
}

static void on_mcp_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    (void)loop, (void)t, (void)arg;
    mcp_timer = 0;
    if (mcp_old < 0)
        return;
    if (mote_mcp_disconnect_poll(&mcps[mcp_old], false) > 0) {
        if (mote_timer_start(ctx.loop, MCP_POLL_MS, on_mcp_timer, NULL, 0, &mcp_timer) < 0)
            mcp_timer = 0;
        return;
    }
    say("reload: the replaced MCP servers have stopped", NULL, NULL);
    mcp_old = -1;
}

/* The MCP servers a reload changed, once no turn runs. */
static void mcp_swap(void)
{
    int old = mcp_cur;

    if (mcp_next == -2)
        return;
    if (any_turn()) {
        if (!mcp_told)
            say("reload: the MCP servers change once no turn runs", NULL, NULL);
        mcp_told = true;
        return;
    }
    mote_session_use_mcp(ctx.ses, mcp_next >= 0 ? &mcps[mcp_next] : NULL);
    if (old >= 0)
        mote_serve_elicit_off(ctx.srv, &asks[old]);
    if (mcp_next >= 0) {
        mote_serve_elicit_on(ctx.srv, &asks[mcp_next], &mcps[mcp_next]);
        mote_mcp_start_all(&mcps[mcp_next]);
    }
    mcp_cur = mcp_next;
    mcp_next = -2;
    mcp_told = false;
    if (old >= 0) {
        mote_mcp_disconnect_begin(&mcps[old], MCP_STOP_MS);
        mcp_old = old;
        if (mcp_timer == 0 &&
            mote_timer_start(ctx.loop, MCP_POLL_MS, on_mcp_timer, NULL, 0, &mcp_timer) < 0)
            mcp_timer = 0;
    }
    mote_serve_tools_changed(ctx.srv); /* (MCP clients of /mcp are told) */
    say("reload: the MCP servers are the new configuration's", NULL, NULL);
}

void rl_mcp_start(const struct rl_ctx *c)
{
    ctx = *c;
    started = true;
    if (mcp_cur >= 0) {
        mote_serve_elicit_on(ctx.srv, &asks[mcp_cur], &mcps[mcp_cur]);
        fe_mcp_start(ctx.ses, &mcps[mcp_cur], ctx.loop);
        fe_oauth_tick_start(ctx.loop); /* tokens renewed before they expire */
    }
}

/* ---- the reload ------------------------------------------------------------------------- */

static int free_set(void)
{
    int k;

    for (k = 0; k < SETS; k++) {
        if (k != cur && !set_used(k))
            return k;
    }
    return -1;
}

int rl_reload(void)
{
    struct serve_set *s;
    int k, mi = -2;
    bool have = false;
    unsigned running;

    if (!started)
        return -1;
    pending = false;
    idle_take_cur();
    k = free_set();
    if (k < 0) {
        pending = true;
        say("reload: turns begun on the two configurations before still run: it waits for one "
            "of them to end",
            NULL, NULL);
        return 0;
    }
    s = &sets[k];
    if (set_build(s) != 0 || set_make(s, tls) != 0) {
        unatt = sets[cur].unatt; /* (set_build read into it) */
        say("reload refused (the reason is above): the configuration in use stays", NULL, NULL);
        return -1;
    }
    if (mcp_changed(s->o.mcp_config)) {
        /* the servers change: read into the instance not in use */
        mi = mcp_cur == 0 ? 1 : 0;
        if (mi == mcp_old) {
            unatt = sets[cur].unatt;
            say("reload refused: the MCP servers the last reload replaced are still stopping "
                "(try again in a few seconds)",
                NULL, NULL);
            return -1;
        }
        if (mcp_load(s, mi, &have) != 0) {
            unatt = sets[cur].unatt;
            say("reload refused (the reason is above): the configuration in use stays", NULL,
                NULL);
            return -1;
        }
        if (!have)
            mi = -1;
    }
    if (unatt_reload(ctx.pp, ctx.ses, &s->unatt) != 0) {
        unatt = sets[cur].unatt;
        say("reload refused (the budget, above): the configuration in use stays", NULL, NULL);
        return -1;
    }
    (void)set_start_only(&sets[cur], s);
    cur = k;
    running = mote_serve_reconf(ctx.srv, &s->cconf);
    mote_serve_tools_changed(ctx.srv); /* (the policy may offer other tools) */
    say("reloaded ", s->config != NULL ? s->config : "the command line", NULL);
    say("  model ", s->cconf.model,
        running > 0 ? "; running turns keep the settings they began with" : NULL);
    if (mi != -2) {
        mcp_next = mi;
        mcp_told = false;
        mcp_swap();
    }
    return 0;
}

static void on_soon(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    (void)loop, (void)t, (void)arg;
    soon = 0;
    idle_take_cur();
    if (pending)
        (void)rl_reload();
    mcp_swap();
}

void rl_event(const struct mote_event *ev)
{
    if (!started || cur < 0)
        return;
    if (ev->type != MOTE_EV_TURN_END && ev->type != MOTE_EV_STATE && ev->type != MOTE_EV_ERROR)
        return;
    if (soon == 0 && mote_timer_start(ctx.loop, 0, on_soon, NULL, 0, &soon) < 0)
        soon = 0;
}

void rl_end(void)
{
    unsigned guard;

    if (soon != 0)
        (void)mote_timer_stop(ctx.loop, soon);
    soon = 0;
    if (mcp_timer != 0)
        (void)mote_timer_stop(ctx.loop, mcp_timer);
    mcp_timer = 0;
    for (guard = 0; mcp_old >= 0 && guard < 200; guard++) {
        if (mote_mcp_disconnect_poll(&mcps[mcp_old], true) <= 0)
            mcp_old = -1;
    }
}
