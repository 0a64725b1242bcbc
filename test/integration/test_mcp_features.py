#!/usr/bin/env python3
"""Integration tests of the MCP client's resources, prompts and
elicitation: the real @modelcontextprotocol/server-everything (over stdio
and Streamable HTTP, when `make deps` installed it into .deps/npm) and the
fake server (test/fake_mcp.py) for hostile answers.

    test_mcp_features.py BUILDDIR
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

from harness import (NOTES, ROOT, TMP, Pty, Skip, check, free_port, mote_env, request_results,
                     requests_in, result_text, run_all, start_server, wait_listening)
from harness import fake_mcp as fake, mcp_config as config

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
NPM_BIN = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin")
EVERYTHING = os.path.join(NPM_BIN, "mcp-server-everything")


def args(port, cfg, *extra):
    st = tempfile.mkdtemp(dir=TMP)
    return [MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
            "--mcp-config", cfg] + list(extra)


def run(a, stdin="", timeout=90):
    return subprocess.run(a, input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=mote_env("sk-ant-mcp-SECRET"))


def need_everything():
    if not os.path.exists(EVERYTHING):
        raise Skip("the npm servers are not installed (make deps)")


def results(log, n=1):
    """The tool results the model got in request n, in order: (text, is
    it an error)."""
    return [(result_text(b), bool(b.get("is_error"))) for b in request_results(log, n)]


def tool_names(log, n=0):
    return [t["name"] for t in requests_in(log)[n]["body"].get("tools", [])]


# ---- resources ----------------------------------------------------------------

def resources_turn(cfg_servers, server):
    port, log = start_server([{"tools": [
        {"tool": "list_mcp_resources", "input": {}},
        {"tool": "list_mcp_resource_templates", "input": {"server": server}},
        {"tool": "read_mcp_resource",
         "input": {"server": server, "uri": "demo://resource/dynamic/text/7"}},
        {"tool": "read_mcp_resource",
         "input": {"server": server, "uri": "demo://resource/dynamic/blob/3"}},
        {"tool": "read_mcp_resource", "input": {"server": "nosuch", "uri": "x://y"}}]},
        {"text": "all done"}])
    p = run(args(port, config(cfg_servers), "-p", "x", "--yes"))
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    names = tool_names(log)
    for t in ("list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"):
        check(t in names, "%s offered: %s" % (t, names))
    res = results(log)
    check(len(res) == 5, res)
    check(res[0][0].startswith("server %s:\n- " % server) and "demo://" in res[0][0]
          and not res[0][1], res[0])
    check("demo://resource/dynamic/text/{resourceId}" in res[1][0] and not res[1][1], res[1])
    check("Resource 7: This is a plaintext resource" in res[2][0] and not res[2][1], res[2])
    check(res[3][0].startswith("[binary content of demo://resource/dynamic/blob/3")
          and "bytes (base64): not shown]" in res[3][0] and not res[3][1], res[3])
    check(res[4][1] and "no MCP server named 'nosuch'" in res[4][0]
          and server in res[4][0], res[4])
    return res


def test_real_resources_stdio():
    need_everything()
    resources_turn({"ev": {"command": EVERYTHING, "args": []}}, "ev")


def everything_http():
    """server-everything in its streamableHttp mode; returns (proc, url)."""
    need_everything()
    port = free_port()
    log = open(os.path.join(TMP, "everything-f-%d.log" % port), "a")
    p = subprocess.Popen([EVERYTHING, "streamableHttp"], env=dict(os.environ, PORT=str(port)),
                         stdout=log, stderr=subprocess.STDOUT)
    check(wait_listening(port, p), "server-everything streamableHttp listens")
    return p, "http://127.0.0.1:%d/mcp" % port


def test_real_resources_streamable_http():
    p, url = everything_http()
    try:
        resources_turn({"evh": {"type": "http", "url": url}}, "evh")
    finally:
        p.terminate()
        p.wait(10)


def test_hostile_resources():
    port, log = start_server([{"tools": [
        {"tool": "list_mcp_resources", "input": {}},
        {"tool": "list_mcp_resources", "input": {"server": "f", "cursor": "p2"}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "fake://huge"}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "fake://blob"}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "fake://bad"}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "fake://missing"}}]},
        {"tools": [
        {"tool": "read_mcp_resource", "input": {"server": "f"}},
        {"tool": "list_mcp_resources", "input": {"cursor": "p2"}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "a\u0000b"}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "u" * 3000}},
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "fake://small"}}]},
        {"text": "all done"}])
    p = run(args(port, config({"f": fake("--features")}), "-p", "x", "--yes"))
    check(p.returncode == 0 and "all done" in p.stdout, (p.returncode, p.stderr))
    res = results(log, 2)
    check(len(res) == 11, res)
    lst = res[0][0]
    check(lst.startswith("server f:\n- fake://small (small) [text/plain]: a small text\n")
          and "fake://huge" in lst and "fake://blob" in lst and "no uri" not in lst
          and 'cursor "p2"' in lst and not res[0][1], lst)
    check("fake://second-page" in res[1][0] and "cursor" not in res[1][0], res[1])
    huge = res[2][0]
    check(huge.startswith("h" * 1000) and "[result cut: the server sent more than" in huge
          and len(huge) < 17000 and "END" not in huge and not res[2][1], huge[-300:])
    check(res[3][0].startswith("[binary content of fake://blob, application/octet-stream, ")
          and "bytes or more (base64): not shown]" in res[3][0] and "QUJD" not in res[3][0]
          and len(res[3][0]) < 400, res[3][0][:400])
    check(res[4][1] and 'no "contents" array' in res[4][0], res[4])
    check(res[5][1] and "MCP error -32002: Resource not found: fake://missing" in res[5][0],
          res[5])
    check(res[6][1] and '"uri" is needed' in res[6][0], res[6])
    check(res[7][1] and '"server" is needed' in res[7][0] and "(servers with resources: f)"
          in res[7][0], res[7])
    check(res[8][1] and "NUL" in res[8][0], res[8])  # (refused by the agent's strict edge)
    check(res[9][1] and "MOTE_MCP_PARAMS_MAX" in res[9][0], res[9])
    check(res[10][0] == "small text here" and not res[10][1], res[10])


def test_no_resource_tools_without_resources():
    port, log = start_server([{"text": "done"}])
    p = run(args(port, config({"plain": fake()}), "-p", "x"))
    check(p.returncode == 0, p.stderr)
    names = tool_names(log)
    check("plain__echo" in names and not any("mcp_resource" in n for n in names), names)


def test_resource_read_is_approved_like_a_tool():
    mlog = os.path.join(TMP, "fake-approve-%s.log" % uuid.uuid4().hex[:8])
    port, log = start_server([{"tools": [
        {"tool": "read_mcp_resource", "input": {"server": "f", "uri": "fake://small"}}]},
        {"text": "done"}])
    p = run(args(port, config({"f": fake("--features", "--log", mlog)}), "-p", "x"), stdin="n\n")
    check(p.returncode == 0, p.stderr)
    res = results(log)
    check(len(res) == 1 and res[0][1] and "approval" in res[0][0], res)
    check("resources/read" not in open(mlog).read(), "nothing read without approval")


# ---- prompts --------------------------------------------------------------------

def user_turns(log):
    """The text of each request's last user message."""
    out = []
    for r in requests_in(log):
        m = r["body"]["messages"][-1]
        c = m["content"]
        out.append(c if isinstance(c, str) else "".join(x.get("text", "") for x in c))
    return out


