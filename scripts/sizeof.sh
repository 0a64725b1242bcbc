#!/bin/sh
# sizeof.sh BUILDDIR - the memory of mote's structs and the largest stack
# frames, for the compiler and flags of the build (a cross compiler, a
# custom configuration): nothing is run, the figures are read from
# objects with nm, so it works for any target.
#   env: CC, NM, FLAGS (the build's compile flags, MOTE_* and
#   MOTE_CONFIG_FILE included), SRC (the sources for -fstack-usage),
#   TOP (how many frames to list; default 12), RAW=1 (print "name bytes"
#   for each struct instead, and no stack frames: scripts/doc_sizes.py
#   reads it)
set -eu
b=$1
mkdir -p "$b/tmp" "$b/stack"
cat > "$b/tmp/sizeof.c" <<'C'
/* Each array's size is a struct's: read back with nm -S. */
#include "mote/mote.h"
#include "mote/mote_agent.h"
#include "mote/mote_client.h"
#include "mote/mote_edit.h"
#include "mote/mote_journal.h"
#include "mote/mote_mcp.h"
#include "mote/mote_serve.h"
#include "mote/mote_mqtt.h"
#define S(name, type) char sizeof_##name[sizeof(type)]
S(loop, struct mote_loop);
S(job, struct mote_job);
S(timer, struct mote_timer_slot);
S(watch, struct mote_watch_slot);
S(llm_call, struct mote_llm_call);
S(conn, struct mote_conn);
S(tls_kept, char[MOTE_TLS_SESSION_CACHE * (MOTE_TLS_SESSION_BYTES + 64)]);
S(journal, struct mote_journal);
S(jbuf, struct mote_jbuf);
S(session, struct mote_session);
S(conv, struct mote_conv);
S(stream, struct mote_stream_area); /* the library's struct mote_stream */
S(tool_run, struct mote_tool_run);
S(mcp, struct mote_mcp);
S(mcp_server, struct mote_mcp_server);
S(edit, struct mote_edit);
S(serve, struct mote_serve);
S(mqtt, struct mote_mqtt);
S(serve_mqtt, struct mote_serve_mqtt);
char sizeof_serve_conn[MOTE_SERVE_CONN_SIZE];
C
# shellcheck disable=SC2086
$CC $FLAGS -fno-common -c "$b/tmp/sizeof.c" -o "$b/tmp/sizeof.o"
if [ "${RAW:-0}" = 1 ]; then
    $NM -S "$b/tmp/sizeof.o" | awk '$4 ~ /^sizeof_/ { n = $4; sub(/^sizeof_/, "", n); print n, $2 }' |
        while read -r n hex; do echo "$n $((0x$hex))"; done
    exit 0
fi
$NM -S "$b/tmp/sizeof.o" | awk '
    function hex(s,   i, r) {
        r = 0
        for (i = 1; i <= length(s); i++)
            r = r * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
        return r
    }
    $4 ~ /^sizeof_/ { n = $4; sub(/^sizeof_/, "", n); v[n] = hex($2) }
    END {
        printf "struct mote_loop             %9d  (jobs %d B each, timers %d, watches %d)\n", v["loop"], v["job"], v["timer"], v["watch"]
        printf "struct mote_llm_call         %9d  one model request (the client)\n", v["llm_call"]
        printf "struct mote_conn             %9d  a kept connection; its TLS state is a session of the backend (bss, MOTE_TLS_SESSIONS), TLS sessions kept for resumption about %d\n", v["conn"], v["tls_kept"]
        printf "struct mote_journal          %9d  one open journal, + struct mote_jbuf %d shared\n", v["journal"], v["jbuf"]
        printf "struct mote_session          %9d  the agent: conversation %d, stream slot %d, tool-run slot %d\n", v["session"], v["conv"], v["stream"], v["tool_run"]
        printf "struct mote_mcp              %9d  MCP servers (optional), %d per server\n", v["mcp"], v["mcp_server"]
        printf "struct mote_edit             %9d  the line editor (a terminal front end)\n", v["edit"]
        printf "struct mote_serve            %9d  mote serve: per connection %d (MOTE_SERVE_CONN_SIZE)\n", v["serve"], v["serve_conn"]
        printf "struct mote_mqtt             %9d  the MQTT client (mote serve --mqtt)\n", v["mqtt"]
        printf "struct mote_serve_mqtt       %9d  mote serve --mqtt: the client and the front door\n", v["serve_mqtt"]
    }'
# Stack frames: every source compiled again with -fstack-usage.
rm -f "$b/stack"/*.su
for f in $SRC; do
    o="$b/stack/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"
    # shellcheck disable=SC2086
    $CC $FLAGS -fstack-usage -c "$f" -o "$o" || exit 1
done
echo "largest stack frames (bytes, -fstack-usage; 'dynamic' also uses alloca/VLAs):"
cat "$b/stack"/*.su | awk -F'\t' '{ n = split($1, a, ":"); printf "%8d  %-9s %s:%s\n", $2, $3, a[1], a[n] }' |
    sed 's|[^ ]*/\([^/:]*:\)|\1|' | sort -rn | head -n "${TOP:-12}"
