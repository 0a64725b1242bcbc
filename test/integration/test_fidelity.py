#!/usr/bin/env python3
"""Issue 13: speaking the providers' APIs exactly - each test drives the
real binary against the local test LLM server (and the fake MCP server)
and fails on the code before the fix.

    test_fidelity.py BUILDDIR
"""
import json
import os
import subprocess
import sys
import tempfile

from harness import TMP, check, mote_env, requests_in, run_all, start_server

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fake_mcp.py")


def env(openai=False):
    return mote_env("sk-fidelity-test", openai)


def run(port, *extra, stdin="", openai=False, state=None):
    state = state or tempfile.mkdtemp(prefix="fid-", dir=TMP)
    a = [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port]
    if openai:
        a += ["--provider", "openai"]
    return subprocess.run(a + list(extra), input=stdin, capture_output=True, text=True,
                          timeout=60, env=env(openai))


def mcp_config(*flags):
    path = os.path.join(TMP, "fid-mcp-%d.json" % len(os.listdir(TMP)))
    with open(path, "w") as f:
        json.dump({"mcpServers": {"a": {"command": sys.executable,
                                        "args": [FAKE] + list(flags)}}}, f)
    return path


# ---- 3: tool calls without arguments ----------------------------------------------

def no_arguments(openai):
    port, log = start_server([{"tool": "list_dir", "raw_input": ""}, {"text": "done"}])
    r = run(port, "-p", "x", "--yes", openai=openai)
    check(r.returncode == 0, (r.returncode, r.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 2, "the round went on")
    body = json.dumps(reqs[1]["body"])
    check("JSON object" not in body, body[-400:])  # neither the old nor the new message
    if openai:
        call = reqs[1]["body"]["messages"][-2]["tool_calls"][0]
        check(call["function"]["arguments"] == "{}", call)
    else:
        use = reqs[1]["body"]["messages"][-2]["content"][-1]
        check(use["type"] == "tool_use" and use["input"] == {}, use)


def test_anthropic_tool_use_without_input_is_empty_object():
    no_arguments(False)


def test_openai_call_with_empty_arguments_is_empty_object():
    no_arguments(True)


# ---- 6: error classification --------------------------------------------------------

def test_openai_rate_limit_code_in_a_200_stream_is_retried():
    port, log = start_server([{"error_event": "requests", "error_code": "rate_limit_exceeded"},
                              {"text": "after the retry"}])
    r = run(port, "-p", "x", openai=True)
    check(r.returncode == 0 and "after the retry" in r.stdout, (r.returncode, r.stderr))
    check(len(requests_in(log)) == 2, "retried once")


# ---- 12: prompt caching --------------------------------------------------------------

def test_anthropic_prompt_cache_breakpoints_and_usage():
    port, log = start_server([{"tool": "list_dir", "input": {"path": "/"}, "cache_write": 900,
                               "cache_read": 0, "input_tokens": 40},
                              {"text": "done", "cache_read": 900, "cache_write": 30,
                               "input_tokens": 7}])
    state = tempfile.mkdtemp(prefix="fid-", dir=TMP)
    r = run(port, "-p", "x", "--yes", "--output-format", "stream-json", state=state)
    check(r.returncode == 0, (r.returncode, r.stderr))
    reqs = requests_in(log)
    b = reqs[1]["body"]
    check(b["system"][0]["cache_control"] == {"type": "ephemeral"}, b["system"])
    check(b["tools"][-1].get("cache_control") == {"type": "ephemeral"}, b["tools"][-1])
    check(all("cache_control" not in t for t in b["tools"][:-1]), "one breakpoint for the tools")
    last = b["messages"][-1]["content"][-1]
    check(last["type"] == "tool_result" and last.get("cache_control") == {"type": "ephemeral"},
          last)
    marks = json.dumps(b).count("cache_control")
    check(marks == 3, "3 breakpoints (at most 4 allowed): %d" % marks)
    ends = [json.loads(l) for l in r.stdout.splitlines() if '"turn_end"' in l or '"result"' in l]
    check(any("cache_read_input_tokens" in json.dumps(e) and "900" in json.dumps(e)
              for e in ends), r.stdout[-600:])
    d = os.path.join(state, "conversations")
    recs = [json.loads(l) for f in os.listdir(d) for l in open(os.path.join(d, f))]
    usage = [x.get("usage") for x in recs if x["t"] == "assistant"]
    check(usage[-1].get("cache_read_tokens") == 900 and usage[-1].get("cache_write_tokens") == 30,
          usage)


def test_openai_has_no_cache_control_and_reads_cached_tokens():
    port, log = start_server([{"text": "fine", "cache_read": 512, "input_tokens": 20}])
    state = tempfile.mkdtemp(prefix="fid-", dir=TMP)
    r = run(port, "-p", "x", openai=True, state=state)
    check(r.returncode == 0, r.stderr)
    check("cache_control" not in json.dumps(requests_in(log)[0]["body"]), "OpenAI: none")
    d = os.path.join(state, "conversations")
    recs = [json.loads(l) for f in os.listdir(d) for l in open(os.path.join(d, f))]
    u = [x.get("usage") for x in recs if x["t"] == "assistant"][-1]
    check(u.get("input_tokens") == 20 and u.get("cache_read_tokens") == 512, u)


# ---- 4: an empty prompt ------------------------------------------------------

def test_empty_prompt_refused_in_one_shot():
    port, log = start_server([{"text": "never"}])
    for p in ("", "   ", "\n\t "):
        r = run(port, "-p", p)
        check(r.returncode == 2 and "empty" in r.stderr, (repr(p), r.returncode, r.stderr))
    check(requests_in(log) == [], "nothing was sent")


def test_blank_lines_ignored_at_the_prompt():
    port, log = start_server([{"text": "the only answer"}])
    r = run(port, stdin="\n   \n\t\nhello\n/quit\n")
    check(r.returncode == 0 and "the only answer" in r.stdout, (r.returncode, r.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 1, "one request, for the one message: %d" % len(reqs))
    msgs = reqs[0]["body"]["messages"]
    check(len(msgs) == 1 and json.dumps(msgs[0]["content"]).count("hello") == 1, msgs)


# ---- 9: a response that is not an event stream ---------------------------------

def test_a_login_page_is_said_as_such():
    port, _ = start_server([{"raw_body": "<html><title>Please log in</title></html>",
                             "content_type": "text/html; charset=utf-8"}])
    r = run(port, "-p", "hi")
    check(r.returncode == 1, (r.returncode, r.stderr))
    check("text/html" in r.stderr and "not an event stream" in r.stderr and
          "Please log in" in r.stderr, r.stderr)
    check("stream ended before the answer" not in r.stderr, r.stderr)


def test_a_json_answer_is_said_as_such():
    body = json.dumps({"id": "x", "object": "chat.completion", "choices": []})
    port, _ = start_server([{"raw_body": body, "content_type": "application/json"}])
    r = run(port, "-p", "hi", openai=True)
    check(r.returncode == 1 and "application/json" in r.stderr and
          "chat.completion" in r.stderr, r.stderr)


# ---- 1, 2, 8: MCP tool schemas, names and configs --------------------------------

def tools_file(tools):
    path = os.path.join(TMP, "fid-tools-%d.json" % len(os.listdir(TMP)))
    with open(path, "w") as f:
        json.dump(tools, f)
    return path


def offered(port, log, cfg, openai=False):
    r = run(port, "-p", "x", "--yes", "--mcp-config", cfg, openai=openai)
    reqs = requests_in(log)
    return r, reqs


def test_mcp_schema_without_type_gets_type_object():
    tf = tools_file([{"name": "notype", "description": "d",
                      "inputSchema": {"properties": {"x": {"type": "string"}}}},
                     {"name": "empty", "inputSchema": {}}])
    for openai in (False, True):
        port, log = start_server([{"text": "ok"}])
        r, reqs = offered(port, log, mcp_config("--tools-file", tf), openai)
        check(r.returncode == 0 and len(reqs) == 1, (r.returncode, r.stderr))
        tools = reqs[0]["body"]["tools"]
        if openai:
            schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        else:
            schemas = {t["name"]: t["input_schema"] for t in tools}
        check(schemas.get("a__notype", {}).get("type") == "object", schemas)
        check(schemas["a__notype"].get("properties") == {"x": {"type": "string"}}, schemas)
        check(schemas.get("a__empty") == {"type": "object"}, schemas)


def test_mcp_tool_names_never_collide_and_map_back():
    long_a = "very_long_tool_name_" * 3 + "alpha"
    long_b = "very_long_tool_name_" * 3 + "bravo"
    tf = tools_file([{"name": n, "inputSchema": {"type": "object"}}
                     for n in ("get.weather", "get_weather", long_a, long_b, "x" * 100)])
    port, log = start_server([{"text": "ok"}])
    r, reqs = offered(port, log, mcp_config("--tools-file", tf))
    check(r.returncode == 0, r.stderr)
    names = [t["name"] for t in reqs[0]["body"]["tools"] if t["name"].startswith("a__")]
    import re
    check(len(names) == 5 and len(set(names)) == 5, names)
    check(all(re.match(r"^[A-Za-z0-9_-]{1,64}$", n) for n in names), names)
    check("a__get_weather" in names, "the name that needs no change keeps it: %s" % names)
    # Each shortened name reaches its own tool.
    for i, remote in enumerate(("get.weather", long_b, "x" * 100)):
        name = [n for n in names if n != "a__get_weather"][[0, 2, 3][i]]
        if i == 0:
            name = [n for n in names if n.startswith("a__get_weather_")][0]
        mlog = os.path.join(TMP, "fid-mlog-%d-%d" % (i, len(os.listdir(TMP))))
        port, log = start_server([{"tool": name, "input": {"q": 1}}, {"text": "done"}])
        r = run(port, "-p", "x", "--yes", "--mcp-config",
                mcp_config("--tools-file", tf, "--log", mlog))
        check(r.returncode == 0, r.stderr)
        calls = [json.loads(l) for l in open(mlog) if '"tools/call"' in l]
        check(len(calls) == 1, calls)
        got = calls[0]["params"]["name"]
        if i == 0:
            check(got == "get.weather", (name, got))
        else:
            check(got in (long_a, long_b, "x" * 100), (name, got))
        body = json.dumps(requests_in(log)[1]["body"])
        check("called " + got in body, "the result of the tool that was called")


def test_mcp_raw_control_characters_in_a_schema_never_reach_the_request():
    tf = tools_file([{"name": "tabby", "description": "a\tb",
                      "inputSchema": {"type": "object", "description": "x\ty"}}])
    port, log = start_server([{"text": "ok"}])
    r, reqs = offered(port, log, mcp_config("--tools-file", tf, "--raw-control"))
    check(len(reqs) == 1 and "_invalid" not in reqs[0]["body"], "the request body is JSON")
    check("not valid JSON" in r.stderr, r.stderr)


def test_mcp_config_over_the_token_limit_says_so():
    servers = {"s%d" % i: {"command": "true", "env": {"V%d" % k: "v" for k in range(150)}}
               for i in range(4)}
    path = os.path.join(TMP, "fid-big-config.json")
    with open(path, "w") as f:
        json.dump({"mcpServers": servers}, f)
    port, _ = start_server([{"text": "ok"}])
    r = run(port, "-p", "x", "--mcp-config", path)
    check(r.returncode == 2 and "MOTE_JSON_MAX_TOKENS" in r.stderr, (r.returncode, r.stderr))
    check("not a JSON object" not in r.stderr, r.stderr)


def test_mcp_two_servers_of_one_name_refused():
    path = os.path.join(TMP, "fid-dup-config.json")
    with open(path, "w") as f:
        f.write('{"mcpServers": {"a": {"command": "true"}, "a": {"command": "false"}}}')
    port, log = start_server([{"text": "ok"}])
    r = run(port, "-p", "x", "--mcp-config", path)
    # refused by the strict parse already: a duplicate key, named
    check(r.returncode == 2 and 'duplicate key "a"' in r.stderr, (r.returncode, r.stderr))
    check(requests_in(log) == [], "nothing sent")


# ---- 10: MCP results over the cap are said to be cut ---------------------------

def mcp_round(inp):
    port, log = start_server([{"tool": "a__big", "input": inp}, {"text": "ok"}])
    r = run(port, "-p", "x", "--yes", "--mcp-config", mcp_config("--big-tool"))
    check(r.returncode == 0, (r.returncode, r.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 2, "the result went back")
    return json.dumps(reqs[1]["body"])


def test_mcp_text_over_the_cap_is_cut_with_a_note():
    body = mcp_round({"bytes": 40000})
    check("bbbbbbbbbbbbbbbb" in body, "what fits is kept")
    check("[result cut:" in body and "MOTE_MCP_RESULT_MAX" in body, "the model is told")


def test_mcp_items_past_the_cap_are_said_to_be_cut():
    body = mcp_round({"bytes": 6000, "items": 5})
    check("END" in body, "the first items are whole")
    check("[result cut:" in body, "the model is told the rest is missing")


def test_mcp_structured_content_over_the_cap_is_said_to_be_cut():
    body = mcp_round({"bytes": 40000, "structured": True})
    check("ssssssss" in body and "[result cut:" in body, "cut, and said")


def test_mcp_small_result_is_whole_and_has_no_note():
    body = mcp_round({"bytes": 1000})
    check("END" in body and "[result cut:" not in body, "whole")


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("fidelity", globals())


if __name__ == "__main__":
    sys.exit(main())
