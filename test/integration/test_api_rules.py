#!/usr/bin/env python3
"""The rules the real model APIs enforce with HTTP 400, and the streams
they send: the test server refuses each rule as the API does; mote, through
the real binary, never sends a body that breaks one whatever came before
(whitespace answers, tools gone, empty error results, surrogates, odd
streams); the streams recorded by the providers' SDK test suites
(../shared/fixtures/sdk) replayed through mote end to end.

    test_api_rules.py BUILDDIR          the tests
    test_api_rules.py --mcp-empty-error an MCP server (stdio) whose one tool
                                        fails with no content at all
"""
import glob
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from harness import ROOT, Skip, TMP, check, journal, mote_env, requests_in, run_all, start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
FAKE = os.path.join(ROOT, "test", "fake_mcp.py")
SDK = os.path.join(os.path.dirname(ROOT), "shared", "fixtures", "sdk")
LIMIT = 8  # MOTE_LLM_MAX_TOOL_CALLS (read from mote_config.h in main)

# Tests of defects not fixed yet: they run, and while they fail they are
# reported as skipped with the reason given. Take a name out once its fix
# has landed; a listed test that passes fails, so the list cannot go
# stale.
EXPECTED_FAIL = {}


def env(openai=False):
    return mote_env("sk-rules-test", openai)


def new_state():
    return tempfile.mkdtemp(prefix="rules-", dir=TMP)


def args(port, state, *extra, openai=False):
    a = [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port]
    if openai:
        a += ["--provider", "openai"]
    return a + list(extra)


def run(port, state, *extra, stdin="", openai=False, timeout=60):
    return subprocess.run(args(port, state, *extra, openai=openai), input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=env(openai))


def accepted(log, n=None):
    """The requests the server got; each one kept every rule."""
    reqs = requests_in(log)
    bad = [r["refused"] for r in reqs if r.get("refused")]
    check(not bad, "the server refused: %s" % bad)
    if n is not None:
        check(len(reqs) == n, "%d requests, not %d" % (len(reqs), n))
    return reqs


def mcp_config(*server_args, name="a"):
    path = os.path.join(TMP, "rules-mcp-%d.json" % len(os.listdir(TMP)))
    with open(path, "w") as f:
        json.dump({"mcpServers": {name: {"command": sys.executable,
                                         "args": list(server_args)}}}, f)
    return path


def texts(msg):
    """The text of a message as the model reads it (Anthropic or OpenAI)."""
    c = msg.get("content")
    if isinstance(c, str):
        return c
    return "".join(b.get("text", "") for b in c or [] if b.get("type") == "text")


# ---- the test server refuses each rule ---------------------------------------------

