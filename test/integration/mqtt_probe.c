/*
 * mqtt_probe - the library's MQTT client with the real POSIX port, for the
 * integration tests against a real broker. It connects as ID with a
 * persistent session, a retained last will {"state":"offline"} on
 * PREFIX/status, publishes {"state":"online"} there (retained, QoS 1) at
 * each connection, subscribes to PREFIX/in at QoS 1, and answers each
 * message there with "echo:PAYLOAD" on PREFIX/out (QoS 1), acknowledging
 * the message only after its line was written and flushed (as a frontend
 * acknowledges after journaling). SIGTERM or SIGINT: publishes
 * {"state":"offline","reason":"SIGTERM"} (retained, QoS 1), then a clean
 * disconnect, and exits 0.
 *
 *   mqtt_probe URL ID PREFIX [--ca-file F] [--keepalive S] [--backoff MS]
 *              [--backoff-max MS] [--connect-ms MS]
 *   credentials: PROBE_MQTT_USERNAME, PROBE_MQTT_PASSWORD
 *
 * Output, one JSON object a line: {"ev":"connected","sp":B}
 * {"ev":"subscribed","granted":N} {"ev":"message","topic":...,"payload":...,
 * "qos":N,"dup":B,"retain":B,"oversize":B,"len":N} {"ev":"published","id":N}
 * {"ev":"offline","error":...,"retry_ms":N} {"ev":"note","text":...}
 * and a last {"ev":"end","state":...,"error":...}.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_json.h"
#include "mote/mote_mqtt.h"
#include "mote/mote_posix.h"
#include "probe_out.h"

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_mqtt mq;
static struct mote_mqtt_conf conf;
static char status_topic[256], in_topic[256], out_topic[256];
static const char *reason;

static void publish_status(const char *json)
{
    int rc = mote_mqtt_publish(&mq, status_topic, json, strlen(json), 1, true);

    if (rc < 0)
        printf("{\"ev\":\"error\",\"what\":\"status\",\"rc\":%d}\n", rc);
}

static int on_event(void *arg, const struct mote_mqtt_event *ev)
{
    (void)arg;
    switch (ev->type) {
    case MOTE_MQTT_EV_CONNECTED:
        printf("{\"ev\":\"connected\",\"sp\":%s}\n", ev->session_present ? "true" : "false");
        publish_status("{\"state\":\"online\"}");
        break;
    case MOTE_MQTT_EV_SUBSCRIBED:
        printf("{\"ev\":\"subscribed\",\"granted\":%u}\n", ev->granted);
        break;
    case MOTE_MQTT_EV_MESSAGE: {
        static char echo[MOTE_MQTT_PAYLOAD_MAX];
        int rc;

        printf("{\"ev\":\"message\",\"qos\":%u,\"dup\":%s,\"retain\":%s,\"oversize\":%s,"
               "\"len\":%zu",
               ev->qos, ev->dup ? "true" : "false", ev->retain ? "true" : "false",
               ev->oversize ? "true" : "false", ev->len);
        jstr("topic", ev->topic, strlen(ev->topic));
        if (ev->payload != NULL)
            jstr("payload", (const char *)ev->payload, ev->len);
        if (ev->text != NULL)
            jstr("text", ev->text, strlen(ev->text));
        printf("}\n");
        fflush(stdout); /* "journaled": now it may be acknowledged */
        if (ev->payload != NULL && ev->len + 5 <= sizeof(echo)) {
            memcpy(echo, "echo:", 5);
            memcpy(echo + 5, ev->payload, ev->len);
            rc = mote_mqtt_publish(&mq, out_topic, echo, ev->len + 5, 1, false);
            if (rc < 0)
                printf("{\"ev\":\"error\",\"what\":\"echo\",\"rc\":%d}\n", rc);
        }
        if (ev->ack != 0 && mote_mqtt_ack(&mq, ev->ack) < 0)
            printf("{\"ev\":\"error\",\"what\":\"ack\"}\n");
        break;
    }
    case MOTE_MQTT_EV_PUBLISHED:
        printf("{\"ev\":\"published\",\"id\":%u}\n", ev->id);
        break;
    case MOTE_MQTT_EV_OFFLINE:
        printf("{\"ev\":\"offline\",\"retry_ms\":%u", ev->retry_ms);
        jstr("error", ev->text, strlen(ev->text));
        printf("}\n");
        break;
    case MOTE_MQTT_EV_NOTE:
        printf("{\"ev\":\"note\"");
        jstr("text", ev->text, strlen(ev->text));
        printf("}\n");
        break;
    default:
        break;
    }
    fflush(stdout);
    return 0;
}

