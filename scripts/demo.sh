#!/bin/sh
# demo.sh BUILDDIR - mote end to end on this machine, no network, no key:
# a throw-away CA, the local test LLM server over HTTPS on loopback, and a
# short conversation in which the model calls a tool.
set -eu
b=$1
d="$b/demo"
rm -rf "$d/state"
mkdir -p "$d"
sh test/make_certs.sh "$d/certs"
cat > "$d/script.json" <<'JSON'
[{"text": "Let me look at this machine first.",
  "tool": "shell", "input": {"command": "uname -sm && echo \"$(ls | wc -l) entries here\""}},
 {"text": "This is a Linux machine; the shell told me its kernel and architecture. Everything ran locally: the model was the bundled test server, over HTTPS with a throw-away CA."}]
JSON
rm -f "$d/port"
"${PYTHON:-python3}" test/llm_server.py --port-file "$d/port" --script "$d/script.json" \
    --cert "$d/certs/server.crt" --key "$d/certs/server.key" --lifetime 60 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT INT TERM
i=0
while [ ! -f "$d/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$d/port")
echo "\$ mote -p 'What machine is this?' --yes   (model: local test server on https://localhost:$port)"
ANTHROPIC_API_KEY=demo-key "$b/mote" -p "What machine is this?" --yes \
    --base-url "https://localhost:$port" --ca-file "$d/certs/ca.crt" --state-dir "$d/state"
echo
echo "The conversation journal ($d/state/conversations):"
cat "$d"/state/conversations/*.jsonl
