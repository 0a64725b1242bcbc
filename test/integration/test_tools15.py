#!/usr/bin/env python3
"""Regression tests of the defects an adversarial test of issue 15 found in
the file tools, the state directory and the proxy client (items 3, 11, 19,
20, 22 and 23 of its list): the real binary against the local test LLM
server, a local proxy and, for the ownership tests, files of another user
(those need root: skipped otherwise).

    test_tools15.py BUILDDIR
"""
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

from harness import SERVERS, TMP, Pty, Skip, check, requests_in, run_all, start_server, wait_for
from harness import request_results as results, result_text as text_of

# The CLI tests' helpers (same build directory, the same clean environment).
from test_cli15 import MOTE, env, mote, new_state, run  # noqa: E402

NOBODY = 65534


def tool_round(calls, e=None, prefix=()):
    """One one-shot turn in which the model makes `calls` (tool, input)
    one after another; returns the results it got, in order."""
    script = [{"tool": t, "input": i} for t, i in calls] + [{"text": "done"}]
    port, log = start_server(script)
    state = new_state()
    if prefix:  # another user: a state directory it can reach, its own
        state = os.path.join(public_dir(), "state")
        os.mkdir(state, 0o700)
        os.chown(state, NOBODY, NOBODY)
    p = run(list(prefix) + mote(port, state, "-p", "x", "--yes"), e=e)
    check(p.returncode == 0, (p.returncode, p.stderr[-1500:]))
    return [results(log, i + 1)[-1] for i in range(len(calls))]


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root: files of another user are made with chown")


def public_dir():
    """A directory every user can reach (the harness's TMP is 0700);
    removed at the end of the run."""
    d = tempfile.mkdtemp(prefix="mote-t15-")
    os.chmod(d, 0o755)
    CLEANUP.append(d)
    return d


CLEANUP = []


# ---- item 3: ownership ---------------------------------------------------------

def test_edit_and_write_as_root_keep_the_owner_and_the_setuid_owner():
    """edit_file and write_file run as root gave a service's config to root
    (the service could no longer read it) and made a setuid program of
    nobody a setuid-root one with the model's content."""
    need_root()
    d = public_dir()
    conf = os.path.join(d, "service.conf")
    with open(conf, "w") as f:
        f.write("level = info\n")
    os.chown(conf, NOBODY, NOBODY)
    os.chmod(conf, 0o600)
    prog = os.path.join(d, "helper")
    with open(prog, "w") as f:
        f.write("#!/bin/sh\necho v1\n")
    os.chown(prog, NOBODY, NOBODY)
    os.chmod(prog, 0o4755)
    r = tool_round([("edit_file", {"path": conf, "old_string": "info", "new_string": "debug"}),
                    ("write_file", {"path": prog, "content": "#!/bin/sh\necho v2\n"})])
    check(not r[0].get("is_error") and "edited" in text_of(r[0]), text_of(r[0]))
    check(not r[1].get("is_error") and "wrote" in text_of(r[1]), text_of(r[1]))
    for path, mode in ((conf, 0o600), (prog, 0o4755)):
        s = os.stat(path)
        check((s.st_uid, s.st_gid) == (NOBODY, NOBODY),
              "%s: owner %d:%d" % (os.path.basename(path), s.st_uid, s.st_gid))
        check(stat.S_IMODE(s.st_mode) == mode, "%s: mode %o" % (path, stat.S_IMODE(s.st_mode)))
    with open(conf) as f:
        check(f.read() == "level = debug\n", "edited")
    # the service user still reads its own config
    p = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", "cat", conf], capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout == "level = debug\n", (p.returncode, p.stderr))
    check(sorted(os.listdir(d)) == ["helper", "service.conf"], os.listdir(d))


