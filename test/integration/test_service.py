#!/usr/bin/env python3
"""Integration tests of `mote serve` as a device service: one slow job
never stalls the other clients, secrets come from real randomness, the
socket can be opened to a group, and the API means one thing per word
(status codes, retry, usage, the log).

    test_service.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import TMP, Skip, check, requests_in, run_all, start_server, strace_cmd, wait_for
from test_serve import Events, Serve, UConn, journal_of

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")


# ---- journals made fast --------------------------------------------------------

def write_journal(state, cid, size, text_bytes=4000):
    """A valid finished journal of about `size` bytes (docs/JOURNAL.md):
    the open record, then turns of user, request and assistant records."""
    d = os.path.join(state, "conversations")
    os.makedirs(d, mode=0o700, exist_ok=True)
    filler = ("lorem ipsum dolor sit amet " * (text_bytes // 27 + 1))[:text_bytes]
    turn = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in (
        {"t": "user", "text": "question: " + filler[:200]},
        {"t": "request", "attempt": 1},
        {"t": "assistant", "text": filler, "stop": "end_turn",
         "usage": {"in": 120, "out": 900}})).encode()
    head = (json.dumps({"t": "open", "v": 2, "id": cid}, separators=(",", ":")) + "\n").encode()
    n = max(1, (size - len(head)) // len(turn))
    path = os.path.join(d, cid + ".jsonl")
    with open(path, "wb") as f:
        f.write(head + turn * n)
    os.chmod(path, 0o600)
    return path


class Prober:
    """GET /v1/health, one after the other on a keep-alive connection, on
    a thread: the slowest answer is what a client waits at worst."""

    REQ = b"GET /v1/health HTTP/1.1\r\nHost: mote\r\n\r\n"

    def __init__(self, sock_path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(30)
        self.s.connect(sock_path)
        self.times, self.stop, self.err = [], False, None
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def one(self):
        t0 = time.monotonic()
        self.s.sendall(self.REQ)
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = self.s.recv(4096)
            if not d:
                raise OSError("closed")
            buf += d
        head, _, body = buf.partition(b"\r\n\r\n")
        n = int([l.split(b":")[1] for l in head.split(b"\r\n")
                 if l.lower().startswith(b"content-length:")][0])
        while len(body) < n:
            d = self.s.recv(4096)
            if not d:
                raise OSError("closed")
            body += d
        check(head.split()[1] == b"200", head)
        return time.monotonic() - t0

    def run(self):
        try:
            while not self.stop:
                self.times.append(self.one())
                time.sleep(0.005)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.err = e

    def finish(self):
        self.stop = True
        self.t.join(30)
        self.s.close()
        check(self.err is None, "health probe failed: %r" % self.err)
        return self.times


def big_journals(state, njournals=24, size=4 << 20):
    """Written while the server runs: none of them was read at its start."""
    for i in range(njournals):
        write_journal(state, "big-%02d" % i, size)


def list_and_edit(s, state, edit_cid):
    """While GET /v1/conversations reads every journal and edit_file
    changes an 8 MiB file, /v1/health is asked again and again. Returns
    (health latencies, seconds the list took, the list)."""
    probe = Prober(s.sock)
    try:
        ack = s.say(edit_cid, "edit the big file")
        t0 = time.monotonic()
        st, lst = s.req("GET", "/v1/conversations?limit=100")
        took = time.monotonic() - t0
        check(st == 200, (st, lst))
        s.wait_state(edit_cid, "idle", 120)
    finally:
        times = probe.finish()
    recs = journal_of(state, edit_cid)
    res = [r for r in recs if r["t"] == "tool_result"]
    check(len(res) == 1 and not res[0].get("error") and "edited" in res[0]["text"], res)
    check(ack["offset"] > 0, ack)
    return times, took, lst


def edit_setup(state):
    big = os.path.join(state, "big.txt")
    line = b"x" * 99 + b"\n"
    with open(big, "wb") as f:
        f.write(line * ((8 << 20) // 100 - 1) + b"THE-END-MARKER\n")
    check(os.path.getsize(big) <= 8 << 20, os.path.getsize(big))
    return big, [{"tool": "edit_file", "input": {"path": big, "old_string": "THE-END-MARKER",
                                                  "new_string": "EDITED"}},
                 {"text": "done"}]


def test_health_answers_while_the_list_reads_big_journals_and_a_tool_edits():
    """The loop's promise: a step never blocks. GET /v1/conversations over
    24 journals of 4 MB, and edit_file on an 8 MiB file, are done in
    bounded steps, so /v1/health on another connection answers within
    500 ms all along (a generous bound for a loaded 2-core machine and the
    sanitizers; make bench measures the quiet figure)."""
    state = tempfile.mkdtemp(prefix="svc-", dir=TMP)
    big, script = edit_setup(state)
    port, _ = start_server(script)
    s = Serve(port, state, args=["--keep", "0", "--keep-bytes", "0", "--allow", "edit_file"])
    try:
        cid = s.create()
        big_journals(state)
        times, took, lst = list_and_edit(s, state, cid)
        ids = [c["id"] for c in lst["conversations"]]
        check(ids == sorted(["big-%02d" % i for i in range(24)] + [cid]), ids)
        one = [c for c in lst["conversations"] if c["id"] == "big-00"][0]
        check(one["state"] == "idle" and one["user_messages"] > 900 and
              one["first"].startswith("question: lorem"), one)
        check(len(times) >= 5, "health was asked %d times" % len(times))
        worst = max(times)
        print("  health: %d probes, worst %.1f ms; list %.2f s" % (len(times), worst * 1000, took))
        check(worst < 0.5, "health waited %.0f ms (list %.1f s, %d probes)" %
              (worst * 1000, took, len(times)))
        with open(big, "rb") as f:
            f.seek(-20, 2)
            check(f.read().endswith(b"EDITED\n"), "the file was edited")
    finally:
        check(s.stop() == 0, s.log())


def test_a_message_to_a_long_unloaded_conversation_never_stalls_the_others():
    """A message to a conversation only on disk loads it (its journal
    checked, its recovery decided) a budget per loop turn (a long one,
    compacted near its end, as long conversations are): /v1/health on
    another connection answers within 500 ms all along (a generous bound),
    a GET of it meanwhile waits for the load and says it is loaded, and
    the message is journaled after every old record."""
    state = tempfile.mkdtemp(prefix="svc-", dir=TMP)
    port, _ = start_server([{"text": "answered"}])
    s = Serve(port, state, args=["--keep", "0", "--keep-bytes", "0"])
    try:
        s.create()  # the server is up
        path = write_journal(state, "long-1", 64 << 20)
        with open(path, "ab") as f:  # compacted: the next request starts here
            f.write(b'{"t":"compact","summary":"a long talk about lorem ipsum","resume":false}\n')
        old = os.path.getsize(path)
        probe = Prober(s.sock)
        got = {}

        def get():
            got["r"] = s.req("GET", "/v1/conversations/long-1?records=0")

        try:
            t0 = time.monotonic()
            ack = s.say("long-1", "one more")
            took = time.monotonic() - t0
            g = threading.Thread(target=get)
            g.start()
            g.join(60)
            s.wait_state("long-1", "idle", 60)
        finally:
            times = probe.finish()
        check(ack["offset"] == old, (ack, old))
        st, body = got["r"]
        check(st == 200 and body["loaded"] is True, got["r"])
        recs = journal_of(state, "long-1")
        check(recs[-1]["t"] == "assistant" and recs[-1]["text"] == "answered" and
              [r for r in recs if r["t"] == "user"][-1]["text"] == "one more", recs[-3:])
        worst = max(times)
        print("  health: %d probes, worst %.1f ms; the message's load took %.2f s" %
              (len(times), worst * 1000, took))
        check(len(times) >= 5, "health was asked %d times" % len(times))
        check(worst < 0.5, "health waited %.0f ms while a 64 MB conversation loaded" %
              (worst * 1000))
    finally:
        check(s.stop() == 0, s.log())


def test_a_tool_start_does_not_wait_for_its_exec():
    """The POSIX port's spawn returns once the supervisor is forked: the
    child's exec (here made to take 1.5 s by strace) is not waited for, so
    /v1/health answers meanwhile; the group is still journaled, and the
    tool's output arrives."""
    port, _ = start_server([{"tool": "shell", "input": {"command": "echo started-fine"}},
                            {"text": "done"}])
    trace = os.path.join(TMP, "strace.%d" % time.time_ns())
    prefix = strace_cmd(trace, "execve", follow=True) + [
        "-e", "inject=execve:delay_enter=1500000"]
    s = Serve(port, args=["--allow", "shell"], prefix=prefix,
              env_more={"ASAN_OPTIONS": "detect_leaks=0"})
    try:
        cid = s.create()
        probe = Prober(s.sock)
        try:
            s.say(cid, "run it")
            s.wait_state(cid, "idle", 60)
        finally:
            times = probe.finish()
        recs = journal_of(s.state, cid)
        starts = [r for r in recs if r["t"] == "tool_start" and r.get("pgid", 0) > 0]
        res = [r for r in recs if r["t"] == "tool_result"]
        check(starts and res and "started-fine" in res[0]["text"], recs)
        check(max(times) < 0.5, "health waited %.0f ms while a tool's exec took 1.5 s" %
              (max(times) * 1000))
    finally:
        # the signal to mote itself (strace's child); strace ends with it
        with open("/proc/%d/task/%d/children" % (s.p.pid, s.p.pid)) as f:
            kids = [int(x) for x in f.read().split()]
        for k in kids:
            os.kill(k, signal.SIGTERM)
        check(s.wait(60) == 0, s.log())


