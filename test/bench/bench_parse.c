/* bench_parse - SSE + JSON + provider decoding cost on the recorded
 * streams: MB/s (median of several runs) and events decoded.
 *
 *   bench_parse FIXTURE_DIR [rounds]
 * Under `valgrind --tool=callgrind` use rounds=1 to count instructions per
 * event (the program prints the event count to divide by). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mote/mote_llm.h"
#include "mote/mote_sse.h"

static struct mote_sse sse;
static struct mote_llm_dec dec;
static unsigned long events;

static int on_llm(void *arg, const struct mote_llm_event *ev)
{
    (void)arg, (void)ev;
    return 0;
}

static int on_sse(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    (void)arg, (void)id;
    events++;
    return mote_llm_dec_event(&dec, event, data, len);
}

static char *load(const char *dir, const char *name, size_t *n)
{
    char path[512];
    FILE *f;
    char *b;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc(*n + 2);
    if (fread(b, 1, *n, f) != *n)
        *n = 0;
    fclose(f);
    memcpy(b + *n, "\n\n", 2);
    *n += 2;
    return b;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *file;
        enum mote_provider p;
    } files[] = {
        {"anthropic-text.sse", MOTE_PROVIDER_ANTHROPIC},
        {"anthropic-tool-use-parallel-live.sse", MOTE_PROVIDER_ANTHROPIC},
        {"anthropic-thinking-live.sse", MOTE_PROVIDER_ANTHROPIC},
        {"anthropic-web-search-long-line.sse", MOTE_PROVIDER_ANTHROPIC},
        {"openai-chat-text.sse", MOTE_PROVIDER_OPENAI},
        {"openai-chat-tool-calls-parallel.sse", MOTE_PROVIDER_OPENAI},
        {"openai-chat-parallel-obfuscation-live.sse", MOTE_PROVIDER_OPENAI},
        {"llamacpp-chat-tool-call.sse", MOTE_PROVIDER_OPENAI},
        {"deepseek-chat-text.sse", MOTE_PROVIDER_OPENAI},
        {"openrouter-chat-comments.sse", MOTE_PROVIDER_OPENAI},
    };
    const char *dir = argc > 1 ? argv[1] : "../shared/fixtures";
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    char *buf[10];
    size_t len[10], total = 0, i;
    double secs[9];
    int r, k;

    for (i = 0; i < 10; i++) {
        buf[i] = load(dir, files[i].file, &len[i]);
        if (buf[i] == NULL) {
            fprintf(stderr, "bench_parse: %s/%s missing\n", dir, files[i].file);
            return 1;
        }
        total += len[i];
    }
    for (k = 0; k < (rounds > 1 ? 9 : 1); k++) {
        struct timespec a, b;

        events = 0;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (r = 0; r < rounds; r++) {
            for (i = 0; i < 10; i++) {
                mote_llm_dec_init(&dec, files[i].p, on_llm, NULL);
                mote_sse_init(&sse, on_sse, NULL);
                (void)mote_sse_feed(&sse, buf[i], len[i]);
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        secs[k] = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    }
    qsort(secs, (size_t)(rounds > 1 ? 9 : 1), sizeof(double), cmp);
    printf("bytes per round %zu, events per round %lu, rounds %d\n", total,
           events / (unsigned long)rounds, rounds);
    printf("median %.1f MB/s (%.3f s for %d rounds)\n",
           (double)total * rounds / secs[rounds > 1 ? 4 : 0] / 1e6, secs[rounds > 1 ? 4 : 0],
           rounds);
    return 0;
}
