/* test_time.c - time as people write it (mote_time.h): durations, the
 * civil calendar against the C library's, ISO 8601 times. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
    static const struct {
        uint64_t ms;
        const char *said;
    } say[] = {{2000, "2 seconds"}, {600000, "10 minutes"}, {60000, "1 minute"},
               {7200000, "2 hours"}, {86400000, "1 day"},   {90000, "90 seconds"},
               {1500, "1500 ms"},    {0, "0 ms"}};
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
    for (i = 0; i < sizeof(say) / sizeof(say[0]); i++) {
        mote_duration_say(out, sizeof(out), say[i].ms);
        assert_string_equal(out, say[i].said);
    }
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

/* ---- time zones ---- */

static uint8_t zbuf[65536];

/* Zone `name` from the system's zoneinfo into tz (from `from` on); false
 * if the system has none. */
static bool load_zone(struct mote_tz *tz, const char *name, int64_t from)
{
    char path[256], err[120];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
    f = fopen(path, "rb");
    if (f == NULL)
        return false;
    n = fread(zbuf, 1, sizeof(zbuf), f);
    fclose(f);
    assert_int_equal(mote_tz_parse(tz, name, zbuf, n, from, err, sizeof(err)), 0);
    return true;
}

/* The C library's offset of zone `tzenv` (a name or a POSIX rule) at t. */
static long libc_offset(const char *tzenv, int64_t t)
{
    struct tm lt;
    time_t tt = (time_t)t;

    setenv("TZ", tzenv, 1);
    tzset();
    assert_non_null(localtime_r(&tt, &lt));
    return lt.tm_gmtoff;
}

/* Every 5 hours 13 minutes from 2020 to 2070 (past the tables of fat
 * files, into their rules), and the seconds around each transition of
 * 2026, the offset agrees with the C library's for zones north and
 * south, with negative DST (Dublin), quarter hours (Chatham), none
 * (Kolkata) and Casablanca's table of Ramadan changes. */
static void test_tz_against_libc(void **state)
{
    static const char *const zones[] = {"Europe/Paris", "America/New_York", "Australia/Sydney",
                                        "Europe/Dublin", "Pacific/Chatham", "Asia/Kolkata",
                                        "America/Santiago", "Africa/Casablanca", "UTC",
                                        "America/Sao_Paulo"};
    static struct mote_tz tz;
    const int64_t from = INT64_C(1577836800); /* 2020-01-01 */
    unsigned z, checked = 0;

    (void)state;
    for (z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
        int64_t t;

        if (!load_zone(&tz, zones[z], from)) {
            print_message("no zoneinfo for %s here: not checked\n", zones[z]);
            continue;
        }
        /* (a table cut at MOTE_TZ_TRANSITIONS goes on by its rule: exact
         * where the table follows the rule, which Casablanca's does not) */
        for (t = from; t < (tz.truncated ? tz.trans[tz.ntrans - 1] : INT64_C(3155760000));
             t += 5 * 3600 + 13 * 60) {
            if (mote_tz_offset(&tz, t) != libc_offset(zones[z], t))
                fail_msg("%s at %lld: %d, libc %ld", zones[z], (long long)t,
                         (int)mote_tz_offset(&tz, t), libc_offset(zones[z], t));
            checked++;
        }
        for (t = INT64_C(1767225600); t < INT64_C(1798761600); t += 3600) {
            if (libc_offset(zones[z], t) != libc_offset(zones[z], t + 3600)) {
                int64_t k;

                for (k = t; k <= t + 3600; k++) /* (the transition to the second) */
                    assert_int_equal(mote_tz_offset(&tz, k), libc_offset(zones[z], k));
            }
        }
    }
    unsetenv("TZ");
    tzset();
    if (checked == 0)
        skip();
}

/* A rule alone (a "slim" file's future, or TZ=...) agrees too. */
static void test_tz_rules(void **state)
{
    static const char *const rules[] = {"CET-1CEST,M3.5.0,M10.5.0/3", "EST5EDT,M3.2.0,M11.1.0",
                                        "AEST-10AEDT,M10.1.0,M4.1.0/3", "IST-1GMT0,M10.5.0,M3.5.0/1",
                                        "<+0545>-5:45", "UTC0", "<-03>3", "WET0WEST,J60/1,J300/2",
                                        "NZST-12NZDT,M9.5.0,M4.1.0/3"};
    static struct mote_tz tz;
    unsigned r;

    (void)state;
    for (r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
        int64_t t;

        assert_int_equal(mote_tz_rule(&tz, "x", rules[r]), 0);
        for (t = INT64_C(1767225600); t < INT64_C(2524608000); t += 7 * 3600 + 11 * 60)
            if (mote_tz_offset(&tz, t) != libc_offset(rules[r], t))
                fail_msg("%s at %lld: %d, libc %ld", rules[r], (long long)t,
                         (int)mote_tz_offset(&tz, t), libc_offset(rules[r], t));
    }
    assert_int_equal(mote_tz_rule(&tz, "x", "CET"), MOTE_ERR_INVAL);
    assert_int_equal(mote_tz_rule(&tz, "x", "CET-1CEST,M3.5.0"), MOTE_ERR_INVAL);
    assert_int_equal(mote_tz_rule(&tz, "x", "CET-1CEST,M13.5.0,M10.5.0"), MOTE_ERR_INVAL);
    assert_int_equal(mote_tz_rule(&tz, "x", "C-1"), MOTE_ERR_INVAL);
    unsetenv("TZ");
    tzset();
}

