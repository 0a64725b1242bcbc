/*
 * cmocka.h - the part of cmocka's API that mote's unit tests use, for a
 * microcontroller (make check-mcu: Cortex-M4 under qemu-system-arm, no
 * cmocka there). The test sources are the same files as on Linux; this
 * header stands in for <cmocka.h> when -Itest/mcu comes first, and
 * test/mcu/runner.c runs the tests and prints the summary the run is
 * judged by. Not cmocka's code: only its names and meaning.
 */
#ifndef MOTE_MCU_CMOCKA_H
#define MOTE_MCU_CMOCKA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*CMUnitTestFunction)(void **state);
typedef int (*CMFixtureFunction)(void **state);

struct CMUnitTest {
    const char *name;
    CMUnitTestFunction test_func;
    CMFixtureFunction setup_func;
    CMFixtureFunction teardown_func;
    void *initial_state;
};

#define cmocka_unit_test(f) {#f, f, NULL, NULL, NULL}
#define cmocka_unit_test_setup_teardown(f, setup, teardown) {#f, f, setup, teardown, NULL}

/* A test program's main, renamed by the build (-Dmain=mote_test_main):
 * runner.c's main calls it. */
int mote_test_main(void);

int mote_mcu_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                       CMFixtureFunction setup, CMFixtureFunction teardown);

#define cmocka_run_group_tests(tests, setup, teardown)                                   \
    mote_mcu_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)
#define cmocka_run_group_tests_name(name, tests, setup, teardown)                        \
    mote_mcu_run_group(name, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/* A failed check: says where and why, then ends the test (longjmp). */
void mote_mcu_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
void mote_mcu_skip(const char *file, int line) __attribute__((noreturn));

#define MOTE_MCU_INT_(a, b, op, opname)                                                  \
    do {                                                                                 \
        uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b);                              \
        if (!(a_ op b_))                                                                 \
            mote_mcu_fail(__FILE__, __LINE__, "%#llx (%lld) " opname " %#llx (%lld)",    \
                          (unsigned long long)a_, (long long)a_, (unsigned long long)b_, \
                          (long long)b_);                                                \
    } while (0)

#define assert_int_equal(a, b) MOTE_MCU_INT_(a, b, ==, "!=")
#define assert_int_not_equal(a, b) MOTE_MCU_INT_(a, b, !=, "==")
#define assert_true(c)                                                                   \
    do {                                                                                 \
        if (!(c))                                                                        \
            mote_mcu_fail(__FILE__, __LINE__, "%s", #c);                                 \
    } while (0)
#define assert_false(c)                                                                  \
    do {                                                                                 \
        if (c)                                                                           \
            mote_mcu_fail(__FILE__, __LINE__, "%s", #c);                                 \
    } while (0)
#define assert_ptr_equal(a, b)                                                           \
    do {                                                                                 \
        const void *a_ = (a), *b_ = (b);                                                 \
        if (a_ != b_)                                                                    \
            mote_mcu_fail(__FILE__, __LINE__, "%p != %p", a_, b_);                       \
    } while (0)
#define assert_ptr_not_equal(a, b)                                                       \
    do {                                                                                 \
        const void *a_ = (a), *b_ = (b);                                                 \
        if (a_ == b_)                                                                    \
            mote_mcu_fail(__FILE__, __LINE__, "%p == %p", a_, b_);                       \
    } while (0)
#define assert_null(p) assert_true((p) == NULL)
#define assert_non_null(p) assert_true((p) != NULL)
#define assert_string_equal(a, b)                                                        \
    do {                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                 \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                             \
            mote_mcu_fail(__FILE__, __LINE__, "\"%s\" != \"%s\"", a_ ? a_ : "(null)",    \
                          b_ ? b_ : "(null)");                                           \
    } while (0)
#define assert_string_not_equal(a, b)                                                    \
    do {                                                                                 \
        const char *a_ = (a), *b_ = (b);                                                 \
        if (a_ != NULL && b_ != NULL && strcmp(a_, b_) == 0)                             \
            mote_mcu_fail(__FILE__, __LINE__, "\"%s\" == \"%s\"", a_, b_);               \
    } while (0)
#define assert_memory_equal(a, b, n)                                                     \
    do {                                                                                 \
        if (memcmp((a), (b), (n)) != 0)                                                  \
            mote_mcu_fail(__FILE__, __LINE__, "%u bytes differ", (unsigned)(n));         \
    } while (0)
#define fail_msg(...) mote_mcu_fail(__FILE__, __LINE__, __VA_ARGS__)
#define fail() mote_mcu_fail(__FILE__, __LINE__, "fail()")
#define skip() mote_mcu_skip(__FILE__, __LINE__)
/* cmocka's progress line: nothing on the board (a failure names its line) */
#define print_message(...) ((void)0)

#endif /* MOTE_MCU_CMOCKA_H */
