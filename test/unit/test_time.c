/* test_time.c - time as people write it (mote_time.h): durations, the
 * civil calendar against the C library's, ISO 8601 times. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mote/mote_time.h"

static void test_durations(void **state)
{
    static const struct {
        const char *s;
        uint64_t ms;
    } good[] = {{"600", 600000},     {"90s", 90000},    {"10m", 600000},     {"2h", 7200000},
                {"1d", 86400000},    {"500ms", 500},    {"1h30m", 5400000},  {" 2s ", 2000},
                {"0", 0},            {"none", 0},       {"off", 0},          {"1m30s", 90000},
                {"3650d", UINT64_C(315360000000)}};
    static const char *const bad[] = {"",  "s",   "10x",  "1h30", "-1",  "1.5h", "3651d",
                                      "10 m", "m10", "9999999999999", "1h 30m", "nonE"};
    char out[48];
    uint64_t ms;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ms = 1;
        assert_int_equal(mote_duration_parse(good[i].s, &ms), 0);
        assert_true(ms == good[i].ms);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mote_duration_parse(bad[i], &ms), MOTE_ERR_INVAL);
    assert_int_equal(mote_duration_parse(NULL, &ms), MOTE_ERR_INVAL);
    mote_duration_say(out, sizeof(out), 2000);
    assert_string_equal(out, "2 seconds");
    mote_duration_say(out, sizeof(out), 600000);
    assert_string_equal(out, "10 minutes");
    mote_duration_say(out, sizeof(out), 60000);
    assert_string_equal(out, "1 minute");
    mote_duration_say(out, sizeof(out), 7200000);
    assert_string_equal(out, "2 hours");
    mote_duration_say(out, sizeof(out), 86400000);
    assert_string_equal(out, "1 day");
    mote_duration_say(out, sizeof(out), 90000);
    assert_string_equal(out, "90 seconds");
    mote_duration_say(out, sizeof(out), 1500);
    assert_string_equal(out, "1500 ms");
    mote_duration_say(out, sizeof(out), 0);
    assert_string_equal(out, "0 ms");
}

static void test_division(void **state)
{
    static const int64_t a[] = {0, 1, -1, 86399, 86400, -86400, -86401, INT64_C(253402300799),
                                INT64_C(-62135596800), INT64_MAX, INT64_MIN + 1};
    static const uint32_t b[] = {1, 7, 60, 86400, 146097, 4294967295u};
    size_t i, j;

    (void)state;
    for (i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
        for (j = 0; j < sizeof(b) / sizeof(b[0]); j++) {
            uint32_t r;
            int64_t q = mote_time_div(a[i], b[j], &r);
            int64_t want = a[i] / (int64_t)b[j], wr = a[i] % (int64_t)b[j];

            if (wr < 0) { /* rounded down, the remainder positive */
                want -= 1;
                wr += b[j];
            }
            assert_true(q == want);
            assert_true((int64_t)r == wr);
        }
    }
}

/* The calendar agrees with the C library's for every day of 1600..2400
 * and a second of each. */
static void test_civil_against_libc(void **state)
{
    int64_t t;

    (void)state;
    for (t = INT64_C(-11676096000); t < INT64_C(13569465600); t += 86400 + 3607) {
        struct mote_tm tm;
        struct tm g;
        time_t tt = (time_t)t;

        assert_non_null(gmtime_r(&tt, &g));
        mote_tm_of(t, &tm);
        assert_int_equal(tm.year, g.tm_year + 1900);
        assert_int_equal(tm.mon, g.tm_mon + 1);
        assert_int_equal(tm.mday, g.tm_mday);
        assert_int_equal(tm.hour, g.tm_hour);
        assert_int_equal(tm.min, g.tm_min);
        assert_int_equal(tm.sec, g.tm_sec);
        assert_int_equal(tm.wday, g.tm_wday);
        assert_int_equal(tm.yday, g.tm_yday);
        assert_true(mote_time_of(&tm) == t);
    }
    assert_int_equal(mote_month_days(2024, 2), 29);
    assert_int_equal(mote_month_days(2100, 2), 28);
    assert_int_equal(mote_month_days(2000, 2), 29);
    assert_int_equal(mote_month_days(2025, 4), 30);
    assert_int_equal(mote_month_days(2025, 13), 0);
}

static void test_iso(void **state)
{
    char out[MOTE_ISO_MAX];
    int64_t t;
    bool local;

    (void)state;
    mote_iso_write(out, 1772344800, 0, true);
    assert_string_equal(out, "2026-03-01T06:00:00Z");
    mote_iso_write(out, 1772344800, 3600, false);
    assert_string_equal(out, "2026-03-01T07:00:00+01:00");
    mote_iso_write(out, 1772344800, -(5 * 3600 + 30 * 60), false);
    assert_string_equal(out, "2026-03-01T00:30:00-05:30");
    assert_int_equal(mote_iso_parse("2026-03-01T06:00:00Z", &t, &local), 0);
    assert_true(t == 1772344800 && !local);
    assert_int_equal(mote_iso_parse("2026-03-01T07:00+01:00", &t, &local), 0);
    assert_true(t == 1772344800 && !local);
    assert_int_equal(mote_iso_parse("2026-03-01 06:00", &t, &local), 0);
    assert_true(t == 1772344800 && local);
    assert_int_equal(mote_iso_parse("2026-02-28T23:00:00-0700", &t, &local), 0);
    assert_true(t == 1772344800 && !local);
    assert_int_equal(mote_iso_parse("2026-02-29T00:00Z", &t, &local), MOTE_ERR_INVAL);
    assert_int_equal(mote_iso_parse("2026-03-01T24:00Z", &t, &local), MOTE_ERR_INVAL);
    assert_int_equal(mote_iso_parse("2026-03-01", &t, &local), MOTE_ERR_INVAL);
    assert_int_equal(mote_iso_parse("2026-03-01T06:00Z trailing", &t, &local), MOTE_ERR_INVAL);
    assert_int_equal(mote_iso_parse("26-03-01T06:00Z", &t, &local), MOTE_ERR_INVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_division),
        cmocka_unit_test(test_civil_against_libc),
        cmocka_unit_test(test_iso),
    };

    return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
