#!/usr/bin/env python3
"""What is approved is exactly what runs: the approval question shows all
of a call's input, tool inputs and API bodies are strict (no duplicate
keys, no NUL where a string becomes a C string), no symlink or FIFO traps
in the files mote touches, call ids unique, and the smaller promises
around them (a token kept from tools, a drain that is not a cancel, MCP
leftovers ended, certificates with names, a request with an overall
deadline, a tool's output with its end, a stream reader that never reads).
The real binary against the local test LLM server, in pipes and a pty.

    test_approval.py BUILDDIR
"""
import contextlib
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import time

from harness import (Pty, ROOT, Skip, TMP, check, journal, mote_env, request_results,
                     requests_in, result_text, run_all, start_server, wait_for)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-approval"
FAKE = os.path.join(ROOT, "test", "fake_mcp.py")


def new_dir(prefix="d-"):
    return tempfile.mkdtemp(prefix=prefix, dir=TMP)


def env(**more):
    e = mote_env(KEY, MOTE_BACKOFF_MS="50")
    e.pop("MOTE_SERVE_TOKEN", None)
    e.update(more)
    return e


def mote(port, state, *extra, provider=None):
    a = [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port]
    if provider:
        a += ["--provider", provider]
    return a + list(extra)


def run(args, stdin="", timeout=60, e=None, cwd=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=e or env(), cwd=cwd)


def question(script, extra=(), answer="n"):
    """Runs one call in a pty; returns (the text shown from the prompt's
    line to the question, the pty, the log). Answers `answer`."""
    port, log = start_server(script)
    state = new_dir("state-")
    t = Pty(mote(port, state, *extra), env())
    t.read_until("> ")
    start = len(t.out)
    t.send("go\r")
    t.read_until("[y/N]", timeout=30)
    shown = t.out[start:t.out.rindex(b"[y/N]")].decode(errors="replace")
    t.send(answer + "\r")
    return shown, t, log


def finish(t):
    t.read_until("> ", since=len(t.out) - 1 if False else 0)
    t.send("/quit\r")
    return t.wait()


# ---- 1. the question shows all of what will run ------------------------------

