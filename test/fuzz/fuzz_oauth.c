/* fuzz_oauth - what an MCP server's login reads from outside
 * (examples/common/oauth_util.c): a WWW-Authenticate value, the address
 * pasted back from the browser, a protected resource's "resource" against
 * the server's URL, and the members of an authorization server's JSON
 * documents. The first byte picks which. Properties: a value read is
 * NUL-terminated within its buffer, its length is what it says, and it
 * holds no control byte (it may reach a message or a request); a list is
 * words without an empty one; nothing reads past its input. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../examples/common/oauth_int.h"

static char text[1 << 16];

static void clean(const char *s, int n, size_t cap)
{
    int i;

    if (n < 0)
        return;
    if ((size_t)n >= cap || strlen(s) != (size_t)n)
        __builtin_trap();
    for (i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const keys[] = {"scope", "resource_metadata", "error", "code", "state",
                                       "issuer", "token_endpoint", "scopes_supported"};
    char out[64], list[96];
    const char *b;
    size_t i;

    if (size < 1 || size >= sizeof(text))
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    switch (data[0] % 4) {
    case 0: /* a WWW-Authenticate value */
        for (i = 0; i < 3; i++)
            clean(out, fe_oauth_param(text, keys[i], out, sizeof(out)), sizeof(out));
        break;
    case 1: /* the pasted redirect */
        for (i = 3; i < 5; i++)
            clean(out, fe_oauth_query(text, keys[i], out, sizeof(out)), sizeof(out));
        break;
    case 2: /* a resource and a server URL, split at the first NUL */
        b = memchr(data + 1, 0, size - 1) != NULL ? text + strlen(text) + 1 : "";
        (void)fe_oauth_resource_ok(text, b);
        (void)fe_oauth_resource_ok(b, text);
        break;
    default: /* a document */
        if (mote_json_parse_object(&oa_js, text, size - 1, NULL, 0) < 0)
            break;
        for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            if (oa_doc_str(keys[i], out, sizeof(out)))
                clean(out, (int)strlen(out), sizeof(out));
            if (oa_doc_list(keys[i], list, sizeof(list))) {
                clean(list, (int)strlen(list), sizeof(list));
                if (list[0] == ' ' || strstr(list, "  ") != NULL ||
                    (list[0] != '\0' && list[strlen(list) - 1] == ' '))
                    __builtin_trap();
            }
        }
        break;
    }
    return 0;
}