# ---- secrets --------------------------------------------------------------------

SHIM = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

/* getrandom at early boot: the pool is not ready until SHIM_READY_FILE
 * exists; a blocking call (which would hang for minutes) is counted in
 * SHIM_BLOCKED_FILE and answered from the real pool. */
ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
    const char *ready = getenv("SHIM_READY_FILE");

    if (ready == NULL || access(ready, F_OK) != 0) {
        if (flags & GRND_NONBLOCK) {
            errno = EAGAIN;
            return -1;
        }
        if (getenv("SHIM_BLOCKED_FILE") != NULL)
            close(open(getenv("SHIM_BLOCKED_FILE"), 01 | 0100, 0600));
    }
    return syscall(SYS_getrandom, buf, len, flags);
}
"""


def shim():
    so = os.path.join(TMP, "early_boot.so")
    if not os.path.exists(so):
        src = os.path.join(TMP, "early_boot.c")
        with open(src, "w") as f:
            f.write(SHIM)
        r = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, src],
                           capture_output=True, text=True)
        check(r.returncode == 0, r.stderr)
    return so


def early_boot_env(ready_file, blocked_file, wait_ms):
    return {"LD_PRELOAD": shim(), "SHIM_READY_FILE": ready_file,
            "SHIM_BLOCKED_FILE": blocked_file, "MOTE_SERVE_SECRET_WAIT_MS": str(wait_ms),
            "ASAN_OPTIONS": "verify_asan_link_order=0:detect_leaks=1"}


def test_the_token_waits_for_the_kernels_pool_or_the_start_fails():
    """At early boot getrandom says "not yet": the token file is never made
    from the clock-seeded fallback. mote serve waits for the pool (a bound:
    MOTE_SERVE_SECRET_WAIT_MS) and makes it once the pool is ready, or
    exits 1 saying why, with no token file."""
    port, _ = start_server()
    ready = os.path.join(TMP, "pool-ready.%d" % time.time_ns())
    blocked = os.path.join(TMP, "blocked.%d" % time.time_ns())
    # never ready within the bound: no token, a clear message, exit 1
    s = Serve(port, args=["--listen", "127.0.0.1:0"], wait=False,
              env_more=early_boot_env(ready, blocked, 1500))
    wait_for(lambda: s.p.poll() is not None or "listening on" in s.log(), "the start's end", 30)
    if s.p.poll() is None:
        s.kill(signal.SIGKILL)
    code = s.wait(30)
    check(code == 1, "it served with a token made before the pool was ready: %s" % s.log())
    check("not seeded after 1500 ms" in s.log() and "MOTE_SERVE_TOKEN" in s.log(), s.log())
    check(not os.path.exists(os.path.join(s.state, "serve.token")), "no token file was made")
    check(not os.path.exists(blocked), "no blocking getrandom")
    # ready after a moment: the token is made then, from the pool
    s = Serve(port, args=["--listen", "127.0.0.1:0"], wait=False,
              env_more=early_boot_env(ready, blocked, 20000))
    try:
        wait_for(lambda: "waiting for the kernel's random generator" in s.log(), "the wait", 20)
        check(not os.path.exists(os.path.join(s.state, "serve.token")), "not before the pool")
        open(ready, "w").close()
        wait_for(lambda: "listening on" in s.log(), "mote serve to listen", 20)
        tok = open(os.path.join(s.state, "serve.token")).read().strip()
        check(len(tok) == 64 and all(ch in "0123456789abcdef" for ch in tok), tok)
        check(not os.path.exists(blocked), "no blocking getrandom")
    finally:
        check(s.stop() == 0, s.log())


# ---- the socket's group --------------------------------------------------------------

CLIENT = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: mote\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
    print(data.split(b"\r\n")[0].decode() if data else "closed")
except OSError as e:
    print("refused: %s" % e)
"""


