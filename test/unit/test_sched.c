/*
 * test_sched.c - schedules (mote_sched.h) and mote serve's runner on the
 * deterministic test port: definitions read strictly, the catch-up
 * arithmetic, occurrences run through the server with a scripted model
 * and a simulated clock - a real-time clock that starts in 1970 and jumps
 * to now, or jumps back and forth while mote runs, downtime, power cuts at
 * every write - each occurrence run once or skipped with its reason.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote_agent.h"
#include "mote/mote_sched.h"
#include "mote/mote_serve.h"
#include "mote_tport.h"
#include "../serve_kit.h"
#include "../../src/util.h" /* mote_sb */

#define T0 INT64_C(1780272000) /* 2026-06-01T00:00:00Z */

static struct mote_serve_sched sched;
static char logbuf[65536];

/* ---- definitions and arithmetic (pure) ---- */

static int parse(struct mote_sched *s, const char *text, char *err, size_t cap)
{
    static struct mote_json j;

    if (mote_json_parse(&j, text, strlen(text)) <= 0)
        return -1000;
    return mote_sched_parse(s, &j, 0, NULL, err, cap);
}

static void test_definitions(void **state)
{
    static const char *const bad[] = {
        "{\"id\":\"a\",\"prompt\":\"x\"}",                                   /* no rule */
        "{\"id\":\"a\",\"prompt\":\"x\",\"cron\":\"* * * * *\",\"every\":\"1m\"}", /* two */
        "{\"id\":\"a b\",\"prompt\":\"x\",\"every\":\"1m\"}",
        "{\"id\":\"a\",\"prompt\":\" \\n\",\"every\":\"1m\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"every\":\"500ms\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"every\":\"50d\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"cron\":\"* * * *\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"at\":\"tomorrow\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"every\":\"1m\",\"tz\":\"../etc/passwd\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"every\":\"1m\",\"catch_up\":\"all\"}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"every\":\"1m\",\"sometimes\":true}",
        "{\"id\":\"a\",\"prompt\":\"x\",\"every\":\"1m\",\"conversation\":\"no/slash\"}",
        "{\"id\":\"a\",\"prompt\":\"x\\u0000y\",\"every\":\"1m\"}",
        "{\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"prompt\":\"x\",\"every\":\"1m\"}",
        "[1]",
    };
    struct mote_sched s;
    char err[200];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(&s, bad[i], err, sizeof(err)) >= 0)
            fail_msg("taken: %s", bad[i]);
    }
    assert_int_equal(parse(&s,
                           "{\"id\":\"morning\",\"prompt\":\"Check the disk\",\"cron\":\"0 6 * * "
                           "mon-fri\",\"tz\":\"Europe/Paris\",\"conversation\":\"ops\","
                           "\"catch_up\":\"none\",\"max_late\":\"2h\",\"enabled\":false}",
                           err, sizeof(err)),
                     0);
    assert_int_equal(s.kind, MOTE_SCHED_CRON);
    assert_string_equal(s.tz, "Europe/Paris");
    assert_string_equal(s.conversation, "ops");
    assert_true(s.catch_up == MOTE_CATCH_NONE && s.max_late_set && s.max_late_s == 7200);
    assert_false(s.enabled);
    assert_int_equal(parse(&s, "{\"id\":\"t\",\"prompt\":\"x\",\"every\":\"90s\"}", err,
                           sizeof(err)),
                     0);
    assert_true(s.kind == MOTE_SCHED_EVERY && s.every_ms == 90000 && s.conversation[0] == '\0');
    assert_int_equal(parse(&s, "{\"id\":\"o\",\"prompt\":\"x\",\"at\":\"2026-06-01T06:00\"}", err,
                           sizeof(err)),
                     0);
    assert_true(s.kind == MOTE_SCHED_AT && s.at_local);
    /* written back, read again: the same */
    {
        static char out[4096];
        struct mote_sched s2;
        struct mote_sb sb;
        struct mote_jw w;

        assert_int_equal(parse(&s, "{\"id\":\"w\",\"prompt\":\"p \\\"q\\\"\",\"cron\":\"@daily\","
                                   "\"tz\":\"UTC\",\"max_late\":\"10m\"}",
                               err, sizeof(err)),
                         0);
        mote_sb_init(&sb, out, sizeof(out));
        mote_jw_init(&w, mote_sb_put, &sb);
        mote_jw_obj(&w);
        mote_sched_write(&s, &w);
        mote_jw_obj_end(&w);
        assert_int_equal(parse(&s2, out, err, sizeof(err)), 0);
        assert_string_equal(s2.prompt, "p \"q\"");
        assert_string_equal(s2.rule, "@daily");
        assert_true(s2.max_late_set && s2.max_late_s == 600);
    }
}

