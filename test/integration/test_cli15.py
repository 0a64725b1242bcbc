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
import time

from harness import (Pty, SERVERS, TMP, check, mote_env, request_results, requests_in, result_text,
                     run_all, start_server, wait_for)

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-15"


def new_state():
    return tempfile.mkdtemp(prefix="state-", dir=TMP)


def env(**more):
    return mote_env(KEY, **more)


def run(args, stdin="", timeout=60, e=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=e or env())


def mote(port, state, *extra):
    return [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port] + list(extra)


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
    first = result_text(request_results(log, 1)[-1])
    check(first.startswith(data[:16384]), "the first 16 KiB, as they are")
    check(first.endswith("[bytes 0-16384 of 44000; read on with offset 16384]"), first[-80:])
    second = result_text(request_results(log, 2)[-1])
    check(second.startswith(data[16384:32768]), "read on from the offset")
    check("[bytes 16384-32768 of 44000; read on with offset 32768]" in second, second[-80:])
    third = result_text(request_results(log, 3)[-1])
    check(third == data[11:33] + "[bytes 11-33 of 44000; read on with offset 33]", third)
    fourth = request_results(log, 4)[-1]
    check("past the end" in result_text(fourth) and "44000 bytes" in result_text(fourth),
          result_text(fourth))
    fifth = request_results(log, 5)[-1]
    check(fifth.get("is_error") and "whole number" in result_text(fifth), result_text(fifth))


def test_read_file_whole_small_file_has_no_note():
    d = tempfile.mkdtemp(dir=TMP)
    path = os.path.join(d, "small.txt")
    with open(path, "w") as f:
        f.write("just this\n")
    port, log = start_server([{"tool": "read_file", "input": {"path": path}}, {"text": "ok"}])
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    check(result_text(request_results(log, 1)[-1]) == "just this\n", request_results(log, 1))


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
    r = result_text(request_results(log, 1)[-1])
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
        r = request_results(log, i + 1)[-1]
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
    check("occurs 2 times" in result_text(request_results(log, 1)[-1]), request_results(log, 1)[-1])
    with open(path) as f:
        check(f.read() == "." * 16382 + "aY\n", "the unique match across the window edited")


# ---- 15.1 / 15.2 line editing and paste through a pty --------------------------

def user_texts(log):
    """The user messages the model got, in order (the last of each request)."""
    out = []
    for r in requests_in(log):
        m = [x for x in r["body"]["messages"] if x["role"] == "user"][-1]
        c = m["content"]
        out.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c
                                                        if b.get("type") == "text"))
    return out


def chat(script, keys, state=None, extra=()):
    """Runs mote in a pty; sends each item of `keys` after the prompt shows
    (a str: bytes typed; None: wait for the next answer's prompt)."""
    port, log = start_server(script)
    state = state or new_state()
    t = Pty(mote(port, state, *extra), env())
    t.read_until("> ")
    answers = 0
    for k in keys:
        if k is None:
            # the answer's usage line, then the new prompt after it (the
            # line just sent is redrawn with "> " too: not that one)
            answers += 1
            t.read_count(" out]", answers)
            while b"> " not in t.out[t.out.rindex(b" out]"):]:
                t.read_count("> ", t.out.count(b"> ") + 1)
        else:
            t.send(k)
    return t, log, state


def test_pty_cursor_keys_home_end_and_utf8():
    left = "\x1b[D"
    t, log, _ = chat([{"text": "a1"}, {"text": "a2"}, {"text": "a3"}], [
        "say wrld" + left * 3 + "o" + "\x01" + "I " + "\x05" + "!\r", None,
        "na\u00efve" + left * 2 + "\x7f" + "\x1b[H" + "\x1b[3~" + "\x1b[F" + "\u00e9\r", None,
        "abc def ghi\x17\x17X\x01\x06\x0b\x15first \x05second\r", None,
        "\x04"])
    check(t.wait() == 0, "Ctrl+D on an empty line ends it (exit 0)")
    got = user_texts(log)
    check(got[0] == "I say world!", got)
    check(got[1] == "ave\u00e9", got)  # one character deleted each way, not one byte
    check(got[2] == "first second", got)


