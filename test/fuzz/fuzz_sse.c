/* fuzz_sse - the SSE parser and the provider decoders on arbitrary bytes.
 * Property: what comes out (the SSE events, the decoded events and their
 * text) does not depend on how the bytes are split: fed at once and in
 * pieces whose sizes come from the input, the transcripts match. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_llm.h"
#include "mote/mote_sse.h"

static struct mote_sse sse;
static struct mote_llm_dec dec;

struct transcript {
    uint32_t hash;
    unsigned events, decoded;
};

static struct transcript *cur;

static void mix(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        cur->hash = (cur->hash ^ b[i]) * 16777619u;
}

static int on_llm(void *arg, const struct mote_llm_event *ev)
{
    (void)arg;
    cur->decoded++;
    mix(&ev->type, sizeof(ev->type));
    if (ev->text != NULL)
        mix(ev->text, ev->len);
    return 0;
}

static int on_sse(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    (void)arg, (void)id;
    if (data[len] != '\0')
        __builtin_trap();
    cur->events++;
    if (event != NULL)
        mix(event, strlen(event));
    mix(data, len);
    return mote_llm_dec_event(&dec, event, data, len);
}

static int run(const uint8_t *data, size_t size, bool split, struct transcript *t)
{
    size_t at = 1;
    int rc = 0;

    memset(t, 0, sizeof(*t));
    cur = t;
    mote_llm_dec_init(&dec, (data[0] & 1) ? MOTE_PROVIDER_OPENAI : MOTE_PROVIDER_ANTHROPIC, on_llm,
                      NULL);
    mote_sse_init(&sse, on_sse, NULL);
    while (at < size) {
        size_t piece = split ? 1 + (data[at - 1] % 64u) : size - at;

        if (piece > size - at)
            piece = size - at;
        if ((rc = mote_sse_feed(&sse, (const char *)data + at, piece)) < 0)
            break;
        at += piece;
    }
    return rc < 0 ? rc : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct transcript a, b;
    int ra, rb;

    if (size < 1)
        return 0;
    ra = run(data, size, false, &a);
    rb = run(data, size, true, &b);
    if (ra != rb || a.events != b.events || a.decoded != b.decoded || a.hash != b.hash)
        __builtin_trap(); /* the split changed what was seen */
    return 0;
}
