/* fuzz_http - the HTTP/1.1 response parser and URL parser. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_http.h"

static struct mote_http_resp resp;

static int on_body(void *arg, const char *p, size_t n)
{
    size_t *total = arg;

    if (n > 0 && p[n - 1] == '\0' && p[0] == '\0')
        *total += 1;
    *total += n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mote_url u;
    char url[300];
    size_t total = 0, at = 0;

    mote_http_resp_init(&resp, on_body, &total);
    while (at < size) {
        size_t piece = 1 + (data[at] % 17u);
        int rc;

        if (piece > size - at)
            piece = size - at;
        rc = mote_http_resp_feed(&resp, (const char *)data + at, piece);
        if (rc < 0 || mote_http_resp_done(&resp))
            break;
        at += (size_t)rc;
    }
    (void)mote_http_resp_eof(&resp);
    if (size < sizeof(url)) {
        memcpy(url, data, size);
        url[size] = '\0';
        (void)mote_url_parse(&u, url);
    }
    return 0;
}
