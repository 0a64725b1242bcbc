#!/bin/sh
# mbedtls.sh SERIES OUT CONFIG CC AR CFLAGS - mbedTLS built from Debian's
# source package, for the builds that do not use the system's library
# (make tiny, make MBEDTLS=3.6). Nothing of mbedTLS is kept in the
# repository: the source comes from Debian's archive (apt-get source) into
# a cache beside OUT.
#
#   SERIES  2.28 (Debian 12's, bookworm) or 3.6 (Debian 13's, trixie: the
#           deb-src entry scripts/deps.sh adds)
#   OUT     where the tree goes: OUT/include, OUT/library/lib*.a
#   CONFIG  "debian": the configuration Debian's own package is built with
#           (upstream's default plus what debian/rules sets), in the tree's
#           headers, so a program compiles against it with -IOUT/include
#           alone, as against libmbedtls-dev; or a header's path, passed as
#           MBEDTLS_CONFIG_FILE (its directory on the include path)
#   CC, AR, CFLAGS  the compiler, archiver and flags of the library
#
# Rebuilt only when the series, configuration, compiler or flags change.
set -eu
series=$1
out=$2
config=$3
cc=$4
ar=$5
cflags=$6
case "$series" in
2.28) release=bookworm ;;
3.6) release=trixie ;;
*)
    echo "mbedtls: the series is 2.28 or 3.6, not '$series'" >&2
    exit 2
    ;;
esac
cache="$(dirname "$out")/mbedtls-src-$series"
mkdir -p "$cache"
tarball=$(ls "$cache"/mbedtls_"$series".*.orig.tar.* 2>/dev/null | head -n 1 || true)
if [ -z "$tarball" ]; then
    (cd "$cache" && apt-get source --download-only "mbedtls/$release" >/dev/null 2>&1) || {
        echo "mbedtls: cannot fetch Debian's mbedtls $series source (mbedtls/$release;" \
            "make deps as root adds the deb-src entries)" >&2
        exit 1
    }
    tarball=$(ls "$cache"/mbedtls_"$series".*.orig.tar.* 2>/dev/null | head -n 1 || true)
    [ -n "$tarball" ] || { echo "mbedtls: no $series source in $cache" >&2; exit 1; }
fi
if [ "$config" = debian ]; then
    defs=
    cstamp=debian
else
    defs="-I$(cd "$(dirname "$config")" && pwd) -DMBEDTLS_CONFIG_FILE='\"$(basename "$config")\"'"
    cstamp=$(cksum < "$config")
fi
stamp="$(basename "$tarball") $cstamp $cc $cflags"
if [ -f "$out/library/libmbedtls.a" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi
rm -rf "$out"
mkdir -p "$out"
tar xf "$tarball" -C "$out" --strip-components=1
if [ "$config" = debian ]; then
    # debian/rules of the series: upstream's default with these set
    for opt in MBEDTLS_THREADING_C MBEDTLS_THREADING_PTHREAD MBEDTLS_CMAC_C MBEDTLS_SSL_DTLS_SRTP; do
        "${PYTHON:-python3}" "$out/scripts/config.py" -f "$out/include/mbedtls/$( [ "$series" = 2.28 ] && echo config.h || echo mbedtls_config.h)" set "$opt"
    done
    [ "$series" = 2.28 ] && for opt in MBEDTLS_HAVEGE_C MBEDTLS_MD2_C MBEDTLS_MD4_C; do
        "${PYTHON:-python3}" "$out/scripts/config.py" -f "$out/include/mbedtls/config.h" set "$opt"
    done
fi
make -j2 -C "$out/library" static CC="$cc" AR="$ar" CFLAGS="$cflags $defs" \
    >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
echo "$stamp" > "$out/stamp"
echo "mbedtls: $series built in $out ($( [ "$config" = debian ] && echo "Debian's configuration" || echo "$config"))"