def test_prompts_fake_and_hostile():
    port, log = start_server([{"text": "ok1"}, {"text": "ok2"}, {"text": "ok3"}])
    lines = ["/prompts", '/prompt f/greet who=Bob tone="very warm"', "/prompt f/mixed",
             "/prompt greet", "/prompt f/bad", "/prompt f/greet", "/prompt f/greet who",
             "/prompt f/nosuch", "/prompt nosrv/greet", "/prompt f/huge"]
    p = run(args(port, config({"f": fake("--features"), "g": fake("--features")})),
            stdin="\n".join(lines) + "\n")
    check(p.returncode == 0, p.stderr)
    for want in ("f/greet: Greets someone (arguments: who*, tone)\n",
                 "f/mixed: several kinds of content\n", "g/greet: Greets someone"):
        check(want in p.stdout, (want, p.stdout))
    turns = user_turns(log)
    check(len(turns) == 3, turns)
    check(turns[0] == "Say hello to Bob, very warm.", turns[0])
    check(turns[1] == "first part\n\n(assistant) an answer\n\n[image content: image/png not "
          "shown]\n\nembedded text", turns[1])
    check(turns[2].startswith("p" * 1000) and "END" not in turns[2] and
          "[cut: the server sent more than" in turns[2] and len(turns[2]) < 17000,
          turns[2][-200:])
    for want in ("more than one MCP server offers prompts: say which, as SERVER/greet",
                 "the MCP server's prompt has no messages",
                 "MCP error -32602: missing argument who",
                 "a prompt's arguments are NAME=VALUE words",
                 "MCP error -32602: no prompt nosuch",
                 "no MCP server that offers prompts is named so: nosrv/greet"):
        check(want in p.stderr, (want, p.stderr))


