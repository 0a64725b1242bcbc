#!/usr/bin/env python3
"""examples/embed - an embedder's own agent with a custom tool - against the
local test LLM server: the tool runs, its result reaches the model, the
answer streams, the process ends cleanly.

    test_embed.py BUILDDIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from harness import TMP, check, read_until, requests_in, run_all, start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
EMBED = os.path.join(BUILD, "embed")
# The same agent inside libev's loop (mote_loop_host); a build without
# libev (a cross build) has no embed-loop, and `make check` builds it.
EMBED_LOOP = os.path.join(BUILD, "embed-loop")
PROGRAMS = [EMBED] + ([EMBED_LOOP] if os.path.exists(EMBED_LOOP) else [])


def embed_env(port):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["MOTE_EMBED_URL"] = "http://127.0.0.1:%d" % port
    e["ANTHROPIC_API_KEY"] = "sk-embed-test"
    return e


def run_embed(port, prompt, timeout=30, prog=EMBED):
    cwd = tempfile.mkdtemp(dir=TMP)
    p = subprocess.run([prog, prompt], cwd=cwd, env=embed_env(port), capture_output=True,
                       text=True, timeout=timeout)
    return p, cwd


def test_custom_tool_round():
    for prog in PROGRAMS:
        port, log = start_server([{"text": "Let me check.", "tool": "read_sensor",
                                   "input": {"unit": "F"}}, {"text": "It is warm."}])
        p, cwd = run_embed(port, "how warm is it?", prog=prog)
        check(p.returncode == 0, (prog, p.returncode, p.stderr))
        check("[result: sensor 1: 70.7 F]" in p.stdout, p.stdout)
        check("It is warm." in p.stdout and "[turn end: end_turn" in p.stdout, p.stdout)
        check("[shutdown: done]" in p.stdout, p.stdout)
        reqs = requests_in(log)
        check(len(reqs) == 2, "two model requests")
        check([t["name"] for t in reqs[0]["body"]["tools"]] == ["read_sensor"],
              "the one tool offered")
        check("sensor 1: 70.7 F" in json.dumps(reqs[1]["body"]), "the result reached the model")
        # The conversation is a journal an embedder gets for free.
        convs = os.listdir(os.path.join(cwd, "embed-state", "conversations"))
        check(len(convs) == 1 and convs[0].endswith(".jsonl"), convs)


def test_embed_loop_is_built():
    # `make check` builds it (libev from make deps): its tests never skip there.
    check(os.path.exists(EMBED_LOOP) or os.environ.get("MOTE_NO_LIBEV") == "1",
          "missing " + EMBED_LOOP)


def test_model_failure_exit_1():
    for prog in PROGRAMS:
        port, _ = start_server([{"status": 400}])
        p, _ = run_embed(port, "x", prog=prog)
        check(p.returncode == 1 and "HTTP 400" in p.stderr, (prog, p.returncode, p.stderr))
        check("(bad_request)" in p.stderr, p.stderr)  # the error's cause, by name


def sigterm_mid_answer(prog):
    """SIGTERM while the answer streams: the drain lets it finish."""
    words = " ".join("word%d" % i for i in range(40))
    port, log = start_server([{"text": words, "delay_ms": 50}])
    cwd = tempfile.mkdtemp(dir=TMP)
    p = subprocess.Popen([prog, "talk"], cwd=cwd, env=embed_env(port), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
    first = read_until(p, "word1")  # the answer streams; then SIGTERM
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    out = first + out.decode()
    check(p.returncode == 0, (prog, p.returncode, err))
    check(words in out, ("the answer was cut", out))
    check("[turn end: end_turn" in out, out)
    check("[shutdown: SIGTERM]" in out, out)
    # It kept streaming after the signal (40 events 50 ms apart).
    check(time.time() - t0 > 0.5, "it exited %.3f s after SIGTERM" % (time.time() - t0))


def test_sigterm_drains():
    for prog in PROGRAMS:
        sigterm_mid_answer(prog)


def main():
    if not os.path.exists(EMBED):
        print("missing " + EMBED)
        return 1
    return run_all("embed", globals())


if __name__ == "__main__":
    sys.exit(main())
