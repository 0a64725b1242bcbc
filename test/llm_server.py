#!/usr/bin/env python3
"""A scriptable local LLM server for mote's tests and `make demo`.

Speaks the Anthropic Messages stream (POST .../messages) and the OpenAI
chat-completions stream (POST .../chat/completions) over HTTP or HTTPS on
loopback. Python standard library only.

Each request takes the next step of the script (a JSON list); when the
script is used up, the server answers by itself: after a tool result it
reports what the tool returned, else it echoes the user's last message.

Steps:
  {"text": "..."}                               a streamed answer
  {"tool": "NAME", "input": {...}, "text": ""}  a tool call (text before it optional)
  {"tools": [{"tool": ..., "input": ...}, ...]} parallel tool calls
  {"status": 429, "retry_after": 1, "body": {...}}  an HTTP error
  {"error_event": "overloaded_error", "after_text": ""}  an error event after HTTP 200
  {"stall": SECONDS, "after_text": "..."}       stop sending mid-stream
  {"stall_headers": SECONDS}                    accept, then say nothing
  {"reset": true}                               close without a response
  {"truncate": true, "text": "..."}             end the stream without its end event
  {"long_line": BYTES}                          one data line of BYTES bytes
  {"delay_ms": N, ...}                          wait N ms between events
  {"wait_file": PATH, ...}                      answer only once PATH exists (at most 120 s)
  {"stop": "max_tokens", ...}                   this stop reason (OpenAI: finish_reason)
  {"input_tokens": N, ...}                      the usage reported for the request
  {"cache_read": N, "cache_write": M, ...}      cached input tokens in the usage
  {"refusal": "..."}                            OpenAI: a refusal instead of content
  {"cut_input": true, "tool": ...}              Anthropic: the tool input stops half way
  {"raw_body": "...", "content_type": "text/html"}  HTTP 200 with this body (not a stream)
  {"slow_headers_ms": N}                        response headers a byte every N ms, never ending
  {"slow_event_ms": N}                          one event a byte every N ms, never ending
  {"tool": ..., "raw_input": ""}                the tool input's JSON text as sent (may be empty)
  {"error_event": ..., "error_code": "..."}      OpenAI: the error's code too
  {"flood_pings": SECONDS}                      SSE pings as fast as possible, then close
  {"ping_forever": SECONDS}                     one SSE ping a second, nothing else
  {"tools": [{"tool": ..., "id": "..."}]}       a call with this id (default: unique)
  {"reset": "rst"}                              close with a reset (RST) instead of a FIN
  {"close_before_body": true}                   read the request's head, then reset the
                                                connection without reading its body
  {..., "close": true}                          answer, then close (no "connection: close")
  {..., "headers": {"connection": "close"}}     more response headers (a streamed answer)
  {"events": [OBJ, ...]}                        these events as they are (Anthropic: each
                                                object's "type" is its event name; OpenAI:
                                                "data: OBJ", a string as it is, "[DONE]")
  {"replay": PATH, "names": {"old": "new"}}     serve a recorded SSE stream as it is (tool
                                                names in it mapped, a missing final blank
                                                line added)
  {"status": N, "message": "..."}               an error as the --profile's provider writes it
  {"status": N, "body_text": "...", "content_type": "text/html"}  an error body as it is
  {"no_done": true, ...}                        OpenAI: no [DONE] after the finish_reason

--profile NAME makes the server behave as one provider does (test/llm_profiles.py:
the shape of its errors, what it refuses, how it streams).

Every request body is first checked against the rules the real APIs
enforce (check_body below; --no-rules or MOTE_LLM_RULES=off turns this
off): a body that breaks one is answered as the API answers it, HTTP 400
with the API's own error JSON, and takes no step of the script. Each
checked body is one line in --checks-file (default $MOTE_LLM_CHECKS), so
a run can say how many bodies were checked and that none broke a rule.

Connections are kept alive as HTTP/1.1 servers keep them: a response that
ends properly (Content-Length, the chunked body's last chunk) leaves the
connection open for the next request, unless the client asked to close,
the step stalls or floods, or --no-keep-alive. --idle-close MIN[:MAX]
closes a connection idle for MIN ms (a random time between MIN and MAX:
closes at random moments); --race P drops a request that comes on a kept
connection with chance P, closing the connection unanswered (as a server
that closed it just as the request went out; the log says "dropped").

Every request is appended to --log as one JSON line (path, headers, body,
and the connection: "conn" its number, "conn_req" the request's number
on it, "tls_reused" whether its TLS session was resumed, "alpn" the
protocol chosen with ALPN, "refused" the rule it broke). The chosen port is written to --port-file
once listening.
"""
import argparse
import json
import os
import random
import re
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llm_profiles import PROFILES, Rejection  # noqa: E402

LOCK = threading.RLock()  # (re-entered: conn_fields inside a logging block)
STATE = {"script": [], "next": 0, "log": None, "count": 0, "rules": True, "checks": None,
         "conns": 0, "keep_alive": True, "idle_close": None, "tls": None, "race": 0.0,
         "rng": random.Random(1), "profile": PROFILES["reference"], "ctx": 0}


