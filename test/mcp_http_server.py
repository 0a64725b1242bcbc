#!/usr/bin/env python3
"""A small MCP server over HTTP for mote's tests, that can misbehave.
Python standard library only; loopback only.

    mcp_http_server.py --port-file F [--mode http|sse] [options]

--mode http: Streamable HTTP on /mcp (POST: JSON-RPC, answered as an event
stream, or JSON with --json; GET: the server's event stream; DELETE: the
session's end). --mode sse: HTTP+SSE (GET /sse names the endpoint
/messages?sessionId=..., POSTs there are answered 202, the answers come on
the stream).

Options:
  --token T           every request must carry "Authorization: Bearer T" (else 401)
  --html              answer every POST with HTTP 200 text/html (a login page)
  --never-end         a tools/call's event stream sends keep-alive comments forever
                      and never the answer (mode http)
  --expire-every N    the session is forgotten after every N requests: the next
                      request with its id gets 404 (mode http)
  --forget-400        an unknown session gets 400 "No valid session ID" (as the
                      reference server), not 404
  --stale-get         a forgotten session's GET stream stays open (keep-alive comments)
                      instead of ending (mode http)
  --invalid-400       a tools/call of "add" whose a or b is not a number gets HTTP 400
                      with the JSON-RPC error -32602 "Invalid params: ..." (mode http)
  --flip              each tools/list answers another list (a tool "v1", "v2", ...),
                      and notifications/tools/list_changed goes out on the GET stream
                      (mode http) after every tools/call and every 50 ms while a
                      GET stream is open
  --echo-secret       error messages, tool descriptions, a tool's inputSchema and results
                      repeat the Authorization header (a server that leaks what it was sent)
  --no-get            GET is answered 405 (mode http)
  --slow-list MS      a tools/list answer comes 32 bytes every MS ms (mode http)
  --drop-call N       the first N tools/call POSTs are read and their connection closed
                      without a byte of answer (a proxy's idle timeout during a long
                      tool, a server restart): the call may have run
  --forget-at-call    (mode http) the first tools/call makes the server forget the
                      session; the call's 404 (400 with --forget-400) is held until
                      the session's GET stream, reopened, has had its own, and the
                      next initialize is held until the call's is sent: the client
                      learns of the loss on its GET stream first
  --move-endpoint     (mode sse) a POST whose body is over 8 KiB: before its body is read,
                      the stream names a new endpoint (a longer path) for the session,
                      and the body is read only 0.3 s later; a body shorter than its
                      Content-Length is logged as "short"
  --rcvbuf N          the listening socket's receive buffer (a peer that takes little
                      at a time)
  --cut-call N        (mode http) the first N tools/call event streams are cut (the
                      connection closed mid-body) after a first event with an id (and
                      "retry: MS" with --retry MS) and a notification with an id; the
                      call runs on and its answer is kept for a GET with Last-Event-ID,
                      which replays the stream's events after that id (resumption)
  --huge-id           (with --cut-call) the notification is followed by events whose ids
                      mote must ignore (4,000 bytes; a NUL; a space), just before the cut
  --refuse-resume S   a GET with Last-Event-ID is answered HTTP S (405, 404, 400)
  --empty-resume      a GET with Last-Event-ID of a call's stream is answered with an
                      event stream that ends at once, with no event
  --answer-on-get     (with --cut-call) the cut call's answer goes out on the session's
                      GET stream, not to a resumption
  --poll-get          (mode http) every GET stream sends one event with an id (and
                      "retry: MS" with --retry MS), no data, and ends 0.1 s later
  --log F             every request as one JSON line: method, path, headers, body
  --tools-file F      more tools, from a JSON file (a list of tool objects); each
                      answers "called NAME"
  --big-tool          a tool "big" {bytes}: a text result of that many bytes
  --cert C --key K    HTTPS with this certificate
Tools: echo {text}, add {a, b}, sleep {seconds}, whoami.
"""
import argparse
import json
import os
import queue
import socket
import ssl
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

