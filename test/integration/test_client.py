#!/usr/bin/env python3
"""Integration tests of the model client: the real POSIX port, TCP and TLS
on loopback, against test/llm_server.py.

    test_client.py BUILDDIR    (needs BUILDDIR/asan/llm_probe, BUILDDIR/mote,
                                and BUILDDIR/none/mote for the TLS=none case)
Prints one line per test and "N passed, M failed".
"""
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import NOTES, SERVERS, TMP, check, journal, requests_in, run_all, wait_for
from harness import start_server as _start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
PROBE = os.path.join(BUILD, "asan", "llm_probe")
MOTE = os.path.join(BUILD, "mote")
MOTE_NONE = os.path.join(BUILD, "none", "mote")
CERTS = os.path.join(TMP, "certs")
SERVER_SCRIPT = os.path.abspath(__file__)  # a file that is neither PEM nor DER


def start_server(script=None, cert=None, host="127.0.0.1", extra=()):
    return _start_server(script, cert, host, CERTS, extra)


def probe(provider, url, *args, env=None, timeout=60):
    e = dict(os.environ)
    e["ASAN_OPTIONS"] = "detect_leaks=1"
    if env:
        e.update(env)
    t0 = time.monotonic()
    p = subprocess.run([PROBE, provider, url] + list(args), capture_output=True, text=True,
                       timeout=timeout, env=e)
    elapsed = time.monotonic() - t0
    events = []
    for line in p.stdout.splitlines():
        events.append(json.loads(line))
    if p.stderr.strip():
        print("   probe stderr:", p.stderr.strip()[:500])
    end = events[-1] if events and events[-1]["ev"] == "end" else {"state": "crashed", "error": p.stderr}
    return events, end, elapsed


def text_of(events):
    return "".join(e["text"] for e in events if e["ev"] == "text")


# ---- the tests ---------------------------------------------------------

