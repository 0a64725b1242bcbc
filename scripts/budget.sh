#!/bin/sh
# budget.sh NAME BYTES - fails when BYTES is over budgets/NAME (the last
# line of the file that is not a comment; the file says why that much).
set -eu
f="budgets/$1"
if [ ! -f "$f" ]; then
    echo "budget $1: no budget file $f ($2 bytes)"
    exit 0
fi
limit=$(grep -v '^#' "$f" | grep -v '^[[:space:]]*$' | tail -n 1)
if [ "$2" -gt "$limit" ]; then
    echo "budget $1: $2 bytes, over its budget of $limit ($f): make it smaller, or raise"
    echo "budget $1: the budget in $f with the reason"
    exit 1
fi
echo "budget $1: $2 of $limit bytes ($((limit - $2)) left)"