static void on_signal(struct mote_loop *l, enum mote_signal sig, unsigned count, void *arg)
{
    (void)l, (void)count, (void)arg;
    if (reason != NULL)
        return;
    reason = sig == MOTE_SIG_TERM ? "SIGTERM" : sig == MOTE_SIG_INT ? "SIGINT" : "SIGHUP";
    {
        char json[96];

        snprintf(json, sizeof(json), "{\"state\":\"offline\",\"reason\":\"%s\"}", reason);
        publish_status(json);
    }
    (void)mote_mqtt_disconnect(&mq, 5000);
}

int main(int argc, char **argv)
{
    static const char will[] = "{\"state\":\"offline\"}";
    mote_job_id job;
    int i, st;

    if (argc < 4) {
        fprintf(stderr, "usage: mqtt_probe URL ID PREFIX [options]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (mote_posix_init(&pp) < 0 || mote_posix_signals_install(&pp) < 0 ||
        mote_loop_init(&loop, &pp.port) < 0)
        return 1;
    mote_loop_on_signal(&loop, on_signal, NULL);
    snprintf(status_topic, sizeof(status_topic), "%s/status", argv[3]);
    snprintf(in_topic, sizeof(in_topic), "%s/in", argv[3]);
    snprintf(out_topic, sizeof(out_topic), "%s/out", argv[3]);
    mote_mqtt_conf_defaults(&conf);
    conf.url = argv[1];
    conf.client_id = argv[2];
    conf.username = getenv("PROBE_MQTT_USERNAME");
    conf.password = getenv("PROBE_MQTT_PASSWORD");
    conf.will_topic = status_topic;
    conf.will_payload = will;
    conf.will_len = sizeof(will) - 1;
    conf.will_qos = 1;
    conf.will_retain = true;
    conf.subs[0].filter = in_topic;
    conf.subs[0].qos = 1;
    conf.nsubs = 1;
    for (i = 4; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";

        if (strcmp(argv[i], "--ca-file") == 0)
            conf.ca_file = v, i++;
        else if (strcmp(argv[i], "--keepalive") == 0)
            conf.keep_alive_s = (uint16_t)atoi(v), i++;
        else if (strcmp(argv[i], "--backoff") == 0)
            conf.backoff_ms = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--backoff-max") == 0)
            conf.backoff_max_ms = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--connect-ms") == 0)
            conf.connect_timeout_ms = (uint32_t)atoi(v), i++;
    }
    if (mote_mqtt_init(&mq, &conf, on_event, NULL) < 0) {
        printf("{\"ev\":\"end\",\"state\":\"config\"");
        jstr("error", mq.errmsg, strlen(mq.errmsg));
        printf("}\n");
        return 2;
    }
    printf("{\"ev\":\"start\",\"sizeof_mqtt\":%zu,\"sizeof_session\":%zu}\n", sizeof(mq),
           sizeof(mq.sess));
    if (mote_mqtt_start(&mq, &loop, NULL, &job) < 0)
        return 1;
    for (;;) {
        st = mote_job_state(&loop, job);
        if (st != MOTE_JOB_RUNNING && st != MOTE_JOB_CANCELLING)
            break;
        if (mote_loop_poll(&loop, -1) < 0)
            return 1;
    }
    printf("{\"ev\":\"end\",\"state\":\"%s\"", mote_job_state_name((enum mote_job_state)st));
    jstr("error", mote_job_error(&loop, job), strlen(mote_job_error(&loop, job)));
    printf("}\n");
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    return st == MOTE_JOB_DONE ? 0 : 1;
}
