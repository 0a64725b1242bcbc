#!/bin/sh
# run.sh BENCHDIR - the benchmarks behind docs/BENCHMARKS.md.
set -eu
b=$1
fx=../shared/fixtures
[ -d "$fx" ] || { echo "bench: ../shared/fixtures is absent; skipped"; exit 0; }
echo "== SSE + JSON + provider decoding (median of 9 runs)"
"$b/bench_parse" "$fx" 200
if command -v valgrind >/dev/null; then
    i1=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$b/bench_parse" "$fx" 1 2>&1 |
        sed -n 's/.*Collected : //p')
    i2=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$b/bench_parse" "$fx" 2 2>&1 |
        sed -n 's/.*Collected : //p')
    ev=$("$b/bench_parse" "$fx" 1 | sed -n 's/.*events per round \([0-9]*\).*/\1/p')
    bytes=$("$b/bench_parse" "$fx" 1 | sed -n 's/bytes per round \([0-9]*\).*/\1/p')
    # rounds=2 runs 9 x 2 rounds; rounds=1 one round: 17 rounds apart.
    echo "callgrind: $(( (i2 - i1) / (17 * ev) )) instructions per event," \
         "$(( (i2 - i1) / (17 * bytes) )) per byte"
fi
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp"/pid* 2>/dev/null) 2>/dev/null || true; rm -rf "$tmp"' EXIT
sh test/make_certs.sh "$tmp/certs"
"${PYTHON:-python3}" test/llm_server.py --port-file "$tmp/port" --cert "$tmp/certs/server.crt" \
    --key "$tmp/certs/server.key" --lifetime 120 & echo $! > "$tmp/pid1"
while [ ! -f "$tmp/port" ]; do sleep 0.05; done
port=$(cat "$tmp/port")
if command -v valgrind >/dev/null; then
    for ca in "$tmp/certs/ca.crt" /etc/ssl/certs/ca-certificates.crt; do
        [ -f "$ca" ] || continue
        valgrind --tool=massif --massif-out-file="$tmp/massif" "$b/llm_probe" anthropic \
            "https://localhost:$port" --ca-file "$ca" >/dev/null 2>&1 || true
        peak=$(grep mem_heap_B "$tmp/massif" | sed 's/.*=//' | sort -n | tail -n 1)
        echo "TLS request, heap peak (massif) with CA file $ca: $peak bytes"
    done
fi
echo "== the agent"
"${PYTHON:-python3}" test/bench/agent_bench.py "$(dirname "$b")"
for f in "$(dirname "$b")/mote"; do
    strip -o "$b/mote.stripped" "$f" && echo "build/mote stripped (dynamic): $(wc -c < "$b/mote.stripped") bytes"
done
echo "== footprint (issue 12): sizes, RSS, CPU and system calls of a streamed TLS turn"
for t in tiny tiny-aarch64 tiny-armhf; do
    [ -f "$(dirname "$b")/$t/mote" ] && echo "$t/mote stripped: $(wc -c < "$(dirname "$b")/$t/mote") bytes"
done
if [ -f "$(dirname "$b")/tiny/mote" ] && [ -x "$(dirname "$b")/rss_exec" ]; then
    "${PYTHON:-python3}" test/bench/footprint_bench.py "$(dirname "$b")/rss_exec" \
        "tiny=$(dirname "$b")/tiny/mote" "default=$(dirname "$b")/mote" --runs=20
fi
echo "== a cancel under a flood (issue 11.4)"
"${PYTHON:-python3}" test/bench/flood_bench.py "$(dirname "$b")" 20
echo "== MCP: a tool call through each transport (issue 25)"
"${PYTHON:-python3}" test/bench/mcp_bench.py "$(dirname "$b")" 60
echo "== mote serve (issue 14)"
"${PYTHON:-python3}" test/bench/serve_bench.py "$(dirname "$b")" 10
echo "== the wire: round trips, kept connections, resumed TLS (issue 24)"
"${PYTHON:-python3}" test/bench/wire_bench.py "$(dirname "$b")" --out "$b/wire.dat" --mote "$(dirname "$b")/mote" \
    --chart docs/wire.svg ${MOTE_BEFORE:+--mote-before "$MOTE_BEFORE"}
echo "== mote serve: health while slow work runs"
"${PYTHON:-python3}" test/bench/health_bench.py "$(dirname "$b")" 5
echo "== a long conversation, before and after compaction (issue 13)"
"${PYTHON:-python3}" test/bench/compaction_bench.py "$(dirname "$b")" 500