def as_user(uid, gid, groups, argv, **kw):
    return subprocess.run(["setpriv", "--reuid", str(uid), "--regid", str(gid),
                           "--groups" if groups else "--clear-groups"] +
                          ([",".join(str(g) for g in groups)] if groups else []) + argv,
                          capture_output=True, text=True, timeout=60, **kw)


def test_socket_group_serves_its_members_and_no_one_else():
    """--socket-group GROUP: the socket is 0660 with that group, and the
    peer check serves the group's members (by their primary or a
    supplementary group) besides mote's user and root; anyone else is
    refused. mote runs as an unprivileged user here (setpriv), a member
    of the group; the clients as three other users."""
    if os.geteuid() != 0 or subprocess.run(["which", "setpriv"], capture_output=True).returncode:
        raise Skip("needs root and setpriv to play several users")
    group = "mote-sock-%d" % os.getpid()
    r = subprocess.run(["groupadd", group], capture_output=True, text=True)
    if r.returncode != 0:
        raise Skip("groupadd failed: %s" % r.stderr.strip())
    try:
        import grp
        gid = grp.getgrnam(group).gr_gid
        base = 47000 + os.getpid() % 1000
        mote_uid, member, primary, stranger = base, base + 1, base + 2, base + 3
        top = tempfile.mkdtemp(prefix="svc-grp-", dir="/tmp")
        os.chmod(top, 0o755)
        state = os.path.join(top, "state")
        os.mkdir(state, 0o700)
        os.chown(state, mote_uid, mote_uid)
        sockdir = os.path.join(top, "run")
        os.mkdir(sockdir, 0o750)
        os.chown(sockdir, mote_uid, gid)
        sock = os.path.join(sockdir, "mote.sock")
        client = os.path.join(top, "client.py")
        with open(client, "w") as f:
            f.write(CLIENT)
        os.chmod(client, 0o644)
        prefix = ["setpriv", "--reuid", str(mote_uid), "--regid", str(mote_uid), "--groups",
                  str(gid), "--inh-caps=-all"]
        port, _ = start_server()
        s = Serve(port, state, args=["--socket", sock, "--socket-group", group], prefix=prefix)
        s.sock = sock
        try:
            st = os.lstat(sock)
            check(oct(st.st_mode & 0o777) == "0o660" and st.st_gid == gid and
                  st.st_uid == mote_uid, (oct(st.st_mode), st.st_gid, st.st_uid))
            py = [sys.executable, client, sock]
            out = as_user(member, member, [gid], py).stdout.strip()
            check(out.startswith("HTTP/1.1 200"), "a supplementary member: %r" % out)
            out = as_user(primary, gid, None, py).stdout.strip()
            check(out.startswith("HTTP/1.1 200"), "a member by its primary group: %r" % out)
            out = as_user(stranger, stranger, None, py).stdout.strip()
            check(out.startswith("refused") or out == "closed", "a stranger: %r" % out)
            check(s.req("GET", "/v1/health")[0] == 200, "root is served")
        finally:
            check(s.stop() == 0, s.log())
        check(not os.path.exists(sock), "the socket is removed at exit")
        # a group that does not exist: a usage error, before anything is served
        r = subprocess.run([MOTE, "serve", "--state-dir", tempfile.mkdtemp(dir=TMP),
                            "--socket-group", "no-such-group-%d" % os.getpid()],
                           capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, ANTHROPIC_API_KEY="sk-ant-x"))
        check(r.returncode == 2 and "no group" in r.stderr, (r.returncode, r.stderr))
    finally:
        subprocess.run(["groupdel", group], capture_output=True)


