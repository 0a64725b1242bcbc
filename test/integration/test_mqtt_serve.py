#!/usr/bin/env python3
"""`mote serve --mqtt` (the real binary, sanitizers on) against a private
mosquitto on a loopback port with a generated configuration and the
local test LLM server: requests on PREFIX/in answered once on
PREFIX/out/ID, errors on PREFIX/error, the retained status and the will;
kill -9 with a prompt in flight, a prompt sent while mote is down, a
request id sent twice and a broker's redelivery after a reconnect, the
broker restarted in the middle of a turn, the HTTP API while the broker
is gone, a flood of requests, approvals over MQTT, a broker that sends
garbage, a subscriber that never reads.

    test_mqtt_serve.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from harness import (SERVERS, TMP, check, proc_status, pump, requests_in, run_all, shut,
                     start_server, wait_for)
from test_mqtt import Broker, Subscriber, tool
from test_serve import Serve, journal_of
from harness import fake_mcp, mcp_config

FAST = {"MOTE_MQTT_BACKOFF_MAX_MS": "400"}


class Sub(Subscriber):
    """mosquitto_sub on PREFIX/out/# and PREFIX/error with a persistent
    QoS 1 session (it reconnects by itself after a broker restart, and
    gets what was queued meanwhile); messages gathered by a thread."""

    def __init__(self, broker, prefix, cid):
        self.prefix = prefix
        super().__init__(broker, [prefix + "/out/#", prefix + "/error"], prefix + "/out/_sub",
                         ["-c", "-i", cid])

    def all(self):
        return [(t, p.decode(errors="replace")) for t, p in self.raw()]

    def events(self, conv):
        out = []
        for t, p in self.all():
            if t == self.prefix + "/out/" + conv:
                out.append(json.loads(p))
        return out

    def records(self, conv):
        """The records seen, once each (QoS 1 may deliver one twice)."""
        seen, out = set(), []
        for e in self.events(conv):
            if e["event"] == "record" and e["offset"] not in seen:
                seen.add(e["offset"])
                out.append(e)
        return out

    def answers(self, conv):
        return [r["data"]["text"] for r in self.records(conv)
                if r["data"]["t"] == "assistant" and r["data"].get("stop") == "end_turn"]

    def errors(self):
        return [json.loads(p) for t, p in self.all() if t == self.prefix + "/error"]

    def wait(self, cond, what, timeout=30):
        return wait_for(cond, what, timeout)

    def question(self, conv):
        """The data of the first approval event on out/CONV, once it came."""
        return self.wait(lambda: [e for e in self.events(conv) if e["event"] == "approval"],
                         "the question")[0]["data"]


def mserve(port, broker, dev, state=None, args=(), env=None):
    e = dict(FAST)
    e.update(env or {})
    s = Serve(port, state, args=["--mqtt", broker.url(), "--mqtt-id", dev] + list(args),
              env_more=e)
    connected(s, 1)
    return s


def device(broker, tag, script=None, args=()):
    """A private broker named `broker`, the test LLM server playing
    `script`, `mote serve --mqtt` as device dev-TAG (with `args`) and a
    subscriber to its topics: (Broker, the LLM server's port, its
    request log, Serve, Sub)."""
    b = Broker(broker)
    port, log = start_server(script)
    s = mserve(port, b, "dev-" + tag, args=args)
    return b, port, log, s, Sub(b, "mote/dev-" + tag, "w-" + tag)


def connected(s, n, timeout=30):
    wait_for(lambda: s.log().count("mqtt: connected to") >= n or s.p.poll() is not None,
             "mote connected to the broker (%d)" % n, timeout)
    check(s.p.poll() is None, "mote serve exited: " + s.log()[-2000:])


def stop(s, sig=signal.SIGTERM):
    """Sends `sig` (None: none, it was sent) and waits for the exit code."""
    if sig is not None and s.p.poll() is None:
        s.kill(sig)
    rc = s.wait()
    err = s.log()
    check("ERROR: AddressSanitizer" not in err and "runtime error" not in err and
          "LeakSanitizer" not in err, "sanitizer report: " + err[-3000:])
    return rc


def req(rid, conv, text=None, **more):
    d = {"id": rid, "conversation": conv}
    if text is not None:
        d["text"] = text
    d.update(more)
    return json.dumps(d)


def users(state, conv):
    return [r for r in journal_of(state, conv) if r["t"] == "user"]


def status(b, prefix):
    st = b.retained(prefix + "/status")
    return json.loads(st) if st else None


# ---- requests and answers ---------------------------------------------------------------

def test_prompt_answered_status_and_clean_stop():
    b, _, _, s, sub = device("ms-a", "a")
    try:
        st = wait_for(lambda: status(b, "mote/dev-a"), "the online status")
        check(st["state"] == "online" and st["id"] == "dev-a" and st["in"] == "mote/dev-a/in" and
              st["error"] == "mote/dev-a/error" and st["payload_max"] > 0 and
              st["connects"] == 1, st)
        b.pub("mote/dev-a/in", req("r1", "kitchen", "how warm is it"))
        sub.wait(lambda: sub.answers("kitchen"), "the answer")
        check(sub.answers("kitchen") == ["You said: how warm is it"], sub.answers("kitchen"))
        recs = sub.records("kitchen")
        check([r["data"]["t"] for r in recs] == ["user", "request", "assistant"], recs)
        check(recs[0]["data"]["rid"] == "r1", recs[0])
        # the same objects as the HTTP event stream: records at their offsets, live events
        raw = open(os.path.join(s.state, "conversations", "kitchen.jsonl"), "rb").read()
        for r in recs:
            check(json.loads(raw[r["offset"]:].split(b"\n")[0]) == r["data"], r)
        kinds = [e["event"] for e in sub.events("kitchen")]
        check("text" in kinds and "state" in kinds, kinds)
        sub.wait(lambda: "turn_end" in [e["event"] for e in sub.events("kitchen")], "turn_end")
        # a conversation started over HTTP is on the broker too
        cid = s.create()
        s.say(cid, "over http")
        sub.wait(lambda: sub.answers(cid) == ["You said: over http"], "the HTTP turn's answer")
    finally:
        rc = stop(s)
        sub.stop()
    check(rc == 0, s.log())
    check(status(b, "mote/dev-a") == {"state": "offline", "reason": "SIGTERM"},
          "status after SIGTERM: %r" % status(b, "mote/dev-a"))
    check("Received DISCONNECT from dev-a" in b.log(), "no DISCONNECT: " + b.log()[-500:])


def test_errors_on_the_error_topic():
    import re
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "include", "mote", "mote_config.h")) as f:
        limit = int(re.search(r"#define MOTE_MQTT_PAYLOAD_MAX (\d+)", f.read()).group(1))
    b, port, _, s, sub = device("ms-e", "e")
    cases = [
        ("not json", None, "bad_json"),
        ('{"id":"d","id":"d2","conversation":"c","text":"x"}', None, "bad_json"),
        ('{"conversation":"c","text":"x"}', None, "bad_field"),
        (req("e3", "bad id!", "x"), "e3", "bad_field"),
        (req("e4", "c", None), "e4", "bad_field"),
        (req("e5", "c", "x", cancel=True), "e5", "bad_field"),
        (req("e6", "c", 42), "e6", "bad_field"),
        (req("e7", "c", " \n"), "e7", "empty"),
        (req("e8", "nowhere", cancel=True), "e8", "unknown_conversation"),
        (req("e9", "nowhere", approve={"call_id": "x", "answer": "yes"}), "e9",
         "unknown_conversation"),
        (req("e10", "c", approve={"call_id": "x", "answer": "maybe"}), "e10", "bad_field"),
        (req("e11", "c", cancel=True), "e11", "idle"),
        ("x" * (limit + 10), None, "too_large"),
    ]
    try:
        for payload, _, _ in cases:
            b.pub("mote/dev-e/in", payload)
        sub.wait(lambda: len(sub.errors()) >= len(cases), "%d errors" % len(cases))
        errs = sub.errors()
        for (payload, rid, code), e in zip(cases, errs):
            check(e["id"] == rid and e["error"] == code and e["message"], (payload[:60], e))
        check("MOTE_MQTT_PAYLOAD_MAX" in errs[-1]["message"], errs[-1])
        check(errs[3]["conversation"] is None and errs[4]["conversation"] == "c", errs[3:5])
        check(not os.path.exists(os.path.join(s.state, "conversations", "c.jsonl")) or
              users(s.state, "c") == [], "a refused request ran")
        # still serving: a good request after all that
        b.pub("mote/dev-e/in", req("ok", "c", "still here"))
        sub.wait(lambda: sub.answers("c") == ["You said: still here"], "a good request")
        check("refused: bad_json" in s.log() and "refused: too_large" in s.log(), s.log())
        # a request published retained runs once (the broker passes it on as
        # any other); when mote subscribes again after a restart the broker
        # sends it again, flagged retained: refused, not run
        b.pub("mote/dev-e/in", req("e12", "c", "retained"), retain=True)
        sub.wait(lambda: len(sub.answers("c")) == 2, "the retained request's answer")
        check(stop(s) == 0, s.log())
        s = mserve(port, b, "dev-e", state=s.state)
        sub.wait(lambda: any(e["id"] == "e12" for e in sub.errors()), "the retained one again")
        check([e["error"] for e in sub.errors() if e["id"] == "e12"] == ["retained"],
              sub.errors()[-1])
        check([x["rid"] for x in users(s.state, "c")] == ["ok", "e12"], users(s.state, "c"))
    finally:
        subprocess.run([tool("mosquitto_pub")] + b.args() + ["-t", "mote/dev-e/in", "-r", "-n"],
                       capture_output=True, timeout=20)  # the retained request cleared
        check(stop(s) == 0, s.log())
        sub.stop()


def test_puback_only_after_the_record_is_synced():
    """The order of the system calls (strace): the user record with the
    request's id is written to the journal, the journal is synced, and
    only then does the PUBACK (0x40 0x02) go to the broker."""
    from harness import strace_cmd
    b = Broker("ms-o2")
    port, _ = start_server()
    trace = os.path.join(TMP, "puback.trace")
    state = os.path.join(TMP, "puback-state")
    os.makedirs(state)
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e.update(FAST, ANTHROPIC_API_KEY="sk-test")
    cmd = strace_cmd(trace, "write,send,sendto,fdatasync,fsync")  # (Skip where it cannot)
    err = open(os.path.join(state, "err"), "w")
    from test_serve import MOTE
    p = subprocess.Popen(cmd + ["-x", "-s", "4096", MOTE, "serve", "--state-dir", state, "--base-url",
                                "http://127.0.0.1:%d" % port, "--mqtt", b.url(), "--mqtt-id",
                                "dev-o2"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=err, env=e)
    SERVERS.append(p)
    try:
        wait_for(lambda: "mqtt: connected to" in open(os.path.join(state, "err")).read(),
                 "connected", 60)
        b.pub("mote/dev-o2/in", req("sync-me", "k", "durable first"))
        wait_for(lambda: os.path.exists(os.path.join(state, "conversations", "k.jsonl")) and
                 "assistant" in open(os.path.join(state, "conversations", "k.jsonl")).read(),
                 "the answer", 60)
    finally:
        # mote is strace's child: the signal goes to it, strace ends with it
        with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
            for child in f.read().split():
                os.kill(int(child), signal.SIGTERM)
        p.wait(timeout=60)
        err.close()
    lines = open(trace).read().splitlines()
    def first(pred, what):
        for i, line in enumerate(lines):
            if pred(i, line):
                return i
        raise AssertionError("no %s in the trace: %s" % (what, "\n".join(lines)[-3000:]))
    i_rec = first(lambda i, l: l.startswith("write(") and "k.jsonl" in l and
                  '\\"rid\\":\\"sync-me\\"' in l, "user record")
    i_sync = first(lambda i, l: i > i_rec and "k.jsonl" in l and
                   ("fdatasync(" in l or "fsync(" in l), "sync")
    i_ack = first(lambda i, l: l.startswith(("send", "write")) and "socket:" in l and
                  "\\x40\\x02\\x00" in l, "PUBACK")
    check(i_rec < i_sync < i_ack, "record %d, sync %d, PUBACK %d" % (i_rec, i_sync, i_ack))


def test_same_request_id_twice_runs_once():
    b, port, log, s, sub = device("ms-d", "d", [{"text": "answer %d" % i, "delay_ms": 30}
                                                for i in range(4)])
    try:
        # the second copy comes while the first one's turn runs, the third after it
        b.pub("mote/dev-d/in", req("same", "k", "once please"))
        b.pub("mote/dev-d/in", req("same", "k", "once please"))
        sub.wait(lambda: sub.answers("k"), "the answer")
        b.pub("mote/dev-d/in", req("same", "k", "once please"))
        b.pub("mote/dev-d/in", req("other", "k", "and this"))
        sub.wait(lambda: len(sub.answers("k")) == 2, "the second request's answer")
        u = users(s.state, "k")
        check([(x["text"], x["rid"]) for x in u] == [("once please", "same"), ("and this", "other")],
              u)
        check(sub.answers("k") == ["answer 0", "answer 1"], sub.answers("k"))
        check(s.log().count("request same is in the journal already") == 2, s.log())
        check(len(requests_in(log)) == 2, "model requests: %d" % len(requests_in(log)))
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


class DropAck:
    """A TCP proxy between mote and the broker that, once armed, closes
    both sides instead of passing on the next PUBACK mote sends: the
    broker never hears of it and sends the message again after mote
    reconnects (the session kept)."""

    def __init__(self, broker_port):
        self.broker_port = broker_port
        self.armed = False
        self.dropped = 0
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.broker_port))
            threading.Thread(target=pump, args=(u, c), daemon=True).start()
            threading.Thread(target=self._up, args=(c, u), daemon=True).start()

    def _up(self, c, u):
        """mote -> broker, packet by packet."""
        buf = b""
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                buf += d
                while len(buf) >= 2:
                    n, mul, i = 0, 1, 1
                    while i < len(buf):
                        n += (buf[i] & 127) * mul
                        mul *= 128
                        i += 1
                        if not buf[i - 1] & 128:
                            break
                    else:
                        break
                    if len(buf) < i + n:
                        break
                    pkt, buf = buf[:i + n], buf[i + n:]
                    if pkt[0] >> 4 == 4 and self.armed:
                        self.armed = False
                        self.dropped += 1
                        raise OSError("dropped")
                    u.sendall(pkt)
        except OSError:
            pass
        shut(c, u)


def test_broker_redelivery_after_a_reconnect_runs_once():
    b = Broker("ms-r")
    port, log = start_server()
    proxy = DropAck(b.port)
    s = Serve(port, args=["--mqtt", "mqtt://127.0.0.1:%d" % proxy.port, "--mqtt-id", "dev-r"],
              env_more=FAST)
    connected(s, 1)
    sub = Sub(b, "mote/dev-r", "w-r")
    try:
        proxy.armed = True
        b.pub("mote/dev-r/in", req("redo", "k", "exactly once"))
        # the PUBACK is lost with the connection; mote reconnects and the
        # broker sends the message again (DUP)
        connected(s, 2)
        wait_for(lambda: "request redo is in the journal already" in s.log(),
                 "the redelivered request recognised")
        check(proxy.dropped == 1, "the proxy dropped %d" % proxy.dropped)
        sub.wait(lambda: sub.answers("k"), "the answer")
        check([x["rid"] for x in users(s.state, "k")] == ["redo"], users(s.state, "k"))
        check(sum(1 for r in requests_in(log) if "exactly once" in json.dumps(r["body"])) == 1,
              "the model was asked twice")
        check("the broker kept the session" in s.log(), s.log())
        # acknowledged this time: a restart of mote does not bring it back
        stop(s)
        s = Serve(port, s.state, args=["--mqtt", "mqtt://127.0.0.1:%d" % proxy.port,
                                       "--mqtt-id", "dev-r"], env_more=FAST)
        connected(s, 1)
        b.pub("mote/dev-r/in", req("after", "k", "next"))
        sub.wait(lambda: len(sub.answers("k")) == 2, "the next answer")
        check("redo" not in s.log(), s.log())
        check([x["rid"] for x in users(s.state, "k")] == ["redo", "after"], users(s.state, "k"))
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_prompt_sent_while_mote_is_down():
    b, port, _, s, sub = device("ms-w", "w")
    try:
        check(stop(s) == 0, s.log())
        # mote is away: the broker keeps the requests (clean session off)
        b.pub("mote/dev-w/in", req("w1", "away", "sent while down"))
        b.pub("mote/dev-w/in", req("w2", "away", "and another"))
        s = mserve(port, b, "dev-w", state=s.state)
        sub.wait(lambda: len(sub.answers("away")) == 2, "both answers")
        check(sub.answers("away") == ["You said: sent while down", "You said: and another"],
              sub.answers("away"))
        check([x["rid"] for x in users(s.state, "away")] == ["w1", "w2"], users(s.state, "away"))
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_kill9_with_a_prompt_in_flight_and_the_will():
    b, port, log, s, sub = device("ms-k", "k", [{"stall": 60, "after_text": "half an"}])
    try:
        wait_for(lambda: (status(b, "mote/dev-k") or {}).get("state") == "online", "online")
        b.pub("mote/dev-k/in", req("k1", "k", "answer me"))
        sub.wait(lambda: any(e["event"] == "text" for e in sub.events("k")), "the answer streams")
        s.kill(signal.SIGKILL)
        s.wait()
        # the will: the broker says offline for the killed client
        wait_for(lambda: status(b, "mote/dev-k") == {"state": "offline",
                                                     "reason": "connection lost"},
                 "the last will", 20)
        check("Received DISCONNECT from dev-k" not in b.log(), "a killed client disconnected")
        # a second request sent while mote is dead
        b.pub("mote/dev-k/in", req("k2", "k", "and then"))
        s = mserve(port, b, "dev-k", state=s.state)
        # the interrupted turn recovers as the HTTP API's does (an auto
        # record, the request again), then the request sent while down
        sub.wait(lambda: len(sub.answers("k")) == 2, "both answers", 40)
        check(sub.answers("k") == ["You said: answer me", "You said: and then"], sub.answers("k"))
        j = journal_of(s.state, "k")
        check([x["rid"] for x in j if x["t"] == "user"] == ["k1", "k2"], j)
        check("auto" in [x["t"] for x in j], "no auto record: %r" % [x["t"] for x in j])
        check(sum(1 for r in requests_in(log) if "answer me" in json.dumps(r["body"])) >= 2,
              "the interrupted request went again")
        wait_for(lambda: (status(b, "mote/dev-k") or {}).get("state") == "online", "online again")
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_broker_restarted_mid_conversation():
    b, _, _, s, sub = device("ms-b", "b", [{"text": "a slow answer in many small pieces " * 3,
                                            "delay_ms": 40}])
    try:
        b.pub("mote/dev-b/in", req("b1", "k", "slowly"))
        sub.wait(lambda: any(e["event"] == "text" for e in sub.events("k")), "the answer streams")
        b.stop()  # mid-answer: mote keeps going, its queue holds what it publishes
        wait_for(lambda: "mqtt: " in s.log().split("connected to")[-1], "mote saw the broker go")
        b.start()
        connected(s, 2)
        sub.wait(lambda: sub.answers("k"), "the answer after the restart", 40)
        check(sub.answers("k") == ["a slow answer in many small pieces " * 3], sub.answers("k"))
        # and the conversation goes on
        b.pub("mote/dev-b/in", req("b2", "k", "after the restart"))
        sub.wait(lambda: len(sub.answers("k")) == 2, "the next answer")
        check([x["rid"] for x in users(s.state, "k")] == ["b1", "b2"], users(s.state, "k"))
        st = wait_for(lambda: status(b, "mote/dev-b"), "the status")
        check(st["state"] == "online" and st["connects"] >= 2, st)
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_sigterm_drains_publishes_the_answer_then_offline():
    b = Broker("ms-t")
    text = "an answer that takes a while to stream "
    port, _ = start_server([{"text": text * 4, "delay_ms": 120},
                            {"stall": 60, "after_text": "never ends"}])
    s = mserve(port, b, "dev-t")
    sub = Sub(b, "mote/dev-t", "w-t")
    try:
        b.pub("mote/dev-t/in", req("t1", "k", "drain me"))
        sub.wait(lambda: any(e["event"] == "text" for e in sub.events("k")), "the answer streams")
        s.kill(signal.SIGTERM)
        # the turn finishes within the drain, its answer reaches the broker,
        # then the offline status, then DISCONNECT
        check(stop(s, None) == 0, s.log())
        sub.wait(lambda: sub.answers("k") == [text * 4], "the drained answer")
        check(status(b, "mote/dev-t") == {"state": "offline", "reason": "SIGTERM"},
              status(b, "mote/dev-t"))
        check("Received DISCONNECT from dev-t" in b.log(), b.log()[-400:])
        # a second signal during a drain that does not end: the connection
        # closes at once, without DISCONNECT: the broker publishes the will
        s = mserve(port, b, "dev-t", state=s.state)
        wait_for(lambda: (status(b, "mote/dev-t") or {}).get("state") == "online", "online")
        b.pub("mote/dev-t/in", req("t2", "k", "stall"))
        sub.wait(lambda: [e for e in sub.events("k") if e["event"] == "text" and
                          "never" in e["data"]["text"]], "the stalled answer")
        s.kill(signal.SIGTERM)
        wait_for(lambda: "shutting down" in s.log(), "the drain")
        check(stop(s) == 143, s.log())
        wait_for(lambda: status(b, "mote/dev-t") == {"state": "offline",
                                                     "reason": "connection lost"},
                 "the will after a forced stop")
    finally:
        if s.p.poll() is None:
            stop(s, signal.SIGKILL)
        sub.stop()


def test_http_keeps_answering_while_the_broker_is_gone():
    b = Broker("ms-h")
    port, _ = start_server()
    s = mserve(port, b, "dev-h")
    try:
        b.proc.kill()  # kill -9: gone, its session too
        b.proc.wait()
        wait_for(lambda: s.log().count("again in") >= 3, "mote tries again, and again")
        t0 = time.time()
        st, h = s.req("GET", "/v1/health")
        check(st == 200 and h["status"] == "ok", h)
        cid = s.create()
        s.say(cid, "no broker")
        s.wait_state(cid, "idle")
        check(journal_of(s.state, cid)[-1]["text"] == "You said: no broker", "answered")
        check(time.time() - t0 < 10, "the HTTP API was slow: %.1f s" % (time.time() - t0))
        # the broker comes back: mote subscribes again (a new session)
        b.start()
        connected(s, 2)
        sub = Sub(b, "mote/dev-h", "w-h")
        b.pub("mote/dev-h/in", req("h1", "m", "back"))
        sub.wait(lambda: sub.answers("m") == ["You said: back"], "a request after the return")
        sub.stop()
        log = s.log()
        # (a broker killed with bytes of mote's unread resets the connection)
        check(("closed the connection" in log or "connection reset" in log) and "refused" in log,
              log)
    finally:
        check(stop(s) == 0, s.log())


def test_requests_wait_for_a_busy_conversation_and_cancel_goes_first():
    b = Broker("ms-q")
    port, _ = start_server([{"stall": 60, "after_text": "long"},
                            {"text": "second", "delay_ms": 20},
                            {"text": "third"}])
    s = mserve(port, b, "dev-q")
    sub = Sub(b, "mote/dev-q", "w-q")
    try:
        b.pub("mote/dev-q/in", req("q1", "k", "first"))
        sub.wait(lambda: any(e["event"] == "text" for e in sub.events("k")), "the first streams")
        b.pub("mote/dev-q/in", req("q2", "k", "second"))
        b.pub("mote/dev-q/in", req("q3", "k", "third"))
        # the cancel is not stuck behind the two waiting requests
        b.pub("mote/dev-q/in", req("q4", "k", cancel=True))
        sub.wait(lambda: len(sub.answers("k")) == 2, "the waiting requests answered")
        check(sub.answers("k") == ["second", "third"], sub.answers("k"))
        j = journal_of(s.state, "k")
        check([x["rid"] for x in j if x["t"] == "user"] == ["q1", "q2", "q3"], j)
        check([x for x in j if x["t"] == "assistant"][0]["interrupted"], "the first was cut")
        check(sub.errors() == [], sub.errors())
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_approval_over_mqtt():
    target = os.path.join(TMP, "approved-%d.txt" % os.getpid())
    b, _, _, s, sub = device("ms-p", "p",
                             [{"tool": "write_file", "input": {"path": target, "content": "ok"}},
                              {"text": "written"}], args=["--ask", "write_file"])
    try:
        b.pub("mote/dev-p/in", req("p1", "k", "write it"))
        ev = sub.question("k")
        check(ev["name"] == "write_file" and ev["input"]["path"] == target, ev)
        # the library's display, as the CLI and the page show it
        lines = ev["display"]["lines"]
        check([l["kind"] for l in lines] == ["tool", "field", "size", "line"] and
              lines[1]["text"] == [target] and lines[1]["file"] == "new" and
              lines[3]["text"] == ["ok"] and ev["display"]["cut"] is False, ev["display"])
        # a message to a conversation that waits for an answer is refused
        b.pub("mote/dev-p/in", req("p2", "k", "meanwhile"))
        sub.wait(lambda: [e for e in sub.errors() if e["id"] == "p2"], "busy")
        check([e["error"] for e in sub.errors() if e["id"] == "p2"] == ["busy"], sub.errors())
        check(not os.path.exists(target), "ran without an answer")
        b.pub("mote/dev-p/in", req("p3", "k", approve={"call_id": ev["call_id"],
                                                       "answer": "yes"}))
        sub.wait(lambda: sub.answers("k") == ["written"], "the answer after the approval")
        check(open(target).read() == "ok", "the approved tool ran")
        # the same approval again: done already, no error, nothing runs
        b.pub("mote/dev-p/in", req("p3", "k", approve={"call_id": ev["call_id"],
                                                       "answer": "yes"}))
        wait_for(lambda: "request p3 was done already" in s.log(), "the repeat recognised")
        check([e for e in sub.errors() if e["id"] == "p3"] == [], sub.errors())
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_mcp_question_over_mqtt():
    # An MCP server's question during a turn started over MQTT: the
    # elicitation event on out/ID, the answer as "elicit" on in.
    cfg = mcp_config({"f": fake_mcp("--features")})
    b, _, _, s, sub = device("ms-q", "q",
                             [{"tool": "f__ask", "input": {"mode": "flat"}}, {"text": "done"}],
                             args=["--mcp-config", cfg, "--allow", "f__ask"])
    try:
        wait_for(lambda: "mcp f: ready" in s.log(), "the MCP server ready")
        b.pub("mote/dev-q/in", req("q1", "k", "ask me"))
        q = sub.wait(lambda: [e for e in sub.events("k") if e["event"] == "elicitation"],
                     "the question on out/k")[0]["data"]
        check(q["server"] == "f" and [f["name"] for f in q["fields"]] ==
              ["name", "age", "ok", "color"] and q["timeout_ms"] == 600000, q)
        b.pub("mote/dev-q/in", req("q2", "k", elicit={"ask_id": q["ask_id"], "action": "accept",
                                                      "content": {"name": 7}}))
        sub.wait(lambda: [e for e in sub.errors() if e["id"] == "q2"], "the refusal")
        e = [e for e in sub.errors() if e["id"] == "q2"][0]
        check(e["error"] == "bad_content" and "name" in e["message"], e)
        b.pub("mote/dev-q/in", req("q3", "k", elicit={"ask_id": q["ask_id"], "action": "accept",
                                                      "content": {"name": "Bo", "color": "red"}}))
        sub.wait(lambda: sub.answers("k") == ["done"], "the turn's answer")
        res = [r["text"] for r in journal_of(s.state, "k") if r["t"] == "tool_result"]
        check(res == ['elicited: {"action": "accept", "content": {"color": "red", "name": '
                      '"Bo"}}'], res)
        ends = [e["data"] for e in sub.events("k") if e["event"] == "elicitation_end"]
        check(ends and ends[0]["action"] == "accept" and ends[0]["by"] == "mqtt", ends)
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_flood_of_requests_is_bounded_and_all_answered_once():
    b, _, log, s, sub = device("ms-f", "f")
    n, convs = 120, ["f%d" % i for i in range(12)]
    try:
        lines = "".join(req("f%d" % i, convs[i % len(convs)], "flood %d" % i) + "\n"
                        for i in range(n))
        r = subprocess.run([tool("mosquitto_pub")] + b.args() + ["-q", "1", "-t", "mote/dev-f/in",
                                                                 "-l"],
                           input=lines.encode(), capture_output=True, timeout=60)
        check(r.returncode == 0, r.stderr)
        # meanwhile the HTTP API answers at once
        t0 = time.time()
        check(s.req("GET", "/v1/health")[0] == 200, "health")
        check(time.time() - t0 < 5, "health took %.1f s" % (time.time() - t0))
        wait_for(lambda: sum(len(sub.answers(c)) for c in convs) >= n, "%d answers" % n, 180)
        for c in convs:
            u = users(s.state, c)
            want = ["f%d" % i for i in range(n) if convs[i % len(convs)] == c]
            check([x["rid"] for x in u] == want, (c, [x["rid"] for x in u]))
        check(len(requests_in(log)) == n, "model requests: %d" % len(requests_in(log)))
        check("left out" not in s.log(), s.log()[-2000:])
        hwm = proc_status(s.p.pid, "VmHWM")
        check(0 < hwm < 200000, "peak RSS %d kB" % hwm)  # ASan's shadow included
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_more_conversations_than_out_slots_one_after_another():
    """Each conversation holds an out slot while it publishes; an idle
    one's slot goes to the next conversation, so any number of
    conversations, one after another, all reach the broker."""
    from harness import config_value
    n = config_value("MOTE_SERVE_MQTT_OUTS") + 3
    b, _, _, s, sub = device("ms-o", "o")
    try:
        for i in range(n):
            b.pub("mote/dev-o/in", req("o%d" % i, "c%d" % i, "number %d" % i))
            sub.wait(lambda: sub.answers("c%d" % i) == ["You said: number %d" % i],
                     "conversation %d's answer" % i)
        check("left out" not in s.log(), s.log())
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_a_subscriber_that_never_reads():
    b = Broker("ms-s", extra=["max_queued_messages 100"])
    port, _ = start_server()
    s = mserve(port, b, "dev-s")
    sub = Sub(b, "mote/dev-s", "w-s")
    # a raw subscriber on every event, QoS 1, that never reads a byte
    slow = socket.create_connection(("127.0.0.1", b.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    cid = b"slow"
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + len(cid).to_bytes(2, "big") + cid
    slow.sendall(bytes([0x10, len(body)]) + body)
    flt = b"mote/dev-s/out/#"
    body = b"\x00\x01" + len(flt).to_bytes(2, "big") + flt + b"\x01"
    slow.sendall(bytes([0x82, len(body)]) + body)
    try:
        for i in range(20):
            b.pub("mote/dev-s/in", req("s%d" % i, "k%d" % (i % 3), "x" * 2000 + " %d" % i))
        wait_for(lambda: sum(len(sub.answers("k%d" % k)) for k in range(3)) == 20,
                 "every answer reaches the reading subscriber", 60)
        check(s.req("GET", "/v1/health")[0] == 200, "health")
    finally:
        slow.close()
        check(stop(s) == 0, s.log())
        sub.stop()


def test_a_broker_that_sends_garbage():
    """A fake broker: CONNACK, then bytes no broker sends. mote says so in
    its log, closes, tries again, and its HTTP API never stops."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    bport = ls.getsockname()[1]
    conns = []

    def serve():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            conns.append(c)
            try:
                c.recv(4096)  # CONNECT
                c.sendall(b"\x20\x02\x00\x00")  # CONNACK accepted
                c.sendall(b"\xf0\xff\xff\xff\xff\x7f")  # type 15, a five-byte length
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    port, _ = start_server()
    s = Serve(port, args=["--mqtt", "mqtt://127.0.0.1:%d" % bport, "--mqtt-id", "dev-g"],
              env_more=FAST)
    try:
        wait_for(lambda: len(conns) >= 3, "mote tries again", 30)
        cid = s.create()
        s.say(cid, "garbage around")
        s.wait_state(cid, "idle")
        check(s.req("GET", "/v1/health")[0] == 200, "health")
        log = s.log()
        check("mqtt: " in log and ("malformed" in log or "length" in log or "bad" in log), log)
    finally:
        ls.close()
        check(stop(s) == 0, s.log())
        for c in conns:
            c.close()


