#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Does memory.exec_protect's bound hold by what is resident? A protected
# cgroup (bound --bound, memory.max --limit) maps --text executable and
# touches all of it once and then leaves it cold (--touch=once), or
# touches all of it again every second (--touch=1s), while --reclaimers
# tasks stream use-once page cache: a third in the cgroup itself (its own
# limit), a third in a sibling under their parent's memory.max
# (--parent-limit), a third in an unlimited cgroup while an anonymous hog
# leaves the guest --free of its memory (global reclaim and kswapd). With
# --numa the guest has two nodes and the streams and the text are spread
# over both. With --thp the protected task maps the text 2 MiB aligned and
# collapses it into huge pages first (MADV_COLLAPSE; the --wide kernel's
# read-only THP for file text), and the RESULT line says how much of it
# was mapped huge (thp_kb). Every 100 ms for --seconds after --warmup, a sampler reads
# how much of the text is resident (mincore) and memory.stat's
# exec_protect_usage.
#
# Prints per LRU one RESULT line: the lowest and highest resident text
# after the warm-up, the bound, how many samples lay above bound + a folio
# per CPU and below 0.9 x bound, and the largest gap between
# exec_protect_usage and what was resident, how many samples differed by
# more than 5% of the bound, and the sample where they differed most
# (its time, resident, usage). With --touch=once what is
# resident is what the protection keeps; with --touch=1s the text is also
# kept by the usual rules while in use, so only the lower limit applies.
#
# Usage: bench/exec-bound.sh [--lru=classic,mglru] [--touch=once|1s]
#                            [--reclaimers=9] [--text=64M] [--bound=16M]
#                            [--limit=48M] [--parent-limit=96M]
#                            [--free=160M] [--seconds=60] [--warmup=10]
#                            [--mem=1G] [--numa] [--thp]
#        (as root; the kernel of kernel/build.sh, or $EXECGUARD_BZIMAGE;
#         --thp needs kernel/build.sh --wide, which --numa needs too)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
lrus=classic,mglru touch=once reclaimers=9 text=64M bound=16M limit=48M
parent_limit=96M free=160M seconds=60 warmup=10 mem=1G numa=false thp=false
for a in "$@"; do
	case $a in
	--lru=*) lrus=${a#*=} ;;
	--touch=*) touch=${a#*=} ;;
	--reclaimers=*) reclaimers=${a#*=} ;;
	--text=*) text=${a#*=} ;;
	--bound=*) bound=${a#*=} ;;
	--limit=*) limit=${a#*=} ;;
	--parent-limit=*) parent_limit=${a#*=} ;;
	--free=*) free=${a#*=} ;;
	--seconds=*) seconds=${a#*=} ;;
	--warmup=*) warmup=${a#*=} ;;
	--mem=*) mem=${a#*=} ;;
	--numa) numa=true ;;
	--thp) thp=true ;;
	-h|--help) sed -n '/^# Does memory/,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "usage: $0 [--lru=classic,mglru] [--touch=once|1s] [--reclaimers=N] [--text=64M] [--bound=16M] [--limit=48M] [--parent-limit=96M] [--free=160M] [--seconds=60] [--warmup=10] [--mem=1G] [--numa] [--thp]" >&2; exit 2 ;;
	esac
done
[[ $touch =~ ^(once|1s)$ && $reclaimers =~ ^[0-9]+$ && $seconds =~ ^[0-9]+$ && $warmup =~ ^[0-9]+$ ]] || {
	echo "error: --touch once or 1s; --reclaimers, --seconds, --warmup numbers" >&2
	exit 2
}
for size in "$text" "$bound" "$limit" "$parent_limit" "$free" "$mem"; do
	[[ $size =~ ^[0-9]+[KMG]$ ]] || { echo "error: $size: a size (K, M, G)" >&2; exit 2; }
done
period=0
[ "$touch" = 1s ] && period=1000

