#!/usr/bin/env python3
"""Every provider a device user picks, through the real binary against the
test server's provider profiles (test/llm_profiles.py): each provider's
error bodies say why in every frontend (CLI, stream-json with the code
names, mote serve, MQTT), streams that end without [DONE], the ids a
server gives, calls that share an index.

    test_providers.py BUILDDIR
"""
import json
import os
import subprocess
import sys
import tempfile

import harness
from harness import SERVERS, TMP, Skip, check, requests_in, run_all, start_server, wait_for

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")


def env(provider="openai", **extra):
    e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    e["OPENAI_API_KEY" if provider != "anthropic" else "ANTHROPIC_API_KEY"] = "sk-providers"
    e["NO_COLOR"] = "1"
    e["MOTE_BACKOFF_MS"] = "20"
    e.update(extra)
    return e


def server(profile, script=None, extra=()):
    return start_server(script, extra=["--profile", profile] + list(extra))


def mote(port, *args, state=None, provider="openai", prompt="hi", stdin=None, timeout=90,
         envs=None):
    """Runs `mote -p PROMPT` (stream-json unless args say otherwise);
    returns (process, events, state)."""
    state = state or tempfile.mkdtemp(dir=TMP)
    cmd = [MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port]
    if provider is not None:
        cmd += ["--provider", provider]
    if prompt is not None:
        cmd += ["-p", prompt]
    cmd += list(args)
    if "--output-format" not in args:
        cmd += ["--output-format", "stream-json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, input=stdin,
                       env=env(provider or "openai", **(envs or {})))
    events = []
    for line in p.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return p, events, state


def journal(state):
    """Every conversation's records, by journal."""
    return harness.journal(state, single=False)


def errors(events):
    return [e for e in events if e.get("type") == "error"]


# ---- errors say why, whatever the body's shape --------------------------------

# (profile, step, code, words the message must hold)
SHAPES = [
    ("reference", {"status": 400, "message": "max_tokens is too large: 99999999"},
     "bad_request", "max_tokens is too large"),
    ("gemini", {"status": 400, "message": "Function call is missing a thought_signature in "
                "functionCall parts."}, "bad_request", "missing a thought_signature"),
    ("gemini", {"status": 429, "message": "Resource has been exhausted (e.g. check quota)."},
     "rate_limit", "Resource has been exhausted"),
    ("mistral", {"status": 422, "message": {"detail": [{
        "type": "extra_forbidden", "loc": ["body", "stream_options", "include_usage"],
        "msg": "Extra inputs are not permitted", "input": True}]}},
     "bad_request", "body.stream_options.include_usage: Extra inputs are not permitted"),
    ("reference", {"status": 502, "body_text": "upstream connect error or disconnect/reset "
                   "before headers. reset reason: connection termination"},
     "server_error", "upstream connect error"),
    ("reference", {"status": 503, "content_type": "text/html", "body_text":
                   "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>"
                   "\r\n<body><center><h1>503</h1></center></body></html>"},
     "overloaded", "503 Service Temporarily Unavailable"),
]


def test_error_reason_every_shape_stream_json():
    for profile, step, code, words in SHAPES:
        port, log = server(profile, [step] * 8)
        p, ev, _ = mote(port)
        errs = errors(ev)
        check(p.returncode == 1 and errs, (profile, step, p.returncode, p.stderr))
        check(errs[-1].get("code") == code, (profile, code, errs[-1]))
        check(words in errs[-1].get("message", ""), (profile, words, errs[-1]))


def test_error_reason_cli_text():
    port, _ = server("mistral", [SHAPES[3][1]])
    p, _, _ = mote(port, "--output-format", "text")
    check(p.returncode == 1, (p.returncode, p.stderr))
    check("HTTP 422" in p.stderr and SHAPES[3][3] in p.stderr, p.stderr)


def serve_events(provider, script, until):
    """One turn ("hi") through `mote serve` (--provider openai) against the
    test server speaking as `provider`: its events, once one named `until`
    came."""
    from test_serve import Serve
    port, _ = server(provider, script)
    s = Serve(port, args=["--provider", "openai"], env_more=env())
    try:
        _, ev = s.start_turn("hi")
        ev.wait(lambda e: e["event"] == until, "the %s event" % until, 30)
        return ev.all()
    finally:
        s.p.terminate()
        s.p.wait(timeout=30)


