#!/bin/sh
# cross_smoke.sh MOTE_AARCH64 - the static aarch64 mote, under qemu, runs a
# tool round against the local test LLM server (plain HTTP on loopback).
set -eu
mote=$1
tmp=$(mktemp -d)
trap 'kill $(cat "$tmp/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$tmp"' EXIT
echo '[{"text":"Running it.","tool":"shell","input":{"command":"echo cross-ok"}}]' > "$tmp/s.json"
python3 test/llm_server.py --port-file "$tmp/port" --script "$tmp/s.json" --lifetime 120 &
echo $! > "$tmp/pid"
i=0
while [ ! -f "$tmp/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
out=$(ANTHROPIC_API_KEY=k qemu-aarch64-static "$mote" -p "go" --yes --state-dir "$tmp/st" \
    --base-url "http://127.0.0.1:$(cat "$tmp/port")")
case "$out" in
*"The tool returned: cross-ok"*) echo "cross-smoke: 1 passed, 0 failed" ;;
*) echo "cross-smoke: unexpected output: $out"; echo "cross-smoke: 0 passed, 1 failed"; exit 1 ;;
esac
