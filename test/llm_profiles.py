"""Provider profiles of the test LLM server (llm_server.py --profile NAME).

A device user picks what is cheap, local or allowed, not the reference
API: each profile makes the server behave as one such provider does, as
its documentation and public issue threads describe it (each rule names
its source; test/fixtures/SOURCES.md lists them): the shape of its error
bodies and their status, what it refuses in a request body, and how it
streams (ids, indexes, the end of the stream).

A profile is a class; the server asks it:
  error(status, message, kind, param, code) -> (status, content_type, bytes)
      an error response as this provider writes it
  check(body, dialect) -> None or Rejection
      what it refuses in a request body (after the reference API's rules)
  call_id(name, n, body) -> str or None    the id of the answer's call n
  call_index(n) -> int                      its "index" in the stream
  NO_ID                                     calls come without an id
  done                                      whether the stream ends with [DONE]
"""
import base64
import json
import re
import threading


class Rejection(Exception):
    """A request the provider refuses: the response it sends."""

    def __init__(self, status, content_type, payload):
        Exception.__init__(self, payload)
        self.status, self.content_type, self.payload = status, content_type, payload


def openai_error(status, message, kind="invalid_request_error", param=None, code=None):
    return (status, "application/json", json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}).encode())


class Reference:
    """The reference APIs (no profile): errors as OpenAI writes them."""
    name = "reference"
    done = True
    NO_ID = False

    def error(self, status, message, kind="invalid_request_error", param=None, code=None):
        return openai_error(status, message, kind, param, code)

    def check(self, body, dialect):
        return None

    def call_id(self, name, n, body):
        return None

    def call_index(self, n):
        return n

    # reasoning
    REASONING_FIELD = "reasoning_content"

    def reasoning(self, step, body):
        """The reasoning streamed before the answer (OpenAI dialect), or None."""
        return step.get("reasoning")

    def call_extra(self, cid, n):
        """A call's extra_content, or None."""
        return None

    def thinking_blocks(self, step, body):
        """Anthropic: [("thinking", (text, signature)) | ("redacted", data)]."""
        return []

    def responses_reasoning(self, step, body, tools):
        """Responses: (summary, encrypted_content or None) of the answer's
        reasoning item, or None for none."""
        return None

    def responses_call(self, call_id, reasoning):
        """Responses: a call made after `reasoning` (or None)."""

    def overflow(self, dialect, used, n_ctx):
        """The refusal of a request of `used` tokens over a window of n_ctx
        (llm_server.py --ctx): OpenAI's context_length_exceeded (its
        documented error code; the message as the API words it), or
        Anthropic's "prompt is too long" (its 400)."""
        if dialect == "anthropic":
            return Rejection(400, "application/json", json.dumps(
                {"type": "error", "error": {"type": "invalid_request_error",
                                            "message": "prompt is too long: %d tokens > %d maximum"
                                            % (used, n_ctx)}}).encode())
        return Rejection(*openai_error(
            400, "This model's maximum context length is %d tokens. However, your messages "
            "resulted in %d tokens. Please reduce the length of the messages." % (n_ctx, used),
            "invalid_request_error", "messages", "context_length_exceeded"))


def sign(text):
    """A signature the server can check later: what a provider's
    encrypted signature stands for (tampered or missing: refused)."""
    import hashlib
    return base64.b64encode(hashlib.sha256(("mote-test:" + text).encode()).digest() * 3).decode()


# Google's status names for HTTP statuses (the google.rpc.Code mapping the
# Gemini API's errors carry in "status").
GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class Gemini(Reference):
    """Gemini's OpenAI-compatible endpoint: its errors are a JSON array of
    error objects (google-gemini/gemini-cli #4701; SuzumiyaAkizuki/
    ComfyUI-NewBie-LLM-Formatter #3 for the OpenAI endpoint)."""
    name = "gemini"

    def error(self, status, message, kind=None, param=None, code=None):
        return (status, "application/json", json.dumps([{"error": {
            "code": status, "message": message,
            "status": GOOGLE_STATUS.get(status, "UNKNOWN")}}]).encode())


