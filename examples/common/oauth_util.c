/*
 * oauth_util.c - the text of the MCP servers' login (oauth_int.h):
 * building forms, queries and JSON, reading redirects and
 * WWW-Authenticate, addresses compared, ${VAR} expanded, members of the
 * documents read.
 */
#define _GNU_SOURCE
#include "oauth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char oa_body[FE_OAUTH_BODY_MAX];
struct mote_json oa_js;
bool oa_scrub;
const char *(*oa_lookup)(const char *name);

/* ---- small text tools ---- */

/* Appends s to buf (cap) at *at; false when it does not fit. */
bool oa_cat(char *buf, size_t cap, size_t *at, const char *s)
{
    size_t n = strlen(s);

    if (*at + n >= cap)
        return false;
    memcpy(buf + *at, s, n + 1);
    *at += n;
    return true;
}

/* Appends s percent-encoded (all but RFC 3986's unreserved). */
bool oa_enc(char *buf, size_t cap, size_t *at, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            if (*at + 1 >= cap)
                return false;
            buf[(*at)++] = (char)c;
        } else {
            if (*at + 3 >= cap)
                return false;
            buf[(*at)++] = '%';
            buf[(*at)++] = hex[c >> 4];
            buf[(*at)++] = hex[c & 15u];
        }
    }
    buf[*at] = '\0';
    return true;
}

/* "&name=value" (no '&' when *at is 0) into a form or a query. */
bool oa_param(char *buf, size_t cap, size_t *at, const char *name, const char *v)
{
    return (*at == 0 || oa_cat(buf, cap, at, "&")) && oa_cat(buf, cap, at, name) &&
           oa_cat(buf, cap, at, "=") && oa_enc(buf, cap, at, v);
}

