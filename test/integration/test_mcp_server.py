#!/usr/bin/env python3
"""Integration tests of mote serve's MCP server (/mcp, Streamable HTTP;
`mote mcp` on stdio) and its OpenAI-compatible endpoint, with the real
clients: the official MCP TypeScript SDK's client and the official
`openai` npm client (through test/integration/mcp_sdk_client.js, from
.deps/npm: make deps), and mote itself as the MCP client of another
mote; kill -9 while a call runs; hostile clients on raw sockets.
Without node or the clients a test is skipped with the reason, but
never when MOTE_CI=1 (.ci/run sets it): there it fails.

    test_mcp_server.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import ROOT, SERVERS, TMP, Skip, check, requests_in, run_all, start_server, wait_for
from harness import free_port, journal_of as journal, proc_status

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-mcpserver"
TOKEN = "test-token-0123456789abcdef"
DRIVER = os.path.join(ROOT, "test", "integration", "mcp_sdk_client.js")
NPM = os.path.join(ROOT, ".deps", "npm", "node_modules")
CI = os.environ.get("MOTE_CI") == "1"  # .ci/run: a missing client fails, never skips


def cannot(why):
    """A real client cannot run here: skipped, but a failure on CI."""
    if CI:
        raise AssertionError(why + " (MOTE_CI=1: the real clients must run)")
    raise Skip(why)


def need_sdk():
    if shutil.which("node") is None:
        cannot("no node: make deps installs it")
    for pkg in ("@modelcontextprotocol/sdk", "openai"):
        if not os.path.exists(os.path.join(NPM, pkg, "package.json")):
            cannot("%s is not in .deps/npm: make deps installs it" % pkg)


def base_env(extra=None):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = KEY
    e["MOTE_BACKOFF_MS"] = "50"
    e["MOTE_SERVE_TOKEN"] = TOKEN
    e.update(extra or {})
    return e


class Serve:
    """A `mote serve` with loopback TCP (the SDK's fetch speaks TCP)."""

    def __init__(self, llm_port, state=None, args=(), env_more=None, tcp=None):
        self.state = state or tempfile.mkdtemp(prefix="mcps-", dir=TMP)
        self.sock = os.path.join(self.state, "mote.sock")
        self.tcp = tcp or free_port()
        self.errpath = os.path.join(self.state, "serve.err.%d" % time.time_ns())
        self.args = [MOTE, "serve", "--state-dir", self.state, "--base-url",
                     "http://127.0.0.1:%d" % llm_port, "--listen", "127.0.0.1:%d" % self.tcp]
        self.args += list(args)
        self.err = open(self.errpath, "w")
        self.p = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=self.err, env=base_env(env_more))
        SERVERS.append(self.p)  # ended by run_all even when a test stops before its finally
        wait_for(lambda: "listening on" in self.log() or self.p.poll() is not None,
                 "mote serve to listen", 20)
        check(self.p.poll() is None, "mote serve exited: %s" % self.log())
        self.url = "http://127.0.0.1:%d/mcp" % self.tcp

    def log(self):
        with open(self.errpath) as f:
            return f.read()

    def kill(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(30)
        finally:
            self.err.close()

    def req(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.tcp, timeout=20)
        h = {"Authorization": "Bearer " + TOKEN}
        h.update(headers or {})
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        payload = r.read()
        c.close()
        return r.status, r, payload


class Sdk:
    """The SDK's client in a node process, driven by JSON lines."""

    def __init__(self, env=None):
        need_sdk()
        self.p = subprocess.Popen(["node", DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env or base_env())
        self.q = queue.Queue()
        self.seen = []
        self.err = []
        threading.Thread(target=self._read, args=(self.p.stdout, self.q), daemon=True).start()
        threading.Thread(target=self._read, args=(self.p.stderr, None), daemon=True).start()

    def _read(self, f, q):
        for line in f:
            if q is None:
                self.err.append(line)
                continue
            try:
                q.put(json.loads(line))
            except ValueError:
                self.err.append(line)

    def send(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()

    def wait(self, pred, what, timeout=30):
        deadline = time.time() + timeout
        for ev in self.seen:
            if pred(ev):
                return ev
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("sdk: timed out waiting for %s; seen %s; stderr %s"
                                     % (what, self.seen[-6:], "".join(self.err)[-800:]))
            try:
                ev = self.q.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(ev)
            if pred(ev):
                return ev

    def do(self, timeout=30, **cmd):
        """A command and its "done" line."""
        tag = "t%d" % time.time_ns()
        self.send(tag=tag, **cmd)
        ev = self.wait(lambda e: e.get("event") == "done" and e.get("tag") == tag,
                       "%s done" % cmd.get("op"), timeout)
        return ev

    def ok(self, timeout=30, **cmd):
        ev = self.do(timeout, **cmd)
        check(ev["ok"], "sdk %s failed: %s" % (cmd.get("op"), ev))
        return ev

    def outcome(self, cid, timeout=60):
        return self.wait(lambda e: e.get("id") == cid and e.get("event") in ("result", "error"),
                         "the outcome of call %s" % cid, timeout)

    def close(self):
        try:
            self.send(op="exit")
            self.p.wait(10)
        except Exception:  # noqa: BLE001
            self.p.kill()
            self.p.wait()



def calls_conv(state):
    names = [n[:-6] for n in os.listdir(os.path.join(state, "conversations"))
             if n.startswith("mcp-") and n.endswith(".jsonl")]
    check(len(names) == 1, "one calls conversation: %s" % names)
    return names[0]


def text_of(result):
    return "".join(c.get("text", "") for c in result["content"] if c.get("type") == "text")


# ---- the SDK over Streamable HTTP -----------------------------------------------------

def test_sdk_http_tools_list_call_progress_and_ask():
    port, log = start_server()
    s = Serve(port, args=["--allow", "shell", "--allow", "list_dir"],
              env_more={"MOTE_SERVE_MCP_PAGE": "1200"})
    sdk = Sdk()
    try:
        c = sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        # a 2025-11-25 client agrees on the newest version mote takes
        check(c["version"] == "2025-06-18", c)
        check(c["server"]["name"] == "mote" and c["caps"]["tools"]["listChanged"], c)
        check(len(c["session"]) == 32, c)
        lst = sdk.ok(op="list")
        names = [t["name"] for t in lst["tools"]]
        check(lst["pages"] > 1, "the small page makes several pages: %s" % lst["pages"])
        check(sorted(names) == sorted(set(names)), "each tool once: %s" % names)
        for n in ("shell", "read_file", "write_file", "list_dir", "edit_file", "ask"):
            check(n in names, "%s offered: %s" % (n, names))
        ro = {t["name"]: t["readOnly"] for t in lst["tools"]}
        check(not ro["shell"] and not ro["write_file"], ro)
        # a call with progress: the shell runs long enough for ticks
        marker = os.path.join(s.state, "ran.txt")
        sdk.send(op="call", id="a", name="shell", progress=True,
                 args={"command": "sleep 2.5; echo hello from the device; echo x >> %s" % marker})
        r = sdk.outcome("a")
        check(r["event"] == "result", r)
        check("hello from the device" in text_of(r["result"]) and not r["result"]["isError"], r)
        prog = [e for e in sdk.seen if e.get("event") == "progress" and e["id"] == "a"]
        check(len(prog) >= 2, "progress while it ran: %s" % prog)
        check([e["progress"] for e in prog] == sorted(set(e["progress"] for e in prog)),
              "progress only grows: %s" % prog)
        check(any("running shell" in (e["message"] or "") for e in prog), prog)
        with open(marker) as f:
            check(f.read() == "x\n", "ran once")
        # the call is journaled in the session's calls conversation
        cid = calls_conv(s.state)
        recs = journal(s.state, cid)
        check(recs[0].get("kind") == "calls" and recs[0]["v"] == 3, recs[0])
        check([r["t"] for r in recs[1:]] == ["assistant", "tool_start", "tool_result"],
              [r["t"] for r in recs])
        # an unknown tool is a protocol error; bad arguments the tool's
        sdk.send(op="call", id="b", name="no_such_tool", args={})
        r = sdk.outcome("b")
        check(r["event"] == "error" and "unknown tool" in r["message"], r)
        sdk.send(op="call", id="c", name="list_dir", args={"path": s.state})
        r = sdk.outcome("c")
        check(r["event"] == "result" and "conversations/" in text_of(r["result"]), r)
        # ask: the device's agent answers; progress as the answer streams
        sdk.send(op="call", id="d", name="ask", progress=True, args={"prompt": "how warm is it?"})
        r = sdk.outcome("d")
        check(r["event"] == "result" and not r["result"]["isError"], r)
        check(r["result"]["content"][0]["text"] == "You said: how warm is it?", r)
        conv = r["result"]["content"][1]["text"].split()[1]
        sdk.send(op="call", id="e", name="ask", args={"prompt": "and now?", "conversation": conv})
        r = sdk.outcome("e")
        check(r["result"]["content"][0]["text"] == "You said: and now?", r)
        check([x["t"] for x in journal(s.state, conv)].count("user") == 2, "one conversation")
        check(len(requests_in(log)) == 2, "two model requests, none for the device calls")
        sdk.ok(op="close")
    finally:
        sdk.close()
        s.kill()


def test_sdk_cancel_stops_the_call():
    port, _ = start_server()
    s = Serve(port, args=["--allow", "shell"])
    sdk = Sdk()
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        tag = "mcp-cancel-%d" % os.getpid()
        sdk.send(op="call", id="a", name="shell", progress=True,
                 args={"command": "sleep 60 # %s" % tag})
        sdk.wait(lambda e: e.get("event") == "progress" and e["id"] == "a", "the call to run")
        wait_for(lambda: any(tag in l for l in ps()), "the shell to run")
        t0 = time.time()
        sdk.ok(op="cancel", id="a")
        r = sdk.outcome("a")
        check(r["event"] == "error" and ("abort" in r["message"].lower() or "cancel" in r["message"].lower()), r)
        wait_for(lambda: not any(tag in l for l in ps()), "the shell to be ended", 10)
        check(time.time() - t0 < 10, "stopped promptly")
        cid = calls_conv(s.state)
        wait_for(lambda: journal(s.state, cid)[-1]["t"] == "cancel", "the cancel journaled")
        res = [x for x in journal(s.state, cid) if x["t"] == "tool_result"]
        check(len(res) == 1 and res[0]["error"], res)
        check("the client cancelled its call of shell" in s.log(), s.log()[-500:])
        # the session goes on
        sdk.send(op="call", id="b", name="shell", args={"command": "echo after"})
        r = sdk.outcome("b")
        check("after" in text_of(r["result"]), r)
    finally:
        sdk.close()
        s.kill()


def ps():
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if "ps -eo" not in l and l.split()[1][0] != "Z"]


def test_sdk_session_lost_and_a_new_one():
    port, _ = start_server()
    s = Serve(port, args=["--allow", "list_dir"])
    tcp = s.tcp
    sdk = Sdk()
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        sdk.send(op="call", id="a", name="list_dir", args={"path": "/"})
        check(sdk.outcome("a")["event"] == "result", "a call")
        # the server restarts: the session is gone
        check(s.kill() == 0, "a clean stop")
        s = Serve(port, state=s.state, args=["--allow", "list_dir"], tcp=tcp)
        sdk.send(op="call", id="b", name="list_dir", args={"path": "/"})
        r = sdk.outcome("b")
        check(r["event"] == "error" and r["code"] == 404 and "Session not found" in r["message"], r)
        # a new session: initialize again
        c = sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        check(len(c["session"]) == 32, c)
        sdk.send(op="call", id="c", name="list_dir", args={"path": "/"})
        check(sdk.outcome("c")["event"] == "result", "a call in the new session")
        # DELETE ends a session: its id is unknown after
        sdk.ok(op="terminate")
        st, _, body = s.req("POST", "/mcp", {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                            {"Mcp-Session-Id": c["session"], "Accept": "application/json",
                             "Content-Type": "application/json"})
        check(st == 404 and b"Session not found" in body, (st, body))
    finally:
        sdk.close()
        s.kill()


def test_sdk_elicitation_and_the_front_doors():
    port, _ = start_server()
    s = Serve(port)  # --approval ask: every shell call asks
    sdk = Sdk()
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN, elicit="yes")
        sdk.send(op="call", id="a", name="shell", args={"command": "echo yes\u202eran"})
        e = sdk.wait(lambda e: e.get("event") == "elicit", "the question")
        # the library's display of the call, as every front door shows it
        check("* shell" in e["message"] and "<U+202E>" in e["message"], e["message"])
        check("\u202e" not in e["message"], "a character that reorders text is made visible")
        check(e["schema"]["properties"]["answer"]["enum"] == ["yes", "no", "always"], e)
        r = sdk.outcome("a")
        check(r["event"] == "result" and "yes" in text_of(r["result"]), r)
        sdk.ok(op="close")
        # a client that declines
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN, elicit="no")
        sdk.send(op="call", id="b", name="shell", args={"command": "echo never"})
        r = sdk.outcome("b")
        check(r["result"]["isError"] and "refused" in text_of(r["result"]), r)
        sdk.ok(op="close")
        # a client that is asked but does not answer: the device's front
        # door (the HTTP API) answers, and the question is withdrawn
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN, elicit="wait")
        sdk.send(op="call", id="c", name="shell", args={"command": "echo from the api"},
                 progress=True)
        sdk.wait(lambda e: e.get("event") == "elicit" and "from the api" in e["message"],
                 "the third question")
        convs = [n[:-6] for n in os.listdir(os.path.join(s.state, "conversations"))
                 if n.startswith("mcp-")]
        pending = None
        for cid in convs:
            st, _, body = s.req("GET", "/v1/conversations/%s?records=0" % cid)
            b = json.loads(body)
            if b.get("approval"):
                pending = (cid, b["approval"])
        check(pending is not None, "the question waits on the device's API too")
        st, _, body = s.req("POST", "/v1/conversations/%s/approval" % pending[0],
                            {"call_id": pending[1]["call_id"], "answer": "yes"})
        check(st == 202, (st, body))
        r = sdk.outcome("c")
        check(r["event"] == "result" and "from the api" in text_of(r["result"]), r)
        sdk.wait(lambda e: e.get("event") == "elicit_withdrawn", "the question withdrawn")
    finally:
        sdk.close()
        s.kill()


