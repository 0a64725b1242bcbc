/*
 * serve_sched.c - mote serve's schedules' runner (serve_sched.h): it
 * reads the clocks (the real-time one for cron and single times, once it
 * is set; the monotonic one for intervals; a jump between them journaled),
 * decides what is due and what the catch-up after downtime runs or
 * skips, and takes each occurrence through claimed (synced before
 * anything) -> started (the prompt journaled in its conversation, with a
 * request id naming the occurrence) -> done, or skipped with the reason.
 * After a crash an occurrence left claimed is started once (unless its
 * conversation has its request id already: it started) or skipped, and
 * one left started is followed to its turn's end.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_sched.h"
#include "util.h"

#define TICK_OPEN_MS 1000u  /* while an occurrence is under way */
#define TICK_IDLE_MS 60000u /* at most, whatever: a jump is seen within it */

static void on_tick(struct mote_loop *loop, mote_timer_id t, void *arg);

/* ---- the clocks --------------------------------------------------------------------------- */

static uint32_t mono(const struct sched *q)
{
    return mote_loop_now(q->sv->loop);
}

/* Re-arms what a forward move of the real-time clock leaves: nothing
 * (the catch-up rule decides); a move back of more than a day (a clock
 * that was wrong ahead) counts wall-clock schedules from now again. */
static void jumped(struct sched *q, int64_t by_ms, int64_t now_s)
{
    unsigned i;

    if (by_ms >= -86400000)
        return;
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        struct sched_slot *s = &q->slots[i];

        if (s->used && s->def.kind != MOTE_SCHED_EVERY && s->has_cursor && s->cursor > now_s) {
            s->cursor = now_s;
            mote_sched_say(q, s->def.id, "the clock went back more than a day: counted from now",
                           NULL, NULL);
            (void)mote_sched_log_arm(q, s, now_s * 1000);
        }
    }
}

bool mote_sched_clock(struct sched *q, int64_t *ms)
{
    const struct mote_port *p = q->sv->port;
    uint32_t m = mono(q);
    bool plausible;
    int st;

    *ms = 0;
    if (!MOTE_PORT_HAS(p, clock_real) || (st = p->clock_real(p->ctx, ms)) < 0) {
        q->plausible = false;
        return false;
    }
    plausible = st == MOTE_CLOCK_SYNCED || mote_time_div(*ms, 1000u, NULL) >= MOTE_CLOCK_FLOOR_S;
    q->synced = st == MOTE_CLOCK_SYNCED;
    if (q->have_prev) {
        int64_t expect = q->wall_prev_ms + (int64_t)(uint32_t)(m - q->mono_prev);
        int64_t by = *ms - expect;

        if (plausible && !q->plausible) {
            /* set at last (NTP after a boot in 1970): journaled; the
             * catch-up counts from what the journal knew, never from 1970 */
            q->jumps++;
            (void)mote_sched_log_clock(q, expect, *ms, by);
            mote_sched_say(q, NULL, "the real-time clock is set now: wall-clock schedules run",
                           NULL, NULL);
        } else if (plausible && (by > MOTE_SCHED_JUMP_MS || by < -MOTE_SCHED_JUMP_MS)) {
            char d[24];
            struct mote_sb sb;

            q->jumps++;
            (void)mote_sched_log_clock(q, expect, *ms, by);
            mote_sb_init(&sb, d, sizeof(d));
            mote_sb_i(&sb, by);
            mote_sched_say(q, NULL, "the real-time clock jumped by ", d,
                           " ms: journaled; what it passed over is never run in a burst");
            jumped(q, by, mote_time_div(*ms, 1000u, NULL));
        }
    }
    q->have_prev = true;
    q->wall_prev_ms = *ms;
    q->mono_prev = m;
    q->plausible = plausible;
    return plausible;
}

/* ---- zones ------------------------------------------------------------------------------- */

