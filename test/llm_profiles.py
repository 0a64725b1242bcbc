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
import json
import re


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


PROFILES = {p.name: p for p in (Reference(), Gemini(), Mistral(), Kimi(), Gateway(), GatewayNoId(),
                                IkLlama())}
