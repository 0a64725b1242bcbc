/*
 * net.c - the net group of the POSIX port.
 *
 * Name resolution runs getaddrinfo() on a detached helper thread per
 * request, so a slow name service never stalls the loop: the loop waits on
 * the request's pipe and may abandon the request at any time (Ctrl+C
 * during a DNS stall). An abandoned request's thread cleans up after
 * itself when getaddrinfo() finally returns. The core stays
 * single-threaded: it only sees descriptors and results.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define RESOLVE_SLOTS 4

struct resolve_req {
    bool used;       /* slot taken (by the loop or an abandoned thread) */
    bool done;       /* the thread finished */
    bool abandoned;  /* the loop no longer wants the answer */
    int pipe[2];
    uint16_t port;
    char host[256];
    int count;       /* addresses found, or < 0 */
    struct mote_addr addrs[MOTE_MAX_ADDRS];
};

static pthread_mutex_t res_lock = PTHREAD_MUTEX_INITIALIZER;
static struct resolve_req res[RESOLVE_SLOTS];

/* Test hook: with MOTE_TEST_DNS_STALL set, a lookup of a name under the
 * reserved ".test" domain ending in ".slow.test" stalls 30 s, to test
 * cancellation during a slow DNS lookup with no network. */
static unsigned slow_seconds(const char *host)
{
    size_t n = strlen(host);

    if (getenv("MOTE_TEST_DNS_STALL") == NULL)
        return 0;
    return n > 10 && strcmp(host + n - 10, ".slow.test") == 0 ? 30u : 0u;
}

static void free_slot_locked(struct resolve_req *r)
{
    if (r->pipe[0] >= 0)
        close(r->pipe[0]);
    if (r->pipe[1] >= 0)
        close(r->pipe[1]);
    r->pipe[0] = r->pipe[1] = -1;
    r->used = false;
}

/* The answer is in: hand it over, or clean up if nobody wants it now. */
static void *finish(struct resolve_req *r, const struct mote_addr *found, int count)
{
    pthread_mutex_lock(&res_lock);
    r->count = count > 0 ? count : MOTE_ERR_DNS;
    memcpy(r->addrs, found, sizeof(r->addrs));
    r->done = true;
    if (r->abandoned) {
        free_slot_locked(r);
    } else {
        char b = 1;

        (void)!write(r->pipe[1], &b, 1);
    }
    pthread_mutex_unlock(&res_lock);
    return NULL;
}

/* "localhost" and names under ".localhost" are loopback (RFC 6761
 * section 6.3), answered here as curl does: a device without an /etc/hosts
 * entry, or with a resolver that sends the name out, still reaches a local
 * server. IPv4 first, as the test server and most local daemons listen. */
static int loopback_name(const char *host, struct mote_addr *found)
{
    static const char suffix[] = ".localhost";
    size_t n = strlen(host), k = sizeof(suffix) - 1;

    if (n > 0 && host[n - 1] == '.')
        n--; /* the fully qualified form */
    if (!((n == k - 1 && strncasecmp(host, "localhost", n) == 0) ||
          (n > k && strncasecmp(host + n - k, suffix, k) == 0)))
        return 0;
    memset(found, 0, 2 * sizeof(*found));
    found[0].family = 4;
    found[0].addr[0] = 127;
    found[0].addr[3] = 1;
    found[1].family = 6;
    found[1].addr[15] = 1;
    return 2;
}

static void *resolve_thread(void *arg)
{
    struct resolve_req *r = arg;
    struct addrinfo hints, *ai = NULL, *p;
    struct mote_addr found[MOTE_MAX_ADDRS];
    char host[256];
    int rc, count = 0;

    pthread_mutex_lock(&res_lock);
    memcpy(host, r->host, sizeof(host));
    pthread_mutex_unlock(&res_lock);
    if (slow_seconds(host) > 0) {
        /* The test name never goes to a real name server. */
        sleep(slow_seconds(host));
        return finish(r, found, 0);
    }
    if (loopback_name(host, found) > 0)
        return finish(r, found, 2);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    rc = getaddrinfo(host, NULL, &hints, &ai);
    if (rc != 0 && rc != EAI_SYSTEM) {
        /* AI_ADDRCONFIG hides ::1 and 127.0.0.1 on hosts with only loopback. */
        hints.ai_flags = 0;
        rc = getaddrinfo(host, NULL, &hints, &ai);
    }
    for (p = rc == 0 ? ai : NULL; p != NULL && count < MOTE_MAX_ADDRS; p = p->ai_next) {
        struct mote_addr *a = &found[count];

        memset(a, 0, sizeof(*a));
        if (p->ai_family == AF_INET) {
            a->family = 4;
            memcpy(a->addr, &((struct sockaddr_in *)(void *)p->ai_addr)->sin_addr, 4);
        } else if (p->ai_family == AF_INET6) {
            a->family = 6;
            memcpy(a->addr, &((struct sockaddr_in6 *)(void *)p->ai_addr)->sin6_addr, 16);
        } else {
            continue;
        }
        count++;
    }
    if (ai != NULL)
        freeaddrinfo(ai);
    return finish(r, found, count);
}

