/* tport.c - the deterministic test port (see mote_tport.h). */
#include "mote_tport.h"

#include <stdlib.h>
#include <string.h>

#include "mote/mote_err.h"

/* ---- clock, wait, signals, random ---- */

static uint32_t tp_now(void *ctx)
{
    return ((struct mote_tport *)ctx)->now;
}

/* The real-time clock runs with the simulated one, from where a test set it. */
static int tp_clock_real(void *ctx, int64_t *ms)
{
    struct mote_tport *tp = ctx;

    *ms = tp->real_base + (int64_t)(uint32_t)(tp->now - tp->real_at);
    return tp->real_state;
}

void mote_tport_set_real(struct mote_tport *tp, int64_t ms, int state)
{
    tp->real_base = ms;
    tp->real_at = tp->now;
    tp->real_state = state;
}

static int tp_wait(void *ctx, struct mote_pollfd *fds, unsigned nfds, int32_t timeout_ms)
{
    struct mote_tport *tp = ctx;
    unsigned i, s;
    int ready = 0;

    tp->waits++;
    if (tp->on_wait != NULL)
        tp->on_wait(tp, timeout_ms, tp->on_wait_arg);
    for (i = 0; i < nfds; i++) {
        fds[i].revents = 0;
        if (fds[i].fd >= 0 && fds[i].fd < MOTE_TPORT_FDS) {
            uint16_t r = tp->fd_ready[fds[i].fd];

            fds[i].revents = (uint16_t)(r & (fds[i].events | MOTE_POLL_ERR));
            if (fds[i].revents != 0)
                ready++;
        }
    }
    if (ready > 0)
        return ready;
    for (s = 0; s < MOTE_SIG_COUNT; s++) {
        if (tp->sig[s] != 0)
            return 0;
    }
    if (timeout_ms > 0)
        tp->now += (uint32_t)timeout_ms;
    return 0;
}


static int tp_signals_take(void *ctx, uint8_t counts[MOTE_SIG_COUNT])
{
    struct mote_tport *tp = ctx;
    unsigned s;
    int total = 0;

    for (s = 0; s < MOTE_SIG_COUNT; s++) {
        counts[s] = tp->sig[s];
        total += tp->sig[s];
        tp->sig[s] = 0;
    }
    return total;
}

static int tp_random(void *ctx, void *buf, size_t len)
{
    struct mote_tport *tp = ctx;
    unsigned char *p = buf;

    while (len-- > 0) {
        tp->rng ^= tp->rng << 13;
        tp->rng ^= tp->rng >> 17;
        tp->rng ^= tp->rng << 5;
        *p++ = (unsigned char)tp->rng;
    }
    return 0;
}

/* Secrets: the same stream once "seeded"; before (secret_not_seeded, as
 * at early boot) MOTE_ERR_AGAIN with nothing written. */
static int tp_random_secret(void *ctx, void *buf, size_t len, int *wait_fd)
{
    struct mote_tport *tp = ctx;

    *wait_fd = -1;
    if (tp->secret_not_seeded) {
        memset(buf, 0, len);
        return MOTE_ERR_AGAIN;
    }
    return tp_random(ctx, buf, len);
}

/* ---- storage ---- */

static int fault(struct mote_tport *tp, unsigned kind)
{
    tp->st_calls++;
    if (tp->power_off)
        return MOTE_ERR_IO;
    if (tp->fail_at == 0 || (tp->fail_mask & kind) == 0)
        return 0;
    tp->fail_seen++;
    if (tp->fail_seen < tp->fail_at)
        return 0;
    if (tp->fail_seen > tp->fail_at && !tp->fail_sticky)
        return 0;
    return tp->fail_err == 0 ? 1 : tp->fail_err;
}

/* Counts a write; returns true if the power dies during it. */
static bool write_cuts(struct mote_tport *tp)
{
    tp->st_writes++;
    if (tp->cut_at != 0 && tp->st_writes >= tp->cut_at) {
        tp->power_off = true;
        return true;
    }
    return false;
}

