/* test_loop.c - timers (across the 32-bit clock wrap), watches, signals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote.h"
#include "mote_tport.h"
#include "sig_seen.h"

static struct mote_tport tp;
static struct mote_loop loop;

static int setup_at(uint32_t start)
{
    mote_tport_init(&tp, start);
    return mote_loop_init(&loop, &tp.port);
}

static int setup_wrap(void **state)
{
    (void)state;
    return setup_at(0xFFFFFFFFu - 1500u); /* 1.5 s before the wrap */
}

static int teardown(void **state)
{
    (void)state;
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
    return 0;
}

struct fired {
    int n;
    uint32_t at[8];
    int order[8];
};

static struct fired fired;

static void on_timer(struct mote_loop *l, mote_timer_id id, void *arg)
{
    (void)id;
    if (fired.n < 8) {
        fired.at[fired.n] = mote_loop_now(l);
        fired.order[fired.n] = (int)(intptr_t)arg;
    }
    fired.n++;
}

static void test_timers_across_wrap(void **state)
{
    uint32_t start = tp.now;
    int i;

    (void)state;
    memset(&fired, 0, sizeof(fired));
    /* Due before, exactly at and after the wrap of the millisecond clock. */
    assert_int_equal(mote_timer_start(&loop, 3000, on_timer, (void *)3, 0, NULL), 0);
    assert_int_equal(mote_timer_start(&loop, 1000, on_timer, (void *)1, 0, NULL), 0);
    assert_int_equal(mote_timer_start(&loop, 1501, on_timer, (void *)2, 0, NULL), 0);
    for (i = 0; i < 20 && fired.n < 3; i++)
        assert_true(mote_loop_poll(&loop, -1) >= 0);
    assert_int_equal(fired.n, 3);
    assert_int_equal(fired.order[0], 1);
    assert_int_equal(fired.order[1], 2);
    assert_int_equal(fired.order[2], 3);
    /* Each fired at its due time, not early, not late (simulated clock). */
    assert_int_equal(fired.at[0] - start, 1000);
    assert_int_equal(fired.at[1] - start, 1501);
    assert_int_equal(fired.at[1], 0u); /* the clock wrapped to 0 */
    assert_int_equal(fired.at[2] - start, 3000);
}

static void test_timer_stop_and_stale(void **state)
{
    mote_timer_id id, id2;

    (void)state;
    memset(&fired, 0, sizeof(fired));
    assert_int_equal(mote_timer_start(&loop, 10, on_timer, NULL, 0, &id), 0);
    assert_int_equal(mote_timer_stop(&loop, id), 0);
    assert_int_equal(mote_timer_stop(&loop, id), MOTE_ERR_STALE);
    assert_int_equal(mote_timer_start(&loop, 10, on_timer, NULL, 0, &id2), 0);
    assert_int_not_equal(id, id2); /* same slot, new generation */
    assert_int_equal(mote_timer_stop(&loop, id), MOTE_ERR_STALE);
    (void)mote_loop_poll(&loop, 50);
    assert_int_equal(fired.n, 1);
    /* No owner and no callback is refused. */
    assert_int_equal(mote_timer_start(&loop, 10, NULL, NULL, 0, NULL), MOTE_ERR_INVAL);
}

static void test_timer_table_full(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < MOTE_MAX_TIMERS; i++)
        assert_int_equal(mote_timer_start(&loop, 100, on_timer, NULL, 0, NULL), 0);
    assert_int_equal(mote_timer_start(&loop, 100, on_timer, NULL, 0, NULL), MOTE_ERR_FULL);
}

/* A job that sleeps on its own timer and counts its wake-ups. */
struct sleeper {
    int wakes;
    uint32_t woke_at;
};

static int sleeper_step(struct mote_loop *l, mote_job_id self, void *p)
{
    struct sleeper *s = p;

    if (mote_job_cancelled(l, self))
        return MOTE_STEP_CANCELLED;
    if (s->wakes++ == 0) {
        if (mote_timer_start(l, 250, NULL, NULL, self, NULL) < 0)
            return MOTE_ERR_FULL;
        return MOTE_STEP_PENDING;
    }
    s->woke_at = mote_loop_now(l);
    return MOTE_STEP_DONE;
}

static const struct mote_task_ops sleeper_ops = {"sleeper", sleeper_step, NULL};

