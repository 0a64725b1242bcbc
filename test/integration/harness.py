"""Shared pieces of mote's integration tests: the local test LLM server,
its request log, and a tiny runner that prints one line per test and the
"N passed, M failed" summary."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(ROOT, "test", "llm_server.py")
TMP = tempfile.mkdtemp(prefix="mote-it-")
SERVERS = []
NOTES = []


class Skip(Exception):
    """Raised by a test that cannot run here (it is counted as skipped)."""


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def start_server(script=None, cert=None, host="127.0.0.1", certs_dir=None):
    """Starts test/llm_server.py; returns (port, request log path)."""
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
    proc = subprocess.Popen(cmd)
    SERVERS.append(proc)
    deadline = time.time() + 10
    while not os.path.exists(port_file):
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    with open(port_file) as f:
        return int(f.read()), log


def requests_in(log):
    """The requests the server received, in order."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_all(group, namespace, setup=None):
    """Runs every test_* function of `namespace`; returns the exit code."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    tests = [v for k, v in namespace.items() if k.startswith("test_") and callable(v)]
    try:
        if setup is not None:
            setup()
        for fn in tests:
            name = fn.__name__[5:]
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
