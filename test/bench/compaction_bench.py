#!/usr/bin/env python3
"""Issue 13's long-conversation figure for docs/BENCHMARKS.md: the request
one more turn costs in a 500-turn conversation, before and after the
conversation was compacted - the request body's bytes (from the test
server's log) and mote's CPU time (user + system, getrusage of the child)
for a whole one-shot `--continue -p` run, median of 7.

    compaction_bench.py BUILDDIR [TURNS]
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
TURNS = int(sys.argv[2]) if len(sys.argv) > 2 else 500
MOTE = os.path.join(B, "mote")
TMP = tempfile.mkdtemp(prefix="mote-cbench-")
RUNS = 7


def server(script):
    pf = os.path.join(TMP, "port%d" % len(os.listdir(TMP)))
    with open(pf + ".json", "w") as f:
        json.dump(script, f)
    log = pf + ".log"
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "test", "llm_server.py"),
                          "--port-file", pf, "--script", pf + ".json", "--log", log,
                          "--lifetime", "600"])
    while not os.path.exists(pf):
        time.sleep(0.02)
    return p, int(open(pf).read()), log


def journal(state):
    d = os.path.join(state, "conversations")
    os.makedirs(d)
    with open(os.path.join(d, "long.jsonl"), "w") as f:
        f.write(json.dumps({"t": "open", "v": 2, "id": "long"}) + "\n")
        for i in range(TURNS):
            f.write(json.dumps({"t": "user", "text": "question %d: " % i + "q" * 200}) + "\n")
            f.write(json.dumps({"t": "request", "attempt": 1}) + "\n")
            f.write(json.dumps({"t": "assistant", "text": "answer %d: " % i + "a" * 800,
                                "stop": "end_turn",
                                "usage": {"in": 1000 + i * 300, "out": 200}}) + "\n")
    with open(os.path.join(state, "current"), "w") as f:
        f.write("long\n")


def env():
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = "sk-bench"
    return e


def one(port, state, log):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "--context-window", "100000000", "--continue", "-p", "one more"],
                       capture_output=True, text=True, env=env(), timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit("mote failed: " + p.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(log) as f:
        last = f.readlines()[-1]
    return cpu * 1000, len(json.dumps(json.loads(last)["body"]).encode())


def measure(state, label):
    srv, port, log = server([{"text": "ok"}] * RUNS)
    try:
        runs = [one(port, state, log) for _ in range(RUNS)]
    finally:
        srv.kill()
    cpu = statistics.median(r[0] for r in runs)
    size = statistics.median(r[1] for r in runs)
    print("%s: request body %d bytes, mote CPU %.1f ms (median of %d)" % (label, size, cpu, RUNS))
    return size, cpu


def main():
    state = tempfile.mkdtemp(prefix="state-", dir=TMP)
    journal(state)
    size = os.path.getsize(os.path.join(state, "conversations", "long.jsonl"))
    print("a %d-turn conversation, journal %d bytes" % (TURNS, size))
    b_size, b_cpu = measure(state, "before compaction")
    srv, port, log = server([{"text": "SUMMARY: the user asked %d questions." % TURNS}])
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "--continue"], input="/compact\n/quit\n", capture_output=True, text=True,
                       env=env(), timeout=120)
    srv.kill()
    if p.returncode != 0 or "compacted" not in p.stderr:
        raise SystemExit("compaction failed: " + p.stderr)
    a_size, a_cpu = measure(state, "after compaction")
    print("ratio: body %.1fx smaller, CPU %.1fx less" % (b_size / a_size, b_cpu / a_cpu))


if __name__ == "__main__":
    main()