/* Downtime of a minutely cron: the most recent missed occurrence runs
 * once, the rest are skipped (counted, their range exact); never one
 * whose time has not come; too old: all skipped. */
static void test_catch_up_arithmetic(void **state)
{
    struct mote_sched s;
    struct mote_tz utc;
    struct mote_sched_due d;
    char err[200];

    (void)state;
    mote_tz_utc(&utc);
    assert_int_equal(parse(&s, "{\"id\":\"m\",\"prompt\":\"x\",\"cron\":\"* * * * *\"}", err,
                           sizeof(err)),
                     0);
    /* on time, not before */
    assert_int_equal(mote_sched_due(&s, &utc, T0, T0 + 59, &d), MOTE_ERR_NOENT);
    assert_int_equal(mote_sched_due(&s, &utc, T0, T0 + 60, &d), 0);
    assert_true(d.run && d.run_key == T0 + 60 && d.skip_count == 0 && d.cursor == T0 + 60);
    /* 12 missed, mote back 30 s after the 12th */
    assert_int_equal(mote_sched_due(&s, &utc, T0, T0 + 12 * 60 + 30, &d), 0);
    assert_true(d.run && d.run_key == T0 + 12 * 60);
    assert_true(d.skip_count == 11 && d.skip_from == T0 + 60 && d.skip_to == T0 + 11 * 60);
    /* older than max_late: all skipped (an hourly rule, 10 minutes) */
    {
        struct mote_sched h;

        assert_int_equal(parse(&h, "{\"id\":\"h\",\"prompt\":\"x\",\"cron\":\"0 * * * *\","
                                   "\"max_late\":\"10m\"}",
                               err, sizeof(err)),
                         0);
        assert_int_equal(mote_sched_due(&h, &utc, T0, T0 + 3 * 3600 + 1200, &d), 0);
        assert_true(!d.run && d.too_old && d.skip_count == 3 && d.skip_from == T0 + 3600 &&
                    d.skip_to == T0 + 3 * 3600 && d.cursor == T0 + 3 * 3600);
        assert_int_equal(mote_sched_due(&h, &utc, T0, T0 + 3 * 3600 + 500, &d), 0);
        assert_true(d.run && d.run_key == T0 + 3 * 3600 && d.skip_count == 2);
    }
    /* a year of a minutely rule: counted up to the cap, the range exact */
    assert_int_equal(mote_sched_due(&s, &utc, T0, T0 + 366 * 86400, &d), 0);
    assert_true(d.run && d.skip_count == 100000 && d.skip_to == T0 + 366 * 86400 - 60);
    /* catch_up none: only what is on time runs */
    s.catch_up = MOTE_CATCH_NONE;
    assert_int_equal(mote_sched_due(&s, &utc, T0, T0 + 12 * 60 + 30, &d), 0);
    assert_true(d.run && d.skip_count == 11); /* 30 s late is on time (MOTE_SCHED_GRACE_S) */
    {
        struct mote_sched h;

        assert_int_equal(parse(&h, "{\"id\":\"h\",\"prompt\":\"x\",\"cron\":\"0 * * * *\","
                                   "\"catch_up\":\"none\"}",
                               err, sizeof(err)),
                         0);
        assert_int_equal(mote_sched_due(&h, &utc, T0, T0 + 3 * 3600 + 90, &d), 0);
        assert_true(!d.run && d.skip_count == 3);
    }
    /* intervals */
    {
        uint64_t missed;
        uint32_t age;

        assert_int_equal(parse(&s, "{\"id\":\"e\",\"prompt\":\"x\",\"every\":\"2s\"}", err,
                               sizeof(err)),
                         0);
        mote_sched_every_missed(&s, T0 * 1000, T0 * 1000 + 24500, &missed, &age);
        assert_true(missed == 12 && age == 500);
        mote_sched_every_missed(&s, T0 * 1000, T0 * 1000 + 1999, &missed, &age);
        assert_true(missed == 0 && age == 1999);
    }
}

