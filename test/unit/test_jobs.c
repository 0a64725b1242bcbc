/* test_jobs.c - the job table: pruning, handles, cancel, continuations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote.h"
#include "mote_tport.h"

struct ttask {
    int steps;
    int result;         /* what the next step returns */
    bool ignore_cancel; /* keeps running after a cancel */
    int released;
};

static int ttask_step(struct mote_loop *loop, mote_job_id self, void *p)
{
    struct ttask *t = p;

    t->steps++;
    if (mote_job_cancelled(loop, self) && !t->ignore_cancel)
        return MOTE_STEP_CANCELLED;
    if (t->result < 0)
        (void)mote_job_set_error(loop, self, "boom: the task failed");
    return t->result;
}

static void ttask_release(struct mote_loop *loop, void *p)
{
    (void)loop;
    ((struct ttask *)p)->released++;
}

static const struct mote_task_ops tops = {"test", ttask_step, ttask_release};

struct fixture {
    struct mote_tport tp;
    struct mote_loop loop;
    struct ttask tasks[64];
    mote_job_id ids[64];
};

static int setup(void **state)
{
    static struct fixture f;

    memset(&f, 0, sizeof(f));
    mote_tport_init(&f.tp, 1000);
    assert_int_equal(mote_loop_init(&f.loop, &f.tp.port), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    unsigned i;

    mote_loop_deinit(&f->loop);
    /* Every slot is free and every task released exactly once. */
    for (i = 0; i < MOTE_MAX_JOBS; i++)
        assert_int_equal(f->loop.jobs[i].state, MOTE_JOB_FREE);
    for (i = 0; i < 64; i++) {
        if (f->tasks[i].steps > 0)
            assert_int_equal(f->tasks[i].released, 1);
    }
    mote_tport_deinit(&f->tp);
    return 0;
}

static void spawn(struct fixture *f, unsigned i)
{
    assert_int_equal(mote_job_spawn(&f->loop, "t", &tops, &f->tasks[i], NULL, &f->ids[i]), 0);
}

/* Spawns n jobs from index `first` that finish DONE on their first step,
 * one per turn so their finishing order is their index order. */
static void finish_n(struct fixture *f, unsigned first, unsigned n)
{
    unsigned i;

    assert_true(first + n <= 64);
    for (i = 0; i < n; i++) {
        struct ttask *t = &f->tasks[first + i];
        mote_job_id *id = &f->ids[first + i];

        t->result = MOTE_STEP_DONE;
        assert_int_equal(mote_job_spawn(&f->loop, "t", &tops, t, NULL, id), 0);
        assert_true(mote_loop_poll(&f->loop, 0) >= 1);
        assert_int_equal(mote_job_state(&f->loop, *id), MOTE_JOB_DONE);
    }
}

static void counts(struct fixture *f, unsigned want_active, unsigned want_inactive)
{
    unsigned a, in;

    mote_job_counts(&f->loop, &a, &in);
    assert_int_equal(a, want_active);
    assert_int_equal(in, want_inactive);
}

/* Spawning a probe job triggers pruning; the probe stays active. */
static void prune_now(struct fixture *f, unsigned probe)
{
    f->tasks[probe].result = MOTE_STEP_PENDING;
    spawn(f, probe);
}

static void test_three_finished_all_kept(void **state)
{
    struct fixture *f = *state;

    finish_n(f, 0, 3);
    prune_now(f, 40);
    counts(f, 1, 3);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_DONE);
}

static void test_five_finished_newest_three_kept(void **state)
{
    struct fixture *f = *state;

    finish_n(f, 0, 5);
    prune_now(f, 40);
    counts(f, 1, 3);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_ERR_STALE);
    assert_int_equal(mote_job_state(&f->loop, f->ids[1]), MOTE_ERR_STALE);
    assert_int_equal(mote_job_state(&f->loop, f->ids[2]), MOTE_JOB_DONE);
    assert_int_equal(mote_job_state(&f->loop, f->ids[4]), MOTE_JOB_DONE);
}