P = argparse.ArgumentParser()
P.add_argument("--port-file", required=True)
P.add_argument("--port", type=int, default=0)
P.add_argument("--mode", default="http")
P.add_argument("--token")
P.add_argument("--html", action="store_true")
P.add_argument("--never-end", action="store_true")
P.add_argument("--expire-every", type=int, default=0)
P.add_argument("--forget-400", action="store_true")
P.add_argument("--stale-get", action="store_true")
P.add_argument("--invalid-400", action="store_true")
P.add_argument("--flip", action="store_true")
P.add_argument("--echo-secret", action="store_true")
P.add_argument("--no-get", action="store_true")
P.add_argument("--slow-list", type=float, default=0)
P.add_argument("--json", action="store_true")
P.add_argument("--drop-call", type=int, default=0)
P.add_argument("--move-endpoint", action="store_true")
P.add_argument("--forget-at-call", action="store_true")
P.add_argument("--rcvbuf", type=int, default=0)
P.add_argument("--cut-call", type=int, default=0)
P.add_argument("--huge-id", action="store_true")
P.add_argument("--retry", type=int, default=0)
P.add_argument("--refuse-resume", type=int, default=0)
P.add_argument("--empty-resume", action="store_true")
P.add_argument("--poll-get", action="store_true")
P.add_argument("--answer-on-get", action="store_true")
P.add_argument("--log")
P.add_argument("--tools-file")
P.add_argument("--big-tool", action="store_true")
P.add_argument("--lifetime", type=float, default=300)
P.add_argument("--cert")
P.add_argument("--key")
A = P.parse_args()

LOCK = threading.Lock()
SESSIONS = {}  # id -> {"q": queue of messages for the GET stream, "reqs": count}
STATE = {"lists": 0, "deletes": 0, "dropped": 0, "forgot": False, "cut": 0, "streams": 0}
EVENTS = []  # --cut-call, --poll-get: {"id", "stream", "msg"} in order, for replay
EVENTS_CV = threading.Condition(LOCK)
GET_TOLD = threading.Event()   # --forget-at-call: a GET had its unknown session's answer
CALL_TOLD = threading.Event()  # --forget-at-call: the call had it


def log(entry):
    entry["t"] = time.time()
    if A.log:
        with LOCK, open(A.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def tools():
    base = [{"name": "echo", "description": "Echo the text back.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
            {"name": "add", "description": "Add two numbers.",
             "inputSchema": {"type": "object", "properties": {"a": {"type": "number"},
                                                              "b": {"type": "number"}}}},
            {"name": "sleep", "description": "Sleep.",
             "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
            {"name": "whoami", "description": "Say what credentials came.",
             "inputSchema": {"type": "object"}}]
    if A.tools_file:
        with open(A.tools_file) as f:
            base += json.load(f)
    if A.big_tool:
        base.append({"name": "big", "description": "A large result.",
                     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "number"}}}})
    if A.flip:
        with LOCK:
            STATE["lists"] += 1
            n = STATE["lists"]
        base.append({"name": "v%d" % n, "description": "List number %d." % n,
                     "inputSchema": {"type": "object"}})
    return base


def result_of(msg, auth):
    """The answer to one JSON-RPC request (or None for a notification)."""
    method, mid = msg.get("method"), msg.get("id")
    if mid is None or method is None:
        return None
    p = msg.get("params") or {}
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": p.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "hostile", "version": "1"}}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": mid, "result": {}}
    if method == "tools/list":
        t = tools()
        if A.echo_secret:
            t[0]["description"] = "Echo (you sent %s)" % auth
            t[0]["inputSchema"]["properties"]["text"]["description"] = "you sent %s" % auth
        return {"jsonrpc": "2.0", "id": mid, "result": {"tools": t}}
    if method == "tools/call":
        name, a = p.get("name"), p.get("arguments") or {}
        if name == "echo":
            text = "echo: %s" % a.get("text")
        elif name == "add":
            text = str(a.get("a", 0) + a.get("b", 0))
        elif name == "sleep":
            time.sleep(float(a.get("seconds", 1)))
            text = "slept"
        elif name == "whoami":
            text = "you sent %s" % auth
        elif name == "big" and A.big_tool:
            text = "b" * int(a.get("bytes", 100000)) + "END"
        elif name.startswith("v"):
            text = "list tool %s ran" % name
        elif A.tools_file and name in [t["name"] for t in tools()]:
            text = "called %s" % name
        else:
            return {"jsonrpc": "2.0", "id": mid,
                    "error": {"code": -32602, "message": "no tool %s (auth %s)" %
                              (name, auth if A.echo_secret else "hidden")}}
        return {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}}
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no method"}}