def test_sdk_pass_mcp_tools_and_list_changed():
    """--pass-mcp-tools: mote's own MCP server's tools go to the client
    too, called through mote; the client hears the list change when the
    server becomes ready and when its list changes."""
    port, _ = start_server()
    state = tempfile.mkdtemp(prefix="mcpsp-", dir=TMP)
    fifo = os.path.join(state, "change.fifo")
    ready = os.path.join(state, "ready")
    os.mkfifo(fifo)
    cfg = os.path.join(state, "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"fake": {"command": sys.executable, "args": [
            os.path.join(ROOT, "test", "fake_mcp.py"), "--init-file", ready,
            "--change-fifo", fifo]}}}, f)
    sdk = Sdk()
    s = Serve(port, state=state, args=["--pass-mcp-tools", "--mcp-config", cfg,
                                       "--allow", "fake__echo"])
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        names = [t["name"] for t in sdk.ok(op="list")["tools"]]
        check("fake__echo" not in names and "ask" in names, names)
        open(ready, "w").close()  # the MCP server answers its initialize now
        sdk.wait(lambda e: e.get("event") == "list_changed", "list_changed when it is ready", 20)
        tools = {t["name"]: t for t in sdk.ok(op="list")["tools"]}
        check("fake__echo" in tools and "ask" in tools, sorted(tools))
        sdk.send(op="call", id="a", name="fake__echo", args={"text": "through mote"})
        r = sdk.outcome("a")
        check(r["event"] == "result" and "through mote" in text_of(r["result"]), r)
        seen = len([e for e in sdk.seen if e.get("event") == "list_changed"])
        with open(fifo, "w") as f:
            f.write("change\n")
        sdk.wait(lambda e: e.get("event") == "list_changed" and
                 len([x for x in sdk.seen if x.get("event") == "list_changed"]) > seen,
                 "list_changed when its list changes", 20)
    finally:
        sdk.close()
        s.kill()


