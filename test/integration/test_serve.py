#!/usr/bin/env python3
"""Integration tests of `mote serve`: the real binary behind its
Unix socket (and loopback TCP), against the local test LLM server - the
API, event streams from the journals, approval through the API, kill -9
with conversations in every state and the restart's recovery, SIGTERM
drains, SIGINT, systemd notifications, 200 connections at once, slow and
malformed requests.

    test_serve.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import http.client
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

from harness import (NOTES, ROOT, Skip, TMP, check, journal_of, requests_in, run_all, start_server,
                     wait_for)
from harness import fake_mcp, mcp_config

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-serve"


# ---- the server ---------------------------------------------------------------

class UConn(http.client.HTTPConnection):
    """http.client over a Unix socket."""

    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Serve:
    """A `mote serve` process and its clients."""

    def __init__(self, port, state=None, args=(), env_more=None, wait=True, prefix=()):
        self.state = state or tempfile.mkdtemp(prefix="serve-", dir=TMP)
        self.sock = os.path.join(self.state, "mote.sock")
        self.errpath = os.path.join(self.state, "serve.err.%d" % time.time_ns())
        e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        e["ANTHROPIC_API_KEY"] = KEY
        e["MOTE_BACKOFF_MS"] = "50"
        e.pop("MOTE_SERVE_TOKEN", None)
        e.update(env_more or {})
        self.args = list(prefix) + [MOTE, "serve", "--state-dir", self.state, "--base-url",
                                    "http://127.0.0.1:%d" % port] + list(args)
        self.err = open(self.errpath, "w")
        self.p = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=self.err, env=e)
        if wait:
            wait_for(lambda: "listening on" in self.log() or self.p.poll() is not None,
                     "mote serve to listen", 20)
            check(self.p.poll() is None, "mote serve exited: %s" % self.log())

    def log(self):
        with open(self.errpath) as f:
            return f.read()

    def tcp_port(self):
        """The loopback TCP port it listens on (--listen 127.0.0.1:0), once
        its log says it."""
        m = wait_for(lambda: re.search(r"127\.0\.0\.1:(\d+)\s", self.log()),
                     "the TCP listener's port in the log")
        return int(m.group(1))

    def req(self, method, path, body=None, headers=None, raw=False):
        c = UConn(self.sock)
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        c.request(method, path, body=data, headers=headers or {})
        r = c.getresponse()
        payload = r.read()
        c.close()
        if raw:
            return r.status, r, payload
        try:
            return r.status, json.loads(payload) if payload else None
        except ValueError:
            raise AssertionError("not JSON: %r" % payload[:200])

    def create(self):
        st, b = self.req("POST", "/v1/conversations")
        check(st == 201, (st, b))
        return b["id"]

    def say(self, cid, text):
        st, b = self.req("POST", "/v1/conversations/%s/messages" % cid, {"text": text})
        check(st == 202, (st, b))
        return b

    def start_turn(self, text):
        """A new conversation, its event stream open, and `text` said in
        it; returns (conversation id, Events)."""
        cid = self.create()
        ev = Events(self.sock, cid)
        self.say(cid, text)
        return cid, ev

    def signal_streaming_turn(self, sig, text):
        """Starts a turn (start_turn) and sends `sig` once its answer
        streams; returns (conversation id, Events, the time it was sent)."""
        cid, ev = self.start_turn(text)
        ev.wait(lambda e: e["event"] == "text", "streaming")
        t0 = time.time()
        self.kill(sig)
        return cid, ev, t0

    def approval(self, cid, query="", raw=False):
        """GET the conversation's open question (`query`: "?format=text"...)."""
        return self.req("GET", "/v1/conversations/%s/approval%s" % (cid, query), raw=raw)

    def answer(self, cid, call_id, answer):
        """POST an answer to the conversation's question; (status, body)."""
        return self.req("POST", "/v1/conversations/%s/approval" % cid,
                        {"call_id": call_id, "answer": answer})

    def conv(self, cid, records=True):
        st, b = self.req("GET", "/v1/conversations/%s%s" % (cid, "" if records else "?records=0"))
        check(st == 200, (st, b))
        return b

    def state_of(self, cid):
        return self.conv(cid, records=False)["state"]

    def wait_state(self, cid, states, timeout=20):
        if isinstance(states, str):
            states = (states,)
        return wait_for(lambda: self.state_of(cid) in states, "%s in %s" % (cid, states),
                        timeout)

    def kill(self, sig):
        self.p.send_signal(sig)

    def wait(self, timeout=30):
        try:
            return self.p.wait(timeout)
        finally:
            self.err.close()

    def stop(self, timeout=30):
        """SIGTERM (a drain), then its exit code."""
        self.kill(signal.SIGTERM)
        return self.wait(timeout)


class Events:
    """An event stream read on a thread: events (dicts) in arrival order."""

    def __init__(self, sock_path, cid, query="", last_id=None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(30)
        self.s.connect(sock_path)
        head = "GET /v1/conversations/%s/events%s HTTP/1.1\r\nHost: x\r\n" % (cid, query)
        if last_id is not None:
            head += "Last-Event-ID: %s\r\n" % last_id
        self.s.sendall((head + "\r\n").encode())
        self.events, self.status, self.closed, self.head = [], None, False, b""
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        buf = b""
        try:
            while b"\r\n\r\n" not in buf:
                d = self.s.recv(65536)
                if not d:
                    break
                buf += d
            self.head, _, buf = buf.partition(b"\r\n\r\n")
            self.status = int(self.head.split()[1]) if self.head else 0
            while True:
                while b"\n\n" in buf:
                    block, _, buf = buf.partition(b"\n\n")
                    ev = {}
                    for line in block.decode().split("\n"):
                        if line.startswith(":"):
                            continue
                        k, _, v = line.partition(": ")
                        ev[k] = v
                    if "event" in ev:
                        if "data" in ev:
                            ev["json"] = json.loads(ev["data"])
                        with self.lock:
                            self.events.append(ev)
                d = self.s.recv(65536)
                if not d:
                    break
                buf += d
        except OSError:
            pass
        self.closed = True

    def all(self):
        with self.lock:
            return list(self.events)

    def records(self):
        return [e for e in self.all() if e["event"] == "record"]

    def wait(self, pred, what, timeout=20):
        return wait_for(lambda: [e for e in self.all() if pred(e)], what, timeout)

    def close(self):
        try:
            self.s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.s.close()


def rtypes(state, cid):
    return [r["t"] for r in journal_of(state, cid)]


def procs_with(marker):
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if marker in l and "ps -eo" not in l
            and l.split()[1][0] != "Z"]


