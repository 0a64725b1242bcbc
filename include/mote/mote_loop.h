/*
 * mote_loop.h - the event loop, its job table, timers and fd watches.
 *
 * One struct mote_loop, owned by the caller (static or on the stack), holds
 * every table with sizes from mote_config.h; nothing is allocated. The loop
 * is single-threaded: every function here must be called from the thread
 * that calls mote_loop_poll(), and none of them blocks except
 * mote_loop_poll() and mote_loop_wait_jobs(), which wait through the port.
 * A program with a main loop of its own runs mote inside it instead
 * (mote_loop_host: mote says what to watch, the host calls back).
 * docs/EMBEDDING.md is the guide to both, with programs on GLib, libuv,
 * libev and a poll loop of one's own.
 *
 * Jobs. A job runs a task: a caller-owned state machine with a small
 * vtable (struct mote_task_ops). The loop steps a job when it has been
 * woken: right after spawn, when its cancel is requested, when one of its
 * fd watches is ready or one of its timers is due, or by mote_job_wake().
 * A step must not block. When a job ends the loop calls the task's release
 * once, drops the job's watches and timers, and schedules its
 * continuations. The slot itself stays (for /jobs and late continuations)
 * until pruning frees it.
 *
 * Job states: RUNNING and CANCELLING are "active"; DONE, CANCELLED and
 * FAILED are "finished" (inactive). CANCELLING means a cancel was
 * requested and the task has not stopped yet: it is still active, counted
 * as such, never pruned, and waited for by mote_loop_wait_jobs().
 *
 * Pruning, before each spawn: every active job and the
 * MOTE_MAX_INACTIVE_JOBS most recently finished jobs are kept; older
 * finished jobs are freed, oldest first. (A finished job whose
 * continuations have not run yet, or are running, is kept until they
 * have.) A table full of
 * active jobs makes spawn fail with MOTE_ERR_FULL; nothing is overwritten.
 *
 * Handles (mote_job_id, mote_timer_id, mote_watch_id) carry the slot's
 * generation: a handle to a freed or reused slot answers MOTE_ERR_STALE
 * and never reaches another object. 0 is never a valid handle.
 */
#ifndef MOTE_LOOP_H
#define MOTE_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_cancel.h"
#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mote_loop;

typedef uint32_t mote_job_id;
typedef uint32_t mote_timer_id;
typedef uint32_t mote_watch_id;

enum mote_job_state {
    MOTE_JOB_FREE = 0,   /* slot unused (never seen through a valid handle) */
    MOTE_JOB_RUNNING,    /* active */
    MOTE_JOB_CANCELLING, /* active: cancel requested, task not stopped yet */
    MOTE_JOB_DONE,       /* finished: the task completed */
    MOTE_JOB_CANCELLED,  /* finished: the task stopped after a cancel */
    MOTE_JOB_FAILED,     /* finished: with an error code and message */
};

/* What a task's step returns (negative: an enum mote_err, the job FAILED;
 * MOTE_ERR_CANCELED counts as MOTE_STEP_CANCELLED). */
enum mote_step {
    MOTE_STEP_PENDING = 0,   /* not finished; step me again when woken */
    MOTE_STEP_DONE = 1,      /* finished successfully */
    MOTE_STEP_CANCELLED = 2, /* stopped because the cancel flag was set */
};

struct mote_task_ops {
    const char *kind; /* short static name for listings ("llm", "shell") */

    /* Advances the task without blocking. `self` is the job's handle, for
     * mote_job_*() calls (cancel flag, watches, timers, error message).
     * Must not free the task or spawn re-entrantly into itself; it may
     * spawn other jobs. Returns an enum mote_step or < 0. */
    int (*step)(struct mote_loop *loop, mote_job_id self, void *task);

    /* Releases what the task holds (descriptors, processes, buffers it
     * borrowed). Called exactly once, after the last step, from the loop
     * (also from mote_loop_deinit for jobs still active). May be NULL. */
    void (*release)(struct mote_loop *loop, void *task);
};

/* A continuation: runs after job `job` finished, from the loop (never
 * inside another callback). `how` is DONE, CANCELLED or FAILED; `errmsg`
 * is the job's error message ("" unless FAILED), valid during the call. */
typedef void (*mote_cont_fn)(struct mote_loop *loop, mote_job_id job,
                             enum mote_job_state how, const char *errmsg, void *arg);

