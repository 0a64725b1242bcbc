#!/usr/bin/env python3
"""`mote serve`'s configuration file and its reload (the real binary,
sanitizers on), against the local test LLM server and a private
mosquitto: `key = value` lines read strictly (errors name the line), a
flag wins over the file, SIGHUP reloads it under load (20 conversations
with their event streams, turns running: none dropped, the next turns on
the new model), a bad file refused with the old configuration kept, the
key, the policy and the MCP servers changed by a reload, secrets from
files and systemd credentials (never in the environment of tools, never
in the log), a unique default MQTT client id.

    test_config.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import json
import os
import signal
import subprocess
import sys
import time

from harness import ROOT, TMP, check, requests_in, run_all, start_server, wait_for
from test_mqtt import Broker
from test_mqtt_serve import FAST, Sub, connected, req, stop, users
from test_serve import Events, Serve, journal_of

FAKE = os.path.join(ROOT, "test", "fake_mcp.py")


def conf(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def models(log):
    return [r["body"].get("model") for r in requests_in(log)]


def refused_at_start(port, args, env=None):
    s = Serve(port, args=args, env_more=env, wait=False)
    rc = s.wait(30)
    return rc, s.log()


# ---- the file -----------------------------------------------------------------------------

def test_the_file_sets_everything_and_a_flag_wins():
    port, log = start_server([{"text": "one"}, {"text": "two"}])
    target = os.path.join(TMP, "cfg-written.txt")
    c = conf("full.conf", "\n".join([
        "# mote serve's settings, as a shell script writes them",
        "",
        "model = model-from-file",
        "  max-tokens=777  ",
        'system = "You are the kitchen\'s agent."',
        "approval = deny",
        "allow = list_dir",
        "approval-timeout = 90s",
        "no-tools = false",
        "budget-requests-day = 1000",
        "keep = 7",
    ]) + "\n")
    s = Serve(port, args=["--config", c])
    try:
        # (the start's line may still be on its way when the socket is there)
        wait_for(lambda: "configuration " + c in s.log(), "the start's line naming " + c)
        cid = s.create()
        s.say(cid, "hello")
        s.wait_state(cid, "idle")
        body = requests_in(log)[-1]["body"]
        check(body["model"] == "model-from-file" and body["max_tokens"] == 777, body)
        sysp = body["system"] if isinstance(body["system"], str) else body["system"][0]["text"]
        check(sysp == "You are the kitchen's agent.", body["system"])
        st, h = s.req("GET", "/v1/health")
        check(h["budget"]["limits"]["requests_day"] == 1000, h["budget"])
    finally:
        check(s.stop() == 0, s.log())
    # a flag wins over the file's key
    s = Serve(port, args=["--config", c, "--model", "model-from-flag"])
    try:
        cid = s.create()
        s.say(cid, "again")
        s.wait_state(cid, "idle")
        check(requests_in(log)[-1]["body"]["model"] == "model-from-flag", models(log))
    finally:
        check(s.stop() == 0, s.log())
    check(not os.path.exists(target), "")


def test_the_file_is_read_strictly():
    port, _ = start_server()
    cases = [
        ("unknown.conf", "model = x\nmodle = y\n", "line 2: unknown key 'modle'"),
        ("twice.conf", "model = x\n\nmodel = y\n", "line 3: 'model' was set on line 1"),
        ("value.conf", "# c\nmax-turns = many\n", "line 2: max-turns = many"),
        ("noeq.conf", "model x\n", "line 1: not 'key = value'"),
        ("badkey.conf", "Model = x\n", "line 1: a key is"),
        ("quote.conf", 'model = "x\n', "line 1: model: a quoted value"),
        ("empty.conf", "model =\n", "line 1: model has no value"),
        ("bool.conf", "yes = perhaps\n", "line 1: yes is true or false"),
        ("help.conf", "help = true\n", "line 1: unknown key 'help'"),
        ("policy.conf", "approval = sometimes\n", "line 1: approval = sometimes"),
    ]
    for name, text, want in cases:
        rc, err = refused_at_start(port, ["--config", conf(name, text)])
        check(rc == 2 and want in err, (name, rc, err))
    with open(os.path.join(TMP, "nul.conf"), "wb") as f:
        f.write(b"model = a\nmax-turns = 3\x00\n")
    rc, err = refused_at_start(port, ["--config", os.path.join(TMP, "nul.conf")])
    check(rc == 2 and "line 2: a NUL byte" in err, (rc, err))
    rc, err = refused_at_start(port, ["--config", os.path.join(TMP, "missing.conf")])
    check(rc == 2 and "cannot read" in err and "missing.conf" in err, (rc, err))
    os.mkfifo(os.path.join(TMP, "fifo.conf"))
    rc, err = refused_at_start(port, ["--config", os.path.join(TMP, "fifo.conf")])
    check(rc == 2 and "not a regular file" in err, (rc, err))


# ---- a reload -----------------------------------------------------------------------------

def test_sighup_under_load_drops_nothing_and_the_next_turns_use_the_new_model():
    """20 conversations, each with its event stream open, 20 prompts over
    MQTT (4 loaded at once, the rest waiting their turn), SIGHUP with a
    new model while answers stream: no stream is dropped, no turn is cut,
    every prompt is answered once; the turns running then finish on the
    old model and every request after the reload uses the new one."""
    n = 20
    b = Broker("cfg-load")
    port, log = start_server([{"text": "answer %d %s" % (i, "word " * 12), "delay_ms": 60}
                              for i in range(n)])
    c = conf("load.conf", "model = model-a\nmqtt = %s\nmqtt-id = dev-load\n" % b.url())
    s = Serve(port, args=["--config", c], env_more=FAST)
    connected(s, 1)
    sub = Sub(b, "mote/dev-load", "w-load")
    convs = ["c%02d" % i for i in range(n)]
    streams = []
    try:
        for cid in convs:
            st, body = s.req("POST", "/v1/conversations", {"id": cid})
            check(st == 201, (st, body))
        streams = [Events(s.sock, cid) for cid in convs]
        wait_for(lambda: all(e.status == 200 for e in streams), "20 event streams")
        for i, cid in enumerate(convs):
            b.pub("mote/dev-load/in", req("r%d" % i, cid, "question %d" % i))
        wait_for(lambda: sum(1 for e in streams if any(x["event"] == "text" for x in e.all()))
                 >= 2, "answers streaming")
        with open(c, "w") as f:
            f.write("model = model-b\nmqtt = %s\nmqtt-id = dev-load\n" % b.url())

        def begun():
            return {cid for cid in convs if users(s.state, cid)}
        before = begun()  # turns begun before the signal: the old model
        s.kill(signal.SIGHUP)
        wait_for(lambda: "reloaded " + c in s.log(), "the reload")
        after = set(convs) - begun()  # not begun once it was done: the new model
        for e in streams:
            e.wait(lambda x: x["event"] == "turn_end", "a turn's end", 120)
        check(not any(e.closed for e in streams), "an event stream was dropped")
        check(s.p.poll() is None, "mote serve exited on SIGHUP")
        model_of = {}
        for r in requests_in(log):
            text = json.dumps(r["body"]["messages"])
            for i, cid in enumerate(convs):
                if "question %d\"" % i in text:
                    model_of[cid] = r["body"]["model"]
        check(len(requests_in(log)) == n and len(model_of) == n, model_of)
        check(len(before) >= 2 and len(after) >= 1, (before, after))
        check(all(model_of[cid] == "model-a" for cid in before) and
              all(model_of[cid] == "model-b" for cid in after), (before, after, model_of))
        for cid in convs:
            recs = journal_of(s.state, cid)
            answers = [r for r in recs if r["t"] == "assistant"]
            check(len(answers) == 1 and answers[0]["stop"] == "end_turn" and
                  not answers[0].get("interrupted"), (cid, answers))
        # The answers on MQTT travel apart from the event streams (the
        # broker, the subscriber's thread): waited for, then counted.
        try:
            sub.wait(lambda: all(sub.answers(cid) for cid in convs), "every answer on MQTT", 30)
        except AssertionError:
            pass  # (said by the check below, with what came)
        check(sorted(len(sub.answers(cid)) for cid in convs) == [1] * n,
              [(cid, sub.answers(cid)) for cid in convs])
        check(sub.errors() == [], sub.errors())
        # the broker's status says the new model
        st = json.loads(b.retained("mote/dev-load/status"))
        check(st["model"] == "model-b", st)
    finally:
        for e in streams:
            e.close()
        check(stop(s) == 0, s.log()[-3000:])
        sub.stop()


def test_a_bad_reload_is_refused_and_the_old_configuration_stays():
    port, log = start_server([{"text": "x"}, {"text": "y"}, {"text": "z"}])
    c = conf("bad-reload.conf", "model = model-good\n")
    s = Serve(port, args=["--config", c])
    try:
        cid = s.create()
        s.say(cid, "one")
        s.wait_state(cid, "idle")
        for bad, why in [("model = model-bad\nmax-turns = 0\n", "line 2"),
                         ("model = model-bad\nnonsense = 1\n", "line 2: unknown key"),
                         ("model = model-bad\npolicy = /nowhere/policy.json\n", "cannot read")]:
            with open(c, "w") as f:
                f.write(bad)
            mark = s.log().count("reload refused")
            s.kill(signal.SIGHUP)
            wait_for(lambda: s.log().count("reload refused") > mark, "the refusal")
            check(why in s.log().split("reload refused")[-2][-400:] or why in s.log(), s.log())
        s.say(cid, "two")
        s.wait_state(cid, "idle")
        check(models(log) == ["model-good", "model-good"], models(log))
        check(s.p.poll() is None, "exited")
    finally:
        check(s.stop() == 0, s.log())


def test_a_reload_changes_the_key_the_policy_and_the_mcp_servers():
    port, log = start_server([
        {"tool": "list_dir", "input": {"path": "/"}}, {"text": "listed"},
        {"tool": "list_dir", "input": {"path": "/"}}, {"text": "refused"},
        {"tool": "f__echo", "input": {"text": "hi"}}, {"text": "echoed"},
    ])
    k1 = conf("key1", "sk-ant-FIRST-key-0001\n")
    k2 = conf("key2", "sk-ant-SECOND-key-0002\n")
    os.chmod(k1, 0o600)
    os.chmod(k2, 0o600)
    mcp = conf("mcp.json", json.dumps({"mcpServers": {"f": {"command": sys.executable,
                                                            "args": [FAKE]}}}))
    c = conf("keys.conf", "provider = anthropic\napi-key-file = %s\nallow = list_dir\n" % k1)
    s = Serve(port, args=["--config", c])
    try:
        cid = s.create()
        s.say(cid, "list")
        s.wait_state(cid, "idle")
        with open(c, "w") as f:
            f.write("provider = anthropic\napi-key-file = %s\ndeny = list_dir\nallow = f__echo\n"
                    "mcp-config = %s\n" % (k2, mcp))
        s.kill(signal.SIGHUP)
        wait_for(lambda: "reloaded " + c in s.log(), "the reload")
        wait_for(lambda: "the MCP servers are the new configuration's" in s.log(), "the swap")
        wait_for(lambda: "mcp f: ready" in s.log(), "the new MCP server")
        s.say(cid, "list again")
        s.wait_state(cid, "idle")
        s.say(cid, "echo")
        s.wait_state(cid, "idle")
        keys = [r["headers"].get("x-api-key") for r in requests_in(log)]
        check(keys[:2] == ["sk-ant-FIRST-key-0001"] * 2 and
              set(keys[2:]) == {"sk-ant-SECOND-key-0002"}, keys)
        results = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"]
        check(len(results) == 3 and not results[0].get("error"), results)
        check(results[1].get("error") and "policy" in results[1]["text"], results[1])
        check("hi" in results[2]["text"] and not results[2].get("error"), results[2])
        # the keys never reach the log
        check("FIRST-key" not in s.log() and "SECOND-key" not in s.log(), "a key in the log")
    finally:
        check(s.stop() == 0, s.log())


# ---- secrets --------------------------------------------------------------------------------

def test_secrets_from_files_and_credentials_never_reach_tools():
    port, log = start_server([{"tool": "shell", "input": {"command": "env; cat /proc/$PPID/environ"
                                                                     " | tr '\\0' '\\n'"}},
                              {"text": "done"}])
    cred = os.path.join(TMP, "creds")
    os.makedirs(cred, mode=0o700)
    with open(os.path.join(cred, "api-key"), "w") as f:
        f.write("sk-ant-CREDENTIAL-key-77\n")
    os.chmod(os.path.join(cred, "api-key"), 0o400)
    s = Serve(port, args=["--provider", "anthropic", "--yes"],
              env_more={"CREDENTIALS_DIRECTORY": cred, "ANTHROPIC_API_KEY": ""})
    try:
        cid = s.create()
        s.say(cid, "show me the environment")
        s.wait_state(cid, "idle")
        check(requests_in(log)[0]["headers"].get("x-api-key") == "sk-ant-CREDENTIAL-key-77",
              requests_in(log)[0]["headers"])
        out = [r for r in journal_of(s.state, cid) if r["t"] == "tool_result"][0]["text"]
        check("CREDENTIAL-key" not in out and "PATH=" in out, out[:500])
        check("CREDENTIAL-key" not in s.log(), "the key in the log")
        env_of = open("/proc/%d/environ" % s.p.pid, "rb").read()
        check(b"CREDENTIAL-key" not in env_of, "")
    finally:
        check(s.stop() == 0, s.log())
    # a key file others may read is refused
    loose = conf("loose-key", "sk-ant-LOOSE\n")
    os.chmod(loose, 0o644)
    rc, err = refused_at_start(port, ["--provider", "anthropic", "--api-key-file", loose])
    check(rc == 2 and "may be read by others" in err and "LOOSE" not in err, (rc, err))
    rc, err = refused_at_start(port, ["--api-key-file", conf("nokind", "k\n")],
                               env={"ANTHROPIC_API_KEY": ""})
    check(rc == 2, (rc, err))


def test_mqtt_password_from_a_file():
    pw = os.path.join(TMP, "passwd-cfg")
    r = subprocess.run(["mosquitto_passwd", "-b", "-c", pw, "device", "pa55-word-z"],
                       capture_output=True)
    check(r.returncode == 0, r.stderr)
    b = Broker("cfg-pw", extra=["allow_anonymous false", "password_file " + pw])
    port, _ = start_server()
    pf = conf("mqtt-pass", "pa55-word-z\n")
    os.chmod(pf, 0o600)
    s = Serve(port, args=["--mqtt", b.url(), "--mqtt-id", "dev-pw", "--mqtt-username", "device",
                          "--mqtt-password-file", pf], env_more=FAST)
    try:
        connected(s, 1)
        check("pa55-word" not in s.log(), "the password in the log")
    finally:
        check(stop(s) == 0, s.log())


# ---- the MQTT client id ---------------------------------------------------------------------

def connected_as(b, since):
    """The client id of the broker's newest connection after `since` lines."""
    lines = wait_for(lambda: [x for x in b.log().splitlines()[since:]
                              if "New client connected" in x and " as mote-" in x],
                     "a connection")
    return lines[-1].split(" as ")[1].split()[0]


