/*
 * llm_profile.c - the providers a device user picks, as data: one row per
 * provider (what optional keys it takes, how it reports usage, the ids it
 * gives, the shape of its errors, where its reasoning comes), the choice
 * of a row by name or by host, and what a refusal teaches: a key mote
 * added on its own that a server refuses (or one it needs) is found in
 * the 400 or 422 that names it, the request asked once again with it
 * changed, and the origin remembered for the process.
 */
#include "mote/mote_client.h"

#include <string.h>

#include "util.h"

#define K_SO MOTE_LLM_KEY_STREAM_OPTIONS
#define K_MC MOTE_LLM_KEY_MAX_COMPLETION
#define K_TC MOTE_LLM_KEY_TOOL_CHOICE
#define K_CC MOTE_LLM_KEY_CACHE_CONTROL
#define K_RC MOTE_LLM_KEY_REASONING_CONTENT
#define K_EC MOTE_LLM_KEY_EXTRA_CONTENT
#define K_RT MOTE_LLM_KEY_REASONING_TURNS
#define K_IN MOTE_LLM_KEY_INCLUDE

/* The table (docs/LLM.md, "Providers"). The first row of each dialect
 * with no hosts is its default for a server mote does not know. Sources
 * of each row: test/fixtures/SOURCES.md. */
/* (short names for the table's columns) */
#define ASKED MOTE_LLM_USAGE_ASKED
#define ALWAYS MOTE_LLM_USAGE_ALWAYS
#define WORD MOTE_LLM_IDS_WORD
#define PRINT MOTE_LLM_IDS_PRINTABLE
#define OBJECT MOTE_LLM_ERRORS_OBJECT
#define ARRAY MOTE_LLM_ERRORS_ARRAY
#define NESTED MOTE_LLM_ERRORS_NESTED

static const struct mote_llm_profile profiles[] = {
    /* name, dialect, hosts: keys, usage, ids, errors, reasoning */
    {"anthropic", MOTE_PROVIDER_ANTHROPIC, "api.anthropic.com",
     K_TC | K_CC, ALWAYS, WORD, OBJECT, MOTE_LLM_RS_THINKING},
    {"anthropic-compatible", MOTE_PROVIDER_ANTHROPIC, "",
     K_TC | K_CC, ALWAYS, WORD, OBJECT, MOTE_LLM_RS_THINKING},
    {"openai", MOTE_PROVIDER_OPENAI, "api.openai.com",
     K_SO | K_MC | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_NONE},
    {"openai-responses", MOTE_PROVIDER_OPENAI_RESPONSES, "",
     K_TC | K_IN, ALWAYS, PRINT, OBJECT, MOTE_LLM_RS_ITEMS},
    {"openai-compatible", MOTE_PROVIDER_OPENAI, "",
     K_SO | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_CONTENT},
    {"gemini", MOTE_PROVIDER_OPENAI, "generativelanguage.googleapis.com",
     K_SO | K_TC | K_EC, ASKED, PRINT, ARRAY, MOTE_LLM_RS_SIGNATURE},
    {"deepseek", MOTE_PROVIDER_OPENAI, "api.deepseek.com",
     K_SO | K_TC | K_RC | K_RT, ASKED, PRINT, OBJECT, MOTE_LLM_RS_CONTENT},
    {"mistral", MOTE_PROVIDER_OPENAI, "api.mistral.ai",
     K_TC, ALWAYS, PRINT, NESTED, MOTE_LLM_RS_NONE},
    {"groq", MOTE_PROVIDER_OPENAI, "api.groq.com",
     K_SO | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_REASONING},
    {"openrouter", MOTE_PROVIDER_OPENAI, "openrouter.ai",
     K_SO | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_REASONING},
    {"kimi", MOTE_PROVIDER_OPENAI, "api.moonshot.ai api.moonshot.cn",
     K_SO | K_TC | K_RC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_CONTENT},
    {"ollama", MOTE_PROVIDER_OPENAI, ":11434",
     K_SO | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_REASONING},
    {"llamacpp", MOTE_PROVIDER_OPENAI, "",
     K_SO | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_CONTENT},
    {"vllm", MOTE_PROVIDER_OPENAI, "",
     K_SO | K_TC, ASKED, PRINT, OBJECT, MOTE_LLM_RS_REASONING},
};

const struct mote_llm_profile *mote_llm_profile_at(unsigned i)
{
    return i < MOTE_ARRAY_LEN(profiles) ? &profiles[i] : NULL;
}

const struct mote_llm_profile *mote_llm_profile_find(const char *name)
{
    size_t i;

    if (name == NULL)
        return NULL;
    for (i = 0; i < MOTE_ARRAY_LEN(profiles); i++) {
        if (strcmp(profiles[i].name, name) == 0)
            return &profiles[i];
    }
    return NULL;
}

