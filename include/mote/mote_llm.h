/*
 * mote_llm.h - model providers: request bodies and stream decoders.
 *
 * Three dialects: Anthropic Messages (POST /v1/messages), OpenAI chat
 * completions (POST /v1/chat/completions), which also serves Gemini,
 * DeepSeek, Mistral, Groq, OpenRouter, Ollama, llama.cpp server and
 * vLLM, and OpenAI's Responses API (POST /v1/responses). What each
 * provider takes and needs beyond its dialect is a row of data, its
 * profile (struct mote_llm_profile).
 *
 * Requests are written by mote_llm_write_body() from a stream of message
 * parts that a source callback yields one at a time (it can replay them
 * from the journal), so the conversation is never held whole in memory;
 * the same call with a counting sink gives the Content-Length first.
 *
 * Every body written keeps the rules the real APIs enforce with a 400
 * (docs/LLM.md lists them): no empty or white-space-only text block, no
 * white space ending the final assistant message, tool history as text
 * when no tools are offered, an error result never empty, no lone UTF-16
 * surrogate escape. The parts are given as they were journaled; what is
 * sent is adjusted here.
 *
 * Responses: feed each SSE event to mote_llm_dec_event(); it reports text
 * deltas, tool calls (started, argument fragments, finished; OpenAI's
 * parallel calls keyed by index), the stop reason, usage and errors to a
 * callback. Reasoning is reported as it comes (MOTE_LLM_THINKING, its
 * signature MOTE_LLM_THINKING_SIG, a call's extras MOTE_LLM_TOOL_EXTRA):
 * the agent journals it and the body writer sends it back where the
 * provider needs it (docs/LLM.md, "Reasoning").
 * Unknown event and block types are skipped.
 */
#ifndef MOTE_LLM_H
#define MOTE_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_json.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mote_provider {
    MOTE_PROVIDER_ANTHROPIC = 1,
    MOTE_PROVIDER_OPENAI = 2,
    MOTE_PROVIDER_OPENAI_RESPONSES = 3, /* OpenAI's Responses API (POST /v1/responses) */
};

/* ---- providers: what each takes beyond its dialect ----------------------- */

struct mote_llm_req;

/* Keys of a request body that mote adds on its own and a provider may
 * take, refuse or need (bits of mote_llm_profile.keys, mote_llm_req.omit
 * and .add, mote_llm_memo). */
#define MOTE_LLM_KEY_STREAM_OPTIONS 0x01u /* OpenAI: stream_options.include_usage */
#define MOTE_LLM_KEY_MAX_COMPLETION 0x02u /* OpenAI: the limit as max_completion_tokens (else
                                           * max_tokens) */
#define MOTE_LLM_KEY_TOOL_CHOICE 0x04u    /* tool_choice "none" (a summarising request) */
#define MOTE_LLM_KEY_CACHE_CONTROL 0x08u  /* Anthropic: prompt-cache breakpoints */
#define MOTE_LLM_KEY_REASONING_CONTENT 0x10u /* OpenAI: an assistant message's reasoning_content
                                              * (DeepSeek, Kimi: needed back in a tool turn) */
#define MOTE_LLM_KEY_EXTRA_CONTENT 0x20u  /* OpenAI: a tool call's extra_content (Gemini's
                                           * thought_signature: needed back) */
#define MOTE_LLM_KEY_REASONING_TURNS 0x40u /* every turn's reasoning goes back, not only the
                                            * current turn's (DeepSeek V4's thinking mode) */
#define MOTE_LLM_KEY_INCLUDE 0x80u        /* Responses: include reasoning.encrypted_content */
#define MOTE_LLM_KEYS_OPTIONAL 0x8Du      /* those sent unless the provider refuses them */
#define MOTE_LLM_KEYS_EXTRA 0x70u         /* those sent back only where the provider needs them */

/* How a provider reports a request's token usage (mote_llm_profile.usage). */
#define MOTE_LLM_USAGE_ASKED 1   /* when asked: stream_options.include_usage */
#define MOTE_LLM_USAGE_ALWAYS 2  /* in every stream (Anthropic's message_start/_delta;
                                  * Mistral's last chunk) */