/* ---- the runner, through the server ---- */

#define HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
#define NRESP 64
static struct mote_tport_resp script[NRESP];
static char body[2048];
static size_t body_len;

/* Every model request is answered "done" (the script's slots all the same). */
static void answers(unsigned n)
{
    unsigned k;

    if (body_len == 0)
        body_len = (size_t)snprintf(
            body, sizeof(body),
            HEAD "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
                 "{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: "
                 "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
                 "\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":"
                 "\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
                 "\"done\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\","
                 "\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":"
                 "{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\nevent: "
                 "message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    for (k = 0; k < n && k < NRESP; k++) {
        script[k].bytes = body;
        script[k].len = body_len;
        script[k].chunk = 0;
    }
    net.n = n < NRESP ? n : NRESP;
    net.next = 0;
}

static void on_log(void *arg, const char *line)
{
    (void)arg;
    snprintf(logbuf + strlen(logbuf), sizeof(logbuf) - strlen(logbuf), "%s\n", line);
}

static void start(void)
{
    mote_tport_net_init(&tp, &net, script, 0);
    mote_tport_serve_init(&tp, &ts);
    answers(NRESP);
    memset(&vc, 0, sizeof(vc));
    vc.socket_path = "mote.sock";
    vc.log = on_log;
    vc.sched = &sched;
    assert_int_equal(kit_start(NULL, 0), 0);
}

/* A process death: memory gone, storage kept. */
static void stop(void)
{
    kit_stop();
}

static int setup(void **state)
{
    (void)state;
    logbuf[0] = '\0';
    mote_tport_init(&tp, 1000);
    mote_tport_set_real(&tp, T0 * 1000, MOTE_CLOCK_UNKNOWN);
    kit_model();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mote_tport_deinit(&tp);
    return 0;
}

/* The loop for `ms` of simulated time. */
static void run_for(uint32_t ms)
{
    uint32_t end = tp.now + ms;

    while (mote_before(tp.now, end) && !tp.power_off)
        assert_true(mote_loop_poll(&loop, (int32_t)(end - tp.now)) >= 0);
}

/* Puts a schedule through the API (a served client). */
static int put(const char *id, const char *json)
{
    static char req[8192];
    struct mote_tport_peer *pe;
    int p, status = 0;
    unsigned i;

    snprintf(req, sizeof(req),
             "PUT /v1/schedules/%s HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: "
             "%zu\r\n\r\n%s",
             id, strlen(json), json);
    p = mote_tport_peer_connect(&tp, false);
    assert_true(p >= 0);
    mote_tport_peer_write(&tp, p, req, strlen(req));
    pe = mote_tport_peer_get(&tp, p);
    for (i = 0; i < 200 && !pe->server_closed; i++)
        assert_true(mote_loop_poll(&loop, 0) >= 0);
    pe->out[pe->out_len < MOTE_TPORT_PEER_OUT ? pe->out_len : MOTE_TPORT_PEER_OUT - 1] = '\0';
    assert_int_equal(sscanf(pe->out, "HTTP/1.1 %d", &status), 1);
    return status;
}

/* Lines of STATE/schedules.jsonl holding `pat`. */
static unsigned records(const char *pat)
{
    const struct mote_tport_file *f = mote_tport_file(&tp, "schedules.jsonl");
    unsigned n = 0;
    const char *p;

    if (f == NULL || f->data == NULL)
        return 0;
    for (p = (const char *)f->data; (p = memmem(p, f->len - (size_t)(p - (const char *)f->data),
                                               pat, strlen(pat))) != NULL;
         p++)
        n++;
    return n;
}