# ---- the API ----------------------------------------------------------------------

def test_socket_mode_endpoints_and_records():
    port, _ = start_server([{"text": "hello there"}])
    s = Serve(port)
    try:
        check(stat.S_IMODE(os.lstat(s.sock).st_mode) == 0o600, oct(os.lstat(s.sock).st_mode))
        check(stat.S_ISSOCK(os.lstat(s.sock).st_mode), "a socket")
        st, h = s.req("GET", "/v1/health")
        check(st == 200 and h["status"] == "ok" and h["connections"]["max"] == 32, h)
        cid = s.create()
        ev = Events(s.sock, cid, "?from=0")
        ack = s.say(cid, "hi")
        ev.wait(lambda e: e["event"] == "turn_end", "turn_end")
        recs = ev.records()
        check([r["json"]["t"] for r in recs] == ["open", "user", "request", "assistant"],
              [r["json"]["t"] for r in recs])
        check(int(recs[1]["id"]) == ack["offset"], (recs[1], ack))
        check(recs[3]["json"]["text"] == "hello there", recs[3])
        texts = "".join(e["json"]["text"] for e in ev.all() if e["event"] == "text")
        check(texts == "hello there", texts)
        # each event id is the byte offset of its record in the journal
        raw = open(os.path.join(s.state, "conversations", cid + ".jsonl"), "rb").read()
        for r in recs:
            off = int(r["id"])
            check(raw[off:].split(b"\n")[0].decode() == r["data"], r)
        got = s.conv(cid)
        check(got["state"] == "idle" and [x["record"]["t"] for x in got["records"]] ==
              ["open", "user", "request", "assistant"], got)
        st, lst = s.req("GET", "/v1/conversations")
        check(st == 200 and [c["id"] for c in lst["conversations"]] == [cid], lst)
        st, b = s.req("DELETE", "/v1/conversations/" + cid)
        check(st == 200 and not os.path.exists(os.path.join(s.state, "conversations",
                                                             cid + ".jsonl")), (st, b))
        ev.close()
    finally:
        check(s.stop() == 0, s.log())
    check(not os.path.exists(s.sock), "the socket is removed at exit")


def conv_ids(state):
    d = os.path.join(state, "conversations")
    return sorted(f[:-6] for f in os.listdir(d) if f.endswith(".jsonl"))


def test_retention_at_start_and_when_a_conversation_is_created():
    """mote serve keeps --keep finished conversations (the library's
    mote_session_prune, as the CLI): the oldest by last change go when it
    starts, and again when a conversation is created through the API (here
    after another process added two); the new one, open, always stays."""
    port, _ = start_server([{"text": "answer %d" % i} for i in range(8)])
    state = tempfile.mkdtemp(prefix="serve-", dir=TMP)
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = KEY

    def cli(text):
        r = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                            "-p", text], capture_output=True, text=True, timeout=60, env=e)
        check(r.returncode == 0, r.stderr)

    for i in range(4):
        cli("finished %d" % i)
    ids = conv_ids(state)
    now = time.time()
    for i, cid in enumerate(ids):  # ids[0] the oldest
        t = now - 1000 + 100 * i
        os.utime(os.path.join(state, "conversations", cid + ".jsonl"), (t, t))
    s = Serve(port, state, args=["--keep", "2"])
    try:
        check("removed 2 old finished conversations" in s.log(), s.log())
        check(conv_ids(state) == ids[2:], (ids, conv_ids(state)))
        cli("later 1")
        cli("later 2")
        later = [c for c in conv_ids(state) if c not in ids]
        check(len(later) == 2, later)
        new = s.create()
        # removed over the next loop turns (their journals are read in steps)
        wait_for(lambda: s.log().count("removed 2 old finished conversations") == 2,
                 "the second removal", 20)
        left = conv_ids(state)
        check(sorted([new] + later) == left, (new, later, left))
    finally:
        check(s.stop() == 0, s.log())


def test_tcp_token_file_env_and_modes():
    port, _ = start_server()
    s = Serve(port, args=["--listen", "127.0.0.1:0"])
    try:
        tok_path = os.path.join(s.state, "serve.token")
        check(stat.S_IMODE(os.stat(tok_path).st_mode) == 0o600, oct(os.stat(tok_path).st_mode))
        token = open(tok_path).read().strip()
        check(len(token) == 64, token)
        tport = s.tcp_port()

        def tcp(auth):
            c = http.client.HTTPConnection("127.0.0.1", tport, timeout=10)
            c.request("GET", "/v1/health", headers={"Authorization": auth} if auth else {})
            r = c.getresponse()
            body = json.loads(r.read())
            c.close()
            return r.status, body

        check(tcp(None)[0] == 401, "no token")
        check(tcp("Bearer " + token[:-1] + "0" if token[-1] != "0" else "1")[0] == 401, "wrong")
        st, b = tcp("Bearer " + token)
        check(st == 200 and b["status"] == "ok", (st, b))
        check(s.req("GET", "/v1/health")[0] == 200, "the Unix socket needs no token")
    finally:
        check(s.stop() == 0, s.log())
    # MOTE_SERVE_TOKEN: used, no file made; never on the command line
    etok = "env-token-%d-abcdefgh" % os.getpid()
    s = Serve(port, args=["--listen", "127.0.0.1:0"], env_more={"MOTE_SERVE_TOKEN": etok})
    try:
        check(not os.path.exists(os.path.join(s.state, "serve.token")), "no file")
        tport = s.tcp_port()
        c = http.client.HTTPConnection("127.0.0.1", tport, timeout=10)
        c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + etok})
        check(c.getresponse().status == 200, "env token")
        env_of = open("/proc/%d/environ" % s.p.pid, "rb").read()
        check(etok.encode() not in env_of, "the token left mote's environment")
    finally:
        s.stop()
    # not loopback: refused with a usage error
    r = subprocess.run([MOTE, "serve", "--state-dir", tempfile.mkdtemp(dir=TMP), "--listen",
                        "0.0.0.0:8080", "--base-url", "http://127.0.0.1:1"],
                       env={"ANTHROPIC_API_KEY": "k", "PATH": os.environ["PATH"]},
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and "loopback" in r.stderr, (r.returncode, r.stderr))