static void test_one_active_four_finished(void **state)
{
    struct fixture *f = *state;

    f->tasks[10].result = MOTE_STEP_PENDING;
    spawn(f, 10);
    finish_n(f, 0, 4);
    prune_now(f, 40);
    counts(f, 2, 3);
    assert_int_equal(mote_job_state(&f->loop, f->ids[10]), MOTE_JOB_RUNNING);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_ERR_STALE);
    assert_int_equal(mote_job_state(&f->loop, f->ids[1]), MOTE_JOB_DONE);
}

static void test_two_active_four_finished(void **state)
{
    struct fixture *f = *state;

    f->tasks[10].result = MOTE_STEP_PENDING;
    f->tasks[11].result = MOTE_STEP_PENDING;
    spawn(f, 10);
    finish_n(f, 0, 2);
    spawn(f, 11);
    finish_n(f, 2, 2);
    prune_now(f, 40);
    counts(f, 3, 3);
    assert_int_equal(mote_job_state(&f->loop, f->ids[10]), MOTE_JOB_RUNNING);
    assert_int_equal(mote_job_state(&f->loop, f->ids[11]), MOTE_JOB_RUNNING);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_ERR_STALE);
    assert_int_equal(mote_job_state(&f->loop, f->ids[3]), MOTE_JOB_DONE);
}

static void test_exactly_max_inactive(void **state)
{
    struct fixture *f = *state;

    finish_n(f, 0, MOTE_MAX_INACTIVE_JOBS);
    prune_now(f, 40);
    counts(f, 1, MOTE_MAX_INACTIVE_JOBS);
    finish_n(f, 20, 1); /* one more: the oldest goes at the next spawn */
    prune_now(f, 41);
    counts(f, 2, MOTE_MAX_INACTIVE_JOBS);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_ERR_STALE);
}

static void test_zero_finished(void **state)
{
    struct fixture *f = *state;

    prune_now(f, 40);
    counts(f, 1, 0);
}

static void test_all_active_then_full(void **state)
{
    struct fixture *f = *state;
    mote_job_id extra;
    unsigned i;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        f->tasks[i].result = MOTE_STEP_PENDING;
        spawn(f, i);
    }
    counts(f, MOTE_MAX_JOBS, 0);
    assert_int_equal(mote_job_spawn(&f->loop, "x", &tops, &f->tasks[50], NULL, &extra),
                     MOTE_ERR_FULL);
    assert_int_equal(extra, 0);
    /* Nothing was overwritten. */
    for (i = 0; i < MOTE_MAX_JOBS; i++)
        assert_int_equal(mote_job_state(&f->loop, f->ids[i]), MOTE_JOB_RUNNING);
    /* Full of active plus finished: finished ones beyond the limit are
     * freed to make room. */
    f->tasks[0].result = MOTE_STEP_DONE;
    (void)mote_job_wake(&f->loop, f->ids[0]);
    assert_true(mote_loop_poll(&f->loop, 0) >= 1);
    spawn(f, 50);
    counts(f, MOTE_MAX_JOBS, 0);
}

static void test_cancelling_stays_active(void **state)
{
    struct fixture *f = *state;
    unsigned i;
    int rc;

    f->tasks[0].result = MOTE_STEP_PENDING;
    f->tasks[0].ignore_cancel = true;
    spawn(f, 0);
    assert_int_equal(mote_job_cancel(&f->loop, f->ids[0]), 0);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_CANCELLING);
    assert_true(mote_job_cancelled(&f->loop, f->ids[0]));
    /* Finished jobs come and go; the cancelling one is never pruned. */
    for (i = 1; i < 10; i++) {
        finish_n(f, i, 1);
        counts(f, 1, i < MOTE_MAX_INACTIVE_JOBS + 1 ? i : MOTE_MAX_INACTIVE_JOBS + 1);
    }
    prune_now(f, 40);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_CANCELLING);
    counts(f, 2, MOTE_MAX_INACTIVE_JOBS);
    /* The wait primitive waits for it until its deadline. */
    f->tasks[40].result = MOTE_STEP_DONE;
    (void)mote_job_wake(&f->loop, f->ids[40]);
    uint32_t t0 = f->tp.now;
    rc = mote_loop_wait_jobs(&f->loop, 3000);
    assert_int_equal(rc, MOTE_ERR_TIMEDOUT);
    assert_true(f->tp.now - t0 >= 3000);
    assert_true(f->tp.now - t0 < 3000 + MOTE_LOOP_MAX_WAIT_MS);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_CANCELLING);
    assert_int_equal(mote_job_state(&f->loop, f->ids[40]), MOTE_JOB_DONE);
    /* When it stops at last, the wait returns 0. */
    f->tasks[0].ignore_cancel = false;
    (void)mote_job_wake(&f->loop, f->ids[0]);
    assert_int_equal(mote_loop_wait_jobs(&f->loop, 3000), 0);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_CANCELLED);
}