/* User records across every conversation of schedule `id` with request id
 * "s:ID:KEY" for each key, into count[key] (keys < max). */
static unsigned user_records(const char *id, unsigned *count, unsigned max)
{
    unsigned i, total = 0;

    memset(count, 0, max * sizeof(count[0]));
    for (i = 0; i < MOTE_TPORT_FILES; i++) {
        const struct mote_tport_file *f = &tp.files[i];
        char pat[64];
        const char *p;

        if (!f->used || f->data == NULL || strncmp(f->name, "conversations/", 14) != 0)
            continue;
        snprintf(pat, sizeof(pat), "\"rid\":\"s:%s:", id);
        for (p = (const char *)f->data; p != NULL && (size_t)(p - (const char *)f->data) < f->len;) {
            unsigned long k;

            p = memmem(p, f->len - (size_t)(p - (const char *)f->data), pat, strlen(pat));
            if (p == NULL)
                break;
            k = strtoul(p + strlen(pat), NULL, 10);
            if (k < max)
                count[k]++;
            total++;
            p++;
        }
    }
    return total;
}

/* Every key from 1 to the last one claimed or skipped ran once (`count`)
 * or is in a skipped range of the journal; none ran twice. Returns the
 * last key. */
static unsigned accounted(const unsigned *count, unsigned max)
{
    const struct mote_tport_file *f = mote_tport_file(&tp, "schedules.jsonl");
    static char skipped[64];
    unsigned last = 0, k;
    const char *p, *end;

    memset(skipped, 0, sizeof(skipped));
    assert_non_null(f);
    end = (const char *)f->data + f->len;
    for (p = (const char *)f->data; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *q;

        if (nl == NULL)
            break;
        if ((q = memmem(p, (size_t)(nl - p), "\"t\":\"claim\"", 11)) != NULL) {
            q = memmem(p, (size_t)(nl - p), "\"k\":", 4);
            k = (unsigned)strtoul(q + 4, NULL, 10);
            if (k > last)
                last = k;
        } else if (memmem(p, (size_t)(nl - p), "\"t\":\"skip\"", 10) != NULL) {
            unsigned from = (unsigned)strtoul(strstr(p, "\"from\":") + 7, NULL, 10);
            unsigned to = (unsigned)strtoul(strstr(p, "\"to\":") + 5, NULL, 10);

            assert_non_null(memmem(p, (size_t)(nl - p), "\"reason\":\"", 10));
            for (k = from; k <= to && k < sizeof(skipped); k++)
                skipped[k] = 1;
            if (to > last)
                last = to;
        }
        p = nl + 1;
    }
    for (k = 1; k <= last && k < max; k++) {
        if (count[k] > 1)
            fail_msg("occurrence %u ran %u times", k, count[k]);
        if (count[k] == 0 && !skipped[k])
            fail_msg("occurrence %u vanished: neither run nor skipped", k);
    }
    return last;
}

/* An interval: each occurrence a new conversation, once; a stop of 12
 * intervals: one catch-up run, 11 skipped with the reason. */
static void test_every_and_downtime(void **state)
{
    unsigned count[64], k;

    (void)state;
    start();
    assert_int_equal(put("tick", "{\"prompt\":\"tick\",\"every\":\"10s\"}"), 201);
    run_for(35000);
    assert_int_equal(records("\"t\":\"claim\""), 3);
    assert_int_equal(records("\"t\":\"done\""), 3);
    assert_int_equal(user_records("tick", count, 64), 3);
    for (k = 1; k <= 3; k++)
        assert_int_equal(count[k], 1);
    assert_non_null(mote_tport_file(&tp, "conversations/tick-n2.jsonl"));
    stop();
    /* down: the last ran at 30 s, it is 35 s; back 12 intervals (and 2 s)
     * after the last */
    mote_tport_advance(&tp, 117000);
    start();
    run_for(1000);
    if (records("\"t\":\"skip\"") != 1) {
        const struct mote_tport_file *f = mote_tport_file(&tp, "schedules.jsonl");

        fail_msg("%s\n---\n%.*s", logbuf, (int)f->len, (const char *)f->data);
    }
    assert_int_equal(records("\"count\":11,"), 1);
    assert_int_equal(records("only the most recent runs"), 1);
    assert_int_equal(user_records("tick", count, 64), 4);
    assert_int_equal(count[15], 1);
    for (k = 4; k <= 14; k++)
        assert_int_equal(count[k], 0);
    run_for(10000); /* and on: the next a full interval after the one caught up */
    assert_int_equal(user_records("tick", count, 64), 5);
    assert_int_equal(count[16], 1);
    assert_int_equal(accounted(count, 64), 16);
    stop();
}