def test_sdk_hears_list_changed_when_a_reload_brings_mcp_servers():
    """SIGHUP with a new configuration (--config) that names MCP servers:
    the connected client hears list_changed and calls the new tool."""
    port, _ = start_server()
    state = tempfile.mkdtemp(prefix="mcpsr-", dir=TMP)
    mcp = os.path.join(state, "mcp.json")
    with open(mcp, "w") as f:
        json.dump({"mcpServers": {"fake": {"command": sys.executable, "args": [
            os.path.join(ROOT, "test", "fake_mcp.py")]}}}, f)
    conf = os.path.join(state, "mote.conf")
    with open(conf, "w") as f:
        f.write("pass-mcp-tools = true\nallow = fake__echo\n")
    sdk = Sdk()
    s = Serve(port, state=state, args=["--config", conf])
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        names = [t["name"] for t in sdk.ok(op="list")["tools"]]
        check("fake__echo" not in names and "ask" in names, names)
        with open(conf, "w") as f:
            f.write("pass-mcp-tools = true\nallow = fake__echo\nmcp-config = %s\n" % mcp)
        s.p.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded " + conf in s.log(), "the reload")
        sdk.wait(lambda e: e.get("event") == "list_changed", "list_changed after the reload", 20)
        wait_for(lambda: "fake__echo" in [t["name"] for t in sdk.ok(op="list")["tools"]],
                 "the new server's tool offered", 20)
        sdk.send(op="call", id="a", name="fake__echo", args={"text": "after the reload"})
        r = sdk.outcome("a")
        check(r["event"] == "result" and "after the reload" in text_of(r["result"]), r)
    finally:
        sdk.close()
        s.kill()