/* Timer and watch callbacks; run from the calls that run a turn of the
 * loop (mote_loop_poll(), or mote_loop_ready() and mote_loop_timeout()
 * inside another loop). */
typedef void (*mote_timer_fn)(struct mote_loop *loop, mote_timer_id timer, void *arg);
typedef void (*mote_watch_fn)(struct mote_loop *loop, mote_watch_id watch, int fd,
                              unsigned revents, void *arg);

/* Signals taken from the port; `count` is how many arrived since the last
 * call (at least 1). */
typedef void (*mote_signal_fn)(struct mote_loop *loop, enum mote_signal sig,
                               unsigned count, void *arg);

/* ---- internal layout (public only so the caller can own the memory) ---- */

struct mote_job_cont {
    char key[MOTE_CONT_KEY_LEN];
    mote_cont_fn fn;
    void *arg;
};

struct mote_job {
    uint32_t gen;          /* generation of this slot, 1..0xFFFFFF */
    uint8_t state;         /* enum mote_job_state */
    bool wake;             /* step on the next turn */
    uint8_t ncont;         /* continuations in use */
    uint32_t pending;      /* bit i: conts[i] must still run */
    uint32_t ready;        /* bit i: conts[i] runs this turn */
    uint32_t finish_seq;   /* order of finishing, for pruning */
    uint32_t started_ms;   /* loop clock at spawn */
    uint32_t finished_ms;  /* loop clock at the end */
    int result;            /* 0 or the failure's enum mote_err */
    const struct mote_task_ops *ops;
    void *task;
    struct mote_cancel cancel;
    char name[MOTE_JOB_NAME_LEN];
    char errmsg[MOTE_JOB_ERRMSG_LEN];
    struct mote_job_cont conts[MOTE_JOB_MAX_CONTINUATIONS];
};

struct mote_timer_slot {
    uint32_t gen;
    bool armed;
    uint32_t due;       /* loop clock */
    mote_timer_fn fn;   /* NULL: just wake `owner` */
    void *arg;
    mote_job_id owner;  /* 0 or the job whose end disarms it */
};

struct mote_watch_slot {
    uint32_t gen;
    bool used;
    int fd;
    uint16_t events;
    uint16_t revents;   /* last readiness seen */
    mote_watch_fn fn;   /* NULL: just wake `owner` */
    void *arg;
    mote_job_id owner;  /* 0 or the job whose end removes it */
};

/* The host's side of a loop run inside another event loop (libuv, libev,
 * GLib, OpenWrt's uloop, an RTOS's poll): mote says what to watch and
 * when to call it back; see mote_loop_host(). Both functions are called
 * only on a change, from inside mote's calls; they must not call any
 * mote_* function (only start, change or stop the host's own watchers). */
struct mote_loop_host {
    /* Watch descriptor `fd` for `events` (MOTE_POLL_IN | MOTE_POLL_OUT)
     * from now on, in place of what was asked for it before; 0: stop
     * watching it. Readiness goes to mote_loop_ready(). */
    void (*watch)(void *arg, int fd, unsigned events);
    /* Call mote_loop_timeout() once, `ms` milliseconds from now (0: as
     * soon as the host loop can), in place of the call asked for before;
     * < 0: cancel it. */
    void (*timer)(void *arg, int32_t ms);
    void *arg;
};

/* One descriptor the host was told to watch. */
struct mote_host_fd {
    int fd;
    uint16_t events;
    bool dropped; /* a watch on it was removed: told again (it may be a new descriptor) */
};

struct mote_loop {
    const struct mote_port *port;
    struct mote_cancel root;   /* parent of every job's flag by default */
    bool no_spawn;             /* shutdown began: spawns fail */
    bool brk;                  /* mote_loop_break() was called */
    bool polling;              /* inside mote_loop_poll() (callbacks run there) */
    uint32_t seq;              /* finish order counter */
    uint32_t turn;             /* mote_loop_poll() calls so far */
    mote_job_id cont_job;      /* the job whose continuation runs now, or 0 */
    mote_signal_fn on_signal;
    void *on_signal_arg;
    struct mote_job jobs[MOTE_MAX_JOBS];
    struct mote_timer_slot timers[MOTE_MAX_TIMERS];
    struct mote_watch_slot watches[MOTE_MAX_WATCHES];
    /* inside another loop (mote_loop_host) */
    struct mote_loop_host host; /* host.watch NULL: not hosted */
    bool host_syncing;          /* telling the host (never re-entered) */
    bool host_timer_on;         /* the host's timer is set and has not fired */
    uint32_t host_due;          /* ... for this loop clock */
    int sig_fd;                 /* the port's signals_fd (-1: none; -2: not asked yet) */
    unsigned host_nfd;
    struct mote_host_fd host_fds[MOTE_MAX_WATCHES + 1]; /* what the host watches */
};

