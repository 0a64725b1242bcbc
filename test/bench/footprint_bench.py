#!/usr/bin/env python3
"""Issue 12's figures for docs/BENCHMARKS.md: for each mote given, the
peak RSS and the CPU time of one streamed 500-token turn over TLS at 200
tokens/s (with the system bundle and with one root), launch to the first
request byte on loopback (no TLS), and the system calls per received
chunk (strace -f -c). Medians; every run with a fresh state directory.

    footprint_bench.py RSS_EXEC NAME=MOTE [NAME=MOTE...] [--runs N]

RSS_EXEC is build/rss_exec (test/bench/rss_exec.c): it reports the peak
RSS of the process it runs (VmHWM at its exit) and its user and system
time (wait4).
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
RSS_EXEC = os.path.abspath(ARGS[0])
MOTES = [(a.split("=", 1)[0], os.path.abspath(a.split("=", 1)[1])) for a in ARGS[1:]]
RUNS = int(next((a.split("=")[1] for a in sys.argv[1:] if a.startswith("--runs=")), "20"))
TMP = tempfile.mkdtemp(prefix="mote-fp-")
SERVERS = []
TOKENS = 500
WORDS = " ".join("tok%d" % i for i in range(TOKENS))


def server(script, cert=None):
    pf = os.path.join(TMP, "port%d" % len(SERVERS))
    with open(pf + ".json", "w") as f:
        json.dump(script, f)
    cmd = [sys.executable, os.path.join(ROOT, "test", "llm_server.py"), "--port-file", pf,
           "--script", pf + ".json", "--lifetime", "1800"]
    if cert:
        cmd += ["--cert", cert + ".crt", "--key", cert + ".key"]
    p = subprocess.Popen(cmd)
    SERVERS.append(p)
    while not os.path.exists(pf):
        time.sleep(0.02)
    return int(open(pf).read())


def env():
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ANTHROPIC_API_KEY": "bench",
            "NO_COLOR": "1", "HOME": TMP}


def measured(mote, url, ca=None):
    """One turn under rss_exec: (exit code, kB, user ms, sys ms)."""
    st = tempfile.mkdtemp(dir=TMP)
    args = [RSS_EXEC, mote, "-p", "hi", "--no-tools", "--state-dir", st, "--base-url", url]
    if ca:
        args += ["--ca-file", ca]
    p = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=env(), timeout=120)
    shutil.rmtree(st, ignore_errors=True)
    line = [x for x in p.stderr.splitlines() if x.startswith("rss_exec:")][-1].split()
    # VmHWM at exit (exact); wait4's ru_maxrss is approximate on this kernel
    kb = max(int(line[11]), int(line[2])) if len(line) > 11 else int(line[2])
    return p.returncode, kb, float(line[5]), float(line[8])


class FirstByte(threading.Thread):
    """A loopback listener that notes when each connection's first byte
    arrives, then answers with a one-word Anthropic stream."""

    def __init__(self):
        super().__init__(daemon=True)
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.times = []

    def run(self):
        body = ("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
                "{\"input_tokens\":1,\"output_tokens\":0}}}\n\n"
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                "\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"
                "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
                "\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"
                "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n").encode()
        while True:
            c, _ = self.ls.accept()
            first = c.recv(1)
            self.times.append(time.monotonic())
            data = first
            while b"\r\n\r\n" not in data:
                data += c.recv(65536)
            head, rest = data.split(b"\r\n\r\n", 1)
            n = int([h.split(b":")[1] for h in head.split(b"\r\n")
                     if h.lower().startswith(b"content-length:")][0])
            while len(rest) < n:
                rest += c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d"
                      b"\r\nconnection: close\r\n\r\n" % len(body) + body)
            c.close()


def launch_to_first_byte(mote, fb):
    """ms from spawning mote to the first byte of its request (http)."""
    out = []
    for _ in range(RUNS):
        st = tempfile.mkdtemp(dir=TMP)
        n = len(fb.times)
        t0 = time.monotonic()
        pid = os.posix_spawn(mote, [mote, "-p", "hi", "--no-tools", "--state-dir", st,
                                    "--base-url", "http://127.0.0.1:%d" % fb.port], env(),
                             file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                           (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
        os.waitpid(pid, 0)
        if len(fb.times) > n:
            out.append((fb.times[n] - t0) * 1000)
        shutil.rmtree(st, ignore_errors=True)
    return out


def syscalls(mote, url, ca):
    st = tempfile.mkdtemp(dir=TMP)
    log = os.path.join(TMP, "strace.txt")
    subprocess.run(["strace", "-f", "-c", "-o", log, mote, "-p", "hi", "--no-tools",
                    "--state-dir", st, "--base-url", url, "--ca-file", ca],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(), timeout=120)
    calls = {}
    for line in open(log):
        f = line.split()
        if len(f) >= 5 and f[3].isdigit():
            calls[f[-1]] = int(f[3])
    return calls


def instructions(mote, url, ca):
    """The turn's instructions (callgrind): exact, whatever the load."""
    st = tempfile.mkdtemp(dir=TMP)
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", mote,
                        "-p", "hi", "--no-tools", "--state-dir", st, "--base-url", url,
                        "--ca-file", ca], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, env=env(), timeout=600)
    shutil.rmtree(st, ignore_errors=True)
    got = [x.split("Collected :")[1] for x in p.stderr.splitlines() if "Collected :" in x]
    return int(got[-1]) if got and p.returncode == 0 else None


