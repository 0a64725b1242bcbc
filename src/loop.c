/*
 * loop.c - the event loop, the job table, timers and fd watches.
 *
 * Handles are (generation << 8) | slot index. A slot's generation moves on
 * every time the slot is taken, skipping 0, so a handle kept past the
 * slot's reuse never matches again (until 2^24 reuses of that one slot).
 */
#include "mote/mote_loop.h"

#include <string.h>

#include "util.h"

#define GEN_MASK 0xFFFFFFu

#if MOTE_MAX_TIMERS > 255 || MOTE_MAX_WATCHES > 255
#error "MOTE_MAX_TIMERS and MOTE_MAX_WATCHES must be at most 255 (8-bit slot index in handles)"
#endif

static uint32_t make_id(uint32_t gen, unsigned idx)
{
    return (gen << 8) | (uint32_t)idx;
}

static uint32_t next_gen(uint32_t gen)
{
    gen = (gen + 1u) & GEN_MASK;
    return gen == 0 ? 1u : gen;
}

static bool job_active(const struct mote_job *j)
{
    return j->state == MOTE_JOB_RUNNING || j->state == MOTE_JOB_CANCELLING;
}

static bool job_finished(const struct mote_job *j)
{
    return j->state >= MOTE_JOB_DONE;
}

static struct mote_job *job_get(const struct mote_loop *loop, mote_job_id id)
{
    unsigned idx = id & 0xFFu;
    const struct mote_job *j;

    if (id == 0 || idx >= MOTE_MAX_JOBS)
        return NULL;
    j = &loop->jobs[idx];
    if (j->state == MOTE_JOB_FREE || j->gen != (id >> 8))
        return NULL;
    return (struct mote_job *)j;
}

static mote_job_id job_id(const struct mote_loop *loop, const struct mote_job *j)
{
    return make_id(j->gen, (unsigned)(j - loop->jobs));
}

static void host_changed(struct mote_loop *loop);

/* ---- the loop ---------------------------------------------------------- */

unsigned long mote_config_signature(void)
{
    return MOTE_CONFIG_SIGNATURE;
}

int mote_loop_init_checked(struct mote_loop *loop, const struct mote_port *port,
                           unsigned long config_signature)
{
    if (config_signature != MOTE_CONFIG_SIGNATURE)
        return MOTE_ERR_CONFIG; /* not even `loop` is touched: its size may differ */
    if (port == NULL || port->version != MOTE_PORT_VERSION)
        return MOTE_ERR_INVAL;
    if (mote_port_missing(port, MOTE_PORT_CORE) != NULL)
        return MOTE_ERR_NOSYS;
    memset(loop, 0, sizeof(*loop));
    loop->port = port;
    loop->sig_fd = -2;
    mote_cancel_init(&loop->root, NULL);
    return 0;
}

uint32_t mote_loop_now(const struct mote_loop *loop)
{
    return loop->port->now_ms(loop->port->ctx);
}

/* A watch on `fd` goes: the descriptor may be closed and its number
 * taken by a new one before the host hears of it, so the host is told to
 * stop and start again rather than to keep what it has. */
static void host_drop_fd(struct mote_loop *loop, int fd)
{
    unsigned i;

    for (i = 0; i < loop->host_nfd; i++) {
        if (loop->host_fds[i].fd == fd)
            loop->host_fds[i].dropped = true;
    }
}

static void release_owned(struct mote_loop *loop, mote_job_id owner)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_TIMERS; i++) {
        if (loop->timers[i].armed && loop->timers[i].owner == owner)
            loop->timers[i].armed = false;
    }
    for (i = 0; i < MOTE_MAX_WATCHES; i++) {
        if (loop->watches[i].used && loop->watches[i].owner == owner) {
            loop->watches[i].used = false;
            host_drop_fd(loop, loop->watches[i].fd);
        }
    }
}

void mote_loop_deinit(struct mote_loop *loop)
{
    unsigned i;

    if (loop->host.watch != NULL && !loop->polling)
        (void)mote_loop_host(loop, NULL); /* the host drops its watchers */

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        struct mote_job *j = &loop->jobs[i];

        if (job_active(j) && j->ops->release != NULL)
            j->ops->release(loop, j->task);
    }
    memset(loop->jobs, 0, sizeof(loop->jobs));
    memset(loop->timers, 0, sizeof(loop->timers));
    memset(loop->watches, 0, sizeof(loop->watches));
    loop->port = NULL;
}

