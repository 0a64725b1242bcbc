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
from test_mqtt import Broker, Subscriber, tool
from test_mqtt_serve import FAST, Sub, connected, device, mserve, req, stop, users
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
    target = os.path.join(TMP, "strict-%d.txt" % os.getpid())
    b, _, _, s, sub = device("fl-strict", "st",
                             [{"tool": "write_file", "input": {"path": target, "content": "ok"}},
                              {"text": "written"}, {"text": "later"}], args=["--ask", "write_file"])
    try:
        b.pub("mote/dev-st/in", req("s1", "k", "write it"))
        ev = sub.question("k")
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
        check(s.stop() == 0, s.log())


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
        check(a.stop() == 0, a.log())
    # the lock goes with the process: a kill -9 leaves nothing that stops the next
    c = Serve(port, state=a.state)
    c.kill(signal.SIGKILL)
    c.wait()
    d = Serve(port, state=a.state)
    check(d.stop() == 0, d.log())


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
        check(s.stop() == 0, s.log())


def test_stats_retained_on_the_broker():
    b, _, _, s, sub = device("fl-stats", "stats", [{"text": "counted", "input_tokens": 42}],
                             args=["--stats-interval", "1s"])
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
        wait_for(lambda: open("/proc/%d/stat" % s.p.pid).read().rsplit(")", 1)[1].split()[0] == "T",
                 "the process stopped")
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
        check(s.stop() == 0, s.log())
        ns.close()


# ---- every device readable from the broker ------------------------------------------------

PAYLOAD_MAX = 16384  # MOTE_MQTT_PAYLOAD_MAX (mote_config.h's default)


class Replies(Subscriber):
    """mosquitto_sub on PREFIX/reply/# and PREFIX/error: (topic, raw
    payload) pairs gathered by a thread."""

    def __init__(self, broker, prefix):
        self.prefix = prefix
        super().__init__(broker, [prefix + "/reply/#", prefix + "/error"], prefix + "/reply/_sub")

    def all(self):
        return self.raw()

    def reply(self, rid, timeout=30):
        """The reply to request `rid` (the first; its size checked)."""
        topic = self.prefix + "/reply/" + rid
        p = wait_for(lambda: [p for t, p in self.all() if t == topic], "the reply " + rid,
                     timeout)[0]
        check(len(p) <= PAYLOAD_MAX, "a reply of %d bytes" % len(p))
        return json.loads(p)

    def error(self, rid, timeout=30):
        def find():
            for t, p in self.all():
                if t == self.prefix + "/error":
                    e = json.loads(p)
                    if e.get("id") == rid:
                        return e
            return None
        return wait_for(find, "the error of " + rid, timeout)


