/*
 * tls_roots.c - one pass over a bundle of roots (PEM or DER, a file read
 * through the port or memory), handing on the certificates whose subject
 * matches the names asked for. Fixed scratch memory, no allocation, no
 * OS call: the file is read with the port's fs members.
 */
#include "tls_roots.h"

#include <string.h>

#include "mote/mote_err.h"

/* ---- DER ------------------------------------------------------------- */

/* The TLV header at p: its tag and content length; returns the header's
 * length, or 0 if malformed or running past `end`. */
static size_t tlv(const unsigned char *p, const unsigned char *end, unsigned *tag, size_t *len)
{
    size_t have = (size_t)(end - p), hdr, l = 0, i;

    if (have < 2 || (p[0] & 0x1fu) == 0x1fu)
        return 0; /* certificates use only one-byte tags */
    *tag = p[0];
    if (p[1] < 0x80u) {
        l = p[1];
        hdr = 2;
    } else {
        size_t k = p[1] & 0x7fu;

        if (k == 0 || k > 4 || have < 2 + k)
            return 0;
        for (i = 0; i < k; i++)
            l = (l << 8) | p[2 + i];
        hdr = 2 + k;
    }
    if (have - hdr < l)
        return 0;
    *len = l;
    return hdr;
}

/* Steps over one TLV with tag `want` (any tag if 0). */
static int skip(const unsigned char **p, const unsigned char *end, unsigned want)
{
    unsigned tag;
    size_t len, h = tlv(*p, end, &tag, &len);

    if (h == 0 || (want != 0 && tag != want))
        return MOTE_ERR_BADMSG;
    *p += h + len;
    return 0;
}

int mote_roots_subject(const unsigned char *der, size_t len, struct mote_roots_name *out)
{
    const unsigned char *p = der, *end = der + len;
    unsigned tag;
    size_t l, h;

    /* Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version
     * OPTIONAL, serialNumber, signature, issuer, validity, subject, ... } } */
    h = tlv(p, end, &tag, &l);
    if (h == 0 || tag != 0x30u)
        return MOTE_ERR_BADMSG;
    p += h;
    end = p + l;
    h = tlv(p, end, &tag, &l);
    if (h == 0 || tag != 0x30u)
        return MOTE_ERR_BADMSG;
    p += h;
    end = p + l;
    if (p < end && *p == 0xa0u && skip(&p, end, 0xa0u) < 0)
        return MOTE_ERR_BADMSG;
    if (skip(&p, end, 0x02u) < 0 || skip(&p, end, 0x30u) < 0 || skip(&p, end, 0x30u) < 0 ||
        skip(&p, end, 0x30u) < 0)
        return MOTE_ERR_BADMSG;
    h = tlv(p, end, &tag, &l);
    if (h == 0 || tag != 0x30u)
        return MOTE_ERR_BADMSG;
    out->p = p;
    out->len = h + l;
    return 0;
}

unsigned mote_roots_sha1_as_sha256(unsigned char *der, size_t len)
{
    static const unsigned char sha1_rsa[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05};
    unsigned char *alg[2], *p = der, *end = der + len, *tbs_end;
    unsigned tag, n = 0, i;
    size_t l, h;

    /* Certificate { tbs { [0], serial, signature, ... }, signatureAlgorithm, ... } */
    if ((h = tlv(p, end, &tag, &l)) == 0 || tag != 0x30u)
        return 0;
    p += h;
    end = p + l;
    if ((h = tlv(p, end, &tag, &l)) == 0 || tag != 0x30u)
        return 0;
    tbs_end = p + h + l;
    p += h;
    if (p < tbs_end && *p == 0xa0u && skip((const unsigned char **)&p, tbs_end, 0xa0u) < 0)
        return 0;
    if (skip((const unsigned char **)&p, tbs_end, 0x02u) < 0)
        return 0;
    alg[0] = p;
    alg[1] = tbs_end;
    for (i = 0; i < 2; i++) {
        unsigned char *q = alg[i];

        if ((h = tlv(q, end, &tag, &l)) == 0 || tag != 0x30u)
            return 0;
        q += h;
        if ((h = tlv(q, end, &tag, &l)) == 0 || tag != 0x06u || l != sizeof(sha1_rsa) ||
            memcmp(q + h, sha1_rsa, sizeof(sha1_rsa)) != 0)
            return 0;
        alg[i] = q + h + l - 1; /* the OID's last arc */
    }
    for (i = 0; i < 2; i++, n++)
        *alg[i] = 0x0b; /* 1.2.840.113549.1.1.11, sha256WithRSAEncryption */
    return n;
}

