/*
 * tls_sessions.c - TLS sessions kept for resumption: in memory for the
 * process, and in the port's storage for the next one (tls_sessions.h).
 *
 * A file tls/HASH (HASH: 16 hex digits of the key) holds one session:
 *
 *   "MOTETLS1"  the key (32 bytes)  born (8)  issued (8)  lifetime (4)
 *   length (4)  the session as mbedtls_ssl_session_save wrote it
 *   SHA-256 of all the above (32)
 *
 * integers little-endian; born is the wall-clock second of the full
 * handshake, issued that of the ticket, lifetime the ticket's hint in
 * seconds (0: none). mbedTLS's own form starts with its version and
 * configuration, so a session saved by another build is refused by it.
 *
 * A file is written behind (the port's st_write_behind where it has it:
 * the sync and rename off the caller's thread, so a loop step never
 * waits for the disk), and each write sweeps tls/: files older than
 * MOTE_TLS_SESSION_MAX_S go, and of the others only the
 * MOTE_TLS_SESSION_FILES most recently written stay (temporaries a crash
 * left go after a minute).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <mbedtls/version.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_time.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_port.h"
#include "tls_sessions.h"

#if MBEDTLS_VERSION_MAJOR >= 3
#define SESSION_FIELD(s, f) ((s)->MBEDTLS_PRIVATE(f))
#else
#define SESSION_FIELD(s, f) ((s)->f)
#endif

#define MAGIC "MOTETLS1"
#define HEAD (8 + 32 + 8 + 8 + 4 + 4)
#define FILE_MAX (HEAD + MOTE_TLS_SESSION_BYTES + 32)

/* What a resumed session stands for besides the server and its roots:
 * the checks its full handshake passed (a build that checks more does not
 * take sessions another one verified). */
#define POLICY "verified: chain to a root, subjectAltName name, dates"

int mote_tls_key_make(struct mote_tls_key *k, const char *host, uint16_t port, const char *alpn,
                      const unsigned char trust[32])
{
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    unsigned char buf[20 + 256 + 2 + 256 + sizeof(POLICY) + 32];
    size_t n = 0, hl = strlen(host), al = alpn != NULL ? strlen(alpn) : 0;

    if (md == NULL)
        return MOTE_ERR_NOSYS;
    if (hl > 255 || al > 255)
        return MOTE_ERR_TOO_LARGE;
    memcpy(buf, "mote tls session 2", 19); /* (NULs included: separators) */
    n = 19;
    memcpy(buf + n, host, hl + 1);
    n += hl + 1;
    buf[n++] = (unsigned char)(port >> 8);
    buf[n++] = (unsigned char)port;
    memcpy(buf + n, alpn != NULL ? alpn : "", al + 1);
    n += al + 1;
    memcpy(buf + n, POLICY, sizeof(POLICY));
    n += sizeof(POLICY);
    memcpy(buf + n, trust, 32);
    n += 32;
    return mbedtls_md(md, buf, n, k->d) == 0 ? 0 : MOTE_ERR_NOSYS;
}

#if MOTE_TLS_SESSION_CACHE > 0 && defined(MBEDTLS_HAVE_TIME)

struct entry {
    bool used;
    unsigned char key[32];
    int64_t born, issued;
    uint32_t lifetime;
    uint32_t last_use;
    size_t len;
    unsigned char blob[MOTE_TLS_SESSION_BYTES];
};

static struct entry cache[MOTE_TLS_SESSION_CACHE];
static uint32_t use_count;
static unsigned char filebuf[FILE_MAX + 1]; /* (+1: a longer file is seen as one) */