static void test_job_timer_wakes_owner(void **state)
{
    struct sleeper s = {0};
    uint32_t t0 = tp.now;
    mote_job_id id;
    int i;

    (void)state;
    assert_int_equal(mote_job_spawn(&loop, "s", &sleeper_ops, &s, NULL, &id), 0);
    for (i = 0; i < 10 && mote_job_state(&loop, id) == MOTE_JOB_RUNNING; i++)
        (void)mote_loop_poll(&loop, -1);
    assert_int_equal(mote_job_state(&loop, id), MOTE_JOB_DONE);
    assert_int_equal(s.wakes, 2); /* not stepped while asleep */
    assert_int_equal(s.woke_at - t0, 250);
}

static void test_job_end_disarms_its_timers(void **state)
{
    struct sleeper s = {0};
    mote_job_id id;
    unsigned i, armed = 0;

    (void)state;
    assert_int_equal(mote_job_spawn(&loop, "s", &sleeper_ops, &s, NULL, &id), 0);
    (void)mote_loop_poll(&loop, 0); /* first step arms a timer */
    assert_int_equal(mote_job_cancel(&loop, id), 0);
    (void)mote_loop_poll(&loop, 0);
    assert_int_equal(mote_job_state(&loop, id), MOTE_JOB_CANCELLED);
    for (i = 0; i < MOTE_MAX_TIMERS; i++)
        armed += loop.timers[i].armed;
    assert_int_equal(armed, 0);
}

/* ---- watches ---- */

struct wseen {
    int n;
    int fd;
    unsigned revents;
};

static void on_watch(struct mote_loop *l, mote_watch_id id, int fd, unsigned revents, void *arg)
{
    struct wseen *w = arg;

    (void)l, (void)id;
    w->n++;
    w->fd = fd;
    w->revents = revents;
}

static void test_watch_delivers(void **state)
{
    struct wseen w = {0};
    mote_watch_id id;
    uint32_t t0 = tp.now;

    (void)state;
    assert_int_equal(mote_watch_add(&loop, 7, MOTE_POLL_IN, on_watch, &w, 0, &id), 0);
    /* Not ready: the poll waits its full timeout. */
    assert_int_equal(mote_loop_poll(&loop, 40), 0);
    assert_int_equal(w.n, 0);
    assert_int_equal(tp.now - t0, 40);
    /* Ready for writing only: not what it asked for. */
    mote_tport_fd_ready(&tp, 7, MOTE_POLL_OUT);
    (void)mote_loop_poll(&loop, 0);
    assert_int_equal(w.n, 0);
    mote_tport_fd_ready(&tp, 7, MOTE_POLL_IN);
    assert_int_equal(mote_loop_poll(&loop, 1000), 1);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.fd, 7);
    assert_int_equal(w.revents, MOTE_POLL_IN);
    assert_int_equal(mote_watch_revents(&loop, id), MOTE_POLL_IN);
    assert_int_equal(mote_watch_fd(&loop, id), 7);
    assert_int_equal(mote_watch_set(&loop, id, MOTE_POLL_OUT), 0);
    (void)mote_loop_poll(&loop, 0);
    assert_int_equal(w.n, 1);
    assert_int_equal(mote_watch_remove(&loop, id), 0);
    assert_int_equal(mote_watch_remove(&loop, id), MOTE_ERR_STALE);
    assert_int_equal(mote_watch_fd(&loop, id), MOTE_ERR_STALE);
    assert_int_equal(mote_watch_add(&loop, -1, MOTE_POLL_IN, on_watch, &w, 0, NULL),
                     MOTE_ERR_INVAL);
}

/* A watch removed and its slot reused in the same turn (by an
 * earlier watch's callback) never receives the old descriptor's events. */
static mote_watch_id victim, newcomer;
static struct wseen seen_new;

static void on_first(struct mote_loop *l, mote_watch_id id, int fd, unsigned revents, void *arg)
{
    (void)id, (void)fd, (void)revents, (void)arg;
    assert_int_equal(mote_watch_remove(l, victim), 0);
    assert_int_equal(mote_watch_add(l, 9, MOTE_POLL_IN, on_watch, &seen_new, 0, &newcomer), 0);
}

