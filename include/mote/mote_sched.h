/*
 * mote_sched.h - schedules: a prompt sent to a conversation by itself,
 * at the times a rule names (docs/SERVE.md, "Schedules").
 *
 * A schedule has an id, a prompt, a target (a fixed conversation, or a
 * new one per occurrence), a rule - a 5-field cron expression in a time
 * zone, an interval, or a single time - and a catch-up rule for what was
 * missed while mote was down. This header is the definitions (read from
 * and written as JSON: the file, the API, MQTT and the agent's schedule
 * tool all use the same object) and the pure arithmetic of occurrences;
 * mote serve runs them (mote_serve.h: struct mote_serve_sched), each
 * occurrence journaled claimed -> started -> done or skipped with its
 * reason, so that it runs once or says why it did not.
 *
 * Occurrences are named by a key: the occurrence's time (UTC seconds) for
 * a cron or a single time; its number (1, 2, ...) for an interval, which
 * runs on the monotonic clock.
 */
#ifndef MOTE_SCHED_H
#define MOTE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_json.h"
#include "mote/mote_time.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mote_sched_kind {
    MOTE_SCHED_CRON = 1, /* "cron": "0 6 * * *", in "tz" */
    MOTE_SCHED_EVERY,    /* "every": "10m": an interval, from when the schedule was made */
    MOTE_SCHED_AT,       /* "at": "2026-03-01T06:00:00Z": once (without an offset: in "tz") */
};

enum mote_sched_catch {
    MOTE_CATCH_LATEST = 0, /* after downtime: the most recent missed occurrence runs once if
                            * it is younger than max_late; the others are skipped */
    MOTE_CATCH_NONE,       /* every missed occurrence is skipped */
};

/* Where a schedule came from. */
enum mote_sched_origin {
    MOTE_SCHED_API = 0, /* the API, MQTT (kept in STATE/schedules.json) */
    MOTE_SCHED_AGENT,   /* the agent's schedule tool (the same file) */
    MOTE_SCHED_FILE,    /* a file of the configuration: fixed, the API cannot change it */
};

struct mote_sched {
    char id[MOTE_SCHED_ID_MAX];            /* [A-Za-z0-9_-] */
    char prompt[MOTE_SCHED_PROMPT_MAX];
    char conversation[MOTE_CONV_ID_MAX];   /* "": a new conversation per occurrence */
    uint8_t kind;                          /* enum mote_sched_kind */
    char rule[MOTE_SCHED_RULE_MAX];        /* the cron expression, interval or time as given */
    struct mote_cron cron;
    uint32_t every_ms;                     /* EVERY: 1 s to 49 days */
    int64_t at;                            /* AT: the instant (UTC seconds), once placed */
    bool at_local;                         /* AT: given without an offset: in tz */
    char tz[MOTE_TZ_NAME_MAX];             /* "" or "UTC": UTC */
    uint8_t catch_up;                      /* enum mote_sched_catch */
    bool max_late_set;                     /* "max_late" was given: */
    uint32_t max_late_s;                   /* the catch-up's age limit, seconds */
    bool enabled;
    uint8_t origin;                        /* enum mote_sched_origin */
    char created_by[MOTE_CONV_ID_MAX];     /* AGENT: the conversation whose tool made it */
};

/* True if id[0..n) may name a schedule: 1..MOTE_SCHED_ID_MAX-1 bytes of
 * [A-Za-z0-9_-]. */
bool mote_sched_id_ok(const char *id, size_t n);

/* Reads schedule object `obj` of `j` (strict: each key once; unknown keys
 * refused, so a typo does not silently run something else) into `s`:
 * {"id", "prompt", one of "cron", "every", "at", "tz", "conversation"
 * (absent or null: a new one per occurrence), "catch_up" ("latest" or
 * "none"), "max_late" (a duration), "enabled"}; `id_given`, if not NULL,
 * is the id when the object has none (a PUT's path). A cron expression in
 * a zone: the zone's name is checked (mote_tz_name_ok), not looked up.
 * Returns 0, or MOTE_ERR_INVAL with one line in `err`. */
int mote_sched_parse(struct mote_sched *s, const struct mote_json *j, int obj,
                     const char *id_given, char *err, size_t cap) MOTE_MUST_CHECK;

/* Writes the members of `s` as mote_sched_parse reads them (the caller
 * opens and closes the object: it may add its own). */
void mote_sched_write(const struct mote_sched *s, struct mote_jw *w);

/* The catch-up age limit of `s`, seconds ("max_late", else
 * MOTE_SCHED_MAX_LATE_S). An occurrence up to MOTE_SCHED_GRACE_S late
 * is on time, whatever it says. */
uint32_t mote_sched_max_late(const struct mote_sched *s);
#define MOTE_SCHED_GRACE_S 60

/* An interval schedule last ran (or was made) at `last_ms` and it is
 * `now_ms` (real-time clock, ms): how many of its occurrences passed
 * since (*missed), and how long ago the most recent of them was
 * (*age_ms). Pure. */
void mote_sched_every_missed(const struct mote_sched *s, int64_t last_ms, int64_t now_ms,
                             uint64_t *missed, uint32_t *age_ms);

/* The first occurrence of a cron or single-time schedule strictly after
 * `after` (UTC seconds) in zone `tz` (a single time placed in it when it
 * was given without an offset): 0 and *key, or MOTE_ERR_NOENT (none: a
 * single time passed). */
int mote_sched_next(const struct mote_sched *s, const struct mote_tz *tz, int64_t after,
                    int64_t *key) MOTE_MUST_CHECK;

/* The last occurrence at or before `now` (the most recent one due). */
int mote_sched_last(const struct mote_sched *s, const struct mote_tz *tz, int64_t now,
                    int64_t *key) MOTE_MUST_CHECK;

/* What is due of a cron or single-time schedule whose occurrences up to
 * `cursor` are handled (run or skipped), at `now`: the catch-up rule
 * applied. */
struct mote_sched_due {
    bool run;            /* one occurrence runs now: */
    int64_t run_key;
    uint64_t skip_count; /* occurrences skipped, from skip_from to skip_to (keys; 0: none) */
    int64_t skip_from, skip_to;
    bool too_old;        /* the most recent is skipped too: older than max_late (or
                          * catch_up none) */
    int64_t cursor;      /* handled up to here after this */
};

/* The decision at `now` (pure): nothing when the next occurrence after
 * `cursor` has not come; else the most recent one due runs if it is
 * younger than max_late (and catch_up is latest), and every earlier one
 * since `cursor` is skipped (counted up to 100000 by walking them; their
 * range is exact). Never a burst: at most one runs. Returns 0, or
 * MOTE_ERR_NOENT when nothing is due. */
int mote_sched_due(const struct mote_sched *s, const struct mote_tz *tz, int64_t cursor,
                   int64_t now, struct mote_sched_due *d) MOTE_MUST_CHECK;

#ifdef __cplusplus
}
#endif

#endif /* MOTE_SCHED_H */
