#!/bin/sh
# roots.sh IN OUT - the certificates of bundle IN (PEM) as DER, one after
# another, in OUT: what make CA_BUNDLE=IN builds into the binary (a
# quarter smaller than PEM; port/tls_roots.c reads either). A file that
# holds no PEM block is taken as DER already.
set -eu
in=$1
out=$2
tmp="$out.d"
rm -rf "$tmp" && mkdir -p "$tmp"
if grep -q -- "-----BEGIN CERTIFICATE-----" "$in"; then
    awk -v dir="$tmp" '
        /-----BEGIN CERTIFICATE-----/ { n++; f = 1; next }
        /-----END CERTIFICATE-----/ { f = 0; next }
        f { print > (dir "/" sprintf("%05d", n) ".b64") }' "$in"
    : > "$out.tmp"
    for f in "$tmp"/*.b64; do
        base64 -d "$f" >> "$out.tmp"
    done
    mv "$out.tmp" "$out"
else
    cp "$in" "$out"
fi
rm -rf "$tmp"
echo "roots: $(grep -c -- "-----BEGIN CERTIFICATE-----" "$in" || true) certificates from $in, $(wc -c < "$out") bytes of DER in $out"
