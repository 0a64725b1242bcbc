/* sse.c - incremental Server-Sent Events parser (see mote_sse.h). */
#include "mote/mote_sse.h"

#include <string.h>

enum { ST_LINE_START, ST_FIELD, ST_VALUE_START, ST_VALUE, ST_COMMENT };
enum { F_IGNORE, F_DATA, F_EVENT, F_ID, F_RETRY };

void mote_sse_init(struct mote_sse *p, mote_sse_fn fn, void *arg)
{
    /* The data buffer is written before it is read (data_len): leaving it
     * untouched keeps its pages out of memory until an event needs them. */
    memset(p, 0, offsetof(struct mote_sse, data));
    p->on_event = fn;
    p->arg = arg;
}

bool mote_sse_pending(const struct mote_sse *p)
{
    return p->have_data || p->name_len > 0 || p->state != ST_LINE_START;
}

static int dispatch(struct mote_sse *p)
{
    int rc = 0;

    if (p->have_data) {
        p->data[p->data_len] = '\0';
        p->event[p->name_len] = '\0';
        rc = p->on_event(p->arg, p->name_len > 0 ? p->event : "message", p->data, p->data_len,
                         p->id);
    }
    p->have_data = false;
    p->data_len = 0;
    p->name_len = 0;
    return rc;
}

static void begin_field(struct mote_sse *p)
{
    p->fname[p->fname_len < sizeof(p->fname) ? p->fname_len : 0] = '\0';
    if (p->fname_len >= sizeof(p->fname))
        p->field = F_IGNORE;
    else if (strcmp(p->fname, "data") == 0)
        p->field = F_DATA;
    else if (strcmp(p->fname, "event") == 0)
        p->field = F_EVENT;
    else if (strcmp(p->fname, "id") == 0)
        p->field = F_ID;
    else if (strcmp(p->fname, "retry") == 0)
        p->field = F_RETRY;
    else
        p->field = F_IGNORE;
    switch (p->field) {
    case F_DATA:
        /* A second data line is joined to the first with LF. */
        if (p->have_data) {
            if (p->data_len >= MOTE_SSE_DATA_MAX) {
                p->err = MOTE_ERR_TOO_LARGE;
                return;
            }
            p->data[p->data_len++] = '\n';
        }
        p->have_data = true;
        break;
    case F_EVENT:
        p->name_len = 0;
        break;
    case F_ID:
        p->id_len = 0;
        break;
    case F_RETRY:
        p->retry_acc = 0;
        p->retry_ok = true;
        break;
    default:
        break;
    }
}

static void end_line(struct mote_sse *p)
{
    switch (p->state) {
    case ST_LINE_START: {
        int rc = dispatch(p); /* empty line */

        if (rc < 0)
            p->err = rc;
        return;
    }
    case ST_FIELD: /* a line with no colon: the whole line names the field */
        begin_field(p);
        break;
    default:
        break;
    }
    if (p->field == F_ID && p->state != ST_COMMENT) {
        /* An id containing NUL is ignored, as the standard says. */
        if (memchr(p->id_pending, '\0', p->id_len) == NULL) {
            memcpy(p->id, p->id_pending, p->id_len);
            p->id[p->id_len] = '\0';
        }
    }
    if (p->field == F_RETRY && p->state != ST_COMMENT && p->retry_ok && p->state == ST_VALUE)
        p->retry_ms = p->retry_acc;
    p->state = ST_LINE_START;
    p->field = F_IGNORE;
    p->fname_len = 0;
}

static void value_byte(struct mote_sse *p, char c)
{
    switch (p->field) {
    case F_DATA:
        if (p->data_len >= MOTE_SSE_DATA_MAX) {
            p->err = MOTE_ERR_TOO_LARGE;
            return;
        }
        p->data[p->data_len++] = c;
        break;
    case F_EVENT:
        if (p->name_len + 1 < sizeof(p->event))
            p->event[p->name_len++] = c;
        break;
    case F_ID:
        if (p->id_len + 1 < sizeof(p->id_pending))
            p->id_pending[p->id_len++] = c;
        break;
    case F_RETRY:
        if (c < '0' || c > '9' || p->retry_acc > 100000000u)
            p->retry_ok = false;
        else
            p->retry_acc = p->retry_acc * 10u + (uint32_t)(c - '0');
        break;
    default:
        break;
    }
}

int mote_sse_feed(struct mote_sse *p, const char *buf, size_t n)
{
    size_t i;

    for (i = 0; i < n && p->err == 0; i++) {
        char c = buf[i];

        if (c == '\n' && p->after_cr) {
            p->after_cr = false;
            continue;
        }
        p->after_cr = false;
        if (c == '\r' || c == '\n') {
            p->after_cr = c == '\r';
            end_line(p);
            continue;
        }
        switch (p->state) {
        case ST_LINE_START:
            if (c == ':') {
                p->state = ST_COMMENT;
                break;
            }
            p->state = ST_FIELD;
            p->fname_len = 0;
            /* fall through */
        case ST_FIELD:
            if (c == ':') {
                begin_field(p);
                p->state = ST_VALUE_START;
            } else if (p->fname_len < sizeof(p->fname)) {
                p->fname[p->fname_len++] = c;
            } else {
                p->fname_len = sizeof(p->fname); /* too long: an unknown field */
            }
            break;
        case ST_VALUE_START:
            p->state = ST_VALUE;
            if (c == ' ')
                break; /* one space after the colon is not part of the value */
            /* fall through */
        case ST_VALUE:
            /* Fast path: copy a run of plain data bytes at once. */
            if (p->field == F_DATA) {
                size_t run = 1;

                while (i + run < n && buf[i + run] != '\n' && buf[i + run] != '\r')
                    run++;
                if (p->data_len + run > MOTE_SSE_DATA_MAX) {
                    p->err = MOTE_ERR_TOO_LARGE;
                    break;
                }
                memcpy(p->data + p->data_len, buf + i, run);
                p->data_len += run;
                i += run - 1;
                break;
            }
            value_byte(p, c);
            break;
        case ST_COMMENT:
        default:
            break;
        }
    }
    return p->err;
}
