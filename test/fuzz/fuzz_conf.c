/* fuzz_conf - mote serve's configuration file reader (conf.c) on arbitrary
 * text. Properties: it either refuses with one line naming the line
 * ("line N: ...", printable, no newline, N within the text's lines) or
 * gives settings whose keys are 1 to 63 of [a-z0-9-], whose values hold no
 * newline and no NUL, in the order of their lines. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../examples/serve/conf.h"

static char text[CONF_MAX + 1];

struct seen {
    unsigned last, lines;
};

static int item(void *arg, const struct conf_item *it)
{
    struct seen *s = arg;
    size_t i, n = strlen(it->key);

    if (it->line <= s->last || it->line > s->lines || n == 0 || n > 63)
        __builtin_trap();
    for (i = 0; i < n; i++) {
        char c = it->key[i];

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            __builtin_trap();
    }
    if (strchr(it->value, '\n') != NULL)
        __builtin_trap();
    s->last = it->line;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct seen s = {0, 1};
    char err[300];
    size_t i;
    int rc;

    if (size > CONF_MAX)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (i = 0; i < size; i++)
        s.lines += data[i] == '\n';
    rc = conf_parse(text, size, item, &s, err, sizeof(err));
    if (rc < 0) {
        unsigned long l;

        if (strncmp(err, "line ", 5) != 0)
            __builtin_trap();
        l = strtoul(err + 5, NULL, 10);
        if (l == 0 || l > s.lines)
            __builtin_trap();
        for (i = 0; err[i] != '\0'; i++) {
            if ((unsigned char)err[i] < 0x20)
                __builtin_trap();
        }
    } else if (rc != 0) {
        __builtin_trap();
    }
    return 0;
}
