#!/usr/bin/env python3
"""How turns end and long conversations keep working, through the real
binary: stop reasons (notes and exit codes), pause_turn, refusals, the
system prompt and instructions files, --max-tokens, compaction (by itself
near the context window, by hand, and after a kill -9 in the middle of it),
/usage.

    test_turns.py BUILDDIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from harness import TMP, check, requests_in, run_all, start_server
from test_agent import env, journal, mote_args, new_state, run, spawn, wait_for


def test_max_tokens_exit_3_with_a_note():
    port, _ = start_server([{"text": "a cut answer", "stop": "max_tokens"}])
    p = run(mote_args(port, new_state(), "-p", "x"))
    check(p.returncode == 3, (p.returncode, p.stderr))
    check("a cut answer" in p.stdout and "token limit" in p.stderr, (p.stdout, p.stderr))


def test_max_tokens_inside_a_tool_call_is_said_so():
    port, log = start_server([{"tool": "shell", "input": {"command": "echo hi"}, "stop": "max_tokens",
                               "cut_input": True},
                              {"text": "ok"}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "x", "--yes"))
    check(p.returncode == 0, (p.returncode, p.stderr))
    res = [r for r in journal(state) if r["t"] == "tool_result"]
    check(res and "max_tokens" in res[0]["text"] and "not one valid JSON" not in res[0]["text"],
          res)


def test_refusal_shown_journaled_exit_3():
    port, _ = start_server([{"refusal": "I cannot help with that."}])
    state = new_state()
    p = run(mote_args(port, state, "-p", "x", openai=True), e=env(openai=True))
    check(p.returncode == 3, (p.returncode, p.stderr))
    check("I cannot help with that." in p.stdout and "refused" in p.stderr, (p.stdout, p.stderr))
    ans = [r for r in journal(state) if r["t"] == "assistant"]
    check(ans[-1]["stop"] == "refusal" and "cannot help" in ans[-1]["text"], ans[-1])


def test_content_filter_exit_3():
    port, _ = start_server([{"text": "partial", "stop": "content_filter"}])
    p = run(mote_args(port, new_state(), "-p", "x", openai=True), e=env(openai=True))
    check(p.returncode == 3 and "content filter" in p.stderr, (p.returncode, p.stderr))


def test_pause_turn_goes_on():
    port, log = start_server([{"text": "first part", "stop": "pause_turn"}, {"text": "second part"}])
    p = run(mote_args(port, new_state(), "-p", "x"))
    check(p.returncode == 0, (p.returncode, p.stderr))
    check("first part" in p.stdout and "second part" in p.stdout, p.stdout)
    reqs = requests_in(log)
    check(len(reqs) == 2, "asked again without the user")
    check("first part" in json.dumps(reqs[1]["body"]["messages"]), "the paused answer went back")


def test_system_prompt_and_instructions_files():
    port, log = start_server([{"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"}])
    cwd = tempfile.mkdtemp(dir=TMP)
    state = new_state()

    def go(*extra):
        return subprocess.run(mote_args(port, state, "-p", "x", *extra), cwd=cwd, env=env(),
                              capture_output=True, text=True, timeout=60)
    check(go("--system", "You are a toaster.", "--max-tokens", "123").returncode == 0, "system")
    with open(os.path.join(cwd, "MOTE.md"), "w") as f:
        f.write("Always answer in French.\n")
    check(go().returncode == 0, "MOTE.md")
    sysfile = os.path.join(cwd, "sys.txt")
    with open(sysfile, "w") as f:
        f.write("Only from the file.")
    check(go("--system-file", sysfile).returncode == 0, "system-file")
    bodies = [r["body"] for r in requests_in(log)]
    def system(b):  # a string, or text blocks (with a prompt-cache breakpoint)
        s = b["system"]
        return s if isinstance(s, str) else "".join(x["text"] for x in s)
    check(system(bodies[0]) == "You are a toaster." and bodies[0]["max_tokens"] == 123, bodies[0])
    check("Always answer in French." in system(bodies[1]) and "mote" in system(bodies[1]),
          system(bodies[1]))
    check(system(bodies[2]) == "Only from the file.", system(bodies[2]))
    p = go("--system-file", "/nonexistent/file")
    check(p.returncode == 2 and "system-file" in p.stderr, (p.returncode, p.stderr))


def test_compaction_near_the_window_then_from_the_summary():
    port, log = start_server([{"text": "long answer", "input_tokens": 9000},
                              {"text": "SUMMARY-OF-EARLIER"},
                              {"text": "next answer"}])
    state = new_state()
    p = run(mote_args(port, state, "--context-window", "10000"),
            stdin="first question\nsecond question\n/usage\n/quit\n")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 3, [r["body"]["messages"][-1] for r in reqs])
    check("Summarise our conversation" in json.dumps(reqs[1]["body"]), "the summary request")
    check(reqs[1]["body"].get("tool_choice") in (None, {"type": "none"}), reqs[1]["body"].get("tool_choice"))
    last = json.dumps(reqs[2]["body"]["messages"])
    check("SUMMARY-OF-EARLIER" in last and "first question" not in last, last)
    check("compact" in [r["t"] for r in journal(state)], "a compact record")
    check("compacted" in p.stderr, p.stderr)
    check("this conversation:" in p.stdout and "input" in p.stdout, p.stdout)


def test_compact_by_hand_and_kill9_in_the_middle():
    port, log = start_server([{"text": "an answer"}, {"stall_headers": 30},
                              {"text": "after recovery"}, {"text": "SUMMARY-2"}, {"text": "fine"}])
    state = new_state()
    p = spawn(mote_args(port, state), stdin=True)
    p.stdin.write("hello\n/compact\n")
    p.stdin.flush()
    wait_for(lambda: len(requests_in(log)) == 2, "the summary request")
    p.kill()
    p.wait()
    kinds = [r["t"] for r in journal(state)]
    check("compact" not in kinds, kinds)
    # The conversation is whole: it goes on; a new compaction works.
    q = run(mote_args(port, state, "--continue"), stdin="again\n/compact\nthen\n/quit\n")
    check(q.returncode == 0, (q.returncode, q.stderr))
    check("after recovery" in q.stdout and "fine" in q.stdout, q.stdout)
    kinds = [r["t"] for r in journal(state)]
    check(kinds.count("compact") == 1, kinds)
    last = json.dumps(requests_in(log)[-1]["body"]["messages"])
    check("SUMMARY-2" in last and "hello" not in last, last)


def main():
    return run_all("turns", globals())


if __name__ == "__main__":
    sys.exit(main())
