#!/usr/bin/env python3
"""Regression tests of the defects listed in issue 10 ("Defects to fix on
the way"): the real mote binary against the local test LLM server.

    test_issue10.py BUILDDIR
Prints one line per test and "N passed, M failed". Each test asserts what a
user sees (files, exit codes, output, what reached the model), not the
journal's exact record sequence.
"""
import json
import os
import pty
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from harness import ROOT, TMP, Skip, check, requests_in, run_all, start_server
from test_agent import MOTE, env, journal, mote_args, new_state, run, wait_for


# ---- helpers --------------------------------------------------------------------

class Tty:
    """mote on a pty. read_until looks for a string after a given offset of
    everything read so far, so the same prompt can be waited for again."""

    def __init__(self, args, e):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(args[0], args, e)
        self.out = b""
        self.code = None

    def pump(self, timeout):
        r, _, _ = select.select([self.fd], [], [], max(timeout, 0))
        if not r:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        self.out += chunk
        return bool(chunk)

    def read_until(self, what, start=0, timeout=20):
        deadline = time.time() + timeout
        while what.encode() not in self.out[start:]:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("pty: no %r in %r" % (what, self.out[-400:]))
            if not self.pump(left):
                raise AssertionError("pty closed before %r: %r" % (what, self.out[-400:]))
        return self.out.index(what.encode(), start)

    def send(self, s):
        os.write(self.fd, s.encode())

    def close(self):
        """Ends mote if a failed test left it running: no process stays behind."""
        if self.code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            os.close(self.fd)
            self.code = -signal.SIGKILL

    def wait(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self.pump(0.05):
                    pass
                os.close(self.fd)
                self.code = os.waitstatus_to_exitcode(st)
                return self.code
            self.pump(0.05)
        self.close()
        raise AssertionError("mote did not exit in %d s: %r" % (timeout, self.out[-400:]))


def spawn_bin(args, e=None):
    """mote with binary pipes (stdin at end of input)."""
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=e or env())


def read_fd_until(fd, what, timeout=20):
    """Reads a pipe until `what` (bytes) was seen; returns what was read."""
    got = b""
    deadline = time.time() + timeout
    while what not in got:
        left = deadline - time.time()
        check(left > 0, "no %r on the pipe: %r" % (what, got[-300:]))
        r, _, _ = select.select([fd], [], [], left)
        if r:
            chunk = os.read(fd, 65536)
            check(chunk, "the pipe closed before %r: %r" % (what, got[-300:]))
            got += chunk
    return got


def blocks(msg):
    """A message's content as a list of blocks (a string is one text block)."""
    c = msg.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return c or []


def flat(messages):
    """(role, block type, text) for every block of every message, in order."""
    out = []
    for m in messages:
        for b in blocks(m):
            t = b.get("type")
            if t == "tool_result":
                c = b.get("content")
                if isinstance(c, list):
                    c = "".join(x.get("text", "") for x in c)
                out.append((m.get("role"), t, str(c), b))
            else:
                out.append((m.get("role"), t, b.get("text", ""), b))
    return out


def tool_results(body):
    return [x for x in flat(body.get("messages") or []) if x[1] == "tool_result"]


def journal_bytes(state):
    data = b""
    for root, _, files in os.walk(state):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                data += fh.read()
    return data


def tool_started(state):
    """The tool_start records with a process group, once the journal has them."""
    try:
        return [r for r in journal(state) if r["t"] == "tool_start" and r.get("pgid", 0) > 0]
    except (AssertionError, ValueError, OSError):
        return None


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def new_dir():
    return tempfile.mkdtemp(prefix="d-", dir=TMP)


def tool_after_text(text, delay_ms, after):
    """A test server whose first answer streams `text` (`delay_ms` between
    pieces) and then asks to touch a marker file, its second `after`:
    (port, request log, the marker's path)."""
    marker = os.path.join(new_dir(), "MARKER")
    port, log = start_server([
        {"text": text, "delay_ms": delay_ms, "tool": "shell",
         "input": {"command": "touch " + marker}},
        {"text": after}])
    return port, log, marker


# ---- 1. approval takes no type-ahead --------------------------------------------