static void test_watch_slot_reused_in_one_turn(void **state)
{
    struct wseen old = {0};
    mote_watch_id first;

    (void)state;
    memset(&seen_new, 0, sizeof(seen_new));
    assert_int_equal(mote_watch_add(&loop, 7, MOTE_POLL_IN, on_first, NULL, 0, &first), 0);
    assert_int_equal(mote_watch_add(&loop, 8, MOTE_POLL_IN, on_watch, &old, 0, &victim), 0);
    mote_tport_fd_ready(&tp, 7, MOTE_POLL_IN);
    mote_tport_fd_ready(&tp, 8, MOTE_POLL_IN);
    (void)mote_loop_poll(&loop, 0);
    /* The newcomer took the victim's slot; fd 9 was never ready. */
    assert_int_equal(newcomer & 0xFFu, victim & 0xFFu);
    assert_int_equal(seen_new.n, 0);
    assert_int_equal(old.n, 0);
    assert_int_equal(mote_watch_remove(&loop, first), 0);
    assert_int_equal(mote_watch_remove(&loop, newcomer), 0);
}

/* ---- signals ---- */

static void test_signals_are_events(void **state)
{
    struct sseen s = {{0}, 0};
    uint32_t t0 = tp.now;

    (void)state;
    mote_loop_on_signal(&loop, on_sig, &s);
    mote_tport_raise(&tp, MOTE_SIG_INT);
    mote_tport_raise(&tp, MOTE_SIG_INT);
    mote_tport_raise(&tp, MOTE_SIG_TERM);
    assert_int_equal(mote_loop_poll(&loop, 5000), 2);
    assert_int_equal(tp.now, t0); /* a pending signal ends the wait at once */
    assert_int_equal(s.count[MOTE_SIG_INT], 2);
    assert_int_equal(s.count[MOTE_SIG_TERM], 1);
    assert_int_equal(s.count[MOTE_SIG_HUP], 0);
    assert_int_equal(s.calls, 2);
    (void)mote_loop_poll(&loop, 0);
    assert_int_equal(s.calls, 2); /* seen once */
}

/* wait_jobs: a signal handler that breaks the wait (the third Ctrl+C). */
static int stubborn_step(struct mote_loop *l, mote_job_id self, void *p)
{
    (void)l, (void)self, (void)p;
    return MOTE_STEP_PENDING;
}

static const struct mote_task_ops stubborn_ops = {"stubborn", stubborn_step, NULL};

static void break_on_sig(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    (void)sig, (void)n, (void)arg;
    mote_loop_break(l);
}

static void raise_after_500(struct mote_tport *t, int32_t timeout, void *arg)
{
    uint32_t *t0 = arg;

    (void)timeout;
    if (t->now - *t0 >= 500 && t->sig[MOTE_SIG_INT] == 0)
        mote_tport_raise(t, MOTE_SIG_INT);
}

static void test_wait_jobs_break(void **state)
{
    mote_job_id id;
    uint32_t t0 = tp.now;

    (void)state;
    assert_int_equal(mote_job_spawn(&loop, "s", &stubborn_ops, NULL, NULL, &id), 0);
    mote_loop_on_signal(&loop, break_on_sig, NULL);
    tp.on_wait = raise_after_500;
    tp.on_wait_arg = &t0;
    assert_int_equal(mote_loop_wait_jobs(&loop, 60000), MOTE_ERR_INTR);
    assert_true(tp.now - t0 >= 500);
    assert_true(tp.now - t0 < 500 + MOTE_LOOP_MAX_WAIT_MS + 1);
    tp.on_wait = NULL;
    assert_int_equal(mote_loop_wait_jobs(&loop, 100), MOTE_ERR_TIMEDOUT);
}

/* The loop never runs inside itself. A timer callback, a
 * job's step and its release that try to wait (mote_loop_poll,
 * mote_loop_wait_jobs) are refused with MOTE_ERR_BUSY, and the outer
 * turn is the only one that ran: a nested call never runs a whole turn
 * of its own (and waits). */
static int nested[6], nn;
static uint32_t nested_turn;

static void try_nesting(struct mote_loop *l)
{
    if (nn + 2 <= 6) {
        nested[nn++] = mote_loop_poll(l, 50);
        nested[nn++] = mote_loop_wait_jobs(l, 50);
    }
}

static void nesting_timer(struct mote_loop *l, mote_timer_id id, void *arg)
{
    (void)id, (void)arg;
    try_nesting(l);
}