/* ---- the loop ---------------------------------------------------------- */

/* Prepares `loop` to run on `port` (which must outlive it). Returns 0,
 * MOTE_ERR_INVAL if the port has the wrong version, MOTE_ERR_NOSYS if it
 * lacks now_ms or wait, or MOTE_ERR_CONFIG if the program was compiled
 * with other MOTE_* values than the library (its structs would not match:
 * build both with the same mote_config.h values; mote_config_signature()
 * tells the library's). Never blocks. A macro: it passes the caller's
 * MOTE_CONFIG_SIGNATURE. */
#define mote_loop_init(loop, port) mote_loop_init_checked((loop), (port), MOTE_CONFIG_SIGNATURE)
int mote_loop_init_checked(struct mote_loop *loop, const struct mote_port *port,
                           unsigned long config_signature) MOTE_MUST_CHECK;

/* The MOTE_CONFIG_SIGNATURE the library was built with. */
unsigned long mote_config_signature(void);

/* Releases every job still active (release is called; no continuation
 * runs) and clears the tables. The loop can be initialised again. */
void mote_loop_deinit(struct mote_loop *loop);

/* One turn: waits through the port for a watched fd, the next timer or a
 * signal, at most `timeout_ms` (< 0: until something happens, in waits of
 * at most MOTE_LOOP_MAX_WAIT_MS; it does not wait at all when a job is
 * already runnable), then delivers fd events, signals and due timers,
 * steps every woken job, and runs the continuations that became due.
 * Returns how many things it did (0 on a plain timeout) or < 0 if the
 * port's wait failed. Never runs inside itself: called from a callback,
 * a step or a release (directly or through mote_loop_wait_jobs or
 * mote_shutdown) it does nothing and returns MOTE_ERR_BUSY - a helper that
 * must wait is a job or state machine the caller's loop drives. */
int mote_loop_poll(struct mote_loop *loop, int32_t timeout_ms);

/* ---- inside another event loop ----------------------------------------
 *
 * The inverted form of mote_loop_poll, for a program whose main loop is
 * another library's (as curl's multi-socket API and c-ares do it): mote
 * tells the host which descriptors to watch for what, and when its next
 * deadline is; the host calls mote_loop_ready() when one is ready and
 * mote_loop_timeout() when the deadline comes. Each call does what one
 * turn of mote_loop_poll does after its wait: signals (through the port's
 * signals_fd, watched like the others), fd events, due timers, woken
 * jobs, continuations, pruning. Nothing else changes: jobs, timers,
 * watches, the agent and mote_shutdown_begin work as with
 * mote_loop_poll. Functions that drive the loop themselves
 * (mote_loop_wait_jobs, mote_shutdown) still work but wait through the
 * port; a hosted program uses mote_shutdown_begin and leaves its loop on
 * MOTE_EV_SHUTDOWN. docs/EMBEDDING.md has the glue for GLib, libuv, libev,
 * poll() and uloop. */

/* Hands the loop to `host`: its watch() is called at once for each
 * descriptor to watch and its timer() for the first deadline, then on
 * every change (a watch added or removed, a timer armed earlier, work
 * made runnable from outside the loop, a deadline that passed). NULL
 * takes it back: the host is told to stop watching everything. Returns
 * 0, MOTE_ERR_INVAL (watch or timer NULL) or MOTE_ERR_BUSY (called from
 * inside the loop). Never blocks. */
int mote_loop_host(struct mote_loop *loop, const struct mote_loop_host *host);

/* Descriptor `fd` is ready for `revents` (MOTE_POLL_IN, MOTE_POLL_OUT,
 * MOTE_POLL_ERR): delivers it to the watches on it, then runs the rest of
 * a turn. Returns how many things it did, or MOTE_ERR_BUSY (called from
 * inside the loop). Never blocks. */
int mote_loop_ready(struct mote_loop *loop, int fd, unsigned revents);