def test_mqtts_beside_the_models_https():
    """Two TLS sessions at once: the broker's (mqtts) and the model's
    (https), both verified with --ca-file."""
    from harness import ROOT
    certs = os.path.join(TMP, "certs-serve")
    r = subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), certs],
                       capture_output=True)
    check(r.returncode == 0, r.stderr)
    ca = os.path.join(certs, "ca.crt")
    b = Broker("ms-tls", tls=(os.path.join(certs, "server.crt"), os.path.join(certs, "server.key")))
    tls = ["-h", "localhost", "-p", str(b.port), "--cafile", ca]
    port, _ = start_server([{"text": "over TLS twice", "delay_ms": 20}], cert="server",
                           certs_dir=certs)
    s = Serve(port, args=["--mqtt", b.url("localhost"), "--mqtt-id", "dev-tls", "--ca-file", ca,
                          "--base-url", "https://localhost:%d" % port], env_more=FAST)
    sub = None
    try:
        connected(s, 1)
        sub = subprocess.Popen([tool("mosquitto_sub")] + tls + ["-q", "1", "-t",
                                                                "mote/dev-tls/out/k", "-C", "3"],
                               stdout=subprocess.PIPE)
        SERVERS.append(sub)
        wait_for(lambda: b.log().count("Received SUBSCRIBE from") >= 2, "the subscriber")
        r = subprocess.run([tool("mosquitto_pub")] + tls +
                           ["-q", "1", "-t", "mote/dev-tls/in", "-m", req("t1", "k", "secure")],
                           capture_output=True, timeout=20)
        check(r.returncode == 0, r.stderr)
        s.wait_state("k", "idle")
        j = journal_of(s.state, "k")
        check(j[-1]["t"] == "assistant" and j[-1]["text"] == "over TLS twice", j)
        out, _ = sub.communicate(timeout=20)
        got = [json.loads(x) for x in out.decode().splitlines()]
        check([e["data"]["t"] for e in got if e["event"] == "record"][:2] == ["user", "request"],
              got)
    finally:
        if sub is not None and sub.poll() is None:
            sub.kill()
        check(stop(s) == 0, s.log())


