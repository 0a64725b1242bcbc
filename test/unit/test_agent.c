/*
 * test_agent.c - the agent (mote_agent.h) on the deterministic test port:
 * a scripted model behind scripted sockets, scripted tools, simulated
 * time and in-memory storage with power cuts.
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

#include "../model_kit.h"
#include "answer_put.h"
#include "mote/mote_agent.h"
#include "mote/mote_budget.h"
#include "mote_tport.h"

static struct mote_tport tp;
static struct mote_tport_net net;
static struct mote_loop loop;
static struct mote_session ses;

/* ---- what the session told ---- */

static struct {
    unsigned text, approvals, calls, results, turn_ends, cancelled, errors, fatal, recovery,
        shutdown, states;
    uint32_t ask_id;
    struct mote_conv *ask_conv;
    bool answer_at_once;   /* answer approval questions from the callback */
    enum mote_answer answer;
    char order[256];       /* which conversation each text piece came from */
    unsigned norder;
    char last_result[512];
    char recovery_text[512];
    char error_text[256];
    char notes[512];
    unsigned warnings;
    char states_seq[64];   /* each state told, in order ('0' + enum mote_conv_state) */
    struct mote_shutdown_report report;
    char asked[128];       /* the input the last question showed */
    unsigned expired;      /* MOTE_EV_APPROVAL_EXPIRED */
    uint32_t asked_at, expired_at; /* the simulated clock at the last question, expiry */
    uint32_t ask_timeout;  /* the last question's timeout_ms */
    char expired_text[160];
    unsigned budget;       /* MOTE_EV_BUDGET */
    int64_t budget_until;
    char budget_text[200];
} ev;

static void on_event(void *arg, const struct mote_event *e)
{
    (void)arg;
    switch (e->type) {
    case MOTE_EV_TEXT:
        ev.text++;
        if (ev.norder + 1 < sizeof(ev.order))
            ev.order[ev.norder++] = (char)('A' + (e->conv - ses.conv));
        break;
    case MOTE_EV_STATE:
        if (ev.states + 1 < sizeof(ev.states_seq))
            ev.states_seq[ev.states] = (char)('0' + e->state);
        ev.states++;
        break;
    case MOTE_EV_APPROVAL:
        ev.approvals++;
        ev.ask_id = e->ask_id;
        ev.ask_conv = e->conv;
        assert_true(e->input_len >= 2 && e->input[0] == '{');
        snprintf(ev.asked, sizeof(ev.asked), "%.*s", (int)e->input_len, e->input);
        ev.asked_at = tp.now;
        ev.ask_timeout = e->timeout_ms;
        if (ev.answer_at_once)
            assert_int_equal(mote_conv_approve(e->conv, e->ask_id, ev.answer, "not now"), 0);
        break;
    case MOTE_EV_TOOL_CALL:
        ev.calls++;
        break;
    case MOTE_EV_BUDGET:
        ev.budget++;
        ev.budget_until = e->until;
        assert_int_equal(e->code, MOTE_ERR_BUDGET);
        snprintf(ev.budget_text, sizeof(ev.budget_text), "%s", e->text);
        break;
    case MOTE_EV_APPROVAL_EXPIRED:
        ev.expired++;
        ev.expired_at = tp.now;
        assert_int_equal(e->ask_id, ev.ask_id);
        snprintf(ev.expired_text, sizeof(ev.expired_text), "%s", e->text);
        break;
    case MOTE_EV_TOOL_RESULT:
        ev.results++;
        snprintf(ev.last_result, sizeof(ev.last_result), "%.*s", (int)e->len, e->text);
        break;
    case MOTE_EV_TURN_END:
        ev.turn_ends++;
        break;
    case MOTE_EV_CANCELLED:
        ev.cancelled++;
        break;
    case MOTE_EV_ERROR:
        ev.errors++;
        ev.fatal += e->fatal;
        snprintf(ev.error_text, sizeof(ev.error_text), "%s", e->text);
        break;
    case MOTE_EV_RECOVERY:
        ev.recovery++;
        snprintf(ev.recovery_text + strlen(ev.recovery_text),
                 sizeof(ev.recovery_text) - strlen(ev.recovery_text), "%s|", e->text);
        break;
    case MOTE_EV_SHUTDOWN:
        ev.shutdown++;
        ev.report = *e->report;
        break;
    case MOTE_EV_NOTE:
    case MOTE_EV_WARNING:
        ev.warnings += e->type == MOTE_EV_WARNING;
        snprintf(ev.notes + strlen(ev.notes), sizeof(ev.notes) - strlen(ev.notes), "%s|",
                 e->text);
        break;
    default:
        break;
    }
}

/* ---- a scripted tool ---- */

static unsigned tool_runs;         /* calls that began running */
static bool tool_hangs;            /* never finishes by itself */
static bool tool_deaf;             /* ignores its cancel too */
static char tool_input[65536];     /* the last input it saw */

struct sensor_state {
    bool begun;
};

static int sensor_step(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    struct sensor_state *st = (struct sensor_state *)run->st.user;

    if (!st->begun) {
        st->begun = true;
        tool_runs++;
        snprintf(tool_input, sizeof(tool_input), "%.*s", (int)run->input_len, run->input);
    }
    if (mote_job_cancelled(l, self) && !tool_deaf)
        return MOTE_STEP_CANCELLED;
    if (tool_hangs) {
        assert_int_equal(mote_timer_start(l, 100, NULL, NULL, self, NULL), 0);
        return MOTE_STEP_PENDING;
    }
    mote_tool_outs(run, "sensor: 21.5 C");
    return MOTE_STEP_DONE;
}

static const struct mote_tool sensor = {
    "read_sensor", "Read the temperature sensor.",
    "{\"type\":\"object\",\"properties\":{\"unit\":{\"type\":\"string\"}}}", sensor_step, NULL, NULL,
    0};

/* ---- the scripted model (Anthropic streams) ---- */


/* JSON string content for `s` (quotes and backslashes escaped). */
static const char *esc(const char *s, char *buf, size_t cap)
{
    size_t o = 0;

    for (; *s != '\0'; s++) {
        assert_true(o + 3 < cap);
        if (*s == '"' || *s == '\\')
            buf[o++] = '\\';
        if (*s == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
            continue;
        }
        buf[o++] = *s;
    }
    buf[o] = '\0';
    return buf;
}

static unsigned usage_in = 10;          /* input tokens the next answers report */
static const char *call_name = "read_sensor"; /* the tool the answers call */
static const char *stop_reason = NULL;  /* overrides end_turn / tool_use */
static bool cut_last_input = false;     /* the last call's input stops half way */
static bool no_ids = false;             /* the calls come without an id */
static bool interleave = false;         /* the calls' blocks all start, then their input
                                         * fragments come interleaved: the first halves last
                                         * call first, then the second halves in order */

/* An answer: text (may be NULL) in pieces of `piece` bytes, then `ncalls`
 * tool calls with their inputs (each sent in two fragments). */