void mote_loop_on_signal(struct mote_loop *loop, mote_signal_fn fn, void *arg)
{
    loop->on_signal = fn;
    loop->on_signal_arg = arg;
}

void mote_loop_break(struct mote_loop *loop)
{
    loop->brk = true;
}

void mote_loop_stop_spawns(struct mote_loop *loop)
{
    loop->no_spawn = true;
}

/* A RUNNING job whose flag became set through a parent is CANCELLING. */
static void promote_cancelled(struct mote_loop *loop)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        struct mote_job *j = &loop->jobs[i];

        if (j->state == MOTE_JOB_RUNNING && mote_cancel_is_set(&j->cancel)) {
            j->state = MOTE_JOB_CANCELLING;
            j->wake = true;
        }
    }
}

int mote_loop_cancel_all(struct mote_loop *loop)
{
    unsigned active = 0;

    mote_cancel_set(&loop->root);
    promote_cancelled(loop);
    mote_job_counts(loop, &active, NULL);
    host_changed(loop);
    return (int)active;
}

static void job_finish(struct mote_loop *loop, struct mote_job *j, enum mote_job_state how,
                       int result)
{
    mote_job_id id = job_id(loop, j);

    j->state = (uint8_t)how;
    j->result = how == MOTE_JOB_FAILED ? result : 0;
    if (how == MOTE_JOB_FAILED && j->errmsg[0] == '\0')
        mote_str_copy(j->errmsg, sizeof(j->errmsg), mote_strerror(result));
    if (how != MOTE_JOB_FAILED)
        j->errmsg[0] = '\0';
    j->finish_seq = ++loop->seq;
    j->finished_ms = mote_loop_now(loop);
    if (j->finished_ms == 0)
        j->finished_ms = 1; /* 0 means "still active" in listings */
    j->wake = false;
    release_owned(loop, id);
    if (j->ops->release != NULL)
        j->ops->release(loop, j->task);
    j->task = NULL;
    j->pending = j->ncont == 0 ? 0u : (uint32_t)((1ull << j->ncont) - 1u);
}

/* Steps the jobs that were woken when this phase began, in slot order. A
 * job spawned or woken by one of these steps waits for the next turn,
 * whichever slot it is in. */
static int step_jobs(struct mote_loop *loop)
{
    mote_job_id woken[MOTE_MAX_JOBS] = {0}; /* (zeroed: gcc cannot tell only n are read) */
    unsigned i, n = 0;
    int did = 0;

    promote_cancelled(loop);
    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        struct mote_job *j = &loop->jobs[i];

        if (job_active(j) && j->wake) {
            j->wake = false;
            woken[n++] = job_id(loop, j);
        }
    }
    for (i = 0; i < n; i++) {
        struct mote_job *j = job_get(loop, woken[i]);
        int rc;

        if (j == NULL || !job_active(j))
            continue;
        rc = j->ops->step(loop, woken[i], j->task);
        did++;
        if (rc == MOTE_STEP_PENDING)
            continue;
        if (rc == MOTE_STEP_DONE)
            job_finish(loop, j, MOTE_JOB_DONE, 0);
        else if (rc == MOTE_STEP_CANCELLED || rc == MOTE_ERR_CANCELED)
            job_finish(loop, j, MOTE_JOB_CANCELLED, 0);
        else
            job_finish(loop, j, MOTE_JOB_FAILED, rc < 0 ? rc : MOTE_ERR_INVAL);
    }
    return did;
}

/* Runs the continuations that were due when this phase began, oldest
 * finished job first; ones added meanwhile wait for the next turn. While a
 * continuation runs, its job is `loop->cont_job`, which pruning skips: the
 * handle and the error message stay valid even if the callback spawns. */
static int run_continuations(struct mote_loop *loop)
{
    unsigned i;
    int did = 0;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        loop->jobs[i].ready = job_finished(&loop->jobs[i]) ? loop->jobs[i].pending : 0u;
        loop->jobs[i].pending &= ~loop->jobs[i].ready;
    }
    for (;;) {
        struct mote_job *j = NULL;
        unsigned bit;

        for (i = 0; i < MOTE_MAX_JOBS; i++) {
            struct mote_job *c = &loop->jobs[i];

            if (c->ready != 0 && (j == NULL || mote_before(c->finish_seq, j->finish_seq)))
                j = c;
        }
        if (j == NULL)
            break;
        for (bit = 0; bit < MOTE_JOB_MAX_CONTINUATIONS; bit++) {
            struct mote_job_cont cont;

            if ((j->ready & (1u << bit)) == 0)
                continue;
            j->ready &= ~(1u << bit);
            if (bit >= j->ncont)
                continue;
            cont = j->conts[bit]; /* the callback may replace the slot */
            loop->cont_job = job_id(loop, j);
            cont.fn(loop, loop->cont_job, (enum mote_job_state)j->state, j->errmsg, cont.arg);
            loop->cont_job = 0;
            did++;
        }
    }
    return did;
}