def test_sdk_call_nobody_approves_expires():
    """The approval's deadline holds for an MCP client's call as for any
    (--approval-timeout): nobody answers, the call is answered denied."""
    port, _ = start_server()
    s = Serve(port, args=["--approval-timeout", "2s"])
    sdk = Sdk()
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        t0 = time.time()
        sdk.send(op="call", id="a", name="shell", args={"command": "echo never"}, progress=True)
        r = sdk.outcome("a", 30)
        check(r["event"] == "result" and r["result"]["isError"], r)
        check("nobody approved" in text_of(r["result"]), r)
        check(time.time() - t0 < 20, "at its deadline")
        prog = [e for e in sdk.seen if e.get("event") == "progress" and e["id"] == "a"]
        check(any("waiting for approval of shell" in (e["message"] or "") for e in prog), prog)
    finally:
        sdk.close()
        s.kill()


# ---- the SDK over stdio (`mote mcp`) -----------------------------------------------------

def test_sdk_stdio_mote_mcp():
    need_sdk()
    port, log = start_server([{"text": "You said: over stdio"}, {"stall": 30, "after_text": "x"}])
    state = tempfile.mkdtemp(prefix="mcpstdio-", dir=TMP)
    sdk = Sdk()
    env = base_env()
    env.pop("MOTE_SERVE_TOKEN")
    try:
        c = sdk.ok(op="connect", transport="stdio", command=MOTE,
                   args=["mcp", "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                         "--allow", "list_dir", "--allow", "read_file"], env=env)
        check(c["server"]["name"] == "mote" and c["session"] is None, c)
        names = [t["name"] for t in sdk.ok(op="list")["tools"]]
        check("ask" in names and "shell" in names, names)
        sdk.send(op="call", id="a", name="list_dir", args={"path": state}, progress=True)
        r = sdk.outcome("a")
        check(r["event"] == "result" and "conversations/" in text_of(r["result"]), r)
        # shell asks, nobody can answer (no elicitation, no other door): refused at once
        sdk.send(op="call", id="b", name="shell", args={"command": "echo no"})
        r = sdk.outcome("b", 15)
        check(r["result"]["isError"] and "nobody can be asked" in text_of(r["result"]), r)
        sdk.send(op="call", id="c", name="ask", args={"prompt": "over stdio"}, progress=True)
        r = sdk.outcome("c")
        check(text_of(r["result"]).startswith("You said: over stdio"), r)
        # a cancel over stdio: the model stalls until the turn is cancelled
        sdk.send(op="call", id="d", name="ask", args={"prompt": "slow"}, progress=True)
        sdk.wait(lambda e: e.get("event") == "progress" and e["id"] == "d", "the turn to run")
        sdk.ok(op="cancel", id="d")
        r = sdk.outcome("d")
        check(r["event"] == "error", r)
        slow = [n[:-6] for n in os.listdir(os.path.join(state, "conversations"))
                if not n.startswith("mcp-") and n.endswith(".jsonl")]
        wait_for(lambda: any(journal(state, c)[-1]["t"] == "assistant" and
                             journal(state, c)[-1].get("interrupted") for c in slow),
                 "the stalled turn cancelled")
        sdk.ok(op="close")  # stdin closes: mote mcp ends
        wait_for(lambda: not any("mcp --state-dir %s" % state in l for l in ps()),
                 "mote mcp to exit", 20)
    finally:
        sdk.close()


# ---- mote as the client of mote ---------------------------------------------------------

def test_mote_is_the_client_of_mote():
    port_a, _ = start_server()  # device A's model: echoes
    a = Serve(port_a, args=["--allow", "list_dir"])
    listing = os.path.join(a.state, "device-a-file.txt")
    with open(listing, "w") as f:
        f.write("hi")
    port_b, log_b = start_server([{"tool": "dev__list_dir", "input": {"path": a.state}},
                                  {"text": "A has its file."},
                                  {"tool": "dev__ask", "input": {"prompt": "hello A"}},
                                  {"text": "done"}])
    b_state = tempfile.mkdtemp(prefix="devb-", dir=TMP)
    cfg = os.path.join(b_state, "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"dev": {"type": "http", "url": a.url,
                                          "headers": {"Authorization": "Bearer ${A_TOKEN}"}}}}, f)
    env = base_env({"A_TOKEN": TOKEN})
    env.pop("MOTE_SERVE_TOKEN")
    try:
        p = subprocess.run([MOTE, "-p", "what does A have?", "--yes", "--state-dir", b_state,
                            "--base-url", "http://127.0.0.1:%d" % port_b, "--mcp-config", cfg],
                           capture_output=True, text=True, env=env, timeout=60)
        check(p.returncode == 0, (p.returncode, p.stderr[-1500:]))
        reqs = requests_in(log_b)
        body = json.dumps(reqs[1]["body"])
        check("device-a-file.txt" in body, "A's listing reached B's model: %s" % body[:600])
        p = subprocess.run([MOTE, "-p", "ask A", "--yes", "--continue", "--state-dir", b_state,
                            "--base-url", "http://127.0.0.1:%d" % port_b, "--mcp-config", cfg],
                           capture_output=True, text=True, env=env, timeout=60)
        check(p.returncode == 0, (p.returncode, p.stderr[-1500:]))
        body = json.dumps(requests_in(log_b)[3]["body"])
        check("You said: hello A" in body, "A's agent answered B: %s" % body[-600:])
    finally:
        a.kill()


