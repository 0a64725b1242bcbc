/* test_port.c - a port missing a member is an error naming it,
 * never a crash - each member of the storage, network and TLS groups set
 * to NULL in turn, each feature that needs it exercised. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_client.h"
#include "mote/mote_journal.h"
#include "mote/mote_mcp.h"
#include "mote_tport.h"
#include "../one_part.h"

static struct mote_tport tp;
static struct mote_loop loop;
static struct mote_jbuf jbuf;
static struct mote_journal jr = {.buf = &jbuf};
static struct mote_session ses;

#define F(m) {offsetof(struct mote_port, m), #m}
static const struct {
    size_t off;
    const char *name;
} storage[] = {F(st_open), F(st_read), F(st_append), F(st_sync), F(st_size), F(st_truncate),
               F(st_close), F(st_write_atomic), F(st_list), F(st_remove), F(st_mkdir)},
  net[] = {F(net_resolve), F(net_resolve_result), F(net_resolve_end), F(net_connect),
           F(net_connect_done), F(net_send), F(net_recv), F(net_close)},
  tls[] = {F(tls_open), F(tls_handshake), F(tls_send), F(tls_recv), F(tls_close)},
  core[] = {F(now_ms), F(wait)},
  proc[] = {F(proc_spawn), F(proc_signal), F(proc_reap), F(pipe_read), F(pipe_write),
            F(pipe_close)},
  fs[] = {F(fs_stat), F(fs_open), F(fs_read), F(fs_close), F(fs_replace), F(fs_list)};

static void drop(struct mote_port *p, size_t off)
{
    void *none = NULL;

    memcpy((char *)p + off, &none, sizeof(none));
}

/* Stands in for TLS members the test port does not have: only their
 * presence is looked at (the call fails on the missing one first). */
static void present(void)
{
}

static void give(struct mote_port *p, size_t off)
{
    void (*fn)(void) = present;

    memcpy((char *)p + off, &fn, sizeof(fn));
}

static void on_event(void *arg, const struct mote_event *ev)
{
    (void)arg, (void)ev;
}

static void test_storage_members(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(storage) / sizeof(storage[0]); i++) {
        struct mote_port p;
        struct mote_session_conf sc;

        mote_tport_init(&tp, 0);
        p = tp.port;
        drop(&p, storage[i].off);
        assert_string_equal(mote_port_missing(&p, MOTE_PORT_STORAGE), storage[i].name);
        assert_null(mote_port_missing(&p, MOTE_PORT_CORE));
        assert_int_equal(mote_journal_create(&jr, &p, "c1"), MOTE_ERR_NOSYS);
        assert_int_equal(mote_journal_open(&jr, &p, "c1"), MOTE_ERR_NOSYS);
        assert_int_equal(mote_loop_init(&loop, &p), 0);
        memset(&sc, 0, sizeof(sc));
        sc.on_event = on_event;
        assert_int_equal(mote_session_init(&ses, &loop, &sc), MOTE_ERR_NOSYS);
        mote_loop_deinit(&loop);
        mote_tport_deinit(&tp);
    }
}

static void test_network_members(void **state)
{
    static struct mote_llm_call call;
    static struct mote_llm_conf conf;
    static struct mote_llm_req req;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(net) / sizeof(net[0]) + sizeof(tls) / sizeof(tls[0]); i++) {
        bool is_tls = i >= sizeof(net) / sizeof(net[0]);
        size_t off = is_tls ? tls[i - sizeof(net) / sizeof(net[0])].off : net[i].off;
        const char *name = is_tls ? tls[i - sizeof(net) / sizeof(net[0])].name : net[i].name;
        struct mote_port p;
        mote_job_id job;
        int turns = 0;

        static struct mote_tport_net tn;
        size_t k;

        mote_tport_init(&tp, 0);
        mote_tport_net_init(&tp, &tn, NULL, 0);
        p = tp.port;
        for (k = 0; k < sizeof(tls) / sizeof(tls[0]); k++)
            give(&p, tls[k].off);
        /* The call fails on the member dropped, and says which. */
        drop(&p, off);
        assert_int_equal(mote_loop_init(&loop, &p), 0);
        mote_llm_conf_defaults(&conf);
        conf.base_url = is_tls ? "https://model.test" : "http://model.test";
        conf.max_attempts = 1;
        memset(&req, 0, sizeof(req));
        req.model = "m";
        assert_int_equal(mote_llm_call_init(&call, &conf, &req, NULL, NULL), 0);
        assert_int_equal(mote_job_spawn(&loop, "llm", &mote_llm_call_ops, &call, NULL, &job), 0);
        while (mote_job_state(&loop, job) == MOTE_JOB_RUNNING && turns++ < 100)
            (void)mote_loop_poll(&loop, 10);
        assert_int_equal(mote_job_state(&loop, job), MOTE_JOB_FAILED);
        assert_non_null(strstr(mote_job_error(&loop, job), name));
        mote_loop_deinit(&loop);
        mote_tport_deinit(&tp);
    }
}

