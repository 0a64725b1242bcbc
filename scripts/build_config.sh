#!/bin/sh
# build_config.sh DIR [FLAG...] - writes DIR/mote_build_config.h, the
# configuration a library was built with: each -DMOTE_* flag as a define,
# and the header MOTE_CONFIG_FILE names (with or without its quotes),
# copied beside it as DIR/mote_build_config_file.h. make install puts them
# with the headers; mote_config.h includes mote_build_config.h when it is
# there, so a program built against the installed library gets the same
# values with no -D flag (pkg-config and shells lose quotes in them).
set -eu
dir=$1
shift
out="$dir/mote_build_config.h"
{
    echo "/*"
    echo " * mote_build_config.h - the configuration this libmote was built with,"
    echo " * written by make install (scripts/build_config.sh); mote_config.h"
    echo " * includes it first. Empty: the defaults."
    echo " */"
    echo "#ifndef MOTE_BUILD_CONFIG_H"
    echo "#define MOTE_BUILD_CONFIG_H"
} > "$out"
rm -f "$dir/mote_build_config_file.h"
for f in "$@"; do
    case $f in
    -DMOTE_CONFIG_FILE=*)
        file=$(printf '%s' "${f#-DMOTE_CONFIG_FILE=}" | tr -d "\"'\\\\")
        if [ -f "include/$file" ]; then
            src="include/$file"
        elif [ -f "$file" ]; then
            src=$file
        else
            echo "build_config.sh: MOTE_CONFIG_FILE $file not found" >&2
            exit 1
        fi
        cp "$src" "$dir/mote_build_config_file.h"
        echo '#include "mote/mote_build_config_file.h" /* was '"$file"' */' >> "$out"
        ;;
    -DMOTE_*=*)
        def=${f#-D}
        printf '#ifndef %s\n#define %s %s\n#endif\n' "${def%%=*}" "${def%%=*}" "${def#*=}" >> "$out"
        ;;
    -DMOTE_*)
        printf '#ifndef %s\n#define %s 1\n#endif\n' "${f#-D}" "${f#-D}" >> "$out"
        ;;
    esac
done
echo "#endif" >> "$out"