# ---- the OpenAI client ----------------------------------------------------------------------

def test_openai_client_streamed_and_not():
    port, log = start_server([{"text": "The disk is 40% full."},
                              {"text": "Streamed: it is 40% full."},
                              {"tool": "list_dir", "input": {"path": "/"}, "text": "Let me look."},
                              {"text": "I looked."}])
    s = Serve(port, args=["--allow", "list_dir"])
    sdk = Sdk()
    base = "http://127.0.0.1:%d/v1" % s.tcp
    try:
        r = sdk.ok(op="models", base=base, key=TOKEN)
        check(r["models"] == ["claude-sonnet-4-5"], r)
        r = sdk.ok(op="openai", base=base, key=TOKEN, stream=False, user="kitchen",
                   prompt="how full is the disk?")
        comp = r["completion"]
        check(comp["object"] == "chat.completion", comp)
        check(comp["choices"][0]["message"]["content"] == "The disk is 40% full.", comp)
        check(comp["choices"][0]["finish_reason"] == "stop", comp)
        check(comp["usage"]["total_tokens"] > 0, comp)
        r = sdk.ok(op="openai", base=base, key=TOKEN, stream=True, user="kitchen",
                   prompt="and streamed?")
        check(r["text"] == "Streamed: it is 40% full.", r)
        check(r["finish"] == "stop" and r["usage"]["completion_tokens"] > 0 and r["chunks"] >= 3, r)
        recs = journal(s.state, "kitchen")
        check([x["text"] for x in recs if x["t"] == "user"][:2] == ["how full is the disk?",
                                                                   "and streamed?"], recs)
        # the device's tool round happens inside the turn: the content is
        # the text of each answer, the usage every request's
        r = sdk.ok(op="openai", base=base, key=TOKEN, stream=True, user="kitchen",
                   prompt="look at the root")
        check(r["text"] == "Let me look.\n\nI looked.", r)
        check(r["usage"]["prompt_tokens"] > 0 and len(requests_in(log)) == 4, r)
        body = json.dumps(requests_in(log)[3]["body"])
        check("tool_result" in body, "the tool's result went to the model")
        # a new conversation per request without a user or header
        r = sdk.ok(op="openai", base=base, key=TOKEN, stream=False, prompt="fresh")
        check(not r["completion"]["id"].startswith("chatcmpl-kitchen"), r)
        # the bearer token is required on TCP: OpenAI's error format
        r = sdk.do(op="openai", base=base, key="wrong-token-wrong-token", stream=False,
                   prompt="x")
        check(not r["ok"] and r["status"] == 401, r)
        st, _, body = s.req("POST", "/v1/chat/completions", {"messages": []})
        err = json.loads(body)["error"]
        check(st == 400 and err["type"] == "invalid_request_error" and err["code"] == "bad_field",
              (st, body))
        st, _, body = s.req("POST", "/v1/chat/completions",
                            {"messages": [{"role": "assistant", "content": "x"}]})
        check(st == 400, (st, body))
        st, _, body = s.req("POST", "/v1/chat/completions", '{"messages":[],"messages":[]}')
        check(st == 400 and json.loads(body)["error"]["code"] == "bad_json", (st, body))
    finally:
        sdk.close()
        s.kill()