def test_list_and_read_conversations_over_the_broker():
    """"list" pages the conversations as GET /v1/conversations does, and
    "read" pages a journal's records from an offset (a record larger than
    a message comes in parts): every reply on PREFIX/reply/ID within
    MOTE_MQTT_PAYLOAD_MAX, the pages together exactly the journal."""
    b = Broker("fl-read")
    port, _ = start_server()
    state = os.path.join(TMP, "fl-read-state")
    os.makedirs(state, mode=0o700)
    ids = ["r%02d" % i for i in range(7)]
    for i, cid in enumerate(ids):
        write_journal(state, cid, 3000 + 9000 * i, text_bytes=1500)
    big = write_journal(state, "huge", 120000, text_bytes=50000)  # records of 50 KB
    s = mserve(port, b, "dev-rd", state=state)
    r = Replies(b, "mote/dev-rd")
    try:
        # the list, all at once, then in pages of 3 following "next"
        b.pub("mote/dev-rd/in", json.dumps({"id": "l0", "list": {}}))
        whole = r.reply("l0")
        check(whole["id"] == "l0" and whole["truncated"] is False and whole["next"] is None,
              whole)
        got = [c["id"] for c in whole["conversations"]]
        check(sorted(got) == sorted(ids + ["huge"]), got)
        st, http = s.req("GET", "/v1/conversations")
        check(st == 200, http)
        check(sorted(json.dumps(c, sort_keys=True) for c in whole["conversations"]) ==
              sorted(json.dumps(c, sort_keys=True) for c in http["conversations"]),
              (whole, http))
        paged, after, n = [], None, 0
        while True:
            q = {"limit": 3}
            if after is not None:
                q["after"] = after
            n += 1
            b.pub("mote/dev-rd/in", json.dumps({"id": "lp%d" % n, "list": q}))
            page = r.reply("lp%d" % n)
            check(len(page["conversations"]) <= 3, page)
            paged += [c["id"] for c in page["conversations"]]
            if page["next"] is None:
                break
            after = page["next"]
            check(n < 10, "too many pages")
        check(paged == got and n == 3, (paged, got, n))

        # a journal read in pages from 0, following "next"
        def read_all(cid, tag):
            recs, nxt, k = [], {"from": 0}, 0
            while nxt is not None:
                k += 1
                b.pub("mote/dev-rd/in",
                      json.dumps({"id": "%s%d" % (tag, k), "conversation": cid, "read": nxt}))
                page = r.reply("%s%d" % (tag, k))
                check(page.get("conversation", cid) == cid, page)
                if "part" in page:
                    p = page["part"]
                    check(p["at"] == nxt.get("at", 0), (p, nxt))
                    if p["at"] == 0:
                        recs.append([p["offset"], ""])
                    check(recs[-1][0] == p["offset"], (recs[-1][0], p))
                    recs[-1][1] += p["text"]
                else:
                    for rec in page["records"]:
                        recs.append([rec["offset"], json.dumps(rec["data"],
                                                               separators=(",", ":"))])
                nxt = page["next"]
                check(k < 400, "too many pages")
            return recs, k

        for cid, path in ((ids[-1], os.path.join(state, "conversations", ids[-1] + ".jsonl")),
                          ("huge", big)):
            with open(path, "rb") as f:
                raw = f.read()
            want, off = [], 0
            for line in raw.split(b"\n")[:-1]:
                want.append([off, line.decode()])
                off += len(line) + 1
            recs, k = read_all(cid, "rd-" + cid + "-")
            check(len(recs) == len(want), (cid, len(recs), len(want)))
            for (o1, t1), (o2, t2) in zip(recs, want):
                check(o1 == o2 and json.loads(t1) == json.loads(t2), (cid, o1, o2))
            check(k > 1, "one page for %d bytes" % len(raw))
        # a page from a record's offset (an event id), as GET ...?from= does
        # (the first record larger than a message: its first part)
        second = [o for o, line in want if len(line) > PAYLOAD_MAX][0]
        b.pub("mote/dev-rd/in", json.dumps({"id": "mid", "conversation": "huge",
                                            "read": {"from": second}}))
        page = r.reply("mid")
        check(page["records"] == [] and page["part"]["offset"] == second and
              page["part"]["at"] == 0 and page["next"]["from"] == second, page)
        small = want[1][0]  # (a user record, then more that fit the page)
        b.pub("mote/dev-rd/in", json.dumps({"id": "mid2", "conversation": "huge",
                                            "read": {"from": small}}))
        page = r.reply("mid2")
        check(page["records"][0]["offset"] == small, page)
        check([t for t, _ in r.all() if t.endswith("/error")] == [], r.all()[-3:])
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        r.stop()


