/*
 * mote_json.h - JSON reading (jsmn tokens + typed getters) and writing.
 *
 * Reading: mote_json_parse() tokenizes a caller-owned text into the
 * caller-owned struct (MOTE_JSON_MAX_TOKENS tokens); getters address
 * tokens by index (0 is the root). The text must stay alive and unchanged
 * while the tokens are used.
 *
 * Strings: mote_json_str() unescapes, turning \uXXXX (with surrogate
 * pairs) into UTF-8. Invalid UTF-8, in the text or made by a lone
 * surrogate, becomes U+FFFD, so what mote prints or journals is always
 * valid UTF-8 (docs/JSON.md).
 *
 * Writing: struct mote_jw streams JSON to a sink callback with full string
 * escaping and comma handling; with a counting sink the same code gives a
 * Content-Length first. Errors are sticky: the first one is kept in `err`
 * and later calls do nothing.
 */
#ifndef MOTE_JSON_H
#define MOTE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mote_json_type {
    MOTE_JSON_NONE = 0,
    MOTE_JSON_OBJECT,
    MOTE_JSON_ARRAY,
    MOTE_JSON_STRING,
    MOTE_JSON_PRIMITIVE, /* number, true, false, null */
};

/* Laid out exactly as jsmn's token with JSMN_PARENT_LINKS (checked). */
struct mote_json_tok {
    int type;   /* enum mote_json_type */
    int start;  /* byte offsets into the text */
    int end;
    int size;   /* members of an object (keys) or elements of an array */
    int parent; /* index of the enclosing token, -1 for the root */
};

struct mote_json {
    const char *text;
    size_t len;
    int ntok;
    struct mote_json_tok tok[MOTE_JSON_MAX_TOKENS];
};

/* Tokenizes `text` (len bytes, no NUL needed). Returns the token count,
 * MOTE_ERR_TOO_LARGE (more than MOTE_JSON_MAX_TOKENS tokens or over 2 GiB)
 * or MOTE_ERR_BADMSG (not one complete JSON value). */
int mote_json_parse(struct mote_json *j, const char *text, size_t len) MOTE_MUST_CHECK;

/* mote_json_parse for an object from outside (a configuration file, a
 * request body): the top must be an object and no object in it may hold
 * two members of one name (mote_json_strict with MOTE_JSON_NO_DUP_KEYS).
 * The reason goes into `err` (`cap` bytes; nothing if 0; "" on success).
 * Returns the token count, MOTE_ERR_TOO_LARGE ("more than N JSON values
 * (MOTE_JSON_MAX_TOKENS)") or MOTE_ERR_BADMSG ("not a JSON object",
 * "duplicate key \"NAME\""). */
int mote_json_parse_object(struct mote_json *j, const char *text, size_t len, char *err,
                           size_t cap) MOTE_MUST_CHECK;

/* The token after `t`'s whole subtree (its next sibling), or j->ntok. */
int mote_json_skip(const struct mote_json *j, int t);

/* Value token of member `key` in object token `obj`, or -1. */
int mote_json_member(const struct mote_json *j, int obj, const char *key);

/* Element `idx` of array token `arr`, or -1. */
int mote_json_elem(const struct mote_json *j, int arr, int idx);

/* Follows a dotted path from `t`: "delta.text", "choices.0.delta";
 * numbers index arrays. Returns the token or -1. */
int mote_json_path(const struct mote_json *j, int t, const char *path);

enum mote_json_type mote_json_type_of(const struct mote_json *j, int t);

/* True if token `t` is a string whose raw (still escaped) bytes equal `s`
 * - enough for keys and enum-like values with no escapes. */
bool mote_json_eq(const struct mote_json *j, int t, const char *s);

/* Unescapes string token `t` into `out` (cap bytes, NUL-terminated).
 * Returns the length, MOTE_ERR_TOO_LARGE if it does not fit (out then
 * holds the longest prefix of whole characters that fits, NUL-terminated),
 * or MOTE_ERR_INVAL if `t` is not a string. */
int mote_json_str(const struct mote_json *j, int t, char *out, size_t cap);

/* mote_json_str for a string that becomes a C string (a path, a command,
 * an id, a name): one holding a NUL (\u0000), which C would read as its
 * end, is refused with MOTE_ERR_BADMSG (out then holds ""). Other returns
 * as mote_json_str. */
int mote_json_cstr(const struct mote_json *j, int t, char *out, size_t cap);

/* What mote_json_strict refuses (bits of `flags`). */
#define MOTE_JSON_NO_DUP_KEYS 1u /* an object with two members of one name */
#define MOTE_JSON_NO_NUL 2u      /* a string or key holding \u0000 */

/* Checks token `t`'s whole subtree for what makes a value from outside
 * ambiguous. Two members of one name (compared unescaped: "a" and
 * "\u0061" are one name): JSON parsers differ on which one counts (RFC
 * 8259 4), so what one program shows is not what another runs. A NUL in
 * a string: where the string becomes a C string, the part after it
 * vanishes. Returns 0, or MOTE_ERR_BADMSG with the reason in `err` (`cap`
 * bytes, nothing if 0): "duplicate key \"NAME\"", "a NUL (\u0000) in
 * member \"NAME\"" or "a string holds a NUL (\u0000)". A missing `t`
 * (-1) passes. Never blocks; O(members squared) per object, bounded by
 * MOTE_JSON_MAX_TOKENS. */