def mqtt_events(tag, provider, script, until):
    """One request ("hi" in conversation c1) through `mote serve --mqtt`
    (--provider openai, a private broker) against the test server
    speaking as `provider`: the events on out/c1, once one named `until`
    came."""
    from test_mqtt import Broker
    from test_mqtt_serve import Sub, mserve, req, stop
    try:
        b = Broker("prov-" + tag)
    except Exception as e:  # noqa: BLE001 - no mosquitto here
        raise Skip("no broker: %s" % e)
    port, _ = server(provider, script)
    s = mserve(port, b, "dev-" + tag, args=["--provider", "openai"], env=env())
    sub = Sub(b, "mote/dev-" + tag, "w-" + tag)
    try:
        b.pub("mote/dev-%s/in" % tag, req("r1", "c1", "hi"))
        sub.wait(lambda: any(e.get("event") == until for e in sub.events("c1")),
                 "the %s event on out/c1" % until)
        return sub.events("c1")
    finally:
        sub.stop()
        stop(s)


def test_error_reason_in_serve_events():
    evs = serve_events("gemini", [SHAPES[1][1]] * 3, "error")
    e = [x for x in evs if x["event"] == "error"][-1]["json"]
    check(e.get("code") == "bad_request", e)
    check(SHAPES[1][3] in e.get("text", ""), e)


def test_error_reason_over_mqtt():
    e = [x for x in mqtt_events("e", "mistral", [SHAPES[3][1]], "error")
         if x.get("event") == "error"][-1]
    text = json.dumps(e)
    check("bad_request" in text and SHAPES[3][3] in text, e)


# ---- streams that end after finish_reason without [DONE] -----------------------

def test_no_done_after_finish_reason_is_complete():
    port, log = server("ik_llama", [{"text": "The whole answer."}])
    p, ev, state = mote(port)
    check(p.returncode == 0, (p.returncode, p.stderr))
    check("The whole answer." in "".join(e.get("text", "") for e in ev if e["type"] == "text"),
          ev)
    ans = [r for r in journal(state) if r["t"] == "assistant"]
    check(ans and not ans[-1].get("interrupted") and ans[-1]["stop"] == "end_turn", ans)