static size_t answer(char *out, size_t cap, const char *text, size_t piece, unsigned ncalls,
                     const char *const *inputs)
{
    static char eb[300000];
    size_t at = put(out, cap, 0, HEAD), n = text != NULL ? strlen(text) : 0, off;
    unsigned i, blk = 0;

    at = put(out, cap, at,
             "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
             "{\"input_tokens\":%u,\"output_tokens\":1}}}\n\n",
             usage_in);
    if (text != NULL) {
        at = put(out, cap, at,
                 "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                 "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
        for (off = 0; off < n; off += piece) {
            char part[2048];
            size_t k = n - off < piece ? n - off : piece;

            assert_true(k < sizeof(part));
            memcpy(part, text + off, k);
            part[k] = '\0';
            at = put(out, cap, at,
                     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"
                     "0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n",
                     esc(part, eb, sizeof(eb)));
        }
        at = put(out, cap, at,
                 "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}"
                 "\n\n");
        blk = 1;
    }
    for (unsigned pass = 0; pass < (interleave ? 4u : 1u); pass++) {
        unsigned b0 = blk;

        for (unsigned k = 0; k < ncalls; k++) {
            size_t len, half;
            char a[70000], b[70000];
            unsigned bi;

            i = interleave && pass == 1 ? ncalls - 1 - k : k;
            bi = b0 + i;
            len = strlen(inputs[i]);
            half = len / 2;
            assert_true(len < sizeof(a));
            memcpy(a, inputs[i], half);
            a[half] = '\0';
            memcpy(b, inputs[i] + half, len - half + 1);
            if (!interleave || pass == 0) {
                char idf[32] = "";

                if (!no_ids)
                    snprintf(idf, sizeof(idf), "\"id\":\"toolu_%u\",", i);
                at = put(out, cap, at,
                         "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                         "\"index\":%u,\"content_block\":{\"type\":\"tool_use\",%s\"name\":"
                         "\"%s\",\"input\":{}}}\n\n",
                         bi, idf, call_name);
            }
            if (cut_last_input && i + 1 == ncalls)
                b[0] = '\0'; /* the token limit: the input ends half way */
            if (len > 0 && (!interleave || pass == 1))
                at = put(out, cap, at,
                         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                         "\"index\":%u,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
                         "\"%s\"}}\n\n",
                         bi, esc(a, eb, sizeof(eb)));
            if (len > 0 && (!interleave || pass == 2))
                at = put(out, cap, at,
                         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                         "\"index\":%u,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
                         "\"%s\"}}\n\n",
                         bi, esc(b, eb, sizeof(eb)));
            if (!interleave || pass == 3)
                at = put(out, cap, at,
                         "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
                         "\"index\":%u}\n\n",
                         bi);
        }
    }
    at = put(out, cap, at,
             "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
             "\"%s\"},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: "
             "{\"type\":\"message_stop\"}\n\n",
             stop_reason != NULL ? stop_reason : ncalls > 0 ? "tool_use" : "end_turn");
    return at;
}

#define NRESP 16
static struct mote_tport_resp script[NRESP];
static char bodies[NRESP][400000];
static unsigned nscript;

static void say_text(const char *text, size_t piece)
{
    assert_true(nscript < NRESP);
    script[nscript].len = answer(bodies[nscript], sizeof(bodies[0]), text, piece, 0, NULL);
    script[nscript].bytes = bodies[nscript];
    nscript++;
}

static void say_calls(const char *text, unsigned n, const char *const *inputs)
{
    assert_true(nscript < NRESP);
    script[nscript].len = answer(bodies[nscript], sizeof(bodies[0]), text, 8, n, inputs);
    script[nscript].bytes = bodies[nscript];
    nscript++;
}

static void say_stall(void)
{
    assert_true(nscript < NRESP);
    script[nscript].len = (size_t)snprintf(bodies[nscript], sizeof(bodies[0]), "%s", HEAD);
    script[nscript].bytes = bodies[nscript];
    script[nscript].stall = true;
    nscript++;
}

/* ---- set-up ---- */

static struct mote_port *session_port; /* NULL: the test port as it is */

static void start_session(void)
{
    struct mote_session_conf sc;

    memset(&sc, 0, sizeof(sc));
    sc.on_event = on_event;
    sc.tool_timeout_ms = 60000;
    mote_tport_net_init(&tp, &net, script, NRESP);
    net.n = nscript;
    assert_int_equal(mote_loop_init(&loop, session_port != NULL ? session_port : &tp.port), 0);
    /* Whatever the memory held before: init prepares only the small parts
     * (a pool's buffers when the slot is taken), and no test may depend on
     * the rest being zero (untouched pages stay out of RSS). */
    memset(&ses, 0xA5, sizeof(ses));
    assert_int_equal(mote_session_init(&ses, &loop, &sc), 0);
    assert_int_equal(mote_session_add_tool(&ses, &sensor), 0);
}

/* A process death: everything in memory goes, storage stays. */
static void end_session(void)
{
    mote_session_deinit(&ses);
    mote_loop_deinit(&loop);
}

static int setup(void **state)
{
    (void)state;
    memset(&ev, 0, sizeof(ev));
    memset(script, 0, sizeof(script));
    nscript = 0;
    tool_runs = 0;
    tool_hangs = tool_deaf = false;
    usage_in = 10;
    stop_reason = NULL;
    cut_last_input = false;
    no_ids = interleave = false;
    call_name = "read_sensor";
    session_port = NULL;
    mote_tport_init(&tp, 1000);
    kit_model();
    cc.tools = true;
    cc.approval = MOTE_APPROVE_ALLOW;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mote_tport_deinit(&tp);
    return 0;
}

/* Turns the loop until `c` (or, with NULL, every conversation) rests, at
 * most `max` turns. Returns the turns taken. */
static unsigned drive(struct mote_conv *c, unsigned max)
{
    unsigned i;

    for (i = 0; i < max; i++) {
        if (c != NULL ? !mote_conv_busy(c) : !mote_session_busy(&ses))
            break;
        if (tp.power_off)
            break;
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    }
    /* and the deferred work of the last turn */
    for (unsigned k = 0; k < 3; k++)
        (void)mote_loop_poll(&loop, 0);
    return i;
}

static int count_kind(const char *id, const char *kind)
{
    char name[80], pat[40];
    const struct mote_tport_file *f;
    int n = 0;
    const char *p;

    snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
    f = mote_tport_file(&tp, name);
    if (f == NULL)
        return -1;
    snprintf(pat, sizeof(pat), "{\"t\":\"%s\"", kind);
    for (p = (const char *)f->data; p != NULL && (size_t)(p - (const char *)f->data) < f->len;) {
        p = memmem(p, f->len - (size_t)(p - (const char *)f->data), pat, strlen(pat));
        if (p != NULL) {
            n++;
            p++;
        }
    }
    return n;
}

/* ---- tests ---- */

/* Tool names are unique across the registry and the MCP servers, and
 * which tool a call runs - and the policy it meets - follows what the
 * conversation offers (conf.tools, conf.mcp), decided in one place: an
 * embedder's tool named like MCP server srv's tool x ("srv__x") is
 * refused, so a call of srv__x is always the MCP tool's, asked about as
 * the default says; a registry tool the conversation does not offer lends
 * no MOTE_TOOL_NO_APPROVAL to anything. */
static int srv_x_step(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    (void)l, (void)self;
    tool_runs++;
    mote_tool_outs(run, "the registry's srv__x ran");
    return MOTE_STEP_DONE;
}

static const struct mote_tool srv_x = {"srv__x", "Named like an MCP tool.", "{\"type\":\"object\"}",
                                       srv_x_step, NULL, NULL, MOTE_TOOL_NO_APPROVAL};
static const struct mote_tool probe = {"probe", "Needs no approval.", "{\"type\":\"object\"}",
                                       srv_x_step, NULL, NULL, MOTE_TOOL_NO_APPROVAL};
static struct mote_mcp mcp;

/* MCP server "srv" with its tool "x", ready: set up by hand (no process
 * runs, so no call of it may start). */
static void fake_mcp(void)
{
    struct mote_mcp_server *srv = &mcp.srv[0];

    mote_mcp_init(&mcp, &loop, NULL, NULL);
    mcp.n = 1;
    srv->m = &mcp;
    strcpy(srv->name, "srv");
    srv->state = MOTE_MCP_READY;
    srv->in_fd = srv->out_fd = srv->err_fd = -1;
    srv->ntools = 1;
    strcpy(srv->tools[0].name, "srv__x");
    strcpy(srv->tools[0].remote, "x");
    strcpy(srv->tools[0].schema, "{\"type\":\"object\"}");
    mote_session_use_mcp(&ses, &mcp);
}

static unsigned count_in(const char *hay, const char *needle)
{
    unsigned n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void test_tool_names_unique_and_resolved_once(void **state)
{
    static const char *const in[] = {"{}"};
    struct mote_conv *c;

    (void)state;
    call_name = "srv__x";
    say_calls(NULL, 1, in);
    say_text("a", 8);
    say_calls(NULL, 1, in);
    say_text("b", 8);
    start_session();
    fake_mcp();
    (void)mote_session_add_tool(&ses, &srv_x);
    assert_int_equal(mote_session_add_tool(&ses, &probe), 0);
    ev.answer_at_once = true;
    ev.answer = MOTE_ANSWER_NO;
    cc.approval = MOTE_APPROVE_ASK;
    cc.mcp = true;
    /* Registry tools offered too: the request names srv__x once (the MCP
     * tool), and its call is asked about, never run as the registry's. */
    assert_int_equal(mote_conv_create(&ses, &cc, "both", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(count_in(net.requests[0], "\"name\":\"srv__x\""), 1);
    assert_int_equal(ev.approvals, 1);
    assert_int_equal(tool_runs, 0);
    assert_non_null(strstr(ev.last_result, "refused"));
    assert_int_equal(mote_conv_close(c), 0);
    /* MCP tools only: the same. */
    cc.tools = false;
    assert_int_equal(mote_conv_create(&ses, &cc, "mcp-only", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(ev.approvals, 2);
    assert_int_equal(tool_runs, 0);
    /* The policy of a name is that of the tool a call of it would run. */
    assert_int_equal(mote_conv_policy(c, "srv__x"), MOTE_APPROVE_ASK);
    assert_int_equal(mote_conv_policy(c, "probe"), MOTE_APPROVE_ASK); /* not offered here */
    /* The registry refuses a name with "__" (the MCP tools' form) and a
     * name it has. */
    assert_int_equal(mote_session_add_tool(&ses, &srv_x), MOTE_ERR_INVAL);
    assert_int_equal(mote_session_add_tool(&ses, &probe), MOTE_ERR_EXIST);
    ses.mcp = NULL;
    end_session();
}

static void test_tool_round(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    struct mote_conv *c;

    (void)state;
    say_calls("Let me look.", 1, in);
    say_text("It is 21.5 C.", 4);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "round", &c), 0);
    assert_int_equal(mote_conv_send(c, "how warm is it?", 15), 0);
    assert_int_equal(ev.text, 0); /* nothing is told inside the call */
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(tool_runs, 1);
    assert_string_equal(tool_input, "{\"unit\":\"C\"}");
    assert_int_equal(ev.calls, 1);
    assert_int_equal(ev.results, 1);
    assert_int_equal(ev.turn_ends, 1);
    assert_int_equal(ev.errors, 0);
    assert_int_equal(net.connects, 2);
    /* The result went back to the model. */
    assert_non_null(strstr(net.requests[1], "sensor: 21.5 C"));
    assert_non_null(strstr(net.requests[1], "\"tool_use_id\":\"toolu_0\""));
    assert_int_equal(count_kind("round", "tool_start"), 1);
    assert_int_equal(count_kind("round", "tool_result"), 1);
    assert_int_equal(count_kind("round", "assistant"), 2);
    /* Busy and empty messages are refused, nothing written. */
    assert_int_equal(mote_conv_send(c, "   \n", 4), MOTE_ERR_INVAL);
    assert_int_equal(count_kind("round", "user"), 1);
    end_session();
}

/* The optional members (random, signals_take, st_lock,
 * tls_pending, the process identity ones) may be NULL, or past an older
 * port's size: a tool round, its journal and a reopening work without
 * them, nothing calls them. */
static void test_optional_port_members_may_be_missing(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    static struct mote_port p;
    struct mote_conv *c;

    (void)state;
    say_calls("Let me look.", 1, in);
    say_text("It is 21.5 C.", 4);
    mote_tport_net_init(&tp, &net, script, NRESP); /* net members in tp.port */
    p = tp.port;
    p.random = NULL;
    p.signals_take = NULL;
    p.st_lock = NULL;
    p.tls_pending = NULL;
    p.proc_start_time = NULL;
    p.proc_group = NULL;
    p.proc_tag = NULL;
    p.proc_kill_recorded = NULL;
    session_port = &p;
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "opt", &c), 0);
    assert_int_equal(mote_conv_send(c, "how warm is it?", 15), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(tool_runs, 1);
    assert_int_equal(ev.errors, 0);
    assert_int_equal(count_kind("opt", "tool_result"), 1);
    end_session();
    /* a port that ends before st_lock (an older one): still one writer */
    p.st_lock = tp.port.st_lock;
    p.size = (uint32_t)offsetof(struct mote_port, st_lock);
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, "opt", &c, NULL, NULL), 0);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    end_session();
}

static void test_empty_tool_input_is_an_empty_object(void **state)
{
    static const char *const in[] = {""};
    struct mote_conv *c;

    (void)state;
    say_calls(NULL, 1, in);
    say_text("ok", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "empty", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(tool_runs, 1);
    assert_string_equal(tool_input, "{}");
    assert_null(strstr(net.requests[1], "not one valid JSON object"));
    end_session();
}

/* Retention through the library (mote_session_prune) on a port whose
 * files keep no time (the test port has no st_time): the oldest by name
 * go; the open one never goes and does not count; within the limits
 * nothing is removed. */
static void test_prune_oldest_finished_by_name(void **state)
{
    static const char *const ids[] = {"p1", "p2", "p3", "p4"};
    struct mote_prune_report r;
    struct mote_conv *c, *open;
    unsigned i;

    (void)state;
    for (i = 0; i < 4; i++)
        say_text("done", 8);
    start_session();
    for (i = 0; i < 4; i++) {
        assert_int_equal(mote_conv_create(&ses, &cc, ids[i], &c), 0);
        assert_int_equal(mote_conv_send(c, "go", 2), 0);
        drive(c, 500);
        assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
        assert_int_equal(mote_conv_close(c), 0);
    }
    assert_int_equal(mote_conv_create(&ses, &cc, "p5", &open), 0);
    assert_int_equal(mote_session_prune(&ses, 2, 0, &r), 0);
    assert_int_equal(r.count, 2);
    assert_true(r.bytes > 0);
    assert_int_equal(mote_session_remove(&ses, "p1"), MOTE_ERR_NOENT);
    assert_int_equal(mote_session_remove(&ses, "p2"), MOTE_ERR_NOENT);
    assert_int_equal(mote_session_prune(&ses, 2, 0, &r), 0); /* within: nothing */
    assert_int_equal(r.count, 0);
    assert_int_equal(mote_session_prune(&ses, 0, 1, &r), 0); /* one byte: all finished */
    assert_int_equal(r.count, 2);
    assert_int_equal(mote_session_remove(&ses, "p3"), MOTE_ERR_NOENT);
    assert_int_equal(mote_session_remove(&ses, "p5"), MOTE_ERR_BUSY); /* open: stays */
    /* More over the limit than one pass notes (MOTE_PRUNE_BATCH): passes
     * until within it. */
    for (i = 0; i < MOTE_PRUNE_BATCH + 4; i++) {
        char id[8] = {'q', (char)('a' + i / 26), (char)('a' + i % 26), '\0'};

        assert_int_equal(mote_conv_create(&ses, &cc, id, &c), 0);
        assert_int_equal(mote_conv_close(c), 0);
    }
    assert_int_equal(mote_session_prune(&ses, 1, 0, &r), 0);
    assert_int_equal(r.count, MOTE_PRUNE_BATCH + 3);
    assert_int_equal(mote_session_remove(&ses, "qaa"), MOTE_ERR_NOENT);
    assert_int_equal(mote_session_prune(&ses, 1, 0, &r), 0);
    assert_int_equal(r.count, 0); /* the newest by name is left */
    assert_int_equal(mote_conv_close(open), 0);
    end_session();
}

/* Two conversations stream at the same time on one loop (their pieces
 * interleave) while a third, waiting for a stream slot, is cancelled. */
/* An MCP call that waits for a run slot while its server drops the tool
 * from its list is not run: it gets a result that says so (the tool it
 * was resolved to is gone; nothing else runs in its place). */
static void test_mcp_tool_gone_while_waiting(void **state)
{
    static const char *const in[] = {"{}"};
    struct mote_conv *a, *b, *c;
    unsigned i;

    (void)state;
    say_calls(NULL, 1, in); /* a and b: read_sensor, which hangs */
    say_calls(NULL, 1, in);
    call_name = "srv__x";
    say_calls(NULL, 1, in);
    say_text("done", 8);
    tool_hangs = true;
    start_session();
    fake_mcp();
    cc.mcp = true;
    assert_int_equal(mote_conv_create(&ses, &cc, "a", &a), 0);
    assert_int_equal(mote_conv_create(&ses, &cc, "b", &b), 0);
    assert_int_equal(mote_conv_create(&ses, &cc, "c", &c), 0);
    assert_int_equal(mote_conv_send(a, "one", 3), 0);
    for (i = 0; i < 200 && tool_runs < 1; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    assert_int_equal(mote_conv_send(b, "two", 3), 0);
    for (i = 0; i < 200 && tool_runs < 2; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    /* MOTE_MAX_TOOL_RUNS is 2: c's call waits for a run slot. */
    assert_int_equal(mote_conv_send(c, "three", 5), 0);
    for (i = 0; i < 200 && !c->want_run; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    assert_true(c->want_run);
    mcp.srv[0].ntools = 0; /* the server's new list lacks it */
    assert_int_equal(mote_conv_cancel(a), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(tool_runs, 2);
    assert_int_equal(ev.calls, 2);
    assert_non_null(strstr(net.requests[3], "no longer offers this tool"));
    assert_int_equal(mote_conv_cancel(b), 0);
    drive(NULL, 500);
    ses.mcp = NULL;
    end_session();
}

static void test_two_stream_while_a_third_is_cancelled(void **state)
{
    static char t1[2000], t2[2000];
    struct mote_conv *a, *b, *c;
    unsigned switches = 0, i;

    (void)state;
    memset(t1, 'a', sizeof(t1) - 1);
    memset(t2, 'b', sizeof(t2) - 1);
    say_text(t1, 40);
    script[nscript - 1].chunk = 300;
    say_text(t2, 40);
    script[nscript - 1].chunk = 300;
    say_text("never", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "conv-a", &a), 0);
    assert_int_equal(mote_conv_create(&ses, &cc, "conv-b", &b), 0);
    assert_int_equal(mote_conv_create(&ses, &cc, "conv-c", &c), 0);
    assert_int_equal(mote_conv_send(a, "one", 3), 0);
    assert_int_equal(mote_conv_send(b, "two", 3), 0);
    assert_int_equal(mote_conv_send(c, "three", 5), 0);
    (void)mote_loop_poll(&loop, 0);
    /* MOTE_MAX_STREAMS is 2: the third waits for a slot. */
    assert_true(c->want_send);
    assert_int_equal(mote_conv_cancel(c), 0);
    drive(NULL, 2000);
    assert_int_equal(mote_conv_state(a), MOTE_CONV_IDLE);
    assert_int_equal(mote_conv_state(b), MOTE_CONV_IDLE);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(ev.cancelled, 1);
    assert_int_equal(ev.turn_ends, 2);
    assert_int_equal(net.connects, 2); /* the cancelled one never connected */
    for (i = 1; i < ev.norder; i++)
        switches += ev.order[i] != ev.order[i - 1];
    assert_true(switches >= 4); /* A and B took turns */
    assert_null(memchr(ev.order, 'C', ev.norder));
    /* The cancel ended the turn in the journal: a reopening does not send it. */
    assert_int_equal(count_kind("conv-c", "assistant"), 1);
    end_session();
    nscript = 0;
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, "conv-c", &c, NULL, NULL), 0);
    drive(c, 100);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(net.connects, 0);
    end_session();
}

static void test_approval_yes_no_and_stale(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    struct mote_conv *c;
    uint32_t first;

    (void)state;
    say_calls(NULL, 1, in);
    say_text("thanks", 8);
    say_calls(NULL, 1, in);
    say_text("ok", 8);
    start_session();
    cc.approval = MOTE_APPROVE_ASK;
    assert_int_equal(mote_conv_create(&ses, &cc, "ask", &c), 0);
    /* An answer given before its question answers nothing. */
    assert_int_equal(mote_conv_approve(c, 1, MOTE_ANSWER_YES, NULL), MOTE_ERR_STALE);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_AWAITING_APPROVAL);
    assert_int_equal(ev.approvals, 1);
    assert_int_equal(tool_runs, 0);
    first = ev.ask_id;
    assert_int_equal(mote_conv_approve(c, first + 1, MOTE_ANSWER_YES, NULL), MOTE_ERR_STALE);
    assert_int_equal(mote_conv_approve(c, first, MOTE_ANSWER_YES, NULL), 0);
    assert_int_equal(mote_conv_approve(c, first, MOTE_ANSWER_YES, NULL), MOTE_ERR_STALE);
    drive(c, 500);
    assert_int_equal(tool_runs, 1);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    /* Refused, with a reason, answered from inside the callback. */
    ev.answer_at_once = true;
    ev.answer = MOTE_ANSWER_NO;
    assert_int_equal(mote_conv_send(c, "again", 5), 0);
    drive(c, 500);
    assert_int_equal(ev.approvals, 2);
    assert_int_equal(tool_runs, 1);
    assert_non_null(strstr(ev.last_result, "refused"));
    assert_non_null(strstr(ev.last_result, "not now"));
    assert_non_null(strstr(net.requests[3], "refused"));
    /* The old question's id answers nothing now. */
    assert_int_equal(mote_conv_approve(c, first, MOTE_ANSWER_YES, NULL), MOTE_ERR_STALE);
    end_session();
}

/* A question with a deadline that nobody answers is answered no by
 * itself at the deadline (never before it): the call does not run, its
 * result says why (journaled like any answer: the model reads it) and
 * the turn goes on. One answered in time is not touched by its deadline.
 * After a restart the question is asked again, with its deadline. */
static void test_approval_deadline(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    struct mote_conv *c;
    unsigned i;

    (void)state;
    say_calls(NULL, 1, in);
    say_text("noted", 8);
    say_calls(NULL, 1, in);
    say_text("thanks", 8);
    say_calls(NULL, 1, in);
    start_session();
    cc.approval = MOTE_APPROVE_ASK;
    cc.approval_timeout_ms = 2000;
    assert_int_equal(mote_conv_create(&ses, &cc, "deadline", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    for (i = 0; i < 50 && ev.approvals == 0; i++)
        assert_true(mote_loop_poll(&loop, 100) >= 0);
    assert_int_equal(ev.approvals, 1);
    assert_int_equal(ev.ask_timeout, 2000);
    drive(c, 50);
    assert_int_equal(ev.expired, 1);
    assert_true(ev.expired_at - ev.asked_at >= 2000);
    assert_true(ev.expired_at - ev.asked_at < 2100);
    assert_int_equal(tool_runs, 0);
    assert_string_equal(ev.expired_text, "denied: nobody approved within 2 seconds (the approval's "
                                         "deadline passed; the call did not run)");
    assert_non_null(strstr(ev.last_result, "denied: nobody approved within 2 seconds"));
    /* the turn went on: the model was asked again, with the denial */
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(ev.turn_ends, 1);
    assert_non_null(strstr(net.requests[1], "denied: nobody approved within 2 seconds"));
    assert_int_equal(count_kind("deadline", "tool_result"), 1);

    /* answered in time: runs, and the deadline does nothing later */
    assert_int_equal(mote_conv_send(c, "again", 5), 0);
    for (i = 0; i < 50 && ev.approvals < 2; i++)
        assert_true(mote_loop_poll(&loop, 100) >= 0);
    assert_int_equal(ev.approvals, 2);
    mote_tport_advance(&tp, 1500);
    assert_int_equal(mote_conv_approve(c, ev.ask_id, MOTE_ANSWER_YES, NULL), 0);
    drive(c, 50);
    for (i = 0; i < 5; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    assert_int_equal(tool_runs, 1);
    assert_int_equal(ev.expired, 1);
    assert_int_equal(count_kind("deadline", "tool_result"), 2);

    /* a question pending at a crash is asked again after it, deadline and all */
    assert_int_equal(mote_conv_send(c, "third", 5), 0);
    for (i = 0; i < 50 && ev.approvals < 3; i++)
        assert_true(mote_loop_poll(&loop, 100) >= 0);
    assert_int_equal(ev.approvals, 3);
    end_session();
    nscript = 0;
    say_text("fine", 8);
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, "deadline", &c, NULL, NULL), 0);
    drive(c, 50);
    assert_int_equal(ev.approvals, 4);
    assert_int_equal(ev.expired, 2);
    assert_int_equal(tool_runs, 1);
    assert_int_equal(count_kind("deadline", "tool_result"), 3);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    end_session();
}

/* A budget of one request an hour: the second turn waits - told once,
 * nothing sent - and goes on by itself when the hour ends; a wait is
 * cancelled like any turn; the reservation of a request is settled with
 * its usage. */
static void test_budget_holds_the_turn(void **state)
{
    static struct mote_budget b;
    struct mote_budget_conf bc;
    struct mote_conv *c;
    char err[160];
    unsigned i;

    (void)state;
    say_text("one", 8);
    say_text("two", 8);
    memset(&bc, 0, sizeof(bc));
    bc.requests_hour = 1;
    start_session();
    assert_int_equal(mote_budget_open(&b, &tp.port, &bc, err, sizeof(err)), 0);
    mote_session_use_budget(&ses, &b);
    assert_int_equal(mote_conv_create(&ses, &cc, "budget", &c), 0);
    assert_int_equal(mote_conv_send(c, "a", 1), 0);
    drive(c, 100);
    assert_int_equal(ev.turn_ends, 1);
    assert_int_equal(net.connects, 1);
    assert_true(b.hour.requests == 1 && b.nholds == 0 && b.hour.input == 10);
    assert_int_equal(mote_conv_send(c, "b", 1), 0);
    for (i = 0; i < 30; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    assert_int_equal(ev.budget, 1);
    assert_true(mote_conv_busy(c));
    assert_int_equal(net.connects, 1); /* nothing was sent */
    assert_non_null(strstr(ev.budget_text, "1 requests this hour"));
    assert_true(ev.budget_until == INT64_C(1780275600)); /* 01:00Z */
    assert_int_equal(count_kind("budget", "request"), 2); /* the turn's request, waiting */
    drive(c, 5000); /* the simulated hour passes */
    assert_false(mote_conv_busy(c));
    assert_int_equal(ev.turn_ends, 2);
    assert_int_equal(net.connects, 2);
    assert_int_equal(ev.budget, 1);
    /* a wait cancelled */
    assert_int_equal(mote_conv_send(c, "c", 1), 0);
    for (i = 0; i < 5; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    assert_int_equal(ev.budget, 2);
    assert_int_equal(mote_conv_cancel(c), 0);
    drive(c, 20);
    assert_false(mote_conv_busy(c));
    assert_int_equal(ev.cancelled, 1);
    assert_int_equal(net.connects, 2);
    /* a drain with a turn waiting marks it for recovery */
    assert_int_equal(mote_conv_send(c, "d", 1), 0);
    for (i = 0; i < 5; i++)
        assert_true(mote_loop_poll(&loop, 1000) >= 0);
    assert_int_equal(ev.budget, 3);
    {
        struct mote_shutdown_req req = {"SIGTERM", MOTE_SD_DRAIN, 1000, false};
        struct mote_shutdown_report rep;

        assert_int_equal(mote_shutdown(&ses, &req, &rep), 0);
        assert_int_equal(rep.conversations_marked, 1);
        assert_false(rep.timed_out);
    }
    assert_int_equal(net.connects, 2);
    mote_budget_close(&b);
    end_session();
}

/* A question shows the input that would run, read back from the journal:
 * with a read failing at each place in turn, a question is either asked
 * with the whole input or not asked at all (the storage failed), never
 * with a stand-in such as {}. */
static void test_question_never_shows_what_was_not_read(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    unsigned n, failed = 0;

    (void)state;
    for (n = 1; n < 80; n++) {
        struct mote_conv *c;

        mote_tport_deinit(&tp);
        mote_tport_init(&tp, 1000);
        memset(&ev, 0, sizeof(ev));
        nscript = 0;
        say_calls(NULL, 1, in);
        say_text("ok", 8);
        start_session();
        cc.approval = MOTE_APPROVE_ASK;
        if (mote_conv_create(&ses, &cc, "readback", &c) == 0) {
            mote_tport_fail_after(&tp, MOTE_TP_READ, n, MOTE_ERR_IO, false);
            if (mote_conv_send(c, "go", 2) == 0)
                drive(c, 500);
        }
        if (ev.approvals > 0)
            assert_string_equal(ev.asked, in[0]);
        failed += ev.fatal > 0 && ev.approvals == 0;
        end_session();
        if (tp.fail_seen < n)
            break; /* every read of the round came before read n */
    }
    assert_true(n < 80);
    assert_true(failed > 0); /* a failed read back asked nothing */
}

/* A call that needs the user's answer is told as awaiting_approval
 * first: the conversation is never said to run a tool it only asks
 * about; once answered, it runs (tool_executing), then the turn ends. */
static void test_asked_call_is_never_told_executing_first(void **state)
{
    static const char *const in[] = {"{}"};
    struct mote_conv *c;
    char *ask, *run;

    (void)state;
    say_calls(NULL, 1, in);
    say_text("thanks", 8);
    start_session();
    cc.approval = MOTE_APPROVE_ASK;
    assert_int_equal(mote_conv_create(&ses, &cc, "order", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_AWAITING_APPROVAL);
    ask = strchr(ev.states_seq, '0' + MOTE_CONV_AWAITING_APPROVAL);
    assert_non_null(ask);
    run = strchr(ev.states_seq, '0' + MOTE_CONV_TOOL_EXECUTING);
    assert_true(run == NULL || run > ask);
    assert_int_equal(mote_conv_approve(c, ev.ask_id, MOTE_ANSWER_YES, NULL), 0);
    drive(c, 500);
    assert_int_equal(tool_runs, 1);
    run = strchr(ev.states_seq, '0' + MOTE_CONV_TOOL_EXECUTING);
    assert_true(run != NULL && run > ask);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    end_session();
}

/* A retry with nothing to retry (the last answer is complete) is refused
 * and sends nothing: sending would end the request with the model's own
 * finished answer (a prefill), and journal a second assistant record in
 * a row. After a failed request it is accepted. */
static void test_retry_needs_something_to_retry(void **state)
{
    struct mote_conv *c;

    (void)state;
    say_text("done", 8);
    say_text("again", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "retry", &c), 0);
    assert_int_equal(mote_conv_retry(c), MOTE_ERR_ALREADY); /* nothing said yet */
    assert_int_equal(mote_conv_send(c, "hi", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(count_kind("retry", "request"), 1);
    assert_int_equal(mote_conv_retry(c), MOTE_ERR_ALREADY);
    drive(c, 500);
    assert_int_equal(count_kind("retry", "request"), 1);
    assert_int_equal(count_kind("retry", "assistant"), 1);
    assert_int_equal(net.next, 1);
    end_session();
}

static void test_approval_always_is_kept(void **state)
{
    static const char *const in[] = {"{}"};
    struct mote_conv *c;

    (void)state;
    say_calls(NULL, 1, in);
    say_text("a", 8);
    say_calls(NULL, 1, in);
    say_text("b", 8);
    start_session();
    cc.approval = MOTE_APPROVE_ASK;
    ev.answer_at_once = true;
    ev.answer = MOTE_ANSWER_ALWAYS;
    assert_int_equal(mote_conv_create(&ses, &cc, "always", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(ev.approvals, 1);
    assert_int_equal(tool_runs, 1);
    end_session();
    /* Reopened (a new process): the tool is still allowed. */
    nscript = 0;
    say_calls(NULL, 1, in);
    say_text("b", 8);
    ev.answer_at_once = false;
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, "always", &c, NULL, NULL), 0);
    assert_int_equal(mote_conv_send(c, "again", 5), 0);
    drive(c, 500);
    assert_int_equal(ev.approvals, 1);
    assert_int_equal(tool_runs, 2);
    end_session();
}

/* A question never answered: a cancel shutdown closes the calls as
 * cancelled; a drain leaves the question pending, and it is asked again
 * after a restart - never taken as approved. */
static void test_approval_never_answered(void **state)
{
    static const char *const in[] = {"{}"};
    struct mote_shutdown_req req = {"quit", MOTE_SD_CANCEL, 1000, false};
    struct mote_shutdown_report rep;
    struct mote_conv *c;

    (void)state;
    say_calls(NULL, 1, in);
    say_calls(NULL, 1, in);
    start_session();
    cc.approval = MOTE_APPROVE_ASK;
    assert_int_equal(mote_conv_create(&ses, &cc, "never1", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_AWAITING_APPROVAL);
    assert_int_equal(mote_shutdown(&ses, &req, &rep), 0);
    assert_int_equal(ev.shutdown, 1);
    assert_false(rep.timed_out);
    assert_int_equal(tool_runs, 0);
    assert_int_equal(count_kind("never1", "cancel"), 1);
    assert_non_null(strstr(ev.last_result, "cancelled"));
    end_session();

    /* The drain. */
    memset(&ev, 0, sizeof(ev));
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "never2", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_AWAITING_APPROVAL);
    req.mode = MOTE_SD_DRAIN;
    req.reason = "SIGTERM";
    assert_int_equal(mote_shutdown(&ses, &req, &rep), 0);
    assert_int_equal(rep.conversations_marked, 1);
    assert_int_equal(tool_runs, 0);
    assert_int_equal(count_kind("never2", "mark"), 1);
    assert_int_equal(count_kind("never2", "tool_result"), 0);
    end_session();
    memset(&ev, 0, sizeof(ev));
    nscript = 0;
    say_text("done", 8);
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, NULL, &c, NULL, NULL), 0);
    assert_string_equal(mote_conv_id(c), "never2");
    drive(c, 500);
    assert_int_equal(ev.approvals, 1); /* asked again */
    assert_int_equal(mote_conv_state(c), MOTE_CONV_AWAITING_APPROVAL);
    assert_non_null(strstr(ev.recovery_text, "had not run"));
    assert_int_equal(tool_runs, 0);
    assert_int_equal(mote_conv_approve(c, ev.ask_id, MOTE_ANSWER_YES, NULL), 0);
    drive(c, 500);
    assert_int_equal(tool_runs, 1);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    end_session();
}

/* mote_shutdown with a tool that ignores its cancel: the timeout fires
 * and the report says what did not stop. */
static void test_shutdown_with_a_deaf_job(void **state)
{
    static const char *const in[] = {"{}"};
    enum mote_sd_mode modes[2] = {MOTE_SD_CANCEL, MOTE_SD_DRAIN};
    unsigned m;

    (void)state;
    for (m = 0; m < 2; m++) {
        struct mote_shutdown_req req = {"test", modes[m], 3000, false};
        struct mote_shutdown_report rep;
        struct mote_conv *c;
        uint32_t t0;

        memset(&ev, 0, sizeof(ev));
        nscript = 0;
        tool_runs = 0;
        say_calls(NULL, 1, in);
        tool_hangs = tool_deaf = true;
        start_session();
        assert_int_equal(mote_conv_create(&ses, &cc, m == 0 ? "deaf1" : "deaf2", &c), 0);
        assert_int_equal(mote_conv_send(c, "go", 2), 0);
        drive(c, 30);
        assert_int_equal(mote_conv_state(c), MOTE_CONV_TOOL_EXECUTING);
        assert_int_equal(tool_runs, 1);
        t0 = mote_loop_now(&loop);
        assert_int_equal(mote_shutdown(&ses, &req, &rep), 0);
        /* It waited for the timeout, then the grace, not forever. */
        assert_true(mote_loop_now(&loop) - t0 >= 3000);
        assert_true(mote_loop_now(&loop) - t0 < 3000 + MOTE_SHUTDOWN_GRACE_MS + 500);
        assert_true(rep.timed_out);
        assert_int_equal(rep.jobs_left, 1);
        assert_non_null(strstr(rep.left, "read_sensor"));
        assert_non_null(strstr(rep.cut, "read_sensor"));
        assert_int_equal(rep.conversations_marked, 1);
        assert_int_equal(ev.shutdown, 1);
        /* A second request changes nothing: it had finished. */
        assert_int_equal(mote_shutdown_begin(&ses, &req), MOTE_ERR_ALREADY);
        end_session();
        tool_hangs = tool_deaf = false;
    }
}

/* A forced request cuts the wait short. */
static void test_shutdown_forced(void **state)
{
    struct mote_shutdown_req req = {"SIGTERM", MOTE_SD_DRAIN, 60000, false};
    struct mote_conv *c;
    uint32_t t0;
    unsigned i;

    (void)state;
    say_stall();
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "forced", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 20);
    t0 = mote_loop_now(&loop);
    assert_int_equal(mote_shutdown_begin(&ses, &req), 0);
    assert_int_equal(mote_shutdown_begin(&ses, &req), 0); /* idempotent */
    for (i = 0; i < 3; i++)
        (void)mote_loop_poll(&loop, 10);
    assert_false(mote_shutdown_done(&ses));
    req.force = true;
    assert_int_equal(mote_shutdown_begin(&ses, &req), 0);
    for (i = 0; i < 20 && !mote_shutdown_done(&ses); i++)
        (void)mote_loop_poll(&loop, 10);
    assert_true(mote_shutdown_done(&ses));
    assert_true(mote_loop_now(&loop) - t0 < 1000);
    assert_true(ev.report.forced);
    assert_int_equal(count_kind("forced", "mark"), 1);
    end_session();
}

/* mote_shutdown joins a shutdown a signal began as it is: a drain stays a
 * drain (the running tool may finish until the timeout), whatever mode
 * the program's own request names; only force would cut it. */
static void test_shutdown_joins_a_drain(void **state)
{
    static const char *const in[] = {"{}"};
    const struct mote_shutdown_req term = {.reason = "SIGTERM", .mode = MOTE_SD_DRAIN,
                                           .timeout_ms = 3000};
    const struct mote_shutdown_req done = {.reason = "done", .mode = MOTE_SD_CANCEL,
                                           .timeout_ms = 5000};
    struct mote_shutdown_report rep;
    struct mote_conv *c;
    uint32_t t0;

    (void)state;
    say_calls(NULL, 1, in);
    tool_hangs = true; /* runs until cancelled */
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "join", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 30);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_TOOL_EXECUTING);
    t0 = mote_loop_now(&loop);
    assert_int_equal(mote_shutdown_begin(&ses, &term), 0); /* the signal's callback */
    assert_int_equal(mote_shutdown(&ses, &done, &rep), 0); /* the program's top level */
    assert_int_equal(rep.mode, MOTE_SD_DRAIN);
    assert_string_equal(rep.reason, "SIGTERM");
    assert_true(mote_loop_now(&loop) - t0 >= 3000); /* the drain's whole timeout */
    assert_int_equal(ev.cancelled, 0);             /* never turned into a cancel */
    assert_true(rep.timed_out);
    assert_int_equal(rep.conversations_marked, 1);
    end_session();
    tool_hangs = false;
}

/* The configuration's defaults; an https:// URL on a port without TLS is
 * refused when the conversation is configured, naming the build option;
 * mote_conv_recovery says what opening decided. */
static void test_conf_defaults_tls_refusal_and_recovery(void **state)
{
    struct mote_session_conf sc;
    struct mote_conv_conf dc;
    struct mote_llm_conf tls_llm;
    struct mote_conv *c;

    (void)state;
    memset(&sc, 0x5A, sizeof(sc));
    mote_session_conf_defaults(&sc);
    assert_null(sc.on_event);
    assert_int_equal(sc.tool_timeout_ms, 0);
    memset(&dc, 0x5A, sizeof(dc));
    mote_conv_conf_defaults(&dc);
    assert_int_equal(dc.approval, MOTE_APPROVE_ASK);
    assert_int_equal(dc.max_tokens, 0);
    assert_false(dc.tools);
    assert_null(dc.rules);
    say_stall();
    start_session();
    tls_llm = llm;
    tls_llm.base_url = "https://model.test";
    dc.llm = &tls_llm;
    dc.model = "m";
    assert_int_equal(mote_conv_create(&ses, &dc, "tls", &c), MOTE_ERR_NOTSUP);
    assert_null(c);
    assert_non_null(strstr(mote_session_error(&ses), "TLS=none"));
    assert_non_null(strstr(mote_session_error(&ses), "TLS=mbedtls"));
    assert_int_equal(mote_conv_open(&ses, &dc, "tls", &c, NULL, NULL), MOTE_ERR_NOTSUP);
    /* http:// is fine, and clears the message */
    assert_int_equal(mote_conv_create(&ses, &cc, "rec", &c), 0);
    assert_string_equal(mote_session_error(&ses), "");
    assert_int_equal(mote_conv_recovery(c), MOTE_RECOVER_IDLE);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 5);
    assert_true(mote_conv_busy(c)); /* the answer stalls: the process dies here */
    end_session();
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, "rec", &c, NULL, NULL), 0);
    assert_int_equal(mote_conv_recovery(c), MOTE_RECOVER_CONTINUE);
    end_session();
}