def test_read_requests_are_strict():
    b = Broker("fl-rstrict")
    port, _ = start_server()
    state = os.path.join(TMP, "fl-rstrict-state")
    os.makedirs(state, mode=0o700)
    write_journal(state, "k", 20000, text_bytes=1500)
    s = mserve(port, b, "dev-rs", state=state)
    r = Replies(b, "mote/dev-rs")
    cases = [
        ('{"id":"x1","conversation":"k","read":{"from":7}}', "x1", "bad_offset"),
        ('{"id":"x2","conversation":"nowhere","read":{}}', "x2", "unknown_conversation"),
        ('{"id":"x3","conversation":"k","read":{"from":-1}}', "x3", "bad_offset"),
        ('{"id":"x4","conversation":"k","read":{"from":"0"}}', "x4", "bad_offset"),
        ('{"id":"x5","conversation":"k","read":7}', "x5", "bad_field"),
        ('{"id":"x6","list":{"after":"k\\u0000z"}}', "x6", "bad_cursor"),
        ('{"id":"x7","list":{"limit":0}}', "x7", "bad_limit"),
        ('{"id":"x8","list":{"limit":1,"limit":5}}', "x8", "bad_json"),
        ('{"id":"x9","list":{},"read":{}}', "x9", "bad_field"),
        ('{"id":"a/b","list":{}}', "a/b", "bad_field"),
        ('{"id":"x10","conversation":"k","read":{"from":0,"\\u0066rom":9}}', "x10",
         "bad_json"),
        ('{"id":"x11","conversation":"k","read":{"from":0,"at":99999999}}', "x11",
         "bad_offset"),
    ]
    try:
        for payload, _, _ in cases:
            b.pub("mote/dev-rs/in", payload)
        for payload, rid, code in cases:
            if code == "bad_json":
                continue  # (the id of a request that is not read is not known)
            e = r.error(rid)
            check(e["error"] == code and e["message"], (payload, e))
        # none answered on a reply topic; the device still serves
        check([t for t, _ in r.all() if "/reply/x" in t] == [], r.all())
        b.pub("mote/dev-rs/in", json.dumps({"id": "ok", "list": {}}))
        check([c["id"] for c in r.reply("ok")["conversations"]] == ["k"], r.all()[-1])
        check(s.log().count("refused: bad_json") >= 2, s.log()[-2000:])
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        r.stop()


def test_mqtt_approve_off_leaves_approvals_to_the_other_doors():
    """--mqtt-approve off: an approval over MQTT is refused (approve_off),
    nothing runs; the same call approved on the device's API runs."""
    b = Broker("fl-apoff")
    target = os.path.join(TMP, "apoff-%d.txt" % os.getpid())
    port, _ = start_server([{"tool": "write_file", "input": {"path": target, "content": "ok"}},
                            {"text": "written"}])
    s = mserve(port, b, "dev-ao", args=["--ask", "write_file", "--mqtt-approve", "off"])
    sub = Sub(b, "mote/dev-ao", "w-ao")
    try:
        b.pub("mote/dev-ao/in", req("a1", "k", "write it"))
        ev = sub.question("k")
        b.pub("mote/dev-ao/in", req("a2", "k", approve={"call_id": ev["call_id"],
                                                       "answer": "yes"}))
        sub.wait(lambda: [e for e in sub.errors() if e["id"] == "a2"], "the refusal")
        check([e["error"] for e in sub.errors() if e["id"] == "a2"] == ["approve_off"],
              sub.errors())
        check(not os.path.exists(target), "ran on an approval over MQTT")
        st, body = s.req("GET", "/v1/conversations/k/approval")
        check(st == 200 and body["call_id"] == ev["call_id"], (st, body))
        st, body = s.req("POST", "/v1/conversations/k/approval",
                         {"call_id": ev["call_id"], "answer": "yes"})
        check(st == 202, (st, body))
        sub.wait(lambda: sub.answers("k") == ["written"], "the answer after the approval")
        check(open(target).read() == "ok", "the approved tool ran")
        # a cancel and prompts still come over MQTT
        b.pub("mote/dev-ao/in", req("a3", "k", "and now?"))
        sub.wait(lambda: len(sub.answers("k")) == 2, "a prompt after")
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()


# ---- Home Assistant's MQTT discovery ------------------------------------------------------

HA_ENTITIES = [("sensor", "status"), ("sensor", "last_answer"), ("sensor", "approvals_pending"),
               ("sensor", "tokens_today"), ("sensor", "budget_left"), ("text", "prompt")]


def ha_render(template, **ctx):
    """A template as Home Assistant renders it (Jinja2; HA's now())."""
    try:
        import datetime
        import jinja2
    except ImportError:
        raise AssertionError("python3-jinja2 is missing: make deps installs it")
    env = jinja2.Environment()
    env.globals["now"] = datetime.datetime.now
    return env.from_string(template).render(**ctx)


