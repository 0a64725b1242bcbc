#!/usr/bin/env python3
"""How long GET /v1/health waits while `mote serve` does slow work, for
docs/BENCHMARKS.md: the list of 24 journals of 4 MB each (written while
the server runs, so none was read at its start) and edit_file on an
8 MiB file, at the same moment, with /v1/health asked again and again on
another connection. Prints the worst and the median answer of each run
and the worst of all runs.

    python3 test/bench/health_bench.py BUILDDIR [RUNS]
BUILDDIR is a normal (not sanitizer) build.
"""
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
import test_service  # noqa: E402
from test_serve import Serve  # noqa: E402


def one_run():
    state = tempfile.mkdtemp(prefix="hb-", dir=harness.TMP)
    big, script = test_service.edit_setup(state)
    port, _ = harness.start_server(script)
    s = Serve(port, state, args=["--keep", "0", "--keep-bytes", "0", "--allow", "edit_file"])
    try:
        cid = s.create()
        test_service.big_journals(state)
        times, took, _ = test_service.list_and_edit(s, state, cid)
    finally:
        s.stop()
        shutil.rmtree(state, ignore_errors=True)
    return times, took


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    test_service.MOTE = os.path.join(build, "mote")
    import test_serve
    test_serve.MOTE = test_service.MOTE
    worst_all = 0.0
    try:
        for i in range(runs):
            times, took = one_run()
            worst = max(times)
            worst_all = max(worst_all, worst)
            print("run %d: health answered %d times, worst %.1f ms, median %.2f ms; the list "
                  "took %.2f s" % (i + 1, len(times), worst * 1000,
                                   statistics.median(times) * 1000, took))
    finally:
        for p in harness.SERVERS:
            p.kill()
            p.wait()
        shutil.rmtree(harness.TMP, ignore_errors=True)
    print("health while the list reads 24 x 4 MB and edit_file changes 8 MiB: worst %.1f ms "
          "in %d runs" % (worst_all * 1000, runs))


if __name__ == "__main__":
    main()
