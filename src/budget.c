/*
 * budget.c - the spend budget (mote_budget.h): its journal
 * (STATE/budget.jsonl: a reservation before each model request, synced;
 * its settlement after), the hour's and the day's windows read back from
 * it, the budget's clock that never goes back, and the check that refuses
 * a request once a limit is reached.
 */
#include <string.h>

#include "mote/mote_budget.h"
#include "mote/mote_time.h"
#include "util.h"

#define BUDGET_FILE "budget.jsonl"
#define HOUR 3600
#define DAY 86400

bool mote_budget_any(const struct mote_budget_conf *c)
{
    return c->requests_hour || c->requests_day || c->input_hour || c->input_day ||
           c->output_hour || c->output_day || c->cached_hour || c->cached_day || c->cost_hour ||
           c->cost_day;
}

int mote_budget_money_parse(const char *s, uint64_t *micro)
{
    uint64_t whole = 0, frac = 0;
    unsigned k = 0, f = 0;

    while (*s == ' ')
        s++;
    while (*s >= '0' && *s <= '9') {
        if (++k > 12)
            return MOTE_ERR_INVAL;
        whole = whole * 10u + (uint64_t)(*s++ - '0');
    }
    if (*s == '.') {
        s++;
        while (*s >= '0' && *s <= '9') {
            if (++f > 6)
                return MOTE_ERR_INVAL;
            frac = frac * 10u + (uint64_t)(*s++ - '0');
        }
        if (f == 0)
            return MOTE_ERR_INVAL;
    }
    while (*s == ' ')
        s++;
    if (k == 0 || *s != '\0')
        return MOTE_ERR_INVAL;
    while (f++ < 6)
        frac *= 10u;
    *micro = whole * 1000000u + frac;
    return 0;
}

int mote_budget_price_parse(const char *s, struct mote_budget_price *p)
{
    const char *eq = strchr(s, '=');
    char part[32];
    uint64_t *v[3];
    unsigned i;

    memset(p, 0, sizeof(*p));
    v[0] = &p->input;
    v[1] = &p->output;
    v[2] = &p->cached;
    if (eq == NULL || eq == s || (size_t)(eq - s) >= sizeof(p->model))
        return MOTE_ERR_INVAL;
    memcpy(p->model, s, (size_t)(eq - s));
    s = eq + 1;
    for (i = 0; i < 3; i++) {
        const char *end = strchr(s, ',');
        size_t n = end != NULL ? (size_t)(end - s) : strlen(s);

        if (n == 0 || n >= sizeof(part))
            return MOTE_ERR_INVAL;
        memcpy(part, s, n);
        part[n] = '\0';
        if (mote_budget_money_parse(part, v[i]) < 0)
            return MOTE_ERR_INVAL;
        if (end == NULL)
            return i >= 1 ? 0 : MOTE_ERR_INVAL; /* input and output at least */
        s = end + 1;
    }
    return MOTE_ERR_INVAL; /* a fourth */
}

static const struct mote_budget_price *price_of(const struct mote_budget *b, const char *model)
{
    const struct mote_budget_price *any = NULL;
    unsigned i;

    for (i = 0; i < b->conf.nprices && i < MOTE_BUDGET_PRICES; i++) {
        if (model != NULL && strcmp(b->conf.prices[i].model, model) == 0)
            return &b->conf.prices[i];
        if (strcmp(b->conf.prices[i].model, "*") == 0)
            any = &b->conf.prices[i];
    }
    return any;
}

/* ---- the clock --------------------------------------------------------------------- */

int64_t mote_budget_now(struct mote_budget *b)
{
    const struct mote_port *p = b->port;
    uint32_t el = p->now_ms(p->ctx) - b->ms_base, secs = el / 1000u;
    int64_t t, wall_ms;
    int st;

    b->ms_base += secs * 1000u; /* (the rest of a second is kept for the next call) */
    b->at_base += secs;
    t = b->at_base;
    if (MOTE_PORT_HAS(p, clock_real) && (st = p->clock_real(p->ctx, &wall_ms)) >= 0) {
        int64_t wall = mote_time_div(wall_ms, 1000u, NULL);

        if (st == MOTE_CLOCK_SYNCED)
            t = wall; /* synchronised: the clock says it */
        else if (wall >= MOTE_CLOCK_FLOOR_S && wall > t)
            t = wall; /* set, and ahead: never back */
    }
    b->at_base = t;
    return t;
}

/* ---- the windows --------------------------------------------------------------------- */

