/*
 * serve_sched_api.c - the schedules' front doors (serve_sched.h): GET,
 * PUT and DELETE /v1/schedules[/ID], the same objects on MQTT (a request's
 * "schedule" and "schedule_delete"), the agent's "schedule" tool (create,
 * list, delete: it asks like any tool), and the schedules as JSON (the
 * health's summary included).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_sched.h"
#include "util.h"

static const char *const origins[] = {"api", "agent", "file"};

static struct sched_slot *find(struct sched *q, const char *id)
{
    unsigned i;

    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        if (q->slots[i].used && strcmp(q->slots[i].def.id, id) == 0)
            return &q->slots[i];
    }
    return NULL;
}

static void iso(struct mote_jw *w, const char *key, int64_t t)
{
    char b[MOTE_ISO_MAX];

    mote_jw_key(w, key);
    if (t <= 0) {
        mote_jw_null(w);
        return;
    }
    mote_iso_write(b, t, 0, true);
    mote_jw_str(w, b);
}

/* An occurrence's object opened: {"key":KEY,"at":ISO (null: unknown). */
static void occurrence(struct mote_jw *w, int64_t key, int64_t at)
{
    mote_jw_obj(w);
    mote_jw_kint(w, "key", key);
    iso(w, "at", at);
}

void mote_sched_json(struct sched *q, const struct sched_slot *s, struct mote_jw *w)
{
    int64_t key, at;

    mote_jw_obj(w);
    mote_sched_write(&s->def, w);
    mote_jw_kstr(w, "origin", origins[s->def.origin <= MOTE_SCHED_FILE ? s->def.origin : 0]);
    mote_jw_key(w, "error");
    if (s->error[0] != '\0')
        mote_jw_str(w, s->error);
    else
        mote_jw_null(w);
    mote_jw_key(w, "next");
    if (mote_sched_upcoming(q, s, &key, &at) > 0) {
        occurrence(w, key, at);
        mote_jw_obj_end(w);
    } else {
        mote_jw_null(w);
    }
    mote_jw_key(w, "last");
    if (s->has_last) {
        occurrence(w, s->last_key, s->last_at);
        mote_jw_kstr(w, "outcome", s->last_outcome);
        mote_jw_obj_end(w);
    } else {
        mote_jw_null(w);
    }
    mote_jw_key(w, "running");
    if (s->open != SO_NONE) {
        occurrence(w, s->open_key, s->open_at);
        mote_jw_kstr(w, "conversation", s->open_conv);
        mote_jw_kstr(w, "phase", s->open == SO_CLAIMED ? "claimed" : "started");
        mote_jw_obj_end(w);
    } else {
        mote_jw_null(w);
    }
    mote_jw_kint(w, "runs", (int64_t)s->runs);
    mote_jw_kint(w, "failed", (int64_t)s->failed);
    mote_jw_kint(w, "skipped", (int64_t)s->skips);
    mote_jw_key(w, "usage");
    mote_serve_usage_json(w, &s->usage);
    mote_jw_obj_end(w);
}

static void clock_json(struct sched *q, struct mote_jw *w)
{
    int64_t ms;
    bool set = mote_sched_clock(q, &ms);

    mote_jw_key(w, "clock");
    mote_jw_obj(w);
    iso(w, "now", set ? mote_time_div(ms, 1000u, NULL) : 0);
    mote_jw_kbool(w, "set", set);
    mote_jw_kbool(w, "synchronised", q->synced);
    mote_jw_kint(w, "jumps", (int64_t)q->jumps);
    mote_jw_obj_end(w);
}

