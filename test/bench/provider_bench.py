#!/usr/bin/env python3
"""What the provider profiles cost the reference APIs: the request body's
bytes and mote's CPU per model request, for a turn of three tool rounds
and an answer, against the test LLM server (reference profile) in the
Anthropic and the OpenAI dialect; the medians of N runs of each binary
given.

    provider_bench.py MOTE [MOTE2 ...] [--runs N]

Prints one line per binary and dialect: the bytes of each request body
(the same every run: they are a function of the conversation) and the
median CPU (user + system) per request, in ms.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(os.path.dirname(HERE), "llm_server.py")
SCRIPT = [{"tool": "list_dir", "input": {"path": "/"}},
          {"tool": "read_file", "input": {"path": "/etc/hostname"}},
          {"tool": "list_dir", "input": {"path": "/usr"}},
          {"text": "Done: the three were read, and here is what they hold. " * 4}]


def server(tmp):
    tmp = tempfile.mkdtemp(dir=tmp)  # its own port file: not the one of the server before
    script = os.path.join(tmp, "script.json")
    with open(script, "w") as f:
        json.dump(SCRIPT * 200, f)
    port_file, log = os.path.join(tmp, "port"), os.path.join(tmp, "log")
    p = subprocess.Popen([sys.executable, SERVER, "--port-file", port_file, "--log", log,
                          "--script", script, "--lifetime", "600"])
    deadline = time.time() + 10
    while not os.path.exists(port_file) and time.time() < deadline:
        time.sleep(0.02)
    with open(port_file) as f:
        return p, int(f.read()), log


def run(mote, port, dialect, tmp):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["ANTHROPIC_API_KEY" if dialect == "anthropic" else "OPENAI_API_KEY"] = "sk-bench"
    state = tempfile.mkdtemp(dir=tmp)
    p = subprocess.Popen([mote, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                          "--provider", dialect, "-p", "Read three things.", "--yes", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("%s failed" % mote)
    return ru.ru_utime + ru.ru_stime


def main():
    args = sys.argv[1:]
    runs = 9
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        del args[i:i + 2]
    tmp = tempfile.mkdtemp(prefix="provider-bench-")
    for mote in map(os.path.abspath, args):
        for dialect in ("anthropic", "openai"):
            srv, port, log = server(tmp)
            try:
                cpu = []
                for _ in range(runs):
                    before = sum(1 for _ in open(log)) if os.path.exists(log) else 0
                    t = run(mote, port, dialect, tmp)
                    with open(log) as f:
                        reqs = [json.loads(x) for x in f][before:]
                    cpu.append(1000.0 * t / len(reqs))
                sizes = [len(r["raw"].encode()) for r in reqs]
            finally:
                srv.kill()
                srv.wait()
            print("%-40s %-9s requests %d, body bytes %s, CPU per request %.2f ms (median of %d)"
                  % (mote, dialect, len(sizes), sizes, statistics.median(cpu), runs))


if __name__ == "__main__":
    main()
