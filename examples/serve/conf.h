/* conf.h - mote serve's configuration file (conf.c): `key = value` lines,
 * read strictly. docs/SERVE.md, "Configuration file". */
#ifndef MOTE_FE_CONF_H
#define MOTE_FE_CONF_H

#include <stdbool.h>
#include <stddef.h>

#define CONF_DEFAULT_PATH "/etc/mote/mote.conf"
#define CONF_MAX (16 * 1024)  /* bytes of a configuration file */
#define CONF_LINE_MAX 4096    /* bytes of one line */

/* One setting of the file: `key` and `value` point into the text given to
 * conf_parse (which cuts it in place), `line` counts from 1. */
struct conf_item {
    unsigned line;
    const char *key;
    const char *value;
};

/* Reads `path` into `buf` (cap bytes, NUL-terminated): a regular file of
 * at most cap - 1 bytes. Returns 0; 1 when `path` is missing and
 * `optional`; or -1 with the reason in `err`. */
int conf_read(const char *path, bool optional, char *buf, size_t cap, size_t *len, char *err,
              size_t err_cap);

/* Cuts `text` (len bytes, NUL-terminated) into its settings, calling
 * `fn` for each in order: blank lines and lines starting with '#' are
 * skipped; every other line is `key = value`, spaces and tabs around
 * either ignored; a key is 1 to 63 of [a-z0-9-]; a value is the rest of
 * the line, or the text between a pair of double or single quotes around
 * it (no escapes: "" is an empty value). Returns 0, what `fn` returned
 * when it was not 0 (it said why), or -1 with the reason, "line N: ...",
 * in `err` (a NUL byte, a line too long, no '=', a bad key, an unmatched
 * quote, a bare empty value). */
int conf_parse(char *text, size_t len, int (*fn)(void *arg, const struct conf_item *it),
               void *arg, char *err, size_t err_cap);

/* A boolean value: true/false, yes/no, on/off, 1/0. 0 and *out, or -1. */
int conf_bool(const char *value, bool *out);

#endif
