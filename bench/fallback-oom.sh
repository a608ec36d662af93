#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How often the memory.exec_protect OOM fallback still ends in an OOM
# kill: the selftests' fallback run (MAPPERS tasks through 8 MiB of text
# at once, protected and unprotected) repeated RUNS times in one VM on
# the patched kernel, under each LRU, with the selftests' memory.max
# (4M, plus --task-room per task after the first; the selftest gives
# 128K) or another --limit. Prints one RESULT line per LRU: runs with an
# OOM kill, runs with a failed task, average wall time; and per LRU two
# STATS lines, the reclaim work of an average run (unprotected,
# protected) from the parent cgroup's memory.stat: pgscan, pgsteal,
# pgrefill (active list scans, classic LRU), pgactivate, pgdeactivate,
# workingset_refault_file. Wall times of runs this short are noisy; the
# page counts say where a difference comes from.
#
# --swap=SIZE runs them with a swap file of SIZE on the VM's ext4 disk
# (default none, as in the selftest): with swap, MGLRU's scan reaches
# anon and keeps kept folios out of the last cold generation differently
# (patch 4), and that case is measured apart.
#
# --passes=N makes each task go through the text N times instead of
# once: a sustained overload, in which the breach note's renewals and
# probes (patch 3) are what is measured, rather than its onset.
#
# Usage: bench/fallback-oom.sh [--runs=N] [--mappers=N] [--limit=4M]
#                              [--task-room=0] [--passes=1]
#                              [--lru=classic,mglru] [--swap=SIZE]
#        (as root; the kernel of kernel/build.sh, or $EXECGUARD_BZIMAGE)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
runs=60 mappers=20 limit=4M room=0 passes=1 lrus=classic,mglru swap=0
for a in "$@"; do
	case $a in
	--runs=*) runs=${a#*=} ;;
	--mappers=*) mappers=${a#*=} ;;
	--limit=*) limit=${a#*=} ;;
	--task-room=*) room=${a#*=} ;;
	--passes=*) passes=${a#*=} ;;
	--lru=*) lrus=${a#*=} ;;
	--swap=*) swap=${a#*=} ;;
	*) echo "usage: $0 [--runs=N] [--mappers=N] [--limit=4M] [--task-room=0] [--passes=1] [--lru=classic,mglru] [--swap=SIZE]" >&2; exit 2 ;;
	esac
done
[[ $runs =~ ^[0-9]+$ && $mappers =~ ^[0-9]+$ && $passes =~ ^[1-9][0-9]*$ && $limit =~ ^[0-9]+[KMG]?$ && $room =~ ^[0-9]+[KMG]?$ && $swap =~ ^[0-9]+[MG]?$ ]] || {
	echo "error: --runs, --mappers and --passes take numbers, --limit, --task-room and --swap bytes (K, M, G; --swap M or G)" >&2
	exit 2
}
room_bytes=$(numfmt --from=iec "$room")
swap_mib=$(( $(numfmt --from=iec "$swap") / 1048576 ))
[ "$swap" = 0 ] || [ "$swap_mib" -gt 0 ] || { echo "error: --swap: at least 1M" >&2; exit 2; }

bzimage=${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}
kdir=${EXECGUARD_KERNEL_DIR:-/var/tmp/execguard-kernel}
selftests=$kdir/src/tools/testing/selftests
[ -f "$selftests/cgroup/test_exec_protect.c" ] || {
	echo "error: no patched selftest source in $selftests (run kernel/build.sh)" >&2
	exit 1
}
work=$(mktemp -d /var/tmp/fallback-oom.XXXXXX)
trap 'rm -rf "$work"' EXIT
sed -e "s/^#define BIG_LIMIT\t.*/#define BIG_LIMIT\t\"$limit\"/" \
	-e "s/^#define FALLBACK_TASK_ROOM\t.*/#define FALLBACK_TASK_ROOM\t$room_bytes/" \
	-e "s/^\ttouch_pages(text, BIG_SIZE);/\tfor (int pass = 0; pass < $passes; pass++) touch_pages(text, BIG_SIZE);/" \
	"$selftests/cgroup/test_exec_protect.c" >"$work/test_exec_protect.c"
grep -q "pass < $passes; pass++) touch_pages" "$work/test_exec_protect.c" || {
	echo "error: the selftest's big_text_loop() no longer has the line --passes rewrites" >&2
	exit 1
}
gcc -O2 -w -pthread -I"$work" -I"$selftests" -I"$selftests/cgroup" -o "$work/fallback-oom" \
	"$SRC/bench/fallback-oom.c" "$selftests/cgroup/cgroup_util.c"

echo "# bench/fallback-oom.sh --runs=$runs --mappers=$mappers --limit=$limit --task-room=$room --passes=$passes --lru=$lrus --swap=$swap"
echo "# kernel $bzimage"
script="set -e"
# The swap file goes on the scratch disk (the root is 9p under tmpfs).
[ "$swap_mib" = 0 ] ||
	script+="; dd if=/dev/zero of=swapfile bs=1M count=$swap_mib status=none; chmod 600 swapfile; mkswap -q swapfile; swapon swapfile; echo \"# swap \$(tail -n +2 /proc/swaps | tr -s '[:space:]' ' ')\""
for lru in ${lrus//,/ }; do
	case $lru in classic) v=n ;; mglru) v=y ;; *) echo "error: --lru: classic or mglru" >&2; exit 2 ;; esac
	script+="; echo $v > /sys/kernel/mm/lru_gen/enabled; $work/fallback-oom $runs $mappers"
done
# An OOM kill prints a Call Trace, which vm-run.sh reports as a splat
# (exit 126): here it is what is being counted, so the RESULT lines decide.
# A pair of runs took up to 2 s on a loaded 2-core host: 3 s a pair, and
# 10 minutes to boot and build.
nr_lrus=$(tr ',' '\n' <<<"$lrus" | wc -l)
"$SRC/tests/vm/vm-run.sh" --kernel "$bzimage" --mem 1G --disk $(( 384 + swap_mib ))M \
	--timeout $(( 600 + runs * nr_lrus * 3 )) \
	--log "$work/vm.log" -- bash -c "$script" >"$work/out" 2>&1 || true
grep '^RESULT\|^STATS\|^# swap' "$work/out" || true
results=$(grep -c '^RESULT' "$work/out" || true)
[ "$results" = "$nr_lrus" ] || {
	tail -n 30 "$work/out"
	echo "error: $results of $nr_lrus LRUs finished (VM log: kept in $work.log)" >&2
	cp "$work/vm.log" "$work.log"
	exit 1
}
