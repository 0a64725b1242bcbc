#!/bin/sh
# check_tree.sh [--top | --seeds] FUZZDIR - the repository holds only what
# belongs to the product: its top level only the entries listed below (a
# test or a session that leaves a file there fails here), and each fuzz
# target's seed corpus only its minimised set (the inputs that cover what
# the corpus covers: make fuzz-min rewrites a corpus to it). --top checks
# only the first (make check runs it after every test group), --seeds only
# the second (a group of its own there).
set -eu
cd "$(dirname "$0")/.."
what=both
case "${1:-}" in --top) what=top; shift ;; --seeds) what=seeds; shift ;; esac
fz=${1:-build/fuzz}
fail=0
top=0
if [ "$what" != seeds ]; then
top=1
# What the top level holds: the product's files, and what the build and
# `make deps` make (build/, .deps/), which .gitignore keeps out of git.
allowed=".ci .deps .git .gitignore Makefile README.md budgets build docs examples include
mote.pc.in packaging port scripts src test"
for e in $(ls -A); do
    case " $(echo $allowed | tr '\n' ' ') " in
    *" $e "*) ;;
    *) echo "check-tree: '$e' at the top of the repository is not one of its entries"; fail=1 ;;
    esac
done
fi
n=0
[ "$what" = top ] || for d in test/fuzz/seeds/*/; do
    t=$(basename "$d")
    [ -x "$fz/$t" ] || { echo "check-tree: $fz/$t not built (make fuzz)"; fail=1; continue; }
    out=$(mktemp -d)
    "$fz/$t" -set_cover_merge=1 -use_counters=0 "$out" "$d" >"$out.log" 2>&1 ||
        { tail -n 5 "$out.log"; echo "check-tree: $t: the merge failed"; fail=1; }
    have=$(ls "$d" | wc -l)
    need=$(ls "$out" | wc -l)
    if [ "$have" -ne "$need" ]; then
        echo "check-tree: $d holds $have inputs where $need cover the same (make fuzz-min)"
        fail=1
    fi
    rm -rf "$out" "$out.log"
    n=$((n + 1))
done
[ "$fail" = 0 ] || exit 1
case $what in
top) echo "check-tree: 1 passed, 0 failed (the top level)" ;;
seeds) echo "check-tree: 1 passed, 0 failed ($n fuzz corpora minimised)" ;;
*) echo "check-tree: 2 passed, 0 failed (the top level; $n fuzz corpora minimised)" ;;
esac
