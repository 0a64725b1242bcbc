/* fixtures.h - reading ../shared/fixtures from unit tests (test helper). */
#ifndef MOTE_TEST_FIXTURES_H
#define MOTE_TEST_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fixtures folder: $MOTE_FIXTURES, else ../shared/fixtures. */
static inline const char *fixtures_dir(void)
{
    const char *d = getenv("MOTE_FIXTURES");

    return d != NULL && d[0] != '\0' ? d : "../shared/fixtures";
}

/* Reads fixture `name` whole into a malloc'ed buffer (NUL-terminated).
 * Returns NULL if the file is missing. */
static inline char *fixture_read(const char *name, size_t *len)
{
    char path[512];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/%s", fixtures_dir(), name);
    f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Skips the current cmocka test when the fixtures are absent. */
#define FIXTURE_OR_SKIP(var, name, lenp)                                         \
    do {                                                                         \
        (var) = fixture_read((name), (lenp));                                    \
        if ((var) == NULL) {                                                     \
            printf("skipped: fixture %s/%s is absent\n", fixtures_dir(), (name)); \
            skip();                                                              \
        }                                                                        \
    } while (0)

#endif