/* Walks the attributes of a Name (SEQUENCE OF SET OF SEQUENCE {type,
 * value}) one after another, across the SETs. */
struct name_walk {
    const unsigned char *p, *end;         /* the SETs left */
    const unsigned char *set_p, *set_end; /* the attributes left in the SET */
};

static int name_walk_init(struct name_walk *w, const unsigned char *p, size_t len)
{
    unsigned tag;
    size_t l, h = tlv(p, p + len, &tag, &l);

    if (h == 0 || tag != 0x30u)
        return -1;
    w->p = p + h;
    w->end = p + h + l;
    w->set_p = w->set_end = NULL;
    return 0;
}

/* 1 and the next attribute's type (OID content) and value (content), 0
 * at the end, -1 if malformed. */
static int name_next(struct name_walk *w, const unsigned char **oid, size_t *oid_len,
                     const unsigned char **val, size_t *val_len)
{
    unsigned tag;
    size_t l, h;

    while (w->set_p == NULL || w->set_p >= w->set_end) {
        if (w->p >= w->end)
            return 0;
        h = tlv(w->p, w->end, &tag, &l);
        if (h == 0 || tag != 0x31u)
            return -1;
        w->set_p = w->p + h;
        w->set_end = w->set_p + l;
        w->p = w->set_end;
    }
    {
        const unsigned char *q, *qend;

        h = tlv(w->set_p, w->set_end, &tag, &l);
        if (h == 0 || tag != 0x30u)
            return -1;
        q = w->set_p + h;
        qend = q + l;
        w->set_p = qend;
        h = tlv(q, qend, &tag, &l);
        if (h == 0 || tag != 0x06u)
            return -1;
        *oid = q + h;
        *oid_len = l;
        q += h + l;
        h = tlv(q, qend, &tag, &l);
        if (h == 0)
            return -1;
        *val = q + h;
        *val_len = l;
    }
    return 1;
}

