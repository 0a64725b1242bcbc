/*
 * proxy.c - an HTTP proxy between mote and the model: the proxy's URL
 * (with credentials), and which hosts bypass it (NO_PROXY).
 *
 * The client tunnels https:// through the proxy with CONNECT (TLS end to
 * end, the proxy sees only the host name) and sends http:// requests to
 * it in absolute form (client.c).
 */
#include <string.h>

#include "mote/mote_err.h"
#include "mote/mote_http.h"
#include "util.h"

static void base64(const unsigned char *in, size_t n, struct mote_sb *sb)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i;

    for (i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        char q[5];

        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        q[0] = a[(v >> 18) & 63];
        q[1] = a[(v >> 12) & 63];
        q[2] = i + 1 < n ? a[(v >> 6) & 63] : '=';
        q[3] = i + 2 < n ? a[v & 63] : '=';
        q[4] = '\0';
        mote_sb_s(sb, q);
    }
}

int mote_proxy_parse(struct mote_url *u, char *auth, size_t cap, const char *proxy)
{
    char url[sizeof(u->host) + 32];
    char cred[MOTE_PROXY_CRED_MAX];
    const char *p = proxy, *hostpart, *at = NULL, *end;
    size_t clen = 0;
    struct mote_sb sb;
    int rc;

    if (cap > 0)
        auth[0] = '\0';
    /* Schemes are case-insensitive (RFC 3986): HTTP:// is http://. */
    if (strlen(p) >= 8 && mote_ascii_ieq(p, "https://", 8))
        return MOTE_ERR_NOTSUP; /* TLS to the proxy itself */
    if (strlen(p) >= 7 && mote_ascii_ieq(p, "http://", 7))
        p += 7;
    else if (strstr(p, "://") != NULL)
        return MOTE_ERR_NOTSUP; /* socks5:// and the like */
    hostpart = p;
    for (end = p; *end != '\0' && *end != '/'; end++) {
        if (*end == '@')
            at = end; /* the last '@' before the path: a password may hold one */
    }
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));

        if ((rc = mote_pct_decode(p, (size_t)((colon != NULL ? colon : at) - p), false, cred,
                                  sizeof(cred), &clen)) < 0)
            return rc;
        if (clen == 0 && colon == NULL)
            return MOTE_ERR_INVAL; /* "@host": neither user nor password */
        /* (an empty user with a password, ":pw@host", is sent as curl does) */
        if (clen >= sizeof(cred))
            return MOTE_ERR_TOO_LARGE;
        cred[clen++] = ':';
        if (colon != NULL && (rc = mote_pct_decode(colon + 1, (size_t)(at - colon - 1), false,
                                                   cred, sizeof(cred), &clen)) < 0)
            return rc;
        hostpart = at + 1;
    }
    /* What is after the host (a "/" at most) must be empty. */
    if (*end == '/' && end[1] != '\0')
        return MOTE_ERR_INVAL;
    if ((size_t)(end - hostpart) + 8 >= sizeof(url))
        return MOTE_ERR_NAMETOOLONG;
    memcpy(url, "http://", 7);
    memcpy(url + 7, hostpart, (size_t)(end - hostpart));
    url[7 + (end - hostpart)] = '\0';
    if ((rc = mote_url_parse(u, url)) < 0)
        return rc == MOTE_ERR_TOO_LARGE ? MOTE_ERR_NAMETOOLONG : rc;
    if (u->default_port) {
        u->port = 1080; /* curl's default for a proxy without a port */
        u->default_port = false;
    }
    if (at != NULL) {
        mote_sb_init(&sb, auth, cap);
        mote_sb_s(&sb, "Proxy-Authorization: Basic ");
        base64((const unsigned char *)cred, clen, &sb);
        if (sb.len + 1 >= cap)
            rc = MOTE_ERR_TOO_LARGE;
        memset(cred, 0, sizeof(cred)); /* a password does not linger on the stack */
        if (rc < 0) {
            auth[0] = '\0';
            return rc;
        }
    }
    return 0;
}