const struct mote_tz *mote_sched_zone(struct sched *q, const struct sched_slot *s)
{
    static const struct mote_tz utc = {.name = "UTC", .ntypes = 1};

    return s->zone >= 0 && (unsigned)s->zone < q->nzones ? &q->zones[s->zone] : &utc;
}

int mote_sched_zone_load(struct sched *q, const char *name, char *err, size_t cap)
{
    const struct mote_port *p = q->sv->port;
    int64_t ms, from;
    size_t len = 0;
    unsigned i;
    int h, got, rc;

    if (name[0] == '\0' || strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
        return -1;
    for (i = 0; i < q->nzones; i++) {
        if (strcmp(q->zones[i].name, name) == 0)
            return (int)i;
    }
    if (q->nzones >= MOTE_SCHED_ZONES)
        return mote_why_num(err, cap, MOTE_ERR_FULL, "more time zones than MOTE_SCHED_ZONES (",
                            MOTE_SCHED_ZONES, ")") - 0x100;
    if (!mote_tz_name_ok(name) || !MOTE_PORT_HAS(p, tz_open) || !MOTE_PORT_HAS(p, fs_read))
        return mote_why(err, cap, MOTE_ERR_NOENT, "unknown time zone \"", name,
                        "\" (this system has no zoneinfo for it)") - 0x100;
    h = p->tz_open(p->ctx, name);
    if (h < 0)
        return mote_why(err, cap, MOTE_ERR_NOENT, "unknown time zone \"", name,
                        "\" (not in the system's zoneinfo)") - 0x100;
    while (len < sizeof(q->tzbuf) &&
           (got = p->fs_read(p->ctx, h, len, q->tzbuf + len, sizeof(q->tzbuf) - len)) > 0)
        len += (size_t)got;
    p->fs_close(p->ctx, h);
    /* the transitions from a year before now on (or before the clock's
     * floor, while the clock is not set) */
    from = (mote_sched_clock(q, &ms) ? mote_time_div(ms, 1000u, NULL) : MOTE_CLOCK_FLOOR_S) -
           400 * 86400;
    rc = mote_tz_parse(&q->zones[q->nzones], name, q->tzbuf, len, from, err, cap);
    if (rc < 0)
        return rc - 0x100;
    return (int)q->nzones++;
}

/* ---- the occurrences ---------------------------------------------------------------------- */

void mote_sched_kick(struct sched *q)
{
    if (!q->on || q->stopping)
        return;
    if (q->timer != 0)
        (void)mote_timer_stop(q->sv->loop, q->timer);
    q->timer = 0;
    if (mote_timer_start(q->sv->loop, 0, on_tick, q, 0, &q->timer) < 0)
        q->timer = 0;
}

/* The request id of the occurrence under way: "s:ID:KEY". */
static void rid_of(const struct sched_slot *s, char *out, size_t cap)
{
    struct mote_sb sb;

    mote_sb_init(&sb, out, cap);
    mote_sb_s(&sb, "s:");
    mote_sb_s(&sb, s->def.id);
    mote_sb_s(&sb, ":");
    mote_sb_i(&sb, s->open_key);
}

/* The conversation of occurrence `key`: the schedule's, or a new one
 * named by it (ID-YYYYMMDD-HHMMSS for a time, ID-nN for an interval). */
static void conv_of(const struct sched_slot *s, int64_t key, char *out)
{
    struct mote_sb sb;

    if (s->def.conversation[0] != '\0') {
        mote_str_copy(out, MOTE_CONV_ID_MAX, s->def.conversation);
        return;
    }
    mote_sb_init(&sb, out, MOTE_CONV_ID_MAX);
    mote_sb_s(&sb, s->def.id);
    if (s->def.kind == MOTE_SCHED_EVERY) {
        mote_sb_s(&sb, "-n");
        mote_sb_i(&sb, key);
    } else {
        char iso[MOTE_ISO_MAX], c[16];
        size_t i, n = 0;

        mote_iso_write(iso, key, 0, true); /* 2026-03-01T06:00:00Z -> 20260301-060000 */
        for (i = 0; iso[i] != '\0' && iso[i] != 'Z' && n + 1 < sizeof(c); i++) {
            if (iso[i] >= '0' && iso[i] <= '9')
                c[n++] = iso[i];
            else if (iso[i] == 'T')
                c[n++] = '-';
        }
        c[n] = '\0';
        mote_sb_s(&sb, "-");
        mote_sb_s(&sb, c);
    }
}

static void skip(struct sched *q, struct sched_slot *s, int64_t from, int64_t to, uint64_t count,
                 const char *reason)
{
    char n[24];
    struct mote_sb sb;

    s->skips += count;
    mote_sb_init(&sb, n, sizeof(n));
    mote_sb_u(&sb, count);
    mote_sched_say(q, s->def.id, n, " occurrence(s) skipped: ", reason);
    (void)mote_sched_log_skip(q, s, from, to, count, reason);
}

/* The occurrence under way is over. */
static void done(struct sched *q, struct sched_slot *s, const char *outcome)
{
    (void)mote_sched_log_done(q, s, outcome);
    if (strcmp(outcome, "ok") == 0)
        s->runs++;
    else
        s->failed++;
    s->usage.input += s->open_usage.input;
    s->usage.output += s->open_usage.output;
    s->usage.cache_read += s->open_usage.cache_read;
    s->usage.cache_write += s->open_usage.cache_write;
    s->has_last = true;
    s->last_key = s->open_key;
    s->last_at = s->open_at;
    mote_str_copy(s->last_outcome, sizeof(s->last_outcome), outcome);
    mote_sched_say(q, s->def.id, "an occurrence ended: ", outcome, NULL);
    s->open = SO_NONE;
    mote_sched_log_tidy(q);
}

/* The occurrence under way, skipped (it never started). */
static void drop_open(struct sched *q, struct sched_slot *s, const char *reason)
{
    s->open = SO_NONE;
    skip(q, s, s->open_key, s->open_key, 1, reason);
}

/* A claimed occurrence: its prompt into its conversation (once: a request
 * id names it). Returns true while it still waits. */
static bool start_open(struct sched *q, struct sched_slot *s, int64_t now_s)
{
    struct serve *sv = q->sv;
    struct mote_conv *cv = mote_serve_find(sv, s->open_conv);
    char rid[MOTE_SCHED_ID_MAX + 32], why[160];
    uint32_t bad = 0, waited = mono(q) - s->open_since;
    uint64_t off;
    int rc, seen;

    if (sv->pub->phase != MOTE_SERVE_RUN)
        return true; /* shutting down: it starts (or is skipped) after the restart */
    if (cv == NULL) {
        rc = mote_serve_load(sv, s->open_conv, &cv, &bad);
        if (rc == MOTE_ERR_NOENT) {
            rc = mote_serve_create(sv, s->open_conv, &cv);
            if (rc == MOTE_ERR_EXIST)
                rc = mote_serve_load(sv, s->open_conv, &cv, &bad);
        }
        if (rc == MOTE_ERR_AGAIN || rc == MOTE_ERR_FULL)
            goto wait; /* being read; or every slot busy */
        if (rc < 0) {
            (void)mote_str_join(why, sizeof(why), "its conversation cannot be opened (",
                                mote_strerror(rc), ")");
            drop_open(q, s, why);
            return false;
        }
    }
    rid_of(s, rid, sizeof(rid));
    seen = mote_journal_rid_seen(&cv->jr, rid, strlen(rid));
    if (seen > 0) {
        /* it started before a crash: never again */
        s->open = SO_STARTED;
        (void)mote_sched_log_start(q, s);
        return false;
    }
    if (seen < 0) {
        drop_open(q, s, "its conversation's journal cannot be read");
        return false;
    }
    if (s->open_at > 0 && q->plausible && now_s - s->open_at > (int64_t)MOTE_SCHED_GRACE_S &&
        now_s - s->open_at > (int64_t)mote_sched_max_late(&s->def)) {
        drop_open(q, s, "it never started (mote stopped, or its conversation stayed busy) and "
                        "it is now older than max_late");
        return false;
    }
    if (mote_conv_busy(cv))
        goto wait;
    if (mote_journal_next_rid(&cv->jr, rid, strlen(rid)) < 0) {
        drop_open(q, s, "its request id cannot be journaled");
        return false;
    }
    rc = mote_serve_send(sv, s->open_conv, s->def.prompt, strlen(s->def.prompt), false, &cv,
                         &off, &bad);
    if (cv != NULL)
        (void)mote_journal_next_rid(&cv->jr, NULL, 0);
    if (rc == MOTE_ERR_BUSY || rc == MOTE_ERR_FULL || rc == MOTE_ERR_AGAIN)
        goto wait;
    if (rc == MOTE_ERR_SHUTDOWN)
        return true;
    if (rc < 0) {
        (void)mote_str_join(why, sizeof(why), "its prompt could not be sent (", mote_strerror(rc),
                            ")");
        drop_open(q, s, why);
        return false;
    }
    s->open = SO_STARTED;
    (void)mote_sched_log_start(q, s);
    mote_sched_say(q, s->def.id, "started in conversation ", s->open_conv, NULL);
    return false;
wait:
    if (s->open_at == 0 && waited > mote_sched_max_late(&s->def) * 1000u && waited > 60000u) {
        drop_open(q, s, "its conversation stayed busy for longer than max_late");
        return false;
    }
    return true;
}

/* A started occurrence: done once its conversation's turn is over (the
 * events say it; after a restart, the conversation's state). */
static void follow_open(struct sched *q, struct sched_slot *s)
{
    struct serve_look look;
    uint32_t bad;
    int rc = mote_serve_look(q->sv, s->open_conv, &look, &bad);

    if (rc == MOTE_ERR_AGAIN)
        return;
    if (rc < 0) {
        done(q, s, "error");
        return;
    }
    if (look.busy || strcmp(look.state, "needs_recovery") == 0 ||
        mote_serve_queued(q->sv, s->open_conv) || mote_serve_loading(q->sv, s->open_conv))
        return; /* its turn runs, or will (recovery) */
    done(q, s, look.last_error[0] != '\0' ? "error" : "ok");
}

/* Occurrence `key` (its time `at_s`, real-time s; 0: not known) begins:
 * claimed, synced, then started. */
static void fire(struct sched *q, struct sched_slot *s, int64_t key, int64_t at_s, int64_t now_s)
{
    s->open = SO_CLAIMED;
    s->open_key = key;
    s->open_at = at_s;
    s->open_since = mono(q);
    memset(&s->open_usage, 0, sizeof(s->open_usage));
    conv_of(s, key, s->open_conv);
    if (mote_sched_log_claim(q, s) < 0) {
        s->open = SO_NONE; /* not durable: it does not run */
        return;
    }
    (void)start_open(q, s, now_s);
}

/* A cron or single time: what is due at now_s. */
static void wall_turn(struct sched *q, struct sched_slot *s, int64_t now_s)
{
    const struct mote_tz *tz = mote_sched_zone(q, s);
    struct mote_sched_due d;

    if (!s->has_cursor) {
        /* made (or first seen) while the clock was not set: from now */
        s->cursor = now_s;
        s->has_cursor = true;
        (void)mote_sched_log_arm(q, s, now_s * 1000);
        return;
    }
    if (mote_sched_due(&s->def, tz, s->cursor, now_s, &d) < 0)
        return;
    s->cursor = d.cursor;
    if (d.skip_count > 0)
        skip(q, s, d.skip_from, d.skip_to, d.skip_count,
             d.too_old ? (s->def.catch_up == MOTE_CATCH_NONE
                              ? "missed (mote was not running, or the clock jumped over it): "
                                "catch_up is none"
                              : "missed (mote was not running, or the clock jumped over it), and "
                                "older than max_late")
                       : "missed (mote was not running, or the clock jumped over it): only the "
                         "most recent runs");
    if (!d.run)
        return;
    if (s->open != SO_NONE) {
        skip(q, s, d.run_key, d.run_key, 1, "the previous occurrence had not finished");
        return;
    }
    fire(q, s, d.run_key, d.run_key, now_s);
}

/* An interval: on the monotonic clock; after a start, the catch-up from
 * the time the journal knows (if the real-time clock tells the downtime). */
static void every_turn(struct sched *q, struct sched_slot *s, bool plausible, int64_t wall_ms)
{
    uint32_t m = mono(q), every = s->def.every_ms;
    int64_t now_s = mote_time_div(wall_ms, 1000u, NULL);

    if (!s->planned) {
        uint64_t missed;
        uint32_t age;

        s->planned = true;
        s->mono_set = true;
        if (s->last_ms > 0 && plausible && wall_ms >= s->last_ms) {
            mote_sched_every_missed(&s->def, s->last_ms, wall_ms, &missed, &age);
            s->next_mono = m + (every - age);
            if (missed > 0) {
                bool young = age <= MOTE_SCHED_GRACE_S * 1000u ||
                             (s->def.catch_up == MOTE_CATCH_LATEST &&
                              (uint64_t)age <= (uint64_t)mote_sched_max_late(&s->def) * 1000u);
                uint64_t first = s->last_n + 1, last = s->last_n + missed;

                s->last_ms = wall_ms - age; /* the most recent one's time */
                if (young && missed > 1)
                    skip(q, s, (int64_t)first, (int64_t)last - 1, missed - 1,
                         "missed while mote was not running: only the most recent runs");
                if (!young)
                    skip(q, s, (int64_t)first, (int64_t)last, missed,
                         s->def.catch_up == MOTE_CATCH_NONE
                             ? "missed while mote was not running: catch_up is none"
                             : "missed while mote was not running, and older than max_late");
                s->last_n = last;
                if (young) {
                    if (s->open != SO_NONE)
                        skip(q, s, (int64_t)last, (int64_t)last, 1,
                             "the previous occurrence had not finished");
                    else
                        fire(q, s, (int64_t)last, mote_time_div(s->last_ms, 1000u, NULL), now_s);
                }
            }
        } else {
            s->next_mono = m + every;
            if (s->last_n > 0)
                mote_sched_say(q, s->def.id,
                               "the downtime is not known (the real-time clock is not set): the "
                               "next occurrence comes a full interval after the start",
                               NULL, NULL);
        }
        return;
    }
    if (mote_before(m, s->next_mono))
        return;
    {
        uint64_t key = s->last_n + 1;
        uint32_t late = m - s->next_mono;

        /* the loop was held past more than one (a suspended system): the
         * latest runs, the others are skipped, never a burst */
        if (late >= every) {
            uint32_t n = late / every;

            skip(q, s, (int64_t)key, (int64_t)(key + n - 1), n,
                 "missed while mote was held (the system slept?): only the most recent runs");
            key += n;
            s->next_mono += n * every;
        }
        s->next_mono += every;
        s->last_n = key;
        s->last_ms = plausible ? wall_ms - (int64_t)(uint32_t)(m - (s->next_mono - every)) : 0;
        if (s->open != SO_NONE) {
            skip(q, s, (int64_t)key, (int64_t)key, 1, "the previous occurrence had not finished");
            return;
        }
        fire(q, s, (int64_t)key, plausible ? mote_time_div(s->last_ms, 1000u, NULL) : 0, now_s);
    }
}

int mote_sched_upcoming(struct sched *q, const struct sched_slot *s, int64_t *key, int64_t *at)
{
    *key = *at = 0;
    if (!s->used || !s->def.enabled || s->error[0] != '\0')
        return 0;
    if (s->def.kind == MOTE_SCHED_EVERY) {
        *key = (int64_t)s->last_n + 1;
        if (q->plausible && s->mono_set) {
            int32_t left = (int32_t)(s->next_mono - mono(q));

            *at = mote_time_div(q->wall_prev_ms + (left > 0 ? left : 0), 1000u, NULL);
        }
        return 1;
    }
    if (!s->has_cursor || mote_sched_next(&s->def, mote_sched_zone(q, s), s->cursor, key) < 0)
        return 0;
    *at = *key;
    return 1;
}

int mote_sched_armed(struct sched *q, struct sched_slot *s)
{
    int64_t ms;
    bool plausible = mote_sched_clock(q, &ms);

    s->planned = false;
    s->mono_set = false;
    if (s->def.kind == MOTE_SCHED_EVERY) {
        s->last_ms = plausible ? ms : 0;
        s->planned = true;
        s->mono_set = true;
        s->next_mono = mono(q) + s->def.every_ms;
    } else {
        s->has_cursor = plausible;
        s->cursor = plausible ? mote_time_div(ms, 1000u, NULL) : 0;
    }
    mote_sched_kick(q);
    if (!plausible && s->def.kind != MOTE_SCHED_EVERY)
        return 0; /* armed when the clock is set (wall_turn) */
    return mote_sched_log_arm(q, s, plausible ? ms : 0);
}

static void on_tick(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct sched *q = arg;
    uint32_t delay = TICK_IDLE_MS, m;
    int64_t wall_ms, now_s;
    bool plausible;
    unsigned i;

    (void)loop, (void)t;
    q->timer = 0;
    if (!q->on || q->stopping)
        return;
    plausible = mote_sched_clock(q, &wall_ms);
    now_s = mote_time_div(wall_ms, 1000u, NULL);
    for (i = 0; i < MOTE_SCHED_MAX && q->err == 0; i++) {
        struct sched_slot *s = &q->slots[i];

        if (!s->used)
            continue;
        if (s->open == SO_CLAIMED)
            (void)start_open(q, s, now_s);
        else if (s->open == SO_STARTED)
            follow_open(q, s);
        if (!s->def.enabled || s->error[0] != '\0' || q->sv->pub->phase != MOTE_SERVE_RUN)
            continue;
        if (s->def.kind == MOTE_SCHED_EVERY)
            every_turn(q, s, plausible, wall_ms);
        else if (plausible)
            wall_turn(q, s, now_s);
    }
    /* the next look: the earliest occurrence, a second while one is under
     * way, a minute at most (a jump of the clock is seen within it) */
    m = mono(q);
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        const struct sched_slot *s = &q->slots[i];
        int64_t key, at;

        if (!s->used)
            continue;
        if (s->open != SO_NONE && delay > TICK_OPEN_MS)
            delay = TICK_OPEN_MS;
        if (!s->def.enabled || s->error[0] != '\0')
            continue;
        if (!plausible && s->def.kind != MOTE_SCHED_EVERY && delay > TICK_OPEN_MS)
            delay = TICK_OPEN_MS; /* waiting for the clock: seen set within a second */
        if (s->def.kind == MOTE_SCHED_EVERY && s->mono_set) {
            uint32_t left = mote_before(m, s->next_mono) ? s->next_mono - m : 0;

            if (left < delay)
                delay = left;
        } else if (plausible && mote_sched_upcoming(q, s, &key, &at) > 0) {
            int64_t left = key * 1000 - wall_ms;

            if (left < (int64_t)delay)
                delay = left > 0 ? (uint32_t)left : 0;
        }
    }
    if (q->err == 0 && q->sv->pub->phase == MOTE_SERVE_RUN &&
        mote_timer_start(q->sv->loop, delay, on_tick, q, 0, &q->timer) < 0)
        q->timer = 0;
}

