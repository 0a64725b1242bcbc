"""Shared pieces of mote's integration tests: the local test LLM server,
its request log, and a tiny runner that prints one line per test and the
"N passed, M failed" summary."""
import json
import os
import pty
import select
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(ROOT, "test", "llm_server.py")
FAKE_MCP = os.path.join(ROOT, "test", "fake_mcp.py")
TMP = tempfile.mkdtemp(prefix="mote-it-")
SERVERS = []
NOTES = []


class Skip(Exception):
    """Raised by a test that cannot run here (it is counted as skipped)."""


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def start_server(script=None, cert=None, host="127.0.0.1", certs_dir=None, extra=()):
    """Starts test/llm_server.py (with `extra` options); returns (port,
    request log path)."""
    n = len(SERVERS)
    port_file = os.path.join(TMP, "port.%d" % n)
    log = os.path.join(TMP, "log.%d" % n)
    cmd = [sys.executable, SERVER, "--host", host, "--port-file", port_file, "--log", log,
           "--lifetime", "300"]
    if script is not None:
        path = os.path.join(TMP, "script.%d.json" % n)
        with open(path, "w") as f:
            json.dump(script, f)
        cmd += ["--script", path]
    if cert:
        cmd += ["--cert", os.path.join(certs_dir, cert + ".crt"),
                "--key", os.path.join(certs_dir, cert + ".key")]
    proc = subprocess.Popen(cmd + list(extra))
    SERVERS.append(proc)
    deadline = time.time() + 60  # a Python start on a loaded machine took over 10 s
    while not os.path.exists(port_file):
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    with open(port_file) as f:
        return int(f.read()), log


def requests_in(log):
    """The requests the server received, in order. (A line the server is
    still writing - a big one goes out in several writes - has no newline
    yet: it is not one yet.)"""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip() and line.endswith("\n")]


def mote_env(key, openai=False, **more):
    """The environment mote runs in under test: the caller's, without any
    API key or proxy of the machine's, with `key` as the provider's key
    (OPENAI_API_KEY with `openai`), no colours, and `more`."""
    e = {k: v for k, v in os.environ.items()
         if not k.endswith("_API_KEY") and k.lower() not in ("https_proxy", "http_proxy",
                                                              "no_proxy", "all_proxy")}
    e["OPENAI_API_KEY" if openai else "ANTHROPIC_API_KEY"] = key
    e["NO_COLOR"] = "1"
    e.update(more)
    return e


def journal_files(state):
    """The conversations' journals in STATE/conversations, by name ([]
    while the directory does not exist yet)."""
    d = os.path.join(state, "conversations")
    if not os.path.isdir(d):
        return []
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".jsonl")]


def journal_file(path):
    """One journal's records: every line parsed strictly, the file ending
    with a whole line. [] for a journal not there (yet) or empty (an
    older mote's leftover)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    if not data:
        return []
    check(data.endswith(b"\n"), "the journal ends with a complete line: %r" % data[-80:])
    return [json.loads(line.decode("utf-8"), strict=True) for line in data.split(b"\n")[:-1]]


def journal(state, single=True):
    """The records of the journal in STATE/conversations: with `single`,
    the one conversation's (more than one fails); else every journal's,
    by name. [] while there is none yet, so a test can wait for a record
    (wait_for) from the moment it starts mote."""
    files = journal_files(state)
    if single:
        check(len(files) <= 1, "one conversation expected: %s" % files)
    return [r for f in files for r in journal_file(f)]


def journal_of(state, cid):
    """The records of conversation `cid`'s journal ([] while it does not
    exist yet)."""
    return journal_file(os.path.join(state, "conversations", cid + ".jsonl"))


def tool_results(body):
    """The tool results (Anthropic blocks) of a request's body."""
    out = []
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            out += [b for b in m["content"] if b.get("type") == "tool_result"]
    return out


def result_text(block):
    """A tool result block's text (a string, or its text parts)."""
    c = block.get("content", "")
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)


def request_results(log, n):
    """The tool results the model got in request n (0-based) of a server's
    log."""
    return tool_results(requests_in(log)[n]["body"])


