/*
 * time.c - durations, civil dates and ISO 8601 times (mote_time.h): the
 * arithmetic of the calendar, with no 64-bit division (small targets
 * lack it: mote_time_div does the one division seconds need).
 */
#include <string.h>

#include "mote/mote_time.h"
#include "util.h"

int64_t mote_time_div(int64_t a, uint32_t b, uint32_t *rem)
{
    uint64_t n, q = 0, r = 0;
    bool neg = a < 0;
    int i;

    MOTE_ASSERT(b > 0);
    n = neg ? (uint64_t)(-(a + 1)) : (uint64_t)a;
    for (i = 63; i >= 0; i--) {
        r = (r << 1) | ((n >> i) & 1u);
        if (r >= b) {
            r -= b;
            q |= (uint64_t)1 << i;
        }
    }
    if (!neg) {
        if (rem != NULL)
            *rem = (uint32_t)r;
        return (int64_t)q;
    }
    /* -a-1 = q*b + r, so a = -(q+1)*b + (b-1-r) */
    if (rem != NULL)
        *rem = b - 1u - (uint32_t)r;
    return -(int64_t)q - 1;
}

/* ---- durations ------------------------------------------------------------ */

#define TEN_YEARS_MS (UINT64_C(3650) * 86400000u)

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

int mote_duration_parse(const char *s, uint64_t *ms)
{
    uint64_t total = 0;
    bool any = false;
    const char *end;

    if (s == NULL)
        return MOTE_ERR_INVAL;
    s = skip_ws(s);
    end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if ((end - s == 4 && memcmp(s, "none", 4) == 0) || (end - s == 3 && memcmp(s, "off", 3) == 0)) {
        *ms = 0;
        return 0;
    }
    while (s < end) {
        uint64_t n = 0, unit;
        unsigned digits = 0;

        while (s < end && *s >= '0' && *s <= '9') {
            if (++digits > 12)
                return MOTE_ERR_INVAL;
            n = n * 10u + (uint64_t)(*s++ - '0');
        }
        if (digits == 0)
            return MOTE_ERR_INVAL;
        if (s == end) {
            if (any)
                return MOTE_ERR_INVAL; /* "1h30": the unit of 30 is not said */
            unit = 1000u;              /* a bare number: seconds */
        } else if (end - s >= 2 && s[0] == 'm' && s[1] == 's') {
            unit = 1u;
            s += 2;
        } else if (*s == 's') {
            unit = 1000u;
            s++;
        } else if (*s == 'm') {
            unit = 60000u;
            s++;
        } else if (*s == 'h') {
            unit = 3600000u;
            s++;
        } else if (*s == 'd') {
            unit = 86400000u;
            s++;
        } else {
            return MOTE_ERR_INVAL;
        }
        if (n > 4000000000u) /* (so that n * unit cannot overflow: no 64-bit division) */
            return MOTE_ERR_INVAL;
        total += n * unit;
        if (total > TEN_YEARS_MS)
            return MOTE_ERR_INVAL;
        any = true;
    }
    if (!any)
        return MOTE_ERR_INVAL;
    *ms = total;
    return 0;
}

size_t mote_duration_say(char *out, size_t cap, uint64_t ms)
{
    static const struct {
        uint32_t ms;
        const char *one, *many;
    } units[] = {{86400000u, " day", " days"},
                 {3600000u, " hour", " hours"},
                 {60000u, " minute", " minutes"},
                 {1000u, " second", " seconds"}};
    struct mote_sb sb;
    unsigned i;

    mote_sb_init(&sb, out, cap);
    for (i = 0; i < MOTE_ARRAY_LEN(units); i++) {
        uint32_t r;
        int64_t q = mote_time_div((int64_t)ms, units[i].ms, &r);

        if (ms > 0 && r == 0) {
            mote_sb_u(&sb, (uint64_t)q);
            mote_sb_s(&sb, q == 1 ? units[i].one : units[i].many);
            return sb.len;
        }
    }
    mote_sb_u(&sb, ms);
    mote_sb_s(&sb, " ms");
    return sb.len;
}

/* ---- civil time ------------------------------------------------------------- */