def test_a_user_who_cannot_keep_the_owner_drops_setuid_and_is_told():
    """mote run by nobody on a group-writable setuid file of another user:
    only root may give a file away, so the new file is nobody's - and then
    its setuid bit must go (a setuid file of the wrong user), and the model
    is told the owner changed. A file nobody may not write is refused even
    though nobody's directory would let the rename replace it."""
    need_root()
    d = public_dir()
    os.chown(d, NOBODY, NOBODY)
    shared = os.path.join(d, "shared.sh")
    with open(shared, "w") as f:
        f.write("#!/bin/sh\necho v1\n")
    os.chown(shared, 4321, NOBODY)
    os.chmod(shared, 0o6775)
    roots = os.path.join(d, "root.conf")
    with open(roots, "w") as f:
        f.write("root = yes\n")
    os.chmod(roots, 0o644)
    as_nobody = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]
    r = tool_round([("edit_file", {"path": shared, "old_string": "v1", "new_string": "v2"}),
                    ("write_file", {"path": roots, "content": "root = no\n"})],
                   prefix=as_nobody)
    t = text_of(r[0])
    check(not r[0].get("is_error") and "edited" in t, t)
    check("owner or group could not be kept" in t and "setuid/setgid bit" in t, t)
    s = os.stat(shared)
    check(s.st_uid == NOBODY and s.st_gid == NOBODY, (s.st_uid, s.st_gid))
    check(stat.S_IMODE(s.st_mode) == 0o2775, "setuid dropped, setgid of the same group kept: "
          "%o" % stat.S_IMODE(s.st_mode))
    t = text_of(r[1])
    check(r[1].get("is_error") and "is not writable (mode 0644" in t and "unchanged" in t, t)
    s = os.stat(roots)
    check(s.st_uid == 0, "root's file stays root's")
    with open(roots) as f:
        check(f.read() == "root = yes\n", "unchanged")


# ---- items 11 and 19: read_file ----------------------------------------------------

def test_read_file_of_unknown_size_says_so():
    """A /proc file over 16 KiB (stat says 0 bytes) was reported as whole
    ("[bytes 0-16384 of 16384]", no way to read on); with a length, no
    note at all."""
    path = "/proc/self/smaps"  # mote's own: well over 16 KiB
    r = tool_round([("read_file", {"path": path}),
                    ("read_file", {"path": path, "offset": 16384}),
                    ("read_file", {"path": "/proc/self/status", "length": 40})])
    first, second, third = (text_of(x) for x in r)
    check(first.endswith("[bytes 0-16384 of a file whose size is not known (more follows); "
                         "read on with offset 16384]"), first[-150:])
    check(len(first) < 16384 + 200, "the cap holds: %d" % len(first))
    check(second.endswith("[bytes 16384-32768 of a file whose size is not known (more follows); "
                          "read on with offset 32768]"), second[-150:])
    check(third.startswith("Name:") and
          third.endswith("[bytes 0-40 of a file whose size is not known (more follows); "
                         "read on with offset 40]"), third)


def test_read_file_cuts_at_a_character_and_says_where_the_end_is():
    """An é across the 16 KiB cap became U+FFFD at the end of one read and
    the start of the next; an offset of 2^63-1 gave "invalid argument"; an
    offset equal to the size was called "past the end"."""
    d = tempfile.mkdtemp(dir=TMP)
    u = os.path.join(d, "utf8.txt")
    with open(u, "w", encoding="utf-8") as f:
        f.write("a" * 16383 + "\u00e9" + "tail\n")  # the é is bytes 16383-16384
    p = os.path.join(d, "f.txt")
    data = "".join("line %05d\n" % i for i in range(4000))  # 44,000 bytes
    with open(p, "w") as f:
        f.write(data)
    e = os.path.join(d, "empty")
    open(e, "w").close()
    big = 9223372036854775807
    r = tool_round([("read_file", {"path": u}),
                    ("read_file", {"path": u, "offset": 16383}),
                    ("read_file", {"path": p, "offset": big}),
                    ("read_file", {"path": p, "offset": big, "length": big}),
                    ("read_file", {"path": p, "offset": 44000}),
                    ("read_file", {"path": p, "offset": 44001}),
                    ("read_file", {"path": p, "offset": 43990, "length": big}),
                    ("read_file", {"path": e, "offset": 5})])
    t = [text_of(x) for x in r]
    check("\ufffd" not in t[0] and
          t[0] == "a" * 16383 + "\n[bytes 0-16383 of 16390; read on with offset 16383]",
          t[0][-100:])
    check(t[1] == "\u00e9tail\n[bytes 16383-16390 of 16390]", t[1])
    for i in (2, 3):
        check(not r[i].get("is_error") and t[i] == "[offset past the end: the file has 44000 bytes]",
              "%d: %s" % (i, t[i]))
    check(t[4] == "[offset 44000 is the end of the file (44000 bytes): nothing more to read]",
          t[4])
    check("past the end" in t[5] and "44000 bytes" in t[5], t[5])
    check(t[6] == data[43990:] + "[bytes 43990-44000 of 44000]", t[6])
    check(t[7] == "[offset past the end: the file is empty]", t[7])