int mote_serve_sched_list(struct serve *sv, char *buf, size_t cap)
{
    struct sched *q = mote_serve_sched_of(sv);
    struct mote_sb k;
    struct mote_jw w;
    unsigned i;

    mote_sb_init(&k, buf, cap);
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "schedules");
    mote_jw_arr(&w);
    for (i = 0; q != NULL && i < MOTE_SCHED_MAX; i++) {
        if (q->slots[i].used)
            mote_sched_json(q, &q->slots[i], &w);
    }
    mote_jw_arr_end(&w);
    if (q != NULL)
        clock_json(q, &w);
    mote_jw_obj_end(&w);
    if (w.err != 0 || k.len + 1 >= cap)
        return MOTE_ERR_TOO_LARGE;
    buf[k.len++] = '\n';
    return (int)k.len;
}

void mote_serve_sched_health(struct serve *sv, struct mote_jw *w)
{
    struct sched *q = mote_serve_sched_of(sv);
    unsigned i, n = 0, running = 0, failing = 0;

    mote_jw_key(w, "schedules");
    if (q == NULL) {
        mote_jw_null(w);
        return;
    }
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        n += q->slots[i].used;
        running += q->slots[i].used && q->slots[i].open != SO_NONE;
        failing += q->slots[i].used && q->slots[i].error[0] != '\0';
    }
    mote_jw_obj(w);
    mote_jw_kint(w, "count", n);
    mote_jw_kint(w, "max", MOTE_SCHED_MAX);
    mote_jw_kint(w, "running", running);
    mote_jw_kint(w, "broken", failing);
    mote_jw_kstr(w, "journal", q->err < 0 ? mote_err_name(q->err) : "ok");
    clock_json(q, w);
    mote_jw_obj_end(w);
}

/* ---- changing them ------------------------------------------------------------------- */

/* Puts `def` in (a new one, or in place of the one of its id). 0 and
 * *created, or < 0 with *code (an API error code) and `err`. */
static int put(struct sched *q, const struct mote_sched *def, bool *created, const char **code,
               char *err, size_t cap)
{
    struct sched_slot *s = find(q, def->id), keep;
    unsigned i;
    int zone, rc;

    *created = s == NULL;
    if (q->sv->pub->phase != MOTE_SERVE_RUN) {
        *code = "shutting_down";
        return mote_why(err, cap, MOTE_ERR_SHUTDOWN, "mote is shutting down", NULL, NULL);
    }
    if (q->err < 0) {
        *code = "storage";
        return mote_why(err, cap, q->err, "the schedules' journal cannot be written", NULL, NULL);
    }
    if (s != NULL && s->def.origin == MOTE_SCHED_FILE) {
        *code = "fixed";
        return mote_why(err, cap, MOTE_ERR_PERM,
                        "this schedule comes from the configuration's file: change it there",
                        NULL, NULL);
    }
    for (i = 0; i < MOTE_SCHED_MAX && s == NULL; i++)
        s = q->slots[i].used ? NULL : &q->slots[i];
    if (s == NULL) {
        *code = "full";
        return mote_why_num(err, cap, MOTE_ERR_FULL, "there are ", MOTE_SCHED_MAX,
                            " schedules already (MOTE_SCHED_MAX)");
    }
    zone = mote_sched_zone_load(
        q, def->tz[0] != '\0' || def->kind == MOTE_SCHED_EVERY ? def->tz : q->default_tz, err, cap);
    if (zone < -1) {
        *code = "bad_field";
        return MOTE_ERR_INVAL;
    }
    keep = *s;
    if (*created) {
        memset(s, 0, sizeof(*s));
        s->used = true;
    }
    s->def = *def;
    if (s->def.tz[0] == '\0' && s->def.kind != MOTE_SCHED_EVERY)
        mote_str_copy(s->def.tz, sizeof(s->def.tz), q->default_tz);
    s->zone = zone;
    s->error[0] = '\0';
    rc = mote_sched_defs_write(q);
    if (rc < 0) {
        *s = keep; /* (a new slot goes back to unused) */
        *code = rc == MOTE_ERR_TOO_LARGE ? "too_large" : "storage";
        return mote_why(err, cap, rc, "STATE/schedules.json cannot be written: ",
                        mote_strerror(rc), NULL);
    }
    if ((rc = mote_sched_armed(q, s)) < 0) {
        *code = "storage";
        return mote_why(err, cap, rc, "the schedules' journal cannot be written", NULL, NULL);
    }
    mote_sched_say(q, s->def.id, *created ? "created (" : "replaced (", origins[def->origin], ")");
    return 0;
}