class Mistral(Reference):
    """Mistral's API: a body key it does not know is refused with HTTP 422,
    its "message" an object of pydantic validation details
    (dnakov/anon-kode #53 for stream_options, editor-code-assistant/eca
    #231 for max_completion_tokens, charmbracelet/crush #1590 for an
    assistant message's reasoning_content)."""
    name = "mistral"

    def error(self, status, message, kind="invalid_request_error", param=None, code=None):
        return (status, "application/json", json.dumps(
            {"object": "error", "message": message, "type": kind, "param": param,
             "code": code}).encode())

    # The body keys its chat completions take (Mistral's API reference).
    KEYS = {"model", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed",
            "messages", "response_format", "tools", "tool_choice", "presence_penalty",
            "frequency_penalty", "n", "prediction", "parallel_tool_calls", "safe_prompt",
            "prompt_mode"}
    MESSAGE_KEYS = {"role", "content", "tool_calls", "prefix", "tool_call_id", "name"}

    def extra(self, loc, value):
        detail = {"type": "extra_forbidden", "loc": loc, "msg": "Extra inputs are not permitted",
                  "input": value, "url": "https://errors.pydantic.dev/2.10/v/extra_forbidden"}
        return Rejection(*self.error(422, {"detail": [detail]}))

    def check(self, body, dialect):
        for k, v in body.items():
            if k == "stream_options" and isinstance(v, dict) and "include_usage" in v:
                return self.extra(["body", "stream_options", "include_usage"], v["include_usage"])
            if k not in self.KEYS:
                return self.extra(["body", k], v)
        for i, m in enumerate(body.get("messages") or []):
            for k, v in m.items():
                if k not in self.MESSAGE_KEYS:
                    return self.extra(["body", "messages", i, m.get("role"), k], v)
        return None


class Kimi(Reference):
    """Kimi K2 behind vLLM or SGLang: tool call ids are
    "functions.NAME:IDX", IDX counting the calls of the whole
    conversation, and must come back exactly as given (sgl-project/sglang
    #9606, vllm-project/vllm #21259; vybestack/llxprt-code #712 for what
    breaks otherwise: the model falls into a "crash mode", shown here as a
    400 so a test sees it)."""
    name = "kimi"
    ID = re.compile(r"^functions\.[A-Za-z0-9_-]+:\d+$")

    def call_id(self, name, n, body):
        seen = sum(len(m.get("tool_calls") or []) for m in body.get("messages") or []
                   if m.get("role") == "assistant")
        return "functions.%s:%d" % (name, seen + n)

    def check(self, body, dialect):
        for i, m in enumerate(body.get("messages") or []):
            for c in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
                if not self.ID.match(str(c.get("id"))):
                    return Rejection(*openai_error(
                        400, "messages[%d]: tool call id %r is not one the model gave "
                        "(functions.NAME:IDX)" % (i, c.get("id"))))
        return None


class Moonshot(Kimi):
    """Kimi on Moonshot's own API (api.moonshot.ai): the ids of `kimi`,
    and a request over the window refused with 400 in its own words,
    "Invalid request: Your request exceeded model token limit: N
    (requested: M)" (MoonshotAI/kimi-cli #2011)."""
    name = "moonshot"

    def overflow(self, dialect, used, n_ctx):
        return Rejection(*openai_error(
            400, "Invalid request: Your request exceeded model token limit: %d (requested: %d)"
            % (n_ctx, used)))


class Gateway(Reference):
    """A gateway in front of several providers (LiteLLM, one-api): every
    call of an answer comes with index 0 and an id of its own
    (0xPlaygrounds/rig #1443, apache/maka #1976)."""
    name = "gateway"

    def call_index(self, n):
        return 0


class GatewayNoId(Gateway):
    """Ollama and some gateways: every call with index 0 and no id at all
    (vercel/ai #18440)."""
    name = "gateway_noid"
    NO_ID = True


class IkLlama(Reference):
    """ik_llama.cpp, older llama.cpp and TGI: the stream ends after the
    chunk with the finish_reason, without "data: [DONE]"
    (huggingface/text-generation-inference #1896 and the pull request
    that added it, #2221, in TGI 2.2)."""
    name = "ik_llama"
    done = False