static unsigned char fold(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

bool mote_roots_name_match(const unsigned char *a, size_t alen, const unsigned char *b,
                           size_t blen)
{
    struct name_walk wa, wb;

    if (alen == blen && memcmp(a, b, alen) == 0)
        return true;
    if (name_walk_init(&wa, a, alen) < 0 || name_walk_init(&wb, b, blen) < 0)
        return false;
    for (;;) {
        const unsigned char *oa, *ob, *va, *vb;
        size_t oal, obl, val, vbl, i;
        int ra = name_next(&wa, &oa, &oal, &va, &val);
        int rb = name_next(&wb, &ob, &obl, &vb, &vbl);

        if (ra < 0 || rb < 0 || ra != rb)
            return false;
        if (ra == 0)
            return true;
        if (oal != obl || memcmp(oa, ob, oal) != 0 || val != vbl)
            return false;
        for (i = 0; i < val; i++) {
            if (fold(va[i]) != fold(vb[i]))
                return false;
        }
    }
}

/* ---- the scan ---------------------------------------------------------- */

enum { MODE_UNKNOWN, MODE_PEM, MODE_DER };
enum { PEM_OUT, PEM_B64 };

static const char begin_marker[] = "-----BEGIN CERTIFICATE-----";
#define BEGIN_LEN (sizeof(begin_marker) - 1)

struct scan {
    const struct mote_roots_name *names;
    unsigned nnames;
    struct mote_roots_buf *b;
    mote_roots_fn fn;
    void *arg;
    struct mote_roots_stats *st;
    int mode;
    /* PEM */
    int pem;
    unsigned m;     /* marker bytes matched */
    uint32_t acc;   /* base64 bits not yet output */
    unsigned nbits;
    /* both: the certificate being gathered */
    size_t dlen;
    bool over;      /* longer than MOTE_TLS_CERT_MAX: counted, skipped */
    /* DER */
    unsigned char hdr[6];
    unsigned hlen;
    size_t total;   /* the certificate's whole length, once the header is in */
    size_t got;     /* of it, bytes seen */
    bool garbage;   /* a DER source went wrong: the rest is ignored */
};

static int emit(struct scan *s, const unsigned char *der, size_t len)
{
    struct mote_roots_name subj;
    unsigned i;

    s->st->certs++;
    if (mote_roots_subject(der, len, &subj) < 0) {
        s->st->skipped++;
        return 0;
    }
    for (i = 0; i < s->nnames; i++) {
        if (mote_roots_name_match(s->names[i].p, s->names[i].len, subj.p, subj.len))
            break;
    }
    if (s->nnames > 0 && i == s->nnames)
        return 0;
    s->st->matched++;
    return s->fn(s->arg, der, len);
}

static int b64(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static void put(struct scan *s, unsigned char byte)
{
    if (s->dlen < sizeof(s->b->der))
        s->b->der[s->dlen++] = byte;
    else
        s->over = true;
}

/* Base64 by table: 0..63 a digit, B64_SKIP whitespace and padding, B64_END
 * the '-' that ends a block, B64_BAD anything else. Built on first use. */
enum { B64_SKIP = 64, B64_END, B64_BAD };
static unsigned char b64_tab[256];

static void b64_init(void)
{
    unsigned c;

    for (c = 0; c < 256; c++) {
        int v = b64((unsigned char)c);

        b64_tab[c] = v >= 0 ? (unsigned char)v
                     : c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '='
                         ? (unsigned char)B64_SKIP
                     : c == '-' ? (unsigned char)B64_END
                                : (unsigned char)B64_BAD;
    }
}

static int feed_pem(struct scan *s, const unsigned char *p, size_t n)
{
    size_t i;
    int rc;

    if (b64_tab['-'] == 0)
        b64_init();
    for (i = 0; i < n; i++) {
        unsigned char c = p[i];

        if (s->pem == PEM_B64) {
            /* the bulk of a bundle: four digits at a time while they come
             * in fours, then one at a time */
            unsigned v;

            for (;;) {
                while (s->nbits == 0 && n - i >= 4) {
                    unsigned a = b64_tab[p[i]], b = b64_tab[p[i + 1]], c3 = b64_tab[p[i + 2]],
                             d = b64_tab[p[i + 3]];
                    uint32_t q = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c3 << 6 | d;

                    if ((a | b | c3 | d) >= 64)
                        break;
                    if (s->dlen + 3 <= sizeof(s->b->der)) {
                        s->b->der[s->dlen] = (unsigned char)(q >> 16);
                        s->b->der[s->dlen + 1] = (unsigned char)(q >> 8);
                        s->b->der[s->dlen + 2] = (unsigned char)q;
                        s->dlen += 3;
                    } else {
                        s->over = true;
                    }
                    i += 4;
                }
                if (i == n)
                    return 0;
                if ((v = b64_tab[p[i]]) > B64_SKIP)
                    break; /* the end, or not base64 */
                if (v < B64_SKIP) {
                    s->acc = (s->acc << 6) | v;
                    s->nbits += 6;
                    if (s->nbits >= 8) {
                        s->nbits -= 8;
                        put(s, (unsigned char)(s->acc >> s->nbits));
                        s->acc &= (1u << s->nbits) - 1u;
                    }
                }
                if (++i == n)
                    return 0;
            }
            c = p[i];
        }

        if (s->pem == PEM_OUT) {
            if (c == (unsigned char)begin_marker[s->m]) {
                if (++s->m == BEGIN_LEN) {
                    s->pem = PEM_B64;
                    s->m = 0;
                    s->acc = s->nbits = 0;
                    s->dlen = 0;
                    s->over = false;
                }
            } else {
                /* "------BEGIN": the last five dashes still count */
                s->m = c != '-' ? 0 : s->m == 5 ? 5 : 1;
            }
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '=')
            continue;
        if (c == '-') { /* "-----END CERTIFICATE-----" */
            s->pem = PEM_OUT;
            s->m = 1;
            if (s->over || s->dlen == 0) {
                s->st->certs++;
                s->st->skipped++;
                continue;
            }
            if ((rc = emit(s, s->b->der, s->dlen)) != 0)
                return rc;
            continue;
        }
        {
            int v = b64(c);

            if (v < 0) { /* not base64: not a certificate */
                s->pem = PEM_OUT;
                s->m = 0;
                s->st->certs++;
                s->st->skipped++;
                continue;
            }
            s->acc = (s->acc << 6) | (uint32_t)v;
            s->nbits += 6;
            if (s->nbits >= 8) {
                s->nbits -= 8;
                put(s, (unsigned char)(s->acc >> s->nbits));
                s->acc &= (1u << s->nbits) - 1u;
            }
        }
    }
    return 0;
}

static int feed_der(struct scan *s, const unsigned char *p, size_t n)
{
    size_t i = 0;
    int rc;

    while (i < n && !s->garbage) {
        size_t chunk;

        if (s->total == 0) {
            /* the header: tag 0x30, then a definite length of 1..4 bytes */
            size_t need, len = 0, k;
            unsigned char c = p[i++];

            s->hdr[s->hlen++] = c;
            if ((s->hlen == 1 && c != 0x30u) || (s->hlen == 2 && (c == 0x80u || c > 0x84u))) {
                s->garbage = true;
                break;
            }
            if (s->hlen < 2)
                continue;
            need = s->hdr[1] < 0x80u ? 2u : 2u + (s->hdr[1] & 0x7fu);
            if (s->hlen < need)
                continue;
            if (s->hdr[1] < 0x80u)
                len = s->hdr[1];
            for (k = 2; k < need; k++)
                len = (len << 8) | s->hdr[k];
            s->total = need + len;
            s->over = s->total > sizeof(s->b->der);
            if (!s->over)
                memcpy(s->b->der, s->hdr, need);
            s->got = need;
        }
        chunk = n - i < s->total - s->got ? n - i : s->total - s->got;
        if (!s->over)
            memcpy(s->b->der + s->got, p + i, chunk);
        s->got += chunk;
        i += chunk;
        if (s->got == s->total) {
            size_t len = s->total;

            s->total = 0;
            s->hlen = 0;
            if (s->over) {
                s->st->certs++;
                s->st->skipped++;
            } else if ((rc = emit(s, s->b->der, len)) != 0) {
                return rc;
            }
        }
    }
    return 0;
}

static int feed(struct scan *s, const unsigned char *p, size_t n)
{
    while (s->mode == MODE_UNKNOWN && n > 0) {
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            p++, n--;
            continue;
        }
        s->mode = *p == 0x30u ? MODE_DER : MODE_PEM;
    }
    if (n == 0)
        return 0;
    return s->mode == MODE_DER ? feed_der(s, p, n) : feed_pem(s, p, n);
}

int mote_roots_scan(const struct mote_roots_src *src, const struct mote_roots_name *names,
                    unsigned nnames, struct mote_roots_buf *b, mote_roots_fn fn, void *arg,
                    struct mote_roots_stats *st)
{
    struct mote_roots_stats dummy;
    struct scan s;
    int rc = 0;

    memset(&s, 0, sizeof(s));
    s.names = names;
    s.nnames = nnames;
    s.b = b;
    s.fn = fn;
    s.arg = arg;
    s.st = st != NULL ? st : &dummy;
    memset(s.st, 0, sizeof(*s.st));
    if (src->path == NULL) {
        rc = feed(&s, src->mem, src->mem_len);
    } else {
        const struct mote_port *p = src->port;
        uint64_t off = 0;
        int h;

        if (p == NULL || !MOTE_PORT_HAS(p, fs_open) || !MOTE_PORT_HAS(p, fs_read) ||
            !MOTE_PORT_HAS(p, fs_close))
            return MOTE_ERR_NOSYS;
        h = p->fs_open(p->ctx, src->path);
        if (h < 0)
            return h;
        for (;;) {
            int n;

            if (off >= MOTE_TLS_BUNDLE_MAX) {
                rc = MOTE_ERR_TOO_LARGE;
                break;
            }
            n = p->fs_read(p->ctx, h, off, b->chunk, sizeof(b->chunk));
            if (n <= 0) {
                rc = n;
                break;
            }
            off += (uint64_t)n;
            if ((rc = feed(&s, b->chunk, (size_t)n)) != 0)
                break;
        }
        p->fs_close(p->ctx, h);
    }
    if (rc == 0 && s.mode == MODE_DER && (s.garbage || s.total != 0))
        s.st->skipped++; /* a cut or broken DER element at the end */
    if (rc == 0 && s.st->certs == 0 && s.mode == MODE_UNKNOWN)
        return 0; /* empty: no certificate, said by the counts */
    return rc;
}
