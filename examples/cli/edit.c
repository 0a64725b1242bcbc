/*
 * edit.c - the terminal under the library's line editor (see edit.h):
 * raw mode in and out, the window's width before each redraw, and the
 * screen written to a file descriptor.
 */
#include "edit.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct mote_edit ed;
static bool ready, active;
static int in_fd = -1, out_fd = -1;
static struct termios saved;

static int screen(void *arg, const char *p, size_t n)
{
    (void)arg;
    while (n > 0) {
        ssize_t w = write(out_fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void prepare(void)
{
    if (!ready)
        mote_edit_init(&ed, screen, NULL);
    ready = true;
}

/* The window may have changed since the last redraw. */
static void measure(void)
{
    struct winsize ws;

    mote_edit_set_width(&ed, ioctl(out_fd, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0);
}

int ed_enter(int in, int out)
{
    struct termios t;

    prepare();
    if (active)
        return 0;
    if (tcgetattr(in, &saved) < 0)
        return -1;
    t = saved;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
    t.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(in, TCSANOW, &t) < 0)
        return -1;
    in_fd = in;
    out_fd = out;
    active = true;
    return 0;
}

void ed_leave(void)
{
    if (!active)
        return;
    mote_edit_end(&ed);
    (void)tcsetattr(in_fd, TCSANOW, &saved);
    active = false;
}

bool ed_active(void)
{
    return active;
}

bool ed_started(void)
{
    return ready && mote_edit_started(&ed);
}

void ed_start(const char *prompt, size_t w)
{
    prepare();
    measure();
    mote_edit_start(&ed, prompt, w);
}

enum ed_result ed_feed(const char *in, size_t n, size_t *used, char *out, size_t *len)
{
    enum mote_edit_result r;

    measure();
    r = mote_edit_feed(&ed, in, n, used);
    if (r == MOTE_EDIT_LINE) {
        const char *line = mote_edit_line(&ed, len);

        memcpy(out, line, *len + 1);
    }
    return (enum ed_result)r;
}

void ed_history_add(const char *line, size_t n)
{
    prepare();
    mote_edit_history_add(&ed, line, n);
}
