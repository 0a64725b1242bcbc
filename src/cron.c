/*
 * cron.c - 5-field cron expressions (mote_time.h): parsed into bit sets,
 * and the next (or previous) time one names in a time zone, each civil
 * minute placed in the zone once.
 */
#include <string.h>

#include "mote/mote_time.h"
#include "util.h"

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                          "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const day_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

struct field {
    const char *what;
    unsigned lo, hi;
    const char *const *names; /* names[0] is lo's */
    unsigned nnames;
};

static const struct field fields[5] = {
    {"minute", 0, 59, NULL, 0},
    {"hour", 0, 23, NULL, 0},
    {"day of the month", 1, 31, NULL, 0},
    {"month", 1, 12, month_names, 12},
    {"day of the week", 0, 7, day_names, 7},
};

/* A number or a name at *p (n bytes left in the field's item). */
static bool value(const struct field *f, const char **p, const char *end, unsigned *v)
{
    const char *s = *p;
    unsigned n = 0, k = 0, i;

    if (s < end && *s >= '0' && *s <= '9') {
        while (s < end && *s >= '0' && *s <= '9' && k < 3) {
            n = n * 10u + (unsigned)(*s++ - '0');
            k++;
        }
        if (s < end && *s >= '0' && *s <= '9')
            return false;
        *v = n;
        *p = s;
        return true;
    }
    for (i = 0; i < f->nnames; i++) {
        if (end - s >= 3 && mote_ascii_ieq(s, f->names[i], 3) &&
            !(end - s > 3 && ((s[3] >= 'a' && s[3] <= 'z') || (s[3] >= 'A' && s[3] <= 'Z')))) {
            *v = f->lo + i;
            *p = s + 3;
            return true;
        }
    }
    return false;
}

/* One field (s[0..n)) into *bits; *star if it begins with "*". */
static int field_parse(const struct field *f, const char *s, size_t n, uint64_t *bits, bool *star,
                       char *err, size_t cap)
{
    const char *end = s + n;

    *bits = 0;
    *star = n > 0 && s[0] == '*';
    while (s < end) {
        const char *item_end = memchr(s, ',', (size_t)(end - s));
        unsigned a, b, step = 1, v;

        if (item_end == NULL)
            item_end = end;
        if (s < item_end && *s == '*') {
            a = f->lo;
            b = f->hi;
            s++;
        } else {
            if (!value(f, &s, item_end, &a))
                goto bad;
            b = a;
            if (s < item_end && *s == '-') {
                s++;
                if (!value(f, &s, item_end, &b))
                    goto bad;
            }
        }
        if (s < item_end && *s == '/') {
            const char *q = ++s;
            unsigned k = 0;

            step = 0;
            while (q < item_end && *q >= '0' && *q <= '9' && k < 3) {
                step = step * 10u + (unsigned)(*q++ - '0');
                k++;
            }
            if (k == 0 || q != item_end || step == 0)
                goto bad;
            s = q;
        }
        if (s != item_end || a < f->lo || b > f->hi || a > b)
            goto bad;
        for (v = a; v <= b; v += step)
            *bits |= (uint64_t)1 << v;
        s = item_end < end ? item_end + 1 : end;
        if (item_end < end && s == end)
            goto bad; /* a trailing comma */
    }
    if (*bits == 0)
        goto bad;
    return 0;
bad:
    return mote_why(err, cap, MOTE_ERR_INVAL, "cron: a bad ", f->what, " field");
}

