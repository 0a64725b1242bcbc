/* fuzz_sse - the SSE parser and the provider decoders on arbitrary bytes,
 * fed in pieces whose sizes come from the input itself. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_llm.h"
#include "mote/mote_sse.h"

static struct mote_sse sse;
static struct mote_llm_dec dec;

static int on_llm(void *arg, const struct mote_llm_event *ev)
{
    (void)arg;
    /* Touch what the event points at. */
    if (ev->text != NULL && ev->len > 0 && ev->text[ev->len - 1] == '\1')
        return MOTE_ERR_PROTO;
    return 0;
}

static int on_sse(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    (void)arg, (void)id;
    if (data[len] != '\0')
        __builtin_trap();
    return mote_llm_dec_event(&dec, event, data, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 1;

    if (size < 1)
        return 0;
    mote_llm_dec_init(&dec, (data[0] & 1) ? MOTE_PROVIDER_OPENAI : MOTE_PROVIDER_ANTHROPIC, on_llm,
                      NULL);
    mote_sse_init(&sse, on_sse, NULL);
    while (at < size) {
        size_t piece = 1 + (data[at - 1] % 64u);

        if (piece > size - at)
            piece = size - at;
        if (mote_sse_feed(&sse, (const char *)data + at, piece) < 0)
            break;
        at += piece;
    }
    return 0;
}
