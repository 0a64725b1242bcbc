/* fuzz_journal - opening (with repair), replaying, recovering and building
 * request parts from an arbitrary journal file. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../port/test/mote_tport.h"
#include "mote/mote_journal.h"

static struct mote_tport tp;
static struct mote_jbuf jbuf;
static struct mote_journal jr = {.buf = &jbuf};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mote_recovery r;
    struct mote_part p;
    unsigned i;

    mote_tport_init(&tp, 0);
    (void)tp.port.st_mkdir(tp.port.ctx, "conversations");
    (void)mote_tport_put(&tp, "conversations/f.jsonl", data, size);
    if (mote_journal_open(&jr, &tp.port, "f") == 0) {
        if (mote_recover(&jr, &r) == 0 && r.action == MOTE_RECOVER_TOOL_INTERRUPTED)
            (void)mote_recover_apply(&jr, &r);
        for (i = 0; i < 64 && mote_journal_parts(&jr, i, &p) == 1; i++) {
            if (p.text != NULL && p.text_len > 0 && p.text[p.text_len] != '\0')
                __builtin_trap();
        }
        mote_journal_close(&jr);
    }
    mote_tport_deinit(&tp);
    return 0;
}
