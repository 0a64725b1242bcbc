#!/bin/sh
# tiny.sh BUILDDIR - the smallest mote: static, musl, and mbedTLS built from
# Debian's source package with mote's minimal configuration
# (port/tiny/mbedtls_config.h: TLS 1.2 client, ECDHE, AES-GCM,
# ChaCha20-Poly1305, all TLS memory from a fixed arena). Nothing of mbedTLS
# is kept in the repository.
set -eu
b=$1
t="$b/tiny"
mkdir -p "$t/src" "$t/jsmn"
cp /usr/include/jsmn.h "$t/jsmn/"
if [ ! -f "$t/mbedtls/library/libmbedtls.a" ]; then
    cd "$t/src"
    if ! ls mbedtls_*.orig.tar.* >/dev/null 2>&1; then
        apt-get source --download-only mbedtls >/dev/null 2>&1 || {
            echo "tiny: cannot fetch Debian's mbedtls source (run make deps as root)" >&2
            exit 1
        }
    fi
    rm -rf ../mbedtls
    mkdir ../mbedtls
    tar xzf "$(ls mbedtls_*.orig.tar.gz | head -n 1)" -C ../mbedtls --strip-components=1
    cd - >/dev/null
    make -j2 -C "$t/mbedtls/library" static CC=musl-gcc \
        CFLAGS="-Os -ffunction-sections -fdata-sections -I$(pwd)/port/tiny -DMBEDTLS_CONFIG_FILE='\"mbedtls_config.h\"'" \
        >"$t/mbedtls-build.log" 2>&1 || { tail -n 20 "$t/mbedtls-build.log"; exit 1; }
fi
make --no-print-directory CC=musl-gcc STATIC=1 BUILDDIR="$t/build" \
    CFLAGS="-Os -I$t/mbedtls/include -Iport/tiny -DMBEDTLS_CONFIG_FILE='\"mbedtls_config.h\"' -I$t/jsmn" \
    LDFLAGS="-L$t/mbedtls/library" "$t/build/mote"
strip -o "$t/mote" "$t/build/mote"
echo "tiny: $t/mote, $(wc -c < "$t/mote") bytes (static, musl, minimal mbedTLS)"
