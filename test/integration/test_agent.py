#!/usr/bin/env python3
"""Integration tests of the mote agent: the real binary against the local
test LLM server - tool rounds, approval, stream-json, interactive use in a
pipe and in a pty, crash recovery after kill -9, and the shutdown paths.

    test_agent.py BUILDDIR
Prints one line per test and "N passed, M failed".
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from harness import (NOTES, Pty, TMP, check, journal, journal_file, journal_files, mote_env, read_until, requests_in, run_all,
                     start_server, wait_for)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-4f1c"


def new_state():
    d = tempfile.mkdtemp(prefix="state-", dir=TMP)
    return d


def mote_args(port, state, *extra, openai=False):
    args = [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port]
    if openai:
        args += ["--provider", "openai"]
    return args + list(extra)


def env(openai=False, **more):
    return mote_env(KEY, openai, **more)


def run(args, stdin="", timeout=60, e=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=e or env())


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def group_left(pgid):
    """Processes of group `pgid` still running (zombies, already dead and
    waiting for a new parent to reap them, do not count)."""
    out = subprocess.run(["ps", "-eo", "pgid,pid,stat,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines()
            if l.split()[0] == str(pgid) and not l.split()[2].startswith("Z")]


# ---- one-shot, tools, approval ------------------------------------------------

def tool_round(openai):
    marker = os.path.join(TMP, "ran-%s" % ("o" if openai else "a"))
    port, log = start_server([{"text": "Checking.", "tool": "shell",
                               "input": {"command": "touch %s && echo made it" % marker}}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "make the file", "--yes", openai=openai), e=env(openai))
    check(p.returncode == 0, (p.returncode, p.stderr))
    check(os.path.exists(marker), "the tool ran")
    check(p.stdout.startswith("Checking.") and "The tool returned: made it" in p.stdout, p.stdout)
    reqs = requests_in(log)
    check(len(reqs) == 2, "two model requests")
    body = json.dumps(reqs[1]["body"])
    check("made it" in body and "[exit status 0]" in body, "the result went back to the model")
    recs = journal(state)
    kinds = [r["t"] for r in recs]
    check(kinds == ["open", "user", "request", "assistant", "tool_start", "tool_result",
                    "request", "assistant"], kinds)  # one tool_start per call (JOURNAL.md)
    check(recs[4]["pgid"] > 0 and recs[4]["start"] > 0 and len(recs[4]["tag"]) == 16,
          "the tool's process group, its start and its tag are recorded")


def test_one_shot_tool_round_anthropic():
    tool_round(False)


def test_one_shot_tool_round_openai():
    tool_round(True)


def test_refused_without_terminal():
    marker = os.path.join(TMP, "must-not-exist")
    port, log = start_server([{"tool": "shell", "input": {"command": "touch " + marker}}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "try it"))
    check(p.returncode == 0, p.stderr)
    check(not os.path.exists(marker), "a refused tool never runs")
    body = json.dumps(requests_in(log)[1]["body"])
    check("--yes" in body and "refused" in body, "the model is told why")


def test_no_tools_offers_none():
    port, log = start_server([{"text": "plain"}])
    p = run(mote_args(port, new_state(), "-p", "x", "--no-tools"))
    check(p.returncode == 0 and "tools" not in requests_in(log)[0]["body"], p.stderr)


def test_tool_output_capped_and_timeout():
    port, log = start_server([
        {"tool": "shell", "input": {"command": "head -c 100000 /dev/zero | tr '\\0' a"}},
        {"tool": "shell", "input": {"command": "sleep 30"}},
    ])
    state = new_state()
    t0 = time.monotonic()
    p = run(mote_args(port, state, "-p", "x", "--yes"), e=env(MOTE_TOOL_TIMEOUT_MS="700"))
    elapsed = time.monotonic() - t0
    check(p.returncode == 0, p.stderr)
    results = [r for r in journal(state) if r["t"] == "tool_result"]
    check("output cut" in results[0]["text"] and len(results[0]["text"]) < 20000, "cap")
    check("timed out" in results[1]["text"] and results[1]["error"], results[1]["text"])
    check(elapsed < 15, "the timeout ended the tool (%.1f s)" % elapsed)


def test_read_write_list_tools():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "note.txt")
    port, log = start_server([
        {"tool": "write_file", "input": {"path": path, "content": "line one\nline two\n"}},
        {"tool": "read_file", "input": {"path": path}},
        {"tool": "list_dir", "input": {"path": d}},
        {"text": "done"},
    ])
    p = run(mote_args(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    with open(path) as f:
        check(f.read() == "line one\nline two\n", "written")
    last = json.dumps(requests_in(log)[3]["body"])
    check("line two" in last and "note.txt" in last, "results reached the model")


def test_stream_json():
    port, _ = start_server([{"text": "Hi.", "tool": "list_dir", "input": {"path": "/"}},
                            {"text": "Bye."}])
    p = run(mote_args(port, new_state(), "-p", "x", "--yes", "--output-format", "stream-json"))
    check(p.returncode == 0, p.stderr)
    evs = [json.loads(line) for line in p.stdout.splitlines()]
    types = [e["type"] for e in evs]
    for t in ("text", "tool_call", "tool_result", "turn_end", "shutdown"):
        check(t in types, "%s event in %s" % (t, types))
    end = [e for e in evs if e["type"] == "turn_end"][0]
    check(end["stop_reason"] == "end_turn" and end["usage"]["output_tokens"] > 0, end)
    check(evs[-1] == {"type": "shutdown", "reason": "done", "exit_code": 0}, evs[-1])


def test_max_turns():
    port, log = start_server([{"tool": "list_dir", "input": {"path": "/"}}] * 5)
    p = run(mote_args(port, new_state(), "-p", "x", "--yes", "--max-turns", "2"))
    check(p.returncode == 1 and "max-turns" in p.stderr, (p.returncode, p.stderr))
    check(len(requests_in(log)) == 2, "stopped at 2 requests")


def test_api_error_exit_1_and_key_never_written():
    port, _ = start_server([{"status": 401, "body": {"type": "error", "error": {
        "type": "authentication_error", "message": "invalid x-api-key"}}}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "x"))
    check(p.returncode == 1 and "ANTHROPIC_API_KEY" in p.stderr, (p.returncode, p.stderr))
    check(KEY not in p.stderr and KEY not in p.stdout, "key not printed")
    for root, _, files in os.walk(state):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                check(KEY.encode() not in fh.read(), "key written to " + f)


def test_config_errors_exit_2():
    state = new_state()
    for args, words in (([], "no API key"),
                        (["--base-url", "ftp://x"], "bad base URL"),
                        (["--mcp-config", "/nonexistent.json"], "mcp-config"),
                        (["--ca-file", "/nonexistent.pem"], "ca-file"),
                        (["--resume", "nosuch"], "no conversation")):
        e = env() if args else {k: v for k, v in env().items() if not k.endswith("_KEY")}
        p = run([MOTE, "--state-dir", state, "-p", "x"] + args, e=e)
        check(p.returncode == 2 and words in p.stderr, (args, p.returncode, p.stderr))
        check(len(p.stderr.strip().splitlines()) == 1, "one line: %r" % p.stderr)


# ---- interactive ----------------------------------------------------------------

def test_interactive_pipe_quit_and_history():
    port, _ = start_server()
    state = new_state()
    p = run(mote_args(port, state), stdin="first message\n/jobs\nsecond message\n/quit\n")
    check(p.returncode == 0, p.stderr)
    check("You said: first message" in p.stdout and "You said: second message" in p.stdout,
          p.stdout)
    check("> " in p.stdout, "the prompt")
    with open(os.path.join(state, "history")) as f:
        hist = f.read().splitlines()
    check(hist == ["first message", "/jobs", "second message", "/quit"], hist)
    check(oct(os.stat(os.path.join(state, "history")).st_mode & 0o777) == "0o600", "mode")
    recs = journal(state)
    check([r["t"] for r in recs].count("user") == 2, "two user records")


def test_end_of_input_exits_0():
    port, _ = start_server()
    p = run(mote_args(port, new_state()), stdin="only line\n")
    check(p.returncode == 0 and "You said: only line" in p.stdout, (p.returncode, p.stderr))


def test_history_unwritable_warns_and_exits_clean():
    port, _ = start_server()
    state = new_state()
    os.makedirs(os.path.join(state, "history"))  # a directory where the file goes
    p = run(mote_args(port, state), stdin="hello\n/quit\n")
    check(p.returncode == 0, (p.returncode, p.stderr))
    check("warning" in p.stderr and "history" in p.stderr, p.stderr)


def test_retry_after_error():
    port, log = start_server([{"status": 400}, {"text": "second try worked"}])
    state = new_state()
    p = run(mote_args(port, state), stdin="hi\n/retry\n/quit\n")
    check(p.returncode == 0, p.stderr)
    check("HTTP 400" in p.stderr and "second try worked" in p.stdout, (p.stdout, p.stderr))
    bodies = [r["body"]["messages"] for r in requests_in(log)]
    check(len(bodies) == 2 and bodies[0] == bodies[1], "the same conversation sent again")


def test_retry_after_a_complete_answer_sends_nothing():
    """/retry after a complete answer has nothing to send again: sending
    would end the request with the model's own finished answer (a
    prefill) and journal a second assistant record in a row."""
    port, log = start_server([{"text": "all done"}, {"text": "a prefill continued"}])
    state = new_state()
    p = run(mote_args(port, state), stdin="hi\n/retry\n/quit\n")
    check(p.returncode == 0, p.stderr)
    check("nothing to retry" in p.stderr and "a prefill continued" not in p.stdout,
          (p.stdout, p.stderr))
    check(len(requests_in(log)) == 1, "one request only")


# ---- pty: Ctrl+C ----------------------------------------------------------------

def pty_turn_streaming(text, stall):
    """The interactive CLI in a pty, a question asked whose answer streams
    `text` and then stalls for `stall` seconds: (Pty, state directory)
    once the text is on the screen."""
    port, _ = start_server([{"after_text": text, "stall": stall}])
    state = new_state()
    t = Pty(mote_args(port, state), env())
    t.read_until("> ")
    t.send("question\r")
    t.read_until(text)
    return t, state


def test_pty_ctrl_c_cancels_turn_then_quit():
    t, state = pty_turn_streaming("thinking hard", 30)
    t0 = time.time()
    os.kill(t.pid, signal.SIGINT)  # what the terminal sends on Ctrl+C
    t1 = t.read_until("(cancelled)")
    NOTES.append("Ctrl+C to prompt in a pty: %.0f ms" % ((t1 - t0) * 1000))
    check(t1 - t0 < 2.0, "back to the prompt in %.2f s" % (t1 - t0))
    t.read_until("\n> ")
    t.send("/quit\r")
    code = t.wait()
    check(code == 0, "exit %r" % code)
    recs = journal(state)
    part = [r for r in recs if r["t"] == "assistant"]
    check(part and part[-1].get("interrupted") and part[-1]["text"].startswith("thinking"),
          "the streamed text is journaled, closed and marked interrupted")


def test_pty_ctrl_c_kills_the_tool_group():
    port, _ = start_server([{"tool": "shell", "input": {"command": "sleep 31 & sleep 32"}},
                            {"text": "after"}])
    state = new_state()
    t = Pty(mote_args(port, state, "--yes"), env())
    t.read_until("> ")
    t.send("run\r")

    def started():
        try:
            return [r for r in journal(state) if r["t"] == "tool_start" and r["pgid"] > 0]
        except Exception:  # noqa: BLE001
            return None
    pgid = wait_for(started, "the tool")[0]["pgid"]
    wait_for(lambda: len(group_left(pgid)) >= 2, "the tool's two sleeps")
    t0 = time.time()
    os.kill(t.pid, signal.SIGINT)
    t1 = t.read_until("(cancelled)")
    NOTES.append("Ctrl+C during a tool to the prompt: %.0f ms" % ((t1 - t0) * 1000))
    check(t1 - t0 < 2.0, "%.2f s" % (t1 - t0))
    check(not group_left(pgid), "the tool's group is gone")
    t.read_until("\n> ")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    res = [r for r in journal(state) if r["t"] == "tool_result"]
    check(res and "cancelled" in res[0]["text"], res)


def test_pty_ctrl_c_at_prompt_exits_130():
    port, _ = start_server()
    t = Pty(mote_args(port, new_state()), env())
    t.read_until("> ")
    os.kill(t.pid, signal.SIGINT)
    check(t.wait() == 130, "exit 130")


def test_pty_double_ctrl_c_during_turn_exits_130():
    t, state = pty_turn_streaming("slow", 30)
    os.kill(t.pid, signal.SIGINT)
    t.read_until("(cancelled)")  # the first one taken: two signals are not merged into one
    os.kill(t.pid, signal.SIGINT)
    check(t.wait() == 130, "exit 130")
    journal(state)  # every line valid


def test_pty_approval_yes_and_no():
    marker = os.path.join(TMP, "approved")
    port, log = start_server([{"tool": "shell", "input": {"command": "touch " + marker}},
                              {"text": "ok"},
                              {"tool": "shell", "input": {"command": "touch " + marker + "2"}},
                              {"text": "ok2"}])
    t = Pty(mote_args(port, new_state()), env())
    t.read_until("> ")
    t.send("one\r")
    t.read_until("[y/N]")
    t.send("y\r")
    t.read_until("ok")
    t.read_until("> ")
    t.out = b""  # the line editor redraws its question: count from here
    t.send("two\r")
    # The second question: an answer typed before its question answers
    # nothing (issue 10), so wait for it.
    t.read_until("touch " + marker + "2")
    t.read_until("[y/N]")
    t.send("n\r")
    t.read_until("ok2")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(os.path.exists(marker) and not os.path.exists(marker + "2"), "y ran it, n did not")
    check("refused" in json.dumps(requests_in(log)[3]["body"]), "the refusal reached the model")


# ---- crash recovery (kill -9) ---------------------------------------------------

def user_journaled(state):
    """Waits until the message typed is in the journal (mote took it: its
    signal handlers are in place and a turn runs)."""
    def seen():
        d = os.path.join(state, "conversations")
        if not os.path.isdir(d) or not any(f.endswith(".jsonl") for f in os.listdir(d)):
            return False
        try:
            return any(r["t"] == "user" for r in journal(state))
        except (AssertionError, ValueError):  # a line still being written
            return False
    wait_for(seen, "the message to be journaled")


def spawn(args, e=None, stdin=None):
    return subprocess.Popen(args, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=e or env())


def test_kill9_while_streaming_then_continue():
    port, log = start_server([{"after_text": "partial answ", "stall": 30}, {"text": "full answer"}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "tell me"))
    read_until(p, "partial answ")  # inside the stream: the server stalls after it
    p.kill()
    p.wait()
    q = run(mote_args(port, state, "--continue"))
    check(q.returncode == 0, (q.returncode, q.stderr))
    check("continuing" in q.stderr and "full answer" in q.stdout, (q.stdout, q.stderr))
    check(len(requests_in(log)) == 2, "the request was sent again, without user input")
    kinds = [r["t"] for r in journal(state)]
    check(kinds[-3:] == ["auto", "request", "assistant"], kinds)


def test_kill9_while_tool_runs_then_continue():
    port, log = start_server([{"tool": "shell", "input": {"command": "sleep 30 & sleep 31"}},
                              {"text": "should not be asked for"}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "run it", "--yes"))

    def started():
        try:
            recs = journal(state)
        except (AssertionError, ValueError, FileNotFoundError):
            return None
        s = [r for r in recs if r["t"] == "tool_start" and r["pgid"] > 0]
        return s[0] if s else None
    rec = wait_for(started, "the tool to start")
    pgid = rec["pgid"]
    check(alive(pgid), "the tool runs")
    p.kill()
    p.wait()
    # The supervisor ends the tool's whole group (its background child
    # too) when mote dies: nothing is left.
    wait_for(lambda: not group_left(pgid), "the tool's group to go", timeout=5)
    q = run(mote_args(port, state, "--continue"), stdin="")
    check(q.returncode == 0 and "interrupted while a tool ran" in q.stderr, (q.returncode, q.stderr))
    check("interrupted: interrupted" not in q.stderr and "(interrupted:" not in q.stderr,
          "the message says it once: " + q.stderr)
    check("leftover" not in q.stderr, "nothing was left to kill: " + q.stderr)
    check(len(requests_in(log)) == 1, "no request was sent by itself")
    recs = journal(state)
    res = [r for r in recs if r["t"] == "tool_result"]
    check(res and res[-1]["error"] and "may or may not have run" in res[-1]["text"], res)
    check(recs[-1]["t"] == "error", recs[-1])
    check("interrupted: interrupted" not in json.dumps(recs[-1]), recs[-1])
    # The tool is never run again; /retry goes on, with no dangling call.
    r = run(mote_args(port, state, "--continue"), stdin="/retry\n/quit\n")
    check(r.returncode == 0 and "should not be asked for" in r.stdout, (r.stdout, r.stderr))
    body = requests_in(log)[-1]["body"]["messages"]
    check(body[-1]["content"][0]["type"] == "tool_result", "every call has a result")


def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def test_recovery_kills_a_recorded_group_only_if_start_time_matches():
    """A leftover tool group in the journal is killed on recovery, but only
    when its leader's start time matches: a reused pid is never hit."""
    port, log = start_server([{"text": "fine"}])
    results = {}
    for label, offset in (("match", 0), ("reused", 12345)):
        victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
        state = new_state()
        os.makedirs(os.path.join(state, "conversations"))
        recs = [{"t": "open", "v": 1, "id": "k"}, {"t": "user", "text": "go"},
                {"t": "request", "attempt": 1},
                {"t": "assistant", "text": "", "stop": "tool_use",
                 "calls": [{"id": "c1", "name": "shell", "input": {"command": "sleep 60"}}]},
                {"t": "tool_start", "id": "c1", "pgid": victim.pid,
                 "start": start_time(victim.pid) + offset}]
        with open(os.path.join(state, "conversations", "k.jsonl"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        p = run(mote_args(port, state, "--resume", "k"))
        check(p.returncode == 0 and "interrupted while a tool ran" in p.stderr, p.stderr)
        try:
            victim.wait(timeout=3)
            results[label] = "killed"
        except subprocess.TimeoutExpired:
            results[label] = "alive"
            victim.kill()
            victim.wait()
    check(results == {"match": "killed", "reused": "alive"}, results)


def test_kill9_with_next_request_in_flight_then_continue():
    port, log = start_server([{"tool": "list_dir", "input": {"path": "/"}},
                              {"stall_headers": 30}, {"text": "the answer after recovery"}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "look", "--yes"))
    wait_for(lambda: len(requests_in(log)) == 2, "the second request")
    p.kill()
    p.wait()
    kinds = [r["t"] for r in journal(state)]
    check(kinds[-2:] == ["tool_result", "request"], kinds)
    q = run(mote_args(port, state, "--continue"))
    check(q.returncode == 0 and "the answer after recovery" in q.stdout, (q.stdout, q.stderr))


def test_continue_without_current_takes_the_newest_journal():
    """A start killed after its journal was made but before STATE/current
    named it (or a lost STATE/current): --continue goes on with the
    conversation changed last, never beside it with a new one (the kill -9
    storm met this window once in CI)."""
    port, log = start_server([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    state = new_state()
    q = run(mote_args(port, state, "-p", "first"))
    check(q.returncode == 0, q.stderr)
    older = journal_files(state)
    q = run(mote_args(port, state, "-p", "second"))
    check(q.returncode == 0, q.stderr)
    check(len(older) == 1 and len(journal_files(state)) == 2, journal_files(state))
    past = os.stat(older[0]).st_mtime - 100
    os.utime(older[0], (past, past))  # the second one is the newer, whatever the ids
    os.remove(os.path.join(state, "current"))
    q = run(mote_args(port, state, "--continue", "-p", "third"))
    check(q.returncode == 0 and "three" in q.stdout, (q.stdout, q.stderr))
    files = journal_files(state)
    check(len(files) == 2, "no new conversation beside the old ones: %s" % files)
    newer = [f for f in files if f not in older][0]
    said = [r.get("text") for r in journal_file(newer) if r["t"] == "user"]
    check(said == ["second", "third"], said)
    sent = json.dumps(requests_in(log)[-1])
    check("second" in sent and "first" not in sent, sent[:400])


def test_kill9_storm_every_line_valid():
    """kill -9 at many instants of a tool-heavy run: every journal line
    parses, and --continue always gives a valid conversation."""
    outcomes = {}
    for i in range(8):
        port, log = start_server([{"tool": "list_dir", "input": {"path": "/"}, "delay_ms": 5},
                                  {"tool": "read_file", "input": {"path": "/etc/hostname"}},
                                  {"text": "end " * 50, "delay_ms": 2}])
        state = new_state()
        p = spawn(mote_args(port, state, "-p", "go", "--yes"))
        time.sleep(0.05 + 0.04 * i)
        p.kill()
        p.wait()
        d = os.path.join(state, "conversations")
        if not os.path.isdir(d) or not [f for f in os.listdir(d) if f.endswith(".jsonl")]:
            continue  # killed before the conversation's journal was made
        recs = journal(state)
        last = recs[-1]["t"]
        q = run(mote_args(port, state, "--continue"))
        check(q.returncode in (0, 1), q.stderr)
        journal(state)
        outcomes[last] = outcomes.get(last, 0) + 1
    NOTES.append("kill -9 storm, last record at the kill: %s" % outcomes)


# ---- shutdown ------------------------------------------------------------------

def test_sigterm_drains_an_answer_that_can_finish():
    port, log = start_server([{"text": "a b c d e f g h i j", "delay_ms": 60}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "x"))
    first = read_until(p, "a b")  # the answer streams
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    out = first + out
    check(p.returncode == 143, (p.returncode, err))
    check(out.strip() == "a b c d e f g h i j", "the answer completed: %r" % out)
    recs = journal(state)
    check(recs[-1]["t"] == "assistant" and not recs[-1].get("interrupted"), recs[-1])


def test_sigterm_timeout_marks_recovery_then_continue():
    port, log = start_server([{"after_text": "never ends", "stall": 60}, {"text": "finished later"}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "x", "--shutdown-timeout", "500"))
    read_until(p, "never ends")  # inside the stream: the server stalls after it
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    took = time.monotonic() - t0
    NOTES.append("SIGTERM with a stalled stream, --shutdown-timeout 500: exit after %.0f ms" %
                 (took * 1000))
    check(p.returncode == 143, (p.returncode, err))
    # The stream stalls for 60 s: an exit within a few seconds is the
    # timeout's (the margin is for a loaded machine).
    check(took < 0.5 + 6.0, "exit within the timeout plus a margin (%.2f s)" % took)
    check("did not stop in time" in err and "marked" in err, err)
    kinds = [r["t"] for r in journal(state)]
    check(kinds[-2:] == ["assistant", "mark"], kinds)
    q = run(mote_args(port, state, "--continue"))
    check(q.returncode == 0 and "finished later" in q.stdout, (q.stdout, q.stderr))


def test_sighup_drains_and_exits_129():
    port, _ = start_server([{"after_text": "x", "stall": 60}])
    state = new_state()
    p = spawn(mote_args(port, state, "--shutdown-timeout", "300"), stdin=True)
    p.stdin.write("hello\n")
    p.stdin.flush()
    user_journaled(state)
    p.send_signal(signal.SIGHUP)
    out, err = p.communicate(timeout=20)
    check(p.returncode == 129, (p.returncode, err))
    kinds = [r["t"] for r in journal(state)]
    check(kinds[-1] == "mark", kinds)


def test_pty_quit_during_a_turn_cancels_it():
    t, state = pty_turn_streaming("streaming", 60)
    t0 = time.time()
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(time.time() - t0 < 3, "/quit did not wait for the stalled turn")
    recs = journal(state)
    check(recs[-1]["t"] == "assistant" and recs[-1].get("interrupted"), recs[-1])


def test_signals_together_run_shutdown_once():
    port, log = start_server([{"after_text": "x", "stall": 60}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "x", "--output-format", "stream-json",
                        "--shutdown-timeout", "400"))
    wait_for(lambda: len(requests_in(log)) == 1, "the request")  # the handlers are set
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGTERM):
        p.send_signal(s)
    out, err = p.communicate(timeout=20)
    evs = [json.loads(line) for line in out.splitlines()]
    shut = [e for e in evs if e["type"] == "shutdown"]
    check(len(shut) == 1 and p.returncode == 143 and shut[0]["exit_code"] == 143, (shut, p.returncode))
    journal(state)


def test_quit_racing_a_signal_runs_once():
    port, _ = start_server()
    state = new_state()
    p = spawn(mote_args(port, state, "--output-format", "stream-json"), stdin=True)
    p.stdin.write("hi\n")
    p.stdin.flush()
    user_journaled(state)
    p.stdin.write("/quit\n")
    p.stdin.flush()
    p.send_signal(signal.SIGTERM)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    shut = [json.loads(l) for l in out.splitlines() if '"shutdown"' in l]
    check(len(shut) == 1 and p.returncode in (0, 130, 143) and
          shut[0]["exit_code"] == p.returncode, (shut, p.returncode, err))
    journal(state)
    with open(os.path.join(state, "history")) as f:
        check(f.read().splitlines()[0] == "hi", "history holds the input")


def test_all_three_signals_together():
    port, _ = start_server([{"after_text": "x", "stall": 60}])
    state = new_state()
    p = spawn(mote_args(port, state, "--output-format", "stream-json", "--shutdown-timeout", "300"),
              stdin=True)
    p.stdin.write("go\n")
    p.stdin.flush()
    user_journaled(state)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        p.send_signal(s)
    out, err = p.communicate(timeout=20)
    shut = [json.loads(l) for l in out.splitlines() if '"shutdown"' in l]
    check(len(shut) == 1 and p.returncode in (130, 143, 129), (shut, p.returncode))
    journal(state)


def test_no_process_left_behind():
    port, log = start_server([{"tool": "shell", "input": {"command": "sleep 40 & sleep 41"}}])
    state = new_state()
    p = spawn(mote_args(port, state, "-p", "x", "--yes", "--shutdown-timeout", "300"))

    def started():
        try:
            return [r for r in journal(state) if r["t"] == "tool_start" and r["pgid"] > 0]
        except Exception:  # noqa: BLE001
            return None
    rec = wait_for(started, "the tool")[0]
    # the shell and its background child both running
    wait_for(lambda: len([l for l in group_left(rec["pgid"]) if "sleep 4" in l]) >= 2,
             "the tool's two sleeps")
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=20)
    check(p.returncode == 130, p.returncode)
    # Neither the shell nor its background child is left.
    left = group_left(rec["pgid"])
    check(not left, "left: %s" % left)


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("agent", globals())


if __name__ == "__main__":
    sys.exit(main())
