#!/bin/sh
# mcu_run.sh MCUDIR NAME... - runs each test_NAME.elf on a Cortex-M4
# (qemu-system-arm -M mps2-an386, semihosting: printf and the fixtures'
# files reach the host), each under a timeout, and judges it by the
# summary line test/mcu/runner.c prints ("mcu: NAME: P passed, 0 failed,
# ..."): qemu's own exit status is not reliable with semihosting. Then
# prints the flash and RAM each program needs: flash = text + data
# (arm-none-eabi-size), RAM = data + bss + the stack and heap the run
# used.
set -u
d=$1
shift
fail=0
total=0
sizes=""
for n in "$@"; do
    elf="$d/test_$n.elf"
    log="$d/test_$n.log"
    timeout 300 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$elf" > "$log" 2>&1
    line=$(grep '^mcu: ' "$log" | tail -n 1)
    case "$line" in
    "mcu: $n: "*" passed, 0 failed,"*)
        p=$(echo "$line" | sed 's/^mcu: [^:]*: \([0-9]*\) passed.*/\1/')
        if [ "$p" -gt 0 ]; then
            echo "$line"
            total=$((total + p))
        else
            echo "mcu: $n: no test ran"; fail=1
        fi
        ;;
    *)
        tail -n 30 "$log"
        echo "mcu: $n: FAILED (${line:-no summary line: crashed or timed out})"
        fail=1
        ;;
    esac
    # text data bss, and the stack/heap figures of the run
    set -- $(arm-none-eabi-size "$elf" | tail -n 1)
    st=$(echo "$line" | sed -n 's/.*stack \([0-9]*\) B, heap \([0-9]*\) B.*/\1 \2/p')
    sizes="$sizes$n $1 $2 $3 ${st:-0 0}
"
done
echo "program       flash (text+data)   RAM (data+bss+stack+heap used)"
printf '%s' "$sizes" | while read -r n text data bss stack heap; do
    [ -n "$n" ] || continue
    printf '%-12s %10d B %18d B  (bss %d, stack %d, heap %d)\n' "$n" $((text + data)) \
        $((data + bss + stack + heap)) "$bss" "$stack" "$heap"
done
if [ $fail = 0 ]; then
    echo "check-mcu: $total tests passed on Cortex-M4 (qemu-system-arm mps2-an386)"
else
    echo "check-mcu: failures above"
fi
exit $fail
