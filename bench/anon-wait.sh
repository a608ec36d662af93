#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How long does a small anonymous allocation wait when its cgroup's memory
# is mostly executable text that memory.exec_protect keeps? In a cgroup
# with memory.max --limit, one task maps --text executable and touches it
# once (then leaves it cold: the kept folios sit where reclaim looks
# first), a `cat` loop streams use-once page cache, and when the cgroup is
# at its limit an allocator faults in --anon of anonymous memory --chunk
# at a time and times every chunk (bench/anon-wait.c). Reclaim has to walk
# past the kept text to the stream's cache, or, when text + anon do not
# fit, give the text way (breach) or OOM-kill. Each run is made with
# memory.exec_protect 0 (off) and max, alternating, --reps times per LRU,
# in one VM per LRU, for each --anon size: the default 8M fits beside the
# text (the walk past kept text is the cost), 24M does not (the breach is).
# --swap=SIZE adds a swap file of SIZE on the VM's disk: then the anon can
# go to swap instead, and under MGLRU a cgroup whose anon is small beside
# its kept images holds that anon behind them until a breach (patch 4):
# how long the allocation waits there is what this measures.
#
# Prints one RUN line per run and per LRU, --anon and mode a RESULT line:
# medians over the runs of the chunk waits' p50, p99 and max (us), of the
# whole allocation's wait (ms), of the text resident before and after it,
# of the pages the cgroup scanned and swapped out, and the sums of OOM
# kills and of pgexec_breached (whole guest) while the cgroup filled
# (warmup_breached), while the allocator ran (breached_during, read with
# the text it left) and up to when the run's counters are read after it
# (pgexec_breached: a breach goes on for the note's second).
#
# Usage: bench/anon-wait.sh [--lru=classic,mglru] [--anon=8M,24M]
#                           [--chunk=64K] [--text=16M] [--limit=32M]
#                           [--reps=5] [--mem=1G] [--swap=SIZE]
#        (as root; the kernel of kernel/build.sh, or $EXECGUARD_BZIMAGE)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
lrus=classic,mglru anons=8M,24M chunk=64K text=16M limit=32M reps=5 mem=1G swap=0
for a in "$@"; do
	case $a in
	--lru=*) lrus=${a#*=} ;;
	--anon=*) anons=${a#*=} ;;
	--chunk=*) chunk=${a#*=} ;;
	--text=*) text=${a#*=} ;;
	--limit=*) limit=${a#*=} ;;
	--reps=*) reps=${a#*=} ;;
	--mem=*) mem=${a#*=} ;;
	--swap=*) swap=${a#*=} ;;
	-h|--help) sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "usage: $0 [--lru=classic,mglru] [--anon=8M,24M] [--chunk=64K] [--text=16M] [--limit=32M] [--reps=5] [--mem=1G] [--swap=SIZE]" >&2; exit 2 ;;
	esac
