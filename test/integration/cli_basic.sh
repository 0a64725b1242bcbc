#!/bin/sh
# cli_basic.sh MOTE - the command line's basic contract: --help, --version,
# usage errors exit 2 with one line on stderr.
set -u
mote=$1
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # expect NAME CODE PATTERN(stdout+stderr) -- ARGS...
    name=$1 code=$2 pat=$3
    shift 4
    env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY "$mote" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    got=$?
    if [ "$got" != "$code" ]; then
        echo "FAIL $name: exit $got, want $code"; cat "$tmp/err"; fail=$((fail + 1)); return
    fi
    if ! cat "$tmp/out" "$tmp/err" | grep -q -- "$pat"; then
        echo "FAIL $name: output lacks '$pat'"; cat "$tmp/out" "$tmp/err"; fail=$((fail + 1)); return
    fi
    echo "ok   $name"
    pass=$((pass + 1))
}

expect help 0 'usage: mote' -- --help
expect help-lists-options 0 '--shutdown-timeout' -- --help
expect version 0 '^mote [0-9][0-9.]*$' -- --version
expect unknown-long 2 "unknown option '--frobnicate'" -- --frobnicate
expect unknown-short 2 "unknown option '-z'" -- -z
expect missing-value 2 'needs a value' -- --model
expect bad-provider 2 'unknown provider' -- --provider foo
expect bad-format 2 'unknown output format' -- --output-format xml
expect bad-timeout 2 'shutdown-timeout' -- --shutdown-timeout -5
expect bad-turns 2 'max-turns' -- --max-turns 0
expect stray-arg 2 'unexpected argument' -- hello
expect no-key 2 'no API key' -- -p hi
# A usage error is one line on stderr.
env -u ANTHROPIC_API_KEY "$mote" --frobnicate 2>"$tmp/err" >/dev/null
if [ "$(wc -l <"$tmp/err")" = 1 ]; then echo "ok   one-line-error"; pass=$((pass + 1));
else echo "FAIL one-line-error"; fail=$((fail + 1)); fi

echo "cli-basic: $pass passed, $fail failed"
[ "$fail" = 0 ]