def test_no_done_after_tool_calls_runs_them():
    port, log = server("ik_llama", [{"tool": "list_dir", "input": {"path": "."}}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, (p.returncode, p.stderr))
    recs = journal(state)
    res = [r for r in recs if r["t"] == "tool_result"]
    check(len(res) == 1 and not res[0]["error"], recs)
    check(len(requests_in(log)) == 2, "the calls ran and the model was asked again")


# ---- ids a server gives -----------------------------------------------------------

def test_kimi_ids_kept():
    port, log = server("kimi", [{"tool": "list_dir", "input": {"path": "."}},
                                {"tools": [{"tool": "list_dir", "input": {"path": "."}},
                                           {"tool": "list_dir", "input": {"path": ".."}}]}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = requests_in(log)
    check(len(reqs) == 3 and not any(r.get("refused") for r in reqs),
          [r.get("refused") for r in reqs])
    calls = [c["id"] for r in journal(state) if r["t"] == "assistant" for c in r.get("calls", [])]
    check(calls == ["functions.list_dir:0", "functions.list_dir:1", "functions.list_dir:2"], calls)
    last = reqs[-1]["body"]["messages"]
    sent = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    check(sent == calls and answered == calls, (sent, answered))


def test_foreign_ids_fit_anthropic():
    # A conversation begun on a Kimi server goes on with Anthropic: its
    # ids are made to fit Anthropic's pattern, call and result alike.
    port, _ = server("kimi", [{"tool": "list_dir", "input": {"path": "."}}, {"text": "done"}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, p.stderr)
    port2, log2 = start_server([{"text": "on anthropic"}])
    p, ev, _ = mote(port2, "--continue", provider="anthropic", state=state, prompt="more")
    check(p.returncode == 0, p.stderr)
    body = requests_in(log2)[-1]
    check(not body.get("refused"), body.get("refused"))


# ---- calls that share an index ------------------------------------------------------

def test_gateway_calls_sharing_index_are_separate():
    d = tempfile.mkdtemp(dir=TMP)
    x = os.path.join(d, "x")
    with open(x, "w") as f:
        f.write("content of x\n")
    port, log = server("gateway", [{"tools": [{"tool": "list_dir", "input": {"path": d}},
                                              {"tool": "read_file", "input": {"path": x}}]}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, (p.returncode, p.stderr))
    recs = journal(state)
    calls = [c for r in recs if r["t"] == "assistant" for c in r.get("calls", [])]
    check([c["name"] for c in calls] == ["list_dir", "read_file"], calls)
    check(calls[0]["input"] == {"path": d} and calls[1]["input"] == {"path": x}, calls)
    res = [r for r in recs if r["t"] == "tool_result"]
    check(len(res) == 2 and "content of x" in res[1]["text"], res)
    check(not any(c.get("refused") for c in calls), calls)
    check(calls[0]["id"] != calls[1]["id"], calls)


def test_index0_without_ids_are_separate():
    port, log = server("gateway_noid", [{"tools": [{"tool": "list_dir", "input": {"path": "."}},
                                                   {"tool": "list_dir", "input": {"path": ".."}}]}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, (p.returncode, p.stderr))
    calls = [c for r in journal(state) if r["t"] == "assistant" for c in r.get("calls", [])]
    check([c["input"] for c in calls] == [{"path": "."}, {"path": ".."}], calls)
    check(not any(c.get("refused") for c in calls), calls)
    res = [r for r in journal(state) if r["t"] == "tool_result"]
    check(len(res) == 2 and not any(r["error"] for r in res), res)


# ---- provider quirks as data ------------------------------------------------------

PROXY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proxy.py")


def start_proxy():
    """test/proxy.py (every host it is asked for is 127.0.0.1): a test can
    name a provider's real host, and mote picks that host's profile."""
    d = tempfile.mkdtemp(dir=TMP)
    port_file, log = os.path.join(d, "port"), os.path.join(d, "log")
    proc = subprocess.Popen([sys.executable, PROXY, "--port-file", port_file, "--log", log,
                             "--lifetime", "300"])
    SERVERS.append(proc)
    wait_for(lambda: os.path.exists(port_file) or proc.poll() is not None, "the proxy")
    with open(port_file) as f:
        return int(f.read())


def via_host(host, port, *args, **kw):
    """mote with --base-url http://HOST:PORT/v1 (or PATH) through the proxy."""
    pport = start_proxy()
    envs = dict(kw.pop("envs", {}), HTTP_PROXY="http://127.0.0.1:%d" % pport)
    state = kw.pop("state", None) or tempfile.mkdtemp(dir=TMP)
    cmd = [MOTE, "--state-dir", state, "--base-url",
           "http://%s:%d%s" % (host, port, kw.pop("path", "/v1")),
           "--output-format", "stream-json"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90,
                          env=env(kw.pop("provider", "openai"), **envs))


def bodies(log):
    return [r for r in requests_in(log) if "body" in r]


def test_refused_key_dropped_and_remembered():
    # A server mote does not know refuses stream_options as Mistral does
    # (422): asked once again without it, and that origin remembered for
    # the process (the second prompt sends none).
    port, log = server("mistral")
    state = tempfile.mkdtemp(dir=TMP)
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "--provider", "openai"], input="first\nsecond\n", capture_output=True,
                       text=True, timeout=90, env=env())
    check(p.returncode == 0, (p.returncode, p.stderr))
    check("You said: first" in p.stdout and "You said: second" in p.stdout, p.stdout)
    reqs = bodies(log)
    check(len(reqs) == 3, [r.get("refused") for r in reqs])
    check(reqs[0].get("refused") and "stream_options" in reqs[0]["body"], reqs[0].get("refused"))
    check(not reqs[1].get("refused") and "stream_options" not in reqs[1]["body"], reqs[1])
    check(not reqs[2].get("refused") and "stream_options" not in reqs[2]["body"], reqs[2])
    # /new and a new process learn it again, once
    p, ev, _ = mote(port)
    check(p.returncode == 0, p.stderr)
    check(len(bodies(log)) == 5, len(bodies(log)))


def test_refusal_not_about_the_key_is_not_looped():
    # Every request refused whatever it holds: one more try, then the reason.
    port, log = server("reference", [{"status": 400, "message": "stream_options: "
                                      "unsupported here, and everything else too"}] * 5)
    p, ev, _ = mote(port)
    check(p.returncode == 1, p.stderr)
    check(len(bodies(log)) == 2, len(bodies(log)))
    check("everything else too" in errors(ev)[-1]["message"], errors(ev))


def test_named_profile_sends_what_it_takes():
    port, log = server("mistral")
    p, ev, _ = mote(port, provider="mistral")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 1 and not reqs[0].get("refused"), [r.get("refused") for r in reqs])
    check("stream_options" not in reqs[0]["body"], reqs[0]["body"])


def test_provider_from_the_environment():
    port, log = server("mistral")
    p, ev, _ = mote(port, provider=None, envs={"MOTE_PROVIDER": "mistral"})
    check(p.returncode == 0, (p.returncode, p.stderr))
    check(len(bodies(log)) == 1, [r.get("refused") for r in bodies(log)])
    p, ev, _ = mote(port, provider=None, envs={"MOTE_PROVIDER": "nonesuch"})
    check(p.returncode == 2 and "MOTE_PROVIDER" in p.stderr and "mistral" in p.stderr, p.stderr)


def test_known_host_picks_its_profile():
    port, log = server("mistral")
    p = via_host("api.mistral.ai", port, "-p", "hi")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 1 and "stream_options" not in reqs[0]["body"],
          [r.get("refused") for r in reqs])
    check(reqs[0]["path"] == "/v1/chat/completions", reqs[0]["path"])


def test_token_limit_name_swapped_when_refused():
    # OpenAI's reasoning models refuse max_tokens and name the other.
    port, log = server("reference", [
        {"status": 400, "message": "Unsupported parameter: 'max_tokens' is not supported with "
         "this model. Use 'max_completion_tokens' instead.", "code": "unsupported_parameter"},
        {"text": "ok"}])
    p, ev, _ = mote(port, "--max-tokens", "300")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 2, len(reqs))
    check(reqs[0]["body"].get("max_tokens") == 300 and
          reqs[1]["body"].get("max_completion_tokens") == 300 and
          "max_tokens" not in reqs[1]["body"], [r["body"] for r in reqs])
    # and the other way: a server behind api.openai.com's name that does
    # not know max_completion_tokens
    port, log = server("reference", [
        {"status": 400, "message": "Unrecognized request argument supplied: "
         "max_completion_tokens"}, {"text": "ok"}])
    p = via_host("api.openai.com", port, "-p", "hi", "--max-tokens", "300")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 2 and reqs[0]["body"].get("max_completion_tokens") == 300 and
          reqs[1]["body"].get("max_tokens") == 300, [r["body"] for r in reqs])