class OpenAIResponses(Reference):
    """OpenAI's reasoning models on the Responses API (gpt-5-codex, ...):
    each answer begins with a reasoning item; with `store: false` and
    `include: ["reasoning.encrypted_content"]` the item carries its
    encrypted_content, and the next request of a tool round must bring it
    back before the function calls it led to (the reasoning guide's
    "Encrypted reasoning items"; ag2ai/ag2 #3080 and opencode #2480 for
    what breaks without it; refused here with a 400 so a test sees it)."""
    name = "openai_responses"

    def responses_reasoning(self, step, body, tools):
        summary = issue_reasoning("GPT reasons")
        enc = None
        if "reasoning.encrypted_content" in (body.get("include") or []):
            enc = sign("responses:" + summary)
            ISSUED["reasoning"].add(enc)
        return summary, enc

    def responses_call(self, call_id, reasoning):
        if reasoning is not None and reasoning[1] is not None:
            with ISSUED["lock"]:
                ISSUED["signatures"][call_id] = reasoning[1]

    def check(self, body, dialect):
        if dialect != "responses":
            return None
        items = body.get("input") or []
        last_user = max([i for i, it in enumerate(items) if it.get("role") == "user"] or [-1])
        seen = set()
        for i, it in enumerate(items):
            if it.get("type") == "reasoning":
                if it.get("encrypted_content") not in ISSUED["reasoning"]:
                    return Rejection(*openai_error(
                        400, "The encrypted content for item input[%d] could not be verified."
                        % i, "invalid_request_error", "input", "invalid_encrypted_content"))
                seen.add(it["encrypted_content"])
            want = ISSUED["signatures"].get(it.get("call_id")) if \
                it.get("type") == "function_call" else None
            if want is not None and i > last_user and want not in seen:
                return Rejection(*openai_error(
                    400, "Item 'input[%d]' of type 'function_call' was provided without its "
                    "required 'reasoning' item." % i, "invalid_request_error", "input", None))
        return None


class LlamaCpp(Reference):
    """llama.cpp's server: a request over the context window (--ctx-size)
    is refused with 400 and its exceed_context_size_error (the server's
    README; ggml-org/llama.cpp's server tests)."""
    name = "llamacpp"

    def responses_reasoning(self, step, body, tools):
        """Responses: (summary, encrypted_content or None) of the answer's
        reasoning item, or None for none."""
        return None

    def responses_call(self, call_id, reasoning):
        """Responses: a call made after `reasoning` (or None)."""

    def overflow(self, dialect, used, n_ctx):
        return Rejection(400, "application/json", json.dumps({"error": {
            "code": 400, "message": "the request exceeds the available context size, try "
            "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": used,
            "n_ctx": n_ctx}}).encode())


ISSUED = {"reasoning": set(), "signatures": {}, "lock": threading.Lock(), "n": 0}


def issue_reasoning(prefix):
    with ISSUED["lock"]:
        ISSUED["n"] += 1
        text = "%s %d: the user wants a careful answer; first the files, then the summary." % (
            prefix, ISSUED["n"])
        ISSUED["reasoning"].add(text)
    return text


class DeepSeek(Reference):
    """DeepSeek's thinking mode (on by default in V4): reasoning_content
    streams before the answer, and every assistant message of the
    conversation must carry its reasoning_content back, else HTTP 400 "The
    `reasoning_content` in the thinking mode must be passed back to the
    API." (JohnnyZ93/oai-compatible-copilot #215, qwersyk/Newelle #404,
    esengine/DeepSeek-Reasonix #8902 for a follow-up turn;
    api-docs.deepseek.com/guides/thinking_mode)."""
    name = "deepseek"

    def reasoning(self, step, body):
        if step.get("reasoning"):
            with ISSUED["lock"]:
                ISSUED["reasoning"].add(step["reasoning"])
            return step["reasoning"]
        return issue_reasoning("DeepSeek thinks")

    def check(self, body, dialect):
        for m in body.get("messages") or []:
            if m.get("role") == "assistant" and m.get("reasoning_content") not in \
                    ISSUED["reasoning"]:
                return Rejection(*openai_error(
                    400, "The `reasoning_content` in the thinking mode must be passed back to "
                    "the API.", "invalid_request_error", None, "invalid_request_error"))
        return None


class Vllm(Reference):
    """vLLM (and Groq, Ollama, OpenRouter): reasoning streams as
    delta.reasoning (vLLM's reasoning parsers since 0.10; Groq's
    reasoning_format "parsed"; Ollama's OpenAI compatibility)."""
    name = "vllm"
    REASONING_FIELD = "reasoning"

    def reasoning(self, step, body):
        return step.get("reasoning") or issue_reasoning("vLLM reasons")


