#!/bin/sh
# deps.sh install|check - the Debian packages mote's build and tests need.
#   install: as root, installs them (apt-get); as another user, prints the line.
#   check:   exits 0 if everything is installed, 1 otherwise (quietly).
set -u
HOST="gcc g++ make libc6-dev binutils pkg-config libmbedtls-dev libjsmn-dev libcmocka-dev
      openssl ca-certificates python3 time procps clang libclang-rt-14-dev strace mosquitto mosquitto-clients
      libev-dev bzip2"
# The event loops of docs/EMBEDDING.md's programs (make test-embedding).
HOST="$HOST libglib2.0-dev libuv1-dev"
# systemd-analyze checks the example unit (make test-unit).
HOST="$HOST systemd"
# mote serve's page in a real browser (make test-page): headless Chromium
# driven through WebDriver.
HOST="$HOST chromium chromium-driver python3-selenium"
# promtool (Debian's prometheus) checks GET /v1/metrics' text format;
# shellcheck the OpenWrt package's scripts (make test-config, test-openwrt).
HOST="$HOST prometheus shellcheck"
# busybox's ash, OpenWrt's /bin/sh, runs the package's UCI translation
# (make test-openwrt).
HOST="$HOST busybox"
# Jinja2 renders the Home Assistant discovery templates as Home Assistant does
# (make test-fleet).
HOST="$HOST python3-jinja2"
CROSS="musl-tools gcc-arm-none-eabi libnewlib-arm-none-eabi libnewlib-dev gcc-aarch64-linux-gnu
       libc6-dev-arm64-cross qemu-user-static dpkg-dev xz-utils"
# armhf, the musl cross wrappers (make tiny CROSS_COMPILE=...),
# the Cortex-M run (make check-mcu), syscall counts and the wire's chart
# (make bench).
CROSS="$CROSS gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-system-arm picolibc-arm-none-eabi
       strace gnuplot-nox"
CROSS_ARCH="libmbedtls-dev:arm64 musl-dev:arm64 musl-dev:armhf"
# Node.js and npm run the real MCP servers of the tests: Debian's packages
# where no npm is on the PATH (a Node.js from elsewhere that brings its own
# npm, as NodeSource's does, is used as it is: Debian's npm would conflict
# with it).
NODE=
command -v npm >/dev/null 2>&1 || NODE="nodejs npm"

NPM_DIR=.deps/npm
NPM_PKGS="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31"
# The official clients of mote serve's MCP server and OpenAI-compatible endpoint.
NPM_PKGS="$NPM_PKGS @modelcontextprotocol/sdk@1.32.2 openai@6.30.1"
# A server with a large tool list (the MCP client's list parse; a dummy token lists).
NPM_PKGS="$NPM_PKGS @modelcontextprotocol/server-github@2025.4.8"
# The MCP conformance suite (its client scenarios run against mote; 0.1.16
# wants Node.js 22's fs.globSync: the test lends it on Node.js 20).
NPM_PKGS="$NPM_PKGS @modelcontextprotocol/conformance@0.1.16"

npm_missing() {
    command -v npm >/dev/null 2>&1 || return 1
    [ -x "$NPM_DIR/node_modules/.bin/mcp-server-everything" ] &&
        [ -x "$NPM_DIR/node_modules/.bin/mcp-server-filesystem" ] &&
        [ -x "$NPM_DIR/node_modules/.bin/mcp-server-github" ] &&
        [ -f "$NPM_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
        [ -f "$NPM_DIR/node_modules/openai/package.json" ] &&
        [ -f "$NPM_DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] && return 1
    return 0
}

npm_install() {
    # Real MCP servers for the tests, from the npm registry (not committed).
    command -v npm >/dev/null 2>&1 || { echo "deps: no npm: the real-MCP-server tests will skip"; return 0; }
    mkdir -p "$NPM_DIR"
    # shellcheck disable=SC2086
    (cd "$NPM_DIR" && timeout 600 npm install --no-audit --no-fund --loglevel=error $NPM_PKGS) ||
        echo "deps: npm install failed: the real-MCP-server tests will skip"
}

missing() {
    for p in $HOST $CROSS $CROSS_ARCH $NODE; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
            printf '%s ' "$p"
    done
}

case "${1:-check}" in
check)
    [ -z "$(missing)" ] && ! npm_missing && [ -f /etc/apt/sources.list.d/mote-trixie-src.sources ] &&
        exit 0
    exit 1
    ;;
install)
    need=$(missing)
    if [ -n "$need" ] || [ ! -f /etc/apt/sources.list.d/mote-src.sources ] ||
        [ ! -f /etc/apt/sources.list.d/mote-trixie-src.sources ]; then
        if [ "$(id -u)" != 0 ]; then
            if npm_missing; then
                npm_install
            fi
            echo "deps: run as root, or install these yourself:"
            echo "  sudo dpkg --add-architecture arm64 && sudo dpkg --add-architecture armhf && sudo apt-get update"
            echo "  sudo apt-get install --no-install-recommends $need"
            exit 1
        fi
        export DEBIAN_FRONTEND=noninteractive
        dpkg --add-architecture arm64
        dpkg --add-architecture armhf
        # Source packages (cmocka is built from Debian's source for the cross tests).
        if [ ! -f /etc/apt/sources.list.d/mote-src.sources ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
            sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
                > /etc/apt/sources.list.d/mote-src.sources
        fi
        # Debian 13's source packages, for mbedTLS 3.6 LTS (make tiny, make
        # MBEDTLS=3.6): a deb-src entry of its own, so the binary packages
        # stay bookworm's.
        if [ ! -f /etc/apt/sources.list.d/mote-trixie-src.sources ] &&
            [ -f /etc/apt/sources.list.d/debian.sources ]; then
            uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources | head -n 1)
            printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: %s\n' \
                "${uri:-http://deb.debian.org/debian}" /usr/share/keyrings/debian-archive-keyring.gpg \
                > /etc/apt/sources.list.d/mote-trixie-src.sources
        fi
        # A mirror in the middle of a sync makes update exit 100 (seen with
        # the armhf index): try again a few times, then go on with the indexes
        # that loaded; the install says whether what we need is there, and is
        # itself tried again after a fresh update.
        for try in 1 2 3; do
            apt-get update -qq && break
            echo "deps: apt-get update failed (try $try of 3)"
            sleep $((try * 5))
        done
        ok=
        for try in 1 2 3; do
            # shellcheck disable=SC2086
            if apt-get install -y -qq --no-install-recommends $HOST $CROSS $CROSS_ARCH $NODE; then
                ok=1
                break
            fi
            echo "deps: apt-get install failed (try $try of 3)"
            sleep $((try * 5))
            apt-get update -qq || true
        done
        [ -n "$ok" ] || exit 1
        [ -n "$NODE" ] && echo "deps: installed Debian's Node.js and npm (no npm was on the PATH)"
    else
        echo "deps: every package is installed"
    fi
    # after the packages: npm may have just come with them
    if npm_missing; then
        npm_install
    fi
    exit 0
    ;;
*)
    echo "usage: deps.sh install|check" >&2
    exit 2
    ;;
esac
