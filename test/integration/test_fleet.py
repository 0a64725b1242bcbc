#!/usr/bin/env python3
"""`mote serve` run as one device of a fleet (the real binary, sanitizers
on), against a private mosquitto and the local test LLM server: an MQTT
request to a long conversation on disk waits for its load (never refused
"would block"), MQTT requests read as strictly as HTTP bodies (NULs,
duplicate and escaped duplicate keys), a conversation's creation never
replaces what is at its journal's path, one `mote serve` per state
directory, links inside the state directory refused.

    test_fleet.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import json
import os
import signal
import subprocess
import sys
import time

from harness import TMP, check, run_all, start_server, wait_for
from test_mqtt import Broker
from test_mqtt_serve import Sub, mserve, req, stop, users
from test_serve import Serve, journal_of
from test_service import write_journal


# ---- an MQTT request to a conversation on disk ------------------------------------------

def test_mqtt_request_to_a_long_conversation_on_disk_is_answered():
    """A journal of 1 MB is loaded over many loop turns: the request waits
    for it (unacknowledged) and is answered; a second long one loading
    meanwhile waits its turn too. Never "storage failed: would block"."""
    b = Broker("fl-big")
    port, _ = start_server()
    state = os.path.join(TMP, "fl-big-state")
    os.makedirs(state, mode=0o700)
    write_journal(state, "big1", 1 << 20)
    write_journal(state, "big2", 1 << 20)
    s = mserve(port, b, "dev-big", state=state)
    sub = Sub(b, "mote/dev-big", "w-big")
    try:
        b.pub("mote/dev-big/in", req("b1", "big1", "one more question"))
        b.pub("mote/dev-big/in", req("b2", "big2", "and another"))
        sub.wait(lambda: sub.answers("big1") and sub.answers("big2"), "both answers", 60)
        check(sub.answers("big1") == ["You said: one more question"], sub.answers("big1"))
        check(sub.answers("big2") == ["You said: and another"], sub.answers("big2"))
        check(sub.errors() == [], sub.errors())
        check("would block" not in s.log(), s.log()[-2000:])
        check([u["rid"] for u in users(state, "big1") if "rid" in u] == ["b1"],
              users(state, "big1")[-1])
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()


# ---- MQTT requests as strict as HTTP bodies ---------------------------------------------

def test_mqtt_requests_refuse_nuls_and_duplicate_keys():
    b = Broker("fl-strict")
    target = os.path.join(TMP, "strict-%d.txt" % os.getpid())
    port, _ = start_server([{"tool": "write_file", "input": {"path": target, "content": "ok"}},
                            {"text": "written"}, {"text": "later"}])
    s = mserve(port, b, "dev-st", args=["--ask", "write_file"])
    sub = Sub(b, "mote/dev-st", "w-st")
    try:
        b.pub("mote/dev-st/in", req("s1", "k", "write it"))
        ev = sub.wait(lambda: [e for e in sub.events("k") if e["event"] == "approval"],
                      "the question")[0]["data"]
        cid = json.dumps(ev["call_id"])
        bad = [
            # a NUL in the request id or the conversation: refused, not cut
            ('{"id":"a\\u0000x","conversation":"k","text":"x"}', "bad_field"),
            ('{"id":"n1","conversation":"k\\u0000y","text":"x"}', "bad_field"),
            # the same key twice, one of them escaped
            ('{"id":"n2","\\u0069d":"n3","conversation":"k","text":"x"}', "bad_json"),
            # an approval every other reader sees as "no"
            ('{"id":"n4","conversation":"k","approve":{"call_id":%s,"answer":"yes",'
             '"answer":"no"}}' % cid, "bad_json"),
            ('{"id":"n5","conversation":"k","approve":{"call_id":%s,"answer":"yes",'
             '"\\u0061nswer":"no"}}' % cid, "bad_json"),
            # a call id with a NUL after it
            ('{"id":"n6","conversation":"k","approve":{"call_id":%s,"answer":"yes"}}'
             % (cid[:-1] + '\\u0000z"'), "bad_field"),
            ('{"id":"n7","conversation":"k","approve":{"call_id":%s,"answer":"yes",'
             '"reason":"a\\u0000b"}}' % cid, "bad_field"),
        ]
        for payload, _ in bad:
            b.pub("mote/dev-st/in", payload)
        sub.wait(lambda: len(sub.errors()) >= len(bad), "%d errors" % len(bad))
        errs = sub.errors()
        check([e["error"] for e in errs] == [code for _, code in bad], errs)
        check(not os.path.exists(target), "an ambiguous approval ran the call")
        check(journal_of(s.state, "k")[-1]["t"] != "tool_result", "the call was answered")
        # the question still waits; a clean approval runs it
        b.pub("mote/dev-st/in", req("ok", "k", approve={"call_id": ev["call_id"],
                                                        "answer": "yes"}))
        sub.wait(lambda: sub.answers("k") == ["written"], "the approved call's answer")
        # "a" is a new request id, never taken as the one cut at its NUL
        b.pub("mote/dev-st/in", req("a", "k", "again"))
        sub.wait(lambda: len(sub.answers("k")) == 2, "request a answered")
        check([u["rid"] for u in users(s.state, "k")] == ["s1", "a"], users(s.state, "k"))
        check(not os.path.exists(os.path.join(s.state, "conversations", "k\0y.jsonl")), "")
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()


# ---- the state directory: creation, one server, links -----------------------------------

def test_creating_a_conversation_never_replaces_what_is_there():
    port, _ = start_server()
    s = Serve(port)
    convs = os.path.join(s.state, "conversations")
    os.makedirs(convs, exist_ok=True)
    elsewhere = os.path.join(TMP, "not-a-journal-%d" % os.getpid())
    with open(elsewhere, "w") as f:
        f.write("precious\n")
    os.symlink(elsewhere, os.path.join(convs, "lnk.jsonl"))
    os.mkfifo(os.path.join(convs, "fifo.jsonl"))
    with open(os.path.join(convs, "empty.jsonl"), "w"):
        pass
    try:
        for cid in ("lnk", "fifo", "empty"):
            st, body = s.req("POST", "/v1/conversations", {"id": cid})
            check(st == 409 and body["error"] == "exists", (cid, st, body))
        check(os.path.islink(os.path.join(convs, "lnk.jsonl")), "the link was replaced")
        check(open(elsewhere).read() == "precious\n", "the link's target changed")
        import stat as st_mod
        check(st_mod.S_ISFIFO(os.lstat(os.path.join(convs, "fifo.jsonl")).st_mode),
              "the FIFO was replaced")
        # a new id still works, and no temporary is left behind
        st, body = s.req("POST", "/v1/conversations", {"id": "fresh"})
        check(st == 201, (st, body))
        check(not [n for n in os.listdir(convs) if n.endswith(".tmp")], os.listdir(convs))
    finally:
        s.kill(signal.SIGTERM)
        check(s.wait() == 0, s.log())


def test_one_serve_per_state_directory():
    port, _ = start_server()
    a = Serve(port)
    try:
        b = Serve(port, state=a.state, args=["--socket", os.path.join(a.state, "other.sock")],
                  wait=False)
        rc = b.wait()
        check(rc == 2 and "another mote serve" in b.log() and str(a.p.pid) in b.log(),
              (rc, b.log()))
        check(a.req("GET", "/v1/health")[0] == 200, "the first one still serves")
    finally:
        a.kill(signal.SIGTERM)
        check(a.wait() == 0, a.log())
    # the lock goes with the process: a kill -9 leaves nothing that stops the next
    c = Serve(port, state=a.state)
    c.kill(signal.SIGKILL)
    c.wait()
    d = Serve(port, state=a.state)
    d.kill(signal.SIGTERM)
    check(d.wait() == 0, d.log())


def test_directory_links_in_the_state_directory_are_refused():
    port, _ = start_server()
    for sub in ("conversations", "tls"):
        state = os.path.join(TMP, "links-%s" % sub)
        os.makedirs(state, mode=0o700)
        other = os.path.join(TMP, "links-target-%s" % sub)
        os.makedirs(other, mode=0o700)
        if sub == "conversations":
            write_journal(other, "x", 2000)  # other/conversations/x.jsonl
            os.symlink(os.path.join(other, "conversations"), os.path.join(state, sub))
        else:
            os.symlink(other, os.path.join(state, sub))
        s = Serve(port, state=state, wait=False)
        rc = s.wait()
        check(rc == 2 and ("%s/%s is a link" % (state, sub)) in s.log(), (sub, rc, s.log()))


# ---- metrics, stats, the watchdog -----------------------------------------------------------

def promtool(text):
    """`promtool check metrics` (Debian's prometheus): the text format
    parsed and linted; returns its output (empty: nothing to say)."""
    import shutil
    if shutil.which("promtool") is None:
        raise AssertionError("promtool is missing: make deps installs prometheus")
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    check(r.returncode == 0, "promtool: %d %s %s" % (r.returncode, r.stdout, r.stderr))
    return (r.stdout + r.stderr).decode()


def samples(text):
    """{'name{labels}': value} of a text exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            out[k] = float(v)
    return out


def test_metrics_in_the_prometheus_text_format():
    target = os.path.join(TMP, "metrics-%d.txt" % os.getpid())
    port, _ = start_server([
        {"tool": "list_dir", "input": {"path": "/"}, "input_tokens": 100}, {"text": "listed"},
        {"status": 400, "body": {"type": "error", "error": {"type": "invalid_request_error",
                                                            "message": "bad"}}},
        {"tool": "write_file", "input": {"path": target, "content": "x"}},
    ])
    s = Serve(port, args=["--allow", "list_dir", "--ask", "write_file",
                          "--budget-requests-day", "100"])
    try:
        a = s.create()
        s.say(a, "list")
        s.wait_state(a, "idle")
        s.say(a, "fail")
        s.wait_state(a, ("idle", "error"))
        b = s.create()
        s.say(b, "write")
        s.wait_state(b, "awaiting_approval")
        st, r, body = s.req("GET", "/v1/metrics", raw=True)
        check(st == 200 and r.getheader("Content-Type").startswith("text/plain; version=0.0.4"),
              (st, r.getheaders()))
        text = body.decode()
        check(promtool(text) == "", promtool(text))
        m = samples(text)
        check(m['mote_turns_total{end="answered"}'] == 1 and
              m['mote_turns_total{end="failed"}'] == 1, text)
        check(m["mote_model_requests_total"] == 4, m["mote_model_requests_total"])
        check(m['mote_tokens_total{kind="input"}'] >= 100 and
              m['mote_tokens_total{kind="output"}'] > 0, text)
        check(m['mote_errors_total{code="bad_request"}'] == 1, text)
        check(m['mote_tool_calls_total{result="ok"}'] == 1, text)
        check(m["mote_approvals_pending"] == 1 and m["mote_approvals_asked_total"] == 1, text)
        check(m['mote_budget_limit{limit="requests_day"}'] == 100 and
              m['mote_budget_remaining{limit="requests_day"}'] == 96, text)
        check(m["mote_conversations_loaded"] == 2 and m["mote_conversations_busy"] == 1, text)
        convs = os.path.join(s.state, "conversations")
        check(m["mote_conversations_stored"] == 2 and
              m["mote_journal_bytes"] == sum(os.path.getsize(os.path.join(convs, f))
                                             for f in os.listdir(convs)
                                             if f.endswith(".jsonl")), text)
        check(m["process_resident_memory_bytes"] > 100000, text)
        check(0 <= m["mote_loop_lag_seconds"] < 5, text)
        check('mote_info{version="' in text, text)
        st, _ = s.req("POST", "/v1/metrics", {})
        check(st == 405, st)
    finally:
        s.kill(signal.SIGTERM)
        check(s.wait() == 0, s.log())


def test_stats_retained_on_the_broker():
    b = Broker("fl-stats")
    port, _ = start_server([{"text": "counted", "input_tokens": 42}])
    s = mserve(port, b, "dev-stats", args=["--stats-interval", "1s"])
    sub = Sub(b, "mote/dev-stats", "w-stats")
    try:
        b.pub("mote/dev-stats/in", req("s1", "k", "count me"))
        sub.wait(lambda: sub.answers("k"), "the answer")

        def stats():
            raw = b.retained("mote/dev-stats/stats")
            st = json.loads(raw) if raw else None
            return st if st and st["turns"]["answered"] == 1 else None
        st = wait_for(stats, "the stats with the turn", 30)
        check(st["tokens"]["input"] == 42 and st["tokens_today"]["input"] == 42 and
              st["model_requests"] == 1 and st["mqtt_requests"] == 1 and
              st["conversations"]["stored"] == 1 and st["rss_bytes"] > 0 and
              st["budget"] is None, st)
    finally:
        check(stop(s) == 0, s.log())
        sub.stop()


def test_the_watchdog_is_fed_only_by_a_turning_loop():
    import socket as so
    port, _ = start_server([{"tool": "shell", "input": {"command": "env"}}, {"text": "ok"}])
    path = os.path.join(TMP, "notify-wd.sock")
    ns = so.socket(so.AF_UNIX, so.SOCK_DGRAM)
    ns.bind(path)
    ns.settimeout(5)
    s = Serve(port, args=["--allow", "shell"],
              env_more={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})

    def pings(seconds):
        n, end = 0, time.time() + seconds
        ns.settimeout(0.1)
        while time.time() < end:
            try:
                n += ns.recv(4096) == b"WATCHDOG=1"
            except OSError:
                pass
        return n
    try:
        check(pings(2.0) >= 4, "WATCHDOG=1 every 200 ms")
        s.kill(signal.SIGSTOP)  # a loop that does not turn feeds nothing
        time.sleep(0.3)
        pings(0.2)  # (what was sent before the stop)
        check(pings(1.5) == 0, "fed while stopped")
        s.kill(signal.SIGCONT)
        check(pings(1.5) >= 2, "fed again")
        cid = s.create()
        s.say(cid, "env")
        s.wait_state(cid, "idle")
        out = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"][0]["text"]
        check("WATCHDOG_USEC" not in out and "NOTIFY_SOCKET" not in out, out)
    finally:
        s.kill(signal.SIGCONT)
        s.kill(signal.SIGTERM)
        check(s.wait() == 0, s.log())
        ns.close()


if __name__ == "__main__":
    sys.exit(run_all("test-fleet", dict(globals())))
