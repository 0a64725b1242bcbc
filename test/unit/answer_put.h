/* answer_put.h - a scripted model's answer written into a buffer (the
 * unit tests that script the model's network): the HTTP head of an event
 * stream, and formatted pieces appended with a check that they fit.
 * Include after <cmocka.h>. */
#ifndef ANSWER_PUT_H
#define ANSWER_PUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#define HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"

/* Appends `fmt` formatted at out + at (cap bytes in all); it must fit
 * whole. Returns the new end. */
static inline size_t put(char *out, size_t cap, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline size_t put(char *out, size_t cap, size_t at, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(out + at, cap - at, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < cap - at);
    return at + (size_t)n;
}

#endif