/* The tool call ids it gives and needs back (mote_llm_profile.ids). */
#define MOTE_LLM_IDS_WORD 1      /* [A-Za-z0-9_-] (Anthropic refuses others) */
#define MOTE_LLM_IDS_PRINTABLE 2 /* any printable ASCII but the space (Kimi K2's
                                  * "functions.shell:0") */

/* The shape of its error bodies (mote_llm_profile.errors; every shape is
 * read whatever the profile says: docs/LLM.md). */
#define MOTE_LLM_ERRORS_OBJECT 1 /* {"error": {"type", "code", "message"}} */
#define MOTE_LLM_ERRORS_ARRAY 2  /* [{"error": {"code", "message", "status"}}] (Google) */
#define MOTE_LLM_ERRORS_NESTED 3 /* {"message": {"detail": [{"loc", "msg"}]}} (Mistral) */

/* Where its reasoning comes (mote_llm_profile.reasoning). */
#define MOTE_LLM_RS_NONE 0
#define MOTE_LLM_RS_THINKING 1    /* Anthropic thinking / redacted_thinking blocks, signed */
#define MOTE_LLM_RS_CONTENT 2     /* delta.reasoning_content (DeepSeek, Kimi, llama.cpp) */
#define MOTE_LLM_RS_REASONING 3   /* delta.reasoning (vLLM, Groq, Ollama, OpenRouter) */
#define MOTE_LLM_RS_SIGNATURE 4   /* a signature on each tool call (Gemini's extra_content) */
#define MOTE_LLM_RS_ITEMS 5       /* the Responses API's reasoning items */

/* One provider: a row of the table in llm_profile.c (docs/LLM.md shows
 * it). Data, not branches: the body writer, the decoder and the client
 * read these fields; no code asks which provider it talks to. */
struct mote_llm_profile {
    const char *name;      /* as --provider names it */
    uint8_t dialect;       /* enum mote_provider */
    const char *hosts;     /* the hosts that pick it: space-separated names, ".name" for
                            * its subdomains too, ":PORT" for any host on that port */
    uint8_t keys;          /* MOTE_LLM_KEY_*: the optional keys it takes, the extras it
                            * needs back */
    uint8_t usage;         /* MOTE_LLM_USAGE_* */
    uint8_t ids;           /* MOTE_LLM_IDS_* */
    uint8_t errors;        /* MOTE_LLM_ERRORS_* */
    uint8_t reasoning;     /* MOTE_LLM_RS_* */
};

/* The profile named `name` (a profile's or a dialect's: "anthropic",
 * "openai", "deepseek", ...), or NULL. */
const struct mote_llm_profile *mote_llm_profile_find(const char *name);

/* The profile for a request of `dialect` to `base_url`: the one whose
 * hosts name the URL's host (or port), else the dialect's conservative
 * default (an OpenAI-compatible server mote does not know: only what
 * every one takes, what it refuses dropped as it says so). Never NULL. */
const struct mote_llm_profile *mote_llm_profile_pick(int dialect, const char *base_url);

/* True if OpenAI serves `model` on the Responses API only (gpt-5-pro,
 * the codex models, o1-pro, o3-pro, deep research, computer use): a
 * frontend switches such a model to MOTE_PROVIDER_OPENAI_RESPONSES. */
bool mote_llm_responses_only(const char *model);

/* The profile at `i` of the table (for listings), or NULL past the end. */
const struct mote_llm_profile *mote_llm_profile_at(unsigned i);

/* Sets what a request to a provider of profile `p` sends: req->omit (the
 * optional keys it does not take), req->add (the extras it needs back,
 * the limit's name), req->max_completion_tokens and req->cache. The
 * reference APIs' bodies are those their dialect always wrote. */
void mote_llm_profile_req(const struct mote_llm_profile *p, struct mote_llm_req *req);

/* A 400 or 422 whose `body` (len bytes) refused a request made of `req`
 * (its omit and add as sent): the keys the body names that mote added on
 * its own and the server says it does not take (*drop: "Extra inputs are
 * not permitted", "Unrecognized request argument", "Unsupported
 * parameter", ...) or that it could add and the server says are needed
 * (*need: "Missing `reasoning_content`", "missing a thought_signature",
 * "Use 'max_completion_tokens' instead"). Keys in `tried` are passed
 * over. Returns *drop | *need (0: nothing mote can change). */