def test_settings_refused_at_start():
    port, _ = start_server()
    for args, env, want in [
        (["--mqtt", "http://x"], {}, "MQTT"),
        (["--mqtt", "mqtt://127.0.0.1:1", "--mqtt-prefix", "a/#"], {}, "prefix"),
        (["--mqtt", "mqtt://127.0.0.1:1", "--mqtt-prefix", "p" * 300], {}, "too long"),
        (["--mqtt-id", "x"], {}, "need --mqtt"),
        (["--mqtt", "mqtt://127.0.0.1:1"], {"MOTE_MQTT_PASSWORD": "p"}, "USERNAME"),
    ]:
        s = Serve(port, args=args, env_more=env, wait=False)
        rc = s.wait()
        check(rc == 2 and want in s.log(), (args, rc, s.log()))


def test_credentials_leave_the_environment():
    pw = os.path.join(TMP, "passwd-serve")
    r = subprocess.run([tool("mosquitto_passwd"), "-b", "-c", pw, "device", "s3cret-x"],
                       capture_output=True)
    check(r.returncode == 0, r.stderr)
    b = Broker("ms-c", extra=["allow_anonymous false", "password_file " + pw])
    port, _ = start_server()
    s = mserve(port, b, "dev-c", env={"MOTE_MQTT_USERNAME": "device",
                                      "MOTE_MQTT_PASSWORD": "s3cret-x"})
    try:
        env_of = open("/proc/%d/environ" % s.p.pid, "rb").read()
        check(b"s3cret-x" not in env_of, "the password is still in mote's environment")
        check("bad user name" not in s.log(), s.log())
    finally:
        check(stop(s) == 0, s.log())
    bad = Serve(port, args=["--mqtt", b.url(), "--mqtt-id", "dev-c2"],
                env_more=dict(FAST, MOTE_MQTT_USERNAME="device", MOTE_MQTT_PASSWORD="wrong"))
    try:
        wait_for(lambda: "bad user name or password" in bad.log() or
                 "not authorized" in bad.log(), "the refusal in the log")
        check(bad.req("GET", "/v1/health")[0] == 200, "serving anyway")
    finally:
        stop(bad)


if __name__ == "__main__":
    sys.exit(run_all("test-mqtt-serve", dict(globals())))
