#!/usr/bin/env python3
"""Integration tests of MCP servers over HTTP (Streamable HTTP and
HTTP+SSE): a small hostile server (test/mcp_http_server.py) for the faults,
and the real @modelcontextprotocol/server-everything in its streamableHttp
and sse modes (installed into .deps/npm by `make deps`).

    test_mcp_http.py BUILDDIR
"""
import glob
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import harness
from harness import (NOTES, ROOT, TMP, Skip, build_shim, check, config_value, free_port,
                     requests_in, run_all, big_tool_list, start_server, wait_for,
                     shut, wait_listening)
from harness import mcp_config as config

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
HOSTILE = os.path.join(ROOT, "test", "mcp_http_server.py")
EVERYTHING = os.path.join(ROOT, ".deps", "npm", "node_modules", "@modelcontextprotocol",
                          "server-everything", "dist", "index.js")
PROCS = []
SECRET = "s3cr3t-mcp-token-%s" % uuid.uuid4().hex[:12]


def env(**extra):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and "proxy" not in k.lower()}
    e.update(ANTHROPIC_API_KEY="sk-ant-mcp-http", NO_COLOR="1")
    e.update(extra)
    return e


def args(port, cfg, *extra, state=None):
    st = state or tempfile.mkdtemp(dir=TMP)
    return [MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
            "--mcp-config", cfg] + list(extra)


def run(a, timeout=90, **extra):
    return subprocess.run(a, capture_output=True, text=True, timeout=timeout, env=env(**extra))


def hostile(*flags, mode="http"):
    """Starts the hostile server; returns (base URL, request log path)."""
    tag = uuid.uuid4().hex[:8]
    pf = os.path.join(TMP, "hport-" + tag)
    log = os.path.join(TMP, "hlog-" + tag)
    PROCS.append(subprocess.Popen([sys.executable, HOSTILE, "--port-file", pf, "--mode", mode,
                                   "--log", log] + list(flags)))
    port = int(wait_for(lambda: os.path.exists(pf) and open(pf).read(), "the hostile server"))
    path = "/mcp" if mode == "http" else "/sse"
    return "http://127.0.0.1:%d%s" % (port, path), log


def hlog(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip()]


def hdr(entry, name):
    for k, v in entry["headers"].items():
        if k.lower() == name:
            return v
    return None


def tool_results(reqs):
    """The tool results (Anthropic blocks) of these requests, in order."""
    return [b for r in reqs for b in harness.tool_results(r["body"])]


def everything(mode, port=None):
    """Starts server-everything in `mode` on `port`; returns (proc, port, log)."""
    if not os.path.exists(EVERYTHING) or subprocess.run(["node", "--version"],
                                                        capture_output=True).returncode != 0:
        raise Skip("node or @modelcontextprotocol/server-everything is not installed (make deps)")
    port = port or free_port()
    log = os.path.join(TMP, "everything-%s-%d.log" % (mode, port))
    p = subprocess.Popen(["node", EVERYTHING, mode], env=dict(os.environ, PORT=str(port)),
                         stdout=open(log, "a"), stderr=subprocess.STDOUT)
    PROCS.append(p)
    check(wait_listening(port, p), "server-everything %s does not listen: %s"
          % (mode, open(log).read()[-400:]))
    return p, port, log


def ev_url(mode, port):
    return "http://127.0.0.1:%d%s" % (port, "/mcp" if mode == "streamableHttp" else "/sse")


def journal_text(state):
    out = ""
    for f in glob.glob(os.path.join(state, "conversations", "*")):
        out += open(f, errors="replace").read()
    return out


# ---- the hostile server: the protocol as sent ----------------------------------

def test_streamable_http_as_sent():
    url, slog = hostile("--token", SECRET)
    port, log = start_server([{"tools": [{"tool": "h__echo", "input": {"text": "hi"}},
                                         {"tool": "h__add", "input": {"a": 2, "b": 3}}]},
                              {"text": "done"}])
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"h": {"type": "http", "url": url,
                        "headers": {"Authorization": "Bearer ${MT_TOKEN}"}}})
    p = run(args(port, cfg, "-p", "x", "--yes", state=st), MT_TOKEN=SECRET)
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    texts = [r["content"] for r in tool_results(requests_in(log))]
    check(texts == ["echo: hi", "5"], texts)
    reqs = hlog(slog)
    posts = [r for r in reqs if r["method"] == "POST"]
    bodies = [json.loads(r["body"]) for r in posts]
    check(bodies[0]["method"] == "initialize" and hdr(posts[0], "mcp-session-id") is None,
          "initialize goes without a session")
    check(hdr(posts[0], "mcp-protocol-version") is None, "no version header before initialize")
    sid = {hdr(r, "mcp-session-id") for r in reqs[1:]}
    check(len(sid) == 1 and None not in sid, "one session id on every later request: %s" % sid)
    for r in posts:
        check("application/json" in hdr(r, "accept") and "text/event-stream" in hdr(r, "accept"),
              hdr(r, "accept"))
        check(hdr(r, "authorization") == "Bearer " + SECRET, "the header went with each request")
    check(all(hdr(r, "mcp-protocol-version") == "2025-06-18" for r in reqs[1:]), "version header")
    methods = [r["method"] for r in reqs]
    check("GET" in methods, "the GET stream was opened")
    check(methods[-1] == "DELETE", "the session ended with DELETE: %s" % methods[-6:])
    calls = [b for b in bodies if b.get("method") == "tools/call"]
    check(len(calls) == 2, calls)
    check("mcp h: the session ended" in p.stderr, p.stderr)
    check(SECRET not in p.stderr and SECRET not in journal_text(st), "the secret stays unsaid")


