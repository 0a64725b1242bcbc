/*
 * mote_budget.h - a spend budget that fails closed: limits on a device's
 * model requests, tokens (input, output, cached) and, with a price per
 * model, money, per hour and per day (docs/SERVE.md, "Budget").
 *
 * Each model request is reserved before it is sent: a record in the
 * budget's journal (STATE/budget.jsonl), synced, counts it at once, with
 * its largest answer (max_tokens) as output tokens until its real usage
 * settles it. A restart reads the journal again, so it never resets what
 * was spent; a reservation whose request never settled (mote killed)
 * stays counted whole. When a limit is reached the next request is not
 * reserved: mote_budget_reserve says why and until when, and the agent
 * holds the turn (nothing is sent) until then (mote_session_use_budget,
 * mote_agent.h).
 *
 * Windows are the hours and days of UTC on the budget's clock: the
 * real-time clock, never earlier than the latest record (a clock that
 * goes back does not give spent budget back: a record dated after "now"
 * counts in the current window), and running on the monotonic clock
 * while the real-time one is not set (a device booting in 1970).
 *
 * A request is one model request of a turn (a tool round is another);
 * the client's own retries of a failed attempt (429, 5xx, a reset before
 * the first byte: mote_llm_conf.max_attempts) are part of it. Token
 * limits are checked before a request with what is spent: a request is
 * sent while any is left, so the last one may pass the limit by its own
 * usage; request limits are exact.
 *
 * Calling rules: the loop's thread; reserve and open block as long as
 * the port's storage calls they make (a sync), never longer.
 */
#ifndef MOTE_BUDGET_H
#define MOTE_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_json.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The price of a model's tokens, micro-units of money (1e-6 of a dollar,
 * a euro) per million tokens: "3.00" is 3000000. */
struct mote_budget_price {
    char model[MOTE_BUDGET_MODEL_MAX]; /* exact, or "*" for any model without its own */
    uint64_t input, output, cached;    /* cached: read from or written to a prompt cache */
};

/* The limits: 0 is no limit. Each applies to every conversation together. */
struct mote_budget_conf {
    uint32_t requests_hour, requests_day;
    uint64_t input_hour, input_day;    /* tokens sent, not from a cache */
    uint64_t output_hour, output_day;  /* tokens answered */
    uint64_t cached_hour, cached_day;  /* tokens read from or written to a cache */
    uint64_t cost_hour, cost_day;      /* micro-units of money (needs prices) */
    unsigned nprices;
    struct mote_budget_price prices[MOTE_BUDGET_PRICES];
};

/* What one window holds. cost is in pico-units (1e-12: tokens times
 * micro-units per million), so that no division is needed. */
struct mote_budget_window {
    int64_t start;           /* its first second (UTC) */
    uint32_t requests;
    uint64_t input, output, cached;
    uint64_t cost_pico;
};

/* A request reserved and not settled yet. */
struct mote_budget_hold {
    uint64_t id;
    int64_t at;
    uint32_t max_out;
    uint64_t price_out;      /* its model's output price (the reserved cost) */
};

struct mote_budget {
    const struct mote_port *port;
    struct mote_budget_conf conf;
    bool open;
    int h;                   /* STATE/budget.jsonl */
    int err;                 /* the first storage failure (then nothing is reserved) */
    uint64_t size;           /* of the journal */
    uint64_t next_id;
    int64_t last_at;         /* the latest time of a record */
    int64_t at_base;         /* the budget's clock: at_base + (now_ms - ms_base) */
    uint32_t ms_base;
    struct mote_budget_window hour, day;
    unsigned nholds;
    struct mote_budget_hold holds[MOTE_BUDGET_HOLDS];
    /* the last refusal: why (one line), until when (UTC seconds) */
    char why[160];
    int64_t until;
    uint64_t damaged;        /* lines of the journal that could not be read (counted as
                              * requests: fail closed) */
    struct mote_json json;
    char line[512];
};

/* True if `c` has any limit. */
bool mote_budget_any(const struct mote_budget_conf *c);

/* Reads "MODEL=IN,OUT[,CACHED]" (prices per million tokens as decimals,
 * "claude-sonnet-4-5=3,15,0.30") into `p`. Returns 0 or MOTE_ERR_INVAL. */
int mote_budget_price_parse(const char *s, struct mote_budget_price *p) MOTE_MUST_CHECK;

/* A decimal amount of money ("2.50", "10") in micro-units. Returns 0 or
 * MOTE_ERR_INVAL (negative, more than 6 decimals, over 10^12). */
int mote_budget_money_parse(const char *s, uint64_t *micro) MOTE_MUST_CHECK;

/* Opens the budget on `port`'s storage (STATE/budget.jsonl, created if
 * missing) and reads what was spent in the current hour and day. A
 * reservation never settled counts whole. Returns 0, or a storage
 * failure (`err`: one line). */
int mote_budget_open(struct mote_budget *b, const struct mote_port *port,
                     const struct mote_budget_conf *conf, char *err, size_t cap) MOTE_MUST_CHECK;

/* The budget's clock now, UTC seconds (see above). */
int64_t mote_budget_now(struct mote_budget *b);

/* Reserves one request of conversation `conv` to `model` answering at
 * most `max_out` tokens: journaled and synced, then counted. Returns 0
 * and *id; MOTE_ERR_BUDGET when a limit is reached (b->why says which,
 * b->until when it frees: nothing is written); or a storage failure
 * (nothing may be sent: the budget fails closed). */
int mote_budget_reserve(struct mote_budget *b, const char *conv, const char *model,
                        uint32_t max_out, uint64_t *id) MOTE_MUST_CHECK;

/* Settles reservation `id` with what the request used (`model` prices
 * it; zeros for a request that failed before its answer). Its record is
 * written without a sync: lost, the reservation counts whole. */
void mote_budget_settle(struct mote_budget *b, uint64_t id, const char *model, uint64_t input,
                        uint64_t output, uint64_t cached);

/* Rolls the windows to now; true if a reservation would be refused now
 * (b->why, b->until set). */
bool mote_budget_blocked(struct mote_budget *b);

void mote_budget_close(struct mote_budget *b);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_BUDGET_H */