# ---- one meaning per word -------------------------------------------------------------

def test_retry_with_nothing_to_retry_is_refused():
    """POST .../retry sends the conversation again when its last turn
    failed or was cut; on a finished one (the request would end with the
    model's own answer: a prefill) or one where nothing was said it is
    409 nothing_to_retry, and nothing is written or sent."""
    port, log = start_server([{"text": "first answer"}, {"status": 400}, {"text": "again"}])
    s = Serve(port)
    try:
        fresh = s.create()
        st, b = s.req("POST", "/v1/conversations/%s/retry" % fresh)
        check(st == 409 and b["error"] == "nothing_to_retry", (st, b))
        cid = s.create()
        s.say(cid, "hello")
        s.wait_state(cid, ("idle", "error"))
        before = journal_of(s.state, cid)
        st, b = s.req("POST", "/v1/conversations/%s/retry" % cid)
        check(st == 409 and b["error"] == "nothing_to_retry", (st, b))
        check(journal_of(s.state, cid) == before, "nothing written")
        s.say(cid, "fail now")
        s.wait_state(cid, "error")
        st, b = s.req("POST", "/v1/conversations/%s/retry" % cid)
        check(st == 202, (st, b))
        s.wait_state(cid, "idle")
        types = [r["t"] for r in journal_of(s.state, cid)]
        check(types[-1] == "assistant" and types.count("assistant") == 2 and
              "assistant" not in [types[i] for i in range(len(types) - 1)
                                  if types[i + 1] == "assistant"], types)
    finally:
        check(s.stop() == 0, s.log())