/* Appends s as a JSON string. */
bool oa_json_str(char *buf, size_t cap, size_t *at, const char *s)
{
    if (!oa_cat(buf, cap, at, "\""))
        return false;
    for (; *s != '\0'; s++) {
        char e[8];
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            e[0] = '\\', e[1] = (char)c, e[2] = '\0';
        else if (c < 0x20)
            snprintf(e, sizeof(e), "\\u%04x", c);
        else
            e[0] = (char)c, e[1] = '\0';
        if (!oa_cat(buf, cap, at, e))
            return false;
    }
    return oa_cat(buf, cap, at, "\"");
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A query parameter of `url` (after '?', before '#'), percent-decoded:
 * its length, or -1 (absent, too long, or a control byte in it). */
int fe_oauth_query(const char *url, const char *name, char *out, size_t cap)
{
    const char *q = strchr(url, '?');
    size_t nl = strlen(name);

    if (q == NULL)
        return -1;
    for (q++; *q != '\0' && *q != '#';) {
        size_t len = strcspn(q, "&#");

        if (len > nl && strncmp(q, name, nl) == 0 && q[nl] == '=') {
            size_t i, o = 0;

            for (i = nl + 1; i < len; i++) {
                int c = (unsigned char)q[i];

                if (c == '%' && i + 2 < len + 1 && hexval(q[i + 1]) >= 0 && hexval(q[i + 2]) >= 0) {
                    c = hexval(q[i + 1]) * 16 + hexval(q[i + 2]);
                    i += 2;
                } else if (c == '+') {
                    c = ' ';
                }
                if (c < 0x20 || c == 0x7f || o + 1 >= cap)
                    return -1;
                out[o++] = (char)c;
            }
            out[o] = '\0';
            return (int)o;
        }
        q += len;
        if (*q == '&')
            q++;
    }
    return -1;
}

/* An auth-param of a WWW-Authenticate value (RFC 9110 11.6.1):
 * name=token or name="quoted", the name matched whole and without case.
 * Its length, or -1 (absent, too long, a control byte). */
int fe_oauth_param(const char *h, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *s = h;

    while ((s = strcasestr(s, name)) != NULL) {
        const char *v = s + nl;
        size_t o = 0;

        if ((s != h && s[-1] != ' ' && s[-1] != ',' && s[-1] != '\t') ||
            (*v != '=' && *v != ' ')) {
            s += nl;
            continue;
        }
        while (*v == ' ')
            v++;
        if (*v++ != '=') {
            s += nl;
            continue;
        }
        while (*v == ' ')
            v++;
        if (*v == '"') {
            for (v++; *v != '\0' && *v != '"'; v++) {
                if (*v == '\\' && v[1] != '\0')
                    v++;
                if ((unsigned char)*v < 0x20 || o + 1 >= cap)
                    return -1;
                out[o++] = *v;
            }
            if (*v != '"')
                return -1;
        } else {
            for (; *v != '\0' && *v != ',' && *v != ' '; v++) {
                if ((unsigned char)*v < 0x20 || o + 1 >= cap)
                    return -1;
                out[o++] = *v;
            }
        }
        out[o] = '\0';
        return (int)o;
    }
    return -1;
}

/* scheme://host[:port] of url into out; *path at the rest ("" or "/..."). */
bool oa_origin(const char *url, char *out, size_t cap, const char **path)
{
    const char *s = strstr(url, "://");
    size_t n;

    if (s == NULL || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return false;
    n = (size_t)(s + 3 - url) + strcspn(s + 3, "/?#");
    if (n >= cap)
        return false;
    memcpy(out, url, n);
    out[n] = '\0';
    *path = url + n;
    return true;
}

/* The path of url without query, fragment or a trailing '/' ("" for
 * the root) into out. */
bool oa_path(const char *url, char *out, size_t cap)
{
    char o[FE_OAUTH_URL_MAX];
    const char *p;
    size_t n;

    if (!oa_origin(url, o, sizeof(o), &p))
        return false;
    n = strcspn(p, "?#");
    while (n > 0 && p[n - 1] == '/')
        n--;
    if (n >= cap)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* Whether a protected resource's "resource" names the server at
 * server_url: the same origin (scheme and host without case), and its
 * path the server's or a parent of it at a '/'. */
bool fe_oauth_resource_ok(const char *resource, const char *server_url)
{
    char ro[FE_OAUTH_URL_MAX], so[FE_OAUTH_URL_MAX], rp[FE_OAUTH_URL_MAX], sp[FE_OAUTH_URL_MAX];
    const char *x;
    size_t n;

    if (!oa_origin(resource, ro, sizeof(ro), &x) || !oa_origin(server_url, so, sizeof(so), &x) ||
        strcasecmp(ro, so) != 0 || !oa_path(resource, rp, sizeof(rp)) ||
        !oa_path(server_url, sp, sizeof(sp)))
        return false;
    n = strlen(rp);
    return strncmp(rp, sp, n) == 0 && (sp[n] == '\0' || sp[n] == '/');
}

/* ---- ${VAR} in the configuration's strings ---- */

/* s with ${NAME} and ${NAME:-default} replaced from the environment;
 * false (err set) for an unset variable without a default. */
/* Variables every process has: never taken out. */
static bool plain(const char *name)
{
    static const char *const names[] = {"PATH", "HOME", "LANG", "USER", "LOGNAME", "SHELL",
                                        "TERM", "TMPDIR", "PWD", "TZ", "HOSTNAME"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(name, names[i]) == 0)
            return true;
    }
    return strncmp(name, "LC_", 3) == 0;
}

bool oa_expand(const char *s, char *out, size_t cap, char *err, size_t ecap)
{
    size_t at = 0;

    out[0] = '\0';
    while (*s != '\0') {
        const char *end;
        char name[128], *dflt;
        const char *v;

        if (s[0] != '$' || s[1] != '{' || (end = strchr(s, '}')) == NULL ||
            (size_t)(end - s - 2) >= sizeof(name)) {
            char c[2] = {*s++, '\0'};

            if (!oa_cat(out, cap, &at, c))
                goto long_;
            continue;
        }
        memcpy(name, s + 2, (size_t)(end - s - 2));
        name[end - s - 2] = '\0';
        dflt = strstr(name, ":-");
        if (dflt != NULL)
            *dflt = '\0', dflt += 2;
        v = getenv(name);
        if ((v == NULL || v[0] == '\0') && oa_lookup != NULL)
            v = oa_lookup(name);
        if (v == NULL || v[0] == '\0')
            v = dflt;
        if (v == NULL) {
            snprintf(err, ecap, "the variable %s is not set", name);
            return false;
        }
        if (!oa_cat(out, cap, &at, v))
            goto long_;
        if (oa_scrub && v != dflt && !plain(name)) {
            memset((char *)v, 0, strlen(v)); /* (/proc/self/environ shows the first block) */
            unsetenv(name);
        }
        s = end + 1;
    }
    return true;
long_:
    snprintf(err, ecap, "a value is too long (over %zu bytes)", cap - 1);
    return false;
}



/* a, b and c joined into out (cap); "" when it does not fit. */
void oa_join3(char *out, size_t cap, const char *a, const char *b, const char *c)
{
    size_t at = 0;

    out[0] = '\0';
    if (!oa_cat(out, cap, &at, a) || !oa_cat(out, cap, &at, b) || !oa_cat(out, cap, &at, c))
        out[0] = '\0';
}


/* A string member of the document in oa_js into out ("" if absent); false
 * when it is there but not a string that fits. */
bool oa_doc_str(const char *key, char *out, size_t cap)
{
    int t = mote_json_member(&oa_js, 0, key);

    size_t i;

    out[0] = '\0';
    if (t < 0 || mote_json_is_null(&oa_js, t))
        return true;
    if (mote_json_type_of(&oa_js, t) != MOTE_JSON_STRING || mote_json_cstr(&oa_js, t, out, cap) < 0)
        return false;
    for (i = 0; out[i] != '\0'; i++) {
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) {
            out[0] = '\0'; /* (it would reach a message, a file, a header) */
            return false;
        }
    }
    return true;
}

/* An array of strings of the document joined by spaces; false when not
 * such an array or too long. */
bool oa_doc_list(const char *key, char *out, size_t cap)
{
    int t = mote_json_member(&oa_js, 0, key), i;
    size_t at = 0;

    out[0] = '\0';
    if (t < 0 || mote_json_is_null(&oa_js, t))
        return true;
    if (mote_json_type_of(&oa_js, t) != MOTE_JSON_ARRAY)
        return false;
    for (i = 0; i < oa_js.tok[t].size; i++) {
        char v[256];
        int e = mote_json_elem(&oa_js, t, i);

        size_t k;

        if (mote_json_type_of(&oa_js, e) != MOTE_JSON_STRING ||
            mote_json_cstr(&oa_js, e, v, sizeof(v)) <= 0)
            return false;
        for (k = 0; v[k] != '\0'; k++) {
            if ((unsigned char)v[k] <= 0x20 || v[k] == 0x7f)
                return false; /* a word: no space, no control character */
        }
        if ((at > 0 && !oa_cat(out, cap, &at, " ")) || !oa_cat(out, cap, &at, v))
            return false;
    }
    return true;
}

bool oa_has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    const char *s = list;

    while ((s = strstr(s, w)) != NULL) {
        if ((s == list || s[-1] == ' ') && (s[n] == '\0' || s[n] == ' '))
            return true;
        s += n;
    }
    return false;
}
