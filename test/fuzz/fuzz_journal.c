/* fuzz_journal - opening (with repair), replaying, recovering, reading
 * tool inputs back and building request parts from an arbitrary journal
 * file. Properties: a journal that opens is left with every line valid
 * JSON to the strict parser (a torn tail is cut away, nothing else is
 * touched), opens again without any repair, what recovery wrote reads
 * back, a call's input read back is one JSON object within the buffer
 * given, recovery never names a group a tool cannot have, and the scan in
 * steps (mote_jscan, whatever its budget) finds what peek and recover
 * find. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../port/test/mote_tport.h"
#include "mote/mote_journal.h"
#include "mote/mote_json.h"

static struct mote_tport tp;
static struct mote_jbuf jbuf;
static struct mote_journal jr = {.buf = &jbuf};
static struct mote_json js;
static char input[512];

/* Every call recovery found: its input, read back, fits and is an object
 * (or the reason it is not is a clean error); its group is a tool's. */
static void check_calls(const struct mote_recovery *r)
{
    unsigned i;

    for (i = 0; i < r->ncalls; i++) {
        const struct mote_rec_call *c = &r->calls[i];
        size_t full = 0;
        int n = mote_journal_call_input(&jr, c->rec_off, c->rec_idx, input, sizeof(input), &full);

        if (n >= 0 && ((size_t)n != full || (size_t)n >= sizeof(input) || input[n] != '\0' ||
                       mote_json_parse(&js, input, (size_t)n) <= 0 ||
                       mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT))
            __builtin_trap();
        if (n == MOTE_ERR_TOO_LARGE && full < sizeof(input))
            __builtin_trap();
        if (c->pgid < 0 || c->pgid == 1)
            __builtin_trap();
    }
}

static struct mote_jscan sc;

/* Peek, then recover; the scan with budget `budget`, a step at a time:
 * the same outcome, size, decision and damaged line. */
static void scan_matches_peek(size_t budget)
{
    struct mote_recovery r;
    int peek = mote_journal_peek(&jr, &tp.port, "f"), rc, steps = 0;
    uint64_t size = jr.size;
    uint32_t bad = jr.bad_line;
    bool torn = jr.repaired;

    memset(&r, 0, sizeof(r));
    if (peek == 0) {
        peek = mote_recover(&jr, &r);
        mote_journal_close(&jr);
    }
    rc = mote_jscan_begin(&sc, &jbuf, &tp.port, "f");
    while (rc == 0 || rc == 1) {
        rc = mote_jscan_step(&sc, budget);
        if (rc == 0 || ++steps > 1000000)
            break;
    }
    if (rc != peek)
        __builtin_trap();
    if (rc == MOTE_ERR_CORRUPT && sc.j.bad_line != bad)
        __builtin_trap();
    if (rc == 0 && (sc.j.size != size || sc.j.repaired != torn || sc.r.action != r.action ||
                    sc.r.nmissing != r.nmissing || sc.r.cancelled != r.cancelled))
        __builtin_trap();
    mote_jscan_end(&sc);
}

static void every_line_parses(void)
{
    const struct mote_tport_file *f = mote_tport_file(&tp, "conversations/f.jsonl");
    size_t at = 0;

    if (f == NULL)
        __builtin_trap();
    while (at < f->len) {
        const unsigned char *nl = memchr(f->data + at, '\n', f->len - at);

        if (nl == NULL)
            __builtin_trap(); /* a line without its end was left */
        if (mote_json_parse(&js, (const char *)f->data + at, (size_t)(nl - (f->data + at))) <= 0)
            __builtin_trap(); /* a line the reader cannot take was left */
        at = (size_t)(nl - f->data) + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mote_recovery r;
    struct mote_part p;
    unsigned i;

    mote_tport_init(&tp, 0);
    (void)tp.port.st_mkdir(tp.port.ctx, "conversations");
    (void)mote_tport_put(&tp, "conversations/f.jsonl", data, size);
    scan_matches_peek(1);
    scan_matches_peek(4096);
    if (mote_journal_open(&jr, &tp.port, "f") == 0) {
        if (mote_recover(&jr, &r) == 0) {
            check_calls(&r);
            if (r.action == MOTE_RECOVER_TOOL_INTERRUPTED)
                (void)mote_recover_apply(&jr, &r);
        }
        for (i = 0; i < 64 && mote_journal_parts(&jr, i, &p) == 1; i++) {
            if (p.text != NULL && p.text_len > 0 && p.text[p.text_len] != '\0')
                __builtin_trap();
        }
        mote_journal_close(&jr);
        every_line_parses();
        if (mote_journal_open(&jr, &tp.port, "f") != 0 || jr.repaired)
            __builtin_trap(); /* once repaired, it stays whole */
        mote_journal_close(&jr);
    }
    mote_tport_deinit(&tp);
    return 0;
}