static int valid_name(const char *name)
{
    const char *p = name;

    if (strlen(name) >= MOTE_STORAGE_NAME_MAX)
        return MOTE_ERR_NAMETOOLONG;
    if (name[0] == '/')
        return MOTE_ERR_INVAL;
    while ((p = strstr(p, "..")) != NULL) {
        if ((p == name || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return MOTE_ERR_INVAL;
        p += 2;
    }
    return 0;
}

static struct mote_tport_file *find(struct mote_tport *tp, const char *name)
{
    unsigned i;

    for (i = 0; i < MOTE_TPORT_FILES; i++) {
        if (tp->files[i].used && strcmp(tp->files[i].name, name) == 0)
            return &tp->files[i];
    }
    return NULL;
}

static struct mote_tport_file *create(struct mote_tport *tp, const char *name, bool dir)
{
    unsigned i;

    for (i = 0; i < MOTE_TPORT_FILES; i++) {
        struct mote_tport_file *f = &tp->files[i];

        if (!f->used) {
            memset(f, 0, sizeof(*f));
            f->used = true;
            f->is_dir = dir;
            strcpy(f->name, name);
            return f;
        }
    }
    return NULL;
}

static bool parent_exists(struct mote_tport *tp, const char *name)
{
    char dir[MOTE_STORAGE_NAME_MAX];
    const char *slash = strrchr(name, '/');
    struct mote_tport_file *f;

    if (slash == NULL)
        return true;
    memcpy(dir, name, (size_t)(slash - name));
    dir[slash - name] = '\0';
    f = find(tp, dir);
    return f != NULL && f->is_dir;
}

static int grow(struct mote_tport_file *f, size_t need)
{
    unsigned char *d;
    size_t cap = f->cap == 0 ? 256 : f->cap;

    if (need <= f->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    d = realloc(f->data, cap);
    if (d == NULL)
        return MOTE_ERR_NOMEM;
    f->data = d;
    f->cap = cap;
    return 0;
}

static struct mote_tport_file *handle_file(struct mote_tport *tp, int h)
{
    if (h < 0 || h >= MOTE_TPORT_HANDLES || tp->handles[h] == 0)
        return NULL;
    return &tp->files[tp->handles[h] - 1];
}

static int tp_open(void *ctx, const char *name, unsigned flags)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f;
    int rc = fault(tp, MOTE_TP_OPEN);
    int h;

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if ((rc = valid_name(name)) < 0)
        return rc;
    f = find(tp, name);
    if (f != NULL && f->is_dir)
        return MOTE_ERR_ISDIR;
    if (f == NULL) {
        if (!(flags & MOTE_ST_CREATE))
            return MOTE_ERR_NOENT;
        if (!parent_exists(tp, name))
            return MOTE_ERR_NOENT;
        f = create(tp, name, false);
        if (f == NULL)
            return MOTE_ERR_NOSPC;
    }
    for (h = 0; h < MOTE_TPORT_HANDLES; h++) {
        if (tp->handles[h] == 0) {
            tp->handles[h] = (int)(f - tp->files) + 1;
            return h;
        }
    }
    return MOTE_ERR_FULL;
}

static int tp_read(void *ctx, int h, uint64_t offset, void *buf, size_t len)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f = handle_file(tp, h);
    int rc = fault(tp, MOTE_TP_READ);

    tp->st_reads++;
    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (f == NULL)
        return MOTE_ERR_BADF;
    if (offset >= f->len)
        return 0;
    if (len > f->len - offset)
        len = (size_t)(f->len - offset);
    if (len > 0x7FFFFFFF)
        len = 0x7FFFFFFF;
    memcpy(buf, f->data + offset, len);
    return (int)len;
}

static int tp_append(void *ctx, int h, const void *buf, size_t len)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f = handle_file(tp, h);
    int rc = fault(tp, MOTE_TP_APPEND);
    size_t n = len;

    if (rc < 0)
        return rc;
    if (f == NULL)
        return MOTE_ERR_BADF;
    if (rc > 0)
        n = len / 2; /* a short write */
    if (write_cuts(tp)) {
        /* The write is in flight when the power dies: half may land. */
        n = len / 2;
        if (grow(f, f->len + n) == 0) {
            memcpy(f->data + f->len, buf, n);
            f->len += n;
        }
        return MOTE_ERR_IO;
    }
    if (grow(f, f->len + n) < 0)
        return MOTE_ERR_NOSPC;
    memcpy(f->data + f->len, buf, n);
    f->len += n;
    return (int)n;
}

static int tp_sync(void *ctx, int h)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f = handle_file(tp, h);
    int rc = fault(tp, MOTE_TP_SYNC);

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (f == NULL)
        return MOTE_ERR_BADF;
    f->synced = f->len;
    return 0;
}

static int64_t tp_size(void *ctx, int h)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f = handle_file(tp, h);
    int rc = fault(tp, MOTE_TP_SIZE);

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (f == NULL)
        return MOTE_ERR_BADF;
    return (int64_t)f->len;
}