static bool anything_runnable(const struct mote_loop *loop)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        const struct mote_job *j = &loop->jobs[i];

        if ((job_active(j) && (j->wake || (j->state == MOTE_JOB_RUNNING &&
                                           mote_cancel_is_set(&j->cancel)))) ||
            (job_finished(j) && j->pending != 0))
            return true;
    }
    return false;
}

static int fire_timers(struct mote_loop *loop, uint32_t now)
{
    unsigned i;
    int did = 0;

    for (i = 0; i < MOTE_MAX_TIMERS; i++) {
        struct mote_timer_slot *t = &loop->timers[i];

        if (!t->armed || mote_before(now, t->due))
            continue;
        t->armed = false;
        did++;
        if (t->fn != NULL)
            t->fn(loop, make_id(t->gen, i), t->arg);
        else
            (void)mote_job_wake(loop, t->owner);
    }
    return did;
}

static int take_signals(struct mote_loop *loop)
{
    const struct mote_port *p = loop->port;
    uint8_t counts[MOTE_SIG_COUNT];
    int n, did = 0;
    unsigned s;

    if (!MOTE_PORT_HAS(p, signals_take))
        return 0;
    memset(counts, 0, sizeof(counts));
    n = p->signals_take(p->ctx, counts);
    if (n <= 0)
        return 0;
    for (s = 0; s < MOTE_SIG_COUNT; s++) {
        if (counts[s] == 0)
            continue;
        did++;
        if (loop->on_signal != NULL)
            loop->on_signal(loop, (enum mote_signal)s, counts[s], loop->on_signal_arg);
    }
    return did;
}

/* How long a wait may last: not at all if work is ready, else up to the
 * next timer and `cap`. */
static int32_t next_wait(const struct mote_loop *loop, int32_t cap)
{
    uint32_t now = mote_loop_now(loop);
    int32_t wait_ms = cap;
    unsigned i;

    if (anything_runnable(loop))
        return 0;
    for (i = 0; i < MOTE_MAX_TIMERS; i++) {
        const struct mote_timer_slot *t = &loop->timers[i];

        if (t->armed) {
            int32_t left = (int32_t)(t->due - now);

            if (left < 0)
                left = 0;
            if (left < wait_ms)
                wait_ms = left;
        }
    }
    return wait_ms;
}

/* The rest of a turn after the fd events: signals (unless `sig` is
 * false), due timers, woken jobs, due continuations. */
static int turn_rest(struct mote_loop *loop, bool sig)
{
    int did = 0;

    if (sig)
        did += take_signals(loop);
    did += fire_timers(loop, mote_loop_now(loop));
    did += step_jobs(loop);
    did += run_continuations(loop);
    return did;
}

int mote_loop_poll(struct mote_loop *loop, int32_t timeout_ms)
{
    struct mote_pollfd fds[MOTE_MAX_WATCHES];
    unsigned map[MOTE_MAX_WATCHES];
    uint32_t map_gen[MOTE_MAX_WATCHES] = {0}; /* which watch of the slot was polled
                                               * (zeroed: gcc cannot tell that only
                                               * the first nfds are read) */
    unsigned nfds = 0, i;
    int rc, did = 0;

    if (loop->polling)
        return MOTE_ERR_BUSY; /* never the loop inside the loop */
    loop->turn++;
    for (i = 0; i < MOTE_MAX_WATCHES; i++) {
        struct mote_watch_slot *w = &loop->watches[i];

        w->revents = 0;
        if (!w->used)
            continue;
        fds[nfds].fd = w->fd;
        fds[nfds].events = w->events;
        fds[nfds].revents = 0;
        map_gen[nfds] = w->gen;
        map[nfds++] = i;
    }

    rc = loop->port->wait(loop->port->ctx, fds, nfds,
                          next_wait(loop, timeout_ms < 0 || timeout_ms > MOTE_LOOP_MAX_WAIT_MS
                                              ? MOTE_LOOP_MAX_WAIT_MS
                                              : timeout_ms));
    if (rc < 0 && rc != MOTE_ERR_INTR)
        return rc;
    loop->polling = true;

    for (i = 0; i < nfds && rc > 0; i++) {
        struct mote_watch_slot *w = &loop->watches[map[i]];

        /* A watch removed during this dispatch, or removed and its slot
         * reused by another, never gets the old descriptor's events. */
        if (fds[i].revents == 0 || !w->used || w->gen != map_gen[i])
            continue;
        w->revents = fds[i].revents;
        did++;
        if (w->fn != NULL)
            w->fn(loop, make_id(w->gen, map[i]), w->fd, w->revents, w->arg);
        else
            (void)mote_job_wake(loop, w->owner);
    }
    did += turn_rest(loop, true);
    loop->polling = false;
    host_changed(loop);
    return did;
}

