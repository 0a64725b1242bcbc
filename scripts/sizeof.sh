#!/bin/sh
# sizeof.sh CC BUILDDIR - prints the static memory of mote's main structs.
set -eu
cc=$1
b=$2
mkdir -p "$b/tmp"
cat > "$b/tmp/sizeof.c" <<'C'
#include <stdio.h>
#include "mote/mote.h"
int main(void)
{
    printf("struct mote_loop: %zu bytes (MOTE_MAX_JOBS=%d, timers %d, watches %d)\n",
           sizeof(struct mote_loop), MOTE_MAX_JOBS, MOTE_MAX_TIMERS, MOTE_MAX_WATCHES);
    printf("one job slot (struct mote_job): %zu bytes\n", sizeof(struct mote_job));
    printf("one timer slot: %zu bytes, one watch slot: %zu bytes\n",
           sizeof(struct mote_timer_slot), sizeof(struct mote_watch_slot));
    return 0;
}
C
$cc -std=c11 -Iinclude -o "$b/tmp/sizeof" "$b/tmp/sizeof.c"
"$b/tmp/sizeof"
