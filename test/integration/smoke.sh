#!/bin/sh
# smoke.sh MOTE [RUNNER] - a mote built elsewhere (static aarch64 under
# qemu, the tiny musl build) runs a tool round over HTTPS against the local
# test LLM server, with a throw-away CA.
set -eu
mote=$1
runner=${2:-}
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$tmp"' EXIT
sh test/make_certs.sh "$tmp/certs"
echo '[{"text":"Running it.","tool":"shell","input":{"command":"echo smoke-ok"}}]' > "$tmp/s.json"
"${PYTHON:-python3}" test/llm_server.py --port-file "$tmp/port" --script "$tmp/s.json" \
    --cert "$tmp/certs/server.crt" --key "$tmp/certs/server.key" --lifetime 120 &
echo $! > "$tmp/pid"
i=0
while [ ! -f "$tmp/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
out=$(ANTHROPIC_API_KEY=k $runner "$mote" -p "go" --yes --state-dir "$tmp/st" \
    --ca-file "$tmp/certs/ca.crt" --base-url "https://localhost:$(cat "$tmp/port")")
case "$out" in
*"The tool returned: smoke-ok"*) echo "smoke ($(basename "$mote")${runner:+ under $runner}): 1 passed, 0 failed" ;;
*) echo "smoke: unexpected output: $out"; echo "smoke: 0 passed, 1 failed"; exit 1 ;;
esac
