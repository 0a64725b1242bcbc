#!/usr/bin/env python3
"""mote serve's MCP server for docs/BENCHMARKS.md: the time of one tool
call from the official MCP TypeScript SDK's client (callTool, as the
client measures it: its request out, the answer in), through Streamable
HTTP on loopback TCP and through `mote mcp` on stdio - the approval
policy, the calls journal's synced records (the state directory on
/dev/shm, so the disk's sync does not hide the rest) and list_dir of a
small directory included - the median of ROUNDS calls after one to warm
up; and the RSS `mote serve` adds per MCP session: VmRSS after N
sessions initialized, then after each of them made a call (its calls
conversation made and loaded), against the idle server.

    mcpserver_bench.py BUILDDIR [ROUNDS] [SESSIONS]
"""
import http.client
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import ROOT, TMP, free_port, proc_status  # noqa: E402

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
SESSIONS = int(sys.argv[3]) if len(sys.argv) > 3 else 8
MOTE = os.path.join(B, "mote")
DRIVER = os.path.join(ROOT, "test", "integration", "mcp_sdk_client.js")
TOKEN = "bench-token-0123456789abcdef"
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None


def env():
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = "k"
    e["MOTE_SERVE_TOKEN"] = TOKEN
    return e



class Sdk:
    def __init__(self):
        self.p = subprocess.Popen(["node", DRIVER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env())
        self.q = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            self.q.put(json.loads(line))

    def until(self, pred):
        deadline = time.time() + 60
        while time.time() < deadline:
            ev = self.q.get(timeout=60)
            if pred(ev):
                return ev
        raise RuntimeError("timed out")

    def do(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        if cmd["op"] == "call":
            return self.until(lambda e: e.get("id") == cmd["id"] and e.get("event") in
                              ("result", "error"))
        return self.until(lambda e: e.get("event") == "done" and e.get("op") == cmd["op"])

    def close(self):
        self.p.stdin.close()
        self.p.wait(20)


def calls(sdk, path):
    out = []
    for i in range(ROUNDS + 1):
        r = sdk.do(op="call", id="c%d" % i, name="list_dir", args={"path": path})
        if r["event"] != "result" or r["result"].get("isError"):
            raise RuntimeError("a call failed: %s" % r)
        if i > 0:
            out.append(r["ms"])
    return out


def raw_calls(port, path):
    """The same call from a minimal client (Python's http.client, one
    kept connection): the server's share of the SDK's figure."""
    c = http.client.HTTPConnection("127.0.0.1", port)
    h = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream"}
    c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": {"protocolVersion": "2025-06-18",
                                                     "capabilities": {},
                                                     "clientInfo": {"name": "raw"}}}), h)
    r = c.getresponse()
    h["Mcp-Session-Id"] = r.getheader("Mcp-Session-Id")
    r.read()
    out = []
    for i in range(ROUNDS + 1):
        t = time.perf_counter()
        c.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
                                              "params": {"name": "list_dir",
                                                         "arguments": {"path": path}}}), h)
        r = c.getresponse()
        body = r.read()
        if b'"isError":false' not in body:
            raise RuntimeError("a raw call failed: %r" % body[:200])
        if i > 0:
            out.append((time.perf_counter() - t) * 1000)
    c.close()
    return out


def main():
    state = tempfile.mkdtemp(prefix="mote-mcpsb-", dir=SHM)
    small = os.path.join(state, "dir")
    os.mkdir(small)
    for n in ("a", "b", "c"):
        open(os.path.join(small, n), "w").close()
    port = free_port()
    err = open(os.path.join(state, "serve.err"), "w")
    srv = subprocess.Popen([MOTE, "serve", "--state-dir", state, "--listen",
                            "127.0.0.1:%d" % port, "--allow", "list_dir"],
                           stdin=subprocess.DEVNULL, stderr=err, env=env())
    deadline = time.time() + 10
    while "listening on" not in open(err.name).read():
        if time.time() > deadline:
            raise RuntimeError("mote serve did not start")
        time.sleep(0.05)
    url = "http://127.0.0.1:%d/mcp" % port
    time.sleep(0.5)
    r0 = proc_status(srv.pid, "VmRSS")
    # sessions: initialized, then a call each
    clients = []
    for _ in range(SESSIONS):
        sdk = Sdk()
        sdk.do(op="connect", transport="http", url=url, token=TOKEN)
        clients.append(sdk)
    r_init = proc_status(srv.pid, "VmRSS")
    for i, sdk in enumerate(clients):
        sdk.do(op="call", id="w%d" % i, name="list_dir", args={"path": small})
    r_call = proc_status(srv.pid, "VmRSS")
    # the timed calls, over HTTP
    http = calls(clients[0], small)
    raw = raw_calls(port, small)
    for sdk in clients:
        sdk.close()
    srv.terminate()
    srv.wait(20)
    # and over stdio
    sdk = Sdk()
    sdk.do(op="connect", transport="stdio", command=MOTE,
           args=["mcp", "--state-dir", state, "--allow", "list_dir"], env=env())
    stdio = calls(sdk, small)
    sdk.close()

    def fig(v):
        return "median %.2f ms (min %.2f, max %.2f)" % (statistics.median(v), min(v), max(v))
    print("mcp tool call (list_dir), Streamable HTTP: %s, %d calls" % (fig(http), len(http)))
    print("mcp tool call (list_dir), Streamable HTTP from http.client: %s, %d calls" % (fig(raw), len(raw)))
    print("mcp tool call (list_dir), stdio (mote mcp): %s, %d calls" % (fig(stdio), len(stdio)))
    print("RSS idle %d kB; %d sessions initialized %d kB (+%.1f kB each); after a call each "
          "%d kB (+%.1f kB each)" % (r0, SESSIONS, r_init, (r_init - r0) / SESSIONS, r_call,
                                     (r_call - r0) / SESSIONS))


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)  # the harness's, made at its import