def test_two_clients_follow_one_conversation():
    port, _ = start_server([{"text": "one two three four", "delay_ms": 20}])
    s = Serve(port)
    try:
        cid = s.create()
        a, b = Events(s.sock, cid), Events(s.sock, cid)
        a.wait(lambda e: e["event"] == "state", "a's state")
        b.wait(lambda e: e["event"] == "state", "b's state")
        s.say(cid, "count")
        for c in (a, b):
            c.wait(lambda e: e["event"] == "turn_end", "turn_end")
        ra = [(r["id"], r["data"]) for r in a.records()]
        rb = [(r["id"], r["data"]) for r in b.records()]
        check(ra == rb and len(ra) == 3, (ra, rb))
        ta = "".join(e["json"]["text"] for e in a.all() if e["event"] == "text")
        check(ta == "one two three four", ta)
        a.close()
        b.close()
    finally:
        check(s.stop() == 0, s.log())


def test_approval_through_the_api():
    target = os.path.join(TMP, "approved.txt")
    port, _ = start_server([{"tool": "write_file", "input": {"path": target, "content": "yes\n"}},
                            {"text": "written"}])
    s = Serve(port, args=["--ask", "write_file", "--approval", "deny"])
    try:
        cid, ev = s.start_turn("write it")
        q = ev.wait(lambda e: e["event"] == "approval", "the approval event")[0]["json"]
        check(q["name"] == "write_file" and q["input"]["path"] == target, q)
        got = s.conv(cid, records=False)
        check(got["state"] == "awaiting_approval" and got["approval"]["call_id"] == q["call_id"]
              and got["approval"]["input"]["content"] == "yes\n", got)
        st, b = s.answer(cid, "toolu_other", "yes")
        check(st == 409 and b["error"] == "stale", (st, b))
        # the refusal left the question as it was: nothing runs, the same call is asked
        got = s.conv(cid, records=False)
        check(got["state"] == "awaiting_approval" and got["approval"]["call_id"] == q["call_id"],
              got)
        check(not os.path.exists(target), "an answer to another call ran nothing")
        st, b = s.answer(cid, q["call_id"], "yes")
        check(st == 202, (st, b))
        ev.wait(lambda e: e["event"] == "turn_end", "turn_end")
        check(open(target).read() == "yes\n", "the file was written after the answer")
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(res) == 1 and not res[0]["error"], res)
        ev.close()
    finally:
        check(s.stop() == 0, s.log())


def test_policy_file_per_tool():
    never = os.path.join(TMP, "policy-never-%d" % os.getpid())
    written = os.path.join(TMP, "policy-written-%d" % os.getpid())
    port, _ = start_server([{"tool": "shell", "input": {"command": "touch " + never}},
                            {"tool": "write_file", "input": {"path": written, "content": "ok"}},
                            {"text": "done"}])
    policy = os.path.join(TMP, "policy.json")
    with open(policy, "w") as f:
        json.dump({"default": "ask", "tools": {"shell": "deny", "write_file": "allow"}}, f)
    s = Serve(port, args=["--policy", policy])
    try:
        cid = s.create()
        s.say(cid, "do both")
        s.wait_state(cid, "idle")
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(res) == 2 and res[0]["error"] and "policy" in res[0]["text"] and
              not res[1]["error"], res)
        check(not os.path.exists(never) and open(written).read() == "ok", "deny and allow")
    finally:
        check(s.stop() == 0, s.log())
    bad = os.path.join(TMP, "policy-bad.json")
    with open(bad, "w") as f:
        f.write('{"tools": {"shell": "sometimes"}}')
    s = Serve(port, args=["--policy", bad], wait=False)
    check(s.wait(20) == 2 and "ask, allow or deny" in s.log(), s.log())


def test_mcp_server_tools_and_no_orphan():
    tag = "serve-mcp-%d" % os.getpid()
    mlog = os.path.join(TMP, tag + ".log")
    cfg = os.path.join(TMP, tag + ".json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"f": {"command": sys.executable, "args": [
            os.path.join(ROOT, "test", "fake_mcp.py"), "--log", mlog]}}}, f)
    port, _ = start_server([{"tool": "f__echo", "input": {"text": "through MCP"}},
                            {"text": "done"}])
    s = Serve(port, args=["--mcp-config", cfg, "--allow", "f__echo"])
    try:
        wait_for(lambda: procs_with(mlog), "the MCP server running")
        wait_for(lambda: os.path.exists(mlog) and "tools/list" in open(mlog).read(),
                 "its tools listed")
        cid = s.create()
        s.say(cid, "echo")
        s.wait_state(cid, "idle")
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(res) == 1 and "through MCP" in res[0]["text"] and not res[0]["error"], res)
    finally:
        check(s.stop() == 0, s.log())
    check(not procs_with(mlog), "the MCP server ended with mote serve")


# ---- an MCP server's question (elicitation) ------------------------------------------------

EVERYTHING = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin", "mcp-server-everything")
ELICIT_TOOL = "ev__trigger-elicitation-request"


def everything_serve(args):
    """mote serve with the real server-everything (stdio) and a model that
    calls its elicitation tool once, then says done."""
    if not os.path.exists(EVERYTHING):
        raise Skip("the npm servers are not installed (make deps)")
    port, log = start_server([{"tool": ELICIT_TOOL, "input": {}}, {"text": "done"}])
    cfg = mcp_config({"ev": {"command": EVERYTHING, "args": []}})
    s = Serve(port, args=["--mcp-config", cfg, "--allow", ELICIT_TOOL] + list(args))
    wait_for(lambda: "mcp ev: ready" in s.log() or "ready," in s.log() or
             re.search(r"mcp ev: .*tools", s.log()), "server-everything ready", 60)
    return s


