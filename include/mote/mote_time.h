/*
 * mote_time.h - time as people write it: durations ("10m", "90s"),
 * civil dates and times (UTC seconds <-> year, month, day, ...) and ISO
 * 8601 times ("2026-03-01T06:00:00Z").
 *
 * Everything here is pure: no port, no clock, no allocation, no 64-bit
 * division (small targets lack it); times are seconds since 1970-01-01
 * UTC in an int64_t, the range years 1..9999.
 */
#ifndef MOTE_TIME_H
#define MOTE_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"

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

#endif /* MOTE_TIME_H */