static void test_cancel_all_via_parent(void **state)
{
    struct fixture *f = *state;
    struct mote_cancel conv;

    mote_cancel_init(&conv, &f->loop.root);
    f->tasks[0].result = MOTE_STEP_PENDING;
    f->tasks[1].result = MOTE_STEP_PENDING;
    assert_int_equal(mote_job_spawn(&f->loop, "a", &tops, &f->tasks[0], &conv, &f->ids[0]), 0);
    spawn(f, 1);
    assert_int_equal(mote_loop_poll(&f->loop, 0), 2);
    /* Cancelling the conversation's flag reaches its job only. */
    mote_cancel_set(&conv);
    assert_true(mote_job_cancelled(&f->loop, f->ids[0]));
    assert_false(mote_job_cancelled(&f->loop, f->ids[1]));
    assert_true(mote_loop_poll(&f->loop, 0) >= 1);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_CANCELLED);
    assert_int_equal(mote_job_state(&f->loop, f->ids[1]), MOTE_JOB_RUNNING);
    /* The session's flag reaches everything. */
    assert_int_equal(mote_loop_cancel_all(&f->loop), 1);
    assert_int_equal(mote_job_state(&f->loop, f->ids[1]), MOTE_JOB_CANCELLING);
    assert_int_equal(mote_loop_wait_jobs(&f->loop, 100), 0);
    assert_int_equal(mote_job_state(&f->loop, f->ids[1]), MOTE_JOB_CANCELLED);
    assert_int_equal(mote_job_cancel(&f->loop, f->ids[1]), MOTE_ERR_ALREADY);
}

/* ---- continuations ---- */

struct seen {
    int calls;
    enum mote_job_state how;
    char msg[MOTE_JOB_ERRMSG_LEN];
    unsigned turn;
};

static void record(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                   const char *errmsg, void *arg)
{
    struct seen *s = arg;

    (void)job;
    s->calls++;
    s->how = how;
    strncpy(s->msg, errmsg, sizeof(s->msg) - 1);
    s->turn = loop->turn;
}

static void test_continuation_types(void **state)
{
    struct fixture *f = *state;
    struct seen done = {0}, cancelled = {0}, failed = {0};

    f->tasks[0].result = MOTE_STEP_DONE;
    f->tasks[1].result = MOTE_STEP_PENDING;
    f->tasks[2].result = MOTE_ERR_PROTO;
    spawn(f, 0);
    spawn(f, 1);
    spawn(f, 2);
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "r", record, &done), 0);
    assert_int_equal(mote_job_then(&f->loop, f->ids[1], "r", record, &cancelled), 0);
    assert_int_equal(mote_job_then(&f->loop, f->ids[2], "r", record, &failed), 0);
    assert_int_equal(mote_job_cancel(&f->loop, f->ids[1]), 0);
    assert_true(mote_loop_poll(&f->loop, 0) >= 3);
    assert_int_equal(done.calls, 1);
    assert_int_equal(done.how, MOTE_JOB_DONE);
    assert_string_equal(done.msg, "");
    assert_int_equal(cancelled.calls, 1);
    assert_int_equal(cancelled.how, MOTE_JOB_CANCELLED);
    assert_int_equal(failed.calls, 1);
    assert_int_equal(failed.how, MOTE_JOB_FAILED);
    assert_string_equal(failed.msg, "boom: the task failed");
    assert_int_equal(mote_job_result(&f->loop, f->ids[2]), MOTE_ERR_PROTO);
    /* A failure without a message gets mote_strerror's. */
    f->tasks[3].result = MOTE_ERR_TIMEDOUT;
    spawn(f, 3);
    (void)mote_loop_poll(&f->loop, 0);
    assert_string_equal(mote_job_error(&f->loop, f->ids[3]), "boom: the task failed");
    /* Nothing runs twice. */
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(done.calls + cancelled.calls + failed.calls, 3);
}