/* ---- inside another event loop ------------------------------------------ */

/* The port's signal descriptor, asked for once (-1: none). */
static int sig_fd(struct mote_loop *loop)
{
    const struct mote_port *p = loop->port;

    if (loop->sig_fd == -2)
        loop->sig_fd = MOTE_PORT_HAS(p, signals_fd) ? p->signals_fd(p->ctx) : -1;
    if (loop->sig_fd < 0)
        loop->sig_fd = -1;
    return loop->sig_fd;
}

/* What the host is to watch: one entry per descriptor, the events of its
 * watches together, and the port's signal descriptor. */
static unsigned wanted_fds(struct mote_loop *loop, struct mote_host_fd *out)
{
    unsigned i, k, n = 0;
    int sfd = sig_fd(loop);

    if (sfd >= 0) {
        out[n].fd = sfd;
        out[n].dropped = false;
        out[n++].events = MOTE_POLL_IN;
    }
    for (i = 0; i < MOTE_MAX_WATCHES; i++) {
        const struct mote_watch_slot *w = &loop->watches[i];

        if (!w->used || w->events == 0)
            continue;
        for (k = 0; k < n && out[k].fd != w->fd; k++) {
        }
        if (k == n) {
            out[n].fd = w->fd;
            out[n].dropped = false;
            out[n++].events = 0;
        }
        out[k].events |= w->events;
    }
    return n;
}

/* Tells the host what changed since it was last told: descriptors to
 * stop, start or change, and a deadline earlier than the one it has (a
 * later one it keeps: its call then comes early, which is harmless). */
static void host_sync(struct mote_loop *loop)
{
    struct mote_host_fd want[MOTE_MAX_WATCHES + 1];
    const struct mote_loop_host *h = &loop->host;
    unsigned n, i, k;
    uint32_t due;

    if (h->watch == NULL || loop->host_syncing)
        return;
    loop->host_syncing = true;
    n = wanted_fds(loop, want);
    for (i = 0; i < loop->host_nfd;) {
        for (k = 0; k < n && want[k].fd != loop->host_fds[i].fd; k++) {
        }
        if (k < n && !loop->host_fds[i].dropped) {
            i++;
            continue;
        }
        h->watch(h->arg, loop->host_fds[i].fd, 0);
        loop->host_fds[i] = loop->host_fds[--loop->host_nfd];
    }
    for (k = 0; k < n; k++) {
        for (i = 0; i < loop->host_nfd && loop->host_fds[i].fd != want[k].fd; i++) {
        }
        if (i < loop->host_nfd && loop->host_fds[i].events == want[k].events)
            continue;
        if (i == loop->host_nfd)
            loop->host_nfd++;
        loop->host_fds[i] = want[k];
        loop->host_fds[i].dropped = false;
        h->watch(h->arg, want[k].fd, want[k].events);
    }
    due = mote_loop_now(loop) + (uint32_t)next_wait(loop, MOTE_LOOP_MAX_WAIT_MS);
    if (!loop->host_timer_on || mote_before(due, loop->host_due)) {
        loop->host_timer_on = true;
        loop->host_due = due;
        h->timer(h->arg, (int32_t)(due - mote_loop_now(loop)) > 0
                             ? (int32_t)(due - mote_loop_now(loop))
                             : 0);
    }
    loop->host_syncing = false;
}

/* Something the host may have to know changed (outside a turn: a turn
 * tells it at its end). */
static void host_changed(struct mote_loop *loop)
{
    if (loop->host.watch != NULL && !loop->polling)
        host_sync(loop);
}

