/* fuzz_roots - finding roots in a bundle (port/tls_roots.c, issue 12) on
 * arbitrary bytes, PEM or DER. Properties: every certificate handed on
 * has a subject that matches a name asked for; handed + skipped never
 * exceed what was counted; the result does not depend on the scratch
 * buffer's earlier contents; name matching is symmetric. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../port/tls_roots.h"

static struct mote_roots_buf rb;
static struct mote_roots_name want;
static unsigned handed;
static uint32_t hash;

static int on_cert(void *arg, const unsigned char *der, size_t len)
{
    struct mote_roots_name s;
    size_t i;

    (void)arg;
    if (mote_roots_subject(der, len, &s) != 0)
        __builtin_trap(); /* handed on without a subject */
    if (want.p != NULL && !mote_roots_name_match(want.p, want.len, s.p, s.len))
        __builtin_trap(); /* handed on without matching */
    for (i = 0; i < len; i++)
        hash = (hash ^ der[i]) * 16777619u;
    handed++;
    return 0;
}

static uint32_t scan(const uint8_t *data, size_t size, bool named, struct mote_roots_stats *st)
{
    struct mote_roots_src src = {NULL, NULL, data, size};

    handed = 0;
    hash = 2166136261u;
    (void)mote_roots_scan(&src, named ? &want : NULL, named ? 1 : 0, &rb, on_cert, NULL, st);
    if (handed != st->matched || st->matched + st->skipped > st->certs + 1)
        __builtin_trap();
    return hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mote_roots_stats a, b;
    uint32_t h1, h2;
    size_t half = size / 2;

    /* every certificate */
    want.p = NULL;
    h1 = scan(data, size, false, &a);
    memset(&rb, 0xA5, sizeof(rb));
    h2 = scan(data, size, false, &b);
    if (h1 != h2 || a.certs != b.certs || a.matched != b.matched)
        __builtin_trap();
    /* the first bytes as a Name to look for */
    want.p = data;
    want.len = half < 300 ? half : 300;
    (void)scan(data, size, true, &a);
    if (size >= 2 && mote_roots_name_match(data, half, data + half, size - half) !=
                         mote_roots_name_match(data + half, size - half, data, half))
        __builtin_trap();
    return 0;
}