/* A real-time clock that starts in 1970 and is set (NTP) decades later:
 * a cron schedule runs nothing for the years between; one whose journal
 * knew a recent time catches up at most once. The jump is journaled. */
static void test_clock_from_1970_to_now(void **state)
{
    unsigned count[64];

    (void)state;
    mote_tport_set_real(&tp, 5000, MOTE_CLOCK_UNKNOWN); /* 1970-01-01T00:00:05Z */
    start();
    assert_int_equal(put("minute", "{\"prompt\":\"m\",\"cron\":\"* * * * *\"}"), 201);
    run_for(300000);
    assert_int_equal(records("\"t\":\"claim\""), 0); /* not set: wall-clock rules wait */
    mote_tport_set_real(&tp, T0 * 1000 + 30000, MOTE_CLOCK_SYNCED); /* 00:00:30 */
    run_for(60000 + 1000);
    if (user_records("minute", count, 64) != 1) {
        const struct mote_tport_file *f = mote_tport_file(&tp, "schedules.jsonl");

        fail_msg("%s\n---\n%.*s", logbuf, f != NULL ? (int)f->len : 0,
                 f != NULL ? (const char *)f->data : "");
    }
    assert_true(records("\"t\":\"clock\"") >= 1);
    assert_int_equal(records("\"t\":\"skip\""), 0); /* nothing for the years between */
    assert_int_equal(user_records("minute", count, 64), 1); /* 00:01:00, and only it */
    assert_int_equal(records("\"k\":1780272060"), 3); /* claim, start, done */
    stop();
    /* back after two hours, in 1970 again, then set: at most one */
    mote_tport_set_real(&tp, 5000, MOTE_CLOCK_UNKNOWN);
    start();
    run_for(10000);
    assert_int_equal(records("\"t\":\"claim\""), 1);
    mote_tport_set_real(&tp, (T0 + 2 * 3600 + 30) * 1000, MOTE_CLOCK_SYNCED);
    run_for(3000);
    assert_int_equal(records("\"t\":\"claim\""), 2);
    if (records("\"k\":1780279200") != 3) {
        const struct mote_tport_file *f = mote_tport_file(&tp, "schedules.jsonl");

        fail_msg("%s\n---\n%.*s", logbuf, (int)f->len, (const char *)f->data);
    }
    assert_int_equal(records("\"count\":118,"), 1);   /* 00:02 .. 01:59 skipped */
    stop();
    assert_non_null(strstr(logbuf, "the real-time clock is set now"));
}

/* Fails with the log and the schedules' journal unless `ok`. */
static void dump_unless(bool ok)
{
    const struct mote_tport_file *f = mote_tport_file(&tp, "schedules.jsonl");
    size_t n = f != NULL ? f->len : 0, from = n > 900 ? n - 900 : 0;

    if (!ok)
        fail_msg("%s\n---\n%.*s", logbuf + (strlen(logbuf) > 900 ? strlen(logbuf) - 900 : 0),
                 (int)(n - from), f != NULL ? (const char *)f->data + from : "");
}

/* The real-time clock moved while mote runs (a wrong date corrected by
 * hand or by NTP): a jump back of half an hour runs nothing again, a jump
 * forward of three hours runs the most recent occurrence it passed over
 * once and skips the others with the reason, a jump back of two days (a
 * clock that had been wrong ahead) counts from then; each jump journaled. */