static int px_resolve(void *ctx, const char *host, uint16_t port, int *wait_fd)
{
    pthread_attr_t attr;
    pthread_t th;
    int i, slot = -1;

    (void)ctx;
    if (strlen(host) >= sizeof(res[0].host))
        return MOTE_ERR_NAMETOOLONG;
    pthread_mutex_lock(&res_lock);
    for (i = 0; i < RESOLVE_SLOTS; i++) {
        if (!res[i].used) {
            slot = i;
            break;
        }
    }
    if (slot < 0) {
        pthread_mutex_unlock(&res_lock);
        return MOTE_ERR_FULL;
    }
    memset(&res[slot], 0, sizeof(res[slot]));
    res[slot].pipe[0] = res[slot].pipe[1] = -1;
    if (pipe2(res[slot].pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        pthread_mutex_unlock(&res_lock);
        return mote_posix_err(errno);
    }
    res[slot].used = true;
    res[slot].port = port;
    strcpy(res[slot].host, host);
    pthread_mutex_unlock(&res_lock);
    {
        /* An address literal or a loopback name is answered at once, with
         * no thread to start (a shorter way to the first request byte). */
        struct mote_addr found[MOTE_MAX_ADDRS];
        unsigned char a[16];
        int n;

        memset(found, 0, sizeof(found));
        n = loopback_name(host, found);
        if (n == 0 && inet_pton(AF_INET, host, a) == 1) {
            found[0].family = 4;
            memcpy(found[0].addr, a, 4);
            n = 1;
        } else if (n == 0 && inet_pton(AF_INET6, host, a) == 1) {
            found[0].family = 6;
            memcpy(found[0].addr, a, 16);
            n = 1;
        }
        if (n > 0) {
            (void)finish(&res[slot], found, n);
            *wait_fd = res[slot].pipe[0];
            return slot;
        }
    }

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&th, &attr, resolve_thread, &res[slot]) != 0) {
        pthread_attr_destroy(&attr);
        pthread_mutex_lock(&res_lock);
        free_slot_locked(&res[slot]);
        pthread_mutex_unlock(&res_lock);
        return MOTE_ERR_NOMEM;
    }
    pthread_attr_destroy(&attr);
    *wait_fd = res[slot].pipe[0];
    return slot;
}

static int px_resolve_result(void *ctx, int req, struct mote_addr *out, unsigned max)
{
    struct resolve_req *r;
    int n, i;

    (void)ctx;
    if (req < 0 || req >= RESOLVE_SLOTS)
        return MOTE_ERR_BADF;
    r = &res[req];
    pthread_mutex_lock(&res_lock);
    if (!r->done) {
        pthread_mutex_unlock(&res_lock);
        return MOTE_ERR_AGAIN;
    }
    n = r->count;
    for (i = 0; n > 0 && i < n && (unsigned)i < max; i++) {
        out[i] = r->addrs[i];
        out[i].port = r->port;
    }
    pthread_mutex_unlock(&res_lock);
    return n > 0 && (unsigned)n > max ? (int)max : n;
}

static void px_resolve_end(void *ctx, int req)
{
    (void)ctx;
    if (req < 0 || req >= RESOLVE_SLOTS)
        return;
    pthread_mutex_lock(&res_lock);
    if (res[req].done)
        free_slot_locked(&res[req]);
    else
        res[req].abandoned = true; /* the thread frees the slot */
    pthread_mutex_unlock(&res_lock);
}

static int px_connect(void *ctx, const struct mote_addr *a)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1;

    (void)ctx;
    if ((len = mote_posix_sockaddr(a, &ss)) == 0)
        return MOTE_ERR_INVAL;
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return mote_posix_err(errno);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
        int e = errno;

        close(fd);
        return mote_posix_err(e);
    }
    return fd;
}

static int px_connect_done(void *ctx, int fd)
{
    struct pollfd pfd;
    int err = 0;
    socklen_t len = sizeof(err);

    (void)ctx;
    pfd.fd = fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;
    if (poll(&pfd, 1, 0) == 0)
        return MOTE_ERR_AGAIN;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return mote_posix_err(errno);
    return err == 0 ? 0 : mote_posix_err(err);
}

static int px_send(void *ctx, int fd, const void *buf, size_t n)
{
    ssize_t r;

    (void)ctx;
    do {
        r = send(fd, buf, n, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return mote_posix_err(errno);
    return (int)r;
}

static int px_recv(void *ctx, int fd, void *buf, size_t n)
{
    ssize_t r;

    (void)ctx;
    do {
        r = recv(fd, buf, n, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return mote_posix_err(errno);
    return (int)r;
}

void mote_posix_net_fill(struct mote_port *port)
{
    port->net_resolve = px_resolve;
    port->net_resolve_result = px_resolve_result;
    port->net_resolve_end = px_resolve_end;
    port->net_connect = px_connect;
    port->net_connect_done = px_connect_done;
    port->net_send = px_send;
    port->net_recv = px_recv;
    port->net_close = mote_posix_close;
}