def test_openai_errors_and_busy_conversation():
    port, _ = start_server([{"stall": 30, "after_text": "late"},
                            {"status": 429, "retry_after": 1,
                             "body": {"type": "error", "error": {"type": "rate_limit_error",
                                                                 "message": "slow down"}}}])
    s = Serve(port, env_more={"MOTE_LLM_MAX_ATTEMPTS": "1"})
    try:
        def slow():
            s.req("POST", "/v1/chat/completions",
                  {"messages": [{"role": "user", "content": "slow"}]},
                  {"X-Mote-Conversation": "busy1"})
        t = threading.Thread(target=slow, daemon=True)
        t.start()
        wait_for(lambda: os.path.exists(os.path.join(s.state, "conversations", "busy1.jsonl")),
                 "the first turn to start")
        st, _, body = s.req("POST", "/v1/chat/completions",
                            {"messages": [{"role": "user", "content": "again"}]},
                            {"X-Mote-Conversation": "busy1"})
        check(st == 409 and json.loads(body)["error"]["code"] == "busy", (st, body))
        st, _, body = s.req("POST", "/v1/chat/completions",
                            {"messages": [{"role": "user", "content": "x"}]},
                            {"X-Mote-Conversation": "bad id!"})
        check(st == 400, (st, body))
    finally:
        s.kill(signal.SIGINT)


# ---- kill -9 while a call runs ----------------------------------------------------------------