uint8_t mote_llm_refusal_keys(const struct mote_llm_req *req, const char *body, size_t len,
                              uint8_t tried, uint8_t *drop, uint8_t *need);

/* What the servers of a process refused or needed, per origin: a key
 * named by a 400 or 422 is taken out (or put in) and the request asked
 * once again; the origin is remembered for the process's later requests
 * (caller-owned, all zero to start; a few origins, the least recently
 * used goes). */
#define MOTE_LLM_MEMO_ORIGINS 4
struct mote_llm_memo {
    uint64_t origin[MOTE_LLM_MEMO_ORIGINS];
    uint8_t drop[MOTE_LLM_MEMO_ORIGINS]; /* keys refused there */
    uint8_t need[MOTE_LLM_MEMO_ORIGINS]; /* keys needed there */
    uint32_t used[MOTE_LLM_MEMO_ORIGINS];
    uint32_t clock;
};

/* Applies what `m` (may be NULL) knows of `origin` to req->omit and
 * req->add. */
void mote_llm_memo_apply(struct mote_llm_memo *m, uint64_t origin, struct mote_llm_req *req);

/* Remembers that `origin` refused `drop` and needs `need` (m may be
 * NULL: nothing kept). */
void mote_llm_memo_keep(struct mote_llm_memo *m, uint64_t origin, uint8_t drop, uint8_t need);

/* ---- request ----------------------------------------------------------- */

enum mote_role { MOTE_ROLE_USER = 1, MOTE_ROLE_ASSISTANT = 2 };

enum mote_part_type {
    MOTE_PART_TEXT = 1,        /* user or assistant text */
    MOTE_PART_TOOL_CALL = 2,   /* assistant: id, name, input (JSON object) */
    MOTE_PART_TOOL_RESULT = 3, /* user: id, text, is_error */
    MOTE_PART_REASONING = 4,   /* assistant: a piece of a reasoning block: fmt, block, kind,
                                * text (mote_journal_reason's) */
};

struct mote_part {
    enum mote_role role;
    enum mote_part_type type;
    const char *text;  /* TEXT and TOOL_RESULT */
    size_t text_len;
    const char *id;    /* TOOL_CALL and TOOL_RESULT */
    const char *name;  /* TOOL_CALL */
    const char *input; /* TOOL_CALL: a JSON object ("{}" if empty) */
    size_t input_len;
    bool is_error;     /* TOOL_RESULT */
    bool cut;          /* assistant TEXT: the last piece of an answer that was cut off (a
                        * cancel, a failure, a shutdown; its text may be empty): the writer
                        * says so after it, and the text of the answer that follows never
                        * runs into it */
    const char *extra; /* TOOL_CALL: its provider extras, a JSON object (NULL: none) */
    size_t extra_len;
    const char *fmt;   /* REASONING: "thinking", "redacted", "reasoning_content",
                        * "reasoning", "responses" */
    unsigned block;    /* REASONING: the block's number in its answer */
    uint8_t kind;      /* REASONING: 0 its text, 1 its signature, 2 its item id */
    bool earlier;      /* REASONING: of an answer before the last user message (sent
                        * back only to a provider that needs every turn's) */
};

/* Gives part number `index` (0-based) in *p: returns 1, 0 past the last
 * part, or < 0 on failure. The body writer asks for the parts in order,
 * sometimes the same index again (it regenerates the piece that did not
 * fit the send buffer), so a source replaying a journal keeps a cursor.
 * Pointers in *p must stay valid until the next call.
 *
 * Consecutive assistant TEXT parts are pieces of one answer's text (a
 * long answer journaled in pieces, or an answer and its pause_turn
 * continuation), sent as one text, unless a piece is `cut`. */
typedef int (*mote_part_fn)(void *arg, unsigned index, struct mote_part *p);

struct mote_tool_def {
    const char *name;
    const char *description;
    const char *schema; /* JSON Schema object text */
};

