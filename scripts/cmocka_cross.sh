#!/bin/sh
# cmocka_cross.sh CC OUTDIR [AR] - builds a static libcmocka.a for a cross
# target from Debian's cmocka source package (Debian ships no static
# cmocka). Nothing of cmocka is kept in the repository.
set -eu
cc=$1
out=$2
[ -f "$out/libcmocka.a" ] && exit 0
mkdir -p "$out/src"
cd "$out/src"
if ! ls cmocka_*.orig.tar.* >/dev/null 2>&1; then
    # Only the upstream tarball is used (apt checks it against the
    # archive's Sources index): a mirror that no longer has the .dsc or
    # the Debian tarball of this revision still gives it.
    apt-get source --download-only cmocka >/dev/null 2>&1 || true
    ls cmocka_*.orig.tar.* >/dev/null 2>&1 || {
        echo "cmocka_cross: cannot fetch Debian's cmocka source (run make deps as root)" >&2
        exit 1
    }
fi
tar xf "$(ls cmocka_*.orig.tar.* | grep -v "\.asc$" | head -n 1)"
dir=$(ls -d cmocka-*/ | head -n 1)
mkdir -p ../include
cp "$dir"include/cmocka.h "$dir"include/cmocka_private.h ../include/
"$cc" -O1 -c "$dir"src/cmocka.c -I"$dir"include -o ../cmocka.o \
    -DHAVE_SIGNAL_H=1 -DHAVE_SETJMP_H=1 -DHAVE_STDARG_H=1 -DHAVE_STDDEF_H=1 \
    -DHAVE_STDINT_H=1 -DHAVE_INTTYPES_H=1 -DHAVE_STDLIB_H=1 -DHAVE_STRING_H=1 \
    -DHAVE_STRINGS_H=1 -DHAVE_MALLOC_H=1 -DHAVE_STRUCT_TIMESPEC=1 \
    -DHAVE_CLOCK_GETTIME=1 -DHAVE_CLOCK_REALTIME=1 -DHAVE_SIGLONGJMP=1 -DHAVE_STRSIGNAL=1 \
    -D_UINTPTR_T -D_UINTPTR_T_DEFINED
ar=${3:-$(echo "$cc" | sed "s/gcc$/ar/")}
"$ar" rcs ../libcmocka.a ../cmocka.o
echo "cmocka_cross: built $out/libcmocka.a from $dir"
