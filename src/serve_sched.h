/*
 * serve_sched.h - what mote serve's schedules' files share (internal):
 *
 *   serve_sched.c      the runner: the clocks (real-time and monotonic, a
 *                      jump seen and journaled), what is due, the catch-up
 *                      after downtime, each occurrence claimed, started in
 *                      its conversation and done, the occurrences a crash
 *                      left open finished once or skipped with the reason
 *   serve_sched_log.c  the occurrences' journal (STATE/schedules.jsonl,
 *                      rewritten small when it grows) and the definitions'
 *                      file (STATE/schedules.json, replaced atomically)
 *   serve_sched_api.c  GET/PUT/DELETE /v1/schedules[/ID], the same on MQTT,
 *                      the agent's schedule tool, the schedules as JSON
 *
 * The state lives in struct mote_serve_sched's area (conf.sched).
 */
#ifndef MOTE_SERVE_SCHED_H
#define MOTE_SERVE_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_sched.h"
#include "serve_int.h"

/* The open occurrence of a schedule. */
enum sched_open { SO_NONE = 0, SO_CLAIMED, SO_STARTED };

/* One schedule as the runner holds it. */
struct sched_slot {
    bool used;
    struct mote_sched def;
    int zone;                     /* its zone in zones[] (-1: UTC) */
    char error[96];               /* why it cannot run ("": it can) */
    /* handled so far (from the journal) */
    bool has_cursor;
    int64_t cursor;               /* cron, at: every key up to this is run or skipped */
    uint64_t last_n;              /* every: the last occurrence's number */
    int64_t last_ms;              /* every: when it last ran or was made (real-time ms; 0:
                                   * not known: the clock was not set) */
    bool mono_set;
    uint32_t next_mono;           /* every: when the next is due (monotonic ms) */
    bool planned;                 /* every: the catch-up after the start was decided */
    /* the occurrence under way */
    uint8_t open;                 /* enum sched_open */
    int64_t open_key;
    int64_t open_at;              /* its time (real-time s; 0: not known) */
    char open_conv[MOTE_CONV_ID_MAX];
    uint32_t open_since;          /* monotonic ms when it was claimed */
    struct mote_rec_usage open_usage; /* its turn's, as the events said */
    /* what it did */
    uint64_t runs, skips, failed;
    struct mote_rec_usage usage;
    bool has_last;
    int64_t last_key, last_at;    /* the last occurrence that ran, and when */
    char last_outcome[16];        /* "ok", "error", "cancelled" */
};

struct sched {
    struct serve *sv;
    bool on;                      /* started */
    bool stopping;                /* the server shuts down: nothing starts */
    int h;                        /* the journal's handle (-1: none) */
    int err;                      /* its first failure: nothing more runs */
    uint64_t size;
    mote_timer_id timer;
    /* the clocks */
    bool plausible;               /* the real-time clock is set */
    bool synced;                  /* and the port says synchronised */
    bool have_prev;
    int64_t wall_prev_ms;         /* the last reading, and the monotonic clock then */
    uint32_t mono_prev;
    uint64_t jumps;
    struct sched_slot slots[MOTE_SCHED_MAX];
    unsigned nzones;
    struct mote_tz zones[MOTE_SCHED_ZONES];
    char default_tz[MOTE_TZ_NAME_MAX];
    struct mote_json json;
    char line[1024];              /* a journal line */
    uint8_t tzbuf[MOTE_TZ_FILE_MAX];
};

_Static_assert(sizeof(struct sched) <= sizeof(((struct mote_serve_sched *)0)->area),
               "MOTE_SERVE_SCHED_AREA_SIZE (mote_serve.h) is smaller than the runner's state");

static inline struct sched *mote_serve_sched_of(const struct serve *sv)
{
    return sv->conf.sched != NULL ? (struct sched *)(void *)sv->conf.sched->area.bytes : NULL;
}

/* ---- serve_sched.c ------------------------------------------------------------------ */

/* The real-time clock (ms), and whether it is set; false if the port has
 * none. Also notes a jump (journaled). */
bool mote_sched_clock(struct sched *q, int64_t *ms);
/* The zone of slot `s` (UTC if none). */
const struct mote_tz *mote_sched_zone(struct sched *q, const struct sched_slot *s);
/* Loads (or finds) zone `name`: its index, -1 for UTC; < -1 on failure
 * (MOTE_ERR_NOENT - 0x100 ...: the caller says it as not found). */
int mote_sched_zone_load(struct sched *q, const char *name, char *err, size_t cap);
/* The next occurrence of slot `s` as the runner sees it: 1 and *key,
 * *at (its time, real-time s; 0 when it runs on the monotonic clock and
 * the clock is not set), or 0 (none). */
int mote_sched_upcoming(struct sched *q, const struct sched_slot *s, int64_t *key, int64_t *at);
/* A schedule was added or changed (its slot filled): it counts from now
 * (an "arm" record), and the runner looks again. Returns 0 or the
 * journal's failure. */
int mote_sched_armed(struct sched *q, struct sched_slot *s);
/* Look again soon (a definition changed, a conversation freed). */
void mote_sched_kick(struct sched *q);

/* ---- serve_sched_log.c -------------------------------------------------------------- */

/* Opens STATE/schedules.jsonl and replays it into the slots (the
 * definitions are read first). Returns 0 or a storage failure. */
int mote_sched_log_open(struct sched *q);
void mote_sched_log_close(struct sched *q);
/* The records (each one line, synced where `sync`): */
int mote_sched_log_arm(struct sched *q, struct sched_slot *s, int64_t at_ms);
int mote_sched_log_claim(struct sched *q, struct sched_slot *s);
int mote_sched_log_start(struct sched *q, struct sched_slot *s);
int mote_sched_log_done(struct sched *q, struct sched_slot *s, const char *outcome);
int mote_sched_log_skip(struct sched *q, struct sched_slot *s, int64_t from, int64_t to,
                        uint64_t count, const char *reason);
int mote_sched_log_clock(struct sched *q, int64_t from_ms, int64_t to_ms, int64_t by_ms);
/* The journal rewritten small (each schedule's state) if it passed
 * MOTE_SCHED_LOG_MAX and nothing is open. */
void mote_sched_log_tidy(struct sched *q);
/* Reads the definitions: `fixed` text (a configuration file's, may be
 * NULL) and STATE/schedules.json. Returns 0 or a failure (said in the
 * log). */
int mote_sched_defs_read(struct sched *q, const char *fixed, size_t fixed_len);
/* Replaces STATE/schedules.json with the schedules that are not fixed.
 * Returns 0 or the storage failure (the old file stays). */
int mote_sched_defs_write(struct sched *q);
/* A line for the log: "schedule ID: " a b c. */
void mote_sched_say(struct sched *q, const char *id, const char *a, const char *b, const char *c);

/* ---- serve_sched_api.c ---------------------------------------------------------------- */

/* Slot `s` as the API shows it: the definition, its origin, the next
 * occurrence, the last one, the one under way, its counts and usage. */
void mote_sched_json(struct sched *q, const struct sched_slot *s, struct mote_jw *w);

#endif /* MOTE_SERVE_SCHED_H */
