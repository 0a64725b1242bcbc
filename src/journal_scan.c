/* journal_scan.c - a journal read in steps for a listing (mote_jscan):
 * the checks of opening, the recovery decision and the user messages'
 * count and first words, in one pass over the file, a budget of bytes
 * per call (mote_journal.h). */
#include "mote/mote_journal.h"

#include <string.h>

#include "journal.h"
#include "util.h"

int mote_jscan_begin(struct mote_jscan *s, struct mote_jbuf *buf, const struct mote_port *port,
                     const char *id)
{
    int rc;

    s->j.buf = buf;
    s->done = false;
    s->user_messages = 0;
    s->first[0] = '\0';
    mote_recover_begin(&s->walk, &s->r);
    rc = mote_jcheck_start(&s->j, port, id, true, &s->check);
    if (rc < 0)
        s->j.h = -1;
    return rc;
}

/* A user record: counted, and the first one's first words kept, on one
 * line. */
static void take_user(struct mote_jscan *s)
{
    const struct mote_json *js = &s->j.buf->json;
    const char *raw;
    size_t len, i;

    s->user_messages++;
    if (s->first[0] != '\0')
        return;
    raw = mote_json_raw(js, mote_json_member(js, 0, "text"), &len);
    if (raw == NULL)
        return;
    if (len > 3 * sizeof(s->first))
        len = 3 * sizeof(s->first); /* escapes take room: enough to fill it */
    (void)mote_json_unescape(raw, len, s->first, sizeof(s->first));
    s->first[sizeof(s->first) - 1] = '\0';
    for (i = 0; s->first[i] != '\0'; i++) {
        if ((unsigned char)s->first[i] < 0x20)
            s->first[i] = ' ';
    }
}

int mote_jscan_step(struct mote_jscan *s, size_t budget)
{
    size_t spent = 0;
    int t;

    if (s->done)
        return 0;
    if (s->j.h < 0)
        return MOTE_ERR_BADF;
    do {
        t = mote_jcheck_next(&s->j, &s->check, &spent);
        if (t == MOTE_ERR_AGAIN)
            continue;
        if (t < 0) {
            mote_journal_close(&s->j);
            return t;
        }
        if (t == 0) {
            t = mote_jcheck_finish(&s->j, &s->check, true);
            if (t < 0)
                return t; /* closed by finish */
            mote_recover_end(&s->walk, &s->r);
            s->done = true;
            return 0;
        }
        if (t == MOTE_REC_USER)
            take_user(s);
        mote_recover_take(&s->j, t, &s->walk, &s->r);
    } while (spent < budget);
    return 1;
}

void mote_jscan_end(struct mote_jscan *s)
{
    mote_journal_close(&s->j);
}
