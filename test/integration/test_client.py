#!/usr/bin/env python3
"""Integration tests of the model client: the real POSIX port, TCP and TLS
on loopback, against test/llm_server.py.

    test_client.py BUILDDIR    (needs BUILDDIR/asan/llm_probe, BUILDDIR/mote,
                                and BUILDDIR/none/mote for the TLS=none case)
Prints one line per test and "N passed, M failed".
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import NOTES, TMP, check, requests_in, run_all
from harness import start_server as _start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
PROBE = os.path.join(BUILD, "asan", "llm_probe")
MOTE = os.path.join(BUILD, "mote")
MOTE_NONE = os.path.join(BUILD, "none", "mote")
CERTS = os.path.join(TMP, "certs")
SERVER_SCRIPT = os.path.abspath(__file__)  # a file that is neither PEM nor DER


def start_server(script=None, cert=None, host="127.0.0.1"):
    return _start_server(script, cert, host, CERTS)


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
    time.sleep(0.2)
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