# ---- item 20: what is not a regular file in the state ---------------------------

def test_fifos_in_the_state_are_refused_not_waited_on():
    """conversations/X.jsonl as a FIFO made `mote --list` hang forever;
    STATE/history as a FIFO hung the interactive start with no message (and
    SIGTERM did not end it); STATE/current as a FIFO hung --continue."""
    port, _ = start_server([{"text": "one"}, {"text": "two"}])
    state = new_state()
    p = run(mote(port, state, "-p", "first"), timeout=30)
    check(p.returncode == 0, p.stderr)
    conv = os.path.join(state, "conversations")
    real = [f for f in os.listdir(conv) if f.endswith(".jsonl")]
    fifo_id = "20990101-000000-ffffff"
    os.mkfifo(os.path.join(conv, fifo_id + ".jsonl"), 0o600)
    # --list goes on past it: the real conversation and the FIFO, marked
    p = run([MOTE, "--state-dir", state, "--list"], timeout=20)
    check(p.returncode == 0, (p.returncode, p.stderr))
    rows = {l.split()[0]: l for l in p.stdout.splitlines()[1:] if l.strip()}
    check(real[0][:-6] in rows and fifo_id in rows, p.stdout)
    check("not a regular file" in rows[fifo_id], rows[fifo_id])
    p = run(mote(port, state, "--resume", fifo_id, "-p", "x"), timeout=20)
    check(p.returncode != 0 and "not a regular file" in p.stderr, (p.returncode, p.stderr))
    # STATE/current as a FIFO: --continue says so at once
    cur = os.path.join(state, "current")
    if os.path.exists(cur):
        os.unlink(cur)
    os.mkfifo(cur, 0o600)
    p = run(mote(port, state, "--continue", "-p", "x"), timeout=20)
    check(p.returncode == 1 and "not a regular file" in p.stderr, (p.returncode, p.stderr))
    os.unlink(os.path.join(state, "current"))
    # STATE/history as a FIFO: the prompt comes, a line is answered, and
    # SIGTERM ends it
    hist = os.path.join(state, "history")
    if os.path.exists(hist):
        os.unlink(hist)
    os.mkfifo(hist, 0o600)
    t = Pty(mote(port, state), env())
    try:
        t.read_until("> ", timeout=15)
        t.send("hello\r")
        t.read_until("two", timeout=15)
        os.kill(t.pid, signal.SIGTERM)
        rc = t.wait(timeout=15)
    finally:
        try:
            os.kill(t.pid, signal.SIGKILL)
        except OSError:
            pass
    check(rc == 143, "SIGTERM ends it: %r" % rc)
    check(stat.S_ISFIFO(os.lstat(os.path.join(state, "history")).st_mode), "left as it is")


# ---- item 22: edit_file details ----------------------------------------------------

