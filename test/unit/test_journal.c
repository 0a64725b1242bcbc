/* test_journal.c - the journal (record I/O, the part source, reading a
 * call's input back), recovery and the conversation state machine: power
 * cuts at every write, countdown faults at every call, hostile files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "body_pull.h"
#include "../../src/conv.h"
#include "mote/mote_journal.h"
#include "mote_tport.h"

static struct mote_tport tp;
static struct mote_jbuf jbuf;
static struct mote_journal jr = {.buf = &jbuf};

static int setup(void **state)
{
    (void)state;
    mote_tport_init(&tp, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mote_journal_close(&jr);
    mote_tport_deinit(&tp);
    return 0;
}

/* A scripted conversation with two tool rounds. Step k writes one record;
 * want[k] is the recovery decision after steps 0..k. */
enum { S_USER, S_REQ, S_ANS_CALLS, S_START1, S_RES1, S_START2, S_RES2, S_REQ2, S_ANS_END,
       S_USER2, S_REQ3, S_ANS_CALL3, S_START3, S_RES3, S_REQ4, S_ANS_TEXT, NSTEPS };

static const enum mote_recovery_action want[NSTEPS] = {
    MOTE_RECOVER_CONTINUE,         /* user: the request never went out */
    MOTE_RECOVER_CONTINUE,         /* request in flight */
    MOTE_RECOVER_RESUME_TOOLS,     /* calls, no tool started yet: never run */
    MOTE_RECOVER_TOOL_INTERRUPTED, /* tool 1 running */
    MOTE_RECOVER_RESUME_TOOLS,     /* tool 2 not started */
    MOTE_RECOVER_TOOL_INTERRUPTED, /* tool 2 running */
    MOTE_RECOVER_CONTINUE,         /* all results, no answer */
    MOTE_RECOVER_CONTINUE,         /* request in flight */
    MOTE_RECOVER_IDLE,             /* answered */
    MOTE_RECOVER_CONTINUE,
    MOTE_RECOVER_CONTINUE,
    MOTE_RECOVER_RESUME_TOOLS,
    MOTE_RECOVER_TOOL_INTERRUPTED,
    MOTE_RECOVER_CONTINUE,
    MOTE_RECOVER_CONTINUE,
    MOTE_RECOVER_IDLE,
};

static int write_step(struct mote_journal *j, int k)
{
    static const struct mote_call_rec two[] = {
        {"call_a", "shell", "{\"command\":\"ls\"}", 16, NULL, NULL, 0},
        {"call_b", "read_file", "{\"path\":\"/etc/hostname\"}", 24, NULL, NULL, 0},
    };
    static const struct mote_call_rec one[] = {{"call_c", "list_dir", "{}", 2, NULL, NULL, 0}};

    switch (k) {
    case S_USER: return mote_journal_user(j, "list files \"here\"\n", 18);
    case S_REQ: return mote_journal_request(j, 1);
    case S_ANS_CALLS: return mote_journal_assistant(j, "Let me look.", 12, "tool_use", false, two, 2);
    case S_START1: return mote_journal_tool_start(j, "call_a", 4242, 777, "t0123456789abcdef");
    case S_RES1: return mote_journal_tool_result(j, "call_a", "a\nb\n", 4, false);
    case S_START2: return mote_journal_tool_start(j, "call_b", 4243, 778, NULL);
    case S_RES2: return mote_journal_tool_result(j, "call_b", "no such file", 12, true);
    case S_REQ2: return mote_journal_request(j, 1);
    case S_ANS_END: return mote_journal_assistant(j, "Done: a and b.", 14, "end_turn", false, NULL, 0);
    case S_USER2: return mote_journal_user(j, "again", 5);
    case S_REQ3: return mote_journal_request(j, 1);
    case S_ANS_CALL3: return mote_journal_assistant(j, "", 0, "tool_use", false, one, 1);
    case S_START3: return mote_journal_tool_start(j, "call_c", 0, 0, NULL);
    case S_RES3: return mote_journal_tool_result(j, "call_c", "x", 1, false);
    case S_REQ4: return mote_journal_request(j, 1);
    case S_ANS_TEXT: return mote_journal_assistant(j, "ok \xe2\x9c\x93", 6, "end_turn", false, NULL, 0);
    }
    return MOTE_ERR_INVAL;
}

/* Writes steps until one fails; returns how many succeeded. */
static int write_script(void)
{
    int k, rc = mote_journal_create(&jr, &tp.port, "conv1");

    if (rc < 0)
        return -1;
    for (k = 0; k < NSTEPS; k++) {
        if (write_step(&jr, k) < 0)
            break;
    }
    mote_journal_close(&jr);
    return k;
}

static const struct mote_tool_def shell_tool[] = {{"shell", "Run", "{\"type\":\"object\"}"}};

/* A request for Anthropic's model "m", offering the shell tool (without
 * it the history's tool blocks go as text), its conversation straight
 * from the journal jr. */
static void journal_req(struct mote_llm_req *req)
{
    memset(req, 0, sizeof(*req));
    req->provider = MOTE_PROVIDER_ANTHROPIC;
    req->model = "m";
    req->tools = shell_tool;
    req->ntools = 1;
    req->parts = mote_journal_parts;
    req->parts_arg = &jr;
}

static void test_roundtrip_and_parts(void **state)
{
    static struct mote_json js;
    static char body[16384];
    struct mote_llm_req req;
    struct mote_part p;
    size_t n;
    int rc, count = 0;

    (void)state;
    assert_int_equal(write_script(), NSTEPS);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "conv1"), 0);
    assert_false(jr.repaired);
    assert_int_equal(jr.records, 1 + NSTEPS);
    /* The parts, in order. */
    assert_int_equal(mote_journal_parts(&jr, 0, &p), 1);
    assert_int_equal(p.role, MOTE_ROLE_USER);
    assert_int_equal(p.text_len, 18);
    assert_memory_equal(p.text, "list files \"here\"\n", 18);
    assert_int_equal(mote_journal_parts(&jr, 2, &p), 1);
    assert_int_equal(p.type, MOTE_PART_TOOL_CALL);
    assert_string_equal(p.id, "call_a");
    assert_int_equal(p.input_len, 16);
    assert_int_equal(mote_journal_parts(&jr, 2, &p), 1); /* the same index again */
    assert_string_equal(p.name, "shell");
    assert_int_equal(mote_journal_parts(&jr, 5, &p), 1);
    assert_int_equal(p.type, MOTE_PART_TOOL_RESULT);
    assert_true(p.is_error);
    assert_int_equal(mote_journal_parts(&jr, 1, &p), 1); /* backwards: rewinds */
    assert_string_equal(p.text, "Let me look.");
    while ((rc = mote_journal_parts(&jr, (unsigned)count, &p)) == 1)
        count++;
    assert_int_equal(rc, 0);
    assert_int_equal(count, 1 + 3 + 2 + 1 + 1 + 1 + 1 + 1); /* 11 parts */
    /* A request body straight from the journal. */
    journal_req(&req);
    assert_true(mote_llm_body_length(&req) > 0);
    n = body_pull(&req, body, sizeof(body), 100);
    assert_int_equal((int64_t)n, mote_llm_body_length(&req));
    assert_true(mote_json_parse(&js, body, n) > 0);
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "messages.1.content.1.input.command"), "ls"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "messages.2.content.1.tool_use_id"), "call_b"));
}

/* r names one process group to kill: its id, its start time and its tag
 * (NULL: not looked at). */
static void one_kill(const struct mote_recovery *r, int64_t pgid, uint64_t start, const char *tag)
{
    assert_int_equal(r->nkill, 1);
    assert_int_equal(r->kill_pgid[0], pgid);
    assert_int_equal(r->kill_start[0], start);
    if (tag != NULL)
        assert_string_equal(r->kill_tag[0], tag);
}