def test_home_assistant_discovery():
    """--mqtt-discovery homeassistant: retained configurations for the
    status, the last answer, the approvals pending, the tokens of the day,
    the budget left and a prompt text entity; each template, rendered by
    Jinja2 as Home Assistant does, gives the value from the topic it names;
    the text entity's command reaches the agent; turned off at the next
    start, the configurations are cleared."""
    b = Broker("fl-ha")
    port, _ = start_server()
    s = mserve(port, b, "dev-ha", args=["--mqtt-discovery", "homeassistant",
                                        "--stats-interval", "1s",
                                        "--budget-requests-day", "50"])
    state = s.state
    try:
        wait_for(lambda: "Home Assistant discovery under homeassistant announced" in s.log(),
                 "the announcement")
        confs, uids = {}, set()
        for comp, obj in HA_ENTITIES:
            raw = b.retained("homeassistant/%s/dev-ha/%s/config" % (comp, obj))
            check(raw is not None, "no configuration for " + obj)
            c = json.loads(raw)
            check(c["unique_id"] not in uids and c["device"]["identifiers"] == ["mote_dev-ha"],
                  c)
            uids.add(c["unique_id"])
            confs[obj] = c
        # a prompt from the text entity: its command as Home Assistant makes it
        p = confs["prompt"]
        check(p["command_topic"] == "mote/dev-ha/in", p)
        b.pub(p["command_topic"], ha_render(p["command_template"], value="hello from HA"))
        wait_for(lambda: b.retained("mote/dev-ha/last"), "the last answer")
        last = json.loads(b.retained("mote/dev-ha/last"))
        check(last["conversation"] == "home-assistant" and
              last["text"] == "You said: hello from HA", last)
        # (the stats after the turn)
        wait_for(lambda: json.loads(b.retained("mote/dev-ha/stats") or "{}")
                 .get("turns", {}) not in ({}, None) and
                 json.loads(b.retained("mote/dev-ha/stats"))["tokens_today"]["output"] > 0,
                 "the stats with the turn's tokens")
        values = {}
        for obj, c in confs.items():
            if "state_topic" not in c:
                continue
            pay = b.retained(c["state_topic"])
            check(pay is not None, (obj, c["state_topic"]))
            values[obj] = ha_render(c["value_template"], value_json=json.loads(pay),
                                    value=pay).strip()
            if "availability_topic" in c:
                av = ha_render(c["availability_template"],
                               value_json=json.loads(b.retained(c["availability_topic"])))
                check(av == c["payload_available"] == "online", (obj, av))
        check(values["status"] == "online", values)
        check(values["last_answer"] == "You said: hello from HA", values)
        check(values["approvals_pending"] == "0", values)
        check(int(values["tokens_today"]) > 0, values)
        check(values["budget_left"] == "98", values)  # 1 request of 50 (a whole percent)
    finally:
        check(stop(s) == 0, s.log()[-2000:])
    # the next start without discovery clears the entities
    s = mserve(port, b, "dev-ha", state=state)
    try:
        wait_for(lambda: "is off: its entities are cleared" in s.log(), "the clearing")
        for comp, obj in HA_ENTITIES:
            check(b.retained("homeassistant/%s/dev-ha/%s/config" % (comp, obj)) is None, obj)
        check(not os.path.exists(os.path.join(state, "mqtt-discovery")), "the marker stays")
    finally:
        check(stop(s) == 0, s.log()[-2000:])


# ---- MQTT client certificates -------------------------------------------------------------