def run_all(group, namespace, setup=None):
    """Runs every test_* function of `namespace`; returns the exit code."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    tests = [v for k, v in namespace.items() if k.startswith("test_") and callable(v)]
    only = os.environ.get("MOTE_TEST_ONLY")  # a substring: run only those (by hand)
    if only:
        tests = [t for t in tests if only in t.__name__]
    shard = os.environ.get("MOTE_TEST_SHARD")  # "K/N": every Nth test from the Kth (make check)
    if shard:
        k, n = (int(x) for x in shard.split("/"))
        if not 1 <= k <= n:
            raise SystemExit("MOTE_TEST_SHARD=%s: K/N with 1 <= K <= N" % shard)
        tests = tests[k - 1::n]
        group = "%s (part %d of %d)" % (group, k, n)
    try:
        if setup is not None:
            setup()
        times = os.environ.get("MOTE_TEST_TIMES")  # a file: each test's wall and CPU (by hand)
        for fn in tests:
            name = fn.__name__[5:]
            if times:
                t0 = (time.monotonic(), os.times())
            try:
                fn()
            except Skip as e:
                counts["skipped"] += 1
                print("skip %s: %s" % (name, e))
                continue
            except Exception as e:  # noqa: BLE001 - report and go on
                counts["failed"] += 1
                print("FAIL %s: %s" % (name, e if isinstance(e, AssertionError) else repr(e)))
                continue
            counts["passed"] += 1
            print("ok   %s" % name)
            if times:
                t1 = os.times()
                with open(times, "a") as f:
                    f.write("%.2f %.2f %s %s\n" % (
                        time.monotonic() - t0[0],
                        sum(t1[:4]) - sum(t0[1][:4]), group, name))
    finally:
        for s in SERVERS:
            s.kill()
            s.wait()
        shutil.rmtree(TMP, ignore_errors=True)
    for n in NOTES:
        print("note: " + n)
    print("%s: %d passed, %d failed, %d skipped" % (group, counts["passed"], counts["failed"],
                                                   counts["skipped"]))
    return 0 if counts["failed"] == 0 else 1


def config_value(name):
    """A limit's default from include/mote/mote_config.h (an int)."""
    import re
    with open(os.path.join(ROOT, "include", "mote", "mote_config.h")) as f:
        m = re.search(r"#define %s \(?(\d+)" % name, f.read())
    return int(m.group(1))


def big_tool_list(extra_base=0):
    """A tools/list answer (a JSON file in TMP) over MOTE_MCP_LINE_MAX bytes
    and MOTE_JSON_MAX_TOKENS values: tools with long descriptions and
    many-valued schemas (as many as the table takes, besides `extra_base`
    tools the server has already), one entry alone over the buffer ("huge"),
    one schema over MOTE_MCP_SCHEMA_MAX ("wide") and one of more values than
    MOTE_JSON_MAX_TOKENS ("many") in the middle. Returns (file, names of the
    ordinary tools)."""
    line_max, tokens = config_value("MOTE_MCP_LINE_MAX"), config_value("MOTE_JSON_MAX_TOKENS")
    n = config_value("MOTE_MCP_MAX_TOOLS") - extra_base
    tools, names = [], []
    for i in range(n):
        if i == n // 2:
            tools.append({"name": "huge", "description": "h" * (line_max + 4096),
                          "inputSchema": {"type": "object"}})
            tools.append({"name": "wide", "description": "A schema over the limit.",
                          "inputSchema": {"type": "object", "properties": {
                              "q%03d" % k: {"type": "string",
                                            "description": "a property of some length"}
                              for k in range(60)}}})
            tools.append({"name": "many", "description": "A schema of many values.",
                          "inputSchema": {"type": "object", "properties": {
                              "m%04d" % k: {"type": "string"} for k in range(tokens)}}})
        tools.append({"name": "t%02d" % i, "description": ("Tool %d. " % i) + "d" * 4000,
                      "inputSchema": {"type": "object", "properties": {
                          "p%d" % k: {"type": "string"} for k in range(15)}}})
        names.append("t%02d" % i)
    text = json.dumps(tools)
    check(len(text) > 2 * line_max and text.count(":") > tokens, "the list is large")
    path = os.path.join(TMP, "big-list-%s.json" % uuid.uuid4().hex[:6])
    with open(path, "w") as f:
        f.write(text)
    return path, names


def strace_cmd(log, calls, follow=False):
    """The strace prefix that records `calls` (with file kinds, -y) into
    `log`. strace is a test dependency (scripts/deps.sh); where tracing is
    not allowed (no ptrace in a container) the test is skipped, said so."""
    if shutil.which("strace") is None:
        raise AssertionError("strace is missing: make deps installs it")
    if subprocess.run(["strace", "-qq", "-o", os.devnull, "true"]).returncode != 0:
        raise Skip("strace cannot trace here (ptrace not allowed)")
    return ["strace", "-qq", "-y", "-e", "trace=" + calls, "-o", log] + (["-f"] if follow else [])


