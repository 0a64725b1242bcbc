#!/usr/bin/env python3
"""Issue 11.4's figure for docs/BENCHMARKS.md: SIGINT to exit while the
model server floods SSE pings (4 MB writes, faster than mote parses),
median and max of 20 runs. The time is from the signal to the exit seen
by waitpid (mote's shutdown included).

    flood_bench.py BUILDDIR [RUNS]
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
sys.argv = [sys.argv[0], B]

from test_core import flood_server  # noqa: E402


def one(tmp):
    port, got = flood_server(30)
    state = tempfile.mkdtemp(dir=tmp)
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = "sk-bench"
    p = subprocess.Popen([os.path.join(B, "mote"), "--state-dir", state, "--base-url",
                          "http://127.0.0.1:%d" % port, "-p", "x"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e)
    if not got.wait(20):
        raise SystemExit("no request")
    time.sleep(0.2)  # well into the flood
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=60)
    took = time.monotonic() - t0
    if rc != 130:
        raise SystemExit("exit %d, not 130" % rc)
    return took * 1000.0


def main():
    tmp = tempfile.mkdtemp(prefix="mote-fbench-")
    ms = [one(tmp) for _ in range(RUNS)]
    print("SIGINT to exit under an SSE ping flood, %d runs: median %.1f ms, max %.1f ms"
          % (RUNS, statistics.median(ms), max(ms)))


if __name__ == "__main__":
    main()