def post(port, path, body):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, raw, {"content-type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def a_body(messages, tools=True, **more):
    b = {"model": "m", "max_tokens": 10, "stream": True, "messages": messages}
    if tools:
        b["tools"] = [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]
    b.update(more)
    return b


USE = {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
CC = {"cache_control": {"type": "ephemeral"}}

ANTHROPIC_RULES = [
    ("an empty text block", a_body([{"role": "user", "content": [{"type": "text", "text": ""}]}]),
     "messages: text content blocks must be non-empty"),
    ("a whitespace-only text block",
     a_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}, USE]},
             {"role": "user", "content": [RESULT]}]),
     "messages: text content blocks must contain non-whitespace text"),
    ("tool blocks without tools",
     a_body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
             {"role": "user", "content": [RESULT]}], tools=False),
     "Requests which include `tool_use` or `tool_result` blocks must define tools."),
    ("an error result without content",
     a_body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
             {"role": "user", "content": [dict(RESULT, content=[], is_error=True)]}]),
     "content cannot be empty if `is_error` is true"),
    ("trailing white space ending the final assistant message",
     a_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": [{"type": "text", "text": "Let me search.\n\n"}]}]),
     "messages: final assistant content cannot end with trailing whitespace"),
    ("a tool_use id used twice",
     a_body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
             {"role": "user", "content": [RESULT]}, {"role": "assistant", "content": [USE]},
             {"role": "user", "content": [RESULT]}]),
     "messages.3.content.0: `tool_use` ids must be unique"),
    ("a tool_use not answered in the next message",
     a_body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
             {"role": "user", "content": "and?"}]),
     "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
     "toolu_1"),
    ("a tool_result answering no tool_use",
     a_body([{"role": "user", "content": [RESULT]}]),
     "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"),
    ("text before the results",
     a_body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
             {"role": "user", "content": [{"type": "text", "text": "first"}, RESULT]}]),
     "Did not find 1 `tool_result` block(s) at the beginning of this message"),
    ("an assistant message first",
     a_body([{"role": "assistant", "content": "hello"}, {"role": "user", "content": "hi"}]),
     'messages: first message must use the "user" role'),
    ("five cache breakpoints",
     a_body([{"role": "user", "content": [dict({"type": "text", "text": "t%d" % i}, **CC)
                                          for i in range(5)]}]),
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    ("a tool name with a dot",
     dict(a_body([{"role": "user", "content": "hi"}]),
          tools=[{"name": "get.weather", "input_schema": {"type": "object"}}]),
     "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"),
    ("a tool name of 65 characters",
     dict(a_body([{"role": "user", "content": "hi"}]),
          tools=[{"name": "x" * 65, "input_schema": {"type": "object"}}]),
     "tools.0.custom.name: String should match pattern"),
    ("a tool_use id with a colon",
     a_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": [dict(USE, id="functions.t:1")]},
             {"role": "user", "content": [dict(RESULT, tool_use_id="functions.t:1")]}]),
     "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
    ("a lone high surrogate",
     b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"echo \\ud800"}]}',
     "The request body is not valid JSON: no low surrogate in string: line 1 column 72 (char 71)"),
    ("a lone low surrogate",
     b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"\\udc00"}]}',
     "The request body is not valid JSON: invalid high surrogate in string"),
    ("a message with no content",
     a_body([{"role": "user", "content": []}, {"role": "assistant", "content": "a"},
             {"role": "user", "content": "b"}]),
     "messages.0: all messages must have non-empty content except for the optional final "
     "assistant message"),
    ("no JSON at all", b'{"model": "m", "messages": [', "The request body is not valid JSON"),
]

OA_CALL = {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
OA_TOOLS = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]


def o_body(messages, **more):
    b = {"model": "m", "stream": True, "messages": messages, "tools": OA_TOOLS}
    b.update(more)
    return b


OPENAI_RULES = [
    ("a tool call without its tool message",
     o_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": None, "tool_calls": [OA_CALL]},
             {"role": "user", "content": "and?"}]),
     "An assistant message with 'tool_calls' must be followed by tool messages responding to "
     "each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
     "messages.[1].role"),
    ("a tool message answering nothing",
     o_body([{"role": "user", "content": "hi"},
             {"role": "tool", "tool_call_id": "call_9", "content": "x"}]),
     "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
     "with 'tool_calls'.", "messages.[1].role"),
    ("one call answered twice",
     o_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": None, "tool_calls": [OA_CALL]},
             {"role": "tool", "tool_call_id": "call_1", "content": "x"},
             {"role": "tool", "tool_call_id": "call_1", "content": "x"}]),
     "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_1', in messages[2] and "
     "messages[3].", "messages.[3].tool_call_id"),
    ("a call id used twice",
     o_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": None, "tool_calls": [OA_CALL]},
             {"role": "tool", "tool_call_id": "call_1", "content": "x"},
             {"role": "assistant", "content": None, "tool_calls": [OA_CALL]},
             {"role": "tool", "tool_call_id": "call_1", "content": "x"}]),
     "Duplicate value for 'tool_calls.id' of 'call_1'", "messages.[3].tool_calls"),
    ("a tool name with a space",
     o_body([{"role": "user", "content": "hi"}],
            tools=[{"type": "function", "function": {"name": "get weather"}}]),
     "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that "
     "matches the pattern '^[a-zA-Z0-9_-]+$'.", "tools[0].function.name"),
    ("a tool name of 65 characters",
     o_body([{"role": "user", "content": "hi"}],
            tools=[{"type": "function", "function": {"name": "y" * 65}}]),
     "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length "
     "64, but got a string with length 65 instead.", "tools[0].function.name"),
    ("a called tool's name with a dot",
     o_body([{"role": "user", "content": "hi"},
             {"role": "assistant", "content": None,
              "tool_calls": [dict(OA_CALL, function={"name": "a.b", "arguments": "{}"})]},
             {"role": "tool", "tool_call_id": "call_1", "content": "x"}]),
     "Invalid 'messages[1].tool_calls[0].function.name': string does not match pattern",
     "messages[1].tool_calls[0].function.name"),
    ("a lone surrogate",
     b'{"model":"m","messages":[{"role":"user","content":"\\ud800"}]}',
     "We could not parse the JSON body of your request.", None),
]