/* True if `want` (one word of a hosts list, n bytes) names host h (hn
 * bytes, lower case) on port `port`. */
static bool host_is(const char *want, size_t n, const char *h, size_t hn, unsigned port)
{
    if (n > 0 && want[0] == ':') {
        uint64_t p = 0;

        return mote_dec_parse(want + 1, n - 1, &p) == 0 && p == port;
    }
    if (n > 0 && want[0] == '.') /* it and its subdomains */
        return (hn == n - 1 && mote_ascii_ieq(h, want + 1, n - 1)) ||
               (hn > n && mote_ascii_ieq(h + hn - n, want, n));
    return hn == n && mote_ascii_ieq(h, want, n);
}

const struct mote_llm_profile *mote_llm_profile_pick(int dialect, const char *base_url)
{
    const struct mote_llm_profile *dflt = NULL;
    struct mote_url u;
    size_t i;
    bool have = base_url != NULL && mote_url_parse(&u, base_url) == 0;

    for (i = 0; i < MOTE_ARRAY_LEN(profiles); i++) {
        const struct mote_llm_profile *p = &profiles[i];
        const char *w = p->hosts;

        if (p->dialect != dialect)
            continue;
        if (w[0] == '\0' && dflt == NULL)
            dflt = p;
        while (have && *w != '\0') {
            size_t n = strcspn(w, " ");

            if (host_is(w, n, u.host, strlen(u.host), u.port))
                return p;
            w += n;
            w += strspn(w, " ");
        }
    }
    return dflt != NULL ? dflt : &profiles[0];
}