/* A conversation opened in steps (mote_conv_load_*): a budget of bytes
 * per call, the slot and the lock kept from the begin (nobody else opens
 * it meanwhile, it is not found until done), the same recovery as
 * mote_conv_open; a load ended half way leaves nothing held. */
static void test_open_in_steps(void **state)
{
    struct mote_conv_load ld;
    struct mote_conv *c, *other;
    uint32_t bad = 7;
    bool repaired = true;
    unsigned steps = 0;
    int rc;

    (void)state;
    say_text("one, a longer answer to make the journal longer", 8);
    say_text("two, another answer of some length", 8);
    say_stall();
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "steps", &c), 0);
    assert_int_equal(mote_conv_send(c, "first", 5), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_send(c, "second", 6), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_send(c, "third", 5), 0);
    drive(c, 5);
    assert_true(mote_conv_busy(c)); /* the answer stalls: the process dies here */
    end_session();
    start_session();
    /* ended half way: the lock and the slot go with it */
    assert_int_equal(mote_conv_load_begin(&ses, &cc, "steps", &ld), 0);
    assert_int_equal(mote_conv_load_step(&ld, 64, &c, &bad, &repaired), 1);
    assert_null(c);
    mote_conv_load_end(&ld);
    mote_conv_load_end(&ld); /* (again: nothing) */
    /* to the end, a few records a call */
    assert_int_equal(mote_conv_load_begin(&ses, &cc, "steps", &ld), 0);
    assert_int_equal(mote_conv_load_begin(&ses, &cc, "steps", &(struct mote_conv_load){0}),
                     MOTE_ERR_BUSY);
    assert_int_equal(mote_conv_open(&ses, &cc, "steps", &other, NULL, NULL), MOTE_ERR_BUSY);
    do {
        assert_null(mote_conv_find(&ses, "steps"));
        rc = mote_conv_load_step(&ld, 16, &c, &bad, &repaired); /* a record a call */
        steps++;
    } while (rc == 1 && steps < 1000);
    assert_int_equal(rc, 0);
    assert_true(steps >= 9); /* open, and 3 x (user, request), 2 answers */
    assert_ptr_equal(mote_conv_find(&ses, "steps"), c);
    assert_int_equal(bad, 0);
    assert_false(repaired);
    assert_int_equal(mote_conv_recovery(c), MOTE_RECOVER_CONTINUE);
    assert_int_equal(mote_conv_load_step(&ld, 64, &c, NULL, NULL), MOTE_ERR_BADF);
    mote_conv_load_end(&ld); /* (finished: nothing) */
    assert_int_equal(count_kind("steps", "user"), 3);
    end_session();
    /* the same decision in one call */
    start_session();
    assert_int_equal(mote_conv_open(&ses, &cc, "steps", &c, &bad, &repaired), 0);
    assert_int_equal(mote_conv_recovery(c), MOTE_RECOVER_CONTINUE);
    end_session();
}