def wait_for(cond, what, timeout=30):
    """Polls cond() until it is true (bounded); returns its value."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def free_port():
    """A TCP port of 127.0.0.1 that was free a moment ago (nothing listens
    there now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shut(*socks):
    """Both ways of each socket shut (one already gone is no error)."""
    for x in socks:
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def pump(src, dst):
    """Relays what `src` receives to `dst` until `src` ends or fails; then
    shuts both (which ends the pump the other way too)."""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    shut(src, dst)


def wait_listening(port, proc, timeout=30):
    """Waits (bounded) until something accepts on 127.0.0.1:`port`; False
    when `proc` (the server started for it) exited or the time ran out."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def proc_status(pid, key):
    """A field of /proc/PID/status in kB (VmRSS, VmHWM); 0 when absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def mcp_config(servers):
    """An --mcp-config file (in TMP) naming `servers`; returns its path."""
    path = os.path.join(TMP, "mcp-%s.json" % uuid.uuid4().hex[:8])
    with open(path, "w") as f:
        json.dump({"mcpServers": servers}, f)
    return path


def fake_mcp(*flags):
    """An MCP server entry running test/fake_mcp.py with `flags`."""
    return {"command": sys.executable, "args": [FAKE_MCP] + list(flags)}


def build_shim(name, what):
    """test/shim/NAME.c built into TMP as a library for LD_PRELOAD (once);
    Skip, naming `what`, where it cannot be built."""
    so = os.path.join(TMP, name + ".so")
    if not os.path.exists(so):
        r = subprocess.run(["cc", "-shared", "-fPIC", "-o", so,
                            os.path.join(ROOT, "test", "shim", name + ".c"), "-ldl"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Skip("cannot build the %s: %s" % (what, r.stderr[-200:]))
    return so


def read_until(proc, what, timeout=30):
    """Reads a child's stdout (a pipe) until `what` has come; returns what
    was read, which communicate() will not return again. Bounded."""
    fd = proc.stdout.fileno()
    got = b""
    deadline = time.time() + timeout
    while what.encode() not in got:
        left = deadline - time.time()
        if left <= 0:
            raise AssertionError("no %r on stdout: %r" % (what, got[-300:]))
        r, _, _ = select.select([fd], [], [], left)
        if r:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError("stdout ended before %r: %r" % (what, got[-300:]))
            got += chunk
    return got.decode()


class Pty:
    def __init__(self, args, e):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(args[0], args, e)
        self.out = b""

    def read_until(self, what, timeout=15, since=0):
        """Waits until `what` is in the output (from offset `since`)."""
        deadline = time.time() + timeout
        while what.encode() not in self.out[since:]:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("pty: no %r in %r" % (what, self.out[-300:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError("pty closed before %r: %r" % (what, self.out[-300:]))
                self.out += chunk
        return time.time()

    def send(self, s, timeout=15):
        """Types `s`, reading the output meanwhile (a long input would
        otherwise fill both directions of the pty and block both sides)."""
        data = s.encode()
        deadline = time.time() + timeout
        while data:
            if time.time() > deadline:
                raise AssertionError("pty: input not taken: %d bytes left" % len(data))
            r, w, _ = select.select([self.fd], [self.fd], [], 0.2)
            if r:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    pass
            if w:
                data = data[os.write(self.fd, data[:1024]):]

    def read_count(self, what, n, timeout=15):
        """Waits until `what` was seen `n` times in all."""
        deadline = time.time() + timeout
        while self.out.count(what.encode()) < n:
            if time.time() > deadline:
                raise AssertionError("pty: %r not seen %d times in %r" % (what, n, self.out[-300:]))
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    self.out += os.read(self.fd, 4096)
                except OSError:
                    pass

    def wait(self, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                try:
                    while os.read(self.fd, 4096):
                        pass
                except OSError:
                    pass
                return os.waitstatus_to_exitcode(st)
            try:
                r, _, _ = select.select([self.fd], [], [], 0.05)
                if r:
                    self.out += os.read(self.fd, 4096)
            except OSError:
                time.sleep(0.02)
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError("pty child did not exit")
