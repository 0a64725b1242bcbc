/*
 * sched.c - schedules' definitions and the arithmetic of their
 * occurrences (mote_sched.h): the JSON object read strictly and written
 * back, the next and the last occurrence of a rule in its zone, and the
 * catch-up decision after downtime - pure functions, no port, no clock.
 */
#include <string.h>

#include "mote/mote_sched.h"
#include "util.h"

#define MAX_COUNT 100000 /* skipped occurrences counted one by one, at most */

bool mote_sched_id_ok(const char *id, size_t n)
{
    return n > 0 && n < MOTE_SCHED_ID_MAX && mote_word_chars(id, n);
}

uint32_t mote_sched_max_late(const struct mote_sched *s)
{
    return s->max_late_set ? s->max_late_s : MOTE_SCHED_MAX_LATE_S;
}

/* String member `key` into out (cap bytes, no NUL inside): 1 if there, 0
 * if absent or null, < 0 (said in err) if not a string or too long. */
static int str(const struct mote_json *j, int obj, const char *key, char *out, size_t cap,
               char *err, size_t ecap)
{
    int t = mote_json_member(j, obj, key);

    out[0] = '\0';
    if (t < 0 || mote_json_is_null(j, t))
        return 0;
    if (mote_json_type_of(j, t) != MOTE_JSON_STRING || mote_json_cstr(j, t, out, cap) < 0)
        return mote_why(err, ecap, MOTE_ERR_INVAL, "\"", key,
                        "\" must be a string, short enough, with no NUL");
    return 1;
}

