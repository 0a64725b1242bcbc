/*
 * llm_probe - runs one model request with the real POSIX port and prints
 * every decoded event as a JSON line, for the integration tests; can
 * cancel the request when it reaches a phase and report how long the
 * cancel took.
 *
 *   llm_probe PROVIDER URL [--ca-file F] [--cancel-at PHASE] [--tools]
 *             [--idle-ms N] [--first-byte-ms N] [--connect-ms N] [--attempts N]
 *             [--requests N] [--gap-ms N] [--keep-idle-ms N] [--proxy URL]
 *             [--state-dir DIR] [--resume off|memory|disk] [--body-bytes N]
 *             [--cancel-request I] [--session-max-s N]
 *
 * Output lines: {"ev":"text","text":...} {"ev":"tool_start","slot":0,
 * "id":...,"name":...} {"ev":"tool_args",...} {"ev":"tool_end",...}
 * {"ev":"stop","reason":...} {"ev":"usage",...} {"ev":"done"} and a last
 * {"ev":"end","state":...,"error":...,"attempts":N,"cancel_ms":X}.
 *
 * With --requests N the requests go one after another through one kept
 * connection (struct mote_conn; --keep-idle-ms 0: a new one each), the
 * loop running --gap-ms between them; each ends with {"ev":"req_end",
 * "n":I,"state":...,"kept":B,"resumed":B,"opened":K,"ms":X} (kept: it
 * went on a connection kept from before; opened: connections opened so
 * far), and the last "end" line tells the last request's state.
 * --state-dir gives the port a storage root and keeps TLS sessions
 * there (MOTE_TLS_RESUME_DISK); --resume off|memory|disk says otherwise.
 * --cancel-at applies to request --cancel-request (0-based; the first).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../one_part.h"
#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote/mote_posix.h"
#include "mote/mote_tls.h"
#include "probe_out.h"

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_llm_call call;
static struct mote_conn conn;
static struct mote_llm_conf conf;
static struct mote_llm_req req;

static int on_event(void *arg, const struct mote_llm_event *ev)
{
    (void)arg;
    switch (ev->type) {
    case MOTE_LLM_TEXT:
        printf("{\"ev\":\"text\"");
        jstr("text", ev->text, ev->len);
        break;
    case MOTE_LLM_TOOL_START:
        printf("{\"ev\":\"tool_start\",\"slot\":%u", ev->slot);
        jstr("id", ev->id, strlen(ev->id));
        jstr("name", ev->name, strlen(ev->name));
        break;
    case MOTE_LLM_TOOL_ARGS:
        printf("{\"ev\":\"tool_args\",\"slot\":%u", ev->slot);
        jstr("text", ev->text, ev->len);
        break;
    case MOTE_LLM_TOOL_END:
        printf("{\"ev\":\"tool_end\",\"slot\":%u", ev->slot);
        break;
    case MOTE_LLM_STOP:
        printf("{\"ev\":\"stop\"");
        jstr("reason", ev->text, ev->len);
        break;
    case MOTE_LLM_USAGE:
        printf("{\"ev\":\"usage\",\"in\":%llu,\"out\":%llu", (unsigned long long)ev->in_tokens,
               (unsigned long long)ev->out_tokens);
        break;
    case MOTE_LLM_DONE:
        printf("{\"ev\":\"done\"");
        break;
    default:
        printf("{\"ev\":\"other\"");
        break;
    }
    printf("}\n");
    fflush(stdout);
    return 0;
}

static char *big_text; /* --body-bytes: the prompt, that long */
static size_t big_len;

