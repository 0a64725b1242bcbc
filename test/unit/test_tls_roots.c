/* test_tls_roots.c - finding roots in a bundle without loading it
 * (port/tls_roots.c, issue 12.1): PEM and DER, from memory and from a file
 * read in chunks through the port, names compared as X.509 does, oversized
 * and broken entries skipped and counted. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include <mbedtls/x509_crt.h>
#if defined(MBEDTLS_MEMORY_BUFFER_ALLOC_C)
#include <mbedtls/memory_buffer_alloc.h> /* the tiny configuration (check-cross) */
#endif

#include "mote/mote.h"
#include "mote/mote_posix.h"
#include "../../port/tls_roots.h"

static struct mote_posix pp;
static struct mote_roots_buf rb;
static char dir[256];

/* ---- building certificate-shaped DER ---------------------------------- */

/* Appends TLV (tag, content) at out; returns its length. */
static size_t tlv(unsigned char *out, unsigned tag, const unsigned char *c, size_t n)
{
    size_t h = 0;

    out[h++] = (unsigned char)tag;
    if (n < 0x80) {
        out[h++] = (unsigned char)n;
    } else {
        out[h++] = 0x82;
        out[h++] = (unsigned char)(n >> 8);
        out[h++] = (unsigned char)n;
    }
    memmove(out + h, c, n);
    return h + n;
}

/* Name with one attribute per entry of `cn` (type 2.5.4.3, or 2.5.4.10 for
 * an 'O:' prefix), string tag `stag`. */
static size_t name(unsigned char *out, unsigned stag, const char *const *parts, unsigned n)
{
    unsigned char seq[512], set[300], atv[256], tmp[256];
    size_t len = 0, k, t;
    unsigned i;

    for (i = 0; i < n; i++) {
        static const unsigned char cn_oid[] = {0x55, 0x04, 0x03}, o_oid[] = {0x55, 0x04, 0x0a};
        const char *v = parts[i];
        bool org = strncmp(v, "O:", 2) == 0;

        if (org)
            v += 2;
        k = tlv(atv, 0x06, org ? o_oid : cn_oid, 3);
        t = tlv(tmp, stag, (const unsigned char *)v, strlen(v));
        memcpy(atv + k, tmp, t);
        k += t;
        k = tlv(set, 0x30, atv, k);
        k = tlv(tmp, 0x31, set, k);
        memcpy(seq + len, tmp, k);
        len += k;
    }
    return tlv(out, 0x30, seq, len);
}

/* The signature algorithm of the certificates cert() makes. */
static const unsigned char alg_any[] = {0x06, 0x03, 0x2a, 0x03, 0x04};
static const unsigned char alg_sha1_rsa[] = {0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
                                             0x0d, 0x01, 0x01, 0x05, 0x05, 0x00};
static const unsigned char *alg = alg_any;
static size_t alg_len = sizeof(alg_any);

/* A certificate-shaped DER with this subject, `pad` more bytes in it. */
static size_t cert(unsigned char *out, const unsigned char *subj, size_t subj_len, size_t pad)
{
    static unsigned char tbs[12000], body[12000];
    static const unsigned char ver[] = {0x02, 0x01, 0x02}, serial[] = {0x01};
    static const unsigned char validity[] = {0x17, 0x01, 0x30, 0x17, 0x01, 0x30};
    size_t n = 0, k;

    n += tlv(tbs + n, 0xa0, ver, sizeof(ver));
    n += tlv(tbs + n, 0x02, serial, sizeof(serial));
    n += tlv(tbs + n, 0x30, alg, alg_len);
    memcpy(tbs + n, subj, subj_len); /* issuer: the same (self-signed) */
    n += subj_len;
    n += tlv(tbs + n, 0x30, validity, sizeof(validity));
    memcpy(tbs + n, subj, subj_len);
    n += subj_len;
    if (pad > 0) {
        static unsigned char zeros[10000];

        n += tlv(tbs + n, 0x04, zeros, pad);
    }
    k = tlv(body, 0x30, tbs, n);
    k += tlv(body + k, 0x30, alg, alg_len);
    return tlv(out, 0x30, body, k);
}