int mote_sched_parse(struct mote_sched *s, const struct mote_json *j, int obj,
                     const char *id_given, char *err, size_t cap)
{
    static const char *const keys[] = {"id",           "prompt",   "cron",     "every",
                                       "at",           "tz",       "conversation", "catch_up",
                                       "max_late",     "enabled",  "created_by"};
    char v[MOTE_SCHED_RULE_MAX];
    int t, k, i, nrules = 0, rc;
    size_t n;

    memset(s, 0, sizeof(*s));
    s->enabled = true;
    if (mote_json_type_of(j, obj) != MOTE_JSON_OBJECT)
        return mote_why(err, cap, MOTE_ERR_INVAL, "a schedule is a JSON object", NULL, NULL);
    for (i = 0, k = obj + 1; i < j->tok[obj].size; i++, k = mote_json_skip(j, k + 1)) {
        bool known = false;
        size_t m;

        for (m = 0; m < MOTE_ARRAY_LEN(keys); m++)
            known = known || mote_json_eq(j, k, keys[m]);
        if (!known) {
            char name[40];

            (void)mote_json_str(j, k, name, sizeof(name));
            return mote_why(err, cap, MOTE_ERR_INVAL, "unknown member \"", name,
                            "\" (id, prompt, cron, every, at, tz, conversation, catch_up, "
                            "max_late, enabled)");
        }
    }
    if ((rc = str(j, obj, "id", s->id, sizeof(s->id), err, cap)) < 0)
        return rc;
    if (rc == 0 && id_given != NULL)
        mote_str_copy(s->id, sizeof(s->id), id_given);
    if (id_given != NULL && strcmp(s->id, id_given) != 0)
        return mote_why(err, cap, MOTE_ERR_INVAL, "\"id\" is not the one of the path", NULL,
                        NULL);
    if (!mote_sched_id_ok(s->id, strlen(s->id)))
        return mote_why_num(err, cap, MOTE_ERR_INVAL,
                            "\"id\": 1 to ", MOTE_SCHED_ID_MAX - 1,
                            " of A-Z, a-z, 0-9, _ and -");
    if ((rc = str(j, obj, "prompt", s->prompt, sizeof(s->prompt), err, cap)) < 0)
        return rc;
    for (n = 0; s->prompt[n] == ' ' || s->prompt[n] == '\t' || s->prompt[n] == '\n'; n++)
        ;
    if (s->prompt[n] == '\0')
        return mote_why_num(err, cap, MOTE_ERR_INVAL, "\"prompt\": the text to send, 1 to ",
                            MOTE_SCHED_PROMPT_MAX - 1, " bytes");
    if ((rc = str(j, obj, "conversation", s->conversation, sizeof(s->conversation), err, cap)) <
        0)
        return rc;
    if (rc > 0 && !mote_word_chars(s->conversation, strlen(s->conversation)))
        return mote_why(err, cap, MOTE_ERR_INVAL,
                        "\"conversation\": an id of A-Z, a-z, 0-9, _ and -, or null for a new "
                        "one each time",
                        NULL, NULL);
    if ((rc = str(j, obj, "created_by", s->created_by, sizeof(s->created_by), err, cap)) < 0)
        return rc;
    if ((rc = str(j, obj, "tz", s->tz, sizeof(s->tz), err, cap)) < 0)
        return rc;
    if (rc > 0 && !mote_tz_name_ok(s->tz))
        return mote_why(err, cap, MOTE_ERR_INVAL,
                        "\"tz\": an IANA time zone name such as Europe/Paris", NULL, NULL);
    if ((rc = str(j, obj, "cron", v, sizeof(v), err, cap)) < 0)
        return rc;
    if (rc > 0) {
        nrules++;
        s->kind = MOTE_SCHED_CRON;
        mote_str_copy(s->rule, sizeof(s->rule), v);
        if ((rc = mote_cron_parse(&s->cron, v, err, cap)) < 0)
            return rc;
    }
    if ((rc = str(j, obj, "every", v, sizeof(v), err, cap)) < 0)
        return rc;
    if (rc > 0) {
        uint64_t ms;

        nrules++;
        s->kind = MOTE_SCHED_EVERY;
        mote_str_copy(s->rule, sizeof(s->rule), v);
        if (mote_duration_parse(v, &ms) < 0 || ms < 1000 || ms > UINT32_MAX)
            return mote_why(err, cap, MOTE_ERR_INVAL,
                            "\"every\": an interval of 1 s to 49 days (\"10m\", \"90s\", \"6h\")",
                            NULL, NULL);
        s->every_ms = (uint32_t)ms;
    }
    if ((rc = str(j, obj, "at", v, sizeof(v), err, cap)) < 0)
        return rc;
    if (rc > 0) {
        nrules++;
        s->kind = MOTE_SCHED_AT;
        mote_str_copy(s->rule, sizeof(s->rule), v);
        if (mote_iso_parse(v, &s->at, &s->at_local) < 0)
            return mote_why(err, cap, MOTE_ERR_INVAL,
                            "\"at\": a time such as 2026-03-01T06:00:00Z (without an offset: "
                            "in \"tz\")",
                            NULL, NULL);
    }
    if (nrules != 1)
        return mote_why(err, cap, MOTE_ERR_INVAL,
                        "a schedule has one of \"cron\", \"every\" and \"at\"", NULL, NULL);
    if ((rc = str(j, obj, "catch_up", v, sizeof(v), err, cap)) < 0)
        return rc;
    if (rc > 0 && strcmp(v, "latest") != 0 && strcmp(v, "none") != 0)
        return mote_why(err, cap, MOTE_ERR_INVAL, "\"catch_up\" is \"latest\" or \"none\"", NULL,
                        NULL);
    s->catch_up = rc > 0 && strcmp(v, "none") == 0 ? MOTE_CATCH_NONE : MOTE_CATCH_LATEST;
    if ((rc = str(j, obj, "max_late", v, sizeof(v), err, cap)) < 0)
        return rc;
    if (rc > 0) {
        uint64_t ms;

        if (mote_duration_parse(v, &ms) < 0 || ms > UINT64_C(366) * 86400000u)
            return mote_why(err, cap, MOTE_ERR_INVAL,
                            "\"max_late\": a duration up to a year (\"1h\", \"30m\", \"0\")", NULL,
                            NULL);
        s->max_late_set = true;
        s->max_late_s = (uint32_t)mote_time_div((int64_t)ms, 1000u, NULL);
    }
    t = mote_json_member(j, obj, "enabled");
    if (t >= 0 && mote_json_bool(j, t, &s->enabled) < 0)
        return mote_why(err, cap, MOTE_ERR_INVAL, "\"enabled\" is true or false", NULL, NULL);
    return 0;
}

