#!/bin/sh
# page.sh SRCDIR OUTDIR - mote serve's page (GET /) for the binary: the
# HTML of SRCDIR/page.html with page.css and page.js put in its <style>
# and <script> (lines that are only a comment and leading blanks dropped),
# gzip-compressed, and a C file (OUTDIR/page.c) that holds it (.incbin of
# OUTDIR/page.S) with its Content-Security-Policy: the script and the
# style allowed by their SHA-256 hashes, nothing else. Debian's tools only
# (awk, sed, gzip, openssl, base64); the output depends on the sources
# alone (gzip -n: no name, no time).
set -eu
src=$1
out=$2
mkdir -p "$out"
sed -e 's/^[[:space:]]*//' -e '/^\/\/.*$/d' -e '/^$/d' "$src/page.js" > "$out/page.js"
sed -e 's/^[[:space:]]*//' -e '/^$/d' "$src/page.css" > "$out/page.css"
for f in page.js page.css; do
    if grep -q '</' "$out/$f"; then
        echo "page: $f holds '</': it would end its element early" >&2
        exit 1
    fi
done
# @JS@ and @CSS@ become the files' bytes exactly (each ends with a newline)
awk -v js="$out/page.js" -v css="$out/page.css" '
function put(file,   l) { while ((getline l < file) > 0) printf "%s\n", l; close(file) }
{
    if ((i = index($0, "@JS@")) > 0) { printf "%s", substr($0, 1, i - 1); put(js); print substr($0, i + 4) }
    else if ((i = index($0, "@CSS@")) > 0) { printf "%s", substr($0, 1, i - 1); put(css); print substr($0, i + 5) }
    else print
}' "$src/page.html" > "$out/page.html"
hash() { openssl dgst -sha256 -binary "$1" | base64; }
js_hash=$(hash "$out/page.js")
css_hash=$(hash "$out/page.css")
gzip -9 -n -c "$out/page.html" > "$out/page.html.gz"
raw=$(wc -c < "$out/page.html")
gz=$(wc -c < "$out/page.html.gz")
csp="default-src 'none'; script-src 'sha256-$js_hash'; style-src 'sha256-$css_hash'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
cat > "$out/page.S" <<EOF
.section .rodata.mote_page_gz,"a"
.globl mote_page_gz
mote_page_gz:
.incbin "$(cd "$out" && pwd)/page.html.gz"
.section .note.GNU-stack,"",%progbits
EOF
cat > "$out/page.c" <<EOF
/* page.c - mote serve's page, made by scripts/page.sh from
 * examples/serve/page/: $raw bytes of HTML, $gz gzip-compressed. */
#include "mote/mote_serve.h"

extern const unsigned char mote_page_gz[];

static const struct mote_serve_page page = {
    mote_page_gz, $gz, true,
    "$csp",
};

const struct mote_serve_page *const mote_cli_page = &page;
EOF
echo "page: $raw bytes, $gz gzip-compressed"