def test_pty_history_recall_search_and_across_runs():
    state = new_state()
    t, log, _ = chat([{"text": "r1"}, {"text": "r2"}, {"text": "r3"}, {"text": "r4"}], [
        "first message\r", None, "second\r", None,
        "\x1b[A\x1b[A\r", None,           # up twice: "first message"
        "\x12sec\r", None,                # Ctrl+R "sec": "second"
        "/quit\r"], state=state)
    check(t.wait() == 0, "exit 0")
    got = user_texts(log)
    check(got == ["first message", "second", "first message", "second"], got)
    # A new run recalls the saved history.
    # (the newest saved line is "/quit", the one before it "second")
    t, log, _ = chat([{"text": "again"}], ["\x1b[A\x1b[A\r", None, "/quit\r"], state=state)
    check(t.wait() == 0, "exit 0")
    check(user_texts(log) == ["second"], user_texts(log))


def test_pty_bracketed_paste_is_one_message_and_backslash_continues():
    paste = "\x1b[200~line one\r\nline two\rline three\x1b[201~"
    t, log, _ = chat([{"text": "p1"}, {"text": "p2"}], [
        paste + "\r", None,
        "alpha \\\r", "beta\r", None,
        "/quit\r"])
    check(t.wait() == 0, "exit 0")
    got = user_texts(log)
    check(len(got) == 2, "a paste of three lines is one message: %r" % got)
    check(got[0] == "line one\nline two\nline three", got)
    check(got[1] == "alpha \nbeta", got)


def test_pty_input_over_the_limit_is_refused_whole():
    big = "x" * 70000
    t, log, _ = chat([{"text": "small one"}], [
        "\x1b[200~" + big + "\x1b[201~\r"])
    t.read_until("refused whole")
    t.read_until("> ")
    t.send("small\r")
    t.read_until("small one")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    got = user_texts(log)
    check(got == ["small"], "nothing of the long input was sent: %r" % [g[:20] for g in got])


# ---- 15.3 approval answers ------------------------------------------------------

def test_pty_approval_always_survives_continue_and_no_gives_a_reason():
    d = tempfile.mkdtemp(dir=TMP)
    m1, m2, m3 = (os.path.join(d, n) for n in ("one", "two", "three"))
    port, log = start_server([
        {"tool": "shell", "input": {"command": "touch " + m1}},
        {"tool": "shell", "input": {"command": "touch " + m2}},
        {"tool": "list_dir", "input": {"path": d}},
        {"text": "done"},
        {"tool": "shell", "input": {"command": "touch " + m3}},
        {"text": "done again"}])
    state = new_state()
    t = Pty(mote(port, state), env())
    t.read_until("> ")
    t.send("go\r")
    t.read_until("[y/N]")
    t.send("a\r")                      # always for shell
    t.read_until("list_dir")           # the second shell call did not ask
    # list_dir is another tool: asked (a redrawn line may repeat the first
    # question's text, so the question is looked for after list_dir)
    t.read_until("[y/N]", since=t.out.index(b"list_dir"))
    t.send("use ls instead\r")         # a no, with the reason
    t.read_until("done")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(os.path.exists(m1) and os.path.exists(m2), "both shell calls ran")
    refusal = result_text(request_results(log, 3)[-1])
    check("use ls instead" in refusal, refusal)
    # --continue: shell is still allowed (journaled).
    t = Pty(mote(port, state, "--continue"), env())
    t.read_until("> ")
    t.send("more\r")
    t.read_until("done again")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(os.path.exists(m3), "shell ran without asking after --continue")
    check(t.out.count(b"[y/N]") == 0, "no question: %r" % t.out[-300:])


def test_pty_a_reason_that_starts_with_y_refuses():
    """Only y/yes and a/always run the call: "you should use ls" is a no
    with its reason (it ran the tool: only its first letter was read)."""
    d = tempfile.mkdtemp(dir=TMP)
    marks = [os.path.join(d, "m%d" % i) for i in range(3)]
    port, log = start_server(
        [{"tool": "write_file", "input": {"path": m, "content": "x"}} for m in marks] +
        [{"text": "done"}])
    t = Pty(mote(port, new_state()), env())
    t.read_until("> ")
    t.send("go\r")
    for i, answer in enumerate(["you should use ls instead", "  YES ", "yikes, no!"]):
        t.read_count("[y/N]", i + 1)
        t.send(answer + "\r")
    t.read_until("done")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check([os.path.exists(m) for m in marks] == [False, True, False],
          [os.path.exists(m) for m in marks])
    check("you should use ls instead" in result_text(request_results(log, 1)[-1]), request_results(log, 1))
    check("yikes, no!" in result_text(request_results(log, 3)[-1]), request_results(log, 3))