void mote_proxy_error(int rc, char *buf, size_t cap)
{
    struct mote_sb sb;

    mote_sb_init(&sb, buf, cap);
    if (rc == MOTE_ERR_NOTSUP) {
        mote_sb_s(&sb, "unsupported proxy: only an http:// proxy can be used");
    } else if (rc == MOTE_ERR_TOO_LARGE) {
        mote_sb_s(&sb, "the user name and password in the proxy URL are too long: at most ");
        mote_sb_u(&sb, MOTE_PROXY_CRED_MAX);
        mote_sb_s(&sb, " bytes for user:password once %-decoded (MOTE_PROXY_CRED_MAX)");
    } else if (rc == MOTE_ERR_NAMETOOLONG) {
        mote_sb_s(&sb, "the proxy's host name is too long");
    } else {
        mote_sb_s(&sb, "bad proxy URL: use http://[user:password@]host:port (%-encode "
                       "what is special in the user and password: %40 for @, %3A for :)");
    }
}

/* An IPv4 address in dotted quad, into *v. */
static bool ipv4(const char *s, size_t n, uint32_t *v)
{
    unsigned part = 0, dots = 0, digits = 0;
    size_t i;

    *v = 0;
    for (i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (digits == 0 || part > 255)
                return false;
            *v = (*v << 8) | part;
            part = 0;
            digits = 0;
            if (i < n && ++dots > 3)
                return false;
        } else if (s[i] >= '0' && s[i] <= '9' && digits < 3) {
            part = part * 10 + (unsigned)(s[i] - '0');
            digits++;
        } else {
            return false;
        }
    }
    return dots == 3;
}

static bool loopback(const char *host)
{
    size_t n = strlen(host);
    uint32_t v;

    if (n > 0 && host[n - 1] == '.')
        n--;
    return (n == 9 && mote_ascii_ieq(host, "localhost", 9)) ||
           (n > 10 && mote_ascii_ieq(host + n - 10, ".localhost", 10)) || strcmp(host, "::1") == 0 ||
           (ipv4(host, n, &v) && (v >> 24) == 127);
}

/* One NO_PROXY entry: "*", a name (its subdomains too; a leading dot is
 * the same), an address, an IPv4 CIDR block; ":PORT" limits it to a port. */
static bool entry_matches(const char *e, size_t n, const char *host, uint16_t port)
{
    size_t hn = strlen(host);
    const char *slash, *colon;
    uint32_t a, b;

    if (n == 1 && e[0] == '*')
        return true;
    if (n > 2 && e[0] == '[') { /* [v6]:port */
        const char *close = memchr(e, ']', n);

        if (close == NULL)
            return false;
        if ((size_t)(close - e) + 1 < n) {
            unsigned long p = 0;
            const char *q;

            if (close[1] != ':')
                return false;
            for (q = close + 2; q < e + n; q++) {
                if (*q < '0' || *q > '9' || (p = p * 10 + (unsigned long)(*q - '0')) > 65535)
                    return false;
            }
            if (p != port)
                return false;
        }
        return (size_t)(close - e - 1) == hn && mote_ascii_ieq(e + 1, host, hn);
    }
    colon = memchr(e, ':', n);
    if (colon != NULL && memchr(colon + 1, ':', (size_t)(e + n - colon - 1)) == NULL) {
        /* one colon: name:port (an IPv6 address has more) */
        unsigned long p = 0;
        const char *q;

        for (q = colon + 1; q < e + n; q++) {
            if (*q < '0' || *q > '9' || (p = p * 10 + (unsigned long)(*q - '0')) > 65535)
                return false;
        }
        if (q == colon + 1 || p != port)
            return false;
        n = (size_t)(colon - e);
    }
    if (n > 0 && e[0] == '.') {
        e++;
        n--;
    }
    if (n == 0)
        return false;
    slash = memchr(e, '/', n);
    if (slash != NULL) {
        unsigned bits = 0;
        const char *q;

        for (q = slash + 1; q < e + n; q++) {
            if (*q < '0' || *q > '9' || (bits = bits * 10 + (unsigned)(*q - '0')) > 32)
                return false;
        }
        if (q == slash + 1 || !ipv4(e, (size_t)(slash - e), &a) || !ipv4(host, hn, &b))
            return false;
        return bits == 0 || (a >> (32 - bits)) == (b >> (32 - bits));
    }
    if (hn == n)
        return mote_ascii_ieq(host, e, n);
    return hn > n && host[hn - n - 1] == '.' && mote_ascii_ieq(host + hn - n, e, n);
}

bool mote_proxy_bypass(const char *no_proxy, const char *host, uint16_t port)
{
    const char *p = no_proxy;

    if (loopback(host))
        return true;
    while (p != NULL && *p != '\0') {
        size_t n;

        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        n = strcspn(p, ", \t");
        if (n > 0 && entry_matches(p, n, host, port))
            return true;
        p += n;
    }
    return false;
}