struct mote_llm_req {
    enum mote_provider provider;
    const char *model;
    const char *system;            /* may be NULL */
    uint32_t max_tokens;
    const struct mote_tool_def *tools;
    unsigned ntools;
    mote_part_fn parts;
    void *parts_arg;
    bool no_tool_calls;            /* tool_choice none: tools listed, none may be called */
    bool cache;                    /* Anthropic: prompt-cache breakpoints on the system
                                    * prompt, the last tool and the last message block */
    bool max_completion_tokens;    /* OpenAI: the limit as max_completion_tokens (OpenAI's own
                                    * endpoint; max_tokens is deprecated there and refused by
                                    * reasoning models) instead of max_tokens (compatible
                                    * servers) */
    uint64_t id_seed;              /* the answer's decoder takes it as its id_seed: a value no
                                    * other request of the conversation has (the agent gives
                                    * the journal's size when the request starts), so calls
                                    * that come without an id get ids unique in it */
    uint8_t omit;                  /* MOTE_LLM_KEY_*: optional keys not to send (the
                                    * provider's profile refuses them) */
    uint8_t add;                   /* MOTE_LLM_KEY_*: keys to send besides (the extras the
                                    * profile needs back; MAX_COMPLETION as the bool above) */
    uint32_t thinking_budget;      /* Anthropic: extended thinking with this budget of tokens
                                    * (0: not asked; max_tokens is raised above it) */
    /* Tool results cut to fit the model's context window (the journal
     * keeps them whole; the cut is said to the model): each longer than
     * result_cap bytes (0: none), and the oldest old_results of the
     * request to old_cap instead (a summarising request over the
     * window). `window` (tokens, 0: unknown) is named in the note. */
    uint32_t result_cap;
    uint32_t old_results;
    uint32_t old_cap;
    uint32_t window;
};

/* True if `base_url`'s host is OpenAI's own API (api.openai.com), whose
 * chat completions take max_completion_tokens. */
bool mote_llm_openai_host(const char *base_url);

/* Writes the JSON body of `req` to `sink` in one go (for counting the
 * Content-Length, or for tests). Returns 0 or < 0 (the sink's error, the
 * part source's, or MOTE_ERR_INVAL for a malformed part). */
int mote_llm_write_body(const struct mote_llm_req *req, mote_sink_fn sink, void *arg);

/* The writer's state between parts. White space at the end of a piece
 * of an answer's text is held back (ws, MOTE_LLM_WS_HOLD bytes at most,
 * mote_config.h) until the next part shows whether the text goes on. */
struct mote_llm_wstate {
    int open_role;     /* Anthropic: the role of the open message (0: none) */
    bool in_assistant; /* OpenAI: an assistant message is open */
    bool in_calls;     /* OpenAI: its tool_calls array is open */
    bool have_text;    /* OpenAI: it has content text */
    bool text_open;    /* the answer's text string is open */
    bool block_open;   /* Anthropic: the last block is closed by what follows */
    bool in_text;      /* the last part was an answer's text (not cut): more goes on with it */
    uint8_t ws_len;    /* Anthropic: white space held back (ws) */
    bool content_done; /* OpenAI: the open assistant message has its "content" */
    uint8_t rs_open;   /* a reasoning block is open: 1 its text string open, 2 no string
                        * open, 3 its signature string open (0: none) */
    uint8_t rs_code;   /* its format (llm_body.c) */
    bool rs_text;      /* Anthropic: its "thinking" was written */
    bool last_thinking; /* Anthropic: the last block is a reasoning block */
    unsigned rs_block; /* its number in its answer */
    uint32_t nresults; /* tool results written so far */
    char ws[MOTE_LLM_WS_HOLD];
};

/* The body as a pull stream, for a non-blocking sender: each read fills
 * the caller's buffer with the next bytes. Only the piece being sent (the
 * head, one part, or the tail) is ever regenerated, so memory stays at the
 * caller's buffer whatever the conversation's length. */
struct mote_llm_body {
    const struct mote_llm_req *req;
    unsigned unit;      /* 0 head, 1..n part unit-1, then the tail */
    bool tail;
    bool done;
    uint64_t off;       /* bytes of the current unit already read */
    struct mote_jw jw;  /* writer state where the current unit begins */
    struct mote_llm_wstate ws; /* grouping state where the current unit begins */
};

void mote_llm_body_init(struct mote_llm_body *b, const struct mote_llm_req *req);

/* Fills up to `cap` bytes: returns the count, 0 at the end, or < 0. */
int mote_llm_body_read(struct mote_llm_body *b, char *buf, size_t cap);

/* The body's length in bytes (a full counting pass), or < 0. */
int64_t mote_llm_body_length(const struct mote_llm_req *req);

