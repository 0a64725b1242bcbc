#!/usr/bin/env python3
"""Agent figures for docs/BENCHMARKS.md: time from start to the first
prompt (median of 20), peak RSS of a streamed 500-token turn over TLS, and
shutdown latency from SIGINT to exit mid-stream (median of 20).

    agent_bench.py BUILDDIR
"""
import json
import os
import pty
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(B, "mote")
TMP = tempfile.mkdtemp(prefix="mote-bench-")


def server(script, cert=None):
    pf = os.path.join(TMP, "port%d" % len(os.listdir(TMP)))
    sp = pf + ".json"
    with open(sp, "w") as f:
        json.dump(script, f)
    cmd = [sys.executable, os.path.join(ROOT, "test", "llm_server.py"), "--port-file", pf,
           "--script", sp, "--lifetime", "300"]
    if cert:
        cmd += ["--cert", cert + ".crt", "--key", cert + ".key"]
    p = subprocess.Popen(cmd)
    while not os.path.exists(pf):
        time.sleep(0.02)
    return p, int(open(pf).read())


def env():
    e = dict(os.environ, ANTHROPIC_API_KEY="bench", NO_COLOR="1")
    return e


def first_prompt(port):
    times = []
    for i in range(20):
        st = tempfile.mkdtemp(dir=TMP)
        t0 = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(MOTE, [MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port],
                      env())
        out = b""
        while b"> " not in out:
            r, _, _ = select.select([fd], [], [], 10)
            out += os.read(fd, 4096)
        times.append((time.monotonic() - t0) * 1000)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return statistics.median(times)


def main():
    certs = os.path.join(TMP, "certs")
    subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), certs], check=True)
    srv, port = server([])
    print("time to the first prompt, median of 20: %.1f ms" % first_prompt(port))
    words = " ".join("token%d" % i for i in range(500))
    srv2, tport = server([{"text": words}], cert=os.path.join(certs, "server"))
    st = tempfile.mkdtemp(dir=TMP)
    r = subprocess.run(["/usr/bin/time", "-f", "%M", MOTE, "-p", "x", "--state-dir", st,
                        "--base-url", "https://localhost:%d" % tport, "--ca-file",
                        os.path.join(certs, "ca.crt")], capture_output=True, text=True, env=env())
    print("peak RSS, one streamed 500-token turn over TLS: %s kB" % r.stderr.strip().splitlines()[-1])
    # Peak RSS for one more turn of a 1-turn and of a 500-turn conversation.
    for turns in (1, 500):
        st = tempfile.mkdtemp(dir=TMP)
        os.makedirs(os.path.join(st, "conversations"))
        with open(os.path.join(st, "conversations", "c.jsonl"), "w") as f:
            f.write(json.dumps({"t": "open", "v": 1, "id": "c"}) + "\n")
            for i in range(turns):
                f.write(json.dumps({"t": "user", "text": "question %d %s" % (i, "x" * 200)}) + "\n")
                f.write(json.dumps({"t": "request", "attempt": 1}) + "\n")
                f.write(json.dumps({"t": "assistant", "text": "answer %d %s" % (i, "y" * 400),
                                    "stop": "end_turn"}) + "\n")
        with open(os.path.join(st, "current"), "w") as f:
            f.write("c\n")
        rss = []
        for k in range(5):
            r = subprocess.run(["/usr/bin/time", "-f", "%M", MOTE, "--continue", "-p", "more",
                                "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port],
                               capture_output=True, text=True, env=env())
            rss.append(int(r.stderr.strip().splitlines()[-1]))
        size = os.path.getsize(os.path.join(st, "conversations", "c.jsonl"))
        print("peak RSS, one more turn of a %d-turn conversation (%d-byte journal): median %d kB"
              % (turns, size, statistics.median(rss)))
    # Shutdown latency: SIGINT mid-stream (cancel mode), to exit.
    lat = []
    for i in range(20):
        srv3, sport = server([{"after_text": "streaming", "stall": 30}])
        st = tempfile.mkdtemp(dir=TMP)
        p = subprocess.Popen([MOTE, "-p", "x", "--state-dir", st, "--base-url",
                              "http://127.0.0.1:%d" % sport], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env())
        p.stdout.read(4)  # the stream has begun
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait()
        lat.append((time.monotonic() - t0) * 1000)
        srv3.kill()
        srv3.wait()
    print("shutdown latency SIGINT -> exit mid-stream (cancel mode), median of 20: %.1f ms "
          "(max %.1f)" % (statistics.median(lat), max(lat)))
    srv.kill()
    srv2.kill()


if __name__ == "__main__":
    main()