/* Applies recovery r; recovering again then finds the conversation idle
 * (r holds that second look). */
static void apply_then_idle(struct mote_recovery *r)
{
    assert_int_equal(mote_recover_apply(&jr, r), 0);
    assert_int_equal(mote_recover(&jr, r), 0);
    assert_int_equal(r->action, MOTE_RECOVER_IDLE);
}

static void test_recovery_rules(void **state)
{
    struct mote_recovery r;
    int k;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "c2"), 0);
    for (k = 0; k < NSTEPS; k++) {
        assert_int_equal(write_step(&jr, k), 0);
        assert_int_equal(mote_recover(&jr, &r), 0);
        assert_int_equal(r.action, want[k]);
    }
    mote_journal_close(&jr);
    /* Killed while tool 1 ran: its group is to be killed, both calls get
     * error results, and the turn ends with an error (no auto-send). */
    assert_int_equal(mote_journal_create(&jr, &tp.port, "c3"), 0);
    for (k = 0; k <= S_START1; k++)
        assert_int_equal(write_step(&jr, k), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_TOOL_INTERRUPTED);
    assert_int_equal(r.nmissing, 2);
    assert_int_equal(r.nstarted, 1);
    assert_true(r.calls[0].started);
    assert_false(r.calls[1].started);
    one_kill(&r, 4242, 777, "t0123456789abcdef");
    apply_then_idle(&r);
    assert_int_equal(r.nmissing, 0);
    assert_true(strstr(r.last_error, "interrupted") != NULL);
    /* /retry then continues; the API sees no dangling call. */
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_CONTINUE);
    mote_journal_close(&jr);
}

static void test_auto_continue_limit(void **state)
{
    struct mote_recovery r;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "c4"), 0);
    assert_int_equal(mote_journal_user(&jr, "hi", 2), 0);
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_journal_auto(&jr), 0);
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_CONTINUE);
    assert_int_equal(mote_journal_auto(&jr), 0);
    assert_int_equal(mote_journal_mark(&jr, "needs_recovery"), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_LIMIT); /* 2 in a row already */
    assert_int_equal(r.autos, 2);
    /* A new user message resets the count. */
    assert_int_equal(mote_journal_user(&jr, "go on", 5), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_CONTINUE);
    assert_int_equal(r.autos, 0);
}

/* The records of a journal as a list of types, for prefix checks. */
static int count_records(void)
{
    int n = 0, t;

    mote_journal_rewind(&jr);
    while ((t = mote_journal_next(&jr)) > 0)
        n++;
    return t < 0 ? t : n;
}

static void test_power_cut_at_every_write(void **state)
{
    enum mote_tport_cut mode;
    int cuts = 0, repaired = 0;

    (void)state;
    for (mode = MOTE_TP_CUT_DROP; mode <= MOTE_TP_CUT_ZERO; mode++) {
        unsigned n;

        for (n = 1;; n++) {
            struct mote_recovery r;
            int done, recs;

            mote_tport_deinit(&tp);
            mote_tport_init(&tp, 0);
            mote_tport_cut_at(&tp, n);
            done = write_script();
            if (!tp.power_off) {
                assert_int_equal(done, NSTEPS); /* no cut: the script ran whole */
                break;
            }
            cuts++;
            mote_tport_power_restore(&tp, mode);
            if (done < 0) {
                /* Cut while writing the header: the file may be empty or torn. */
                int rc = mote_journal_open(&jr, &tp.port, "conv1");

                assert_true(rc == MOTE_ERR_NOENT || rc == MOTE_ERR_CORRUPT);
                assert_true(rc != MOTE_ERR_CORRUPT || jr.bad_line == 1);
                continue;
            }
            assert_int_equal(mote_journal_open(&jr, &tp.port, "conv1"), 0);
            repaired += jr.repaired;
            if (jr.repaired)
                assert_non_null(mote_tport_file(&tp, "conversations/conv1.jsonl.torn"));
            recs = count_records();
            /* Every write acknowledged before the cut is there; the cut one
             * is there only whole. */
            assert_true(recs == 1 + done || recs == 2 + done);
            assert_int_equal(mote_recover(&jr, &r), 0);
            /* The decision is the one the surviving prefix demands. */
            assert_int_equal(r.action, recs == 1 ? MOTE_RECOVER_IDLE : want[recs - 2]);
            /* The journal can be written again after the repair. */
            assert_int_equal(mote_journal_user(&jr, "after", 5), 0);
            mote_journal_close(&jr);
            assert_int_equal(mote_journal_open(&jr, &tp.port, "conv1"), 0);
            assert_false(jr.repaired);
            mote_journal_close(&jr);
        }
    }
    printf("  power cuts tested: %d (4 modes), torn tails repaired: %d\n", cuts, repaired);
    assert_true(cuts >= 4 * NSTEPS);
    assert_true(repaired > 0);
}

static void test_countdown_faults(void **state)
{
    static const int errs[] = {MOTE_ERR_NOSPC, MOTE_ERR_IO, 0 /* short write */};
    int runs = 0;
    size_t e;

    (void)state;
    for (e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
        unsigned kinds = errs[e] == 0 ? MOTE_TP_APPEND : MOTE_TP_ALL;
        unsigned n;

        for (n = 1; n < 200; n++) {
            int done, recs;

            mote_tport_deinit(&tp);
            mote_tport_init(&tp, 0);
            mote_tport_fail_after(&tp, kinds, n, errs[e], false);
            done = write_script();
            if (tp.fail_seen < n) {
                assert_int_equal(done, NSTEPS);
                break;
            }
            runs++;
            mote_tport_fail_after(&tp, 0, 0, 0, false);
            if (done < 0)
                continue; /* the header failed: nothing acknowledged */
            /* A clear error stopped the writer; nothing acknowledged before
             * the failure is lost, and nothing half-written stays. */
            assert_int_equal(mote_journal_open(&jr, &tp.port, "conv1"), 0);
            assert_false(jr.repaired);
            recs = count_records();
            assert_true(recs >= 1 + done);
            assert_true(recs <= 2 + done);
            mote_journal_close(&jr);
        }
    }
    /* fsync failures too: sticky, the writer stops. */
    mote_tport_deinit(&tp);
    mote_tport_init(&tp, 0);
    assert_int_equal(mote_journal_create(&jr, &tp.port, "f"), 0);
    mote_tport_fail_after(&tp, MOTE_TP_SYNC, 1, MOTE_ERR_IO, false);
    assert_int_equal(mote_journal_user(&jr, "x", 1), MOTE_ERR_IO);
    assert_int_equal(mote_journal_user(&jr, "y", 1), MOTE_ERR_IO); /* sticky */
    mote_journal_close(&jr);
    printf("  countdown fault runs: %d\n", runs);
    assert_true(runs > 30);
}

static void test_damage_before_the_tail(void **state)
{
    const struct mote_tport_file *f;
    unsigned char before[4096];
    size_t len;

    (void)state;
    assert_int_equal(write_script(), NSTEPS);
    f = mote_tport_file(&tp, "conversations/conv1.jsonl");
    /* Break line 3 (the first request record's opening brace). */
    {
        size_t i, line = 1;

        for (i = 0; i < f->len && line < 3; i++)
            if (f->data[i] == '\n')
                line++;
        f->data[i] = 'X';
    }
    len = f->len;
    memcpy(before, f->data, len);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "conv1"), MOTE_ERR_CORRUPT);
    assert_int_equal(jr.bad_line, 3);
    f = mote_tport_file(&tp, "conversations/conv1.jsonl");
    assert_int_equal(f->len, len); /* untouched */
    assert_memory_equal(f->data, before, len);
    assert_null(mote_tport_file(&tp, "conversations/conv1.jsonl.torn"));
}

