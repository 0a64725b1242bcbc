/* readfile.h - a small file a frontend reads at start (a system prompt,
 * MOTE.md, --mcp-config, --policy): opened without blocking and read only
 * if it is a regular file, so a FIFO or a device in its place is a clear
 * error instead of a start that hangs. */
#ifndef MOTE_FE_READFILE_H
#define MOTE_FE_READFILE_H

#include <stddef.h>

enum {
    FE_READ_OK = 0,
    FE_READ_ERRNO = -1,   /* cannot open or read it: errno says why */
    FE_READ_TOO_LONG = -2, /* more than cap - 1 bytes */
    FE_READ_NOTREG = -3,  /* not a regular file (a FIFO, a device, a directory) */
};

/* Reads `path` whole into `buf` (cap bytes; NUL-terminated after what was
 * read) and its length into *len. Never blocks on what the name is: the
 * file is opened with O_NONBLOCK and checked with fstat (what was opened,
 * not what the name was a moment before). Returns an FE_READ_* code. */
int fe_read_file(const char *path, char *buf, size_t cap, size_t *len);

/* A few words for a failed fe_read_file (`rc`), for "cannot read X: ...". */
const char *fe_read_why(int rc);

#endif
