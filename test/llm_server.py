#!/usr/bin/env python3
"""A scriptable local LLM server for mote's tests and `make demo`.

Speaks the Anthropic Messages stream (POST .../messages) and the OpenAI
chat-completions stream (POST .../chat/completions) over HTTP or HTTPS on
loopback. Python standard library only.

Each request takes the next step of the script (a JSON list); when the
script is used up, the server answers by itself: after a tool result it
reports what the tool returned, else it echoes the user's last message.

Steps:
  {"text": "..."}                               a streamed answer
  {"tool": "NAME", "input": {...}, "text": ""}  a tool call (text before it optional)
  {"tools": [{"tool": ..., "input": ...}, ...]} parallel tool calls
  {"status": 429, "retry_after": 1, "body": {...}}  an HTTP error
  {"error_event": "overloaded_error", "after_text": ""}  an error event after HTTP 200
  {"stall": SECONDS, "after_text": "..."}       stop sending mid-stream
  {"stall_headers": SECONDS}                    accept, then say nothing
  {"reset": true}                               close without a response
  {"truncate": true, "text": "..."}             end the stream without its end event
  {"long_line": BYTES}                          one data line of BYTES bytes
  {"delay_ms": N, ...}                          wait N ms between events
  {"stop": "max_tokens", ...}                   this stop reason (OpenAI: finish_reason)
  {"input_tokens": N, ...}                      the usage reported for the request
  {"cache_read": N, "cache_write": M, ...}      cached input tokens in the usage
  {"refusal": "..."}                            OpenAI: a refusal instead of content
  {"cut_input": true, "tool": ...}              Anthropic: the tool input stops half way
  {"raw_body": "...", "content_type": "text/html"}  HTTP 200 with this body (not a stream)
  {"slow_headers_ms": N}                        response headers a byte every N ms, never ending
  {"slow_event_ms": N}                          one event a byte every N ms, never ending
  {"tool": ..., "raw_input": ""}                the tool input's JSON text as sent (may be empty)
  {"error_event": ..., "error_code": "..."}      OpenAI: the error's code too
  {"flood_pings": SECONDS}                      SSE pings as fast as possible, then close
  {"ping_forever": SECONDS}                     one SSE ping a second, nothing else
  {"tools": [{"tool": ..., "id": "..."}]}       a call with this id (default: unique)

Every request is appended to --log as one JSON line (path, headers, body).
The chosen port is written to --port-file once listening.
"""
import argparse
import json
import os
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"script": [], "next": 0, "log": None, "count": 0}


def next_step():
    with LOCK:
        STATE["count"] += 1
        if STATE["next"] < len(STATE["script"]):
            step = STATE["script"][STATE["next"]]
            STATE["next"] += 1
            return step
    return None


def last_user_text(body, dialect):
    """The last user message's text, or the last tool result's."""
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if dialect == "openai" and m.get("role") == "tool":
            return "tool", str(m.get("content", ""))
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return "user", c
        for blk in reversed(c or []):
            if blk.get("type") == "tool_result":
                content = blk.get("content")
                if isinstance(content, list):
                    content = "".join(x.get("text", "") for x in content)
                return "tool", str(content)
            if blk.get("type") == "text":
                return "user", blk.get("text", "")
    return "user", ""