static void test_hostile_ids_and_lines(void **state)
{
    static char huge[MOTE_JOURNAL_LINE_MAX + 100];

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "../etc"), MOTE_ERR_INVAL);
    assert_int_equal(mote_journal_create(&jr, &tp.port, "a/b"), MOTE_ERR_INVAL);
    assert_int_equal(mote_journal_open(&jr, &tp.port, ""), MOTE_ERR_INVAL);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "missing"), MOTE_ERR_NOENT);
    /* Creation never replaces: an empty file, or another's journal, at
     * the path stays as it is, with the port's creation and without. */
    assert_int_equal(tp.port.st_mkdir(tp.port.ctx, "conversations"), 0);
    assert_int_equal(mote_tport_put(&tp, "conversations/taken.jsonl", "", 0), 0);
    assert_int_equal(mote_journal_create(&jr, &tp.port, "taken"), MOTE_ERR_EXIST);
    {
        int (*create)(void *, const char *, mote_produce_fn, void *) = tp.port.st_create;
        const struct mote_tport_file *f;

        tp.port.st_create = NULL;
        assert_int_equal(mote_journal_create(&jr, &tp.port, "taken"), MOTE_ERR_EXIST);
        tp.port.st_create = create;
        f = mote_tport_file(&tp, "conversations/taken.jsonl");
        assert_non_null(f);
        assert_int_equal(f->len, 0);
    }
    /* A record too large is refused, and the journal goes on. */
    assert_int_equal(mote_journal_create(&jr, &tp.port, "big"), 0);
    memset(huge, 'a', sizeof(huge));
    assert_int_equal(mote_journal_user(&jr, huge, sizeof(huge)), MOTE_ERR_TOO_LARGE);
    assert_int_equal(mote_journal_user(&jr, "small", 5), 0);
    {
        const struct mote_call_rec bad = {"c", "shell", "{\"command\":\"ls", 13, NULL, NULL, 0};

        assert_int_equal(mote_journal_assistant(&jr, "", 0, "max_tokens", false, &bad, 1),
                         MOTE_ERR_BADMSG);
    }
    assert_int_equal(mote_journal_user(&jr, "still fine", 10), 0);
    mote_journal_close(&jr);
    /* A file with only garbage: damage at line 1. */
    assert_int_equal(mote_tport_put(&tp, "conversations/junk.jsonl", "not json\nmore\n", 14), 0);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "junk"), MOTE_ERR_CORRUPT);
    assert_int_equal(jr.bad_line, 1);
}

/* Writer and reader agree on the token limit. A call record whose input
 * has nearly MOTE_JSON_MAX_TOKENS values is refused whole (it would read
 * back as damage), the journal goes on, and every record written reads
 * back; one exactly at the limit is written. */
static void test_token_limit_records(void **state)
{
    static char in[16 * MOTE_JSON_MAX_TOKENS];
    struct mote_call_rec rec = {"c1", "list_dir", in, 0, NULL, NULL, 0};
    uint64_t size;
    int k, t, n = 0;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "tok"), 0);
    assert_int_equal(mote_journal_user(&jr, "go", 2), 0);
    for (k = MOTE_JSON_MAX_TOKENS - 7; k >= MOTE_JSON_MAX_TOKENS - 8; k--) {
        size_t len = 0;
        int i;

        /* {"a":[0,0,...]}: 4 + (k - 4) tokens in all: k */
        len += (size_t)snprintf(in + len, sizeof(in) - len, "{\"a\":[");
        for (i = 0; i < k - 3; i++)
            len += (size_t)snprintf(in + len, sizeof(in) - len, i ? ",0" : "0");
        len += (size_t)snprintf(in + len, sizeof(in) - len, "]}");
        rec.input_len = len;
        size = jr.size;
        if (k == MOTE_JSON_MAX_TOKENS - 7) {
            /* its record: the input and 8 more tokens, one over the limit
             * (the next, one value less, is exactly at it) */
            assert_int_equal(mote_journal_call(&jr, &rec), MOTE_ERR_TOO_LARGE);
            assert_int_equal(jr.size, size);
        } else {
            assert_int_equal(mote_journal_call(&jr, &rec), 0);
            assert_true(jr.size > size);
        }
    }
    assert_int_equal(mote_journal_user(&jr, "still fine", 10), 0);
    mote_journal_close(&jr);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "tok"), 0);
    while ((t = mote_journal_next(&jr)) > 0)
        n++;
    assert_int_equal(t, 0);
    assert_int_equal(n, 4); /* open, user, the call that fit, user */
}

/* Every line is JSON to any strict parser, UTF-8 included (RFC 8259
 * 8.1). A call input kept as it came that holds bytes which are
 * not UTF-8 is refused whole (mote's reader would take the line, Python's
 * json and other strict ones would not); nothing is written. */
static void test_records_are_utf8(void **state)
{
    static const char bad[] = "{\"content\":\"caf\xe9 \xed\xa0\x80\"}";
    static const char good[] = "{\"content\":\"caf\xc3\xa9\"}";
    struct mote_call_rec rec = {"c1", "write_file", bad, sizeof(bad) - 1, NULL, NULL, 0};
    uint64_t size;
    int t, n = 0;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "utf"), 0);
    size = jr.size;
    assert_int_equal(mote_journal_call(&jr, &rec), MOTE_ERR_BADMSG);
    assert_int_equal(jr.size, size);
    rec.input = good;
    rec.input_len = sizeof(good) - 1;
    assert_int_equal(mote_journal_call(&jr, &rec), 0);
    mote_journal_close(&jr);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "utf"), 0);
    while ((t = mote_journal_next(&jr)) > 0)
        n++;
    assert_int_equal(t, 0);
    assert_int_equal(n, 2); /* open, the good call */
}

/* An answer that was cut, followed by the user's message, gives its text
 * as parts whose last is marked cut - even when nothing came before the
 * cut - so the next answer's text never runs into it; one that nothing of
 * the user's follows is not sent at all. */
static void test_cut_answer_parts(void **state)
{
    struct mote_part p;
    int i, rc, cut = 0, texts = 0;
    char seen[4][64];

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "cut"), 0);
    assert_int_equal(mote_journal_user(&jr, "x", 1), 0);
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_journal_text(&jr, "a partial ", 10), 0);
    assert_int_equal(mote_journal_assistant(&jr, "answer that", 11, "", true, NULL, 0), 0);
    assert_int_equal(mote_journal_mark(&jr, "needs_recovery"), 0);
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_journal_assistant(&jr, "recovered", 9, "end_turn", false, NULL, 0), 0);
    /* nothing of the user's after it yet: the cut answer is not sent */
    for (i = 0; (rc = mote_journal_parts(&jr, (unsigned)i, &p)) == 1; i++)
        assert_false(p.cut);
    assert_int_equal(rc, 0);
    assert_int_equal(i, 2); /* x, recovered */
    assert_int_equal(mote_journal_user(&jr, "and then?", 9), 0);
    /* a cancel before anything came: an empty interrupted answer */
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_journal_assistant(&jr, "", 0, "", true, NULL, 0), 0);
    assert_int_equal(mote_journal_cancel(&jr), 0);
    assert_int_equal(mote_journal_user(&jr, "hello?", 6), 0);
    for (i = 0; (rc = mote_journal_parts(&jr, (unsigned)i, &p)) == 1; i++) {
        if (p.role != MOTE_ROLE_ASSISTANT)
            continue;
        assert_int_equal(p.type, MOTE_PART_TEXT);
        assert_true(texts < 4);
        snprintf(seen[texts++], sizeof(seen[0]), "%s%.*s", p.cut ? "cut:" : "",
                 (int)p.text_len, p.text);
        cut += p.cut;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(texts, 4);
    assert_string_equal(seen[0], "a partial ");
    assert_string_equal(seen[1], "cut:answer that");
    assert_string_equal(seen[2], "recovered");
    assert_string_equal(seen[3], "cut:");
    assert_int_equal(cut, 2);
}

