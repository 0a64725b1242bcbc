/* fuzz_mcpconf - the CLI's --mcp-config reader on arbitrary file content
 * (${VAR} expanded from the process's environment, as the CLI does).
 * Properties: it either refuses with a one-line message (printable, no
 * newline) or gives servers whose argv and environment are complete:
 * a command, NUL-terminated arguments, NAME=VALUE pairs; or, over HTTP, a
 * URL of printable ASCII and headers "Name: value" with no line break. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../examples/common/mcpconf.h"

static struct mote_mcp m;
static struct mote_loop loop;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[300];
    FILE *f;
    unsigned i;
    int rc;

    if (path[0] == '\0')
        snprintf(path, sizeof(path), "/tmp/fuzz_mcpconf.%ld", (long)getpid());
    f = fopen(path, "wb");
    if (f == NULL)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    memset(&m, 0, sizeof(m));
    mote_mcp_init(&m, &loop, NULL, NULL);
    err[0] = '\0';
    rc = mcpconf_load(path, &m, err, sizeof(err));
    if (rc < 0) {
        if (err[0] == '\0')
            __builtin_trap(); /* a refusal says why */
        for (i = 0; err[i] != '\0'; i++) {
            if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f)
                __builtin_trap(); /* on one printable line: no newline, no escape */
        }
        return 0;
    }
    if (rc != 0 || m.n > MOTE_MAX_MCP_SERVERS)
        __builtin_trap();
    for (i = 0; i < m.n; i++) {
        const char *const *a = m.srv[i].argv, *const *e = m.srv[i].envp;
        unsigned k;

        if (m.srv[i].kind != MOTE_MCP_STDIO) {
            const char *const *h = m.srv[i].headers;

            if (m.srv[i].url == NULL || (strncmp(m.srv[i].url, "http://", 7) != 0 &&
                                         strncmp(m.srv[i].url, "https://", 8) != 0))
                __builtin_trap(); /* a server over HTTP without its URL */
            for (k = 0; m.srv[i].url[k] != '\0'; k++) {
                if ((unsigned char)m.srv[i].url[k] <= 0x20 || (unsigned char)m.srv[i].url[k] >= 0x7f)
                    __builtin_trap(); /* it goes into a request line as it is */
            }
            for (k = 0; h != NULL && h[k] != NULL; k++) {
                if (strpbrk(h[k], "\r\n") != NULL || strstr(h[k], ": ") == NULL)
                    __builtin_trap(); /* a header that would start another */
            }
            continue;
        }

        if (a == NULL || a[0] == NULL)
            __builtin_trap(); /* no command */
        for (k = 0; a[k] != NULL; k++)
            (void)strlen(a[k]);
        for (k = 0; e != NULL && e[k] != NULL; k++) {
            if (strchr(e[k], '=') == NULL)
                __builtin_trap();
        }
    }
    return 0;
}