def auto_step(body, dialect):
    kind, text = last_user_text(body, dialect)
    if kind == "tool":
        first = text.strip().splitlines()[0] if text.strip() else "(no output)"
        return {"text": "The tool returned: " + first[:200]}
    return {"text": "You said: " + text}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.send_raw(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunks(self):
        self.send_raw(b"0\r\n\r\n")

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_invalid": raw.decode(errors="replace")}
        dialect = "anthropic" if self.path.endswith("/messages") else "openai"
        if STATE["log"]:
            with LOCK, open(STATE["log"], "a") as f:
                f.write(json.dumps({"path": self.path, "dialect": dialect,
                                    "headers": {k.lower(): v for k, v in self.headers.items()},
                                    "body": body, "raw": raw.decode(errors="replace")})
                        + "\n")
        step = next_step() or auto_step(body, dialect)
        self.serve(step, dialect, body)

    def serve(self, step, dialect, body):
        if step.get("reset"):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if "stall_headers" in step:
            time.sleep(step["stall_headers"])
            self.close_connection = True
            return
        if "slow_headers_ms" in step:
            # The status line and headers a byte at a time, never ending.
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" + b"x-pad: " + b"p" * 4096
            try:
                for b in head:
                    self.send_raw(bytes([b]))
                    time.sleep(step["slow_headers_ms"] / 1000.0)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
            self.close_connection = True
            return
        if "slow_event_ms" in step:
            # Headers, then one event a byte at a time that never completes.
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            try:
                for b in b"event: ping\ndata: {\"type\": \"ping\"" + b" " * 100000:
                    self.send_raw(bytes([b]))
                    time.sleep(step["slow_event_ms"] / 1000.0)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass
            self.close_connection = True
            return
        if "raw_body" in step:
            payload = step["raw_body"].encode()
            self.send_response(200)
            self.send_header("content-type", step.get("content_type", "text/html"))
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.send_raw(payload)
            return
        if "status" in step:
            payload = json.dumps(step.get("body") or {
                "type": "error", "error": {"type": "rate_limit_error" if step["status"] == 429
                                           else "api_error", "message": "scripted %d" % step["status"]}}).encode()
            self.send_response(step["status"])
            if "retry_after" in step:
                self.send_header("retry-after", str(step["retry_after"]))
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.send_raw(payload)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        delay = step.get("delay_ms", 0) / 1000.0
        if "ping_forever" in step:
            # one SSE ping a second, for the given seconds or until the
            # client goes away: a stream that is alive but never answers
            end = time.time() + step["ping_forever"]
            try:
                while time.time() < end:
                    self.chunk(sse("ping", {"type": "ping"}))
                    time.sleep(1)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                pass
            return
        if "flood_pings" in step:
            # SSE pings as fast as the socket takes them (100 KB a write),
            # for the given seconds or until the client goes away
            burst = sse("ping", {"type": "ping"}) * 3000
            end = time.time() + step["flood_pings"]
            try:
                while time.time() < end:
                    self.chunk(burst)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                pass
            return
        events = (anthropic_events if dialect == "anthropic" else openai_events)(step, body)
        try:
            for ev in events:
                if isinstance(ev, tuple) and ev[0] == "STALL":
                    time.sleep(ev[1])
                    return
                if isinstance(ev, tuple) and ev[0] == "END":
                    self.end_chunks()
                    return
                self.chunk(ev)
                if delay:
                    time.sleep(delay)
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass


def sse(event, data):
    if event:
        return "event: %s\ndata: %s\n\n" % (event, json.dumps(data))
    return "data: %s\n\n" % json.dumps(data)


def words(text):
    out, cur = [], ""
    for ch in text:
        cur += ch
        if ch == " ":
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def tool_list(step):
    if "tools" in step:
        return step["tools"]
    if "tool" in step:
        c = {"tool": step["tool"], "input": step.get("input", {})}
        if "raw_input" in step:
            c["raw_input"] = step["raw_input"]
        return [c]
    return []


def anthropic_events(step, body):
    yield sse("message_start", {"type": "message_start", "message": {
        "id": "msg_test", "type": "message", "role": "assistant", "content": [],
        "model": body.get("model", "test"), "stop_reason": None,
        "usage": dict({"input_tokens": step.get("input_tokens", 12), "output_tokens": 1},
                      **({"cache_read_input_tokens": step["cache_read"],
                          "cache_creation_input_tokens": step.get("cache_write", 0)}
                         if "cache_read" in step else {}))}})
    text = step.get("text", step.get("after_text", ""))
    idx = 0
    if "long_line" in step:
        text = "x" * step["long_line"]
    if text:
        yield sse("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}})
        yield sse("ping", {"type": "ping"})
        pieces = [text] if "long_line" in step else words(text)
        for w in pieces:
            yield sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": w}})
        if "stall" in step:
            yield ("STALL", step["stall"])
        if "error_event" in step:
            yield "event: error\ndata: %s\n\n" % json.dumps({"type": "error", "error": {
                "type": step["error_event"], "message": "scripted " + step["error_event"]}})
            yield ("END",)
        yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        idx = 1
    else:
        if "stall" in step:
            yield ("STALL", step["stall"])
        if "error_event" in step:
            yield "event: error\ndata: %s\n\n" % json.dumps({"type": "error", "error": {
                "type": step["error_event"], "message": "scripted " + step["error_event"]}})
            yield ("END",)
    for n, call in enumerate(tool_list(step)):
        args = call["raw_input"] if "raw_input" in call else json.dumps(call.get("input", {}))
        if step.get("cut_input"):
            args = args[:len(args) // 2]  # the token limit struck inside it
        yield sse("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {
            "type": "tool_use", "id": call.get("id", "toolu_%d_%d" % (STATE["count"], n)),
            "name": call["tool"], "input": {}}})
        for i in range(0, len(args), 7):
            yield sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                              "delta": {"type": "input_json_delta", "partial_json": args[i:i + 7]}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": idx})
        idx += 1
    stop = step.get("stop") or ("tool_use" if tool_list(step) else "end_turn")
    yield sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                "usage": {"output_tokens": 5 + len(text) // 4}})
    if step.get("truncate"):
        yield ("END",)
    yield sse("message_stop", {"type": "message_stop"})


def openai_events(step, body):
    base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": body.get("model", "t")}

    def chunk(delta, finish=None):
        d = dict(base)
        d["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return "data: %s\n\n" % json.dumps(d)

    yield chunk({"role": "assistant", "content": ""})
    if "refusal" in step:
        for w in words(step["refusal"]):
            yield chunk({"refusal": w})
    text = step.get("text", step.get("after_text", ""))
    if "long_line" in step:
        text = "x" * step["long_line"]
    pieces = [text] if "long_line" in step else words(text)
    for w in pieces:
        yield chunk({"content": w})
    if "stall" in step:
        yield ("STALL", step["stall"])
    if "error_event" in step:
        err = {"type": step["error_event"], "message": "scripted " + step["error_event"]}
        if "error_code" in step:
            err["code"] = step["error_code"]
        yield "data: %s\n\n" % json.dumps({"error": err})
        yield ("END",)
    calls = tool_list(step)
    for n, call in enumerate(calls):
        args = call["raw_input"] if "raw_input" in call else json.dumps(call.get("input", {}))
        yield chunk({"tool_calls": [{"index": n, "id": call.get("id", "call_%d_%d" % (STATE["count"], n)),
                                     "type": "function",
                                     "function": {"name": call["tool"], "arguments": ""}}]})
        for i in range(0, len(args), 5):
            yield chunk({"tool_calls": [{"index": n, "function": {"arguments": args[i:i + 5]}}]})
    yield chunk({}, step.get("stop") or ("tool_calls" if calls else "stop"))
    u = dict(base)
    u["choices"] = []
    u["usage"] = {"prompt_tokens": step.get("input_tokens", 12) + step.get("cache_read", 0),
                  "completion_tokens": 5 + len(text) // 4, "total_tokens": 0}
    if "cache_read" in step:
        u["usage"]["prompt_tokens_details"] = {"cached_tokens": step["cache_read"]}
    yield "data: %s\n\n" % json.dumps(u)
    if step.get("truncate"):
        yield ("END",)
    yield "data: [DONE]\n\n"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--script", help="JSON file with a list of steps")
    ap.add_argument("--log")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--lifetime", type=float, default=600, help="exit after this many seconds")
    a = ap.parse_args()
    if a.script:
        with open(a.script) as f:
            STATE["script"] = json.load(f)
    STATE["log"] = a.log
    cls = Server6 if ":" in a.host else Server
    srv = cls((a.host, a.port), Handler)
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.rename(tmp, a.port_file)
    else:
        print(port, flush=True)
    # Bounded life: a test server never outlives its test run.
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