/* The conversation: the prompt, "probe" or --body-bytes' text. */
static int probe_part(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    return big_text != NULL ? one_text_part(index, p, big_text, big_len)
                            : one_text_part(index, p, "probe", 5);
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static int phase_of(const char *name)
{
    int p;

    for (p = MOTE_PHASE_RESOLVE; p <= MOTE_PHASE_STREAM; p++) {
        if (strcmp(mote_llm_phase_name((enum mote_llm_phase)p), name) == 0)
            return p;
    }
    if (strcmp(name, "handshake") == 0)
        return MOTE_PHASE_HANDSHAKE;
    if (strcmp(name, "headers") == 0)
        return MOTE_PHASE_HEADERS;
    return -1;
}

int main(int argc, char **argv)
{
    static const struct mote_tool_def tools[] = {
        {"shell", "Run a shell command", "{\"type\":\"object\",\"properties\":{\"command\":"
                                         "{\"type\":\"string\"}},\"required\":[\"command\"]}"},
    };
    const char *key = getenv("PROBE_KEY");
    int cancel_at = -1, i, st = MOTE_JOB_FAILED, requests = 0, gap_ms = 0, r;
    int cancel_req = 0;
    bool resume_set = false;
    double t_cancel = 0, t_end, t_start;
    mote_job_id job = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: llm_probe anthropic|openai URL [options]\n");
        return 2;
    }
    if (mote_posix_init(&pp) < 0 || mote_posix_signals_install(&pp) < 0 ||
        mote_loop_init(&loop, &pp.port) < 0)
        return 1;
    mote_llm_conf_defaults(&conf);
    conf.provider = strcmp(argv[1], "openai") == 0 ? MOTE_PROVIDER_OPENAI : MOTE_PROVIDER_ANTHROPIC;
    conf.base_url = argv[2];
    conf.api_key = key != NULL ? key : "sk-probe";
    conf.key_env = "PROBE_KEY";
    conf.backoff_ms = 50;
    memset(&req, 0, sizeof(req));
    req.provider = conf.provider;
    req.model = "probe-model";
    req.parts = probe_part;
    for (i = 3; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";

        if (strcmp(argv[i], "--ca-file") == 0) {
            conf.ca_file = v, i++;
        } else if (strcmp(argv[i], "--ca-mem") == 0) {
            /* roots from memory (mote_tls_set_roots): the file's bytes */
            static char roots[1 << 20];
            FILE *f = fopen(v, "rb");
            size_t n = f != NULL ? fread(roots, 1, sizeof(roots), f) : 0;
            int rc;

            if (f != NULL)
                fclose(f);
            if ((rc = mote_tls_set_roots(roots, n)) < 0) {
                printf("{\"ev\":\"end\",\"state\":\"config\",\"error\":\"roots: %s\"}\n",
                       mote_strerror(rc));
                return 2;
            }
            i++;
        }
        else if (strcmp(argv[i], "--cancel-at") == 0)
            cancel_at = phase_of(v), i++;
        else if (strcmp(argv[i], "--idle-ms") == 0)
            conf.idle_timeout_ms = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--first-byte-ms") == 0)
            conf.first_byte_timeout_ms = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--connect-ms") == 0)
            conf.connect_timeout_ms = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--attempts") == 0)
            conf.max_attempts = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--tools") == 0) {
            req.tools = tools;
            req.ntools = 1;
        } else if (strcmp(argv[i], "--body-bytes") == 0) {
            big_len = (size_t)atol(v);
            big_text = malloc(big_len + 1);
            if (big_text == NULL)
                return 1;
            memset(big_text, 'x', big_len);
            big_text[big_len] = '\0';
            i++;
        } else if (strcmp(argv[i], "--session-max-s") == 0) {
            conf.tls_session_max_s = (uint32_t)atol(v);
            i++;
        } else if (strcmp(argv[i], "--cancel-request") == 0)
            cancel_req = atoi(v), i++;
        else if (strcmp(argv[i], "--requests") == 0)
            requests = atoi(v), i++;
        else if (strcmp(argv[i], "--gap-ms") == 0)
            gap_ms = atoi(v), i++;
        else if (strcmp(argv[i], "--keep-idle-ms") == 0)
            conf.keep_idle_ms = (uint32_t)atoi(v), i++;
        else if (strcmp(argv[i], "--proxy") == 0)
            conf.proxy = v, i++;
        else if (strcmp(argv[i], "--resume") == 0) {
            resume_set = true;
            conf.tls_resume = strcmp(v, "off") == 0      ? MOTE_TLS_RESUME_OFF
                              : strcmp(v, "memory") == 0 ? MOTE_TLS_RESUME_MEMORY
                                                         : MOTE_TLS_RESUME_DISK;
            i++;
        } else if (strcmp(argv[i], "--state-dir") == 0) {
            if (!resume_set)
                conf.tls_resume = MOTE_TLS_RESUME_DISK; /* (a later --resume decides) */
            if (mote_posix_storage_root(&pp, v) < 0) {
                printf("{\"ev\":\"end\",\"state\":\"config\",\"error\":\"state dir\"}\n");
                return 2;
            }
            i++;
        }
    }
    mote_conn_init(&conn);
    for (r = 0; r < (requests > 0 ? requests : 1); r++) {
        if (r > 0 && gap_ms > 0) {
            /* the loop runs meanwhile: an idle connection is watched */
            double until = now_ms() + gap_ms;

            while (now_ms() < until)
                (void)mote_loop_poll(&loop, (int32_t)(until - now_ms()) + 1);
        }
        if (mote_llm_call_init(&call, &conf, &req, on_event, NULL) < 0) {
            printf("{\"ev\":\"end\",\"state\":\"config\",\"error\":\"%s\"}\n", call.errmsg);
            return 2;
        }
        if (requests > 0)
            call.conn = &conn;
        t_start = now_ms();
        if (mote_job_spawn(&loop, "llm", &mote_llm_call_ops, &call, NULL, &job) < 0)
            return 1;
        for (;;) {
            st = mote_job_state(&loop, job);
            if (st != MOTE_JOB_RUNNING && st != MOTE_JOB_CANCELLING)
                break;
            if (cancel_at >= 0 && t_cancel == 0 && call.phase == cancel_at && r == cancel_req) {
                /* Give the phase a moment to block, then cancel. */
                static int turns;

                if (++turns > 3) {
                    t_cancel = now_ms();
                    (void)mote_job_cancel(&loop, job);
                }
            }
            if (mote_loop_poll(&loop, cancel_at >= 0 && t_cancel == 0 ? 20 : -1) < 0)
                return 1;
        }
        if (requests > 0) {
            printf("{\"ev\":\"req_end\",\"n\":%d,\"state\":\"%s\",\"attempts\":%u,"
                   "\"kept\":%s,\"resent\":%s,\"resumed\":%s,\"opened\":%u,\"ms\":%.3f",
                   r, mote_job_state_name((enum mote_job_state)st), call.attempt,
                   call.conn_kept ? "true" : "false", call.resent ? "true" : "false",
                   call.tls_resumed ? "true" : "false",
                   conn.opened + call.own.opened, now_ms() - t_start);
            jstr("error", mote_job_error(&loop, job), strlen(mote_job_error(&loop, job)));
            printf("}\n");
            fflush(stdout);
        }
    }
    t_end = now_ms();
    printf("{\"ev\":\"end\",\"state\":\"%s\",\"attempts\":%u,\"status\":%d,\"resumed\":%s",
           mote_job_state_name((enum mote_job_state)st), call.attempt, call.http_status,
           call.tls_resumed ? "true" : "false");
    jstr("error", mote_job_error(&loop, job), strlen(mote_job_error(&loop, job)));
    if (t_cancel > 0)
        printf(",\"cancel_ms\":%.3f", t_end - t_cancel);
    printf("}\n");
    mote_conn_close(&conn);
    mote_loop_deinit(&loop);
    free(big_text);
    mote_posix_deinit(&pp);
    return st == MOTE_JOB_DONE ? 0 : 1;
}