# ---- reasoning is part of the conversation -----------------------------------------

def reasons(state):
    return [r for r in journal(state) if r["t"] == "reason"]


def thinking(events):
    return "".join(e.get("text", "") for e in events if e.get("type") == "thinking")


def test_deepseek_reasoning_content_sent_back():
    # DeepSeek's thinking mode: every assistant message must carry its
    # reasoning_content back (a tool round, then a follow-up turn).
    port, log = server("deepseek", [{"tool": "list_dir", "input": {"path": "."}},
                                    {"text": "It is a directory."}, {"text": "Sure."}])
    state = tempfile.mkdtemp(dir=TMP)
    p = via_host("api.deepseek.com", port, "-p", "hi", "--yes", state=state)
    check(p.returncode == 0, (p.returncode, p.stderr))
    ev = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    p = via_host("api.deepseek.com", port, "-p", "and again", "--continue", "--yes",
                 state=state)
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 3 and not any(r.get("refused") for r in reqs),
          [r.get("refused") for r in reqs])
    rs = reasons(state)
    check(rs and all(r["fmt"] == "reasoning_content" for r in rs), rs)
    sent = [m.get("reasoning_content") for m in reqs[-1]["body"]["messages"]
            if m["role"] == "assistant"]
    check(len(sent) == 2 and all(sent), sent)
    check(sent[0] in thinking(ev) and sent[1] in thinking(ev), (sent, thinking(ev)))


def test_deepseek_learnt_on_a_host_mote_does_not_know():
    # The same server as an unknown OpenAI-compatible one: its 400 names
    # reasoning_content, mote sends it (and every turn's) from then on.
    port, log = server("deepseek", [{"tool": "list_dir", "input": {"path": "."}},
                                    {"text": "ok"}])
    state = tempfile.mkdtemp(dir=TMP)
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "--provider", "openai", "--yes"], input="first\nsecond\n",
                       capture_output=True, text=True, timeout=90, env=env())
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    refused = [r for r in reqs if r.get("refused")]
    check(1 <= len(refused) <= 2, [r.get("refused") for r in reqs])
    check(not reqs[-1].get("refused"), reqs[-1].get("refused"))