# ---- the APIs' own rules ------------------------------------------------------
#
# What the real APIs refuse with HTTP 400, as they say it. The messages are
# the APIs' own words, as quoted in public bug reports and SDK sources:
#   Anthropic (https://api.anthropic.com/v1/messages):
#   - "messages: text content blocks must be non-empty" (anthropics/claude-code
#     #59812) and "... must contain non-whitespace text" (claude-code #23440,
#     anomalyco/opencode #31259);
#   - "Requests which include `tool_use` or `tool_result` blocks must define
#     tools." (quoted in several projects' comments and test servers; the
#     Bedrock twin: langgenius/dify #17545);
#   - "content cannot be empty if `is_error` is true" (the wording issue 23
#     quotes; no public report was found to give its location prefix);
#   - "messages: final assistant content cannot end with trailing whitespace"
#     (tailcallhq/forgecode #1872, anomalyco/opencode #1295);
#   - "messages.N: `tool_use` ids were found without `tool_result` blocks
#     immediately after: ID. Each `tool_use` block must have a corresponding
#     `tool_result` block in the next message." (claude-code #3512, #1577),
#     "messages.N.content.K: unexpected `tool_use_id` found in `tool_result`
#     blocks: ID. Each `tool_result` block must have a corresponding
#     `tool_use` block in the previous message." (router-for-me/CLIProxyAPI
#     #497), "Did not find N `tool_result` block(s) at the beginning of this
#     message. Messages following `tool_use` blocks must begin with a
#     matching number of `tool_result` blocks." (claude-code #37; the
#     tool-use guide says the results come first in that message);
#   - "messages.N.content.K: `tool_use` ids must be unique" (claude-code
#     #20901, #28515) and "...tool_use.id: String should match pattern
#     '^[a-zA-Z0-9_-]+$'" (anomalyco/opencode #1279);
#   - "A maximum of 4 blocks with cache_control may be provided. Found 5."
#     (tghamm/Anthropic.SDK #50);
#   - "tools.N.custom.name: String should match pattern
#     '^[a-zA-Z0-9_-]{1,64}$'" (apify/tester-mcp-client #11);
#   - "The request body is not valid JSON: no low surrogate in string: line 1
#     column C (char C-1)" (claude-code #1939, #6273); the API's JSON reader
#     (yyjson-like, as orjson's decoder) also says "invalid high surrogate"
#     for a lone low half (claude-code #6199) and "invalid low surrogate"
#     for a high half followed by another escape;
#   - "messages.N: all messages must have non-empty content except for the
#     optional final assistant message" (claude-code #3196, #6774);
#   - roles: the Messages API reference (MessageParam in the SDKs' types)
#     says "Consecutive `user` or `assistant` turns in your request will be
#     combined into a single turn", so two messages of one role in a row are
#     merged here too (the tool checks run on the merged turns) and are not
#     an error. The first message must be the user's: 'messages: first
#     message must use the "user" role' (lobehub #1601; Anthropic's own API
#     has accepted an assistant first since late 2024 while Bedrock still
#     refuses it, anthropic-sdk-typescript #622: the stricter rule is kept).
#   OpenAI chat completions (https://api.openai.com/v1/chat/completions):
#   - "An assistant message with 'tool_calls' must be followed by tool
#     messages responding to each 'tool_call_id'. The following
#     tool_call_ids did not have response messages: ID" (BerriAI/litellm
#     #10083, agno-agi/agno #3105), param "messages.[N].role";
#   - "Invalid parameter: messages with role 'tool' must be a response to a
#     preceeding message with 'tool_calls'." (miurla/morphic #136; the typo
#     is OpenAI's), param "messages.[N].role";
#   - "Invalid parameter: Duplicate value for 'tool_call_id' of 'ID', in
#     messages[A] and messages[B]." (agno-agi/agno #5116);
#   - "Invalid 'tools[N].function.name': string does not match pattern.
#     Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'." code
#     "invalid_value" (run-llama/llama_index #16093; the same for
#     messages[N].tool_calls[K].function.name, mcp-use/mcp-use #90), and at
#     most 64 characters ("string too long", 5ire #33 for the wording);
#   - a body that is not strict JSON (a lone surrogate escape included, as
#     strict servers such as DeepSeek's refuse it:
#     JohnnyZ93/oai-compatible-copilot #206): "We could not parse the JSON
#     body of your request. ..." (openai/openai-python #257, chatbox #812).
# White space is what Python's str.isspace() calls so (the widest reading).
# Shapes no public report quotes (a role that is neither, content that is
# no list, no messages, a tool_use in a user message) are refused too, in
# words of our own in the API's style.

class Refused(Exception):
    """A body the real API refuses: its message, and OpenAI's param/code."""

    def __init__(self, message, param=None, code=None):
        Exception.__init__(self, message)
        self.message, self.param, self.code = message, param, code


OPENAI_NOT_JSON = ("We could not parse the JSON body of your request. (HINT: This likely means "
                   "you aren't using your HTTP library correctly. The OpenAI API expects a JSON "
                   "payload, but what was sent was not valid JSON. If you have trouble figuring "
                   "out how to fix this, please contact us through our help center at "
                   "help.openai.com.)")
ANTHROPIC_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
OPENAI_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def lone_surrogate(text):
    """(offset, message) of the first \\u escape in JSON text `text` that is a
    lone UTF-16 surrogate, or None. Python's json module takes such escapes;
    the APIs' readers do not."""
    i, n, in_str = 0, len(text), False
    while i < n:
        c = text[i]
        if not in_str or c != "\\":
            if c == '"':
                in_str = not in_str
            i += 1
            continue
        if text[i + 1:i + 2] != "u":
            i += 2
            continue
        try:
            v = int(text[i + 2:i + 6], 16)
        except ValueError:
            return None  # not JSON: the parser says so
        if 0xDC00 <= v <= 0xDFFF:
            return i, "invalid high surrogate in string"
        if 0xD800 <= v <= 0xDBFF:
            if text[i + 6:i + 8] != "\\u":
                return i, "no low surrogate in string"
            try:
                w = int(text[i + 8:i + 12], 16)
            except ValueError:
                return None
            if not 0xDC00 <= w <= 0xDFFF:
                return i, "invalid low surrogate in string"
            i += 12
            continue
        i += 6
    return None


def blank(s):
    return s.strip() == ""


def anthropic_text_block(b, where):
    t = b.get("text")
    if not isinstance(t, str):
        raise Refused("%s.text: Input should be a valid string" % where)
    if t == "":
        raise Refused("messages: text content blocks must be non-empty")
    if blank(t):
        raise Refused("messages: text content blocks must contain non-whitespace text")