def store(stream, msg):
    """Keeps an event of `stream` for replay; returns its id."""
    with EVENTS_CV:
        eid = "%s-%d" % (stream, len(EVENTS) + 1)
        EVENTS.append({"id": eid, "stream": stream, "msg": msg})
        EVENTS_CV.notify_all()
        return eid


def event(eid, msg, retry=0):
    head = ("id: %s\n" % eid) + ("retry: %d\n" % retry if retry else "")
    return (head + ("event: message\ndata: %s\n\n" % json.dumps(msg) if msg is not None
                    else "data: \n\n")).encode()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        n = int(self.headers.get("content-length") or 0)
        if A.move_endpoint and A.mode == "sse" and n > 8192:
            sid = self.path.partition("sessionId=")[2]
            with LOCK:
                s = SESSIONS.get(sid)
            if s is not None:
                s["q"].put({"__endpoint__": "/messages/moved/elsewhere?sessionId=%s" % sid})
                time.sleep(0.3)
        if not n:
            return ""
        self.connection.settimeout(5)
        data = b""
        try:
            while len(data) < n:
                x = self.rfile.read1(n - len(data))
                if not x:
                    break
                data += x
        except OSError:
            pass
        if len(data) < n:
            log({"method": self.command, "path": self.path, "short": [len(data), n]})
        return data.decode(errors="replace")

    def entry(self, body=""):
        log({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
             "body": body})

    def plain(self, status, text, ctype="text/plain", headers=None):
        data = text.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def jsonrpc_error(self, status, message):
        self.plain(status, json.dumps({"jsonrpc": "2.0", "id": None,
                                       "error": {"code": -32000, "message": message}}),
                   "application/json")

    def authorised(self):
        auth = self.headers.get("authorization", "")
        if A.token and auth != "Bearer " + A.token:
            msg = "unauthorized" + (" (you sent %s)" % auth if A.echo_secret else "")
            self.plain(401, msg, headers={"www-authenticate": "Bearer"})
            return False
        return True

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def sse_head(self, extra=None):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()

    # ---- Streamable HTTP ----

    def session(self, create=False):
        sid = self.headers.get("mcp-session-id")
        with LOCK:
            if create:
                sid = uuid.uuid4().hex
                SESSIONS[sid] = {"q": queue.Queue(), "reqs": 0}
                return sid
            s = SESSIONS.get(sid)
            if s is None:
                return None
            s["reqs"] += 1
            if A.expire_every and s["reqs"] > A.expire_every:
                del SESSIONS[sid]
                return None
            return sid

    def unknown_session(self):
        if A.forget_400:
            self.jsonrpc_error(400, "Bad Request: No valid session ID provided")
        else:
            self.jsonrpc_error(404, "Session not found")

    def do_POST(self):
        raw = self.body()
        self.entry(raw)
        if not self.authorised():
            return
        if A.html:
            self.plain(200, "<html><body>Please log in</body></html>", "text/html")
            return
        if A.mode == "sse":
            return self.sse_post(raw)
        try:
            msg = json.loads(raw)
        except ValueError:
            self.jsonrpc_error(400, "Parse error")
            return
        if msg.get("method") == "tools/call":
            with LOCK:
                drop = STATE["dropped"] < A.drop_call
                STATE["dropped"] += drop
            if drop:
                self.close_connection = True
                return
        if A.forget_at_call and msg.get("method") == "tools/call":
            with LOCK:
                first = not STATE["forgot"]
                STATE["forgot"] = True
                if first:
                    SESSIONS.pop(self.headers.get("mcp-session-id"), None)
            if first:
                GET_TOLD.wait(20)
                self.unknown_session()
                CALL_TOLD.set()
                return
        if A.forget_at_call and msg.get("method") == "initialize" and STATE["forgot"]:
            CALL_TOLD.wait(20)
        if A.invalid_400 and msg.get("method") == "tools/call":
            a = (msg.get("params") or {}).get("arguments") or {}
            if any(not isinstance(a.get(k), (int, float)) for k in ("a", "b")):
                self.plain(400, json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                    "code": -32602, "message": "Invalid params: a and b must be numbers"}}),
                    "application/json")
                return
        if msg.get("method") == "initialize":
            sid = self.session(create=True)
        else:
            sid = self.session()
            if sid is None:
                self.unknown_session()
                return
        if A.cut_call and msg.get("method") == "tools/call":
            with LOCK:
                cut = STATE["cut"] < A.cut_call
                STATE["cut"] += cut
            if cut:
                return self.cut_call(msg)
        ans = result_of(msg, self.headers.get("authorization", ""))
        if ans is None:
            self.plain(202, "")
            return
        hdr = {"mcp-session-id": sid} if msg.get("method") == "initialize" else {}
        if A.json:
            self.plain(200, json.dumps(ans), "application/json", hdr)
            return
        self.sse_head(hdr)
        if A.never_end and msg.get("method") == "tools/call":
            try:
                while True:
                    self.chunk(b": keep-alive\n\n")
                    time.sleep(0.2)
            except OSError:
                self.close_connection = True
                return
        data = ("event: message\ndata: %s\n\n" % json.dumps(ans)).encode()
        if A.slow_list and msg.get("method") == "tools/list":
            for i in range(0, len(data), 32):
                self.chunk(data[i:i + 32])
                time.sleep(A.slow_list / 1000.0)
        else:
            self.chunk(data)
        self.chunk(b"")
        if A.flip and msg.get("method") == "tools/call":
            self.notify(sid, {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def cut_call(self, msg):
        """A call's stream cut after its first events; its answer kept for replay."""
        with LOCK:
            STATE["streams"] += 1
            stream = "c%d" % STATE["streams"]
        self.sse_head()
        self.chunk(event(store(stream, None), None, A.retry))
        note = {"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}}
        self.chunk(event(store(stream, note), note))
        if A.huge_id:
            self.chunk(event("h" * 4000, note))
            self.chunk(event("n\x00l", note))
            self.chunk(b"id: with space\nretry: 12x\ndata: \n\n")
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        log({"method": "CUT", "stream": stream})
        ans = result_of(msg, self.headers.get("authorization", ""))
        if A.answer_on_get:
            self.notify(self.headers.get("mcp-session-id"), ans)
        else:
            store(stream, ans)

    def resume(self, lid):
        """A GET with Last-Event-ID: the events of its stream after it."""
        if A.refuse_resume:
            self.jsonrpc_error(A.refuse_resume, "no resumption here")
            return
        with LOCK:
            at = [i for i, e in enumerate(EVENTS) if e["id"] == lid]
        if not at:
            self.jsonrpc_error(400, "unknown event id")
            return
        stream = EVENTS[at[0]]["stream"]
        self.sse_head()
        self.close_connection = True
        if stream.startswith("g"):
            return self.poll_get()
        if A.empty_resume:
            self.chunk(b"")
            return
        i, deadline = at[0] + 1, time.time() + 30
        while time.time() < deadline:
            with EVENTS_CV:
                while i >= len(EVENTS) and time.time() < deadline:
                    EVENTS_CV.wait(0.2)
                batch = EVENTS[i:]
                i = len(EVENTS)
            for e in batch:
                if e["stream"] != stream or e["msg"] is None:
                    continue
                self.chunk(event(e["id"], e["msg"]))
                if "result" in e["msg"] or "error" in e["msg"]:
                    self.chunk(b"")
                    return
        self.chunk(b"")

    def poll_get(self):
        """--poll-get: one event with an id and no data, then the stream's end."""
        with LOCK:
            STATE["streams"] += 1
            stream = "g%d" % STATE["streams"]
        eid = store(stream, None)
        self.chunk(event(eid, None, A.retry))
        time.sleep(0.1)
        self.chunk(b"")
        log({"method": "END", "stream": stream, "id": eid})

    def notify(self, sid, msg):
        with LOCK:
            s = SESSIONS.get(sid)
        if s is not None:
            s["q"].put(msg)

    def do_GET(self):
        self.entry()
        if not self.authorised():
            return
        if A.mode == "sse":
            return self.sse_stream()
        if A.no_get:
            self.plain(405, "no GET stream", headers={"allow": "POST, DELETE"})
            return
        sid = self.session()
        if sid is None:
            self.unknown_session()
            if A.forget_at_call and STATE["forgot"]:
                GET_TOLD.set()
            return
        if self.headers.get("last-event-id") is not None:
            return self.resume(self.headers.get("last-event-id"))
        if A.poll_get:
            self.sse_head()
            self.close_connection = True
            return self.poll_get()
        self.sse_head()
        q = SESSIONS[sid]["q"]
        self.close_connection = True
        try:
            while True:
                try:
                    msg = q.get(timeout=0.05)
                except queue.Empty:
                    if A.flip:
                        msg = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                    else:
                        with LOCK:
                            gone = sid not in SESSIONS
                        if gone and A.stale_get:
                            self.chunk(b": still here\n\n")  # (a client that left ends it)
                            time.sleep(0.2)
                            continue
                        if gone:
                            self.chunk(b"")
                            return
                        continue
                self.chunk(("event: message\ndata: %s\n\n" % json.dumps(msg)).encode())
        except OSError:
            return

    def do_DELETE(self):
        self.entry()
        if not self.authorised():
            return
        sid = self.headers.get("mcp-session-id")
        with LOCK:
            known = SESSIONS.pop(sid, None) is not None
            STATE["deletes"] += known
        if not known:
            self.unknown_session()
            return
        self.plain(200, "")

    # ---- HTTP+SSE ----

    def sse_stream(self):
        sid = self.session(create=True)
        self.sse_head()
        self.close_connection = True
        q = SESSIONS[sid]["q"]
        try:
            self.chunk(("event: endpoint\ndata: /messages?sessionId=%s\n\n" % sid).encode())
            while True:
                try:
                    msg = q.get(timeout=0.2)
                except queue.Empty:
                    self.chunk(b": ping\n\n")
                    continue
                if "__endpoint__" in msg:
                    self.chunk(("event: endpoint\ndata: %s\n\n" % msg["__endpoint__"]).encode())
                    continue
                self.chunk(("event: message\ndata: %s\n\n" % json.dumps(msg)).encode())
        except OSError:
            with LOCK:
                SESSIONS.pop(sid, None)

    def sse_post(self, raw):
        if not (self.path.startswith("/messages?") or self.path.startswith("/messages/moved/")):
            self.plain(404, "no such endpoint")
            return
        sid = self.path.partition("sessionId=")[2]
        with LOCK:
            s = SESSIONS.get(sid)
        if s is None:
            self.plain(404, "no such session")
            return
        try:
            msg = json.loads(raw)
        except ValueError:
            self.plain(400, "bad JSON")
            return
        self.plain(202, "Accepted")
        ans = result_of(msg, self.headers.get("authorization", ""))
        if ans is not None:
            s["q"].put(ans)
        if A.flip and msg.get("method") == "tools/call":
            s["q"].put({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # (a client that went away, a refused handshake: what the tests provoke)


def main():
    srv = Server(("127.0.0.1", A.port), H, bind_and_activate=False)
    if A.rcvbuf:
        srv.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, A.rcvbuf)
    srv.server_bind()
    srv.server_activate()
    if A.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(A.cert, A.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = A.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, A.port_file)
    threading.Timer(A.lifetime, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