static size_t pem(char *out, const unsigned char *der, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i, col = 0;

    o += (size_t)sprintf(out, "-----BEGIN CERTIFICATE-----\n");
    for (i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)der[i] << 16;

        if (i + 1 < n)
            v |= (uint32_t)der[i + 1] << 8;
        if (i + 2 < n)
            v |= der[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
        if ((col += 4) == 64) {
            out[o++] = '\n';
            col = 0;
        }
    }
    o += (size_t)sprintf(out + o, "%s-----END CERTIFICATE-----\n", col ? "\n" : "");
    return o;
}

/* ---- what a scan hands on ---------------------------------------------- */

struct seen {
    unsigned n;
    char cn[400][32];
    int stop_at; /* return 7 at this one (1-based; 0: never) */
};

static int on_cert(void *arg, const unsigned char *der, size_t len)
{
    struct seen *s = arg;
    struct mote_roots_name subj;
    const unsigned char *p;

    assert_int_equal(mote_roots_subject(der, len, &subj), 0);
    /* the first attribute's value: SEQ SET SEQ OID(5) STR */
    p = subj.p + 2;
    p += 2 + 2 + 5;
    if (s->n < 400) {
        size_t l = p[1] < sizeof(s->cn[0]) ? p[1] : sizeof(s->cn[0]) - 1;

        memcpy(s->cn[s->n], p + 2, l);
        s->cn[s->n][l] = '\0';
    }
    s->n++;
    return s->stop_at != 0 && (int)s->n == s->stop_at ? 7 : 0;
}