int mote_loop_host(struct mote_loop *loop, const struct mote_loop_host *host)
{
    unsigned i;

    if (loop->polling)
        return MOTE_ERR_BUSY;
    if (host != NULL && (host->watch == NULL || host->timer == NULL))
        return MOTE_ERR_INVAL;
    if (loop->host.watch != NULL) {
        /* the old host lets go of everything */
        for (i = 0; i < loop->host_nfd; i++)
            loop->host.watch(loop->host.arg, loop->host_fds[i].fd, 0);
        if (loop->host_timer_on)
            loop->host.timer(loop->host.arg, -1);
    }
    loop->host_nfd = 0;
    loop->host_timer_on = false;
    memset(&loop->host, 0, sizeof(loop->host));
    if (host != NULL) {
        loop->host = *host;
        host_sync(loop);
    }
    return 0;
}

int mote_loop_ready(struct mote_loop *loop, int fd, unsigned revents)
{
    uint32_t gens[MOTE_MAX_WATCHES] = {0}; /* the watches on fd now (0: not) */
    unsigned i;
    int did = 0;

    if (loop->polling)
        return MOTE_ERR_BUSY;
    loop->turn++;
    loop->polling = true;
    for (i = 0; i < MOTE_MAX_WATCHES; i++) {
        struct mote_watch_slot *w = &loop->watches[i];

        w->revents = 0;
        if (w->used && w->fd == fd)
            gens[i] = w->gen;
    }
    for (i = 0; i < MOTE_MAX_WATCHES; i++) {
        struct mote_watch_slot *w = &loop->watches[i];
        unsigned r = revents & ((unsigned)w->events | MOTE_POLL_ERR);

        /* Only the watches that were on it when it was reported, each
         * with the events it asked for (the host watched their union). */
        if (gens[i] == 0 || !w->used || w->gen != gens[i] || r == 0)
            continue;
        w->revents = (uint16_t)r;
        did++;
        if (w->fn != NULL)
            w->fn(loop, make_id(w->gen, i), w->fd, w->revents, w->arg);
        else
            (void)mote_job_wake(loop, w->owner);
    }
    /* Signals when their descriptor is ready; at every turn on a port
     * without one. */
    did += turn_rest(loop, sig_fd(loop) < 0 || fd == loop->sig_fd);
    loop->polling = false;
    host_sync(loop);
    return did;
}

int mote_loop_timeout(struct mote_loop *loop)
{
    int did;

    if (loop->polling)
        return MOTE_ERR_BUSY;
    loop->turn++;
    loop->host_timer_on = false; /* the host's call came: it has none now */
    loop->polling = true;
    did = turn_rest(loop, sig_fd(loop) < 0);
    loop->polling = false;
    host_sync(loop);
    return did;
}

int mote_loop_fds(struct mote_loop *loop, struct mote_pollfd *fds, unsigned cap,
                  int32_t *timeout_ms)
{
    struct mote_host_fd want[MOTE_MAX_WATCHES + 1];
    unsigned n = wanted_fds(loop, want), i;

    if (timeout_ms != NULL)
        *timeout_ms = next_wait(loop, MOTE_LOOP_MAX_WAIT_MS);
    if (n > cap)
        return MOTE_ERR_FULL;
    for (i = 0; i < n; i++) {
        fds[i].fd = want[i].fd;
        fds[i].events = want[i].events;
        fds[i].revents = 0;
    }
    return (int)n;
}

int mote_loop_wait_jobs(struct mote_loop *loop, uint32_t timeout_ms)
{
    uint32_t start = mote_loop_now(loop);

    if (loop->polling)
        return MOTE_ERR_BUSY; /* a top-level helper, never inside the loop */
    loop->brk = false;
    for (;;) {
        unsigned active = 0;
        uint32_t spent, left;
        int rc;

        mote_job_counts(loop, &active, NULL);
        if (active == 0)
            return 0;
        if (loop->brk) {
            loop->brk = false;
            return MOTE_ERR_INTR;
        }
        /* Time spent, not a deadline: now + timeout_ms would wrap for
         * timeouts of 2^31 ms and more. */
        spent = mote_loop_now(loop) - start;
        if (spent >= timeout_ms)
            return MOTE_ERR_TIMEDOUT;
        left = timeout_ms - spent;
        rc = mote_loop_poll(loop, left > (uint32_t)INT32_MAX ? INT32_MAX : (int32_t)left);
        if (rc < 0)
            return rc;
    }
}

/* ---- jobs -------------------------------------------------------------- */

