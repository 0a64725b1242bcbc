#!/bin/sh
# check_unit.sh UNIT MOTE BUDGET - the systemd unit is valid and hardened:
# `systemd-analyze verify` passes (with ExecStart pointed at MOTE, since
# verify needs the binary to exist) and `systemd-analyze security
# --offline=yes` rates it at most BUDGET (0.0 best, 10.0 worst).
set -u
unit=$1 mote=$2 budget=$3
command -v systemd-analyze >/dev/null 2>&1 || { echo "test-unit: systemd-analyze missing (make deps installs systemd)"; exit 1; }
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
# The same unit, its binary at a path that exists here, and no
# EnvironmentFile (verify reads it).
sed -e "s|/usr/local/bin/mote|$mote|" -e 's|^EnvironmentFile=|EnvironmentFile=-|' \
    "$unit" > "$d/mote.service"
fail=0
if ! out=$(systemd-analyze verify "$d/mote.service" 2>&1) || [ -n "$out" ]; then
    echo "test-unit: systemd-analyze verify $unit:"; echo "$out"; fail=1
fi
score=$(systemd-analyze security --offline=yes "$d/mote.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for mote.service: \([0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
    echo "test-unit: no exposure level from systemd-analyze security"; fail=1
elif ! awk -v s="$score" -v b="$budget" 'BEGIN { exit !(s <= b) }'; then
    echo "test-unit: exposure $score is above the budget $budget:"
    systemd-analyze security --offline=yes "$d/mote.service" 2>/dev/null | grep '✗'
    fail=1
fi
echo "test-unit: verify $([ $fail = 0 ] && echo ok || echo failed), exposure $score (budget $budget)"
[ $fail = 0 ]
