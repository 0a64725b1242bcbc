#!/usr/bin/env python3
"""Errors name their cause: each fault, made for real against the test
server (a closed port, a name that does not resolve, a wrong CA, a server
that hangs up in the TLS handshake, each deadline, each HTTP status, a cut
stream, a read-only state directory), reaches `mote -p ...
--output-format stream-json` as an error event whose "code" names it, and
mote serve's error event carries the same name.

    test_errors.py BUILDDIR
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import ROOT, Skip, TMP, check, free_port, mote_env, run_all, start_server, wait_for

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
CERTS = os.path.join(TMP, "certs")


def env(**extra):
    return mote_env("sk-errors-test", MOTE_BACKOFF_MS="20", **extra)  # retries give up quickly


def run_json(url, state=None, extra=(), wrap=(), **envs):
    """Runs one prompt; returns (process, the error events)."""
    state = state or tempfile.mkdtemp(dir=TMP)
    cmd = list(wrap) + [MOTE, "--state-dir", state, "--base-url", url, "-p", "hi",
                        "--output-format", "stream-json"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env(**envs))
    events = []
    for line in p.stdout.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("type") == "error":
            events.append(ev)
    return p, events


def expect(code, url, **kw):
    p, errs = run_json(url, **kw)
    check(p.returncode == 1, (code, p.returncode, p.stderr))
    check(len(errs) >= 1, (code, "no error event", p.stdout, p.stderr))
    check(errs[-1].get("code") == code, (code, errs, p.stderr))
    check(errs[-1].get("message"), errs)  # the sentence stays beside the name
    return errs[-1]


def scripted(code, step, copies=1, **envs):
    port, _ = start_server([step] * copies)
    return expect(code, "http://127.0.0.1:%d" % port, **envs)


def make_certs():
    subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), CERTS], check=True)


def tcp_server(on_conn):
    """A loopback TCP listener whose connections go to on_conn(sock)."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)

    def serve():
        while True:
            try:
                c, _ = lsock.accept()
            except OSError:
                return
            threading.Thread(target=on_conn, args=(c,), daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return lsock, lsock.getsockname()[1]


# ---- reaching the server ------------------------------------------------------

def test_connection_refused():
    expect("connection_refused", "http://127.0.0.1:%d" % free_port())


def test_name_lookup():
    expect("name_lookup", "http://nonexistent.invalid:8080")


def test_tls_verify():
    make_certs()
    port, _ = start_server([{"text": "never"}], cert="server", certs_dir=CERTS)
    ev = expect("tls_verify", "https://localhost:%d" % port,
                extra=["--ca-file", os.path.join(CERTS, "other.crt")])
    check("trusted" in ev["message"] or "certificate" in ev["message"], ev)


def test_tls_handshake_closed():
    def hang_up(c):
        try:
            c.recv(4096)  # the ClientHello
        finally:
            c.close()
    lsock, port = tcp_server(hang_up)
    try:
        make_certs()
        expect("tls_handshake", "https://localhost:%d" % port,
               extra=["--ca-file", os.path.join(CERTS, "ca.crt")])
    finally:
        lsock.close()


# ---- deadlines ----------------------------------------------------------------

def test_connect_timeout():
    # TCP is accepted, the TLS handshake never answered: the connection is
    # not made within its deadline.
    held = []
    lsock, port = tcp_server(held.append)
    try:
        make_certs()
        t0 = time.monotonic()
        expect("connect_timeout", "https://localhost:%d" % port,
               extra=["--ca-file", os.path.join(CERTS, "ca.crt")],
               MOTE_CONNECT_TIMEOUT_MS="800")
        check(time.monotonic() - t0 < 30, "ended by the deadline")
    finally:
        lsock.close()
        for c in held:
            c.close()


def test_first_byte_timeout():
    scripted("first_byte_timeout", {"stall_headers": 20}, MOTE_FIRST_BYTE_TIMEOUT_MS="800")


def test_idle_timeout():
    scripted("idle_timeout", {"stall": 20, "after_text": "partly"},
             MOTE_IDLE_TIMEOUT_MS="800", MOTE_EVENT_TIMEOUT_MS="60000")


def test_event_timeout():
    scripted("event_timeout", {"slow_event_ms": 100},
             MOTE_EVENT_TIMEOUT_MS="800", MOTE_IDLE_TIMEOUT_MS="60000")


# ---- what the API answered ----------------------------------------------------

def test_auth():
    scripted("auth", {"status": 401})
    scripted("auth", {"status": 403})


def test_rate_limit():
    scripted("rate_limit", {"status": 429}, copies=10)


def test_overloaded():
    scripted("overloaded", {"status": 529}, copies=10)
    scripted("overloaded", {"status": 503}, copies=10)
    # the same as an error event after HTTP 200
    scripted("overloaded", {"error_event": "overloaded_error", "after_text": "so"}, copies=10)


def test_bad_request():
    scripted("bad_request", {"status": 400})


def test_server_error():
    scripted("server_error", {"status": 500}, copies=10)


def test_other_status_is_http():
    scripted("http", {"status": 404, "body": {"type": "error", "error": {
        "type": "not_found_error", "message": "model: no-such-model"}}})


def test_cut_off():
    scripted("cut_off", {"truncate": True, "text": "half an ans"})


# ---- the state ----------------------------------------------------------------

def read_only(state):
    """How to run mote with `state` read-only: a read-only bind mount in a
    mount namespace of its own as root (permissions do not stop root), the
    mode bits otherwise."""
    if os.geteuid() != 0:
        os.chmod(state, 0o500)
        return []
    probe = subprocess.run(["unshare", "-m", "sh", "-c",
                            'mount --bind -o ro "$0" "$0" && ! touch "$0/x" 2>/dev/null', state],
                           capture_output=True)
    if probe.returncode != 0:
        raise Skip("no read-only mount here (unshare -m): %s" % probe.stderr.decode()[:200])
    return ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', state]


def test_storage_read_only_state():
    port, log = start_server([{"text": "never"}])
    state = tempfile.mkdtemp(dir=TMP)
    os.chmod(state, 0o700)
    ev = expect("storage", "http://127.0.0.1:%d" % port, state=state, wrap=read_only(state))
    check("read-only" in ev["message"] or "permission" in ev["message"], ev)


def test_storage_fails_mid_turn():
    # The journal may not grow past 3000 bytes (RLIMIT_FSIZE, with SIGXFSZ
    # ignored: a write past it fails with EFBIG): the answer cannot be
    # journaled, a fatal error event.
    import resource
    import signal as sig

    def limit():
        sig.signal(sig.SIGXFSZ, sig.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))
    port, _ = start_server([{"text": "long " * 2000}])
    state = tempfile.mkdtemp(dir=TMP)
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "-p", "hi", "--output-format", "stream-json"], capture_output=True,
                       text=True, timeout=90, env=env(), preexec_fn=limit)
    errs = [json.loads(x) for x in p.stdout.splitlines() if x.startswith('{"type":"error"')]
    check(p.returncode == 1 and errs and errs[-1]["code"] == "storage", (p.returncode, errs, p.stderr))
    check("journal" in errs[-1]["message"], errs)


