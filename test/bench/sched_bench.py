#!/usr/bin/env python3
"""The schedules' kill sweep at length, for docs/BENCHMARKS.md: a
schedule every 2 s, `mote serve` killed with SIGKILL at random moments
(RUNS times, at least 100) and started again, then every occurrence
accounted for - run exactly once (one user record with its request id)
or journaled skipped with its reason; none twice, none vanished.

    python3 test/bench/sched_bench.py BUILDDIR [RUNS] [SEED]
BUILDDIR is a normal (not sanitizer) build. Prints the figures as one
JSON line and exits 1 if an occurrence ran twice or vanished.
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
import sched_sweep  # noqa: E402


def main():
    build = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 35
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["ANTHROPIC_API_KEY"] = "sk-ant-BENCH-sched"
    env.pop("MOTE_SERVE_TOKEN", None)
    port, _ = harness.start_server()
    state = tempfile.mkdtemp(prefix="sweep-", dir=harness.TMP)
    t0 = time.time()
    try:
        res = sched_sweep.sweep(os.path.join(build, "mote"), port, state, runs, seed, env,
                                lambda m: print(m, file=sys.stderr) if m.endswith("0") else None)
    except AssertionError as e:
        print("sched-bench: FAILED: %s" % e)
        return 1
    finally:
        for p in harness.SERVERS:
            p.kill()
            p.wait()
        shutil.rmtree(harness.TMP, ignore_errors=True)
    res["seconds"] = round(time.time() - t0, 1)
    res["restart_median_s"] = round(res["restart_median_s"], 3)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
