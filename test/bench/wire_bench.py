#!/usr/bin/env python3
"""The wire on a real link: wall time against round trip, through
test/bench/delay_proxy.py (each chunk delayed by half the round trip each
way), to the local test server over TLS, medians of --runs.

    wire_bench.py BUILDDIR [--rtts 0,50,150,300] [--runs 3] [--out FILE]
                  [--mote PATH] [--mote-before [LABEL=]PATH] [--chart FILE.svg] [--cpu-runs 20]

With llm_probe (BUILDDIR/bench/llm_probe, the library driven directly):
  turn, new       6 requests one after another (a turn of 5 tool rounds),
                  each on a new connection with a full handshake
                  (keep_idle_ms 0, no resumption: what mote did before)
  turn, kept      the 6 on one kept connection
  turn, kept + resumed  and its handshake resumes the session an earlier
                  run kept on disk
  one-shot, full  one request, a full handshake
  one-shot, resumed  one request, the session kept on disk by the run before
With --mote PATH, also the real agent, `mote -p` (its state directory kept
between the runs of a column; the first run of each is not counted: it
leaves the session an earlier run of a device would have left):
  mote turn, before   a turn of 5 tool rounds (shell `true`, 6 requests)
                      with --keep-alive 0 --tls-sessions off: a new
                      connection and a full handshake per request, what
                      mote did before it kept connections
  mote turn, now      the same turn as mote runs it by default
  mote one-shot, full     one answer (--no-tools), --tls-sessions off
  mote one-shot, resumed  one answer, the session kept in STATE/tls
  mote turn, LABEL    with --mote-before LABEL=PATH: the turn through that
                      mote, as it runs by default (an older build)
and the CPU of `mote -p` one answer at 0 ms, full against resumed.

--chart FILE.svg (or .png) draws wall time against round trip (gnuplot) for the
mote columns, or the library's when there is no --mote.

Round trips per run are the slope of a least-squares line through wall
time against round trip. CPU (user + system of the process) of a one-shot
with a full and with a resumed handshake is the median of --cpu-runs at
0 ms. --out writes the medians as a table for a plot (one line per round
trip).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TMP = tempfile.mkdtemp(prefix="mote-wire-")
PROCS = []
TURN = [{"tool": "shell", "input": {"command": "true"}}] * 5 + [{"text": "done"}]


def start(cmd, port_file):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    PROCS.append(p)
    deadline = time.time() + 10
    while not os.path.exists(port_file):
        if time.time() > deadline or p.poll() is not None:
            raise RuntimeError("did not start: %s" % cmd[:3])
        time.sleep(0.02)
    with open(port_file) as f:
        return p, int(f.read())


def server(certs, script=None):
    d = tempfile.mkdtemp(dir=TMP)
    cmd = [sys.executable, os.path.join(ROOT, "test", "llm_server.py"), "--port-file",
           os.path.join(d, "port"), "--cert", os.path.join(certs, "server.crt"), "--key",
           os.path.join(certs, "server.key"), "--lifetime", "3600"]
    if script is not None:
        with open(os.path.join(d, "script.json"), "w") as f:
            json.dump(script, f)
        cmd += ["--script", os.path.join(d, "script.json")]
    return start(cmd, os.path.join(d, "port"))[1]


def delay(port, rtt):
    d = tempfile.mkdtemp(dir=TMP)
    cmd = [sys.executable, os.path.join(ROOT, "test", "bench", "delay_proxy.py"), "--target",
           "127.0.0.1:%d" % port, "--rtt-ms", str(rtt), "--port-file", os.path.join(d, "port"),
           "--lifetime", "3600"]
    return start(cmd, os.path.join(d, "port"))


def timed(cmd, env=None):
    """Wall seconds of one run, and its output."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, env=env, timeout=300)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s %s" % (cmd[0], p.stdout[-300:], p.stderr[-300:]))
    return wall, p.stdout