def test_the_default_mqtt_client_id_is_unique_per_device():
    b = Broker("cfg-id")
    port, _ = start_server()
    ids = []
    for mid in ("0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"):
        path = conf("machine-id-" + mid[:4], mid + "\n")
        since = len(b.log().splitlines())
        s = Serve(port, args=["--mqtt", b.url()], env_more=dict(FAST, MOTE_MACHINE_ID_FILE=path))
        try:
            connected(s, 1)
            got = connected_as(b, since)
            check(len(got) == 21 and got.startswith("mote-") and mid[:16] not in got, got)
            st = json.loads(wait_for(lambda: b.retained("mote/%s/status" % got), "the status"))
            check(st["id"] == got, st)
            ids.append(got)
        finally:
            check(stop(s) == 0, s.log())
    check(ids[0] != ids[1], ids)
    # no machine id: one made for the device, kept in the state directory
    state = os.path.join(TMP, "cfg-id-state")
    os.makedirs(state, mode=0o700)
    seen = []
    for _ in range(2):
        since = len(b.log().splitlines())
        s = Serve(port, state=state, args=["--mqtt", b.url()],
                  env_more=dict(FAST, MOTE_MACHINE_ID_FILE=os.path.join(TMP, "none")))
        try:
            connected(s, 1)
            seen.append(connected_as(b, since))
        finally:
            check(stop(s) == 0, s.log())
    check(os.path.exists(os.path.join(state, "device-id")), os.listdir(state))
    check(seen[0] == seen[1] and seen[0] not in ids, (seen, ids))


if __name__ == "__main__":
    sys.exit(run_all("test-config", dict(globals())))
