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

from harness import TMP, check, requests_in, run_all, start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
EMBED = os.path.join(BUILD, "embed")


def run_embed(port, prompt, timeout=30):
    cwd = tempfile.mkdtemp(dir=TMP)
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["MOTE_EMBED_URL"] = "http://127.0.0.1:%d" % port
    e["ANTHROPIC_API_KEY"] = "sk-embed-test"
    p = subprocess.run([EMBED, prompt], cwd=cwd, env=e, capture_output=True, text=True,
                       timeout=timeout)
    return p, cwd


def test_custom_tool_round():
    port, log = start_server([{"text": "Let me check.", "tool": "read_sensor",
                               "input": {"unit": "F"}}, {"text": "It is warm."}])
    p, cwd = run_embed(port, "how warm is it?")
    check(p.returncode == 0, (p.returncode, p.stderr))
    check("[result: sensor 1: 70.7 F]" in p.stdout, p.stdout)
    check("It is warm." in p.stdout and "[turn end: end_turn" in p.stdout, p.stdout)
    check("[shutdown: done]" in p.stdout, p.stdout)
    reqs = requests_in(log)
    check(len(reqs) == 2, "two model requests")
    check([t["name"] for t in reqs[0]["body"]["tools"]] == ["read_sensor"], "the one tool offered")
    check("sensor 1: 70.7 F" in json.dumps(reqs[1]["body"]), "the result reached the model")
    # The conversation is a journal an embedder gets for free.
    convs = os.listdir(os.path.join(cwd, "embed-state", "conversations"))
    check(len(convs) == 1 and convs[0].endswith(".jsonl"), convs)


def test_model_failure_exit_1():
    port, _ = start_server([{"status": 400}])
    p, _ = run_embed(port, "x")
    check(p.returncode == 1 and "HTTP 400" in p.stderr, (p.returncode, p.stderr))


def main():
    if not os.path.exists(EMBED):
        print("missing " + EMBED)
        return 1
    return run_all("embed", globals())


if __name__ == "__main__":
    sys.exit(main())