/* The request path below the base URL ("/v1/messages" or
 * "/v1/chat/completions"; with a base URL path that names a version
 * already - ending in /v1, /v4, /v1beta, or in /openai as Gemini's
 * OpenAI-compatible root - without the /v1 part). */
const char *mote_llm_path(enum mote_provider provider, const char *base_path);

/* ---- stream decoding --------------------------------------------------- */

enum mote_llm_ev {
    MOTE_LLM_TEXT = 1,       /* text, len: a piece of the answer */
    MOTE_LLM_TOOL_START,     /* slot, id, name (a call that came without an id gets one, made
                              * of [A-Za-z0-9_]) */
    MOTE_LLM_TOOL_ARGS,      /* slot, text, len: a fragment of the input JSON */
    MOTE_LLM_TOOL_END,       /* slot */
    MOTE_LLM_STOP,           /* text: the stop reason (end_turn, tool_use, max_tokens, ...) */
    MOTE_LLM_USAGE,          /* in_tokens, out_tokens (totals so far) */
    MOTE_LLM_ERROR,          /* text: message; id: error type; retryable */
    MOTE_LLM_DONE,           /* the stream's proper end (message_stop / [DONE]) */
    MOTE_LLM_THINKING,       /* text, len: a piece of a block of the model's reasoning; id:
                              * its format ("thinking": an Anthropic thinking block,
                              * "reasoning_content", "reasoning": OpenAI-compatible
                              * servers', "responses": a Responses reasoning item's
                              * summary), slot: the block's number in the answer (mod 256) */
    MOTE_LLM_TOOL_EXTRA,     /* slot, text, len: a call's provider extras, a JSON object as it
                              * came (Gemini's {"google": {"thought_signature": ...}}), right
                              * after its TOOL_START */
    MOTE_LLM_THINKING_SIG,   /* text, len: a piece of a reasoning block's signature, after its
                              * text (Anthropic's "signature"; a redacted block's "data", id
                              * "redacted"; a Responses item's encrypted_content); id, slot as
                              * THINKING */
    MOTE_LLM_THINKING_ID,    /* text, len: a reasoning block's item id (Responses); id, slot as
                              * THINKING */
};

struct mote_llm_event {
    enum mote_llm_ev type;
    unsigned slot;            /* tool call slot, 0..MOTE_LLM_MAX_TOOL_CALLS-1; a call past the
                               * table gets MOTE_LLM_SLOT_OVER (its start, arguments and end,
                               * one call after another: the caller answers it, unrun) */
    const char *text;
    size_t len;
    const char *id;
    const char *name;
    uint64_t in_tokens;       /* input not read from or written to a cache */
    uint64_t out_tokens;
    uint64_t cache_read;      /* input tokens read from the provider's prompt cache */
    uint64_t cache_write;     /* input tokens written to it (Anthropic) */
    bool retryable;
};

/* The slot of the calls of one answer past the first MOTE_LLM_MAX_TOOL_CALLS. */
#define MOTE_LLM_SLOT_OVER MOTE_LLM_MAX_TOOL_CALLS

/* Return 0 to go on or < 0 to stop the decoder with that error. */
typedef int (*mote_llm_fn)(void *arg, const struct mote_llm_event *ev);

