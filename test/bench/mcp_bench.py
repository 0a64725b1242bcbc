#!/usr/bin/env python3
"""MCP figures for docs/BENCHMARKS.md: the time of one tool call through
each transport of @modelcontextprotocol/server-everything (stdio, HTTP+SSE,
Streamable HTTP), as the CLI sees it: from its tool_call event to its
tool_result event in --output-format stream-json (the approval, the journal's
sync before the tool runs and the result's record are in it, the same for
every transport; the state directory is on tmpfs, /dev/shm where there is
one, so the disk's sync time does not hide the transport's). One one-shot turn of ROUNDS calls of `echo` per
transport; the median and the 90th percentile of the calls, and the first
call apart (it opens the connection).

    mcp_bench.py BUILDDIR [ROUNDS]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import ROOT, TMP, free_port, wait_listening  # noqa: E402

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
MOTE = os.path.join(B, "mote")
EV = os.path.join(ROOT, ".deps", "npm", "node_modules", "@modelcontextprotocol",
                  "server-everything", "dist", "index.js")
PROCS = []



def llm(script):
    pf = os.path.join(TMP, "port%d" % len(PROCS))
    sp = pf + ".json"
    with open(sp, "w") as f:
        json.dump(script, f)
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "test", "llm_server.py"),
                          "--port-file", pf, "--script", sp, "--lifetime", "300", "--no-rules"])
    PROCS.append(p)
    while not os.path.exists(pf):
        time.sleep(0.02)
    return int(open(pf).read())


def server_conf(mode):
    if mode == "stdio":
        return {"command": "node", "args": [EV, "stdio"]}
    port = free_port()
    p = subprocess.Popen(["node", EV, mode], env=dict(os.environ, PORT=str(port)),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    PROCS.append(p)
    if not wait_listening(port, p):
        raise RuntimeError("server-everything did not listen")
    if mode == "sse":
        return {"type": "sse", "url": "http://127.0.0.1:%d/sse" % port}
    return {"type": "http", "url": "http://127.0.0.1:%d/mcp" % port}


def one(mode):
    script = [{"tool": "ev__echo", "input": {"message": "call %d" % i}} for i in range(ROUNDS)]
    port = llm(script + [{"text": "done"}])
    cfg = os.path.join(TMP, "mcp-%s.json" % mode)
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"ev": server_conf(mode)}}, f)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(ANTHROPIC_API_KEY="bench", NO_COLOR="1")
    state = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else TMP)
    p = subprocess.Popen([MOTE, "--state-dir", state, "--base-url",
                          "http://127.0.0.1:%d" % port, "--mcp-config", cfg, "-p", "x", "--yes",
                          "--max-turns", str(ROUNDS + 5), "--output-format", "stream-json"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    started, took = {}, []
    for line in p.stdout:
        now = time.monotonic()
        ev = json.loads(line)
        if ev.get("type") == "tool_call":
            started[ev["id"]] = now
        elif ev.get("type") == "tool_result" and ev["id"] in started:
            took.append((now - started[ev["id"]]) * 1000)
    p.wait()
    subprocess.run(["rm", "-rf", state])
    if p.returncode != 0 or len(took) != ROUNDS:
        raise RuntimeError("%s: exit %d, %d calls" % (mode, p.returncode, len(took)))
    rest = sorted(took[1:])
    return took[0], statistics.median(rest), rest[int(len(rest) * 0.9)]


def main():
    try:
        if not os.path.exists(EV):
            print("mcp bench: server-everything is not installed (make deps); skipped")
            return 0
        for mode in ("stdio", "sse", "streamableHttp"):
            first, med, p90 = one(mode)
            print("MCP tool call (echo), %-14s: median %.2f ms, p90 %.2f ms, first %.2f ms "
                  "(%d calls)" % (mode, med, p90, first, ROUNDS))
    finally:
        for p in PROCS:
            p.kill()
            p.wait()
        shutil.rmtree(TMP, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
