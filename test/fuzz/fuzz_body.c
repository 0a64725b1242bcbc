/* fuzz_body - the request-body builder on arbitrary message parts (texts,
 * ids, names, tool inputs, a system prompt; both dialects). Properties:
 * the body is JSON a strict parser accepts (UTF-8 included), the streamed
 * body (read in pieces of sizes the input picks) is byte for byte the
 * one-go body, and its counted length (the Content-Length sent first) is
 * its length. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_json.h"
#include "mote/mote_llm.h"
#include "fuzz_buf.h"

#define MAX_PARTS 8

static struct mote_part parts[MAX_PARTS];
static unsigned nparts;
static char store[1 << 16];
static char body[1 << 19], streamed[1 << 19];
static struct mote_json js;
static struct mote_llm_body lb;

static int give(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    if (index >= nparts)
        return 0;
    *p = parts[index];
    return 1;
}

/* The next NUL-separated field of the input, copied NUL-terminated. */
static const char *field(const uint8_t **d, const uint8_t *end, size_t *used, size_t *len)
{
    const uint8_t *s = *d, *z = s;
    char *out = store + *used;

    while (z < end && *z != 0)
        z++;
    *len = (size_t)(z - s);
    if (*used + *len + 1 > sizeof(store))
        *len = 0;
    memcpy(out, s, *len);
    out[*len] = '\0';
    *used += *len + 1;
    *d = z < end ? z + 1 : z;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *d = data + 2, *end = data + size;
    struct mote_llm_req req;
    struct buf b = {body, sizeof(body), 0};
    size_t used = 0, len, off = 0;
    int64_t counted;
    unsigned k = 0;
    int rc;

    if (size < 2)
        return 0;
    memset(&req, 0, sizeof(req));
    req.provider = (data[0] & 1) ? MOTE_PROVIDER_OPENAI : MOTE_PROVIDER_ANTHROPIC;
    req.cache = (data[0] & 2) != 0;
    req.max_completion_tokens = (data[0] & 4) != 0;
    req.no_tool_calls = (data[0] & 8) != 0;
    req.model = field(&d, end, &used, &len);
    req.system = (data[0] & 16) ? field(&d, end, &used, &len) : NULL;
    req.max_tokens = 100;
    req.parts = give;
    for (nparts = 0; nparts < MAX_PARTS && d < end; nparts++) {
        struct mote_part *p = &parts[nparts];
        uint8_t kind = *d++;

        memset(p, 0, sizeof(*p));
        p->role = (kind & 1) ? MOTE_ROLE_ASSISTANT : MOTE_ROLE_USER;
        p->type = (enum mote_part_type)(1 + (kind >> 1) % 3);
        p->is_error = (kind & 8) != 0;
        p->text = field(&d, end, &used, &p->text_len);
        p->id = field(&d, end, &used, &len);
        p->name = field(&d, end, &used, &len);
        p->input = field(&d, end, &used, &p->input_len);
        /* The contract: a call's input is one JSON object (the journal's
         * checked copy); anything else stands for "{}". */
        if (mote_json_parse(&js, p->input, p->input_len) <= 0 ||
            mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT ||
            !mote_utf8_valid(p->input, p->input_len)) {
            p->input = "{}";
            p->input_len = 2;
        }
    }
    rc = mote_llm_write_body(&req, sink, &b);
    counted = mote_llm_body_length(&req);
    if (rc < 0) {
        if (counted >= 0 && rc != MOTE_ERR_TOO_LARGE)
            __builtin_trap(); /* counted what could not be written */
        return 0;
    }
    if (counted != (int64_t)b.len)
        __builtin_trap(); /* Content-Length would not match the body */
    rc = mote_json_parse(&js, body, b.len);
    if (rc <= 0 && rc != MOTE_ERR_TOO_LARGE)
        __builtin_trap(); /* not JSON */
    if (!mote_utf8_valid(body, b.len))
        __builtin_trap(); /* not JSON to a strict parser (RFC 8259 8.1) */
    mote_llm_body_init(&lb, &req);
    for (;;) {
        size_t cap = 1 + (size_t)data[1 + (k++ % (size - 1))] * 8u;

        if (cap > sizeof(streamed) - off)
            cap = sizeof(streamed) - off;
        rc = mote_llm_body_read(&lb, streamed + off, cap);
        if (rc <= 0)
            break;
        off += (size_t)rc;
    }
    if (rc < 0 || off != b.len || memcmp(streamed, body, off) != 0)
        __builtin_trap(); /* the streamed body is another */
    return 0;
}