static struct mote_job *free_slot(struct mote_loop *loop)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        if (loop->jobs[i].state == MOTE_JOB_FREE)
            return &loop->jobs[i];
    }
    return NULL;
}

/* Frees finished jobs, oldest first, until at most `keep` remain (jobs
 * whose continuations are still due or running are never freed). With
 * `one`, frees at most one. */
static void prune(struct mote_loop *loop, unsigned keep, bool one)
{
    for (;;) {
        struct mote_job *oldest = NULL;
        unsigned i, inactive = 0;

        for (i = 0; i < MOTE_MAX_JOBS; i++) {
            struct mote_job *j = &loop->jobs[i];

            if (!job_finished(j))
                continue;
            inactive++;
            if (j->pending == 0 && j->ready == 0 && job_id(loop, j) != loop->cont_job &&
                (oldest == NULL || mote_before(j->finish_seq, oldest->finish_seq)))
                oldest = j;
        }
        if (inactive <= keep || oldest == NULL)
            return;
        oldest->state = MOTE_JOB_FREE;
        oldest->ncont = 0;
        if (one)
            return;
    }
}

int mote_job_spawn(struct mote_loop *loop, const char *name, const struct mote_task_ops *ops,
                   void *task, const struct mote_cancel *parent, mote_job_id *out)
{
    struct mote_job *j;
    uint32_t gen;

    if (ops == NULL || ops->step == NULL || out == NULL)
        return MOTE_ERR_INVAL;
    *out = 0;
    if (loop->no_spawn)
        return MOTE_ERR_SHUTDOWN;
    prune(loop, MOTE_MAX_INACTIVE_JOBS, false);
    j = free_slot(loop);
    if (j == NULL) {
        /* Active work comes before history: with every slot taken, the
         * oldest finished job goes even inside the kept window. */
        prune(loop, 0, true);
        j = free_slot(loop);
    }
    if (j == NULL)
        return MOTE_ERR_FULL;
    gen = next_gen(j->gen);
    memset(j, 0, sizeof(*j));
    j->gen = gen;
    j->state = MOTE_JOB_RUNNING;
    j->wake = true;
    j->ops = ops;
    j->task = task;
    j->started_ms = mote_loop_now(loop);
    mote_cancel_init(&j->cancel, parent != NULL ? parent : &loop->root);
    mote_str_copy(j->name, sizeof(j->name), name != NULL ? name : ops->kind);
    *out = job_id(loop, j);
    host_changed(loop);
    return 0;
}

int mote_job_cancel(struct mote_loop *loop, mote_job_id id)
{
    struct mote_job *j = job_get(loop, id);

    if (j == NULL)
        return MOTE_ERR_STALE;
    if (job_finished(j))
        return MOTE_ERR_ALREADY;
    mote_cancel_set(&j->cancel);
    j->state = MOTE_JOB_CANCELLING;
    j->wake = true;
    host_changed(loop);
    return 0;
}

bool mote_job_cancelled(const struct mote_loop *loop, mote_job_id id)
{
    const struct mote_job *j = job_get(loop, id);

    return j == NULL || mote_cancel_is_set(&j->cancel);
}

const struct mote_cancel *mote_job_cancel_flag(const struct mote_loop *loop, mote_job_id id)
{
    const struct mote_job *j = job_get(loop, id);

    return j == NULL ? NULL : &j->cancel;
}

int mote_job_wake(struct mote_loop *loop, mote_job_id id)
{
    struct mote_job *j = job_get(loop, id);

    if (j == NULL)
        return MOTE_ERR_STALE;
    if (!job_active(j))
        return MOTE_ERR_ALREADY;
    j->wake = true;
    host_changed(loop);
    return 0;
}

int mote_job_then(struct mote_loop *loop, mote_job_id id, const char *key, mote_cont_fn fn,
                  void *arg)
{
    struct mote_job *j = job_get(loop, id);
    unsigned i;

    if (j == NULL)
        return MOTE_ERR_STALE;
    if (fn == NULL || key == NULL)
        return MOTE_ERR_INVAL;
    if (strlen(key) >= MOTE_CONT_KEY_LEN)
        return MOTE_ERR_TOO_LARGE;
    for (i = 0; i < j->ncont; i++) {
        if (strcmp(j->conts[i].key, key) == 0)
            break;
    }
    if (i == j->ncont) {
        if (j->ncont == MOTE_JOB_MAX_CONTINUATIONS)
            return MOTE_ERR_FULL;
        j->ncont++;
        mote_str_copy(j->conts[i].key, sizeof(j->conts[i].key), key);
    }
    j->conts[i].fn = fn;
    j->conts[i].arg = arg;
    if (job_finished(j)) {
        j->pending |= 1u << i; /* add-or-run-now: runs on the next turn */
        j->ready &= ~(1u << i);
        host_changed(loop);
    }
    return 0;
}

