/*
 * mcp_left.c - what is left of MCP servers when mote died with them: each
 * running server's process tag recorded in the state (a small file held
 * locked while the server runs, removed when it ends), and, on the next
 * start, every process still carrying a tag whose file no running mote
 * holds ended through the port's leftover-kill path (proc_kill_recorded,
 * as recovery ends what is left of a tool).
 *
 * The port's supervisor ends a server's group, and what the server left
 * behind elsewhere (a `setsid` child), when the server exits or mote goes
 * away; only when mote, the supervisors and the servers are all killed at
 * once is anything left, and then only these records know it.
 */
#include "mote/mote_mcp.h"

#include <string.h>

#include "mote/mote_port.h"
#include "util.h"

#define LEFT_DIR "mcp"
#define LEFT_EXT ".run"
#define LEFT_LINE_MAX 256 /* a record: {"server", "tag", "pgid", "start"} */

_Static_assert(sizeof(LEFT_DIR) + MOTE_PROC_TAG_MAX + sizeof(LEFT_EXT) <= MOTE_MCP_LEFT_NAME_MAX,
               "MOTE_MCP_LEFT_NAME_MAX (mote_mcp.h) does not hold a record's name");

static void unlock_remove(const struct mote_port *p, int h, const char *name)
{
    /* removed first: a sweep never finds it unlocked while it is there */
    (void)p->st_remove(p->ctx, name);
    p->st_close(p->ctx, h);
}

