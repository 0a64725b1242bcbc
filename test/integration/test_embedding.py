#!/usr/bin/env python3
"""The embedding guide's programs as a newcomer takes them: the README's
example and every program of docs/EMBEDDING.md are extracted from the
documents, built against a staged install through pkg-config with the
guide's own commands, and run against the local test LLM server: a tool
round, SIGTERM while the answer streams (a drain: the answer finishes,
exit 0, the journal ends with the whole answer), Ctrl+C (a cancel).

    test_embedding.py DIR   (the Makefile's test-embedding ran the guide's make
                            lines: install-lib DESTDIR=DIR/stage PREFIX=/usr and
                            install-lib PREFIX=DIR/prefix)
"""
import os
import re
import signal
import subprocess
import sys
import time

from harness import (ROOT, TMP, check, journal, read_until, requests_in, result_text,
                     run_all, start_server, tool_results)

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
WORK = os.path.abspath(ARGS[0] if ARGS else "build/embedding")
# --cross=RUNNER: only the guide's cross-compiling commands (STAGE made for
# aarch64), their program run under RUNNER (qemu-aarch64-static)
CROSS = [a[8:] for a in sys.argv[1:] if a.startswith("--cross=")]
RUNNER = CROSS[0].split() if CROSS else []
STAGE = os.path.join(WORK, "stage")
README = os.path.join(ROOT, "README.md")
BUILT = {}


def code_blocks(path):
    """The fenced blocks of a Markdown file: (marker, language, text), the
    marker being the HTML comment on the line before the fence, if any."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)$", lines[i])
        if m and m.group(1):
            marker = re.match(r"^<!--(.*)-->$", lines[i - 1]) if i > 0 else None
            j = i + 1
            while lines[j] != "```":
                j += 1
            out.append((marker.group(1) if marker else None, m.group(1),
                        "\n".join(lines[i + 1:j]) + "\n"))
            i = j
        i += 1
    return out


GUIDE = os.path.join(ROOT, "docs", "EMBEDDING.md")
SRC = os.path.join(WORK, "src")        # the guide's files, built with its commands
PREFIX_SRC = os.path.join(WORK, "prefix-src")
# What the guide's build commands make, and how each runs: the README's
# program (its URL and key from ANTHROPIC_*), and the loops around
# examples/embed/device.c (MOTE_EMBED_URL, the prompt as argument).
AGENT = {"url": "ANTHROPIC_BASE_URL", "state": "agent-state", "args": [],
         "tool_input": {}, "result": "21.5 C"}
DEVICE = {"url": "MOTE_EMBED_URL", "state": "embed-state", "args": ["how warm is it?"],
          "tool_input": {"unit": "F"}, "result": "sensor 1: 70.7 F"}
CROSS_SRC = os.path.join(WORK, "cross-src")
if CROSS:
    PROGRAMS = {os.path.join(CROSS_SRC, "agent"): AGENT}
else:
    PROGRAMS = {os.path.join(SRC, "agent"): AGENT,
                os.path.join(SRC, "agent-glib"): DEVICE,
                os.path.join(SRC, "agent-uv"): DEVICE,
                os.path.join(SRC, "agent-poll"): DEVICE,
                os.path.join(PREFIX_SRC, "agent-glib"): DEVICE}


def guide_blocks(kind):
    """The guide's blocks marked <!--KIND:NAME-->, by NAME."""
    return {m.split(":", 1)[1]: text for m, _, text in code_blocks(GUIDE)
            if m and m.startswith(kind + ":")}


def readme_program():
    blocks = [b for b in code_blocks(README) if b[1] == "c"]
    check(len(blocks) == 1, "the README has one C program: %d blocks" % len(blocks))
    return blocks[0][2]


def run_guide_sh(name, cwd, sets):
    """Runs the guide's shell block NAME in `cwd` as printed, but for the
    variables in `sets` (the test's own stage and prefix) and the `make`
    lines (the Makefile ran them with the same arguments); the C
    compiler's warnings are errors."""
    lines = []
    for line in guide_blocks("sh")[name].split("\n"):
        var = re.match(r"^(\w+)=", line)
        if var and var.group(1) in sets:
            line = "%s=%s" % (var.group(1), sets[var.group(1)])
        elif line.startswith("make "):
            check(all(("$" + v) in line for v in sets),
                  "the guide's make line uses the variables: %r" % line)
            continue
        lines.append(line)
    script = "cc() { command cc -Wextra -Werror \"$@\"; }\nset -e\n" + "\n".join(lines)
    p = subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, text=True,
                       timeout=600)
    check(p.returncode == 0, "the guide's %s commands fail:\n%s%s" % (name, p.stdout, p.stderr))


