#!/usr/bin/env python3
"""A small MCP server (stdio, newline-delimited JSON-RPC) for fault tests.

Options: --slow-init S (sleep before answering initialize), --crash-on-call
(exit in the middle of tools/call), --garbage (write junk lines), --huge-line
N (a line of N bytes before the tools/list answer), --ignore-sigterm,
--grandchild (start a background child that lives as long as possible),
--notify-first (a notification before the initialize answer), --ping (ask
the client for a ping), --page-size N (tools/list pages), --die-at-start,
--string-ids (answer with ids as strings), --tools-file F (the tool list from a
JSON file; each answers "called NAME with ARGS"), --flood N (N bytes of log
notifications before the tools/list answer), --raw-control (raw tabs
inside the tools/list answer's strings), --big-tool (a tool "big" with a large
result), --linger S (after its stdin ends, S seconds more before exiting),
--change-fifo F (once a line is written to FIFO F: new descriptions for every
tool, and notifications/tools/list_changed), --change-on-call (the same
after answering a tools/call), --slow-list S (tools/list after the first
answered S seconds late), --list-storm (notifications/tools/list_changed before
every tools/list answer: a list that never stops changing),
--setsid-child MARKER (a child in a session of its own, with MARKER in its
command line, that ignores SIGTERM), --log F (every message received),
--init-file F (initialize answered once file F exists), --endless-list (every
tools/list page names a next one: a cursor that never ends), --listed-file F
(created once a tools/list answer naming the tool added by --list-changed is
sent), --features (resources, resource templates and prompts declared and
served, some of them hostile, and a tool "ask" {mode} that asks the client
an elicitation/create question: see FEATURES below), --progress S (while sleep runs, notifications/progress every S seconds
for the progressToken its call carries), --exit-after-call (exit with status 5
once a tools/call is answered), --starts F (a line appended to file F at each
start).
Tools: echo {text}, add {a, b}, image, fail, sleep {seconds}.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]


def opt(name, default=None):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            return args[i + 1]
        return True
    return default


if opt("--ignore-sigterm"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if opt("--die-at-start"):
    sys.stderr.write("fake_mcp: dying at start on purpose\n")
    sys.exit(3)
TAG = opt("--tag", "none")
if opt("--grandchild"):
    # A grandchild that ignores SIGTERM and never exits by itself.
    subprocess.Popen(["sh", "-c", "trap '' TERM; while :; do sleep 1; done; : %s" % TAG])
if opt("--setsid-child"):
    # A child in a session of its own (out of the server's process group),
    # that ignores SIGTERM and never exits by itself.
    subprocess.Popen(["setsid", "sh", "-c", "trap '' TERM; while :; do sleep 1; done; : %s"
                      % opt("--setsid-child")])
LOG = opt("--log")
if opt("--starts"):
    with open(opt("--starts"), "a") as f:
        f.write("start %d\n" % os.getpid())
sys.stderr.write("fake_mcp: started\n")
sys.stderr.flush()

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
    {"name": "image", "description": "Return an image.", "inputSchema": {"type": "object"}},
    {"name": "fail", "description": "Fail.", "inputSchema": {"type": "object"}},
    {"name": "sleep", "description": "Sleep.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
]
if opt("--tools-file"):
    with open(opt("--tools-file")) as f:
        TOOLS = json.load(f)
if opt("--big-tool"):
    TOOLS.append({"name": "big", "description": "A large result.",
                  "inputSchema": {"type": "object", "properties": {"bytes": {"type": "number"},
                                                                   "items": {"type": "number"},
                                                                   "structured": {"type": "boolean"}}}})


OUT = threading.Lock()


def send(obj):
    with OUT:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def rid(i):
    return str(i) if opt("--string-ids") else i


def change_list():
    for t in TOOLS:
        t["description"] = "v2 " + t.get("description", "") + " (changed)" * 8
    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


if opt("--change-fifo"):
    def change():
        with open(opt("--change-fifo")) as f:
            f.readline()
        change_list()
    threading.Thread(target=change, daemon=True).start()
lists = 0

# ---- FEATURES (--features) ----
BIG = 1 << 20
RESOURCES = [{"uri": "fake://small", "name": "small", "mimeType": "text/plain",
              "description": "a small text"},
             {"uri": "fake://huge", "name": "huge", "description": "1 MB of text"},
             {"uri": "fake://blob", "name": "blob", "mimeType": "application/octet-stream"},
             {"name": "no uri at all"}, "not an object",
             {"uri": "fake://bad", "name": "bad", "description": "contents is not an array"}]
PROMPTS = [{"name": "greet", "description": "Greets someone",
            "arguments": [{"name": "who", "description": "whom", "required": True},
                          {"name": "tone"}]},
           {"name": "bad", "description": "messages is not an array"},
           {"name": "mixed", "description": "several kinds of content"},
           {"name": "huge", "description": "1 MB of prompt"}]
ELICIT = {
    "flat": {"type": "object", "properties": {
        "name": {"type": "string", "title": "Your name"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "ok": {"type": "boolean", "description": "agree?"},
        "color": {"type": "string", "enum": ["red", "green"]}},
        "required": ["name", "color"]},
    "defaults": {"type": "object", "properties": {
        "name": {"type": "string", "default": "Ann"},
        "age": {"type": "integer", "default": 7},
        "color": {"type": "string", "enum": ["red", "green"], "default": "green"}},
        "required": ["name"]},
    "partial": {"type": "object", "properties": {
        "name": {"type": "string", "default": "Ann"},
        "note": {"type": "string"}}},
    "nested": {"type": "object", "properties": {
        "addr": {"type": "object", "properties": {"street": {"type": "string"}}}},
        "required": ["addr"]},
}
ASKED = {}
asks = 0


def feature(msg):
    """Answers a resources, prompts or elicitation message; True if it did."""
    global asks
    method, p, i = msg.get("method"), msg.get("params") or {}, msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            "serverInfo": {"name": "fake-features", "version": "1"}}})
        with open(os.environ.get("FAKE_INIT_LOG", os.devnull), "a") as f:
            f.write(json.dumps(p) + "\n")
        return True
    if method == "tools/list":
        send({"jsonrpc": "2.0", "id": i, "result": {"tools": [
            {"name": "ask", "description": "Asks the user.",
             "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}}}]}})
        return True
    if method == "resources/list":
        if p.get("cursor") == "p2":
            res = {"resources": [{"uri": "fake://second-page", "name": "second"}]}
        else:
            res = {"resources": RESOURCES, "nextCursor": "p2"}
    elif method == "resources/templates/list":
        res = {"resourceTemplates": [{"uriTemplate": "fake://item/{id}", "name": "item"}]}
    elif method == "resources/read":
        uri = p.get("uri")
        if uri == "fake://small":
            res = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "small text here"}]}
        elif uri == "fake://huge":
            res = {"contents": [{"uri": uri, "text": "h" * BIG + "END"}]}
        elif uri == "fake://blob":
            res = {"contents": [{"uri": uri, "mimeType": "application/octet-stream",
                                 "blob": "QUJD" * (BIG // 4)}]}
        elif uri == "fake://bad":
            res = {"contents": "nope"}
        else:
            send({"jsonrpc": "2.0", "id": i, "error": {"code": -32002,
                                                       "message": "Resource not found: %s" % uri}})
            return True
    elif method == "prompts/list":
        res = {"prompts": PROMPTS}
    elif method == "prompts/get":
        name, a = p.get("name"), p.get("arguments") or {}
        if name == "greet":
            if "who" not in a:
                send({"jsonrpc": "2.0", "id": i, "error": {"code": -32602,
                                                           "message": "missing argument who"}})
                return True
            res = {"messages": [{"role": "user", "content": {
                "type": "text", "text": "Say hello to %s%s." % (a["who"], (", " + a["tone"])
                                                                if "tone" in a else "")}}]}
        elif name == "bad":
            res = {"messages": "nope"}
        elif name == "mixed":
            res = {"messages": [
                {"role": "user", "content": {"type": "text", "text": "first part"}},
                {"role": "assistant", "content": {"type": "text", "text": "an answer"}},
                {"role": "user", "content": {"type": "image", "data": "AAAA",
                                             "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": "fake://small", "mimeType": "text/plain", "text": "embedded text"}}}]}
        elif name == "huge":
            res = {"messages": [{"role": "user", "content": {"type": "text",
                                                             "text": "p" * BIG + "END"}}]}
        else:
            send({"jsonrpc": "2.0", "id": i, "error": {"code": -32602,
                                                       "message": "no prompt %s" % name}})
            return True
    elif method == "tools/call" and p.get("name") == "ask":
        mode = (p.get("arguments") or {}).get("mode", "flat")
        asks += 1
        eid = "e%d" % asks
        ASKED[eid] = i
        params = {"message": "Tell me about you (%s)" % mode}
        if mode == "url":
            params.update({"mode": "url", "url": "https://example.invalid/form",
                           "elicitationId": eid})
        else:
            params["requestedSchema"] = ELICIT[mode]
        send({"jsonrpc": "2.0", "id": eid, "method": "elicitation/create", "params": params})
        return True
    else:
        return False
    send({"jsonrpc": "2.0", "id": i, "result": res})
    return True

ping_sent = False
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")
    msg = json.loads(line)
    method = msg.get("method")
    if method is None and opt("--features") and msg.get("id") in ASKED:
        # the client's answer to an elicitation/create: the "ask" call's result
        call_id = ASKED.pop(msg["id"])
        got = msg.get("result", {"error": msg.get("error")})
        send({"jsonrpc": "2.0", "id": call_id, "result": {
            "content": [{"type": "text", "text": "elicited: " + json.dumps(got, sort_keys=True)}]}})
        continue
    if method is None:
        continue  # a response to our ping
    if opt("--features") and feature(msg):
        continue
    if method == "initialize":
        if opt("--notify-first"):
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "hello before init"}})
        if opt("--slow-init"):
            time.sleep(float(opt("--slow-init")))
        if opt("--init-file"):
            # initialize is answered once the test made this file (at most 120 s)
            for _ in range(2400):
                if os.path.exists(opt("--init-file")):
                    break
                time.sleep(0.05)
        if opt("--garbage"):
            sys.stdout.write("this is not json\n{\"half\": \n\x00\x01 binary\n")
        send({"jsonrpc": "2.0", "id": rid(msg["id"]), "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"}}})
    elif method == "notifications/initialized":
        if opt("--ping") and not ping_sent:
            ping_sent = True
            send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            send({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
    elif method == "tools/list":
        if opt("--flood"):
            # log notifications as fast as the pipe takes them, then the answer
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "debug", "data": "f" * 4000}}) + "\n"
            with OUT:
                for _ in range(int(opt("--flood")) // len(note) + 1):
                    sys.stdout.write(note)
                sys.stdout.flush()
        if opt("--huge-line"):
            sys.stdout.write("x" * int(opt("--huge-line")) + "\n")
        size = int(opt("--page-size", "100"))
        start = int((msg.get("params") or {}).get("cursor") or 0)
        page = TOOLS[start:start + size]
        result = {"tools": page}
        if start + size < len(TOOLS) or opt("--endless-list"):
            result["nextCursor"] = str(start + size)
        lists += 1
        if opt("--slow-list") and lists > 1:
            def late(m=dict(msg), r=dict(result)):
                time.sleep(float(opt("--slow-list")))
                send({"jsonrpc": "2.0", "id": rid(m["id"]), "result": r})
            threading.Thread(target=late, daemon=True).start()
            continue
        if opt("--raw-control"):
            # Raw tabs inside strings: not JSON (RFC 8259), sent anyway.
            with OUT:
                sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid(msg["id"]),
                                             "result": result}).replace("\\t", "\t") + "\n")
                sys.stdout.flush()
            continue
        if opt("--list-storm"):
            # the next change comes before each answer: when the answer is
            # in, the list is already out of date
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        send({"jsonrpc": "2.0", "id": rid(msg["id"]), "result": result})
        if opt("--listed-file") and any(t["name"] == "late" for t in page):
            open(opt("--listed-file"), "w").close()  # the new list is in the pipe
    elif method == "tools/call":
        p = msg["params"]
        name, a = p["name"], p.get("arguments") or {}
        if opt("--crash-on-call"):
            sys.stderr.write("fake_mcp: crashing in the middle of a call\n")
            sys.stderr.flush()
            os._exit(7)
        if name == "echo":
            res = {"content": [{"type": "text", "text": "echo: " + str(a.get("text", ""))}]}
            if opt("--list-changed") and not any(t["name"] == "late" for t in TOOLS):
                TOOLS.append({"name": "late", "description": "Added later.",
                              "inputSchema": {"type": "object"}})
                # the change before the call's answer: the client asks for
                # the new list as soon as the call is answered
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                send({"jsonrpc": "2.0", "id": rid(msg["id"]), "result": res})
                continue
        elif name == "late" and any(t["name"] == "late" for t in TOOLS):
            res = {"content": [{"type": "text", "text": "late tool ran"}]}
        elif name == "big":
            size, items = int(a.get("bytes", 100000)), int(a.get("items", 1))
            if a.get("structured"):
                res = {"content": [], "structuredContent": {"data": "s" * size}}
            else:
                res = {"content": [{"type": "text", "text": "b" * size + "END"}
                                   for _ in range(items)]}
        elif name == "add":
            res = {"content": [{"type": "text", "text": str(a.get("a", 0) + a.get("b", 0))}]}
        elif name == "image":
            res = {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"},
                               {"type": "text", "text": "and a caption"}]}
        elif name == "fail":
            res = {"content": [{"type": "text", "text": "it failed on purpose"}], "isError": True}
        elif name == "sleep":
            # In the background: the server goes on reading (cancellations).
            token = (p.get("_meta") or {}).get("progressToken")

            def later(i=msg["id"], secs=float(a.get("seconds", 1)), token=token):
                end = time.monotonic() + secs
                step = float(opt("--progress", 0) or 0)
                n = 0
                while step > 0 and token is not None and time.monotonic() + step < end:
                    time.sleep(step)
                    n += 1
                    send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                        "progressToken": token, "progress": n, "total": int(secs / step),
                        "message": "step %d" % n}})
                time.sleep(max(0.0, end - time.monotonic()))
                send({"jsonrpc": "2.0", "id": rid(i), "result": {
                    "content": [{"type": "text", "text": "slept"}]}})
            threading.Thread(target=later, daemon=True).start()
            continue
        elif opt("--tools-file") and any(t["name"] == name for t in TOOLS):
            res = {"content": [{"type": "text", "text": "called %s with %s" % (name, json.dumps(a))}]}
            if opt("--change-on-call"):
                send({"jsonrpc": "2.0", "id": rid(msg["id"]), "result": res})
                change_list()
                continue
        else:
            send({"jsonrpc": "2.0", "id": rid(msg["id"]), "error": {"code": -32602,
                                                                     "message": "Unknown tool: " + name}})
            continue
        send({"jsonrpc": "2.0", "id": rid(msg["id"]), "result": res})
        if opt("--exit-after-call"):
            sys.stderr.write("fake_mcp: exiting after a call on purpose\n")
            sys.stderr.flush()
            os._exit(5)
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
if opt("--linger"):
    time.sleep(float(opt("--linger")))  # deaf to the closed stdin: signals end it
