#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The cost of reading a process's mappings per look, executable only
# against whole images (bench/mapscost.c), on three processes started
# here: a sleeping bash, python3 -m http.server, and python3 holding 3,000
# anonymous mappings (a large process).
#
# Usage: bench/mapscost.sh [BUILD_DIR]   (default: build; needs its
#        bench/mapscost, from ninja)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
M=$BUILD/bench/mapscost
[ -x "$M" ] || { echo "no $M: meson setup $BUILD && ninja -C $BUILD"; exit 77; }
W=$(mktemp -d /var/tmp/execguard-mapscost.XXXXXX)
PIDS=()
cleanup() {
	[ "$BASHPID" = "$$" ] || return 0
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT

# (its sleep goes with it: nothing is left holding our output open)
bash -c 'trap "kill \$!; exit" TERM; while :; do sleep 3600 & wait $!; done' & PIDS+=($!); BASH_PID=$!
python3 -m http.server --bind 127.0.0.1 18097 >/dev/null 2>&1 & PIDS+=($!); HTTP_PID=$!
python3 -c '
import mmap, os, sys, time
keep = [mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ if i % 2 else mmap.PROT_READ | mmap.PROT_WRITE) for i in range(3000)]
open(sys.argv[1] + ".tmp", "w").write("ready")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(3600)' "$W/big.ready" & PIDS+=($!); BIG_PID=$!
for _ in $(seq 60); do [ -f "$W/big.ready" ] && break; sleep 1; done
sleep 2

echo "# bench/mapscost.sh on $(uname -r), $(date -u +%FT%TZ)"
echo "# command: $0 $*"
for p in "bash:$BASH_PID:200" "http.server:$HTTP_PID:100" "3000-anon:$BIG_PID:20"; do
	IFS=: read -r name pid n <<<"$p"
	echo "## $name: $(wc -l <"/proc/$pid/maps") mappings"
	"$M" "$pid" "$n" 7 | tail -n +2
done