static void put64(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void file_name(const struct mote_tls_key *k, char *out)
{
    static const char hex[] = "0123456789abcdef";
    int i;

    memcpy(out, "tls/", 4);
    for (i = 0; i < 8; i++) {
        out[4 + 2 * i] = hex[k->d[i] >> 4];
        out[5 + 2 * i] = hex[k->d[i] & 15];
    }
    out[20] = '\0';
}

static bool has_storage(const struct mote_port *p)
{
    return MOTE_PORT_HAS(p, st_open) && MOTE_PORT_HAS(p, st_read) && MOTE_PORT_HAS(p, st_close) &&
           MOTE_PORT_HAS(p, st_write_atomic) && MOTE_PORT_HAS(p, st_mkdir) &&
           MOTE_PORT_HAS(p, st_remove);
}

static bool fresh(const struct entry *e, int64_t now, uint32_t max_s)
{
    int64_t cap = MOTE_TLS_SESSION_MAX_S;

    if (max_s > 0 && (int64_t)max_s < cap)
        cap = max_s;
    if (now < e->born || now < e->issued) /* the clock went back: trust nothing */
        return false;
    if (now - e->born > cap)
        return false;
    return e->lifetime == 0 || now - e->issued <= (int64_t)e->lifetime;
}

static struct entry *find(const struct mote_tls_key *k)
{
    unsigned i;

    for (i = 0; i < MOTE_TLS_SESSION_CACHE; i++) {
        if (cache[i].used && memcmp(cache[i].key, k->d, 32) == 0)
            return &cache[i];
    }
    return NULL;
}

/* A slot for key `k`: its own, a free one, or the least recently used. */
static struct entry *slot(const struct mote_tls_key *k)
{
    struct entry *e = find(k), *old = &cache[0];
    unsigned i;

    for (i = 0; e == NULL && i < MOTE_TLS_SESSION_CACHE; i++) {
        if (!cache[i].used)
            e = &cache[i];
        else if ((int32_t)(cache[i].last_use - old->last_use) < 0)
            old = &cache[i];
    }
    if (e == NULL)
        e = old;
    if (e->used && memcmp(e->key, k->d, 32) != 0)
        mbedtls_platform_zeroize(e, sizeof(*e));
    return e;
}

static int checksum(const unsigned char *p, size_t n, unsigned char out[32])
{
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);

    return md != NULL && mbedtls_md(md, p, n, out) == 0 ? 0 : MOTE_ERR_NOSYS;
}

/* Reads tls/HASH into a memory slot if it is whole, this key's and fresh
 * (the storage refused it already if it is not this user's alone). */
static struct entry *load_file(const struct mote_port *p, const struct mote_tls_key *k,
                               int64_t now, uint32_t max_s)
{
    char name[24];
    unsigned char sum[32];
    struct entry tmp, *e = NULL;
    size_t n = 0, len;
    int h, rc;

    if (!has_storage(p))
        return NULL;
    file_name(k, name);
    h = p->st_open(p->ctx, name, MOTE_ST_READ | MOTE_ST_PRIVATE);
    if (h < 0)
        return NULL; /* none, or not this user's alone: passed over */
    while (n < sizeof(filebuf) &&
           (rc = p->st_read(p->ctx, h, n, filebuf + n, sizeof(filebuf) - n)) > 0)
        n += (size_t)rc;
    p->st_close(p->ctx, h);
    len = n >= HEAD ? get32(filebuf + HEAD - 4) : 0;
    memset(&tmp, 0, offsetof(struct entry, blob));
    if (n >= HEAD + 32 && memcmp(filebuf, MAGIC, 8) == 0 && memcmp(filebuf + 8, k->d, 32) == 0 &&
        len > 0 && len <= MOTE_TLS_SESSION_BYTES && n == HEAD + len + 32 &&
        checksum(filebuf, HEAD + len, sum) == 0 && memcmp(sum, filebuf + HEAD + len, 32) == 0) {
        tmp.born = (int64_t)get64(filebuf + 40);
        tmp.issued = (int64_t)get64(filebuf + 48);
        tmp.lifetime = get32(filebuf + 56);
        if (fresh(&tmp, now, max_s)) {
            e = slot(k);
            memcpy(e, &tmp, offsetof(struct entry, blob));
            e->used = true;
            memcpy(e->key, k->d, 32);
            e->len = len;
            memcpy(e->blob, filebuf + HEAD, len);
        }
    } /* else damaged, another's or stale: passed over */
    mbedtls_platform_zeroize(filebuf, sizeof(filebuf));
    return e;
}

struct produce {
    const unsigned char *p;
    size_t len, off;
};

static int produce(void *arg, char *buf, size_t cap)
{
    struct produce *s = arg;
    size_t n = s->len - s->off < cap ? s->len - s->off : cap;

    memcpy(buf, s->p + s->off, n);
    s->off += n;
    return (int)n;
}