class GeminiThinking(Gemini):
    """Gemini 3 on its OpenAI-compatible endpoint: each function call of an
    answer (the first of parallel ones) carries extra_content.google.
    thought_signature, and a later request of the same turn whose call
    lacks it is refused with 400 (ai.google.dev/gemini-api/docs/
    thought-signatures; continuedev/continue #8865 for the field)."""
    name = "gemini"

    def call_extra(self, cid, n):
        if n > 0:
            return None
        sig = sign("gemini:" + cid)
        with ISSUED["lock"]:
            ISSUED["signatures"][cid] = sig
        return {"google": {"thought_signature": sig}}

    def check(self, body, dialect):
        msgs = body.get("messages") or []
        last_user = max([i for i, m in enumerate(msgs) if m.get("role") == "user"] or [-1])
        for i, m in enumerate(msgs):
            if i < last_user or m.get("role") != "assistant":
                continue
            for k, c in enumerate(m.get("tool_calls") or []):
                want = ISSUED["signatures"].get(c.get("id"))
                got = ((c.get("extra_content") or {}).get("google") or {}).get("thought_signature")
                if want is not None and got != want:
                    return Rejection(*self.error(
                        400, "Function call is missing a thought_signature in functionCall "
                        "parts. This is required for tools to work correctly, and missing "
                        "thought_signature may lead to degraded model performance. Additional "
                        "data, function call `default_api:%s` , position %d. Please refer to "
                        "https://ai.google.dev/gemini-api/docs/thought-signatures for more "
                        "details." % ((c.get("function") or {}).get("name"), k + 1)))
        return None


class AnthropicThinking(Reference):
    """Anthropic with extended thinking (or an Anthropic-format endpoint
    where thinking is on by default): thinking blocks, signed, before the
    answer; the last assistant message of a tool loop must start with its
    thinking block, signature byte for byte, else 400 (the API's words:
    anomalyco/opencode #3077; "Invalid `signature` in `thinking` block";
    docs.claude.com extended thinking, "Preserving thinking blocks")."""
    name = "anthropic_thinking"

    def thinking_blocks(self, step, body):
        out = []
        thought = step.get("thinking_text") or issue_reasoning("Claude thinks")
        out.append(("thinking", (thought, sign(thought))))
        if step.get("redacted"):
            data = base64.b64encode(("redacted:" + thought).encode()).decode()
            ISSUED["reasoning"].add(data)
            out.append(("redacted", data))
        return out

    def check(self, body, dialect):
        if dialect != "anthropic":
            return None
        def refuse(msg):
            return Rejection(400, "application/json", json.dumps(
                {"type": "error", "error": {"type": "invalid_request_error", "message": msg},
                 "request_id": "req_test_thinking"}).encode())
        msgs = body.get("messages") or []
        for i, m in enumerate(msgs):
            for k, b in enumerate(m.get("content") if isinstance(m.get("content"), list) else []):
                if b.get("type") == "thinking" and b.get("signature") != sign(b.get("thinking", "")):
                    return refuse("messages.%d.content.%d: Invalid `signature` in `thinking` block"
                                  % (i, k))
                if b.get("type") == "redacted_thinking" and b.get("data") not in ISSUED["reasoning"]:
                    return refuse("messages.%d.content.%d: Invalid `data` in `redacted_thinking` "
                                  "block" % (i, k))
        # the last assistant message before the lastmost tool results
        for i in range(len(msgs) - 1, -1, -1):
            m = msgs[i]
            blocks = m.get("content") if isinstance(m.get("content"), list) else []
            if m.get("role") == "user" and not any(b.get("type") == "tool_result" for b in blocks):
                break  # a user's message: the turn begins here
            if m.get("role") == "assistant" and any(b.get("type") == "tool_use" for b in blocks):
                if not blocks or blocks[0].get("type") not in ("thinking", "redacted_thinking"):
                    return refuse("messages.%d.content.0.type: Expected `thinking` or "
                                  "`redacted_thinking`, but found `%s`. When `thinking` is "
                                  "enabled, a final `assistant` message must start with a "
                                  "thinking block (preceeding the lastmost set of `tool_use` and "
                                  "`tool_result` blocks). We recommend you include thinking "
                                  "blocks from previous turns. To avoid this requirement, disable "
                                  "`thinking`. Please consult our documentation at "
                                  "https://docs.claude.com/en/docs/build-with-claude/extended-"
                                  "thinking" % (i, blocks[0].get("type") if blocks else "nothing"))
                break
        return None


PROFILES = {p.name: p for p in (Reference(), GeminiThinking(), Mistral(), Kimi(), Moonshot(),
                                Gateway(), GatewayNoId(), IkLlama(), DeepSeek(), Vllm(),
                                AnthropicThinking(), LlamaCpp(), OpenAIResponses())}