def real_prompts(servers, name):
    port, log = start_server([{"text": "ok1"}, {"text": "ok2"}])
    p = run(args(port, config(servers)),
            stdin="/prompts\n/prompt %s/simple-prompt\n/prompt %s/args-prompt city=Paris "
                  'state="Ile de France"\n' % (name, name))
    check(p.returncode == 0, p.stderr)
    check("%s/simple-prompt: A prompt with no arguments" % name in p.stdout, p.stdout)
    check("%s/args-prompt: A prompt with two arguments, one required and one optional "
          "(arguments: city*, state)" % name in p.stdout, p.stdout)
    turns = user_turns(log)
    check(turns == ["This is a simple prompt without arguments.",
                    "What's weather in Paris, Ile de France?"], turns)


def test_real_prompts_stdio():
    need_everything()
    real_prompts({"ev": {"command": EVERYTHING, "args": []}}, "ev")


def test_real_prompts_streamable_http():
    p, url = everything_http()
    try:
        real_prompts({"evh": {"type": "http", "url": url}}, "evh")
    finally:
        p.terminate()
        p.wait(10)


# ---- elicitation ------------------------------------------------------------------

def test_elicitation_at_the_terminal():
    port, log = start_server([
        {"tools": [{"tool": "f__ask", "input": {"mode": "flat"}}]}, {"text": "turn one done"},
        {"tools": [{"tool": "f__ask", "input": {"mode": "nested"}},
                   {"tool": "f__ask", "input": {"mode": "url"}}]}, {"text": "turn two done"},
        {"tools": [{"tool": "f__ask", "input": {"mode": "flat"}}]}, {"text": "turn three done"}])
    ilog = os.path.join(TMP, "fake-init-%s.log" % uuid.uuid4().hex[:8])
    srv = dict(fake("--features"), env={"FAKE_INIT_LOG": ilog})
    tty = Pty(args(port, config({"f": srv}), "--yes"), mote_env("sk-ant-mcp-SECRET"))
    tty.read_until("ready, 1 tools")
    tty.send("go\r")
    tty.read_until("mcp f asks: Tell me about you (flat)")
    tty.read_until("string, required")
    tty.send("Ann\r")
    tty.read_until("integer, Enter: none")
    tty.send("4.5\r")
    tty.read_until("(a number without a fraction)")
    tty.send("42\r")
    tty.read_until("y/n")
    tty.send("y\r")
    at = len(tty.out)
    tty.read_until("1) red 2) green")
    tty.read_until("choice, required", since=at)
    tty.send("2\r")
    tty.read_until("(sent)")
    tty.read_until("turn one done")
    tty.read_until("> ")
    tty.send("again\r")
    tty.read_until("turn two done")
    tty.read_until("> ")
    tty.send("three\r")
    tty.read_until("mcp f asks: Tell me about you (flat)")
    tty.send("/decline\r")
    tty.read_until("(declined)")
    tty.read_until("turn three done")
    tty.send("/quit\r")
    check(tty.wait() == 0, "exit 0")
    res = results(log, 5)
    check(len(res) == 4, res)
    check(res[0][0] == 'elicited: {"action": "accept", "content": {"age": 42, "color": "green", '
          '"name": "Ann", "ok": true}}', res[0])
    check(res[1][0] == 'elicited: {"action": "decline"}', res[1])  # a nested required field
    check(res[2][0] == 'elicited: {"action": "decline"}', res[2])  # URL mode
    check(res[3][0] == 'elicited: {"action": "decline"}', res[3])
    init = [json.loads(l) for l in open(ilog)]
    check(init and init[0]["capabilities"] == {"elicitation": {}}, init)