def elicit(s, cid, body):
    return s.req("POST", "/v1/conversations/%s/elicitation" % cid, body)


def tool_results(s, cid):
    return [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]


def test_mcp_question_answered_through_the_api():
    s = everything_serve([])
    try:
        cid, ev = s.start_turn("ask me")
        q = ev.wait(lambda e: e["event"] == "elicitation", "the elicitation event", 60)[0]["json"]
        names = [f["name"] for f in q["fields"]]
        check(q["server"] == "ev" and "Please provide inputs" in q["message"] and
              "name" in names and "integer" in names and q["ask_id"] >= 1 and
              q["timeout_ms"] == 600000 and 0 < q["expires_in_ms"] <= 600000, q)
        st, got = s.req("GET", "/v1/conversations/%s/elicitation" % cid)
        check(st == 200 and got["ask_id"] == q["ask_id"] and got["fields"] == q["fields"],
              (st, got))
        # refused answers leave the question open: another ask_id, a bad
        # action, a value of the wrong type, no content
        st, b = elicit(s, cid, {"ask_id": q["ask_id"] + 1, "action": "decline"})
        check(st == 409 and b["error"] == "stale", (st, b))
        st, b = elicit(s, cid, {"action": "maybe"})
        check(st == 400 and b["error"] == "bad_field", (st, b))
        st, b = elicit(s, cid, {"action": "accept", "content": {"name": "Ann", "integer": "7"}})
        check(st == 400 and b["error"] == "bad_content" and "integer" in b["message"], (st, b))
        st, b = elicit(s, cid, {"action": "accept"})
        check(st == 400 and b["error"] == "bad_field", (st, b))
        st, b = elicit(s, cid, {"ask_id": q["ask_id"], "action": "accept",
                                "content": {"name": "Ann Example", "integer": 7, "check": True}})
        check(st == 202 and b["action"] == "accept", (st, b))
        end = ev.wait(lambda e: e["event"] == "elicitation_end", "elicitation_end")[0]["json"]
        check(end["ask_id"] == q["ask_id"] and end["action"] == "accept" and end["by"] == "client",
              end)
        ev.wait(lambda e: e["event"] == "turn_end", "turn_end", 60)
        res = tool_results(s, cid)
        check(len(res) == 1 and not res[0]["error"] and "- Name: Ann Example" in res[0]["text"] and
              "- Favorite Integer: 7" in res[0]["text"] and
              "- Agreed to terms: true" in res[0]["text"], res)
        st, b = elicit(s, cid, {"action": "decline"})
        check(st == 409 and b["error"] == "no_question", (st, b))
        ev.close()
    finally:
        check(s.stop() == 0, s.log())


def test_mcp_question_declined_at_its_deadline():
    s = everything_serve(["--approval-timeout", "2s"])
    try:
        cid, ev = s.start_turn("ask me")
        q = ev.wait(lambda e: e["event"] == "elicitation", "the elicitation event", 60)[0]["json"]
        t0 = time.monotonic()
        check(q["timeout_ms"] == 2000, q)
        # a client that comes late gets the open question after its state
        late = Events(s.sock, cid)
        late.wait(lambda e: e["event"] == "elicitation", "the question told to a late client")
        end = ev.wait(lambda e: e["event"] == "elicitation_end", "elicitation_end", 30)[0]["json"]
        waited = time.monotonic() - t0
        check(end["action"] == "decline" and end["by"] == "deadline" and
              "nobody answered within its deadline" in end["text"], end)
        check(waited > 1.0, "declined after %.1f s, before its 2 s deadline" % waited)
        ev.wait(lambda e: e["event"] == "turn_end", "turn_end", 60)
        res = tool_results(s, cid)
        check(len(res) == 1 and "User declined" in res[0]["text"], res)
        st, b = elicit(s, cid, {"action": "accept", "content": {"name": "late"}})
        check(st == 409 and b["error"] == "no_question", (st, b))
        st, _, text = s.req("GET", "/v1/metrics", raw=True)
        text = text.decode()
        check(st == 200 and "\nmote_mcp_questions_total 1\n" in text and
              "\nmote_mcp_questions_unanswered_total 1\n" in text, text)
        NOTES.append("an MCP question nobody answered: declined %.1f s after it was asked "
                     "(deadline 2 s)" % waited)
        ev.close()
        late.close()
    finally:
        check(s.stop() == 0, s.log())


def test_mcp_question_with_nobody_there():
    # Nobody follows the conversation: declined at once; under --approval
    # allow a form whose every field has a default is accepted with them.
    port, log = start_server([{"tools": [{"tool": "f__ask", "input": {"mode": "defaults"}}]},
                              {"tools": [{"tool": "f__ask", "input": {"mode": "partial"}}]},
                              {"text": "done"}] * 2)
    cfg = mcp_config({"f": fake_mcp("--features")})
    for approval, first in (("allow", '"action": "accept", "content": {"age": 7, "color": '
                                      '"green", "name": "Ann"}'),
                            ("ask", '"action": "decline"')):
        extra = ["--approval", "allow"] if approval == "allow" else ["--allow", "f__ask"]
        s = Serve(port, args=["--mcp-config", cfg] + extra)
        try:
            wait_for(lambda: "mcp f: " in s.log(), "the MCP server started", 30)
            cid = s.create()
            t0 = time.monotonic()
            s.say(cid, "ask")
            s.wait_state(cid, "idle", 30)
            took = time.monotonic() - t0
            res = [r["text"] for r in tool_results(s, cid)]
            check(len(res) == 2 and first in res[0] and res[1] == 'elicited: {"action": "decline"}',
                  (approval, res))
            check("nobody follows the conversation" in s.log() and
                  (approval == "ask" or 'field "note" has no default' in s.log()), s.log())
            check(took < 20, "answered at once, not at a deadline: %.1f s" % took)
        finally:
            check(s.stop() == 0, s.log())


