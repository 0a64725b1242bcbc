/* model_kit.h - the scripted model the agent's and the server's tests
 * talk to (test helper): its client conf and the conversation conf that
 * uses it, as this file's statics. */
#ifndef MOTE_TEST_MODEL_KIT_H
#define MOTE_TEST_MODEL_KIT_H

#include <string.h>

#include "mote/mote_agent.h"

static struct mote_llm_conf llm;
static struct mote_conv_conf cc;

/* The model at http://model.test (the scripted network), one attempt a
 * request; the conversations' model "m" (the rest of cc zero). */
static inline void kit_model(void)
{
    mote_llm_conf_defaults(&llm);
    llm.base_url = "http://model.test";
    llm.api_key = "k";
    llm.max_attempts = 1;
    memset(&cc, 0, sizeof(cc));
    cc.llm = &llm;
    cc.model = "m";
}

#endif
