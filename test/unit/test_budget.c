/*
 * test_budget.c - the spend budget (mote_budget.h) on the deterministic
 * test port: limits per hour and per day, reservations that survive a
 * restart and a power cut at every write, the budget's clock against a
 * real-time clock set back or not set at all, settlements, prices, the
 * journal rewritten when it grows.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mote/mote_budget.h"
#include "mote_tport.h"

#define T0 INT64_C(1780272000000) /* 2026-06-01T00:00:00Z, ms */

static struct mote_tport tp;
static struct mote_budget b;
static struct mote_budget_conf conf;

static int setup(void **state)
{
    (void)state;
    mote_tport_init(&tp, 1000);
    mote_tport_set_real(&tp, T0 + 3600 * 1000 * 10 + 5000, MOTE_CLOCK_UNKNOWN); /* 10:00:05 */
    memset(&conf, 0, sizeof(conf));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mote_budget_close(&b);
    mote_tport_deinit(&tp);
    return 0;
}

static void open_budget(void)
{
    char err[160];

    assert_int_equal(mote_budget_open(&b, &tp.port, &conf, err, sizeof(err)), 0);
}

static int reserve(void)
{
    uint64_t id;

    return mote_budget_reserve(&b, "c1", "m", 100, &id);
}

static void test_requests_per_day_across_restarts(void **state)
{
    unsigned i;

    (void)state;
    conf.requests_day = 3;
    open_budget();
    for (i = 0; i < 3; i++)
        assert_int_equal(reserve(), 0);
    assert_int_equal(reserve(), MOTE_ERR_BUDGET);
    assert_non_null(strstr(b.why, "3 requests today (UTC) (the limit is 3)"));
    assert_non_null(strstr(b.why, "until 2026-06-02T00:00:00Z"));
    assert_true(b.until == (T0 / 1000) + 86400);
    /* a restart (the requests never settled: a kill -9) */
    mote_budget_close(&b);
    open_budget();
    assert_true(mote_budget_blocked(&b));
    assert_int_equal(reserve(), MOTE_ERR_BUDGET);
    assert_int_equal(b.day.requests, 3);
    /* a clock set back a day (not said synchronised): still spent */
    mote_budget_close(&b);
    mote_tport_set_real(&tp, T0 - 86400 * 1000, MOTE_CLOCK_UNSYNCED);
    open_budget();
    assert_int_equal(reserve(), MOTE_ERR_BUDGET);
    /* a clock not set at all (1970): the latest record's time, on the
     * monotonic clock from there */
    mote_budget_close(&b);
    mote_tport_set_real(&tp, 5000, MOTE_CLOCK_UNKNOWN);
    open_budget();
    assert_int_equal(reserve(), MOTE_ERR_BUDGET);
    mote_tport_advance(&tp, 14 * 3600 * 1000); /* past midnight, monotonic */
    assert_int_equal(reserve(), 0);
    /* the next day (the real clock set) */
    mote_budget_close(&b);
    mote_tport_set_real(&tp, T0 + 86400 * 1000 + 60000, MOTE_CLOCK_SYNCED);
    open_budget();
    assert_int_equal(b.day.requests, 1);
    assert_int_equal(reserve(), 0);
}

static void test_hour_window_and_settlements(void **state)
{
    uint64_t id1, id2;

    (void)state;
    conf.requests_hour = 2;
    conf.output_hour = 1000;
    open_budget();
    assert_int_equal(mote_budget_reserve(&b, "c", "m", 4096, &id1), 0);
    /* the largest answer of the request under way counts: the next waits */
    assert_int_equal(mote_budget_reserve(&b, "c", "m", 4096, &id2), MOTE_ERR_BUDGET);
    assert_non_null(strstr(b.why, "output tokens"));
    assert_true(b.until == T0 / 1000 + 11 * 3600);
    mote_budget_settle(&b, id1, "m", 500, 100, 7);
    assert_true(b.hour.output == 100 && b.hour.input == 500 && b.hour.cached == 7);
    assert_int_equal(mote_budget_reserve(&b, "c", "m", 4096, &id2), 0);
    mote_budget_settle(&b, id2, "m", 1, 1, 0);
    assert_int_equal(mote_budget_reserve(&b, "c", "m", 10, &id1), MOTE_ERR_BUDGET);
    assert_non_null(strstr(b.why, "2 requests this hour"));
    /* settled twice, or unknown: nothing changes */
    mote_budget_settle(&b, id2, "m", 100000, 100000, 0);
    assert_true(b.hour.output == 101);
    /* what was settled is kept across a restart */
    mote_budget_close(&b);
    open_budget();
    assert_true(b.hour.requests == 2 && b.hour.output == 101 && b.hour.input == 501);
    mote_tport_advance(&tp, 3600 * 1000);
    assert_false(mote_budget_blocked(&b));
    assert_int_equal(mote_budget_reserve(&b, "c", "m", 10, &id1), 0);
    assert_int_equal(b.hour.requests, 1);
}