/* ---- the sweep of tls/ ---- */

#define SWEEP_GONE 16 /* files removed per sweep at most (the next one goes on) */

struct sweep {
    const struct mote_port *p;
    const char *self;        /* the file being written: not counted */
    int64_t now;
    unsigned n, ngone;
    struct {
        int64_t t;
        char name[24];
    } keep[MOTE_TLS_SESSION_FILES];
    char gone[SWEEP_GONE][40];
};

static bool is_hex_name(const char *name)
{
    size_t i;

    for (i = 0; i < 16; i++) {
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    }
    return name[16] == '\0';
}

static void sweep_gone(struct sweep *w, const char *name)
{
    memcpy(w->gone[w->ngone], "tls/", 4);
    memcpy(w->gone[w->ngone] + 4, name, strlen(name) + 1);
    w->ngone++;
}

static int sweep_one(void *arg, const char *name)
{
    struct sweep *w = arg;
    char path[40];
    int64_t t;
    size_t len = strlen(name);
    unsigned i, old = 0;
    bool temp = len > 10 && len < 32 && memcmp(name, ".mote-", 6) == 0 &&
                memcmp(name + len - 4, ".tmp", 4) == 0;

    if ((!temp && !is_hex_name(name)) || strcmp(name, w->self + 4) == 0)
        return 0; /* not ours, or the one being written */
    memcpy(path, "tls/", 4);
    memcpy(path + 4, name, len + 1);
    if (w->p->st_time(w->p->ctx, path, &t) < 0)
        return 0;
    if (temp) {
        if (w->now - t > 60)
            sweep_gone(w, name); /* a crash's leftover */
    } else if (w->now - t > MOTE_TLS_SESSION_MAX_S || t > w->now + 60) {
        sweep_gone(w, name); /* stale, or from a clock that was wrong */
    } else if ((size_t)w->n + 1 < MOTE_TLS_SESSION_FILES) {
        w->keep[w->n].t = t;
        memcpy(w->keep[w->n++].name, name, 17);
    } else {
        for (i = 0; i < w->n; i++) {
            if (w->keep[i].t < w->keep[old].t)
                old = i;
        }
        if (w->n > 0 && t > w->keep[old].t) {
            sweep_gone(w, w->keep[old].name); /* the oldest kept so far goes */
            w->keep[old].t = t;
            memcpy(w->keep[old].name, name, 17);
        } else {
            sweep_gone(w, name);
        }
    }
    return w->ngone == SWEEP_GONE; /* (stops the listing when full) */
}

/* Removes from tls/ what is stale and what is over MOTE_TLS_SESSION_FILES
 * with the file `self` (being written). Bounded work: one listing. */
static void sweep(const struct mote_port *p, const char *self, int64_t now)
{
    static struct sweep w;
    unsigned i;

    if (!MOTE_PORT_HAS(p, st_list) || !MOTE_PORT_HAS(p, st_time))
        return;
    memset(&w, 0, sizeof(w));
    w.p = p;
    w.self = self;
    w.now = now;
    (void)p->st_list(p->ctx, "tls", sweep_one, &w);
    for (i = 0; i < w.ngone; i++)
        (void)p->st_remove(p->ctx, w.gone[i]);
}

static void save_file(const struct mote_port *p, const struct entry *e, int64_t now)
{
    struct mote_tls_key k;
    struct produce src = {filebuf, HEAD + e->len + 32, 0};
    char name[24];

    if (!has_storage(p))
        return;
    memcpy(k.d, e->key, 32);
    file_name(&k, name);
    memcpy(filebuf, MAGIC, 8);
    memcpy(filebuf + 8, e->key, 32);
    put64(filebuf + 40, (uint64_t)e->born);
    put64(filebuf + 48, (uint64_t)e->issued);
    put32(filebuf + 56, e->lifetime);
    put32(filebuf + 60, (uint32_t)e->len);
    memcpy(filebuf + HEAD, e->blob, e->len);
    if (checksum(filebuf, HEAD + e->len, filebuf + HEAD + e->len) == 0) {
        (void)p->st_mkdir(p->ctx, "tls");
        sweep(p, name, now);
        if (MOTE_PORT_HAS(p, st_write_behind))
            (void)p->st_write_behind(p->ctx, name, filebuf, src.len);
        else
            (void)p->st_write_atomic(p->ctx, name, produce, &src);
    }
    mbedtls_platform_zeroize(filebuf, sizeof(filebuf));
}

