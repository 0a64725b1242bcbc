/*
 * mote_err.h - error codes.
 *
 * Every mote call that can fail returns an int: >= 0 is success (or a
 * count), < 0 is one of the codes below. Where POSIX has an errno with the
 * same meaning the value is its negation (on Linux), so a port can pass a
 * failed call's errno on as -errno when it has no better code.
 */
#ifndef MOTE_ERR_H
#define MOTE_ERR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MOTE_MUST_CHECK __attribute__((warn_unused_result))
#else
#define MOTE_MUST_CHECK
#endif

enum mote_err {
    MOTE_OK = 0,
    MOTE_ERR_PERM = -1,          /* operation not permitted (EPERM) */
    MOTE_ERR_NOENT = -2,         /* no such file or name (ENOENT) */
    MOTE_ERR_INTR = -4,          /* interrupted: a wait was broken (EINTR) */
    MOTE_ERR_IO = -5,            /* I/O error (EIO) */
    MOTE_ERR_TOO_LARGE = -7,     /* input over a configured limit (E2BIG) */
    MOTE_ERR_BADF = -9,          /* bad handle or descriptor (EBADF) */
    MOTE_ERR_AGAIN = -11,        /* would block: call again later (EAGAIN) */
    MOTE_ERR_NOMEM = -12,        /* out of memory (ENOMEM) */
    MOTE_ERR_ACCES = -13,        /* permission denied (EACCES) */
    MOTE_ERR_BUSY = -16,         /* resource busy (EBUSY) */
    MOTE_ERR_EXIST = -17,        /* already exists (EEXIST) */
    MOTE_ERR_NOTDIR = -20,       /* not a directory (ENOTDIR) */
    MOTE_ERR_ISDIR = -21,        /* is a directory (EISDIR) */
    MOTE_ERR_INVAL = -22,        /* invalid argument (EINVAL) */
    MOTE_ERR_MFILE = -24,        /* too many open files (EMFILE, ENFILE) */
    MOTE_ERR_FBIG = -27,         /* file too large (EFBIG) */
    MOTE_ERR_NOSPC = -28,        /* no space left on device (ENOSPC) */
    MOTE_ERR_ROFS = -30,         /* read-only file system (EROFS) */
    MOTE_ERR_PIPE = -32,         /* peer closed (EPIPE) */
    MOTE_ERR_RANGE = -34,        /* value out of range (ERANGE) */
    MOTE_ERR_NAMETOOLONG = -36,  /* name too long (ENAMETOOLONG) */
    MOTE_ERR_NOSYS = -38,        /* not supported by this port (ENOSYS) */
    MOTE_ERR_PROTO = -71,        /* protocol error (EPROTO) */
    MOTE_ERR_BADMSG = -74,       /* malformed message (EBADMSG) */
    MOTE_ERR_NOTSUP = -95,       /* not supported (EOPNOTSUPP) */
    MOTE_ERR_ADDRINUSE = -98,    /* address in use (EADDRINUSE) */
    MOTE_ERR_NETUNREACH = -101,  /* network unreachable (ENETUNREACH) */
    MOTE_ERR_CONNABORTED = -103, /* connection aborted (ECONNABORTED) */
    MOTE_ERR_CONNRESET = -104,   /* connection reset by peer (ECONNRESET) */
    MOTE_ERR_FULL = -105,        /* a static table is full (ENOBUFS) */
    MOTE_ERR_NOTCONN = -107,     /* not connected (ENOTCONN) */
    MOTE_ERR_SHUTDOWN = -108,    /* shutting down: no new work (ESHUTDOWN) */
    MOTE_ERR_TIMEDOUT = -110,    /* a deadline passed (ETIMEDOUT) */
    MOTE_ERR_CONNREFUSED = -111, /* connection refused (ECONNREFUSED) */
    MOTE_ERR_HOSTUNREACH = -113, /* host unreachable (EHOSTUNREACH) */
    MOTE_ERR_ALREADY = -114,     /* already in progress or done (EALREADY) */
    MOTE_ERR_INPROGRESS = -115,  /* started, not finished (EINPROGRESS) */
    MOTE_ERR_STALE = -116,       /* handle to a freed slot (ESTALE) */
    MOTE_ERR_CANCELED = -125,    /* cancelled (ECANCELED) */

    /* mote's own codes, with no POSIX counterpart */
    MOTE_ERR_CORRUPT = -1000, /* data on disk is damaged */
    MOTE_ERR_TLS = -1001,     /* TLS failure (handshake, verification) */
    MOTE_ERR_DNS = -1002,     /* name resolution failed */
    MOTE_ERR_HTTP = -1003,    /* HTTP error status from the server */
    MOTE_ERR_AUTH = -1004,    /* credentials refused by the server */
    MOTE_ERR_CONFIG = -1005,  /* configuration error */
    MOTE_ERR_LIMIT = -1006,   /* a retry or turn cap was reached */
    MOTE_ERR_LOCKED = -1007,  /* held by another process (a conversation it has open) */
    MOTE_ERR_NOTREG = -1008,  /* not a regular file (a symlink, a FIFO, a device): refused */
    MOTE_ERR_LINKED = -1009,  /* the file has other hard links: replacing it would split them */

    /* Why a model request failed, one code per cause (MOTE_EV_ERROR's
     * code; also MOTE_ERR_CONNREFUSED, MOTE_ERR_DNS for a failed name
     * lookup, MOTE_ERR_TLS for a failed TLS handshake, MOTE_ERR_AUTH for
     * HTTP 401 and 403, MOTE_ERR_HTTP for another HTTP status) */
    MOTE_ERR_TLS_VERIFY = -1010,         /* the server's certificate was refused */
    MOTE_ERR_CONNECT_TIMEOUT = -1011,    /* no connection (name, connect, TLS) within its deadline */
    MOTE_ERR_FIRST_BYTE_TIMEOUT = -1012, /* no response within its deadline after the request */
    MOTE_ERR_IDLE_TIMEOUT = -1013,       /* the connection was silent longer than its deadline */
    MOTE_ERR_EVENT_TIMEOUT = -1014,      /* no complete stream event within its deadline */
    MOTE_ERR_REQUEST_TIMEOUT = -1015,    /* the whole request took longer than its deadline */
    MOTE_ERR_RATE_LIMIT = -1016,         /* HTTP 429: too many requests */
    MOTE_ERR_OVERLOADED = -1017,         /* HTTP 529 or 503: the service is overloaded */
    MOTE_ERR_BAD_REQUEST = -1018,        /* HTTP 400, 422: the API refused the request */
    MOTE_ERR_SERVER = -1019,             /* HTTP 5xx (other than 503): the server failed */
    MOTE_ERR_CUT_OFF = -1020,            /* the stream ended before its end */
    MOTE_ERR_STORAGE = -1021,            /* the state (journal) could not be written or read */
    MOTE_ERR_BUDGET = -1022,             /* the spend budget is reached: nothing is sent
                                          * until it frees (mote_budget.h) */
    MOTE_ERR_CONTEXT = -1023,            /* the request is over the model's context window */
};

/* A short English description of code `err` (a static string, never
 * NULL). Unknown codes give "unknown error". Never blocks. */
const char *mote_strerror(int err);

/* The stable name of code `err` for programs ("connection_refused",
 * "name_lookup", "tls_verify", ...: docs/AGENT.md lists them; never
 * renamed), a static string, never NULL. 0 gives "ok", an unknown code
 * "unknown". Never blocks. */
const char *mote_err_name(int err);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_ERR_H */