def test_kill9_while_an_mcp_call_runs():
    port, _ = start_server()
    s = Serve(port, args=["--allow", "shell"])
    tcp = s.tcp
    sdk = Sdk()
    marker = os.path.join(s.state, "runs.txt")
    tag = "mcp-k9-%d" % os.getpid()
    try:
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        sdk.send(op="call", id="a", name="shell", progress=True, timeout=8000,
                 args={"command": "echo run >> %s; sleep 60 # %s" % (marker, tag)})
        wait_for(lambda: os.path.exists(marker), "the call to run")
        s.p.kill()  # kill -9
        s.p.wait()
        s.err.close()
        # the SDK hears its stream break at once, and fails the call (it
        # keeps a request across a lost stream until its timeout)
        sdk.wait(lambda e: e.get("event") == "client_error" and "disconnected" in e["message"],
                 "the stream's loss", 10)
        r = sdk.outcome("a", 30)
        check(r["event"] == "error", "the client is told the call failed: %s" % r)
        s = Serve(port, state=s.state, args=["--allow", "shell"], tcp=tcp)
        cid = calls_conv(s.state)
        wait_for(lambda: journal(s.state, cid)[-1]["t"] == "error", "recovery to close the call")
        res = [x for x in journal(s.state, cid) if x["t"] == "tool_result"]
        check(len(res) == 1 and res[0]["error"] and "interrupted" in res[0]["text"], res)
        wait_for(lambda: not any(tag in l for l in ps()), "the leftover shell ended", 10)
        time.sleep(0)  # (nothing to wait for: the journal says it is settled)
        with open(marker) as f:
            check(f.read() == "run\n", "it ran once, never again after the restart")
        # a new session works, and the old call stays failed
        sdk.ok(op="connect", transport="http", url=s.url, token=TOKEN)
        sdk.send(op="call", id="b", name="shell", args={"command": "echo fine"})
        check("fine" in text_of(sdk.outcome("b")["result"]), "a new call runs")
        with open(marker) as f:
            check(f.read() == "run\n", "still once")
    finally:
        sdk.close()
        s.kill()


# ---- hostile clients -------------------------------------------------------------------------

def raw(port, data, timeout=10):
    """Sends raw bytes; returns the whole reply."""
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    c.sendall(data)
    out = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            out += b
            if b"\r\n\r\n" in out:
                head, _, rest = out.partition(b"\r\n\r\n")
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        if len(rest) >= int(line.split(b":")[1]):
                            return out
    except socket.timeout:
        pass
    c.close()
    return out


def post(port, body, sid=None, extra=b"", accept=b"application/json, text/event-stream"):
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
    head = (b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
            b"\r\nContent-Type: application/json\r\nAccept: " + accept + b"\r\n" + extra)
    if sid:
        head += b"Mcp-Session-Id: " + sid.encode() + b"\r\n"
    return raw(port, head + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def status(reply):
    return int(reply.split(b" ", 2)[1]) if reply else 0


def init(port):
    r = post(port, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                               "clientInfo": {"name": "raw"}}})
    check(status(r) == 200, r[:300])
    for line in r.split(b"\r\n"):
        if line.lower().startswith(b"mcp-session-id:"):
            return line.split(b":", 1)[1].strip().decode()
    raise AssertionError("no session id: %r" % r[:300])


