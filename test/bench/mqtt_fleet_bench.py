#!/usr/bin/env python3
"""A fleet of `mote serve --mqtt` devices on one mosquitto, for
docs/BENCHMARKS.md: N processes (the small configuration) and one local
test LLM server; a controller publishes one prompt to each device and
collects the answers.

  1. one prompt each: all answered, none twice; the time from publish to
     answer (median, worst); the RSS of each device process; the memory
     the MQTT client adds (the same turn in `mote serve` without --mqtt,
     over HTTP);
  2. one more prompt each, answered slowly (streamed for about 2 s);
  3. the same with the broker restarted (SIGTERM, its persistence on)
     while the answers stream: every prompt still answered once.

    python3 test/bench/mqtt_fleet_bench.py MOTE [N]
MOTE is a normal (not sanitizer) build of mote, e.g. build/small/mote.
"""
import json
import os
import pwd
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import ROOT, TMP, free_port, proc_status, wait_for  # noqa: E402

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def private(pid):
    """The process's own pages (not shared with another: libc's code is
    shared by the whole fleet), kB."""
    n = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                n += int(line.split()[1])
    return n



class Broker:
    def __init__(self, d):
        self.dir, self.port = d, free_port()
        self.conf = os.path.join(d, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write("listener %d 127.0.0.1\nuser %s\npersistence true\npersistence_location %s/\n"
                    "allow_anonymous true\nmax_queued_messages 10000\n"
                    % (self.port, pwd.getpwuid(os.getuid()).pw_name, d))
        self.start()

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

        def up():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                return False
        wait_for(up, "mosquitto", 10)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)


class Controller:
    """A small MQTT 3.1.1 client (persistent session, QoS 1 both ways) that
    reconnects by itself: what the fleet's operator runs."""

    def __init__(self, port, cid, on_message):
        self.port, self.cid, self.on_message = port, cid, on_message
        self.lock = threading.Lock()
        self.sock, self.next_id, self.subs, self.unacked = None, 1, [], {}
        self.closing = False
        self._connect()
        threading.Thread(target=self._run, daemon=True).start()

    @staticmethod
    def _s(b):
        return len(b).to_bytes(2, "big") + b

    @staticmethod
    def _packet(first, body):
        n, out = len(body), b""
        while True:
            d, n = n % 128, n // 128
            out += bytes([d | (128 if n else 0)])
            if not n:
                break
        return bytes([first]) + out + body

    def _connect(self):
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                s.sendall(self._packet(0x10, self._s(b"MQTT") + b"\x04\x00\x00\x3c" +
                                       self._s(self.cid.encode())))
                if s.recv(4)[:2] != b"\x20\x02":
                    raise OSError("no CONNACK")
                s.settimeout(None)
                with self.lock:
                    self.sock = s
                    for t in self.subs:
                        self._send(self._packet(0x82, (1).to_bytes(2, "big") +
                                                self._s(t.encode()) + b"\x01"))
                    for pid, pkt in self.unacked.items():  # again, with DUP
                        self._send(bytes([pkt[0] | 0x08]) + pkt[1:])
                return
            except OSError:
                if self.closing:
                    return
                time.sleep(0.2)

    def _send(self, pkt):
        try:
            self.sock.sendall(pkt)
        except OSError:
            pass

    def subscribe(self, topic):
        with self.lock:
            self.subs.append(topic)
            self._send(self._packet(0x82, (1).to_bytes(2, "big") + self._s(topic.encode()) +
                                    b"\x01"))

    def publish(self, topic, payload):
        with self.lock:
            pid = self.next_id
            self.next_id = self.next_id % 65535 + 1
            pkt = self._packet(0x32, self._s(topic.encode()) + pid.to_bytes(2, "big") + payload)
            self.unacked[pid] = pkt
            self._send(pkt)

    def _recv(self, buf, n):
        while len(buf) < n:
            d = self.sock.recv(65536)
            if not d:
                raise OSError("closed")
            buf += d
        return buf

    def _run(self):
        buf = b""
        while not self.closing:
            try:
                buf = self._recv(buf, 2)
                n, mul, i = 0, 1, 1
                while True:
                    buf = self._recv(buf, i + 1)
                    n += (buf[i] & 127) * mul
                    mul *= 128
                    i += 1
                    if not buf[i - 1] & 128:
                        break
                buf = self._recv(buf, i + n)
                first, body, buf = buf[0], buf[i:i + n], buf[i + n:]
                kind = first >> 4
                if kind == 3:
                    tl = int.from_bytes(body[:2], "big")
                    topic = body[2:2 + tl].decode()
                    rest = body[2 + tl:]
                    if (first >> 1) & 3:
                        pid, rest = rest[:2], rest[2:]
                        with self.lock:
                            self._send(b"\x40\x02" + pid)
                    self.on_message(topic, rest, time.time())
                elif kind == 4:
                    with self.lock:
                        self.unacked.pop(int.from_bytes(body[:2], "big"), None)
            except OSError:
                if self.closing:
                    return
                buf = b""
                self._connect()

    def close(self):
        self.closing = True
        try:
            self.sock.sendall(b"\xe0\x00")
            self.sock.close()
        except OSError:
            pass


