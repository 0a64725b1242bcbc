/* test_loop.c - timers (across the 32-bit clock wrap), watches, signals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote.h"
#include "mote_tport.h"

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

struct sseen {
    unsigned count[MOTE_SIG_COUNT];
    int calls;
};

static void on_sig(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    struct sseen *s = arg;

    (void)l;
    s->count[sig] += n;
    s->calls++;
}

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
    };

    return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
