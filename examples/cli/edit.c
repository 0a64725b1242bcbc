/*
 * edit.c - the terminal under the library's line editor (see edit.h):
 * raw mode in and out, the window's width before each redraw, and the
 * screen written to a file descriptor.
 */
#define _GNU_SOURCE
#include "edit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "mote/mote_loop.h"

static struct mote_edit ed;
static bool ready, active;
static int in_fd = -1, out_fd = -1;
static struct termios saved, raw;
static int sig_pipe[2] = {-1, -1};
static bool resumed; /* the line was drawn again after our own stop */

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
    raw = t;
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

/* ---- the terminal's signals ---- */

static void on_term_signal(int sig)
{
    int saved_errno = errno;
    unsigned char b = (unsigned char)sig;

    (void)!write(sig_pipe[1], &b, 1);
    errno = saved_errno;
}

static void catch(int sig)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_term_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, NULL);
}

static void on_pipe(struct mote_loop *l, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    unsigned char sigs[16];
    ssize_t n = read(fd, sigs, sizeof(sigs)), i;

    (void)l, (void)w, (void)revents, (void)arg;
    for (i = 0; i < n; i++) {
        if (sigs[i] == SIGTSTP) {
            /* The terminal as it was, then stop for real (SIGCONT below
             * takes it back). */
            if (active) {
                mote_edit_end(&ed);
                (void)tcsetattr(in_fd, TCSANOW, &saved);
            }
            signal(SIGTSTP, SIG_DFL);
            raise(SIGTSTP);
            catch(SIGTSTP);
            /* Going on: after fg, or at once when the kernel would not
             * stop an orphaned process group (no SIGCONT comes then). */
            if (active) {
                (void)tcsetattr(in_fd, TCSANOW, &raw);
                measure();
                mote_edit_redraw(&ed, true);
                resumed = true;
            }
        } else if (sigs[i] == SIGCONT) {
            if (active) {
                (void)tcsetattr(in_fd, TCSANOW, &raw);
                measure();
                if (!resumed) /* a stop by another hand (SIGSTOP) */
                    mote_edit_redraw(&ed, true);
            }
            resumed = false;
        } else if (sigs[i] == SIGWINCH) {
            if (active) {
                measure();
                mote_edit_redraw(&ed, false);
            }
        }
    }
}

int ed_watch_signals(struct mote_loop *loop)
{
    mote_watch_id w;

    prepare();
    if (sig_pipe[0] >= 0)
        return 0;
    if (pipe(sig_pipe) < 0)
        return -1;
    fcntl(sig_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
    fcntl(sig_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[1], F_SETFD, FD_CLOEXEC);
    if (mote_watch_add(loop, sig_pipe[0], MOTE_POLL_IN, on_pipe, NULL, 0, &w) < 0)
        return -1;
    catch(SIGTSTP);
    catch(SIGCONT);
    catch(SIGWINCH);
    return 0;
}