static int scan_mem(const void *data, size_t len, const struct mote_roots_name *names,
                    unsigned n, struct seen *seen, struct mote_roots_stats *st)
{
    struct mote_roots_src src = {NULL, NULL, data, len};

    memset(seen, 0, sizeof(*seen));
    return mote_roots_scan(&src, names, n, &rb, on_cert, seen, st);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_names_compare_as_x509_does(void **state)
{
    (void)state;
    unsigned char a[300], b[300];
    const char *x[] = {"Mote Test CA"}, *xl[] = {"mote test ca"}, *y[] = {"Mote Test CB"};
    const char *two[] = {"O:mote", "Mote Test CA"}, *two_r[] = {"Mote Test CA", "O:mote"};
    size_t la = name(a, 0x0c, x, 1), lb;

    lb = name(b, 0x13, xl, 1); /* PrintableString, other case */
    assert_true(mote_roots_name_match(a, la, b, lb));
    assert_true(mote_roots_name_match(a, la, a, la));
    lb = name(b, 0x0c, y, 1);
    assert_false(mote_roots_name_match(a, la, b, lb));
    lb = name(b, 0x0c, two, 2);
    assert_false(mote_roots_name_match(a, la, b, lb));
    la = name(a, 0x0c, two_r, 2); /* the same attributes in another order */
    assert_false(mote_roots_name_match(a, la, b, lb));
    /* malformed: never a match (but the same bytes are) */
    assert_false(mote_roots_name_match(a, 3, b, lb));
    b[0] = 0x31;
    assert_false(mote_roots_name_match(a, la, b, lb));
}

static void test_subject_of_a_certificate(void **state)
{
    (void)state;
    unsigned char n[300], der[2000];
    const char *x[] = {"subject here"};
    struct mote_roots_name s;
    size_t ln = name(n, 0x0c, x, 1), ld = cert(der, n, ln, 0);

    assert_int_equal(mote_roots_subject(der, ld, &s), 0);
    assert_int_equal(s.len, ln);
    assert_memory_equal(s.p, n, ln);
    assert_int_equal(mote_roots_subject(der, ld - 1, &s), MOTE_ERR_BADMSG);
    assert_int_equal(mote_roots_subject(n, ln, &s), MOTE_ERR_BADMSG);
}

/* A root signed by itself with SHA-1 is renamed SHA-256 in both of its
 * algorithm identifiers, and nothing else changes; other certificates are
 * left alone. */
static void test_sha1_roots_renamed(void **state)
{
    unsigned char n[300], der[2000], before[2000];
    const char *x[] = {"Old Root"};
    size_t ln = name(n, 0x0c, x, 1), ld, i, changed = 0;

    (void)state;
    alg = alg_sha1_rsa;
    alg_len = sizeof(alg_sha1_rsa);
    ld = cert(der, n, ln, 0);
    alg = alg_any;
    alg_len = sizeof(alg_any);
    memcpy(before, der, ld);
    assert_int_equal(mote_roots_sha1_as_sha256(der, ld), 2);
    for (i = 0; i < ld; i++) {
        if (der[i] != before[i]) {
            assert_int_equal(before[i], 0x05);
            assert_int_equal(der[i], 0x0b);
            changed++;
        }
    }
    assert_int_equal(changed, 2);
    assert_int_equal(mote_roots_sha1_as_sha256(der, ld), 0); /* SHA-256 now */
    ld = cert(der, n, ln, 0);
    assert_int_equal(mote_roots_sha1_as_sha256(der, ld), 0);
    assert_int_equal(mote_roots_sha1_as_sha256(der, 5), 0);
}

/* Three certificates (A, B, a), text and another block between them. */
static size_t bundle(char *out, bool der_form, size_t *dlen)
{
    static unsigned char d[3][2000];
    const char *na[] = {"Alpha Root"}, *nb[] = {"Beta Root"}, *nc[] = {"ALPHA ROOT"};
    unsigned char n[300];
    size_t len[3], o = 0;
    unsigned i;

    len[0] = cert(d[0], n, name(n, 0x0c, na, 1), 0);
    len[1] = cert(d[1], n, name(n, 0x0c, nb, 1), 0);
    len[2] = cert(d[2], n, name(n, 0x13, nc, 1), 0);
    for (i = 0; i < 3; i++) {
        if (der_form) {
            memcpy(out + o, d[i], len[i]);
            o += len[i];
            continue;
        }
        o += (size_t)sprintf(out + o, "# root %u\r\n-----BEGIN X509 CRL-----\nAAAA\n"
                                      "-----END X509 CRL-----\n", i);
        o += pem(out + o, d[i], len[i]);
    }
    if (dlen != NULL)
        *dlen = o;
    return o;
}

static void test_pem_and_der_in_memory(void **state)
{
    (void)state;
    static char buf[20000];
    static struct seen seen;
    unsigned char n[300];
    const char *na[] = {"alpha root"};
    struct mote_roots_name want;
    struct mote_roots_stats st;
    int form;

    want.p = n;
    want.len = name(n, 0x0c, na, 1);
    for (form = 0; form < 2; form++) {
        size_t len = bundle(buf, form == 1, NULL);

        assert_int_equal(scan_mem(buf, len, &want, 1, &seen, &st), 0);
        assert_int_equal(st.certs, 3);
        assert_int_equal(st.matched, 2);
        assert_int_equal(st.skipped, 0);
        assert_int_equal(seen.n, 2);
        assert_string_equal(seen.cn[0], "Alpha Root");
        assert_string_equal(seen.cn[1], "ALPHA ROOT");
        /* no names: every certificate */
        assert_int_equal(scan_mem(buf, len, NULL, 0, &seen, &st), 0);
        assert_int_equal(seen.n, 3);
        assert_string_equal(seen.cn[1], "Beta Root");
        /* the callback ends the scan with its value */
        memset(&seen, 0, sizeof(seen));
        seen.stop_at = 2;
        {
            struct mote_roots_src src = {NULL, NULL, (const unsigned char *)buf, len};

            assert_int_equal(mote_roots_scan(&src, NULL, 0, &rb, on_cert, &seen, &st), 7);
        }
        assert_int_equal(seen.n, 2);
    }
}

static void test_oversized_and_broken_entries_are_skipped(void **state)
{
    (void)state;
    static char buf[40000];
    static unsigned char der[12000];
    static struct seen seen;
    unsigned char n[300];
    const char *big[] = {"Big Root"}, *ok[] = {"After"};
    struct mote_roots_stats st;
    size_t o = 0, l;

    l = cert(der, n, name(n, 0x0c, big, 1), MOTE_TLS_CERT_MAX); /* over the limit */
    o += pem(buf + o, der, l);
    o += (size_t)sprintf(buf + o, "-----BEGIN CERTIFICATE-----\nMII*broken\n"
                                  "-----END CERTIFICATE-----\n");
    l = cert(der, n, name(n, 0x0c, ok, 1), 0);
    o += pem(buf + o, der, l);
    assert_int_equal(scan_mem(buf, o, NULL, 0, &seen, &st), 0);
    assert_int_equal(st.certs, 3);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.cn[0], "After");

    /* DER: the big one skipped, the next one found, a cut tail counted */
    o = cert((unsigned char *)buf, n, name(n, 0x0c, big, 1), MOTE_TLS_CERT_MAX);
    o += cert((unsigned char *)buf + o, n, name(n, 0x0c, ok, 1), 0);
    assert_int_equal(scan_mem(buf, o - 10, NULL, 0, &seen, &st), 0);
    assert_int_equal(seen.n, 0);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(scan_mem(buf, o, NULL, 0, &seen, &st), 0);
    assert_int_equal(seen.n, 1);
    assert_int_equal(st.skipped, 1);

    /* neither PEM nor DER: nothing, no crash */
    assert_int_equal(scan_mem("hello, world\n", 13, NULL, 0, &seen, &st), 0);
    assert_int_equal(st.certs, 0);
    assert_int_equal(scan_mem("", 0, NULL, 0, &seen, &st), 0);
    assert_int_equal(st.certs, 0);
}