/* Answers longer than a journal record, and more tool input than the
 * arena holds at once: nothing is cut, everything reads back. */
static void test_long_answers_are_journaled_whole(void **state)
{
    static char text[100000], inputs[5][15000];
    const char *in[5];
    static char got[120000];
    struct mote_part p;
    struct mote_conv *c;
    size_t got_len = 0;
    unsigned i;

    (void)state;
    for (i = 0; i < sizeof(text) - 1; i++)
        text[i] = (char)('a' + i % 26);
    for (i = 0; i < 5; i++) {
        memset(inputs[i], 'x', sizeof(inputs[i]) - 1);
        memcpy(inputs[i], "{\"unit\":\"", 9);
        inputs[i][sizeof(inputs[i]) - 3] = '"';
        inputs[i][sizeof(inputs[i]) - 2] = '}';
        inputs[i][sizeof(inputs[i]) - 1] = '\0';
        in[i] = inputs[i];
    }
    say_text(text, 1000);
    say_calls(NULL, 5, in);
    say_text("done", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "long", &c), 0);
    assert_int_equal(mote_conv_send(c, "write a lot", 11), 0);
    drive(c, 5000);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_true(count_kind("long", "text") >= 1);
    assert_int_equal(mote_conv_send(c, "now five calls", 14), 0);
    drive(c, 5000);
    assert_int_equal(ev.errors, 0);
    assert_int_equal(tool_runs, 5);
    assert_string_equal(tool_input, inputs[4]);
    assert_true(count_kind("long", "call") >= 1);
    /* The journal gives the whole first answer back, in order. */
    for (i = 0;; i++) {
        int rc = mote_journal_parts(&c->jr, i, &p);

        assert_true(rc >= 0);
        if (rc == 0)
            break;
        if (p.role == MOTE_ROLE_ASSISTANT && p.type == MOTE_PART_TEXT && got_len < sizeof(text)) {
            assert_true(got_len + p.text_len < sizeof(got));
            memcpy(got + got_len, p.text, p.text_len);
            got_len += p.text_len;
        }
    }
    assert_true(got_len >= sizeof(text) - 1);
    assert_memory_equal(got, text, sizeof(text) - 1);
    end_session();
}