/* Writes the answer of `n` calls (all call records, as the agent journals
 * an answer with more calls than its table) and returns the offset of the
 * first one past the table. */
static uint64_t many_calls(unsigned n, bool in_record)
{
    static struct mote_call_rec recs[MOTE_LLM_MAX_TOOL_CALLS + 8];
    static char ids[MOTE_LLM_MAX_TOOL_CALLS + 8][16];
    uint64_t over = 0;
    unsigned i;

    assert_true(n <= MOTE_LLM_MAX_TOOL_CALLS + 8);
    for (i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "call_%u", i);
        recs[i].id = ids[i];
        recs[i].name = "list_dir";
        recs[i].input = "{}";
        recs[i].input_len = 2;
    }
    if (in_record) /* an assistant record holding them all, as a foreign writer might */
        assert_int_equal(mote_journal_assistant(&jr, "many", 4, "tool_use", false, recs, n), 0);
    else {
        for (i = 0; i < n; i++) {
            if (i == MOTE_LLM_MAX_TOOL_CALLS)
                over = jr.size;
            assert_int_equal(mote_journal_call(&jr, &recs[i]), 0);
            if (i == MOTE_LLM_MAX_TOOL_CALLS)
                assert_int_equal(mote_journal_text(&jr, "between", 7), 0);
        }
        assert_int_equal(mote_journal_assistant(&jr, "many", 4, "tool_use", false, NULL, 0), 0);
    }
    return over;
}

/* Every tool_use of the request the journal gives has its tool_result. */
static void every_call_answered(void)
{
    static char body[65536];
    static struct mote_json js;
    struct mote_llm_req req;
    size_t n;
    int m, k, uses = 0, results = 0;

    journal_req(&req);
    n = body_pull(&req, body, sizeof(body), sizeof(body));
    assert_true(mote_json_parse(&js, body, n) > 0);
    m = mote_json_member(&js, 0, "messages");
    for (k = 0; mote_json_elem(&js, m, k) >= 0; k++) {
        int c = mote_json_member(&js, mote_json_elem(&js, m, k), "content"), e;

        for (e = 0; mote_json_elem(&js, c, e) >= 0; e++) {
            int blk = mote_json_elem(&js, c, e);

            uses += mote_json_eq(&js, mote_json_member(&js, blk, "type"), "tool_use");
            results += mote_json_eq(&js, mote_json_member(&js, blk, "type"), "tool_result");
        }
    }
    assert_true(uses > MOTE_LLM_MAX_TOOL_CALLS);
    assert_int_equal(results, uses);
}

/* The calls of an answer past the table (which recovery's tables do not
 * hold): counted, found where they are (call records with text between
 * them, or an assistant record's calls), answered one at a time, each
 * once; recovery goes on with the round until they are, and closing the
 * round answers them too. */
static void test_calls_past_the_table(void **state)
{
    struct mote_recovery r;
    struct mote_over o;
    unsigned k, rounds;
    uint64_t over;
    int rc;

    (void)state;
    for (rounds = 0; rounds < 2; rounds++) {
        bool in_record = rounds == 1;

        mote_journal_close(&jr);
        assert_int_equal(mote_journal_create(&jr, &tp.port, in_record ? "over2" : "over1"), 0);
        assert_int_equal(mote_journal_user(&jr, "twelve things", 13), 0);
        assert_int_equal(mote_journal_request(&jr, 1), 0);
        over = many_calls(MOTE_LLM_MAX_TOOL_CALLS + 3, in_record);
        assert_int_equal(mote_recover(&jr, &r), 0);
        assert_int_equal(r.ncalls, MOTE_LLM_MAX_TOOL_CALLS);
        assert_int_equal(r.nover, 3);
        assert_int_equal(r.over.left, 3);
        assert_int_equal(r.over.skip, 0);
        if (!in_record) {
            assert_true(r.over.off == over);
            assert_int_equal(r.over.idx, -1);
        } else {
            assert_int_equal(r.over.idx, MOTE_LLM_MAX_TOOL_CALLS);
        }
        assert_int_equal(r.action, MOTE_RECOVER_RESUME_TOOLS);
        /* One answered (a crash after it): the next one is the second. */
        o = r.over;
        assert_int_equal(mote_recover_over_next(&jr, &o), 1);
        assert_int_equal(mote_recover(&jr, &r), 0);
        assert_int_equal(r.over.skip, 1);
        assert_int_equal(r.over.left, 2);
        o = r.over;
        assert_int_equal(mote_recover_over_next(&jr, &o), 1);
        assert_int_equal(mote_recover_over_next(&jr, &o), 1);
        assert_int_equal(mote_recover_over_next(&jr, &o), 0);
        assert_int_equal(o.left, 0);
        assert_int_equal(mote_recover(&jr, &r), 0);
        assert_int_equal(r.over.left, 0);
        assert_int_equal(r.over.skip, 3);
        assert_int_equal(r.nmissing, MOTE_LLM_MAX_TOOL_CALLS); /* the table's: resumed */
        assert_int_equal(r.action, MOTE_RECOVER_RESUME_TOOLS);
        for (k = 0; k < MOTE_LLM_MAX_TOOL_CALLS; k++)
            assert_int_equal(mote_journal_tool_result(&jr, r.calls[k].id, "ok", 2, false), 0);
        assert_int_equal(mote_recover(&jr, &r), 0);
        assert_int_equal(r.action, MOTE_RECOVER_CONTINUE);
        every_call_answered();
    }
    /* Closing an interrupted round answers them too, before the rest. */
    mote_journal_close(&jr);
    assert_int_equal(mote_journal_create(&jr, &tp.port, "over3"), 0);
    assert_int_equal(mote_journal_user(&jr, "go", 2), 0);
    (void)many_calls(MOTE_LLM_MAX_TOOL_CALLS + 2, false);
    assert_int_equal(mote_journal_tool_start(&jr, "call_0", 0, 0, NULL), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_TOOL_INTERRUPTED);
    assert_int_equal(r.over.left, 2);
    apply_then_idle(&r);
    assert_int_equal(r.over.left, 0);
    assert_int_equal(r.nmissing, 0);
    every_call_answered();
    /* A walk that finds fewer calls than counted stops cleanly. */
    o.off = jr.size;
    o.idx = -1;
    o.skip = 0;
    o.left = 5;
    rc = mote_recover_over_next(&jr, &o);
    assert_int_equal(rc, 0);
    assert_int_equal(o.left, 0);
}

/* A journal file as a damaged or hostile one would be (durable). */
static void put_journal(const char *id, const char *text, size_t len)
{
    char name[MOTE_STORAGE_NAME_MAX];

    snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
    (void)tp.port.st_mkdir(tp.port.ctx, "conversations");
    assert_int_equal(mote_tport_put(&tp, name, text, len), 0);
}

/* One part as a string, to compare parts after their pointers are gone. */
static void part_text(const struct mote_part *p, char *out, size_t cap)
{
    snprintf(out, cap, "%d/%d/%.*s/%s/%s/%.*s/%d", (int)p->role, (int)p->type, (int)p->text_len,
             p->text != NULL ? p->text : "", p->id != NULL ? p->id : "",
             p->name != NULL ? p->name : "", (int)p->input_len,
             p->input != NULL ? p->input : "", (int)p->is_error);
}

