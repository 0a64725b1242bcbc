#!/bin/sh
# cross_check.sh BUILDDIR CROSS_COMPILE QEMU - the unit tests and a TLS
# round of the tiny build for one cross target, run under qemu-user:
#   1. make tiny CROSS_COMPILE=... (static musl, minimal mbedTLS);
#   2. cmocka from Debian's source for the target; every unit test built
#      static with musl and that mbedTLS, run under QEMU;
#   3. the tiny mote: a tool round over TLS (smoke.sh) and the trust-store
#      tests (test_tls.py) under QEMU.
# Environment from the Makefile: UNIT_SRC, LIB_SRC (core, POSIX port, TLS,
# test port), CROSS_CFLAGS (mote's required flags). Exits non-zero if
# anything fails, after running everything.
set -u
b=$1
x=$2
qemu=$3
fail=0
make --no-print-directory tiny BUILDDIR="$b" CROSS_COMPILE="$x" >/dev/null || exit 1
. scripts/cross_names.sh
t="$b/tiny-$name"
u="$t/unit"
mkdir -p "$u/obj"
sh scripts/cmocka_cross.sh "$cc" "$u/cmocka" "${x}ar" || exit 1
flags="$CROSS_CFLAGS -O1 -g -Iport/test -I$u/cmocka/include -I$t/jsmn -I$t/mbedtls/include \
    -Iport/tiny -DMBEDTLS_CONFIG_FILE=\"mbedtls_config.h\" -D_UINTPTR_T -D_UINTPTR_T_DEFINED"
libs="$u/cmocka/libcmocka.a -L$t/mbedtls/library -lmbedtls -lmbedx509 -lmbedcrypto"
objs=
for f in $LIB_SRC; do
    o="$u/obj/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"
    # shellcheck disable=SC2086
    $cc $flags -c "$f" -o "$o" || exit 1
    objs="$objs $o"
done
sh scripts/budget.sh "tiny-$name" "$(wc -c < "$t/mote")" || fail=1
"${PYTHON:-python3}" scripts/doc_sizes.py "$b" --figure "tiny-$name" "$(wc -c < "$t/mote")" || fail=1
passed=0
for t_src in $UNIT_SRC; do
    n=$(basename "$t_src" .c)
    # shellcheck disable=SC2086
    $cc $flags -fno-lto -static -o "$u/$n" "$t_src" $objs $libs || exit 1
    echo "== $u/$n ($qemu)"
    if "$qemu" "$u/$n"; then passed=$((passed + 1)); else fail=1; fi
done
echo "cross-unit ($name): $passed of $(echo $UNIT_SRC | wc -w) programs passed"
sh test/integration/smoke.sh "$t/mote" "$qemu" || fail=1
"${PYTHON:-python3}" test/integration/test_tls.py "$t/mote" "$qemu" || fail=1
exit $fail