def client_cert(certs, name, ca):
    """A client certificate (clientAuth) signed by `ca`, its key 0600."""
    def q(*a):
        r = subprocess.run(["openssl"] + list(a), capture_output=True, cwd=certs)
        check(r.returncode == 0, r.stderr)
    q("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
      "/CN=" + name, "-keyout", name + ".key", "-out", name + ".csr")
    with open(os.path.join(certs, name + ".ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
    q("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
      "-CAcreateserial", "-days", "30", "-out", name + ".crt", "-extfile", name + ".ext")
    os.chmod(os.path.join(certs, name + ".key"), 0o600)
    return os.path.join(certs, name + ".crt"), os.path.join(certs, name + ".key")


def test_mqtt_client_certificates():
    """mqtts:// with --mqtt-cert and --mqtt-key against a mosquitto that
    requires a client certificate (require_certificate, its CA): mote
    connects and answers; without one, or with one of another CA, the
    broker refuses it (said in the log, never connected); a key readable
    by others, a certificate without its key, a plain mqtt:// URL are
    refused at start."""
    from harness import ROOT
    certs = os.path.join(TMP, "certs-fleet")
    r = subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), certs],
                       capture_output=True)
    check(r.returncode == 0, r.stderr)
    ca = os.path.join(certs, "ca.crt")
    dev_crt, dev_key = client_cert(certs, "device", "ca")
    pub_crt, pub_key = client_cert(certs, "publisher", "ca")
    bad_crt, bad_key = client_cert(certs, "intruder", "other")
    b = Broker("fl-mtls", tls=(os.path.join(certs, "server.crt"),
                               os.path.join(certs, "server.key")),
               extra=["cafile " + ca, "require_certificate true"])
    url = b.url("localhost")
    port, _ = start_server([{"text": "mutual"}])
    tls = ["-h", "localhost", "-p", str(b.port), "--cafile", ca, "--cert", pub_crt,
           "--key", pub_key]
    s = Serve(port, args=["--mqtt", url, "--mqtt-id", "dev-mt", "--ca-file", ca,
                          "--mqtt-cert", dev_crt, "--mqtt-key", dev_key], env_more=FAST)
    try:
        connected(s, 1)
        r = subprocess.run([tool("mosquitto_pub")] + tls +
                           ["-q", "1", "-t", "mote/dev-mt/in", "-m", req("m1", "k", "hi")],
                           capture_output=True, timeout=20)
        check(r.returncode == 0, r.stderr)
        s.wait_state("k", "idle")
        check(journal_of(s.state, "k")[-1]["text"] == "mutual", journal_of(s.state, "k"))
    finally:
        check(stop(s) == 0, s.log()[-2000:])
    # no certificate, or one the broker's CA did not sign: never connected,
    # and the log says why (the broker's alert, not a bare TLS failure)
    for extra, why, said in (
            ([], "peer did not return a certificate",
             "a client certificate, and none was given (alert: "),
            (["--mqtt-cert", bad_crt, "--mqtt-key", bad_key], "certificate verify failed",
             "the server refused the client certificate (alert: unknown CA")):
        s = Serve(port, args=["--mqtt", url, "--mqtt-id", "dev-no", "--ca-file", ca] + extra,
                  env_more=FAST)
        try:
            # two attempts refused by the broker (for its reason), none connected
            try:
                wait_for(lambda: s.log().count(said) >= 2 or s.p.poll() is not None,
                         "two refused attempts")
            except AssertionError:
                check(False, ("not said", said, s.log()[-1500:]))
            check(s.log().count(said) >= 2, s.log()[-1500:])
            check("TLS handshake failed" not in s.log(), s.log()[-1500:])
            check(why in b.log(), b.log()[-1500:])
            check("mqtt: connected to" not in s.log(), (extra, s.log()[-1500:]))
            check(s.p.poll() is None, s.log()[-1500:])
        finally:
            check(stop(s) == 0, s.log()[-2000:])
    # refused at start
    loose = os.path.join(certs, "loose.key")
    with open(dev_key, "rb") as f, open(loose, "wb") as g:
        g.write(f.read())
    os.chmod(loose, 0o644)
    for args, want in [
        (["--mqtt-cert", dev_crt, "--mqtt-key", loose], "may be read by others"),
        (["--mqtt-cert", dev_crt], "go together"),
        (["--mqtt-key", dev_key], "go together"),
    ]:
        s = Serve(port, args=["--mqtt", url, "--mqtt-id", "dev-x", "--ca-file", ca] + args,
                  wait=False)
        rc = s.wait(30)
        check(rc == 2 and want in s.log(), (args, rc, s.log()[-800:]))
    s = Serve(port, args=["--mqtt", "mqtt://127.0.0.1:%d" % b.port, "--mqtt-id", "dev-y",
                          "--mqtt-cert", dev_crt, "--mqtt-key", dev_key], wait=False)
    rc = s.wait(30)
    check(rc != 0 and "mqtts://" in s.log(), (rc, s.log()[-800:]))


if __name__ == "__main__":
    sys.exit(run_all("test-fleet", dict(globals())))
