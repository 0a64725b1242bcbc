#!/bin/sh
# tiny.sh BUILDDIR [CROSS_COMPILE] - the smallest mote: static, musl, and
# mbedTLS built from Debian's source package with mote's minimal
# configuration (port/tiny/mbedtls_config.h: TLS 1.2 client, ECDHE,
# AES-GCM, ChaCha20-Poly1305, roots looked up as the chain asks, all TLS
# memory from a fixed arena). Nothing of mbedTLS is kept in the repository.
#
#   (none)                 BUILDDIR/tiny/mote          the host's arch (musl-gcc)
#   aarch64-linux-gnu-     BUILDDIR/tiny-aarch64/mote  (musl-dev:arm64's wrapper)
#   arm-linux-gnueabihf-   BUILDDIR/tiny-armhf/mote    (musl-dev:armhf's wrapper)
#
# Environment: TINY_CFLAGS (added to mote's CFLAGS, e.g. -DMOTE_CONFIG_FILE=...),
# CA_BUNDLE (roots built in, see the Makefile), SERVE (1: with mote serve;
# the default 0 leaves it out, about 40 KB), PAGE (0: mote serve without its
# page; it follows SERVE).
set -eu
b=$1
x=${2:-}
if [ -z "$x" ]; then
    t="$b/tiny"
    cc=musl-gcc
    strip=strip
else
    . scripts/cross_names.sh
    t="$b/tiny-$name"
    strip=${x}strip
fi
command -v "$cc" >/dev/null 2>&1 || {
    echo "tiny: no $cc (make deps installs musl-tools, musl-dev:arm64 and musl-dev:armhf)" >&2
    exit 1
}
src="$b/tiny-src"
mkdir -p "$src" "$t/jsmn"
cp /usr/include/jsmn.h "$t/jsmn/"
if ! ls "$src"/mbedtls_*.orig.tar.gz >/dev/null 2>&1; then
    # the source of the mbedTLS whose headers are installed (the indexes may
    # offer a newer one, of another major version, that this build does not take)
    v=$(dpkg-query -W -f='${Version}\n' libmbedtls-dev 2>/dev/null | head -n 1)
    (cd "$src" && apt-get source --download-only "mbedtls${v:+=$v}" >/dev/null 2>&1) || {
        echo "tiny: cannot fetch Debian's mbedtls source (run make deps as root)" >&2
        exit 1
    }
fi
# mbedTLS, rebuilt when its configuration, compiler or flags change. Link-
# time optimisation over mbedTLS and mote together saves about 5 KB; the
# objects stay fat, so the cross unit tests link them without it.
mcflags="-Os -flto -ffat-lto-objects -fno-asynchronous-unwind-tables -fno-unwind-tables -ffunction-sections -fdata-sections"
stamp="$(cksum < port/tiny/mbedtls_config.h) $cc $mcflags"
if [ ! -f "$t/mbedtls/library/libmbedtls.a" ] || [ "$(cat "$t/mbedtls/stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$t/mbedtls"
    mkdir -p "$t/mbedtls"
    tar xzf "$(ls "$src"/mbedtls_*.orig.tar.gz | head -n 1)" -C "$t/mbedtls" --strip-components=1
    make -j2 -C "$t/mbedtls/library" static CC="$cc" AR="${x}gcc-ar" \
        CFLAGS="$mcflags -I$(pwd)/port/tiny -DMBEDTLS_CONFIG_FILE='\"mbedtls_config.h\"'" \
        >"$t/mbedtls-build.log" 2>&1 || { tail -n 20 "$t/mbedtls-build.log"; exit 1; }
    echo "$stamp" > "$t/mbedtls/stamp"
fi
# Our code without unwind tables (nothing unwinds: no C++, no backtraces);
# no separate code segment, no RELRO (a static binary has no dynamic
# relocations to protect) and data placed right after the code in the file
# (common-page-size=64): each of them padded the file to a page. Other
# flags than last time: built from scratch.
cflags="-Os -flto -fno-asynchronous-unwind-tables -fno-unwind-tables -I$t/mbedtls/include -Iport/tiny -DMBEDTLS_CONFIG_FILE='\"mbedtls_config.h\"' -I$t/jsmn ${TINY_CFLAGS:-}"
page=${PAGE:-${SERVE:-0}}
if [ "$(cat "$t/flags" 2>/dev/null)" != "$cc $cflags ${CA_BUNDLE:-} $page" ]; then
    rm -rf "$t/build"
    echo "$cc $cflags ${CA_BUNDLE:-} $page" > "$t/flags"
fi
# SERVE changes only which objects are linked (both sets are kept): the
# other one than last time is linked again.
if [ "$(cat "$t/serve" 2>/dev/null)" != "${SERVE:-0}" ]; then
    rm -f "$t/build/mote"
    echo "${SERVE:-0}" > "$t/serve"
fi
# (-Wno-stringop-overflow: at link time gcc repeats a false alarm about
# mbedTLS 2.28's ssl_calc_finished_tls_sha384, which the mbedTLS build
# itself does not show)
make --no-print-directory CC="$cc" AR="${x}gcc-ar" CROSS_COMPILE="$x" STATIC=1 BUILDDIR="$t/build" \
    SERVE="${SERVE:-0}" PAGE="$page" CFLAGS="$cflags" \
    LDFLAGS="-flto=auto -Wno-stringop-overflow -L$t/mbedtls/library -Wl,-z,noseparate-code -Wl,-z,norelro -Wl,-z,common-page-size=64" \
    ${CA_BUNDLE:+CA_BUNDLE="$CA_BUNDLE"} "$t/build/mote"
"$strip" -o "$t/mote" "$t/build/mote"
echo "tiny: $t/mote, $(wc -c < "$t/mote") bytes (static, musl, minimal mbedTLS${x:+, $x})"