void mote_sched_write(const struct mote_sched *s, struct mote_jw *w)
{
    static const char *const kinds[] = {"", "cron", "every", "at"};
    char d[48];

    mote_jw_kstr(w, "id", s->id);
    mote_jw_kstr(w, "prompt", s->prompt);
    mote_jw_key(w, kinds[s->kind <= MOTE_SCHED_AT ? s->kind : 0]);
    mote_jw_str(w, s->rule);
    if (s->tz[0] != '\0') {
        mote_jw_kstr(w, "tz", s->tz);
    }
    mote_jw_key(w, "conversation");
    if (s->conversation[0] != '\0')
        mote_jw_str(w, s->conversation);
    else
        mote_jw_null(w);
    mote_jw_kstr(w, "catch_up", s->catch_up == MOTE_CATCH_NONE ? "none" : "latest");
    if (s->max_late_set) {
        struct mote_sb sb;

        mote_sb_init(&sb, d, sizeof(d));
        mote_sb_u(&sb, s->max_late_s);
        mote_sb_s(&sb, "s");
        mote_jw_kstr(w, "max_late", d);
    }
    mote_jw_kbool(w, "enabled", s->enabled);
    if (s->created_by[0] != '\0') {
        mote_jw_kstr(w, "created_by", s->created_by);
    }
}

/* A single time's instant, placed in its zone if it was given without an
 * offset. */
static int64_t at_of(const struct mote_sched *s, const struct mote_tz *tz)
{
    int64_t t = s->at;

    if (s->at_local)
        (void)mote_tz_local(tz, s->at, &t);
    return t;
}

int mote_sched_next(const struct mote_sched *s, const struct mote_tz *tz, int64_t after,
                    int64_t *key)
{
    if (s->kind == MOTE_SCHED_CRON)
        return mote_cron_next(&s->cron, tz, after, true, key);
    if (s->kind == MOTE_SCHED_AT) {
        *key = at_of(s, tz);
        return *key > after ? 0 : MOTE_ERR_NOENT;
    }
    return MOTE_ERR_INVAL;
}

int mote_sched_last(const struct mote_sched *s, const struct mote_tz *tz, int64_t now,
                    int64_t *key)
{
    if (s->kind == MOTE_SCHED_CRON)
        return mote_cron_next(&s->cron, tz, now + 1, false, key);
    if (s->kind == MOTE_SCHED_AT) {
        *key = at_of(s, tz);
        return *key <= now ? 0 : MOTE_ERR_NOENT;
    }
    return MOTE_ERR_INVAL;
}

int mote_sched_due(const struct mote_sched *s, const struct mote_tz *tz, int64_t cursor,
                   int64_t now, struct mote_sched_due *d)
{
    int64_t first, last, k, end;
    uint64_t n;
    bool young;

    memset(d, 0, sizeof(*d));
    d->cursor = cursor;
    if (mote_sched_next(s, tz, cursor, &first) < 0 || first > now)
        return MOTE_ERR_NOENT;
    if (mote_sched_last(s, tz, now, &last) < 0 || last < first)
        last = first; /* (cannot be: first is due) */
    d->cursor = last;
    young = now - last <= (int64_t)MOTE_SCHED_GRACE_S ||
            (s->catch_up == MOTE_CATCH_LATEST && now - last <= (int64_t)mote_sched_max_late(s));
    if (young) {
        d->run = true;
        d->run_key = last;
        if (first == last)
            return 0;
        if (mote_cron_next(&s->cron, tz, last, false, &end) < 0)
            return 0;
    } else {
        d->too_old = true;
        end = last;
    }
    /* first .. end are skipped: counted (a long downtime of a frequent
     * rule: up to MAX_COUNT, then "at least") */
    d->skip_from = first;
    d->skip_to = end;
    for (n = 1, k = first; k < end && n < MAX_COUNT; n++) {
        if (mote_sched_next(s, tz, k, &k) < 0)
            break;
    }
    d->skip_count = n;
    return 0;
}

void mote_sched_every_missed(const struct mote_sched *s, int64_t last_ms, int64_t now_ms,
                             uint64_t *missed, uint32_t *age_ms)
{
    uint32_t rem = 0;
    int64_t q;

    *missed = 0;
    *age_ms = 0;
    if (s->every_ms == 0 || now_ms < last_ms)
        return;
    q = mote_time_div(now_ms - last_ms, s->every_ms, &rem);
    *missed = (uint64_t)q;
    *age_ms = rem;
}