/* A call's input read back from its record: from an assistant record's
 * calls and from a call record, with the length needed when it does not
 * fit; no call where there is none; and neither the reading cursor nor
 * the part source's moves. */
static void test_call_input(void **state)
{
    static const struct mote_call_rec two[] = {
        {"call_a", "shell", "{\"command\":\"ls\"}", 16, NULL, NULL, 0},
        {"call_b", "read_file", "{\"path\":\"/etc/hostname\"}", 24, NULL, NULL, 0},
    };
    static const struct mote_call_rec piece = {"call_p", "list_dir", "{\"path\":\".\"}", 12, NULL, NULL, 0};
    static char seen[16][256];
    uint64_t user_off, call_off, ans_off;
    char out[64], now[256];
    size_t full = 99;
    unsigned i, nparts = 0;
    struct mote_part p;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "ci"), 0);
    user_off = jr.size;
    assert_int_equal(mote_journal_user(&jr, "hi", 2), 0);
    call_off = jr.size;
    assert_int_equal(mote_journal_call(&jr, &piece), 0);
    ans_off = jr.size;
    assert_int_equal(mote_journal_assistant(&jr, "ok", 2, "tool_use", false, two, 2), 0);
    assert_int_equal(mote_journal_tool_result(&jr, "call_p", ".", 1, false), 0);
    assert_int_equal(mote_journal_tool_result(&jr, "call_a", "a", 1, false), 0);
    assert_int_equal(mote_journal_tool_result(&jr, "call_b", "b", 1, true), 0);
    assert_int_equal(mote_journal_user(&jr, "thanks", 6), 0);

    assert_int_equal(mote_journal_call_input(&jr, ans_off, 1, out, sizeof(out), &full), 24);
    assert_string_equal(out, "{\"path\":\"/etc/hostname\"}");
    assert_int_equal(full, 24);
    assert_int_equal(mote_journal_call_input(&jr, ans_off, 0, out, sizeof(out), NULL), 16);
    assert_string_equal(out, "{\"command\":\"ls\"}");
    assert_int_equal(mote_journal_call_input(&jr, call_off, -1, out, sizeof(out), &full), 12);
    assert_string_equal(out, "{\"path\":\".\"}");
    /* Too small (the NUL needs a byte): the length needed, nothing copied. */
    memset(out, 'x', sizeof(out));
    assert_int_equal(mote_journal_call_input(&jr, ans_off, 1, out, 24, &full),
                     MOTE_ERR_TOO_LARGE);
    assert_int_equal(full, 24);
    assert_int_equal(out[0], 'x');
    assert_int_equal(mote_journal_call_input(&jr, ans_off, 1, out, 25, &full), 24);
    /* No call there: past the calls, the wrong kind of record, a user
     * record, the middle of a line, the end of the file. */
    assert_int_equal(mote_journal_call_input(&jr, ans_off, 2, out, sizeof(out), &full),
                     MOTE_ERR_CORRUPT);
    assert_int_equal(full, 0);
    assert_int_equal(mote_journal_call_input(&jr, ans_off, -1, out, sizeof(out), &full),
                     MOTE_ERR_CORRUPT);
    assert_int_equal(mote_journal_call_input(&jr, call_off, 0, out, sizeof(out), &full),
                     MOTE_ERR_CORRUPT);
    assert_int_equal(mote_journal_call_input(&jr, user_off, 0, out, sizeof(out), &full),
                     MOTE_ERR_CORRUPT);
    assert_int_equal(mote_journal_call_input(&jr, ans_off + 1, 0, out, sizeof(out), &full),
                     MOTE_ERR_CORRUPT);
    assert_int_equal(mote_journal_call_input(&jr, jr.size, 0, out, sizeof(out), &full),
                     MOTE_ERR_CORRUPT);

    /* The parts, once straight through... */
    while (mote_journal_parts(&jr, nparts, &p) == 1) {
        assert_true(nparts < 16);
        part_text(&p, seen[nparts], sizeof(seen[0]));
        nparts++;
    }
    assert_int_equal(nparts, 1 + 1 + 3 + 3 + 1);
    /* ... and again with an input read between any two of them, into the
     * buffer's own text as the agent does for an approval: the same. */
    for (i = 0; i < nparts; i++) {
        assert_int_equal(mote_journal_parts(&jr, i, &p), 1);
        part_text(&p, now, sizeof(now));
        assert_string_equal(now, seen[i]);
        assert_int_equal(mote_journal_call_input(&jr, ans_off, (int)(i % 2), jbuf.text,
                                                 sizeof(jbuf.text), NULL),
                         i % 2 ? 24 : 16);
        assert_int_equal(mote_journal_parts(&jr, i, &p), 1); /* the same index again */
        part_text(&p, now, sizeof(now));
        assert_string_equal(now, seen[i]);
    }
    assert_int_equal(mote_journal_parts(&jr, nparts, &p), 0);
    /* The reading cursor stays too. */
    mote_journal_rewind(&jr);
    assert_int_equal(mote_journal_next(&jr), MOTE_REC_OPEN);
    assert_int_equal(mote_journal_call_input(&jr, ans_off, 0, out, sizeof(out), NULL), 16);
    assert_int_equal(mote_journal_next(&jr), MOTE_REC_USER);
    mote_journal_close(&jr);
    assert_int_equal(mote_journal_call_input(&jr, ans_off, 0, out, sizeof(out), &full),
                     MOTE_ERR_BADF);
}

/* A header whose version does not fit 32 bits is a newer format: refused
 * and left alone, never read as the first format and written to. */
static void test_newer_versions_refused(void **state)
{
    static const char *const newer[] = {"4294967298", "99999999999999999999", "4"};
    char text[160];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(newer) / sizeof(newer[0]); i++) {
        const struct mote_tport_file *f;
        int n = snprintf(text, sizeof(text),
                         "{\"t\":\"open\",\"v\":%s,\"id\":\"v\"}\n{\"t\":\"user\",\"text\":\"x\"}\n"
                         "{\"t\":\"req",
                         newer[i]);

        put_journal("v", text, (size_t)n);
        assert_int_equal(mote_journal_open(&jr, &tp.port, "v"), MOTE_ERR_NOTSUP);
        f = mote_tport_file(&tp, "conversations/v.jsonl");
        assert_int_equal(f->len, (size_t)n); /* the torn tail is not cut */
    }
    snprintf(text, sizeof(text), "{\"t\":\"open\",\"v\":1,\"id\":\"v\"}\n");
    put_journal("v", text, strlen(text));
    assert_int_equal(mote_journal_open(&jr, &tp.port, "v"), 0);
    assert_int_equal(jr.version, 1);
}

/* Recovery ends what a begun tool left, and nothing else: a group id
 * from the file that is no tool's group (1 is init; negative ids name
 * every process to kill()) is dropped, so is a start time that is not
 * positive; the tag is kept. */
