#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What memory.exec_protect costs reclaim: a use-once stream of page cache
# through a cgroup's memory.max, with idle tasks in that cgroup that have
# mapped text executable, on
#   unpatched   the same kernel without the series (kernel/build.sh --unpatched)
#   unused      the series, memory.exec_protect set nowhere (static key off)
#   elsewhere   the series, set only on an unrelated cgroup (key on; the
#               stream's cgroup is not protected)
#   protected   the series, set on the stream's cgroup: its tasks' text
#               (aged with MADV_COLD) is kept, and rmap-walked through
#               its 20 mappings, on every pass
# For each: the stream's wall time, the cgroup's system CPU time (its
# direct reclaim), pages scanned and stolen (memory.stat), scanned per
# second of system time, and pgexec_protected. Median of --reps runs;
# every run is printed too.
#
# Usage: bench/reclaim-cost.sh [--reps=3] [--lru=classic,mglru]
#                              [--stream=512M] [--limit=64M]
#                              [--mappers=20] [--text=16M]
#        (as root; the kernels of kernel/build.sh and --unpatched, or
#         $EXECGUARD_BZIMAGE and $EXECGUARD_BZIMAGE_UNPATCHED)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
reps=3 lrus=classic,mglru stream=512M limit=64M mappers=20 text=16M
for a in "$@"; do
	case $a in
	--reps=*) reps=${a#*=} ;;
	--lru=*) lrus=${a#*=} ;;
	--stream=*) stream=${a#*=} ;;
	--limit=*) limit=${a#*=} ;;
	--mappers=*) mappers=${a#*=} ;;
	--text=*) text=${a#*=} ;;
	-h|--help) sed -n '3,21s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--reps=N] [--lru=classic,mglru] [--stream=512M] [--limit=64M] [--mappers=N] [--text=16M]" >&2; exit 2 ;;
	esac
done
[[ $reps =~ ^[0-9]+$ && $mappers =~ ^[0-9]+$ && $stream =~ ^[0-9]+[KMG]$ &&
   $limit =~ ^[0-9]+[KMG]$ && $text =~ ^[0-9]+[KMG]$ ]] || {
	echo "error: --reps and --mappers take numbers; --stream, --limit, --text sizes (K, M, G)" >&2
	exit 2
}

patched=${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}
unpatched=${EXECGUARD_BZIMAGE_UNPATCHED:-$("$SRC/kernel/build.sh" --unpatched | tail -n1)}
work=$(mktemp -d /var/tmp/reclaim-cost.XXXXXX)
trap '[ "$BASHPID" = $$ ] && rm -rf "$work"' EXIT

# An idle task that maps the text executable, touches each page once, lets
# it age (MADV_COLD: young bits cleared, on the inactive list, where
# reclaim meets it on every pass) and waits: the rarely run code of a
# service
cat >"$work/mapper.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct stat st;
	volatile char sum = 0;
	char *p;
	int fd = open(argv[1], O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return 1;
	p = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	for (off_t o = 0; o < st.st_size; o += 4096)
		sum += p[o];
	if (madvise(p, st.st_size, 20 /* MADV_COLD */))
		return 1;
	if (write(1, "r", 1) != 1)
		return 1;
	pause();
	return 0;
}
EOF
gcc -O2 -o "$work/mapper" "$work/mapper.c"

# Runs in the VM, in the scratch disk: MODE REPS
cat >"$work/inside.sh" <<EOF
set -eu
mode=\$1 reps=\$2 lru=\$3
cg=/sys/fs/cgroup
echo +memory > \$cg/cgroup.subtree_control
dd if=/dev/zero of=stream bs=1M count=$(( $(numfmt --from=iec "$stream") >> 20 )) status=none
head -c $(numfmt --from=iec "$text") /dev/urandom > text
# dropped, so that the mappers fault the text in and it is charged to
# their cgroup, whose limit reclaim then meets it
sync; echo 3 > /proc/sys/vm/drop_caches
mkdir \$cg/bench \$cg/bench/stream \$cg/other
echo +memory > \$cg/bench/cgroup.subtree_control
echo $limit > \$cg/bench/stream/memory.max
case \$mode in
elsewhere) echo max > \$cg/other/memory.exec_protect ;;
protected) echo max > \$cg/bench/memory.exec_protect; echo max > \$cg/bench/stream/memory.exec_protect ;;
esac
for i in \$(seq $mappers); do
	sh -c "echo \\\$\\\$ > \$cg/bench/stream/cgroup.procs; exec $work/mapper text" > /dev/null &