def test_pty_ctrl_d_at_the_question_answers_no_and_the_session_goes_on():
    d = tempfile.mkdtemp(dir=TMP)
    m = os.path.join(d, "m")
    port, log = start_server([{"tool": "write_file", "input": {"path": m, "content": "x"}},
                              {"text": "refused then"}, {"text": "still here"}])
    t = Pty(mote(port, new_state()), env())
    t.read_until("> ")
    t.send("go\r")
    t.read_until("[y/N]")
    t.send("\x04")
    t.read_until("refused then")
    t.read_until("> ", since=t.out.index(b"refused then"))
    t.send("more\r")
    t.read_until("still here")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(not os.path.exists(m), "the call was refused")
    check(user_texts(log)[-1] == "more", user_texts(log))


def test_pty_an_input_of_exactly_the_limit():
    """65,536 bytes pasted then Enter: the editor takes it and the message
    is refused as too large for a journal record - no write past the line
    buffer (ASan build: it was a global-buffer-overflow abort)."""
    big = "y" * 65536
    t, log, _ = chat([{"text": "ok"}], ["\x1b[200~" + big + "\x1b[201~\r"])
    t.read_until("does not fit one journal record")
    t.read_until("> ")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(requests_in(log) == [], "nothing was sent")


def test_pty_a_paste_during_a_turn_is_one_message():
    """Typed while the answer streams: it waits for the prompt, and a paste
    of three lines is one message (it was three turns)."""
    port, log = start_server([{"text": "a slow answer, word by word", "delay_ms": 300},
                              {"text": "got the paste"}])
    t = Pty(mote(port, new_state()), env())
    t.read_until("> ")
    t.send("first\r")
    wait_for(lambda: len(requests_in(log)) == 1, "the first request")
    t.send("\x1b[200~pasted one\rpasted two\rpasted three\x1b[201~\r")
    t.read_until("got the paste")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    check(user_texts(log) == ["first", "pasted one\npasted two\npasted three"], user_texts(log))
    check(b"pasted one" not in t.out[:t.out.index(b"word by word")], "not echoed into the answer")


def test_stdout_in_a_file_keeps_input_line_based_and_the_file_clean():
    """`mote > answers.txt` on a terminal: the user sees what they type (the
    terminal echoes it) and the file gets no editor sequences."""
    import pty as ptymod
    port, log = start_server([{"text": "the answer"}])
    master, slave = ptymod.openpty()
    out = os.path.join(tempfile.mkdtemp(dir=TMP), "answers.txt")
    with open(out, "wb") as f:
        p = subprocess.Popen(mote(port, new_state()), stdin=slave, stdout=f, stderr=slave,
                             env=env(), start_new_session=True)
    os.close(slave)
    seen = b""
    os.write(master, b"hello there\n")
    deadline = time.time() + 20
    while b"hello there" not in seen and time.time() < deadline:
        seen += os.read(master, 4096)
    wait_for(lambda: b"the answer" in open(out, "rb").read(), "the answer in the file")
    os.write(master, b"/quit\n")
    check(p.wait(timeout=20) == 0, "exit 0")
    os.close(master)
    data = open(out, "rb").read()
    check(b"hello there" in seen, "the typing was echoed: %r" % seen)
    check(b"\x1b" not in data, "no escape sequence in the file: %r" % data[:200])
    check(user_texts(log) == ["hello there"], user_texts(log))


def test_pty_ctrl_z_and_fg_take_the_terminal_back():
    """Under a job-control shell: Ctrl+Z stops mote with the terminal given
    back, fg takes it again and redraws the line; the keys work as keys
    after it (Left echoed as ^[[D before)."""
    port, log = start_server([{"text": "after fg"}])
    t = Pty(["/bin/bash", "--norc", "--noprofile", "-i"], env(PS1="$ ", HISTFILE="/dev/null"))
    t.read_until("$ ")
    t.send(" ".join(mote(port, new_state())) + "\r")
    t.read_until("> ")
    t.send("abc")
    t.read_until("abc")
    t.send("\x1a")
    t.read_until("Stopped")
    at = len(t.out)
    t.send("fg\r")
    t.read_until("abc", since=at)         # the line drawn again
    t.send("\x1b[DX\r")
    t.read_until("after fg")
    t.send("/quit\r")
    t.read_until("$ ", since=t.out.index(b"after fg"))
    t.send("exit\r")
    t.wait()
    check(user_texts(log) == ["abXc"], user_texts(log))