int mote_job_unthen(struct mote_loop *loop, mote_job_id id, const char *key)
{
    struct mote_job *j = job_get(loop, id);
    unsigned i;

    if (j == NULL)
        return MOTE_ERR_STALE;
    for (i = 0; i < j->ncont; i++) {
        if (strcmp(j->conts[i].key, key) == 0) {
            unsigned last = j->ncont - 1u;
            uint32_t lastbit = 1u << last, bit = 1u << i;

            /* Move the last entry into the hole, with its pending bits. */
            j->conts[i] = j->conts[last];
            j->pending = (j->pending & ~bit) | ((j->pending & lastbit) ? bit : 0u);
            j->ready = (j->ready & ~bit) | ((j->ready & lastbit) ? bit : 0u);
            j->pending &= ~lastbit;
            j->ready &= ~lastbit;
            j->ncont--;
            return 0;
        }
    }
    return MOTE_ERR_NOENT;
}

int mote_job_set_error(struct mote_loop *loop, mote_job_id id, const char *msg)
{
    struct mote_job *j = job_get(loop, id);

    if (j == NULL)
        return MOTE_ERR_STALE;
    mote_str_copy(j->errmsg, sizeof(j->errmsg), msg != NULL ? msg : "");
    return 0;
}

int mote_job_state(const struct mote_loop *loop, mote_job_id id)
{
    const struct mote_job *j = job_get(loop, id);

    return j == NULL ? MOTE_ERR_STALE : (int)j->state;
}

const char *mote_job_error(const struct mote_loop *loop, mote_job_id id)
{
    const struct mote_job *j = job_get(loop, id);

    return j == NULL ? NULL : j->errmsg;
}

int mote_job_result(const struct mote_loop *loop, mote_job_id id)
{
    const struct mote_job *j = job_get(loop, id);

    return j == NULL ? MOTE_ERR_STALE : j->result;
}

int mote_job_wake_all(struct mote_loop *loop, const struct mote_task_ops *ops)
{
    unsigned i;
    int n = 0;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        struct mote_job *j = &loop->jobs[i];

        if (job_active(j) && j->ops == ops) {
            j->wake = true;
            n++;
        }
    }
    if (n > 0)
        host_changed(loop);
    return n;
}

void mote_job_counts(const struct mote_loop *loop, unsigned *active, unsigned *inactive)
{
    unsigned i, a = 0, f = 0;

    for (i = 0; i < MOTE_MAX_JOBS; i++) {
        if (job_active(&loop->jobs[i]))
            a++;
        else if (job_finished(&loop->jobs[i]))
            f++;
    }
    if (active != NULL)
        *active = a;
    if (inactive != NULL)
        *inactive = f;
}

int mote_job_walk(const struct mote_loop *loop,
                  int (*fn)(void *arg, const struct mote_job_info *info), void *arg)
{
    bool seen[MOTE_MAX_JOBS];
    unsigned n;

    memset(seen, 0, sizeof(seen));
    for (n = 0; n < MOTE_MAX_JOBS; n++) {
        const struct mote_job *pick = NULL;
        struct mote_job_info info;
        unsigned i, at = 0;
        int rc;

        /* Oldest start first; among equal start times, slot order. */
        for (i = 0; i < MOTE_MAX_JOBS; i++) {
            const struct mote_job *j = &loop->jobs[i];

            if (seen[i] || j->state == MOTE_JOB_FREE)
                continue;
            if (pick == NULL || mote_before(j->started_ms, pick->started_ms)) {
                pick = j;
                at = i;
            }
        }
        if (pick == NULL)
            break;
        seen[at] = true;
        info.id = make_id(pick->gen, at);
        info.name = pick->name;
        info.kind = pick->ops->kind != NULL ? pick->ops->kind : "";
        info.state = (enum mote_job_state)pick->state;
        info.result = pick->result;
        info.errmsg = pick->errmsg;
        info.started_ms = pick->started_ms;
        info.finished_ms = job_finished(pick) ? pick->finished_ms : 0;
        rc = fn(arg, &info);
        if (rc != 0)
            return rc;
    }
    return 0;
}