def build_all():
    if BUILT:
        return
    if CROSS:
        os.makedirs(CROSS_SRC, exist_ok=True)
        with open(os.path.join(CROSS_SRC, "agent.c"), "w") as f:
            f.write(guide_blocks("program")["agent.c"])
        run_guide_sh("cross", CROSS_SRC, {"STAGE": STAGE})
        BUILT["done"] = True
        return
    for d in (SRC, PREFIX_SRC):
        os.makedirs(d, exist_ok=True)
        for name, text in guide_blocks("program").items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        if not os.path.exists(os.path.join(d, "examples")):
            os.symlink(os.path.join(ROOT, "examples"), os.path.join(d, "examples"))
    run_guide_sh("stage", SRC, {"STAGE": STAGE})
    run_guide_sh("loops", SRC, {"STAGE": STAGE})
    run_guide_sh("prefix", PREFIX_SRC, {"PREFIX": os.path.join(WORK, "prefix")})
    BUILT["done"] = True


def env_for(port, prog):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e[prog["url"]] = "http://127.0.0.1:%d" % port
    e["ANTHROPIC_API_KEY"] = "sk-embedding-test"
    return e


def new_dir(prefix):
    import tempfile
    return tempfile.mkdtemp(prefix=prefix, dir=TMP)


def tool_round(exe):
    """One turn with a tool call: the tool's result reaches the model, the
    answer is printed, the program ends by itself with 0."""
    prog = PROGRAMS[exe]
    port, log = start_server([{"text": "Let me check.", "tool": "read_sensor",
                               "input": prog["tool_input"]}, {"text": "It is warm here."}])
    cwd = new_dir("run-")
    p = subprocess.run(RUNNER + [exe] + prog["args"], cwd=cwd, env=env_for(port, prog),
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, (exe, p.returncode, p.stderr))
    check("It is warm here." in p.stdout, (exe, p.stdout))
    reqs = requests_in(log)
    check(len(reqs) == 2, "two model requests: %d" % len(reqs))
    res = tool_results(reqs[1]["body"])
    check(len(res) == 1 and prog["result"] in result_text(res[0]), res)
    recs = journal(os.path.join(cwd, prog["state"]))
    check(recs and recs[-1]["t"] == "assistant" and recs[-1]["stop"] == "end_turn", recs[-1:])


def signalled_mid_answer(exe, sig):
    """Sends `sig` while the answer streams; returns (exit code, the whole
    output, stderr, the journal, the answer, seconds from the signal to
    the end)."""
    prog = PROGRAMS[exe]
    words = " ".join("word%d" % i for i in range(40))
    port, _ = start_server([{"text": words, "delay_ms": 50}])
    cwd = new_dir("sig-")
    p = subprocess.Popen(RUNNER + [exe] + prog["args"], cwd=cwd, env=env_for(port, prog),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    first = read_until(p, "word1 ")  # the answer streams
    t0 = time.time()
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    took = time.time() - t0
    return p.returncode, first + out.decode(), err.decode(), \
        journal(os.path.join(cwd, prog["state"])), words, took


def sigterm_drains(exe):
    rc, out, err, recs, words, took = signalled_mid_answer(exe, signal.SIGTERM)
    check(rc == 0, "%s: SIGTERM: exit %d (143: it died instead of draining): %s" % (exe, rc, err))
    check(words in out, ("the answer was cut", out))
    # It kept streaming after the signal (40 events 50 ms apart).
    check(took > 0.5, "it exited %.3f s after SIGTERM" % took)
    ends = [r for r in recs if r["t"] == "assistant"]
    check(ends and ends[-1]["text"] == words and not ends[-1].get("interrupted"),
          ("the journal lacks the whole answer", recs[-3:]))
    check(ends[-1]["stop"] == "end_turn", ends[-1])
    check(not [r for r in recs if r["t"] == "mark"], "marked as needing recovery")


def ctrl_c_cancels(exe):
    rc, out, err, recs, words, took = signalled_mid_answer(exe, signal.SIGINT)
    check(rc == 0, "%s: SIGINT: exit %d: %s" % (exe, rc, err))
    check(words not in out, "the answer went on after Ctrl+C")
    ends = [r for r in recs if r["t"] == "assistant"]
    check(ends and ends[-1].get("interrupted") is True, ("no interrupted answer", recs[-3:]))
    check(not [r for r in recs if r["t"] == "mark"], "marked as needing recovery")


def test_the_readme_example_is_the_guides_first_program():
    check(guide_blocks("program").get("agent.c") == readme_program(),
          "README.md's example and docs/EMBEDDING.md's agent.c differ")


def test_the_guides_programs_build_as_printed():
    build_all()
    for exe in PROGRAMS:
        check(os.access(exe, os.X_OK), "not built: " + exe)


def each_program(fn):
    build_all()
    for exe in PROGRAMS:
        fn(exe)


def test_tool_round():
    each_program(tool_round)


def test_sigterm_drains():
    each_program(sigterm_drains)


def test_ctrl_c_cancels():
    each_program(ctrl_c_cancels)


def main():
    if not os.path.exists(os.path.join(STAGE, "usr", "lib", "pkgconfig", "mote.pc")):
        print("missing the staged install: make test-embedding stages it")
        return 1
    return run_all("embedding", globals())


if __name__ == "__main__":
    sys.exit(main())