static void test_prices_and_cost(void **state)
{
    struct mote_budget_price p;
    uint64_t id, m;
    unsigned i;

    (void)state;
    assert_int_equal(mote_budget_price_parse("claude-x=3,15,0.30", &p), 0);
    assert_string_equal(p.model, "claude-x");
    assert_true(p.input == 3000000 && p.output == 15000000 && p.cached == 300000);
    assert_int_equal(mote_budget_price_parse("gpt=0.15,0.6", &p), 0);
    assert_true(p.cached == 0 && p.output == 600000);
    assert_int_equal(mote_budget_price_parse("=1,2", &p), MOTE_ERR_INVAL);
    assert_int_equal(mote_budget_price_parse("m=1", &p), MOTE_ERR_INVAL);
    assert_int_equal(mote_budget_price_parse("m=1,2,3,4", &p), MOTE_ERR_INVAL);
    assert_int_equal(mote_budget_price_parse("m=1,-2", &p), MOTE_ERR_INVAL);
    assert_int_equal(mote_budget_money_parse("2.50", &m), 0);
    assert_true(m == 2500000);
    assert_int_equal(mote_budget_money_parse("0.0000001", &m), MOTE_ERR_INVAL);
    assert_int_equal(mote_budget_money_parse("1.", &m), MOTE_ERR_INVAL);
    conf.cost_day = 10000; /* 0.01 */
    assert_int_equal(mote_budget_price_parse("m=3,15,0.3", &conf.prices[0]), 0);
    conf.nprices = 1;
    open_budget();
    for (i = 0; i < 3; i++) {
        assert_int_equal(mote_budget_reserve(&b, "c", "m", 100, &id), 0);
        /* 1000 in, 100 out: 3000 + 1500 micro-units */
        mote_budget_settle(&b, id, "m", 1000, 100, 0);
    }
    assert_true(b.day.cost_pico == UINT64_C(13500000000));
    assert_int_equal(mote_budget_reserve(&b, "c", "m", 100, &id), MOTE_ERR_BUDGET);
    assert_non_null(strstr(b.why, "13500 micro-units of money today"));
    /* another model has no price: its cost is not known, and not counted */
    mote_budget_close(&b);
    conf.cost_day = 0;
    open_budget();
    assert_true(b.day.cost_pico == UINT64_C(13500000000));
}

/* A power cut at every write of a run of reservations: after it, every
 * request the budget let through (reserve returned 0) is counted, and
 * none that it did not is. */
static void test_power_cut_at_every_write(void **state)
{
    unsigned cut;

    (void)state;
    conf.requests_day = 1000;
    for (cut = 1; cut <= 12; cut++) {
        unsigned ok = 0, i;
        uint64_t id;

        mote_tport_deinit(&tp);
        setup(NULL);
        conf.requests_day = 1000;
        open_budget();
        mote_tport_cut_at(&tp, tp.st_writes + cut);
        for (i = 0; i < 8; i++) {
            if (mote_budget_reserve(&b, "c", "m", 10, &id) == 0) {
                ok++;
                if (i % 2 == 0)
                    mote_budget_settle(&b, id, "m", 1, 1, 0);
            }
        }
        mote_budget_close(&b);
        mote_tport_power_restore(&tp, cut % 2 ? MOTE_TP_CUT_TORN : MOTE_TP_CUT_ZERO);
        open_budget();
        assert_true(b.day.requests >= ok);
        assert_true(b.day.requests <= ok + 1 + (unsigned)b.damaged);
        mote_budget_close(&b);
    }
}

/* The journal is rewritten when it grows: the windows are the same after. */
static void test_rewrite_keeps_the_windows(void **state)
{
    const struct mote_tport_file *f;
    unsigned i, before;
    uint64_t id;

    (void)state;
    conf.requests_day = 100000;
    open_budget();
    for (i = 0; i < 600; i++) {
        assert_int_equal(mote_budget_reserve(&b, "conv-with-a-longer-id", "m", 10, &id), 0);
        mote_budget_settle(&b, id, "m", 3, 2, 1);
    }
    f = mote_tport_file(&tp, "budget.jsonl");
    assert_non_null(f);
    assert_true(f->len < MOTE_BUDGET_LOG_MAX + 1024);
    before = b.day.requests;
    assert_int_equal(before, 600);
    mote_budget_close(&b);
    open_budget();
    assert_int_equal(b.day.requests, 600);
    assert_true(b.day.input == 1800 && b.day.output == 1200 && b.day.cached == 600);
    assert_true(b.hour.requests == 600);
    /* a damaged line counts as a request (fail closed) */
    mote_budget_close(&b);
    f = mote_tport_file(&tp, "budget.jsonl");
    {
        static char copy[1 << 20];
        size_t n = f->len;

        memcpy(copy, f->data, n);
        memcpy(copy + n, "not json\n", 9);
        assert_int_equal(mote_tport_put(&tp, "budget.jsonl", copy, n + 9), 0);
    }
    open_budget();
    assert_int_equal(b.day.requests, 601);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_requests_per_day_across_restarts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hour_window_and_settlements, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prices_and_cost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_at_every_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_keeps_the_windows, setup, teardown),
    };

    return cmocka_run_group_tests_name("budget", tests, NULL, NULL);
}