static int del(struct sched *q, const char *id, const char **code, char *err, size_t cap)
{
    struct sched_slot *s = find(q, id);
    int rc;

    if (s == NULL) {
        *code = "not_found";
        return mote_why(err, cap, MOTE_ERR_NOENT, "no such schedule", NULL, NULL);
    }
    if (s->def.origin == MOTE_SCHED_FILE) {
        *code = "fixed";
        return mote_why(err, cap, MOTE_ERR_PERM,
                        "this schedule comes from the configuration's file: remove it there", NULL,
                        NULL);
    }
    s->used = false;
    rc = mote_sched_defs_write(q);
    if (rc < 0) {
        s->used = true;
        *code = "storage";
        return mote_why(err, cap, rc, "STATE/schedules.json cannot be written: ",
                        mote_strerror(rc), NULL);
    }
    mote_sched_say(q, id, "removed", s->open != SO_NONE ? " (its turn under way goes on)" : NULL,
                   NULL);
    mote_sched_kick(q);
    return 0;
}

/* ---- HTTP ------------------------------------------------------------------------------ */

static unsigned status_of(const char *code)
{
    if (strcmp(code, "not_found") == 0)
        return 404;
    if (strcmp(code, "fixed") == 0 || strcmp(code, "full") == 0)
        return 409;
    if (strcmp(code, "shutting_down") == 0)
        return 503;
    if (strcmp(code, "too_large") == 0)
        return 413;
    if (strcmp(code, "storage") == 0)
        return 500;
    return 400;
}

/* One schedule's JSON as the answer (in a pool buffer: a prompt may be
 * long). */
static void answer_one(struct sched *q, struct mote_httpd_conn *c, unsigned status,
                       const struct sched_slot *s)
{
    char *buf = mote_httpd_pool_take(c);
    struct mote_sb k;
    struct mote_jw w;

    if (buf == NULL) {
        mote_httpd_error(c, 503, "busy", "no buffer free for the answer: try again",
                         "Retry-After: 1\r\n");
        return;
    }
    mote_sb_init(&k, buf, MOTE_SERVE_BODY_MAX);
    mote_jw_init(&w, mote_sb_put, &k);
    mote_sched_json(q, s, &w);
    if (w.err != 0 || k.len + 1 >= MOTE_SERVE_BODY_MAX) {
        mote_httpd_pool_put(c);
        mote_httpd_error(c, 500, "internal", "the schedule does not fit the answer", NULL);
        return;
    }
    buf[k.len++] = '\n';
    (void)mote_httpd_head(c, status, "application/json", NULL, true, k.len);
    mote_httpd_pool_send(c, k.len);
    mote_httpd_respond(c, false);
}

