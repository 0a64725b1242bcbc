/* err.c - the message of each enum mote_err (mote_strerror). */
#include "mote/mote_err.h"

#include <stddef.h>

struct err_name {
    int code;
    const char *text;
};

static const struct err_name err_names[] = {
    {MOTE_OK, "success"},
    {MOTE_ERR_PERM, "operation not permitted"},
    {MOTE_ERR_NOENT, "no such file or name"},
    {MOTE_ERR_INTR, "interrupted"},
    {MOTE_ERR_IO, "input/output error"},
    {MOTE_ERR_TOO_LARGE, "input over a configured limit"},
    {MOTE_ERR_BADF, "bad handle"},
    {MOTE_ERR_AGAIN, "would block"},
    {MOTE_ERR_NOMEM, "out of memory"},
    {MOTE_ERR_ACCES, "permission denied"},
    {MOTE_ERR_BUSY, "resource busy"},
    {MOTE_ERR_EXIST, "already exists"},
    {MOTE_ERR_NOTDIR, "not a directory"},
    {MOTE_ERR_ISDIR, "is a directory"},
    {MOTE_ERR_INVAL, "invalid argument"},
    {MOTE_ERR_MFILE, "too many open files"},
    {MOTE_ERR_FBIG, "file too large"},
    {MOTE_ERR_NOSPC, "no space left on device"},
    {MOTE_ERR_ROFS, "read-only file system"},
    {MOTE_ERR_PIPE, "peer closed the connection"},
    {MOTE_ERR_RANGE, "value out of range"},
    {MOTE_ERR_NAMETOOLONG, "name too long"},
    {MOTE_ERR_NOSYS, "not supported by this port"},
    {MOTE_ERR_PROTO, "protocol error"},
    {MOTE_ERR_BADMSG, "malformed message"},
    {MOTE_ERR_NOTSUP, "not supported"},
    {MOTE_ERR_ADDRINUSE, "address in use"},
    {MOTE_ERR_NETUNREACH, "network unreachable"},
    {MOTE_ERR_CONNABORTED, "connection aborted"},
    {MOTE_ERR_CONNRESET, "connection reset by peer"},
    {MOTE_ERR_FULL, "table full"},
    {MOTE_ERR_NOTCONN, "not connected"},
    {MOTE_ERR_SHUTDOWN, "shutting down"},
    {MOTE_ERR_TIMEDOUT, "timed out"},
    {MOTE_ERR_CONNREFUSED, "connection refused"},
    {MOTE_ERR_HOSTUNREACH, "host unreachable"},
    {MOTE_ERR_ALREADY, "already done"},
    {MOTE_ERR_INPROGRESS, "in progress"},
    {MOTE_ERR_STALE, "stale handle"},
    {MOTE_ERR_CANCELED, "cancelled"},
    {MOTE_ERR_CORRUPT, "data on disk is damaged"},
    {MOTE_ERR_TLS, "TLS failure"},
    {MOTE_ERR_DNS, "name resolution failed"},
    {MOTE_ERR_HTTP, "HTTP error"},
    {MOTE_ERR_AUTH, "authentication failed"},
    {MOTE_ERR_CONFIG, "configuration error"},
    {MOTE_ERR_LIMIT, "limit reached"},
    {MOTE_ERR_LOCKED, "open in another process"},
    {MOTE_ERR_NOTREG, "not a regular file"},
    {MOTE_ERR_LINKED, "the file has other hard links"},
};

const char *mote_strerror(int err)
{
    size_t i;

    for (i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++) {
        if (err_names[i].code == err)
            return err_names[i].text;
    }
    return err > 0 ? "success" : "unknown error";
}
