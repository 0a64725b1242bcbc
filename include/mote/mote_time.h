/*
 * mote_time.h - time as people write it: durations ("10m", "90s"),
 * civil dates and times (UTC seconds <-> year, month, day, ...) and ISO
 * 8601 times ("2026-03-01T06:00:00Z"), time zones from the system's
 * zoneinfo (TZif files, RFC 8536, with their POSIX TZ rule for the years
 * after their table) and 5-field cron expressions, as mote serve's
 * schedules use them (docs/SERVE.md, "Schedules").
 *
 * Everything here is pure: no port, no clock, no allocation, no 64-bit
 * division (small targets lack it); times are seconds since 1970-01-01
 * UTC in an int64_t, the range years 1..9999. The caller reads a zone's
 * file (the port's tz_open and fs_read) and hands its bytes to
 * mote_tz_parse.
 */
#ifndef MOTE_TIME_H
#define MOTE_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- durations ------------------------------------------------------------ */

/* A duration as people write it: a number with a unit, "500ms", "90s",
 * "10m", "2h", "1d", or several in a row ("1h30m"); a bare number is
 * seconds ("600"). Whitespace around it is allowed. "0", "none" and "off"
 * are 0. At most 10 years. Returns 0 and *ms, or MOTE_ERR_INVAL. */
int mote_duration_parse(const char *s, uint64_t *ms) MOTE_MUST_CHECK;

/* Says `ms` in words into `out` (cap bytes, NUL-terminated): "2 seconds",
 * "10 minutes", "1 hour", "1 day", "1500 ms" - the largest unit it is a
 * whole number of. Returns the length. */
size_t mote_duration_say(char *out, size_t cap, uint64_t ms);

/* ---- civil time ------------------------------------------------------------- */

struct mote_tm {
    int32_t year;   /* 1..9999 */
    uint8_t mon;    /* 1..12 */
    uint8_t mday;   /* 1..31 */
    uint8_t hour;   /* 0..23 */
    uint8_t min;    /* 0..59 */
    uint8_t sec;    /* 0..59 */
    uint8_t wday;   /* 0..6, Sunday 0 */
    uint16_t yday;  /* 0..365 */
};

/* The earliest and latest times handled (0001-01-01, 9999-12-31T23:59:59Z). */
#define MOTE_TIME_MIN (-62135596800LL)
#define MOTE_TIME_MAX 253402300799LL

/* The civil date and time of `t` (clamped to the range above). */
void mote_tm_of(int64_t t, struct mote_tm *tm);

/* The time of civil date and time `tm` (read as UTC; wday and yday are
 * ignored, a day past its month's end runs on into the next). */
int64_t mote_time_of(const struct mote_tm *tm);

/* Days in month `mon` (1..12) of `year`. */
unsigned mote_month_days(int32_t year, unsigned mon);

/* `a` divided by `b` (b > 0), rounded down, with the remainder (0..b-1)
 * in *rem if not NULL: 64-bit division without the C library's helper. */
int64_t mote_time_div(int64_t a, uint32_t b, uint32_t *rem);

/* ---- ISO 8601 ------------------------------------------------------------------ */

/* Writes `t` as "YYYY-MM-DDTHH:MM:SS" followed by "Z" (off_s 0 and
 * `utc`) or the offset ("+01:00") of local time off_s seconds east of
 * UTC; `out` needs MOTE_ISO_MAX bytes. Returns the length. */
#define MOTE_ISO_MAX 32
size_t mote_iso_write(char *out, int64_t t, int32_t off_s, bool utc);

/* Reads "YYYY-MM-DDTHH:MM[:SS]" with "Z", an offset ("+01:00", "-0530")
 * or nothing (a space may stand for the T). With a zone or offset,
 * *t is the instant and *local false; without, *t is the civil time read
 * as UTC (mote_time_of) and *local true: the caller places it in its
 * zone (mote_tz_local). Returns 0, or MOTE_ERR_INVAL. */
int mote_iso_parse(const char *s, int64_t *t, bool *local) MOTE_MUST_CHECK;

/* ---- time zones ----------------------------------------------------------------- */

/* A POSIX TZ rule's change date ("M3.5.0/2", "J60", "59"). */
struct mote_tz_date {
    uint8_t kind;    /* 'M' (month, week, day), 'J' (Julian day 1..365, no Feb 29) or
                      * 'n' (day 0..365 counting Feb 29) */
    uint8_t mon;     /* M: 1..12 */
    uint8_t week;    /* M: 1..5 (5: the last) */
    uint8_t wday;    /* M: 0..6 */
    uint16_t day;    /* J, n */
    int32_t time;    /* seconds after local midnight (-167h..167h) */
};

