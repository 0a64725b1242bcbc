/* fuzz_json - tokenizing and the typed getters on arbitrary text. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_json.h"

static struct mote_json js;
static char out[4096];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int n = mote_json_parse(&js, (const char *)data, size), t;

    if (n <= 0) {
        (void)mote_json_unescape((const char *)data, size, out, sizeof(out));
        return 0;
    }
    for (t = 0; t < n; t++) {
        int64_t v;
        bool b;

        (void)mote_json_str(&js, t, out, sizeof(out));
        (void)mote_json_int(&js, t, &v);
        (void)mote_json_bool(&js, t, &b);
        (void)mote_json_skip(&js, t);
        (void)mote_json_member(&js, t, "type");
        (void)mote_json_elem(&js, t, 1);
    }
    (void)mote_json_path(&js, 0, "a.0.b.1");
    return 0;
}