static int nesting_step(struct mote_loop *l, mote_job_id self, void *p)
{
    (void)self, (void)p;
    try_nesting(l);
    return MOTE_STEP_DONE;
}

static void nesting_release(struct mote_loop *l, void *p)
{
    (void)p;
    try_nesting(l);
}

static const struct mote_task_ops nesting_ops = {"nesting", nesting_step, nesting_release};

static void test_no_loop_inside_the_loop(void **state)
{
    mote_timer_id t;
    mote_job_id id;
    uint32_t t0 = tp.now;
    int i;

    (void)state;
    nn = 0;
    assert_int_equal(mote_timer_start(&loop, 0, nesting_timer, NULL, 0, &t), 0);
    assert_int_equal(mote_job_spawn(&loop, "n", &nesting_ops, NULL, NULL, &id), 0);
    nested_turn = loop.turn;
    assert_true(mote_loop_poll(&loop, 0) > 0);
    assert_int_equal(loop.turn, nested_turn + 1); /* no turn ran inside */
    assert_int_equal(nn, 6);
    for (i = 0; i < nn; i++)
        assert_int_equal(nested[i], MOTE_ERR_BUSY);
    assert_int_equal(mote_job_state(&loop, id), MOTE_JOB_DONE);
    assert_true(tp.now - t0 < 50); /* nothing waited */
    /* From the top level they work again. */
    assert_int_equal(mote_loop_wait_jobs(&loop, 10), 0);
    assert_true(mote_loop_poll(&loop, 0) >= 0);
}

static void test_shutdown_refuses_spawn(void **state)
{
    mote_job_id id = 99;

    (void)state;
    mote_loop_stop_spawns(&loop);
    assert_int_equal(mote_job_spawn(&loop, "s", &stubborn_ops, NULL, NULL, &id),
                     MOTE_ERR_SHUTDOWN);
    assert_int_equal(id, 0);
}

static void test_bad_port(void **state)
{
    struct mote_port p = tp.port;
    struct mote_loop l;

    (void)state;
    p.version = 99;
    assert_int_equal(mote_loop_init(&l, &p), MOTE_ERR_INVAL);
    p = tp.port;
    p.wait = NULL;
    assert_int_equal(mote_loop_init(&l, &p), MOTE_ERR_NOSYS);
    p = tp.port;
    p.size = 8; /* older, smaller port: now_ms lies beyond its size */
    assert_int_equal(mote_loop_init(&l, &p), MOTE_ERR_NOSYS);
    assert_int_equal(mote_loop_init(&l, NULL), MOTE_ERR_INVAL);
}

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(mote_strerror(MOTE_OK), "success");
    assert_string_equal(mote_strerror(MOTE_ERR_FULL), "table full");
    assert_string_equal(mote_strerror(MOTE_ERR_STALE), "stale handle");
    assert_string_equal(mote_strerror(-424242), "unknown error");
    assert_int_equal(MOTE_ERR_AGAIN, -11); /* errno-aligned on Linux */
    assert_int_equal(MOTE_ERR_TIMEDOUT, -110);
}

/* ---- inside another event loop (mote_loop_host) ------------------------ */

/* A host loop's view: what it was told to watch, its one timer. */
struct host_view {
    int fds[8];
    unsigned ev[8];
    unsigned nfd;
    int calls;          /* watch() calls */
    int timer_calls;
    int32_t timer_ms;   /* the last timer() (< 0: none) */
    char log[256];      /* "w5:1 w5:0 t100 ..." */
};

static struct host_view hv;

static void hv_log(const char *s)
{
    if (strlen(hv.log) + strlen(s) + 2 < sizeof(hv.log)) {
        strcat(hv.log, s);
        strcat(hv.log, " ");
    }
}

static void host_watch(void *arg, int fd, unsigned events)
{
    char m[32];
    unsigned i;

    assert_ptr_equal(arg, &hv);
    hv.calls++;
    snprintf(m, sizeof(m), "w%d:%u", fd, events);
    hv_log(m);
    for (i = 0; i < hv.nfd && hv.fds[i] != fd; i++) {
    }
    if (events == 0) {
        assert_true(i < hv.nfd); /* only what it watches is ever stopped */
        hv.fds[i] = hv.fds[hv.nfd - 1];
        hv.ev[i] = hv.ev[--hv.nfd];
        return;
    }
    if (i == hv.nfd) {
        assert_true(hv.nfd < 8);
        hv.fds[hv.nfd++] = fd;
    }
    hv.ev[i] = events;
}