void mote_serve_http_schedules(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                               const char *body, size_t len)
{
    struct sched *q = mote_serve_sched_of(sv);
    enum mote_hreq_method m = c->io->req.method;
    const char *code = "bad_field";
    char err[200];
    bool created;
    int n;

    if (q == NULL || !q->on) {
        mote_httpd_error(c, 404, "not_found", "schedules are off in this server", NULL);
        return;
    }
    if (id == NULL) {
        char *buf = mote_httpd_pool_take(c);

        if (buf == NULL) {
            mote_httpd_error(c, 503, "busy", "no buffer free for the list: try again",
                             "Retry-After: 1\r\n");
            return;
        }
        n = mote_serve_sched_list(sv, buf, MOTE_SERVE_BODY_MAX);
        if (n < 0) {
            mote_httpd_pool_put(c);
            mote_httpd_error(c, 500, "internal", "the schedules do not fit one answer", NULL);
            return;
        }
        (void)mote_httpd_head(c, 200, "application/json", NULL, true, (size_t)n);
        mote_httpd_pool_send(c, (size_t)n);
        mote_httpd_respond(c, false);
        return;
    }
    if (m == MOTE_HM_GET || m == MOTE_HM_HEAD) {
        const struct sched_slot *s = find(q, id);

        if (s == NULL)
            mote_httpd_error(c, 404, "not_found", "no such schedule", NULL);
        else
            answer_one(q, c, 200, s);
        return;
    }
    if (m == MOTE_HM_DELETE) {
        char ok[80];
        struct mote_sb k;
        struct mote_jw w;

        if (del(q, id, &code, err, sizeof(err)) < 0) {
            mote_httpd_error(c, status_of(code), code, err, NULL);
            return;
        }
        mote_sb_init(&k, ok, sizeof(ok));
        mote_jw_init(&w, mote_sb_put, &k);
        mote_jw_obj(&w);
        mote_jw_kstr(&w, "removed", id);
        mote_jw_obj_end(&w);
        (void)mote_sb_put(&k, "\n", 1);
        mote_httpd_reply(c, 200, k.p, k.len, NULL);
        return;
    }
    /* PUT: the body is one schedule object (strict) */
    {
        struct mote_sched def;

        n = mote_json_parse_object(&sv->json, body, len, err, sizeof(err));
        if (n <= 0) {
            mote_httpd_error(c, n == MOTE_ERR_TOO_LARGE ? 413 : 400,
                             n == MOTE_ERR_TOO_LARGE ? "too_large" : "bad_json",
                             err[0] != '\0' ? err : "the body must be one JSON object", NULL);
            return;
        }
        if (mote_sched_parse(&def, &sv->json, 0, id, err, sizeof(err)) < 0) {
            mote_httpd_error(c, 400, "bad_field", err, NULL);
            return;
        }
        def.origin = MOTE_SCHED_API;
        def.created_by[0] = '\0';
        if (put(q, &def, &created, &code, err, sizeof(err)) < 0) {
            mote_httpd_error(c, status_of(code), code, err, NULL);
            return;
        }
        answer_one(q, c, created ? 201 : 200, find(q, id));
    }
}

/* ---- MQTT -------------------------------------------------------------------------------- */

int mote_serve_sched_request(struct serve *sv, const struct mote_json *j, int obj,
                             const char **code, char *msg, size_t cap)
{
    struct sched *q = mote_serve_sched_of(sv);
    int tp = mote_json_member(j, obj, "schedule"), td = mote_json_member(j, obj, "schedule_delete");
    struct mote_sched def;
    char id[MOTE_SCHED_ID_MAX];
    bool created;

    *code = "bad_field";
    if (q == NULL || !q->on) {
        *code = "not_found";
        return mote_why(msg, cap, MOTE_ERR_NOENT, "schedules are off in this server", NULL, NULL);
    }
    if ((tp >= 0) == (td >= 0))
        return mote_why(msg, cap, MOTE_ERR_INVAL,
                        "a schedule request has one of \"schedule\": {...} and "
                        "\"schedule_delete\": ID",
                        NULL, NULL);
    if (td >= 0) {
        if (mote_json_type_of(j, td) != MOTE_JSON_STRING ||
            mote_json_cstr(j, td, id, sizeof(id)) <= 0)
            return mote_why(msg, cap, MOTE_ERR_INVAL, "\"schedule_delete\" is a schedule's id",
                            NULL, NULL);
        return del(q, id, code, msg, cap);
    }
    if (mote_json_strict(j, tp, MOTE_JSON_NO_DUP_KEYS, msg, cap) < 0 ||
        mote_sched_parse(&def, j, tp, NULL, msg, cap) < 0)
        return MOTE_ERR_INVAL;
    def.origin = MOTE_SCHED_API;
    def.created_by[0] = '\0';
    return put(q, &def, &created, code, msg, cap);
}