static void add(struct mote_budget_window *w, int64_t at, uint32_t req, uint64_t in,
                uint64_t out, uint64_t cached, uint64_t cost)
{
    if (at < w->start)
        return; /* an earlier window's */
    w->requests += req;
    w->input += in;
    w->output += out;
    w->cached += cached;
    w->cost_pico += cost;
}

static uint64_t less(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

static void take(struct mote_budget_window *w, int64_t at, uint64_t out, uint64_t cost)
{
    if (at < w->start)
        return;
    w->output = less(w->output, out);
    w->cost_pico = less(w->cost_pico, cost);
}

/* The window of `len` seconds holding `now`; a new one starts empty but
 * for the requests still held in it. */
static void roll(struct mote_budget *b, struct mote_budget_window *w, int64_t now, uint32_t len)
{
    int64_t start = mote_time_div(now, len, NULL) * len;
    unsigned i;

    if (start <= w->start)
        return;
    memset(w, 0, sizeof(*w));
    w->start = start;
    for (i = 0; i < b->nholds; i++)
        add(w, b->holds[i].at, 0, 0, b->holds[i].max_out, 0,
            (uint64_t)b->holds[i].max_out * b->holds[i].price_out);
}

static void roll_all(struct mote_budget *b, int64_t now)
{
    roll(b, &b->hour, now, HOUR);
    roll(b, &b->day, now, DAY);
}

/* Why a window refuses, if it does: the limit that is reached. */
static const char *reached(const struct mote_budget_window *w, uint32_t req, uint64_t in,
                           uint64_t out, uint64_t cached, uint64_t cost, uint64_t *n,
                           uint64_t *lim)
{
    if (req != 0 && w->requests >= req) {
        *n = w->requests;
        *lim = req;
        return " requests";
    }
    if (in != 0 && w->input >= in) {
        *n = w->input;
        *lim = in;
        return " input tokens";
    }
    if (out != 0 && w->output >= out) {
        *n = w->output;
        *lim = out;
        return " output tokens (the requests under way count their largest answer)";
    }
    if (cached != 0 && w->cached >= cached) {
        *n = w->cached;
        *lim = cached;
        return " cached tokens";
    }
    if (cost != 0 && (uint64_t)mote_time_div((int64_t)w->cost_pico, 1000000u, NULL) >= cost) {
        *n = (uint64_t)mote_time_div((int64_t)w->cost_pico, 1000000u, NULL);
        *lim = cost;
        return " micro-units of money";
    }
    return NULL;
}

bool mote_budget_blocked(struct mote_budget *b)
{
    const struct mote_budget_conf *c = &b->conf;
    int64_t now = mote_budget_now(b);
    uint64_t n = 0, lim = 0;
    const char *what, *span;
    char when[MOTE_ISO_MAX];
    struct mote_sb sb;

    roll_all(b, now);
    b->until = 0;
    b->why[0] = '\0';
    /* the day first: its end is the later, and the one to wait for */
    what = reached(&b->day, c->requests_day, c->input_day, c->output_day, c->cached_day,
                   c->cost_day, &n, &lim);
    span = " today (UTC)";
    b->until = b->day.start + DAY;
    if (what == NULL) {
        what = reached(&b->hour, c->requests_hour, c->input_hour, c->output_hour, c->cached_hour,
                       c->cost_hour, &n, &lim);
        span = " this hour";
        b->until = b->hour.start + HOUR;
    }
    if (what == NULL) {
        b->until = 0;
        return false;
    }
    mote_iso_write(when, b->until, 0, true);
    mote_sb_init(&sb, b->why, sizeof(b->why));
    mote_sb_s(&sb, "the budget is spent: ");
    mote_sb_u(&sb, n);
    mote_sb_s(&sb, what);
    mote_sb_s(&sb, span);
    mote_sb_num(&sb, " (the limit is ", lim, ")");
    mote_sb_join(&sb, "; nothing is sent until ", when, NULL);
    return true;
}

/* ---- the journal ---------------------------------------------------------------------- */

/* Appends the line built in b->line (`len` bytes and its newline). */
static int append(struct mote_budget *b, size_t len, bool sync)
{
    const struct mote_port *p = b->port;
    int rc;

    if (b->err < 0)
        return b->err;
    b->line[len] = '\n';
    rc = p->st_append(p->ctx, b->h, b->line, len + 1);
    if (rc >= 0 && (size_t)rc != len + 1)
        rc = MOTE_ERR_NOSPC;
    if (rc >= 0 && sync)
        rc = p->st_sync(p->ctx, b->h);
    if (rc < 0) {
        /* a short append is cut back; the budget refuses from now on */
        (void)p->st_truncate(p->ctx, b->h, b->size);
        b->err = rc;
        return rc;
    }
    b->size += len + 1;
    return 0;
}

static void jw_open(struct mote_budget *b, struct mote_sb *k, struct mote_jw *w, const char *t)
{
    mote_sb_init(k, b->line, sizeof(b->line) - 1);
    mote_jw_init(w, mote_sb_put, k);
    mote_jw_obj(w);
    mote_jw_kstr(w, "t", t);
}

static void jw_num(struct mote_jw *w, const char *key, uint64_t v)
{
    mote_jw_key(w, key);
    mote_jw_int(w, (int64_t)v);
}

/* The keys of the windows in a "sum" line: the day's, then the hour's
 * (start, requests, input, output, cached, cost). */
static const char *const window_keys[2][6] = {
    {"at", "requests", "in", "out", "cached", "cost"},
    {"h_at", "h_requests", "h_in", "h_out", "h_cached", "h_cost"},
};

static void jw_window(struct mote_jw *w, const char *const *k, const struct mote_budget_window *x)
{
    jw_num(w, k[0], (uint64_t)x->start);
    jw_num(w, k[1], x->requests);
    jw_num(w, k[2], x->input);
    jw_num(w, k[3], x->output);
    jw_num(w, k[4], x->cached);
    jw_num(w, k[5], x->cost_pico);
}

/* Reads every line of the journal through `fn`. A line that is not JSON
 * (a torn last line after a power cut, damage) is counted in b->damaged
 * with `fn` not called. Returns 0 or a storage failure. */
static int each_line(struct mote_budget *b, void (*fn)(struct mote_budget *b, int64_t at))
{
    const struct mote_port *p = b->port;
    uint64_t off = 0;

    b->damaged = 0;
    while (off < b->size) {
        size_t want = b->size - off < sizeof(b->line) ? (size_t)(b->size - off) : sizeof(b->line);
        int got = p->st_read(p->ctx, b->h, off, b->line, want);
        char *nl;
        int64_t at = 0;
        size_t n;

        if (got < 0)
            return got;
        if (got == 0)
            break;
        nl = memchr(b->line, '\n', (size_t)got);
        if (nl == NULL) {
            if (off + (uint64_t)got >= b->size) {
                /* the torn end of a write cut short: its request was not
                 * sent (a reservation is synced before) */
                b->size = off;
                return p->st_truncate(p->ctx, b->h, off);
            }
            b->damaged++; /* a line over the limit: not ours */
            off += (uint64_t)got;
            continue;
        }
        n = (size_t)(nl - b->line);
        off += n + 1;
        if (mote_json_parse(&b->json, b->line, n) <= 0 ||
            mote_json_type_of(&b->json, 0) != MOTE_JSON_OBJECT ||
            mote_json_int(&b->json, mote_json_member(&b->json, 0, "at"), &at) < 0) {
            b->damaged++;
            continue;
        }
        fn(b, at);
    }
    return 0;
}

static uint64_t num(const struct mote_budget *b, const char *key)
{
    int64_t v = 0;

    if (mote_json_int(&b->json, mote_json_member(&b->json, 0, key), &v) < 0 || v < 0)
        return 0;
    return (uint64_t)v;
}

/* Adds what a "sum" line says window `w` held (keys `k`, from `start`). */
static void add_window(struct mote_budget *b, struct mote_budget_window *w, const char *const *k,
                       int64_t start)
{
    add(w, start, (uint32_t)num(b, k[1]), num(b, k[2]), num(b, k[3]), num(b, k[4]), num(b, k[5]));
}

static void find_last(struct mote_budget *b, int64_t at)
{
    uint64_t id = num(b, "id");

    if (at > b->last_at)
        b->last_at = at;
    if (id >= b->next_id)
        b->next_id = id + 1;
}

static struct mote_budget_hold *hold_of(struct mote_budget *b, uint64_t id)
{
    unsigned i;

    for (i = 0; i < b->nholds; i++) {
        if (b->holds[i].id == id)
            return &b->holds[i];
    }
    return NULL;
}

static void drop_hold(struct mote_budget *b, struct mote_budget_hold *h)
{
    *h = b->holds[--b->nholds];
}

/* A request reserved at `at`: counted, and held until it settles. With
 * the table full the oldest hold counts whole for good (fail closed). */
static void reserved(struct mote_budget *b, uint64_t id, int64_t at, uint32_t max_out,
                     uint64_t pout)
{
    struct mote_budget_hold *h;

    add(&b->hour, at, 1, 0, max_out, 0, (uint64_t)max_out * pout);
    add(&b->day, at, 1, 0, max_out, 0, (uint64_t)max_out * pout);
    if (b->nholds == MOTE_BUDGET_HOLDS)
        drop_hold(b, &b->holds[0]);
    h = &b->holds[b->nholds++];
    h->id = id;
    h->at = at;
    h->max_out = max_out;
    h->price_out = pout;
}

static void settled(struct mote_budget *b, uint64_t id, int64_t at, uint64_t in, uint64_t out,
                    uint64_t cached, uint64_t cost)
{
    struct mote_budget_hold *h = hold_of(b, id);

    if (h != NULL) {
        take(&b->hour, h->at, h->max_out, (uint64_t)h->max_out * h->price_out);
        take(&b->day, h->at, h->max_out, (uint64_t)h->max_out * h->price_out);
        drop_hold(b, h);
    }
    add(&b->hour, at, 0, in, out, cached, cost);
    add(&b->day, at, 0, in, out, cached, cost);
}

static void replay(struct mote_budget *b, int64_t at)
{
    const struct mote_json *j = &b->json;
    int t = mote_json_member(j, 0, "t");

    if (mote_json_eq(j, t, "reserve"))
        reserved(b, num(b, "id"), at, (uint32_t)num(b, "max_out"), num(b, "pout"));
    else if (mote_json_eq(j, t, "settle"))
        settled(b, num(b, "id"), at, num(b, "in"), num(b, "out"), num(b, "cached"),
                num(b, "cost"));
    else if (mote_json_eq(j, t, "sum")) {
        /* a rewritten journal's: what its windows held */
        add_window(b, &b->day, window_keys[0], at);
        add_window(b, &b->hour, window_keys[1], (int64_t)num(b, window_keys[1][0]));
    }
}

/* The rewritten journal's bytes: one "sum" of the windows (holds aside)
 * and a reservation per hold. */
struct rewrite {
    struct mote_budget *b;
    unsigned next; /* 0: the sum; 1..nholds: the holds */
};

static int rewrite_line(void *arg, char *buf, size_t cap)
{
    struct rewrite *r = arg;
    struct mote_budget *b = r->b;
    struct mote_budget_window d = b->day, h = b->hour;
    struct mote_sb k;
    struct mote_jw w;
    unsigned i;

    if (r->next > b->nholds)
        return 0;
    if (r->next == 0) {
        for (i = 0; i < b->nholds; i++) { /* the holds come back with their lines */
            take(&d, b->holds[i].at, b->holds[i].max_out,
                 (uint64_t)b->holds[i].max_out * b->holds[i].price_out);
            take(&h, b->holds[i].at, b->holds[i].max_out,
                 (uint64_t)b->holds[i].max_out * b->holds[i].price_out);
            d.requests -= d.requests > 0 && b->holds[i].at >= d.start;
            h.requests -= h.requests > 0 && b->holds[i].at >= h.start;
        }
        jw_open(b, &k, &w, "sum");
        jw_window(&w, window_keys[0], &d);
        jw_window(&w, window_keys[1], &h);
        jw_num(&w, "id", b->next_id);
    } else {
        const struct mote_budget_hold *o = &b->holds[r->next - 1];

        jw_open(b, &k, &w, "reserve");
        jw_num(&w, "id", o->id);
        jw_num(&w, "at", (uint64_t)o->at);
        jw_num(&w, "max_out", o->max_out);
        jw_num(&w, "pout", o->price_out);
    }
    mote_jw_obj_end(&w);
    if (w.err != 0 || k.len + 1 > cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(buf, k.p, k.len);
    buf[k.len] = '\n';
    r->next++;
    return (int)k.len + 1;
}

/* Rewrites the journal with only what the windows hold (atomically: a
 * crash leaves the old one or the new), then opens it again. */
static int rewrite(struct mote_budget *b)
{
    const struct mote_port *p = b->port;
    struct rewrite r = {b, 0};
    int64_t sz;
    int rc;

    rc = p->st_write_atomic(p->ctx, BUDGET_FILE, rewrite_line, &r);
    if (rc < 0)
        return rc; /* the old one stays, whole */
    p->st_close(p->ctx, b->h);
    b->h = p->st_open(p->ctx, BUDGET_FILE, MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (b->h < 0) {
        b->err = b->h;
        return b->h;
    }
    sz = p->st_size(p->ctx, b->h);
    if (sz < 0) {
        b->err = (int)sz;
        return b->err;
    }
    b->size = (uint64_t)sz;
    return 0;
}

int mote_budget_open(struct mote_budget *b, const struct mote_port *port,
                     const struct mote_budget_conf *conf, char *err, size_t cap)
{
    int64_t sz;
    int rc;

    memset(b, 0, offsetof(struct mote_budget, json));
    b->port = port;
    b->conf = *conf;
    b->h = port->st_open(port->ctx, BUDGET_FILE, MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (b->h < 0)
        return mote_why(err, cap, b->h, "cannot open STATE/" BUDGET_FILE ": ",
                        mote_strerror(b->h), NULL);
    sz = port->st_size(port->ctx, b->h);
    if (sz < 0) {
        port->st_close(port->ctx, b->h);
        return mote_why(err, cap, (int)sz, "cannot read STATE/" BUDGET_FILE, NULL, NULL);
    }
    b->size = (uint64_t)sz;
    b->open = true;
    b->next_id = 1;
    /* the latest time first (the clock never goes back before it), then
     * the windows it gives */
    if ((rc = each_line(b, find_last)) < 0) {
        mote_budget_close(b);
        return mote_why(err, cap, rc, "cannot read STATE/" BUDGET_FILE ": ", mote_strerror(rc),
                        NULL);
    }
    b->ms_base = port->now_ms(port->ctx);
    b->at_base = b->last_at;
    roll_all(b, mote_budget_now(b));
    if ((rc = each_line(b, replay)) < 0) {
        mote_budget_close(b);
        return mote_why(err, cap, rc, "cannot read STATE/" BUDGET_FILE ": ", mote_strerror(rc),
                        NULL);
    }
    /* a line that cannot be read counts as a request (fail closed) */
    b->hour.requests += (uint32_t)b->damaged;
    b->day.requests += (uint32_t)b->damaged;
    if (b->size > MOTE_BUDGET_LOG_MAX && b->damaged == 0)
        (void)rewrite(b); /* (failing, the long one stays: nothing is lost) */
    return 0;
}

int mote_budget_reserve(struct mote_budget *b, const char *conv, const char *model,
                        uint32_t max_out, uint64_t *id)
{
    const struct mote_budget_price *pr = price_of(b, model);
    uint64_t pout = pr != NULL ? pr->output : 0;
    struct mote_sb k;
    struct mote_jw w;
    int64_t now;
    int rc;

    *id = 0;
    if (!b->open)
        return MOTE_ERR_BADF;
    if (b->err < 0)
        return b->err;
    if (mote_budget_blocked(b))
        return MOTE_ERR_BUDGET;
    now = b->at_base;
    if (b->size > MOTE_BUDGET_LOG_MAX && b->nholds == 0 && b->damaged == 0)
        (void)rewrite(b);
    jw_open(b, &k, &w, "reserve");
    jw_num(&w, "id", b->next_id);
    jw_num(&w, "at", (uint64_t)now);
    mote_jw_kstr(&w, "conv", conv != NULL ? conv : "");
    mote_jw_kstr(&w, "model", model != NULL ? model : "");
    jw_num(&w, "max_out", max_out);
    jw_num(&w, "pout", pout);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return MOTE_ERR_TOO_LARGE;
    if ((rc = append(b, k.len, true)) < 0)
        return rc; /* nothing may be sent: the budget fails closed */
    *id = b->next_id++;
    reserved(b, *id, now, max_out, pout);
    return 0;
}

void mote_budget_settle(struct mote_budget *b, uint64_t id, const char *model, uint64_t input,
                        uint64_t output, uint64_t cached)
{
    const struct mote_budget_price *pr = price_of(b, model);
    uint64_t cost = 0;
    struct mote_sb k;
    struct mote_jw w;
    int64_t now;

    if (!b->open || id == 0 || hold_of(b, id) == NULL)
        return;
    if (pr != NULL)
        cost = input * pr->input + output * pr->output + cached * pr->cached;
    now = mote_budget_now(b);
    roll_all(b, now);
    settled(b, id, now, input, output, cached, cost);
    jw_open(b, &k, &w, "settle");
    jw_num(&w, "id", id);
    jw_num(&w, "at", (uint64_t)now);
    jw_num(&w, "in", input);
    jw_num(&w, "out", output);
    jw_num(&w, "cached", cached);
    jw_num(&w, "cost", cost);
    mote_jw_obj_end(&w);
    if (w.err == 0)
        (void)append(b, k.len, false); /* lost, the reservation counts whole */
}

void mote_budget_close(struct mote_budget *b)
{
    if (b->open)
        b->port->st_close(b->port->ctx, b->h);
    b->open = false;
}
