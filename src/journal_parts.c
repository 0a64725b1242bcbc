/* journal_parts.c - the request-body part source: replays a journal's
 * records as the parts of a model request (user text, assistant text and
 * tool calls, tool results), one record at a time, so a request's memory
 * does not grow with the conversation (mote_journal_parts, docs/JOURNAL.md
 * "Building requests"). */
#include "mote/mote_journal.h"

#include <string.h>

#include "journal.h"
#include "util.h"

/* How an answer's records go into a request. */
enum { ANS_ALL = 0, ANS_TEXT_ONLY, ANS_NONE };

/* An answer is its text and call records, then its assistant record. In
 * a request it goes:
 *  - whole, when it is complete;
 *  - as its text only when it was interrupted (a cancel, a failure, a
 *    shutdown) and a user message follows it: its calls never ran, and
 *    its assistant record always gives a text part (empty when nothing
 *    more came) marked `cut`, so the request says where the answer was
 *    cut off and the text of the next answer never runs into it;
 *  - not at all when it was interrupted and nothing the user said follows
 *    (the request is that very turn again: the model answers anew), or
 *    when its pieces have no assistant record (a crash while streaming). */
static uint8_t answer_mode(const struct mote_journal *j)
{
    if (!mote_jrec_bool(j, 0, "interrupted"))
        return ANS_ALL;
    return j->cur_off >= j->last_user_end ? ANS_NONE : ANS_TEXT_ONLY;
}

/* The record just read is the first piece of an answer: finds how the
 * answer ends (its assistant record, or anything else), sets ans_end and
 * ans_mode, and reads the piece again. Returns its type or < 0. */
static int classify_answer(struct mote_journal *j)
{
    uint64_t start = j->cur_off;
    int t;

    j->ans_mode = ANS_NONE;
    for (;;) {
        uint64_t at = j->rd_off;

        t = mote_journal_next(j);
        if (t < 0)
            return t;
        if (t == MOTE_REC_TEXT || t == MOTE_REC_CALL || t == MOTE_REC_REASON)
            continue;
        if (t == MOTE_REC_ASSISTANT) {
            j->ans_mode = answer_mode(j);
            j->ans_end = j->rd_off;
        } else {
            j->ans_end = at; /* unfinished: the pieces end here */
        }
        break;
    }
    j->rd_off = start;
    return mote_journal_next(j);
}

static size_t raw_len(const struct mote_journal *j, const char *key)
{
    size_t n = 0;

    (void)mote_json_raw(&j->buf->json, mote_json_member(&j->buf->json, 0, key), &n);
    return n;
}

/* How many parts the record just read yields (it may read ahead). */
static int parts_of(struct mote_journal *j, int t)
{
    if (t == MOTE_REC_USER || t == MOTE_REC_TOOL_RESULT || t == MOTE_REC_COMPACT)
        return 1;
    if (t == MOTE_REC_TEXT || t == MOTE_REC_CALL || t == MOTE_REC_REASON) {
        if (j->cur_off >= j->ans_end) {
            int again = classify_answer(j);

            if (again < 0)
                return again;
            if (again != t)
                return MOTE_ERR_CORRUPT; /* the file changed under the reader */
        }
        if (t == MOTE_REC_TEXT)
            return j->ans_mode != ANS_NONE && raw_len(j, "text") > 0 ? 1 : 0;
        if (t == MOTE_REC_REASON) /* (a cut answer's too: the writer decides) */
            return j->ans_mode != ANS_NONE ? 1 : 0;
        return j->ans_mode == ANS_ALL ? 1 : 0;
    }
    if (t == MOTE_REC_ASSISTANT) {
        int calls = mote_json_member(&j->buf->json, 0, "calls");
        unsigned k = mote_json_type_of(&j->buf->json, calls) == MOTE_JSON_ARRAY
                         ? (unsigned)j->buf->json.tok[calls].size
                         : 0u;

        if (j->cur_off >= j->ans_end) {
            j->ans_mode = answer_mode(j); /* no pieces before it */
            j->ans_end = j->rd_off;
        }
        if (j->ans_mode == ANS_NONE)
            return 0;
        if (j->ans_mode == ANS_TEXT_ONLY)
            return 1; /* its text, even empty: the cut is said */
        return (raw_len(j, "text") > 0 ? 1 : 0) + (int)k;
    }
    return 0;
}

static int fill_call(struct mote_journal *j, int call, struct mote_part *p, size_t *used)
{
    int in = mote_json_member(&j->buf->json, call, "input");
    int ex = mote_json_member(&j->buf->json, call, "extra");

    p->role = MOTE_ROLE_ASSISTANT;
    p->type = MOTE_PART_TOOL_CALL;
    p->id = mote_jrec_str(j, call, "id", used, NULL);
    p->name = mote_jrec_str(j, call, "name", used, NULL);
    p->input = mote_json_raw(&j->buf->json, in, &p->input_len);
    if (mote_json_type_of(&j->buf->json, in) != MOTE_JSON_OBJECT)
        return MOTE_ERR_CORRUPT;
    if (mote_json_type_of(&j->buf->json, ex) == MOTE_JSON_OBJECT)
        p->extra = mote_json_raw(&j->buf->json, ex, &p->extra_len);
    return p->id != NULL && p->name != NULL ? 1 : MOTE_ERR_CORRUPT;
}