static void test_add_or_run_now(void **state)
{
    struct fixture *f = *state;
    struct seen late = {0};
    unsigned turn;

    finish_n(f, 0, 1);
    turn = f->loop.turn;
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "late", record, &late), 0);
    assert_int_equal(late.calls, 0); /* never inside the call */
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(late.calls, 1);
    assert_int_equal(late.turn, turn + 1);
    assert_int_equal(late.how, MOTE_JOB_DONE);
    /* Same key replaces, and runs once more when added again. */
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "late", record, &late), 0);
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "late", record, &late), 0);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(late.calls, 2);
    /* Limits. */
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "a-key-that-is-far-too-long", record,
                                   &late),
                     MOTE_ERR_TOO_LARGE);
    assert_int_equal(mote_job_then(&f->loop, 0x12345678u, "x", record, &late), MOTE_ERR_STALE);
}

static void test_unthen(void **state)
{
    struct fixture *f = *state;
    struct seen a = {0}, b = {0};

    f->tasks[0].result = MOTE_STEP_DONE;
    spawn(f, 0);
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "a", record, &a), 0);
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "b", record, &b), 0);
    assert_int_equal(mote_job_unthen(&f->loop, f->ids[0], "a"), 0);
    assert_int_equal(mote_job_unthen(&f->loop, f->ids[0], "a"), MOTE_ERR_NOENT);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(a.calls, 0);
    assert_int_equal(b.calls, 1);
}

static void test_continuations_full(void **state)
{
    struct fixture *f = *state;
    struct seen s = {0};
    char key[8];
    int i;

    f->tasks[0].result = MOTE_STEP_PENDING;
    spawn(f, 0);
    for (i = 0; i < MOTE_JOB_MAX_CONTINUATIONS; i++) {
        key[0] = (char)('a' + i);
        key[1] = '\0';
        assert_int_equal(mote_job_then(&f->loop, f->ids[0], key, record, &s), 0);
    }
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "zz", record, &s), MOTE_ERR_FULL);
    f->tasks[0].result = MOTE_STEP_DONE;
    (void)mote_job_wake(&f->loop, f->ids[0]);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(s.calls, MOTE_JOB_MAX_CONTINUATIONS);
}

/* A -> B -> A ... chain: each continuation spawns the next job. */
struct chain {
    struct fixture *f;
    unsigned spawned;
    int last_rc;
};

static struct chain chain;

static void chain_next(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                       const char *errmsg, void *arg)
{
    struct chain *c = arg;
    unsigned i = 20 + (c->spawned % 20);
    mote_job_id next;

    (void)job, (void)how, (void)errmsg;
    memset(&c->f->tasks[i], 0, sizeof(c->f->tasks[i]));
    c->f->tasks[i].result = MOTE_STEP_DONE;
    c->last_rc = mote_job_spawn(loop, c->spawned % 2 ? "A" : "B", &tops, &c->f->tasks[i], NULL,
                                &next);
    if (c->last_rc < 0)
        return;
    c->spawned++;
    assert_int_equal(mote_job_then(loop, next, "chain", chain_next, c), 0);
}