def test_the_test_server_refuses_each_rule_as_the_api_does():
    port, log = start_server([])
    for what, body, msg in ANTHROPIC_RULES:
        status, data = post(port, "/v1/messages", body)
        check(status == 400, "%s: HTTP %d, not 400" % (what, status))
        err = json.loads(data)
        check(err.get("type") == "error" and err["error"]["type"] == "invalid_request_error",
              "%s: the Anthropic error shape: %s" % (what, err))
        check(msg in err["error"]["message"], "%s: %r" % (what, err["error"]["message"]))
    for what, body, msg, param in OPENAI_RULES:
        status, data = post(port, "/v1/chat/completions", body)
        check(status == 400, "%s: HTTP %d, not 400" % (what, status))
        err = json.loads(data).get("error", {})
        check(set(err) == {"message", "type", "param", "code"} and
              err["type"] == "invalid_request_error", "%s: the OpenAI error shape: %s" % (what, err))
        check(msg in err["message"] and err["param"] == param, "%s: %s" % (what, err))
    check(len(requests_in(log)) == len(ANTHROPIC_RULES) + len(OPENAI_RULES), "every one logged")
    check(all(r["refused"] for r in requests_in(log)), "and refused")


def test_the_test_server_takes_what_the_api_takes():
    port, log = start_server([{"text": "fine"}] * 4)
    good = [
        # consecutive messages of one role are merged by the API, not refused
        a_body([{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                {"role": "assistant", "content": [{"type": "text", "text": "x"}, USE]},
                {"role": "user", "content": [RESULT, {"type": "text", "text": "more"}]},
                {"role": "assistant", "content": "Let me"}]),
        a_body([{"role": "user", "content": "hi \ud83d\ude00 \ufffd"}], tools=False,
               system=[dict({"type": "text", "text": "s"}, **CC)]),
    ]
    for body in good:
        status, data = post(port, "/v1/messages", body)
        check(status == 200, (status, data[:300]))
    status, data = post(port, "/v1/chat/completions", o_body([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [OA_CALL, dict(OA_CALL, id="call_2")]},
        {"role": "tool", "tool_call_id": "call_2", "content": ""},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        {"role": "user", "content": "ok"}]))
    check(status == 200, (status, data[:300]))
    accepted(log, 3)


def test_rules_can_be_turned_off_for_a_deliberately_broken_body():
    old = os.environ.get("MOTE_LLM_RULES")
    os.environ["MOTE_LLM_RULES"] = "off"
    try:
        port, log = start_server([{"text": "taken"}])
    finally:
        if old is None:
            del os.environ["MOTE_LLM_RULES"]
        else:
            os.environ["MOTE_LLM_RULES"] = old
    status, _ = post(port, "/v1/messages", ANTHROPIC_RULES[0][1])
    check(status == 200, "taken with the rules off: %d" % status)
    check(requests_in(log)[0]["refused"] is None, "not refused")


# ---- 1: white space ---------------------------------------------------------------

def test_whitespace_answer_before_a_tool_call_is_not_sent_as_a_text_block():
    port, log = start_server([{"text": "\n\n", "tool": "list_dir", "input": {"path": TMP}},
                              {"text": "listed"}])
    state = new_state()
    r = run(port, state, "-p", "x", "--yes")
    check(r.returncode == 0 and "listed" in r.stdout, (r.returncode, r.stderr[-400:]))
    reqs = accepted(log, 2)
    content = reqs[1]["body"]["messages"][1]["content"]
    check([b["type"] for b in content] == ["tool_use"], content)
    answer = [x for x in journal(state, single=False) if x["t"] == "assistant"][0]
    check(answer["text"] == "\n\n", "the journal keeps what came: %r" % answer["text"])


def test_whitespace_only_answer_is_not_sent_back_on_the_next_turn():
    for openai in (False, True):
        port, log = start_server([{"text": " \n "}, {"text": "second"}])
        state = new_state()
        r = run(port, state, stdin="hi\nagain\n/quit\n", openai=openai)
        check(r.returncode == 0 and "second" in r.stdout, (openai, r.returncode, r.stderr[-400:]))
        msgs = accepted(log, 2)[1]["body"]["messages"]
        said = [texts(m) for m in msgs if m["role"] == "user"]
        check("hi" in "".join(said) and "again" in "".join(said), msgs)
        if not openai:
            check(all(m["role"] == "user" for m in msgs), "no assistant message is left: %s" % msgs)