def test_status_codes_location_and_the_state_after_a_cancel():
    """201 has a Location; an approval is taken like a message, a retry or
    a cancel: 202; the cancel's body says the state it leaves (the turn
    ends: idle), not the one it found."""
    port, log = start_server([{"stall": 30, "after_text": "never"},
                              {"tool": "write_file", "input": {"path": "/nonexistent/x",
                                                               "content": "x"}},
                              {"text": "done"}])
    s = Serve(port, args=["--ask", "write_file"])
    try:
        c = UConn(s.sock)
        c.request("POST", "/v1/conversations", body="{}")
        r = c.getresponse()
        body = json.loads(r.read())
        c.close()
        check(r.status == 201 and r.getheader("Location") == "/v1/conversations/" + body["id"],
              (r.status, r.getheaders()))
        cid = body["id"]
        s.say(cid, "stall")
        s.wait_state(cid, ("llm_requesting", "streaming"))
        # the state is llm_requesting before the request reaches the server:
        # cancelled sooner, the stall would answer the next message instead
        wait_for(lambda: len(requests_in(log)) == 1, "the first request at the server")
        st, b = s.req("POST", "/v1/conversations/%s/cancel" % cid)
        check(st == 202 and b["state"] == "idle", (st, b))
        s.wait_state(cid, "idle")
        s.say(cid, "write")
        s.wait_state(cid, "awaiting_approval")
        call = s.conv(cid, records=False)["approval"]["call_id"]
        st, b = s.answer(cid, call, "no")
        check(st == 202 and b["answer"] == "no", (st, b))
        s.wait_state(cid, "idle")
    finally:
        check(s.stop() == 0, s.log())


def test_usage_is_named_one_way():
    """The assistant record's usage and the turn_end event's use the same
    names (input_tokens, output_tokens, ...)."""
    port, _ = start_server([{"text": "counted", "input_tokens": 7, "cache_read": 3}])
    s = Serve(port)
    try:
        cid = s.create()
        ev = Events(s.sock, cid, "?from=0")
        s.say(cid, "hi")
        end = ev.wait(lambda e: e["event"] == "turn_end", "turn_end")[0]["json"]["usage"]
        rec = [r for r in journal_of(s.state, cid) if r["t"] == "assistant"][0]["usage"]
        check(set(rec) <= set(end) and rec["input_tokens"] == end["input_tokens"] == 7 and
              rec["cache_read_tokens"] == 3, (rec, end))
        ev.close()
    finally:
        check(s.stop() == 0, s.log())