def test_mcp_question_closed_when_its_server_stops():
    tag = "serve-ask-%d" % os.getpid()
    mlog = os.path.join(TMP, tag + ".log")
    port, log = start_server([{"tool": "f__ask", "input": {"mode": "flat"}}, {"text": "done"}])
    cfg = mcp_config({"f": {"command": sys.executable, "args": [
        os.path.join(ROOT, "test", "fake_mcp.py"), "--features", "--log", mlog]}})
    s = Serve(port, args=["--mcp-config", cfg, "--allow", "f__ask"])
    try:
        wait_for(lambda: "mcp f: ready" in s.log(), "the MCP server ready", 30)
        cid, ev = s.start_turn("ask me")
        q = ev.wait(lambda e: e["event"] == "elicitation", "the elicitation event")[0]["json"]
        for l in procs_with(mlog):
            os.kill(int(l.split()[0]), signal.SIGKILL)
        end = ev.wait(lambda e: e["event"] == "elicitation_end", "elicitation_end")[0]["json"]
        check(end["ask_id"] == q["ask_id"] and end["action"] == "cancel" and
              end["by"] == "server", end)
        ev.wait(lambda e: e["event"] == "turn_end", "turn_end", 30)
        st, b = s.req("GET", "/v1/conversations/%s/elicitation" % cid)
        check(st == 409 and b["error"] == "no_question", (st, b))
        res = tool_results(s, cid)
        check(len(res) == 1 and res[0]["error"], res)
        ev.close()
    finally:
        check(s.stop() == 0, s.log())


# ---- kill -9 and the restart ------------------------------------------------------------

def test_kill9_four_states_then_restart():
    marker = "31.%d" % (os.getpid() % 1000)
    target = os.path.join(TMP, "never-approved-%d.txt" % os.getpid())
    port, log = start_server([
        {"text": "D is done"},                                            # D: idle
        {"tool": "shell", "input": {"command": "sleep " + marker}},         # C: a tool runs
        {"tool": "write_file", "input": {"path": target, "content": "x"}},  # B: approval
        {"stall": 60, "after_text": "A streams and"},                      # A: streaming
        {"text": "A continued after the restart"},                         # A, recovered
    ])
    s = Serve(port, args=["--allow", "shell", "--ask", "write_file"])
    ids = {}
    for k in "DCBA":
        ids[k] = s.create()
    s.say(ids["D"], "first D")
    s.wait_state(ids["D"], "idle")
    s.say(ids["C"], "first C")
    wait_for(lambda: "tool_start" in rtypes(s.state, ids["C"]) and procs_with("sleep " + marker),
             "C's tool running")
    s.say(ids["B"], "first B")
    s.wait_state(ids["B"], "awaiting_approval")
    call_b = s.conv(ids["B"], records=False)["approval"]["call_id"]
    follow = Events(s.sock, ids["A"], "?from=0")
    s.say(ids["A"], "first A")
    follow.wait(lambda e: e["event"] == "text", "A streaming")
    last_seen = follow.records()[-1]["id"]
    before = {k: journal_of(s.state, v) for k, v in ids.items()}
    s.kill(signal.SIGKILL)
    s.wait()
    follow.close()
    # no process left behind: the tool's group ends with mote
    wait_for(lambda: not procs_with("sleep " + marker), "the tool's processes gone", 10)
    check(os.path.exists(s.sock), "kill -9 leaves the socket file (the restart takes it over)")

    s2 = Serve(port, state=s.state, args=["--allow", "shell", "--ask", "write_file"])
    try:
        # A: the interrupted answer continues by itself
        s2.wait_state(ids["A"], "idle")
        ja = journal_of(s2.state, ids["A"])
        check(ja[-1]["t"] == "assistant" and ja[-1]["text"] == "A continued after the restart",
              ja[-3:])
        check("auto" in [r["t"] for r in ja], "an auto record says recovery went on")
        # B: still waiting for its answer, never approved
        st = s2.conv(ids["B"], records=False)
        check(st["state"] == "awaiting_approval" and st["approval"]["call_id"] == call_b, st)
        check(not os.path.exists(target), "nothing ran without an answer")
        # C: the interrupted tool is an error result; the conversation waits
        jc = journal_of(s2.state, ids["C"])
        res = [r for r in jc if r["t"] == "tool_result"]
        check(len(res) == 1 and res[0]["error"] and "interrupted" in res[0]["text"], res)
        check(jc[-1]["t"] == "error" and s2.state_of(ids["C"]) in ("error", "idle"), jc[-2:])
        # D: as it was
        check(journal_of(s2.state, ids["D"]) == before["D"], "D untouched")
        # nothing lost: every record from before is still there, in order
        for k, v in ids.items():
            now = journal_of(s2.state, v)
            check(now[:len(before[k])] == before[k], "%s kept its records" % k)
        # a client that saw A's records before the kill resumes where it was
        again = Events(s2.sock, ids["A"], last_id=last_seen)
        again.wait(lambda e: e["event"] == "state", "caught up")
        got = [json.loads(r["data"])["t"] for r in again.records()]
        want = [r["t"] for r in ja]
        idx = [int(r["id"]) for r in again.records()]
        check(idx and idx[0] > int(last_seen) and got == want[len(want) - len(got):], (got, want))
        check("auto" in got and got[-1] == "assistant", got)
        again.close()
        # B answered after the restart: it runs now, once
        st, b = s2.req("POST", "/v1/conversations/%s/approval" % ids["B"],
                       {"call_id": call_b, "answer": "no", "reason": "not after a crash"})
        check(st == 202, (st, b))
        s2.wait_state(ids["B"], ("idle", "error"))
        check(not os.path.exists(target), "refused")
        # the requests the model saw: A's continuation was sent once
        check(sum(1 for r in requests_in(log) if "first A" in json.dumps(r["body"])) >= 2,
              "A's request went again after the restart")
    finally:
        check(s2.stop() == 0, s2.log())
    check(not procs_with("sleep " + marker), "no tool left")


# ---- shutdown -------------------------------------------------------------------------

def notify_socket():
    path = os.path.join(tempfile.mkdtemp(dir=TMP), "notify")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(path)
    ns.settimeout(10)
    return ns, path