static int tp_truncate(void *ctx, int h, uint64_t size)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f = handle_file(tp, h);
    int rc = fault(tp, MOTE_TP_TRUNCATE);

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (f == NULL)
        return MOTE_ERR_BADF;
    if (size > f->len) {
        if (grow(f, (size_t)size) < 0)
            return MOTE_ERR_NOSPC;
        memset(f->data + f->len, 0, (size_t)size - f->len);
    }
    f->len = (size_t)size;
    f->synced = f->len;
    return 0;
}

static void tp_close(void *ctx, int h)
{
    struct mote_tport *tp = ctx;

    if (h >= 0 && h < MOTE_TPORT_HANDLES)
        tp->handles[h] = 0;
}

/* st_write_atomic, or st_create (`fresh`: only where nothing is). */
static int put_whole(void *ctx, const char *name, mote_produce_fn produce, void *arg, bool fresh)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file tmp, *f;
    char buf[512];
    int rc = fault(tp, MOTE_TP_ATOMIC);

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if ((rc = valid_name(name)) < 0)
        return rc;
    if (!parent_exists(tp, name))
        return MOTE_ERR_NOENT;
    memset(&tmp, 0, sizeof(tmp));
    for (;;) {
        int n = produce(arg, buf, sizeof(buf));

        if (n < 0) {
            free(tmp.data);
            return n;
        }
        if (n == 0)
            break;
        if (grow(&tmp, tmp.len + (size_t)n) < 0) {
            free(tmp.data);
            return MOTE_ERR_NOSPC;
        }
        memcpy(tmp.data + tmp.len, buf, (size_t)n);
        tmp.len += (size_t)n;
    }
    if (write_cuts(tp)) {
        free(tmp.data); /* the rename never happened */
        return MOTE_ERR_IO;
    }
    f = find(tp, name);
    if (f != NULL && (f->is_dir || fresh)) {
        free(tmp.data);
        return fresh ? MOTE_ERR_EXIST : MOTE_ERR_ISDIR;
    }
    if (f == NULL && (f = create(tp, name, false)) == NULL) {
        free(tmp.data);
        return MOTE_ERR_NOSPC;
    }
    free(f->data);
    f->data = tmp.data;
    f->len = tmp.len;
    f->cap = tmp.cap;
    f->synced = tmp.len;
    return 0;
}

static int tp_write_atomic(void *ctx, const char *name, mote_produce_fn produce, void *arg)
{
    return put_whole(ctx, name, produce, arg, false);
}

static int tp_create(void *ctx, const char *name, mote_produce_fn produce, void *arg)
{
    return put_whole(ctx, name, produce, arg, true);
}

static int tp_list(void *ctx, const char *dir, mote_list_fn fn, void *arg)
{
    struct mote_tport *tp = ctx;
    size_t dl = strlen(dir);
    unsigned i;
    int rc = fault(tp, MOTE_TP_LIST);

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (dl > 0) {
        struct mote_tport_file *d = find(tp, dir);

        if (d == NULL)
            return MOTE_ERR_NOENT;
        if (!d->is_dir)
            return MOTE_ERR_NOTDIR;
    }
    for (i = 0; i < MOTE_TPORT_FILES; i++) {
        const struct mote_tport_file *f = &tp->files[i];
        const char *rest;

        if (!f->used)
            continue;
        if (dl > 0 && (strncmp(f->name, dir, dl) != 0 || f->name[dl] != '/'))
            continue;
        rest = dl > 0 ? f->name + dl + 1 : f->name;
        if (strchr(rest, '/') != NULL)
            continue;
        rc = fn(arg, rest);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int tp_remove(void *ctx, const char *name)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f;
    int rc = fault(tp, MOTE_TP_REMOVE);
    unsigned h;

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    f = find(tp, name);
    if (f == NULL)
        return MOTE_ERR_NOENT;
    if (f->is_dir)
        return MOTE_ERR_ISDIR;
    for (h = 0; h < MOTE_TPORT_HANDLES; h++) {
        if (tp->handles[h] == (int)(f - tp->files) + 1)
            tp->handles[h] = 0;
    }
    free(f->data);
    memset(f, 0, sizeof(*f));
    return 0;
}

static int tp_mkdir(void *ctx, const char *name)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_file *f;
    int rc = fault(tp, MOTE_TP_MKDIR);

    if (rc != 0)
        return rc < 0 ? rc : MOTE_ERR_IO;
    if ((rc = valid_name(name)) < 0)
        return rc;
    f = find(tp, name);
    if (f != NULL)
        return f->is_dir ? 0 : MOTE_ERR_NOTDIR;
    if (!parent_exists(tp, name))
        return MOTE_ERR_NOENT;
    return create(tp, name, true) != NULL ? 0 : MOTE_ERR_NOSPC;
}