def test_the_shutdown_log_says_stopped_once():
    port, _ = start_server()
    s = Serve(port)
    check(s.stop() == 0, s.log())
    check(s.log().count("stopped") == 1, s.log())


def test_connections_cannot_take_the_watches_of_a_turn():
    """Connections and the watches a turn needs share the loop's table:
    the build refuses MOTE_SERVE_MAX_CONNS that would leave less than
    MOTE_WATCH_RESERVE; with every connection taken, a turn with a tool
    still runs."""
    inc = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "include")
    src = os.path.join(TMP, "cfg.c")
    with open(src, "w") as f:
        f.write('#include "mote/mote_config.h"\nint x;\n')
    ok = subprocess.run(["cc", "-fsyntax-only", "-I" + inc, src], capture_output=True, text=True)
    check(ok.returncode == 0, ok.stderr)
    bad = subprocess.run(["cc", "-fsyntax-only", "-I" + inc, "-DMOTE_SERVE_MAX_CONNS=62", src],
                         capture_output=True, text=True)
    check(bad.returncode != 0 and "MOTE_MAX_WATCHES" in bad.stderr,
          "62 connections with 64 watches built: %s" % bad.stderr)
    port, _ = start_server([{"tool": "shell", "input": {"command": "echo from-the-tool"}},
                            {"text": "done"}])
    s = Serve(port, args=["--allow", "shell"],
              env_more={"MOTE_SERVE_HEADER_TIMEOUT_MS": "60000"})
    idle = []
    try:
        cid = s.create()
        keep = UConn(s.sock)
        keep.connect()
        while True:  # every slot taken: the next one is refused
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(10)
            c.connect(s.sock)
            idle.append(c)
            if len(idle) > 40:
                break
            h = json.loads(http_get_on(keep, "/v1/health"))
            if h["connections"]["open"] >= h["connections"]["max"]:
                break
        check(h["connections"]["open"] == h["connections"]["max"], h)
        keep.request("POST", "/v1/conversations/%s/messages" % cid,
                     body=json.dumps({"text": "run it"}))
        r = keep.getresponse()
        r.read()
        check(r.status == 202, r.status)
        wait_for(lambda: [x for x in journal_of(s.state, cid) if x["t"] == "assistant" and
                          x.get("text") == "done"], "the turn to end", 30)
        res = [x for x in journal_of(s.state, cid) if x["t"] == "tool_result"]
        check(res and "from-the-tool" in res[0]["text"] and not res[0].get("error"), res)
        keep.close()
    finally:
        for c in idle:
            c.close()
        check(s.stop() == 0, s.log())


def http_get_on(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    return r.read()


# ---- the agent's part: states and records ------------------------------------------------

def test_a_call_waiting_for_approval_is_never_told_as_executing_first():
    """The first state a client sees for a call that waits for approval is
    awaiting_approval, never tool_executing."""
    port, _ = start_server([{"tool": "write_file", "input": {"path": "/nonexistent/y",
                                                             "content": "y"}},
                            {"text": "done"}])
    s = Serve(port, args=["--ask", "write_file"])
    try:
        cid = s.create()
        ev = Events(s.sock, cid)
        ev.wait(lambda e: e["event"] == "state", "the first state")
        s.say(cid, "write")
        ev.wait(lambda e: e["event"] == "approval", "the approval event")
        states = [e["json"]["state"] for e in ev.all() if e["event"] == "state"]
        tools = [x for x in states if x in ("tool_executing", "awaiting_approval")]
        check(tools and tools[0] == "awaiting_approval", states)
        ev.close()
    finally:
        s.stop()


def test_one_tool_start_record_per_call():
    """docs/JOURNAL.md: one tool_start per call, with the real process
    group."""
    port, _ = start_server([{"tool": "shell", "input": {"command": "echo one"}},
                            {"text": "done"}])
    s = Serve(port, args=["--allow", "shell"])
    try:
        cid = s.create()
        s.say(cid, "run")
        wait_for(lambda: [x for x in journal_of(s.state, cid) if x["t"] == "assistant" and
                          x.get("text") == "done"], "the turn to end", 30)
        starts = [x for x in journal_of(s.state, cid) if x["t"] == "tool_start"]
        check(len(starts) == 1 and starts[0]["pgid"] > 0, starts)
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(run_all("service", dict(globals())))
