/*
 * embed - an embedder's own agent on libmote: one conversation, one custom
 * tool ("read_sensor"), the model's answer printed as it streams, Ctrl+C
 * and SIGTERM mapped to mote_shutdown.
 *
 *   MOTE_EMBED_URL=http://127.0.0.1:8080 build/embed "how warm is it?"
 *
 * The state (the conversation's journal) goes to ./embed-state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_posix.h"

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_session ses;
static struct mote_llm_conf llm;

/* The custom tool: runs as a job; this one answers at once. */
static int read_sensor(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    char unit[8] = "C";

    (void)l, (void)self;
    (void)mote_tool_arg(run, "unit", unit, sizeof(unit));
    mote_tool_outs(run, unit[0] == 'F' ? "sensor 1: 70.7 F" : "sensor 1: 21.5 C");
    return MOTE_STEP_DONE;
}

static const struct mote_tool sensor = {
    "read_sensor", "Read the device's temperature sensor.",
    "{\"type\":\"object\",\"properties\":{\"unit\":{\"type\":\"string\",\"enum\":[\"C\",\"F\"]}}}",
    read_sensor, NULL, NULL, MOTE_TOOL_NO_APPROVAL /* it changes nothing */};

static void on_event(void *arg, const struct mote_event *ev)
{
    (void)arg;
    switch (ev->type) {
    case MOTE_EV_TEXT:
        fwrite(ev->text, 1, ev->len, stdout);
        fflush(stdout);
        break;
    case MOTE_EV_TOOL_CALL:
        printf("\n[tool %s %.*s]\n", ev->name, (int)ev->input_len, ev->input);
        break;
    case MOTE_EV_TOOL_RESULT:
        printf("[result: %.*s]\n", (int)ev->len, ev->text);
        break;
    case MOTE_EV_TURN_END:
        printf("\n[turn end: %s, %llu tokens in, %llu out]\n", ev->stop_reason,
               (unsigned long long)ev->usage.input_tokens,
               (unsigned long long)ev->usage.output_tokens);
        break;
    case MOTE_EV_ERROR:
    case MOTE_EV_WARNING:
    case MOTE_EV_RECOVERY:
        fprintf(stderr, "embed: %s\n", ev->text);
        break;
    case MOTE_EV_SHUTDOWN:
        printf("[shutdown: %s%s]\n", ev->report->reason, ev->report->timed_out ? ", timed out" : "");
        break;
    default:
        break;
    }
}

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    struct mote_shutdown_req req = {sig == MOTE_SIG_TERM ? "SIGTERM" : "SIGINT",
                                    sig == MOTE_SIG_TERM ? MOTE_SD_DRAIN : MOTE_SD_CANCEL, 5000,
                                    false};

    (void)l, (void)n, (void)arg;
    (void)mote_shutdown_begin(&ses, &req); /* inside the loop: begin, never block */
}

int main(int argc, char **argv)
{
    struct mote_session_conf sc = {on_event, NULL, NULL, 0};
    struct mote_conv_conf cc;
    struct mote_shutdown_req done = {"done", MOTE_SD_CANCEL, 5000, false};
    struct mote_conv *conv;
    const char *url = getenv("MOTE_EMBED_URL"), *key = getenv("ANTHROPIC_API_KEY");
    const char *prompt = argc > 1 ? argv[1] : "How warm is it?";
    int rc;

    mote_llm_conf_defaults(&llm);
    llm.base_url = url != NULL ? url : "https://api.anthropic.com";
    llm.api_key = key != NULL ? key : "";
    memset(&cc, 0, sizeof(cc));
    cc.llm = &llm;
    cc.model = "claude-sonnet-4-5";
    cc.system = "You run on a small device with a temperature sensor.";
    cc.tools = true;
    cc.approval = MOTE_APPROVE_DENY; /* only tools that need no approval run */
    rc = mote_posix_init(&pp);
    if (rc == 0)
        rc = mote_loop_init(&loop, &pp.port);
    if (rc == MOTE_ERR_CONFIG) {
        /* checked first: nothing else of the library is safe to use then */
        fprintf(stderr, "embed: this program and libmote were built with different MOTE_* "
                        "values (library %#lx, program %#lx)\n",
                mote_config_signature(), (unsigned long)MOTE_CONFIG_SIGNATURE);
        return 1;
    }
    if (rc < 0 || mote_posix_signals_install(&pp) < 0 ||
        mote_posix_storage_root(&pp, "embed-state") < 0 || mote_session_init(&ses, &loop, &sc) < 0 || mote_session_add_tool(&ses, &sensor) < 0) {
        fprintf(stderr, "embed: cannot start\n");
        return 1;
    }
    mote_loop_on_signal(&loop, on_signal, NULL);
    rc = mote_conv_create(&ses, &cc, NULL, &conv);
    if (rc == 0)
        rc = mote_conv_send(conv, prompt, strlen(prompt));
    if (rc < 0) {
        fprintf(stderr, "embed: %s\n", mote_strerror(rc));
        return 1;
    }
    /* Run until the turn ends (or a signal shuts down). */
    while (mote_conv_busy(conv) && !mote_shutting_down(&ses)) {
        if (mote_loop_poll(&loop, -1) < 0)
            break;
    }
    rc = mote_conv_state(conv) == MOTE_CONV_ERROR ? 1 : 0;
    (void)mote_shutdown(&ses, &done, NULL); /* history, journals, all of it */
    mote_session_deinit(&ses);
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    return rc;
}