def test_sigterm_one_finishes_one_stalls():
    port, _ = start_server([
        {"stall": 60, "after_text": "Y never ends"},
        {"text": "X finishes " + "word " * 30, "delay_ms": 30},
    ])
    ns, npath = notify_socket()
    s = Serve(port, args=["--shutdown-timeout", "2500"], env_more={"NOTIFY_SOCKET": npath})
    try:
        check(ns.recv(4096).startswith(b"READY=1"), "READY=1 first")
        x, y = s.create(), s.create()
        ey = Events(s.sock, y)
        s.say(y, "stall")
        ey.wait(lambda e: e["event"] == "text", "Y streaming")
        ex = Events(s.sock, x)
        s.say(x, "finish")
        ex.wait(lambda e: e["event"] == "text", "X streaming")
        t0 = time.time()
        s.kill(signal.SIGTERM)
        check(ns.recv(4096) == b"STOPPING=1", "STOPPING=1")
        # during the drain: no new turn
        st, b = s.req("POST", "/v1/conversations", None)
        check(st == 503 and b["error"] == "shutting_down", (st, b))
        code = s.wait(20)
        took = time.time() - t0
        check(code == 143, (code, s.log()))
        check(2.3 < took < 8, took)
        jx, jy = journal_of(s.state, x), journal_of(s.state, y)
        check(jx[-1]["t"] == "assistant" and not jx[-1].get("interrupted") and
              jx[-1]["text"].startswith("X finishes"), jx[-2:])
        check(jy[-1]["t"] == "mark" and jy[-1]["state"] == "needs_recovery", jy[-3:])
        for e in (ex, ey):
            fin = e.wait(lambda v: v["event"] == "shutdown", "the final event")[0]["json"]
            check(fin["reason"] == "SIGTERM" and fin["timed_out"] and fin["marked"] == 1, fin)
        check(not os.path.exists(s.sock), "socket removed")
        NOTES.append("SIGTERM to exit with a stalled turn (--shutdown-timeout 2500): %.2f s" % took)
    finally:
        if s.p.poll() is None:
            s.kill(signal.SIGKILL)
            s.wait()
        ns.close()


def test_sigterm_drain_finishes_exit_0_and_second_signal_forces():
    port, _ = start_server([{"text": "quick " * 10, "delay_ms": 20},
                            {"stall": 60, "after_text": "stuck"}])
    s = Serve(port)  # the default drain timeout: 30 s
    try:
        cid, _, t0 = s.signal_streaming_turn(signal.SIGTERM, "go")
        check(s.wait(20) == 0, s.log())
        took = time.time() - t0
        j = journal_of(s.state, cid)
        check(j[-1]["t"] == "assistant" and not j[-1].get("interrupted"), j[-2:])
        NOTES.append("SIGTERM to exit, the turn finishing: %.2f s" % took)
    finally:
        if s.p.poll() is None:
            s.kill(signal.SIGKILL)
    # a stalled turn, a long timeout: the second SIGTERM stops it now
    s = Serve(port, state=s.state)
    try:
        ev = Events(s.sock, cid)
        s.say(cid, "stall")
        ev.wait(lambda e: e["event"] == "text", "streaming")
        s.kill(signal.SIGTERM)
        wait_for(lambda: "shutting down (SIGTERM, drain)" in s.log(), "the drain begun")
        check(s.p.poll() is None, "still draining")
        t0 = time.time()
        s.kill(signal.SIGTERM)
        code = s.wait(10)
        check(code == 143 and time.time() - t0 < 3, (code, time.time() - t0, s.log()))
        check(journal_of(s.state, cid)[-1]["t"] == "mark", journal_of(s.state, cid)[-2:])
    finally:
        if s.p.poll() is None:
            s.kill(signal.SIGKILL)


def test_pending_approval_survives_sigterm_as_pending():
    target = os.path.join(TMP, "after-sigterm-%d.txt" % os.getpid())
    port, _ = start_server([{"tool": "write_file", "input": {"path": target, "content": "1"}},
                            {"text": "written after the restart"}])
    s = Serve(port, args=["--ask", "write_file"])
    cid = s.create()
    s.say(cid, "write")
    s.wait_state(cid, "awaiting_approval")
    call = s.conv(cid, records=False)["approval"]["call_id"]
    s.kill(signal.SIGTERM)
    check(s.wait(20) == 0, s.log())  # nothing was running: nothing was cut
    j = journal_of(s.state, cid)
    check(j[-1]["t"] == "mark" and not os.path.exists(target), j[-2:])
    s = Serve(port, state=s.state, args=["--ask", "write_file"])
    try:
        s.wait_state(cid, "awaiting_approval")
        check(s.conv(cid, records=False)["approval"]["call_id"] == call, "the same call, asked again")
        check(not os.path.exists(target), "never taken as approved")
        st, b = s.answer(cid, call, "yes")
        check(st == 202, (st, b))
        s.wait_state(cid, "idle")
        check(open(target).read() == "1", "runs once answered")
    finally:
        check(s.stop() == 0, s.log())


def test_sigint_cancels():
    port, _ = start_server([{"stall": 60, "after_text": "cut"}])
    s = Serve(port)
    try:
        cid, _, t0 = s.signal_streaming_turn(signal.SIGINT, "stall")
        check(s.wait(10) == 130, s.log())
        check(time.time() - t0 < 3, time.time() - t0)
        j = journal_of(s.state, cid)
        check(j[-1]["t"] == "assistant" and j[-1]["interrupted"], j[-2:])
    finally:
        if s.p.poll() is None:
            s.kill(signal.SIGKILL)


# ---- load and hostile input -----------------------------------------------------------------