/* ---- control ---- */

void mote_tport_init(struct mote_tport *tp, uint32_t start_ms)
{
    memset(tp, 0, sizeof(*tp));
    tp->now = start_ms;
    tp->rng = 0x9E3779B9u;
    tp->port.size = sizeof(tp->port);
    tp->port.version = MOTE_PORT_VERSION;
    tp->port.ctx = tp;
    tp->port.now_ms = tp_now;
    tp->port.wait = tp_wait;
    tp->port.signals_take = tp_signals_take;
    tp->port.random = tp_random;
    tp->port.random_secret = tp_random_secret;
    tp->port.st_open = tp_open;
    tp->port.st_read = tp_read;
    tp->port.st_append = tp_append;
    tp->port.st_sync = tp_sync;
    tp->port.st_size = tp_size;
    tp->port.st_truncate = tp_truncate;
    tp->port.st_close = tp_close;
    tp->port.st_write_atomic = tp_write_atomic;
    tp->port.st_create = tp_create;
    tp->port.st_list = tp_list;
    tp->port.st_remove = tp_remove;
    tp->port.st_mkdir = tp_mkdir;
    tp->port.clock_real = tp_clock_real;
    mote_tport_set_real(tp, INT64_C(1780272000000), MOTE_CLOCK_UNKNOWN); /* 2026-06-01 */
}

void mote_tport_deinit(struct mote_tport *tp)
{
    unsigned i;

    for (i = 0; i < MOTE_TPORT_FILES; i++)
        free(tp->files[i].data);
    memset(tp->files, 0, sizeof(tp->files));
}

void mote_tport_advance(struct mote_tport *tp, uint32_t ms)
{
    tp->now += ms;
}

void mote_tport_fd_ready(struct mote_tport *tp, int fd, unsigned revents)
{
    if (fd >= 0 && fd < MOTE_TPORT_FDS)
        tp->fd_ready[fd] = (uint16_t)revents;
}

void mote_tport_raise(struct mote_tport *tp, enum mote_signal sig)
{
    if (tp->sig[sig] < 255)
        tp->sig[sig]++;
}

void mote_tport_fail_after(struct mote_tport *tp, unsigned mask, unsigned n, int err, bool sticky)
{
    tp->fail_mask = mask;
    tp->fail_at = n;
    tp->fail_seen = 0;
    tp->fail_err = err;
    tp->fail_sticky = sticky;
}

void mote_tport_cut_at(struct mote_tport *tp, unsigned n)
{
    tp->cut_at = n;
    tp->st_writes = 0;
    tp->power_off = false;
}

void mote_tport_power_restore(struct mote_tport *tp, enum mote_tport_cut mode)
{
    unsigned i;

    memset(tp->handles, 0, sizeof(tp->handles));
    for (i = 0; i < MOTE_TPORT_FILES; i++) {
        struct mote_tport_file *f = &tp->files[i];
        size_t extra;

        if (!f->used || f->is_dir || f->len <= f->synced)
            continue;
        extra = f->len - f->synced;
        switch (mode) {
        case MOTE_TP_CUT_DROP:
            f->len = f->synced;
            break;
        case MOTE_TP_CUT_KEEP:
            break;
        case MOTE_TP_CUT_TORN:
            f->len = f->synced + extra / 2;
            break;
        case MOTE_TP_CUT_ZERO:
            memset(f->data + f->synced, 0, extra);
            break;
        }
        f->synced = f->len;
    }
    tp->power_off = false;
    tp->cut_at = 0;
    tp->fail_at = 0;
}

const struct mote_tport_file *mote_tport_file(const struct mote_tport *tp, const char *name)
{
    return find((struct mote_tport *)tp, name);
}

int mote_tport_put(struct mote_tport *tp, const char *name, const void *data, size_t len)
{
    struct mote_tport_file *f = find(tp, name);

    if (f == NULL && (f = create(tp, name, false)) == NULL)
        return MOTE_ERR_NOSPC;
    if (grow(f, len) < 0)
        return MOTE_ERR_NOMEM;
    if (len > 0)
        memcpy(f->data, data, len);
    f->len = len;
    f->synced = len;
    return 0;
}
