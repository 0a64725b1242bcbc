/* mqtt_drain.h - everything an MQTT session wants to write at a moment,
 * taken into a buffer and all of it "sent" (the session's unit tests and
 * its fuzz target). */
#ifndef MQTT_DRAIN_H
#define MQTT_DRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_mqtt.h"

/* Takes the output of `s` at `now` into w (cap bytes), at most `rounds`
 * pieces, each told sent. Returns the bytes taken, or (size_t)-1 when a
 * piece does not fit in what is left of w (that piece neither taken nor
 * sent). */
static inline size_t mqtt_drain(struct mote_mqtt_sess *s, uint32_t now, uint8_t *w, size_t cap,
                                unsigned rounds)
{
    size_t total = 0;
    unsigned k;

    for (k = 0; k < rounds; k++) {
        const uint8_t *p;
        size_t n = mote_mqtt_sess_out(s, now, &p);

        if (n == 0)
            break;
        if (n > cap - total)
            return (size_t)-1;
        memcpy(w + total, p, n);
        mote_mqtt_sess_sent(s, now, n);
        total += n;
    }
    return total;
}

#endif