def test_hostile_clients_get_errors_and_memory_stays_bounded():
    port, _ = start_server()
    s = Serve(port, env_more={"MOTE_SERVE_SEND_TIMEOUT_MS": "2000"}, args=["--allow", "read_file"])
    t = s.tcp
    try:
        sid = init(t)
        body = lambda r: json.loads(r.partition(b"\r\n\r\n")[2])  # noqa: E731
        r = post(t, b"{not json", sid)
        check(status(r) == 400 and body(r)["error"]["code"] == -32700, r)
        r = post(t, b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', sid)
        check(status(r) == 400 and "duplicate" in body(r)["error"]["message"], r)
        r = post(t, {"jsonrpc": "1.0", "id": 1, "method": "ping"}, sid)
        check(status(r) == 200 and body(r)["error"]["code"] == -32600, r)
        r = post(t, {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, sid)
        check(body(r)["error"]["code"] == -32600, r)
        r = post(t, {"jsonrpc": "2.0", "id": "x" * 500, "method": "ping"}, sid)
        check(body(r)["error"]["code"] == -32600, r)
        r = post(t, {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, sid)
        check(body(r)["error"]["code"] == -32601, r)
        r = post(t, {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "9.9"}},
                 sid)
        check(body(r)["error"]["code"] == -32602, r)
        # a batch: 2025-03-26 takes it (this session), as an array
        r = post(t, [{"jsonrpc": "2.0", "id": 5, "method": "ping"},
                     {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     {"jsonrpc": "2.0", "id": 6, "method": "ping"}], sid)
        check(status(r) == 200 and [m["id"] for m in body(r)] == [5, 6], r)
        r = post(t, [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(40)], sid)
        check(status(r) == 400, r)
        # unknown and missing session ids; a bad Origin; wrong Accept; no token
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "0" * 32)
        check(status(r) == 404, r)
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        check(status(r) == 400, r)
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                 b"Origin: http://evil.example\r\n")
        check(status(r) == 403, r)
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                 b"Origin: http://localhost:3000\r\n")
        check(status(r) == 200, r)
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid, accept=b"text/html")
        check(status(r) == 406, r)
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                 b"MCP-Protocol-Version: 1999-01-01\r\n")
        check(status(r) == 400, r)
        r = raw(t, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        check(status(r) == 401, r)
        # a huge body
        r = post(t, b"[" + b"1," * 40000 + b"1]", sid)
        check(status(r) == 413, r[:200])
        # floods: sessions are capped (the oldest idle one is let go)
        rss0 = proc_status(s.p.pid, "VmRSS")
        sids = [init(t) for _ in range(60)]
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sids[0])
        check(status(r) == 404, "the least recently used session was let go")
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sids[-1])
        check(status(r) == 200, r)
        socks = []
        for _ in range(100):
            c = socket.create_connection(("127.0.0.1", t))
            c.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
            socks.append(c)
        for c in socks:
            c.close()
        for _ in range(100):
            post(t, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, sids[-1])
        rss1 = proc_status(s.p.pid, "VmRSS")
        check(rss1 - rss0 < 4096, "RSS grew %d kB under the floods" % (rss1 - rss0))
        # a client that never reads: a large result it does not take is
        # dropped at the send timeout; the server goes on
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        c.connect(("127.0.0.1", t))
        c.settimeout(30)
        b = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        one = (b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() +
               b"\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
               b"Mcp-Session-Id: " + sids[-1].encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(b) + b)

        def deaf():
            try:
                c.sendall(one * 3000)  # pipelined; the answers are never read
            except OSError:
                pass
        threading.Thread(target=deaf, daemon=True).start()
        wait_for(lambda: "does not read its response" in s.log(), "the deaf client dropped", 60)
        rss2 = proc_status(s.p.pid, "VmRSS")
        check(rss2 - rss0 < 4096, "RSS grew %d kB with a deaf client" % (rss2 - rss0))
        c.close()
        r = post(t, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sids[-1])
        check(status(r) == 200, r)
        check(s.p.poll() is None, "still serving")
    finally:
        s.kill()


def test_stdio_hostile_lines():
    port, _ = start_server()
    state = tempfile.mkdtemp(prefix="mcpstdio-", dir=TMP)
    env = base_env()
    p = subprocess.Popen([MOTE, "mcp", "--state-dir", state, "--base-url",
                          "http://127.0.0.1:%d" % port], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        def ask(line):
            p.stdin.write(line + b"\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())
        r = ask(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
        check(r["error"]["code"] == -32600, r)  # not initialized
        r = ask(b"garbage")
        check(r["error"]["code"] == -32700 and r["id"] is None, r)
        p.stdin.write(b"x" * 200000 + b"\n")
        p.stdin.flush()
        r = json.loads(p.stdout.readline())
        check(r["error"]["code"] == -32700 and "longer" in r["error"]["message"], r)
        r = ask(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize",
                            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "pipe"}}}).encode())
        check(r["result"]["protocolVersion"] == "2025-06-18", r)
        r = ask(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
        check(r == {"jsonrpc": "2.0", "id": 3, "result": {}}, r)
        # a client that writes and does not read: mote stops reading it
        # (memory bounded), and every answer comes once it reads again
        rss0 = proc_status(p.pid, "VmRSS")
        lines = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' % (100 + i)
                         for i in range(400))
        w = threading.Thread(target=lambda: (p.stdin.write(lines), p.stdin.flush()), daemon=True)
        w.start()
        time.sleep(0)  # (the pipes fill: nothing to wait for but the reads below)
        got = 0
        deadline = time.time() + 60
        while got < 400 and time.time() < deadline:
            if got == 5:
                check(proc_status(p.pid, "VmRSS") - rss0 < 2048,
                      "RSS bounded while the client does not read")
            r = json.loads(p.stdout.readline())
            check(r["id"] == 100 + got and "tools" in r["result"], r)
            got += 1
        check(got == 400, "every answer came: %d" % got)
        w.join(10)
        p.stdin.close()
        check(p.wait(20) == 0, "mote mcp ends when its client closes the pipe")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


if __name__ == "__main__":
    sys.exit(run_all("mcp-server", dict(globals())))
