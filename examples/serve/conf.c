/* conf.c - mote serve's configuration file, read strictly (see conf.h):
 * `key = value` lines, as a shell script or OpenWrt's UCI writes them. It
 * knows no key: serve.c maps each to its option, so that an option and
 * its key cannot drift apart. */
#include "conf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../common/readfile.h"

int conf_read(const char *path, bool optional, char *buf, size_t cap, size_t *len, char *err,
              size_t err_cap)
{
    int rc = fe_read_file(path, buf, cap, len);

    if (rc == FE_READ_OK)
        return 0;
    if (rc == FE_READ_ERRNO && optional && errno == ENOENT)
        return 1;
    if (rc == FE_READ_TOO_LONG)
        snprintf(err, err_cap, "%s is larger than %zu bytes", path, cap - 1);
    else
        snprintf(err, err_cap, "cannot read %s: %s", path, fe_read_why(rc));
    return -1;
}

int conf_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    size_t i;

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcmp(v, yes[i]) == 0 || strcmp(v, no[i]) == 0) {
            *out = strcmp(v, yes[i]) == 0;
            return 0;
        }
    }
    return -1;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The line `s` (NUL-terminated, no newline) cut into key and value. */
static int one_line(char *s, unsigned line, struct conf_item *it, char *err, size_t cap)
{
    char *eq, *k, *v, *end;
    size_t n, i;

    while (blank(*s))
        s++;
    n = strlen(s);
    while (n > 0 && (blank(s[n - 1]) || s[n - 1] == '\r'))
        s[--n] = '\0';
    if (n == 0 || s[0] == '#')
        return 0;
    eq = strchr(s, '=');
    if (eq == NULL) {
        snprintf(err, cap, "line %u: not 'key = value'", line);
        return -1;
    }
    k = s;
    end = eq;
    while (end > k && blank(end[-1]))
        end--;
    *end = '\0';
    n = strlen(k);
    for (i = 0; i < n; i++) {
        char c = k[i];

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            break;
    }
    if (n == 0 || n > 63 || i < n) {
        snprintf(err, cap, "line %u: a key is 1 to 63 of a-z, 0-9 and '-'", line);
        return -1;
    }
    v = eq + 1;
    while (blank(*v))
        v++;
    n = strlen(v);
    if (n > 0 && (v[0] == '"' || v[0] == '\'')) {
        if (n < 2 || v[n - 1] != v[0] || memchr(v + 1, v[0], n - 2) != NULL) {
            snprintf(err, cap, "line %u: %s: a quoted value ends with its quote, and holds "
                               "no other",
                     line, k);
            return -1;
        }
        v[n - 1] = '\0';
        v++;
    } else if (n == 0) {
        snprintf(err, cap, "line %u: %s has no value (\"\" for an empty one)", line, k);
        return -1;
    }
    it->line = line;
    it->key = k;
    it->value = v;
    return 1;
}

int conf_parse(char *text, size_t len, int (*fn)(void *arg, const struct conf_item *it),
               void *arg, char *err, size_t cap)
{
    size_t at = 0;
    unsigned line = 0;

    err[0] = '\0';
    if (memchr(text, '\0', len) != NULL) {
        char *z = memchr(text, '\0', len);
        unsigned l = 1;
        char *p;

        for (p = text; p < z; p++)
            l += *p == '\n';
        snprintf(err, cap, "line %u: a NUL byte (the file is not text)", l);
        return -1;
    }
    while (at < len) {
        char *s = text + at, *nl = memchr(s, '\n', len - at);
        size_t n = nl != NULL ? (size_t)(nl - s) : len - at;
        struct conf_item it;
        int rc;

        line++;
        if (n >= CONF_LINE_MAX) {
            snprintf(err, cap, "line %u: longer than %d bytes", line, CONF_LINE_MAX - 1);
            return -1;
        }
        s[n] = '\0';
        at += n + 1;
        rc = one_line(s, line, &it, err, cap);
        if (rc < 0)
            return -1;
        if (rc > 0 && (rc = fn(arg, &it)) != 0)
            return rc;
    }
    return 0;
}
