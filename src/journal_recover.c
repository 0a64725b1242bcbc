/* journal_recover.c - the recovery decision: what an interrupted
 * conversation needs, read from its records alone (mote_recover), and
 * closing a tool round for good (mote_recover_apply); docs/JOURNAL.md
 * "Recovery". */
#include "mote/mote_journal.h"

#include <string.h>

#include "journal.h"
#include "util.h"

#if MOTE_LLM_MAX_TOOL_CALLS > 32767
#error "MOTE_LLM_MAX_TOOL_CALLS must be at most 32767 (a call's index in its record is 16 bits)"
#endif

/* A tool call of the record in the buffer (`call`: its object token; `idx`
 * its index in the record's "calls", -1 for a call record). */
static void take_call(struct mote_journal *j, int call, int idx, struct mote_rec_call *c)
{
    size_t used = 0;
    const char *id = mote_jrec_str(j, call, "id", &used, NULL);
    const char *name = mote_jrec_str(j, call, "name", &used, NULL);
    const char *refused = mote_jrec_str(j, call, "refused", &used, NULL);

    MOTE_ASSERT(idx >= -1 && idx < MOTE_LLM_MAX_TOOL_CALLS);
    memset(c, 0, sizeof(*c));
    mote_str_copy(c->id, sizeof(c->id), id != NULL ? id : "");
    mote_str_copy(c->name, sizeof(c->name), name != NULL ? name : "");
    /* a "refused" that is no string, or empty, still refuses */
    if (refused != NULL || mote_json_member(&j->buf->json, call, "refused") >= 0)
        mote_str_copy(c->refused, sizeof(c->refused),
                      refused != NULL && refused[0] != '\0' ? refused : MOTE_REFUSED_INVALID);
    c->rec_off = j->cur_off;
    c->rec_idx = (int16_t)idx;
}