/* ---- the agent's tool ---------------------------------------------------------------------- */

static const char tool_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"action\":{\"type\":\"string\",\"enum\":[\"create\",\"list\",\"delete\"]},"
    "\"id\":{\"type\":\"string\",\"description\":\"the schedule's name: letters, digits, _ and -\"},"
    "\"prompt\":{\"type\":\"string\",\"description\":\"what is sent at each occurrence\"},"
    "\"cron\":{\"type\":\"string\",\"description\":\"5-field cron: minute hour day month weekday, "
    "e.g. 0 9 * * mon\"},"
    "\"every\":{\"type\":\"string\",\"description\":\"an interval instead: 10m, 2h, 1d\"},"
    "\"at\":{\"type\":\"string\",\"description\":\"once instead: 2026-03-01T06:00:00\"},"
    "\"tz\":{\"type\":\"string\",\"description\":\"IANA time zone of cron and at, e.g. "
    "Europe/Paris (default: the server's)\"},"
    "\"conversation\":{\"type\":\"string\",\"description\":\"this (default: this conversation) or "
    "new (a new conversation each time)\"}},"
    "\"required\":[\"action\"]}";

/* The tool's answer. */
static int tool_done(struct mote_tool_run *run, const char *a, const char *b, const char *c,
                     bool error)
{
    mote_tool_outs(run, a);
    if (b != NULL)
        mote_tool_outs(run, b);
    if (c != NULL)
        mote_tool_outs(run, c);
    run->is_error = error;
    return MOTE_STEP_DONE;
}