/* ---- the server's hooks --------------------------------------------------------------------- */

int mote_serve_sched_start(struct serve *sv)
{
    struct sched *q = mote_serve_sched_of(sv);
    char err[160];
    unsigned i;
    int rc;

    if (q == NULL)
        return 0;
    memset(q, 0, offsetof(struct sched, json));
    q->sv = sv;
    q->h = -1;
    mote_str_copy(q->default_tz, sizeof(q->default_tz),
                  sv->conf.sched_tz != NULL ? sv->conf.sched_tz : "");
    (void)mote_sched_defs_read(q, sv->conf.sched_fixed, sv->conf.sched_fixed_len);
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        struct sched_slot *s = &q->slots[i];

        if (!s->used)
            continue;
        if (s->def.tz[0] == '\0' && s->def.kind != MOTE_SCHED_EVERY)
            mote_str_copy(s->def.tz, sizeof(s->def.tz), q->default_tz);
        s->zone = mote_sched_zone_load(q, s->def.tz, err, sizeof(err));
        if (s->zone < -1) {
            mote_str_copy(s->error, sizeof(s->error), err);
            mote_sched_say(q, s->def.id, err, ": it does not run", NULL);
            s->zone = -1;
        }
    }
    rc = mote_sched_log_open(q);
    if (rc < 0) {
        mote_sched_say(q, NULL, "cannot use STATE/schedules.jsonl: ", mote_strerror(rc),
                       ": schedules do not run");
        q->err = rc;
        return rc;
    }
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        struct sched_slot *s = &q->slots[i];

        if (s->used && s->open != SO_NONE)
            mote_sched_say(q, s->def.id,
                           s->open == SO_CLAIMED ? "an occurrence claimed before mote stopped: "
                                                   "started once, or skipped"
                                                 : "an occurrence under way when mote stopped: "
                                                   "followed to its end",
                           NULL, NULL);
        if (s->used && s->def.kind == MOTE_SCHED_EVERY && s->last_ms == 0 && s->last_n == 0)
            (void)mote_sched_armed(q, s); /* never seen: it counts from now */
    }
    q->on = true;
    mote_sched_kick(q);
    return 0;
}

