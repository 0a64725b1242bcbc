/* util.c - small helpers shared by the core. */
#include "util.h"

#include <string.h>

size_t mote_str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n >= cap) {
        n = cap - 1;
        /* Step back over continuation bytes so no character is cut. */
        while (n > 0 && ((unsigned char)src[n] & 0xC0u) == 0x80u)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
    return n;
}