done
sleep 2
key() { awk -v k="\$2" '\$1 == k { print \$2 }' "\$1"; }
for r in \$(seq \$reps); do
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
	sys0=\$(key \$cg/bench/stream/cpu.stat system_usec)
	scan0=\$(key \$cg/bench/stream/memory.stat pgscan)
	steal0=\$(key \$cg/bench/stream/memory.stat pgsteal)
	prot0=\$(key \$cg/bench/stream/memory.stat pgexec_protected); prot0=\${prot0:-0}
	t0=\$(date +%s%N)
	sh -c "echo \\\$\\\$ > \$cg/bench/stream/cgroup.procs; exec cat stream" > /dev/null
	t1=\$(date +%s%N)
	# memory.stat is flushed lazily (every 2 s): let it catch up
	sleep 3
	sys1=\$(key \$cg/bench/stream/cpu.stat system_usec)
	scan1=\$(key \$cg/bench/stream/memory.stat pgscan)
	steal1=\$(key \$cg/bench/stream/memory.stat pgsteal)
	prot1=\$(key \$cg/bench/stream/memory.stat pgexec_protected); prot1=\${prot1:-0}
	echo "RUN \$lru \$mode wall_ms=\$(( (t1 - t0) / 1000000 )) sys_ms=\$(( (sys1 - sys0) / 1000 )) pgscan=\$(( scan1 - scan0 )) pgsteal=\$(( steal1 - steal0 )) pgexec_protected=\$(( prot1 - prot0 ))"
done
EOF

echo "# bench/reclaim-cost.sh --reps=$reps --lru=$lrus --stream=$stream --limit=$limit --mappers=$mappers --text=$text"
echo "# kernels: $patched, $unpatched"
for lru in ${lrus//,/ }; do
	case $lru in classic) v=n ;; mglru) v=y ;; *) echo "error: --lru: classic or mglru" >&2; exit 2 ;; esac
	for mode in unpatched unused elsewhere protected; do
		kernel=$patched
		[ "$mode" = unpatched ] && kernel=$unpatched
		"$SRC/tests/vm/vm-run.sh" --kernel "$kernel" --mem 1G --disk 1G --timeout 1800 \
			--log "$work/vm-$lru-$mode.log" -- \
			bash -c "echo $v > /sys/kernel/mm/lru_gen/enabled; bash $work/inside.sh $mode $reps $lru" \
			>"$work/out-$lru-$mode" 2>&1 || {
			tail -n 20 "$work/out-$lru-$mode" >&2
			echo "error: the $lru $mode VM failed" >&2
			exit 1
		}
		grep -a '^RUN' "$work/out-$lru-$mode" | tr -d '\r'
	done
done | tee "$work/runs"
echo
python3 - "$work/runs" <<'PY'
import sys, statistics, re
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith('RUN'):
        continue
    _, lru, mode, *kv = line.split()
    d = {k: int(v) for k, v in (x.split('=') for x in kv)}
    rows.setdefault((lru, mode), []).append(d)
print('| LRU | kernel / protection | wall s | system CPU s | pgscan | pgsteal | pgscan per system-CPU s | pgexec_protected |')
print('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (lru, mode), runs in rows.items():
    med = lambda k: statistics.median(r[k] for r in runs)
    sys_s = med('sys_ms') / 1000
    rate = statistics.median(r['pgscan'] / (r['sys_ms'] / 1000) for r in runs if r['sys_ms'])
    print(f"| {lru} | {mode} | {med('wall_ms')/1000:.2f} | {sys_s:.2f} | {med('pgscan'):.0f} | {med('pgsteal'):.0f} | {rate:.0f} | {med('pgexec_protected'):.0f} |")
PY