/* 300 roots in a file, read MOTE_TLS_READ_CHUNK bytes at a time: blocks
 * and markers cut at every kind of place; the two asked for are found. */
static void test_a_file_read_in_chunks(void **state)
{
    (void)state;
    static char buf[400000];
    static unsigned char der[2000];
    static struct seen seen;
    unsigned char n[300], w1[300], w2[300];
    struct mote_roots_name want[2];
    struct mote_roots_stats st;
    char path[300], cn[32];
    const char *parts[] = {cn};
    size_t o = 0;
    int form;

    for (form = 0; form < 2; form++) {
        struct mote_roots_src src = {&pp.port, path, NULL, 0};
        FILE *f;
        unsigned i;

        o = 0;
        for (i = 0; i < 300; i++) {
            size_t l;

            snprintf(cn, sizeof(cn), "Root number %u", i);
            l = cert(der, n, name(n, 0x0c, parts, 1), i % 7 * 13);
            if (form == 0) {
                o += (size_t)sprintf(buf + o, "%.*s", (int)(i % 5), "#####");
                o += pem(buf + o, der, l);
            } else {
                memcpy(buf + o, der, l);
                o += l;
            }
        }
        snprintf(path, sizeof(path), "%s/bundle.%d", dir, form);
        f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, o, f), o);
        fclose(f);
        assert_true(o > 3 * MOTE_TLS_READ_CHUNK); /* many chunk boundaries */
        snprintf(cn, sizeof(cn), "Root number 137");
        want[0].p = w1;
        want[0].len = name(w1, 0x0c, parts, 1);
        snprintf(cn, sizeof(cn), "root NUMBER 299");
        want[1].p = w2;
        want[1].len = name(w2, 0x13, parts, 1);
        memset(&seen, 0, sizeof(seen));
        assert_int_equal(mote_roots_scan(&src, want, 2, &rb, on_cert, &seen, &st), 0);
        assert_int_equal(st.certs, 300);
        assert_int_equal(st.skipped, 0);
        assert_int_equal(seen.n, 2);
        assert_string_equal(seen.cn[0], "Root number 137");
        assert_string_equal(seen.cn[1], "Root number 299");
        memset(&seen, 0, sizeof(seen));
        assert_int_equal(mote_roots_scan(&src, NULL, 0, &rb, on_cert, &seen, &st), 0);
        assert_int_equal(seen.n, 300);
        assert_string_equal(seen.cn[211], "Root number 211");
    }
}

