/*
 * tz.c - time zones (mote_time.h): a zoneinfo file (TZif, RFC 8536,
 * versions 1 to 4) read into the transitions that matter from a given
 * time on and its footer's POSIX TZ rule for the years after its table;
 * the offset in force at an instant; where a wall-clock time falls
 * (once, twice when the clock is set back, never when it is set forward).
 */
#include <string.h>

#include "mote/mote_time.h"
#include "util.h"

void mote_tz_utc(struct mote_tz *tz)
{
    memset(tz, 0, sizeof(*tz));
    mote_str_copy(tz->name, sizeof(tz->name), "UTC");
    tz->ntypes = 1;
}

bool mote_tz_name_ok(const char *name)
{
    size_t n = strlen(name), i, part = 0;

    if (n == 0 || n >= MOTE_TZ_NAME_MAX || name[0] == '/')
        return false;
    for (i = 0; i <= n; i++) {
        char ch = name[i];

        if (ch == '/' || ch == '\0') {
            /* no empty, "." or ".." part */
            if (part == 0 || (part == 1 && name[i - 1] == '.') ||
                (part == 2 && name[i - 1] == '.' && name[i - 2] == '.'))
                return false;
            part = 0;
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '+' || ch == '.'))
            return false;
        part++;
    }
    return true;
}

/* ---- the POSIX TZ rule ("CET-1CEST,M3.5.0,M10.5.0/3") ----------------------------- */

/* A zone abbreviation: letters (3 or more), or <...> with signs and digits. */
static bool rule_name(const char **p)
{
    const char *s = *p;
    size_t n = 0;

    if (*s == '<') {
        s++;
        while (*s != '>' && *s != '\0') {
            if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                  *s == '+' || *s == '-'))
                return false;
            s++;
            n++;
        }
        if (*s != '>' || n < 3)
            return false;
        *p = s + 1;
        return true;
    }
    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) {
        s++;
        n++;
    }
    if (n < 3)
        return false;
    *p = s;
    return true;
}