def test_ctrl_c_after_only_whitespace_then_the_next_message_is_valid():
    port, log = start_server([{"after_text": "   ", "stall": 30}, {"text": "after"}])
    state = new_state()
    p = subprocess.Popen(args(port, state, "--output-format", "stream-json"), env=env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    p.stdin.write("hi\n")
    p.stdin.flush()
    for _ in range(100):
        line = p.stdout.readline()
        check(line, "the stream ended before any text")
        if json.loads(line).get("type") == "text":
            break
    p.send_signal(signal.SIGINT)  # cancels the turn, as Ctrl+C in a terminal
    out, err = p.communicate("next\n/quit\n", timeout=30)
    check(p.returncode == 0 and '"after"' in out, (p.returncode, out[-300:], err[-300:]))
    answer = [x for x in journal(state, single=False) if x["t"] == "assistant"][0]
    check(answer.get("interrupted") and answer["text"] and not answer["text"].strip(), answer)
    accepted(log, 2)


# ---- 2: tool history without tools -----------------------------------------------

def test_continue_with_no_tools_after_tools_were_used():
    a, = dirs(1)
    port, log = start_server([{"tool": "list_dir", "input": {"path": a}}, {"text": "seen"},
                              {"text": "no tools now"}])
    state = new_state()
    r = run(port, state, "-p", "look", "--yes")
    check(r.returncode == 0, r.stderr[-400:])
    r = run(port, state, "--continue", "-p", "and now?", "--no-tools")
    check(r.returncode == 0 and "no tools now" in r.stdout, (r.returncode, r.stderr[-400:]))
    body = accepted(log, 3)[2]["body"]
    check("tools" not in body, "no tools are offered")
    said = json.dumps([texts(m) for m in body["messages"]])
    check("list_dir" in said and a in said, "the model still reads the call: %s" % said)
    check("marker-0" in said, "and its result: %s" % said)


def test_continue_after_the_mcp_server_is_gone():
    port, log = start_server([{"tool": "a__echo", "input": {"text": "from the server"}},
                              {"text": "echoed"}, {"text": "still here"}])
    state = new_state()
    r = run(port, state, "-p", "echo it", "--yes", "--no-tools", "--mcp-config",
            mcp_config(FAKE))
    check(r.returncode == 0, r.stderr[-400:])
    r = run(port, state, "--continue", "-p", "again", "--no-tools")
    check(r.returncode == 0 and "still here" in r.stdout, (r.returncode, r.stderr[-400:]))
    said = json.dumps([texts(m) for m in accepted(log, 3)[2]["body"]["messages"]])
    check("a__echo" in said and "from the server" in said, said)


# ---- 3: an error result with no content ---------------------------------------------

def test_mcp_error_with_no_content_is_sent_with_a_text():
    port, log = start_server([{"tool": "a__broken", "input": {}}, {"text": "noted"}])
    r = run(port, new_state(), "-p", "try", "--yes", "--mcp-config",
            mcp_config(os.path.abspath(__file__), "--mcp-empty-error"))
    check(r.returncode == 0 and "noted" in r.stdout, (r.returncode, r.stderr[-400:]))
    res = accepted(log, 2)[1]["body"]["messages"][-1]["content"][0]
    check(res["type"] == "tool_result" and res.get("is_error") is True, res)
    check("failed" in json.dumps(res.get("content")), "the model reads that it failed: %s" % res)


# ---- 4: trailing white space ending the final assistant message -----------------------

def test_pause_turn_continuation_trims_the_trailing_whitespace():
    port, log = start_server([{"text": "Let me search.\n\n", "stop": "pause_turn"},
                              {"text": "Found it."}])
    state = new_state()
    r = run(port, state, "-p", "search")
    check(r.returncode == 0 and "Found it." in r.stdout, (r.returncode, r.stderr[-400:]))
    last = accepted(log, 2)[1]["body"]["messages"][-1]
    check(last["role"] == "assistant" and texts(last) == "Let me search.", last)
    answer = [x for x in journal(state, single=False) if x["t"] == "assistant"][0]
    check(answer["text"] == "Let me search.\n\n", "the journal keeps what came")


# ---- 5, 6, 9: OpenAI tool-call chunks --------------------------------------------------

def oa(delta=None, finish=None, **top):
    c = {"id": "chatcmpl-rules", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    c.update(top)
    return c


def oa_calls(*calls):
    return oa({"tool_calls": list(calls)})


def dirs(n):
    """n directories with a known file in each; their paths."""
    out = []
    for i in range(n):
        d = tempfile.mkdtemp(prefix="dir%d-" % i, dir=TMP)
        open(os.path.join(d, "marker-%d" % i), "w").close()
        out.append(d)
    return out


def two_calls_answered(log, paths):
    msgs = accepted(log, 2)[1]["body"]["messages"]
    asked = msgs[-3]
    check(asked["role"] == "assistant" and len(asked.get("tool_calls") or []) == 2, msgs[-3:])
    got = [json.loads(c["function"]["arguments"]) for c in asked["tool_calls"]]
    check(got == [{"path": p} for p in paths], got)
    results = [m["content"] for m in msgs[-2:]]
    check(all(m["role"] == "tool" for m in msgs[-2:]), msgs[-2:])
    for i, res in enumerate(results):
        check("marker-%d" % i in res, "call %d ran on its own input: %s" % (i, res[:200]))


def test_openai_interleaved_argument_fragments_are_assembled_by_index():
    a, b = dirs(2)
    fn = {"name": "list_dir", "arguments": ""}
    port, log = start_server([{"events": [
        oa({"role": "assistant", "content": None}),
        oa_calls({"index": 0, "id": "call_a", "type": "function", "function": fn}),
        oa_calls({"index": 1, "id": "call_b", "type": "function", "function": fn}),
        oa_calls({"index": 1, "function": {"arguments": '{"path": '}}),
        oa_calls({"index": 0, "function": {"arguments": '{"path": '}}),
        oa_calls({"index": 0, "function": {"arguments": json.dumps(a) + "}"}}),
        oa_calls({"index": 1, "function": {"arguments": json.dumps(b) + "}"}}),
        oa(finish="tool_calls"), "[DONE]"]}, {"text": "both"}])
    r = run(port, new_state(), "-p", "x", "--yes", openai=True)
    check(r.returncode == 0, (r.returncode, r.stderr[-400:]))
    two_calls_answered(log, [a, b])


def test_openai_calls_without_index_in_one_chunk_get_a_slot_each():
    a, b = dirs(2)
    port, log = start_server([{"events": [
        oa({"role": "assistant", "content": None}),
        oa_calls({"id": "call_a", "type": "function",
                  "function": {"name": "list_dir", "arguments": json.dumps({"path": a})}},
                 {"id": "call_b", "type": "function",
                  "function": {"name": "list_dir", "arguments": json.dumps({"path": b})}}),
        oa(finish="tool_calls"), "[DONE]"]}, {"text": "both"}])
    r = run(port, new_state(), "-p", "x", "--yes", openai=True)
    check(r.returncode == 0, (r.returncode, r.stderr[-400:]))
    two_calls_answered(log, [a, b])


def id_less_call(path, tag):
    return {"events": [
        oa({"role": "assistant", "content": None}, id=tag),
        oa_calls({"index": 0, "type": "function",
                  "function": {"name": "list_dir", "arguments": json.dumps({"path": path})}}),
        oa(finish="tool_calls"), "[DONE]"]}


def test_openai_call_without_id_is_given_one():
    a, = dirs(1)
    port, log = start_server([id_less_call(a, "chatcmpl-1"), {"text": "listed"}])
    r = run(port, new_state(), "-p", "x", "--yes", openai=True)
    check(r.returncode == 0 and "listed" in r.stdout, (r.returncode, r.stderr[-400:]))
    msgs = accepted(log, 2)[1]["body"]["messages"]
    cid = msgs[-2]["tool_calls"][0]["id"]
    check(re.match(r"^[A-Za-z0-9_-]+$", cid), cid)
    check(msgs[-1]["role"] == "tool" and msgs[-1]["tool_call_id"] == cid and
          "marker-0" in msgs[-1]["content"], msgs[-1])


def test_openai_calls_without_id_in_two_answers_get_distinct_ids():
    a, = dirs(1)
    # the same answer twice, as a model repeating itself on a server that
    # numbers nothing
    port, log = start_server([id_less_call(a, "same"), id_less_call(a, "same"), {"text": "ok"}])
    r = run(port, new_state(), "-p", "x", "--yes", openai=True)
    check(r.returncode == 0, (r.returncode, r.stderr[-400:]))
    accepted(log, 3)


def test_more_calls_than_the_table_are_answered_and_the_turn_goes_on():
    n = LIMIT + 4
    paths = dirs(n)
    events = [{"type": "message_start", "message": {
        "id": "msg_many", "type": "message", "role": "assistant", "content": [], "model": "m",
        "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}]
    for i, p in enumerate(paths):
        events += [
            {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": "toolu_many_%d" % i, "name": "list_dir", "input": {}}},
            {"type": "content_block_delta", "index": i,
             "delta": {"type": "input_json_delta", "partial_json": json.dumps({"path": p})}},
            {"type": "content_block_stop", "index": i}]
    events += [{"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9}}, {"type": "message_stop"}]
    port, log = start_server([{"events": events}, {"text": "done all I could"}])
    r = run(port, new_state(), "-p", "x", "--yes")
    check(r.returncode == 0 and "done all I could" in r.stdout, (r.returncode, r.stderr[-400:]))
    results = {b["tool_use_id"]: b for b in accepted(log, 2)[1]["body"]["messages"][-1]["content"]
               if b["type"] == "tool_result"}
    check(len(results) == n, "every call has its result: %d" % len(results))
    ran = [results.get("toolu_many_%d" % i, {}) for i in range(LIMIT)]
    check(all("marker-%d" % i in json.dumps(ran[i]) for i in range(LIMIT)), "the first ran")
    rest = [results.get("toolu_many_%d" % i, {}) for i in range(LIMIT, n)]
    check(all(b.get("is_error") and "call it again" in json.dumps(b) for b in rest),
          "the rest said not run: %s" % rest)


# ---- 7: a tool_use input given whole at its start -----------------------------------

def test_anthropic_tool_input_given_whole_in_content_block_start_is_used():
    a, = dirs(1)
    events = [
        {"type": "message_start", "message": {"id": "msg_w", "type": "message",
                                              "role": "assistant", "content": [], "model": "m",
                                              "stop_reason": None,
                                              "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_whole", "name": "list_dir", "input": {"path": a}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}},
        {"type": "message_stop"}]
    port, log = start_server([{"events": events}, {"text": "listed"}])
    r = run(port, new_state(), "-p", "x", "--yes")
    check(r.returncode == 0, (r.returncode, r.stderr[-400:]))
    msgs = accepted(log, 2)[1]["body"]["messages"]
    check(msgs[-2]["content"][-1]["input"] == {"path": a}, msgs[-2])
    check("marker-0" in json.dumps(msgs[-1]["content"]), msgs[-1])


# ---- 8: lone surrogates --------------------------------------------------------------

def test_lone_surrogate_in_a_tool_input_is_sent_as_replacement_character():
    port, log = start_server([{"tool": "shell", "raw_input": '{"command": "echo \\ud800 done"}'},
                              {"text": "echoed"}, {"text": "later"}])
    state = new_state()
    r = run(port, state, "-p", "x", "--yes")
    check(r.returncode == 0 and "echoed" in r.stdout, (r.returncode, r.stderr[-400:]))
    r = run(port, state, "--continue", "-p", "more")
    check(r.returncode == 0 and "later" in r.stdout, (r.returncode, r.stderr[-400:]))
    for req in accepted(log, 3)[1:]:
        use = req["body"]["messages"][1]["content"][-1]
        check(use["input"] == {"command": "echo \ufffd done"}, use)
        check("\\ud800" not in req["raw"], "no lone surrogate escape in what is sent")


# ---- 10: a recovered partial answer and the next one ------------------------------------

def recovered_partial(openai):
    port, log = start_server([{"after_text": "a partial answer that", "stall": 60},
                              {"text": "recovered"}, {"text": "next one"}])
    state = new_state()
    p = subprocess.Popen(args(port, state, "-p", "x", "--shutdown-timeout", "300",
                              "--output-format", "stream-json", openai=openai), env=env(openai),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = ""
    while "that" not in seen:
        line = p.stdout.readline()
        check(line, "the stream ended before the text")
        ev = json.loads(line)
        seen += ev.get("text", "") if ev.get("type") == "text" else ""
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    check(p.returncode == 143, p.returncode)
    r = run(port, state, "--continue", "-p", "and then?", openai=openai)
    check(r.returncode == 0 and "next one" in r.stdout, (r.returncode, r.stderr[-400:]))
    msgs = accepted(log, 3)[2]["body"]["messages"]
    said = [texts(m) for m in msgs if m["role"] == "assistant"]
    whole = "".join(said)
    check("a partial answer that" in whole and "recovered" in whole, msgs)
    check("thatrecovered" not in whole, "the two answers run together: %s" % said)
    check(re.search(r"that\W*\[[^]]*interrupted[^]]*\]", whole), "the cut is said: %s" % said)


def test_anthropic_recovered_partial_answer_is_kept_apart_from_the_next():
    recovered_partial(False)


def test_openai_recovered_partial_answer_is_kept_apart_from_the_next():
    recovered_partial(True)


# ---- the SDKs' recorded streams -----------------------------------------------------------

def recorded(path):
    """What a recorded stream says: text, thinking, calls (name, input text),
    the stop reason as mote names it. A reference reader, as the SDKs read."""
    with open(path, "rb") as f:
        raw = f.read().decode().replace("\r\n", "\n")
    anthropic = os.path.basename(path).startswith("anthropic")
    out = {"text": "", "thinking": "", "calls": [], "stop": None}
    calls = {}
    for block in raw.split("\n\n"):
        data = [line[6:] if line[5:6] == " " else line[5:]
                for line in block.split("\n") if line.startswith("data:")]
        if not data or data == ["[DONE]"]:
            continue
        j = json.loads("\n".join(data))
        if anthropic:
            t = j.get("type")
            if t == "content_block_start":
                cb = j["content_block"]
                if cb["type"] == "text":
                    out["text"] += cb.get("text", "")
                elif cb["type"] == "tool_use":
                    calls[j["index"]] = [cb["id"], cb["name"], ""]
            elif t == "content_block_delta":
                d = j["delta"]
                if d["type"] == "text_delta":
                    out["text"] += d["text"]
                elif d["type"] == "thinking_delta":
                    out["thinking"] += d["thinking"]
                elif d["type"] == "input_json_delta" and j["index"] in calls:
                    calls[j["index"]][2] += d["partial_json"]
            elif t == "message_delta":
                out["stop"] = j["delta"].get("stop_reason")
            continue
        for c in j.get("choices") or []:
            if c.get("index", 0) != 0:
                continue
            d = c.get("delta") or {}
            out["text"] += (d.get("refusal") or "") + (d.get("content") or "")
            for tc in d.get("tool_calls") or []:
                k = tc.get("index", 0)
                if k not in calls:
                    calls[k] = [tc.get("id"), tc["function"]["name"], ""]
                calls[k][2] += tc.get("function", {}).get("arguments") or ""
            if c.get("finish_reason"):
                out["refused"] = bool(out.get("refused") or "refusal" in raw)
                out["stop"] = {"stop": "end_turn", "tool_calls": "tool_use",
                               "length": "max_tokens"}.get(c["finish_reason"], c["finish_reason"])
    if not anthropic and out["stop"] == "end_turn" and '"refusal":"I' in raw:
        out["stop"] = "refusal"
    out["calls"] = [calls[k] for k in sorted(calls)]
    return out


def whole_input(text):
    try:
        v = json.loads(text or "{}")
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def replay_one(path):
    name = os.path.basename(path)
    anthropic = name.startswith("anthropic")
    want = recorded(path)
    tools = sorted({c[1] for c in want["calls"]})
    tools_file = os.path.join(TMP, "rules-tools-%s.json" % name)
    with open(tools_file, "w") as f:
        json.dump([{"name": t, "description": "a recorded tool",
                    "inputSchema": {"type": "object"}} for t in tools], f)
    mlog = os.path.join(TMP, "rules-mcp-log-%s" % name)
    port, log = start_server([{"replay": path, "names": {t: "a__" + t for t in tools}}])
    state = new_state()
    r = run(port, state, "-p", "first", "--yes", "--mcp-config",
            mcp_config(FAKE, "--tools-file", tools_file, "--log", mlog), openai=not anthropic)
    # a one-shot turn that ends refused or cut says so in its exit code (CLI.md)
    code = 3 if want["stop"] in ("refusal", "max_tokens") and not want["calls"] else 0
    check(r.returncode == code, (r.returncode, r.stderr[-600:]))
    if not want["calls"]:  # the next request: the next prompt's
        q = run(port, state, "--continue", "-p", "second", openai=not anthropic)
        check(q.returncode == 0, (q.returncode, q.stderr[-600:]))
    reqs = accepted(log, 2)
    # text rendered, thinking hidden
    first_line = want["text"].strip().split("\n")[0][:40]
    check(first_line in r.stdout, "the text is shown: %r" % first_line)
    if want["thinking"]:
        check(want["thinking"][:30] not in r.stdout, "thinking is not shown")
    # journal: the answer as it came
    answer = [x for x in journal(state, single=False) if x["t"] == "assistant"][0]
    check(answer["text"] == want["text"], (answer["text"][:200], want["text"][:200]))
    check(answer["stop"] == want["stop"], (answer["stop"], want["stop"]))
    got = [(c["name"], c["input"]) for c in answer.get("calls", [])]
    whole = [("a__" + n, whole_input(t)) for _, n, t in want["calls"]]
    check([g[0] for g in got] == [w[0] for w in whole], (got, whole))
    check(all(w[1] is None or g[1] == w[1] for g, w in zip(got, whole)), (got, whole))
    # tools run when the recording calls one with a whole input
    ran = []
    if os.path.exists(mlog):
        ran = [json.loads(l)["params"] for l in open(mlog) if '"tools/call"' in l]
    check([(c["name"], c.get("arguments")) for c in ran] ==
          [(n, w) for (_, n, t), (_, w) in zip(want["calls"], whole) if w is not None], ran)
    # the next request carries the answer, and thinking never
    msgs = reqs[1]["body"]["messages"]
    check(want["thinking"] == "" or want["thinking"][:30] not in reqs[1]["raw"], "no thinking")
    said = [m for m in msgs if m["role"] == "assistant"]
    if anthropic:
        sent_text = texts(said[0]) if said else ""
        check(sent_text == want["text"].strip() or sent_text == want["text"].rstrip(),
              (sent_text[:200], want["text"][:200]))
        uses = [b for b in (said[0]["content"] if said else []) if b["type"] == "tool_use"]
        check([(u["id"], u["name"]) for u in uses] ==
              [(i, "a__" + n) for i, n, _ in want["calls"]], uses)
    else:
        check(said and (said[0].get("content") or "") == want["text"], said[:1])
        sent = said[0].get("tool_calls") or []
        check([(c["id"], c["function"]["name"]) for c in sent] ==
              [(i, "a__" + n) for i, n, _ in want["calls"]], sent)
    if want["calls"]:
        results = (msgs[-1]["content"] if anthropic else
                   [m for m in msgs if m["role"] == "tool"])
        check(len(results) == len(want["calls"]), "every call answered: %s" % results)


def replay_tests():
    files = sorted(glob.glob(os.path.join(SDK, "*.sse")))
    if not files:
        def test_replay_sdk_recordings():
            raise Skip("no recordings at %s" % SDK)
        return {"test_replay_sdk_recordings": test_replay_sdk_recordings}
    tests = {}
    for path in files:
        def one(path=path):
            replay_one(path)
        name = "test_replay_" + re.sub(r"\W", "_", os.path.basename(path)[:-4])
        one.__name__ = name
        tests[name] = one
    return tests


def expecting(tests):
    """Wraps the listed tests: their failure is reported as a skip naming
    what is missing, their success as a failure (the list is stale)."""
    for name, why in EXPECTED_FAIL.items():
        fn = tests["test_" + name]

        def wrapped(fn=fn, why=why):
            try:
                fn()
            except AssertionError as e:
                raise Skip("expected failure until %s (%s)" % (why, str(e)[:160]))
            raise AssertionError("passes now: take it out of EXPECTED_FAIL")
        wrapped.__name__ = fn.__name__
        tests["test_" + name] = wrapped
    return tests


# ---- the MCP server whose tool fails with no content ----------------------------------------

def empty_error_mcp():
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        m, res = msg.get("method"), {}
        if m == "initialize":
            res = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "empty-error", "version": "1"}}
        elif m == "tools/list":
            res = {"tools": [{"name": "broken", "description": "fails, saying nothing",
                              "inputSchema": {"type": "object"}}]}
        elif m == "tools/call":
            res = {"content": [], "isError": True}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": res}) + "\n")
        sys.stdout.flush()
    return 0


def main():
    global LIMIT
    if len(sys.argv) > 1 and sys.argv[1] == "--mcp-empty-error":
        return empty_error_mcp()
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    from harness import config_value
    LIMIT = config_value("MOTE_LLM_MAX_TOOL_CALLS")
    tests = {k: v for k, v in globals().items() if k.startswith("test_")}
    tests = expecting(tests)
    tests.update(replay_tests())
    return run_all("api-rules", tests)


if __name__ == "__main__":
    sys.exit(main())
