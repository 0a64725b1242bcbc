/* version.c - the library's version. */
#include "mote/mote.h"

const char *mote_version(void)
{
    return MOTE_VERSION_STRING;
}
