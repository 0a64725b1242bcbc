/* util.h - small helpers shared by the core (internal). */
#ifndef MOTE_UTIL_H
#define MOTE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies NUL-terminated `src` into `dst` of `cap` bytes (cap >= 1), cutting
 * at a UTF-8 character boundary when it does not fit. Returns the bytes
 * copied (without the NUL). */
size_t mote_str_copy(char *dst, size_t cap, const char *src);

/* Writes v in decimal to out (at least 21 bytes, not NUL-terminated);
 * returns the digit count. No 64-bit division (small targets lack it). */
size_t mote_u64_dec(uint64_t v, char *out);

/* A bounded string builder: appends cut at the capacity (at a UTF-8
 * boundary), always NUL-terminated. */
struct mote_sb {
    char *p;
    size_t cap; /* >= 1 */
    size_t len;
};

void mote_sb_init(struct mote_sb *b, char *buf, size_t cap);
void mote_sb_s(struct mote_sb *b, const char *s);
void mote_sb_u(struct mote_sb *b, uint64_t v);
/* Appends n bytes of s (cut at the capacity). */
void mote_sb_n(struct mote_sb *b, const char *s, size_t n);
void mote_sb_i(struct mote_sb *b, int64_t v);
/* Appends s1, then s2 and s3 where they are not NULL: the one way the
 * library joins a message from its parts. */
void mote_sb_join(struct mote_sb *b, const char *s1, const char *s2, const char *s3);
/* Appends `a`, then, where `b` is not NULL, the number `n` and `b`: a
 * message with one figure in it ("[output cut: ", 512, " more bytes]"). */
void mote_sb_num(struct mote_sb *b, const char *a, uint64_t n, const char *c);
/* A sink for the JSON writer (mote_jw_init(w, mote_sb_put, &sb)): appends
 * all n bytes, or nothing and MOTE_ERR_TOO_LARGE when they do not fit
 * (never a cut JSON value). Returns 0 or that. */
int mote_sb_put(void *sb, const char *s, size_t n);

/* The decimal number of s[0..n) (digits only, at least one): 0, or
 * MOTE_ERR_INVAL (empty, or a byte that is not a digit) or
 * MOTE_ERR_RANGE (more than 18 digits: larger than anything mote takes,
 * and never an overflow). */
int mote_dec_parse(const char *s, size_t n, uint64_t *out);

/* Writes s1, then s2 and s3 where they are not NULL, into `out` of `cap`
 * bytes (cap >= 1), cut at a UTF-8 boundary, NUL-terminated. Returns the
 * length. */
size_t mote_str_join(char *out, size_t cap, const char *s1, const char *s2, const char *s3);

/* True if the first `n` bytes of `a` and `b` are the same but for the
 * case of ASCII letters; either may be shorter (a NUL before `n` counts
 * as a byte: equal only where both end there). */
bool mote_ascii_ieq(const char *a, const char *b, size_t n);

/* True if the `n` bytes at `s` are the lower-case word `word`, whole, but
 * for the case of ASCII letters (a header name, a scheme). */
bool mote_ascii_is(const char *s, size_t n, const char *word);

/* Producers of st_write_atomic and fs_replace: the bytes of a buffer
 * (`arg`: struct mote_src_bytes), or of a range of an open storage file
 * (`arg`: struct mote_src_range), a part per call; 0 at the end. */
struct mote_src_bytes {
    const char *p;
    size_t len, off;
};
int mote_produce_bytes(void *arg, char *buf, size_t cap);

struct mote_port;
struct mote_src_range {
    const struct mote_port *port;
    int h;
    uint64_t off, end;
};
/* A read that fails (or ends early) fails the write: its error, or
 * MOTE_ERR_IO. */
int mote_produce_range(void *arg, char *buf, size_t cap);

/* mote_str_join(err, cap, a, b, c) unless cap is 0; returns rc. For the
 * parsers' error messages: `return mote_why(err, cap, MOTE_ERR_X, ...)`. */
int mote_why(char *err, size_t cap, int rc, const char *a, const char *b, const char *c);

/* The same with one figure: `a`, the number `n`, then `b` (see
 * mote_sb_num). */
int mote_why_num(char *err, size_t cap, int rc, const char *a, uint64_t n, const char *b);

/* Percent-decodes s[0..n) onto the end of `out` (`*len` bytes so far, at
 * most `cap` in all; no NUL added), '+' as a space where `plus_space` (a
 * query string). Returns 0, MOTE_ERR_INVAL (a '%' without two hex
 * digits) or MOTE_ERR_TOO_LARGE. */
int mote_pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap,
                    size_t *len);

/* Wrap-safe "a is before b" for 32-bit monotonic counters. */
static inline int mote_before(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

#define MOTE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ASCII lower case of c (other bytes unchanged). */
static inline char mote_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The value of hexadecimal digit c (either case), or -1. */
static inline int mote_hexval(char c)
{
    c = mote_lower(c);
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* True when each of the n bytes of s is a letter, a digit, '_' or '-'
 * (the characters of the APIs' tool names and ids, and of mote's ids). */
static inline bool mote_word_chars(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char ch = s[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* MOTE_ASSERT(cond): an invariant of the library's own code (never a check
 * of outside input: that gets an error code). A false one stops the
 * program (MOTE_ASSERT_FAIL, __builtin_trap() unless defined), so a broken
 * invariant is found where it breaks, not as corruption later. On by
 * default and in `make check`; -DMOTE_NO_ASSERT compiles them out.
 *
 * MOTE_TRACE(fmt, ...): what the library does, for a user without a
 * debugger: define it (-D or in MOTE_CONFIG_FILE) to a printf-like
 * function of your own, e.g. `#define MOTE_TRACE(...) my_log(__VA_ARGS__)`.
 * Empty by default. The format has no trailing newline. */
#include "mote/mote_config.h"

#ifndef MOTE_ASSERT_FAIL
#define MOTE_ASSERT_FAIL(file, line, expr) __builtin_trap()
#endif
#ifdef MOTE_NO_ASSERT
#define MOTE_ASSERT(cond) ((void)0)
#else
#define MOTE_ASSERT(cond)                                                                          \
    ((cond) ? (void)0 : (void)(MOTE_ASSERT_FAIL(__FILE__, __LINE__, #cond)))
#endif
#ifndef MOTE_TRACE
#define MOTE_TRACE(...) ((void)0)
#endif

#endif /* MOTE_UTIL_H */
