#!/usr/bin/env python3
"""The embedding guide's programs as a newcomer takes them: the README's
example and every program of docs/EMBEDDING.md are extracted from the
documents, built against a staged install through pkg-config with the
guide's own commands, and run against the local test LLM server: a tool
round, SIGTERM while the answer streams (a drain: the answer finishes,
exit 0, the journal ends with the whole answer), Ctrl+C (a cancel).

    test_embedding.py DIR    (DIR/stage: make install-lib DESTDIR=DIR/stage PREFIX=/usr)
"""
import os
import re
import signal
import subprocess
import sys
import time

from harness import (ROOT, TMP, check, journal, requests_in, result_text, run_all,
                     start_server, tool_results)

WORK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/embedding")
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


def readme_program():
    blocks = [b for b in code_blocks(README) if b[1] == "c"]
    check(len(blocks) == 1, "the README has one C program: %d blocks" % len(blocks))
    return blocks[0][2]


def pkg_env():
    """The staged install, as the guide sets pkg-config up for it."""
    e = dict(os.environ)
    e["PKG_CONFIG_SYSROOT_DIR"] = STAGE
    e["PKG_CONFIG_LIBDIR"] = os.path.join(STAGE, "usr", "lib", "pkgconfig")
    return e


def build(name, source):
    """Builds `source` (the text of one C file) as WORK/NAME against the
    staged library; warnings are errors."""
    if name in BUILT:
        return BUILT[name]
    src = os.path.join(WORK, name + ".c")
    with open(src, "w") as f:
        f.write(source)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "--static", "mote"],
                           env=pkg_env(), capture_output=True, text=True)
    check(flags.returncode == 0, flags.stderr)
    exe = os.path.join(WORK, name)
    cc = os.environ.get("CC", "cc")
    p = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", exe, src] +
                       flags.stdout.split(), capture_output=True, text=True)
    check(p.returncode == 0, "%s does not build as printed:\n%s" % (name, p.stderr))
    BUILT[name] = exe
    return exe


def env_for(port):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:%d" % port
    e["ANTHROPIC_API_KEY"] = "sk-embedding-test"
    return e


def new_dir(prefix):
    import tempfile
    return tempfile.mkdtemp(prefix=prefix, dir=TMP)


def tool_round(exe, state_name):
    """One turn with a tool call: the tool's result reaches the model, the
    answer is printed, the program ends by itself with 0."""
    port, log = start_server([{"text": "Let me check.", "tool": "read_sensor", "input": {}},
                              {"text": "It is 21.5 C here."}])
    cwd = new_dir("run-")
    p = subprocess.run([exe], cwd=cwd, env=env_for(port), capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, (exe, p.returncode, p.stderr))
    check("It is 21.5 C here." in p.stdout, p.stdout)
    reqs = requests_in(log)
    check(len(reqs) == 2, "two model requests: %d" % len(reqs))
    res = tool_results(reqs[1]["body"])
    check(len(res) == 1 and "21.5 C" in result_text(res[0]), res)
    recs = journal(os.path.join(cwd, state_name))
    check(recs and recs[-1]["t"] == "assistant" and recs[-1]["stop"] == "end_turn", recs[-1:])


def signalled_mid_answer(exe, state_name, sig):
    """Sends `sig` while the answer streams; returns (exit code, the whole
    output, the journal, seconds from the signal to the end)."""
    words = " ".join("word%d" % i for i in range(40))
    port, _ = start_server([{"text": words, "delay_ms": 50}])
    cwd = new_dir("sig-")
    p = subprocess.Popen([exe], cwd=cwd, env=env_for(port), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
    first = b""
    deadline = time.time() + 30
    while b"word1 " not in first and time.time() < deadline:
        ch = p.stdout.read(1)  # unbuffered: what communicate() reads follows on
        if ch == b"":
            break
        first += ch
    check(b"word1 " in first, ("no answer began", first, p.poll()))
    t0 = time.time()
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    took = time.time() - t0
    return p.returncode, (first + out).decode(), err.decode(), \
        journal(os.path.join(cwd, state_name)), words, took


def sigterm_drains(exe, state_name):
    rc, out, err, recs, words, took = signalled_mid_answer(exe, state_name, signal.SIGTERM)
    check(rc == 0, "SIGTERM: exit %d (143: it died instead of draining): %s" % (rc, err))
    check(words in out, ("the answer was cut", out))
    # It kept streaming after the signal (40 events 50 ms apart).
    check(took > 0.5, "it exited %.3f s after SIGTERM" % took)
    ends = [r for r in recs if r["t"] == "assistant"]
    check(ends and ends[-1]["text"] == words and not ends[-1].get("interrupted"),
          ("the journal lacks the whole answer", recs[-3:]))
    check(ends[-1]["stop"] == "end_turn", ends[-1])
    check(not [r for r in recs if r["t"] == "mark"], "marked as needing recovery")


def ctrl_c_cancels(exe, state_name):
    rc, out, err, recs, words, took = signalled_mid_answer(exe, state_name, signal.SIGINT)
    check(rc == 0, "SIGINT: exit %d: %s" % (rc, err))
    check(words not in out, "the answer went on after Ctrl+C")
    ends = [r for r in recs if r["t"] == "assistant"]
    check(ends and ends[-1].get("interrupted") is True, ("no interrupted answer", recs[-3:]))
    check(not [r for r in recs if r["t"] == "mark"], "marked as needing recovery")


def readme_exe():
    return build("readme", readme_program())


def test_readme_example_builds_as_printed():
    readme_exe()


def test_readme_example_tool_round():
    tool_round(readme_exe(), "agent-state")


def test_readme_example_sigterm_drains():
    sigterm_drains(readme_exe(), "agent-state")


def test_readme_example_ctrl_c_cancels():
    ctrl_c_cancels(readme_exe(), "agent-state")


def main():
    if not os.path.exists(os.path.join(STAGE, "usr", "lib", "pkgconfig", "mote.pc")):
        print("missing the staged install: make test-embedding stages it")
        return 1
    return run_all("embedding", globals())


if __name__ == "__main__":
    sys.exit(main())