static void test_recorded_groups(void **state)
{
    static const struct mote_call_rec two[] = {{"call_a", "shell", "{}", 2, NULL, NULL, 0},
                                               {"call_b", "shell", "{}", 2, NULL, NULL, 0}};
    struct mote_recovery r;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "g"), 0);
    assert_int_equal(mote_journal_user(&jr, "go", 2), 0);
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_journal_assistant(&jr, "", 0, "tool_use", false, two, 2), 0);
    assert_int_equal(mote_journal_tool_start(&jr, "call_a", 1, 5, NULL), 0);
    assert_int_equal(mote_journal_tool_result(&jr, "call_a", "x", 1, false), 0);
    assert_int_equal(mote_journal_tool_start(&jr, "call_b", 1, 5, NULL), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_TOOL_INTERRUPTED);
    assert_int_equal(r.nstarted, 1);
    assert_int_equal(r.nkill, 0); /* group 1 is none, and no tag */
    assert_int_equal(mote_journal_tool_start(&jr, "call_b", -1, -3, "0123456789abcdef"), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    one_kill(&r, 0, 0, "0123456789abcdef");
    assert_int_equal(mote_journal_tool_start(&jr, "call_b", 4242, 777, NULL), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    one_kill(&r, 4242, 777, NULL);
}

/* An answer holding one id twice (as older motes journaled what the
 * model sent): the tool records are matched to the calls by their place,
 * so each call keeps its own start and result - the second call, begun
 * and not answered, is the interrupted one, and its group is the one to
 * end; closing the round answers it alone. */
static void test_one_id_twice(void **state)
{
    static const struct mote_call_rec two[] = {{"toolu_dup", "shell", "{\"command\":\"a\"}", 15, NULL, NULL, 0},
                                               {"toolu_dup", "shell", "{\"command\":\"b\"}", 15, NULL, NULL, 0}};
    struct mote_recovery r;
    struct mote_part p;
    unsigned i, results = 0;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "dup"), 0);
    assert_int_equal(mote_journal_user(&jr, "go", 2), 0);
    assert_int_equal(mote_journal_request(&jr, 1), 0);
    assert_int_equal(mote_journal_assistant(&jr, "", 0, "tool_use", false, two, 2), 0);
    assert_int_equal(mote_journal_tool_start(&jr, "toolu_dup", 0, 0, NULL), 0);
    assert_int_equal(mote_journal_tool_start(&jr, "toolu_dup", 4242, 777, "t0123456789abcdef"), 0);
    assert_int_equal(mote_journal_tool_result(&jr, "toolu_dup", "a", 1, false), 0);
    /* the second call has not begun: the round goes on with it */
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.ncalls, 2);
    assert_true(r.calls[0].has_result && !r.calls[1].has_result && !r.calls[1].started);
    assert_int_equal(r.nmissing, 1);
    assert_int_equal(r.nstarted, 0);
    assert_int_equal(r.action, MOTE_RECOVER_RESUME_TOOLS);
    /* begun (both records of its start), then killed */
    assert_int_equal(mote_journal_tool_start(&jr, "toolu_dup", 0, 0, NULL), 0);
    assert_int_equal(mote_journal_tool_start(&jr, "toolu_dup", 5000, 888, NULL), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_TOOL_INTERRUPTED);
    assert_int_equal(r.nmissing, 1);
    assert_int_equal(r.nstarted, 1);
    one_kill(&r, 5000, 888, ""); /* the second's group, not the first's */
    apply_then_idle(&r);
    assert_int_equal(r.nmissing, 0);
    /* two results in the requests, one per call */
    for (i = 0; i < 64 && mote_journal_parts(&jr, i, &p) == 1; i++)
        results += p.type == MOTE_PART_TOOL_RESULT;
    assert_int_equal(results, 2);
}

/* A line over MOTE_JOURNAL_LINE_MAX with a record after it is damage:
 * found with a read per buffer, not per byte, and with a read that fails
 * anywhere the opening fails; either way the file stays as it is. */
static void test_line_over_the_limit(void **state)
{
    static const char head[] = "{\"t\":\"open\",\"v\":2,\"id\":\"long\"}\n{\"t\":\"user\",\"text\":\"";
    static const char after[] = "\"}\n{\"t\":\"user\",\"text\":\"after\"}\n";
    static char text[6 * MOTE_JOURNAL_LINE_MAX];
    /* the long line's bytes past the limit: a few buffers, and a few bytes */
    const size_t over[2] = {4 * MOTE_JOURNAL_LINE_MAX, 10};
    unsigned k, n, faults = 0;

    (void)state;
    for (k = 0; k < 2; k++) {
        const size_t line2 = sizeof("{\"t\":\"user\",\"text\":\"\"}") - 1;
        size_t len = sizeof(head) - 1, run = MOTE_JOURNAL_LINE_MAX + over[k] - line2;
        unsigned calls;

        memcpy(text, head, len);
        memset(text + len, 'a', run);
        len += run;
        memcpy(text + len, after, sizeof(after) - 1);
        len += sizeof(after) - 1;
        put_journal("long", text, len);
        calls = tp.st_calls;
        assert_int_equal(mote_journal_open(&jr, &tp.port, "long"), MOTE_ERR_CORRUPT);
        assert_int_equal(jr.bad_line, 2);
        assert_true(tp.st_calls - calls < 64);
        /* the Nth read fails, for every N the opening makes */
        for (n = 1; n < 64; n++) {
            const struct mote_tport_file *f;
            int rc;

            put_journal("long", text, len);
            mote_tport_fail_after(&tp, MOTE_TP_READ, n, MOTE_ERR_IO, false);
            rc = mote_journal_open(&jr, &tp.port, "long");
            mote_tport_fail_after(&tp, 0, 0, 0, false);
            assert_true(rc == MOTE_ERR_CORRUPT || rc == MOTE_ERR_IO);
            faults += rc == MOTE_ERR_IO;
            f = mote_tport_file(&tp, "conversations/long.jsonl");
            assert_int_equal(f->len, len);
            assert_memory_equal(f->data, text, len);
            assert_null(mote_tport_file(&tp, "conversations/long.jsonl.torn"));
        }
    }
    assert_true(faults >= 2);
}

/* Scans `id` to its end with `budget` bytes a step; returns the last
 * step's result and the steps taken. */
static int scan_to_end(struct mote_jscan *sc, const char *id, size_t budget, unsigned *steps)
{
    int rc = mote_jscan_begin(sc, &jbuf, &tp.port, id);

    *steps = 0;
    while (rc == 0 || rc == 1) {
        assert_true(++*steps < 100000);
        rc = mote_jscan_step(sc, budget);
        if (rc == 0)
            break;
    }
    return rc;
}

/* The scan in steps decides what peek and recover decide, for every
 * prefix of the script, whatever its budget; a long line is read a chunk
 * a step; damage and a torn tail are told as peek tells them. */