static void test_tz_local_and_names(void **state)
{
    static struct mote_tz tz;
    struct mote_tm tm = {2026, 3, 29, 2, 30, 0, 0, 0};
    uint8_t junk[64];
    char err[120];
    int64_t t;

    (void)state;
    assert_int_equal(mote_tz_rule(&tz, "Europe/Paris", "CET-1CEST,M3.5.0,M10.5.0/3"), 0);
    /* the clock jumps 02:00 -> 03:00: 02:30 is skipped, the end of the gap */
    assert_int_equal(mote_tz_local(&tz, mote_time_of(&tm), &t), 0);
    assert_true(t == INT64_C(1774746000)); /* 2026-03-29T01:00:00Z */
    /* 03:00 -> 02:00: 02:30 comes twice; the first */
    tm.mon = 10;
    tm.mday = 25;
    assert_int_equal(mote_tz_local(&tz, mote_time_of(&tm), &t), 2);
    assert_true(t == INT64_C(1792888200)); /* 2026-10-25T00:30:00Z */
    tm.hour = 12;
    tm.min = 0;
    assert_int_equal(mote_tz_local(&tz, mote_time_of(&tm), &t), 1);
    assert_true(t == INT64_C(1792926000)); /* 11:00Z */
    assert_true(mote_tz_name_ok("Europe/Paris"));
    assert_true(mote_tz_name_ok("Etc/GMT+5"));
    assert_true(mote_tz_name_ok("America/Argentina/Buenos_Aires"));
    assert_false(mote_tz_name_ok("../etc/passwd"));
    assert_false(mote_tz_name_ok("/etc/localtime"));
    assert_false(mote_tz_name_ok("Europe/../../x"));
    assert_false(mote_tz_name_ok("Europe//Paris"));
    assert_false(mote_tz_name_ok("Europe/Paris/"));
    assert_false(mote_tz_name_ok("Europe/./Paris"));
    assert_false(mote_tz_name_ok(""));
    assert_false(mote_tz_name_ok("Euro pe"));
    /* not TZif, cut short */
    memset(junk, 'x', sizeof(junk));
    assert_int_equal(mote_tz_parse(&tz, "x", junk, sizeof(junk), 0, err, sizeof(err)),
                     MOTE_ERR_CORRUPT);
    if (load_zone(&tz, "Europe/Paris", 0)) {
        FILE *f = fopen("/usr/share/zoneinfo/Europe/Paris", "rb");
        size_t n = fread(zbuf, 1, sizeof(zbuf), f), k;

        fclose(f);
        for (k = 0; k < n; k += 7) /* every cut is refused, never read past */
            assert_true(mote_tz_parse(&tz, "x", zbuf, k, 0, err, sizeof(err)) < 0);
    }
}

/* ---- cron ---- */

static void test_cron_parse(void **state)
{
    static const char *const bad[] = {"* * * *",     "60 * * * *",  "* 24 * * *", "* * 0 * *",
                                      "* * * 13 *",  "* * * * 8",   "*/0 * * * *", "1,,2 * * * *",
                                      "1, * * * *",  "@reboot",     "a b c d e",   "* * 31 2 *",
                                      "* * 30,31 2 *", "5-1 * * * *", "* * * * * *", "",
                                      "1-5/ * * * *", "* * * janu *", "0x1 * * * *"};
    struct mote_cron c;
    char err[120];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (mote_cron_parse(&c, bad[i], err, sizeof(err)) != MOTE_ERR_INVAL)
            fail_msg("'%s' was taken", bad[i]);
        assert_true(strncmp(err, "cron: ", 6) == 0);
    }
    assert_int_equal(mote_cron_parse(&c, "*/15 6-8 * jan-mar mon-fri", err, sizeof(err)), 0);
    assert_true(c.min == ((1ull << 0) | (1ull << 15) | (1ull << 30) | (1ull << 45)));
    assert_true(c.hour == 0x1C0u && c.mon == 0xEu && c.wday == 0x3Eu);
    assert_true(c.mday_any && !c.wday_any);
    assert_int_equal(mote_cron_parse(&c, "0 0 * * 7", err, sizeof(err)), 0);
    assert_int_equal(c.wday, 1);
    assert_int_equal(mote_cron_parse(&c, "@daily", err, sizeof(err)), 0);
    assert_true(c.min == 1 && c.hour == 1 && c.mday_any && c.wday_any);
    assert_int_equal(mote_cron_parse(&c, "  0 0 29 2 *  ", err, sizeof(err)), 0);
}