/* A power cut at every journal write of a tool round; each time, the
 * conversation reopens with the right recovery and ends settled, and the
 * tool never runs twice. */
/* ---- power cuts ---- */

/* The first life of a power-cut sweep: a fresh port, the model's answers
 * `script` says, conversation `id` created and sent `prompt`, the loop
 * driven for `ms`, the power cut at write `n`. Returns false when the
 * whole round fit before write n (the sweep is over). */
static bool cut_first_life(unsigned n, void (*script_fn)(void), const char *id,
                           const char *prompt, unsigned ms)
{
    struct mote_conv *c;
    int rc;

    mote_tport_deinit(&tp);
    mote_tport_init(&tp, 1000);
    memset(&ev, 0, sizeof(ev));
    tool_runs = 0;
    nscript = 0;
    script_fn();
    start_session();
    mote_tport_cut_at(&tp, n);
    rc = mote_conv_create(&ses, &cc, id, &c);
    if (rc == 0 && mote_conv_send(c, prompt, strlen(prompt)) == 0)
        drive(c, ms);
    end_session();
    return tp.power_off;
}

/* The next life: the power back (`mode`: what the cut did to the write
 * under way), the answers `script` says, conversation `id` opened again
 * from what is durable. Returns it, or NULL (the session ended) when the
 * cut came while its journal was being made: nothing was acknowledged,
 * nothing is to recover. */