def test_anthropic_thinking_blocks_sent_back():
    port, log = server("anthropic_thinking", [
        {"tool": "list_dir", "input": {"path": "."}, "redacted": True},
        {"tool": "list_dir", "input": {"path": ".."}}, {"text": "Done."}])
    p, ev, state = mote(port, "--yes", "--thinking", "2048", provider="anthropic")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 3 and not any(r.get("refused") for r in reqs),
          [r.get("refused") for r in reqs])
    b0 = reqs[0]["body"]
    check(b0.get("thinking") == {"type": "enabled", "budget_tokens": 2048} and
          b0["max_tokens"] > 2048, {k: b0.get(k) for k in ("thinking", "max_tokens")})
    last = reqs[-1]["body"]["messages"]
    firsts = [m["content"][0]["type"] for m in last if m["role"] == "assistant"]
    check(firsts == ["thinking", "thinking"], firsts)
    kinds = [b["type"] for m in last if m["role"] == "assistant" for b in m["content"]]
    check(kinds == ["thinking", "redacted_thinking", "tool_use", "thinking", "tool_use"], kinds)
    check(thinking(ev) and "Claude thinks" in thinking(ev), thinking(ev)[:200])
    # a new turn: earlier turns' thinking is left out (the API strips it)
    p, ev, _ = mote(port, "--continue", "--thinking", "2048", provider="anthropic", state=state,
                    prompt="thanks")
    check(p.returncode == 0, p.stderr)
    last = bodies(log)[-1]
    check(not last.get("refused"), last.get("refused"))
    check("thinking" not in [b["type"] for m in last["body"]["messages"] if m["role"] ==
                             "assistant" for b in m["content"]], last["body"]["messages"])


def test_anthropic_compatible_thinking_on_by_default():
    # An Anthropic-format endpoint that thinks without being asked: its
    # blocks go back all the same.
    port, log = server("anthropic_thinking", [{"tool": "list_dir", "input": {"path": "."}},
                                              {"text": "Done."}])
    p, ev, state = mote(port, "--yes", provider="anthropic")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(len(reqs) == 2 and not reqs[1].get("refused"), [r.get("refused") for r in reqs])
    check("thinking" not in reqs[0]["body"], reqs[0]["body"].keys())


def test_gemini_thought_signature_sent_back():
    port, log = server("gemini", [{"tools": [{"tool": "list_dir", "input": {"path": "."}},
                                             {"tool": "list_dir", "input": {"path": ".."}}]},
                                  {"text": "Both listed."}])
    # picked by its host (through the proxy), --provider openai
    state = tempfile.mkdtemp(dir=TMP)
    p = via_host("generativelanguage.googleapis.com", port, "-p", "hi", "--yes", state=state,
                 path="/v1beta/openai")
    check(p.returncode == 0, (p.returncode, p.stderr))
    reqs = bodies(log)
    check(reqs[0]["path"] == "/v1beta/openai/chat/completions", reqs[0]["path"])
    check(len(reqs) == 2 and not any(r.get("refused") for r in reqs),
          [r.get("refused") for r in reqs])
    calls = [c for m in reqs[1]["body"]["messages"] if m["role"] == "assistant"
             for c in m.get("tool_calls", [])]
    check("extra_content" in calls[0] and "extra_content" not in calls[1], calls)
    rec = [c for r in journal(state) if r["t"] == "assistant" for c in r.get("calls", [])]
    check(rec[0]["extra"]["google"]["thought_signature"] ==
          calls[0]["extra_content"]["google"]["thought_signature"], rec)


