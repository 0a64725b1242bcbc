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
echo "core-rules: $pass passed, $fail failed"
[ "$fail" = 0 ]