/* A zone: the transitions of its table from a given time on (at most
 * MOTE_TZ_TRANSITIONS), and the POSIX TZ rule of its footer for the
 * times after them. Times before the `from` it was read with are not
 * known (their offset is the one in force at `from`). A table longer
 * than MOTE_TZ_TRANSITIONS goes on by the rule after the last kept
 * transition: exact where the table follows the rule (zones with daylight
 * saving: 32 years from `from`), not for a table of its own making
 * (Africa/Casablanca's Ramadan changes, kept for about 20 years). */
struct mote_tz {
    char name[MOTE_TZ_NAME_MAX];
    uint16_t ntrans;
    uint8_t ntypes;
    uint8_t type0;           /* the type in force before the first kept transition */
    bool truncated;          /* the table went on past MOTE_TZ_TRANSITIONS */
    int64_t trans[MOTE_TZ_TRANSITIONS];
    uint8_t ttype[MOTE_TZ_TRANSITIONS];
    int32_t off[MOTE_TZ_TYPES]; /* each type's offset, seconds east of UTC */
    /* the footer's rule (after the table) */
    bool has_rule;
    bool rule_dst;           /* it has a daylight-saving part */
    int32_t std_off, dst_off;
    struct mote_tz_date start, end; /* when DST starts and ends (local, each in the offset
                                     * in force before it) */
};

/* `tz` is UTC ("UTC", offset 0 for ever). */
void mote_tz_utc(struct mote_tz *tz);

/* True if `name` may name a zone: 1..MOTE_TZ_NAME_MAX-1 bytes of
 * [A-Za-z0-9_+-.] and '/', with no empty, "." or ".." part and no
 * leading '/' (so it never leaves the zoneinfo directory). */
bool mote_tz_name_ok(const char *name);

/* Reads zone `name` from `data` (len bytes of a TZif file, versions 1 to
 * 4), keeping the transitions from `from` on (and the type in force at
 * it). Returns 0, MOTE_ERR_CORRUPT (not a TZif file, or inconsistent:
 * `err` says what) or MOTE_ERR_NOTSUP (a rule it cannot read, or more
 * types than MOTE_TZ_TYPES: `err`). */
int mote_tz_parse(struct mote_tz *tz, const char *name, const uint8_t *data, size_t len,
                  int64_t from, char *err, size_t cap) MOTE_MUST_CHECK;

/* Reads a POSIX TZ rule ("CET-1CEST,M3.5.0,M10.5.0/3", "<+0330>-3:30",
 * "UTC0") into tz (no table). Returns 0 or MOTE_ERR_INVAL. */
int mote_tz_rule(struct mote_tz *tz, const char *name, const char *rule) MOTE_MUST_CHECK;

/* The offset east of UTC, seconds, in force at instant `t`. */
int32_t mote_tz_offset(const struct mote_tz *tz, int64_t t);

/* Where civil time `local` (mote_time_of of a wall-clock reading in the
 * zone) falls: returns 1 and *t the instant, 2 when it is ambiguous (a
 * clock set back: *t the earlier of the two), or 0 when the zone skips
 * it (a clock set forward: *t the first instant after the gap). */
int mote_tz_local(const struct mote_tz *tz, int64_t local, int64_t *t);

/* ---- cron ----------------------------------------------------------------------- */

/* A 5-field cron expression: minute hour day-of-month month day-of-week,
 * each "*", a number, a range "a-b", a step "*\/n" or "a-b/n", or a list
 * of those ("1,15,30-40/5"); months and days may be named (jan..dec,
 * sun..sat; 7 is Sunday too). As Vixie cron: when both day fields are
 * restricted (neither starts with "*") a day matching either runs. Also
 * @hourly, @daily (@midnight), @weekly, @monthly, @yearly (@annually). */
struct mote_cron {
    uint64_t min;     /* bit m: minute m */
    uint32_t hour;
    uint32_t mday;    /* bit d: day d (1..31) */
    uint16_t mon;     /* bit m: month m (1..12) */
    uint8_t wday;     /* bit d: day d (0..6) */
    bool mday_any, wday_any;
};

/* Parses `expr`. Returns 0, or MOTE_ERR_INVAL with one line in `err`
 * (what is wrong, or that it never matches: "0 0 31 2 *"). */
int mote_cron_parse(struct mote_cron *c, const char *expr, char *err,
                    size_t cap) MOTE_MUST_CHECK;

/* The first time the expression names strictly after instant `after`
 * (`later`) or the last strictly before it (!`later`), in zone `tz`:
 * each civil minute it names is placed in the zone by mote_tz_local (a
 * minute the zone skips runs at the end of the gap; one it repeats, the
 * first time only). Searches at most 10 years. Returns 0 and *t, or
 * MOTE_ERR_NOENT. */
int mote_cron_next(const struct mote_cron *c, const struct mote_tz *tz, int64_t after, bool later,
                   int64_t *t) MOTE_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* MOTE_TIME_H */