def test_reasoning_field_shown_and_journaled_not_sent():
    # vLLM, Groq, Ollama, OpenRouter: delta.reasoning is thinking
    port, log = server("vllm", [{"tool": "list_dir", "input": {"path": "."}}, {"text": "ok"}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, (p.returncode, p.stderr))
    check("vLLM reasons" in thinking(ev), ev)
    rs = reasons(state)
    check(rs and all(r["fmt"] == "reasoning" for r in rs), rs)
    check("vLLM reasons" not in bodies(log)[-1]["raw"], "sent back where no one asked for it")
    # the text mode shows it on stderr (-q: not)
    port, log = server("vllm", [{"text": "The answer."}])
    p, _, _ = mote(port, "--output-format", "text")
    check("thinking: vLLM reasons" in p.stderr and "The answer." in p.stdout and
          "vLLM" not in p.stdout, (p.stdout, p.stderr))
    port, log = server("vllm", [{"text": "The answer."}])
    p, _, _ = mote(port, "--output-format", "text", "-q")
    check("vLLM" not in p.stderr, p.stderr)


def test_reasoning_in_serve_and_mqtt_events():
    evs = serve_events("vllm", [{"text": "served"}], "turn_end")
    th = "".join(e["json"]["text"] for e in evs if e["event"] == "thinking")
    check("vLLM reasons" in th, evs)
    evs = mqtt_events("t", "vllm", [{"text": "over mqtt"}], "thinking")
    check(any(e.get("event") == "thinking" for e in evs), evs)


def test_reasoning_of_any_length_in_bounded_memory():
    # 300 KB of thinking: journaled in pieces, every byte kept.
    big = " ".join("thought%d" % i for i in range(40000))
    port, log = server("deepseek", [{"reasoning": big, "tool": "list_dir", "input": {"path": "."}},
                                    {"text": "ok", "reasoning": "short"}])
    p, ev, state = mote(port, "--yes", provider="deepseek")
    check(p.returncode == 0, (p.returncode, p.stderr[-500:]))
    rs = [r for r in reasons(state) if r["b"] == 0]
    got = "".join(r["text"] for r in rs[:-1]) if rs[-1]["text"] == "short" else \
        "".join(r["text"] for r in rs)
    check(got.startswith(big) and len(rs) > 10, (len(rs), len(got)))
    sent = [m.get("reasoning_content") for m in bodies(log)[1]["body"]["messages"]
            if m["role"] == "assistant"]
    check(sent == [big], (len(sent), [len(x or "") for x in sent]))


# ---- context overflow recovers ------------------------------------------------------

SEQ = {"tool": "shell", "input": {"command": "seq 1 3000"}}  # 13,893 bytes of output


def test_overflow_recovers_by_itself_small_window():
    # A 1,500-token llama.cpp server, a 14 KB tool result, the window
    # unknown to mote: the request is refused (exceed_context_size_error),
    # the conversation is summarised (its tool result cut in the summary
    # request only) and asked again; the next turn answers.
    port, log = server("llamacpp", [SEQ], extra=["--ctx", "1500"])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, (p.returncode, p.stderr, errors(ev)))
    check(not errors(ev), errors(ev))
    check("over the model's context window (1500 tokens)" in p.stderr, p.stderr)
    recs = journal(state)
    res = [r for r in recs if r["t"] == "tool_result"]
    check(len(res) == 1 and len(res[0]["text"]) > 13800, "the journal keeps the result whole")
    check(any(r["t"] == "compact" for r in recs), [r["t"] for r in recs])
    ans = [r for r in recs if r["t"] == "assistant"]
    check(ans[-1]["stop"] == "end_turn" and ans[-1]["text"], ans[-1])
    reqs = bodies(log)
    check(sum(1 for r in reqs if r.get("refused")) == 1, [bool(r.get("refused")) for r in reqs])
    # the next turn answers
    p, ev, _ = mote(port, "--continue", state=state, prompt="and the next one?")
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev)))
    check("and the next one?" in "".join(e.get("text", "") for e in ev if e["type"] == "text"),
          ev)


def test_result_cut_to_a_share_of_a_known_window():
    # --context-window 1500: the 14 KB result is cut before it is sent,
    # the cut said to the model; nothing is refused.
    port, log = server("llamacpp", [SEQ], extra=["--ctx", "1500"])
    p, ev, state = mote(port, "--yes", "--context-window", "1500")
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev)))
    reqs = bodies(log)
    check(not any(r.get("refused") for r in reqs), [r.get("refused") for r in reqs])
    tool = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][0]["content"]
    check("bytes of this result cut here to fit the model's context window (1500 tokens)" in tool
          and tool.startswith("1\n2\n3\n") and tool.rstrip().endswith("2999\n3000\n\n[exit status 0]".rstrip())
          or "3000" in tool[-40:], tool[-200:])
    check(len(tool) < 1500, len(tool))
    res = [r for r in journal(state) if r["t"] == "tool_result"]
    check(len(res[0]["text"]) > 13800, "the journal keeps it whole")


def test_overflow_reference_apis_recover():
    for provider, dialect in (("openai", "openai"), ("anthropic", "anthropic")):
        port, log = server("reference", [SEQ], extra=["--ctx", "1500"])
        p, ev, state = mote(port, "--yes", provider=provider)
        check(p.returncode == 0 and not errors(ev), (provider, p.returncode, errors(ev)))
        refused = [r.get("refused") for r in bodies(log) if r.get("refused")]
        check(len(refused) == 1 and ("context_length_exceeded" in refused[0] or
                                     "prompt is too long" in refused[0]), refused)


def test_overflow_kimi_recovers():
    # Kimi on Moonshot's API (picked by its host) words it its own way:
    # "exceeded model token limit" is an overflow too, and recovers.
    port, log = server("moonshot", [SEQ], extra=["--ctx", "1500"])
    state = tempfile.mkdtemp(dir=TMP)
    p = via_host("api.moonshot.ai", port, "-p", "hi", "--yes", state=state)
    ev = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev), p.stderr[-600:]))
    check("over the model's context window (1500 tokens)" in p.stderr, p.stderr)
    refused = [r.get("refused") for r in bodies(log) if r.get("refused")]
    check(len(refused) == 1 and "exceeded model token limit" in refused[0], refused)
    check(any(r["t"] == "compact" for r in journal(state)), "compacted")


