/* probe_out.h - the probes' JSON lines on stdout: a sink for mote's JSON
 * writer and a ,"key":"escaped" member. (Included by llm_probe.c and
 * mqtt_probe.c.) */
#ifndef PROBE_OUT_H
#define PROBE_OUT_H

#include <stdio.h>

#include "mote/mote_json.h"

static inline int sink_stdout(void *arg, const char *p, size_t n)
{
    (void)arg;
    fwrite(p, 1, n, stdout);
    return 0;
}

static inline void jstr(const char *key, const char *s, size_t n)
{
    printf(",\"%s\":\"", key);
    mote_json_escape_to(sink_stdout, NULL, s, n);
    printf("\"");
}

#endif