def test_edit_file_refuses_read_only_and_hard_linked_files_and_names_crlf():
    """A 0444 file was edited without a word; a hard-linked file was split
    from its other name (which kept the old text); in a CRLF file an
    old_string with \\n was "not found" without a hint."""
    d = tempfile.mkdtemp(dir=TMP)
    ro = os.path.join(d, "ro.txt")
    with open(ro, "w") as f:
        f.write("locked = 1\n")
    os.chmod(ro, 0o444)
    hard = os.path.join(d, "hard.txt")
    with open(hard, "w") as f:
        f.write("shared = 1\n")
    other = os.path.join(d, "hard2.txt")
    os.link(hard, other)
    crlf = os.path.join(d, "crlf.txt")
    with open(crlf, "wb") as f:
        f.write(b"alpha\r\nbeta\r\ngamma\r\n")
    r = tool_round([
        ("edit_file", {"path": ro, "old_string": "= 1", "new_string": "= 2"}),
        ("write_file", {"path": ro, "content": "locked = 3\n"}),
        ("edit_file", {"path": hard, "old_string": "= 1", "new_string": "= 2"}),
        ("write_file", {"path": other, "content": "shared = 3\n"}),
        ("edit_file", {"path": crlf, "old_string": "alpha\nbeta", "new_string": "A\nB"}),
        ("edit_file", {"path": crlf, "old_string": "alpha\r\nbeta", "new_string": "A\r\nB"})])
    t = [text_of(x) for x in r]
    for i in (0, 1):
        check(r[i].get("is_error") and "is not writable (mode 0444; read-only" in t[i] and
              "unchanged" in t[i], "%d: %s" % (i, t[i]))
    with open(ro) as f:
        check(f.read() == "locked = 1\n", "the read-only file is unchanged")
    check(stat.S_IMODE(os.stat(ro).st_mode) == 0o444, "and its mode")
    for i in (2, 3):
        check(r[i].get("is_error") and "has other hard links" in t[i] and "unchanged" in t[i],
              "%d: %s" % (i, t[i]))
    check(os.stat(hard).st_nlink == 2 and os.path.samefile(hard, other), "still one file")
    with open(other) as f:
        check(f.read() == "shared = 1\n", "both names keep the same text")
    check(r[4].get("is_error") and "not found" in t[4] and "CRLF" in t[4] and "\\r\\n" in t[4],
          t[4])
    check(not r[5].get("is_error") and "edited" in t[5], t[5])
    with open(crlf, "rb") as f:
        check(f.read() == b"A\r\nB\r\ngamma\r\n", "the CRLF edit")
    check(sorted(os.listdir(d)) == ["crlf.txt", "hard.txt", "hard2.txt", "ro.txt"],
          "no temporary file left: %s" % os.listdir(d))


# ---- item 23: proxies ---------------------------------------------------------------

PROXY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proxy.py")
CERTS = os.path.join(TMP, "certs")


def certs():
    if not os.path.exists(os.path.join(CERTS, "ca.crt")):
        subprocess.run(["sh", os.path.join(os.path.dirname(PROXY), "make_certs.sh"), CERTS],
                       check=True, capture_output=True)
    return CERTS


class BadProxy:
    """A proxy in a thread that answers CONNECT its own way: "lf_only" (the
    status line and the empty line end in a bare LF, then a real tunnel),
    "close_after_200" (200, then the connection is closed)."""

    def __init__(self, mode):
        self.mode = mode
        self.connects = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        end = time.time() + 120
        while not self.stop and time.time() < end:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        c.settimeout(30)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            d = c.recv(4096)
            if not d:
                return
            head += d
        line = head.split(b"\r\n")[0].decode()
        self.connects.append(line)
        port = int(line.split()[1].rsplit(":", 1)[1])
        if self.mode == "close_after_200":
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            c.close()
            return
        c.sendall(b"HTTP/1.1 200 Connection established\nProxy-agent: lf\n\n")
        up = socket.create_connection(("127.0.0.1", port), timeout=10)
        socks, end = [c, up], time.time() + 60
        import select
        while time.time() < end:
            r, _, _ = select.select(socks, [], [], 1)
            for s in r:
                data = s.recv(65536)
                if not data:
                    up.close()
                    c.close()
                    return
                (up if s is c else c).sendall(data)

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.sock.close()