def main():
    mote = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    tmp = tempfile.mkdtemp(prefix="mote-fleet-")
    procs = []
    broker = None
    try:
        broker = Broker(tmp)
        # the model: phase 1 answers at once, phase 2 streams for a while
        script = [{"text": "answer one"} for _ in range(n)]
        script += [{"text": "answer two, streamed in pieces " * 4, "delay_ms": 60}
                   for _ in range(2 * n)]
        with open(os.path.join(tmp, "script.json"), "w") as f:
            json.dump(script, f)
        # the test server with a listen backlog for 50 devices at once (the
        # standard library's default of 5 drops connections: a second's retry)
        server = os.path.join(ROOT, "test", "llm_server.py")
        boot = ("import socketserver, sys, runpy; socketserver.TCPServer.request_queue_size = 256;"
                " sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
        llm = subprocess.Popen([sys.executable, "-c", boot, server,
                                "--port-file", os.path.join(tmp, "llm.port"), "--log",
                                os.path.join(tmp, "llm.log"), "--script",
                                os.path.join(tmp, "script.json"), "--lifetime", "900"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(llm)
        wait_for(lambda: os.path.exists(os.path.join(tmp, "llm.port")), "the LLM server", 10)
        llm_url = "http://127.0.0.1:" + open(os.path.join(tmp, "llm.port")).read().strip()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["ANTHROPIC_API_KEY"] = "sk-fleet"

        got = {}  # device -> {offset: (time, text)}: assistant records seen
        lock = threading.Lock()

        def on_message(topic, payload, t):
            parts = topic.split("/")
            if len(parts) != 4 or parts[2] != "out":
                return
            ev = json.loads(payload)
            if ev.get("event") == "record" and ev["data"].get("t") == "assistant":
                with lock:
                    got.setdefault(parts[1], {}).setdefault(ev["offset"],
                                                            (t, ev["data"]["text"]))

        ctl = Controller(broker.port, "fleet-controller", on_message)
        ctl.subscribe("mote/+/out/#")
        devs = ["dev-%02d" % i for i in range(n)]
        t_start = time.time()
        for d in devs:
            st = os.path.join(tmp, d)
            os.makedirs(st)
            p = subprocess.Popen([mote, "serve", "--state-dir", st, "--base-url", llm_url,
                                  "--mqtt", "mqtt://127.0.0.1:%d" % broker.port, "--mqtt-id", d],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=open(os.path.join(st, "serve.err"), "w"), env=env)
            procs.append(p)

        def online():
            return all("mqtt: connected to" in open(os.path.join(tmp, d, "serve.err")).read()
                       for d in devs)
        wait_for(online, "%d devices online" % n, 120)
        t_online = time.time() - t_start
        time.sleep(1)  # each one's subscription in place
        rss_idle = [proc_status(p.pid, "VmRSS") for p in procs[1:]]
        priv_idle = [private(p.pid) for p in procs[1:]]

        def phase(k, restart):
            sent = {}
            for d in devs:
                sent[d] = time.time()
                ctl.publish("mote/%s/in" % d, json.dumps(
                    {"id": "p%d-%s" % (k, d), "conversation": "bench",
                     "text": "prompt %d" % k}).encode())
            if restart:
                time.sleep(1.0)  # the answers stream (each takes a few seconds)
                broker.stop()
                time.sleep(0.5)
                broker.start()

            def done():
                with lock:
                    return all(len(got.get(d, {})) >= k for d in devs)
            wait_for(done, "every answer of round %d" % k, 300)
            with lock:
                lat = [sorted(got[d].items())[k - 1][1][0] - sent[d] for d in devs]
            return lat

        lat1 = phase(1, False)
        rss = [proc_status(p.pid, "VmRSS") for p in procs[1:]]
        priv = [private(p.pid) for p in procs[1:]]
        hwm = [proc_status(p.pid, "VmHWM") for p in procs[1:]]
        lat3 = phase(2, False)  # the slow answers alone, to compare with
        lat2 = phase(3, True)
        time.sleep(1)  # anything late would show now
        # none twice: each device journaled each request once, answered each once
        twice = 0
        for d in devs:
            with open(os.path.join(tmp, d, "conversations", "bench.jsonl")) as f:
                recs = [json.loads(x) for x in f]
            rids = [r.get("rid") for r in recs if r["t"] == "user"]
            answers = [r for r in recs if r["t"] == "assistant" and r.get("stop") == "end_turn"]
            if rids != ["p%d-%s" % (k, d) for k in (1, 2, 3)] or len(answers) != 3:
                twice += 1
                print("device %s: users %r, %d answers" % (d, rids, len(answers)))
        with lock:
            seen = sum(len(v) for v in got.values())
        with open(os.path.join(tmp, "llm.log")) as f:
            model_requests = sum(1 for x in f if x.strip())
        # without --mqtt: idle, and after the same turn over HTTP
        base, base_idle, bpriv, bpriv_idle = [], [], [], []
        for i in range(5):
            st = os.path.join(tmp, "plain-%d" % i)
            os.makedirs(st)
            p = subprocess.Popen([mote, "serve", "--state-dir", st, "--base-url", llm_url],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=env)
            procs.append(p)
            sock = os.path.join(st, "mote.sock")
            wait_for(lambda: os.path.exists(sock), "a plain server", 20)
            time.sleep(1)
            base_idle.append(proc_status(p.pid, "VmRSS"))
            bpriv_idle.append(private(p.pid))
            body = json.dumps({"text": "prompt 1"})
            r = subprocess.run(["curl", "-s", "--unix-socket", sock, "-d", body,
                                "http://m/v1/conversations"], capture_output=True, text=True)
            cid = json.loads(r.stdout)["id"]
            subprocess.run(["curl", "-s", "--unix-socket", sock, "-d", body,
                            "http://m/v1/conversations/%s/messages" % cid], capture_output=True)

            def idle():
                r = subprocess.run(["curl", "-s", "--unix-socket", sock,
                                    "http://m/v1/conversations/%s?records=0" % cid],
                                   capture_output=True, text=True)
                return r.stdout and json.loads(r.stdout)["state"] in ("idle", "error")
            wait_for(idle, "the plain turn", 60)
            base.append(proc_status(p.pid, "VmRSS"))
            bpriv.append(private(p.pid))
        broker_rss = proc_status(broker.proc.pid, "VmRSS")
        back = sum(1 for d in devs
                   if open(os.path.join(tmp, d, "serve.err")).read().count("mqtt: connected to") >= 2)
        ms = [x * 1000 for x in lat1]
        ms2 = [x * 1000 for x in lat2]
        ms3 = [x * 1000 for x in lat3]
        print("fleet: %d devices (%s), all online in %.1f s" % (n, os.path.relpath(mote), t_online))
        print("round 1: %d of %d answered, %d devices answered twice or missed; publish to "
              "answer median %.0f ms, worst %.0f ms" %
              (sum(1 for d in devs if len(got.get(d, {})) >= 1), n, twice, statistics.median(ms),
               max(ms)))
        print("round 2, answers streamed for about 2 s: publish to answer median %.0f ms, "
              "worst %.0f ms" % (statistics.median(ms3), max(ms3)))
        print("round 3, the same with the broker restarted while they streamed (%d devices "
              "reconnected): %d of %d answered; publish to answer median %.0f ms, worst %.0f ms" %
              (back, sum(1 for d in devs if len(got.get(d, {})) >= 3), n, statistics.median(ms2),
               max(ms2)))
        print("journals: %d devices with each request once and each answer once; %d model "
              "requests for %d prompts; %d answer records seen by the controller" %
              (n - twice, model_requests, 3 * n, seen))
        print("RSS per device, connected and idle: median %d kB (min %d, max %d); without "
              "--mqtt, idle: median %d kB: the MQTT front door adds %d kB"
              % (statistics.median(rss_idle), min(rss_idle), max(rss_idle),
                 statistics.median(base_idle),
                 statistics.median(rss_idle) - statistics.median(base_idle)))
        print("RSS per device after its turn: median %d kB, min %d, max %d (VmHWM median %d kB); "
              "without --mqtt after the same turn over HTTP: median %d kB"
              % (statistics.median(rss), min(rss), max(rss), statistics.median(hwm),
                 statistics.median(base)))
        print("private memory (pages no other process shares), median: idle %d kB with --mqtt, "
              "%d without (+%d); after the turn %d with, %d without"
              % (statistics.median(priv_idle), statistics.median(bpriv_idle),
                 statistics.median(priv_idle) - statistics.median(bpriv_idle),
                 statistics.median(priv), statistics.median(bpriv)))
        print("mosquitto with %d clients: %d kB" % (n + 1, broker_rss))
        ctl.close()
        return 0 if twice == 0 and back == n else 1
    finally:
        for p in procs[1:]:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs[1:]:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if procs:
            procs[0].kill()
        if broker is not None and broker.proc.poll() is None:
            broker.proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(TMP, ignore_errors=True)  # the harness's, made at its import


if __name__ == "__main__":
    sys.exit(main())
