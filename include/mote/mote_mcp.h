/*
 * mote_mcp.h - MCP servers over stdio (newline-delimited JSON-RPC 2.0).
 *
 * A server is a child process (through the port's process group, so it
 * runs under a supervisor and never outlives mote), driven by fd watches:
 * initialize -> notifications/initialized -> tools/list (following
 * nextCursor) -> ready. Server pings are answered, other server requests
 * refused with -32601, notifications (also before the initialize answer)
 * accepted. Each request has a deadline. Tool calls are jobs
 * (mote_mcp_call_ops); cancelling one sends notifications/cancelled.
 *
 * Tools are offered as "SERVER__TOOL" (characters outside [A-Za-z0-9_-]
 * become '_', at most 64 bytes: the providers' rules).
 *
 * All memory is in struct mote_mcp (sizes in mote_config.h).
 */
#ifndef MOTE_MCP_H
#define MOTE_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_json.h"
#include "mote/mote_llm.h"
#include "mote/mote_loop.h"

enum mote_mcp_state {
    MOTE_MCP_OFF = 0,
    MOTE_MCP_STARTING, /* initialize sent */
    MOTE_MCP_LISTING,  /* tools/list in progress */
    MOTE_MCP_READY,
    MOTE_MCP_FAILED,   /* could not start or initialise, or died */
    MOTE_MCP_CLOSED,   /* disconnected */
};

struct mote_mcp_tool {
    char name[64];    /* SERVER__TOOL, offered to the model */
    char remote[MOTE_MCP_NAME_MAX]; /* the server's own name for it */
    char desc[MOTE_MCP_DESC_MAX];
    char schema[MOTE_MCP_SCHEMA_MAX];
};

struct mote_mcp_call;

struct mote_mcp_server {
    struct mote_mcp *m;
    char name[32];
    const char *const *argv;
    const char *const *envp;
    uint8_t state;       /* enum mote_mcp_state */
    int64_t pid;
    int in_fd, out_fd, err_fd;
    mote_watch_id w_in, w_out, w_err;
    mote_timer_id timer;
    bool exited;
    bool gone;           /* its stdout ended: waiting briefly for the exit */
    uint8_t gone_tries;
    int status;
    uint32_t started_ms;
    int64_t next_id;
    int64_t req_id;      /* 0: none pending */
    uint8_t req_kind;
    uint32_t req_deadline;
    struct mote_mcp_call *call; /* the call waiting for req_id */
    bool dropped_line;
    bool relist;         /* tools/list_changed came: list again when free */
    bool relisting;      /* the new list replaces the old one when it comes */
    bool paused;         /* its output waits: a request's body is being sent */
    size_t inlen, outlen, outoff, loglen;
    unsigned ntools, skipped_tools;
    char cursor[256];
    char errmsg[200];
    struct mote_mcp_tool tools[MOTE_MCP_MAX_TOOLS];
    char log[MOTE_MCP_LOG_MAX];          /* the tail of its stderr */
    char outbuf[MOTE_MCP_OUT_MAX];
    char inbuf[MOTE_MCP_LINE_MAX];
};

/* Called for each thing worth telling the user (started, failed,
 * disconnect steps). */
typedef void (*mote_mcp_log_fn)(void *arg, const char *server, const char *msg);

struct mote_mcp {
    struct mote_loop *loop;
    unsigned n;
    uint32_t timeout_ms;  /* per request */
    unsigned holds;       /* requests whose tool list must not change */
    /* disconnecting */
    bool dc;
    bool dc_termed, dc_killed;
    uint32_t dc_t0, dc_budget;
    mote_mcp_log_fn log;
    void *log_arg;
    struct mote_json json;
    char text[MOTE_MCP_LINE_MAX]; /* unescape scratch */
    struct mote_mcp_server srv[MOTE_MAX_MCP_SERVERS];
};

void mote_mcp_init(struct mote_mcp *m, struct mote_loop *loop, mote_mcp_log_fn log, void *arg);

/* Adds a server (argv and envp must outlive it; envp NULL inherits).
 * Returns its index or MOTE_ERR_FULL / MOTE_ERR_INVAL (bad name). */
int mote_mcp_add(struct mote_mcp *m, const char *name, const char *const *argv,
                 const char *const *envp);

/* Starts every server at once; returns without waiting. A server that
 * cannot be spawned is FAILED (and logged); the others go on. */
void mote_mcp_start_all(struct mote_mcp *m);

/* True when no server is still starting or listing. */
bool mote_mcp_settled(const struct mote_mcp *m);

/* Fills `defs` (up to `max`) with the tools of the ready servers. */
unsigned mote_mcp_tool_defs(const struct mote_mcp *m, struct mote_tool_def *defs, unsigned max);

/* Finds an offered tool name: server index and tool index, or false. */
bool mote_mcp_find(const struct mote_mcp *m, const char *name, unsigned *srv, unsigned *tool);

/* Keeps the offered tool lists as they are (a tools/list_changed is
 * fetched and applied only when no hold is left): a request's tool list
 * is fixed from the first byte counted to the last one sent. */
void mote_mcp_hold(struct mote_mcp *m);
void mote_mcp_unhold(struct mote_mcp *m);

/* Disconnects every server in parallel within `budget_ms`: close stdin,
 * wait, SIGTERM the group at 2/5 of the budget, SIGKILL it at 4/5, reap.
 * Each step is logged. Never waits itself: the caller's loop drives it by
 * calling mote_mcp_disconnect_poll (every few ms: a child's exit has no
 * wake-up of its own here). */