int mote_mcp_left_record(const struct mote_port *p, const char *server, int64_t pid, char *name,
                         size_t cap)
{
    char tag[MOTE_PROC_TAG_MAX], line[LEFT_LINE_MAX];
    struct mote_sb sb, nb;
    struct mote_jw w;
    int64_t g = 0, holder = 0;
    uint64_t start = 0;
    int h, rc, k;

    if (cap > 0)
        name[0] = '\0';
    if (!MOTE_PORT_HAS(p, proc_tag) || !MOTE_PORT_HAS(p, proc_kill_recorded) ||
        mote_port_missing(p, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS;
    rc = p->proc_tag(p->ctx, pid, tag, sizeof(tag));
    if (rc <= 0)
        return rc < 0 ? rc : MOTE_ERR_NOSYS;
    if (MOTE_PORT_HAS(p, proc_group))
        g = p->proc_group(p->ctx, pid);
    if (g > 1 && MOTE_PORT_HAS(p, proc_start_time))
        start = p->proc_start_time(p->ctx, g);
    mote_sb_init(&nb, name, cap);
    mote_sb_join(&nb, LEFT_DIR "/", tag, LEFT_EXT);
    if (nb.len + 1 >= cap)
        return MOTE_ERR_TOO_LARGE;
    mote_sb_init(&sb, line, sizeof(line));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "server", server);
    mote_jw_kstr(&w, "tag", tag);
    mote_jw_kint(&w, "pgid", g > 1 ? g : 0);
    mote_jw_kint(&w, "start", start > 0 && start <= (uint64_t)INT64_MAX ? (int64_t)start : 0);
    mote_jw_obj_end(&w);
    if (w.err != 0 || mote_sb_put(&sb, "\n", 1) < 0)
        return MOTE_ERR_TOO_LARGE;
    if ((rc = p->st_mkdir(p->ctx, LEFT_DIR)) < 0)
        return rc;
    h = p->st_open(p->ctx, name, MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE | MOTE_ST_PRIVATE);
    if (h < 0)
        return h;
    /* Locked before it says anything: a sweep takes a record with a line
     * and no lock for one whose mote is gone. A sweep's lock test may
     * hold the lock a moment: tried again, then the record is given up
     * (removed, not left empty for ever). */
    rc = 0;
    for (k = 0; MOTE_PORT_HAS(p, st_lock) && k < 8; k++) {
        rc = p->st_lock(p->ctx, h, MOTE_LOCK_HOLD, &holder);
        if (rc != MOTE_ERR_LOCKED)
            break;
    }
    if (rc < 0) {
        p->st_close(p->ctx, h);
        (void)p->st_remove(p->ctx, name);
        name[0] = '\0';
        return rc;
    }
    rc = p->st_append(p->ctx, h, line, sb.len);
    if (rc >= 0 && (size_t)rc != sb.len)
        rc = MOTE_ERR_NOSPC;
    if (rc >= 0)
        rc = p->st_sync(p->ctx, h);
    if (rc < 0) {
        unlock_remove(p, h, name);
        name[0] = '\0';
        return rc;
    }
    return h;
}

void mote_mcp_left_clear(const struct mote_port *p, int h, const char *name)
{
    if (h >= 0 && name != NULL && name[0] != '\0')
        unlock_remove(p, h, name);
}

/* What a sweep keeps while it goes through the records. */
struct sweep {
    const struct mote_port *p;
    struct mote_json *js;
    mote_mcp_left_fn said;
    void *arg;
    int ended;  /* processes ended so far */
    int err;    /* the first failure */
};

/* Ends what record `name` (in LEFT_DIR) names, if no running mote holds
 * it, and removes it. A record that is empty (being written this very
 * moment, or cut by a crash before its line) is left alone; one that
 * cannot be read as a record is removed. */
static int sweep_one(void *arg, const char *entry)
{
    struct sweep *sw = arg;
    const struct mote_port *p = sw->p;
    const struct mote_json *js = sw->js;
    char name[MOTE_MCP_LEFT_NAME_MAX], line[LEFT_LINE_MAX], tag[MOTE_PROC_TAG_MAX], server[32];
    size_t n = strlen(entry);
    int64_t holder = 0, g = 0, start = 0;
    int h, got, k;

    if (n <= sizeof(LEFT_EXT) - 1 || strcmp(entry + n - (sizeof(LEFT_EXT) - 1), LEFT_EXT) != 0 ||
        mote_str_join(name, sizeof(name), LEFT_DIR "/", entry, "") + 1 >= sizeof(name))
        return 0; /* not a record (a temporary file, say) */
    h = p->st_open(p->ctx, name, MOTE_ST_READ | MOTE_ST_PRIVATE);
    if (h < 0) {
        if (h == MOTE_ERR_NOTREG)
            (void)p->st_remove(p->ctx, name); /* planted, never followed */
        return 0;
    }
    /* Read first, then the lock: a record's line is written only under
     * its lock, so a line and then no lock means its mote is gone; the
     * other order could take a record created, not yet locked, and then
     * written by a mote that runs. */
    got = p->st_read(p->ctx, h, 0, line, sizeof(line));
    if (got == 0 || (MOTE_PORT_HAS(p, st_lock) &&
                     p->st_lock(p->ctx, h, MOTE_LOCK_TEST, &holder) == MOTE_ERR_LOCKED)) {
        p->st_close(p->ctx, h);
        return 0; /* being written, or its mote runs: the server is that mote's */
    }
    tag[0] = server[0] = '\0';
    if (got > 0 && mote_json_parse(sw->js, line, (size_t)got) > 0 &&
        mote_json_type_of(js, 0) == MOTE_JSON_OBJECT &&
        mote_json_cstr(js, mote_json_member(js, 0, "tag"), tag, sizeof(tag)) > 0) {
        (void)mote_json_int(js, mote_json_member(js, 0, "pgid"), &g);
        (void)mote_json_int(js, mote_json_member(js, 0, "start"), &start);
        if (mote_json_cstr(js, mote_json_member(js, 0, "server"), server, sizeof(server)) < 0)
            server[0] = '\0';
        /* (the port checks the tag, and the group against its start) */
        k = p->proc_kill_recorded(p->ctx, g > 1 ? g : 0, start > 0 ? (uint64_t)start : 0, tag);
        if (k > 0) {
            sw->ended += k;
            if (sw->said != NULL)
                sw->said(sw->arg, server, (unsigned)k);
        } else if (k < 0 && sw->err == 0) {
            sw->err = k;
        }
    }
    p->st_close(p->ctx, h);
    (void)p->st_remove(p->ctx, name);
    return 0;
}

int mote_mcp_left_sweep(const struct mote_port *p, struct mote_json *scratch,
                        mote_mcp_left_fn said, void *arg)
{
    struct sweep sw;
    int rc;

    if (!MOTE_PORT_HAS(p, proc_kill_recorded) || mote_port_missing(p, MOTE_PORT_STORAGE) != NULL)
        return 0;
    memset(&sw, 0, sizeof(sw));
    sw.p = p;
    sw.js = scratch;
    sw.said = said;
    sw.arg = arg;
    rc = p->st_list(p->ctx, LEFT_DIR, sweep_one, &sw);
    if (rc < 0 && rc != MOTE_ERR_NOENT)
        return rc;
    return sw.err < 0 && sw.ended == 0 ? sw.err : sw.ended;
}