/* Stand-ins for the process and file members the test port lacks: a
 * feature whose group is incomplete must not call any of them (a call
 * fails the test), it must say what is missing. */
static int x_spawn(void *c, const char *const *a, const char *const *e, bool m, int f[3],
                   int64_t *pid)
{
    (void)c, (void)a, (void)e, (void)m, (void)f, (void)pid;
    fail_msg("proc_spawn called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_signal(void *c, int64_t pid, int w)
{
    (void)c, (void)pid, (void)w;
    fail_msg("proc_signal called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_reap(void *c, int64_t pid, int *st)
{
    (void)c, (void)pid, (void)st;
    fail_msg("proc_reap called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_pipe_io(void *c, int fd, void *b, size_t n)
{
    (void)c, (void)fd, (void)b, (void)n;
    fail_msg("pipe_read called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_pipe_write(void *c, int fd, const void *b, size_t n)
{
    (void)c, (void)fd, (void)b, (void)n;
    fail_msg("pipe_write called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static void x_pipe_close(void *c, int fd)
{
    (void)c, (void)fd;
    fail_msg("pipe_close called on an incomplete port");
}

static int x_stat(void *c, const char *path, struct mote_fs_stat *st)
{
    (void)c, (void)path, (void)st;
    fail_msg("fs_stat called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_open(void *c, const char *path)
{
    (void)c, (void)path;
    fail_msg("fs_open called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_read(void *c, int h, uint64_t off, void *b, size_t n)
{
    (void)c, (void)h, (void)off, (void)b, (void)n;
    fail_msg("fs_read called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static void x_close(void *c, int h)
{
    (void)c, (void)h;
    fail_msg("fs_close called on an incomplete port");
}

static int x_replace(void *c, const char *path, mote_produce_fn fn, void *arg)
{
    (void)c, (void)path, (void)fn, (void)arg;
    fail_msg("fs_replace called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static int x_list(void *c, const char *path, mote_fs_list_fn fn, void *arg)
{
    (void)c, (void)path, (void)fn, (void)arg;
    fail_msg("fs_list called on an incomplete port");
    return MOTE_ERR_NOSYS;
}

static void with_proc_and_fs(struct mote_port *p)
{
    p->proc_spawn = x_spawn;
    p->proc_signal = x_signal;
    p->proc_reap = x_reap;
    p->pipe_read = x_pipe_io;
    p->pipe_write = x_pipe_write;
    p->pipe_close = x_pipe_close;
    p->fs_stat = x_stat;
    p->fs_open = x_open;
    p->fs_read = x_read;
    p->fs_close = x_close;
    p->fs_replace = x_replace;
    p->fs_list = x_list;
}

static bool offered(const char *name)
{
    unsigned i;

    for (i = 0; i < ses.ntools; i++) {
        if (strcmp(ses.tools[i]->name, name) == 0)
            return true;
    }
    return false;
}

/* The loop needs now_ms and wait: without either, init says so. */
static void test_core_members(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(core) / sizeof(core[0]); i++) {
        struct mote_port p;

        mote_tport_init(&tp, 0);
        p = tp.port;
        drop(&p, core[i].off);
        assert_string_equal(mote_port_missing(&p, MOTE_PORT_CORE), core[i].name);
        assert_int_equal(mote_loop_init(&loop, &p), MOTE_ERR_NOSYS);
        mote_tport_deinit(&tp);
    }
}

/* A session on the test port with the process and file groups, less the
 * member at `off`, which mote_port_missing names for `group`. */
static void session_without(struct mote_port *p, size_t off, const char *name, unsigned group)
{
    struct mote_session_conf sc;

    mote_tport_init(&tp, 0);
    *p = tp.port;
    with_proc_and_fs(p);
    drop(p, off);
    assert_string_equal(mote_port_missing(p, group), name);
    assert_int_equal(mote_loop_init(&loop, p), 0);
    memset(&sc, 0, sizeof(sc));
    sc.on_event = on_event;
    assert_int_equal(mote_session_init(&ses, &loop, &sc), 0);
}

/* The process group: the shell tool is not offered and an MCP server
 * fails with a message naming the member, without any member being
 * called. Before, MCP looked at proc_spawn and pipe_read only (a port
 * without pipe_write had its stand-ins called), and the shell tool at
 * five of the six. */
static void test_process_members(void **state)
{
    static struct mote_mcp mcp;
    static const char *const argv[] = {"server", NULL};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(proc) / sizeof(proc[0]); i++) {
        struct mote_port p;

        session_without(&p, proc[i].off, proc[i].name, MOTE_PORT_PROC);
        assert_true(mote_session_add_builtin_tools(&ses, ~0u) > 0);
        assert_false(offered("shell"));
        assert_true(offered("read_file") && offered("edit_file"));
        mote_mcp_init(&mcp, &loop, NULL, NULL);
        assert_int_equal(mote_mcp_add(&mcp, "srv", argv, NULL), 0);
        mote_mcp_start_all(&mcp);
        assert_int_equal(mcp.srv[0].state, MOTE_MCP_FAILED);
        assert_non_null(strstr(mcp.srv[0].errmsg, proc[i].name));
        assert_true(mote_mcp_settled(&mcp));
        assert_true(mote_mcp_disconnect_poll(&mcp, true) <= 0);
        mote_session_deinit(&ses);
        mote_loop_deinit(&loop);
        mote_tport_deinit(&tp);
    }
}

/* The file group: without any one member no file tool is offered (before,
 * edit_file was offered without fs_stat and called it). */
static void test_file_members(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
        struct mote_port p;

        session_without(&p, fs[i].off, fs[i].name, MOTE_PORT_FS);
        assert_int_equal(mote_session_add_builtin_tools(&ses, ~0u), 1);
        assert_true(offered("shell"));
        assert_false(offered("read_file") || offered("write_file") || offered("list_dir") ||
                     offered("edit_file"));
        mote_session_deinit(&ses);
        mote_loop_deinit(&loop);
        mote_tport_deinit(&tp);
    }
}

static void test_missing_names_and_sizes(void **state)
{
    struct mote_port p;

    (void)state;
    mote_tport_init(&tp, 0);
    p = tp.port;
    assert_null(mote_port_missing(&p, MOTE_PORT_CORE | MOTE_PORT_STORAGE));
    p.size = offsetof(struct mote_port, st_open); /* an older port, smaller */
    assert_string_equal(mote_port_missing(&p, MOTE_PORT_STORAGE), "st_open");
    assert_string_equal(mote_port_missing(NULL, MOTE_PORT_CORE), "the port itself");
    mote_tport_deinit(&tp);
}

/* The body sent is the body counted. Parts that change
 * between the counting pass (Content-Length) and the sending one - what an
 * MCP tools/list_changed did to the tool list - end the request with a
 * clear error before a byte past Content-Length goes out (before, the
 * changed bytes went out: the server read a cut or overrun body). The
 * agent keeps its parts fixed (mote_mcp_hold); this holds whatever an
 * embedder's parts do. */
static unsigned part_calls;

static int growing_part(void *arg, unsigned index, struct mote_part *p)
{
    static const char text[] = "a text that grows after it was counted";

    (void)arg;
    if (index == 0)
        part_calls++;
    /* counted short, sent long */
    return one_text_part(index, p, text, part_calls > 1 ? sizeof(text) - 1 : 6);
}

static struct mote_tport_net tn;

/* A model call on the test port (its clock at 0) whose one connection
 * answers `r`, the conversation from `parts`, started as a job: its id. */
static mote_job_id model_call(const struct mote_tport_resp *r, mote_part_fn parts)
{
    static struct mote_llm_call call;
    static struct mote_llm_conf conf;
    static struct mote_llm_req req;
    mote_job_id job;

    mote_tport_init(&tp, 0);
    mote_tport_net_init(&tp, &tn, r, 1);
    assert_int_equal(mote_loop_init(&loop, &tp.port), 0);
    mote_llm_conf_defaults(&conf);
    conf.base_url = "http://model.test";
    conf.max_attempts = 1;
    memset(&req, 0, sizeof(req));
    req.model = "m";
    req.parts = parts;
    assert_int_equal(mote_llm_call_init(&call, &conf, &req, NULL, NULL), 0);
    assert_int_equal(mote_job_spawn(&loop, "llm", &mote_llm_call_ops, &call, NULL, &job), 0);
    return job;
}

static void test_body_matches_its_length(void **state)
{
    static const char resp[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
    struct mote_tport_resp r;
    const char *cl, *body;
    mote_job_id job;
    int turns = 0;

    (void)state;
    memset(&r, 0, sizeof(r));
    r.bytes = resp;
    r.len = sizeof(resp) - 1;
    r.stall = true;
    part_calls = 0;
    job = model_call(&r, growing_part);
    while (mote_job_state(&loop, job) == MOTE_JOB_RUNNING && turns++ < 200)
        (void)mote_loop_poll(&loop, 10);
    assert_int_equal(mote_job_state(&loop, job), MOTE_JOB_FAILED);
    assert_non_null(strstr(mote_job_error(&loop, job), "changed while it was sent"));
    /* Nothing past Content-Length went out. */
    cl = strstr(tn.conns[0].sent, "Content-Length: ");
    if (cl == NULL)
        cl = strstr(tn.conns[0].sent, "content-length: ");
    assert_non_null(cl);
    body = strstr(tn.conns[0].sent, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    assert_true((size_t)(tn.conns[0].sent + tn.conns[0].sent_len - body) <=
                (size_t)strtoul(cl + 16, NULL, 10));
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
}

/* A peer that floods (every read finds data) cannot keep the
 * model client's step from handing the loop back: each loop turn reads
 * at most MOTE_STEP_IO_BYTES (plus one read), so a cancel is seen on the
 * next turn: one step never reads the whole flood. */
static void test_flood_step_budget(void **state)
{
    static char resp[1 << 20];
    static const char head[] = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
    static const char ping[] = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
    struct mote_tport_resp r;
    size_t len = sizeof(head) - 1, before, most = 0;
    mote_job_id job;
    int turns;

    (void)state;
    memcpy(resp, head, len);
    while (len + sizeof(ping) - 1 <= sizeof(resp)) {
        memcpy(resp + len, ping, sizeof(ping) - 1);
        len += sizeof(ping) - 1;
    }
    memset(&r, 0, sizeof(r));
    r.bytes = resp;
    r.len = len;
    r.chunk = 4096;
    r.flood = true;
    job = model_call(&r, one_part);
    /* Until the stream flows, then a few turns of it. */
    for (turns = 0; turns < 200 && (tn.conns[0].off < 100000); turns++) {
        before = tn.conns[0].used ? tn.conns[0].off : 0;
        (void)mote_loop_poll(&loop, 0);
        if (tn.conns[0].off - before > most)
            most = tn.conns[0].off - before;
    }
    assert_true(tn.conns[0].off >= 100000);
    assert_true(most <= MOTE_STEP_IO_BYTES + MOTE_NET_BUF);
    assert_int_equal(mote_job_state(&loop, job), MOTE_JOB_RUNNING);
    /* A cancel now ends it on the next turn, with the flood still on. */
    before = tn.conns[0].off;
    assert_int_equal(mote_job_cancel(&loop, job), 0);
    (void)mote_loop_poll(&loop, 0);
    assert_int_equal(mote_job_state(&loop, job), MOTE_JOB_CANCELLED);
    assert_true(tn.conns[0].off - before <= MOTE_STEP_IO_BYTES + MOTE_NET_BUF);
    assert_true(tn.conns[0].off < len);
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storage_members),
        cmocka_unit_test(test_network_members),
        cmocka_unit_test(test_core_members),
        cmocka_unit_test(test_process_members),
        cmocka_unit_test(test_file_members),
        cmocka_unit_test(test_missing_names_and_sizes),
        cmocka_unit_test(test_flood_step_budget),
        cmocka_unit_test(test_body_matches_its_length),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