static void test_clock_jumps_while_running(void **state)
{
    (void)state;
    mote_tport_set_real(&tp, T0 * 1000 + 30000, MOTE_CLOCK_SYNCED); /* 00:00:30 */
    start();
    assert_int_equal(put("minute", "{\"prompt\":\"m\",\"cron\":\"* * * * *\"}"), 201);
    run_for(60000); /* 00:01:30 */
    assert_int_equal(records("\"t\":\"claim\""), 1);
    assert_int_equal(records("\"k\":1780272060"), 3); /* claim, start, done */
    /* back half an hour, to 23:31:30 the day before, and on to 00:01:30:
     * the minutes it passes again are before the last one run */
    mote_tport_set_real(&tp, (T0 - 1800 + 90) * 1000, MOTE_CLOCK_SYNCED);
    run_for(30 * 60000);
    dump_unless(records("\"t\":\"claim\"") == 1);
    assert_int_equal(records("\"t\":\"clock\""), 1);
    assert_int_equal(records("\"t\":\"skip\""), 0);
    run_for(60000); /* 00:02:30: 00:02 runs */
    assert_int_equal(records("\"t\":\"claim\""), 2);
    assert_int_equal(records("\"k\":1780272120"), 3);
    /* forward three hours, to 03:02:10 (seen at the next look, 03:02:40):
     * 03:02 runs once, 00:03 to 03:01 are skipped */
    mote_tport_set_real(&tp, (T0 + 3 * 3600 + 130) * 1000, MOTE_CLOCK_SYNCED);
    run_for(35000);
    dump_unless(records("\"t\":\"clock\"") == 2);
    assert_int_equal(records("\"t\":\"claim\""), 3);
    assert_int_equal(records("\"k\":1780282920"), 3); /* 03:02 */
    assert_int_equal(records("\"t\":\"skip\""), 1);
    assert_int_equal(records("\"count\":179,"), 1); /* 00:03 .. 03:01 */
    /* back two days, to 03:02:50 two days before (seen at the next look,
     * 03:03:05): counted from then, 03:04 runs */
    mote_tport_set_real(&tp, (T0 - 2 * 86400 + 3 * 3600 + 170) * 1000, MOTE_CLOCK_SYNCED);
    run_for(120000);
    dump_unless(records("\"t\":\"clock\"") == 3);
    assert_int_equal(records("\"t\":\"claim\""), 4);
    assert_int_equal(records("\"k\":1780110240"), 3); /* 03:04 two days before */
    assert_int_equal(records("\"t\":\"skip\""), 1);
    stop();
    assert_non_null(strstr(logbuf, "the real-time clock jumped by"));
    assert_non_null(strstr(logbuf, "the clock went back more than a day: counted from now"));
}

/* Power cut at every write while occurrences run: after each cut and a
 * restart, every occurrence up to the last one due ran once (one user
 * record with its request id) or is journaled skipped; none twice. */
static void test_power_cut_at_every_write(void **state)
{
    unsigned cut, worst = 0;

    (void)state;
    for (cut = 1; cut <= 40; cut++) {
        unsigned count[64], k, total;

        mote_tport_deinit(&tp);
        setup(NULL);
        start();
        assert_int_equal(put("pc", "{\"prompt\":\"p\",\"every\":\"5s\",\"conversation\":"
                                   "\"fixed\"}"),
                         201);
        mote_tport_cut_at(&tp, tp.st_writes + cut);
        run_for(12000);
        stop();
        mote_tport_power_restore(&tp, cut % 3 == 0   ? MOTE_TP_CUT_TORN
                                      : cut % 3 == 1 ? MOTE_TP_CUT_DROP
                                                     : MOTE_TP_CUT_KEEP);
        start();
        run_for(20000);
        stop();
        total = user_records("pc", count, 64);
        for (k = 0; k < 64; k++) {
            if (count[k] > 1)
                fail_msg("cut at write %u: occurrence %u ran %u times", cut, k, count[k]);
        }
        (void)accounted(count, 64);
        if (total > worst)
            worst = total;
    }
    assert_true(worst >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_definitions),
        cmocka_unit_test(test_catch_up_arithmetic),
        cmocka_unit_test_setup_teardown(test_every_and_downtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock_from_1970_to_now, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clock_jumps_while_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_at_every_write, setup, teardown),
    };

    return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
