#!/usr/bin/env python3
"""`mote serve` on a device nobody watches (the real binary, sanitizers
on, against the local test LLM server and a private mosquitto):
approvals that reach someone and expire by themselves, a spend budget
that fails closed, schedules whose every occurrence runs once or is
skipped with its reason (a kill sweep, downtime, the API, MQTT, the
agent's own schedule tool).

    test_unattended.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import json
import os
import re
import signal
import sys
import time

import sched_sweep
from harness import NOTES, TMP, check, requests_in, run_all, start_server, wait_for
from test_mqtt import Broker
from test_mqtt_serve import Sub, device, mserve, req, stop
from test_serve import Events, Serve, journal_of


def serve(port, args=(), env=None, state=None):
    return Serve(port, state, args=list(args), env_more=env)


def bodies_text(log):
    """Every request body the model server received, as one string each."""
    return [json.dumps(r.get("body")) for r in requests_in(log)]


# ---- approvals: deadlines, every front door -----------------------------------------------

def test_approval_with_a_deadline_is_denied_by_itself():
    """Nobody answers: at the deadline (never before) the call is refused,
    the refusal is journaled as its result, the turn goes on and the
    model reads why."""
    marker = os.path.join(TMP, "ran-%d" % time.time_ns())
    port, log = start_server([{"tool": "shell", "input": {"command": "touch " + marker}}])
    s = serve(port, ["--approval-timeout", "2s"])
    try:
        cid, ev = s.start_turn("make the file")
        asked = ev.wait(lambda e: e["event"] == "approval", "the question")[0]
        t_asked = time.time()
        check(asked["json"]["timeout_ms"] == 2000, asked)
        check(0 < asked["json"]["expires_in_ms"] <= 2000, asked)
        st = s.conv(cid, records=False)
        check(st["approval"]["timeout_ms"] == 2000 and st["approval"]["call_id"] ==
              asked["json"]["call_id"], st)
        exp = ev.wait(lambda e: e["event"] == "approval_expired", "the expiry", 20)[0]
        waited = time.time() - t_asked
        check(waited >= 1.9, "expired after %.2f s, before its deadline" % waited)
        check(waited < 15, "expired after %.2f s" % waited)
        check(exp["json"]["call_id"] == asked["json"]["call_id"], exp)
        check(exp["json"]["text"].startswith("denied: nobody approved within 2 seconds"), exp)
        s.wait_state(cid, "idle")
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(res) == 1 and res[0]["error"] and
              res[0]["text"].startswith("denied: nobody approved within 2 seconds"), res)
        check(not os.path.exists(marker), "the refused call ran")
        # the turn went on: the model was asked again and read the denial
        bodies = bodies_text(log)
        check(len(bodies) == 2, "%d requests" % len(bodies))
        check("denied: nobody approved within 2 seconds" in bodies[1], bodies[1][-400:])
        answers = [r for r in journal_of(s.state, cid) if r["t"] == "assistant"]
        check("denied" in answers[-1]["text"], answers[-1])
        ev.close()
    finally:
        check(s.stop() == 0, s.log()[-2000:])


def test_an_answer_in_time_beats_the_deadline():
    marker = os.path.join(TMP, "ran-%d" % time.time_ns())
    port, _ = start_server([{"tool": "shell", "input": {"command": "touch " + marker}}])
    s = serve(port, ["--approval-timeout", "3s"])
    try:
        cid, ev = s.start_turn("make the file")
        asked = ev.wait(lambda e: e["event"] == "approval", "the question")[0]["json"]
        st, b = s.answer(cid, asked["call_id"], "yes")
        check(st == 202, (st, b))
        s.wait_state(cid, "idle")
        time.sleep(3.5)  # past the deadline: it must do nothing now
        check(os.path.exists(marker), "the approved call did not run")
        check(not [e for e in ev.all() if e["event"] == "approval_expired"], ev.all())
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(res) == 1 and not res[0]["error"], res)
        ev.close()
    finally:
        check(s.stop() == 0, s.log()[-2000:])


def test_default_policy_asks_even_for_reading():
    """docs/SERVE.md: with the default policy every built-in tool asks,
    read_file and list_dir included; the serve default deadline is 10
    minutes."""
    port, _ = start_server([{"tool": "read_file", "input": {"path": "/etc/hostname"}},
                            {"tool": "list_dir", "input": {"path": "/"}}])
    s = serve(port)
    try:
        cid = s.create()
        s.say(cid, "read it")
        s.wait_state(cid, "awaiting_approval")
        st = s.conv(cid, records=False)
        check(st["approval"]["name"] == "read_file", st)
        check(st["approval"]["timeout_ms"] == 600000, st)
        check(590000 < st["approval"]["expires_in_ms"] <= 600000, st)
        s.answer(cid, st["approval"]["call_id"], "no")
        wait_for(lambda: (s.conv(cid, records=False).get("approval") or {}).get("name") ==
                 "list_dir", "list_dir asks too")
    finally:
        s.kill(signal.SIGINT)
        s.wait()


def test_policy_file_sets_the_deadline():
    port, _ = start_server([{"tool": "shell", "input": {"command": "true"}}])
    pol = os.path.join(TMP, "policy-%d.json" % time.time_ns())
    with open(pol, "w") as f:
        json.dump({"default": "ask", "timeout": "90s"}, f)
    s = serve(port, ["--policy", pol])
    try:
        cid = s.create()
        s.say(cid, "go")
        s.wait_state(cid, "awaiting_approval")
        check(s.conv(cid, records=False)["approval"]["timeout_ms"] == 90000, "90 s")
    finally:
        s.kill(signal.SIGINT)
        s.wait()
    # the command line wins; a bad one is a usage error
    port, _ = start_server([{"tool": "shell", "input": {"command": "true"}}])
    s = serve(port, ["--policy", pol, "--approval-timeout", "0"])
    try:
        cid = s.create()
        s.say(cid, "go")
        s.wait_state(cid, "awaiting_approval")
        st = s.conv(cid, records=False)["approval"]
        check(st["timeout_ms"] == 0 and "expires_in_ms" not in st, st)
    finally:
        s.kill(signal.SIGINT)
        s.wait()
    with open(pol, "w") as f:
        json.dump({"timeout": "soon"}, f)
    for args in (["--approval-timeout", "10 parsecs"], ["--policy", pol]):
        st = os.path.join(TMP, "bad-%d" % time.time_ns())
        os.makedirs(st)
        b = Serve(port, st, args=args, wait=False)
        rc = b.wait(20)
        check(rc == 2, "exit %s: %s" % (rc, b.log()))
        check("timeout" in b.log(), b.log())


def test_approvals_reach_mqtt_and_expire():
    """PREFIX/out/ID has the question and its expiry; the retained
    PREFIX/approvals holds what waits, with the input, and is emptied
    when the question expires."""
    b, _, _, s, sub = device("un-a", "a", [{"tool": "shell", "input": {"command": "echo from-the-phone"}}],
                             args=["--approval-timeout", "3s"])
    try:
        b.pub("mote/dev-a/in", req("a1", "garage", "check it"))
        q = sub.question("garage")
        check(q["timeout_ms"] == 3000 and q["input"] == {"command": "echo from-the-phone"}, q)

        def summary():
            r = b.retained("mote/dev-a/approvals")
            return json.loads(r) if r else None
        pend = wait_for(lambda: (summary() or {}).get("count") == 1 and summary(),
                        "the retained summary")
        p = pend["pending"][0]
        check(p["conversation"] == "garage" and p["call_id"] == q["call_id"] and
              p["name"] == "shell" and p["input"] == {"command": "echo from-the-phone"} and
              p["timeout_ms"] == 3000, pend)
        sub.wait(lambda: [e for e in sub.events("garage") if e["event"] == "approval_expired"],
                 "the expiry", 20)
        wait_for(lambda: (summary() or {}).get("count") == 0, "the summary emptied", 20)
        sub.wait(lambda: [a for a in sub.answers("garage") if "denied" in a],
                 "the answer that read the denial", 20)
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()
    st = b.retained("mote/dev-a/approvals")
    check(st and json.loads(st)["count"] == 0, st)


def recipe_clear_events():
    """The events docs/MQTT.md's Home Assistant recipe clears a phone's
    notification on (its "clear the notification" automation)."""
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "MQTT.md")
    with open(doc) as f:
        text = f.read()
    m = re.search(r"trigger\.payload_json\.event in (\[[^\]]*\])", text)
    check(m, "docs/MQTT.md: the recipe's clearing trigger not found")
    return json.loads(m.group(1).replace("'", '"'))


def test_home_assistant_recipe_clears_every_question():
    """The phone's notification is cleared however its question ends -
    approved (the recipe's own answer, with its reason), denied from
    elsewhere, expired, cancelled: each publishes an event the recipe
    clears on, naming the question's call_id; a late tap runs nothing."""
    clears = recipe_clear_events()
    b = Broker("un-h")
    port, _ = start_server([{"tool": "shell", "input": {"command": "echo tapped"}},
                            {"text": "ok"}] * 4)
    s = mserve(port, b, "dev-h", args=["--approval-timeout", "3s"])
    sub = Sub(b, "mote/dev-h", "w-h")
    try:
        for n, how in enumerate(("yes", "no", "expire", "cancel")):
            conv = "phone%d" % n
            b.pub("mote/dev-h/in", req("h%d" % n, conv, "check it"))
            q = sub.question(conv)
            if how == "yes":  # the payload the recipe publishes for Approve
                b.pub("mote/dev-h/in", req("ha-tap%d" % n, conv, approve={
                    "call_id": q["call_id"], "answer": "yes", "reason": "denied from the phone"}))
            elif how == "no":  # answered elsewhere (the page, HTTP)
                st, _ = s.req("POST", "/v1/conversations/%s/approval" % conv,
                              {"call_id": q["call_id"], "answer": "no"})
                check(st == 202, st)
            elif how == "cancel":
                b.pub("mote/dev-h/in", req("c%d" % n, conv, cancel=True))
            sub.wait(lambda: [e for e in sub.events(conv) if e["event"] in clears and
                              (e.get("data") or {}).get("call_id") == q["call_id"]],
                     "an event the recipe clears %s's notification on (%s)" % (how, clears), 20)
            s.wait_state(conv, "idle")
        # a late tap on the expired question's notification: refused, nothing runs
        q = [e for e in sub.events("phone2") if e["event"] == "approval"][0]["data"]
        b.pub("mote/dev-h/in", req("ha-late", "phone2", approve={
            "call_id": q["call_id"], "answer": "yes", "reason": "denied from the phone"}))
        e = sub.wait(lambda: [e for e in sub.errors() if e["id"] == "ha-late"], "the refusal")[0]
        check(e["error"] in ("no_question", "stale"), e)
        res = [r for r in journal_of(s.state, "phone2") if r["t"] == "tool_result"]
        check(len(res) == 1 and res[0]["error"] and "denied: nobody approved" in res[0]["text"],
              res)
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()

# ---- the spend budget ---------------------------------------------------------------------

def health(s):
    st, b = s.req("GET", "/v1/health")
    check(st == 200, (st, b))
    return b


def test_budget_of_n_requests_never_sends_the_next_across_restarts():
    """A budget of 2 requests a day: the third turn waits (the event and
    the health say why and until when), nothing is sent - not after a
    kill -9 and a restart either."""
    port, log = start_server()
    args = ["--budget-requests-day", "2"]
    s = serve(port, args)
    state = s.state
    try:
        cid = s.create()
        ev = Events(s.sock, cid)
        for text in ("one", "two"):
            s.say(cid, text)
            s.wait_state(cid, "idle")
        check(len(requests_in(log)) == 2, requests_in(log))
        b = health(s)["budget"]
        check(b["limits"] == {"requests_day": 2} and b["day"]["requests"] == 2 and
              b["spent"] and b["waiting"] == 0, b)
        s.say(cid, "three")
        got = ev.wait(lambda e: e["event"] == "budget", "the budget event")[0]["json"]
        check(got["code"] == "budget" and "2 requests today" in got["text"] and
              got["until"].endswith("T00:00:00Z"), got)
        b = health(s)["budget"]
        check(b["spent"] and b["waiting"] == 1 and b["until"] == got["until"] and
              "2 requests today" in b["reason"], b)
        st = s.conv(cid, records=False)
        check(st["busy"] and st["state"] == "llm_requesting", st)
        time.sleep(1.5)
        check(len(requests_in(log)) == 2, "a request was sent: %d" % len(requests_in(log)))
        # usage per conversation
        check(s.conv(cid, records=False)["usage"]["input_tokens"] > 0, "usage")
        ev.close()
        s.kill(signal.SIGKILL)
        s.wait()
        s = serve(port, args, state=state)
        # recovery continues the waiting turn: the budget holds it again
        wait_for(lambda: health(s)["budget"]["waiting"] == 1, "the recovered turn waits")
        b = health(s)["budget"]
        check(b["spent"] and b["day"]["requests"] == 2, b)
        # a new conversation waits too
        c2 = s.create()
        s.say(c2, "four")
        wait_for(lambda: health(s)["budget"]["waiting"] == 2, "the second waits")
        time.sleep(1)
        check(len(requests_in(log)) == 2, "a request was sent after the restart: %d" %
              len(requests_in(log)))
        # a cancel ends a wait
        st, _ = s.req("POST", "/v1/conversations/%s/cancel" % c2)
        check(st == 202, st)
        s.wait_state(c2, "idle")
        check(health(s)["budget"]["waiting"] == 1, health(s))
    finally:
        s.kill(signal.SIGTERM)
        rc = s.wait()
    check(rc == 0, "exit %d: %s" % (rc, s.log()[-1500:]))
    check(len(requests_in(log)) == 2, "requests: %d" % len(requests_in(log)))
    recs = [json.loads(l) for l in open(os.path.join(state, "budget.jsonl"))]
    check([r["t"] for r in recs].count("reserve") == 2, recs)


def test_budget_settings_refused():
    port, _ = start_server()
    for args, what in ((["--budget-requests-hour", "many"], "budget-requests-hour"),
                       (["--budget-cost-day", "5"], "budget-price"),
                       (["--budget-price", "m=1"], "budget-price"),
                       (["--budget-cost-day", "-1"], "budget-cost-day")):
        st = os.path.join(TMP, "bad-%d" % time.time_ns())
        os.makedirs(st)
        b = Serve(port, st, args=args, wait=False)
        rc = b.wait(20)
        check(rc == 2 and what in b.log(), "%s: exit %s: %s" % (args, rc, b.log()))


def test_budget_reaches_mqtt():
    b = Broker("un-b")
    port, log = start_server()
    s = mserve(port, b, "dev-b", args=["--budget-requests-hour", "1", "--budget-price",
                                       "*=3,15", "--budget-cost-day", "100"])
    sub = Sub(b, "mote/dev-b", "w-b")
    try:
        b.pub("mote/dev-b/in", req("b1", "cellar", "first"))
        sub.wait(lambda: sub.answers("cellar"), "the first answer")
        b.pub("mote/dev-b/in", req("b2", "cellar", "second"))
        err = sub.wait(lambda: [e for e in sub.errors() if e["error"] == "budget"],
                       "the budget error")[0]
        check(err["conversation"] == "cellar" and "1 requests this hour" in err["message"] and
              "until" in err["message"], err)
        sub.wait(lambda: [e for e in sub.events("cellar") if e["event"] == "budget"],
                 "the budget event on out/ID")
        check(len(requests_in(log)) == 1, requests_in(log))
        h = health(s)["budget"]
        check(h["day"]["cost_micro"] > 0 and h["limits"]["cost_micro_day"] == 100000000, h)
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()

# ---- schedules ------------------------------------------------------------------------------

def sched_env():
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = "sk-ant-TEST-SECRET-sched"
    e["MOTE_BACKOFF_MS"] = "50"
    e.pop("MOTE_SERVE_TOKEN", None)
    return e


def test_kill_sweep_every_occurrence_once():
    """A schedule every 2 s, mote serve killed with SIGKILL at random
    moments and started again: every occurrence ran exactly once or is
    journaled skipped with its reason (make bench-sched does 100+)."""
    port, _ = start_server()
    state = os.path.join(TMP, "sweep-%d" % time.time_ns())
    os.makedirs(state)
    res = sched_sweep.sweep(sched_sweep_mote(), port, state, 5, 10, sched_env(), None)
    check(res["occurrences"] >= 5 and res["ran"] >= 3, res)
    check(res["skipped"] >= 1, "the pauses (seed 10) missed occurrences: %s" % res)
    NOTES.append("kill sweep (5 kills): %s" % res)


def sched_sweep_mote():
    return os.path.join(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build"), "mote")


def sched_journal(state):
    out = []
    with open(os.path.join(state, "schedules.jsonl")) as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def test_downtime_of_12_occurrences():
    """Stopped for 12 occurrences of an interval: exactly one catch-up
    run, the 11 others logged skipped with the reason."""
    port, _ = start_server()
    s = serve(port)
    state = s.state
    try:
        st, b = s.req("PUT", "/v1/schedules/dt", {"prompt": "tick", "every": "2s"})
        check(st == 201, (st, b))
        wait_for(lambda: len([r for r in sched_journal(state) if r["t"] == "done"]) >= 2,
                 "two occurrences", 20)
    finally:
        check(s.stop() == 0, s.log()[-1500:])
    claims = [r for r in sched_journal(state) if r["t"] == "claim"]
    last = claims[-1]
    # back 12 intervals (and a little) after the last one
    wake = last["ms"] / 1000.0 + 24.5
    time.sleep(max(0, wake - time.time()))
    s = serve(port, state=state)
    try:
        wait_for(lambda: [r for r in sched_journal(state) if r["t"] == "claim" and
                          r["k"] == last["k"] + 12], "the catch-up run", 20)
        skips = [r for r in sched_journal(state) if r["t"] == "skip"]
        check(len(skips) == 1, skips)
        sk = skips[0]
        check(sk["count"] == 11 and sk["from"] == last["k"] + 1 and sk["to"] == last["k"] + 11 and
              "only the most recent runs" in sk["reason"], sk)
        check("11 occurrence(s) skipped" in s.log(), s.log()[-1500:])
        runs = [r for r in sched_journal(state) if r["t"] == "claim" and r["k"] > last["k"]]
        check(runs[0]["k"] == last["k"] + 12, runs)
        st, b = s.req("GET", "/v1/schedules/dt")
        check(st == 200 and b["skipped"] == 11 and b["runs"] >= 2, b)
    finally:
        check(s.stop() == 0, s.log()[-1500:])


def test_schedules_api():
    port, _ = start_server()
    fixed = os.path.join(TMP, "fixed-%d.json" % time.time_ns())
    with open(fixed, "w") as f:
        json.dump({"schedules": [{"id": "nightly", "prompt": "backup", "cron": "30 2 * * *",
                                  "tz": "Europe/Paris"}]}, f)
    s = serve(port, ["--schedules", fixed])
    state = s.state
    try:
        for body, code in ((b"{", "bad_json"), ({"prompt": "x"}, "bad_field"),
                           ({"prompt": "x", "every": "1m", "sometimes": 1}, "bad_field"),
                           ({"prompt": "x", "cron": "0 6 * * *", "tz": "Mars/Olympus"},
                            "bad_field"),
                           ({"prompt": "x", "cron": "61 * * * *"}, "bad_field"),
                           ({"id": "other", "prompt": "x", "every": "1m"}, "bad_field")):
            st, b = s.req("PUT", "/v1/schedules/s1", body)
            check(st == 400 and b["error"] == code, (body, st, b))
        st, b = s.req("PUT", "/v1/schedules/s1", {"prompt": "x", "cron": "0 6 * * *",
                                                   "tz": "Mars/Olympus"})
        check("unknown time zone" in b["message"], b)
        st, b = s.req("PUT", "/v1/schedules/morning",
                      {"prompt": "Check the disk", "cron": "0 6 * * *", "tz": "Europe/Paris",
                       "conversation": "ops"})
        check(st == 201 and b["id"] == "morning" and b["origin"] == "api" and
              b["next"]["at"].endswith(("T04:00:00Z", "T05:00:00Z")), (st, b))
        st, b = s.req("PUT", "/v1/schedules/morning",
                      {"prompt": "Check the disk again", "cron": "0 7 * * *", "tz": "UTC"})
        check(st == 200 and b["prompt"] == "Check the disk again" and
              b["next"]["at"].endswith("T07:00:00Z") and b["conversation"] is None, (st, b))
        st, b = s.req("GET", "/v1/schedules")
        ids = sorted(x["id"] for x in b["schedules"])
        check(st == 200 and ids == ["morning", "nightly"] and b["clock"]["set"], b)
        night = [x for x in b["schedules"] if x["id"] == "nightly"][0]
        check(night["origin"] == "file" and night["next"]["at"].endswith(("T00:30:00Z",
                                                                          "T01:30:00Z")), night)
        st, b = s.req("PUT", "/v1/schedules/nightly", {"prompt": "x", "every": "1m"})
        check(st == 409 and b["error"] == "fixed", (st, b))
        st, b = s.req("DELETE", "/v1/schedules/nightly")
        check(st == 409 and b["error"] == "fixed", (st, b))
        h = health(s)["schedules"]
        check(h["count"] == 2 and h["journal"] == "ok" and h["clock"]["set"], h)
        st, b = s.req("DELETE", "/v1/schedules/nope")
        check(st == 404, (st, b))
    finally:
        check(s.stop() == 0, s.log()[-1500:])
    with open(os.path.join(state, "schedules.json")) as f:
        kept = json.load(f)["schedules"]
    check([x["id"] for x in kept] == ["morning"], kept)  # the fixed one is not copied
    s = serve(port, ["--schedules", fixed], state=state)
    try:
        st, b = s.req("GET", "/v1/schedules/morning")
        check(st == 200 and b["prompt"] == "Check the disk again", b)
        st, b = s.req("DELETE", "/v1/schedules/morning")
        check(st == 200 and b == {"removed": "morning"}, (st, b))
        st, b = s.req("GET", "/v1/schedules/morning")
        check(st == 404, (st, b))
    finally:
        check(s.stop() == 0, s.log()[-1500:])


def test_schedules_over_mqtt():
    b, _, _, s, sub = device("un-s", "s")
    try:
        b.pub("mote/dev-s/in", json.dumps({"id": "s1", "schedule": {
            "id": "pump", "prompt": "tick", "every": "2s", "conversation": "pump"}}))
        sub.wait(lambda: sub.answers("pump"), "an occurrence's answer", 20)
        b.pub("mote/dev-s/in", json.dumps({"id": "s2", "schedule": {"id": "x", "prompt": "x"}}))
        sub.wait(lambda: [e for e in sub.errors() if e["id"] == "s2"], "the refusal")
        e = [e for e in sub.errors() if e["id"] == "s2"][0]
        check(e["error"] == "bad_field" and "one of" in e["message"], e)
        b.pub("mote/dev-s/in", json.dumps({"id": "s3", "schedule_delete": "pump"}))
        wait_for(lambda: s.req("GET", "/v1/schedules/pump")[0] == 404, "removed")
        users = [r for r in journal_of(s.state, "pump") if r["t"] == "user"]
        check(users and all(u["rid"].startswith("s:pump:") for u in users), users)
    finally:
        check(stop(s) == 0, s.log()[-2000:])
        sub.stop()


def test_the_agent_schedules_for_itself():
    """"Remind me" from a conversation: the schedule tool asks like any
    tool, then the schedule runs into that conversation."""
    port, log = start_server([{"tool": "schedule", "input": {
        "action": "create", "id": "remind", "prompt": "remind me of the plants",
        "every": "2s"}}, {"text": "Done: I will remind you."}])
    s = serve(port)
    try:
        cid = s.create()
        s.say(cid, "remind me every 2 seconds of the plants")
        s.wait_state(cid, "awaiting_approval")
        q = s.conv(cid, records=False)["approval"]
        check(q["name"] == "schedule" and q["input"]["every"] == "2s", q)
        st, _ = s.answer(cid, q["call_id"], "yes")
        check(st == 202, st)
        wait_for(lambda: [r for r in journal_of(s.state, cid)
                          if r["t"] == "user" and r.get("rid", "").startswith("s:remind:")],
                 "the schedule's prompt in this conversation", 20)
        res = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"][0]
        check(res["text"].startswith("created schedule remind"), res)
        st, b = s.req("GET", "/v1/schedules/remind")
        check(st == 200 and b["origin"] == "agent" and b["created_by"] == cid and
              b["conversation"] == cid, b)
    finally:
        s.stop()


def test_budget_holds_scheduled_turns():
    port, log = start_server()
    s = serve(port, ["--budget-requests-day", "1"])
    try:
        st, b = s.req("PUT", "/v1/schedules/b", {"prompt": "tick", "every": "2s"})
        check(st == 201, (st, b))
        wait_for(lambda: health(s)["budget"]["waiting"] == 1, "the second occurrence waits", 20)
        time.sleep(4.5)
        check(len(requests_in(log)) == 1, "requests: %d" % len(requests_in(log)))
        st, b = s.req("GET", "/v1/schedules/b")
        check(b["running"] is not None and b["running"]["phase"] == "started" and
              b["skipped"] >= 1, b)
        check("the previous occurrence had not finished" in s.log(), s.log()[-1500:])
    finally:
        s.stop()


if __name__ == "__main__":
    sys.exit(run_all("unattended", dict(globals())))
