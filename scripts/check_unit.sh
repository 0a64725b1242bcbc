#!/bin/sh
# check_unit.sh [--dropin CONF] UNIT MOTE BUDGET [EXPECT...] - the systemd
# unit is valid and hardened as intended: `systemd-analyze verify` passes
# (with ExecStart pointed at MOTE, since verify needs the binary to exist),
# `systemd-analyze security --offline=yes` rates it at most BUDGET (0.0
# best, 10.0 worst), with CONF installed as its drop-in when given, and
# each EXPECT holds:
#   FIELD=on    systemd reads the protection FIELD as set (FIELD is the
#               json_field of `systemd-analyze security --json`, e.g.
#               ProtectProc, RestrictAddressFamilies_AF_NETLINK)
#   FIELD=off   systemd reads it as not set (the agent has that access)
#   line=TEXT   the unit has the line TEXT
set -u
dropin=
if [ "${1:-}" = --dropin ]; then dropin=$2; shift 2; fi
unit=$1 mote=$2 budget=$3
shift 3
command -v systemd-analyze >/dev/null 2>&1 || { echo "test-unit: systemd-analyze missing (make deps installs systemd)"; exit 1; }
command -v "${PYTHON:-python3}" >/dev/null 2>&1 || { echo "test-unit: python3 missing"; exit 1; }
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
name=$(basename "$unit")
# The same unit, its binary at a path that exists here, and no
# EnvironmentFile (verify reads it).
sed -e "s|/usr/local/bin/mote|$mote|" -e 's|^EnvironmentFile=|EnvironmentFile=-|' \
    "$unit" > "$d/$name"
what=$unit
if [ -n "$dropin" ]; then
    mkdir "$d/$name.d" && cp "$dropin" "$d/$name.d/$(basename "$dropin")" || exit 1
    what="$unit with $dropin"
fi
# Loaded by name from $d, so that systemd reads the drop-in as it would in
# /etc/systemd/system.
sa() { SYSTEMD_UNIT_PATH="$d:" systemd-analyze "$@"; }
fail=0
if ! out=$(sa verify "$name" 2>&1) || [ -n "$out" ]; then
    echo "test-unit: systemd-analyze verify $what:"; echo "$out"; fail=1
fi
score=$(sa security --offline=yes "$name" 2>/dev/null |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
    echo "test-unit: no exposure level from systemd-analyze security ($what)"; fail=1
elif ! awk -v s="$score" -v b="$budget" 'BEGIN { exit !(s <= b) }'; then
    echo "test-unit: $what: exposure $score is above the budget $budget:"
    sa security --offline=yes "$name" 2>/dev/null | grep '✗'
    fail=1
fi
if [ $# -gt 0 ]; then
    sa security --offline=yes --json=short "$name" > "$d/security.json" 2>/dev/null
    for e in "$@"; do
        case $e in
        line=*)
            grep -qxF -- "${e#line=}" "$unit" || { echo "test-unit: $unit has no line '${e#line=}'"; fail=1; }
            ;;
        *=on | *=off)
            got=$("${PYTHON:-python3}" -c '
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r["json_field"] == sys.argv[2]]
print(("on" if rows[0]["set"] else "off") if len(rows) == 1 else "absent")
' "$d/security.json" "${e%=*}") || got=unreadable
            if [ "$got" != "${e##*=}" ]; then
                echo "test-unit: $what: ${e%=*} is $got, expected ${e##*=}"; fail=1
            fi
            ;;
        *) echo "test-unit: bad expectation '$e'"; fail=1 ;;
        esac
    done
fi
echo "test-unit: $what: $([ $fail = 0 ] && echo ok || echo FAILED): exposure $score (budget $budget), $# expectations"
[ $fail = 0 ]