bzimage=${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}
work=$(mktemp -d /var/tmp/exec-bound.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/mapper" "$SRC/bench/bound/mapper.c"
gcc -O2 -Wall -o "$work/sampler" "$SRC/bench/bound/sampler.c"

bytes() { numfmt --from=iec "$1"; }
cat >"$work/inside.sh" <<EOF
set -eu
cg=/sys/fs/cgroup
echo +memory > \$cg/cgroup.subtree_control
head -c $(bytes "$text") /dev/urandom > text
for i in \$(seq $reclaimers); do
	dd if=/dev/zero of=stream\$i bs=1M count=128 status=none
done
sync; echo 3 > /proc/sys/vm/drop_caches
mkdir -p \$cg/bench/svc \$cg/bench/sib \$cg/wide
echo +memory > \$cg/bench/cgroup.subtree_control
echo $parent_limit > \$cg/bench/memory.max
echo $limit > \$cg/bench/svc/memory.max
echo max > \$cg/bench/memory.exec_protect
echo $bound > \$cg/bench/svc/memory.exec_protect
run_in() { local g=\$1; shift; sh -c "echo \\\$\\\$ > \$cg/\$g/cgroup.procs; exec \$*"; }
# the protected task, and its first pass through the text
mkfifo ready
run_in bench/svc $work/mapper text $period $($thp && echo thp) > ready &
head -c 1 ready > /dev/null
# the anonymous hog: the guest keeps only $free beside it
avail=\$(awk '/^MemAvailable:/ { print \$2 * 1024 }' /proc/meminfo)
hog=\$(( avail - $(bytes "$free") ))
if [ \$hog -gt 0 ]; then
	run_in wide python3 -c "import mmap,signal; m=mmap.mmap(-1,\$hog); m.write(b'x'*\$hog); signal.pause()" &
	sleep 5
fi
# the reclaimers, a third each in the cgroup, its sibling and the wide one
for i in \$(seq $reclaimers); do
	case \$(( i % 3 )) in 0) g=bench/svc ;; 1) g=bench/sib ;; 2) g=wide ;; esac
	run_in \$g sh -c "'while :; do cat stream\$i > /dev/null; done'" &
done
sleep $warmup
$work/sampler text \$cg/bench/svc 100 $seconds
echo "VMSTAT \$(grep -E '^(pgexec_protected|pgexec_breached|pgscan_kswapd|pgscan_direct) ' /proc/vmstat | tr '\n' ' ')"
EOF

# the disk holds the text and a 128 MiB stream per reclaimer
numa_args=()
$numa && numa_args=(--numa)
echo "# bench/exec-bound.sh --lru=$lrus --touch=$touch --reclaimers=$reclaimers --text=$text --bound=$bound --limit=$limit --parent-limit=$parent_limit --free=$free --seconds=$seconds --warmup=$warmup --mem=$mem$($numa && echo ' --numa')$($thp && echo ' --thp')"
echo "# kernel $bzimage; host load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) host CPUs"
for lru in ${lrus//,/ }; do
	case $lru in classic) v=n ;; mglru) v=y ;; *) echo "error: --lru: classic or mglru" >&2; exit 2 ;; esac
	"$SRC/tests/vm/vm-run.sh" --kernel "$bzimage" --mem "$mem" --disk $(( 512 + reclaimers * 128 ))M --timeout 1800 \
		"${numa_args[@]}" --log "$work/vm-$lru.log" -- \
		bash -c "echo $v > /sys/kernel/mm/lru_gen/enabled; nproc > /dev/null; bash $work/inside.sh" \
		>"$work/out-$lru" 2>&1 || {
		tail -n 30 "$work/out-$lru" >&2
		echo "error: the $lru VM failed" >&2
		exit 1
	}
	tr -d '\r' < "$work/out-$lru" | grep -a '^SAMPLE\|^VMSTAT\|^THP' > "$work/samples-$lru"
	python3 - "$work/samples-$lru" "$lru" "$(bytes "$bound")" "$touch" <<'PY'
import sys
path, lru, bound, touch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
samples = [tuple(map(int, l.split()[1:])) for l in open(path) if l.startswith('SAMPLE')]
vm = [l.strip() for l in open(path) if l.startswith('VMSTAT')]
thp = [l.split('=')[1].strip() for l in open(path) if l.startswith('THP ')]
if not samples:
    sys.exit('no samples')
# a folio per CPU: the guest has 2 CPUs; a THP where text can be collapsed
slack = 2 * (2 << 20)
res = [r for _, r, _ in samples]
gap = max(abs(u - r) for _, r, u in samples)
worst = max(samples, key=lambda s: abs(s[2] - s[1]))
gap_over_5pct = sum(abs(u - r) > 0.05 * bound for _, r, u in samples)
above = sum(r > bound + slack for r in res)
below = sum(r < 0.9 * bound for r in res)
print(f"RESULT lru={lru} touch={touch} thp_kb={thp[0] if thp else 'off'} samples={len(res)} resident_min={min(res) >> 10}K "
      f"resident_max={max(res) >> 10}K bound={bound >> 10}K above_bound_plus_slack={above} "
      f"below_0.9_bound={below} max_usage_gap={gap >> 10}K usage_gap_over_5pct={gap_over_5pct} "
      f"worst_sample={worst[0]}ms:resident={worst[1] >> 10}K,usage={worst[2] >> 10}K")
for l in vm:
    print(l)
PY
done
