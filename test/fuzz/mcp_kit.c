/* mcp_kit.c - the MCP fuzz targets' shared checks and outcome hash
 * (mcp_kit.h). */
#include <string.h>

#include "mcp_kit.h"

static bool name_ok(const char *n)
{
    size_t i;

    for (i = 0; n[i] != '\0'; i++) {
        char c = n[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return i > 0 && i <= 63;
}

void mcp_kit_check_tools(struct mote_json *js, const struct mote_mcp_server *s)
{
    unsigned k, q;

    if (s->ntools > MOTE_MCP_MAX_TOOLS)
        __builtin_trap();
    for (k = 0; k < s->ntools; k++) {
        const struct mote_mcp_tool *t = &s->tools[k];
        size_t n = strlen(t->schema);

        if (mote_json_parse(js, t->schema, n) <= 0 || !mote_utf8_valid(t->schema, n) ||
            mote_json_type_of(js, 0) != MOTE_JSON_OBJECT)
            __builtin_trap(); /* a schema that would break the request body */
        if (!name_ok(t->name))
            __builtin_trap();
        for (q = 0; q < k; q++) {
            if (strcmp(s->tools[q].name, t->name) == 0)
                __builtin_trap(); /* two tools offered under one name */
        }
    }
}

void mcp_kit_port(struct mote_port *port, uint32_t (*now)(void *),
                  int (*wait)(void *, struct mote_pollfd *, unsigned, int32_t))
{
    memset(port, 0, sizeof(*port));
    port->size = sizeof(*port);
    port->version = MOTE_PORT_VERSION;
    port->now_ms = now;
    port->wait = wait;
}

void mcp_kit_client(struct mote_loop *loop, struct mote_port *port, struct mote_mcp *mcp)
{
    if (mote_loop_init(loop, port) != 0)
        __builtin_trap();
    mote_mcp_init(mcp, loop, NULL, NULL);
}

bool mcp_kit_call(struct mote_loop *loop, struct mote_mcp *mcp, struct mote_mcp_call *call,
                  mote_job_id *job)
{
    if (*job != 0 || mcp->srv[0].state != MOTE_MCP_READY || mcp->srv[0].ntools == 0)
        return false;
    mote_mcp_call_init(call, mcp, 0, 0, "{\"a\":1}", 7);
    if (mote_job_spawn(loop, "mcp", &mote_mcp_call_ops, call, NULL, job) != 0)
        __builtin_trap();
    return true;
}

bool mcp_kit_call_over(struct mote_loop *loop, mote_job_id job)
{
    int st = job == 0 ? MOTE_JOB_DONE : mote_job_state(loop, job);

    return st != MOTE_JOB_RUNNING && st != MOTE_JOB_CANCELLING;
}

void mcp_kit_mix(uint32_t *hash, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        *hash = (*hash ^ b[i]) * 16777619u;
}

void mcp_kit_mix_outcome(uint32_t *hash, struct mote_loop *loop, const struct mote_mcp_server *s,
                         mote_job_id job, const struct mote_mcp_call *call)
{
    unsigned k;

    mcp_kit_mix(hash, &s->state, sizeof(s->state));
    mcp_kit_mix(hash, s->errmsg, strlen(s->errmsg));
    mcp_kit_mix(hash, &s->ntools, sizeof(s->ntools));
    mcp_kit_mix(hash, &s->skipped_tools, sizeof(s->skipped_tools));
    for (k = 0; k < s->ntools; k++) {
        mcp_kit_mix(hash, s->tools[k].name, strlen(s->tools[k].name));
        mcp_kit_mix(hash, s->tools[k].remote, strlen(s->tools[k].remote));
        mcp_kit_mix(hash, s->tools[k].desc, strlen(s->tools[k].desc));
        mcp_kit_mix(hash, s->tools[k].schema, strlen(s->tools[k].schema));
    }
    if (job != 0) {
        int st = mote_job_state(loop, job);

        mcp_kit_mix(hash, &st, sizeof(st));
        mcp_kit_mix(hash, &call->done, sizeof(call->done));
        mcp_kit_mix(hash, &call->is_error, sizeof(call->is_error));
        mcp_kit_mix(hash, call->result, call->len);
    }
}
