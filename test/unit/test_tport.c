/* test_tport.c - the test port's own promises: faults and power cuts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote.h"
#include "mote_tport.h"

static struct mote_tport tp;

static int setup(void **state)
{
    (void)state;
    mote_tport_init(&tp, 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mote_tport_deinit(&tp);
    return 0;
}

static int open_log(void)
{
    return tp.port.st_open(tp.port.ctx, "log", MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
}

static void test_countdown_faults(void **state)
{
    const struct mote_port *p = &tp.port;
    int h;

    (void)state;
    h = open_log();
    assert_true(h >= 0);
    /* The 2nd append fails with ENOSPC, once. */
    mote_tport_fail_after(&tp, MOTE_TP_APPEND, 2, MOTE_ERR_NOSPC, false);
    assert_int_equal(p->st_append(p->ctx, h, "aaaa", 4), 4);
    assert_int_equal(p->st_sync(p->ctx, h), 0); /* other kinds do not count */
    assert_int_equal(p->st_append(p->ctx, h, "bbbb", 4), MOTE_ERR_NOSPC);
    assert_int_equal(p->st_append(p->ctx, h, "cccc", 4), 4);
    assert_int_equal(mote_tport_file(&tp, "log")->len, 8);
    /* A short write. */
    mote_tport_fail_after(&tp, MOTE_TP_APPEND, 1, 0, false);
    assert_int_equal(p->st_append(p->ctx, h, "dddd", 4), 2);
    /* Sticky fsync failure. */
    mote_tport_fail_after(&tp, MOTE_TP_SYNC, 1, MOTE_ERR_IO, true);
    assert_int_equal(p->st_sync(p->ctx, h), MOTE_ERR_IO);
    assert_int_equal(p->st_sync(p->ctx, h), MOTE_ERR_IO);
    p->st_close(p->ctx, h);
}

static void test_power_cut_modes(void **state)
{
    const struct mote_port *p = &tp.port;
    enum mote_tport_cut mode;
    const size_t want[] = {4, 14, 9, 14}; /* the cut write lands half */

    (void)state;
    for (mode = MOTE_TP_CUT_DROP; mode <= MOTE_TP_CUT_ZERO; mode++) {
        const struct mote_tport_file *f;
        int h;

        (void)p->st_remove(p->ctx, "log");
        h = open_log();
        mote_tport_cut_at(&tp, 3);
        assert_int_equal(p->st_append(p->ctx, h, "AAAA", 4), 4);
        assert_int_equal(p->st_sync(p->ctx, h), 0);
        assert_int_equal(p->st_append(p->ctx, h, "BBBBBBBB", 8), 8);
        /* Write 3: the power dies. */
        assert_int_equal(p->st_append(p->ctx, h, "CCCC", 4), MOTE_ERR_IO);
        assert_int_equal(p->st_sync(p->ctx, h), MOTE_ERR_IO);
        assert_true(open_log() < 0);
        mote_tport_power_restore(&tp, mode);
        f = mote_tport_file(&tp, "log");
        assert_non_null(f);
        assert_int_equal(f->len, want[mode]);
        assert_memory_equal(f->data, "AAAA", 4);
        if (mode == MOTE_TP_CUT_ZERO)
            assert_int_equal(f->data[4], 0);
        if (mode == MOTE_TP_CUT_KEEP)
            assert_memory_equal(f->data + 4, "BBBBBBBB", 8);
        assert_true(open_log() >= 0); /* works again */
    }
}

static int produce(void *arg, char *buf, size_t cap)
{
    const char **s = arg;
    size_t n = strlen(*s);

    if (n > cap)
        n = cap;
    memcpy(buf, *s, n);
    *s += n;
    return (int)n;
}

static void test_atomic_write_cut(void **state)
{
    const struct mote_port *p = &tp.port;
    const char *v1 = "one", *v2 = "two-two";
    const struct mote_tport_file *f;

    (void)state;
    assert_int_equal(p->st_write_atomic(p->ctx, "hist", produce, &v1), 0);
    mote_tport_cut_at(&tp, 1);
    assert_int_equal(p->st_write_atomic(p->ctx, "hist", produce, &v2), MOTE_ERR_IO);
    mote_tport_power_restore(&tp, MOTE_TP_CUT_KEEP);
    f = mote_tport_file(&tp, "hist");
    assert_int_equal(f->len, 3);
    assert_memory_equal(f->data, "one", 3);
}

static void test_dirs_and_names(void **state)
{
    const struct mote_port *p = &tp.port;

    (void)state;
    assert_int_equal(p->st_open(p->ctx, "d/x", MOTE_ST_APPEND | MOTE_ST_CREATE), MOTE_ERR_NOENT);
    assert_int_equal(p->st_mkdir(p->ctx, "d"), 0);
    assert_true(p->st_open(p->ctx, "d/x", MOTE_ST_APPEND | MOTE_ST_CREATE) >= 0);
    assert_int_equal(p->st_open(p->ctx, "../x", MOTE_ST_READ), MOTE_ERR_INVAL);
    assert_int_equal(p->st_open(p->ctx, "d/../../x", MOTE_ST_READ), MOTE_ERR_INVAL);
    assert_int_equal(p->st_open(p->ctx, "d", MOTE_ST_READ), MOTE_ERR_ISDIR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_countdown_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power_cut_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_atomic_write_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirs_and_names, setup, teardown),
    };

    return cmocka_run_group_tests_name("tport", tests, NULL, NULL);
}