def test_compact_by_hand_over_the_window():
    # A conversation already over the window (its result came from a
    # larger server): /compact works, and the conversation goes on.
    port, _ = server("reference", [SEQ, {"text": "listed"}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, p.stderr)
    port, log = server("llamacpp", [], extra=["--ctx", "1500"])
    p = subprocess.run([MOTE, "--state-dir", state, "--base-url", "http://127.0.0.1:%d" % port,
                        "--provider", "openai", "--continue", "--output-format", "stream-json"],
                       input="/compact\nwhat now?\n", capture_output=True, text=True,
                       timeout=90, env=env())
    ev = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev), p.stderr))
    check(any(r["t"] == "compact" for r in journal(state)), "compacted")
    check("what now?" in "".join(e.get("text", "") for e in ev if e["type"] == "text"), ev)


def test_continue_over_the_window_recovers():
    # Killed in the middle (the journal ends with its request): --continue
    # sends it again, it is over the window, it recovers.
    port, _ = server("reference", [SEQ, {"text": "listed"}])
    p, ev, state = mote(port, "--yes")
    check(p.returncode == 0, p.stderr)
    d = os.path.join(state, "conversations")
    f = os.path.join(d, [x for x in os.listdir(d) if x.endswith(".jsonl")][0])
    with open(f) as fh:
        lines = fh.readlines()
    cut = max(i for i, l in enumerate(lines) if json.loads(l)["t"] == "request")
    with open(f, "w") as fh:
        fh.writelines(lines[:cut + 1])
    port, log = server("llamacpp", [], extra=["--ctx", "1500"])
    p, ev, _ = mote(port, "--continue", state=state, prompt=None)
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev), p.stderr))
    check(any(r["t"] == "compact" for r in journal(state)), "compacted")


def test_overflow_that_cannot_recover_says_so():
    # A window smaller than mote's own system prompt and tools: one try,
    # then the cause by name.
    port, log = server("llamacpp", [], extra=["--ctx", "100"])
    p, ev, _ = mote(port)
    check(p.returncode == 1, p.returncode)
    errs = errors(ev)
    check(errs and errs[-1]["code"] in ("context_overflow",), errs)
    check(len(bodies(log)) <= 4, len(bodies(log)))


# ---- the Responses API --------------------------------------------------------------

SHARED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "shared", "fixtures")


def items(req):
    return req["body"]["input"]


def test_responses_tool_round_keeps_reasoning():
    port, log = server("openai_responses", [{"tool": "list_dir", "input": {"path": "."}},
                                            {"text": "Listed."}])
    p, ev, state = mote(port, "--yes", provider="openai-responses")
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev), p.stderr))
    reqs = bodies(log)
    check([r["path"] for r in reqs] == ["/v1/responses"] * 2, [r["path"] for r in reqs])
    check(not any(r.get("refused") for r in reqs), [r.get("refused") for r in reqs])
    b = reqs[0]["body"]
    check(b["store"] is False and b["include"] == ["reasoning.encrypted_content"] and
          "instructions" in b and b["tools"][0]["type"] == "function" and "name" in b["tools"][0],
          {k: b.get(k) for k in ("store", "include")})
    kinds = [i.get("type", i.get("role")) for i in items(reqs[1])]
    check(kinds == ["user", "reasoning", "function_call", "function_call_output"], kinds)
    rs = items(reqs[1])[1]
    sig = "".join(r.get("sig", "") for r in reasons(state) if r["fmt"] == "responses")
    check(rs["encrypted_content"] and rs["encrypted_content"] in sig and "id" not in rs, rs)
    check("GPT reasons" in thinking(ev), thinking(ev)[:100])
    ans = [r for r in journal(state) if r["t"] == "assistant"]
    check(ans[-1]["text"] == "Listed." and ans[-1]["stop"] == "end_turn", ans[-1])