void mote_mcp_disconnect_begin(struct mote_mcp *m, uint32_t budget_ms);

/* One pass of the disconnect (with `force`: SIGKILL every group now and
 * stop waiting). Returns > 0 (servers still exiting: call again), or,
 * once done, 0 (all gone) or -N (N had not exited: their supervisors end
 * them). */
int mote_mcp_disconnect_poll(struct mote_mcp *m, bool force);

/* ---- tool calls ---- */

struct mote_mcp_call {
    struct mote_mcp *m;
    unsigned srv, tool;
    const char *args;    /* a JSON object */
    size_t args_len;
    bool sent, done, is_error;
    int64_t id;
    mote_job_id job;
    size_t len;
    char result[MOTE_MCP_RESULT_MAX]; /* text content, NUL-terminated */
};

/* Prepares a call of tool `tool` of server `srv` with `args`. */
void mote_mcp_call_init(struct mote_mcp_call *c, struct mote_mcp *m, unsigned srv, unsigned tool,
                        const char *args, size_t args_len);

/* Task ops for the call's job; it ends DONE with c->result / c->is_error
 * (an MCP error or a dead server is a tool error, not a job failure), or
 * CANCELLED (notifications/cancelled sent). */
extern const struct mote_task_ops mote_mcp_call_ops;

/* ---- configuration files ----
 * The usual {"mcpServers": {"NAME": {"command": "...", "args": [...],
 * "env": {...}}}} format, parsed from a buffer (the frontend reads the
 * file). A server's environment is `base_env` (the frontend's minimal
 * one: PATH, HOME, LANG) plus what its "env" names: never the API keys
 * unless it names them. */

struct mote_mcp_conf {
    size_t used;
    char arena[MOTE_MCP_CONF_ARENA];  /* the strings argv and envp point to */
    const char *argv[MOTE_MAX_MCP_SERVERS][MOTE_MCP_CONF_ARGS + 2];
    const char *envp[MOTE_MAX_MCP_SERVERS][MOTE_MCP_CONF_ENV + MOTE_MCP_CONF_ENV + 1];
    struct mote_json json;
};

/* Adds the servers of configuration `text` (len bytes) to `m` (with
 * mote_mcp_add); `cf` must outlive `m`. `base_env` (NULL-terminated
 * "NAME=VALUE" strings, at most MOTE_MCP_CONF_ENV; may be NULL) starts
 * every server's environment. Returns 0, or < 0 with one line of
 * explanation in `err` (cap bytes): MOTE_ERR_BADMSG (not the format),
 * MOTE_ERR_TOO_LARGE (over MOTE_JSON_MAX_TOKENS values or the arena),
 * MOTE_ERR_FULL (more than MOTE_MAX_MCP_SERVERS), MOTE_ERR_EXIST (two
 * servers of one name), MOTE_ERR_INVAL (a bad server name). */
int mote_mcp_conf_parse(struct mote_mcp_conf *cf, struct mote_mcp *m, const char *text,
                        size_t len, const char *const *base_env, char *err, size_t cap);

/* ---- what is left after a crash ----
 * The port's supervisor ends a server's processes when the server exits
 * or mote goes away; when mote, the supervisors and the servers are all
 * killed at once, a process the server started in a session of its own
 * (`setsid`) would be left running. So each running server's process tag
 * is recorded in the state: "mcp/TAG.run" (one JSON line: "server",
 * "tag", "pgid", "start"), written and synced before the server is
 * talked to, held locked while it runs (st_lock) and removed when it
 * ends; on the next start, what a record names whose mote no longer
 * holds it is ended through proc_kill_recorded (the group only while its
 * leader has the recorded start time; any process of this user carrying
 * the tag) and the record removed. Storage names below the port's root. */

/* Bytes of a record's storage name ("mcp/" TAG ".run", NUL). */
#define MOTE_MCP_LEFT_NAME_MAX (MOTE_PROC_TAG_MAX + 12)

/* Told, by a sweep, that `ended` processes left by server `server` ("" if
 * the record did not say) were ended. */
typedef void (*mote_mcp_left_fn)(void *arg, const char *server, unsigned ended);

/* Records server `server`'s process `pid` (a proc_spawn handle): its
 * record's name goes into `name` (`cap` bytes, MOTE_MCP_LEFT_NAME_MAX),
 * and the returned handle holds the record's lock until
 * mote_mcp_left_clear. Returns the handle (>= 0), MOTE_ERR_NOSYS (the
 * port has no tags or no leftover-kill path: nothing to record), or a
 * storage failure (nothing is left on disk). Blocks for one synced
 * write. */
int mote_mcp_left_record(const struct mote_port *p, const char *server, int64_t pid, char *name,
                         size_t cap) MOTE_MUST_CHECK;

/* The server of a record ended (its processes are gone): the record is
 * removed, then its handle closed. Nothing when `h` < 0. */
void mote_mcp_left_clear(const struct mote_port *p, int h, const char *name);

/* Ends what the records of earlier motes name (records that a running
 * mote holds are left alone) and removes those records; `scratch` holds
 * a record's JSON tokens while it is read; `said` (may be NULL) hears
 * each server whose processes were ended. Returns how many processes
 * were ended, or < 0 when the records could not be listed (or a kill
 * failed and none was ended). Blocks while it reads the records and the
 * port looks for the tags (on POSIX, /proc). */
int mote_mcp_left_sweep(const struct mote_port *p, struct mote_json *scratch,
                        mote_mcp_left_fn said, void *arg);

#endif /* MOTE_MCP_H */
