#!/bin/sh
# test_openwrt.sh MOTE - the OpenWrt package (packaging/openwrt/): its
# scripts pass shellcheck, and /etc/config/mote becomes a mote.conf that
# the real `mote serve` takes, under busybox's ash (OpenWrt's /bin/sh) and
# dash, with functions.sh's config API from functions_stub.sh:
#   - the shipped /etc/config/mote (its paths moved to a temporary
#     directory) starts MOTE, which serves the configured model; a changed
#     model written again and SIGHUP (what procd's reload_signal sends)
#     makes mote serve the new one, without a restart;
#   - names and values: `_` as `-`, lists as repeated keys, quotes, `#`
#     and spaces kept, empty options and the init script's own left out,
#     other sections ignored; a mistyped option reaches mote, which
#     refuses it with its line;
#   - a value with a line break or both quotes is refused with its name,
#     and the file in place is left as it was;
#   - the init script's start_service gives procd the command, the user,
#     respawn, reload_signal HUP, the file, and a term_timeout of the
#     drain plus 10 s; service_triggers adds the reload trigger for mote;
#   - the package's Makefile prepares, builds and installs mote with
#     test/openwrt/sdk/ standing for the SDK.
# shellcheck shell=dash
set -u
mote=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
pkg=$root/packaging/openwrt
t=$(mktemp -d /tmp/mote-openwrt.XXXXXX) || exit 1
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$t"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# ---- shellcheck --------------------------------------------------------------
if command -v shellcheck >/dev/null 2>&1; then
	if out=$(cd "$pkg/files" && shellcheck -x mote.init mote-conf.sh 2>&1) &&
		out2=$(shellcheck "$here/functions_stub.sh" "$0" 2>&1); then
		ok
	else
		bad "shellcheck: $out ${out2:-}"
	fi
else
	bad "shellcheck missing (make deps)"
fi

# run SHELL SCRIPT...: the package's functions with the stub, in SHELL
run() {
	local sh="$1"

	shift
	UCI_CONFIG_DIR=$t/config $sh -c ". '$here/functions_stub.sh'; . '$pkg/files/mote-conf.sh'; $*"
}