def test_approval_ignores_type_ahead():
    port, log, marker = tool_after_text("one two three four five six seven eight", 120,
                                        "answer-after-the-tool-round")
    t = Tty(mote_args(port, new_state()), env())
    try:
        t.read_until("> ")
        t.send("do it\r")
        pos = t.read_until("one ")
        t.pump(0)
        check(b"run it?" not in t.out, "test invalid: the question came before the type-ahead")
        t.send("y\r")  # typed while the answer streams, before any question
        q = t.read_until("run it?", pos)
        t.send("n\r")
        t.read_until("answer-after-the-tool-round", q)
        t.send("/quit\r")
        code = t.wait()
    finally:
        t.close()
    check(not os.path.exists(marker), "the type-ahead 'y' answered the question: the tool ran")
    reqs = requests_in(log)
    check(len(reqs) >= 2 and "refused" in json.dumps(reqs[1]["body"]),
          "the refusal reached the model")
    check(code == 0, "exit %r" % code)


# ---- 2. a user's cancel ends the turn; recovery never re-sends it ---------------

def continue_sends_nothing(state):
    port2, log2 = start_server()
    q = run(mote_args(port2, state, "--continue"), stdin="", timeout=30)
    check(q.returncode == 0, (q.returncode, q.stderr))
    n = len(requests_in(log2))
    check(n == 0, "--continue sent %d request(s) for a cancelled turn: %r" % (n, q.stderr))


def test_ctrl_c_before_headers_not_resent():
    port, log = start_server([{"stall_headers": 30}])
    state = new_state()
    t = Tty(mote_args(port, state), env())
    try:
        t.read_until("> ")
        t.send("hello\r")
        wait_for(lambda: len(requests_in(log)) == 1, "the request")
        pos = len(t.out)
        os.kill(t.pid, signal.SIGINT)
        t.read_until("> ", pos)  # back at the prompt
        t.send("/quit\r")
        check(t.wait() == 0, "exit %r" % t.code)
    finally:
        t.close()
    continue_sends_nothing(state)


def test_ctrl_c_during_tool_not_resent():
    port, log = start_server([{"tool": "shell", "input": {"command": "sleep 30"}},
                              {"text": "must not be asked for"}])
    state = new_state()
    t = Tty(mote_args(port, state, "--yes"), env())
    try:
        t.read_until("> ")
        t.send("run\r")
        wait_for(lambda: tool_started(state), "the tool to start")
        pos = len(t.out)
        os.kill(t.pid, signal.SIGINT)
        t.read_until("> ", pos)
        t.send("/quit\r")
        check(t.wait() == 0, "exit %r" % t.code)
    finally:
        t.close()
    check(len(requests_in(log)) == 1, "the cancel sent nothing more")
    continue_sends_nothing(state)


# ---- 3. after a SIGTERM drain, calls that never started are "not run" ----------

def test_sigterm_drain_calls_not_started_are_not_interrupted():
    port, log, marker = tool_after_text("alpha beta gamma delta epsilon zeta", 60,
                                        "finished-after-restart")
    state = new_state()
    p = spawn_bin(mote_args(port, state, "-p", "go", "--yes", "--shutdown-timeout", "20000"))
    try:
        read_fd_until(p.stdout.fileno(), b"alpha")  # inside the stream
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(p.returncode == 143, (p.returncode, err))
    check(not os.path.exists(marker), "a tool started during the drain")
    q = run(mote_args(port, state, "--continue", "--yes"), stdin="", timeout=30)
    check("interrupted while a tool ran" not in q.stderr,
          "a call that never started was reported as interrupted: %r" % q.stderr)
    bad = [r for r in journal(state)
           if r["t"] == "tool_result" and "may or may not have run" in r.get("text", "")]
    check(not bad, "the journal says the call may have run: %r" % bad)
    check("not run" in q.stderr, "no note that the call had not run: %r" % q.stderr)
    check(os.path.exists(marker), "the call that never ran was not run now")
    check(q.returncode == 0, (q.returncode, q.stderr))


# ---- 4. --continue -p after an interrupted tool sends the new prompt ------------