def test_http_sse_as_sent():
    url, slog = hostile(mode="sse")
    port, log = start_server([{"tools": [{"tool": "s__echo", "input": {"text": "over sse"}},
                                         {"tool": "s__add", "input": {"a": 40, "b": 2}}]},
                              {"text": "done"}])
    p = run(args(port, config({"s": {"type": "sse", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    texts = [r["content"] for r in tool_results(requests_in(log))]
    check(texts == ["echo: over sse", "42"], texts)
    reqs = hlog(slog)
    check(reqs[0]["method"] == "GET" and reqs[0]["path"] == "/sse", reqs[0])
    check(all(r["path"].startswith("/messages?sessionId=") for r in reqs if r["method"] == "POST"),
          "POSTs go to the endpoint the stream named")


def test_json_answers():
    url, _ = hostile("--json", "--no-get")
    port, log = start_server([{"tool": "j__add", "input": {"a": 1, "b": 2}}, {"text": "done"}])
    p = run(args(port, config({"j": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    check([r["content"] for r in tool_results(requests_in(log))] == ["3"], "answered as JSON")


def test_cancel_sends_notifications_cancelled():
    url, slog = hostile()
    port, _ = start_server([{"tool": "c__sleep", "input": {"seconds": 30}}])
    p = subprocess.Popen(args(port, config({"c": {"type": "http", "url": url}}), "-p", "x", "--yes"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    wait_for(lambda: any('"tools/call"' in r["body"] for r in hlog(slog)), "the call")
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=20)
    took = time.monotonic() - t0
    check(p.returncode == 130, p.returncode)
    bodies = [json.loads(r["body"]) for r in hlog(slog) if r["method"] == "POST"]
    call = [b for b in bodies if b.get("method") == "tools/call"][0]
    canc = [b for b in bodies if b.get("method") == "notifications/cancelled"]
    check(canc and canc[0]["params"]["requestId"] == call["id"], bodies[-2:])
    NOTES.append("Ctrl+C during an HTTP tool call to exit: %.0f ms" % (took * 1000))


# ---- the model's client: TLS with its trust store, proxies ------------------------

PROXY = os.path.join(ROOT, "test", "proxy.py")


def certs():
    d = os.path.join(TMP, "certs")
    subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), d], check=True)
    return d


def start_proxy(*extra):
    d = tempfile.mkdtemp(dir=TMP)
    pf, log = os.path.join(d, "port"), os.path.join(d, "log")
    PROCS.append(subprocess.Popen([sys.executable, PROXY, "--port-file", pf, "--log", log,
                                   "--lifetime", "300"] + list(extra)))
    port = int(wait_for(lambda: os.path.exists(pf) and open(pf).read(), "the proxy"))
    return port, log


def test_an_approved_call_is_never_sent_twice():
    # The server reads the tools/call and closes its (kept) connection
    # without a byte of answer, as a proxy's idle timeout during a long
    # tool or a restart does: it may have run the tool. The call is not
    # POSTed again; its result says it may or may not have run. (A model
    # request, which repeats no effect, is sent again once: test_client.)
    url, slog = hostile("--drop-call", "1")
    port, log = start_server([{"tool": "d__echo", "input": {"text": "once"}}, {"text": "done"}])
    p = run(args(port, config({"d": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    calls = [r for r in hlog(slog) if r.get("body") and '"tools/call"' in r["body"]]
    check(len(calls) == 1, "tools/call was POSTed %d times" % len(calls))
    res = tool_results(requests_in(log))
    check(len(res) == 1 and res[0].get("is_error") and
          "may or may not have run" in json.dumps(res[0]["content"]), res)


# ---- resumption: Last-Event-ID and retry ----------------------------------------

def resumed_call(*flags, text="resumed"):
    """A turn whose r__echo call's event stream the hostile server cuts
    (--cut-call 1 and `flags`); returns (mote's run, the server's log, the
    tool results the model got)."""
    url, slog = hostile("--cut-call", "1", *flags)
    port, log = start_server([{"tool": "r__echo", "input": {"text": text}}, {"text": "done"}])
    p = run(args(port, config({"r": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-600:]))
    reqs = hlog(slog)
    calls = [r for r in reqs if r.get("body") and '"tools/call"' in r["body"]]
    check(len(calls) == 1, "tools/call was POSTed %d times (never again after a cut)" % len(calls))
    return reqs, calls[0], tool_results(requests_in(log))


def resumes(reqs):
    return [r for r in reqs if r["method"] == "GET" and hdr(r, "last-event-id") is not None]


def test_a_cut_call_stream_is_resumed_after_its_retry():
    # The call's event stream breaks after an event with an id and before
    # the answer: a GET with that Last-Event-ID (and the session) after the
    # server's `retry:` brings the answer; the call is not sent again.
    reqs, call, res = resumed_call("--retry", "1500")
    check(len(res) == 1 and not res[0].get("is_error") and
          json.dumps(res[0]["content"]).find("echo: resumed") >= 0, res)
    got = resumes(reqs)
    check(len(got) == 1, "resumption GETs: %d" % len(got))
    check(hdr(got[0], "last-event-id") == "c1-2", hdr(got[0], "last-event-id"))
    check(hdr(got[0], "mcp-session-id") == hdr(call, "mcp-session-id") is not None,
          (hdr(got[0], "mcp-session-id"), hdr(call, "mcp-session-id")))
    cut = [r for r in reqs if r["method"] == "CUT"][0]
    waited = got[0]["t"] - cut["t"]
    check(1.3 <= waited <= 15, "the resumption came %.2f s after the cut (retry: 1500)" % waited)


def test_a_resumption_refused_fails_the_call_clearly():
    for status in ("405", "404"):
        reqs, call, res = resumed_call("--refuse-resume", status)
        text = json.dumps(res[0]["content"]) if res else ""
        check(len(res) == 1 and res[0].get("is_error") and "was not resumed" in text and
              "HTTP %s" % status in text and "may or may not have run" in text, (status, res))
        check(len(resumes(reqs)) == 1, (status, len(resumes(reqs))))


def test_resumptions_that_bring_nothing_end_the_call():
    reqs, call, res = resumed_call("--empty-resume", "--retry", "100")
    n = config_value("MOTE_MCP_RESUME_MAX")
    text = json.dumps(res[0]["content"]) if res else ""
    check(len(res) == 1 and res[0].get("is_error") and
          "was not resumed: MOTE_MCP_RESUME_MAX tries brought nothing" in text, res)
    check(len(resumes(reqs)) == n, "%d resumption GETs, not %d" % (len(resumes(reqs)), n))


def test_an_event_id_over_the_limit_is_not_sent():
    # A 4,000-byte id (over MOTE_MCP_EVENT_ID_MAX), one with a NUL, one with
    # a space are ignored, not cut: the resumption names the last good id.
    reqs, call, res = resumed_call("--huge-id")
    check(len(res) == 1 and not res[0].get("is_error"), res)
    got = resumes(reqs)
    check(len(got) == 1 and hdr(got[0], "last-event-id") == "c1-2",
          [(hdr(r, "last-event-id") or "")[:40] for r in got])
    longest = max(len(v) for r in reqs for v in r.get("headers", {}).values())
    check(longest < 1000, "a request header of %d bytes" % longest)


def test_an_answer_on_the_get_stream_ends_the_resumption():
    # The cut call's answer comes on the GET stream before the resumption's
    # wait is over: the call completes, no GET resumes its stream, and the
    # next call goes at once (not after a resumption's 30 s deadline).
    url, slog = hostile("--cut-call", "1", "--answer-on-get", "--retry", "1500")
    port, log = start_server([{"tools": [{"tool": "r__echo", "input": {"text": "one"}}]},
                              {"tools": [{"tool": "r__echo", "input": {"text": "two"}}]},
                              {"text": "done"}])
    t0 = time.time()
    p = run(args(port, config({"r": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    took = time.time() - t0
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-600:]))
    texts = [json.dumps(r["content"]) for r in tool_results(requests_in(log)[-1:])]
    check(len(texts) == 2 and "echo: one" in texts[0] and "echo: two" in texts[1], texts)
    reqs = hlog(slog)
    check(not resumes(reqs), "a resumption after the answer came: %s" % resumes(reqs))
    check(took < 20, "the run took %.1f s" % took)


def test_the_get_stream_is_reopened_with_last_event_id_after_retry():
    # (the conformance suite's sse-retry scenario, here) each GET stream
    # sends one event with an id and `retry: 1200`, then ends: the next
    # GET carries that id, 1.2 s after the end (not the default wait).
    url, slog = hostile("--poll-get", "--retry", "1200")
    port, log = start_server([{"tool": "g__sleep", "input": {"seconds": 3.5}}, {"text": "done"}])
    p = run(args(port, config({"g": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-600:]))
    reqs = hlog(slog)
    gets = [r for r in reqs if r["method"] == "GET"]
    ends = [r for r in reqs if r["method"] == "END"]
    check(len(gets) >= 2 and len(ends) >= 1, (len(gets), len(ends)))
    check(hdr(gets[0], "last-event-id") is None, hdr(gets[0], "last-event-id"))
    check(hdr(gets[1], "last-event-id") == ends[0]["id"], (hdr(gets[1], "last-event-id"), ends[0]))
    waited = gets[1]["t"] - ends[0]["t"]
    check(1.1 <= waited <= 10, "the stream was opened again %.2f s after its end (retry: 1200)"
          % waited)


def test_a_request_sent_in_steps_keeps_its_head():
    # HTTP+SSE: a tools/call whose body takes several sends (mote's send
    # buffer is small, the server reads the body only 0.3 s after it named a
    # new endpoint on its stream): the request goes out as it was begun, its
    # head and Content-Length one piece with its body, never rebuilt half
    # way from the new path; later requests go to the new endpoint.
    so = build_shim("sndbuf", "send-buffer shim")  # small send buffers
    url, slog = hostile("--move-endpoint", "--rcvbuf", "2048", mode="sse")
    big = "x" * 15000
    port, log = start_server([{"tool": "m__echo", "input": {"text": big}},
                              {"tool": "m__echo", "input": {"text": "after"}}, {"text": "done"}])
    p = run(args(port, config({"m": {"type": "sse", "url": url}}), "-p", "x", "--yes"), timeout=120,
            LD_PRELOAD=so, MOTE_TEST_SNDBUF="4096",
            ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0")
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-400:]))
    reqs = hlog(slog)
    check(not any("short" in r for r in reqs), "a request shorter than its Content-Length: %s" %
          [r for r in reqs if "short" in r])
    texts = [r["content"] for r in tool_results(requests_in(log)[-1:])]
    check(texts == ["echo: " + big, "echo: after"], [t[:40] for t in texts])
    posts = [r["path"] for r in reqs if r["method"] == "POST"]
    check(posts[-1].startswith("/messages/moved/"), "later POSTs go to the new endpoint: %s" % posts)


def test_https_through_a_proxy_with_the_ca_file():
    """https://wrong.example (a name only the proxy resolves) through
    HTTPS_PROXY's CONNECT tunnel, trusting the test CA by --ca-file."""
    c = certs()
    url, slog = hostile("--cert", os.path.join(c, "wronghost.crt"),
                        "--key", os.path.join(c, "wronghost.key"))
    url = url.replace("127.0.0.1", "wrong.example").replace("http:", "https:")
    pport, plog = start_proxy()
    port, log = start_server([{"tool": "t__echo", "input": {"text": "tunnelled"}},
                              {"text": "finished"}])
    cfg = config({"t": {"type": "http", "url": url}})
    p = run(args(port, cfg, "-p", "x", "--yes", "--ca-file", os.path.join(c, "ca.crt")),
            HTTPS_PROXY="http://127.0.0.1:%d" % pport)
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    check("echo: tunnelled" in json.dumps(requests_in(log)), "the call went through")
    tunnels = [json.loads(l) for l in open(plog)]
    check(tunnels and all(t["method"] == "CONNECT" for t in tunnels), tunnels)
    check(len(tunnels) <= 3, "kept connections: %d tunnels for %d requests" %
          (len(tunnels), len(hlog(slog))))
    NOTES.append("https through a proxy: %d requests on %d tunnels" % (len(hlog(slog)), len(tunnels)))
    q = run(args(port, cfg, "-p", "x", "--yes"), HTTPS_PROXY="http://127.0.0.1:%d" % pport,
            SSL_CERT_FILE="/etc/ssl/certs/ca-certificates.crt")
    check("mcp t:" in q.stderr and "certificate" in q.stderr and "finished" not in q.stderr,
          "an untrusted server is refused, said per server: " + q.stderr)


def test_http_through_a_proxy():
    url, slog = hostile()
    url = url.replace("127.0.0.1", "mcp.example")
    pport, plog = start_proxy()
    port, log = start_server([{"tool": "p__echo", "input": {"text": "proxied"}},
                              {"text": "finished"}])
    p = run(args(port, config({"p": {"type": "http", "url": url}}), "-p", "x", "--yes"),
            HTTP_PROXY="http://127.0.0.1:%d" % pport, NO_PROXY="other.example")
    check(p.returncode == 0 and "echo: proxied" in json.dumps(requests_in(log)), p.stderr)
    seen = [json.loads(l) for l in open(plog)]
    check(seen and all(e["target"].startswith("http://mcp.example:") for e in seen), seen)
    p = run(args(port, config({"p": {"type": "http", "url": url}}), "-p", "x", "--yes"),
            HTTP_PROXY="http://127.0.0.1:%d" % pport, NO_PROXY="mcp.example")
    check("mcp p:" in p.stderr and "resolve" in p.stderr, "NO_PROXY: straight to the name: " + p.stderr)


# ---- faults: a clear error per server, never a stuck turn -------------------------

def fault_case(name, server, want, **extra):
    """Server `server` beside a good one: its error is said, the other works."""
    good, _ = hostile()
    port, log = start_server([{"tool": "ok__echo", "input": {"text": "still here"}},
                              {"text": "finished"}])
    cfg = config({"bad": server, "ok": {"type": "http", "url": good}})
    t0 = time.monotonic()
    p = run(args(port, cfg, "-p", "x", "--yes"), **extra)
    took = time.monotonic() - t0
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    check(want in p.stderr, "%s: %r not in %s" % (name, want, p.stderr))
    check([r["content"] for r in tool_results(requests_in(log))] == ["echo: still here"],
          "the good server worked")
    NOTES.append("%s: %s (%.1f s)" % (name, [l for l in p.stderr.splitlines() if "mcp bad" in l][:1],
                                      took))
    return p, took


def test_unreachable_url():
    _, took = fault_case("unreachable URL",
                         {"type": "http", "url": "http://127.0.0.1:%d/mcp" % free_port()},
                         "mcp bad: cannot connect to 127.0.0.1:")
    check(took < 20, took)


def test_refused_credentials():
    url, _ = hostile("--token", "the-right-one", "--echo-secret")
    p, _ = fault_case("401", {"type": "http", "url": url,
                              "headers": {"Authorization": "Bearer ${MT_TOKEN}"}},
                      "the server refused the credentials", MT_TOKEN=SECRET)
    check(SECRET not in p.stderr, "the credentials are never shown")


def test_html_instead_of_json():
    url, _ = hostile("--html")
    fault_case("HTML", {"type": "http", "url": url}, "Content-Type text/html, not JSON")


def test_sse_stream_that_never_ends():
    url, _ = hostile("--never-end")
    port, log = start_server([{"tool": "n__echo", "input": {"text": "x"}}, {"text": "finished"}])
    t0 = time.monotonic()
    p = run(args(port, config({"n": {"type": "http", "url": url}}), "-p", "x", "--yes"),
            MOTE_MCP_TIMEOUT_MS="1500")
    took = time.monotonic() - t0
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    res = tool_results(requests_in(log))
    check(res and res[0].get("is_error") and "did not answer the call in time" in res[0]["content"],
          res)
    check(took < 20, "the deadline ended it (%.1f s)" % took)


def session_expiry(*flags, **extra):
    url, slog = hostile("--expire-every", "3", *flags)
    calls = [{"tool": "e__add", "input": {"a": i, "b": 1}} for i in range(4)]
    port, log = start_server([{"tool": c["tool"], "input": c["input"]} for c in calls] +
                             [{"text": "finished"}])
    p = run(args(port, config({"e": {"type": "http", "url": url}}), "-p", "x", "--yes"), **extra)
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    texts = [r["content"] for r in tool_results(requests_in(log))]
    check(texts[-4:] == ["1", "2", "3", "4"], (texts, p.stderr))
    inits = [r for r in hlog(slog) if r["method"] == "POST" and '"initialize"' in r["body"]]
    check(len(inits) >= 2, "a new session was made: %d initialize" % len(inits))
    check("a new session started" in p.stderr, p.stderr)
    return inits


def test_session_expires_mid_conversation_404():
    session_expiry()


def test_session_expires_mid_conversation_400():
    session_expiry("--forget-400")


def test_session_lost_while_its_get_stream_stays_open():
    # the server forgets the session but keeps its old GET stream open: the
    # new session opens its own stream (the old one is closed), and every
    # call goes on in it, none waiting for the deadline
    t0 = time.monotonic()
    inits = session_expiry("--stale-get", MOTE_MCP_TIMEOUT_MS="8000")
    took = time.monotonic() - t0
    check(len(inits) >= 3, "every lost session was renewed: %d initialize" % len(inits))
    check(took < 30, "no call waited for its deadline (%.1f s)" % took)


def lost_first_on_the_get_stream(*flags):
    """The server forgets the session at a call, and the client learns it
    on its GET stream before the call's own answer says so: the call is
    sent again in the new session (it was refused as the request of a
    session gone, not failed)."""
    url, slog = hostile("--forget-at-call", *flags)
    port, log = start_server([{"tool": "f__add", "input": {"a": 1, "b": 2}},
                              {"text": "finished"}])
    p = run(args(port, config({"f": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    res = tool_results(requests_in(log)[-1:])
    check(len(res) == 1 and not res[0].get("is_error") and "3" in res[0]["content"],
          "the call ran in the new session: %s" % res)
    inits = [r for r in hlog(slog) if r.get("method") == "POST" and '"initialize"' in r.get("body", "")]
    check(len(inits) == 2, "one new session: %d initialize" % len(inits))


def test_session_lost_on_the_get_stream_first_404():
    lost_first_on_the_get_stream()


def test_session_lost_on_the_get_stream_first_400():
    lost_first_on_the_get_stream("--forget-400")


def test_http_400_is_the_call_error_not_a_lost_session():
    url, slog = hostile("--invalid-400")
    port, log = start_server([{"tool": "i__add", "input": {"a": "one", "b": 2}},
                              {"tool": "i__add", "input": {"a": 1, "b": 2}},
                              {"text": "finished"}])
    p = run(args(port, config({"i": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    res = tool_results(requests_in(log)[-1:])
    check(len(res) == 2 and res[0].get("is_error") and "HTTP 400" in res[0]["content"] and
          "Invalid params: a and b must be numbers" in res[0]["content"],
          "the server's message is the call's error: %s" % res)
    check(res[1]["content"] == "3" and not res[1].get("is_error"), res)
    inits = [r for r in hlog(slog) if r["method"] == "POST" and '"initialize"' in r["body"]]
    check(len(inits) == 1, "the session was kept: %d initialize" % len(inits))
    calls = [r for r in hlog(slog) if r["method"] == "POST" and '"tools/call"' in r["body"]]
    check(len(calls) == 2, "the refused call was not sent again: %d calls" % len(calls))
    check("new session" not in p.stderr and "no longer knows" not in p.stderr, p.stderr)


def test_tool_list_changes_while_bodies_are_sent():
    # new lists all the time, each coming slowly: the model's requests go
    # out while one is on its way (it waits unread until the body is out)
    url, _ = hostile("--flip", "--slow-list", "20")
    steps = [{"tool": "f__echo", "input": {"text": "round %d" % i}} for i in range(5)]
    port, log = start_server(steps + [{"text": "finished"}])
    p = run(args(port, config({"f": {"type": "http", "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    check("body changed" not in p.stderr, p.stderr)
    reqs = requests_in(log)
    check(all(r.get("refused") is None for r in reqs), "every body kept the API's rules")
    names = [[t["name"] for t in r["body"]["tools"] if t["name"].startswith("f__v")] for r in reqs]
    check(any(n != names[0] for n in names[1:]), "the new lists joined later requests: %s" % names)


def test_secret_never_leaves():
    url, slog = hostile("--token", SECRET, "--echo-secret")
    port, log = start_server([{"tools": [{"tool": "w__whoami", "input": {}},
                                         {"tool": "shell", "input": {"command": "env"}}]},
                              {"text": "finished"}])
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"w": {"type": "http", "url": url,
                        "headers": {"Authorization": "Bearer ${MT_TOKEN}"}}})
    p = run(args(port, cfg, "-p", "x", "--yes", state=st), MT_TOKEN=SECRET)
    check(p.returncode == 0, p.stderr)
    check(any(SECRET in r["body"] or SECRET in json.dumps(r["headers"]) for r in hlog(slog)),
          "the server got it")
    res = tool_results(requests_in(log))
    check(len(res) == 2 and "you sent ****" in res[0]["content"], res)
    desc = [t["description"] for t in requests_in(log)[0]["body"]["tools"] if t["name"] == "w__echo"]
    check(desc and "you sent ****" in desc[0], "a description that repeats it is blanked: %s" % desc)
    schema = [t["input_schema"] for t in requests_in(log)[0]["body"]["tools"]
              if t["name"] == "w__echo"]
    check(schema and "you sent ****" in json.dumps(schema[0]),
          "an inputSchema that repeats it is blanked: %s" % schema)
    for where, text in (("stderr", p.stderr), ("stdout", p.stdout), ("journal", journal_text(st)),
                        ("model requests", json.dumps(requests_in(log)))):
        check(SECRET not in text, "the secret is in the %s" % where)
    check("MT_TOKEN" not in res[1]["content"] and "PATH=" in res[1]["content"],
          "the tool's environment has no MT_TOKEN")


def test_url_and_env_variables_kept_from_tools():
    # ${VAR} in a url (a key in its query), and in a stdio server's env (its
    # token), are credentials: taken out of mote's environment like a
    # header's, so the shell tool never sees them; PATH stays
    url, slog = hostile()
    hostport = url.split("//")[1].split("/")[0]
    port, log = start_server([{"tools": [{"tool": "u__echo", "input": {"text": "hi"}},
                                         {"tool": "shell", "input": {"command": "env"}}]},
                              {"text": "finished"}])
    fake = os.path.join(ROOT, "test", "fake_mcp.py")
    cfg = config({"u": {"type": "http", "url": "http://${MT_HOSTPORT}/mcp?key=${MT_URL_KEY}"},
                  "f": {"command": sys.executable, "args": [fake],
                        "env": {"FAKE_TOKEN": "${MT_ENV_TOKEN}", "PATH": "${PATH}"}}})
    p = run(args(port, cfg, "-p", "x", "--yes"), MT_HOSTPORT=hostport,
            MT_URL_KEY="url-key-%s" % SECRET, MT_ENV_TOKEN="env-token-%s" % SECRET,
            MT_UNRELATED="still-here")
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr))
    check(any(r["path"].endswith("key=url-key-" + SECRET) for r in hlog(slog)),
          "the server got the key in its URL")
    res = tool_results(requests_in(log)[-1:])
    check(len(res) == 2 and res[0]["content"] == "echo: hi", res)
    shown = res[1]["content"]
    check("MT_UNRELATED=still-here" in shown and "PATH=" in shown, "the shell's env: %s" % shown)
    for name in ("MT_HOSTPORT", "MT_URL_KEY", "MT_ENV_TOKEN", SECRET):
        check(name not in shown, "%s is in the shell tool's environment" % name)


def test_variables_and_defaults():
    url, _ = hostile()
    port, log = start_server([{"tool": "v__echo", "input": {"text": "via default"}},
                              {"text": "finished"}])
    hostport = url.split("//")[1].split("/")[0]
    cfg = config({"v": {"type": "http", "url": "http://${MT_HOSTPORT:-%s}/mcp" % hostport}})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0 and "echo: via default" in json.dumps(requests_in(log)), p.stderr)
    cfg = config({"v": {"type": "http", "url": url, "headers": {"X-Key": "${MT_UNSET_VAR}"}}})
    p = run(args(port, cfg, "-p", "x"))
    check(p.returncode == 2 and "${MT_UNSET_VAR} is not set" in p.stderr, (p.returncode, p.stderr))
    cfg = config({"v": {"type": "http", "url": url, "headers": {"X-Key": "${MT_NL}"}}})
    p = run(args(port, cfg, "-p", "x"), MT_NL="a\r\nX-Injected: 1")
    check(p.returncode == 2 and "control character" in p.stderr and "Injected" not in p.stderr,
          (p.returncode, p.stderr))


def large_list(mode):
    path, names = big_tool_list(4)  # (the hostile server's own four tools besides)
    url, _ = hostile("--tools-file", path, mode=mode)
    port, log = start_server([{"tool": "g__" + names[-1], "input": {}}, {"text": "done"}])
    kind = "http" if mode == "http" else "sse"
    p = run(args(port, config({"g": {"type": kind, "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    offered = [t["name"] for t in requests_in(log)[0]["body"]["tools"] if t["name"].startswith("g__t")]
    check(offered == ["g__" + n for n in names], offered)
    check("ready, %d tools (3 skipped)" % (len(names) + 4) in p.stderr, p.stderr)
    for name in ("huge", "wide", "many"):
        check("skipped the tool %s:" % name in p.stderr, p.stderr)
    check("called %s" % names[-1] in json.dumps(requests_in(log)[1]["body"]), "the last one runs")


def test_large_tool_list_streamable_http():
    large_list("http")


def test_large_tool_list_sse():
    large_list("sse")


def big_result(mode):
    url, _ = hostile("--big-tool", mode=mode)
    port, log = start_server([{"tool": "b__big", "input": {"bytes": 1000000}}, {"text": "done"}])
    kind = "http" if mode == "http" else "sse"
    p = run(args(port, config({"b": {"type": kind, "url": url}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    res = tool_results(requests_in(log))
    check(len(res) == 1 and not res[0].get("is_error"), res and str(res[0])[:300])
    text = res[0]["content"]
    check(text.startswith("bbbbbbbb") and "[result cut:" in text and "END" not in text, text[-200:])
    check(len(text) <= config_value("MOTE_MCP_RESULT_MAX") + 200, len(text))


def test_result_of_1_mb_is_cut_streamable_http():
    big_result("http")


def test_result_of_1_mb_is_cut_sse():
    big_result("sse")


# ---- the real server-everything -------------------------------------------------

def real_turn(mode):
    proc, sport, slog = everything(mode)
    port, log = start_server([{"tools": [{"tool": "ev__echo", "input": {"message": "round trip"}},
                                         {"tool": "ev__get-sum", "input": {"a": 20, "b": 22}}]},
                              {"text": "all done"}])
    st = tempfile.mkdtemp(dir=TMP)
    kind = "http" if mode == "streamableHttp" else "sse"
    cfg = config({"ev": {"type": kind, "url": ev_url(mode, sport),
                         "headers": {"X-Api-Key": "${MT_TOKEN}"}}})
    t0 = time.monotonic()
    p = run(args(port, cfg, "-p", "x", "--yes", state=st), MT_TOKEN=SECRET)
    took = time.monotonic() - t0
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    reqs = requests_in(log)
    names = [t["name"] for t in reqs[0]["body"]["tools"]]
    check("ev__echo" in names and "ev__get-sum" in names, names)
    texts = [r["content"] for r in tool_results(reqs)]
    check(texts == ["Echo: round trip", "The sum of 20 and 22 is 42."], texts)
    check("mcp ev: tool list updated" in p.stderr, "the list_changed notification: " + p.stderr)
    for where, text in (("stderr", p.stderr), ("journal", journal_text(st)),
                        ("model requests", json.dumps(reqs))):
        check(SECRET not in text, "the secret is in the %s" % where)
    NOTES.append("server-everything %s, one-shot with two calls: %.0f ms" % (mode, took * 1000))


def test_real_everything_streamable_http():
    real_turn("streamableHttp")


def test_real_everything_sse():
    real_turn("sse")


def real_restart(mode):
    """The server restarts between two calls of one turn: a new session,
    and the turn goes on."""
    proc, sport, slog = everything(mode)
    gate = os.path.join(TMP, "gate-" + uuid.uuid4().hex[:6])
    port, log = start_server([{"tool": "ev__echo", "input": {"message": "before"}},
                              {"tool": "ev__get-sum", "input": {"a": 1, "b": 2}, "wait_file": gate},
                              {"text": "all done"}])
    kind = "http" if mode == "streamableHttp" else "sse"
    cfg = config({"ev": {"type": kind, "url": ev_url(mode, sport)}})
    p = subprocess.Popen(args(port, cfg, "-p", "x", "--yes"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env())
    wait_for(lambda: len(requests_in(log)) >= 2, "the second model request")
    proc.kill()
    proc.wait()
    everything(mode, sport)
    open(gate, "w").close()
    out, err = p.communicate(timeout=90)
    check(p.returncode == 0 and "all done" in out, (p.returncode, out, err))
    texts = [r["content"] for r in tool_results(requests_in(log))]
    check(texts[-1] == "The sum of 1 and 2 is 3.", texts)
    check("a new session started" in err, err)


def test_real_restart_mid_turn_streamable_http():
    real_restart("streamableHttp")


def test_real_restart_mid_turn_sse():
    real_restart("sse")


def real_long_call(mode):
    """A call that takes longer than the short deadline for a stream's end
    after an answer (3 s): it succeeds in one session."""
    proc, sport, slog = everything(mode)
    port, log = start_server([{"tool": "ev__trigger-long-running-operation",
                               "input": {"duration": 3, "steps": 3}},
                              {"text": "all done"}])
    kind = "http" if mode == "streamableHttp" else "sse"
    cfg = config({"ev": {"type": kind, "url": ev_url(mode, sport)}})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    texts = [r["content"] for r in tool_results(requests_in(log))]
    check(len(texts) == 1 and "Long running operation completed" in texts[0], texts)
    check("new session" not in p.stderr, "one session all along: " + p.stderr)


def real_progress(mode):
    """A 4 s call with a 2.5 s deadline: server-everything's progress (one a
    second, for the token the call carries) gives it its deadline again."""
    proc, sport, slog = everything(mode)
    port, log = start_server([{"tool": "ev__trigger-long-running-operation",
                               "input": {"duration": 4, "steps": 4}},
                              {"text": "all done"}])
    kind = "http" if mode == "streamableHttp" else "sse"
    cfg = config({"ev": {"type": kind, "url": ev_url(mode, sport), "tool_timeout_sec": 2.5,
                         "startup_timeout_sec": 30}})
    p = run(args(port, cfg, "-p", "x", "--yes"), MOTE_MCP_TIMEOUT_MS="2500")
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    texts = [r["content"] for r in tool_results(requests_in(log))]
    check(len(texts) == 1 and "Long running operation completed" in texts[0], (texts, p.stderr))
    check("mcp ev: progress 1/4" in p.stderr, p.stderr)


def test_real_progress_streamable_http():
    real_progress("streamableHttp")


def test_real_progress_sse():
    real_progress("sse")


def test_real_long_call_streamable_http():
    real_long_call("streamableHttp")


def test_real_long_call_sse():
    real_long_call("sse")



class CuttingRelay:
    """A TCP relay to a server on loopback that cuts, once, the connection
    carrying a tools/call right after the answer stream's event that
    matches `after` (the bytes behind it are dropped), and keeps what the
    client sent (the first 4 KiB of each read)."""

    def __init__(self, to_port, after):
        import re
        import threading
        self.to, self.after, self.cut_at, self.heads = to_port, re.compile(after), None, []
        self.lock = threading.Lock()
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        import threading
        while True:
            try:
                c, _ = self.srv.accept()
                s = socket.create_connection(("127.0.0.1", self.to))
            except OSError:
                return
            st = {"call": False}
            threading.Thread(target=self.up, args=(c, s, st), daemon=True).start()
            threading.Thread(target=self.down, args=(s, c, st), daemon=True).start()

    def up(self, c, s, st):
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                with self.lock:
                    self.heads.append((time.time(), d[:4096].decode(errors="replace")))
                    if b'"tools/call"' in d:
                        st["call"] = True
                s.sendall(d)
        except OSError:
            pass
        shut(c, s)

    def down(self, s, c, st):
        buf = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                if st["call"] and self.cut_at is None:
                    buf += d
                    m = self.after.search(buf)
                    if m:
                        c.sendall(d[:len(d) - (len(buf) - m.end())])
                        self.cut_at = time.time()
                        break
                c.sendall(d)
        except OSError:
            pass
        shut(c, s)

    def close(self):
        self.srv.close()


def test_real_everything_resumes_a_cut_call_stream():
    # server-everything (streamableHttp, its event store) behind a relay that
    # cuts the call's answer stream after its last progress event: mote
    # resumes it with a GET carrying that event's id, and the answer the
    # server kept comes back on it; the call is POSTed once.
    proc, sport, slog = everything("streamableHttp")
    relay = CuttingRelay(sport, rb'"progress":2[^\n]*\n\n')
    try:
        port, log = start_server([{"tool": "ev__trigger-long-running-operation",
                                   "input": {"duration": 2, "steps": 2}},
                                  {"text": "all done"}])
        cfg = config({"ev": {"type": "http", "url": "http://127.0.0.1:%d/mcp" % relay.port}})
        p = run(args(port, cfg, "-p", "x", "--yes"))
        check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr[-600:]))
        texts = [r["content"] for r in tool_results(requests_in(log))]
        check(len(texts) == 1 and "Long running operation completed" in texts[0], texts)
        check(relay.cut_at is not None, "the relay never cut the call's stream")
        heads = [h for t, h in relay.heads if t >= relay.cut_at]
        check(any(h.startswith("GET ") and "last-event-id:" in h.lower() for h in heads),
              [h[:200] for h in heads])
        check(sum(1 for t, d in relay.heads if '"tools/call"' in d) == 1, "tools/call sent again")
        check("resumed (Last-Event-ID)" in p.stderr, p.stderr[-600:])
    finally:
        relay.close()


CONFORMANCE = os.path.join(ROOT, ".deps", "npm", "node_modules", "@modelcontextprotocol",
                           "conformance", "dist", "index.js")
# Node.js 20 has no fs.globSync, which the suite's bundle imports (for a
# command the client scenarios do not use): a loader hook drops the import.
GLOB_HOOK = """export async function load(url, context, next) {
  const r = await next(url, context);
  if (url.endsWith('/conformance/dist/index.js'))
    return {...r, shortCircuit: true, source: String(r.source).replace('globSync as o,', '')};
  return r;
}
"""


def conformance_checks(scenario, tool, arguments=None, client_timeout=60):
    """Runs the MCP conformance suite's client scenario against mote (its
    server, mote with a model calling `tool` with `arguments`; the client
    killed after `client_timeout` seconds); returns the checks it wrote (its
    INFO lines left out)."""
    if not os.path.exists(CONFORMANCE):
        raise Skip("@modelcontextprotocol/conformance is not installed (make deps)")
    cmd = ["node"]
    if subprocess.run(["node", "-e", "process.exit(require('fs').globSync ? 0 : 1)"]).returncode:
        hook = os.path.join(TMP, "glob-hook.mjs")
        reg = os.path.join(TMP, "glob-register.mjs")
        with open(hook, "w") as f:
            f.write(GLOB_HOOK)
        with open(reg, "w") as f:
            f.write("import {register} from 'node:module';\nregister(%s);\n" %
                    json.dumps("file://" + hook))
        cmd += ["--import", reg]
    out = tempfile.mkdtemp(dir=TMP)
    client = "%s %s %s %s" % (sys.executable, os.path.join(ROOT, "test", "integration",
                                                           "conformance_client.py"), BUILD, tool)
    if arguments is not None:  # (the suite splits the command at spaces, runs it in a shell)
        client += " " + shlex.quote(json.dumps(arguments, separators=(",", ":")))
    p = subprocess.run(cmd + [CONFORMANCE, "client", "--command", client, "--scenario", scenario,
                              "-o", out, "--timeout", str(client_timeout * 1000)],
                       capture_output=True, text=True, timeout=client_timeout + 60)
    found = glob.glob(os.path.join(out, "**", "checks.json"), recursive=True)  # (auth/NAME-...)
    check(len(found) == 1, (p.returncode, p.stdout[-800:], p.stderr[-800:]))
    return [c for c in json.load(open(found[0])) if c["status"] != "INFO"]


def conformance(scenario, tool, arguments=None):
    """{check id: status} of the scenario's checks (conformance_checks)."""
    return {c["id"]: c["status"] for c in conformance_checks(scenario, tool, arguments)}


def test_conformance_sse_retry():
    # The suite's sse-retry scenario (SEP-1699): a call's stream closed after
    # an event with an id and `retry: 500`; the answer comes to the GET that
    # resumes it. "Slightly late" (a WARNING, within 2x retry) is accepted:
    # a loaded machine may add its own latency.
    got = conformance("sse-retry", "test_reconnection")
    check(got.get("client-sse-graceful-reconnect") == "SUCCESS" and
          got.get("client-sse-last-event-id") == "SUCCESS" and
          got.get("client-sse-retry-timing") in ("SUCCESS", "WARNING"), got)


def test_conformance_initialize():
    # The suite's initialize scenario: the protocol version mote asks for is
    # one the suite knows, and its clientInfo has a name and a version.
    got = conformance("initialize", "none")
    check(got == {"mcp-client-initialization": "SUCCESS"}, got)


def test_conformance_tools_call():
    # The suite's tools_call scenario: a stateless Streamable HTTP server (no
    # session id) whose add_numbers is called with the model's arguments.
    got = conformance_checks("tools_call", "add_numbers", {"a": 2, "b": 40})
    check([(c["id"], c["status"], c.get("details")) for c in got] ==
          [("tool-add-numbers", "SUCCESS", {"a": 2, "b": 40, "result": 42})], got)


def test_conformance_elicitation_defaults():
    # The suite's elicitation-sep1034-client-defaults scenario: its tool asks
    # a question whose every field has a default; mote runs with --yes and
    # no terminal (nobody to ask), so it accepts with the server's defaults.
    got = conformance_checks("elicitation-sep1034-client-defaults",
                             "test_client_elicitation_defaults")
    check({c["id"]: c["status"] for c in got} == {
        "client-elicitation-sep1034-%s-default" % k: "SUCCESS"
        for k in ("string", "integer", "number", "enum", "boolean")}, got)
    check({c["details"]["field"]: c["details"]["receivedValue"] for c in got} ==
          {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}, got)


def test_real_kill_9_then_a_new_session():
    proc, sport, slog = everything("streamableHttp")
    port, _ = start_server([{"stall": 60, "after_text": "working"}, {"text": "again"}])
    cfg = config({"ev": {"type": "http", "url": ev_url("streamableHttp", sport)}})
    st = tempfile.mkdtemp(dir=TMP)
    errlog = os.path.join(TMP, "k9-" + uuid.uuid4().hex[:6])
    p = subprocess.Popen(args(port, cfg, "-p", "x", state=st), stdout=subprocess.DEVNULL,
                         stderr=open(errlog, "w"), env=env())
    wait_for(lambda: "mcp ev: ready" in open(errlog).read(), "the server ready")
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p.pid)], capture_output=True,
                          text=True).stdout.split()
    p.kill()
    p.wait()
    left = [k for k in kids if os.path.exists("/proc/%s" % k)]
    check(not left, "nothing of mote runs after kill -9: %s" % left)
    inits = open(slog).read().count("Session initialized")
    q = run(args(port, cfg, "-p", "again", state=st))
    check(q.returncode == 0 and "mcp ev: ready" in q.stderr, (q.returncode, q.stderr))
    check(open(slog).read().count("Session initialized") == inits + 1, "a new session")


def main():
    try:
        return run_all("mcp-http", globals())
    finally:
        for p in PROCS:
            p.kill()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
