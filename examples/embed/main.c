/*
 * embed - an embedder's own agent on libmote, on mote's own loop: one
 * conversation, a custom tool ("read_sensor"), the model's answer printed
 * as it streams; SIGTERM lets the answer finish, Ctrl+C cancels it.
 * The agent is device.c's; loop.c runs the same one inside libev.
 *
 *   MOTE_EMBED_URL=http://127.0.0.1:8080 build/embed "how warm is it?"
 *
 * The state (the conversation's journal) goes to ./embed-state.
 */
#include "device.h"

static struct device d;

int main(int argc, char **argv)
{
    if (device_start(&d, argc > 1 ? argv[1] : "How warm is it?") != 0)
        return 1;
    /* Run until the turn ends or a signal begins the shutdown. Then
     * mote_shutdown joins the shutdown a signal began (a drain stays a
     * drain: the answer finishes) or begins one, and runs the loop until
     * the journals, history and MCP servers are done. */
    while (mote_conv_busy(d.conv) && !mote_shutting_down(&d.ses)) {
        if (mote_loop_poll(&d.loop, -1) < 0)
            break;
    }
    (void)mote_shutdown(&d.ses, &device_done, NULL);
    return device_finish(&d);
}