static int tool_step(struct mote_loop *loop, mote_job_id self, struct mote_tool_run *run)
{
    struct serve *sv = run->tool->arg;
    struct sched *q = mote_serve_sched_of(sv);
    char action[16], id[MOTE_SCHED_ID_MAX], err[200], v[MOTE_SCHED_RULE_MAX];
    const char *code = NULL;
    unsigned i;

    (void)loop, (void)self;
    if (mote_tool_arg(run, "action", action, sizeof(action)) <= 0)
        return tool_done(run, "\"action\" is create, list or delete", NULL, NULL, true);
    if (strcmp(action, "list") == 0) {
        bool any = false;

        for (i = 0; i < MOTE_SCHED_MAX; i++) {
            const struct sched_slot *s = &q->slots[i];
            int64_t key, at;
            char when[MOTE_ISO_MAX];

            if (!s->used)
                continue;
            any = true;
            mote_tool_outs(run, s->def.id);
            mote_tool_outs(run, s->def.kind == MOTE_SCHED_CRON    ? ": cron "
                                : s->def.kind == MOTE_SCHED_EVERY ? ": every "
                                                                  : ": at ");
            mote_tool_outs(run, s->def.rule);
            if (s->def.tz[0] != '\0') {
                mote_tool_outs(run, " ");
                mote_tool_outs(run, s->def.tz);
            }
            if (mote_sched_upcoming(q, s, &key, &at) > 0 && at > 0) {
                mote_iso_write(when, at, 0, true);
                mote_tool_outs(run, ", next ");
                mote_tool_outs(run, when);
            }
            mote_tool_outs(run, s->def.conversation[0] != '\0' ? ", to conversation "
                                                                : ", a new conversation each time");
            mote_tool_outs(run, s->def.conversation);
            mote_tool_outs(run, ": ");
            mote_tool_out(run, s->def.prompt,
                          strlen(s->def.prompt) > 200 ? 200 : strlen(s->def.prompt));
            mote_tool_outs(run, "\n");
        }
        return any ? MOTE_STEP_DONE : tool_done(run, "no schedules", NULL, NULL, false);
    }
    if (mote_tool_arg(run, "id", id, sizeof(id)) <= 0)
        return tool_done(run, "\"id\": the schedule's name is needed", NULL, NULL, true);
    if (strcmp(action, "delete") == 0) {
        if (del(q, id, &code, err, sizeof(err)) < 0)
            return tool_done(run, "not deleted: ", err, NULL, true);
        return tool_done(run, "deleted schedule ", id, NULL, false);
    }
    if (strcmp(action, "create") != 0)
        return tool_done(run, "\"action\" is create, list or delete", NULL, NULL, true);
    {
        /* the tool's input as a schedule object: its members but
         * "action", the conversation "this" by default */
        static const char *const keys[] = {"prompt", "cron", "every", "at", "tz"};
        struct mote_sb k;
        struct mote_jw w;
        struct mote_sched def;
        bool created;
        int t;

        mote_sb_init(&k, sv->scratch, sizeof(sv->scratch));
        mote_jw_init(&w, mote_sb_put, &k);
        mote_jw_obj(&w);
        mote_jw_kstr(&w, "id", id);
        for (i = 0; i < MOTE_ARRAY_LEN(keys); i++) {
            t = mote_json_member(&run->json, 0, keys[i]);
            if (t >= 0 && !mote_json_is_null(&run->json, t)) {
                size_t n;
                const char *raw = mote_json_raw(&run->json, t, &n);

                mote_jw_key(&w, keys[i]);
                if (mote_json_type_of(&run->json, t) == MOTE_JSON_STRING)
                    mote_jw_raw(&w, raw - 1, n + 2); /* (with its quotes, as it came) */
                else
                    mote_jw_raw(&w, raw, n);
            }
        }
        mote_jw_key(&w, "conversation");
        if (mote_tool_arg(run, "conversation", v, sizeof(v)) > 0 && strcmp(v, "new") == 0)
            mote_jw_null(&w);
        else if (mote_tool_arg(run, "conversation", v, sizeof(v)) > 0 && strcmp(v, "this") != 0)
            mote_jw_str(&w, v);
        else
            mote_jw_str(&w, mote_conv_id(run->conv));
        mote_jw_obj_end(&w);
        if (w.err != 0)
            return tool_done(run, "not created: the schedule is too long", NULL, NULL, true);
        if (mote_json_parse(&sv->json, k.p, k.len) <= 0 ||
            mote_sched_parse(&def, &sv->json, 0, NULL, err, sizeof(err)) < 0)
            return tool_done(run, "not created: ", err, NULL, true);
        def.origin = MOTE_SCHED_AGENT;
        mote_str_copy(def.created_by, sizeof(def.created_by), mote_conv_id(run->conv));
        if (find(q, id) != NULL && find(q, id)->def.origin != MOTE_SCHED_AGENT)
            return tool_done(run, "not created: a schedule of that id exists, made by a person; "
                                  "choose another id",
                             NULL, NULL, true);
        if (put(q, &def, &created, &code, err, sizeof(err)) < 0)
            return tool_done(run, "not created: ", err, NULL, true);
        {
            const struct sched_slot *s = find(q, id);
            int64_t key, at;
            char when[MOTE_ISO_MAX];

            mote_tool_outs(run, created ? "created schedule " : "replaced schedule ");
            mote_tool_outs(run, id);
            if (s != NULL && mote_sched_upcoming(q, s, &key, &at) > 0 && at > 0) {
                mote_iso_write(when, at, 0, true);
                mote_tool_outs(run, "; the next occurrence is at ");
                mote_tool_outs(run, when);
            }
            return MOTE_STEP_DONE;
        }
    }
}

int mote_serve_sched_tool(struct serve *sv)
{
    static struct mote_tool tool = {
        "schedule",
        "Schedules a prompt to be sent to a conversation by itself: create (with a cron "
        "expression, an interval or a single time; by default to this conversation), list, or "
        "delete a schedule.",
        tool_schema, tool_step, NULL, NULL, 0};
    struct sched *q = mote_serve_sched_of(sv);

    if (q == NULL)
        return 0;
    tool.arg = sv;
    return mote_session_add_tool(sv->conf.session, &tool);
}
