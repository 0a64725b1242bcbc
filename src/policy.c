/*
 * policy.c - a per-tool approval policy from JSON (see mote_agent.h):
 * what a service reads from its --policy file, so that no frontend has
 * to parse it itself.
 */
#include <string.h>

#include "mote/mote_agent.h"
#include "mote/mote_time.h"
#include "util.h"

int mote_approval_parse(const char *s, enum mote_approval *a)
{
    if (strcmp(s, "ask") == 0)
        *a = MOTE_APPROVE_ASK;
    else if (strcmp(s, "allow") == 0)
        *a = MOTE_APPROVE_ALLOW;
    else if (strcmp(s, "deny") == 0)
        *a = MOTE_APPROVE_DENY;
    else
        return MOTE_ERR_INVAL;
    return 0;
}

/* A string token's value as an approval. */
static int approval_of(const struct mote_json *js, int t, enum mote_approval *a)
{
    char v[16];

    if (mote_json_type_of(js, t) != MOTE_JSON_STRING || mote_json_cstr(js, t, v, sizeof(v)) < 0)
        return MOTE_ERR_INVAL;
    return mote_approval_parse(v, a);
}

int mote_policy_parse(struct mote_policy *pol, const char *text, size_t len, char *err,
                      size_t cap)
{
    struct mote_json *js = &pol->json;
    int rc, t, k, i;

    pol->has_default = false;
    pol->approval = MOTE_APPROVE_ASK;
    pol->nrules = 0;
    if ((rc = mote_json_parse_object(js, text, len, err, cap)) < 0)
        return rc;
    t = mote_json_member(js, 0, "default");
    if (t >= 0) {
        if (approval_of(js, t, &pol->approval) < 0)
            return mote_why(err, cap, MOTE_ERR_BADMSG, "\"default\" is ask, allow or deny", NULL,
                       NULL);
        pol->has_default = true;
    }
    pol->has_timeout = false;
    pol->timeout_ms = 0;
    t = mote_json_member(js, 0, "timeout");
    if (t >= 0) {
        char v[32];
        uint64_t ms = 0;

        if (mote_json_type_of(js, t) != MOTE_JSON_STRING || mote_json_cstr(js, t, v, sizeof(v)) < 0 ||
            mote_duration_parse(v, &ms) < 0 || ms > MOTE_APPROVAL_TIMEOUT_MAX_MS)
            return mote_why(err, cap, MOTE_ERR_BADMSG,
                            "\"timeout\" is a duration such as \"10m\", \"90s\" or \"none\" (at "
                            "most 24 days)",
                            NULL, NULL);
        pol->has_timeout = true;
        pol->timeout_ms = (uint32_t)ms;
    }
    t = mote_json_member(js, 0, "tools");
    if (t < 0)
        return 0;
    if (mote_json_type_of(js, t) != MOTE_JSON_OBJECT)
        return mote_why(err, cap, MOTE_ERR_BADMSG,
                   "\"tools\" maps tool names to ask, allow or deny", NULL, NULL);
    for (i = 0, k = t + 1; i < js->tok[t].size; i++, k = mote_json_skip(js, k + 1)) {
        struct mote_tool_rule *r = &pol->rules[pol->nrules];
        int n;

        if (pol->nrules >= MOTE_SERVE_RULES_MAX) {
            return mote_why_num(err, cap, MOTE_ERR_FULL, "more than ", MOTE_SERVE_RULES_MAX,
                                " tool rules (MOTE_SERVE_RULES_MAX)");
        }
        n = mote_json_cstr(js, k, pol->names[pol->nrules], sizeof(pol->names[0]));
        if (n <= 0)
            return mote_why(err, cap, MOTE_ERR_BADMSG,
                            "a tool name is 1 to 64 bytes, with no NUL (\\u0000)", NULL, NULL);
        if (approval_of(js, k + 1, &r->approval) < 0)
            return mote_why(err, cap, MOTE_ERR_BADMSG, "\"tools\": \"", pol->names[pol->nrules],
                       "\" must be ask, allow or deny");
        r->name = pol->names[pol->nrules];
        pol->nrules++;
    }
    return 0;
}
