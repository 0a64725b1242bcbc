#!/bin/sh
# check_core_rules.sh DIR - the portable core allocates nothing and includes
# only the freestanding-friendly C headers and mote's own.
set -u
dir=${1:-src}
fail=0
pass=0
heap=$(grep -nE '\b(malloc|calloc|realloc|free|aligned_alloc|strdup)[[:space:]]*\(' "$dir"/*.c "$dir"/*.h 2>/dev/null |
    grep -vE ':[0-9]+:[[:space:]]*(/?\*|//)')
if [ -n "$heap" ]; then
    echo "core-rules: heap calls in $dir:"; echo "$heap"; fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' "$dir"/*.c "$dir"/*.h include/mote/*.h 2>/dev/null |
    grep -vE '<(stdint|stddef|stdbool|string|jsmn)\.h>')
if [ -n "$bad" ]; then
    echo "core-rules: headers beyond stdint/stddef/stdbool/string:"; echo "$bad"; fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
# Every limit takes part in the configuration's signature (mote_loop_init
# refuses a program built with other values only if the value is hashed).
cfg=include/mote/mote_config.h
missing=
sig=$(sed -n '/^#define MOTE_SIG_0_/,$p' "$cfg")
for m in $(sed -n 's/^#define \(MOTE_[A-Z0-9_]*\) .*/\1/p' "$cfg" | grep -vE '^MOTE_(CONFIG_H|SIG_.*|CONFIG_SIGNATURE)$'); do
    printf '%s\n' "$sig" | grep -qF ", $m)" || missing="$missing $m"
done
if [ -n "$missing" ]; then
    echo "core-rules: not in MOTE_CONFIG_SIGNATURE:$missing"; fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
# Every overridable default in any public header (#ifndef MOTE_X, then
# #define MOTE_X VALUE) may size or lay out a struct the program owns, so
# it is in the signature wherever it is defined. The exceptions are values
# no struct depends on, each named here with its reason.
not_layout='MOTE_TLS_CA_FILE' # a path string, read by the TLS backend only
missing=
for m in $(awk '/^#[[:space:]]*ifndef[[:space:]]+MOTE_/ { n = $2; if ((getline) > 0 &&
                $1 == "#define" && $2 == n && NF > 2) print n }' include/mote/*.h); do
    case " $not_layout " in *" $m "*) continue ;; esac
    printf '%s\n' "$sig" | grep -qF ", $m)" || missing="$missing $m"
done
if [ -n "$missing" ]; then
    echo "core-rules: overridable in include/ but not in MOTE_CONFIG_SIGNATURE:$missing"
    fail=$((fail + 1))
else
    pass=$((pass + 1))
fi
echo "core-rules: $pass passed, $fail failed"
[ "$fail" = 0 ]