int mote_json_strict(const struct mote_json *j, int t, unsigned flags, char *err, size_t cap);

/* Integer value of a number token (no fraction or exponent). Returns 0,
 * MOTE_ERR_INVAL or MOTE_ERR_RANGE. */
int mote_json_int(const struct mote_json *j, int t, int64_t *out);

/* true/false token. Returns 0 or MOTE_ERR_INVAL. */
int mote_json_bool(const struct mote_json *j, int t, bool *out);

/* True if `t` is missing (-1) or the literal null. */
bool mote_json_is_null(const struct mote_json *j, int t);

/* Raw bytes of token `t` (strings without their quotes). */
const char *mote_json_raw(const struct mote_json *j, int t, size_t *len);

/* Unescapes a JSON string body (between the quotes) of `len` bytes into
 * `out`; same rules and returns as mote_json_str. Used for fragments. */
int mote_json_unescape(const char *s, size_t len, char *out, size_t cap);

/* The character at s[*i] of a JSON string body (`len` bytes, between
 * the quotes), escapes decoded as mote_json_str does: a surrogate pair
 * is one character; a lone surrogate, a bad escape or a byte that is not
 * UTF-8 is U+FFFD. Advances *i past it (*i < len). For reading a long
 * string a character at a time, without a buffer for all of it. */
uint32_t mote_json_char(const char *s, size_t len, size_t *i);

/* The UTF-8 character at s[*i] (`n` bytes in all): its code point, or
 * U+FFFD for a byte that does not start a valid one (*i then moves one
 * byte on). Advances *i past it (*i < n). */
uint32_t mote_utf8_char(const char *s, size_t n, size_t *i);

/* Writes code point `cp` (at most U+10FFFF) as UTF-8 into out (4 bytes
 * of room); returns its length. */
size_t mote_utf8_put(uint32_t cp, char *out);

/* True if the `n` bytes at `s` are valid UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF). mote_json_parse does not
 * check this (a model's text with a stray byte still streams; the writer
 * turns such bytes into \ufffd): check it before a parsed text is kept
 * as it is, so that it stays JSON to any strict parser (RFC 8259 8.1). */
bool mote_utf8_valid(const char *s, size_t n);

/* ---- writing ----------------------------------------------------------- */

/* Receives output; returns 0 or < 0 to stop the writer. */
typedef int (*mote_sink_fn)(void *arg, const char *p, size_t n);

struct mote_jw {
    mote_sink_fn sink;
    void *arg;
    int err;            /* first error, sticky */
    uint8_t depth;
    bool after_key;
    uint32_t has_items; /* bit d: container at depth d has a member */
    uint64_t written;   /* bytes passed to the sink */
};

void mote_jw_init(struct mote_jw *w, mote_sink_fn sink, void *arg);
void mote_jw_obj(struct mote_jw *w);   /* { */
void mote_jw_obj_end(struct mote_jw *w);
void mote_jw_arr(struct mote_jw *w);   /* [ */
void mote_jw_arr_end(struct mote_jw *w);
void mote_jw_key(struct mote_jw *w, const char *key);
void mote_jw_str(struct mote_jw *w, const char *s);
void mote_jw_strn(struct mote_jw *w, const char *s, size_t n);
/* One string written in pieces: begin, any number of more (each piece
 * whole UTF-8 characters), end. */
void mote_jw_str_begin(struct mote_jw *w);
void mote_jw_str_more(struct mote_jw *w, const char *s, size_t n);
void mote_jw_str_end(struct mote_jw *w);
/* One string made of two pieces (a prefix and a text). */
void mote_jw_str2(struct mote_jw *w, const char *a, size_t an, const char *b, size_t bn);
void mote_jw_int(struct mote_jw *w, int64_t v);
void mote_jw_bool(struct mote_jw *w, bool v);
void mote_jw_null(struct mote_jw *w);
/* A member: key `key`, then its value (a string, an integer, true/false). */
void mote_jw_kstr(struct mote_jw *w, const char *key, const char *s);
void mote_jw_kint(struct mote_jw *w, const char *key, int64_t v);
void mote_jw_kbool(struct mote_jw *w, const char *key, bool v);
/* Inserts already-valid JSON (a stored tool input, say) as one value. */
void mote_jw_raw(struct mote_jw *w, const char *json, size_t n);
/* Bytes at the writer's position as they are, no separator (the rest of a
 * value begun with mote_jw_raw); nothing once the writer has failed. */
void mote_jw_bytes(struct mote_jw *w, const char *p, size_t n);
/* Writes token `t` of a parsed text (outside input) as canonical JSON that
 * any strict parser accepts: members and elements re-emitted, raw control
 * characters in strings escaped, invalid UTF-8 as \ufffd, a primitive
 * that is not a JSON literal or number an error (MOTE_ERR_INVAL, sticky,
 * like the sink's). Never copies outside bytes through unchecked. */
void mote_jw_value(struct mote_jw *w, const struct mote_json *j, int t);

/* Writes string content (no quotes) with full escaping to the sink:
 * ", \ and control characters escaped, invalid UTF-8 as \ufffd. */
int mote_json_escape_to(mote_sink_fn sink, void *arg, const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_JSON_H */