# ---- the same names in mote serve ---------------------------------------------

def test_serve_error_event_code():
    import http.client

    port, _ = start_server([{"status": 429}] * 10)
    state = tempfile.mkdtemp(dir=TMP)
    sock = os.path.join(state, "mote.sock")
    srv = subprocess.Popen([MOTE, "serve", "--state-dir", state, "--socket", sock,
                            "--base-url", "http://127.0.0.1:%d" % port],
                           env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    class UConn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.settimeout(30)
            self.sock.connect(sock)

    def call(method, path, body=None):
        c = UConn("mote")
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"content-type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data
    try:
        # listening once a connection is taken (the file is there from
        # bind(), a moment before listen())
        def listens():
            c = socket.socket(socket.AF_UNIX)
            try:
                c.connect(sock)
                return True
            except OSError:
                return srv.poll() is not None
            finally:
                c.close()
        wait_for(listens, "mote serve to listen", 20)
        if srv.poll() is not None:
            raise AssertionError("mote serve exited: %r" % srv.stderr.read()[-2000:])
        st, data = call("POST", "/v1/conversations")
        check(st in (200, 201), (st, data))
        cid = json.loads(data)["id"]
        st, data = call("POST", "/v1/conversations/%s/messages" % cid, {"text": "hi"})
        check(st in (200, 202), (st, data))
        # The live events: read until the error event.
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(sock)
        s.sendall(("GET /v1/conversations/%s/events HTTP/1.1\r\nHost: mote\r\n\r\n"
                   % cid).encode())
        got = b""
        deadline = time.time() + 30
        while b"event: error" not in got and time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        check(b"event: error" in got, got[-500:])
        after = got[got.index(b"event: error"):]
        line = [x for x in after.split(b"\n") if x.startswith(b"data: ")][0]
        ev = json.loads(line[6:])
        check(ev.get("code") == "rate_limit", ev)
    finally:
        srv.terminate()
        srv.wait(timeout=30)


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("errors", globals())


if __name__ == "__main__":
    sys.exit(main())
