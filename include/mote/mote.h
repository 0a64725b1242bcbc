/*
 * mote.h - the umbrella header of libmote.
 *
 * mote is a small C library for running an LLM agent loop on constrained
 * devices: a single-threaded event loop with a static job table, a port
 * layer for everything the OS provides, and (as they land) the HTTP/SSE
 * client, the providers, the journal and the tools.
 */
#ifndef MOTE_H
#define MOTE_H

#include "mote/mote_cancel.h"
#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_loop.h"
#include "mote/mote_mqtt.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOTE_VERSION_MAJOR 0
#define MOTE_VERSION_MINOR 1
#define MOTE_VERSION_PATCH 0
#define MOTE_VERSION_STRING "0.1.0"

/* The library's version string (may differ from MOTE_VERSION_STRING if the
 * headers and the library come from different builds). */
const char *mote_version(void);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_H */