void mote_serve_sched_event(struct serve *sv, const struct mote_event *ev)
{
    struct sched *q = mote_serve_sched_of(sv);
    unsigned i;

    if (q == NULL || !q->on || ev->conv == NULL ||
        (ev->type != MOTE_EV_TURN_END && ev->type != MOTE_EV_ERROR &&
         ev->type != MOTE_EV_CANCELLED))
        return;
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        struct sched_slot *s = &q->slots[i];

        if (!s->used || s->open != SO_STARTED || strcmp(s->open_conv, mote_conv_id(ev->conv)) != 0)
            continue;
        if (ev->type == MOTE_EV_TURN_END) {
            s->open_usage.input = ev->turn_usage.input_tokens;
            s->open_usage.output = ev->turn_usage.output_tokens;
            s->open_usage.cache_read = ev->turn_usage.cache_read_tokens;
            s->open_usage.cache_write = ev->turn_usage.cache_write_tokens;
            done(q, s, "ok");
        } else {
            done(q, s, ev->type == MOTE_EV_CANCELLED ? "cancelled" : "error");
        }
        mote_sched_kick(q);
    }
}

void mote_serve_sched_stop(struct serve *sv)
{
    struct sched *q = mote_serve_sched_of(sv);

    if (q == NULL || !q->on)
        return;
    if (q->timer != 0)
        (void)mote_timer_stop(sv->loop, q->timer);
    q->timer = 0;
    if (sv->pub->phase == MOTE_SERVE_DONE) {
        q->on = false;
        mote_sched_log_close(q);
        return;
    }
    /* shutting down: no occurrence starts (the tick looks no more); the
     * turns that drain still end theirs (the events) */
    q->stopping = true;
}