int mote_cron_parse(struct mote_cron *c, const char *expr, char *err, size_t cap)
{
    static const struct {
        const char *name, *is;
    } macros[] = {{"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
                  {"@weekly", "0 0 * * 0"},  {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
                  {"@annually", "0 0 1 1 *"}};
    const char *s = expr;
    uint64_t bits[5];
    bool star[5];
    unsigned i, m, d;
    int rc;

    memset(c, 0, sizeof(*c));
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '@') {
        for (i = 0; i < MOTE_ARRAY_LEN(macros); i++) {
            size_t n = strlen(macros[i].name);

            if (mote_ascii_ieq(s, macros[i].name, n) && (s[n] == '\0' || s[n] == ' '))
                return mote_cron_parse(c, macros[i].is, err, cap);
        }
        return mote_why(err, cap, MOTE_ERR_INVAL,
                        "cron: @hourly, @daily, @weekly, @monthly or @yearly (@reboot is not a time)",
                        NULL, NULL);
    }
    for (i = 0; i < 5; i++) {
        const char *f = s;

        while (*s != '\0' && *s != ' ' && *s != '\t')
            s++;
        if (s == f)
            return mote_why(err, cap, MOTE_ERR_INVAL,
                            "cron: five fields: minute hour day-of-month month day-of-week", NULL,
                            NULL);
        if ((rc = field_parse(&fields[i], f, (size_t)(s - f), &bits[i], &star[i], err, cap)) < 0)
            return rc;
        while (*s == ' ' || *s == '\t')
            s++;
    }
    if (*s != '\0')
        return mote_why(err, cap, MOTE_ERR_INVAL,
                        "cron: five fields: minute hour day-of-month month day-of-week", NULL, NULL);
    c->min = bits[0];
    c->hour = (uint32_t)bits[1];
    c->mday = (uint32_t)bits[2];
    c->mon = (uint16_t)bits[3];
    c->wday = (uint8_t)((bits[4] | bits[4] >> 7) & 0x7Fu); /* 7 is Sunday too */
    c->mday_any = star[2];
    c->wday_any = star[4];
    /* a day of the month that no month of it has never comes (only the day
     * of the month counts when the day of the week is "*") */
    if (!c->mday_any && c->wday_any) {
        bool some = false;

        for (m = 1; m <= 12 && !some; m++) {
            for (d = 1; d <= (m == 2 ? 29u : mote_month_days(2001, m)) && !some; d++)
                some = (c->mon >> m & 1u) && (c->mday >> d & 1u);
        }
        if (!some)
            return mote_why(err, cap, MOTE_ERR_INVAL,
                            "cron: it never matches (no month has that day)", NULL, NULL);
    }
    return 0;
}

/* True if civil day `tm` (year, month, day, weekday) is one of c's. */
static bool day_matches(const struct mote_cron *c, const struct mote_tm *tm)
{
    bool md = (c->mday >> tm->mday) & 1u, wd = (c->wday >> tm->wday) & 1u;

    if (!((c->mon >> tm->mon) & 1u))
        return false;
    if (c->mday_any || c->wday_any)
        return (c->mday_any || md) && (c->wday_any || wd); /* one restricted: it alone */
    return md || wd;                                        /* both: either (Vixie cron) */
}

int mote_cron_next(const struct mote_cron *c, const struct mote_tz *tz, int64_t after, bool later,
                   int64_t *t)
{
    int64_t day0;
    int32_t i, step = later ? 1 : -1;

    if (after < MOTE_TIME_MIN + 20 * 86400 || after > MOTE_TIME_MAX - 20 * 86400)
        return MOTE_ERR_NOENT;
    /* the civil day `after` is in, less (or more) a day: whatever the zone's
     * offset, a minute of an earlier (later) day is not the answer */
    day0 = (mote_time_div(after + mote_tz_offset(tz, after), 86400u, NULL) -
            step) * 86400;
    for (i = 0; i < 3653 + 2; i++) {
        int64_t day = day0 + (int64_t)i * step * 86400;
        struct mote_tm tm;
        int h, m;

        if (day < MOTE_TIME_MIN || day > MOTE_TIME_MAX - 86400)
            return MOTE_ERR_NOENT;
        mote_tm_of(day, &tm);
        if (!day_matches(c, &tm))
            continue;
        for (h = later ? 0 : 23; h >= 0 && h <= 23; h += step) {
            if (!((c->hour >> h) & 1u))
                continue;
            for (m = later ? 0 : 59; m >= 0 && m <= 59; m += step) {
                int64_t at;

                if (!((c->min >> m) & 1u))
                    continue;
                (void)mote_tz_local(tz, day + h * 3600 + m * 60, &at);
                if (later ? at > after : at < after) {
                    *t = at;
                    return 0;
                }
            }
        }
    }
    return MOTE_ERR_NOENT;
}
