#!/usr/bin/env python3
"""Integration tests of MCP servers: a fake server for faults, the real
@modelcontextprotocol servers from the npm registry (when `make deps`
installed them into .deps/npm), and the zero-orphan check after every exit
path.

    test_mcp.py BUILDDIR
"""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from harness import (FAKE_MCP, NOTES, ROOT, TMP, Skip, build_shim, check, config_value,
                     mote_env, requests_in, run_all, big_tool_list, start_server, wait_for)
from harness import fake_mcp as fake, mcp_config as config

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
NPM_BIN = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin")


def env():
    return mote_env("sk-ant-mcp-SECRET")


def args(port, cfg, *extra):
    st = tempfile.mkdtemp(dir=TMP)
    return [MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
            "--mcp-config", cfg] + list(extra)


def run(a, stdin="", timeout=90):
    return subprocess.run(a, input=stdin, capture_output=True, text=True, timeout=timeout, env=env())


def tagged(tag):
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if tag in l and not l.split()[1].startswith("Z")
            and "ps -eo" not in l]


def wait_gone(tag, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not tagged(tag):
            return []
        time.sleep(0.05)
    return tagged(tag)


# ---- protocol and faults ----------------------------------------------------

def test_tools_listed_paginated_and_called():
    port, log = start_server([{"tools": [{"tool": "f__echo", "input": {"text": "hi"}},
                                         {"tool": "f__image", "input": {}},
                                         {"tool": "f__fail", "input": {}},
                                         {"tool": "f__add", "input": {"a": 2, "b": 3}}]}])
    srvlog = os.path.join(TMP, "fake-recv.log")
    cfg = config({"f": fake("--page-size", "2", "--notify-first", "--ping", "--log", srvlog)})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    reqs = requests_in(log)
    names = [t["name"] for t in reqs[0]["body"]["tools"]]
    check(all("f__" + n in names for n in ("echo", "add", "image", "fail", "sleep")), names)
    results = [b for m in reqs[1]["body"]["messages"] if m["role"] == "user"
               for b in m["content"] if isinstance(m["content"], list) and b.get("type") == "tool_result"]
    texts = [r["content"] for r in results]
    check(texts[0] == "echo: hi", texts)
    check("image content: image/png not shown" in texts[1] and "caption" in texts[1], texts[1])
    check(results[2].get("is_error") and "on purpose" in texts[2], results[2])
    check(texts[3] == "5", texts[3])
    recv = [json.loads(l) for l in open(srvlog)]
    methods = [m.get("method") for m in recv]
    check(methods[:3] == ["initialize", "notifications/initialized", "tools/list"], methods)
    init = recv[0]["params"]
    check(init["protocolVersion"] and init["clientInfo"]["name"] == "mote", init)
    answers = [m for m in recv if "method" not in m]
    check(any(a.get("id") == 1 and a.get("result") == {} for a in answers), "ping answered")
    check(any(a.get("id") == "r1" and a["error"]["code"] == -32601 for a in answers),
          "roots/list refused")


def test_task_required_tools_are_not_offered():
    # a tool that may only run as a task (MCP 2025-11-25) is left out with a
    # line naming it; one where tasks are optional is offered and called
    tools = [{"name": "plain", "inputSchema": {"type": "object"}},
             {"name": "taskonly", "inputSchema": {"type": "object"},
              "execution": {"taskSupport": "required"}},
             {"name": "taskmaybe", "inputSchema": {"type": "object"},
              "execution": {"taskSupport": "optional"}}]
    tf = os.path.join(TMP, "task-tools-%s.json" % uuid.uuid4().hex[:6])
    with open(tf, "w") as f:
        json.dump(tools, f)
    port, log = start_server([{"tool": "t__taskmaybe", "input": {}}, {"text": "done"}])
    p = run(args(port, config({"t": fake("--tools-file", tf)}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    names = [t["name"] for t in requests_in(log)[0]["body"]["tools"] if t["name"].startswith("t__")]
    check(sorted(names) == ["t__plain", "t__taskmaybe"], names)
    check("skipped the tool taskonly: it requires task support" in p.stderr, p.stderr)
    check("ready, 2 tools (1 skipped)" in p.stderr, p.stderr)
    res = [b for m in requests_in(log)[-1]["body"]["messages"] if isinstance(m["content"], list)
           for b in m["content"] if b.get("type") == "tool_result"]
    check(res and "called taskmaybe" in res[0]["content"], res)


def test_tools_list_changed_refetched():
    # The model asks for the new tool only once the server has sent the
    # new list (mote asks for it as the call is answered; the answer waits
    # in the pipe while the next request's body goes out, and is read when
    # its response begins)
    listed = os.path.join(TMP, "listed-%s" % uuid.uuid4().hex[:8])
    port, log = start_server([{"tool": "l__echo", "input": {"text": "first"}},
                              {"tool": "l__late", "input": {}, "wait_file": listed},
                              {"text": "ok"}])
    p = run(args(port, config({"l": fake("--list-changed", "--listed-file", listed)}), "-p", "x",
                 "--yes"))
    check(p.returncode == 0, p.stderr)
    reqs = requests_in(log)
    before = [t["name"] for t in reqs[0]["body"]["tools"]]
    after = [t["name"] for t in reqs[2]["body"]["tools"]]
    check("l__late" not in before and "l__late" in after, (before, after))
    last = json.dumps(reqs[2]["body"]["messages"][-1])
    check("late tool ran" in last, "the new tool ran: " + last)


def test_calls_go_first_when_the_list_never_stops_changing():
    # Each tools/list answer is followed by tools/list_changed: a list
    # fetched again as soon as the server is free would take the server
    # before the call, every time, and the turn would never end.
    port, log = start_server([{"tool": "l__echo", "input": {"text": "got through"}},
                              {"text": "finished"}])
    p = run(args(port, config({"l": fake("--list-storm")}), "-p", "x", "--yes"), timeout=30)
    check(p.returncode == 0 and "finished" in p.stdout, (p.returncode, p.stderr[-300:]))
    check("echo: got through" in json.dumps(requests_in(log)[1]["body"]), "the call ran")


def test_four_servers_at_once():
    calls = [{"tool": "s%d__echo" % i, "input": {"text": "from %d" % i}} for i in range(4)]
    port, log = start_server([{"tools": calls}, {"text": "ok"}])
    cfg = config({"s%d" % i: fake() for i in range(4)})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    body = json.dumps(requests_in(log)[1]["body"])
    for i in range(4):
        check("echo: from %d" % i in body, "server %d answered" % i)


def test_failed_server_is_skipped_others_work():
    port, log = start_server([{"tool": "ok__echo", "input": {"text": "still works"}}])
    cfg = config({"dead": fake("--die-at-start"), "missing": {"command": "/nonexistent/mcp"},
                  "ok": fake()})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    check("mcp dead:" in p.stderr and "dying at start on purpose" in p.stderr, p.stderr)
    check("mcp missing: cannot start" in p.stderr, p.stderr)
    check("echo: still works" in json.dumps(requests_in(log)[1]["body"]), "the good one answered")


def test_garbage_and_string_ids_tolerated():
    port, log = start_server([{"tool": "g__echo", "input": {"text": "fine"}}])
    p = run(args(port, config({"g": fake("--garbage", "--string-ids")}), "-p", "x", "--yes"))
    check(p.returncode == 0 and ("not valid JSON" in p.stderr or "not a JSON-RPC message" in p.stderr), p.stderr)
    check("echo: fine" in json.dumps(requests_in(log)[1]["body"]), "call worked")


def test_huge_line_is_a_clear_error():
    port, log = start_server([{"text": "ok"}])
    p = run(args(port, config({"h": fake("--huge-line", "200000"), "ok": fake()}), "-p", "x"))
    check(p.returncode == 0 and "over" in p.stderr and "limit" in p.stderr, p.stderr)
    names = [t["name"] for t in requests_in(log)[0]["body"]["tools"]]
    check("ok__echo" in names and not any(n.startswith("h__") for n in names), names)


def test_large_tool_list_loads_tool_by_tool():
    path, names = big_tool_list()
    last = names[-1]
    port, log = start_server([{"tool": "g__" + last, "input": {"p1": "x"}}, {"text": "done"}])
    p = run(args(port, config({"g": fake("--tools-file", path)}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    offered = [t["name"] for t in requests_in(log)[0]["body"]["tools"] if t["name"].startswith("g__")]
    check(offered == ["g__" + n for n in names], offered)
    check("ready, %d tools (3 skipped)" % len(names) in p.stderr, p.stderr)
    check("skipped the tool huge: its entry in tools/list is over MOTE_MCP_LINE_MAX" in p.stderr,
          p.stderr)
    check("skipped the tool wide: its inputSchema is over MOTE_MCP_SCHEMA_MAX" in p.stderr,
          p.stderr)
    check("skipped the tool many: its entry is not valid JSON, or has more than "
          "MOTE_JSON_MAX_TOKENS values" in p.stderr, p.stderr)
    res = json.dumps(requests_in(log)[1]["body"])
    check("called %s with" % last in res, res[-300:])


def one_mb(tool_input, flag="--big-tool"):
    port, log = start_server([{"tool": "b__big", "input": tool_input}, {"text": "done"}])
    p = run(args(port, config({"b": fake(flag)}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    res = [b for b in json.loads(json.dumps(requests_in(log)[1]["body"]))["messages"][-1]["content"]
           if b.get("type") == "tool_result"]
    check(len(res) == 1 and not res[0].get("is_error"), res and str(res[0])[:300])
    text = res[0]["content"] if isinstance(res[0]["content"], str) else json.dumps(res[0]["content"])
    check("[result cut:" in text, text[-300:])
    check(len(text) <= config_value("MOTE_MCP_RESULT_MAX") + 200, len(text))
    return text


def test_result_of_1_mb_is_cut():
    text = one_mb({"bytes": 1000000})
    check(text.startswith("bbbbbbbb") and "END" not in text, text[:100])


def test_result_of_1_mb_in_many_items_is_cut():
    text = one_mb({"bytes": 10000, "items": 100})
    check(text.startswith("bbbbbbbb") and "END" in text, text[:100])


def test_result_of_many_values_is_cut():
    # 40 KB, but more values than MOTE_JSON_MAX_TOKENS: the items past them cut
    text = one_mb({"bytes": 10, "items": 1000})
    check(text.startswith("bbbbbbbbbbEND\nbbbb"), text[:100])


def test_structured_result_of_1_mb_is_cut():
    text = one_mb({"bytes": 1000000, "structured": True})
    check("ssssssss" in text, text[:100])


def test_endless_tool_list_is_bounded():
    port, log = start_server([{"tool": "e__echo", "input": {"text": "still here"}},
                              {"text": "done"}])
    slog = os.path.join(TMP, "endless-%s.log" % uuid.uuid4().hex[:6])
    p = run(args(port, config({"e": fake("--endless-list", "--page-size", "2", "--log", slog)}),
                 "-p", "x", "--yes"), timeout=60)
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr))
    lists = [l for l in open(slog) if '"tools/list"' in l]
    pages = config_value("MOTE_MCP_PAGES_MAX")
    check(len(lists) == pages, "%d tools/list requests (MOTE_MCP_PAGES_MAX %d)" % (len(lists), pages))
    check("goes on past MOTE_MCP_PAGES_MAX pages" in p.stderr, p.stderr)
    names = [t["name"] for t in requests_in(log)[0]["body"]["tools"] if t["name"].startswith("e__")]
    check(names == ["e__echo", "e__add", "e__image", "e__fail", "e__sleep"], names)
    check("echo: still here" in json.dumps(requests_in(log)[1]["body"]), "the call worked")


def test_crash_mid_call_is_a_tool_error():
    port, log = start_server([{"tool": "c__echo", "input": {"text": "boom"}}, {"text": "noted"}])
    p = run(args(port, config({"c": fake("--crash-on-call")}), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    body = json.dumps(requests_in(log)[1]["body"])
    check("failed during the call" in body and "status 7" in body, body[-400:])


def test_slow_init_does_not_hold_up_the_prompt():
    port, _ = start_server()
    cfg = config({"slow": fake("--slow-init", "4")})
    a = args(port, cfg)
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(a[0], a, env())
    out = b""
    while b"> " not in out:
        r, _, _ = select.select([fd], [], [], 10)
        check(r, "no prompt")
        out += os.read(fd, 4096)
    took = time.monotonic() - t0
    os.write(fd, b"/quit\r")
    os.waitpid(pid, 0)
    NOTES.append("first prompt with a 4 s MCP initialize pending: %.0f ms" % (took * 1000))
    check(took < 2.0, "the prompt waited %.1f s" % took)


def test_request_timeout():
    port, log = start_server([{"tool": "s__sleep", "input": {"seconds": 30}}, {"text": "done"}])
    t0 = time.monotonic()
    # (the server's startup keeps 30 s: a loaded machine starts python slowly)
    p = subprocess.run(args(port, config({"s": dict(fake(), startup_timeout_sec=30)}), "-p", "x",
                            "--yes"), capture_output=True,
                       text=True, timeout=120, env=dict(env(), MOTE_MCP_TIMEOUT_MS="800"))
    took = time.monotonic() - t0
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    body = json.dumps(requests_in(log)[1]["body"])
    check("did not answer the call in time" in body, "the model was told of the timeout")
    check(took < 15, "the 800 ms deadline ended the call (%.1f s)" % took)


def test_cancel_sends_notifications_cancelled():
    port, _ = start_server([{"tool": "s__sleep", "input": {"seconds": 30}}])
    srvlog = os.path.join(TMP, "fake-cancel.log")
    tag = uuid.uuid4().hex
    p = subprocess.Popen(args(port, config({"s": fake("--log", srvlog, "--tag", tag)}), "-p", "x",
                              "--yes"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    # the call is on its way once the server has it: Ctrl+C must cancel it
    wait_for(lambda: os.path.exists(srvlog) and "tools/call" in open(srvlog).read(),
             "the tools/call at the server", 20)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=20)
    check(p.returncode == 130, p.returncode)
    recv = [json.loads(l) for l in open(srvlog)]
    call = [m for m in recv if m.get("method") == "tools/call"][0]
    canc = [m for m in recv if m.get("method") == "notifications/cancelled"]
    check(canc and canc[0]["params"]["requestId"] == call["id"], recv[-2:])


def test_bad_configs_exit_2():
    port, _ = start_server()
    for body, words in (("not json", "not a JSON object"), ("{}", "mcpServers"),
                        ('{"mcpServers": {"a": {"args": []}}}', "command"),
                        ('{"mcpServers": {"a b": {"command": "x"}}}', "bad server name"),
                        (json.dumps({"mcpServers": {"s%d" % i: {"command": "x"} for i in range(9)}}),
                         "MOTE_MAX_MCP_SERVERS"),
                        # strict: one reading only (a duplicate key), no C string cut at a NUL
                        ('{"mcpServers": {"a": {"command": "true", "command": "x"}}}',
                         'duplicate key "command"'),
                        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}',
                         'duplicate key "a"'),
                        ('{"mcpServers": {"a": {"command": "true\\u0000x"}}}', '"command"'),
                        ('{"mcpServers": {"a": {"command": "x", "args": ["-v\\u0000"]}}}', "NUL"),
                        ('{"mcpServers": {"a": {"command": "x", "env": {"K": "v\\u0000w"}}}}',
                         '"K"'),
                        ('{"mcpServers": {"a\\u0000b": {"command": "x"}}}', "NUL")):
        path = os.path.join(TMP, "bad-%s.json" % uuid.uuid4().hex[:6])
        open(path, "w").write(body)
        p = run(args(port, path, "-p", "x"))
        check(p.returncode == 2 and words in p.stderr, (body[:40], p.returncode, p.stderr))


def test_env_is_minimal():
    port, log = start_server([{"tool": "e__get-env", "input": {}}])
    if not os.path.exists(os.path.join(NPM_BIN, "mcp-server-everything")):
        raise Skip("the npm servers are not installed (make deps)")
    cfg = config({"e": {"command": os.path.join(NPM_BIN, "mcp-server-everything"), "args": [],
                        "env": {"MOTE_TEST_VAR": "passed-through"}}})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    body = json.dumps(requests_in(log)[1]["body"])
    check("passed-through" in body, "the configured env reached the server")
    check("sk-ant-mcp-SECRET" not in body and "ANTHROPIC_API_KEY" not in body,
          "the API key never reaches an MCP server")


def test_server_runs_only_once_recorded():
    # What a server does first (here: look for its record in the state)
    # happens only after its record is on disk, so a `setsid` helper it
    # starts at once can never outlive mote, its supervisor and itself
    # unrecorded. Each lock and sync takes 300 ms more (a slow flash): the
    # server must still find its record, in each of three starts.
    so = build_shim("slowstore", "slow-storage shim")  # slow flock and fsync
    port, _ = start_server([{"text": "ok"}] * 3)
    for i in range(3):
        st = tempfile.mkdtemp(dir=TMP)
        mark = os.path.join(TMP, "mark-%s" % uuid.uuid4().hex[:8])
        script = ('cat "$0"/mcp/*.run > "$1" 2>/dev/null; echo end >> "$1"; '
                  'exec "$2" "$3"')
        cfg = config({"r": {"command": "/bin/sh", "args": ["-c", script, st, mark,
                                                            sys.executable, FAKE_MCP]}})
        a = [MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
             "--mcp-config", cfg, "-p", "x"]
        p = subprocess.run(a, capture_output=True, text=True, timeout=90,
                           env=dict(env(), LD_PRELOAD=so, MOTE_TEST_SYNC_MS="300",
                                    ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0"))
        check(p.returncode == 0 and "mcp r: ready" in p.stderr, (p.returncode, p.stderr))
        text = open(mark).read()
        check('"server":"r"' in text, "start %d: the server ran before its record was written "
              "(it saw %r)" % (i + 1, text))


def call_results(log):
    """The tool results of the last model request, in order."""
    return [b for m in requests_in(log)[-1]["body"]["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


def test_per_server_deadlines():
    # "startup_timeout_sec" bounds initialize and tools/list, "tool_timeout_sec"
    # a call, for that server only (the others keep the default 30 s)
    port, log = start_server([{"tool": "s__sleep", "input": {"seconds": 8}},
                              {"tool": "o__sleep", "input": {"seconds": 2}}, {"text": "done"}])
    cfg = config({"slow": dict(fake("--slow-init", "8"), startup_timeout_sec=1),
                  "s": dict(fake(), tool_timeout_sec=1.5), "o": fake()})
    t0 = time.monotonic()
    p = run(args(port, cfg, "-p", "x", "--yes"))
    took = time.monotonic() - t0
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    check("mcp slow: no answer to initialize in time" in p.stderr, p.stderr)
    res = call_results(log)
    check(len(res) == 2 and res[0].get("is_error") and
          "did not answer the call in time" in res[0]["content"], res)
    check(res[1]["content"] == "slept" and not res[1].get("is_error"), "the other server's "
          "2 s call is within its default deadline: %s" % res)
    check(took < 12, "the 1 s and 1.5 s deadlines ended the 8 s waits (%.1f s)" % took)


def test_bad_deadlines_exit_2():
    port, _ = start_server()
    for value in ('"30"', "0", "-1", "1e3", "3601", "true", "0.0001", "[1]"):
        path = os.path.join(TMP, "bad-dl-%s.json" % uuid.uuid4().hex[:6])
        open(path, "w").write('{"mcpServers": {"a": {"command": "x", "tool_timeout_sec": %s}}}'
                              % value)
        p = run(args(port, path, "-p", "x"))
        check(p.returncode == 2 and '"tool_timeout_sec" must be a number of seconds' in p.stderr,
              (value, p.returncode, p.stderr))
    path = os.path.join(TMP, "ok-dl-%s.json" % uuid.uuid4().hex[:6])
    json.dump({"mcpServers": {"a": dict(fake(), startup_timeout_sec=20.5, tool_timeout_sec=3600)}},
              open(path, "w"))
    p = run(args(port, path, "-p", "x"))
    check(p.returncode == 0 and "mcp a: ready" in p.stderr, p.stderr)


def test_progress_extends_the_call():
    # a 3 s call with a 1 s deadline: the server's progress (every 0.3 s,
    # for the token the call carries) gives it its deadline again
    port, log = start_server([{"tool": "p__sleep", "input": {"seconds": 3}}, {"text": "done"}])
    srvlog = os.path.join(TMP, "fake-progress-%s.log" % uuid.uuid4().hex[:6])
    cfg = config({"p": dict(fake("--progress", "0.3", "--log", srvlog), tool_timeout_sec=1)})
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    call = [json.loads(l) for l in open(srvlog) if '"tools/call"' in l][0]
    check(call["params"].get("_meta", {}).get("progressToken") == call["id"],
          "the call carries its progress token: %s" % call["params"])
    res = call_results(log)
    check(res and res[0]["content"] == "slept" and not res[0].get("is_error"), res)
    check("mcp p: progress 1/10: step 1" in p.stderr, p.stderr)


def test_real_everything_progress_extends_the_call():
    ev = os.path.join(NPM_BIN, "mcp-server-everything")
    if not os.path.exists(ev):
        raise Skip("the npm servers are not installed (make deps)")
    port, log = start_server([{"tool": "e__trigger-long-running-operation",
                               "input": {"duration": 4, "steps": 4}}, {"text": "done"}])
    # (the server's startup keeps 30 s: a loaded machine starts node slowly)
    cfg = config({"e": {"command": ev, "args": [], "tool_timeout_sec": 2.5,
                        "startup_timeout_sec": 30}})
    p = subprocess.run(args(port, cfg, "-p", "x", "--yes"), capture_output=True, text=True,
                       timeout=120, env=dict(env(), MOTE_MCP_TIMEOUT_MS="2500"))
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    res = call_results(log)
    check(res and "Long running operation completed" in res[0]["content"], res)
    check("mcp e: progress 1/4" in p.stderr, p.stderr)


def test_dead_server_started_again_on_the_next_call():
    # the server exits after each answer: a call that goes out before its
    # exit is seen fails (it may have been read), the next one starts it
    # again; so of calls two and three at least one runs in a new process
    starts = os.path.join(TMP, "starts-%s" % uuid.uuid4().hex[:6])
    port, log = start_server([{"tool": "r__echo", "input": {"text": "one"}},
                              {"tool": "r__echo", "input": {"text": "two"}},
                              {"tool": "r__echo", "input": {"text": "three"}}, {"text": "done"}])
    p = run(args(port, config({"r": fake("--exit-after-call", "--starts", starts)}), "-p", "x",
                 "--yes"))
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    res = [r["content"] for r in call_results(log)]
    check(len(res) == 3 and res[0] == "echo: one" and res[2] == "echo: three" and
          res[1] in ("echo: two", "the MCP server 'r' failed during the call: the server exited "
                                  "(status 5)"), res)
    check("mcp r: starting the server again (1 of 3, MOTE_MCP_RESTART_MAX)" in p.stderr, p.stderr)
    ran = 3 if res[1] == "echo: two" else 2
    check(len(open(starts).readlines()) == ran, "started %d times" % ran)
    names = [t["name"] for t in requests_in(log)[1]["body"]["tools"]]
    check("r__echo" in names, "its tools stay offered while it can be started again: %s" % names)


def test_restarts_are_bounded():
    starts = os.path.join(TMP, "starts-%s" % uuid.uuid4().hex[:6])
    steps = [{"tool": "b__echo", "input": {"text": "n%d" % i}} for i in range(5)]
    port, log = start_server(steps + [{"text": "done"}])
    t0 = time.monotonic()
    p = run(args(port, config({"b": fake("--crash-on-call", "--starts", starts)}), "-p", "x",
                 "--yes"))
    took = time.monotonic() - t0
    check(p.returncode == 0 and "done" in p.stdout, p.stderr)
    res = [r["content"] for r in call_results(log)]
    check(len(res) == 5 and all("failed during the call" in r for r in res[:4]), res)
    check("not running" in res[4] and "status 7" in res[4], res)
    check(len(open(starts).readlines()) == 4, "1 start and 3 restarts")
    NOTES.append("5 calls, each crashing its server, 3 restarts (1 + 2 + 4 s apart): %.1f s" % took)


# ---- real servers ------------------------------------------------------------

def test_real_servers_through_a_model_turn():
    ev = os.path.join(NPM_BIN, "mcp-server-everything")
    fs = os.path.join(NPM_BIN, "mcp-server-filesystem")
    if not (os.path.exists(ev) and os.path.exists(fs)):
        raise Skip("the npm servers are not installed (make deps)")
    root = tempfile.mkdtemp(dir=TMP)
    open(os.path.join(root, "hello.txt"), "w").write("hello from a file\n")
    port, log = start_server([{"tools": [
        {"tool": "everything__echo", "input": {"message": "round trip"}},
        {"tool": "everything__get-sum", "input": {"a": 20, "b": 22}},
        {"tool": "fs__read_text_file", "input": {"path": os.path.join(root, "hello.txt")}},
        {"tool": "fs__list_directory", "input": {"path": root}}]}, {"text": "all done"}])
    cfg = config({"everything": {"command": ev, "args": []}, "fs": {"command": fs, "args": [root]}})
    t0 = time.monotonic()
    p = run(args(port, cfg, "-p", "x", "--yes"))
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    body = json.dumps(requests_in(log)[1]["body"])
    for want in ("round trip", "42", "hello from a file", "hello.txt"):
        check(want in body, "%s in the results" % want)
    lines = [l for l in p.stderr.splitlines() if "exited" in l]
    NOTES.append("disconnect-all with the real servers: " + "; ".join(lines))
    NOTES.append("one-shot with both real servers, start to exit: %.0f ms" %
                 ((time.monotonic() - t0) * 1000))


def test_real_filesystem_1_mb_file_is_cut():
    fs = os.path.join(NPM_BIN, "mcp-server-filesystem")
    if not os.path.exists(fs):
        raise Skip("the npm servers are not installed (make deps)")
    root = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(root, "big.txt")
    with open(path, "w") as f:
        f.write("line %07d of a large file\n" % 0)
        for i in range(1, 40000):
            f.write("line %07d of a large file\n" % i)  # 1.04 MB
    port, log = start_server([{"tool": "fs__read_text_file", "input": {"path": path}},
                              {"text": "all done"}])
    p = run(args(port, config({"fs": {"command": fs, "args": [root]}}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    res = [b for b in requests_in(log)[1]["body"]["messages"][-1]["content"]
           if b.get("type") == "tool_result"]
    text = res[0]["content"] if isinstance(res[0]["content"], str) else json.dumps(res[0]["content"])
    check(not res[0].get("is_error") and "line 0000000 of a large file" in text, text[:300])
    check("[result cut:" in text and "line 0039999" not in text, text[-300:])


def test_real_github_server_list_loads():
    gh = os.path.join(NPM_BIN, "mcp-server-github")
    if not os.path.exists(gh):
        raise Skip("@modelcontextprotocol/server-github is not installed (make deps)")
    port, log = start_server([{"text": "listed"}])
    cfg = config({"gh": {"command": gh, "args": [],
                         "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy-token-only-the-list"}}})
    p = run(args(port, cfg, "-p", "x"))
    check(p.returncode == 0 and "listed" in p.stdout, (p.returncode, p.stderr))
    names = [t["name"] for t in requests_in(log)[0]["body"]["tools"] if t["name"].startswith("gh__")]
    want = config_value("MOTE_MCP_MAX_TOOLS")
    check(len(names) == want and "gh__create_pull_request" in names, names)
    check("ready, %d tools (" % want in p.stderr and "MOTE_MCP_MAX_TOOLS" in p.stderr, p.stderr)


# ---- zero orphans --------------------------------------------------------------

def orphan_case(name, how):
    port, log = start_server([{"after_text": "working", "stall": 60}])
    tag = uuid.uuid4().hex
    cfg = config({"a": fake("--grandchild", "--tag", tag),
                  "b": fake("--grandchild", "--ignore-sigterm", "--tag", tag)})
    code = how(port, log, cfg, tag)
    left = wait_gone(tag)
    NOTES.append("processes left after %s: %d" % (name, len(left)))
    check(not left, "left after %s: %s" % (name, left))
    return code


def start_and_wait(a, tag, log=None, stdin=None):
    """Starts mote (`a`); returns once both servers and their grandchildren
    run (each carries the tag) and, with `log`, the turn's request has
    reached the model server (which stalls it)."""
    p = subprocess.Popen(a, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    wait_for(lambda: len(tagged(tag)) >= 4, "the servers and their grandchildren to run", 20)
    if log:
        wait_for(lambda: requests_in(log), "the turn's request at the model server", 20)
    return p


def test_no_orphans_after_quit():
    def how(port, log, cfg, tag):
        p = start_and_wait(args(port, cfg), tag, stdin=True)
        out, err = p.communicate("/quit\n", timeout=30)
        check(p.returncode == 0, err)
    orphan_case("/quit", how)


def orphans_after_signal(name, sig, code, *extra):
    """`mote -p x` (with `extra`) sent `sig` while its servers'
    grandchildren run: it exits with `code`, and nothing is left."""
    def how(port, log, cfg, tag):
        p = start_and_wait(args(port, cfg, "-p", "x", *extra), tag, log)
        p.send_signal(sig)
        p.communicate(timeout=30)
        check(p.returncode == code, p.returncode)
    orphan_case(name, how)


def test_no_orphans_after_ctrl_c():
    orphans_after_signal("Ctrl+C", signal.SIGINT, 130)


def test_no_orphans_after_sigterm():
    orphans_after_signal("SIGTERM (with a shutdown timeout)", signal.SIGTERM, 143,
                         "--shutdown-timeout", "600")


def test_no_orphans_after_kill_9():
    orphans_after_signal("kill -9", signal.SIGKILL, -signal.SIGKILL)


def main():
    return run_all("mcp", globals())


if __name__ == "__main__":
    sys.exit(main())
