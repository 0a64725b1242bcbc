# functions_stub.sh - the part of OpenWrt's /lib/functions.sh (and
# /lib/config/uci.sh) that /etc/init.d/mote uses, for running it on Debian
# (test/openwrt/test_openwrt.sh). Written from their documented behaviour:
# config_load evaluates the package as `uci export` prints it (the
# /etc/config syntax: config, option, list are shell functions), keeps
# each value as CONFIG_<section>_<option>, and calls config_cb TYPE NAME
# for each section, option_cb NAME VALUE for each option and list_cb NAME
# VALUE for each list item. UCI_CONFIG_DIR names the directory.
# shellcheck shell=dash

reset_cb() {
	config_cb() { return 0; }
	option_cb() { return 0; }
	list_cb() { return 0; }
}
reset_cb

package() { return 0; }

config_set() {
	export "CONFIG_${1}_${2}=${3}"
}

config() {
	CONFIG_NUM_SECTIONS=$((CONFIG_NUM_SECTIONS + 1))
	CONFIG_SECTION="${2:-cfg$CONFIG_NUM_SECTIONS}"
	config_set "$CONFIG_SECTION" TYPE "$1"
	config_cb "$1" "$CONFIG_SECTION"
}

option() {
	local name="$1"

	shift
	config_set "$CONFIG_SECTION" "$name" "$*"
	option_cb "$name" "$*"
}

list() {
	local name="$1"

	shift
	list_cb "$name" "$*"
}

config_load() {
	CONFIG_NUM_SECTIONS=0
	CONFIG_SECTION=
	# shellcheck disable=SC1090
	. "$UCI_CONFIG_DIR/$1"
}

# config_get VAR SECTION OPTION [DEFAULT]
config_get() {
	eval "$1=\${CONFIG_${2}_${3}:-\$4}"
}

config_get_bool() {
	local v

	config_get v "$2" "$3" "$4"
	case "$v" in
	1 | on | true | yes | enabled) v=1 ;;
	0 | off | false | no | disabled) v=0 ;;
	*) v="$4" ;;
	esac
	eval "$1=\$v"
}