struct mote_llm_dec {
    enum mote_provider provider;
    uint8_t ids;             /* MOTE_LLM_IDS_*: the ids kept as they came (dec_init: the
                              * dialect's; the client sets its profile's) */
    mote_llm_fn fn;
    void *arg;
    int err;                 /* first error, sticky */
    bool done;               /* message_stop or [DONE] seen */
    bool content;            /* any text or tool call delivered */
    bool stopped;            /* a stop reason was seen */
    bool refused;            /* OpenAI: refusal text came (the stop is "refusal") */
    unsigned ncalls;         /* tool call slots in use */
    unsigned over;           /* calls past the table (slot MOTE_LLM_SLOT_OVER) */
    /* Anthropic: block index -> kind (0 ignored, 1 text, 2 tool+slot, 3
     * thinking, 4 tool whose input came whole in its start). */
    uint8_t block_kind[MOTE_LLM_MAX_BLOCKS];
    uint8_t block_slot[MOTE_LLM_MAX_BLOCKS];
    /* OpenAI: tool call index of each slot (-1 free, -2 ended), and the
     * hashes of the id (0: none) and the name it came with. */
    int32_t oa_index[MOTE_LLM_MAX_TOOL_CALLS];
    uint64_t oa_wire[MOTE_LLM_MAX_TOOL_CALLS];
    uint64_t oa_name[MOTE_LLM_MAX_TOOL_CALLS];
    uint32_t oa_json[MOTE_LLM_MAX_TOOL_CALLS]; /* OpenAI: where each input's JSON is (llm.c) */
    int32_t oa_over_idx;     /* OpenAI: the index of the open call past the table */
    unsigned oa_last;        /* OpenAI: the slot of the call started last (past the table:
                              * MOTE_LLM_SLOT_OVER; none yet: above it) */
    bool oa_over_open;       /* OpenAI: a call past the table has not ended */
    uint32_t oa_unindexed;   /* OpenAI: calls that came without an index */
    uint64_t id_seed;        /* the caller's: mixed into the ids made for calls that came
                              * without one (set it after init to a value unique to the
                              * answer in its conversation, such as a journal offset) */
    uint64_t id_hash;        /* of the stream so far, for those ids too */
    uint64_t id_seen[8];     /* the ids of this answer's calls so far (bits of their hashes,
                              * 512) */
    uint32_t rs_n;           /* reasoning blocks so far (Anthropic) */
    const char *rs_fmt;      /* the format of the reasoning being reported */
    uint64_t wire_id;        /* the hash of the id the call started last came with, as
                              * sent (0: none) */
    uint64_t in_tokens;
    uint64_t cache_read, cache_write;
    uint64_t out_tokens;
    char stop_reason[32];
    char id[MOTE_LLM_ID_MAX];
    char name[MOTE_LLM_NAME_MAX];
    char buf[MOTE_LLM_TEXT_MAX];  /* unescaped text of one delta */
    struct mote_json json;
};

void mote_llm_dec_init(struct mote_llm_dec *d, enum mote_provider provider, mote_llm_fn fn,
                       void *arg);

/* Decodes one SSE event (name and data as the SSE parser gives them).
 * Returns 0 or the sticky error: MOTE_ERR_BADMSG for data that is not the
 * JSON expected, MOTE_ERR_TOO_LARGE over a limit, or the callback's. More
 * parallel tool calls than MOTE_LLM_MAX_TOOL_CALLS come in slot
 * MOTE_LLM_SLOT_OVER (a callback that cannot take them returns
 * MOTE_ERR_FULL). OpenAI calls without an `index` (Ollama before late 2024
 * sent several in one chunk so): an element with an id or a name starts a
 * call, one without goes on with the call before. A tool_use whose input
 * comes whole in its content_block_start has it reported as its
 * arguments (input_json_delta events for that block are then dropped). */
int mote_llm_dec_event(struct mote_llm_dec *d, const char *event, const char *data, size_t len);

/* The response's body ended: true if the stream is complete - it ended
 * properly, or (OpenAI-compatible) a finish_reason came and the server
 * closed the stream without "[DONE]", as TGI, ik_llama.cpp and older
 * llama.cpp servers do: the calls are ended and MOTE_LLM_DONE reported
 * (the answer stands, its calls run). False: the stream was cut. */
bool mote_llm_dec_finish(struct mote_llm_dec *d);

/* True if error body `body` (len bytes) says the request is over the
 * model's context window, however the server says it (llama.cpp's
 * exceed_context_size_error, OpenAI's context_length_exceeded,
 * Anthropic's "prompt is too long", "maximum context length", ...);
 * *limit and *used get the window and the request's tokens where the
 * body gives them (0: not given). */
bool mote_llm_overflow(const char *body, size_t len, uint32_t *limit, uint32_t *used);

/* Classifies an error body (non-200 response or error event data):
 * fills `type` (e.g. "rate_limit_error", "overloaded_error") and `msg`
 * (the provider's reason on one line, whatever the body's shape: an
 * error object, Gemini's array of them, a message that is an object of
 * validation details as Mistral's, plain text, an HTML page's title, a
 * JSON body cut short), and returns true if a retry may help. `scratch` holds
 * the tokens while it reads (its previous content is lost). */
bool mote_llm_classify_error(const char *body, size_t len, int http_status, char *type,
                             size_t type_cap, char *msg, size_t msg_cap, struct mote_json *scratch);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_LLM_H */