done
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "error: --reps: a positive number" >&2; exit 2; }
for size in ${anons//,/ } "$chunk" "$text" "$limit" "$mem"; do
	[[ $size =~ ^[0-9]+[KMG]$ ]] || { echo "error: $size: a size (K, M, G)" >&2; exit 2; }
done
[[ $swap =~ ^(0|[0-9]+[MG])$ ]] || { echo "error: --swap: 0 or a size in M or G" >&2; exit 2; }
bytes() { numfmt --from=iec "$1"; }
swap_mib=$(( $(bytes "$swap") / 1048576 ))
anon_bytes=$(for s in ${anons//,/ }; do bytes "$s"; done | tr '\n' ' ')

bzimage=${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}
work=$(mktemp -d /var/tmp/anon-wait.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall -o "$work/mapper" "$SRC/bench/bound/mapper.c"
gcc -O2 -Wall -o "$work/anon-wait" "$SRC/bench/anon-wait.c"

cat >"$work/inside.sh" <<EOF
set -eu
cg=/sys/fs/cgroup
echo +memory > \$cg/cgroup.subtree_control
head -c $(bytes "$text") /dev/urandom > text
dd if=/dev/zero of=stream bs=1M count=256 status=none
if [ $swap_mib -gt 0 ]; then
	dd if=/dev/zero of=swapfile bs=1M count=$swap_mib status=none
	chmod 600 swapfile; mkswap -q swapfile; swapon swapfile
fi
mkdir -p \$cg/aw
echo +memory > \$cg/aw/cgroup.subtree_control
echo max > \$cg/aw/memory.exec_protect
stat_of() { awk -v k=\$2 '\$1 == k { print \$2 }' \$1; }
run_in() { local g=\$1; shift; sh -c "echo \\\$\\\$ > \$cg/\$g/cgroup.procs; exec \$*"; }
for rep in \$(seq $reps); do
for anon in $anon_bytes; do
	# alternate which mode runs first, so that neither always follows the other
	modes="0 max"; [ \$(( rep % 2 )) = 0 ] && modes="max 0"
	for ep in \$modes; do
		sync; echo 3 > /proc/sys/vm/drop_caches
		mkdir \$cg/aw/svc
		echo $limit > \$cg/aw/svc/memory.max
		echo \$ep > \$cg/aw/svc/memory.exec_protect
		rm -f ready; mkfifo ready
		brs=\$(stat_of /proc/vmstat pgexec_breached)
		run_in aw/svc $work/mapper text 0 > ready &
		mapper=\$!
		head -c 1 ready > /dev/null
		run_in aw/svc sh -c "'while :; do cat stream > /dev/null; done'" &
		stream=\$!
		sleep 3
		scan0=\$(stat_of \$cg/aw/svc/memory.stat pgscan)
		oom0=\$(stat_of \$cg/aw/svc/memory.events oom_kill)
		br0=\$(stat_of /proc/vmstat pgexec_breached)
		sw0=\$(stat_of /proc/vmstat pswpout)
		line=\$(run_in aw/svc $work/anon-wait \$anon $(bytes "$chunk") text) || line="WAIT killed"
		echo "RUN mode=\$ep rep=\$rep anon=\$anon \${line#WAIT } oom_kill=\$(( \$(stat_of \$cg/aw/svc/memory.events oom_kill) - oom0 )) pgscan=\$(( \$(stat_of \$cg/aw/svc/memory.stat pgscan) - scan0 )) warmup_breached=\$(( br0 - brs )) pgexec_breached=\$(( \$(stat_of /proc/vmstat pgexec_breached) - br0 )) pswpout=\$(( \$(stat_of /proc/vmstat pswpout) - sw0 ))"
		echo 1 > \$cg/aw/svc/cgroup.kill
		# (bash reports the killed jobs on stderr; they were meant to die)
		{ wait \$stream \$mapper || true; } 2>/dev/null
		while [ -s \$cg/aw/svc/cgroup.procs ]; do sleep 0.1; done
		rmdir \$cg/aw/svc
	done
done
done
EOF

echo "# bench/anon-wait.sh --lru=$lrus --anon=$anons --chunk=$chunk --text=$text --limit=$limit --reps=$reps --mem=$mem --swap=$swap"
echo "# kernel $bzimage; host load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) host CPUs"
for lru in ${lrus//,/ }; do
	case $lru in classic) v=n ;; mglru) v=y ;; *) echo "error: --lru: classic or mglru" >&2; exit 2 ;; esac
	"$SRC/tests/vm/vm-run.sh" --kernel "$bzimage" --mem "$mem" --disk $(( 2048 + swap_mib ))M --timeout 3000 \
		--allow-oom-kill --log "$work/vm-$lru.log" -- \
		bash -c "echo $v > /sys/kernel/mm/lru_gen/enabled; bash $work/inside.sh" \
		>"$work/out-$lru" 2>&1 || {
		tail -n 30 "$work/out-$lru" >&2
		echo "error: the $lru VM failed" >&2
		exit 1
	}
	tr -d '\r' < "$work/out-$lru" | grep -a '^RUN ' > "$work/runs-$lru" || true
	sed "s/^RUN /RUN lru=$lru /" "$work/runs-$lru"
	python3 - "$work/runs-$lru" "$lru" <<'PY'
import statistics as st
import sys
path, lru = sys.argv[1], sys.argv[2]
cells = {}
for line in open(path):
    f = dict(kv.split('=', 1) for kv in line.split()[1:] if '=' in kv)
    cells.setdefault((int(f['anon']), f['mode']), []).append(f)
if not cells:
    sys.exit('no runs')


def med(runs, key):
    vals = [int(r[key]) for r in runs if key in r]
    return str(int(st.median(vals))) if vals else '-'


for (anon, mode), runs in sorted(cells.items()):
    killed = sum('chunks' not in r for r in runs)
    fields = ' '.join(f'{k}={med(runs, k)}' for k in
                      ('p50_us', 'p99_us', 'max_us', 'total_ms', 'text_start_kb', 'text_resident_kb', 'pgscan',
                       'pswpout'))
    print(f'RESULT lru={lru} anon={anon >> 10}K exec_protect={mode} runs={len(runs)} {fields} '
          f'oom_kills={sum(int(r["oom_kill"]) for r in runs)} allocator_killed={killed} '
          f'warmup_breached={sum(int(r.get("warmup_breached", 0)) for r in runs)} '
          f'breached_during={sum(int(r.get("breached_during", 0)) for r in runs)} '
          f'pgexec_breached={sum(int(r["pgexec_breached"]) for r in runs)}')
PY
done