static void host_timer(void *arg, int32_t ms)
{
    char m[32];

    (void)arg;
    hv.timer_calls++;
    hv.timer_ms = ms;
    snprintf(m, sizeof(m), "t%d", (int)ms);
    hv_log(m);
}

static unsigned hv_events(int fd)
{
    unsigned i;

    for (i = 0; i < hv.nfd; i++) {
        if (hv.fds[i] == fd)
            return hv.ev[i];
    }
    return 0;
}

static const struct mote_loop_host test_host = {host_watch, host_timer, &hv};

/* The test port with a signal descriptor (fd 99), as port/posix has. */
static struct mote_port sig_port;

static int tp_sigfd(void *ctx)
{
    (void)ctx;
    return 99;
}

static int setup_hosted(void **state)
{
    (void)state;
    memset(&hv, 0, sizeof(hv));
    hv.timer_ms = -1;
    mote_tport_init(&tp, 0xFFFFFFFFu - 1500u);
    sig_port = tp.port;
    sig_port.signals_fd = tp_sigfd;
    return mote_loop_init(&loop, &sig_port);
}

static int watch_hits;

static void count_watch(struct mote_loop *l, mote_watch_id id, int fd, unsigned revents, void *arg)
{
    (void)l, (void)id, (void)fd, (void)arg;
    assert_true(revents != 0);
    watch_hits++;
}

/* The host is told each descriptor once, with the events of every watch
 * on it together, the signal descriptor among them; a change, and only a
 * change, is told again; NULL takes everything back. */
static void test_host_told_watches(void **state)
{
    mote_watch_id a, b;
    int calls;

    (void)state;
    assert_int_equal(mote_loop_host(&loop, &test_host), 0);
    assert_int_equal(hv_events(99), MOTE_POLL_IN); /* signals */
    assert_int_equal(hv.nfd, 1);
    assert_int_equal(hv.timer_calls, 1); /* the safety net's deadline */
    assert_true(hv.timer_ms >= 0 && hv.timer_ms <= MOTE_LOOP_MAX_WAIT_MS);
    assert_int_equal(mote_watch_add(&loop, 5, MOTE_POLL_IN, count_watch, NULL, 0, &a), 0);
    assert_int_equal(hv_events(5), MOTE_POLL_IN);
    assert_int_equal(mote_watch_add(&loop, 5, MOTE_POLL_OUT, count_watch, NULL, 0, &b), 0);
    assert_int_equal(hv_events(5), MOTE_POLL_IN | MOTE_POLL_OUT);
    assert_int_equal(hv.nfd, 2);
    calls = hv.calls;
    assert_int_equal(mote_watch_set(&loop, b, MOTE_POLL_OUT), 0); /* no change */
    assert_int_equal(hv.calls, calls);
    /* Readiness goes to the watches that asked for it. */
    watch_hits = 0;
    assert_true(mote_loop_ready(&loop, 5, MOTE_POLL_OUT) > 0);
    assert_int_equal(watch_hits, 1);
    assert_int_equal(mote_watch_revents(&loop, b), MOTE_POLL_OUT);
    assert_int_equal(mote_watch_revents(&loop, a), 0);
    /* A watch removed: the descriptor is told again (it may be closed and
     * its number reused before the host hears of it). */
    assert_int_equal(mote_watch_remove(&loop, a), 0);
    assert_int_equal(hv_events(5), MOTE_POLL_OUT);
    assert_non_null(strstr(hv.log, "w5:0 w5:2"));
    assert_int_equal(mote_watch_remove(&loop, b), 0);
    assert_int_equal(hv_events(5), 0);
    assert_int_equal(hv.nfd, 1);
    /* Taken back: the host watches nothing, has no timer. */
    assert_int_equal(mote_loop_host(&loop, NULL), 0);
    assert_int_equal(hv.nfd, 0);
    assert_int_equal(hv.timer_ms, -1);
    assert_int_equal(mote_loop_host(&loop, &(struct mote_loop_host){host_watch, NULL, &hv}),
                     MOTE_ERR_INVAL);
}

/* Timers: the host's deadline is the next timer's; an earlier one is
 * told at once (also from outside the loop), a call that comes early
 * fires nothing and sets the deadline again. */
