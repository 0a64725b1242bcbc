/*
 * device.c - the agent of the embed examples: a custom tool that reads a
 * (pretend) temperature sensor over several loop steps, the model's answer
 * printed as it streams, SIGINT and SIGTERM mapped to the shutdown. The
 * loop that drives it is the caller's: main.c or loop.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

/* The custom tool runs as a job, one step at a time. The sensor needs 20
 * ms to settle: the first step arms a timer that wakes the job, the
 * second reads. What a run keeps between its steps lives in
 * run->st.user, zeroed for each run. */
struct sensor_run {
    bool settling;
};

static int read_sensor(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    struct sensor_run *sr = (struct sensor_run *)run->st.user;
    char unit[8] = "C";

    if (mote_job_cancelled(l, self))
        return MOTE_STEP_CANCELLED;
    if (!sr->settling) {
        sr->settling = true;
        /* owned by this job: disarmed if the job ends first */
        return mote_timer_start(l, 20, NULL, NULL, self, NULL) < 0 ? MOTE_ERR_FULL
                                                                    : MOTE_STEP_PENDING;
    }
    (void)mote_tool_arg(run, "unit", unit, sizeof(unit));
    mote_tool_outs(run, unit[0] == 'F' ? "sensor 1: 70.7 F" : "sensor 1: 21.5 C");
    return MOTE_STEP_DONE;
}

static const struct mote_tool sensor = {
    .name = "read_sensor",
    .description = "Read the device's temperature sensor.",
    .schema = "{\"type\":\"object\",\"properties\":{\"unit\":{\"type\":\"string\","
              "\"enum\":[\"C\",\"F\"]}}}",
    .step = read_sensor,
    .flags = MOTE_TOOL_NO_APPROVAL, /* it changes nothing */
};

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
        fprintf(stderr, "embed: %s (%s)\n", ev->text, mote_err_name(ev->code));
        break;
    case MOTE_EV_WARNING:
    case MOTE_EV_RECOVERY:
    case MOTE_EV_NOTE:
        fprintf(stderr, "embed: %s\n", ev->text);
        break;
    case MOTE_EV_SHUTDOWN:
        printf("[shutdown: %s%s]\n", ev->report->reason, ev->report->timed_out ? ", timed out" : "");
        fflush(stdout);
        break;
    default:
        break;
    }
}

/* SIGTERM lets the answer finish (drain), SIGINT cancels, a second signal
 * stops waiting. From inside the loop: begin, never block. */
static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    struct device *d = arg;
    struct mote_shutdown_req req = {
        .reason = sig == MOTE_SIG_TERM ? "SIGTERM" : "SIGINT",
        .mode = sig == MOTE_SIG_TERM ? MOTE_SD_DRAIN : MOTE_SD_CANCEL,
        .timeout_ms = 5000,
        .force = mote_shutting_down(&d->ses),
    };

    (void)l, (void)n;
    (void)mote_shutdown_begin(&d->ses, &req);
}

int device_start(struct device *d, const char *prompt)
{
    struct mote_session_conf sc;
    struct mote_conv_conf cc;
    const char *url = getenv("MOTE_EMBED_URL"), *key = getenv("ANTHROPIC_API_KEY");
    int rc;

    mote_llm_conf_defaults(&d->llm);
    d->llm.base_url = url != NULL ? url : "https://api.anthropic.com";
    d->llm.api_key = key != NULL ? key : "";
    mote_session_conf_defaults(&sc);
    sc.on_event = on_event;
    mote_conv_conf_defaults(&cc);
    cc.llm = &d->llm;
    cc.model = "claude-sonnet-4-5";
    cc.system = "You run on a small device with a temperature sensor.";
    cc.tools = true;
    cc.approval = MOTE_APPROVE_DENY; /* only tools that need no approval run */
    rc = mote_posix_init(&d->pp);
    if (rc == 0)
        rc = mote_loop_init(&d->loop, &d->pp.port);
    if (rc == MOTE_ERR_CONFIG) {
        /* checked first: nothing else of the library is safe to use then */
        fprintf(stderr, "embed: this program and libmote were built with different MOTE_* "
                        "values (library %#lx, program %#lx)\n",
                mote_config_signature(), (unsigned long)MOTE_CONFIG_SIGNATURE);
        return 1;
    }
    if (rc < 0 || mote_posix_signals_install(&d->pp) < 0 ||
        mote_posix_storage_root(&d->pp, "embed-state") < 0 ||
        mote_session_init(&d->ses, &d->loop, &sc) < 0 ||
        mote_session_add_tool(&d->ses, &sensor) < 0) {
        fprintf(stderr, "embed: cannot start\n");
        return 1;
    }
    mote_loop_on_signal(&d->loop, on_signal, d);
    rc = mote_conv_create(&d->ses, &cc, NULL, &d->conv);
    if (rc == 0)
        rc = mote_conv_send(d->conv, prompt, strlen(prompt));
    if (rc < 0) {
        fprintf(stderr, "embed: %s\n", mote_strerror(rc));
        return 1;
    }
    return 0;
}

const struct mote_shutdown_req device_done = {.reason = "done", .mode = MOTE_SD_CANCEL,
                                               .timeout_ms = 5000};

int device_finish(struct device *d)
{
    int rc = d->conv != NULL && mote_conv_state(d->conv) == MOTE_CONV_ERROR ? 1 : 0;

    mote_session_deinit(&d->ses);
    mote_loop_deinit(&d->loop);
    mote_posix_deinit(&d->pp);
    return rc;
}