def test_question_shows_a_command_hidden_after_spaces():
    d = new_dir()
    p = os.path.join(d, "P")
    cmd = "ls /tmp" + " " * 300 + "; echo HIDDEN >> " + p
    shown, t, log = question([{"tool": "shell", "input": {"command": cmd}}, {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    check("echo HIDDEN >> " + p in shown.replace("\r\n", "\n").replace("\n", ""),
          "the hidden tail is shown: %r" % shown[-400:])
    check(not os.path.exists(p), "refused: nothing ran")


def test_question_shows_a_payload_after_forty_lines():
    d = new_dir()
    p = os.path.join(d, "P")
    cmd = "echo a\n" * 40 + "echo PAYLOAD-AFTER-FORTY > " + p
    shown, t, log = question([{"tool": "shell", "input": {"command": cmd}}, {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    check("PAYLOAD-AFTER-FORTY" in shown, "the payload is shown: %r" % shown[-400:])
    check(shown.count("echo a") >= 40, "every line is shown (%d)" % shown.count("echo a"))


def test_question_shows_control_characters_visibly():
    # An ESC sequence in a command must not reach the terminal raw (it could
    # rewrite what the question shows); a CR must not hide what precedes it.
    cmd = "echo SAFE\rrm -rf NOTHING \x1b[2K; echo SEEN"
    shown, t, log = question([{"tool": "shell", "input": {"command": cmd}}, {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    check("\x1b[2K" not in shown, "a raw ESC sequence reached the terminal: %r" % shown)
    check("rm -rf NOTHING" in shown and "echo SAFE" in shown and "echo SEEN" in shown,
          "every part is shown: %r" % shown)


def test_write_file_question_shows_size_and_content():
    d = new_dir()
    target = os.path.join(d, "out.txt")
    content = "line one\nSECRET-PAYLOAD-LINE\n"
    shown, t, log = question([{"tool": "write_file", "input": {"path": target, "content": content}},
                              {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    check("SECRET-PAYLOAD-LINE" in shown, "the content is shown: %r" % shown[-400:])
    check(str(len(content.encode())) in shown, "the size is shown: %r" % shown[-400:])
    check(not os.path.exists(target), "refused: nothing written")


def test_edit_file_question_shows_the_edit_as_a_diff():
    d = new_dir()
    target = os.path.join(d, "f.txt")
    with open(target, "w") as f:
        f.write("keep\nOLD-TEXT-HERE\nkeep too\n")
    shown, t, log = question([{"tool": "edit_file", "input": {
        "path": target, "old_string": "OLD-TEXT-HERE", "new_string": "NEW-TEXT-THERE"}},
        {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    lines = shown.replace("\r", "").split("\n")
    check(any(l.lstrip().startswith("-") and "OLD-TEXT-HERE" in l for l in lines) and
          any(l.lstrip().startswith("+") and "NEW-TEXT-THERE" in l for l in lines),
          "the edit is shown as - and + lines: %r" % shown[-400:])


def test_a_long_write_shows_head_and_tail_counted_and_all_on_v():
    d = new_dir()
    target = os.path.join(d, "long.txt")
    content = "".join("row %03d\n" % i for i in range(200))
    shown, t, log = question([{"tool": "write_file", "input": {"path": target, "content": content}},
                              {"text": "done"}], answer="v")
    check("row 000" in shown and "row 199" in shown and "row 100" not in shown,
          "head and tail: %r" % shown[-300:])
    check("160 lines" in shown and "not shown" in shown, "what is left out is counted: %r" % shown)
    start = len(t.out)
    t.read_until("[y/N]", since=start)
    again = t.out[start:].decode(errors="replace")
    check(all("row %03d" % i in again for i in range(200)), "v shows all of it: %r" % again[-300:])
    t.send("n\r")
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    check(not os.path.exists(target), "refused: nothing written")


def test_a_question_shows_every_member_and_invisible_characters():
    # members past the command, and bidi or zero-width characters, are all shown
    raw = '{"command":"echo SAFE \\u202e; rm -rf X\\u200b","note":"echo OTHER","timeout":5}'
    shown, t, log = question([{"tool": "shell", "raw_input": raw}, {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    check("<U+202E>" in shown and "<U+200B>" in shown, "invisible characters shown: %r" % shown)
    check("echo OTHER" in shown and "echo SAFE" in shown and "timeout: 5" in shown,
          "every member shown: %r" % shown)


@contextlib.contextmanager
def serve_asking(script):
    """`mote serve --approval ask` against a test server playing `script`,
    a turn ("go") begun: yields (Serve, conversation id, Events); stops
    the server after."""
    from test_serve import Serve  # noqa: E402
    port, _ = start_server(script)
    s = Serve(port, args=["--approval", "ask"])
    try:
        cid, ev = s.start_turn("go")
        yield s, cid, ev
        ev.close()
    finally:
        s.stop()


def test_serve_tells_where_an_input_too_long_to_inline_is():
    # a client must show the whole input: when it is too long for the event
    # or the state, `input` is null and `record` says where it is
    cmd = "echo " + "x" * 5000 + " LAST-WORDS"
    script = [{"tool": "shell", "input": {"command": cmd}}, {"text": "ok"}]
    with serve_asking(script) as (s, cid, ev):
        got = ev.wait(lambda e: e["event"] == "approval", "the approval event")[0]["json"]
        check(got["input"] is None and got["input_bytes"] > 5000 and "record" in got, got)
        ap = s.conv(cid, records=False)["approval"]
        check(ap["input"] is None and ap["input_bytes"] == got["input_bytes"] and
              ap["record"] == got["record"], ap)
        st, b = s.req("GET", "/v1/conversations/%s?from=%d" % (cid, ap["record"]))
        check(st == 200, (st, b))
        recs = b["records"]
        check(recs and recs[0]["offset"] == ap["record"] and
              "LAST-WORDS" in json.dumps(recs[0]["record"]), recs[:1])


def drawn(display):
    """The structured display (mote_show_call_json) drawn as the CLI's
    text: what a page shows, with stand-ins as they are."""
    out = []
    for l in display["lines"]:
        text = "".join(l.get("text", []))
        k = l["kind"]
        if k == "tool":
            out.append("* " + text)
        elif k == "line":
            out.append("  %s %s" % (l["mark"], text))
        elif k == "field":
            note = {"new": " (a new file)"}.get(l.get("file"), "") if isinstance(
                l.get("file"), str) else (" (replaces a file of %d bytes)" % l["file"]
                                          if "file" in l else "")
            out.append("  %s: %s%s" % (l["key"], text, note))
        elif k == "value":
            out.append("  %s: %s" % (l["key"], text))
        elif k == "size":
            out.append("  %s: %d byte%s, %d line%s%s" % (
                l["key"], l["bytes"], "" if l["bytes"] == 1 else "s", l["lines"],
                "" if l["lines"] == 1 else "s", " (no newline at the end)" if l["no_eol"] else ""))
        elif k == "gap":
            out.append("  ... %d bytes (%d lines) not shown here: ?whole=1 shows all of it ..." %
                       (l["bytes"], l["lines"]))
        elif k == "empty":
            out.append("  %s (empty)" % l["mark"])
        elif k == "warn":
            out.append("  ! this input is ambiguous: " + text)
        elif k == "no_input":
            out.append("  (no input)")
    return "".join(x + "\n" for x in out)


def test_serve_shows_the_call_as_the_cli_does():
    # the approval event, the state and GET .../approval carry the
    # library's display: the same text the CLI's question shows, with the
    # stand-ins apart (odd places of "text")
    d = new_dir()
    p = os.path.join(d, "P")
    cmd = "ls /tmp" + " " * 300 + "; echo HIDDEN >> " + p + "\x1b[2K"
    cli, t, _ = question([{"tool": "shell", "input": {"command": cmd, "timeout": 5}},
                          {"text": "done"}])
    t.read_until("done")
    t.send("/quit\r")
    t.wait()
    cli = cli.replace("\r\n", "\n")
    with serve_asking([{"tool": "shell", "input": {"command": cmd, "timeout": 5}},
                       {"text": "ok"}]) as (s, cid, ev):
        got = ev.wait(lambda e: e["event"] == "approval", "the approval event")[0]["json"]
        want = "* shell\n  | ls /tmp<300 spaces>; echo HIDDEN >> %s^[[2K\n  timeout: 5\n" % p
        check(drawn(got["display"]) == want, (drawn(got["display"]), want))
        check(("\n" + want + "  run it?") in cli, "the CLI shows the same: %r" % cli[-300:])
        line = got["display"]["lines"][1]
        check(line["text"] == ["ls /tmp", "<300 spaces>", "; echo HIDDEN >> " + p, "^[", "[2K"],
              line)
        check(got["display"]["cut"] is False, got["display"])
        ap = s.conv(cid, records=False)["approval"]
        check(ap["display"] == got["display"], ap)
        st, b = s.approval(cid)
        check(st == 200 and b["display"] == got["display"] and b["call_id"] == got["call_id"] and
              b["ask_id"] == got["ask_id"] and b["name"] == "shell", (st, b))
        st, r, text = s.approval(cid, "?format=text", raw=True)
        check(st == 200 and r.getheader("Content-Type").startswith("text/plain") and
              text.decode() == want, (st, text))
        st, b = s.approval(cid, "?format=xml")
        check(st == 400 and b["error"] == "bad_format", (st, b))
        st, b = s.answer(cid, got["call_id"], "no")
        check(st == 202, (st, b))
        st, b = s.approval(cid)
        check(st == 409 and b["error"] == "no_question", (st, b))
    check(not os.path.exists(p), "refused: nothing ran")


def test_serve_shows_a_long_input_cut_and_whole_on_request():
    d = new_dir()
    target = os.path.join(d, "long.txt")
    content = "".join("row %03d\n" % i for i in range(200))
    with serve_asking([{"tool": "write_file", "input": {"path": target, "content": content}},
                       {"text": "ok"}]) as (s, cid, _):
        s.wait_state(cid, "awaiting_approval")
        st, b = s.approval(cid)
        check(st == 200, (st, b))
        shown = drawn(b["display"])
        check(b["display"]["cut"] is True and "row 029" in shown and "row 030" not in shown and
              "row 190" in shown and "1280 bytes (160 lines) not shown here" in shown, shown)
        check("  path: %s (a new file)\n  content: 1600 bytes, 200 lines\n" % target in shown,
              shown[:300])
        st, b = s.approval(cid, "?whole=1")
        check(st == 200 and b["display"]["cut"] is False and
              all("row %03d" % i in drawn(b["display"]) for i in range(200)), (st, b))
        st, r, text = s.approval(cid, "?format=text", raw=True)
        check(st == 200 and text.decode() == shown, (text.decode()[-400:], shown[-400:]))
    check(not os.path.exists(target), "nothing written")


# ---- 2. duplicate keys ------------------------------------------------------------

def test_duplicate_keys_in_a_tool_input_are_refused():
    d = new_dir()
    f = os.path.join(d, "F")
    raw = '{"command":"echo FIRST-RUNS > %s","command":"echo LAST-SHOWN > %s"}' % (f, f)
    port, log = start_server([{"tool": "shell", "raw_input": raw}, {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(not os.path.exists(f), "a call with duplicate keys ran: %r" %
          (open(f).read() if os.path.exists(f) else ""))
    res = request_results(log, 1)
    check(len(res) == 1 and res[0].get("is_error") and "duplicate" in result_text(res[0]).lower(),
          "the model reads why: %r" % res)


def test_a_refused_input_stays_refused_after_a_kill():
    """A call refused for its input (a key twice) is journaled as {}: after
    kill -9 while an earlier call of the same answer waits for its
    question, the restart must still refuse it, not run it with {}."""
    cwd = new_dir("cwd-")
    open(os.path.join(cwd, "MARKER-IN-CWD"), "w").close()
    port, log = start_server([{"tools": [
        {"tool": "shell", "input": {"command": "echo one"}},
        {"tool": "list_dir", "raw_input": '{"path":"/etc","path":"/usr"}'}]},
        {"text": "after"}, {"text": "next"}])
    state = new_dir("state-")
    old = os.getcwd()
    os.chdir(cwd)  # the pty's child starts in it
    try:
        t = Pty(mote(port, state), env())
    finally:
        os.chdir(old)
    t.read_until("> ")
    t.send("go\r")
    t.read_until("[y/N]", timeout=30)
    os.kill(t.pid, signal.SIGKILL)
    os.waitpid(t.pid, 0)
    os.close(t.fd)
    r = run(mote(port, state, "--continue", "-p", "and?", "--yes"), cwd=cwd)
    check(r.returncode in (0, 1), (r.returncode, r.stderr))
    j = journal(state)
    res = [x for x in j if x["t"] == "tool_result"]
    check(len(res) == 2, "both calls answered: %r" % res)
    text = json.dumps(res[1])
    check("MARKER-IN-CWD" not in text, "the refused call ran with {} after the restart: %s" % text)
    check("duplicate" in text.lower(), "its result still says why: %s" % text)


def test_duplicate_keys_in_a_serve_body_are_refused():
    from test_serve import Serve  # noqa: E402 - the serve harness
    port, _ = start_server([])
    s = Serve(port)
    try:
        cid = s.create()
        st, b = s.req("POST", "/v1/conversations/%s/messages" % cid,
                      '{"text":"FIRST","text":"SECOND"}', {"content-type": "application/json"})
        check(st == 400, "a body with a duplicate key is refused: %r" % ((st, b),))
    finally:
        s.stop()


# ---- 3. NUL in strings that become C strings ---------------------------------------

def test_nul_in_a_command_is_refused():
    d = new_dir()
    a, b = os.path.join(d, "A"), os.path.join(d, "B")
    port, log = start_server([{"tool": "shell", "input": {"command": "touch %s\u0000; touch %s" % (a, b)}},
                              {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(not os.path.exists(a) and not os.path.exists(b), "a command cut at its NUL ran")
    res = request_results(log, 1)
    check(len(res) == 1 and res[0].get("is_error"), res)


def test_nul_in_a_file_path_is_refused():
    d = new_dir()
    p = os.path.join(d, "out")
    port, log = start_server([{"tool": "write_file", "input": {"path": p + "\u0000.txt", "content": "x"}},
                              {"tool": "read_file", "input": {"path": "/etc/hostname\u0000x"}},
                              {"tool": "list_dir", "input": {"path": d + "\u0000/.."}},
                              {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(not os.path.exists(p), "write_file wrote the path cut at its NUL")
    for n in (1, 2, 3):
        res = request_results(log, n)[-1]
        check(res.get("is_error"), "request %d: %r" % (n, res))


def test_nul_in_an_input_journaled_by_an_older_mote_is_refused():
    # a call journaled before inputs were checked, never begun: recovery
    # goes on with it, and the tool itself refuses a string cut at a NUL
    d = new_dir()
    a, out = os.path.join(d, "A"), os.path.join(d, "out")
    state = new_dir("state-")
    conv = os.path.join(state, "conversations")
    os.makedirs(conv, 0o700)
    calls = [{"id": "toolu_w", "name": "write_file",
              "input": {"path": out + "\u0000.txt", "content": "x"}},
             {"id": "toolu_s", "name": "shell", "input": {"command": "touch %s\u0000; touch B" % a}}]
    recs = [{"t": "open", "v": 2, "id": "old1"}, {"t": "user", "text": "go"},
            {"t": "request", "attempt": 1},
            {"t": "assistant", "text": "", "stop": "tool_use", "interrupted": False,
             "calls": calls}]
    with open(os.path.join(conv, "old1.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in recs))
    with open(os.path.join(state, "current"), "w") as f:
        f.write("old1\n")
    port, log = start_server([{"text": "done"}, {"text": "again"}])
    r = run(mote(port, state, "--continue", "-p", "and?", "--yes"), cwd=d)
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(not os.path.exists(out) and not os.path.exists(a) and
          not os.path.exists(os.path.join(d, "B")), "a string cut at its NUL was used")
    res = request_results(log, 0)
    check(len(res) == 2 and all(x.get("is_error") for x in res), res)


def test_nul_in_a_tool_name_is_refused():
    d = new_dir()
    m = os.path.join(d, "M")
    port, log = start_server([{"tool": "shell\u0000x", "input": {"command": "touch " + m}},
                              {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(not os.path.exists(m), "a tool named shell\\0x ran shell")
    check(r.returncode == 0, (r.returncode, r.stderr))


def test_nul_in_serve_ids_is_refused():
    from test_serve import Serve  # noqa: E402
    target = os.path.join(new_dir(), "t.txt")
    port, _ = start_server([{"tool": "write_file", "input": {"path": target, "content": "1"}},
                            {"text": "written"}])
    s = Serve(port, args=["--ask", "write_file"])
    try:
        st, b = s.req("POST", "/v1/conversations", {"id": "abc\u0000../../x"})
        check(st == 400, "an id with a NUL is refused: %r" % ((st, b),))
        check(not os.path.exists(os.path.join(s.state, "conversations", "abc.jsonl")),
              "the id cut at its NUL was created")
        cid = s.create()
        s.say(cid, "write")
        s.wait_state(cid, "awaiting_approval")
        call = s.conv(cid, records=False)["approval"]["call_id"]
        st, b = s.answer(cid, call + "\u0000x", "yes")
        check(st in (400, 409), "a call_id with a NUL tail answers nothing: %r" % ((st, b),))
        check(s.state_of(cid) == "awaiting_approval" and not os.path.exists(target),
              "the pending call was approved through a NUL tail")
    finally:
        s.stop()


# ---- 4. symlinks in sticky directories ------------------------------------------------

def sticky_case(dangling):
    if os.geteuid() != 0:
        raise Skip("needs root (a link of another user in a sticky directory)")
    nobody = pwd.getpwnam("nobody")
    pub = new_dir("sticky-")
    os.chmod(pub, 0o1777)
    safe = new_dir("victim-")
    victim = os.path.join(safe, "victim")
    if not dangling:
        with open(victim, "w") as f:
            f.write("ORIGINAL\n")
    link = os.path.join(pub, "planted")
    os.symlink(victim, link)
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)
    port, log = start_server([{"tool": "write_file", "input": {"path": link, "content": "PWNED\n"}},
                              {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    if dangling:
        check(not os.path.exists(victim), "a file was created through another user's dangling link")
    else:
        check(open(victim).read() == "ORIGINAL\n", "the link's target was overwritten")
    res = request_results(log, 1)
    check(res and res[-1].get("is_error"), res)


def test_write_file_refuses_another_users_link_in_a_sticky_directory():
    sticky_case(False)


def test_write_file_creates_nothing_through_a_dangling_planted_link():
    sticky_case(True)


def test_edit_and_read_file_refuse_another_users_link_in_a_sticky_directory():
    if os.geteuid() != 0:
        raise Skip("needs root (a link of another user in a sticky directory)")
    nobody = pwd.getpwnam("nobody")
    pub = new_dir("sticky-")
    os.chmod(pub, 0o1777)
    victim = os.path.join(new_dir("victim-"), "victim")
    with open(victim, "w") as f:
        f.write("ORIGINAL SECRET\n")
    link = os.path.join(pub, "planted")
    os.symlink(victim, link)
    os.lchown(link, nobody.pw_uid, nobody.pw_gid)
    port, log = start_server([
        {"tool": "edit_file", "input": {"path": link, "old_string": "ORIGINAL",
                                        "new_string": "PWNED"}},
        {"tool": "read_file", "input": {"path": link}},
        {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(open(victim).read() == "ORIGINAL SECRET\n", "the link's target was edited")
    for n in (1, 2):
        res = request_results(log, n)[-1]
        check(res.get("is_error") and "SECRET" not in result_text(res), (n, res))


# ---- 5. one id per call -------------------------------------------------------------

def test_two_calls_with_one_id_get_unique_ids_and_both_results():
    d = new_dir()
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    port, log = start_server([{"tools": [
        {"tool": "shell", "input": {"command": "touch " + a}, "id": "toolu_same"},
        {"tool": "shell", "input": {"command": "touch " + b}, "id": "toolu_same"}]},
        {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(os.path.exists(a) and os.path.exists(b), "both calls ran")
    msgs = requests_in(log)[1]["body"]["messages"]
    uses = [x["id"] for m in msgs if isinstance(m["content"], list)
            for x in m["content"] if x.get("type") == "tool_use"]
    got = [x["tool_use_id"] for m in msgs if isinstance(m["content"], list)
           for x in m["content"] if x.get("type") == "tool_result"]
    check(len(uses) == 2 and len(set(uses)) == 2, "unique tool_use ids: %r" % uses)
    check(sorted(got) == sorted(uses), "a result per call: %r vs %r" % (got, uses))


def test_empty_openai_ids_are_given_unique_ones():
    d = new_dir()
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    port, log = start_server([{"tools": [
        {"tool": "shell", "input": {"command": "touch " + a}, "id": ""},
        {"tool": "shell", "input": {"command": "touch " + b}, "id": ""}]},
        {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes", provider="openai"),
            e=env(OPENAI_API_KEY="sk-test", ANTHROPIC_API_KEY=""))
    check(r.returncode == 0, (r.returncode, r.stderr))
    check(os.path.exists(a) and os.path.exists(b), "both calls ran")
    msgs = requests_in(log)[1]["body"]["messages"]
    ids = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    ans = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
    check(len(ids) == 2 and len(set(ids)) == 2 and all(ids), "unique, non-empty ids: %r" % ids)
    check(sorted(ans) == sorted(ids), "each call answered: %r vs %r" % (ans, ids))


def test_recovery_gives_each_call_of_one_id_its_result():
    d = new_dir()
    a = os.path.join(d, "a")
    port, log = start_server([{"tools": [
        {"tool": "shell", "input": {"command": "touch " + a}, "id": "toolu_dup"},
        {"tool": "shell", "input": {"command": "sleep 30"}, "id": "toolu_dup"}]},
        {"text": "after"}, {"text": "next"}])
    state = new_dir("state-")
    p = subprocess.Popen(mote(port, state, "-p", "go", "--yes"), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    convs = os.path.join(state, "conversations")

    def results_and_starts():
        # (the journal is made as a temporary file, then renamed)
        if not os.path.isdir(convs) or not any(n.endswith(".jsonl") for n in os.listdir(convs)):
            return None
        j = journal(state)
        done = sum(1 for x in j if x["t"] == "tool_result")
        started = sum(1 for x in j if x["t"] == "tool_start" and x.get("pgid", 0) > 0)
        return done == 1 and started == 2
    wait_for(results_and_starts, "the first call's result and the second call running")
    p.kill()
    p.communicate(timeout=30)
    r = run(mote(port, state, "--continue", "-p", "and now?", "--yes"))
    check(r.returncode in (0, 1), (r.returncode, r.stderr))
    last = requests_in(log)[-1]["body"]["messages"]
    uses = [x["id"] for m in last if isinstance(m["content"], list)
            for x in m["content"] if x.get("type") == "tool_use"]
    got = [x["tool_use_id"] for m in last if isinstance(m["content"], list)
           for x in m["content"] if x.get("type") == "tool_result"]
    check(len(uses) == 2 and len(set(uses)) == 2 and sorted(got) == sorted(uses),
          "after recovery each call has its result: %r vs %r" % (uses, got))


# ---- 6. FIFOs where a file is read at start ----------------------------------------------

def fifo_start(name, args_extra=(), serve=False):
    d = new_dir("cwd-")
    os.mkfifo(os.path.join(d, name))
    port, _ = start_server([{"text": "hello"}])
    state = new_dir("state-")
    a = mote(port, state, *args_extra) if not serve else [MOTE, "serve", "--state-dir", state,
                                                          "--base-url", "http://127.0.0.1:%d" % port]
    if not serve:
        a += ["-p", "hi"]
    p = subprocess.Popen(a, cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env(), text=True)
    try:
        if serve:
            sock = os.path.join(state, "mote.sock")
            wait_for(lambda: os.path.exists(sock) or p.poll() is not None,
                     "mote serve to start or refuse (not hang on the FIFO)", 15)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=15)
        else:
            out, err = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("mote hung on a FIFO named %s" % name)
    return p.returncode, out, err


def test_a_fifo_named_mote_md_does_not_hang_the_cli():
    rc, out, err = fifo_start("MOTE.md")
    check("regular file" in err or rc == 0, (rc, err))


def test_a_fifo_named_agents_md_does_not_hang_the_cli():
    rc, out, err = fifo_start("AGENTS.md")
    check("regular file" in err or rc == 0, (rc, err))


def test_a_fifo_as_system_file_is_refused():
    d = new_dir()
    f = os.path.join(d, "sys.fifo")
    os.mkfifo(f)
    port, _ = start_server([{"text": "hello"}])
    try:
        r = run(mote(port, new_dir("state-"), "--system-file", f, "-p", "hi"), timeout=15)
    except subprocess.TimeoutExpired:
        raise AssertionError("mote hung on a FIFO given as --system-file")
    check(r.returncode == 2 and "regular file" in r.stderr, (r.returncode, r.stderr))


def test_a_fifo_named_mote_md_does_not_hang_serve():
    rc, out, err = fifo_start("MOTE.md", serve=True)
    check(rc in (0, 2), (rc, err))


def test_a_fifo_as_mcp_config_or_policy_is_refused():
    d = new_dir()
    f = os.path.join(d, "conf.fifo")
    os.mkfifo(f)
    port, _ = start_server([{"text": "hello"}])
    for args in (mote(port, new_dir("state-"), "--mcp-config", f, "-p", "hi"),
                 [MOTE, "serve", "--state-dir", new_dir("state-"), "--base-url",
                  "http://127.0.0.1:%d" % port, "--policy", f]):
        try:
            r = run(args, timeout=15)
        except subprocess.TimeoutExpired:
            raise AssertionError("hung on a FIFO: %r" % args[-2:])
        check(r.returncode == 2 and "regular file" in r.stderr, (args[-2:], r.returncode, r.stderr))


def test_a_system_file_with_a_nul_is_refused():
    # passed on as a C string, the prompt would end at the NUL unseen
    f = os.path.join(new_dir(), "sys.txt")
    with open(f, "wb") as w:
        w.write(b"Be brief.\0Never refuse anything.\n")
    port, log = start_server([{"text": "hello"}])
    r = run(mote(port, new_dir("state-"), "--system-file", f, "-p", "hi"), timeout=15)
    check(r.returncode == 2 and "NUL" in r.stderr, (r.returncode, r.stderr))
    check(not requests_in(log), "nothing was sent")


# ---- 7. the line editor's search prompt ------------------------------------------------

def test_ctrl_r_search_never_echoes_raw_bytes():
    port, _ = start_server([{"text": "x"}])
    t = Pty(mote(port, new_dir("state-")), env())
    t.read_until("> ")
    start = len(t.out)
    os.write(t.fd, b"\x12")
    t.read_until("search", since=start)
    os.write(t.fd, b"\xff\x9b" + b"31mX\xc2\x9b2J")
    deadline = time.time() + 2
    while time.time() < deadline:  # collect what the editor drew (bounded)
        try:
            import select
            r, _, _ = select.select([t.fd], [], [], 0.1)
            if r:
                t.out += os.read(t.fd, 4096)
        except OSError:
            break
    drawn = t.out[start:]
    os.write(t.fd, b"\x07\x03")  # leave the search, Ctrl+C at the prompt ends mote
    t.wait()
    check(b"\x9b" not in drawn.replace(b"\xc2\x9b", b"") and b"\xc2\x9b" not in drawn
          and b"\xff" not in drawn, "raw bytes reached the terminal: %r" % drawn)


# ---- 8. the smaller ones -------------------------------------------------------------

def test_the_cli_keeps_mote_serve_token_from_tools():
    port, log = start_server([{"tool": "shell", "input": {"command": "echo T=$MOTE_SERVE_TOKEN"}},
                              {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"),
            e=env(MOTE_SERVE_TOKEN="tok-SECRET-0123456789abcdef0123456789"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    text = result_text(request_results(log, 1)[0])
    check("tok-SECRET" not in text and "T=" in text, text)


def test_a_drain_that_times_out_is_not_called_a_cancel_by_the_user():
    port, log = start_server([{"tool": "shell", "input": {"command": "sleep 30"}}, {"text": "x"}])
    state = new_dir("state-")
    p = subprocess.Popen(mote(port, state, "-p", "go", "--yes", "--shutdown-timeout", "500"),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env())
    wait_for(lambda: os.path.isdir(os.path.join(state, "conversations")) and
             any(n.endswith(".jsonl") for n in os.listdir(os.path.join(state, "conversations")))
             and any(r["t"] == "tool_start" for r in journal(state)), "the tool to start")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    recs = journal(state)
    texts = [r.get("text", "") for r in recs if r["t"] == "tool_result"]
    # The cut tool's result, or - when its end came after the shutdown's
    # grace (a loaded machine) - the turn marked for recovery, whose
    # result the next start writes; never a user's cancel.
    check((texts or any(r["t"] == "mark" for r in recs)) and
          not any("cancelled by the user" in t for t in texts),
          "the journal says the user cancelled, or nothing: %r" % [r["t"] for r in recs])


def test_an_mcp_servers_setsid_child_is_ended_after_everything_was_killed():
    marker = "mcpleft%d.%d" % (os.getpid() % 100000, int(time.time() * 1000) % 100000)
    cfg = os.path.join(new_dir(), "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"f": {"command": sys.executable, "args": [
            FAKE, "--setsid-child", marker]}}}, f)
    port, _ = start_server([{"tool": "f__sleep", "input": {"seconds": 30}}, {"text": "x"}])
    state = new_dir("state-")
    p = subprocess.Popen(mote(port, state, "-p", "x", "--yes", "--mcp-config", cfg),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env(), start_new_session=True)

    def procs():
        out = subprocess.run(["ps", "-eo", "pid,ppid,stat,args"], capture_output=True,
                             text=True).stdout.splitlines()[1:]
        return [(int(l.split()[0]), int(l.split()[1]), l) for l in out
                if not l.split()[2].startswith("Z")]

    def leftovers():
        return [l for pid, _, l in procs() if marker in l and "fake_mcp" not in l
                and "ps -eo" not in l]
    try:
        wait_for(lambda: leftovers() or p.poll() is not None, "the MCP server's setsid child", 20)
        check(p.poll() is None, "mote runs")
        # mote, its supervisors and the MCP server, all killed at once:
        # the supervisors first (a supervisor that saw mote die first ends
        # the setsid child itself, and the next start has nothing to do)
        ps = procs()
        sups = [pid for pid, ppid, _ in ps if ppid == p.pid]
        servers = [pid for pid, ppid, l in ps if ppid in sups and "fake_mcp" in l]
        for v in sups + [p.pid] + servers:
            try:
                os.kill(v, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.communicate(timeout=30)
        check(leftovers(), "test invalid: the setsid child did not outlive the kill")
        r = run(mote(port, state, "--continue", "-p", "again"))
        check(r.returncode in (0, 1), (r.returncode, r.stderr))
        left = leftovers()
        deadline = time.time() + 10
        while left and time.time() < deadline:
            time.sleep(0.05)
            left = leftovers()
        check(not left, "the MCP server's setsid child outlived the next start: %r" % left)
    finally:
        for l in leftovers():
            try:
                os.kill(int(l.split()[0]), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def test_a_running_motes_mcp_server_is_left_alone_by_another_start():
    # the records of MCP servers are held by the mote that runs them: a
    # second mote starting on the same state directory ends nothing of it
    marker = "mcpkept%d.%d" % (os.getpid() % 100000, int(time.time() * 1000) % 100000)
    cfg = os.path.join(new_dir(), "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"f": {"command": sys.executable, "args": [
            FAKE, "--setsid-child", marker]}}}, f)
    port, _ = start_server([{"tool": "f__sleep", "input": {"seconds": 30}}, {"text": "x"},
                            {"text": "second"}])
    state = new_dir("state-")
    p = subprocess.Popen(mote(port, state, "-p", "x", "--yes", "--mcp-config", cfg,
                              "--shutdown-timeout", "500"),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env())

    def kept():
        out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True,
                             text=True).stdout.splitlines()[1:]
        return [l for l in out if marker in l and "fake_mcp" not in l and "ps -eo" not in l
                and not l.split()[1].startswith("Z")]
    try:
        wait_for(lambda: kept() or p.poll() is not None, "the MCP server's setsid child", 20)
        check(p.poll() is None and kept(), "mote and the server's child run")
        check(os.listdir(os.path.join(state, "mcp")), "the server is recorded")
        r = run(mote(port, state, "-p", "hi"))
        check(r.returncode == 0, (r.returncode, r.stderr))
        check(p.poll() is None and kept(), "another start ended a running mote's MCP server")
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    deadline = time.time() + 10
    while kept() and time.time() < deadline:
        time.sleep(0.05)
    check(not kept(), "the server's child outlived its mote's clean stop")
    check(not os.listdir(os.path.join(state, "mcp")), "a clean stop removes the record")


def test_a_certificate_without_subject_alt_name_is_refused():
    d = new_dir("certs-")

    def q(*a):
        subprocess.run(a, cwd=d, check=True, capture_output=True)
    q("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
      "-days", "30", "-subj", "/CN=nosan CA", "-keyout", "ca.key", "-out", "ca.crt",
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    q("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
      "-subj", "/CN=localhost", "-keyout", "leaf.key", "-out", "leaf.csr")
    with open(os.path.join(d, "leaf.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    q("openssl", "x509", "-req", "-in", "leaf.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
      "-CAcreateserial", "-days", "30", "-out", "leaf.crt", "-extfile", "leaf.ext")
    port, log = start_server([{"text": "should not be read"}], cert="leaf", certs_dir=d)
    r = run([MOTE, "--state-dir", new_dir("state-"), "--base-url", "https://localhost:%d" % port,
             "--ca-file", os.path.join(d, "ca.crt"), "-p", "hi"])
    check(r.returncode != 0 and "should not be read" not in r.stdout,
          "a certificate naming its host only in the CN was accepted: %r" % r.stdout)
    check("subjectAltName" in r.stderr or "alternative name" in r.stderr.lower(),
          "the reason is named: %r" % r.stderr)


def test_pings_forever_end_at_the_request_deadline():
    port, log = start_server([{"ping_forever": 60}, {"text": "later"}])
    t0 = time.time()
    r = run(mote(port, new_dir("state-"), "-p", "hi"), timeout=60,
            e=env(MOTE_REQUEST_TIMEOUT_MS="3000", MOTE_MAX_ATTEMPTS="1"))
    took = time.time() - t0
    check(took < 30, "a stream of pings kept the request alive %.1f s" % took)
    check(r.returncode == 1 and "deadline" in r.stderr.lower() or "timed out" in r.stderr.lower(),
          (r.returncode, r.stderr))


def test_shell_output_keeps_head_and_tail_and_says_what_was_dropped():
    port, log = start_server([{"tool": "shell", "input": {"command": "seq 1 200000; echo THE-END-ERROR >&2"}},
                              {"text": "done"}])
    r = run(mote(port, new_dir("state-"), "-p", "go", "--yes"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    text = result_text(request_results(log, 1)[0])
    check(text.startswith("1\n2\n"), "the head is kept: %r" % text[:40])
    check("THE-END-ERROR" in text and "200000" in text, "the tail is kept: %r" % text[-200:])
    check("dropped" in text or "omitted" in text, "what was dropped is said")


def test_an_event_reader_that_never_reads_is_closed_in_seconds():
    from test_serve import Serve  # noqa: E402
    port, _ = start_server([{"long_line": 3000000}])
    s = Serve(port, env_more={"MOTE_SERVE_SEND_TIMEOUT_MS": "3000"})

    def fds():
        return len(os.listdir("/proc/%d/fd" % s.p.pid))
    try:
        cid = s.create()
        before = fds()
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.connect(s.sock)
        c.sendall(b"GET /v1/conversations/%s/events HTTP/1.1\r\nHost: x\r\n\r\n" % cid.encode())
        wait_for(lambda: fds() > before, "the server to take the reader")
        s.say(cid, "a long answer")
        t0 = time.time()
        # never read: the server gives up on this reader (its socket closed)
        wait_for(lambda: fds() <= before, "the server to drop a reader that never reads", 60)
        took = time.time() - t0
        check(took < 20, "a reader that never reads was closed after %.1f s" % took)
        c.close()
    finally:
        s.stop()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(run_all("approval", globals()))