static void test_host_timers(void **state)
{
    (void)state;
    memset(&fired, 0, sizeof(fired));
    assert_int_equal(mote_loop_host(&loop, &test_host), 0);
    assert_int_equal(mote_timer_start(&loop, 300, on_timer, (void *)1, 0, NULL), 0);
    assert_int_equal(hv.timer_ms, 300);
    assert_int_equal(mote_timer_start(&loop, 100, on_timer, (void *)2, 0, NULL), 0);
    assert_int_equal(hv.timer_ms, 100);
    mote_tport_advance(&tp, 50);
    assert_int_equal(mote_loop_timeout(&loop), 0); /* early: nothing due */
    assert_int_equal(fired.n, 0);
    assert_int_equal(hv.timer_ms, 50);
    mote_tport_advance(&tp, 50); /* across the clock's wrap */
    assert_true(mote_loop_timeout(&loop) > 0);
    assert_int_equal(fired.n, 1);
    assert_int_equal(fired.order[0], 2);
    assert_int_equal(hv.timer_ms, 200);
    mote_tport_advance(&tp, 200);
    assert_true(mote_loop_timeout(&loop) > 0);
    assert_int_equal(fired.n, 2);
    assert_int_equal(hv.timer_ms, MOTE_LOOP_MAX_WAIT_MS); /* nothing left: the safety net */
}

/* A job on a watch and a timer, run by the host: spawned from outside
 * the loop it is runnable at once (deadline 0); readiness steps it; when
 * it ends its watch is dropped and its continuation runs in the same
 * call. */
struct hjob {
    int steps;
    mote_watch_id w;
};

static int hjob_step(struct mote_loop *l, mote_job_id self, void *p)
{
    struct hjob *h = p;

    h->steps++;
    if (h->w == 0)
        return mote_watch_add(l, 7, MOTE_POLL_IN, NULL, NULL, self, &h->w) < 0 ? MOTE_ERR_FULL
                                                                              : MOTE_STEP_PENDING;
    return mote_watch_revents(l, h->w) & MOTE_POLL_IN ? MOTE_STEP_DONE : MOTE_STEP_PENDING;
}

static const struct mote_task_ops hjob_ops = {"hjob", hjob_step, NULL};
static int conts_run;

static void hjob_then(struct mote_loop *l, mote_job_id job, enum mote_job_state how,
                      const char *errmsg, void *arg)
{
    (void)l, (void)job, (void)errmsg, (void)arg;
    assert_int_equal(how, MOTE_JOB_DONE);
    conts_run++;
}

static void test_host_runs_a_job(void **state)
{
    struct hjob h = {0, 0};
    mote_job_id id;

    (void)state;
    conts_run = 0;
    assert_int_equal(mote_loop_host(&loop, &test_host), 0);
    assert_int_equal(mote_job_spawn(&loop, "h", &hjob_ops, &h, NULL, &id), 0);
    assert_int_equal(hv.timer_ms, 0); /* runnable: call at once */
    assert_int_equal(mote_job_then(&loop, id, "k", hjob_then, NULL), 0);
    assert_true(mote_loop_timeout(&loop) > 0);
    assert_int_equal(h.steps, 1);
    assert_int_equal(hv_events(7), MOTE_POLL_IN);
    assert_int_equal(hv.timer_ms, MOTE_LOOP_MAX_WAIT_MS); /* waits for fd 7 only */
    assert_int_equal(mote_loop_ready(&loop, 7, MOTE_POLL_OUT), 0); /* not what it asked for */
    assert_int_equal(h.steps, 1);
    assert_true(mote_loop_ready(&loop, 7, MOTE_POLL_IN) > 0);
    assert_int_equal(h.steps, 2);
    assert_int_equal(mote_job_state(&loop, id), MOTE_JOB_DONE);
    assert_int_equal(conts_run, 1);
    assert_int_equal(hv_events(7), 0); /* the job's watch went with it */
    /* Called from inside the loop, the hosted calls refuse like poll. */
    assert_int_equal(mote_job_wake(&loop, id), MOTE_ERR_ALREADY);
}

/* Signals come through the port's descriptor, like the other fds. */
static int sigs_seen;

