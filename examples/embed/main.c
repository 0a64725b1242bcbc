/*
 * embed - the smallest program that embeds libmote.
 *
 * It starts the POSIX port and a loop, spawns a job whose task ticks three
 * times on a timer, chains a second job from the first one's continuation,
 * and stops cleanly on Ctrl+C (the job is cancelled, then waited for).
 *
 *   build/embed            prints three ticks twice, then "all done"
 */
#include <stdio.h>

#include "mote/mote.h"
#include "mote/mote_posix.h"

struct ticker {
    const char *label;
    unsigned left;      /* ticks still to do */
    bool armed;         /* a timer is pending */
};

static int ticker_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct ticker *t = task;

    if (mote_job_cancelled(loop, self))
        return MOTE_STEP_CANCELLED;
    if (t->armed) {              /* woken by the timer */
        t->armed = false;
        printf("%s: tick (%u left)\n", t->label, --t->left);
    }
    if (t->left == 0)
        return MOTE_STEP_DONE;
    /* Wake me in 100 ms; the timer dies with the job. */
    if (mote_timer_start(loop, 100, NULL, NULL, self, NULL) < 0)
        return MOTE_ERR_FULL;
    t->armed = true;
    return MOTE_STEP_PENDING;
}

static const struct mote_task_ops ticker_ops = {"ticker", ticker_step, NULL};

static struct ticker second = {"second", 3, false};
static bool finished;

static void after_second(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                         const char *errmsg, void *arg)
{
    (void)loop, (void)job, (void)arg, (void)errmsg;
    printf("second job %s\n", mote_job_state_name(how));
    finished = true;
}

static void after_first(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg)
{
    mote_job_id next;

    (void)job, (void)arg, (void)errmsg;
    printf("first job %s\n", mote_job_state_name(how));
    /* The chain goes on unless shutdown began (then spawn refuses). */
    if (how != MOTE_JOB_DONE || mote_job_spawn(loop, "second", &ticker_ops, &second, NULL,
                                               &next) < 0 ||
        mote_job_then(loop, next, "report", after_second, NULL) < 0)
        finished = true;
}

static void on_signal(struct mote_loop *loop, enum mote_signal sig, unsigned n, void *arg)
{
    (void)sig, (void)n, (void)arg;
    mote_loop_stop_spawns(loop);
    mote_loop_cancel_all(loop);
}

int main(void)
{
    static struct mote_posix pp;
    static struct mote_loop loop;
    struct ticker first = {"first", 3, false};
    mote_job_id job;
    int rc;

    if (mote_posix_init(&pp) < 0 || mote_posix_signals_install(&pp) < 0 ||
        mote_loop_init(&loop, &pp.port) < 0) {
        fprintf(stderr, "embed: cannot start the port\n");
        return 1;
    }
    mote_loop_on_signal(&loop, on_signal, NULL);
    if (mote_job_spawn(&loop, "first", &ticker_ops, &first, NULL, &job) < 0 ||
        mote_job_then(&loop, job, "chain", after_first, NULL) < 0) {
        fprintf(stderr, "embed: cannot spawn\n");
        return 1;
    }
    while (!finished) {
        rc = mote_loop_poll(&loop, -1);
        if (rc < 0) {
            fprintf(stderr, "embed: %s\n", mote_strerror(rc));
            break;
        }
    }
    rc = mote_loop_wait_jobs(&loop, 2000);
    printf("all done (%s)\n", rc == 0 ? "clean" : mote_strerror(rc));
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    return rc == 0 ? 0 : 1;
}