const char *mote_job_state_name(enum mote_job_state state)
{
    switch (state) {
    case MOTE_JOB_RUNNING:
        return "running";
    case MOTE_JOB_CANCELLING:
        return "cancelling";
    case MOTE_JOB_DONE:
        return "done";
    case MOTE_JOB_CANCELLED:
        return "cancelled";
    case MOTE_JOB_FAILED:
        return "failed";
    case MOTE_JOB_FREE:
    default:
        return "free";
    }
}

/* ---- timers ------------------------------------------------------------ */

int mote_timer_start(struct mote_loop *loop, uint32_t delay_ms, mote_timer_fn fn, void *arg,
                     mote_job_id owner, mote_timer_id *out)
{
    unsigned i;

    if (fn == NULL && job_get(loop, owner) == NULL)
        return MOTE_ERR_INVAL;
    if (delay_ms > 0x7FFFFFFFu)
        return MOTE_ERR_RANGE;
    for (i = 0; i < MOTE_MAX_TIMERS; i++) {
        struct mote_timer_slot *t = &loop->timers[i];

        if (t->armed)
            continue;
        t->gen = next_gen(t->gen);
        t->armed = true;
        t->due = mote_loop_now(loop) + delay_ms;
        t->fn = fn;
        t->arg = arg;
        t->owner = owner;
        if (out != NULL)
            *out = make_id(t->gen, i);
        host_changed(loop);
        return 0;
    }
    return MOTE_ERR_FULL;
}

int mote_timer_stop(struct mote_loop *loop, mote_timer_id id)
{
    unsigned idx = id & 0xFFu;
    struct mote_timer_slot *t;

    if (id == 0 || idx >= MOTE_MAX_TIMERS)
        return MOTE_ERR_STALE;
    t = &loop->timers[idx];
    if (!t->armed || t->gen != (id >> 8))
        return MOTE_ERR_STALE;
    t->armed = false;
    return 0;
}

/* ---- fd watches -------------------------------------------------------- */

static struct mote_watch_slot *watch_get(const struct mote_loop *loop, mote_watch_id id)
{
    unsigned idx = id & 0xFFu;
    const struct mote_watch_slot *w;

    if (id == 0 || idx >= MOTE_MAX_WATCHES)
        return NULL;
    w = &loop->watches[idx];
    if (!w->used || w->gen != (id >> 8))
        return NULL;
    return (struct mote_watch_slot *)w;
}

int mote_watch_add(struct mote_loop *loop, int fd, unsigned events, mote_watch_fn fn, void *arg,
                   mote_job_id owner, mote_watch_id *out)
{
    unsigned i;

    if (fd < 0 || (fn == NULL && job_get(loop, owner) == NULL))
        return MOTE_ERR_INVAL;
    for (i = 0; i < MOTE_MAX_WATCHES; i++) {
        struct mote_watch_slot *w = &loop->watches[i];

        if (w->used)
            continue;
        w->gen = next_gen(w->gen);
        w->used = true;
        w->fd = fd;
        w->events = (uint16_t)(events & (MOTE_POLL_IN | MOTE_POLL_OUT));
        w->revents = 0;
        w->fn = fn;
        w->arg = arg;
        w->owner = owner;
        if (out != NULL)
            *out = make_id(w->gen, i);
        host_changed(loop);
        return 0;
    }
    return MOTE_ERR_FULL;
}

int mote_watch_set(struct mote_loop *loop, mote_watch_id id, unsigned events)
{
    struct mote_watch_slot *w = watch_get(loop, id);

    if (w == NULL)
        return MOTE_ERR_STALE;
    w->events = (uint16_t)(events & (MOTE_POLL_IN | MOTE_POLL_OUT));
    host_changed(loop);
    return 0;
}

int mote_watch_revents(const struct mote_loop *loop, mote_watch_id id)
{
    const struct mote_watch_slot *w = watch_get(loop, id);

    return w == NULL ? MOTE_ERR_STALE : (int)w->revents;
}

int mote_watch_fd(const struct mote_loop *loop, mote_watch_id id)
{
    const struct mote_watch_slot *w = watch_get(loop, id);

    return w == NULL ? MOTE_ERR_STALE : w->fd;
}

int mote_watch_remove(struct mote_loop *loop, mote_watch_id id)
{
    struct mote_watch_slot *w = watch_get(loop, id);

    if (w == NULL)
        return MOTE_ERR_STALE;
    w->used = false;
    host_drop_fd(loop, w->fd);
    host_changed(loop);
    return 0;
}