bool mote_llm_responses_only(const char *model)
{
    /* OpenAI's models served on /v1/responses only (its models pages) */
    static const char *const prefixes[] = {"o1-pro", "o3-pro", "computer-use"};
    static const char *const parts[] = {"codex", "deep-research"};
    size_t i, n = model != NULL ? strlen(model) : 0, k;

    for (i = 0; i < MOTE_ARRAY_LEN(prefixes); i++) {
        if (strncmp(model != NULL ? model : "", prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    }
    for (i = 0; i < MOTE_ARRAY_LEN(parts); i++) {
        size_t m = strlen(parts[i]);

        for (k = 0; k + m <= n; k++) {
            if (memcmp(model + k, parts[i], m) == 0)
                return true;
        }
    }
    /* gpt-5-pro, gpt-5.2-pro, ... */
    if (n > 5 && strncmp(model, "gpt-5", 5) == 0) {
        for (k = 5; k + 4 <= n; k++) {
            if (memcmp(model + k, "-pro", 4) == 0 && (k + 4 == n || model[k + 4] == '-'))
                return true;
        }
    }
    return false;
}

const struct mote_llm_profile *mote_llm_conf_profile(const struct mote_llm_conf *c)
{
    if (c->profile != NULL)
        return c->profile;
    return mote_llm_profile_pick((int)c->provider, c->base_url);
}

void mote_llm_profile_req(const struct mote_llm_profile *p, struct mote_llm_req *req)
{
    req->omit = (uint8_t)(MOTE_LLM_KEYS_OPTIONAL & ~p->keys);
    req->add = (uint8_t)(p->keys & (MOTE_LLM_KEYS_EXTRA | K_MC));
    req->max_completion_tokens = (p->keys & K_MC) != 0;
    req->cache = (p->keys & K_CC) != 0;
}

/* ---- what a refusal teaches ------------------------------------------------- */

/* Where `word` (n bytes, any case) is in s[0..len) as a whole name (no
 * letter, digit or '_' on either side), or -1 from `from` on. */
static long find_word(const char *s, size_t len, const char *word, size_t from)
{
    size_t n = strlen(word), i;

    for (i = from; i + n <= len; i++) {
        char a = i > 0 ? s[i - 1] : ' ', b = i + n < len ? s[i + n] : ' ';

        if (!mote_ascii_ieq(s + i, word, n))
            continue;
        if (mote_word_chars(&a, 1) && a != '-')
            continue;
        if (mote_word_chars(&b, 1) && b != '-')
            continue;
        return (long)i;
    }
    return -1;
}

static bool has_any(const char *s, size_t len, const char *const *words)
{
    size_t i, k;

    for (k = 0; words[k] != NULL; k++) {
        size_t n = strlen(words[k]);

        for (i = 0; i + n <= len; i++) {
            if (mote_ascii_ieq(s + i, words[k], n))
                return true;
        }
    }
    return false;
}

/* Whether key bit `k` (named `name`) is in the body `req` makes, as the
 * writer decides (llm_body.c). */
static bool sent(const struct mote_llm_req *req, uint8_t k, bool inverse)
{
    bool openai = req->provider == MOTE_PROVIDER_OPENAI;

    if (k == K_IN && !inverse)
        return req->provider == MOTE_PROVIDER_OPENAI_RESPONSES && (req->omit & K_IN) == 0;
    bool mc = (req->max_completion_tokens || (req->add & K_MC) != 0) && (req->omit & K_MC) == 0;

    if (inverse) /* max_tokens */
        return openai && req->max_tokens > 0 && !mc;
    switch (k) {
    case K_SO:
        return openai && (req->omit & K_SO) == 0;
    case K_MC:
        return openai && req->max_tokens > 0 && mc;
    case K_TC:
        return req->no_tool_calls && req->ntools > 0 && (req->omit & K_TC) == 0;
    case K_CC:
        return !openai && req->cache && (req->omit & K_CC) == 0;
    default: /* the extras */
        return openai && (req->add & k) != 0 && (req->omit & k) == 0;
    }
}

uint8_t mote_llm_refusal_keys(const struct mote_llm_req *req, const char *body, size_t len,
                              uint8_t tried, uint8_t *drop, uint8_t *need)
{
    static const struct {
        const char *name;
        uint8_t key;
        bool inverse; /* the name is sent when the key is not */
    } names[] = {
        {"stream_options", K_SO, false},    {"max_completion_tokens", K_MC, false},
        {"max_tokens", K_MC, true},         {"tool_choice", K_TC, false},
        {"cache_control", K_CC, false},     {"reasoning_content", K_RC, false},
        {"extra_content", K_EC, false},     {"thought_signature", K_EC, false},
        {"reasoning.encrypted_content", K_IN, false},
    };
    static const char *const refused[] = {"extra_forbidden", "not permitted", "unrecognized",
                                          "unknown", "unsupported", "not supported",
                                          "additional properties", "unexpected", "not allowed",
                                          "cannot find field", "extra inputs", NULL};
    static const char *const needed[] = {"missing", "required", "instead", "must be", NULL};
    bool says_refused = has_any(body, len, refused), says_needed = has_any(body, len, needed);
    size_t i;

    *drop = *need = 0;
    for (i = 0; i < MOTE_ARRAY_LEN(names); i++) {
        uint8_t k = names[i].key;
        bool is_sent = sent(req, k, names[i].inverse);

        if ((tried & k) != 0 || find_word(body, len, names[i].name, 0) < 0)
            continue;
        if (is_sent && says_refused) {
            if (names[i].inverse)
                *need |= k; /* max_tokens refused: max_completion_tokens */
            else
                *drop |= k;
        } else if (is_sent && says_needed && k == K_RC && !sent(req, K_RT, false) &&
                   (tried & K_RT) == 0) {
            *need |= K_RT; /* sent, still needed: every turn's (DeepSeek V4) */
        } else if (!is_sent && says_needed && req->provider == MOTE_PROVIDER_OPENAI) {
            if (names[i].inverse)
                *drop |= k;
            else
                *need |= k;
        }
    }
    *need &= (uint8_t)~*drop;
    return (uint8_t)(*drop | *need);
}

/* The memo's slot of `origin`, or -1. */
static int memo_slot(const struct mote_llm_memo *m, uint64_t origin)
{
    unsigned i;

    for (i = 0; i < MOTE_LLM_MEMO_ORIGINS; i++) {
        if (m->used[i] != 0 && m->origin[i] == origin)
            return (int)i;
    }
    return -1;
}

void mote_llm_memo_apply(struct mote_llm_memo *m, uint64_t origin, struct mote_llm_req *req)
{
    int i = m != NULL ? memo_slot(m, origin) : -1;

    if (i < 0)
        return;
    m->used[i] = ++m->clock;
    req->omit = (uint8_t)((req->omit | m->drop[i]) & ~m->need[i]);
    req->add = (uint8_t)((req->add | m->need[i]) & ~m->drop[i]);
    if (m->drop[i] & K_MC)
        req->max_completion_tokens = false;
}

void mote_llm_memo_keep(struct mote_llm_memo *m, uint64_t origin, uint8_t drop, uint8_t need)
{
    int i;
    unsigned k, old = 0;

    if (m == NULL || (drop | need) == 0)
        return;
    i = memo_slot(m, origin);
    if (i < 0) {
        for (k = 1; k < MOTE_LLM_MEMO_ORIGINS; k++) {
            if (m->used[k] < m->used[old])
                old = k;
        }
        i = (int)old;
        m->origin[i] = origin;
        m->drop[i] = m->need[i] = 0;
    }
    m->drop[i] = (uint8_t)((m->drop[i] | drop) & ~need);
    m->need[i] = (uint8_t)((m->need[i] | need) & ~drop);
    m->used[i] = ++m->clock;
}