def test_anthropic_text_http():
    port, log = start_server([{"text": "Hello there, friend."}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done", end)
    check(text_of(ev) == "Hello there, friend.", text_of(ev))
    check(any(e["ev"] == "stop" and e["reason"] == "end_turn" for e in ev), "stop reason")
    req = requests_in(log)[0]
    check(req["path"] == "/v1/messages", req["path"])
    check(req["headers"].get("x-api-key") == "sk-probe", "x-api-key header")
    check(req["headers"].get("anthropic-version") == "2023-06-01", "anthropic-version header")
    check(req["body"]["stream"] is True and req["body"]["model"] == "probe-model", req["body"])


def test_openai_text_https():
    port, log = start_server([{"text": "Over TLS."}], cert="server")
    ev, end, _ = probe("openai", "https://localhost:%d/v1" % port, "--ca-file",
                       os.path.join(CERTS, "ca.crt"))
    check(end["state"] == "done", end)
    check(text_of(ev) == "Over TLS.", text_of(ev))
    req = requests_in(log)[0]
    check(req["path"] == "/v1/chat/completions", req["path"])
    check(req["headers"].get("authorization") == "Bearer sk-probe", "bearer")
    check(req["body"]["stream_options"] == {"include_usage": True}, "usage asked for")
    check(any(e["ev"] == "usage" and e["out"] > 0 for e in ev), "usage reported")


def test_ipv6_loopback():
    try:
        port, _ = start_server([{"text": "six"}], host="::1")
    except Exception:
        print("   (no IPv6 loopback here)")
        return
    ev, end, _ = probe("anthropic", "http://[::1]:%d" % port)
    check(end["state"] == "done" and text_of(ev) == "six", end)


def test_tool_call():
    port, log = start_server([{"text": "Let me look.", "tool": "shell",
                               "input": {"command": "ls -la /tmp", "n": [1, 2]}}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--tools")
    check(end["state"] == "done", end)
    starts = [e for e in ev if e["ev"] == "tool_start"]
    check(len(starts) == 1 and starts[0]["name"] == "shell", starts)
    args = "".join(e["text"] for e in ev if e["ev"] == "tool_args")
    check(json.loads(args) == {"command": "ls -la /tmp", "n": [1, 2]}, args)
    check(any(e["ev"] == "stop" and e["reason"] == "tool_use" for e in ev), "stop tool_use")
    body = requests_in(log)[0]["body"]
    check(body["tools"][0]["name"] == "shell", "tools sent")


def test_parallel_tool_calls_openai():
    port, _ = start_server([{"tools": [{"tool": "a", "input": {"x": 1}},
                                       {"tool": "b", "input": {"y": "two"}}]}])
    ev, end, _ = probe("openai", "http://127.0.0.1:%d" % port, "--tools")
    check(end["state"] == "done", end)
    names = [e["name"] for e in ev if e["ev"] == "tool_start"]
    check(names == ["a", "b"], names)
    for slot, want in ((0, {"x": 1}), (1, {"y": "two"})):
        args = "".join(e["text"] for e in ev if e["ev"] == "tool_args" and e["slot"] == slot)
        check(json.loads(args) == want, args)
    check(sum(1 for e in ev if e["ev"] == "tool_end") == 2, "both calls ended")
    check(any(e["ev"] == "stop" and e["reason"] == "tool_use" for e in ev), "stop")


def test_429_retry_after_then_success():
    port, log = start_server([{"status": 429, "retry_after": 1}, {"text": "after the wait"}])
    ev, end, elapsed = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done" and end["attempts"] == 2, end)
    check(text_of(ev) == "after the wait", text_of(ev))
    check(elapsed >= 0.95, "retry-after 1 s honoured (took %.2f s)" % elapsed)
    check(len(requests_in(log)) == 2, "two requests")


def test_529_overloaded_then_success():
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    port, _ = start_server([{"status": 529, "body": body}, {"text": "ok now"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done" and end["attempts"] == 2, end)


def test_retries_are_capped():
    port, log = start_server([{"status": 503}] * 10)
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--attempts", "3")
    check(end["state"] == "failed", end)
    check("gave up after 3 attempts" in end["error"] and "HTTP 503" in end["error"], end["error"])
    check(len(requests_in(log)) == 3, "exactly 3 requests")


def test_error_event_before_content_is_retried():
    port, _ = start_server([{"error_event": "overloaded_error"}, {"text": "second time"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done" and end["attempts"] == 2, end)
    check(text_of(ev) == "second time", text_of(ev))


def test_error_event_mid_stream_not_retried():
    port, log = start_server([{"after_text": "Partial answer", "error_event": "overloaded_error"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "failed" and end["attempts"] == 1, end)
    check("overloaded_error" in end["error"], end["error"])
    check(text_of(ev).startswith("Partial"), "text before the error was delivered")
    check(len(requests_in(log)) == 1, "no retry once text was shown")


def test_401_names_the_variable():
    body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    port, log = start_server([{"status": 401, "body": body}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "failed" and end["attempts"] == 1, end)
    check("PROBE_KEY" in end["error"] and "401" in end["error"], end["error"])
    check(len(requests_in(log)) == 1, "401 not retried")


def test_stall_mid_stream_times_out():
    port, _ = start_server([{"after_text": "thinking...", "stall": 30}])
    ev, end, elapsed = probe("anthropic", "http://127.0.0.1:%d" % port, "--idle-ms", "500")
    check(end["state"] == "failed" and "stalled" in end["error"], end)
    check(elapsed < 10, "ended by the idle timeout (%.1f s)" % elapsed)


def test_no_first_byte_times_out():
    port, _ = start_server([{"stall_headers": 30}])
    ev, end, elapsed = probe("anthropic", "http://127.0.0.1:%d" % port, "--first-byte-ms", "500")
    check(end["state"] == "failed" and "no response" in end["error"], end)
    check(elapsed < 10, "%.1f s" % elapsed)


def test_a_stream_of_pings_ends_at_the_request_deadline():
    # a server that pings every second and never answers keeps both the
    # idle and the event deadline moving: the request's overall deadline
    # ends it (MOTE_REQUEST_TIMEOUT_MS, the CLI's knob for
    # mote_llm_conf.request_timeout_ms), said, and it is not sent again
    port, log = start_server([{"ping_forever": 40}, {"text": "must not be seen"}])
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-x", MOTE_REQUEST_TIMEOUT_MS="2500",
               MOTE_BACKOFF_MS="10")
    t0 = time.monotonic()
    p = subprocess.run([MOTE, "-p", "hello", "--no-tools", "--state-dir",
                        tempfile.mkdtemp(dir=TMP), "--base-url", "http://127.0.0.1:%d" % port],
                       capture_output=True, text=True, env=env, timeout=90)
    elapsed = time.monotonic() - t0
    check(p.returncode == 1, (p.returncode, p.stdout, p.stderr))
    check(elapsed < 20, "the pings kept the request alive for %.1f s" % elapsed)
    check("2500 ms" in p.stderr and "did not complete" in p.stderr, p.stderr)
    check("must not be seen" not in p.stdout, p.stdout)
    check(len(requests_in(log)) == 1, "sent again after its deadline: %d" % len(requests_in(log)))


def test_reset_before_response_is_retried():
    port, log = start_server([{"reset": True}, {"text": "recovered"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done" and end["attempts"] == 2, end)
    check(text_of(ev) == "recovered", text_of(ev))


def test_truncated_stream_is_an_error():
    port, _ = start_server([{"text": "almost", "truncate": True}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "failed" and "message_stop" in end["error"], end)
    port, _ = start_server([{"text": "almost", "truncate": True}])
    ev, end, _ = probe("openai", "http://127.0.0.1:%d" % port)
    check(end["state"] == "failed" and "[DONE]" in end["error"], end)


def test_oversized_line():
    port, _ = start_server([{"long_line": 70000}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "failed" and "limit" in end["error"], end)
    port, _ = start_server([{"long_line": 40000}])  # a 40 KB line is fine
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done" and len(text_of(ev)) == 40000, end)


def tls_refused(cert, words):
    port, log = start_server([{"text": "must not be seen"}], cert=cert)
    ev, end, _ = probe("anthropic", "https://localhost:%d" % port, "--ca-file",
                       os.path.join(CERTS, "ca.crt"), env={"PROBE_KEY": "sk-SECRET-KEY"})
    check(end["state"] == "failed", end)
    check(words in end["error"], end["error"])
    # Nothing reached the server: no request, so no API key either.
    check(requests_in(log) == [], "a request was sent before verification")


def test_unknown_ca():
    tls_refused("stranger", "not correctly signed")


def test_wrong_hostname():
    tls_refused("wronghost", "does not match")


def test_expired_certificate():
    tls_refused("expired", "expired")


def ca_path(name):
    return os.path.join(CERTS, name)


def der_and_bundle():
    """ca.der, other.der and a bundle (the system's, then the test CA)."""
    if not os.path.exists(ca_path("ca.der")):
        for n in ("ca", "other"):
            subprocess.run(["openssl", "x509", "-in", ca_path(n + ".crt"), "-outform", "der",
                            "-out", ca_path(n + ".der")], check=True)
        with open("/etc/ssl/certs/ca-certificates.crt", "rb") as f, \
                open(ca_path("ca.crt"), "rb") as g, open(ca_path("bundle.crt"), "wb") as out:
            out.write(f.read() + b"\n" + g.read())


def test_roots_from_memory():
    # mote_tls_set_roots (issue 12.2): PEM, DER, a whole bundle; strict as a file.
    der_and_bundle()
    for roots in ("ca.crt", "ca.der", "bundle.crt"):
        port, _ = start_server([{"text": "roots in memory"}], cert="server")
        ev, end, _ = probe("anthropic", "https://localhost:%d" % port, "--ca-mem", ca_path(roots))
        check(end["state"] == "done" and text_of(ev) == "roots in memory", (roots, end))
    for cert, words in (("stranger", "not correctly signed"), ("wronghost", "does not match"),
                        ("expired", "expired")):
        port, log = start_server([{"text": "must not be seen"}], cert=cert)
        ev, end, _ = probe("anthropic", "https://localhost:%d" % port, "--ca-mem",
                           ca_path("bundle.crt"))
        check(end["state"] == "failed" and words in end["error"], (cert, end))
        check(requests_in(log) == [], "a request was sent before verification")
    # roots that do not hold the server's CA; a CA file the request names wins over them
    port, log = start_server([{"text": "x"}], cert="server")
    ev, end, _ = probe("anthropic", "https://localhost:%d" % port, "--ca-mem", ca_path("other.der"))
    check(end["state"] == "failed" and "not correctly signed" in end["error"], end)
    port, _ = start_server([{"text": "the file wins"}], cert="server")
    ev, end, _ = probe("anthropic", "https://localhost:%d" % port, "--ca-mem", ca_path("other.der"),
                       "--ca-file", ca_path("ca.crt"))
    check(end["state"] == "done", end)
    # not PEM, not DER
    ev, end, _ = probe("anthropic", "https://localhost:1", "--ca-mem", SERVER_SCRIPT)
    check(end["state"] == "config" and "invalid" in end["error"].lower(), end)


def test_connection_refused():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "failed" and "refused" in end["error"], end)


def test_cli_one_shot_https():
    port, log = start_server([{"text": "The CLI works."}], cert="server")
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-ant-CLI-SECRET")
    p = subprocess.run([MOTE, "-p", "hello", "--base-url", "https://localhost:%d" % port,
                        "--ca-file", os.path.join(CERTS, "ca.crt")],
                       capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 0, (p.returncode, p.stderr))
    check(p.stdout == "The CLI works.\n", repr(p.stdout))
    check(requests_in(log)[0]["headers"]["x-api-key"] == "sk-ant-CLI-SECRET", "key sent")
    check("SECRET" not in p.stderr, "key not printed")
    # -p - reads the prompt from stdin.
    p = subprocess.run([MOTE, "-p", "-", "--base-url", "https://localhost:%d" % port,
                        "--ca-file", os.path.join(CERTS, "ca.crt")], input="from stdin\n",
                       capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 0 and p.stdout == "You said: from stdin\n", (p.stdout, p.stderr))


def test_cli_api_failure_exit_1():
    port, _ = start_server([{"status": 400, "body": {"type": "error", "error": {
        "type": "invalid_request_error", "message": "bad model"}}}])
    env = dict(os.environ, ANTHROPIC_API_KEY="k")
    p = subprocess.run([MOTE, "-p", "x", "--base-url", "http://127.0.0.1:%d" % port],
                       capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 1 and "bad model" in p.stderr, (p.returncode, p.stderr))


def test_cli_tls_none_build():
    if not os.path.exists(MOTE_NONE):
        raise AssertionError("missing " + MOTE_NONE)
    env = dict(os.environ, ANTHROPIC_API_KEY="k")
    p = subprocess.run([MOTE_NONE, "-p", "x", "--base-url", "https://localhost:1"],
                       capture_output=True, text=True, env=env, timeout=30)
    check(p.returncode == 2 and "TLS=none" in p.stderr and "TLS=mbedtls" in p.stderr, p.stderr)
    port, _ = start_server([{"text": "plain"}])
    p = subprocess.run([MOTE_NONE, "-p", "x", "--base-url", "http://127.0.0.1:%d" % port],
                       capture_output=True, text=True, env=env, timeout=30)
    check(p.returncode == 0 and p.stdout == "plain\n", (p.stdout, p.stderr))


# ---- cancellation at every phase -----------------------------------------

def cancel_at(phase, url, *extra, env=None):
    ev, end, elapsed = probe("anthropic", url, "--cancel-at", phase, *extra, env=env, timeout=60)
    check(end["state"] == "cancelled", end)
    NOTES.append("cancel latency, %s: %.1f ms" % (phase, end["cancel_ms"]))
    check(end["cancel_ms"] < 250, "%s: cancel took %.1f ms" % (phase, end["cancel_ms"]))


def test_cancel_during_resolve():
    cancel_at("resolve", "http://stuck.slow.test:80", env={"MOTE_TEST_DNS_STALL": "1"})


def test_cancel_during_connect():
    # A listener with a full backlog that never accepts: SYNs go unanswered.
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    port = ls.getsockname()[1]
    fillers = []
    for _ in range(4):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(c)
    # the first one in (the listener's queue holds one): the queue is full
    check(select.select([], fillers, [], 10)[1], "no connection was made")
    try:
        cancel_at("connect", "http://127.0.0.1:%d" % port, "--connect-ms", "20000")
    finally:
        for c in fillers:
            c.close()
        ls.close()


def silent_server():
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    held = []

    def run():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            held.append(c)  # accept, read nothing, say nothing
    threading.Thread(target=run, daemon=True).start()
    return ls, ls.getsockname()[1]


def test_cancel_during_handshake():
    ls, port = silent_server()
    try:
        cancel_at("handshake", "https://localhost:%d" % port, "--ca-file",
                  os.path.join(CERTS, "ca.crt"))
    finally:
        ls.close()


def test_cancel_waiting_for_headers():
    port, _ = start_server([{"stall_headers": 30}])
    cancel_at("headers", "http://127.0.0.1:%d" % port)


def test_cancel_during_stream():
    port, _ = start_server([{"after_text": "streaming...", "stall": 30}])
    cancel_at("stream", "http://127.0.0.1:%d" % port)


# ---- kept connections, the race, TLS sessions (the wire on a real link) ----

PROXY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proxy.py")


def both_wires(fn):
    """Runs fn(url_of, extra_args) over plain HTTP and over TLS."""
    for tls in (False, True):
        def url_of(port, tls=tls):
            return ("https://localhost:%d" if tls else "http://127.0.0.1:%d") % port
        fn(url_of, ["--ca-file", os.path.join(CERTS, "ca.crt")] if tls else [], "server" if tls else None)


def ends(ev):
    return [e for e in ev if e["ev"] == "req_end"]


def conns(log):
    """The server's connection number of each request it read."""
    return [r["conn"] for r in requests_in(log)]


def test_requests_share_one_connection():
    def run(url_of, args, cert):
        port, log = start_server([{"text": "one"}, {"status": 429, "retry_after": 0},
                                  {"text": "two"}, {"text": "three"}], cert=cert)
        ev, end, _ = probe("anthropic", url_of(port), "--requests", "3", *args)
        r = ends(ev)
        check([x["state"] for x in r] == ["done"] * 3, r)
        check([x["kept"] for x in r] == [False, True, True], r)
        check(r[-1]["opened"] == 1 and r[1]["attempts"] == 2, r)
        # one connection: the 429 (framed by its length) and its retry too
        check(conns(log) == [1, 1, 1, 1], conns(log))
        check([q["conn_req"] for q in requests_in(log)] == [1, 2, 3, 4], "requests on it")
        check(all("connection" not in q["headers"] for q in requests_in(log)),
              "a kept connection needs no connection header")
        if cert:
            check(all(q["alpn"] == "http/1.1" for q in requests_in(log)), "ALPN http/1.1")
    both_wires(run)


def test_connection_close_without_a_kept_connection():
    # a call of its own (no struct mote_conn), or keep_idle_ms 0: one
    # connection per request, and the server is told so
    port, log = start_server()
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port)
    check(end["state"] == "done", end)
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--requests", "2",
                       "--keep-idle-ms", "0")
    check([x["kept"] for x in ends(ev)] == [False, False] and ends(ev)[-1]["opened"] == 2, ends(ev))
    reqs = requests_in(log)
    check([q["headers"].get("connection") for q in reqs] == ["close"] * 3, reqs)
    check(conns(log) == [1, 2, 3], conns(log))


def test_both_framings_are_not_kept():
    # a response with Content-Length and Transfer-Encoding (the shape of
    # response splitting): read by its chunks, its connection never used
    # again (RFC 9112 6.3)
    port, log = start_server([{"text": "one", "headers": {"content-length": "3"}}, {"text": "two"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--requests", "2")
    r = ends(ev)
    check([x["state"] for x in r] == ["done"] * 2 and [x["kept"] for x in r] == [False, False], r)
    check(conns(log) == [1, 2], "the connection was used again: %s" % conns(log))


def test_server_says_close():
    # "connection: close" from the server: that connection is not kept
    port, log = start_server([{"text": "bye", "headers": {"connection": "close"}}, {"text": "hi"},
                              {"text": "again"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--requests", "3")
    r = ends(ev)
    check([x["state"] for x in r] == ["done"] * 3 and [x["kept"] for x in r] == [False, False, True], r)
    check(conns(log) == [1, 2, 2], conns(log))


def test_server_closes_between_requests():
    # the server closes idle connections after 100 ms; the client sees it
    # while idle and opens a new one: nothing is lost, nothing sent twice
    def run(url_of, args, cert):
        port, log = start_server(cert=cert, extra=["--idle-close", "100"])
        ev, end, _ = probe("anthropic", url_of(port), "--requests", "3", "--gap-ms", "400", *args)
        r = ends(ev)
        check([x["state"] for x in r] == ["done"] * 3, r)
        check([x["kept"] for x in r] == [False, False, False] and r[-1]["opened"] == 3, r)
        check(conns(log) == [1, 2, 3], conns(log))
    both_wires(run)


def test_kept_connection_closed_as_the_request_goes_out():
    # The race: the server reads the request on the kept connection and
    # closes (FIN, or RST) before any byte of an answer: the request goes
    # again at once on a new connection, once, not counted as an attempt.
    def run(url_of, args, cert):
        for how in (True, "rst"):
            port, log = start_server([{"text": "first"}, {"reset": how}, {"text": "second"}],
                                     cert=cert)
            ev, end, elapsed = probe("anthropic", url_of(port), "--requests", "2", *args)
            r = ends(ev)
            check([x["state"] for x in r] == ["done", "done"], (how, r))
            check(r[1]["attempts"] == 1 and r[1]["opened"] == 2, (how, r))
            check(text_of(ev).endswith("second"), text_of(ev))
            check(conns(log) == [1, 1, 2], (how, conns(log)))
            check(r[1]["ms"] < 1000, "sent again at once, not after a backoff: %s" % r[1])
    both_wires(run)


def test_kept_connection_closed_while_the_body_goes_out():
    # the server resets the kept connection after the request's head, while
    # its 4 MB body is being sent: sent again on a new connection
    def run(url_of, args, cert):
        port, log = start_server([{"text": "first"}, {"close_before_body": True},
                                  {"text": "second"}], cert=cert)
        ev, end, _ = probe("anthropic", url_of(port), "--requests", "2", "--body-bytes",
                           str(4 << 20), *args, timeout=120)
        r = ends(ev)
        check([x["state"] for x in r] == ["done", "done"] and r[1]["opened"] == 2, r)
        reqs = requests_in(log)
        check([q.get("closed_before_body", False) for q in reqs] == [False, True, False], reqs)
        check(conns(log) == [1, 1, 2], conns(log))
    both_wires(run)


def test_resent_once_only():
    # the new connection fails the same way: that is no kept connection
    # any more, so the retry rules decide (here: no further attempt)
    port, log = start_server([{"text": "first"}, {"reset": True}, {"reset": True}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--requests", "2",
                       "--attempts", "1")
    r = ends(ev)
    check(r[1]["state"] == "failed" and "closed before any response" in r[1]["error"], r)
    check(conns(log) == [1, 1, 2], conns(log))


def test_closed_in_the_middle_of_an_answer_is_not_resent():
    def run(url_of, args, cert):
        port, log = start_server([{"text": "first"}, {"after_text": "Partial answer", "stall": 0.05}],
                                 cert=cert)
        ev, end, _ = probe("anthropic", url_of(port), "--requests", "2", *args)
        r = ends(ev)
        check(r[0]["state"] == "done" and r[1]["state"] == "failed", r)
        check("cut off" in r[1]["error"] and r[1]["attempts"] == 1, r[1])
        check(conns(log) == [1, 1], "never sent again: %s" % conns(log))
    both_wires(run)


def test_random_idle_closes():
    # the server closes idle connections at random moments (10 to 80 ms),
    # requests come every 30 ms, and a quarter of the requests that come
    # on a kept connection find it closing (dropped unanswered, FIN or
    # RST): every request is answered once, the dropped ones sent again
    # once each, and nothing else sent twice
    def run(url_of, args, cert):
        port, log = start_server(cert=cert, extra=["--idle-close", "10:80", "--race", "0.25"])
        ev, end, _ = probe("anthropic", url_of(port), "--requests", "16", "--gap-ms", "30",
                           *args, timeout=120)
        r = ends(ev)
        check([x["state"] for x in r] == ["done"] * 16, [x["error"] for x in r if x["error"]])
        reqs = requests_in(log)
        dropped = sum(1 for q in reqs if q.get("dropped"))
        check(len(reqs) - dropped == 16, "%d requests answered" % (len(reqs) - dropped))
        # (a request the idle close met on its way out is sent again too,
        # never read twice)
        check(sum(x["resent"] for x in r) >= dropped > 0,
              "%d dropped, %d sent again" % (dropped, sum(x["resent"] for x in r)))
        check(all(x["attempts"] == 1 for x in r), "the resend is no attempt")
        NOTES.append("random idle closes (%s): 16 requests on %d connections, %d kept, %d "
                     "dropped and %d sent again" %
                     ("TLS" if cert else "plain", r[-1]["opened"], sum(x["kept"] for x in r),
                      dropped, sum(x["resent"] for x in r)))
    both_wires(run)


def test_cancel_closes_a_kept_connection():
    # cancelled in the middle of an answer: that connection is not kept
    port, log = start_server([{"text": "first"}, {"after_text": "streaming...", "stall": 30},
                              {"text": "third"}])
    ev, end, _ = probe("anthropic", "http://127.0.0.1:%d" % port, "--requests", "3",
                       "--cancel-at", "stream", "--cancel-request", "1")
    r = ends(ev)
    check([x["state"] for x in r] == ["done", "cancelled", "done"], r)
    check([x["kept"] for x in r] == [False, True, False] and r[-1]["opened"] == 2, r)
    check(conns(log) == [1, 1, 2], conns(log))


def start_proxy():
    d = tempfile.mkdtemp(dir=TMP)
    port_file, log = os.path.join(d, "port"), os.path.join(d, "log")
    proc = subprocess.Popen([sys.executable, PROXY, "--port-file", port_file, "--log", log,
                             "--lifetime", "300"])
    SERVERS.append(proc)
    deadline = time.time() + 60
    while not os.path.exists(port_file):
        check(proc.poll() is None and time.time() < deadline, "the proxy did not start")
        time.sleep(0.02)
    with open(port_file) as f:
        return int(f.read()), log


def test_kept_connection_through_a_proxy():
    # https: the CONNECT tunnel is the connection; http: requests in
    # absolute form on one connection to the proxy
    for tls in (True, False):
        pport, plog = start_proxy()
        # (loopback never goes through a proxy; the proxy sends every name
        # to 127.0.0.1, and the "wronghost" certificate names wrong.example)
        port, log = start_server(cert="wronghost" if tls else None)
        url = ("https://wrong.example:%d" if tls else "http://model.test:%d") % port
        args = ["--ca-file", os.path.join(CERTS, "ca.crt")] if tls else []
        ev, end, _ = probe("anthropic", url, "--requests", "3", "--proxy",
                           "http://127.0.0.1:%d" % pport, *args)
        r = ends(ev)
        check([x["state"] for x in r] == ["done"] * 3 and r[-1]["opened"] == 1, (tls, r))
        with open(plog) as f:
            seen = [json.loads(l) for l in f if l.strip()]
        check(len(seen) == 1 and seen[0]["method"] == ("CONNECT" if tls else "POST"), seen)
        check(conns(log) == [1, 1, 1], conns(log))


def tls_probe(port, state, *extra):
    return probe("anthropic", "https://localhost:%d" % port, "--ca-file",
                 os.path.join(CERTS, "ca.crt"), "--state-dir", state, *extra)


def session_file(state):
    d = os.path.join(state, "tls")
    names = os.listdir(d) if os.path.isdir(d) else []
    return os.path.join(d, names[0]) if len(names) == 1 else None


def test_tls_session_resumed_by_the_next_run():
    port, log = start_server(cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    _, first, _ = tls_probe(port, state)
    _, second, _ = tls_probe(port, state)
    check(first["state"] == "done" and second["state"] == "done", (first, second))
    check([q["tls_reused"] for q in requests_in(log)] == [False, True],
          "the server's side: %s" % [q["tls_reused"] for q in requests_in(log)])
    check(not first["resumed"] and second["resumed"], (first, second))
    f = session_file(state)
    check(f is not None and (os.stat(f).st_mode & 0o777) == 0o600, f)
    check((os.stat(os.path.dirname(f)).st_mode & 0o777) == 0o700, "tls/ is 0700")
    # another server (port) is not offered this one's session
    port2, log2 = start_server(cert="server")
    _, third, _ = tls_probe(port2, state)
    check(third["state"] == "done" and not third["resumed"], third)
    check([q["tls_reused"] for q in requests_in(log2)] == [False], "another server")


def test_tls_sessions_in_memory_and_off():
    port, log = start_server(cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    # in memory: the process's second connection resumes; nothing on disk
    ev, _, _ = tls_probe(port, state, "--resume", "memory", "--requests", "2", "--keep-idle-ms", "0")
    check([x["resumed"] for x in ends(ev)] == [False, True], ends(ev))
    check(not os.path.exists(os.path.join(state, "tls")), "memory only: no file")
    _, end, _ = tls_probe(port, state, "--resume", "memory")
    check(not end["resumed"], "a new process has no session in memory")
    # off: never offered, never kept
    ev, _, _ = tls_probe(port, state, "--resume", "off", "--requests", "2", "--keep-idle-ms", "0")
    check([x["resumed"] for x in ends(ev)] == [False, False], ends(ev))
    check(not os.path.exists(os.path.join(state, "tls")), "off: no file")
    check([q["tls_reused"] for q in requests_in(log)] == [False, True, False, False, False],
          [q["tls_reused"] for q in requests_in(log)])


def test_tls_session_file_refused_or_damaged():
    port, log = start_server(cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    _, end, _ = tls_probe(port, state)
    f = session_file(state)
    check(f is not None, "a session file")
    good = open(f, "rb").read()

    def attempt(what, change):
        with open(f, "wb") as out:
            out.write(good)
        os.chmod(f, 0o600)
        change()
        _, end, _ = tls_probe(port, state)
        check(end["state"] == "done" and not end["resumed"], (what, end))
        st = os.stat(f)
        check(st.st_uid == os.geteuid() and (st.st_mode & 0o777) == 0o600,
              "%s: replaced by the new session (mode %o)" % (what, st.st_mode & 0o777))
        check(open(f, "rb").read() != good, "%s: a new session" % what)

    attempt("readable by others", lambda: os.chmod(f, 0o644))
    attempt("writable by the group", lambda: os.chmod(f, 0o620))
    if os.geteuid() == 0:
        attempt("another user's", lambda: os.chown(f, 65534, 65534))
    else:
        NOTES.append("session file of another user: not tried (not root)")

    def flip():
        b = bytearray(good)
        b[len(b) // 2] ^= 0x55
        open(f, "wb").write(bytes(b))
    attempt("a byte changed", flip)
    attempt("cut short", lambda: open(f, "wb").write(good[:len(good) // 2]))
    attempt("empty", lambda: open(f, "wb").close())
    attempt("too long", lambda: open(f, "ab").write(b"x" * 10000))
    _, end, _ = tls_probe(port, state)
    check(end["resumed"], "the file written last is used again")
    # a session kept under other roots (another CA file) is not offered
    other = os.path.join(state, "ca-copy.crt")
    with open(os.path.join(CERTS, "ca.crt")) as a, open(other, "w") as b:
        b.write(a.read() + "\n")
    _, end, _ = probe("anthropic", "https://localhost:%d" % port, "--ca-file", other,
                      "--state-dir", state)
    check(end["state"] == "done" and not end["resumed"], "other trust: %s" % end)


def test_tls_session_file_ages():
    # the file's times (its format: docs/LLM.md), rewritten with a good
    # checksum: a session older than the cap or than its ticket's lifetime,
    # or from the future, is not offered
    import hashlib
    import struct
    port, log = start_server(cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    _, end, _ = tls_probe(port, state)
    f = session_file(state)
    good = open(f, "rb").read()
    check(good[:8] == b"MOTETLS1" and hashlib.sha256(good[:-32]).digest() == good[-32:],
          "the documented format")
    born, issued, lifetime, length = struct.unpack("<qqII", good[40:64])
    check(lifetime > 0 and length == len(good) - 96, (lifetime, length))
    now = int(time.time())

    def with_times(b, i, extra=()):
        head = good[:40] + struct.pack("<qqII", b, i, lifetime, length) + good[64:-32]
        with open(f, "wb") as out:
            out.write(head + hashlib.sha256(head).digest())
        os.chmod(f, 0o600)
        return tls_probe(port, state, *extra)[1]

    check(with_times(now - 60, now - 60)["resumed"], "a fresh session is resumed")
    check(not with_times(now - 86400 - 60, now - 60)["resumed"], "older than 24 hours")
    check(not with_times(now - 120, now - lifetime - 60)["resumed"], "older than its ticket")
    check(not with_times(now + 3600, now + 3600)["resumed"], "from the future")
    check(not with_times(now - 120, now - 120, ["--session-max-s", "60"])["resumed"],
          "older than the configured cap")
    check(with_times(now - 30, now - 30, ["--session-max-s", "60"])["resumed"],
          "within the configured cap")


def test_kill_9_with_a_kept_connection():
    # killed while a connection is kept idle: the next run works, and
    # resumes the session the killed one kept
    port, log = start_server(cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    p = subprocess.Popen([PROBE, "anthropic", "https://localhost:%d" % port, "--ca-file",
                          os.path.join(CERTS, "ca.crt"), "--state-dir", state, "--requests", "2",
                          "--gap-ms", "30000"], stdout=subprocess.PIPE, text=True)
    line = ""
    deadline = time.time() + 30
    while '"req_end"' not in line and time.time() < deadline:
        line = p.stdout.readline()
    # (the session file is written behind the loop; a TLS 1.3 ticket comes
    # with the answer: killed before its commit, a run keeps none)
    wait_for(lambda: [n for n in os.listdir(os.path.join(state, "tls"))
                      if not n.startswith(".")] if os.path.isdir(os.path.join(state, "tls"))
             else None, "the session file", 10)
    os.kill(p.pid, 9)
    p.wait()
    p.stdout.close()
    check('"done"' in line, line)
    _, end, _ = tls_probe(port, state)
    check(end["state"] == "done" and end["resumed"], end)


# ---- the same through the real mote (the agent's stream slot keeps it) ----

TOOL_ROUND = {"tool": "shell", "input": {"command": "true"}}


def mote(port, state, *extra, tls=True, env=None, prompt="run true", timeout=90):
    """One `mote -p` run against the test server; returns the finished
    process (stdout, stderr as text)."""
    e = dict(os.environ, ANTHROPIC_API_KEY="sk-wire", NO_COLOR="1")
    e.pop("MOTE_TLS_SESSIONS", None)
    if env:
        e.update(env)
    args = [MOTE, "-p", prompt, "--yes", "--state-dir", state]
    if tls:
        args += ["--base-url", "https://localhost:%d" % port, "--ca-file",
                 os.path.join(CERTS, "ca.crt")]
    else:
        args += ["--base-url", "http://127.0.0.1:%d" % port]
    return subprocess.run(args + list(extra), capture_output=True, text=True, env=e,
                          timeout=timeout)


def answered(log):
    """The requests the server answered (not those it dropped or cut)."""
    return [q for q in requests_in(log) if not q.get("dropped") and not q.get("closed_before_body")]


def test_mote_turn_of_tool_rounds_on_one_connection():
    # a turn of 5 tool rounds: its 6 requests on one connection, over TLS
    # and plain; with --keep-alive 0 one connection each, told to close
    for tls in (True, False):
        port, log = start_server([TOOL_ROUND] * 5 + [{"text": "five rounds"}],
                                 cert="server" if tls else None)
        p = mote(port, tempfile.mkdtemp(dir=TMP), tls=tls)
        check(p.returncode == 0 and p.stdout.endswith("five rounds\n"), (p.stdout, p.stderr))
        check(conns(log) == [1] * 6, "tls %s: %s" % (tls, conns(log)))
        check([q["conn_req"] for q in requests_in(log)] == [1, 2, 3, 4, 5, 6], "one after another")
        check(all("connection" not in q["headers"] for q in requests_in(log)), "kept")
    port, log = start_server([TOOL_ROUND] * 2 + [{"text": "two rounds"}], cert="server")
    p = mote(port, tempfile.mkdtemp(dir=TMP), "--keep-alive", "0")
    check(p.returncode == 0 and p.stdout.endswith("two rounds\n"), (p.stdout, p.stderr))
    check(conns(log) == [1, 2, 3], conns(log))
    check([q["headers"].get("connection") for q in requests_in(log)] == ["close"] * 3,
          "each told to close")


def test_mote_resumes_its_tls_session_from_the_state_directory():
    # -p keeps the session in STATE/tls: the next run's handshake resumes
    port, log = start_server(cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    for _ in range(2):
        p = mote(port, state)
        check(p.returncode == 0, p.stderr)
    check([q["tls_reused"] for q in requests_in(log)] == [False, True],
          "the server's side: %s" % [q["tls_reused"] for q in requests_in(log)])
    f = session_file(state)
    check(f is not None and (os.stat(f).st_mode & 0o777) == 0o600, f)
    # turned off: --tls-sessions off or memory, MOTE_TLS_SESSIONS=off: the
    # file there is not offered (nor written where there was none)
    for extra, env in ((["--tls-sessions", "off"], None), (["--tls-sessions", "memory"], None),
                       ([], {"MOTE_TLS_SESSIONS": "off"})):
        before = len(requests_in(log))
        p = mote(port, state, *extra, env=env)
        check(p.returncode == 0, p.stderr)
        check(requests_in(log)[before]["tls_reused"] is False, "%s %s resumed" % (extra, env))
        fresh = tempfile.mkdtemp(dir=TMP)
        p = mote(port, fresh, *extra, env=env)
        check(p.returncode == 0 and not os.path.exists(os.path.join(fresh, "tls")),
              "%s %s: a session written" % (extra, env))
    # the option wins over the variable; a bad value is a usage error
    fresh = tempfile.mkdtemp(dir=TMP)
    p = mote(port, fresh, "--tls-sessions", "disk", env={"MOTE_TLS_SESSIONS": "off"})
    check(p.returncode == 0 and session_file(fresh) is not None, "the option first")
    p = mote(port, fresh, env={"MOTE_TLS_SESSIONS": "sometimes"})
    check(p.returncode == 2 and "MOTE_TLS_SESSIONS" in p.stderr, p.stderr)


def test_mote_kill_9_while_a_connection_is_pooled():
    # killed while its tool runs, the connection idle in its stream slot:
    # the next run recovers the conversation (the tool gets an error
    # result), on a new connection that resumes the killed run's session
    port, log = start_server([{"tool": "shell", "input": {"command": "touch MARK; sleep 60"}},
                              {"text": "recovered"}], cert="server")
    state = tempfile.mkdtemp(dir=TMP)
    work = tempfile.mkdtemp(dir=TMP)
    e = dict(os.environ, ANTHROPIC_API_KEY="sk-wire", NO_COLOR="1")
    p = subprocess.Popen([MOTE, "-p", "sleep", "--yes", "--state-dir", state, "--base-url",
                          "https://localhost:%d" % port, "--ca-file", os.path.join(CERTS, "ca.crt")],
                         cwd=work, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while not os.path.exists(os.path.join(work, "MARK")) and time.time() < deadline:
        time.sleep(0.02)
    check(os.path.exists(os.path.join(work, "MARK")), "the tool did not start")
    os.kill(p.pid, 9)
    p.wait()
    q = mote(port, state, "--continue", prompt="go on")
    check(q.returncode == 0 and "recovered" in q.stdout, (q.returncode, q.stdout, q.stderr))
    reqs = requests_in(log)
    check([r["conn"] for r in reqs] == [1, 2] and [r["tls_reused"] for r in reqs] == [False, True],
          [(r["conn"], r["tls_reused"]) for r in reqs])
    recs = journal(state)
    res = [r for r in recs if r["t"] == "tool_result"]
    check(len(res) == 1 and res[0].get("error") and "interrupted" in res[0]["text"], res)


def test_mote_kept_connection_closed_between_requests():
    # the server closes the kept connection as the turn's next request
    # comes (FIN, RST, or before its body): sent again at once on a new
    # one, once, and the turn goes on
    for tls in (True, False):
        for how in ({"reset": True}, {"reset": "rst"}, {"close_before_body": True}):
            port, log = start_server([TOOL_ROUND, how, {"text": "after the close"}],
                                     cert="server" if tls else None)
            t0 = time.monotonic()
            p = mote(port, tempfile.mkdtemp(dir=TMP), tls=tls, env={"MOTE_BACKOFF_MS": "5000"})
            check(p.returncode == 0 and p.stdout.endswith("after the close\n"),
                  (tls, how, p.stdout, p.stderr))
            check(conns(log) == [1, 1, 2], (tls, how, conns(log)))
            check(time.monotonic() - t0 < 5, "sent again at once, not after a backoff")
    # idle closes between the requests (the tool takes longer than the
    # server waits): seen while idle, a new connection, nothing resent
    port, log = start_server([{"tool": "shell", "input": {"command": "sleep 0.4"}}] * 2 +
                             [{"text": "idle closes"}], cert="server", extra=["--idle-close", "100"])
    p = mote(port, tempfile.mkdtemp(dir=TMP))
    check(p.returncode == 0 and p.stdout.endswith("idle closes\n"), (p.stdout, p.stderr))
    check(conns(log) == [1, 2, 3], conns(log))


def test_mote_closed_in_the_middle_of_a_response_is_not_resent():
    # the kept connection breaks after part of the second answer: an error
    # (the partial text kept as an interrupted answer), never sent again
    for tls in (True, False):
        port, log = start_server([TOOL_ROUND, {"after_text": "Partial answer", "stall": 0.05},
                                  {"text": "must not be asked for"}], cert="server" if tls else None)
        state = tempfile.mkdtemp(dir=TMP)
        p = mote(port, state, tls=tls)
        check(p.returncode == 1 and "cut off" in p.stderr, (tls, p.returncode, p.stderr))
        check(conns(log) == [1, 1], "sent again: %s" % conns(log))
        check("must not be asked for" not in p.stdout, p.stdout)
        recs = journal(state)
        check(any(r["t"] == "assistant" and r.get("interrupted") for r in recs),
              [r["t"] for r in recs])


def test_mote_turn_through_a_proxy_tunnel():
    # HTTPS_PROXY: the turn's requests go through one CONNECT tunnel
    pport, plog = start_proxy()
    port, log = start_server([TOOL_ROUND] * 2 + [{"text": "tunnelled"}], cert="wronghost")
    e = dict(os.environ, ANTHROPIC_API_KEY="sk-wire", NO_COLOR="1",
             HTTPS_PROXY="http://127.0.0.1:%d" % pport)
    p = subprocess.run([MOTE, "-p", "run true", "--yes", "--state-dir", tempfile.mkdtemp(dir=TMP),
                        "--base-url", "https://wrong.example:%d" % port, "--ca-file",
                        os.path.join(CERTS, "ca.crt")], capture_output=True, text=True, env=e,
                       timeout=90)
    check(p.returncode == 0 and p.stdout.endswith("tunnelled\n"), (p.stdout, p.stderr))
    with open(plog) as f:
        seen = [json.loads(line) for line in f if line.strip()]
    check([x["method"] for x in seen] == ["CONNECT"], seen)
    check(conns(log) == [1, 1, 1], conns(log))


def test_mote_idle_connection_closed_after_keep_alive():
    # interactive: the second prompt comes a second after the first turn;
    # with --keep-alive 200 the idle connection was closed by then (a new
    # one), with the default 50 s it carries the second turn too
    for extra, want in ((["--keep-alive", "200"], [1, 2]), ([], [1, 1])):
        port, log = start_server([{"text": "first"}, {"text": "second"}], cert="server")
        e = dict(os.environ, ANTHROPIC_API_KEY="sk-wire", NO_COLOR="1")
        p = subprocess.Popen([MOTE, "--state-dir", tempfile.mkdtemp(dir=TMP), "--base-url",
                              "https://localhost:%d" % port, "--ca-file",
                              os.path.join(CERTS, "ca.crt")] + extra, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        try:
            p.stdin.write(b"one\n")
            p.stdin.flush()
            wait_for(lambda: len(requests_in(log)) == 1, "the first request")
            time.sleep(2.0)  # the idle time under test, well over 200 ms
            out, err = p.communicate(b"two\n", timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        check(p.returncode == 0 and b"second" in out, (p.returncode, out, err))
        check(conns(log) == want, (extra, conns(log)))


def test_mote_serve_conversations_reuse_the_slots_connection():
    # mote serve: the turns of two conversations, one after the other, go
    # on the stream slot's one connection; --keep-alive 0: one per request
    import signal
    from test_serve import Serve
    for extra, want in (([], [1, 1, 1, 1]), (["--keep-alive", "0"], [1, 2, 3, 4])):
        port, log = start_server([TOOL_ROUND, {"text": "a"}, TOOL_ROUND, {"text": "b"}])
        s = Serve(port, args=["--yes"] + extra)
        try:
            for n in range(2):
                cid = s.create()
                s.say(cid, "run true")
                wait_for(lambda: len(requests_in(log)) == 2 * n + 2, "the turn's requests")
                s.wait_state(cid, "idle")
        finally:
            s.kill(signal.SIGTERM)
            rc = s.wait()
        check(rc == 0, s.log())
        check(conns(log) == want, (extra, conns(log)))


def main():
    for exe in (PROBE, MOTE):
        if not os.path.exists(exe):
            print("missing %s (build it first)" % exe)
            return 1

    def setup():
        subprocess.run(["sh", os.path.join(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))), "test", "make_certs.sh"), CERTS], check=True)
    return run_all("client", globals(), setup)


if __name__ == "__main__":
    sys.exit(main())
