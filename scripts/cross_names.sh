# cross_names.sh - sourced by tiny.sh and cross_check.sh: for a
# CROSS_COMPILE prefix in $x, sets cc to the musl wrapper of that cross gcc
# (aarch64-linux-gnu- -> aarch64-linux-musl-gcc, arm-linux-gnueabihf- ->
# arm-linux-musleabihf-gcc) and name to the target's short name (aarch64,
# armhf): the build goes to BUILDDIR/tiny-$name.
triplet=${x%-}
cc=$(echo "$triplet" | sed 's/-gnu/-musl/')-gcc
case "$triplet" in
arm*hf) name=armhf ;;
*) name=${triplet%%-*} ;;
esac
