#!/usr/bin/env python3
"""mote serve's figures for docs/BENCHMARKS.md:

  - RSS of an idle `mote serve`, listening (median of 5);
  - RSS (VmHWM, the peak) of `mote serve` with four conversations whose
    answers stream at the same moment, each followed by an event stream;
  - the time from SIGTERM to exit, median of N runs: an idle server, a turn
    that finishes during the drain, and a stalled turn cut by
    --shutdown-timeout.

    python3 test/bench/serve_bench.py BUILDDIR [RUNS]
BUILDDIR is a normal (not sanitizer) build: build, or a build made with
-DMOTE_MAX_STREAMS=4 to let four answers stream at once.
"""
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from test_serve import Events, Serve  # noqa: E402
import test_serve  # noqa: E402



def rss_idle(runs=5):
    """VmRSS of a server that listens and has nothing to do, median."""
    port, _ = harness.start_server()
    vals = []
    for _ in range(runs):
        s = Serve(port)
        try:
            time.sleep(0.5)
            vals.append(harness.proc_status(s.p.pid, "VmRSS"))
        finally:
            s.stop()
    return statistics.median(vals), min(vals), max(vals)


def rss_cli_idle(runs=5):
    """VmRSS of the interactive CLI waiting at its prompt in a pty, median
    (what the idle server compares with)."""
    import pty
    import select
    vals = []
    for _ in range(runs):
        st = tempfile.mkdtemp(prefix="serve-bench-")
        pid, fd = pty.fork()
        if pid == 0:
            os.environ["ANTHROPIC_API_KEY"] = "sk-bench"
            os.execv(test_serve.MOTE, [test_serve.MOTE, "--state-dir", st, "--base-url",
                                       "http://127.0.0.1:9"])
        seen, t0 = b"", time.monotonic()
        while b"> " not in seen and time.monotonic() - t0 < 10:
            if select.select([fd], [], [], 1)[0]:
                seen += os.read(fd, 4096)
        vals.append(harness.proc_status(pid, "VmRSS"))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
        shutil.rmtree(st, ignore_errors=True)
    return statistics.median(vals), min(vals), max(vals)


def rss_four_streams():
    words = "word " * 400
    port, _ = harness.start_server([{"text": words, "delay_ms": 4} for _ in range(8)])
    s = Serve(port)
    try:
        ids = [s.create() for _ in range(4)]
        evs = [Events(s.sock, i) for i in ids]
        for e in evs:
            e.wait(lambda v: v["event"] == "state", "caught up")
        base = harness.proc_status(s.p.pid, "VmRSS")
        for i in ids:
            s.say(i, "talk")
        most = 0
        streaming_max = 0
        deadline = time.time() + 60
        while time.time() < deadline:
            st, h = s.req("GET", "/v1/health")
            states = [s.state_of(i) for i in ids]
            streaming_max = max(streaming_max, states.count("streaming"))
            most = max(most, harness.proc_status(s.p.pid, "VmRSS"))
            if all(x == "idle" for x in states):
                break
            time.sleep(0.02)
        peak = harness.proc_status(s.p.pid, "VmHWM")
        for e in evs:
            e.close()
        return base, most, peak, streaming_max
    finally:
        s.stop()


def sigterm_times(runs):
    idle, finishing, stalled = [], [], []
    port, _ = harness.start_server([{"text": "done " * 20, "delay_ms": 10}
                                    if k % 2 == 0 else {"stall": 60, "after_text": "stuck"}
                                    for k in range(2 * runs)])
    for _ in range(runs):
        s = Serve(port)
        t0 = time.time()
        s.kill(signal.SIGTERM)
        s.wait(30)
        idle.append(time.time() - t0)
    for k in range(2 * runs):
        s = Serve(port, args=["--shutdown-timeout", "1000"])
        _, ev, t0 = s.signal_streaming_turn(signal.SIGTERM, "go")
        code = s.wait(30)
        (finishing if k % 2 == 0 else stalled).append(time.time() - t0)
        assert code == (0 if k % 2 == 0 else 143), code
        ev.close()
    return idle, finishing, stalled


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    test_serve.MOTE = os.path.join(build, "mote")
    try:
        print("RSS of an idle server, listening, median of 5: %d kB (min %d, max %d)"
              % rss_idle())
        print("RSS of the CLI at its prompt (a pty), median of 5: %d kB (min %d, max %d)"
              % rss_cli_idle())
        base, most, peak, streaming = rss_four_streams()
        print("four conversations answering, each with an event stream: RSS %d kB before the "
              "turns, %d kB at most while they ran, VmHWM %d kB; at most %d streaming at once"
              % (base, most, peak, streaming))
        idle, fin, stalled = sigterm_times(runs)
        ms = lambda xs: "%.1f ms (min %.1f, max %.1f)" % (statistics.median(xs) * 1000,
                                                         min(xs) * 1000, max(xs) * 1000)
        print("SIGTERM to exit, idle server, median of %d: %s" % (runs, ms(idle)))
        print("SIGTERM to exit, a turn that finishes in the drain, median of %d: %s"
              % (runs, ms(fin)))
        print("SIGTERM to exit, a stalled turn, --shutdown-timeout 1000, median of %d: %s"
              % (runs, ms(stalled)))
    finally:
        for p in harness.SERVERS:
            p.kill()
        shutil.rmtree(harness.TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
