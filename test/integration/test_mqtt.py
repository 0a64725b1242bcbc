"""The library's MQTT client (test/integration/mqtt_probe.c, sanitizers on)
against a real mosquitto: a private broker on a loopback port with a
generated configuration, never the system service.

    python3 test/integration/test_mqtt.py build/asan/mqtt_probe
"""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, SERVERS, TMP, check, free_port, run_all, wait_for  # noqa: E402

PROBE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build/asan/mqtt_probe"
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
PROBES = []


def tool(name):
    path = shutil.which(name)
    if path is None:
        raise AssertionError(name + " is missing: make deps installs mosquitto and mosquitto-clients")
    return path


class Broker:
    """A mosquitto of our own: persistence on, its files in TMP."""

    def __init__(self, name, extra=(), tls=None):
        if not os.path.exists(MOSQUITTO):
            raise AssertionError("mosquitto is missing: make deps installs it")
        self.dir = os.path.join(TMP, "broker-" + name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.tls = tls
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        lines = ["listener %d 127.0.0.1" % self.port,
                 # run as this user: as root mosquitto would switch to its own
                 # user, which may not write here
                 "user " + pwd.getpwuid(os.getuid()).pw_name,
                 "persistence true",
                 "persistence_location " + self.dir + "/",
                 "log_dest file " + os.path.join(self.dir, "mosquitto.log"),
                 "log_type all"]
        if tls is not None:
            lines += ["certfile " + tls[0], "keyfile " + tls[1]]
        lines += list(extra)
        if not any(x.startswith("allow_anonymous") for x in extra):
            lines.append("allow_anonymous true")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "stderr"), "ab"))
        SERVERS.append(self.proc)  # (the harness kills what is left at the end)

        def up():
            if self.proc.poll() is not None:
                raise AssertionError("mosquitto exited: " + self.log()[-500:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                return False
        wait_for(up, "mosquitto to listen", 10)

    def stop(self):
        """SIGTERM: mosquitto saves its persistence file and exits."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)

    def log(self):
        try:
            with open(os.path.join(self.dir, "mosquitto.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def url(self, host="127.0.0.1"):
        return "%s://%s:%d" % ("mqtts" if self.tls else "mqtt", host, self.port)

    def args(self):
        return ["-h", "127.0.0.1", "-p", str(self.port)]

    def pub(self, topic, payload, qos=1, retain=False):
        cmd = [tool("mosquitto_pub")] + self.args() + ["-q", str(qos), "-t", topic, "-s"]
        if retain:
            cmd.append("-r")
        r = subprocess.run(cmd, input=payload.encode() if isinstance(payload, str) else payload,
                           capture_output=True, timeout=20)
        check(r.returncode == 0, "mosquitto_pub failed: %r" % r.stderr)

    def retained(self, topic):
        """The retained message on `topic` (None if there is none)."""
        r = subprocess.run([tool("mosquitto_sub")] + self.args() + ["-t", topic, "-C", "1",
                                                                    "-W", "2"],
                           capture_output=True, timeout=20)
        out = r.stdout.decode(errors="replace").strip()
        return out or None

    def watch(self, cid, topic):
        """A persistent subscriber session (QoS 1) that queues what comes on
        `topic` from now on; collect() takes it."""
        r = subprocess.run([tool("mosquitto_sub")] + self.args() + ["-c", "-i", cid, "-q", "1",
                                                                    "-t", topic, "-E"],
                           capture_output=True, timeout=20)
        check(r.returncode == 0, "mosquitto_sub -E failed: %r" % r.stderr)

    def collect(self, cid, topic, n, timeout=15):
        r = subprocess.run([tool("mosquitto_sub")] + self.args() + ["-c", "-i", cid, "-q", "1",
                                                                    "-t", topic, "-C", str(n),
                                                                    "-W", str(timeout)],
                           capture_output=True, timeout=timeout + 10)
        return r.stdout.decode(errors="replace").splitlines()


class Probe:
    """mqtt_probe as a child: its JSON lines gathered by a thread."""

    def __init__(self, url, cid, prefix, *extra, env=None):
        e = dict(os.environ)
        e.update(env or {})
        self.cid, self.prefix = cid, prefix
        self.err_path = os.path.join(TMP, "probe-%s-%d.err" % (cid, len(PROBES)))
        self.proc = subprocess.Popen([PROBE, url, cid, prefix] + list(extra),
                                     stdout=subprocess.PIPE, stderr=open(self.err_path, "wb"),
                                     env=e)
        SERVERS.append(self.proc)
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        PROBES.append(self)

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"ev": "garbage", "line": line.decode(errors="replace")}
            with self.lock:
                self.events.append(ev)

    def seen(self, kind, since=0, **fields):
        with self.lock:
            evs = list(self.events[since:])
        return [e for e in evs if e.get("ev") == kind and
                all(e.get(k) == v for k, v in fields.items())]

    def wait(self, kind, n=1, since=0, timeout=20, **fields):
        def got():
            if self.proc.poll() is not None and len(self.seen(kind, since, **fields)) < n:
                raise AssertionError("the probe exited (%s) before %s %r: %s" %
                                     (self.proc.returncode, kind, fields, self.tail()))
            evs = self.seen(kind, since, **fields)
            return evs if len(evs) >= n else None
        try:
            return wait_for(got, "%s %r from the probe" % (kind, fields), timeout)
        except AssertionError as e:
            raise AssertionError("%s; last events: %s" % (e, self.tail()))

    def mark(self):
        with self.lock:
            return len(self.events)

    def tail(self):
        with self.lock:
            return json.dumps(self.events[-6:])

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return rc

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()


class Subscriber:
    """mosquitto_sub (QoS 1, `more` options) on `topics`: (topic, payload
    bytes) pairs gathered by a thread; ready once a message of its own,
    published on `mark_topic`, came back."""

    def __init__(self, broker, topics, mark_topic, more=()):
        self.lines = []
        self.lock = threading.Lock()
        cmd = [tool("mosquitto_sub")] + broker.args() + list(more) + ["-q", "1", "-v"]
        for t in topics:
            cmd += ["-t", t]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        SERVERS.append(self.proc)
        threading.Thread(target=self._read, daemon=True).start()
        mark = ("ready-%d" % time.time_ns()).encode()
        for _ in range(20):
            broker.pub(mark_topic, mark)
            try:
                wait_for(lambda: any(p == mark for _, p in self.raw()), "the subscriber", 1)
                return
            except AssertionError:
                continue
        raise AssertionError("the subscriber never subscribed")

    def _read(self):
        for line in self.proc.stdout:
            topic, _, payload = line.rstrip(b"\n").partition(b" ")
            with self.lock:
                self.lines.append((topic.decode(errors="replace"), payload))

    def raw(self):
        with self.lock:
            return list(self.lines)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def sanitizer_clean(p):
    err = p.stderr()
    check("ERROR: AddressSanitizer" not in err and "runtime error" not in err and
          "LeakSanitizer" not in err, "sanitizer report: " + err[-2000:])


def test_qos1_both_ways_retained_status_and_clean_stop():
    b = Broker("a")
    p = Probe(b.url(), "dev-a", "mote/dev-a")
    p.wait("connected", sp=False)
    p.wait("subscribed", granted=1)
    p.wait("published")  # the status "online", acknowledged
    check(b.retained("mote/dev-a/status") == '{"state":"online"}',
          "retained status: %r" % b.retained("mote/dev-a/status"))
    b.watch("w-a", "mote/dev-a/out")
    b.pub("mote/dev-a/in", '{"id":"r1","text":"hello"}')
    ev = p.wait("message")[0]
    check(ev["qos"] == 1 and ev["payload"] == '{"id":"r1","text":"hello"}' and
          ev["topic"] == "mote/dev-a/in" and not ev["dup"], "message: %r" % ev)
    got = b.collect("w-a", "mote/dev-a/out", 1)
    check(got == ['echo:{"id":"r1","text":"hello"}'], "echo seen by a subscriber: %r" % got)
    p.wait("published", n=2)  # the echo, acknowledged by the broker
    check(p.stop() == 0, "exit code after SIGTERM")
    check(p.seen("end")[0]["state"] == "done", "end: %s" % p.tail())
    # The clean stop published its own status, and DISCONNECT kept the
    # will from replacing it.
    st = b.retained("mote/dev-a/status")
    check(st == '{"state":"offline","reason":"SIGTERM"}', "status after SIGTERM: %r" % st)
    check("Received DISCONNECT from dev-a" in b.log(), "broker log: " + b.log()[-400:])
    sanitizer_clean(p)


def test_last_will_after_kill9():
    b = Broker("b")
    p = Probe(b.url(), "dev-b", "mote/dev-b")
    p.wait("published")
    check(b.retained("mote/dev-b/status") == '{"state":"online"}', "online first")
    p.stop(signal.SIGKILL)
    # the broker publishes the will (retained) when the connection drops
    wait_for(lambda: b.retained("mote/dev-b/status") == '{"state":"offline"}',
             "the last will on mote/dev-b/status", 15)
    check("Received DISCONNECT from dev-b" not in b.log(), "a DISCONNECT from a killed client")


def test_broker_restart_and_messages_sent_while_away():
    b = Broker("c")
    fast = ["--backoff", "100", "--backoff-max", "1000"]
    p = Probe(b.url(), "dev-c", "mote/dev-c", *fast)
    p.wait("connected", sp=False)
    p.wait("subscribed")
    # the broker restarts: the client notices, reconnects, and the session
    # is still there (clean session off, persistence on)
    b.stop()
    p.wait("offline")
    m = p.mark()
    b.start()
    p.wait("connected", since=m, sp=True, timeout=30)
    b.pub("mote/dev-c/in", "after-restart")
    p.wait("message", since=m, payload="after-restart")
    # the client is away (killed) while two QoS 1 messages are published,
    # with a broker restart between them; when it is back it gets both, in
    # order, once
    # "online" twice and the echo of after-restart: the echo goes out before
    # the acknowledgement of after-restart, and the broker answered it, so
    # it has read the acknowledgement too (a kill before that is a QoS 1
    # message rightly delivered again, with dup)
    p.wait("published", n=3)
    p.stop(signal.SIGKILL)
    b.pub("mote/dev-c/in", "away-1")
    b.stop()
    b.start()
    b.pub("mote/dev-c/in", "away-2")
    p2 = Probe(b.url(), "dev-c", "mote/dev-c", *fast)
    p2.wait("connected", sp=True)
    msgs = p2.wait("message", n=2)
    check([e["payload"] for e in msgs[:2]] == ["away-1", "away-2"] and
          all(e["qos"] == 1 for e in msgs), "queued messages: %r" % msgs)
    p2.wait("published", n=3)  # online, echo, echo: the acknowledgements went out before
    check(p2.stop() == 0, "clean stop")
    # acknowledged: not delivered again to the next run
    p3 = Probe(b.url(), "dev-c", "mote/dev-c", *fast)
    p3.wait("connected", sp=True)
    b.pub("mote/dev-c/in", "marker")
    p3.wait("message", payload="marker")
    got = [e["payload"] for e in p3.seen("message")]
    check(got == ["marker"], "redelivered after the acknowledgement: %r" % got)
    check(p3.stop() == 0, "clean stop")
    for x in (p2, p3):
        sanitizer_clean(x)


def test_broker_killed_session_lost_subscribes_again():
    b = Broker("e")
    p = Probe(b.url(), "dev-e", "mote/dev-e", "--backoff", "100", "--backoff-max", "1000")
    p.wait("subscribed")
    # kill -9: the broker saved nothing, so the session is gone when it
    # is back; the client subscribes again and messages flow
    b.proc.kill()
    b.proc.wait()
    p.wait("offline")
    m = p.mark()
    b.start()
    p.wait("connected", since=m, sp=False, timeout=30)
    p.wait("subscribed", since=m)
    b.pub("mote/dev-e/in", "still-here")
    p.wait("message", payload="still-here")
    check(p.stop() == 0, "clean stop")
    sanitizer_clean(p)


def test_oversize_message_is_skipped_and_acknowledged():
    import re
    with open(os.path.join(ROOT, "include", "mote", "mote_config.h")) as f:
        limit = int(re.search(r"#define MOTE_MQTT_PAYLOAD_MAX (\d+)", f.read()).group(1))
    b = Broker("d")
    p = Probe(b.url(), "dev-d", "mote/dev-d")
    p.wait("subscribed")
    b.pub("mote/dev-d/in", "x" * (limit + 1000))
    b.pub("mote/dev-d/in", "small")
    evs = p.wait("message", n=2)
    check(evs[0]["oversize"] and evs[0]["len"] == limit + 1000 and "payload" not in evs[0] and
          "MOTE_MQTT_PAYLOAD_MAX" in evs[0]["text"], "oversize: %r" % evs[0])
    check(evs[1]["payload"] == "small", "the next message after it: %r" % evs[1])
    check(p.stop() == 0, "clean stop")
    p2 = Probe(b.url(), "dev-d", "mote/dev-d")
    p2.wait("connected", sp=True)
    b.pub("mote/dev-d/in", "marker")
    p2.wait("message", payload="marker")
    check(len(p2.seen("message")) == 1, "the oversize message came again: %s" % p2.tail())
    p2.stop()
    sanitizer_clean(p)


def test_mqtts_with_the_ca_file_and_a_wrong_one():
    certs = os.path.join(TMP, "certs")
    r = subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), certs],
                       capture_output=True)
    check(r.returncode == 0, "make_certs.sh: %r" % r.stderr)
    b = Broker("tls", tls=(os.path.join(certs, "server.crt"), os.path.join(certs, "server.key")))
    p = Probe(b.url("localhost"), "dev-t", "mote/dev-t",
              "--ca-file", os.path.join(certs, "ca.crt"))
    p.wait("subscribed")
    p.wait("published")
    check(p.stop() == 0, "clean stop over TLS")
    bad = Probe(b.url("localhost"), "dev-t2", "mote/dev-t2",
                "--ca-file", os.path.join(certs, "other.crt"), "--backoff", "200")
    ev = bad.wait("offline")[0]
    check(ev["retry_ms"] > 0 and "verif" in ev["error"].lower(),
          "a server the CA file does not vouch for: %r" % ev)
    check(not bad.seen("connected"), "connected anyway")
    bad.stop()
    sanitizer_clean(p)


def test_credentials_from_the_caller():
    pw = os.path.join(TMP, "passwd")
    r = subprocess.run([tool("mosquitto_passwd"), "-b", "-c", pw, "device", "s3cret"],
                       capture_output=True)
    check(r.returncode == 0, "mosquitto_passwd: %r" % r.stderr)
    b = Broker("auth", extra=["allow_anonymous false", "password_file " + pw])
    p = Probe(b.url(), "dev-u", "mote/dev-u",
              env={"PROBE_MQTT_USERNAME": "device", "PROBE_MQTT_PASSWORD": "s3cret"})
    p.wait("subscribed")
    check(p.stop() == 0, "clean stop")
    bad = Probe(b.url(), "dev-u2", "mote/dev-u2", "--backoff", "200",
                env={"PROBE_MQTT_USERNAME": "device", "PROBE_MQTT_PASSWORD": "wrong"})
    evs = bad.wait("offline", n=2)
    check(all("refused" in e["error"] and e["retry_ms"] > 0 for e in evs[:2]),
          "refused, and tried again later: %r" % evs)
    check(not bad.seen("connected"), "connected with a wrong password")
    bad.stop()


if __name__ == "__main__":
    sys.exit(run_all("test-mqtt", {k: v for k, v in globals().items() if k.startswith("test_")}))
