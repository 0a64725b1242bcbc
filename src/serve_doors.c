/*
 * serve_doors.c - which front door a connection's response belongs to:
 * the engine's fill, ping and done handlers (httpd.h) sent to the MCP
 * transport (serve_mcp_http.c), the OpenAI door (serve_oai.c), or the
 * API's own streams (serve_stream.c).
 */
#include "serve_int.h"

static uint8_t door_of(const struct serve *sv, const struct mote_httpd_conn *c)
{
    return sv->mcp.chans[c - sv->http.conns].kind;
}

bool mote_serve_door_fill(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    uint8_t door = door_of(sv, c);

    if (door == SC_OAI_STREAM || door == SC_OAI_JSON)
        return mote_serve_oai_fill(sv, c);
    if (door != SC_NONE)
        return mote_serve_mcp_http_fill(sv, c);
    return mote_serve_stream_fill(sv, c);
}

void mote_serve_door_ping(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    uint8_t door = door_of(sv, c);

    if (door == SC_OAI_STREAM || door == SC_OAI_JSON)
        mote_serve_oai_ping(sv, c);
    else if (door != SC_NONE)
        mote_serve_mcp_http_ping(sv, c);
    else
        mote_serve_stream_ping(sv, c);
}

void mote_serve_door_done(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    uint8_t door = door_of(sv, c);

    if (door == SC_OAI_STREAM || door == SC_OAI_JSON)
        mote_serve_oai_done(sv, c);
    else if (door != SC_NONE)
        mote_serve_mcp_http_done(sv, c);
    mote_serve_stream_done(sv, c);
}