static void test_scan_in_steps(void **state)
{
    static const size_t budgets[] = {1, 100, 1u << 20};
    static struct mote_jscan sc;
    static char text[6 * MOTE_JOURNAL_LINE_MAX];
    struct mote_recovery r;
    unsigned steps, b;
    int k, n;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "sc"), 0);
    for (k = 0; k < NSTEPS; k++) {
        assert_int_equal(write_step(&jr, k), 0);
        assert_int_equal(mote_recover(&jr, &r), 0);
        for (b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
            assert_int_equal(scan_to_end(&sc, "sc", budgets[b], &steps), 0);
            assert_int_equal(sc.r.action, r.action);
            assert_int_equal(sc.r.nmissing, r.nmissing);
            assert_int_equal(sc.r.nkill, r.nkill);
            assert_int_equal(sc.j.size, jr.size);
            assert_int_equal(sc.user_messages, k >= S_USER2 ? 2 : 1);
            assert_string_equal(sc.first, "list files \"here\" "); /* one line */
            if (budgets[b] == 1)
                assert_int_equal(steps, jr.records + 1); /* a line a step, then the end */
            mote_jscan_end(&sc);
        }
    }
    mote_journal_close(&jr);
    /* a torn tail: said, not cut (a scan writes nothing) */
    n = snprintf(text, sizeof(text), "{\"t\":\"open\",\"v\":2,\"id\":\"tt\"}\n"
                                     "{\"t\":\"user\",\"text\":\"hi\"}\n{\"t\":\"requ");
    put_journal("tt", text, (size_t)n);
    assert_int_equal(scan_to_end(&sc, "tt", 1, &steps), 0);
    assert_true(sc.j.repaired);
    assert_int_equal(sc.r.action, MOTE_RECOVER_CONTINUE);
    mote_jscan_end(&sc);
    assert_int_equal(mote_tport_file(&tp, "conversations/tt.jsonl")->len, (size_t)n);
    /* damage before the tail: its line */
    n = snprintf(text, sizeof(text), "{\"t\":\"open\",\"v\":2,\"id\":\"dd\"}\nnot json\n"
                                     "{\"t\":\"user\",\"text\":\"hi\"}\n");
    put_journal("dd", text, (size_t)n);
    assert_int_equal(scan_to_end(&sc, "dd", 1, &steps), MOTE_ERR_CORRUPT);
    assert_int_equal(sc.j.bad_line, 2);
    mote_jscan_end(&sc);
    /* a line four buffers long, then more lines: a chunk a step, damage */
    n = snprintf(text, sizeof(text), "{\"t\":\"open\",\"v\":2,\"id\":\"ll\"}\n");
    memset(text + n, 'a', 4 * MOTE_JOURNAL_LINE_MAX);
    n += 4 * MOTE_JOURNAL_LINE_MAX;
    n += snprintf(text + n, sizeof(text) - (size_t)n, "\n{\"t\":\"user\",\"text\":\"x\"}\n");
    put_journal("ll", text, (size_t)n);
    assert_int_equal(scan_to_end(&sc, "ll", 1, &steps), MOTE_ERR_CORRUPT);
    assert_int_equal(sc.j.bad_line, 2);
    assert_true(steps >= 4);
    mote_jscan_end(&sc);
    /* the same line running to the end: a torn tail */
    put_journal("ll", text, 4 * MOTE_JOURNAL_LINE_MAX);
    assert_int_equal(scan_to_end(&sc, "ll", 1, &steps), 0);
    assert_true(sc.j.repaired);
    assert_int_equal(sc.j.size, sizeof("{\"t\":\"open\",\"v\":2,\"id\":\"ll\"}\n") - 1);
    mote_jscan_end(&sc);
    /* missing and empty files count as absent */
    assert_int_equal(mote_jscan_begin(&sc, &jbuf, &tp.port, "none"), MOTE_ERR_NOENT);
    put_journal("empty", "", 0);
    assert_int_equal(mote_jscan_begin(&sc, &jbuf, &tp.port, "empty"), MOTE_ERR_NOENT);
    mote_jscan_end(&sc);
}

/* Usage is written with the API's names (input_tokens, ...) and read
 * with them or with the older ones (in, out, cache_read, cache_write). */
static void test_usage_names(void **state)
{
    static const char old[] = "{\"t\":\"open\",\"v\":2,\"id\":\"uo\"}\n"
                              "{\"t\":\"user\",\"text\":\"x\"}\n"
                              "{\"t\":\"assistant\",\"text\":\"y\",\"stop\":\"end_turn\","
                              "\"usage\":{\"in\":5,\"out\":6,\"cache_read\":7,\"cache_write\":8}}\n";
    const struct mote_rec_usage u = {10, 20, 30, 40};
    const struct mote_tport_file *f;
    char text[1024];
    struct mote_recovery r;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "un"), 0);
    assert_int_equal(mote_journal_user(&jr, "x", 1), 0);
    assert_int_equal(mote_journal_answer(&jr, "y", 1, "end_turn", false, NULL, 0, &u), 0);
    f = mote_tport_file(&tp, "conversations/un.jsonl");
    assert_non_null(f);
    assert_true(f->len < sizeof(text));
    memcpy(text, f->data, f->len);
    text[f->len] = '\0';
    assert_non_null(strstr(text, "\"usage\":{\"input_tokens\":10,"
                                                  "\"output_tokens\":20,\"cache_read_tokens\":30,"
                                                  "\"cache_write_tokens\":40}"));
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.total.input, 10);
    assert_int_equal(r.total.cache_write, 40);
    mote_journal_close(&jr);
    put_journal("uo", old, sizeof(old) - 1);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "uo"), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.total.input, 5);
    assert_int_equal(r.total.output, 6);
    assert_int_equal(r.total.cache_read, 7);
    assert_int_equal(r.total.cache_write, 8);
    mote_journal_close(&jr);
}

/* A refused call's record says so ("refused": the fault, or a word for
 * it), in an answer and in a call record, and recovery reads it back, so
 * a restart refuses the call again instead of running its {}; a
 * "refused" that is no string still refuses. */
static void test_refused_calls_recovered(void **state)
{
    static const struct mote_call_rec two[] = {
        {"call_a", "shell", "{\"command\":\"ls\"}", 16, NULL, NULL, 0},
        {"call_b", "list_dir", "{}", 2, "duplicate key \"path\"", NULL, 0},
    };
    static const struct mote_call_rec piece = {"call_p", "list_dir", "{}", 2,
                                               MOTE_REFUSED_TOO_BIG, NULL, 0};
    static const char odd[] = "{\"t\":\"open\",\"v\":2,\"id\":\"rq\"}\n"
                              "{\"t\":\"user\",\"text\":\"x\"}\n"
                              "{\"t\":\"assistant\",\"text\":\"\",\"stop\":\"tool_use\","
                              "\"calls\":[{\"id\":\"c\",\"name\":\"shell\",\"input\":{},"
                              "\"refused\":7}]}\n";
    struct mote_recovery r;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "rf"), 0);
    assert_int_equal(mote_journal_user(&jr, "hi", 2), 0);
    assert_int_equal(mote_journal_call(&jr, &piece), 0);
    assert_int_equal(mote_journal_assistant(&jr, "", 0, "tool_use", false, two, 2), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.ncalls, 3); /* the call record's, then the answer's two */
    assert_string_equal(r.calls[0].refused, MOTE_REFUSED_TOO_BIG);
    assert_string_equal(r.calls[1].refused, "");
    assert_string_equal(r.calls[2].refused, "duplicate key \"path\"");
    mote_journal_close(&jr);
    put_journal("rq", odd, sizeof(odd) - 1);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "rq"), 0);
    assert_int_equal(mote_recover(&jr, &r), 0);
    assert_int_equal(r.ncalls, 1);
    assert_string_equal(r.calls[0].refused, MOTE_REFUSED_INVALID);
    mote_journal_close(&jr);
}

/* Request ids: the user record carries the id set for it (and only that
 * record), the latest MOTE_JOURNAL_RIDS are known after a reopen too, a
 * record without one (an older mote's) reads as before, and an id is
 * checked against its record, not its hash alone. */
