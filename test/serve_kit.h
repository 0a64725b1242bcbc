/*
 * serve_kit.h - mote serve on the deterministic test port, as the unit
 * tests and the fuzz targets of the server set it up (test helper): the
 * port with a scripted model network and served sockets, the model and
 * conversation confs they share, the loop, a session with the test's
 * tools, the server listening, and its end. The state is this file's
 * statics and model_kit.h's (one server per test program).
 */
#ifndef MOTE_TEST_SERVE_KIT_H
#define MOTE_TEST_SERVE_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "../port/test/mote_tport.h"
#include "model_kit.h"
#include "mote/mote_agent.h"
#include "mote/mote_serve.h"

static struct mote_tport tp;
static struct mote_tport_net net;
static struct mote_tport_serve ts;
static struct mote_loop loop;
static struct mote_session ses;
static struct mote_serve srv;
static struct mote_serve_conf vc;

/* The session's events go to the server. */
static inline void kit_on_event(void *arg, const struct mote_event *e)
{
    (void)arg;
    mote_serve_event(&srv, e);
}

/* The port (its clock at 1000 ms) with `script` as the model's network
 * (net.n answers, none yet) and served sockets; the model as kit_model
 * gives it, tools offered and allowed; the server on "mote.sock" with
 * nothing else set. */
static inline void kit_conf(struct mote_tport_resp *script)
{
    mote_tport_init(&tp, 1000);
    mote_tport_net_init(&tp, &net, script, 0);
    mote_tport_serve_init(&tp, &ts);
    kit_model();
    cc.tools = true;
    cc.approval = MOTE_APPROVE_ALLOW;
    memset(&vc, 0, sizeof(vc));
    vc.socket_path = "mote.sock";
}

/* The loop, a session with tools[0..n) whose events go to the server,
 * and the server of `vc` (its session and conversation conf set here)
 * listening. Returns 0, or < 0 when a step failed. */
static inline int kit_start(const struct mote_tool *tools, unsigned n)
{
    static struct mote_session_conf sc;
    unsigned i;

    sc.on_event = kit_on_event;
    if (mote_loop_init(&loop, &tp.port) < 0 || mote_session_init(&ses, &loop, &sc) < 0)
        return -1;
    for (i = 0; i < n; i++)
        if (mote_session_add_tool(&ses, &tools[i]) < 0)
            return -1;
    vc.session = &ses;
    vc.conv = &cc;
    if (mote_serve_init(&srv, &loop, &vc) < 0 || mote_serve_listen(&srv) < 0)
        return -1;
    return 0;
}

/* The server, the session and the loop ended (a process death when the
 * port is kept: storage stays). */
static inline void kit_stop(void)
{
    mote_serve_deinit(&srv);
    mote_session_deinit(&ses);
    mote_loop_deinit(&loop);
}

#endif
