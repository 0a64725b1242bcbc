// cxx_probe.cc - a C++ program on libmote: the public headers' functions
// link from C++ (extern "C"), and their structs are laid out as the
// library's (mote_posix_init and mote_loop_init check the configuration's
// signature; a session, whose stream areas are aligned with alignas in
// C++, starts and stops on them).
#include <cstdio>
#include <cstring>

#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_posix.h"

static struct mote_posix pp;
static struct mote_loop loop;
static struct mote_session ses;

static bool same(const char *got, const char *want)
{
    if (std::strcmp(got, want) == 0)
        return true;
    std::fprintf(stderr, "cxx_probe: %s, not %s\n", got, want);
    return false;
}

static void on_event(void *, const struct mote_event *)
{
}

int main()
{
    struct mote_session_conf sc;
    int rc;

    mote_session_conf_defaults(&sc);
    sc.on_event = on_event;
    rc = mote_posix_init(&pp);
    if (rc == 0)
        rc = mote_loop_init(&loop, &pp.port);
    if (rc == 0)
        rc = mote_session_init(&ses, &loop, &sc);
    if (rc < 0) {
        std::fprintf(stderr, "cxx_probe: cannot start: %s\n", mote_err_name(rc));
        return 1;
    }
    if (!same(mote_recovery_name(MOTE_RECOVER_TOOL_INTERRUPTED), "tool_interrupted") ||
        !same(mote_err_name(MOTE_ERR_AUTH), "auth") ||
        !same(mote_conv_state_name(MOTE_CONV_IDLE), "idle"))
        return 1;
    mote_session_deinit(&ses);
    mote_loop_deinit(&loop);
    mote_posix_deinit(&pp);
    std::printf("cxx_probe: a C++ program ran a session of libmote %s\n", mote_version());
    return 0;
}