static uint64_t add_capped(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* The token counts of an assistant record's "usage" (token `u`): the last
 * request's, added to the totals. A count that is missing or negative is 0. */
static void take_usage(struct mote_journal *j, int u, struct mote_recovery *r)
{
    /* the names written, then those of journals written before them */
    static const char *const keys[4] = {"input_tokens", "output_tokens", "cache_read_tokens",
                                        "cache_write_tokens"};
    static const char *const old_keys[4] = {"in", "out", "cache_read", "cache_write"};
    uint64_t *last[4] = {&r->last.input, &r->last.output, &r->last.cache_read,
                         &r->last.cache_write};
    uint64_t *total[4] = {&r->total.input, &r->total.output, &r->total.cache_read,
                          &r->total.cache_write};
    unsigned k;

    for (k = 0; k < 4; k++) {
        int t = mote_json_member(&j->buf->json, u, keys[k]);
        int64_t v = 0;

        if (t < 0)
            t = mote_json_member(&j->buf->json, u, old_keys[k]);
        (void)mote_json_int(&j->buf->json, t, &v);
        *last[k] = v > 0 ? (uint64_t)v : 0u;
        *total[k] = add_capped(*total[k], *last[k]);
    }
}

/* A tool_start record: the process group and tag of call `c`. A group id
 * that is no tool's (0, 1 - init - or negative) counts as none, and a
 * start time that is not positive as unknown: recovery must never signal
 * more than the tool's own processes, whatever the file says. */
static void take_start(struct mote_journal *j, struct mote_rec_call *c)
{
    const struct mote_json *js = &j->buf->json;
    int64_t v = 0;

    c->started = true;
    c->pgid = 0;
    c->start = 0;
    if (mote_json_int(js, mote_json_member(js, 0, "pgid"), &v) == 0 && v > 1)
        c->pgid = v;
    v = 0;
    if (mote_json_int(js, mote_json_member(js, 0, "start"), &v) == 0 && v > 0)
        c->start = (uint64_t)v;
    if (mote_json_cstr(js, mote_json_member(js, 0, "tag"), c->tag, sizeof(c->tag)) < 0)
        c->tag[0] = '\0';
}

/* The calls of an assistant record (`calls`: its array token), after the
 * call records that came before it (`pend`, then `nover_pend` more past
 * the table from offset `over_pend`): the first MOTE_LLM_MAX_TOOL_CALLS
 * in the table, the rest counted, and where the first of those is. */
static void take_answer_calls(struct mote_journal *j, int calls, const struct mote_rec_call *pend,
                              unsigned npend, unsigned nover_pend, uint64_t over_pend,
                              struct mote_recovery *r)
{
    const struct mote_json *js = &j->buf->json;
    unsigned i, size = mote_json_type_of(js, calls) == MOTE_JSON_ARRAY ? (unsigned)js->tok[calls].size
                                                                        : 0u;

    r->ncalls = 0;
    for (i = 0; i < npend && r->ncalls < MOTE_LLM_MAX_TOOL_CALLS; i++)
        r->calls[r->ncalls++] = pend[i];
    for (i = 0; i < size && r->ncalls < MOTE_LLM_MAX_TOOL_CALLS; i++) {
        int c = mote_json_elem(js, calls, (int)i);

        if (c < 0)
            break;
        take_call(j, c, (int)i, &r->calls[r->ncalls++]);
    }
    memset(&r->over, 0, sizeof(r->over));
    r->nover = nover_pend + (size - i);
    r->over.off = nover_pend > 0 ? over_pend : j->cur_off;
    r->over.idx = (int16_t)(nover_pend > 0 ? -1 : (int)i);
}

/* No answer's calls are open (a user message, a compaction, an answer
 * without calls). */
static void no_calls(struct mote_recovery *r)
{
    r->ncalls = r->nover = 0;
    memset(&r->over, 0, sizeof(r->over));
}

/* What the calls of the last answer left: how many have no result, how
 * many of those began, and the groups and tags to end. */
static void count_missing(struct mote_recovery *r)
{
    unsigned i;

    for (i = 0; i < r->ncalls; i++) {
        const struct mote_rec_call *c = &r->calls[i];

        if (c->has_result)
            continue;
        r->nmissing++;
        if (!c->started)
            continue;
        r->nstarted++;
        /* A tool that began and has no result may still run: its group. */
        if (c->pgid > 0 || c->tag[0] != '\0') {
            MOTE_ASSERT(r->nkill < MOTE_LLM_MAX_TOOL_CALLS);
            r->kill_pgid[r->nkill] = c->pgid;
            r->kill_start[r->nkill] = c->start;
            memcpy(r->kill_tag[r->nkill], c->tag, sizeof(c->tag));
            r->nkill++;
        }
    }
}

/* The id of the call at o->off/o->idx (text records before it passed
 * over, and reasoning) into `id`, and `o` moved past it: 1, 0 when the answer has no
 * more calls, or < 0. The reading cursor stays where it was. */
static int over_call(struct mote_journal *j, struct mote_over *o, char *id, size_t cap)
{
    uint64_t rd_off = j->rd_off, cur_off = j->cur_off;
    uint32_t rd_line = j->rd_line;
    int rc;

    for (;;) {
        size_t used = 0;
        const char *s;
        int t, call = 0;

        j->rd_off = o->off;
        rc = t = mote_journal_next(j);
        if (t == MOTE_REC_TEXT || t == MOTE_REC_REASON) {
            o->off = j->rd_off;
            continue;
        }
        if (t == MOTE_REC_CALL && o->idx < 0) {
            o->off = j->rd_off;
        } else if (t == MOTE_REC_ASSISTANT && o->idx < INT16_MAX) {
            int k = o->idx < 0 ? 0 : o->idx;

            call = mote_json_elem(&j->buf->json, mote_json_member(&j->buf->json, 0, "calls"), k);
            if (call < 0) {
                rc = 0;
                break;
            }
            o->idx = (int16_t)(k + 1);
        } else {
            rc = t < 0 ? t : 0; /* the answer's calls end here */
            break;
        }
        s = mote_jrec_str(j, call, "id", &used, NULL);
        mote_str_copy(id, cap, s != NULL ? s : "");
        rc = 1;
        break;
    }
    j->rd_off = rd_off;
    j->cur_off = cur_off;
    j->rd_line = rd_line;
    return rc;
}

int mote_recover_over_next(struct mote_journal *j, struct mote_over *o)
{
    char id[MOTE_LLM_ID_MAX], m[160];
    struct mote_over at = *o;
    struct mote_sb sb;
    int rc;

    while (at.left > 0) {
        rc = over_call(j, &at, id, sizeof(id));
        if (rc < 0)
            return rc;
        if (rc == 0) {
            o->skip = o->left = 0;
            return 0;
        }
        if (at.skip > 0) {
            at.skip--;
            continue;
        }
        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_s(&sb, "not run: more than ");
        mote_sb_u(&sb, MOTE_LLM_MAX_TOOL_CALLS);
        mote_sb_s(&sb, " tool calls in one answer, and mote runs the first ");
        mote_sb_u(&sb, MOTE_LLM_MAX_TOOL_CALLS);
        mote_sb_s(&sb, " only; call it again");
        rc = mote_journal_tool_result(j, id, m, sb.len, true);
        if (rc < 0)
            return rc;
        at.left--;
        *o = at;
        return 1;
    }
    o->skip = 0;
    return 0;
}

/* The call of the table a tool_start or tool_result record (`t`) with `id`
 * is about, or -1 (a result of a call past the table). Records are
 * matched to calls by their place, not by the id alone, so that an answer
 * holding one id twice (journals of motes that kept the ids as the model
 * sent them) still gives each call its own: mote runs and answers the
 * calls one at a time, in their order, after the results of the calls
 * past the table. So a result, while those are not all there and no call
 * of the table has begun or been answered, is theirs; else it is the
 * first call with its id still without one. A start is the call begun
 * last when that one has the id and no result yet (a tool records its
 * process after the start of its run), else the first with the id not
 * begun. */
static int record_call(const struct mote_recovery *r, int t, const char *id)
{
    unsigned i;
    int last = -1;

    for (i = 0; i < r->ncalls; i++) {
        if (r->calls[i].started || r->calls[i].has_result)
            last = (int)i;
    }
    if (t == MOTE_REC_TOOL_RESULT && last < 0 && r->over.skip < r->nover)
        return -1;
    if (t == MOTE_REC_TOOL_START && last >= 0 && r->calls[last].started &&
        !r->calls[last].has_result && strcmp(r->calls[last].id, id) == 0)
        return last;
    for (i = 0; i < r->ncalls; i++) {
        const struct mote_rec_call *c = &r->calls[i];

        if (strcmp(c->id, id) == 0 && !c->has_result && (t == MOTE_REC_TOOL_RESULT || !c->started))
            return (int)i;
    }
    return -1;
}

void mote_recover_begin(struct mote_recover_walk *w, struct mote_recovery *r)
{
    memset(w, 0, sizeof(*w));
    memset(r, 0, sizeof(*r));
    w->last = MOTE_REC_NONE;
}

void mote_recover_take(struct mote_journal *j, int t, struct mote_recover_walk *w,
                       struct mote_recovery *r)
{
    size_t used = 0;
    unsigned i;

    switch (t) {
    case MOTE_REC_OPEN:
        r->calls_only = mote_json_eq(&j->buf->json,
                                     mote_json_member(&j->buf->json, 0, "kind"), "calls");
        break;
    case MOTE_REC_USER:
        r->autos = 0;
        no_calls(r);
        w->npend = w->nover_pend = 0;
        w->last = t;
        break;
    case MOTE_REC_REQUEST:
    case MOTE_REC_MARK:
    case MOTE_REC_CANCEL:
        w->npend = w->nover_pend = 0;
        w->last = t;
        break;
    case MOTE_REC_AUTO:
        w->npend = w->nover_pend = 0;
        r->autos++;
        break;
    case MOTE_REC_ERROR: {
        const char *m = mote_jrec_str(j, 0, "message", &used, NULL);

        mote_str_copy(r->last_error, sizeof(r->last_error), m != NULL ? m : "");
        w->npend = w->nover_pend = 0;
        w->last = t;
        break;
    }
    case MOTE_REC_TEXT:
    case MOTE_REC_REASON: /* a piece of an answer that streamed */
        w->last = MOTE_REC_TEXT;
        break;
    case MOTE_REC_CALL:
        if (w->npend < MOTE_LLM_MAX_TOOL_CALLS)
            take_call(j, 0, -1, &w->pend[w->npend++]);
        else if (w->nover_pend++ == 0)
            w->over_pend = j->cur_off;
        w->last = t;
        break;
    case MOTE_REC_COMPACT:
        /* the round before it was complete; the context is small again */
        no_calls(r);
        w->npend = w->nover_pend = 0;
        r->compactions++;
        memset(&r->last, 0, sizeof(r->last));
        w->compact_resume = mote_jrec_bool(j, 0, "resume");
        w->last = t;
        break;
    case MOTE_REC_ASSISTANT: {
        bool interrupted = mote_jrec_bool(j, 0, "interrupted");
        int u = mote_json_member(&j->buf->json, 0, "usage");

        if (mote_json_type_of(&j->buf->json, u) == MOTE_JSON_OBJECT)
            take_usage(j, u, r);
        no_calls(r);
        if (!interrupted) /* an interrupted answer's calls never run */
            take_answer_calls(j, mote_json_member(&j->buf->json, 0, "calls"), w->pend, w->npend,
                              w->nover_pend, w->over_pend, r);
        /* pause_turn: the turn goes on with another request */
        w->paused = !interrupted && r->ncalls == 0 &&
                    mote_json_eq(&j->buf->json, mote_json_member(&j->buf->json, 0, "stop"),
                                 "pause_turn");
        w->npend = w->nover_pend = 0;
        w->last = t;
        break;
    }
    case MOTE_REC_TOOL_START:
    case MOTE_REC_TOOL_RESULT: {
        const char *id = mote_jrec_str(j, 0, "id", &used, NULL);
        int k = id != NULL ? record_call(r, t, id) : -1;

        if (k >= 0 && t == MOTE_REC_TOOL_RESULT)
            r->calls[k].has_result = true;
        else if (k >= 0)
            take_start(j, &r->calls[k]);
        else if (t == MOTE_REC_TOOL_RESULT && id != NULL && r->over.skip < r->nover)
            r->over.skip++; /* one of a call past the table */
        if (t == MOTE_REC_TOOL_RESULT)
            w->last = t;
        break;
    }
    case MOTE_REC_ALLOW: {
        const char *tool = mote_jrec_str(j, 0, "tool", &used, NULL);
        bool known = false;

        for (i = 0; tool != NULL && i < r->nallowed; i++)
            known = known || strcmp(r->allowed[i], tool) == 0;
        if (tool != NULL && !known && r->nallowed < MOTE_CONV_ALLOWED_MAX)
            mote_str_copy(r->allowed[r->nallowed++], sizeof(r->allowed[0]), tool);
        break;
    }
    default:
        break;
    }
}

void mote_recover_end(struct mote_recover_walk *w, struct mote_recovery *r)
{
    int last = w->last;
    bool paused;

    count_missing(r);
    r->over.left = r->nover > r->over.skip ? r->nover - r->over.skip : 0u;
    r->cancelled = last == MOTE_REC_CANCEL;
    paused = w->paused && last == MOTE_REC_ASSISTANT;
    if (r->calls_only)
        /* Calls from outside: whoever asked was told they failed (the
         * connection went with mote); none runs later on its own, and no
         * model is ever asked. */
        r->action = r->nmissing > 0 || r->over.left > 0 ? MOTE_RECOVER_TOOL_INTERRUPTED
                                                        : MOTE_RECOVER_IDLE;
    else if (r->nmissing > 0 && r->nstarted > 0)
        r->action = MOTE_RECOVER_TOOL_INTERRUPTED;
    else if (r->nmissing > 0 || r->over.left > 0)
        r->action = r->autos >= MOTE_MAX_AUTO_CONTINUES ? MOTE_RECOVER_LIMIT
                                                         : MOTE_RECOVER_RESUME_TOOLS;
    else if (last == MOTE_REC_USER || last == MOTE_REC_REQUEST || last == MOTE_REC_MARK ||
             last == MOTE_REC_TOOL_RESULT || last == MOTE_REC_TEXT || last == MOTE_REC_CALL ||
             (last == MOTE_REC_COMPACT && w->compact_resume) || paused)
        r->action = r->autos >= MOTE_MAX_AUTO_CONTINUES ? MOTE_RECOVER_LIMIT
                                                         : MOTE_RECOVER_CONTINUE;
    else
        r->action = MOTE_RECOVER_IDLE; /* an answer, an error, a cancel, nothing */
}

int mote_recover(struct mote_journal *j, struct mote_recovery *r)
{
    /* Big (the call records before their answer): on the stack for this
     * call only. */
    struct mote_recover_walk w;
    int t;

    mote_recover_begin(&w, r);
    mote_journal_rewind(j);
    while ((t = mote_journal_next(j)) > 0)
        mote_recover_take(j, t, &w, r);
    if (t < 0)
        return t;
    mote_recover_end(&w, r);
    return 0;
}

int mote_recover_apply(struct mote_journal *j, const struct mote_recovery *r)
{
    struct mote_over over = r->over;
    unsigned i;
    int rc;

    if (r->action != MOTE_RECOVER_TOOL_INTERRUPTED && r->action != MOTE_RECOVER_LIMIT)
        return 0;
    while ((rc = mote_recover_over_next(j, &over)) > 0)
        ;
    if (rc < 0)
        return rc;
    if (r->nmissing == 0)
        return 0;
    for (i = 0; i < r->ncalls; i++) {
        const struct mote_rec_call *c = &r->calls[i];
        const char *m = c->started ? MOTE_INTERRUPTED_TOOL : MOTE_NOT_RUN_TOOL;

        if (c->has_result)
            continue;
        rc = mote_journal_tool_result(j, c->id, m, strlen(m), true);
        if (rc < 0)
            return rc;
    }
    /* The turn ends here: the user decides (/retry), nothing runs again. */
    if (r->calls_only)
        return mote_journal_error(j, r->nstarted > 0
                                         ? "a call was interrupted: it may or may not have run; "
                                           "it is not run again"
                                         : "mote stopped before the call ran: it was not run");
    return mote_journal_error(j, r->action == MOTE_RECOVER_TOOL_INTERRUPTED
                                     ? "a tool was interrupted: it may or may not have run"
                                     : "stopped after automatic continues in a row; the tool "
                                       "calls left were not run");
}