def test_elicitation_without_anyone_to_ask():
    # A one-shot with --yes and no terminal: nobody is asked; a question
    # whose every field has a default is accepted with them (the server's
    # own values), one with a field to fill is declined.
    ilog = os.path.join(TMP, "fake-init-%s.log" % uuid.uuid4().hex[:8])
    port, log = start_server([{"tools": [{"tool": "f__ask", "input": {"mode": "flat"}}]},
                              {"tools": [{"tool": "f__ask", "input": {"mode": "defaults"}}]},
                              {"tools": [{"tool": "f__ask", "input": {"mode": "partial"}}]},
                              {"text": "done"}])
    srv = dict(fake("--features"), env={"FAKE_INIT_LOG": ilog})
    t0 = time.monotonic()
    p = run(args(port, config({"f": srv}), "-p", "x", "--yes"))
    check(p.returncode == 0, p.stderr)
    res = results(log, 3)
    check(res == [('elicited: {"action": "decline"}', False),
                  ('elicited: {"action": "accept", "content": {"age": 7, "color": "green", '
                   '"name": "Ann"}}', False),
                  ('elicited: {"action": "decline"}', False)], res)
    check('(--yes: declined: field "name" has no default, and nobody to ask)' in p.stderr and
          '(--yes: declined: field "note" has no default, and nobody to ask)' in p.stderr and
          '(--yes: accepted with its defaults: {"name":"Ann","age":7,"color":"green"})' in p.stderr,
          p.stderr)
    init = [json.loads(l) for l in open(ilog)]
    check(init and init[0]["capabilities"] == {}, init)  # nothing declared: nobody to ask
    NOTES.append("a question with nobody to ask, declined: the one-shot took %.0f ms" %
                 ((time.monotonic() - t0) * 1000))


def test_real_elicitation_stdio():
    need_everything()
    port, log = start_server([
        {"tools": [{"tool": "ev__trigger-elicitation-request", "input": {}}]}, {"text": "done"}])
    tty = Pty(args(port, config({"ev": {"command": EVERYTHING, "args": []}}), "--yes"),
              mote_env("sk-ant-mcp-SECRET"))
    tty.read_until("ready, ")
    tty.read_until("> ")
    tty.send("go\r")
    tty.read_until("mcp ev asks: Please provide inputs for the following fields:")
    tty.read_until("string, required")
    tty.send("Ann Example\r")
    for i in range(30):  # the optional fields: Enter (a default kept, else left out)
        if b"(sent)" in tty.out:
            break
        tty.read_until("Enter: ", since=len(tty.out) - 400)
        at = len(tty.out)
        tty.send("\r")
        deadline = time.time() + 10
        while b"Enter: " not in tty.out[at:] and b"(sent)" not in tty.out[at:]:
            check(time.time() < deadline, "the next field or the end: %r" % tty.out[-300:])
            try:
                tty.read_until("\n", timeout=1, since=len(tty.out))
            except AssertionError:
                pass
    tty.read_until("(sent)")
    tty.read_until("done")
    tty.send("/quit\r")
    check(tty.wait() == 0, "exit 0")
    res = results(log)
    check(len(res) == 1 and "User provided the requested information" in res[0][0] and
          "- Name: Ann Example" in res[0][0] and not res[0][1], res)
    # the form came filled with its defaults: Enter kept them (SEP-1034)
    check('"firstLine": "It was a dark and stormy night."' in res[0][0] and
          '"integer": 42' in res[0][0], res)


def main():
    return run_all("mcp-features", globals())


if __name__ == "__main__":
    sys.exit(main())