# wait_for CMD: until CMD succeeds; fails after 30 s, or at once when the
# mote serve being waited for ($pid) has ended
wait_for() {
	local end=$(($(date +%s) + 30))

	while ! eval "$1" >/dev/null 2>&1; do
		[ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.05
	done
}

health() {
	curl -s --max-time 5 --unix-socket "$t/run/mote.sock" http://mote/v1/health
}

shells=dash
if command -v busybox >/dev/null 2>&1; then shells="busybox_sh dash"; else bad "busybox missing (make deps)"; fi
busybox_sh() { busybox sh "$@"; }

for shell in $shells; do
	sh=$shell
	[ "$shell" = busybox_sh ] && sh="busybox sh"
	rm -rf "${t:?}/config" "${t:?}/state" "${t:?}/run" "${t:?}/etc"
	mkdir -p "$t/config" "$t/state" "$t/run" "$t/etc"
	printf 'sk-ant-test-key\n' > "$t/etc/api-key"
	chmod 0600 "$t/etc/api-key"

	# ---- the shipped configuration, started and reloaded -----------------
	sed -e "s|option enabled '0'|option enabled '1'|" \
		-e "s|'/etc/mote/api-key'|'$t/etc/api-key'|" \
		-e "s|'/etc/mote/state'|'$t/state'|" \
		-e "s|'/var/run/mote/mote.sock'|'$t/run/mote.sock'|" \
		"$pkg/files/mote.config" > "$t/config/mote"
	if ! err=$(run "$sh" "mote_conf_write '$t/mote.conf'" 2>&1); then
		bad "$shell: the shipped configuration: $err"
		continue
	fi
	for want in 'provider = "anthropic"' 'model = "claude-sonnet-4-5"' \
		"api-key-file = \"$t/etc/api-key\"" "state-dir = \"$t/state\"" \
		'shutdown-timeout = "30000"' 'allow = "list_dir"' 'allow = "read_file"' \
		'ask = "shell"' 'approval = "ask"'; do
		if grep -qxF "$want" "$t/mote.conf"; then ok; else bad "$shell: no line '$want' in $(cat "$t/mote.conf")"; fi
	done
	if grep -q 'enabled\|respawn' "$t/mote.conf"; then bad "$shell: the init script's options in mote.conf"; else ok; fi
	"$mote" serve --config "$t/mote.conf" 2> "$t/serve.log" &
	pid=$!
	if wait_for 'health | grep -q "\"model\":\"claude-sonnet-4-5\""'; then
		ok
		sed -i "s|option model 'claude-sonnet-4-5'|option model 'claude-opus-4-1'|" "$t/config/mote"
		run "$sh" "mote_conf_write '$t/mote.conf'" && kill -HUP "$pid"
		if wait_for 'health | grep -q "\"model\":\"claude-opus-4-1\""'; then ok; else
			bad "$shell: after SIGHUP: $(health) $(tail -5 "$t/serve.log")"
		fi
		kill "$pid" 2>/dev/null
		if wait "$pid"; then ok; else bad "$shell: mote serve exited $?: $(tail -5 "$t/serve.log")"; fi
	else
		bad "$shell: mote serve with the translated file: $(tail -5 "$t/serve.log")"
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	fi
	pid=

	# ---- names, values, lists, sections ------------------------------------
	cat > "$t/config/mote" <<-UCI
		package mote

		config mote 'main'
		 	option enabled '1'
		 	option model 'a model'
		 	option system 'You are "the" router. # not a comment'
		 	option mqtt ''
		 	option max_turns '7'
		 	list deny 'shell'
		 	list deny 'write_file'
		 	option respawn_retry '3'
		 	option modle 'typo'

		config other 'x'
		 	option model 'not this one'
	UCI
	if run "$sh" "mote_conf_write '$t/mote.conf'" 2> "$t/err"; then
		expect='model = "a model"
system = '"'"'You are "the" router. # not a comment'"'"'
max-turns = "7"
deny = "shell"
deny = "write_file"
modle = "typo"'
		got=$(grep -v '^#' "$t/mote.conf")
		if [ "$got" = "$expect" ]; then ok; else bad "$shell: translated as: $got"; fi
		# the typo reaches mote, which says where
		"$mote" serve --config "$t/mote.conf" --state-dir "$t/state" \
			--socket "$t/run/mote.sock" --api-key-file "$t/etc/api-key" 2> "$t/serve.log"
		rc=$?
		if [ $rc = 2 ] && grep -q "line 7: unknown key 'modle'" "$t/serve.log"; then ok; else
			bad "$shell: a mistyped option: exit $rc: $(cat "$t/serve.log")"
		fi
		# without it, mote takes every line: the quoted system prompt too
		sed -i '/modle/d' "$t/mote.conf"
		"$mote" serve --config "$t/mote.conf" --state-dir "$t/state" --socket "$t/run/mote.sock" \
			--api-key-file "$t/etc/api-key" --provider anthropic 2> "$t/serve.log" &
		pid=$!
		if wait_for 'health | grep -q "\"model\":\"a model\""'; then ok; else
			bad "$shell: the translated values: $(tail -5 "$t/serve.log")"
		fi
		kill "$pid" 2>/dev/null
		wait "$pid" || bad "$shell: mote serve exited $?: $(tail -5 "$t/serve.log")"
		pid=
	else
		bad "$shell: refused: $(cat "$t/err")"
	fi

	# ---- refused values: the file in place stays -------------------------
	cp "$t/mote.conf" "$t/before"
	for v in "'two
lines'" "'both '\\''\" quotes'"; do
		printf "config mote 'main'\n\toption model 'm'\n\toption system %s\n" "$v" > "$t/config/mote"
		if run "$sh" "mote_conf_write '$t/mote.conf'" 2> "$t/err"; then
			bad "$shell: value $v taken: $(cat "$t/mote.conf")"
		else
			if grep -q "option system: its value holds" "$t/err"; then ok; else bad "$shell: $(cat "$t/err")"; fi
		fi
		if cmp -s "$t/before" "$t/mote.conf"; then ok; else bad "$shell: mote.conf changed on a refusal"; fi
		if [ -n "$(find "$t" -maxdepth 1 -name 'mote.conf.new*')" ]; then bad "$shell: a temporary file left"; else ok; fi
	done

	# ---- the init script under procd (its calls recorded) ----------------
	printf "config mote 'main'\n\toption enabled '1'\n\toption shutdown_timeout '120000'\n\toption state_dir '%s'\n\toption socket '%s'\n" \
		"$t/state" "$t/run/mote.sock" > "$t/config/mote"
	sed -e "s|/usr/share/mote/mote-conf.sh|$pkg/files/mote-conf.sh|" \
		-e "s|^CONF=.*|CONF=$t/mote.conf|" -e "s|^RUN=.*|RUN=$t/run|" \
		"$pkg/files/mote.init" > "$t/init"
	out=$(UCI_CONFIG_DIR=$t/config $sh -c "
		. '$here/functions_stub.sh'
		procd_open_instance() { echo open; }
		procd_close_instance() { echo close; }
		procd_set_param() { echo \"param \$*\"; }
		procd_add_reload_trigger() { echo \"trigger \$*\"; }
		chown() { :; }
		chgrp() { :; }
		logger() { :; }
		mkdir() { command mkdir \"\$@\"; }
		. '$t/init'
		start_service
		service_triggers" 2>&1)
	for want in "param command /usr/bin/mote serve --config $t/mote.conf" "param user mote" \
		"param respawn 3600 5 5" "param term_timeout 130" "param reload_signal HUP" \
		"param file $t/mote.conf" "trigger mote" open close; do
		if printf '%s\n' "$out" | grep -qxF "$want"; then ok; else bad "$shell: init: no '$want' in: $out"; fi
	done
	if grep -qxF 'shutdown-timeout = "120000"' "$t/mote.conf"; then ok; else bad "$shell: init: $(cat "$t/mote.conf")"; fi
done

# ---- the package's Makefile: Build/Prepare, Build/Compile, install -------
# with test/openwrt/sdk/ standing for the SDK (the host's compiler and
# mbedTLS): the tree copied, built with the given flags, installed as the
# package lays it out. The flags are the SDK's to give: -O0 here (about
# half the CPU of -Os), as what is checked is the package, not the code.
# MOTE_OPENWRT_BUILD=0 leaves it out: make check builds mote once, and
# CI's check-cross step builds the package (make test-openwrt-build).
if [ "${MOTE_OPENWRT_BUILD:-1}" = 0 ]; then
	echo "note: the package's build is left to make test-openwrt-build (check-cross runs it)"
elif make -s -C "$pkg" TOPDIR="$here/sdk" BUILD_DIR="$t/pkg" DEST="$t/root" TARGET_CFLAGS="-O0 -pipe" \
	compile install \
	> "$t/pkg.log" 2>&1; then
	ok
	if [ "$("$t/root/usr/bin/mote" --version)" = "mote 0.1.0" ]; then ok; else bad "the package's mote"; fi
	for f in etc/init.d/mote:755 etc/config/mote:600 usr/share/mote/mote-conf.sh:644; do
		if [ "$(stat -c %a "$t/root/${f%:*}" 2>/dev/null)" = "${f#*:}" ]; then ok; else
			bad "the package's /${f%:*}: not mode ${f#*:}"
		fi
	done
	if cmp -s "$t/root/etc/config/mote" "$pkg/files/mote.config"; then ok; else bad "/etc/config/mote"; fi
else
	bad "the package's build: $(tail -20 "$t/pkg.log")"
fi

echo "test-openwrt: $pass passed, $fail failed"
[ $fail = 0 ]