static int fill_part(struct mote_journal *j, int type, unsigned sub, struct mote_part *p)
{
    size_t used = 0;

    memset(p, 0, sizeof(*p));
    if (type == MOTE_REC_COMPACT) {
        /* The earlier conversation, as the model summarised it. */
        static const char head[] = "[The conversation so far, summarised]\n";
        size_t n = sizeof(head) - 1;

        memcpy(j->buf->text, head, n);
        used = n;
        if (mote_jrec_str(j, 0, "summary", &used, &p->text_len) == NULL)
            return MOTE_ERR_CORRUPT;
        p->role = MOTE_ROLE_USER;
        p->type = MOTE_PART_TEXT;
        p->text = j->buf->text;
        p->text_len += n;
        return 1;
    }
    if (type == MOTE_REC_USER || type == MOTE_REC_TEXT) {
        p->role = type == MOTE_REC_USER ? MOTE_ROLE_USER : MOTE_ROLE_ASSISTANT;
        p->type = MOTE_PART_TEXT;
        p->text = mote_jrec_str(j, 0, "text", &used, &p->text_len);
        return p->text != NULL ? 1 : MOTE_ERR_CORRUPT;
    }
    if (type == MOTE_REC_TOOL_RESULT) {
        p->role = MOTE_ROLE_USER;
        p->type = MOTE_PART_TOOL_RESULT;
        p->id = mote_jrec_str(j, 0, "id", &used, NULL);
        p->text = mote_jrec_str(j, 0, "text", &used, &p->text_len);
        p->is_error = mote_jrec_bool(j, 0, "error");
        return p->id != NULL && p->text != NULL ? 1 : MOTE_ERR_CORRUPT;
    }
    if (type == MOTE_REC_CALL)
        return fill_call(j, 0, p, &used);
    if (type == MOTE_REC_REASON) {
        static const char *const kinds[] = {"text", "sig", "id"};
        int64_t b = 0;
        unsigned k;

        p->role = MOTE_ROLE_ASSISTANT;
        p->type = MOTE_PART_REASONING;
        p->earlier = j->cur_off < j->last_user_end;
        p->fmt = mote_jrec_str(j, 0, "fmt", &used, NULL);
        if (mote_json_int(&j->buf->json, mote_json_member(&j->buf->json, 0, "b"), &b) < 0 ||
            b < 0 || b > 0xFFFFFF || p->fmt == NULL)
            return MOTE_ERR_CORRUPT;
        p->block = (unsigned)b;
        for (k = 0; k < MOTE_ARRAY_LEN(kinds); k++) {
            p->text = mote_jrec_str(j, 0, kinds[k], &used, &p->text_len);
            if (p->text != NULL) {
                p->kind = (uint8_t)k;
                return 1;
            }
        }
        return MOTE_ERR_CORRUPT;
    }
    /* assistant: text first (if any, or cut), then the calls */
    p->role = MOTE_ROLE_ASSISTANT;
    if (j->ans_mode == ANS_TEXT_ONLY) {
        p->type = MOTE_PART_TEXT;
        p->cut = true;
        p->text = mote_jrec_str(j, 0, "text", &used, &p->text_len);
        if (p->text == NULL) { /* a record without text: nothing came before the cut */
            p->text = "";
            p->text_len = 0;
        }
        return 1;
    }
    if (raw_len(j, "text") > 0) {
        if (sub == 0) {
            p->type = MOTE_PART_TEXT;
            p->text = mote_jrec_str(j, 0, "text", &used, &p->text_len);
            return p->text != NULL ? 1 : MOTE_ERR_CORRUPT;
        }
        sub--;
    }
    return fill_call(j, mote_json_elem(&j->buf->json, mote_json_member(&j->buf->json, 0, "calls"),
                                       (int)sub),
                     p, &used);
}

int mote_journal_parts(void *arg, unsigned index, struct mote_part *p)
{
    struct mote_journal *j = arg;

    if (!j->part_valid || index < j->part_base) {
        mote_journal_rewind(j);
        if (j->has_compact)
            j->rd_off = j->compact_off; /* what came before is in its summary */
        j->part_base = 0;
        j->part_n = 0;
        j->part_valid = true;
        j->part_type = 0;
        j->ans_end = 0;
        j->ans_mode = ANS_ALL;
    }
    if (j->part_n > 0 && index < j->part_base + j->part_n &&
        (j->buf->owner != j || j->buf->owner_off != j->cur_off)) {
        /* The shared buffer holds another record now: read ours again. */
        int t;

        j->rd_off = j->cur_off;
        t = mote_journal_next(j);
        if (t < 0)
            return t;
        if (t != j->part_type)
            return MOTE_ERR_CORRUPT;
    }
    while (index >= j->part_base + j->part_n) {
        int t = mote_journal_next(j), n;

        if (t == 0)
            return 0;
        if (t < 0)
            return t;
        n = parts_of(j, t);
        if (n < 0)
            return n;
        j->part_base += j->part_n;
        j->part_n = (unsigned)n;
        j->part_type = t;
    }
    MOTE_ASSERT(index >= j->part_base && index - j->part_base < j->part_n);
    return fill_part(j, j->part_type, index - j->part_base, p);
}