static void test_chain_stops_on_shutdown(void **state)
{
    struct fixture *f = *state;
    unsigned before;
    int i;

    memset(&chain, 0, sizeof(chain));
    chain.f = f;
    f->tasks[0].result = MOTE_STEP_DONE;
    spawn(f, 0);
    assert_int_equal(mote_job_then(&f->loop, f->ids[0], "chain", chain_next, &chain), 0);
    for (i = 0; i < 10; i++)
        (void)mote_loop_poll(&f->loop, 0);
    assert_true(chain.spawned >= 5);
    counts(f, 1, MOTE_MAX_INACTIVE_JOBS); /* pruning keeps the table small */
    mote_loop_stop_spawns(&f->loop);
    before = chain.spawned;
    for (i = 0; i < 10; i++)
        (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(chain.spawned, before);
    assert_int_equal(chain.last_rc, MOTE_ERR_SHUTDOWN);
    /* Pruning happens only at a spawn, and the refused spawn did none. */
    counts(f, 0, MOTE_MAX_INACTIVE_JOBS + 1);
    assert_int_equal(mote_loop_wait_jobs(&f->loop, 10), 0);
}

/* ---- handles ---- */

static void test_stale_handles(void **state)
{
    struct fixture *f = *state;
    mote_job_id old;
    unsigned i;

    finish_n(f, 0, 1);
    old = f->ids[0];
    /* Push it out and reuse its slot with newer jobs. */
    for (i = 1; i < 2 * MOTE_MAX_JOBS; i++)
        finish_n(f, i, 1);
    assert_int_equal(mote_job_state(&f->loop, old), MOTE_ERR_STALE);
    assert_null(mote_job_error(&f->loop, old));
    assert_int_equal(mote_job_cancel(&f->loop, old), MOTE_ERR_STALE);
    assert_int_equal(mote_job_wake(&f->loop, old), MOTE_ERR_STALE);
    assert_true(mote_job_cancelled(&f->loop, old));
    assert_int_equal(mote_job_state(&f->loop, 0), MOTE_ERR_STALE);
    assert_int_equal(mote_job_state(&f->loop, 0xFFu), MOTE_ERR_STALE); /* bad index */
    /* Its slot was reused by a later job, which the old handle never reaches. */
    for (i = 1; i < 2 * MOTE_MAX_JOBS; i++) {
        if ((f->ids[i] & 0xFFu) == (old & 0xFFu)) {
            assert_int_not_equal(f->ids[i], old);
            break;
        }
    }
    assert_true(i < 2 * MOTE_MAX_JOBS);
}

static void test_generation_wrap(void **state)
{
    struct fixture *f = *state;
    mote_job_id first, second;

    /* Put slot 0's generation at the top of its range. */
    f->loop.jobs[0].gen = 0xFFFFFFu;
    f->tasks[0].result = MOTE_STEP_PENDING;
    spawn(f, 0);
    first = f->ids[0];
    assert_int_equal(first & 0xFFu, 0);
    assert_int_equal(first >> 8, 1u); /* wrapped past 0 to 1 */
    assert_int_not_equal(first, 0);
    assert_int_equal(mote_job_state(&f->loop, first), MOTE_JOB_RUNNING);
    /* A handle from before the wrap never matches. */
    assert_int_equal(mote_job_state(&f->loop, (0xFFFFFFu << 8) | 0u), MOTE_ERR_STALE);
    assert_int_equal(mote_job_state(&f->loop, (0xFFFFFEu << 8) | 0u), MOTE_ERR_STALE);
    assert_int_equal(mote_job_cancel(&f->loop, first), 0);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(mote_job_state(&f->loop, first), MOTE_JOB_CANCELLED);
    /* Push it out and take the slot again: a new generation. */
    finish_n(f, 1, MOTE_MAX_INACTIVE_JOBS + 1);
    prune_now(f, 40);
    assert_int_equal(mote_job_state(&f->loop, first), MOTE_ERR_STALE);
    second = f->ids[40];
    assert_int_not_equal(first, second);
}

static int walk_collect(void *arg, const struct mote_job_info *info)
{
    char *out = arg;

    strcat(out, info->name);
    strcat(out, ":");
    strcat(out, mote_job_state_name(info->state));
    strcat(out, info->finished_ms != 0 ? "+ " : "- ");
    return 0;
}

static void test_walk(void **state)
{
    struct fixture *f = *state;
    char out[256] = "";

    f->tasks[0].result = MOTE_STEP_PENDING;
    assert_int_equal(mote_job_spawn(&f->loop, "first", &tops, &f->tasks[0], NULL, &f->ids[0]), 0);
    mote_tport_advance(&f->tp, 5);
    f->tasks[1].result = MOTE_ERR_IO;
    assert_int_equal(mote_job_spawn(&f->loop, "second", &tops, &f->tasks[1], NULL, &f->ids[1]),
                     0);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(mote_job_walk(&f->loop, walk_collect, out), 0);
    assert_string_equal(out, "first:running- second:failed+ ");
}

/* A continuation that spawns jobs keeps its own job: while it runs, the
 * job is not pruned (its slot not reused), so `errmsg` and the handle stay
 * valid for the whole call, as mote_loop.h promises, even when the spawns
 * fill the table. */
struct spawner {
    struct fixture *f;
    int calls, spawned, full;
    char msg_after[64];
    int state_after;
};

static void spawn_many(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                       const char *errmsg, void *arg)
{
    struct spawner *s = arg;
    unsigned i;

    (void)how;
    s->calls++;
    for (i = 0; i < MOTE_MAX_JOBS + 1; i++) {
        struct ttask *t = &s->f->tasks[20 + i];
        int rc;

        t->result = MOTE_STEP_PENDING;
        rc = mote_job_spawn(loop, "child", &tops, t, NULL, &s->f->ids[20 + i]);
        if (rc == MOTE_ERR_FULL) {
            s->full++;
            break;
        }
        assert_int_equal(rc, 0);
        s->spawned++;
    }
    strncpy(s->msg_after, errmsg, sizeof(s->msg_after) - 1);
    s->state_after = mote_job_state(loop, job);
}

static void test_continuation_keeps_its_job(void **state)
{
    struct fixture *f = *state;
    struct spawner s;

    memset(&s, 0, sizeof(s));
    s.f = f;
    /* Older finished jobs, then the failing one whose continuation spawns. */
    finish_n(f, 0, MOTE_MAX_INACTIVE_JOBS);
    f->tasks[10].result = MOTE_ERR_PROTO;
    spawn(f, 10);
    assert_int_equal(mote_job_then(&f->loop, f->ids[10], "spawn", spawn_many, &s), 0);
    assert_true(mote_loop_poll(&f->loop, 0) >= 2);
    assert_int_equal(s.calls, 1);
    assert_string_equal(s.msg_after, "boom: the task failed");
    assert_int_equal(s.state_after, MOTE_JOB_FAILED);
    assert_int_equal(s.full, 1); /* the table filled up around the running job */
    assert_int_equal(s.spawned, MOTE_MAX_JOBS - 1);
    /* Once its continuation has run, it may go like any finished job. */
    assert_int_equal(mote_job_state(&f->loop, f->ids[10]), MOTE_JOB_FAILED);
}

/* mote_loop_wait_jobs with the largest timeout waits (the deadline does
 * not wrap into the past). */
static int slow_step(struct mote_loop *loop, mote_job_id self, void *p)
{
    struct ttask *t = p;

    if (++t->steps >= 3)
        return MOTE_STEP_DONE;
    (void)mote_job_wake(loop, self);
    return MOTE_STEP_PENDING;
}

static const struct mote_task_ops slow_ops = {"slow", slow_step, ttask_release};

static void test_wait_jobs_longest_timeout(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(mote_job_spawn(&f->loop, "slow", &slow_ops, &f->tasks[0], NULL, &f->ids[0]),
                     0);
    assert_int_equal(mote_loop_wait_jobs(&f->loop, UINT32_MAX), 0);
    assert_int_equal(f->tasks[0].steps, 3);
    assert_int_equal(mote_job_state(&f->loop, f->ids[0]), MOTE_JOB_DONE);
    /* A finite timeout still ends the wait. */
    f->tasks[1].result = MOTE_STEP_PENDING;
    spawn(f, 1);
    assert_int_equal(mote_loop_wait_jobs(&f->loop, 200), MOTE_ERR_TIMEDOUT);
}

/* A job spawned from a step is first stepped on the next turn, whichever
 * slot it lands in (above the parent's slot, or below it). */
struct parent {
    struct fixture *f;
    unsigned child;
    bool spawned;
};

static struct parent parent;

static int parent_step(struct mote_loop *loop, mote_job_id self, void *p)
{
    struct ttask *t = p;

    (void)self;
    t->steps++;
    if (!parent.spawned) {
        struct ttask *c = &parent.f->tasks[parent.child];

        parent.spawned = true;
        c->result = MOTE_STEP_PENDING;
        if (mote_job_spawn(loop, "child", &tops, c, NULL, &parent.f->ids[parent.child]) != 0)
            return MOTE_ERR_FULL;
    }
    return MOTE_STEP_PENDING;
}

static const struct mote_task_ops parent_ops = {"parent", parent_step, ttask_release};

/* Steps the parent (slot `p`) so that it spawns child `c`, and checks the
 * child is not stepped in that turn but in the next. */
static void parent_spawns(struct fixture *f, unsigned p, unsigned c)
{
    parent.spawned = false;
    parent.child = c;
    assert_int_equal(mote_job_wake(&f->loop, f->ids[p]), 0);
    (void)mote_loop_poll(&f->loop, 0);
    assert_true(parent.spawned);
    assert_int_equal(f->tasks[c].steps, 0); /* not in the parent's turn */
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(f->tasks[c].steps, 1);
}

static void test_spawned_in_a_step_waits_a_turn(void **state)
{
    struct fixture *f = *state;

    memset(&parent, 0, sizeof(parent));
    parent.f = f;
    parent.spawned = true; /* no spawn on the first step */
    /* slot 0: a job that finishes; slot 1: the parent */
    f->tasks[0].result = MOTE_STEP_DONE;
    spawn(f, 0);
    assert_int_equal(mote_job_spawn(&f->loop, "parent", &parent_ops, &f->tasks[1], NULL,
                                    &f->ids[1]),
                     0);
    (void)mote_loop_poll(&f->loop, 0);
    /* A child in the slot above the parent's. */
    parent_spawns(f, 1, 2);
    /* Three more finished jobs: the parent's next spawn prunes slot 0, the
     * oldest, and its child lands below the parent's slot. */
    finish_n(f, 3, MOTE_MAX_INACTIVE_JOBS);
    parent_spawns(f, 1, 10);
    assert_int_equal(f->ids[10] & 0xFFu, 0);
}

/* mote_job_wake_all wakes the active jobs of one kind, no others. */
static void test_wake_all_of_a_kind(void **state)
{
    struct fixture *f = *state;

    f->tasks[0].result = MOTE_STEP_PENDING;
    f->tasks[1].result = MOTE_STEP_PENDING;
    spawn(f, 0);
    spawn(f, 1);
    assert_int_equal(mote_job_spawn(&f->loop, "slow", &slow_ops, &f->tasks[2], NULL, &f->ids[2]),
                     0);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(f->tasks[0].steps, 1);
    assert_int_equal(mote_job_wake_all(&f->loop, &tops), 2);
    (void)mote_loop_poll(&f->loop, 0);
    assert_int_equal(f->tasks[0].steps, 2);
    assert_int_equal(f->tasks[1].steps, 2);
    assert_int_equal(mote_job_wake_all(&f->loop, &parent_ops), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_three_finished_all_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_five_finished_newest_three_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_active_four_finished, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_active_four_finished, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exactly_max_inactive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_finished, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_active_then_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelling_stays_active, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_all_via_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_or_run_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unthen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuations_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain_stops_on_shutdown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generation_wrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_keeps_its_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_jobs_longest_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawned_in_a_step_waits_a_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wake_all_of_a_kind, setup, teardown),
    };

    return cmocka_run_group_tests_name("jobs", tests, NULL, NULL);
}