int mote_tls_sessions_get(const struct mote_port *port, const struct mote_tls_key *k,
                          unsigned resume, uint32_t max_s, mbedtls_ssl_session *out)
{
    int64_t now = (int64_t)mbedtls_time(NULL);
    struct entry *e;

    if (resume == MOTE_TLS_RESUME_OFF)
        return MOTE_ERR_NOENT;
    e = find(k);
    if (e != NULL && !fresh(e, now, max_s)) {
        mote_tls_sessions_forget(port, k, resume);
        return MOTE_ERR_NOENT;
    }
    if (e == NULL && resume == MOTE_TLS_RESUME_DISK)
        e = load_file(port, k, now, max_s);
    if (e == NULL)
        return MOTE_ERR_NOENT;
    e->last_use = ++use_count;
    if (mbedtls_ssl_session_load(out, e->blob, e->len) != 0) {
        mbedtls_ssl_session_free(out);
        mbedtls_ssl_session_init(out);
        mote_tls_sessions_forget(port, k, resume);
        return MOTE_ERR_NOENT;
    }
    return 0;
}

void mote_tls_sessions_put(const struct mote_port *port, const struct mote_tls_key *k,
                           unsigned resume, const mbedtls_ssl_session *s, bool resumed)
{
    static unsigned char blob[MOTE_TLS_SESSION_BYTES];
    int64_t now = (int64_t)mbedtls_time(NULL);
    struct entry *e;
    size_t len = 0;

    if (resume == MOTE_TLS_RESUME_OFF)
        return;
    if (mbedtls_ssl_session_save(s, blob, sizeof(blob), &len) != 0 || len == 0) {
        mote_tls_sessions_forget(port, k, resume); /* too large to keep */
        return;
    }
    e = find(k);
    if (resumed && e != NULL && e->len == len && memcmp(e->blob, blob, len) == 0) {
        e->last_use = ++use_count; /* the same session, the same ticket */
        mbedtls_platform_zeroize(blob, len);
        return;
    }
    if (!resumed || e == NULL) {
        e = slot(k);
        e->born = now;
    }
    e->used = true;
    memcpy(e->key, k->d, 32);
    e->issued = now;
    e->lifetime = 0;
#if defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_SSL_CLI_C)
    if (SESSION_FIELD(s, ticket_len) > 0)
        e->lifetime = SESSION_FIELD(s, ticket_lifetime);
#endif
    e->last_use = ++use_count;
    e->len = len;
    memcpy(e->blob, blob, len);
    mbedtls_platform_zeroize(blob, len);
    if (resume == MOTE_TLS_RESUME_DISK)
        save_file(port, e, now);
}

void mote_tls_sessions_forget(const struct mote_port *port, const struct mote_tls_key *k,
                              unsigned resume)
{
    struct entry *e = find(k);
    char name[24];

    if (e != NULL)
        mbedtls_platform_zeroize(e, sizeof(*e));
    if (resume == MOTE_TLS_RESUME_DISK && has_storage(port)) {
        file_name(k, name);
        (void)port->st_remove(port->ctx, name);
    }
}

#else /* no cache (MOTE_TLS_SESSION_CACHE 0, or an mbedTLS without a clock) */

int mote_tls_sessions_get(const struct mote_port *port, const struct mote_tls_key *k,
                          unsigned resume, uint32_t max_s, mbedtls_ssl_session *out)
{
    (void)port, (void)k, (void)resume, (void)max_s, (void)out;
    return MOTE_ERR_NOENT;
}

void mote_tls_sessions_put(const struct mote_port *port, const struct mote_tls_key *k,
                           unsigned resume, const mbedtls_ssl_session *s, bool resumed)
{
    (void)port, (void)k, (void)resume, (void)s, (void)resumed;
}

void mote_tls_sessions_forget(const struct mote_port *port, const struct mote_tls_key *k,
                              unsigned resume)
{
    (void)port, (void)k, (void)resume;
}

#endif