def cpu_of(cmd, env=None):
    """CPU seconds (user + system) of one run of cmd."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execve(cmd[0], cmd, env or os.environ)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s failed" % cmd[0])
    return ru.ru_utime + ru.ru_stime


def mote_runs(a, rtt, certs, ca, runs, before_name):
    """The real agent's columns at one round trip: each column a server of
    its own (its session tickets stay valid) behind a delay proxy, its
    script a turn per run, a state directory kept between its runs; the
    first run of each is not counted."""
    env = dict(os.environ, ANTHROPIC_API_KEY="bench", NO_COLOR="1")
    env.pop("MOTE_TLS_SESSIONS", None)
    env.pop("MOTE_KEEP_ALIVE_MS", None)
    plan = [("mote turn, before", a.mote, ["--keep-alive", "0", "--tls-sessions", "off"], TURN),
            ("mote turn, now", a.mote, [], TURN),
            ("mote one-shot, full", a.mote, ["--no-tools", "--tls-sessions", "off"], None),
            ("mote one-shot, resumed", a.mote, ["--no-tools"], None)]
    if before_name:
        plan.append((before_name, a.mote_before, [], TURN))
    for col, exe, extra, turn in plan:
        mport = server(certs, turn * (a.runs + 1) if turn else None)
        mproxy, mpp = delay(mport, rtt)
        mstate = tempfile.mkdtemp(dir=TMP)
        for i in range(a.runs + 1):
            w = timed([exe, "-p", "run true five times", "--yes", "--state-dir", mstate,
                       "--base-url", "https://localhost:%d" % mpp, "--ca-file", ca] + extra, env)[0]
            if i > 0:
                runs[col].append(w)
        mproxy.kill()


def mote_cpu(a, port, ca):
    """CPU of `mote -p` one answer at 0 ms: a full handshake against one
    resuming the session the run before kept in STATE/tls; in time and in
    instructions (callgrind)."""
    env = dict(os.environ, ANTHROPIC_API_KEY="bench", NO_COLOR="1")
    env.pop("MOTE_TLS_SESSIONS", None)
    state = tempfile.mkdtemp(dir=TMP)
    base = [a.mote, "-p", "hello", "--no-tools", "--state-dir", state, "--base-url",
            "https://localhost:%d" % port, "--ca-file", ca]
    cpu_of(base, env)
    full = statistics.median(cpu_of(base + ["--tls-sessions", "off"], env)
                             for _ in range(a.cpu_runs))
    res = statistics.median(cpu_of(base, env) for _ in range(a.cpu_runs))
    print("CPU of mote -p, one answer over TLS (user + system, median of %d): full handshake "
          "%.1f ms, resumed %.1f ms (%.0f%%)" % (a.cpu_runs, full * 1000, res * 1000,
                                                100 * res / full))
    if shutil.which("valgrind"):
        counts = []
        for extra in (["--tls-sessions", "off"], []):
            p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] +
                               base + extra, capture_output=True, text=True, timeout=300, env=env)
            m = [l for l in p.stderr.splitlines() if "Collected" in l]
            counts.append(int(m[-1].split()[-1]) if m else 0)
        if all(counts):
            print("the same in instructions (callgrind): full %.1f M, resumed %.1f M (%.0f%%)" %
                  (counts[0] / 1e6, counts[1] / 1e6, 100.0 * counts[1] / counts[0]))


def chart(path, dat, cols, rtts, table):
    """Wall time against round trip, one line per column, as SVG (or PNG
    for a name ending in .png)."""
    if not shutil.which("gnuplot"):
        print("wire: no gnuplot (make deps installs gnuplot-nox): no chart")
        return
    shown = [c for c in cols if c.startswith("mote")] or cols
    top = max(table[r][c] for r in rtts for c in shown)
    plot = ", ".join("'%s' using 1:%d with linespoints lw 2 pt 7 title '%s'" %
                     (dat, cols.index(c) + 2, c.replace("_", "\\_")) for c in shown)
    script = "\n".join([
        ("set terminal pngcairo size 760,460 font 'sans,10'" if path.endswith(".png") else
         "set terminal svg size 760,460 dynamic font 'sans,12' background '#ffffff'"),
        "set output '%s'" % path,
        "set title 'Wall time against round trip (TLS, medians of the runs)'",
        "set xlabel 'round trip (ms)'", "set ylabel 'wall time (s)'",
        "set key top left", "set grid", "set xrange [0:%g]" % (max(rtts) * 1.05),
        "set yrange [0:%g]" % (top * 1.1), "set xtics (%s)" % ", ".join("%g" % r for r in rtts),
        "plot " + plot, ""])
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("wire: chart in %s" % path)


def slope(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rtts", default="0,50,150,300")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cpu-runs", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--mote", help="also the real agent: turns and one-shots through this mote")
    ap.add_argument("--mote-before", metavar="[LABEL=]PATH",
                    help="and a turn through this (older) mote")
    ap.add_argument("--chart", help="an SVG of wall time against round trip (gnuplot)")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    probe = os.path.join(b, "bench", "llm_probe")
    if not os.path.exists(probe):
        print("wire: no %s (make bench-wire builds it)" % probe)
        return 1
    certs = os.path.join(TMP, "certs")
    subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), certs], check=True)
    ca = os.path.join(certs, "ca.crt")
    port = server(certs)
    rtts = [float(x) for x in a.rtts.split(",")]
    cols = ["turn, new", "turn, kept", "turn, kept + resumed", "one-shot, full",
            "one-shot, resumed"]
    before_name = None
    if a.mote:
        cols += ["mote turn, before", "mote turn, now", "mote one-shot, full",
                 "mote one-shot, resumed"]
        if a.mote_before:
            label, _, path = a.mote_before.rpartition("=")
            a.mote_before = path
            before_name = "mote turn, " + (label or "an older build")
            cols.append(before_name)
    table = {}
    for rtt in rtts:
        proxy, pport = delay(port, rtt)
        url = "https://localhost:%d" % pport
        base = [probe, "anthropic", url, "--ca-file", ca]
        state = tempfile.mkdtemp(dir=TMP)
        timed(base + ["--state-dir", state])  # a session on disk for the resumed one-shots
        runs = {c: [] for c in cols}
        for _ in range(a.runs):
            runs["turn, kept"].append(timed(base + ["--requests", "6", "--resume", "off"])[0])
            runs["turn, kept + resumed"].append(timed(base + ["--requests", "6", "--state-dir",
                                                              state])[0])
            runs["turn, new"].append(timed(base + ["--requests", "6", "--keep-idle-ms", "0",
                                                   "--resume", "off"])[0])
            runs["one-shot, full"].append(timed(base + ["--resume", "off"])[0])
            runs["one-shot, resumed"].append(timed(base + ["--state-dir", state])[0])
        if a.mote:
            mote_runs(a, rtt, certs, ca, runs, before_name)
        proxy.kill()
        table[rtt] = {c: statistics.median(v) for c, v in runs.items()}
        print("rtt %5.0f ms: " % rtt + ", ".join("%s %.3f s" % (c, table[rtt][c]) for c in cols),
              flush=True)
    print()
    print("| round trip | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for rtt in rtts:
        print("| %.0f ms | " % rtt + " | ".join("%.2f s" % table[rtt][c] for c in cols) + " |")
    if len(rtts) > 1:
        print("| round trips (slope) | " +
              " | ".join("%.1f" % (slope([r / 1000 for r in rtts], [table[r][c] for r in rtts]))
                         for c in cols) + " |")
    dat = a.out or os.path.join(TMP, "wire.dat")
    with open(dat, "w") as f:
        f.write("# rtt_ms " + " ".join('"%s"' % c for c in cols) + "\n")
        for rtt in rtts:
            f.write("%.0f %s\n" % (rtt, " ".join("%.4f" % table[rtt][c] for c in cols)))
    if a.chart:
        chart(a.chart, dat, cols, rtts, table)
    # CPU of a one-shot: a full handshake against a resumed one, no delay
    state = tempfile.mkdtemp(dir=TMP)
    base = [probe, "anthropic", "https://localhost:%d" % port, "--ca-file", ca]
    cpu_of(base + ["--state-dir", state])
    full = statistics.median(cpu_of(base + ["--resume", "off"]) for _ in range(a.cpu_runs))
    res = statistics.median(cpu_of(base + ["--state-dir", state]) for _ in range(a.cpu_runs))
    print()
    print("CPU of a one-shot TLS request (user + system, median of %d): full handshake %.1f ms, "
          "resumed %.1f ms (%.0f%%)" % (a.cpu_runs, full * 1000, res * 1000, 100 * res / full))
    if shutil.which("valgrind"):
        # instructions: the measure that does not move with the machine's load
        counts = []
        for extra in (["--resume", "off"], ["--state-dir", state]):
            p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] +
                               base + extra, capture_output=True, text=True, timeout=300)
            m = [l for l in p.stderr.splitlines() if "Collected" in l]
            counts.append(int(m[-1].split()[-1]) if m else 0)
        if all(counts):
            print("the same in instructions (callgrind): full %.1f M, resumed %.1f M (%.0f%%)" %
                  (counts[0] / 1e6, counts[1] / 1e6, 100.0 * counts[1] / counts[0]))
    if a.mote:
        mote_cpu(a, port, ca)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for p in PROCS:
            p.kill()
        shutil.rmtree(TMP, ignore_errors=True)