/* Against a minute-by-minute scan in UTC, both ways. */
static void test_cron_brute(void **state)
{
    static const char *const exprs[] = {"* * * * *",      "*/7 * * * *",   "0 6 * * *",
                                        "30 2 1 * *",     "0 0 13 * 5",    "15 9 * * mon-fri",
                                        "0 0 29 2 *",     "5,10 1-3/2 * 2,8 *", "0 12 1 1 *"};
    static struct mote_tz utc;
    size_t i;
    unsigned k;

    (void)state;
    mote_tz_utc(&utc);
    for (i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
        struct mote_cron c;
        char err[120];
        int64_t after = INT64_C(1767225600) + (int64_t)i * 7919;

        assert_int_equal(mote_cron_parse(&c, exprs[i], err, sizeof(err)), 0);
        for (k = 0; k < 5; k++) {
            int64_t got, m, prev;

            assert_int_equal(mote_cron_next(&c, &utc, after, true, &got), 0);
            for (m = (after / 60 + 1) * 60; m < got; m += 60) { /* nothing in between */
                struct mote_tm tm;

                mote_tm_of(m, &tm);
                assert_false((c.min >> tm.min & 1) && (c.hour >> tm.hour & 1) &&
                             (c.mon >> tm.mon & 1) &&
                             ((c.mday_any || c.wday_any)
                                  ? ((c.mday_any || (c.mday >> tm.mday & 1)) &&
                                     (c.wday_any || (c.wday >> tm.wday & 1)))
                                  : ((c.mday >> tm.mday & 1) || (c.wday >> tm.wday & 1))));
            }
            assert_true(got % 60 == 0 && got > after);
            assert_int_equal(mote_cron_next(&c, &utc, got, false, &prev), 0);
            assert_true(prev <= after);
            after = got;
        }
    }
}

/* Paris: 02:30 each day runs once on the day the clock skips it (at
 * 03:00) and once on the day it repeats it (the first); 06:00 is 06:00
 * on both sides of the change. */
static void test_cron_in_a_zone(void **state)
{
    static struct mote_tz tz;
    struct mote_cron c;
    char err[120];
    int64_t t, a;

    (void)state;
    assert_int_equal(mote_tz_rule(&tz, "Europe/Paris", "CET-1CEST,M3.5.0,M10.5.0/3"), 0);
    assert_int_equal(mote_cron_parse(&c, "30 2 * * *", err, sizeof(err)), 0);
    a = INT64_C(1774656000); /* 2026-03-28T00:00Z */
    assert_int_equal(mote_cron_next(&c, &tz, a, true, &t), 0);
    assert_true(t == INT64_C(1774661400)); /* 28th 02:30 CET = 01:30Z */
    assert_int_equal(mote_cron_next(&c, &tz, t, true, &t), 0);
    assert_true(t == INT64_C(1774746000)); /* 29th: skipped, at 03:00 CEST = 01:00Z */
    assert_int_equal(mote_cron_next(&c, &tz, t, true, &t), 0);
    assert_true(t == INT64_C(1774830600)); /* 30th 02:30 CEST = 00:30Z */
    a = INT64_C(1792800000); /* 2026-10-24T00:00Z */
    assert_int_equal(mote_cron_next(&c, &tz, a, true, &t), 0);
    assert_true(t == INT64_C(1792801800)); /* 24th 02:30 CEST */
    assert_int_equal(mote_cron_next(&c, &tz, t, true, &t), 0);
    assert_true(t == INT64_C(1792888200)); /* 25th, the first 02:30 (CEST) */
    assert_int_equal(mote_cron_next(&c, &tz, t, true, &t), 0);
    assert_true(t == INT64_C(1792978200)); /* 26th 02:30 CET: the second of the 25th never */
    assert_int_equal(mote_cron_parse(&c, "0 6 * * *", err, sizeof(err)), 0);
    assert_int_equal(mote_cron_next(&c, &tz, INT64_C(1774674000), true, &t), 0);
    assert_true(t == INT64_C(1774756800)); /* 29th 06:00 CEST = 04:00Z */
    assert_int_equal(mote_cron_next(&c, &tz, t, false, &a), 0);
    assert_true(a == INT64_C(1774674000)); /* 28th 06:00 CET = 05:00Z */
    /* never-matching days are refused at parse; a far search ends */
    assert_int_equal(mote_cron_parse(&c, "0 0 29 2 *", err, sizeof(err)), 0);
    assert_int_equal(mote_cron_next(&c, &tz, INT64_C(1772323200), true, &t), 0);
    assert_true(t > INT64_C(1772323200) + 365 * 86400); /* 2028-02-29 */
    assert_int_equal(mote_cron_next(&c, &tz, MOTE_TIME_MAX - 86400, true, &t), MOTE_ERR_NOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_division),
        cmocka_unit_test(test_civil_against_libc),
        cmocka_unit_test(test_iso),
        cmocka_unit_test(test_tz_against_libc),
        cmocka_unit_test(test_tz_rules),
        cmocka_unit_test(test_tz_local_and_names),
        cmocka_unit_test(test_cron_parse),
        cmocka_unit_test(test_cron_brute),
        cmocka_unit_test(test_cron_in_a_zone),
    };

    return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