def test_usage_line_counts_every_request_of_the_turn():
    d = tempfile.mkdtemp(dir=TMP)
    port, log = start_server([{"tool": "list_dir", "input": {"path": d}, "input_tokens": 100},
                              {"text": "done", "input_tokens": 200}])
    p = run(mote(port, new_state(), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    line = [l for l in p.stderr.splitlines() if "tokens in" in l]
    check(len(line) == 1 and "[300 tokens in" in line[0], line)


# ---- 15.4 conversations: --list, /conversations, the picker, retention ----------

def convs_dir(state):
    return os.path.join(state, "conversations")


def conv_ids(state):
    return sorted(f[:-6] for f in os.listdir(convs_dir(state)) if f.endswith(".jsonl"))


def spawn(args, e=None):
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e or env())


def one_conversation(state, prompt, script=None, kill_when=None, extra=()):
    """Runs a one-shot conversation in `state` and returns its id; with
    `kill_when`, kills mote (-9) once kill_when(log) holds."""
    before = set(conv_ids(state)) if os.path.isdir(convs_dir(state)) else set()
    port, log = start_server(script or [{"text": "ok"}])
    if kill_when is None:
        p = run(mote(port, state, "-p", prompt, *extra))
        check(p.returncode == 0, p.stderr)
    else:
        p = spawn(mote(port, state, "-p", prompt, *extra))
        wait_for(lambda: kill_when(log), "the moment to kill")
        p.kill()
        p.wait()
    new = set(conv_ids(state)) - before
    check(len(new) == 1, new)
    return new.pop()


def age(state, cid, seconds_ago):
    t = time.time() - seconds_ago
    os.utime(os.path.join(convs_dir(state), cid + ".jsonl"), (t, t))


def listing(state, e=None):
    p = run([MOTE, "--state-dir", state, "--list"], e=e)
    check(p.returncode == 0, p.stderr)
    rows = {}
    order = []
    for line in p.stdout.splitlines()[1:]:
        f = line.split()
        if f and f[0][:8].isdigit():
            rows[f[0]] = line
            order.append(f[0])
    return rows, order, p.stdout


def test_list_shows_each_state_newest_first_without_a_key():
    state = new_state()
    idle = one_conversation(state, "alpha first words here")
    recov = one_conversation(state, "beta needs recovery",
                             script=[{"stall_headers": 30}],
                             kill_when=lambda log: len(requests_in(log)) == 1)
    mark = os.path.join(TMP, "tool-started-%d" % os.getpid())
    intr = one_conversation(state, "gamma tool cut off", extra=("--yes",),
                            script=[{"tool": "shell", "input": {"command": "touch %s; sleep 2" % mark}}],
                            kill_when=lambda log: os.path.exists(mark))
    # damaged: a copy of the idle one with garbage before its last line
    with open(os.path.join(convs_dir(state), idle + ".jsonl"), "rb") as f:
        lines = f.read().split(b"\n")
    dmg = "20990101-000000-dddddd"
    with open(os.path.join(convs_dir(state), dmg + ".jsonl"), "wb") as f:
        f.write(b"\n".join(lines[:1] + [b"{not json"] + lines[1:]))
    # a start killed before its first record: absent
    open(os.path.join(convs_dir(state), "20990101-000000-eeeeee.jsonl"), "w").close()
    for i, c in enumerate([idle, recov, intr, dmg]):
        age(state, c, 400 - 100 * i)  # dmg the newest, idle the oldest
    e = env()
    del e["ANTHROPIC_API_KEY"]
    rows, order, out = listing(state, e)
    check(order == [dmg, intr, recov, idle], (order, out))
    check(" idle " in rows[idle] and "alpha first words here" in rows[idle], rows[idle])
    check("needs recovery" in rows[recov] and "beta needs recovery" in rows[recov], rows[recov])
    check("interrupted tool" in rows[intr], rows[intr])
    check("damaged (line 2)" in rows[dmg], rows[dmg])
    check("eeeeee" not in out, "an empty journal is not a conversation: " + out)
    # Listing touched nothing: the recovery is still there to be done.
    rows2, _, _ = listing(state, e)
    check(rows2 == rows, "a second listing is the same")


def test_list_names_the_process_holding_a_conversation():
    state = new_state()
    port, log = start_server([{"stall_headers": 30}])
    p = spawn(mote(port, state, "-p", "held open"))
    try:
        wait_for(lambda: len(requests_in(log)) == 1, "the request")
        rows, _, out = listing(state)
        check(len(rows) == 1, out)
        row = list(rows.values())[0]
        check("open (pid %d)" % p.pid in row, row)
    finally:
        p.kill()
        p.wait()


def test_retention_prunes_oldest_finished_keeps_recovery_and_open():
    state = new_state()
    recov = one_conversation(state, "needs recovery", script=[{"stall_headers": 30}],
                             kill_when=lambda log: len(requests_in(log)) == 1)
    idle = [one_conversation(state, "idle %d" % i) for i in range(4)]
    age(state, recov, 1000)  # the oldest of all
    for i, c in enumerate(idle):
        age(state, c, 500 - 100 * i)  # idle[3] the newest
    port, log = start_server([{"text": "ok"}])
    p = run(mote(port, state, "-p", "new one", "--keep", "2"))
    check(p.returncode == 0, p.stderr)
    left = set(conv_ids(state))
    check(recov in left, "the one that needs recovery stays")
    check(idle[3] in left and idle[2] in left and idle[1] not in left and idle[0] not in left,
          (idle, left))
    check(len(left) == 4, "recovery, the two newest finished ones and the open one: %s" % left)
    check("removed 2 old finished conversations" in p.stderr, p.stderr)
    # the byte limit: everything finished but the open one goes, quietly
    p = run(mote(port, state, "-p", "another", "--keep", "0", "--keep-bytes", "1", "-q"))
    check(p.returncode == 0, p.stderr)
    left = set(conv_ids(state))
    check(len(left) == 2 and recov in left, left)
    check("removed" not in p.stderr, p.stderr)
    # and the one needing recovery still recovers
    port, log = start_server([{"text": "recovered"}])
    q = run(mote(port, state, "--resume", recov, "-p", "x"))
    check(q.returncode == 0 and "recovered" in q.stdout, (q.stdout, q.stderr))


def test_resume_picker_on_a_terminal_and_conversations_command():
    state = new_state()
    a = one_conversation(state, "the older talk")
    b = one_conversation(state, "the newer talk")
    age(state, a, 200)
    age(state, b, 100)
    port, log = start_server([{"text": "welcome back"}])
    t = Pty(mote(port, state, "--resume"), env())
    t.read_until("resume which (1-2")
    check(t.out.index(b"the newer talk") < t.out.index(b"the older talk"), t.out)
    t.send("9\r")                  # out of range: asked again
    t.read_count("resume which", 2)
    t.send("2\r")
    t.read_until("conversation %s" % a)
    t.read_until("> ")
    t.send("/conversations\r")
    t.read_until("open here")
    t.send("hello\r")
    t.read_until("welcome back")
    t.send("/quit\r")
    check(t.wait() == 0, "exit 0")
    msgs = [m for m in requests_in(log)[0]["body"]["messages"] if m["role"] == "user"]
    first = msgs[0]["content"]
    first = first if isinstance(first, str) else first[0]["text"]
    check(first == "the older talk", "the picked conversation went on: %r" % first)
    # without a terminal: a clear refusal, exit 2
    p = run(mote(port, state, "--resume", "-p", "x"))
    check(p.returncode == 2 and "--list" in p.stderr, (p.returncode, p.stderr))


def test_list_creates_nothing():
    state = os.path.join(tempfile.mkdtemp(dir=TMP), "never-made")
    p = run([MOTE, "--state-dir", state, "--list"])
    check(p.returncode == 0 and "no conversations yet" in p.stdout, (p.returncode, p.stdout))
    check(not os.path.exists(state), "listing created the state directory")


def test_picker_offers_what_opens_and_leaves_on_ctrl_c_or_enter():
    state = new_state()
    a = one_conversation(state, "a good talk")
    bad = os.path.join(convs_dir(state), "20000101-000000-bad.jsonl")
    with open(bad, "w") as f:
        f.write('{"t":"open","v":2,"id":"20000101-000000-bad"}\nnot json\n{"t":"user","text":"x"}\n')
    os.chmod(bad, 0o600)
    port, log = start_server([{"text": "never"}])
    for key, code in (("\x03", 130), ("\r", 0)):
        t = Pty(mote(port, state, "--resume"), env())
        t.read_until("resume which (1-1,")
        check(b"   - 20000101-000000-bad" in t.out, "the damaged one has no number: %r" % t.out)
        t.send(key)
        check(t.wait() == code, "exit %d after %r" % (code, key))
    check(requests_in(log) == [], "nothing was opened or sent")
    check(a in conv_ids(state), conv_ids(state))


# ---- issue 11.2: one writer per conversation --------------------------------------

def test_second_process_is_refused_and_the_first_tool_keeps_running():
    state = new_state()
    d = tempfile.mkdtemp(dir=TMP)
    started, done = os.path.join(d, "started"), os.path.join(d, "done")
    port, log = start_server([
        {"tool": "shell", "input": {"command": "touch %s; sleep 2; touch %s; echo fine" % (started, done)}},
        {"text": "first finished"}])
    p = spawn(mote(port, state, "-p", "one", "--yes"))
    wait_for(lambda: os.path.exists(started), "the tool to start")
    q = run(mote(port, state, "--continue", "-p", "two"))
    check(q.returncode == 1, (q.returncode, q.stderr))
    check("open in another mote process (pid %d)" % p.pid in q.stderr, q.stderr)
    out, err = p.communicate(timeout=30)
    check(p.returncode == 0 and "first finished" in out, (p.returncode, out, err))
    check(os.path.exists(done), "the first one's tool was not killed")
    res = result_text(request_results(log, 1)[-1])
    check("fine" in res, res)
    check(len(requests_in(log)) == 2, "the second process sent nothing")


def test_bad_arguments_are_shown_on_one_neutralised_line():
    """A usage error repeats the argument, but never a raw newline or an
    escape sequence from it (found by fuzz_opts); exit 2."""
    for bad in (["a\nb\x1b[2J"], ["-\n"], ["--model"], ["--keep", "x\ny"],
                ["--provider", "\x1b]0;title\x07"]):
        p = subprocess.run([MOTE] + bad, capture_output=True, timeout=30, env=env())
        check(p.returncode == 2, (bad, p.returncode))
        err = p.stderr
        check(err.count(b"\n") == 1 and err.endswith(b"\n"), (bad, err))
        check(b"\x1b" not in err and b"\x07" not in err, (bad, err))


# ---- 15.8 the usage line --------------------------------------------------------

def test_usage_line_after_each_answer_and_quiet():
    port, log = start_server([{"text": "one", "cache_read": 700, "cache_write": 50},
                              {"text": "two"}])
    p = run(mote(port, new_state(), "-p", "x"))
    check(p.returncode == 0, p.stderr)
    check(p.stdout.strip() == "one", "the answer alone on stdout: %r" % p.stdout)
    line = [l for l in p.stderr.splitlines() if "tokens in" in l]
    check(len(line) == 1 and "; cache: 700 read, 50 written]" in line[0], p.stderr)
    p = run(mote(port, new_state(), "-p", "x", "-q"))
    check(p.returncode == 0 and "tokens in" not in p.stderr, p.stderr)


# ---- 15.6 proxies -----------------------------------------------------------------

PROXY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proxy.py")
CERTS = os.path.join(TMP, "certs")


def certs():
    subprocess.run(["sh", os.path.join(os.path.dirname(PROXY), "make_certs.sh"), CERTS],
                   check=True)
    return CERTS


def start_proxy(*extra):
    """Starts test/proxy.py; returns (port, log path)."""
    d = tempfile.mkdtemp(dir=TMP)
    port_file, log = os.path.join(d, "port"), os.path.join(d, "log")
    proc = subprocess.Popen([sys.executable, PROXY, "--port-file", port_file, "--log", log,
                             "--lifetime", "300"] + list(extra))
    SERVERS.append(proc)  # stopped with the test servers
    wait_for(lambda: os.path.exists(port_file) or proc.poll() is not None, "the proxy")
    check(proc.poll() is None, "the proxy started")
    with open(port_file) as f:
        return int(f.read()), log



def proxy_log(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(l) for l in f]


def through_proxy(proxy_env, *proxy_args, text="through the tunnel"):
    """A one-shot over TLS to https://wrong.example:PORT (a name only the
    proxy resolves: it maps every host to 127.0.0.1; the test certificate
    is for that name)."""
    c = certs()
    port, slog = start_server([{"text": text}], cert="wronghost", certs_dir=c)
    pport, plog = start_proxy(*proxy_args)
    e = env(**{proxy_env: proxy_env_value(pport)})
    p = run([MOTE, "--state-dir", new_state(), "--base-url", "https://wrong.example:%d" % port,
             "--ca-file", os.path.join(c, "ca.crt"), "-p", "x"], e=e)
    return p, port, slog, proxy_log(plog)


def proxy_env_value(pport, cred="us%40er:p%3Ass%20w"):
    return "http://%s@127.0.0.1:%d" % (cred, pport)


def test_https_proxy_connect_tunnel_with_credentials():
    p, port, slog, plog = through_proxy("HTTPS_PROXY", "--auth", "us@er:p:ss w")
    check(p.returncode == 0 and p.stdout.strip() == "through the tunnel", (p.stdout, p.stderr))
    check(len(plog) == 1 and plog[0]["method"] == "CONNECT", plog)
    check(plog[0]["target"] == "wrong.example:%d" % port, plog)
    check(plog[0]["status"] == 200, plog)
    # TLS end to end: the server got the request with the key; the proxy saw no bytes of it
    reqs = requests_in(slog)
    check(len(reqs) == 1 and reqs[0]["headers"].get("x-api-key") == KEY, reqs)
    check("proxy-authorization" not in {k.lower() for k in reqs[0]["headers"]},
          "the proxy's credentials stay with the proxy")


def test_https_proxy_lowercase_and_wrong_credentials():
    p, port, slog, plog = through_proxy("https_proxy", "--auth", "someone:else")
    check(p.returncode == 1, (p.returncode, p.stderr))
    check("refused the credentials in the proxy URL (407 Proxy Authentication Required)"
          in p.stderr, p.stderr)
    check("p:ss" not in p.stderr and "p%3Ass" not in p.stderr, "no password in the message")
    check(len(plog) == 1, "a 407 is not retried: %r" % plog)
    check(requests_in(slog) == [], "nothing reached the server")


def test_proxy_refusing_the_tunnel():
    p, port, slog, plog = through_proxy("HTTPS_PROXY", "--refuse", "403")
    check(p.returncode == 1, (p.returncode, p.stderr))
    check("refused the tunnel to wrong.example:%d (403 Forbidden)" % port in p.stderr, p.stderr)
    check(len(plog) == 1, "a 403 is not retried: %r" % plog)


def test_http_proxy_absolute_form_and_loopback_bypass():
    port, slog = start_server([{"text": "via http proxy"}, {"text": "direct"}])
    pport, plog = start_proxy()
    e = env(HTTP_PROXY="http://127.0.0.1:%d" % pport)
    p = run([MOTE, "--state-dir", new_state(), "--base-url", "http://api.example.test:%d/v1" % port,
             "-p", "x"], e=e)
    check(p.returncode == 0 and "via http proxy" in p.stdout, (p.stdout, p.stderr))
    got = proxy_log(plog)
    check(len(got) == 1 and got[0]["method"] == "POST" and
          got[0]["target"] == "http://api.example.test:%d/v1/messages" % port, got)
    # a loopback base URL never goes through the proxy (here a dead one)
    e = env(HTTP_PROXY="http://127.0.0.1:1", HTTPS_PROXY="http://127.0.0.1:1")
    p = run(mote(port, new_state(), "-p", "x"), e=e)
    check(p.returncode == 0 and "direct" in p.stdout, (p.stdout, p.stderr))
    # an unusable proxy setting is a configuration error
    e = env(HTTP_PROXY="socks5://127.0.0.1:1080")
    p = run(mote(port, new_state(), "-p", "x"), e=e)
    check(p.returncode == 2 and "only an http:// proxy" in p.stderr, (p.returncode, p.stderr))


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


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("cli15", globals())


if __name__ == "__main__":
    sys.exit(main())