def main():
    certs = os.path.join(TMP, "certs")
    subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), certs], check=True)
    bundle = os.path.join(TMP, "bundle.crt")
    with open("/etc/ssl/certs/ca-certificates.crt", "rb") as f, \
            open(os.path.join(certs, "ca.crt"), "rb") as g, open(bundle, "wb") as out:
        out.write(f.read() + b"\n" + g.read())
    one = os.path.join(certs, "ca.crt")
    # 200 tokens/s: an event every 5 ms
    tls = server([{"text": WORDS, "delay_ms": 5}] * ((2 * RUNS + 4) * len(MOTES) + 8),
                 cert=os.path.join(certs, "server"))
    url = "https://localhost:%d" % tls
    fb = FirstByte()
    fb.start()
    for name, mote in MOTES:
        stripped = os.path.join(TMP, "stripped")
        subprocess.run(["strip", "-o", stripped, mote], check=True)
        print("== %s (%s, %d bytes stripped)" % (name, mote, os.path.getsize(stripped)))
        # the two trust stores in turn, so that the machine's moods fall
        # on both alike
        series = {bundle: [], one: []}
        for _ in range(RUNS):
            for ca in (bundle, one):
                series[ca].append(measured(mote, url, ca))
        for label, ca in (("system bundle + test CA", bundle), ("one root", one)):
            runs = series[ca]
            bad = [r for r in runs if r[0] != 0]
            if bad:
                print("  %s: %d runs failed" % (label, len(bad)))
            rss = statistics.median(r[1] for r in runs)
            cpu = statistics.median(r[2] + r[3] for r in runs)
            usr = statistics.median(r[2] for r in runs)
            sy = statistics.median(r[3] for r in runs)
            print("  streamed %d-token TLS turn at 200 tokens/s, %s: peak RSS %d kB, CPU %.1f ms "
                  "(user %.1f + sys %.1f; min %.1f, max %.1f), medians of %d"
                  % (TOKENS, label, rss, cpu, usr, sy, min(r[2] + r[3] for r in runs),
                     max(r[2] + r[3] for r in runs), RUNS))
        lt = launch_to_first_byte(mote, fb)
        if lt:
            print("  launch to the first request byte (http, loopback): median %.2f ms (min %.2f, "
                  "max %.2f) of %d" % (statistics.median(lt), min(lt), max(lt), len(lt)))
        if shutil.which("valgrind"):
            n = [instructions(mote, url, ca) for ca in (bundle, one)]
            if None not in n:
                print("  instructions of the turn (callgrind): system bundle %.1f M, one root %.1f M"
                      % (n[0] / 1e6, n[1] / 1e6))
        if shutil.which("strace"):
            c = syscalls(mote, url, bundle)
            per = sum(c.get(k, 0) for k in ("poll", "ppoll", "recvfrom", "read", "readv",
                                            "write", "writev", "sendto")) / TOKENS
            print("  system calls of the turn (strace -f -c): " +
                  ", ".join("%s %d" % kv for kv in sorted(c.items(), key=lambda kv: -kv[1])[:8]) +
                  "; poll+recv+read+write per received chunk: %.2f" % per)
    for s in SERVERS:
        s.kill()
        s.wait()
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
