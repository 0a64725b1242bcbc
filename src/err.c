/* err.c - the message and the stable name of each enum mote_err
 * (mote_strerror, mote_err_name). */
#include "mote/mote_err.h"

#include <stddef.h>

struct err_name {
    int code;
    const char *text;
    const char *name; /* stable: programs match on it */
};

static const struct err_name err_names[] = {
    {MOTE_OK, "success", "ok"},
    {MOTE_ERR_PERM, "operation not permitted", "not_permitted"},
    {MOTE_ERR_NOENT, "no such file or name", "not_found"},
    {MOTE_ERR_INTR, "interrupted", "interrupted"},
    {MOTE_ERR_IO, "input/output error", "io"},
    {MOTE_ERR_TOO_LARGE, "input over a configured limit", "too_large"},
    {MOTE_ERR_BADF, "bad handle", "bad_handle"},
    {MOTE_ERR_AGAIN, "would block", "again"},
    {MOTE_ERR_NOMEM, "out of memory", "no_memory"},
    {MOTE_ERR_ACCES, "permission denied", "access_denied"},
    {MOTE_ERR_BUSY, "resource busy", "busy"},
    {MOTE_ERR_EXIST, "already exists", "exists"},
    {MOTE_ERR_NOTDIR, "not a directory", "not_a_directory"},
    {MOTE_ERR_ISDIR, "is a directory", "is_a_directory"},
    {MOTE_ERR_INVAL, "invalid argument", "invalid"},
    {MOTE_ERR_MFILE, "too many open files", "too_many_files"},
    {MOTE_ERR_FBIG, "file too large", "file_too_large"},
    {MOTE_ERR_NOSPC, "no space left on device", "no_space"},
    {MOTE_ERR_ROFS, "read-only file system", "read_only"},
    {MOTE_ERR_PIPE, "peer closed the connection", "peer_closed"},
    {MOTE_ERR_RANGE, "value out of range", "out_of_range"},
    {MOTE_ERR_NAMETOOLONG, "name too long", "name_too_long"},
    {MOTE_ERR_NOSYS, "not supported by this port", "not_in_port"},
    {MOTE_ERR_PROTO, "protocol error", "protocol"},
    {MOTE_ERR_BADMSG, "malformed message", "malformed"},
    {MOTE_ERR_NOTSUP, "not supported", "not_supported"},
    {MOTE_ERR_ADDRINUSE, "address in use", "address_in_use"},
    {MOTE_ERR_NETUNREACH, "network unreachable", "network_unreachable"},
    {MOTE_ERR_CONNABORTED, "connection aborted", "connection_aborted"},
    {MOTE_ERR_CONNRESET, "connection reset by peer", "connection_reset"},
    {MOTE_ERR_FULL, "table full", "table_full"},
    {MOTE_ERR_NOTCONN, "not connected", "not_connected"},
    {MOTE_ERR_SHUTDOWN, "shutting down", "shutting_down"},
    {MOTE_ERR_TIMEDOUT, "timed out", "timed_out"},
    {MOTE_ERR_CONNREFUSED, "connection refused", "connection_refused"},
    {MOTE_ERR_HOSTUNREACH, "host unreachable", "host_unreachable"},
    {MOTE_ERR_ALREADY, "already done", "already"},
    {MOTE_ERR_INPROGRESS, "in progress", "in_progress"},
    {MOTE_ERR_STALE, "stale handle", "stale"},
    {MOTE_ERR_CANCELED, "cancelled", "cancelled"},
    {MOTE_ERR_CORRUPT, "data on disk is damaged", "corrupt"},
    {MOTE_ERR_TLS, "TLS failure", "tls_handshake"},
    {MOTE_ERR_DNS, "name resolution failed", "name_lookup"},
    {MOTE_ERR_HTTP, "HTTP error", "http"},
    {MOTE_ERR_AUTH, "authentication failed", "auth"},
    {MOTE_ERR_CONFIG, "configuration error", "config"},
    {MOTE_ERR_LIMIT, "limit reached", "limit"},
    {MOTE_ERR_LOCKED, "open in another process", "locked"},
    {MOTE_ERR_NOTREG, "not a regular file", "not_regular_file"},
    {MOTE_ERR_LINKED, "the file has other hard links", "hard_linked"},
    {MOTE_ERR_TLS_VERIFY, "the server's certificate was refused", "tls_verify"},
    {MOTE_ERR_CONNECT_TIMEOUT, "connecting timed out", "connect_timeout"},
    {MOTE_ERR_FIRST_BYTE_TIMEOUT, "no response in time", "first_byte_timeout"},
    {MOTE_ERR_IDLE_TIMEOUT, "the connection stalled", "idle_timeout"},
    {MOTE_ERR_EVENT_TIMEOUT, "the stream stalled", "event_timeout"},
    {MOTE_ERR_REQUEST_TIMEOUT, "the request took too long", "request_timeout"},
    {MOTE_ERR_RATE_LIMIT, "rate limited", "rate_limit"},
    {MOTE_ERR_OVERLOADED, "the service is overloaded", "overloaded"},
    {MOTE_ERR_BAD_REQUEST, "the request was refused", "bad_request"},
    {MOTE_ERR_SERVER, "the server failed", "server_error"},
    {MOTE_ERR_CUT_OFF, "the stream was cut off", "cut_off"},
    {MOTE_ERR_STORAGE, "the state could not be written", "storage"},
    {MOTE_ERR_BUDGET, "the spend budget is reached", "budget"},
    {MOTE_ERR_CONTEXT, "the conversation is over the model's context window", "context_overflow"},
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

const char *mote_err_name(int err)
{
    size_t i;

    for (i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++) {
        if (err_names[i].code == err)
            return err_names[i].name;
    }
    return err >= 0 ? "ok" : "unknown";
}
