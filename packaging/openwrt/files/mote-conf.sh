# mote-conf.sh - /etc/config/mote (UCI) as mote's configuration file
# (docs/SERVE.md, "Configuration file"), for /etc/init.d/mote.
# shellcheck shell=dash
# (OpenWrt's /bin/sh is busybox's ash, of dash's family: local, no arrays)
#
# Sourced after OpenWrt's /lib/functions.sh. mote_conf_write OUT loads
# the UCI package "mote" and writes each option of its sections of type
# "mote" as one `key = value` line of OUT: the option's name with `_` as
# `-` (api_key_file: api-key-file), a list one line per item (list allow
# 'read_file': allow = read_file), an empty option left out. The options
# the init script itself reads (enabled, respawn_*) are not mote's and
# stay out. The value is quoted, so spaces and `#` stay in it; a value
# holding a line break, or both kinds of quote, cannot be written: it is
# refused with its option's name. mote reads the result strictly (an
# unknown key or a bad value is an error with its line), so every option
# of `mote serve` works here and a mistyped one is said, not ignored.
# OUT is replaced whole (written aside, then renamed); on a refusal it is
# left as it was and the answer is 1.

mote_conf_in=0
mote_conf_bad=
mote_conf_out=

# mote_conf_line NAME VALUE: one line of the file, to $mote_conf_out.
mote_conf_line() {
	local key="$1" value="$2"

	[ "$mote_conf_in" = 1 ] || return 0
	case "$key" in
	enabled | respawn_threshold | respawn_timeout | respawn_retry) return 0 ;;
	esac
	[ -n "$value" ] || return 0
	case "$key" in
	*[!a-z0-9_]*)
		mote_conf_bad="option $key: not a mote option name"
		return 0
		;;
	esac
	case "$value" in
	*"
"*)
		mote_conf_bad="option $key: its value holds a line break"
		return 0
		;;
	*\"*\'* | *\'*\"*)
		mote_conf_bad="option $key: its value holds both kinds of quote"
		return 0
		;;
	esac
	key=$(printf '%s' "$key" | tr _ -)
	case "$value" in
	*\"*) printf "%s = '%s'\n" "$key" "$value" >> "$mote_conf_out" ;;
	*) printf '%s = "%s"\n' "$key" "$value" >> "$mote_conf_out" ;;
	esac
}

# (functions.sh's callbacks, while config_load reads the package)
mote_conf_section() {
	mote_conf_in=0
	[ "$1" = mote ] && mote_conf_in=1
	return 0
}

# mote_conf_write OUT: see above. Answers 0, or 1 with the reason on
# stderr.
mote_conf_write() {
	local out="$1"

	mote_conf_out="$out.new.$$"
	mote_conf_bad=
	mote_conf_in=0
	: > "$mote_conf_out" || return 1
	chmod 0640 "$mote_conf_out"
	echo "# written by /etc/init.d/mote from /etc/config/mote: change that one" >> "$mote_conf_out"
	# (config_load calls these back, unseen by shellcheck)
	# shellcheck disable=SC2317
	config_cb() { mote_conf_section "$@"; }
	# shellcheck disable=SC2317
	option_cb() { mote_conf_line "$@"; }
	# shellcheck disable=SC2317
	list_cb() { mote_conf_line "$@"; }
	config_load mote
	reset_cb
	if [ -n "$mote_conf_bad" ]; then
		rm -f "$mote_conf_out"
		echo "mote: /etc/config/mote: $mote_conf_bad" >&2
		return 1
	fi
	mv -f "$mote_conf_out" "$out"
}