def test_200_connections_with_the_cap_at_32():
    port, _ = start_server()
    # the held connections wait (0.5 s each) for their turn to ask: a head
    # deadline longer than that wait (a silent new connection is closed
    # at the head's deadline)
    s = Serve(port, env_more={"MOTE_SERVE_HEADER_TIMEOUT_MS": "60000"})
    socks = []
    try:
        deadline = time.time() + 20
        for _ in range(200):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            while True:  # a full listen backlog says "again" to a non-blocking connect
                try:
                    c.connect(s.sock)
                    break
                except BlockingIOError:
                    check(time.time() < deadline, "connections taken in time")
                    time.sleep(0.005)
            socks.append(c)
        refused, held = 0, []
        for c in socks:
            c.settimeout(0.5)
            try:
                d = c.recv(4096)
            except socket.timeout:
                held.append(c)  # accepted and waiting for a request
                continue
            check(d.startswith(b"HTTP/1.1 503") and b"too_many_connections" in d, d[:200])
            refused += 1
        check(len(held) == 32 and refused == 168, (len(held), refused))
        for c in held:
            c.settimeout(10)
            c.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        for c in held:
            d = b""
            while True:
                x = c.recv(4096)
                if not x:
                    break
                d += x
            check(d.startswith(b"HTTP/1.1 200"), d[:100])
        for c in socks:
            c.close()
        # (the server frees a slot when its client's close arrives: until
        # then a request may still find every slot taken, and be refused)
        late = []

        def health():
            r = s.req("GET", "/v1/health")
            if r[0] == 503:
                late.append(r)
            return r if r[0] == 200 and r[1]["connections"]["open"] == 1 else None

        st, h = wait_for(health, "connections closed")
        check(h["connections"]["refused"] == 168 + len(late), (h, len(late)))
    finally:
        for c in socks:
            c.close()
        check(s.stop() == 0, s.log())