static struct mote_conv *cut_next_life(enum mote_tport_cut mode, void (*script_fn)(void),
                                       const char *id)
{
    struct mote_conv *c;
    int rc;

    mote_tport_power_restore(&tp, mode);
    memset(&ev, 0, sizeof(ev));
    nscript = 0;
    script_fn();
    start_session();
    rc = mote_conv_open(&ses, &cc, id, &c, NULL, NULL);
    if (rc == MOTE_ERR_NOENT || rc == MOTE_ERR_CORRUPT) {
        assert_null(c);
        end_session();
        return NULL;
    }
    assert_int_equal(rc, 0);
    return c;
}

static void warm_first(void)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};

    say_calls("Let me look.", 1, in);
    say_text("It is 21.5 C.", 4);
}

static void warm_next(void)
{
    say_text("It is 21.5 C.", 4);
    say_text("again", 4);
    say_text("again", 4);
}

static void test_power_cut_at_every_write(void **state)
{
    enum mote_tport_cut mode;
    unsigned cuts = 0, resumed = 0, interrupted = 0, continued = 0;

    (void)state;
    for (mode = MOTE_TP_CUT_DROP; mode <= MOTE_TP_CUT_ZERO; mode++) {
        unsigned n;

        for (n = 1; n < 60; n++) {
            struct mote_conv *c;
            struct mote_recovery r;

            if (!cut_first_life(n, warm_first, "cut", "how warm?", 500))
                break; /* the whole round fit before write n */
            cuts++;
            /* A new life: what is durable is all there is. */
            c = cut_next_life(mode, warm_next, "cut");
            if (c == NULL) {
                assert_int_equal(tool_runs, 0);
                continue;
            }
            resumed += strstr(ev.recovery_text, "had not run") != NULL;
            drive(c, 1000);
            resumed += strstr(ev.recovery_text, "had not run") != NULL;
            interrupted += strstr(ev.recovery_text, "interrupted while a tool ran") != NULL;
            continued += strstr(ev.recovery_text, "continuing") != NULL;
            assert_true(mote_conv_state(c) == MOTE_CONV_IDLE ||
                        mote_conv_state(c) == MOTE_CONV_ERROR);
            assert_true(tool_runs <= 1); /* at most once, whatever happened */
            assert_int_equal(ev.fatal, 0);
            /* Settled: every call has its result, nothing is due. */
            assert_int_equal(mote_recover(&c->jr, &r), 0);
            assert_int_equal(r.nmissing, 0);
            assert_int_equal(r.action, MOTE_RECOVER_IDLE);
            end_session();
        }
    }
    printf("  power cuts: %u; reopened by continuing %u, resuming calls %u, closing an "
           "interrupted tool %u\n",
           cuts, continued, resumed, interrupted);
    assert_true(cuts >= 4 * 6);
    assert_true(continued > 0 && interrupted > 0);
}

/* Input fragments of parallel calls that come interleaved (OpenAI keys
 * them by index; blocks may too): each call gets its own input, whole,
 * whichever call a fragment is for. */
static void test_interleaved_inputs_go_to_their_call(void **state)
{
    static const char *const in[] = {"{\"unit\":\"alpha-first\"}", "{\"unit\":\"beta-second\"}",
                                      "{\"unit\":\"gamma-third\"}"};
    struct mote_conv *c;

    (void)state;
    interleave = true;
    say_calls(NULL, 3, in);
    say_text("all three", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "inter", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(ev.errors, 0);
    assert_int_equal(tool_runs, 3);
    assert_string_equal(tool_input, in[2]);
    assert_non_null(strstr(net.requests[1], "\"input\":{\"unit\":\"alpha-first\"}"));
    assert_non_null(strstr(net.requests[1], "\"input\":{\"unit\":\"beta-second\"}"));
    assert_non_null(strstr(net.requests[1], "\"input\":{\"unit\":\"gamma-third\"}"));
    assert_null(strstr(net.requests[1], "larger than"));
    end_session();
}

/* Calls that came without an id, in two answers of one conversation: the
 * ids made for them differ (a request holding an id twice is refused). */
static void test_ids_made_per_answer(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    char first[64] = "", second[64] = "";
    const char *p;
    struct mote_conv *c;

    (void)state;
    no_ids = true;
    say_calls(NULL, 1, in); /* the same answer twice, byte for byte */
    say_calls(NULL, 1, in);
    say_text("ok", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "ids", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(tool_runs, 2);
    p = strstr(net.requests[2], "\"id\":\"call_mote_");
    assert_non_null(p);
    snprintf(first, sizeof(first), "%.26s", p + 6);
    p = strstr(p + 1, "\"id\":\"call_mote_");
    assert_non_null(p);
    snprintf(second, sizeof(second), "%.26s", p + 6);
    assert_string_not_equal(first, second);
    end_session();
}

/* Every tool_use of request `k` has its tool_result (the body's blocks
 * counted; the calls are read_sensor's). */
static void request_answers_every_call(unsigned k, unsigned want)
{
    assert_true(k < net.nrequests);
    assert_int_equal(count_in(net.requests[k], "\"type\":\"tool_use\""), want);
    assert_int_equal(count_in(net.requests[k], "\"type\":\"tool_result\""), want);
}

/* More calls in one answer than the table holds: the first
 * MOTE_LLM_MAX_TOOL_CALLS run, every other is answered unrun with a
 * result asking for it again, and the turn goes on. */
#define OVER 3
static char over_inputs[MOTE_LLM_MAX_TOOL_CALLS + OVER][40];
static const char *over_in[MOTE_LLM_MAX_TOOL_CALLS + OVER];

static void say_many_calls(void)
{
    unsigned i;

    for (i = 0; i < MOTE_LLM_MAX_TOOL_CALLS + OVER; i++) {
        snprintf(over_inputs[i], sizeof(over_inputs[i]), "{\"unit\":\"u%u\"}", i);
        over_in[i] = over_inputs[i];
    }
    say_calls("Twelve things at once.", MOTE_LLM_MAX_TOOL_CALLS + OVER, over_in);
}

static void test_calls_past_the_table_are_answered(void **state)
{
    struct mote_conv *c;
    struct mote_recovery r;

    (void)state;
    say_many_calls();
    say_text("done all I could", 8);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "many", &c), 0);
    assert_int_equal(mote_conv_send(c, "do twelve things", 16), 0);
    drive(c, 1000);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(ev.errors, 0);
    assert_int_equal(ev.turn_ends, 1);
    assert_int_equal(tool_runs, MOTE_LLM_MAX_TOOL_CALLS);
    assert_int_equal(count_kind("many", "tool_result"), MOTE_LLM_MAX_TOOL_CALLS + OVER);
    assert_int_equal(count_kind("many", "call"), MOTE_LLM_MAX_TOOL_CALLS + OVER);
    request_answers_every_call(1, MOTE_LLM_MAX_TOOL_CALLS + OVER);
    assert_int_equal(count_in(net.requests[1], "call it again"), OVER);
    /* the inputs of the calls not run are kept as the model sent them */
    assert_non_null(strstr(net.requests[1], "\"input\":{\"unit\":\"u10\"}"));
    assert_true(ev.warnings >= 1);
    assert_non_null(strstr(ev.notes, "were not run"));
    assert_int_equal(mote_recover(&c->jr, &r), 0);
    assert_int_equal(r.action, MOTE_RECOVER_IDLE);
    end_session();
}

