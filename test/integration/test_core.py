#!/usr/bin/env python3
"""Issue 11: the core keeps its promises under hostile but legal input -
each test drives the real binary and fails on the code before the fix.

    test_core.py BUILDDIR
"""
import json
import os
import subprocess
import sys
import tempfile

from harness import TMP, check, requests_in, run_all, start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")


def env():
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_API_KEY"] = "sk-core-test"
    e["NO_COLOR"] = "1"
    return e


def run(port, state, *extra, stdin=""):
    a = [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port]
    return subprocess.run(a + list(extra), input=stdin, capture_output=True, text=True,
                          timeout=60, env=env())


def journal_lines(state):
    d = os.path.join(state, "conversations")
    out = []
    for f in sorted(os.listdir(d)):
        if f.endswith(".jsonl"):
            with open(os.path.join(d, f), "rb") as fh:
                data = fh.read()
            if not data:
                continue  # an empty file left by an older mote
            check(data.endswith(b"\n"), "whole lines")
            for line in data.split(b"\n")[:-1]:
                out.append(json.loads(line.decode("utf-8"), strict=True))
    return out


def test_raw_control_characters_in_a_tool_input_never_reach_the_journal():
    """11.1(a): a local model's write_file input with a literal newline and
    ESC inside a string. The call is refused with a clear error (the input
    is not JSON), every journal line stays valid JSON to a strict parser,
    the next request body is valid, and --continue works."""
    target = os.path.join(tempfile.mkdtemp(dir=TMP), "out.txt")
    raw = '{"path": "%s", "content": "line 1\nline 2 \x1b[31mred"}' % target
    for label, inp in (("raw", raw),):
        port, log = start_server([{"tool": "write_file", "raw_input": inp}, {"text": "noted"},
                                  {"text": "again"}])
        state = tempfile.mkdtemp(prefix="core-", dir=TMP)
        r = run(port, state, "-p", "write it", "--yes")
        check(r.returncode == 0 and "noted" in r.stdout, (label, r.returncode, r.stderr))
        recs = journal_lines(state)
        check(len(recs) >= 5, recs)
        reqs = requests_in(log)
        check(len(reqs) == 2 and "_invalid" not in reqs[1]["body"], "the second body is JSON")
        res = [x for x in recs if x["t"] == "tool_result"]
        check(res and res[0]["error"] and "control characters" in res[0]["text"], res)
        check(not os.path.exists(target), "the refused call did not run")
        q = run(port, state, "--continue", "-p", "and now?")
        check(q.returncode == 0 and "again" in q.stdout and "damaged" not in q.stderr,
              (q.returncode, q.stderr))


def test_an_empty_journal_is_as_good_as_absent():
    """11.3: a start killed between creating the journal and its first
    record left an empty ID.jsonl that `current` names; --continue then
    never worked again. Now such a file counts as absent: --continue starts
    anew, the next --continue goes on with that new conversation."""
    port, log = start_server([{"text": "first answer"}, {"text": "second answer"}])
    state = tempfile.mkdtemp(prefix="core-", dir=TMP)
    os.makedirs(os.path.join(state, "conversations"), mode=0o700)
    open(os.path.join(state, "conversations", "0123456789abcdef.jsonl"), "w").close()
    with open(os.path.join(state, "current"), "w") as f:
        f.write("0123456789abcdef\n")
    r = run(port, state, "--continue", "-p", "hello")
    check(r.returncode == 0 and "first answer" in r.stdout, (r.returncode, r.stderr))
    q = run(port, state, "--continue", "-p", "and again")
    check(q.returncode == 0 and "second answer" in q.stdout, (q.returncode, q.stderr))
    msgs = requests_in(log)[-1]["body"]["messages"]
    check(len(msgs) == 3 and "hello" in json.dumps(msgs[0]), msgs)
    recs = journal_lines(state)
    check(all(r["t"] for r in recs), "every line is a record")


def timed(step, env_extra, want):
    """mote against a server that trickles bytes: it gives up at the
    deadline (a generous bound: well before the trickle would end)."""
    import time
    port, _ = start_server([step])
    state = tempfile.mkdtemp(prefix="core-", dir=TMP)
    e = env()
    e.update(env_extra)
    t0 = time.monotonic()
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "-p", "hi"], capture_output=True, text=True, timeout=120, env=e)
    took = time.monotonic() - t0
    check(p.returncode == 1 and want in p.stderr, (p.returncode, p.stderr))
    check(took < 30, "ended by the deadline: %.1f s" % took)


def test_headers_a_byte_at_a_time_meet_a_deadline():
    """11.9: the 32 KiB header cap at one byte a second allowed about nine
    hours; the whole header block now has the first-byte deadline."""
    timed({"slow_headers_ms": 100},
          {"MOTE_FIRST_BYTE_TIMEOUT_MS": "1500", "MOTE_IDLE_TIMEOUT_MS": "60000"},
          "headers did not complete within 1500 ms")


def test_an_event_a_byte_at_a_time_meets_a_deadline():
    """11.9: bytes that never complete an event do not keep the stream
    alive: the gap between events has its own deadline."""
    timed({"slow_event_ms": 100},
          {"MOTE_EVENT_TIMEOUT_MS": "1500", "MOTE_IDLE_TIMEOUT_MS": "60000"},
          "no complete event for 1500 ms")


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("core", globals())


if __name__ == "__main__":
    sys.exit(main())