/* The deadline the host was given came: runs a turn (due timers, woken
 * jobs, continuations). Early or late calls are harmless. Returns how many
 * things it did, or MOTE_ERR_BUSY. Never blocks. */
int mote_loop_timeout(struct mote_loop *loop);

/* The enumerating form, for a host that builds its poll set each time
 * round (an RTOS's poll, select): fills `fds` (cap entries) with each
 * descriptor to watch, one entry per descriptor, the port's signals_fd
 * included, and sets *timeout_ms to the longest the host may wait before
 * it calls mote_loop_timeout() (0: at once; at most
 * MOTE_LOOP_MAX_WAIT_MS). Returns how many entries, or MOTE_ERR_FULL
 * (more than cap; MOTE_MAX_WATCHES + 1 is always enough). Never
 * blocks. */
int mote_loop_fds(struct mote_loop *loop, struct mote_pollfd *fds, unsigned cap,
                  int32_t *timeout_ms);

/* The loop's clock (the port's monotonic milliseconds). */
uint32_t mote_loop_now(const struct mote_loop *loop);

/* Sets the function that receives signals (NULL: they are dropped). */
void mote_loop_on_signal(struct mote_loop *loop, mote_signal_fn fn, void *arg);

/* Makes a running mote_loop_wait_jobs() return MOTE_ERR_INTR (for the
 * "stop waiting" of a further Ctrl+C). Safe from any loop callback. */
void mote_loop_break(struct mote_loop *loop);

/* Stops new work: from now on mote_job_spawn fails with
 * MOTE_ERR_SHUTDOWN, so continuation chains end. Idempotent. */
void mote_loop_stop_spawns(struct mote_loop *loop);

/* Requests cancellation of every active job (sets the loop's root flag).
 * Returns how many jobs were asked. Idempotent. */
int mote_loop_cancel_all(struct mote_loop *loop);

/* Runs the loop until no job is active, or `timeout_ms` passes (any value
 * up to UINT32_MAX, about 49 days), or mote_loop_break() is called. Returns 0 (none active),
 * MOTE_ERR_TIMEDOUT (some still active: see mote_job_walk),
 * MOTE_ERR_INTR, or MOTE_ERR_BUSY when called from inside the loop. For
 * the top level of a program only. */
int mote_loop_wait_jobs(struct mote_loop *loop, uint32_t timeout_ms);

/* ---- jobs -------------------------------------------------------------- */

/* Prunes, then starts a job named `name` running `task` with `ops`. Its
 * cancel flag's parent is `parent` (NULL: the loop's root flag). The first
 * step happens in the next step phase of mote_loop_poll(), never inside
 * this call: spawned from a step or a continuation, on the next turn
 * (whichever slot the job takes); from a watch, timer or signal callback,
 * later in the same turn.
 * Returns 0 and sets *out, or MOTE_ERR_SHUTDOWN (spawns stopped),
 * MOTE_ERR_FULL (every slot active or awaiting its continuations),
 * MOTE_ERR_INVAL (ops or step NULL). */
int mote_job_spawn(struct mote_loop *loop, const char *name, const struct mote_task_ops *ops,
                   void *task, const struct mote_cancel *parent, mote_job_id *out) MOTE_MUST_CHECK;

/* Requests cancellation of job `id`: its flag is set, a RUNNING job
 * becomes CANCELLING and is woken. Returns 0, MOTE_ERR_ALREADY (it had
 * finished) or MOTE_ERR_STALE. */
int mote_job_cancel(struct mote_loop *loop, mote_job_id id);

/* True if job `id`'s cancel flag (or an ancestor) is set, or the handle
 * is stale. For a task's step. */
bool mote_job_cancelled(const struct mote_loop *loop, mote_job_id id);

/* The job's cancel flag, to be the parent of finer-grained flags; NULL if
 * the handle is stale. */
const struct mote_cancel *mote_job_cancel_flag(const struct mote_loop *loop, mote_job_id id);

/* Marks job `id` to be stepped on the next turn. Returns 0, MOTE_ERR_STALE
 * or MOTE_ERR_ALREADY (finished). */
int mote_job_wake(struct mote_loop *loop, mote_job_id id);

/* Adds continuation `fn` under `key` (replacing one with the same key).
 * If the job has already finished, it runs on the next loop turn, never
 * inside this call. Returns 0, MOTE_ERR_STALE, MOTE_ERR_FULL (all
 * MOTE_JOB_MAX_CONTINUATIONS used) or MOTE_ERR_TOO_LARGE (key too long). */
