/*
 * embed-loop - the embed example's agent (device.c) inside another event
 * loop, libev's: the program's main loop is libev's; mote says which
 * descriptors to watch and when to call it back (mote_loop_host), and
 * each callback runs one turn of mote's loop. The conversation, the
 * custom tool (it waits on a timer: a tool of several steps), signals
 * and the shutdown work as in build/embed. The same usage:
 *
 *   MOTE_EMBED_URL=http://127.0.0.1:8080 build/embed-loop "how warm is it?"
 *
 * Why libev here (of libuv, libev and GLib, the event libraries Debian
 * ships for C): it is the smallest; its watchers are structs the program
 * owns, like mote's own tables (nothing allocated per descriptor); and a
 * watcher can be stopped, changed and started again from inside any
 * callback, which is all mote asks of a host. docs/EMBEDDING.md runs the
 * same agent on GLib, libuv and a poll loop of its own.
 *
 * The loop is ev_loop_new's, not ev_default_loop's: the default loop
 * reaps child processes on SIGCHLD, and mote's port reaps its tools'.
 */
#include <ev.h>
#include <stdio.h>

#include "device.h"

static struct device d;
static struct ev_loop *evl;
static ev_io ios[MOTE_MAX_WATCHES + 1]; /* at most one per descriptor mote watches */
static ev_timer tick;                   /* mote's next deadline */

/* After each of mote's turns: the turn over, shut down; shut down, leave. */
static void after_turn(void)
{
    if (!mote_conv_busy(d.conv) && !mote_shutting_down(&d.ses))
        (void)mote_shutdown_begin(&d.ses, &device_done); /* a signal's drain goes on as it is */
    if (mote_shutdown_done(&d.ses))
        ev_break(evl, EVBREAK_ALL);
}

static void on_io(struct ev_loop *l, ev_io *w, int revents)
{
    (void)l;
    (void)mote_loop_ready(&d.loop, w->fd, ((revents & EV_READ) ? MOTE_POLL_IN : 0u) |
                                              ((revents & EV_WRITE) ? MOTE_POLL_OUT : 0u));
    after_turn();
}

static void on_tick(struct ev_loop *l, ev_timer *w, int revents)
{
    (void)l, (void)w, (void)revents;
    (void)mote_loop_timeout(&d.loop);
    after_turn();
}

/* mote's side of the host: start, change or stop libev's watchers. */
static void host_watch(void *arg, int fd, unsigned events)
{
    ev_io *w = NULL, *spare = NULL;
    size_t i;

    (void)arg;
    for (i = 0; i < sizeof(ios) / sizeof(ios[0]); i++) {
        if (ev_is_active(&ios[i]) && ios[i].fd == fd)
            w = &ios[i];
        else if (!ev_is_active(&ios[i]) && spare == NULL)
            spare = &ios[i];
    }
    if (w != NULL)
        ev_io_stop(evl, w);
    else
        w = spare;
    if (events == 0 || w == NULL)
        return;
    ev_io_set(w, fd, ((events & MOTE_POLL_IN) ? EV_READ : 0) |
                         ((events & MOTE_POLL_OUT) ? EV_WRITE : 0));
    ev_io_start(evl, w);
}

static void host_timer(void *arg, int32_t ms)
{
    (void)arg;
    ev_timer_stop(evl, &tick);
    if (ms < 0)
        return;
    ev_now_update(evl); /* from now, not from the start of libev's iteration */
    ev_timer_set(&tick, ms / 1000.0, 0.0);
    ev_timer_start(evl, &tick);
}

int main(int argc, char **argv)
{
    static const struct mote_loop_host host = {.watch = host_watch, .timer = host_timer};
    size_t i;

    evl = ev_loop_new(EVFLAG_AUTO);
    if (evl == NULL) {
        fprintf(stderr, "embed-loop: libev has no loop\n");
        return 1;
    }
    for (i = 0; i < sizeof(ios) / sizeof(ios[0]); i++)
        ev_init(&ios[i], on_io);
    ev_init(&tick, on_tick);
    if (device_start(&d, argc > 1 ? argv[1] : "How warm is it?") != 0 ||
        mote_loop_host(&d.loop, &host) < 0)
        return 1;
    ev_run(evl, 0); /* until after_turn sees the shutdown done */
    (void)mote_loop_host(&d.loop, NULL);
    ev_loop_destroy(evl);
    return device_finish(&d);
}