static void test_request_ids(void **state)
{
    static char text[200];
    const struct mote_tport_file *f;
    char rid[32];
    unsigned i;

    (void)state;
    assert_int_equal(mote_journal_create(&jr, &tp.port, "r"), 0);
    assert_int_equal(mote_journal_next_rid(&jr, "", 0), MOTE_ERR_INVAL);
    assert_int_equal(mote_journal_next_rid(&jr, "a\0b", 3), MOTE_ERR_INVAL);
    assert_int_equal(mote_journal_next_rid(&jr, "\xff", 1), MOTE_ERR_INVAL);
    assert_int_equal(mote_journal_next_rid(&jr, text, MOTE_JOURNAL_RID_MAX + 1),
                     MOTE_ERR_TOO_LARGE);
    assert_int_equal(mote_journal_next_rid(&jr, "req-\"1\"", 7), 0);
    assert_int_equal(mote_journal_user(&jr, "hello", 5), 0);
    assert_int_equal(mote_journal_user(&jr, "no id", 5), 0); /* the id was taken */
    assert_int_equal(mote_journal_rid_seen(&jr, "req-\"1\"", 7), 1);
    assert_int_equal(mote_journal_rid_seen(&jr, "req-\"1", 6), 0);
    assert_int_equal(mote_journal_rid_seen(&jr, "req-2", 5), 0);
    f = mote_tport_file(&tp, "conversations/r.jsonl");
    assert_non_null(strstr((const char *)f->data,
                           "{\"t\":\"user\",\"text\":\"hello\",\"rid\":\"req-\\\"1\\\"\"}\n"));
    assert_non_null(strstr((const char *)f->data, "{\"t\":\"user\",\"text\":\"no id\"}\n"));
    /* more than the index holds: the oldest ones leave it */
    for (i = 0; i < MOTE_JOURNAL_RIDS + 2; i++) {
        snprintf(rid, sizeof(rid), "id-%u", i);
        assert_int_equal(mote_journal_next_rid(&jr, rid, strlen(rid)), 0);
        assert_int_equal(mote_journal_user(&jr, "x", 1), 0);
    }
    mote_journal_close(&jr);
    assert_int_equal(mote_journal_open(&jr, &tp.port, "r"), 0);
    for (i = 0; i < MOTE_JOURNAL_RIDS + 2; i++) {
        snprintf(rid, sizeof(rid), "id-%u", i);
        assert_int_equal(mote_journal_rid_seen(&jr, rid, strlen(rid)), i >= 2 ? 1 : 0);
    }
    assert_int_equal(mote_journal_rid_seen(&jr, "req-\"1\"", 7), 0); /* left the index */
    /* a hash that matches the record of another id: not seen. The last
     * id's hash is moved onto the slot of an earlier one (note k of the
     * ring is id-(k-1): note 0 was req-"1"). */
    if (MOTE_JOURNAL_RIDS >= 16) {
        unsigned a = (MOTE_JOURNAL_RIDS + 2) % MOTE_JOURNAL_RIDS, b = 11 % MOTE_JOURNAL_RIDS;

        snprintf(rid, sizeof(rid), "id-%u", MOTE_JOURNAL_RIDS + 1);
        jr.rid_hash[b] = jr.rid_hash[a];
        jr.rid_hash[a] = 0;
        assert_int_equal(mote_journal_rid_seen(&jr, rid, strlen(rid)), 0);
        assert_int_equal(mote_journal_rid_seen(&jr, "id-10", 5), 0);
        assert_int_equal(mote_journal_rid_seen(&jr, "id-9", 4), 1);
    }
    mote_journal_close(&jr);
    /* an older mote's journal (no ids) and a rid that is no string */
    snprintf(text, sizeof(text), "{\"t\":\"open\",\"v\":2,\"id\":\"o\"}\n"
                                 "{\"t\":\"user\",\"text\":\"hi\"}\n"
                                 "{\"t\":\"user\",\"text\":\"hi\",\"rid\":7}\n");
    put_journal("o", text, strlen(text));
    assert_int_equal(mote_journal_open(&jr, &tp.port, "o"), 0);
    assert_int_equal(jr.nrids, 0);
    assert_int_equal(mote_journal_rid_seen(&jr, "7", 1), 0);
}

static void test_state_machine(void **state)
{
    struct mote_conv_step s;

    (void)state;
    s = mote_conv_next(MOTE_CONV_IDLE, MOTE_CEV_USER);
    assert_int_equal(s.state, MOTE_CONV_LLM_REQUESTING);
    /* Journal before effect: user and request records, then the send. */
    assert_int_equal(s.effects, MOTE_CEFF_JOURNAL_USER | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND);
    s = mote_conv_next(MOTE_CONV_LLM_REQUESTING, MOTE_CEV_FIRST_BYTE);
    assert_int_equal(s.state, MOTE_CONV_STREAMING);
    s = mote_conv_next(MOTE_CONV_STREAMING, MOTE_CEV_ANSWER_TOOLS);
    assert_int_equal(s.state, MOTE_CONV_TOOL_EXECUTING);
    assert_true(s.effects & MOTE_CEFF_JOURNAL_ANSWER);
    assert_true(s.effects & MOTE_CEFF_RUN_TOOLS);
    s = mote_conv_next(MOTE_CONV_TOOL_EXECUTING, MOTE_CEV_TOOLS_DONE);
    assert_int_equal(s.state, MOTE_CONV_LLM_REQUESTING);
    s = mote_conv_next(MOTE_CONV_STREAMING, MOTE_CEV_ANSWER_DONE);
    assert_int_equal(s.state, MOTE_CONV_IDLE);
    s = mote_conv_next(MOTE_CONV_STREAMING, MOTE_CEV_CANCELLED);
    assert_int_equal(s.state, MOTE_CONV_IDLE);
    assert_int_equal(s.effects, MOTE_CEFF_JOURNAL_PARTIAL);
    s = mote_conv_next(MOTE_CONV_TOOL_EXECUTING, MOTE_CEV_SHUTDOWN_CUT);
    assert_int_equal(s.state, MOTE_CONV_NEEDS_RECOVERY);
    assert_int_equal(s.effects, MOTE_CEFF_KILL_TOOLS | MOTE_CEFF_JOURNAL_MARK);
    s = mote_conv_next(MOTE_CONV_LLM_REQUESTING, MOTE_CEV_FAILED);
    assert_int_equal(s.state, MOTE_CONV_ERROR);
    s = mote_conv_next(MOTE_CONV_ERROR, MOTE_CEV_RETRY);
    assert_int_equal(s.state, MOTE_CONV_LLM_REQUESTING);
    assert_false(s.effects & MOTE_CEFF_JOURNAL_USER);
    s = mote_conv_next(MOTE_CONV_NEEDS_RECOVERY, MOTE_CEV_RETRY);
    assert_int_equal(s.state, MOTE_CONV_LLM_REQUESTING);
    /* Nonsense leaves the state alone. */
    s = mote_conv_next(MOTE_CONV_IDLE, MOTE_CEV_TOOLS_DONE);
    assert_int_equal(s.state, MOTE_CONV_IDLE);
    assert_int_equal(s.effects, 0);
    s = mote_conv_next(MOTE_CONV_STREAMING, MOTE_CEV_USER);
    assert_int_equal(s.state, MOTE_CONV_STREAMING);
    assert_string_equal(mote_conv_state_name(MOTE_CONV_NEEDS_RECOVERY), "needs_recovery");
    /* Each recovery action has its name, as the event streams spell it. */
    assert_string_equal(mote_recovery_name(MOTE_RECOVER_IDLE), "idle");
    assert_string_equal(mote_recovery_name(MOTE_RECOVER_CONTINUE), "continue");
    assert_string_equal(mote_recovery_name(MOTE_RECOVER_TOOL_INTERRUPTED), "tool_interrupted");
    assert_string_equal(mote_recovery_name(MOTE_RECOVER_LIMIT), "limit");
    assert_string_equal(mote_recovery_name(MOTE_RECOVER_RESUME_TOOLS), "resume_tools");
    assert_string_equal(mote_recovery_name((enum mote_recovery_action)99), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_and_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_limit_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auto_continue_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_at_every_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_countdown_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damage_before_the_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_ids_and_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_are_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_calls_recovered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_answer_parts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_past_the_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_versions_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recorded_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_id_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_over_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_in_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_machine, setup, teardown),
    };

    return cmocka_run_group_tests_name("journal", tests, NULL, NULL);
}
