"""The schedules' kill sweep, shared by make check (a bounded handful of
runs: test_unattended.py) and the benchmark (make bench-sched, at least
100 runs): `mote serve` runs a schedule that fires every 2 s, each
occurrence in a conversation of its own, and is killed with SIGKILL at
random moments and started again (after about a third of the kills only
after a pause of one to three intervals: occurrences missed while it is
down, one caught up, the rest skipped); at the end every occurrence up to the
last one journaled must have run exactly once (one user record carrying
its request id, "s:ID:KEY", in its conversation) or be journaled skipped
with its reason. None may run twice, none may vanish."""
import json
import os
import random
import signal
import socket
import subprocess
import time

EVERY_S = 2


def _wait_listening(sock, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError("mote serve exited at start")
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            s.close()
            return
        except OSError:
            time.sleep(0.02)
    raise AssertionError("mote serve did not listen")


def _put(sock, sid, obj):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    body = json.dumps(obj).encode()
    s.sendall(b"PUT /v1/schedules/%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (sid.encode(), len(body), body))
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    status = int(data.split()[1])
    if status not in (200, 201):
        raise AssertionError("PUT /v1/schedules/%s: %r" % (sid, data[:300]))


def account(state, sid):
    """(ran, skipped, twice, vanished, last): the occurrences of schedule
    `sid` as its journal and the conversations tell them."""
    claimed, skipped = set(), set()
    with open(os.path.join(state, "schedules.jsonl"), "rb") as f:
        lines = f.read().split(b"\n")
    for line in lines:
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a torn last line (cut off at the next start)
        if r.get("s") != sid:
            continue
        if r["t"] == "claim":
            claimed.add(r["k"])
        elif r["t"] == "skip":
            if not r.get("reason"):
                raise AssertionError("a skip without its reason: %r" % r)
            skipped.update(range(r["from"], r["to"] + 1))
    runs = {}
    cdir = os.path.join(state, "conversations")
    for name in os.listdir(cdir):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(cdir, name), "rb") as f:
            for line in f.read().split(b"\n"):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                rid = r.get("rid", "") if r.get("t") == "user" else ""
                if rid.startswith("s:%s:" % sid):
                    k = int(rid.rsplit(":", 1)[1])
                    runs[k] = runs.get(k, 0) + 1
    last = max(claimed | skipped | set(runs) | {0})
    twice = sorted(k for k, n in runs.items() if n > 1)
    vanished = sorted(k for k in range(1, last + 1) if k not in runs and k not in skipped)
    return len(runs), len(skipped - set(runs)), twice, vanished, last


def sweep(mote, port, state, runs, seed, env, log):
    """Runs the sweep (`runs` kills); returns a dict of figures. Raises
    AssertionError when an occurrence ran twice or vanished."""
    rng = random.Random(seed)
    sock = os.path.join(state, "mote.sock")
    # (no retention: the conversations of the first occurrences are the
    # evidence that they ran)
    args = [mote, "serve", "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
            "--keep", "0", "--keep-bytes", "0"]
    restarts = []
    for i in range(runs + 1):
        err = open(os.path.join(state, "serve.err"), "a")
        t0 = time.time()
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=err, env=env)
        _wait_listening(sock, p)
        restarts.append(time.time() - t0)
        if i == 0:
            _put(sock, "sweep", {"prompt": "tick", "every": "%ds" % EVERY_S})
        if i == runs:
            # the last run: a while, then a clean stop (its turn drains);
            # then once more, briefly, so that what the stop left claimed
            # is started or skipped
            time.sleep(3 * EVERY_S)
            for k in range(2):
                p.send_signal(signal.SIGTERM)
                if p.wait(60) != 0:
                    raise AssertionError("mote serve exited %d" % p.returncode)
                if k == 0:
                    p = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err, env=env)
                    _wait_listening(sock, p)
                    time.sleep(1)
            err.close()
            break
        time.sleep(rng.uniform(0.05, 3 * EVERY_S))
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        err.close()
        if rng.random() < 0.3:
            # down a while: occurrences are missed, one caught up, the rest skipped
            time.sleep(rng.uniform(EVERY_S, 3 * EVERY_S))
        if log is not None:
            log("kill %d" % (i + 1))
    ran, skipped, twice, vanished, last = account(state, "sweep")
    if twice or vanished:
        raise AssertionError("occurrences run twice: %s; vanished: %s (of %d)" %
                             (twice, vanished, last))
    restarts.sort()
    return {"kills": runs, "occurrences": last, "ran": ran, "skipped": skipped, "twice": 0,
            "vanished": 0, "restart_median_s": restarts[len(restarts) // 2]}