def test_continue_with_prompt_after_interrupted_tool():
    port, log = start_server([{"tool": "shell", "input": {"command": "sleep 30 & sleep 31"}},
                              {"text": "answer-to-the-new-prompt"}])
    state = new_state()
    p = subprocess.Popen(mote_args(port, state, "-p", "run it", "--yes"),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env())
    try:
        wait_for(lambda: tool_started(state), "the tool to start")
    finally:
        p.kill()
        p.communicate()
    q = run(mote_args(port, state, "--continue", "-p", "new prompt"), stdin="", timeout=30)
    check(q.returncode == 0, (q.returncode, q.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 2, "%d requests: the new prompt was not sent" % len(reqs))
    items = flat(reqs[-1]["body"]["messages"])
    synth = [i for i, x in enumerate(items)
             if x[1] == "tool_result" and "may or may not have run" in x[2]]
    check(synth, "the synthetic tool result is in the request")
    after = [x for x in items[synth[-1] + 1:]
             if x[0] == "user" and x[1] == "text" and "new prompt" in x[2]]
    check(after, "the new prompt follows the synthetic result: %r" % [x[:3] for x in items])
    users = [r for r in journal(state) if r["t"] == "user" and "new prompt" in r.get("text", "")]
    check(users, "the new prompt is journaled")
    check("answer-to-the-new-prompt" in q.stdout, q.stdout)


# ---- 5. write_file keeps what a user expects of a file --------------------------

def write_file_run(path, content, timeout=30):
    port, log = start_server([{"tool": "write_file", "input": {"path": path, "content": content}},
                              {"text": "done"}])
    p = run(mote_args(port, new_state(), "-p", "write it", "--yes"), timeout=timeout)
    return p, requests_in(log)


def test_write_file_keeps_mode_0600():
    path = os.path.join(new_dir(), "secret.txt")
    with open(path, "w") as f:
        f.write("old\n")
    os.chmod(path, 0o600)
    p, _ = write_file_run(path, "new content\n")
    check(p.returncode == 0, (p.returncode, p.stderr))
    with open(path) as f:
        check(f.read() == "new content\n", "the content was replaced")
    check(mode_of(path) == 0o600, "mode %o after write_file (was 600)" % mode_of(path))


def test_write_file_writes_through_symlink():
    d = new_dir()
    target = os.path.join(d, "real.txt")
    link = os.path.join(d, "link.txt")
    with open(target, "w") as f:
        f.write("old\n")
    os.symlink("real.txt", link)
    p, _ = write_file_run(link, "through the link\n")
    check(p.returncode == 0, (p.returncode, p.stderr))
    check(os.path.islink(link) and os.readlink(link) == "real.txt",
          "the symlink was replaced by a regular file")
    with open(target) as f:
        check(f.read() == "through the link\n", "the link's target got the content")


def refused_special(path, is_kind):
    try:
        p, reqs = write_file_run(path, "data\n", timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("mote hung on write_file to %s" % path)
    check(is_kind(os.lstat(path).st_mode), "%s is no longer what it was" % path)
    check(p.returncode == 0, (p.returncode, p.stderr))
    check(len(reqs) >= 2, "the result went back to the model")
    res = tool_results(reqs[1]["body"])
    check(len(res) == 1 and res[0][3].get("is_error") is True,
          "write_file to a special file did not give an error result: %r" % [r[2] for r in res])


def test_write_file_refuses_fifo():
    path = os.path.join(new_dir(), "pipe")
    os.mkfifo(path, 0o600)
    refused_special(path, stat.S_ISFIFO)


def test_write_file_refuses_device_node():
    if os.geteuid() != 0:
        raise Skip("mknod needs root")
    path = os.path.join(new_dir(), "null-like")
    try:
        # A private node with /dev/null's numbers in a temporary directory:
        # never a real /dev entry.
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError as e:
        raise Skip("mknod is not allowed here: %s" % e)
    refused_special(path, stat.S_ISCHR)


def test_write_file_temporary_name_not_predictable():
    d, elsewhere = new_dir(), new_dir()
    target = os.path.join(d, "TARGET")
    victim = os.path.join(elsewhere, "victim")
    with open(victim, "w") as f:
        f.write("the victim's content\n")
    os.chmod(victim, 0o600)
    with open(target, "w") as f:
        f.write("old\n")
    port, log = start_server([
        {"text": "writing the file now as asked", "delay_ms": 100,
         "tool": "write_file", "input": {"path": target, "content": "attacker-chosen\n"}},
        {"text": "done"}])
    p = spawn_bin(mote_args(port, new_state(), "-p", "write it", "--yes"))
    try:
        planted = "%s.mote-tmp.%d" % (target, p.pid)
        os.symlink(victim, planted)
        with open(target) as f:
            check(f.read() == "old\n", "test invalid: the tool ran before the link was planted")
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    with open(victim) as f:
        got = f.read()
    check(got == "the victim's content\n", "write_file wrote through a planted link: %r" % got)
    check(mode_of(victim) == 0o600, "the victim's mode changed: %o" % mode_of(victim))
    check(p.returncode == 0, (p.returncode, err))


# ---- 6. the API key never reaches tools -----------------------------------------

def key_not_leaked(openai):
    secret = "sk-issue10-" + secrets.token_hex(12)
    name = "OPENAI_API_KEY" if openai else "ANTHROPIC_API_KEY"
    # A small environment, so `env` fits in one tool result whole.
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NO_COLOR": "1", name: secret}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            e[k] = os.environ[k]
    port, log = start_server([{"tool": "shell", "input": {"command": "env"}},
                              {"tool": "read_file", "input": {"path": "/proc/self/environ"}},
                              {"text": "done"}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "show me", "--yes", openai=openai), e=e)
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 3, "three requests")
    check("PATH=" in json.dumps(reqs[1]["body"]), "test invalid: env's output did not arrive")
    where = []
    if secret in p.stdout or secret in p.stderr:
        where.append("stdout/stderr")
    if secret.encode() in journal_bytes(state):
        where.append("the state directory")
    for i, r in enumerate(reqs):  # bodies only: the key belongs in the headers
        if secret in json.dumps(r["body"]):
            where.append("request %d's body" % (i + 1))
    check(not where, "the API key reached: %s" % ", ".join(where))


def test_api_key_never_reaches_tools_anthropic():
    key_not_leaked(False)


def test_api_key_never_reaches_tools_openai():
    key_not_leaked(True)


# ---- 7. terminal injection is neutralised ---------------------------------------

def test_terminal_injection_neutralised():
    text = ("hello\tworld\nsecond-line \x1b]0;pwned\x07 \x1b]52;c;aGk=\x07 \x1b[2J "
            "\r\x1b[2K> fake-prompt \u009b31m end-of-text")
    port, log = start_server([
        {"text": text, "tools": [
            {"tool": "shell", "input": {"command": "echo \x1b[31mred-word"}},
            {"tool": "evil\x1b]0;title\x07name", "input": {}}]},
        {"status": 400, "body": {"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "bad-request-words \x1b]0;pwned2\x07\x1b[2J more-words"}}}])
    p = subprocess.run(mote_args(port, new_state(), "-p", "go", "--yes"), capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=30, env=env(NO_COLOR="1"))
    out, err = p.stdout, p.stderr
    check(len(requests_in(log)) == 2, "test invalid: the API error was not reached")
    for name, data in (("stdout", out), ("stderr", err)):
        for b in (0x1b, 0x07, 0x9b):
            check(bytes([b]) not in data, "byte 0x%02x on %s: %r" % (b, name, data[-500:]))
    check(b"hello\tworld\nsecond-line" in out, "tab and newline of the text kept: %r" % out)
    check(b"end-of-text" in out, "the text is shown: %r" % out)
    check(b"red-word" in err, "the command is shown: %r" % err)
    check(b"bad-request-words" in err and b"more-words" in err, "the API error is shown: %r" % err)
    check(p.returncode == 1, (p.returncode, err))


# ---- 8. interactive mode exits 1 when the journal cannot be written -------------

def test_interactive_journal_full_exits_1():
    if os.geteuid() != 0:
        raise Skip("a private tmpfs needs root")
    if shutil.which("unshare") is None:
        raise Skip("no unshare (util-linux)")
    mnt = new_dir()
    # The state directory: a small tmpfs in a private mount namespace.
    mount = 'mount -t tmpfs -o size=32k,mode=0700 tmpfs "$0" || exit 97; exec "$@"'
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount, mnt, "true"],
                           capture_output=True, text=True, timeout=20)
    if probe.returncode != 0:
        raise Skip("no private tmpfs here: %s" % probe.stderr.strip())
    big = " ".join("w%05d" % i for i in range(6000))  # 41,999 bytes: more than the tmpfs holds
    port, log = start_server([{"text": big}])
    p = subprocess.run(["unshare", "-m", "sh", "-c", mount, mnt] + mote_args(port, mnt),
                       input="hello\n", capture_output=True, text=True, timeout=60, env=env())
    check(p.returncode != 97, "the tmpfs could not be mounted: %s" % p.stderr)
    check(len(requests_in(log)) == 1, "test invalid: the request was not sent: %s" % p.stderr)
    low = p.stderr.lower()
    check("space" in low and ("journal" in low or "conversation" in low),
          "no clear message: %r" % p.stderr[-500:])
    check(p.returncode == 1, "exit %d after the journal could not be written: %r" %
          (p.returncode, p.stderr[-300:]))


# ---- 9. no answer the model can legally send is lost or cut ---------------------

def test_long_answer_journaled_whole():
    answer = " ".join("w%05d" % i for i in range(10000)) + "."
    check(len(answer) == 70000, len(answer))
    port, log = start_server([{"text": answer}, {"text": "second answer"}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "say a lot"), timeout=60)
    check(p.returncode == 0, (p.returncode, p.stderr))
    check(answer in p.stdout, "the answer is shown whole")
    q = run(mote_args(port, state, "--continue", "-p", "next"), stdin="", timeout=60)
    check(q.returncode == 0, (q.returncode, q.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 2, "two requests")
    texts = []
    for m in reqs[1]["body"]["messages"]:
        if m.get("role") == "assistant":
            texts.append("".join(b.get("text", "") for b in blocks(m) if b.get("type") == "text"))
    check(answer in texts, "the answer sent back has %s bytes, not 70000" %
          [len(t) for t in texts])


def test_five_large_parallel_writes():
    d = new_dir()
    calls, want = [], {}
    for i in range(5):
        path = os.path.join(d, "big%d.txt" % i)
        content = "".join("file %d line %05d ......\n" % (i, n) for n in range(560))
        want[path] = content
        calls.append({"tool": "write_file", "input": {"path": path, "content": content}})
    check(all(len(c) == 14000 for c in want.values()), [len(c) for c in want.values()])
    port, log = start_server([{"tools": calls}, {"text": "all written"}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "write five files", "--yes"), timeout=60)
    check(p.returncode == 0, (p.returncode, p.stderr))
    for path, content in want.items():
        check(os.path.exists(path), "%s was not written" % path)
        with open(path) as f:
            check(f.read() == content, "%s has other content" % path)
    reqs = requests_in(log)
    check(len(reqs) == 2, "%d requests" % len(reqs))
    check(len(tool_results(reqs[1]["body"])) == 5, "five tool results in the next request")


# ---- 10. a reaped tool's pid is never signalled (beyond the brief's list) -------

def take_pid(pid, tries=100):
    """Starts `sleep 60` as the leader of a new session with exactly `pid`
    (through ns_last_pid, root only). Returns (process or None, why not)."""
    for _ in range(tries):
        if os.path.exists("/proc/%d" % pid):
            return None, "pid %d is in use" % pid
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError as e:
            return None, "cannot set ns_last_pid: %s" % e
        v = subprocess.Popen(["sleep", "60"], start_new_session=True)
        if v.pid == pid:
            return v, ""
        v.kill()
        v.wait()
    return None, "other processes took pid %d first %d times" % (pid, tries)


def test_reaped_shell_pid_never_signalled_at_shutdown():
    """A shell tool ended and was reaped; an MCP call runs when a shutdown
    times out. A process that took the shell's pid (leading its own group)
    must not be killed by the shutdown."""
    if os.geteuid() != 0:
        raise Skip("taking a given pid needs root")
    fake = os.path.join(ROOT, "test", "fake_mcp.py")
    cfg = os.path.join(new_dir(), "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"s": {"command": sys.executable, "args": [fake]}}}, f)
    port, log = start_server([{"tools": [{"tool": "shell", "input": {"command": "echo sup=$PPID"}},
                                         {"tool": "s__sleep", "input": {"seconds": 30}}]}])
    state = new_state()
    p = spawn_bin(mote_args(port, state, "-p", "x", "--yes", "--mcp-config", cfg,
                            "--shutdown-timeout", "300"))
    victim = None
    try:
        def mcp_running():
            try:
                recs = journal(state)
            except (AssertionError, ValueError, OSError):
                return None
            res = [r for r in recs if r["t"] == "tool_result" and "sup=" in r.get("text", "")]
            done = {r["id"] for r in recs if r["t"] == "tool_result"}
            mcp = [r for r in recs if r["t"] == "tool_start" and r["id"] not in done]
            return (res[0], mcp) if res and mcp else None
        res, _ = wait_for(mcp_running, "the MCP call to run after the shell tool")
        # The pid mote knows the shell by (the shell's parent) was reaped.
        sup = int(res["text"].split("sup=")[1].split()[0])
        victim, why = take_pid(sup)
        if victim is None:
            raise Skip(why)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        check(p.returncode == 143, (p.returncode, err))
        check(victim.poll() is None,
              "the shutdown killed pid %d's group, a stranger after the tool was reaped" % sup)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if victim is not None and victim.poll() is None:
            victim.kill()
            victim.wait()


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("issue10", globals())


if __name__ == "__main__":
    sys.exit(main())
