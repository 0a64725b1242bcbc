#!/usr/bin/env python3
"""Integration tests of issue 15, the CLI people reach for: read_file with
an offset and a length, edit_file and its refusals, the usage line, line
editing and paste through a pty, approval answers, conversation listing
and retention, proxies, and `localhost` without the system resolver. The
real binary against the local test LLM server.

    test_cli15.py BUILDDIR
"""
import json
import os
import stat
import subprocess
import sys
import tempfile

from harness import TMP, check, requests_in, run_all, start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-15"


def new_state():
    return tempfile.mkdtemp(prefix="state-", dir=TMP)


def env(**more):
    e = {k: v for k, v in os.environ.items()
         if not k.endswith("_API_KEY") and k.lower() not in ("https_proxy", "http_proxy",
                                                              "no_proxy", "all_proxy")}
    e["ANTHROPIC_API_KEY"] = KEY
    e["NO_COLOR"] = "1"
    e.update(more)
    return e


def run(args, stdin="", timeout=60, e=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=e or env())


def mote(port, state, *extra):
    return [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port] + list(extra)


def results(log, n):
    """The tool results the model got in request n (0-based)."""
    out = []
    for m in requests_in(log)[n]["body"]["messages"]:
        if isinstance(m["content"], list):
            out += [b for b in m["content"] if b.get("type") == "tool_result"]
    return out


def result_text(block):
    c = block["content"]
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)


# ---- 15.5 read_file with offset and length ---------------------------------

def test_read_file_offset_length_and_size():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "big.txt")
    data = "".join("line %05d\n" % i for i in range(4000))  # 44,000 bytes
    with open(path, "w") as f:
        f.write(data)
    port, log = start_server([
        {"tool": "read_file", "input": {"path": path}},
        {"tool": "read_file", "input": {"path": path, "offset": 16384}},
        {"tool": "read_file", "input": {"path": path, "offset": 11, "length": 22}},
        {"tool": "read_file", "input": {"path": path, "offset": 99999}},
        {"tool": "read_file", "input": {"path": path, "offset": -1}},
        {"text": "done"}])
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    first = result_text(results(log, 1)[-1])
    check(first.startswith(data[:16384]), "the first 16 KiB, as they are")
    check(first.endswith("[bytes 0-16384 of 44000; read on with offset 16384]"), first[-80:])
    second = result_text(results(log, 2)[-1])
    check(second.startswith(data[16384:32768]), "read on from the offset")
    check("[bytes 16384-32768 of 44000; read on with offset 32768]" in second, second[-80:])
    third = result_text(results(log, 3)[-1])
    check(third == data[11:33] + "[bytes 11-33 of 44000; read on with offset 33]", third)
    fourth = results(log, 4)[-1]
    check("past the end" in result_text(fourth) and "44000 bytes" in result_text(fourth),
          result_text(fourth))
    fifth = results(log, 5)[-1]
    check(fifth.get("is_error") and "whole number" in result_text(fifth), result_text(fifth))


def test_read_file_whole_small_file_has_no_note():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "small.txt")
    with open(path, "w") as f:
        f.write("just this\n")
    port, log = start_server([{"tool": "read_file", "input": {"path": path}}, {"text": "ok"}])
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    check(result_text(results(log, 1)[-1]) == "just this\n", results(log, 1))


# ---- 15.5 edit_file -------------------------------------------------------------

def test_edit_file_replaces_a_unique_string_keeping_the_mode():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "conf.ini")
    body = "[net]\nhost = a\nport = 80\n" + "# filler\n" * 3000 + "[end]\n"
    with open(path, "w") as f:
        f.write(body)
    os.chmod(path, 0o640)
    link = os.path.join(d, "link.ini")
    os.symlink("conf.ini", link)
    port, log = start_server([
        {"tool": "edit_file", "input": {"path": link, "old_string": "port = 80",
                                        "new_string": "port = 8080\ntls = on"}},
        {"text": "done"}])
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    with open(path) as f:
        check(f.read() == body.replace("port = 80", "port = 8080\ntls = on"), "edited")
    check(stat.S_IMODE(os.stat(path).st_mode) == 0o640, "the mode is kept")
    check(os.path.islink(link), "the symlink stays a symlink")
    r = result_text(results(log, 1)[-1])
    check("replaced 9 bytes at line 3 with 20 bytes" in r, r)
    check(os.listdir(d) == sorted(os.listdir(d)) or len(os.listdir(d)) == 2,
          "no temporary file left: %s" % os.listdir(d))


def test_edit_file_refusals_leave_the_file_unchanged():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "f.txt")
    body = "alpha\nbeta\nalpha\n"
    with open(path, "w") as f:
        f.write(body)
    before = os.stat(path)
    cases = [
        ({"path": path, "old_string": "gamma", "new_string": "x"}, "not found"),
        ({"path": path, "old_string": "alpha", "new_string": "x"}, "occurs 2 times"),
        ({"path": path, "old_string": "", "new_string": "x"}, "must be 1 to"),
        ({"path": path, "old_string": "beta", "new_string": "beta"}, "the same"),
        ({"path": d, "old_string": "a", "new_string": "b"}, "cannot open"),
        ({"path": os.path.join(d, "missing"), "old_string": "a", "new_string": "b"},
         "cannot open"),
        ({"path": path, "old_string": "beta"}, "edit_file needs"),
        ({"path": "/dev/null", "old_string": "a", "new_string": "b"}, "not a regular file"),
    ]
    script = [{"tool": "edit_file", "input": c} for c, _ in cases] + [{"text": "done"}]
    port, log = start_server(script)
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    for i, (_, want) in enumerate(cases):
        r = results(log, i + 1)[-1]
        check(r.get("is_error") and want in result_text(r), "%d: %s" % (i, result_text(r)))
    with open(path) as f:
        check(f.read() == body, "the file is unchanged")
    check(os.stat(path).st_ino == before.st_ino, "not even replaced")
    check(sorted(os.listdir(d)) == ["f.txt"], "nothing left beside it: %s" % os.listdir(d))


def test_edit_file_overlapping_matches_are_not_unique():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "o.txt")
    # "aXa" occurs twice, overlapping, across a 16 KiB window boundary.
    body = "." * 16382 + "aXaXa" + "\n"
    with open(path, "w") as f:
        f.write(body)
    port, log = start_server([
        {"tool": "edit_file", "input": {"path": path, "old_string": "aXa", "new_string": "b"}},
        {"tool": "edit_file", "input": {"path": path, "old_string": "XaXa\n",
                                        "new_string": "Y\n"}},
        {"text": "done"}])
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    check("occurs 2 times" in result_text(results(log, 1)[-1]), results(log, 1)[-1])
    with open(path) as f:
        check(f.read() == "." * 16382 + "aY\n", "the unique match across the window edited")


# ---- 15.7 localhost without the system resolver --------------------------------

def test_make_demo_without_etc_hosts():
    """`make demo` (https://localhost) in a private mount namespace where
    /etc/hosts is empty: the name must not need the system resolver."""
    from harness import ROOT, Skip
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"],
                                           capture_output=True).returncode != 0:
        raise Skip("needs root and unshare -m for a private /etc/hosts")
    script = ("mount --bind /dev/null /etc/hosts && "
              "! getent hosts localhost >/dev/null && "
              "make --no-print-directory -s demo")
    p = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True,
                       text=True, timeout=120, env=env())
    check(p.returncode == 0, "make demo failed:\n" + p.stdout[-1500:] + p.stderr[-1500:])
    check("This is a Linux machine" in p.stdout, p.stdout[-800:])


if __name__ == "__main__":
    run_all("cli15", globals())
