/*
 * mote_sse.h - incremental Server-Sent Events parser (WHATWG rules).
 *
 * Feed bytes as they arrive, split anywhere (inside a line, a CRLF pair or
 * a UTF-8 sequence). Lines end in LF, CR or CRLF; lines starting with ':'
 * are comments; "field: value" with or without the space; several data
 * lines are joined with LF; event, id and retry are kept; an empty line
 * dispatches the event if it has data (an event with no data line is not
 * dispatched; the id carries over to later events). An unterminated event
 * at the end of the stream is dropped, as the standard says.
 *
 * Memory: the data of one event is held whole (the provider needs the
 * complete JSON), up to MOTE_SSE_DATA_MAX bytes; beyond that the parser
 * stops with MOTE_ERR_TOO_LARGE and stays failed. Nothing else grows.
 */
#ifndef MOTE_SSE_H
#define MOTE_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Receives one event. `event` is "message" when the stream named none;
 * `data` is NUL-terminated (len bytes, may contain NUL). Valid during the
 * call. Return 0 to go on, < 0 to stop the parser with that error. */
typedef int (*mote_sse_fn)(void *arg, const char *event, const char *data, size_t len,
                           const char *id);

struct mote_sse {
    mote_sse_fn on_event;
    void *arg;
    int err;                   /* first error, sticky */
    uint8_t state;             /* internal */
    bool after_cr;             /* a CR ended the last line: skip one LF */
    bool have_data;            /* this event has at least one data line */
    uint8_t field;             /* internal: which field the line sets */
    uint8_t fname_len;
    char fname[8];             /* field name being read */
    uint32_t retry_ms;         /* last valid retry: value, 0 if none */
    uint32_t retry_acc;
    bool retry_ok;
    size_t data_len;
    size_t name_len;
    size_t id_len;
    char event[MOTE_SSE_NAME_MAX];
    char id[MOTE_SSE_NAME_MAX];
    char id_pending[MOTE_SSE_NAME_MAX];
    char data[MOTE_SSE_DATA_MAX + 1];
};

/* Resets `p`; `fn` receives each event. */
void mote_sse_init(struct mote_sse *p, mote_sse_fn fn, void *arg);

/* Parses `n` bytes. Returns 0, or the sticky error (MOTE_ERR_TOO_LARGE or
 * what the callback returned). Never blocks. */
int mote_sse_feed(struct mote_sse *p, const char *buf, size_t n);

/* True if bytes of an unfinished event are pending (for "the stream ended
 * in the middle of an event" diagnostics). */
bool mote_sse_pending(const struct mote_sse *p);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_SSE_H */