/* A power cut at every write of such a round: each time it reopens and
 * settles with every call answered, the tools run at most once, and no
 * request sent carries a call without its result. */
static void many_first(void)
{
    say_many_calls();
    say_text("done", 4);
}

static void many_next(void)
{
    say_text("done", 4);
    say_text("again", 4);
}

static void test_calls_past_the_table_power_cuts(void **state)
{
    enum mote_tport_cut mode;
    unsigned cuts = 0, resumed = 0;

    (void)state;
    for (mode = MOTE_TP_CUT_DROP; mode <= MOTE_TP_CUT_ZERO; mode += 2) {
        unsigned n;

        for (n = 1; n < 80; n++) {
            struct mote_conv *c;
            struct mote_recovery r;
            unsigned k;

            if (!cut_first_life(n, many_first, "cutmany", "go", 1000))
                break;
            cuts++;
            c = cut_next_life(mode, many_next, "cutmany");
            if (c == NULL)
                continue;
            resumed += c->rec.over.left > 0;
            drive(c, 1000);
            assert_int_equal(ev.fatal, 0);
            assert_true(tool_runs <= MOTE_LLM_MAX_TOOL_CALLS); /* in both lives: none twice */
            assert_int_equal(mote_recover(&c->jr, &r), 0);
            assert_int_equal(r.nmissing, 0);
            assert_int_equal(r.over.left, 0);
            for (k = 0; k < net.nrequests; k++)
                assert_int_equal(count_in(net.requests[k], "\"type\":\"tool_use\""),
                                 count_in(net.requests[k], "\"type\":\"tool_result\""));
            end_session();
        }
    }
    printf("  power cuts: %u; reopened with calls past the table unanswered: %u\n", cuts,
           resumed);
    assert_true(cuts >= 2 * (MOTE_LLM_MAX_TOOL_CALLS + OVER));
    assert_true(resumed > 0);
}

/* Stop reasons: the token limit inside a tool call's input says so (not
 * "malformed"), and pause_turn goes on by itself. */