/* [+-]hh[:mm[:ss]] into seconds (hours up to `maxh`). */
static bool rule_time(const char **p, int32_t maxh, int32_t *out)
{
    const char *s = *p;
    int32_t sign = 1, h = 0, m = 0, sec = 0, k = 0;

    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    while (*s >= '0' && *s <= '9' && k < 3) {
        h = h * 10 + (*s++ - '0');
        k++;
    }
    if (k == 0 || h > maxh)
        return false;
    if (*s == ':') {
        s++;
        if (!(s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9'))
            return false;
        m = (s[0] - '0') * 10 + (s[1] - '0');
        s += 2;
        if (*s == ':') {
            s++;
            if (!(s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9'))
                return false;
            sec = (s[0] - '0') * 10 + (s[1] - '0');
            s += 2;
        }
    }
    if (m > 59 || sec > 59)
        return false;
    *out = sign * (h * 3600 + m * 60 + sec);
    *p = s;
    return true;
}

static bool rule_num(const char **p, unsigned lo, unsigned hi, unsigned *v)
{
    const char *s = *p;
    unsigned n = 0, k = 0;

    while (*s >= '0' && *s <= '9' && k < 4) {
        n = n * 10u + (unsigned)(*s++ - '0');
        k++;
    }
    if (k == 0 || n < lo || n > hi)
        return false;
    *v = n;
    *p = s;
    return true;
}

static bool rule_date(const char **p, struct mote_tz_date *d)
{
    const char *s = *p;
    unsigned a, b, c;

    memset(d, 0, sizeof(*d));
    d->time = 7200;
    if (*s == 'M') {
        s++;
        if (!rule_num(&s, 1, 12, &a) || *s++ != '.' || !rule_num(&s, 1, 5, &b) || *s++ != '.' ||
            !rule_num(&s, 0, 6, &c))
            return false;
        d->kind = 'M';
        d->mon = (uint8_t)a;
        d->week = (uint8_t)b;
        d->wday = (uint8_t)c;
    } else if (*s == 'J') {
        s++;
        if (!rule_num(&s, 1, 365, &a))
            return false;
        d->kind = 'J';
        d->day = (uint16_t)a;
    } else {
        if (!rule_num(&s, 0, 365, &a))
            return false;
        d->kind = 'n';
        d->day = (uint16_t)a;
    }
    if (*s == '/') {
        s++;
        if (!rule_time(&s, 167, &d->time))
            return false;
    }
    *p = s;
    return true;
}

int mote_tz_rule(struct mote_tz *tz, const char *name, const char *rule)
{
    const char *s = rule;
    int32_t std, dst;

    memset(tz, 0, sizeof(*tz));
    mote_str_copy(tz->name, sizeof(tz->name), name);
    tz->ntypes = 1;
    if (!rule_name(&s) || !rule_time(&s, 24, &std))
        return MOTE_ERR_INVAL;
    tz->std_off = -std; /* POSIX counts west of UTC */
    tz->off[0] = tz->std_off;
    tz->has_rule = true;
    if (*s == '\0')
        return 0;
    if (!rule_name(&s))
        return MOTE_ERR_INVAL;
    dst = std - 3600;
    if (*s != ',' && *s != '\0' && !rule_time(&s, 24, &dst))
        return MOTE_ERR_INVAL;
    tz->dst_off = -dst;
    if (*s == '\0') {
        /* no dates: the US rules of 2007 (POSIX leaves it to the system) */
        tz->start = (struct mote_tz_date){'M', 3, 2, 0, 0, 7200};
        tz->end = (struct mote_tz_date){'M', 11, 1, 0, 0, 7200};
    } else if (*s++ != ',' || !rule_date(&s, &tz->start) || *s++ != ',' ||
               !rule_date(&s, &tz->end) || *s != '\0') {
        return MOTE_ERR_INVAL;
    }
    tz->rule_dst = true;
    return 0;
}

/* The day of the year (0-based) a rule's date falls on in `year`. */
static int32_t date_yday(const struct mote_tz_date *d, int32_t year)
{
    bool leap = mote_month_days(year, 2) == 29;
    struct mote_tm tm;
    int32_t first, day;

    if (d->kind == 'J')
        return (int32_t)d->day - 1 + (leap && d->day >= 60);
    if (d->kind == 'n')
        return d->day;
    memset(&tm, 0, sizeof(tm));
    tm.year = year;
    tm.mon = d->mon;
    tm.mday = 1;
    mote_tm_of(mote_time_of(&tm), &tm); /* the weekday and day of the year of the 1st */
    first = tm.yday;
    day = 1 + ((int32_t)d->wday - tm.wday + 7) % 7 + ((int32_t)d->week - 1) * 7;
    while (day > (int32_t)mote_month_days(year, d->mon))
        day -= 7;
    return first + day - 1;
}

/* The instant the rule's date `d` happens in `year`, the clock showing
 * offset `off` before it. */
static int64_t date_at(const struct mote_tz_date *d, int32_t year, int32_t off)
{
    struct mote_tm tm;

    memset(&tm, 0, sizeof(tm));
    tm.year = year;
    tm.mon = 1;
    tm.mday = 1;
    return mote_time_of(&tm) + (int64_t)date_yday(d, year) * 86400 + d->time - off;
}

static int32_t rule_offset(const struct mote_tz *tz, int64_t t)
{
    struct mote_tm tm;
    int64_t start, end;
    bool dst;

    if (!tz->rule_dst)
        return tz->std_off;
    mote_tm_of(t + tz->std_off, &tm);
    start = date_at(&tz->start, tm.year, tz->std_off);
    end = date_at(&tz->end, tm.year, tz->dst_off);
    if (start < end)
        dst = t >= start && t < end; /* northern: summer inside the year */
    else
        dst = !(t >= end && t < start); /* southern: summer across the new year */
    return dst ? tz->dst_off : tz->std_off;
}

/* ---- the TZif file --------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_head {
    uint32_t isut, isstd, leap, time, type, chars;
};

static bool head_of(const uint8_t *p, size_t len, struct tzif_head *h)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0)
        return false;
    h->isut = be32(p + 20);
    h->isstd = be32(p + 24);
    h->leap = be32(p + 28);
    h->time = be32(p + 32);
    h->type = be32(p + 36);
    h->chars = be32(p + 40);
    /* bounded so that the sizes below cannot overflow */
    return h->type >= 1 && h->type <= 256 && h->time <= 100000 && h->leap <= 100000 &&
           h->chars <= 100000 && (h->isut == 0 || h->isut == h->type) &&
           (h->isstd == 0 || h->isstd == h->type);
}

/* The bytes of a data block after its header, with times of `tsize` bytes. */
static size_t block_len(const struct tzif_head *h, size_t tsize)
{
    return h->time * tsize + h->time + h->type * 6u + h->chars + h->leap * (tsize + 4u) +
           h->isstd + h->isut;
}

/* Our index of file type `ft` (its offset added on first use), or -1. */
static int type_of(struct mote_tz *tz, const uint8_t *types, uint32_t ft, int32_t *map)
{
    if (map[ft] >= 0)
        return map[ft];
    if (tz->ntypes >= MOTE_TZ_TYPES)
        return -1;
    tz->off[tz->ntypes] = (int32_t)be32(types + ft * 6u);
    map[ft] = tz->ntypes;
    return tz->ntypes++;
}

int mote_tz_parse(struct mote_tz *tz, const char *name, const uint8_t *data, size_t len,
                  int64_t from, char *err, size_t cap)
{
    struct tzif_head h;
    const uint8_t *p = data, *times, *idx, *types, *end = data + len;
    size_t tsize = 4, blen;
    int32_t map[256];
    uint32_t i, first;
    int t0;

    memset(tz, 0, sizeof(*tz));
    mote_str_copy(tz->name, sizeof(tz->name), name);
    if (!head_of(p, len, &h))
        return mote_why(err, cap, MOTE_ERR_CORRUPT, "not a zoneinfo (TZif) file", NULL, NULL);
    blen = block_len(&h, 4);
    if (p[4] >= '2') {
        /* version 2 and later: skip the 32-bit block, read the 64-bit one */
        if ((size_t)(end - p) < 44 + blen || !head_of(p + 44 + blen, (size_t)(end - p) - 44 - blen, &h))
            return mote_why(err, cap, MOTE_ERR_CORRUPT, "a TZif file cut short", NULL, NULL);
        p += 44 + blen;
        tsize = 8;
        blen = block_len(&h, 8);
    }
    if ((size_t)(end - p) < 44 + blen)
        return mote_why(err, cap, MOTE_ERR_CORRUPT, "a TZif file cut short", NULL, NULL);
    times = p + 44;
    idx = times + h.time * tsize;
    types = idx + h.time;
    for (i = 0; i < h.type; i++) {
        int32_t off = (int32_t)be32(types + i * 6u);

        if (off < -25 * 3600 || off > 26 * 3600 || types[i * 6u + 4] > 1)
            return mote_why(err, cap, MOTE_ERR_CORRUPT, "a TZif time type out of range", NULL,
                            NULL);
        map[i] = -1;
    }
    for (i = 0; i < h.time; i++) {
        if (idx[i] >= h.type)
            return mote_why(err, cap, MOTE_ERR_CORRUPT, "a TZif transition names no type", NULL,
                            NULL);
        if (i > 0 && (tsize == 8 ? be64(times + i * 8u) <= be64(times + (i - 1) * 8u)
                                 : (int32_t)be32(times + i * 4u) <= (int32_t)be32(times + (i - 1) * 4u)))
            return mote_why(err, cap, MOTE_ERR_CORRUPT, "TZif transitions out of order", NULL,
                            NULL);
    }
    /* the transitions from `from` on, and the type in force at it */
    for (first = 0; first < h.time; first++) {
        int64_t at = tsize == 8 ? be64(times + first * 8u) : (int32_t)be32(times + first * 4u);

        if (at > from)
            break;
    }
    tz->ntypes = 0;
    t0 = type_of(tz, types, first > 0 ? idx[first - 1] : 0, map);
    tz->type0 = (uint8_t)t0;
    for (i = first; i < h.time && tz->ntrans < MOTE_TZ_TRANSITIONS; i++) {
        int k = type_of(tz, types, idx[i], map);

        if (k < 0)
            return mote_why(err, cap, MOTE_ERR_NOTSUP, "more local time types than MOTE_TZ_TYPES",
                            NULL, NULL);
        tz->trans[tz->ntrans] = tsize == 8 ? be64(times + i * 8u) : (int32_t)be32(times + i * 4u);
        tz->ttype[tz->ntrans++] = (uint8_t)k;
    }
    tz->truncated = i < h.time;
    /* the footer: "\nRULE\n" (version 2 and later) */
    p = times + blen;
    if (tsize == 8 && p < end && *p == '\n') {
        char rule[96];
        size_t n = 0;
        struct mote_tz r;

        p++;
        while (p < end && *p != '\n' && n + 1 < sizeof(rule))
            rule[n++] = (char)*p++;
        rule[n] = '\0';
        if (p >= end || *p != '\n')
            return mote_why(err, cap, MOTE_ERR_CORRUPT, "a TZif footer without its end", NULL,
                            NULL);
        if (n > 0) {
            if (mote_tz_rule(&r, name, rule) < 0)
                return mote_why(err, cap, MOTE_ERR_NOTSUP, "a TZ rule mote cannot read: ", rule,
                                NULL);
            tz->has_rule = true;
            tz->rule_dst = r.rule_dst;
            tz->std_off = r.std_off;
            tz->dst_off = r.dst_off;
            tz->start = r.start;
            tz->end = r.end;
        }
    }
    return 0;
}

int32_t mote_tz_offset(const struct mote_tz *tz, int64_t t)
{
    unsigned lo = 0, hi = tz->ntrans;

    if (tz->ntrans == 0)
        return tz->has_rule ? rule_offset(tz, t) : tz->off[tz->type0];
    if (t < tz->trans[0])
        return tz->off[tz->type0];
    if (t >= tz->trans[tz->ntrans - 1])
        /* after the table: its footer's rule (which the table follows, so
         * a table cut at MOTE_TZ_TRANSITIONS goes on by it too) */
        return tz->has_rule && (tz->truncated || t > tz->trans[tz->ntrans - 1])
                   ? rule_offset(tz, t)
                   : tz->off[tz->ttype[tz->ntrans - 1]];
    /* the last transition at or before t */
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;

        if (tz->trans[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return tz->off[tz->ttype[lo]];
}

int mote_tz_local(const struct mote_tz *tz, int64_t local, int64_t *t)
{
    int32_t oa = mote_tz_offset(tz, local - 86400), ob = mote_tz_offset(tz, local + 86400);
    int64_t found[2], lo, hi;
    unsigned n = 0;

    if (mote_tz_offset(tz, local - oa) == oa)
        found[n++] = local - oa;
    if (ob != oa && mote_tz_offset(tz, local - ob) == ob)
        found[n++] = local - ob;
    if (n == 2) {
        *t = found[0] < found[1] ? found[0] : found[1];
        return 2;
    }
    if (n == 1) {
        *t = found[0];
        return 1;
    }
    /* a gap: the clock jumped from oa to ob (ob > oa) over `local`; the
     * first instant of the new offset is the end of the gap */
    lo = local - (ob > oa ? ob : oa);
    hi = local - (ob > oa ? oa : ob);
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;

        if (mote_tz_offset(tz, mid) == mote_tz_offset(tz, lo))
            lo = mid;
        else
            hi = mid;
    }
    *t = hi;
    return 0;
}