def test_responses_chosen_for_models_only_there():
    # gpt-5-codex and gpt-5-pro exist on /v1/responses only: chosen by
    # themselves, on OpenAI's host and on one mote does not know
    port, log = server("openai_responses", [{"text": "from codex"}])
    p = via_host("api.openai.com", port, "-p", "hi", "--model", "gpt-5-codex")
    check(p.returncode == 0, (p.returncode, p.stderr))
    check([r["path"] for r in bodies(log)] == ["/v1/responses"], [r["path"] for r in bodies(log)])
    port, log = server("openai_responses", [{"text": "from pro"}])
    p, ev, _ = mote(port, "--model", "gpt-5-pro", provider="openai")
    check(p.returncode == 0 and [r["path"] for r in bodies(log)] == ["/v1/responses"],
          (p.returncode, [r["path"] for r in bodies(log)]))
    port, log = server("reference", [{"text": "chat"}])
    p, ev, _ = mote(port, "--model", "gpt-4o", provider="openai")
    check([r["path"] for r in bodies(log)] == ["/v1/chat/completions"], "gpt-4o stays on chat")


def test_responses_recorded_streams():
    if not os.path.isdir(SHARED):
        raise Skip("no recordings at %s" % SHARED)
    fc = os.path.join(SHARED, "openai-responses-function-call.sse")
    port, log = server("reference", [{"replay": fc, "names": {"weather": "list_dir"}},
                                     {"replay": os.path.join(SHARED, "openai-responses-text.sse")}])
    p, ev, state = mote(port, "--yes", provider="openai-responses")
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev), p.stderr))
    calls = [c for r in journal(state) if r["t"] == "assistant" for c in r.get("calls", [])]
    check(calls == [{"id": "call_nYgMM3oZuxort2H8Ky4uP5RE", "name": "list_dir",
                     "input": {"location": "Florence, Italy"}}], calls)
    ans = [r for r in journal(state) if r["t"] == "assistant"]
    with open(os.path.join(SHARED, "openai-responses-text.sse")) as f:
        want = "".join(json.loads(l[6:])["delta"] for l in f if l.startswith("data: ") and
                       '"response.output_text.delta"' in l)
    check(ans[-1]["text"] == want and ans[-1]["usage"]["output_tokens"] > 0, (ans[-1], want))


def test_responses_errors_and_overflow():
    port, log = server("openai_responses", [{"status": 429, "message": "Rate limit reached",
                                             "code": "rate_limit_exceeded"}] * 8)
    p, ev, _ = mote(port, provider="openai-responses")
    check(errors(ev) and errors(ev)[-1]["code"] == "rate_limit" and
          "Rate limit reached" in errors(ev)[-1]["message"], errors(ev))
    port, log = server("openai_responses", [{"text": "x", "error_event": "server_error"}])
    p, ev, _ = mote(port, provider="openai-responses")
    check(errors(ev) and "scripted server_error" in errors(ev)[-1]["message"], errors(ev))
    port, log = server("openai_responses", [SEQ], extra=["--ctx", "1500"])
    p, ev, state = mote(port, "--yes", provider="openai-responses")
    check(p.returncode == 0 and not errors(ev), (p.returncode, errors(ev)))
    check(any(r["t"] == "compact" for r in journal(state)), "compacted")


FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")


def test_journal_of_the_mote_before_reasoning_opens():
    # A conversation journaled by the mote before reasoning was kept (format
    # 2: a tool round, a long answer in text records) opens and goes on; its
    # history goes into the next request as it was.
    state = tempfile.mkdtemp(dir=TMP)
    d = os.path.join(state, "conversations")
    os.makedirs(d, mode=0o700)
    with open(os.path.join(FIXTURES, "journal-v2-before-reasoning.jsonl")) as f:
        old = f.read()
    cid = json.loads(old.splitlines()[0])["id"]
    with open(os.path.join(d, cid + ".jsonl"), "w") as f:
        f.write(old)
    os.chmod(os.path.join(d, cid + ".jsonl"), 0o600)
    with open(os.path.join(state, "current"), "w") as f:
        f.write(cid + "\n")
    port, log = start_server([{"text": "Still here."}])
    p, ev, _ = mote(port, "--continue", provider="anthropic", state=state, prompt="and now?")
    check(p.returncode == 0, (p.returncode, p.stderr))
    body = bodies(log)[0]["body"]
    kinds = [(m["role"], [b["type"] for b in m["content"]]) for m in body["messages"]]
    check(kinds == [("user", ["text"]), ("assistant", ["text", "tool_use"]),
                    ("user", ["tool_result"]), ("assistant", ["text"]), ("user", ["text"])],
          kinds)
    check(body["messages"][3]["content"][0]["text"].startswith("The folder holds"), body)
    with open(os.path.join(d, cid + ".jsonl")) as f:
        now = f.read()
    check(now.startswith(old) and "Still here." in now, now[-300:])


def main():
    if not os.path.exists(MOTE):
        print("missing " + MOTE)
        return 1
    return run_all("providers", globals())


if __name__ == "__main__":
    sys.exit(main())
