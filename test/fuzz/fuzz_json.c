/* fuzz_json - tokenizing and the typed getters on arbitrary text, and the
 * writer's round trip: whatever the parser accepts (any shape within
 * MOTE_JSON_MAX_TOKENS and MOTE_JSON_MAX_DEPTH), mote_jw_value re-emits as
 * JSON that the parser accepts again, with the same shape, in UTF-8 (raw
 * control characters the parser refuses), and a second round trip changes
 * nothing (canonical) nor what mote_json_strict finds. mote_json_cstr
 * refuses a string exactly when its text holds a NUL. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_json.h"
#include "fuzz_buf.h"

static struct mote_json js, js2;
static char out[4096];
static char enc1[1 << 18], enc2[1 << 18];

/* Re-encodes token 0 of `j` into `into`; returns the length or -1. */
static long reencode(const struct mote_json *j, char *into, size_t cap)
{
    struct buf b = {into, cap, 0};
    struct mote_jw w;

    mote_jw_init(&w, sink, &b);
    mote_jw_value(&w, j, 0);
    return w.err != 0 ? -1 : (long)b.len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int n = mote_json_parse(&js, (const char *)data, size), t, n2;
    long l1, l2;

    if (n <= 0) {
        (void)mote_json_unescape((const char *)data, size, out, sizeof(out));
        return 0;
    }
    for (t = 0; t < n; t++) {
        int64_t v;
        bool b;

        int k = mote_json_str(&js, t, out, sizeof(out));

        /* a C string is refused exactly when its text holds a NUL */
        if (k >= 0 && (mote_json_cstr(&js, t, out, sizeof(out)) == MOTE_ERR_BADMSG) !=
                          (memchr(out, '\0', (size_t)k) != NULL))
            __builtin_trap();
        (void)mote_json_int(&js, t, &v);
        (void)mote_json_bool(&js, t, &b);
        (void)mote_json_skip(&js, t);
        (void)mote_json_member(&js, t, "type");
        (void)mote_json_elem(&js, t, 1);
    }
    (void)mote_json_path(&js, 0, "a.0.b.1");
    /* The property. Invalid UTF-8 grows to \ufffd (6 bytes for 1), so the
     * buffer holds any input under 40 KiB. */
    if (size > 40000)
        return 0;
    l1 = reencode(&js, enc1, sizeof(enc1));
    if (l1 < 0)
        __builtin_trap(); /* the writer refused what the parser accepted */
    n2 = mote_json_parse(&js2, enc1, (size_t)l1);
    if (n2 != n)
        __builtin_trap(); /* not valid JSON again, or another shape */
    if (!mote_utf8_valid(enc1, (size_t)l1))
        __builtin_trap(); /* not JSON to a strict parser (RFC 8259 8.1) */
    for (t = 0; t < n; t++) {
        if (js2.tok[t].type != js.tok[t].type || js2.tok[t].size != js.tok[t].size)
            __builtin_trap();
    }
    l2 = reencode(&js2, enc2, sizeof(enc2));
    if (l2 != l1 || memcmp(enc1, enc2, (size_t)l1) != 0)
        __builtin_trap(); /* not canonical */
    /* re-encoding changes no name and no NUL: the same strictness */
    if ((mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, out, sizeof(out)) <
         0) != (mote_json_strict(&js2, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, out + 200,
                                 sizeof(out) - 200) < 0))
        __builtin_trap();
    return 0;
}