static void test_stop_reasons(void **state)
{
    static const char *const in[] = {"{\"unit\":\"C\"}"};
    struct mote_conv *c;

    (void)state;
    stop_reason = "max_tokens";
    cut_last_input = true;
    say_calls("I will read", 1, in);
    stop_reason = NULL;
    cut_last_input = false;
    say_text("ok", 8);
    stop_reason = "pause_turn";
    say_text("first half, ", 4);
    stop_reason = NULL;
    say_text("second half.", 4);
    start_session();
    assert_int_equal(mote_conv_create(&ses, &cc, "stops", &c), 0);
    assert_int_equal(mote_conv_send(c, "go", 2), 0);
    drive(c, 500);
    assert_int_equal(tool_runs, 0);
    assert_non_null(strstr(ev.last_result, "max_tokens"));
    assert_null(strstr(ev.last_result, "not one valid JSON"));
    assert_non_null(strstr(ev.notes, "token limit"));
    /* pause_turn: the request is made again without the user. */
    assert_int_equal(mote_conv_send(c, "long task", 9), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(net.connects, 4);
    assert_non_null(strstr(net.requests[3], "first half"));
    assert_int_equal(ev.turn_ends, 2);
    /* Usage is journaled with each answer. */
    assert_true(count_kind("stops", "assistant") >= 4);
    assert_int_equal(c->total.input_tokens, 40);
    end_session();
}

/* A conversation near its context window is summarised; later requests
 * start from the summary; the whole history stays on disk. */
static void test_compaction(void **state)
{
    static const char *const in[] = {"{}"};
    struct mote_conv *c;
    struct mote_recovery r;

    (void)state;
    usage_in = 900;           /* of a 1000-token window */
    say_text("a long answer", 4);
    usage_in = 10;
    say_text("SUMMARY: the user asked for a long answer.", 8);
    usage_in = 950;
    say_calls("looking", 1, in); /* mid-turn: full after the tool round */
    usage_in = 10;
    say_text("SUMMARY TWO.", 8);
    say_text("done", 8);
    start_session();
    cc.context_window = 1000;
    assert_int_equal(mote_conv_create(&ses, &cc, "compact", &c), 0);
    assert_int_equal(mote_conv_send(c, "first question", 14), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(net.connects, 2); /* the answer, then the summary */
    assert_non_null(strstr(net.requests[1], "Summarise our conversation"));
    assert_non_null(strstr(net.requests[1], "first question"));
    assert_int_equal(count_kind("compact", "compact"), 1);
    assert_non_null(strstr(ev.notes, "compacted"));
    assert_int_equal(ev.text, 4); /* the answer's 4 pieces: the summary is not shown */
    /* The next request starts from the summary, not the old messages. */
    assert_int_equal(mote_conv_send(c, "second question", 15), 0);
    drive(c, 500);
    assert_non_null(strstr(net.requests[2], "SUMMARY: the user asked"));
    assert_null(strstr(net.requests[2], "first question"));
    /* Mid-turn: after the tool round, summarised, then the request goes on. */
    assert_int_equal(tool_runs, 1);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(count_kind("compact", "compact"), 2);
    assert_non_null(strstr(net.requests[4], "SUMMARY TWO."));
    assert_null(strstr(net.requests[4], "SUMMARY: the user asked"));
    /* By hand, and the state on disk is settled. */
    assert_int_equal(mote_conv_compact(c), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_ERROR); /* no model answer left */
    assert_int_equal(mote_recover(&c->jr, &r), 0);
    assert_int_equal(r.compactions, 2);
    end_session();
}

/* Killed (power cut) at every write around a compaction: the conversation
 * reopens settled, or goes on, and requests stay valid. */
static void long_first(void)
{
    usage_in = 900;
    say_text("a long answer", 4);
    usage_in = 10;
    say_text("SUMMARY.", 8);
    cc.context_window = 1000;
}

static void again_twice(void)
{
    say_text("again", 4);
    say_text("again", 4);
}

static void test_compaction_power_cuts(void **state)
{
    unsigned n, cuts = 0;

    (void)state;
    for (n = 1; n < 40; n++) {
        struct mote_conv *c;
        struct mote_recovery r;

        if (!cut_first_life(n, long_first, "cc", "q", 500))
            break;
        cuts++;
        c = cut_next_life(MOTE_TP_CUT_TORN, again_twice, "cc");
        if (c == NULL)
            continue;
        drive(c, 500);
        assert_int_equal(ev.fatal, 0);
        assert_int_equal(mote_recover(&c->jr, &r), 0);
        assert_int_equal(r.action, MOTE_RECOVER_IDLE);
        end_session();
    }
    assert_true(cuts >= 5);
}

/* A long output of a run that keeps its end (the shell's): the start up
 * to a whole line, a line counting the bytes dropped, and the end from a
 * whole line to the last byte, all within the run's buffer; whatever the
 * sizes of the pieces it came in, and with characters of two bytes that
 * the cut must not split. */
static void test_tool_output_keeps_its_end(void **state)
{
    static struct mote_tool_run run;
    static char all[200000];
    size_t total = 0, at = 0, head, tail, piece = 1;
    uint64_t dropped;
    const char *mark, *after;
    unsigned i;

    (void)state;
    for (i = 0; i < 10000; i++)
        total += (size_t)snprintf(all + total, sizeof(all) - total, "line %06u \xc3\xa9\n", i);
    memset(&run, 0, sizeof(run));
    run.out = run.out_buf;
    run.out_cap = MOTE_TOOL_OUTPUT_MAX;
    run.out_keep_end = true;
    while (at < total) {
        size_t n = piece < total - at ? piece : total - at;

        mote_tool_out(&run, all + at, n);
        at += n;
        piece = (piece * 7 + 3) % 5000 + 1;
    }
    mote_tool_note(&run, "[exit status 1]", 0, NULL);
    assert_true(run.out_len <= sizeof(run.out_buf));
    run.out[run.out_len] = '\0';
    mark = strstr(run.out, "[... ");
    assert_non_null(mark);
    head = (size_t)(mark - run.out);
    assert_true(head > MOTE_TOOL_OUTPUT_MAX / 4 && head <= MOTE_TOOL_OUTPUT_MAX / 2);
    assert_memory_equal(run.out, all, head);
    assert_true(all[head - 1] == '\n');
    dropped = strtoull(mark + 5, NULL, 10);
    assert_true(dropped == run.out_dropped);
    after = strstr(mark, " bytes of output dropped here ...]\n");
    assert_non_null(after);
    after += strlen(" bytes of output dropped here ...]\n");
    tail = run.out_len - (size_t)(after - run.out) - strlen("[exit status 1]");
    assert_string_equal(run.out + run.out_len - strlen("[exit status 1]"), "[exit status 1]");
    assert_true(tail > MOTE_TOOL_OUTPUT_MAX / 4);
    assert_memory_equal(after, all + total - tail, tail); /* the very end */
    assert_true(all[total - tail - 1] == '\n');            /* from a whole line */
    assert_true(head + tail + dropped == total);
    /* One long line of two-byte characters: cut between characters. */
    memset(&run, 0, sizeof(run));
    run.out = run.out_buf;
    run.out_cap = MOTE_TOOL_OUTPUT_MAX;
    run.out_keep_end = true;
    for (i = 0; i < 50001; i++)
        mote_tool_out(&run, i == 0 ? "x" : "\xc3\xa9", i == 0 ? 1 : 2);
    mote_tool_note(&run, "[exit status 0]", 0, NULL);
    run.out[run.out_len] = '\0';
    mark = strstr(run.out, "\n[... ");
    assert_non_null(mark);
    head = (size_t)(mark - run.out);
    assert_true(head % 2 == 1 && (unsigned char)run.out[head - 1] == 0xa9);
    after = strstr(mark, "...]\n") + 5;
    assert_true((unsigned char)after[0] == 0xc3);
    tail = (size_t)(strstr(after, "\n[exit status 0]") - after);
    assert_true(tail % 2 == 0 && tail > MOTE_TOOL_OUTPUT_MAX / 4);
    assert_true(head + tail + run.out_dropped == 100001);
}

/* An embedder's tool reads its arguments as C strings: one holding a NUL
 * (\u0000) is refused, never handed over as the part before it. */
static void test_tool_arg_refuses_a_nul(void **state)
{
    static struct mote_tool_run run;
    static const char in[] = "{\"path\":\"/tmp/a\\u0000/etc/passwd\",\"ok\":\"x\\u0041\"}";
    char out[64];

    (void)state;
    memset(&run, 0, sizeof(run));
    memcpy(run.in_buf, in, sizeof(in));
    assert_true(mote_json_parse(&run.json, run.in_buf, sizeof(in) - 1) > 0);
    assert_int_equal(mote_tool_arg(&run, "path", out, sizeof(out)), MOTE_ERR_BADMSG);
    assert_string_equal(out, "");
    assert_int_equal(mote_tool_arg(&run, "ok", out, sizeof(out)), 2);
    assert_string_equal(out, "xA");
}

/* A calls conversation (mote serve's MCP server): each call is an
 * assistant record with one call, journaled canonically before it is
 * asked about or run; its result ends the turn and no model is asked;
 * chat operations are refused; it never becomes STATE/current; the
 * policy asks as for a model's call; an ambiguous input is refused whole. */
static void test_calls_conversation(void **state)
{
    const struct mote_tport_file *f;
    struct mote_conv *c, *d;
    char id[40], id2[40];

    (void)state;
    start_session();
    assert_int_equal(mote_conv_create_calls(&ses, &cc, "mcp-a", &c), 0);
    assert_true(mote_conv_calls(c));
    assert_null(mote_tport_file(&tp, "current"));
    assert_int_equal(mote_conv_call(c, "read_sensor", "{ \"unit\" : \"C\" }", 16, id, sizeof(id)),
                     0);
    assert_int_equal(strncmp(id, "call_mote_", 10), 0);
    assert_int_equal(strlen(id), 26);
    assert_int_equal(count_kind("mcp-a", "assistant"), 1); /* durable before this returned */
    assert_int_equal(mote_conv_call(c, "read_sensor", NULL, 0, id2, sizeof(id2)), MOTE_ERR_BUSY);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_IDLE);
    assert_int_equal(tool_runs, 1);
    assert_string_equal(tool_input, "{\"unit\":\"C\"}");
    assert_string_equal(ev.last_result, "sensor: 21.5 C");
    assert_int_equal(ev.turn_ends, 1);
    assert_int_equal(net.connects, 0); /* no model request */
    assert_int_equal(count_kind("mcp-a", "tool_start"), 1);
    assert_int_equal(count_kind("mcp-a", "tool_result"), 1);
    assert_int_equal(count_kind("mcp-a", "request"), 0);
    f = mote_tport_file(&tp, "conversations/mcp-a.jsonl");
    assert_non_null(memmem(f->data, f->len, "{\"t\":\"open\",\"v\":3,\"id\":\"mcp-a\",\"kind\":"
                                             "\"calls\"}",
                           46));
    /* chat operations are refused, nothing written */
    assert_int_equal(mote_conv_send(c, "hello", 5), MOTE_ERR_NOTSUP);
    assert_int_equal(mote_conv_retry(c), MOTE_ERR_NOTSUP);
    assert_int_equal(mote_conv_compact(c), MOTE_ERR_NOTSUP);
    assert_int_equal(count_kind("mcp-a", "user"), 0);
    /* an input every reader would not read alike is refused whole */
    assert_int_equal(mote_conv_call(c, "read_sensor", "{\"a\":1,\"a\":2}", 13, id2, sizeof(id2)),
                     MOTE_ERR_BADMSG);
    assert_non_null(strstr(c->last_error, "duplicate"));
    assert_int_equal(mote_conv_call(c, "read_sensor", "{\"a\":\"x\\u0000y\"}", 17, id2,
                                    sizeof(id2)),
                     MOTE_ERR_BADMSG);
    assert_int_equal(mote_conv_call(c, "read_sensor", "[1]", 3, id2, sizeof(id2)),
                     MOTE_ERR_BADMSG);
    assert_int_equal(mote_conv_call(c, "read sensor", NULL, 0, id2, sizeof(id2)), MOTE_ERR_INVAL);
    assert_int_equal(count_kind("mcp-a", "assistant"), 1);
    /* an unknown tool is answered as an error result */
    assert_int_equal(mote_conv_call(c, "nope", NULL, 0, id2, sizeof(id2)), 0);
    drive(c, 500);
    assert_non_null(strstr(ev.last_result, "unknown tool"));
    assert_int_equal(tool_runs, 1);
    /* the policy asks, as for a model's call */
    cc.approval = MOTE_APPROVE_ASK;
    assert_int_equal(mote_conv_close(c), 0);
    assert_int_equal(mote_conv_open(&ses, &cc, "mcp-a", &c, NULL, NULL), 0);
    assert_true(mote_conv_calls(c));
    assert_null(mote_tport_file(&tp, "current"));
    assert_int_equal(mote_conv_call(c, "read_sensor", NULL, 0, id2, sizeof(id2)), 0);
    drive(c, 500);
    assert_int_equal(mote_conv_state(c), MOTE_CONV_AWAITING_APPROVAL);
    assert_int_equal(ev.approvals, 1);
    assert_string_equal(ev.asked, "{}");
    assert_int_equal(mote_conv_approve(c, ev.ask_id, MOTE_ANSWER_YES, NULL), 0);
    drive(c, 500);
    assert_int_equal(tool_runs, 2);
    assert_int_equal(ev.turn_ends, 3);
    /* a chat conversation takes no call */
    assert_int_equal(mote_conv_create(&ses, &cc, "chat", &d), 0);
    assert_int_equal(mote_conv_call(d, "read_sensor", NULL, 0, id2, sizeof(id2)), MOTE_ERR_NOTSUP);
    end_session();
}

/* kill -9 at each moment of a call: reopened, a call that began gets the
 * interrupted result, one that had not begun (its question open) a "not
 * run" one; neither ever runs again, and nothing is sent to a model. */
static void test_calls_recovery(void **state)
{
    struct mote_conv *c;
    struct mote_recovery r;
    char id[40];
    unsigned round;

    (void)state;
    for (round = 0; round < 3; round++) {
        mote_tport_deinit(&tp);
        mote_tport_init(&tp, 1000);
        memset(&ev, 0, sizeof(ev));
        tool_runs = 0;
        tool_hangs = round == 0;
        cc.approval = round == 1 ? MOTE_APPROVE_ASK : MOTE_APPROVE_ALLOW;
        start_session();
        assert_int_equal(mote_conv_create_calls(&ses, &cc, "mcp-k", &c), 0);
        assert_int_equal(mote_conv_call(c, "read_sensor", NULL, 0, id, sizeof(id)), 0);
        for (unsigned i = 0; i < 20; i++)
            (void)mote_loop_poll(&loop, 0);
        assert_int_equal(tool_runs, round == 1 ? 0u : 1u);
        end_session(); /* killed: memory gone, storage stays */
        memset(&ev, 0, sizeof(ev));
        tool_hangs = false;
        start_session();
        assert_int_equal(mote_conv_open(&ses, &cc, "mcp-k", &c, NULL, NULL), 0);
        drive(c, 200);
        assert_int_equal(tool_runs, round == 1 ? 0u : 1u); /* never again */
        assert_int_equal(net.connects, 0);
        assert_int_equal(ev.approvals, 0);
        if (round == 0)
            assert_non_null(strstr(ev.recovery_text, "interrupted while it ran"));
        else if (round == 1)
            assert_non_null(strstr(ev.recovery_text, "had not started"));
        else
            assert_int_equal(ev.recovery, 0); /* it had finished */
        assert_int_equal(mote_recover(&c->jr, &r), 0);
        assert_int_equal(r.nmissing, 0);
        assert_int_equal(r.action, MOTE_RECOVER_IDLE);
        assert_int_equal(count_kind("mcp-k", "tool_result"), 1);
        assert_int_equal(count_kind("mcp-k", "request"), 0);
        assert_int_equal(count_kind("mcp-k", "auto"), 0);
        end_session();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tool_output_keeps_its_end),
        cmocka_unit_test(test_tool_arg_refuses_a_nul),
        cmocka_unit_test_setup_teardown(test_tool_round, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tool_names_unique_and_resolved_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_mcp_tool_gone_while_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optional_port_members_may_be_missing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_empty_tool_input_is_an_empty_object, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prune_oldest_finished_by_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_stream_while_a_third_is_cancelled, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_approval_yes_no_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_question_never_shows_what_was_not_read, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_approval_always_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_asked_call_is_never_told_executing_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_retry_needs_something_to_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_in_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_approval_never_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_with_a_deaf_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_forced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_joins_a_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conf_defaults_tls_refusal_and_recovery, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_long_answers_are_journaled_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_at_every_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interleaved_inputs_go_to_their_call, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ids_made_per_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_past_the_table_are_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_past_the_table_power_cuts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_approval_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_holds_the_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_power_cuts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_conversation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_recovery, setup, teardown),
    };

    return cmocka_run_group_tests_name("agent", tests, NULL, NULL);
}