static void count_sig(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    (void)arg;
    assert_int_equal(sig, MOTE_SIG_TERM);
    sigs_seen += (int)n;
    /* Inside the loop, the hosted entry points refuse to nest. */
    assert_int_equal(mote_loop_ready(l, 5, MOTE_POLL_IN), MOTE_ERR_BUSY);
    assert_int_equal(mote_loop_timeout(l), MOTE_ERR_BUSY);
    assert_int_equal(mote_loop_host(l, NULL), MOTE_ERR_BUSY);
}

static void test_host_signals(void **state)
{
    (void)state;
    sigs_seen = 0;
    mote_loop_on_signal(&loop, count_sig, NULL);
    assert_int_equal(mote_loop_host(&loop, &test_host), 0);
    mote_tport_raise(&tp, MOTE_SIG_TERM);
    mote_tport_raise(&tp, MOTE_SIG_TERM);
    assert_int_equal(mote_loop_timeout(&loop), 0); /* not the signal descriptor's turn */
    assert_int_equal(sigs_seen, 0);
    assert_true(mote_loop_ready(&loop, 99, MOTE_POLL_IN) > 0);
    assert_int_equal(sigs_seen, 2);
}

/* A port without a signal descriptor: signals are taken at every turn. */
static void test_host_no_sigfd(void **state)
{
    (void)state;
    sigs_seen = 0;
    mote_loop_on_signal(&loop, count_sig, NULL);
    assert_int_equal(mote_loop_host(&loop, &test_host), 0);
    assert_int_equal(hv.nfd, 0);
    mote_tport_raise(&tp, MOTE_SIG_TERM);
    assert_true(mote_loop_timeout(&loop) > 0);
    assert_int_equal(sigs_seen, 1);
}

/* The enumerating form: one entry per descriptor, signals included, and
 * the longest wait. */
static void test_loop_fds(void **state)
{
    struct mote_pollfd fds[MOTE_MAX_WATCHES + 1];
    int32_t ms = -7;
    mote_job_id id;
    int n, i;

    (void)state;
    assert_int_equal(mote_watch_add(&loop, 5, MOTE_POLL_IN, count_watch, NULL, 0, NULL), 0);
    assert_int_equal(mote_watch_add(&loop, 5, MOTE_POLL_OUT, count_watch, NULL, 0, NULL), 0);
    assert_int_equal(mote_watch_add(&loop, 6, MOTE_POLL_IN, count_watch, NULL, 0, NULL), 0);
    assert_int_equal(mote_timer_start(&loop, 250, on_timer, NULL, 0, NULL), 0);
    n = mote_loop_fds(&loop, fds, MOTE_MAX_WATCHES + 1, &ms);
    assert_int_equal(n, 3);
    assert_int_equal(ms, 250);
    for (i = 0; i < n; i++) {
        unsigned want = fds[i].fd == 5 ? MOTE_POLL_IN | MOTE_POLL_OUT : MOTE_POLL_IN;

        assert_true(fds[i].fd == 5 || fds[i].fd == 6 || fds[i].fd == 99);
        assert_int_equal(fds[i].events, want);
    }
    assert_int_equal(mote_loop_fds(&loop, fds, 2, &ms), MOTE_ERR_FULL);
    assert_int_equal(mote_job_spawn(&loop, "s", &stubborn_ops, NULL, NULL, &id), 0);
    assert_int_equal(mote_loop_fds(&loop, fds, MOTE_MAX_WATCHES + 1, &ms), 3);
    assert_int_equal(ms, 0); /* a job to step: no waiting */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_timers_across_wrap, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_timer_stop_and_stale, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_timer_table_full, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_job_timer_wakes_owner, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_job_end_disarms_its_timers, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_watch_delivers, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_watch_slot_reused_in_one_turn, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_signals_are_events, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_wait_jobs_break, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_no_loop_inside_the_loop, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_refuses_spawn, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_bad_port, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_strerror, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_host_told_watches, setup_hosted, teardown),
        cmocka_unit_test_setup_teardown(test_host_timers, setup_hosted, teardown),
        cmocka_unit_test_setup_teardown(test_host_runs_a_job, setup_hosted, teardown),
        cmocka_unit_test_setup_teardown(test_host_signals, setup_hosted, teardown),
        cmocka_unit_test_setup_teardown(test_host_no_sigfd, setup_wrap, teardown),
        cmocka_unit_test_setup_teardown(test_loop_fds, setup_hosted, teardown),
    };

    return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