def check_anthropic(body):
    """Raises Refused if the Messages API refuses `body`."""
    if not isinstance(body, dict):
        raise Refused("Input should be a valid dictionary")
    marks = 0
    tools = body.get("tools") or []
    for i, t in enumerate(tools):
        if not isinstance(t.get("name"), str) or not ANTHROPIC_TOOL_NAME.match(t["name"]):
            raise Refused("tools.%d.custom.name: String should match pattern "
                          "'^[a-zA-Z0-9_-]{1,64}$'" % i)
        marks += "cache_control" in t
    system = body.get("system")
    if isinstance(system, list):
        for k, b in enumerate(system):
            marks += "cache_control" in b
            t = b.get("text")
            if t == "":
                raise Refused("system: text content blocks must be non-empty")
            if isinstance(t, str) and blank(t):
                raise Refused("system: text content blocks must contain non-whitespace text")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Refused("messages: at least one message is required")
    turns, ids, uses_tools = [], {}, False
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            raise Refused("messages.%d.role: Input should be 'user' or 'assistant'" % i)
        c = m.get("content")
        last = i == len(msgs) - 1 and role == "assistant"
        if isinstance(c, str):
            if c == "" and not last:
                raise Refused("messages.%d: all messages must have non-empty content except for "
                              "the optional final assistant message" % i)
            blocks = [{"type": "text", "text": c}] if c != "" else []
        elif isinstance(c, list):
            if not c and not last:
                raise Refused("messages.%d: all messages must have non-empty content except for "
                              "the optional final assistant message" % i)
            blocks = c
        else:
            raise Refused("messages.%d.content: Input should be a valid list" % i)
        for k, b in enumerate(blocks):
            where = "messages.%d.content.%d" % (i, k)
            marks += "cache_control" in b
            kind = b.get("type")
            if kind == "text":
                anthropic_text_block(b, where)
            elif kind == "tool_use":
                uses_tools = True
                if role != "assistant":
                    raise Refused("%s: tool_use blocks may only appear in assistant messages" % where)
                if not isinstance(b.get("id"), str) or not TOOL_ID.match(b["id"]):
                    raise Refused("%s.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                                  % where)
                if b["id"] in ids:
                    raise Refused("%s: `tool_use` ids must be unique" % where)
                ids[b["id"]] = i
                if not isinstance(b.get("input"), dict):
                    raise Refused("%s.tool_use.input: Input should be a valid dictionary" % where)
            elif kind == "tool_result":
                uses_tools = True
                inner = b.get("content")
                if b.get("is_error") and (inner in (None, "") or inner == []):
                    raise Refused("%s: content cannot be empty if `is_error` is true" % where)
                if isinstance(inner, list):
                    for ib in inner:
                        marks += "cache_control" in ib
                        if ib.get("type") == "text":
                            anthropic_text_block(ib, where)
        if turns and turns[-1][0] == role:
            turns[-1][1].extend((i, k, b) for k, b in enumerate(blocks))
        else:
            turns.append((role, [(i, k, b) for k, b in enumerate(blocks)]))
    if uses_tools and not tools:
        raise Refused("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    if marks > 4:
        raise Refused("A maximum of 4 blocks with cache_control may be provided. Found %d." % marks)
    if turns[0][0] != "user":
        raise Refused('messages: first message must use the "user" role')
    for t, (role, blocks) in enumerate(turns):
        if role == "user":
            prev = [b["id"] for _, _, b in turns[t - 1][1] if b.get("type") == "tool_use"] if t else []
            for i, k, b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev:
                    raise Refused("messages.%d.content.%d: unexpected `tool_use_id` found in "
                                  "`tool_result` blocks: %s. Each `tool_result` block must have a "
                                  "corresponding `tool_use` block in the previous message."
                                  % (i, k, b.get("tool_use_id")))
            continue
        uses = [(i, b["id"]) for i, _, b in blocks if b.get("type") == "tool_use"]
        if not uses:
            continue
        nxt = turns[t + 1][1] if t + 1 < len(turns) else []
        answered = [b.get("tool_use_id") for _, _, b in nxt if b.get("type") == "tool_result"]
        missing = [u for _, u in uses if u not in answered]
        if missing:
            raise Refused("messages.%d: `tool_use` ids were found without `tool_result` blocks "
                          "immediately after: %s. Each `tool_use` block must have a corresponding "
                          "`tool_result` block in the next message." % (uses[-1][0], ", ".join(missing)))
        lead = 0
        while lead < len(nxt) and nxt[lead][2].get("type") == "tool_result":
            lead += 1
        if lead < len(uses):
            raise Refused("messages.%d: Did not find %d `tool_result` block(s) at the beginning of "
                          "this message. Messages following `tool_use` blocks must begin with a "
                          "matching number of `tool_result` blocks." % (nxt[0][0], len(uses)))
    role, blocks = turns[-1]
    if role == "assistant" and blocks and blocks[-1][2].get("type") == "text":
        text = blocks[-1][2]["text"]
        if text != text.rstrip():
            raise Refused("messages: final assistant content cannot end with trailing whitespace")


def openai_name(name, param):
    if not isinstance(name, str) or not OPENAI_TOOL_NAME.match(name):
        raise Refused("Invalid '%s': string does not match pattern. Expected a string that matches "
                      "the pattern '^[a-zA-Z0-9_-]+$'." % param, param, "invalid_value")
    if len(name) > 64:
        raise Refused("Invalid '%s': string too long. Expected a string with maximum length 64, "
                      "but got a string with length %d instead." % (param, len(name)), param,
                      "string_above_max_length")


def check_openai(body):
    """Raises Refused if chat completions refuses `body`."""
    if not isinstance(body, dict):
        raise Refused(OPENAI_NOT_JSON)
    for i, t in enumerate(body.get("tools") or []):
        openai_name((t.get("function") or {}).get("name"), "tools[%d].function.name" % i)
    calls, answers, waiting, asked_at = {}, {}, [], None
    for i, m in enumerate(body.get("messages") or []):
        role = m.get("role")
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid in answers:
                raise Refused("Invalid parameter: Duplicate value for 'tool_call_id' of '%s', in "
                              "messages[%d] and messages[%d]." % (tid, answers[tid], i),
                              "messages.[%d].tool_call_id" % i)
            if tid not in waiting:
                raise Refused("Invalid parameter: messages with role 'tool' must be a response to a "
                              "preceeding message with 'tool_calls'.", "messages.[%d].role" % i)
            answers[tid] = i
            waiting.remove(tid)
            continue
        if waiting:
            break
        waiting = []
        if role == "assistant":
            for k, c in enumerate(m.get("tool_calls") or []):
                cid = c.get("id")
                openai_name((c.get("function") or {}).get("name"),
                            "messages[%d].tool_calls[%d].function.name" % (i, k))
                if cid in calls:
                    raise Refused("Invalid parameter: Duplicate value for 'tool_calls.id' of '%s', "
                                  "in messages[%d] and messages[%d]." % (cid, calls[cid], i),
                                  "messages.[%d].tool_calls" % i)
                calls[cid] = i
                waiting.append(cid)
            asked_at = i
    if waiting:
        raise Refused("An assistant message with 'tool_calls' must be followed by tool messages "
                      "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                      "response messages: %s" % ", ".join(waiting), "messages.[%d].role" % asked_at)


RESPONSES_NOT_FOUND = ("Item with id '%s' not found. Items are not persisted when `store` is set "
                       "to false. Try again with `store` set to true, or remove this item from "
                       "your input.")


def check_responses(body):
    """Raises Refused if the Responses API refuses `body` (the rules of
    chat completions for calls and their outputs, in its words for items;
    with store false an item naming a server id is refused: vercel/ai
    #7543, continuedev/continue #9101)."""
    if not isinstance(body, dict) or not isinstance(body.get("input"), list):
        raise Refused("Invalid type for 'input': expected an array.", "input", "invalid_type")
    for i, t in enumerate(body.get("tools") or []):
        if "function" in t or not isinstance(t.get("name"), str):
            raise Refused("Missing required parameter: 'tools[%d].name'." % i, "tools[%d].name" % i,
                          "missing_required_parameter")
        openai_name(t["name"], "tools[%d].name" % i)
    calls, answered = {}, set()
    for i, it in enumerate(body["input"]):
        if body.get("store") is False and isinstance(it.get("id"), str):
            raise Refused(RESPONSES_NOT_FOUND % it["id"], "input", None)
        kind = it.get("type", "message")
        if kind == "function_call":
            if it.get("call_id") in calls:
                raise Refused("Duplicate value for 'call_id' of '%s' in 'input'." % it.get("call_id"),
                              "input", "duplicate_value")
            openai_name(it.get("name"), "input[%d].name" % i)
            calls[it.get("call_id")] = i
        elif kind == "function_call_output":
            if it.get("call_id") not in calls:
                raise Refused("No tool call found for function call output with call_id %s."
                              % it.get("call_id"), "input", None)
            answered.add(it.get("call_id"))
        elif kind == "reasoning":
            if body.get("store") is False and not it.get("encrypted_content"):
                raise Refused("Reasoning items need their encrypted_content when `store` is "
                              "false.", "input", None)
    waiting = [c for c in calls if c not in answered]
    if waiting:
        raise Refused("No tool output found for function call %s." % waiting[0], "input", None)


def check_body(raw, dialect):
    """None if the real API takes request body `raw` (bytes), else Refused."""
    anthropic = dialect == "anthropic"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return Refused("The request body is not valid JSON: %s" % e if anthropic else OPENAI_NOT_JSON)
    lone = lone_surrogate(text)
    if lone is not None:
        at, what = lone
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        return Refused("The request body is not valid JSON: %s: line %d column %d (char %d)"
                       % (what, line, col, at) if anthropic else OPENAI_NOT_JSON)

    def no_constants(name):
        raise ValueError("%s is not JSON" % name)

    try:
        body = json.loads(text, parse_constant=no_constants)
    except ValueError as e:
        return Refused("The request body is not valid JSON: %s" % e if anthropic else OPENAI_NOT_JSON)
    try:
        (check_anthropic if anthropic else check_responses if dialect == "responses"
         else check_openai)(body)
    except Refused as r:
        return r
    except (AttributeError, TypeError, KeyError) as e:  # a shape no rule above expected
        return Refused("invalid request: %r" % e)
    return None


def note_check(dialect, refused):
    """One line per checked body in the checks file (when one is given)."""
    if not STATE["checks"]:
        return
    line = json.dumps({"dialect": dialect, "refused": refused.message if refused else None}) + "\n"
    fd = os.open(STATE["checks"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def next_step():
    with LOCK:
        STATE["count"] += 1
        if STATE["next"] < len(STATE["script"]):
            step = STATE["script"][STATE["next"]]
            STATE["next"] += 1
            return step
    return None


def peek_step():
    with LOCK:
        if STATE["next"] < len(STATE["script"]):
            return STATE["script"][STATE["next"]]
    return None


# ---- connections: numbering, keep-alive, scripted and random closes ----

def conn_fields(h):
    """What the log says of the request's connection (numbers it on its
    first request)."""
    if not hasattr(h, "conn_no"):
        with LOCK:
            STATE["conns"] += 1
            h.conn_no = STATE["conns"]
        h.conn_reqs = 0
    h.conn_reqs += 1
    tls = h.connection if isinstance(h.connection, ssl.SSLSocket) else None
    return {"conn": h.conn_no, "conn_req": h.conn_reqs,
            "tls_reused": tls.session_reused if tls else None,
            "alpn": tls.selected_alpn_protocol() if tls else None}


def keeps(step):
    """Whether the connection stays open after this step's answer."""
    return STATE["keep_alive"] and not step.get("close")


def reset(sock):
    """Closes with a reset (SO_LINGER 0), not a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def early_close(h):
    """A close_before_body step, or a request --race drops: the head was
    read, the body never is, nothing is answered."""
    step = peek_step()
    kept = getattr(h, "conn_reqs", 0) > 0
    with LOCK:
        drop = kept and STATE["race"] > 0 and STATE["rng"].random() < STATE["race"]
        fin = drop and STATE["rng"].random() < 0.5
    if not drop and (not step or not step.get("close_before_body")):
        return False
    if not drop:
        next_step()
    if STATE["log"]:
        with LOCK, open(STATE["log"], "a") as f:
            f.write(json.dumps(dict({"path": h.path, "dropped" if drop else "closed_before_body": True},
                                    **conn_fields(h))) + "\n")
    h.close_connection = True
    if fin:
        h.connection.shutdown(socket.SHUT_RDWR)
    else:
        reset(h.connection)
    return True


def arm_idle_close(h):
    """With --idle-close: the connection is closed if the next request
    does not begin in time (http.server ends it on the read's timeout)."""
    if STATE["idle_close"] and not h.close_connection:
        lo, hi = STATE["idle_close"]
        with LOCK:
            t = STATE["rng"].uniform(lo, hi)
        h.connection.settimeout(t / 1000.0)


def last_user_text(body, dialect):
    """The last user message's text, or the last tool result's."""
    if dialect == "responses":
        for it in reversed(body.get("input") or []):
            if it.get("type") == "function_call_output":
                return "tool", str(it.get("output", ""))
            if it.get("role") == "user":
                c = it.get("content")
                return "user", c if isinstance(c, str) else "".join(
                    x.get("text", "") for x in c or [])
        return "user", ""
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if dialect == "openai" and m.get("role") == "tool":
            return "tool", str(m.get("content", ""))
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return "user", c
        for blk in reversed(c or []):
            if blk.get("type") == "tool_result":
                content = blk.get("content")
                if isinstance(content, list):
                    content = "".join(x.get("text", "") for x in content)
                return "tool", str(content)
            if blk.get("type") == "text":
                return "user", blk.get("text", "")
    return "user", ""


def auto_step(body, dialect):
    kind, text = last_user_text(body, dialect)
    if kind == "tool":
        first = text.strip().splitlines()[0] if text.strip() else "(no output)"
        return {"text": "The tool returned: " + first[:200]}
    return {"text": "You said: " + text}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def trickle(self, data, ms):
        """`data` a byte every `ms` milliseconds (a slow server), until it
        is all out or the client left; then the connection closes."""
        try:
            for b in data:
                self.send_raw(bytes([b]))
                time.sleep(ms / 1000.0)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass
        self.close_connection = True

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.send_raw(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunks(self):
        self.send_raw(b"0\r\n\r\n")

    def do_POST(self):
        if early_close(self):
            return
        self.connection.settimeout(None)
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_invalid": raw.decode(errors="replace")}
        dialect = ("anthropic" if self.path.endswith("/messages") else "responses"
                   if self.path.endswith("/responses") else "openai")
        refused = check_body(raw, dialect) if STATE["rules"] else None
        rej = None
        if STATE["rules"] and refused is None:
            # what this provider refuses besides (--profile)
            rej = STATE["profile"].check(body, dialect)
            if rej is not None:
                refused = Refused(rej.payload.decode(errors="replace"))
        if refused is None and STATE["ctx"] and len(raw) // 4 > STATE["ctx"]:
            # over the model's context window (--ctx): a token is 4 bytes here
            rej = STATE["profile"].overflow(dialect, len(raw) // 4, STATE["ctx"])
            refused = Refused(rej.payload.decode(errors="replace"))
        if STATE["rules"]:
            note_check(dialect, refused)
        if STATE["log"]:
            with LOCK, open(STATE["log"], "a") as f:
                f.write(json.dumps({"path": self.path, "dialect": dialect,
                                    "headers": {k.lower(): v for k, v in self.headers.items()},
                                    "body": body, "raw": raw.decode(errors="replace"),
                                    "refused": refused.message if refused else None,
                                    **conn_fields(self)})
                        + "\n")
        if rej is not None:
            self.reject(rej)
            return
        if refused is not None:
            self.refuse(refused, dialect)
            return
        step = next_step() or auto_step(body, dialect)
        if step.get("wait_file"):
            # held until the test creates the file (bounded): something
            # happens meanwhile, at a known point of the turn
            deadline = time.time() + 120
            while not os.path.exists(step["wait_file"]) and time.time() < deadline:
                time.sleep(0.02)
        self.serve(step, dialect, body)
        arm_idle_close(self)

    def refuse(self, r, dialect):
        """HTTP 400 with the API's own error body (the profile's shape)."""
        if dialect == "anthropic":
            err = {"type": "error", "error": {"type": "invalid_request_error", "message": r.message},
                   "request_id": "req_test_refused"}
            self.reject(Rejection(400, "application/json", json.dumps(err).encode()))
            return
        self.reject(Rejection(*STATE["profile"].error(400, r.message, "invalid_request_error",
                                                      r.param, r.code)))

    def reject(self, rej, retry_after=None):
        """An error response: status, content type and body as given."""
        self.send_response(rej.status)
        if retry_after is not None:
            self.send_header("retry-after", str(retry_after))
        self.send_header("content-type", rej.content_type)
        self.send_header("content-length", str(len(rej.payload)))
        self.end_headers()
        self.send_raw(rej.payload)

    def serve(self, step, dialect, body):
        if step.get("reset") == "rst":
            self.close_connection = True
            reset(self.connection)
            return
        if step.get("reset"):
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if "stall_headers" in step:
            time.sleep(step["stall_headers"])
            self.close_connection = True
            return
        if "slow_headers_ms" in step:
            # The status line and headers a byte at a time, never ending.
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" + b"x-pad: " + b"p" * 4096
            self.trickle(head, step["slow_headers_ms"])
            return
        if "slow_event_ms" in step:
            # Headers, then one event a byte at a time that never completes.
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.trickle(b"event: ping\ndata: {\"type\": \"ping\"" + b" " * 100000,
                         step["slow_event_ms"])
            return
        if "replay" in step:
            self.replay(step)
            return
        if "events" in step:
            self.events(step["events"], dialect)
            return
        if "raw_body" in step:
            payload = step["raw_body"].encode()
            self.send_response(200)
            self.send_header("content-type", step.get("content_type", "text/html"))
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.send_raw(payload)
            self.close_connection = self.close_connection or not keeps(step)
            return
        if "status" in step and ("message" in step or "body_text" in step):
            # an error as the profile writes it, or a body of plain text
            if "body_text" in step:
                rej = Rejection(step["status"], step.get("content_type", "text/plain"),
                                step["body_text"].encode())
            else:
                rej = Rejection(*STATE["profile"].error(step["status"], step["message"],
                                                        step.get("kind", "invalid_request_error"),
                                                        None, step.get("code")))
            self.reject(rej, step.get("retry_after"))
            self.close_connection = self.close_connection or not keeps(step)
            return
        if "status" in step:
            payload = json.dumps(step.get("body") or {
                "type": "error", "error": {"type": "rate_limit_error" if step["status"] == 429
                                           else "api_error", "message": "scripted %d" % step["status"]}}).encode()
            self.send_response(step["status"])
            if "retry_after" in step:
                self.send_header("retry-after", str(step["retry_after"]))
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.send_raw(payload)
            self.close_connection = self.close_connection or not keeps(step)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        for k, v in step.get("headers", {}).items():
            self.send_header(k, v)  # ("connection: close" closes after the answer)
        self.end_headers()
        self.close_connection = self.close_connection or not keeps(step) or "stall" in step
        delay = step.get("delay_ms", 0) / 1000.0
        if "ping_forever" in step:
            self.close_connection = True
            # one SSE ping a second, for the given seconds or until the
            # client goes away: a stream that is alive but never answers
            end = time.time() + step["ping_forever"]
            try:
                while time.time() < end:
                    self.chunk(sse("ping", {"type": "ping"}))
                    time.sleep(1)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                pass
            return
        if "flood_pings" in step:
            self.close_connection = True
            # SSE pings as fast as the socket takes them (100 KB a write),
            # for the given seconds or until the client goes away
            burst = sse("ping", {"type": "ping"}) * 3000
            end = time.time() + step["flood_pings"]
            try:
                while time.time() < end:
                    self.chunk(burst)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                pass
            return
        events = (anthropic_events if dialect == "anthropic" else responses_events
                  if dialect == "responses" else openai_events)(step, body)
        try:
            for ev in events:
                if isinstance(ev, tuple) and ev[0] == "STALL":
                    time.sleep(ev[1])
                    return
                if isinstance(ev, tuple) and ev[0] == "END":
                    self.end_chunks()
                    return
                self.chunk(ev)
                if delay:
                    time.sleep(delay)
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass


    def send_stream(self, pieces):
        """A chunked event stream of exactly `pieces`; then the connection
        closes (a client going away meanwhile ends it quietly)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            for piece in pieces:
                self.chunk(piece)
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass

    def events(self, events, dialect):
        """A stream made of exactly these events."""
        def piece(ev):
            if isinstance(ev, str):
                return "data: %s\n\n" % ev
            return sse(ev.get("type") if dialect in ("anthropic", "responses") else None, ev)
        self.send_stream(piece(ev) for ev in events)

    def replay(self, step):
        """A recorded stream as it was sent, in pieces that fall anywhere."""
        with open(step["replay"], "rb") as f:
            data = f.read()
        for old, new in (step.get("names") or {}).items():
            for sep in (b'":"', b'": "'):
                data = data.replace(b'"name' + sep + old.encode() + b'"',
                                    b'"name' + sep + new.encode() + b'"')
        # Some recordings end without the blank line that completes their
        # last event (fixtures/SOURCES.md): the stream as the API sent it.
        if not data.endswith(b"\n\n") and not data.endswith(b"\r\n\r\n"):
            data += b"\n" if data.endswith(b"\n") else b"\n\n"
        self.send_stream(data[i:i + 997] for i in range(0, len(data), 997))


def sse(event, data):
    if event:
        return "event: %s\ndata: %s\n\n" % (event, json.dumps(data))
    return "data: %s\n\n" % json.dumps(data)


def words(text):
    out, cur = [], ""
    for ch in text:
        cur += ch
        if ch == " ":
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def tool_list(step):
    if "tools" in step:
        return step["tools"]
    if "tool" in step:
        c = {"tool": step["tool"], "input": step.get("input", {})}
        if "raw_input" in step:
            c["raw_input"] = step["raw_input"]
        return [c]
    return []


def stall_or_error(step):
    """An Anthropic stream's scripted end at this point, if any: a stall
    (it hangs there) or an error event (it ends on it)."""
    if "stall" in step:
        yield ("STALL", step["stall"])
    if "error_event" in step:
        yield "event: error\ndata: %s\n\n" % json.dumps({"type": "error", "error": {
            "type": step["error_event"], "message": "scripted " + step["error_event"]}})
        yield ("END",)


def anthropic_events(step, body):
    yield sse("message_start", {"type": "message_start", "message": {
        "id": "msg_test", "type": "message", "role": "assistant", "content": [],
        "model": body.get("model", "test"), "stop_reason": None,
        "usage": dict({"input_tokens": step.get("input_tokens", 12), "output_tokens": 1},
                      **({"cache_read_input_tokens": step["cache_read"],
                          "cache_creation_input_tokens": step.get("cache_write", 0)}
                         if "cache_read" in step else {}))}})
    text = step.get("text", step.get("after_text", ""))
    idx = 0
    if "long_line" in step:
        text = "x" * step["long_line"]
    # The provider's thinking blocks first (--profile anthropic_thinking, or
    # "thinking" in the request), each signed; a "redacted" step adds a
    # redacted_thinking block.
    for kind, payload in STATE["profile"].thinking_blocks(step, body):
        if kind == "redacted":
            yield sse("content_block_start", {"type": "content_block_start", "index": idx,
                                              "content_block": {"type": "redacted_thinking",
                                                                "data": payload}})
        else:
            thought, sig = payload
            yield sse("content_block_start", {"type": "content_block_start", "index": idx,
                                              "content_block": {"type": "thinking",
                                                                "thinking": "", "signature": ""}})
            for w in words(thought):
                yield sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                                  "delta": {"type": "thinking_delta",
                                                            "thinking": w}})
            yield sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                              "delta": {"type": "signature_delta",
                                                        "signature": sig}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": idx})
        idx += 1
    t0 = idx
    if text:
        yield sse("content_block_start", {"type": "content_block_start", "index": t0,
                                          "content_block": {"type": "text", "text": ""}})
        yield sse("ping", {"type": "ping"})
        pieces = [text] if "long_line" in step else words(text)
        for w in pieces:
            yield sse("content_block_delta", {"type": "content_block_delta", "index": t0,
                                              "delta": {"type": "text_delta", "text": w}})
        yield from stall_or_error(step)
        yield sse("content_block_stop", {"type": "content_block_stop", "index": t0})
        idx = t0 + 1
    else:
        yield from stall_or_error(step)
    for n, call in enumerate(tool_list(step)):
        args = call["raw_input"] if "raw_input" in call else json.dumps(call.get("input", {}))
        if step.get("cut_input"):
            args = args[:len(args) // 2]  # the token limit struck inside it
        yield sse("content_block_start", {"type": "content_block_start", "index": idx, "content_block": {
            "type": "tool_use", "id": call.get("id", "toolu_%d_%d" % (STATE["count"], n)),
            "name": call["tool"], "input": {}}})
        for i in range(0, len(args), 7):
            yield sse("content_block_delta", {"type": "content_block_delta", "index": idx,
                                              "delta": {"type": "input_json_delta", "partial_json": args[i:i + 7]}})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": idx})
        idx += 1
    stop = step.get("stop") or ("tool_use" if tool_list(step) else "end_turn")
    yield sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                "usage": {"output_tokens": 5 + len(text) // 4}})
    if step.get("truncate"):
        yield ("END",)
    yield sse("message_stop", {"type": "message_stop"})


def openai_events(step, body):
    base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": body.get("model", "t")}

    def chunk(delta, finish=None):
        d = dict(base)
        d["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return "data: %s\n\n" % json.dumps(d)

    yield chunk({"role": "assistant", "content": ""})
    prof = STATE["profile"]
    reasoning = prof.reasoning(step, body)
    if reasoning:
        for w in words(reasoning):
            yield chunk({prof.REASONING_FIELD: w})
    if "refusal" in step:
        for w in words(step["refusal"]):
            yield chunk({"refusal": w})
    text = step.get("text", step.get("after_text", ""))
    if "long_line" in step:
        text = "x" * step["long_line"]
    pieces = [text] if "long_line" in step else words(text)
    for w in pieces:
        yield chunk({"content": w})
    if "stall" in step:
        yield ("STALL", step["stall"])
    if "error_event" in step:
        err = {"type": step["error_event"], "message": "scripted " + step["error_event"]}
        if "error_code" in step:
            err["code"] = step["error_code"]
        yield "data: %s\n\n" % json.dumps({"error": err})
        yield ("END",)
    calls = tool_list(step)
    for n, call in enumerate(calls):
        args = call["raw_input"] if "raw_input" in call else json.dumps(call.get("input", {}))
        cid = call.get("id") or prof.call_id(call["tool"], n, body) or \
            "call_%d_%d" % (STATE["count"], n)
        at = prof.call_index(n)
        first = {"index": at, "id": cid, "type": "function",
                 "function": {"name": call["tool"], "arguments": ""}}
        if prof.NO_ID:
            del first["id"]
        extra = prof.call_extra(cid, n)
        if extra is not None:
            first["extra_content"] = extra
        yield chunk({"tool_calls": [first]})
        for i in range(0, len(args), 5):
            yield chunk({"tool_calls": [{"index": at, "function": {"arguments": args[i:i + 5]}}]})
    if step.get("truncate"):
        yield ("END",)  # cut before the finish_reason: the stream is incomplete
    yield chunk({}, step.get("stop") or ("tool_calls" if calls else "stop"))
    u = dict(base)
    u["choices"] = []
    u["usage"] = {"prompt_tokens": step.get("input_tokens", 12) + step.get("cache_read", 0),
                  "completion_tokens": 5 + len(text) // 4, "total_tokens": 0}
    if "cache_read" in step:
        u["usage"]["prompt_tokens_details"] = {"cached_tokens": step["cache_read"]}
    yield "data: %s\n\n" % json.dumps(u)
    if step.get("no_done") or not prof.done:
        yield ("END",)  # the stream ends after the finish_reason, without [DONE]
    yield "data: [DONE]\n\n"


def responses_events(step, body):
    """The Responses API's stream (event names are the types): a reasoning
    item (the profile's; its encrypted_content when the request includes
    it), the message's text deltas, function calls with argument deltas,
    then response.completed (or .incomplete) with the usage."""
    rid = "resp_test_%d" % STATE["count"]
    prof = STATE["profile"]

    def ev(kind, **fields):
        d = dict(fields)
        d["type"] = kind
        return "event: %s\ndata: %s\n\n" % (kind, json.dumps(d))

    yield ev("response.created", response={"id": rid, "status": "in_progress", "output": []})
    yield ev("response.in_progress", response={"id": rid, "status": "in_progress"})
    at = 0
    enc = prof.responses_reasoning(step, body, [c["tool"] for c in tool_list(step)])
    if enc is not None:
        item = {"id": "rs_test_%d" % STATE["count"], "type": "reasoning", "summary": []}
        yield ev("response.output_item.added", item=item, output_index=at)
        summary = enc[0]
        for w in words(summary):
            yield ev("response.reasoning_summary_text.delta", item_id=item["id"], output_index=at,
                     summary_index=0, delta=w)
        done = dict(item, summary=[{"type": "summary_text", "text": summary}])
        if enc[1] is not None:
            done["encrypted_content"] = enc[1]
        yield ev("response.output_item.done", item=done, output_index=at)
        at += 1
    text = step.get("text", step.get("after_text", ""))
    if text:
        mid = "msg_test_%d" % STATE["count"]
        yield ev("response.output_item.added", output_index=at, item={
            "id": mid, "type": "message", "status": "in_progress", "role": "assistant",
            "content": []})
        for w in words(text):
            yield ev("response.output_text.delta", item_id=mid, output_index=at, content_index=0,
                     delta=w)
        if "stall" in step:
            yield ("STALL", step["stall"])
        if "error_event" in step:
            yield ev("error", code=step.get("error_code", step["error_event"]),
                     message="scripted " + step["error_event"], param=None)
            yield ("END",)
        yield ev("response.output_item.done", output_index=at, item={
            "id": mid, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
        at += 1
    for n, call in enumerate(tool_list(step)):
        args = call["raw_input"] if "raw_input" in call else json.dumps(call.get("input", {}))
        item = {"id": "fc_test_%d_%d" % (STATE["count"], n), "type": "function_call",
                "status": "in_progress", "arguments": "",
                "call_id": call.get("id", "call_%d_%d" % (STATE["count"], n)), "name": call["tool"]}
        prof.responses_call(item["call_id"], enc)
        yield ev("response.output_item.added", item=item, output_index=at)
        for i in range(0, len(args), 6):
            yield ev("response.function_call_arguments.delta", item_id=item["id"],
                     output_index=at, delta=args[i:i + 6])
        yield ev("response.function_call_arguments.done", item_id=item["id"], output_index=at,
                 arguments=args)
        yield ev("response.output_item.done", output_index=at,
                 item=dict(item, status="completed", arguments=args))
        at += 1
    if step.get("truncate"):
        yield ("END",)
    usage = {"input_tokens": step.get("input_tokens", 12) + step.get("cache_read", 0),
             "input_tokens_details": {"cached_tokens": step.get("cache_read", 0)},
             "output_tokens": 5 + len(text) // 4, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 0}
    if step.get("stop") == "max_tokens":
        yield ev("response.incomplete", response={
            "id": rid, "status": "incomplete", "usage": usage,
            "incomplete_details": {"reason": "max_output_tokens"}})
        return
    yield ev("response.completed", response={"id": rid, "status": "completed", "usage": usage})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def finish_request(self, request, client_address):
        # Small writes go out at once, as production servers send events
        # (with Nagle's algorithm each event after the first of a kept
        # connection waits for the client's delayed acknowledgement).
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        # TLS per connection, in its own thread: a handshake never holds
        # up accept() (a slow client, or a delayed link, would serialise
        # every other one behind it).
        if STATE["tls"] is not None:
            try:
                request = STATE["tls"].wrap_socket(request, server_side=True,
                                                   do_handshake_on_connect=False)
                request.settimeout(30)
                request.do_handshake()
                request.settimeout(None)
            except (ssl.SSLError, OSError):
                try:
                    request.close()
                except OSError:
                    pass
                return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        # A client that refuses the certificate ends with an alert, and one
        # may go away mid-answer: expected in tests, not worth a traceback.
        if isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            return
        super().handle_error(request, client_address)


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--script", help="JSON file with a list of steps")
    ap.add_argument("--log")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--lifetime", type=float, default=600, help="exit after this many seconds")
    ap.add_argument("--no-rules", action="store_true",
                    help="take bodies that break the real APIs' rules (also MOTE_LLM_RULES=off)")
    ap.add_argument("--checks-file", default=os.environ.get("MOTE_LLM_CHECKS"),
                    help="append one line per checked body (default $MOTE_LLM_CHECKS)")
    ap.add_argument("--no-keep-alive", action="store_true", help="close after every response")
    ap.add_argument("--idle-close", help="MIN[:MAX] ms: close a connection idle that long")
    ap.add_argument("--race", type=float, default=0.0,
                    help="the chance that a request on a kept connection finds it closing: "
                         "dropped unread, the connection closed (FIN or RST)")
    ap.add_argument("--seed", type=int, default=1, help="for --idle-close and --race")
    ap.add_argument("--profile", default="reference", choices=sorted(PROFILES),
                    help="behave as this provider does (test/llm_profiles.py)")
    ap.add_argument("--ctx", type=int, default=0,
                    help="the model's context window, tokens (a token is 4 bytes of the body): "
                         "a longer request is refused as the profile's server refuses it")
    a = ap.parse_args()
    STATE["profile"] = PROFILES[a.profile]
    STATE["ctx"] = a.ctx
    STATE["rules"] = not a.no_rules and os.environ.get("MOTE_LLM_RULES", "on") != "off"
    STATE["checks"] = a.checks_file
    STATE["race"] = a.race
    STATE["rng"] = random.Random(a.seed)
    STATE["keep_alive"] = not a.no_keep_alive
    if a.idle_close:
        lo, _, hi = a.idle_close.partition(":")
        STATE["idle_close"] = (float(lo), float(hi or lo))
    if a.script:
        with open(a.script) as f:
            STATE["script"] = json.load(f)
    STATE["log"] = a.log
    cls = Server6 if ":" in a.host else Server
    srv = cls((a.host, a.port), Handler)
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        ctx.set_alpn_protocols(["http/1.1"])
        STATE["tls"] = ctx
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(port))
        os.rename(tmp, a.port_file)
    else:
        print(port, flush=True)
    # Bounded life: a test server never outlives its test run.
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