def https_through(proxy_url, text="through the tunnel", timeout=60):
    c = certs()
    port, slog = start_server([{"text": text}], cert="wronghost", certs_dir=c)
    e = env(HTTPS_PROXY=proxy_url, MOTE_BACKOFF_MS="50")
    t0 = time.time()
    p = run([MOTE, "--state-dir", new_state(), "--base-url", "https://wrong.example:%d" % port,
             "--ca-file", os.path.join(c, "ca.crt"), "-p", "x"], e=e, timeout=timeout)
    return p, time.time() - t0, port, slog


def test_connect_answer_with_bare_lf_and_a_tunnel_closed_at_once():
    """A CONNECT answer with LF-only line ends waited 15 s, then "could not
    reach ... (proxy tunnel)" (curl accepts it); a tunnel closed right
    after 200 gave a TLS error that did not name the proxy."""
    bp = BadProxy("lf_only")
    try:
        p, took, port, slog = https_through("http://127.0.0.1:%d" % bp.port)
    finally:
        bp.close()
    check(p.returncode == 0 and p.stdout.strip() == "through the tunnel", (p.stdout, p.stderr))
    check(took < 10, "no wait for a head end that never comes: %.1f s" % took)
    check(bp.connects == ["CONNECT wrong.example:%d HTTP/1.1" % port], bp.connects)
    check(len(requests_in(slog)) == 1, "the request reached the server through the tunnel")
    bp = BadProxy("close_after_200")
    try:
        p, took, port, slog = https_through("http://127.0.0.1:%d" % bp.port)
    finally:
        bp.close()
    check(p.returncode == 1, (p.returncode, p.stderr))
    check("through the proxy 127.0.0.1:%d" % bp.port in p.stderr and
          "wrong.example:%d" % port in p.stderr, p.stderr)
    check(requests_in(slog) == [], "nothing reached the server")


def start_proxy(*extra):
    d = tempfile.mkdtemp(dir=TMP)
    port_file, log = os.path.join(d, "port"), os.path.join(d, "log")
    proc = subprocess.Popen([sys.executable, PROXY, "--port-file", port_file, "--log", log,
                             "--lifetime", "300"] + list(extra))
    SERVERS.append(proc)
    wait_for(lambda: os.path.exists(port_file) or proc.poll() is not None, "the proxy")
    check(proc.poll() is None, "the proxy started")
    with open(port_file) as f:
        return int(f.read()), log


def test_proxy_url_scheme_case_empty_user_and_long_credentials():
    """"HTTP://" was refused (schemes are case-insensitive); ":pw@host" was
    refused (curl accepts an empty user); 300 bytes of credentials gave
    "bad proxy URL" instead of naming the limit."""
    import json
    pport, plog = start_proxy("--auth", ":pw")
    p, _, _, _ = https_through("HTTP://:pw@127.0.0.1:%d" % pport)
    check(p.returncode == 0 and p.stdout.strip() == "through the tunnel", (p.stdout, p.stderr))
    with open(plog) as f:
        seen = [json.loads(l) for l in f]
    check([(x["auth"], x["status"]) for x in seen] == [("Basic OnB3", 200)], seen)
    p = run([MOTE, "--state-dir", new_state(), "--base-url", "https://wrong.example:1", "-p", "x"],
            e=env(HTTPS_PROXY="http://u:%s@127.0.0.1:1" % ("p" * 300)))
    check(p.returncode == 2, (p.returncode, p.stderr))
    check("HTTPS_PROXY" in p.stderr and "too long" in p.stderr and "256 bytes" in p.stderr and
          "bad proxy URL" not in p.stderr and "ppp" not in p.stderr, p.stderr)


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    try:
        return run_all("tools15", globals())
    finally:
        for d in CLEANUP:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