static bool leap(int32_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned mote_month_days(int32_t year, unsigned mon)
{
    static const uint8_t d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (mon < 1 || mon > 12)
        return 0;
    return d[mon - 1] + (mon == 2 && leap(year));
}

/* Days since 1970-01-01 of civil date y-m-d (H. Hinnant's days_from_civil). */
static int32_t days_of(int32_t y, unsigned m, unsigned d)
{
    int32_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (int32_t)((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1);
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void mote_tm_of(int64_t t, struct mote_tm *tm)
{
    int32_t z, era, doe, yoe, y, doy, mp;
    uint32_t secs;

    if (t < MOTE_TIME_MIN)
        t = MOTE_TIME_MIN;
    if (t > MOTE_TIME_MAX)
        t = MOTE_TIME_MAX;
    z = (int32_t)mote_time_div(t, 86400u, &secs);
    tm->wday = (uint8_t)(((z % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
    tm->hour = (uint8_t)(secs / 3600u);
    tm->min = (uint8_t)(secs / 60u % 60u);
    tm->sec = (uint8_t)(secs % 60u);
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    tm->mday = (uint8_t)(doy - (153 * mp + 2) / 5 + 1);
    tm->mon = (uint8_t)(mp < 10 ? mp + 3 : mp - 9);
    tm->year = y + (tm->mon <= 2);
    tm->yday = (uint16_t)(days_of(tm->year, tm->mon, tm->mday) - days_of(tm->year, 1, 1));
}

int64_t mote_time_of(const struct mote_tm *tm)
{
    int32_t y = tm->year;
    unsigned m = tm->mon;

    if (m < 1)
        m = 1;
    if (m > 12)
        m = 12;
    return (int64_t)days_of(y, m, 1) * 86400 + (int64_t)(tm->mday > 0 ? tm->mday - 1 : 0) * 86400 +
           (int64_t)tm->hour * 3600 + (int64_t)tm->min * 60 + tm->sec;
}

/* ---- ISO 8601 ------------------------------------------------------------------ */

static char *digits(char *p, unsigned v, unsigned n)
{
    unsigned i;

    for (i = n; i > 0; i--) {
        p[i - 1] = (char)('0' + v % 10u);
        v /= 10u;
    }
    return p + n;
}

size_t mote_iso_write(char *out, int64_t t, int32_t off_s, bool utc)
{
    struct mote_tm tm;
    char *p = out;

    mote_tm_of(t + off_s, &tm);
    p = digits(p, (unsigned)tm.year, 4);
    *p++ = '-';
    p = digits(p, tm.mon, 2);
    *p++ = '-';
    p = digits(p, tm.mday, 2);
    *p++ = 'T';
    p = digits(p, tm.hour, 2);
    *p++ = ':';
    p = digits(p, tm.min, 2);
    *p++ = ':';
    p = digits(p, tm.sec, 2);
    if (utc && off_s == 0) {
        *p++ = 'Z';
    } else {
        unsigned a = (unsigned)(off_s < 0 ? -off_s : off_s);

        *p++ = off_s < 0 ? '-' : '+';
        p = digits(p, a / 3600u, 2);
        *p++ = ':';
        p = digits(p, a / 60u % 60u, 2);
    }
    *p = '\0';
    return (size_t)(p - out);
}

/* n digits at *s into *v; false if they are not there. */
static bool num(const char **s, unsigned n, unsigned *v)
{
    unsigned i;

    *v = 0;
    for (i = 0; i < n; i++) {
        char ch = (*s)[i];

        if (ch < '0' || ch > '9')
            return false;
        *v = *v * 10u + (unsigned)(ch - '0');
    }
    *s += n;
    return true;
}

int mote_iso_parse(const char *s, int64_t *t, bool *local)
{
    unsigned y, mo, d, h, mi, sec = 0, oh, om = 0;
    struct mote_tm tm;
    int32_t off = 0;

    s = skip_ws(s);
    if (!num(&s, 4, &y) || *s++ != '-' || !num(&s, 2, &mo) || *s++ != '-' || !num(&s, 2, &d) ||
        (*s != 'T' && *s != 't' && *s != ' '))
        return MOTE_ERR_INVAL;
    s++;
    if (!num(&s, 2, &h) || *s++ != ':' || !num(&s, 2, &mi))
        return MOTE_ERR_INVAL;
    if (*s == ':' && (s++, !num(&s, 2, &sec)))
        return MOTE_ERR_INVAL;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > mote_month_days((int32_t)y, mo) || h > 23 ||
        mi > 59 || sec > 59)
        return MOTE_ERR_INVAL;
    *local = true;
    if (*s == 'Z' || *s == 'z') {
        s++;
        *local = false;
    } else if (*s == '+' || *s == '-') {
        bool neg = *s++ == '-';

        if (!num(&s, 2, &oh))
            return MOTE_ERR_INVAL;
        if (*s == ':')
            s++;
        if (*s >= '0' && *s <= '9' && !num(&s, 2, &om))
            return MOTE_ERR_INVAL;
        if (oh > 23 || om > 59)
            return MOTE_ERR_INVAL;
        off = (int32_t)(oh * 3600u + om * 60u);
        off = neg ? -off : off;
        *local = false;
    }
    if (*skip_ws(s) != '\0')
        return MOTE_ERR_INVAL;
    memset(&tm, 0, sizeof(tm));
    tm.year = (int32_t)y;
    tm.mon = (uint8_t)mo;
    tm.mday = (uint8_t)d;
    tm.hour = (uint8_t)h;
    tm.min = (uint8_t)mi;
    tm.sec = (uint8_t)sec;
    *t = mote_time_of(&tm) - off;
    return 0;
}
