/*
 * runner.c - runs one test program's cmocka groups on a Cortex-M under
 * qemu-system-arm (mps2-an386) with semihosting, and says how it went.
 *
 * Each test runs between setjmp and a longjmp from a failed check. At the
 * end the program prints what it used of the machine and one summary
 * line, which is what make check-mcu judges (qemu's exit status through
 * semihosting is not reliable), then stops the machine:
 *
 *   mcu: NAME: P passed, F failed, S skipped; stack N B, heap N B
 *
 * Stack use is measured by painting the stack region at start and finding
 * the deepest word that changed; heap use is the program break's high
 * water (picolibc's sbrk, which malloc grows).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <semihost.h>

#include "cmocka.h"

extern char __stack[], __heap_start[], __heap_end[];
extern void *sbrk(ptrdiff_t incr);

#define PAINT 0xA5A5A5A5u

static jmp_buf on_fail;
static int skipped_now;
static unsigned passed, failed, skipped;
static uintptr_t stack_low; /* the painted region's start */
static char *heap_high;

/* The program's real main, renamed by the build (-Dmain=mote_test_main). */
int mote_test_main(void);

void mote_mcu_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    printf("[  ERROR   ] --- %s:%d: ", file, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    longjmp(on_fail, 1);
}

void mote_mcu_skip(const char *file, int line)
{
    (void)file, (void)line;
    skipped_now = 1;
    longjmp(on_fail, 1);
}

static void heap_mark(void)
{
    char *b = sbrk(0);

    if (b != (char *)-1 && b > heap_high)
        heap_high = b;
}

int mote_mcu_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                       CMFixtureFunction setup, CMFixtureFunction teardown)
{
    void *group_state = NULL;
    size_t i;
    unsigned f0 = failed;

    printf("[==========] %s: running %u test(s).\n", name, (unsigned)n);
    if (setup != NULL && setup(&group_state) != 0) {
        printf("[  FAILED  ] %s: group setup\n", name);
        failed += (unsigned)n;
        return 1;
    }
    for (i = 0; i < n; i++) {
        const struct CMUnitTest *t = &tests[i];
        void *state = t->initial_state != NULL ? t->initial_state : group_state;

        printf("[ RUN      ] %s\n", t->name);
        skipped_now = 0;
        if (t->setup_func != NULL && t->setup_func(&state) != 0) {
            printf("[  FAILED  ] %s (setup)\n", t->name);
            failed++;
            continue;
        }
        if (setjmp(on_fail) == 0) {
            t->test_func(&state);
            printf("[       OK ] %s\n", t->name);
            passed++;
        } else if (skipped_now) {
            printf("[  SKIPPED ] %s\n", t->name);
            skipped++;
        } else {
            printf("[  FAILED  ] %s\n", t->name);
            failed++;
        }
        if (t->teardown_func != NULL && t->teardown_func(&state) != 0) {
            printf("[  FAILED  ] %s (teardown)\n", t->name);
            failed++;
        }
        heap_mark();
    }
    if (teardown != NULL && teardown(&group_state) != 0) {
        printf("[  FAILED  ] %s: group teardown\n", name);
        failed++;
    }
    return failed != f0;
}

/* Fills the stack below the current frame with a pattern (the caller's
 * frame and 256 bytes of margin are left alone). */
static void __attribute__((noinline)) paint(void)
{
    volatile uint32_t here;
    uint32_t *p = (uint32_t *)(((uintptr_t)__heap_end + 3u) & ~(uintptr_t)3u);
    uint32_t *top = (uint32_t *)(((uintptr_t)&here - 256u) & ~(uintptr_t)3u);

    stack_low = (uintptr_t)p;
    while (p < top)
        *p++ = PAINT;
}

static size_t stack_used(void)
{
    const uint32_t *p = (const uint32_t *)stack_low;

    while ((uintptr_t)p < (uintptr_t)__stack && *p == PAINT)
        p++;
    return (size_t)((uintptr_t)__stack - (uintptr_t)p);
}

int main(void)
{
    const char *name = MOTE_MCU_NAME;

    paint();
    heap_high = __heap_start;
    (void)mote_test_main();
    heap_mark();
    printf("mcu: %s: %u passed, %u failed, %u skipped; stack %u B, heap %u B\n", name, passed,
           failed, skipped, (unsigned)stack_used(), (unsigned)(heap_high - __heap_start));
    fflush(stdout);
    sys_semihost_exit(ADP_Stopped_ApplicationExit, failed == 0 ? 0 : 1);
}