int mote_job_then(struct mote_loop *loop, mote_job_id id, const char *key, mote_cont_fn fn,
                  void *arg) MOTE_MUST_CHECK;

/* Removes the continuation under `key`. Returns 0, MOTE_ERR_NOENT or
 * MOTE_ERR_STALE. */
int mote_job_unthen(struct mote_loop *loop, mote_job_id id, const char *key);

/* Keeps `msg` as the job's error message (cut to MOTE_JOB_ERRMSG_LEN - 1
 * bytes at a UTF-8 boundary). For a step about to return < 0. */
int mote_job_set_error(struct mote_loop *loop, mote_job_id id, const char *msg);

/* The job's state, or MOTE_ERR_STALE (as an int). */
int mote_job_state(const struct mote_loop *loop, mote_job_id id);

/* The job's error message ("" if none), or NULL if stale. */
const char *mote_job_error(const struct mote_loop *loop, mote_job_id id);

/* The job's result code: 0, or the enum mote_err it failed with;
 * MOTE_ERR_STALE if stale. */
int mote_job_result(const struct mote_loop *loop, mote_job_id id);

/* Marks every active job that runs `ops` to be stepped on the next turn
 * (jobs that wait on a resource they share, woken when it frees up).
 * Returns how many were marked. */
int mote_job_wake_all(struct mote_loop *loop, const struct mote_task_ops *ops);

/* Counts active and finished (kept) jobs; either pointer may be NULL. */
void mote_job_counts(const struct mote_loop *loop, unsigned *active, unsigned *inactive);

struct mote_job_info {
    mote_job_id id;
    const char *name;
    const char *kind;
    enum mote_job_state state;
    int result;
    const char *errmsg;
    uint32_t started_ms;
    uint32_t finished_ms; /* 0 while active */
};

/* Calls `fn` for each job in the table, in the order they were started
 * (oldest first). A non-zero return stops the walk and is returned. */
int mote_job_walk(const struct mote_loop *loop,
                  int (*fn)(void *arg, const struct mote_job_info *info), void *arg);

/* "running", "cancelling", "done", "cancelled", "failed" or "free". */
const char *mote_job_state_name(enum mote_job_state state);

/* ---- timers ------------------------------------------------------------ */

/* Arms a one-shot timer due in `delay_ms`. With `fn` NULL it wakes job
 * `owner` instead of calling anything. A timer with an owner is disarmed
 * when that job ends. Returns 0 and sets *out (may be NULL), or
 * MOTE_ERR_FULL, MOTE_ERR_INVAL (no fn and no owner). */
int mote_timer_start(struct mote_loop *loop, uint32_t delay_ms, mote_timer_fn fn, void *arg,
                     mote_job_id owner, mote_timer_id *out) MOTE_MUST_CHECK;

/* Disarms a timer. Returns 0 or MOTE_ERR_STALE (already fired or
 * stopped). */
int mote_timer_stop(struct mote_loop *loop, mote_timer_id id);

/* ---- fd watches -------------------------------------------------------- */

/* Watches port descriptor `fd` for MOTE_POLL_IN / MOTE_POLL_OUT. With
 * `fn` NULL readiness wakes job `owner`. A watch with an owner is removed
 * when that job ends. Returns 0 and sets *out (may be NULL), or
 * MOTE_ERR_FULL, MOTE_ERR_INVAL. */
int mote_watch_add(struct mote_loop *loop, int fd, unsigned events, mote_watch_fn fn, void *arg,
                   mote_job_id owner, mote_watch_id *out) MOTE_MUST_CHECK;

/* Changes the events a watch waits for. */
int mote_watch_set(struct mote_loop *loop, mote_watch_id id, unsigned events);

/* The readiness seen by the last turn (MOTE_POLL_*), or MOTE_ERR_STALE. */
int mote_watch_revents(const struct mote_loop *loop, mote_watch_id id);

/* The descriptor a watch is on (>= 0), or MOTE_ERR_STALE: tells whether a
 * kept watch still fits a descriptor that may have changed. */
int mote_watch_fd(const struct mote_loop *loop, mote_watch_id id);

/* Removes a watch. Returns 0 or MOTE_ERR_STALE. */
int mote_watch_remove(struct mote_loop *loop, mote_watch_id id);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_LOOP_H */