def test_slow_and_malformed_requests():
    port, _ = start_server()
    s = Serve(port, env_more={"MOTE_SERVE_HEADER_TIMEOUT_MS": "1500",
                              "MOTE_SERVE_IDLE_TIMEOUT_MS": "1500"})
    try:
        # a byte every 0.4 s (slower than 1500 ms for the head allows): dropped with 408
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(s.sock)
        t0, got = time.time(), b""
        c.settimeout(0.4)
        for ch in b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n":
            try:
                c.send(bytes([ch]))
                got += c.recv(4096)
            except socket.timeout:
                pass
            except OSError:
                break
            if got:
                break
        check(got.startswith(b"HTTP/1.1 408") and b'"error":"timeout"' in got, got[:200])
        check(time.time() - t0 < 5, time.time() - t0)
        c.close()
        # an idle connection is closed without a word
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(s.sock)
        c.settimeout(5)
        t0 = time.time()
        check(c.recv(100) == b"" and time.time() - t0 < 4, "idle closed")
        c.close()
        cases = [
            (b"GARBAGE\r\n\r\n", 400),
            (b"GET /v1/health HTTP/1.1\r\n\r\n", 400),                         # no Host
            (b"GET /v1/health HTTP/3.0\r\nHost: x\r\n\r\n", 505),
            (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"b" * 5000 + b"\r\n\r\n", 431),
            (b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
             501),
            (b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", 413),
            (b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{{{{{", 400),
            (b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", 400),
            (b"DELETE /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 405),
            (b"GET /etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n", 404),
            (b"GET /v1/conversations/..%2f..%2fx/events HTTP/1.1\r\nHost: x\r\n\r\n", 404),
        ]
        for raw, want in cases:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(5)
            c.connect(s.sock)
            c.sendall(raw)
            d = b""
            while b"\r\n\r\n" not in d:
                x = c.recv(65536)
                if not x:
                    break
                d += x
            head, _, body = d.partition(b"\r\n\r\n")
            check(head.startswith(b"HTTP/1.1 %d" % want), (raw[:60], head[:80]))
            n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0]
                    .split(b":")[1])
            while len(body) < n:
                body += c.recv(65536)
            check("error" in json.loads(body), body)
            c.close()
        # a long message through the body pool
        cid = s.create()
        big = "x" * 50000
        st, b = s.req("POST", "/v1/conversations/%s/messages" % cid, {"text": big})
        check(st == 202, (st, b))
        s.wait_state(cid, "idle")
        check(any(r["t"] == "user" and r["text"] == big for r in journal_of(s.state, cid)),
              "the long message is journaled whole")
        check(s.req("GET", "/v1/health")[0] == 200, "still serving")
    finally:
        check(s.stop() == 0, s.log())


class Reader:
    """Responses off a socket, one by one (by Content-Length), what came
    after one kept for the next."""

    def __init__(self, c):
        self.c = c
        self.buf = b""

    def more(self):
        x = self.c.recv(65536)
        self.buf += x
        return bool(x)

    def response(self):
        while b"\r\n\r\n" not in self.buf and self.more():
            pass
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        n = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")]
        n = int(n[0].split(b":")[1]) if n else 0
        self.buf = rest
        while len(self.buf) < n and self.more():
            pass
        body, self.buf = self.buf[:n], self.buf[n:]
        return int(head[9:12] or 0), head, body


def closed_after(c):
    """True if the server closes `c` (no other byte comes first)."""
    try:
        return c.recv(100) == b""
    except OSError:
        return True


def test_http_framing_by_rfc_9112():
    # A chunked request body is taken (split anywhere, extensions and
    # trailers dropped) and the connection serves the next request; with
    # Content-Length too it is framed by its chunks and the connection
    # closes after the answer; another coding, chunked not last, or a
    # Content-Length given twice are refused, and the connection closed.
    port, _ = start_server()
    s = Serve(port)
    try:
        def conn():
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(10)
            c.connect(s.sock)
            return c

        c = conn()
        c.sendall(b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                  b"Content-Type: application/json\r\n\r\n1;a=b\r\n{\r\n")
        time.sleep(0.05)  # (the rest in another segment: the decoder keeps its place)
        c.sendall(b"1\r\n}\r\n0\r\nX-Trailer: t\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        r = Reader(c)
        st, head, body = r.response()
        check(st == 201 and "id" in json.loads(body), (head, body))
        st, head, body = r.response()
        check(st == 200, "the next request on the same connection: %s" % head)
        c.close()
        c = conn()
        c.sendall(b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
                  b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        r = Reader(c)
        st, head, body = r.response()
        check(st == 201, (head, body))
        check(r.buf == b"" and closed_after(c),
              "Content-Length and Transfer-Encoding: the connection stayed open")
        c.close()
        for raw, want in (
                (b"Transfer-Encoding: chunked, gzip\r\n\r\n", 400),
                (b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
                (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
                (b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400),
                (b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}X\r\n0\r\n\r\n", 400)):
            c = conn()
            c.sendall(b"POST /v1/conversations HTTP/1.1\r\nHost: x\r\n" + raw +
                      b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            r = Reader(c)
            st, head, body = r.response()
            check(st == want and "error" in json.loads(body), (raw, head, body))
            check(r.buf == b"" and closed_after(c), "%r: the connection stayed open" % raw)
            c.close()
        check(s.req("GET", "/v1/health")[0] == 200, "still serving")
    finally:
        check(s.stop() == 0, s.log())


def test_a_client_leaving_mid_stream_does_not_disturb_the_turn():
    port, _ = start_server([{"text": "w " * 60, "delay_ms": 15}])
    s = Serve(port)
    try:
        cid, ev = s.start_turn("talk")
        ev.wait(lambda e: e["event"] == "text", "streaming")
        ev.s.close()  # gone, unread data and all
        s.wait_state(cid, "idle")
        j = journal_of(s.state, cid)
        check(j[-1]["t"] == "assistant" and not j[-1].get("interrupted") and
              j[-1]["text"] == "w " * 60, j[-1])
    finally:
        check(s.stop() == 0, s.log())


def test_socket_path_not_ours_and_a_second_server():
    port, _ = start_server()
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "file.sock")
    with open(path, "w") as f:
        f.write("mine")
    s = Serve(port, args=["--socket", path], wait=False)
    code = s.wait(20)
    check(code == 1 and "not a socket of this user" in s.log(), (code, s.log()))
    check(open(path).read() == "mine", "left as it is")
    a = Serve(port)
    try:
        # (its own state directory: a second one on a.state stops at its lock)
        b = Serve(port, args=["--socket", a.sock], wait=False)
        code = b.wait(20)
        check(code == 1 and "another server listens" in b.log(), (code, b.log()))
        check(a.req("GET", "/v1/health")[0] == 200, "the first still serves")
    finally:
        check(a.stop() == 0, a.log())


# ---- regressions: each shows a defect found in the server -------------------------------------

def exit_of(s, timeout=20):
    """The exit code of a `mote serve` expected to stop by itself; one that
    goes on serving is killed (and the test fails on its None)."""
    try:
        return s.wait(timeout)
    except subprocess.TimeoutExpired:
        s.p.kill()
        s.p.wait()
        return None


def test_token_the_operator_set_is_used_or_refused():
    """A MOTE_SERVE_TOKEN that cannot be used (too long, too short) stops
    mote serve with exit 2 - never a silent switch to the token file."""
    port, _ = start_server()
    for tok, why in (("x" * 65, "too long"), ("t0k", "too short"), ("with space-%s" % ("y" * 10),
                                                                    "not visible")):
        s = Serve(port, args=["--listen", "127.0.0.1:0"], env_more={"MOTE_SERVE_TOKEN": tok},
                  wait=False)
        code = exit_of(s)
        check(code == 2 and "MOTE_SERVE_TOKEN must be" in s.log(), (why, code, s.log()))
        check(not os.path.exists(os.path.join(s.state, "serve.token")), (why, "no file made"))


def test_token_leaves_the_environment_without_listen():
    port, _ = start_server()
    etok = "never-seen-by-tools-%d" % os.getpid()
    s = Serve(port, env_more={"MOTE_SERVE_TOKEN": etok})
    try:
        env_of = open("/proc/%d/environ" % s.p.pid, "rb").read()
        check(etok.encode() not in env_of, "the token left mote's environment")
    finally:
        check(s.stop() == 0, s.log())


def test_token_file_others_may_read_is_refused():
    port, _ = start_server()
    state = tempfile.mkdtemp(prefix="serve-", dir=TMP)
    os.chmod(state, 0o700)
    tok = os.path.join(state, "serve.token")
    with open(tok, "w") as f:
        f.write("ab" * 32 + "\n")
    os.chmod(tok, 0o644)
    s = Serve(port, state=state, args=["--listen", "127.0.0.1:0"], wait=False)
    code = exit_of(s)
    check(code == 1 and "readable by others" in s.log(), (code, s.log()))
    os.chmod(tok, 0o600)
    s = Serve(port, state=state, args=["--listen", "127.0.0.1:0"])
    try:
        tport = s.tcp_port()
        c = http.client.HTTPConnection("127.0.0.1", tport, timeout=10)
        c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + "ab" * 32})
        check(c.getresponse().status == 200, "the private file's token")
    finally:
        check(s.stop() == 0, s.log())


def test_listen_v6_is_logged_as_such():
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        raise Skip("no IPv6 loopback here")
    port, _ = start_server()
    s = Serve(port, args=["--listen", "[::1]:0"])
    try:
        check("and [::1]:" in s.log() and "127.0.0.1" not in s.log(), s.log())
        tport = int(s.log().split("[::1]:")[1].split()[0])
        token = open(os.path.join(s.state, "serve.token")).read().strip()
        c = http.client.HTTPConnection("::1", tport, timeout=10)
        c.request("GET", "/v1/health", headers={"Authorization": "Bearer " + token})
        check(c.getresponse().status == 200, "served on [::1]")
    finally:
        check(s.stop() == 0, s.log())


def test_notify_socket_not_inherited_by_tools():
    port, _ = start_server([{"tool": "shell", "input": {"command": "env"}}, {"text": "done"}])
    ns, npath = notify_socket()
    s = Serve(port, args=["--allow", "shell"], env_more={"NOTIFY_SOCKET": npath})
    try:
        check(ns.recv(4096).startswith(b"READY=1"), "READY=1")
        cid = s.create()
        s.say(cid, "env")
        s.wait_state(cid, "idle")
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(res) == 1 and "PATH=" in res[0]["text"], res)
        check("NOTIFY_SOCKET" not in res[0]["text"], "a tool saw NOTIFY_SOCKET")
        s.kill(signal.SIGTERM)
        check(ns.recv(4096) == b"STOPPING=1", "STOPPING=1 still sent")
        check(s.wait() == 0, s.log())
    finally:
        if s.p.poll() is None:
            s.kill(signal.SIGKILL)
            s.wait()
        ns.close()


if __name__ == "__main__":
    sys.exit(run_all("serve", dict(globals())))