static void test_file_errors(void **state)
{
    (void)state;
    struct mote_port none;
    char path[300];
    struct mote_roots_src src = {&pp.port, path, NULL, 0};

    snprintf(path, sizeof(path), "%s/missing.pem", dir);
    assert_int_equal(mote_roots_scan(&src, NULL, 0, &rb, on_cert, NULL, NULL), MOTE_ERR_NOENT);
    assert_int_equal(mote_roots_scan(&(struct mote_roots_src){&pp.port, dir, NULL, 0}, NULL, 0,
                                     &rb, on_cert, NULL, NULL),
                     MOTE_ERR_ISDIR);
    memset(&none, 0, sizeof(none));
    none.size = sizeof(none);
    src.port = &none;
    assert_int_equal(mote_roots_scan(&src, NULL, 0, &rb, on_cert, NULL, NULL), MOTE_ERR_NOSYS);
}

/* Debian's bundle: every root found, each as mbedTLS parses it, the
 * subject where mbedTLS sees it. */
static int parse_one(void *arg, const unsigned char *der, size_t len)
{
    mbedtls_x509_crt crt;
    struct mote_roots_name s;
    unsigned *n = arg;

    mbedtls_x509_crt_init(&crt);
#if !defined(MBEDTLS_SHA1_C)
    /* the tiny configuration (check-cross): SHA-1 roots under SHA-256's name */
    if (mbedtls_x509_crt_parse_der(&crt, der, len) != 0) {
        static unsigned char copy[MOTE_TLS_CERT_MAX];

        memcpy(copy, der, len);
        assert_int_equal(mote_roots_sha1_as_sha256(copy, len), 2);
        assert_int_equal(mbedtls_x509_crt_parse_der(&crt, copy, len), 0);
    }
#else
    assert_int_equal(mbedtls_x509_crt_parse_der(&crt, der, len), 0);
#endif
    assert_int_equal(mote_roots_subject(der, len, &s), 0);
    assert_int_equal(s.len, crt.subject_raw.len);
    assert_memory_equal(s.p, crt.subject_raw.p, s.len);
    /* every root there is self-signed: its issuer names its subject */
    assert_true(mote_roots_name_match(crt.issuer_raw.p, crt.issuer_raw.len, s.p, s.len));
    mbedtls_x509_crt_free(&crt);
    (*n)++;
    return 0;
}

static void test_the_system_bundle(void **state)
{
    (void)state;
    static const char path[] = "/etc/ssl/certs/ca-certificates.crt";
    struct mote_roots_src src = {&pp.port, path, NULL, 0};
    struct mote_roots_stats st;
    unsigned n = 0, markers = 0;
    char line[512];
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        printf("skipped: no %s\n", path);
        skip();
    }
    while (fgets(line, sizeof(line), f) != NULL)
        markers += strncmp(line, "-----BEGIN CERTIFICATE-----", 27) == 0;
    fclose(f);
    assert_int_equal(mote_roots_scan(&src, NULL, 0, &rb, parse_one, &n, &st), 0);
    assert_int_equal(n, markers);
    assert_int_equal(st.certs, markers);
    assert_int_equal(st.skipped, 0);
    assert_true(markers > 100);
}

static int setup(void **state)
{
    (void)state;
#if defined(MBEDTLS_MEMORY_BUFFER_ALLOC_C)
    {
        static unsigned char heap[65536];

        mbedtls_memory_buffer_alloc_init(heap, sizeof(heap));
    }
#endif
    if (mote_posix_init(&pp) < 0)
        return -1;
    snprintf(dir, sizeof(dir), "/tmp/mote-roots-XXXXXX");
    return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        return -1;
    mote_posix_deinit(&pp);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_compare_as_x509_does),
        cmocka_unit_test(test_subject_of_a_certificate),
        cmocka_unit_test(test_sha1_roots_renamed),
        cmocka_unit_test(test_pem_and_der_in_memory),
        cmocka_unit_test(test_oversized_and_broken_entries_are_skipped),
        cmocka_unit_test(test_a_file_read_in_chunks),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_the_system_bundle),
    };

    return cmocka_run_group_tests_name("tls_roots", tests, setup, teardown);
}
