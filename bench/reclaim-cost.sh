#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What memory.exec_protect costs reclaim: a use-once stream of page cache
# through a cgroup's memory.max (read(), or with --workload=mmap a file
# mapped and read through the mapping, which reclaim then unmaps), with
# idle tasks in that cgroup that have mapped text executable, and with
# --libc-mappers=N that many idle processes mapping libc (and the rest of
# their image) in ten unrelated cgroups, on
#   unpatched   the same kernel without the series (kernel/build.sh --unpatched)
#   unused      the series, memory.exec_protect set nowhere (static key off)
#   elsewhere   the series, set only on an unrelated cgroup (key on; the
#               stream's cgroup is not protected)
#   protected   the series, set on the stream's cgroup: its tasks' text
#               (aged with MADV_COLD) is kept on every pass
# For each: the stream's wall time, the cgroup's system CPU time (its
# direct reclaim), pages scanned and stolen (memory.stat), scanned per
# second of system time, and pgexec_protected. Median of --reps runs with
# a 95% confidence interval of the median (order statistics); every run
# is printed too.
# With --per-boot=K each boot streams K times and the figure of a boot is
# their median; each round's boots of the modes are next to each other in
# time, and the ratios between modes are taken round by round as well.
# With --insns the guests run under TCG with one CPU and the kinsn plugin
# (bench/kinsn), and each run also reports the instructions the kernel
# executed during the stream, in mm/vmscan.o, mm/rmap.o, mm/memcontrol.o,
# mm/filemap.o and the rest of it: a count the host's load does not
# change, where the guest's clock moves with it (and a table of the
# steady runs: those that scanned within 2% of the median pages scanned,
# for a like-for-like comparison). It needs each kernel's
# vmlinux and objects (the build-* directory beside kernel/build.sh's
# output). --profile=DIR (with --insns) keeps each boot's instructions by
# kernel block in DIR/TAG-ROUND.profile, the whole boot's: compare two
# with bench/kinsn/profile.py.
# With --paired=N, instead: one boot of the patched kernel per LRU runs
# the stream 2N times, unused and elsewhere in turn (ABBA order), setting
# and clearing the unrelated cgroup's memory.exec_protect (the static key
# goes on and off) between runs; the ratio elsewhere / unused of each
# pair is the figure, so a slow drift of the host's load or the guest's
# state falls on both halves of a pair alike.
#
# Usage: bench/reclaim-cost.sh [--reps=3] [--lru=classic,mglru]
#                              [--stream=512M] [--limit=64M]
#                              [--mappers=20] [--text=16M]
#                              [--workload=read|mmap] [--libc-mappers=0]
#                              [--modes=unpatched,unused,elsewhere,protected]
#                              [--per-boot=1] [--paired=N] [--insns [--profile=DIR]]
#        (as root; the kernels of kernel/build.sh and --unpatched, or
#         $EXECGUARD_BZIMAGE and $EXECGUARD_BZIMAGE_UNPATCHED; the cost
#         in kernel/README is counted with jump labels, as distributions
#         build: EXECGUARD_BZIMAGE=$(kernel/build.sh --jump-label | tail -n1)
#         EXECGUARD_BZIMAGE_UNPATCHED=$(kernel/build.sh --unpatched
#         --jump-label | tail -n1))
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
reps=3 lrus=classic,mglru stream=512M limit=64M mappers=20 text=16M
workload=read libc_mappers=0 modes=unpatched,unused,elsewhere,protected paired=0 per_boot=1 insns=0 profile=
for a in "$@"; do
	case $a in
	--workload=*) workload=${a#*=} ;;
	--libc-mappers=*) libc_mappers=${a#*=} ;;
	--modes=*) modes=${a#*=} ;;
	--paired=*) paired=${a#*=} ;;
	--per-boot=*) per_boot=${a#*=} ;;
	--insns) insns=1 ;;
	--profile=*) profile=${a#*=} ;;
	--reps=*) reps=${a#*=} ;;
	--lru=*) lrus=${a#*=} ;;
	--stream=*) stream=${a#*=} ;;
	--limit=*) limit=${a#*=} ;;
	--mappers=*) mappers=${a#*=} ;;
	--text=*) text=${a#*=} ;;
	-h|--help) sed -n '/^# What memory/,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "usage: $0 [--reps=N] [--lru=classic,mglru] [--stream=512M] [--limit=64M] [--mappers=N] [--text=16M] [--workload=read|mmap] [--libc-mappers=N] [--modes=...] [--per-boot=K] [--paired=N] [--insns [--profile=DIR]]" >&2; exit 2 ;;
	esac
done
[[ $reps =~ ^[0-9]+$ && $paired =~ ^[0-9]+$ && $per_boot =~ ^[1-9][0-9]*$ && $mappers =~ ^[0-9]+$ && $libc_mappers =~ ^[0-9]+$ &&
   $stream =~ ^[0-9]+[KMG]$ && $limit =~ ^[0-9]+[KMG]$ && $text =~ ^[0-9]+[KMG]$ &&
   $workload =~ ^(read|mmap)$ && $modes =~ ^(unpatched|unused|elsewhere|protected)(,(unpatched|unused|elsewhere|protected))*$ ]] || {
	echo "error: --reps, --per-boot, --paired, --mappers and --libc-mappers take numbers; --stream, --limit, --text sizes (K, M, G); --workload read or mmap; --modes a list of unpatched, unused, elsewhere, protected" >&2
	exit 2
}

patched=${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}
unpatched=${EXECGUARD_BZIMAGE_UNPATCHED:-$("$SRC/kernel/build.sh" --unpatched | tail -n1)}
work=$(mktemp -d /var/tmp/reclaim-cost.XXXXXX)
trap '[ "$BASHPID" = $$ ] && rm -rf "$work"' EXIT

# --insns: the plugin, and for each kernel its objects' text ranges and
# the marker (drop_caches_sysctl_handler: each run writes drop_caches as
# it starts and as it ends)
vm_args=()
plugin_args() { :; }
if [ "$insns" = 1 ]; then
	plugin=$("$SRC/bench/kinsn/build.sh")
	for k in patched unpatched; do
		bz=${!k}
		b=$(dirname "$(dirname "$bz")")/build-$(basename "$(dirname "$bz")")
		[ -f "$b/vmlinux" ] || { echo "error: --insns needs $b/vmlinux (the build of $bz)" >&2; exit 1; }
		"$SRC/bench/kinsn/ranges.sh" "$b" mm/vmscan.o mm/rmap.o mm/memcontrol.o mm/filemap.o >"$work/ranges-$k"
		nm "$b/vmlinux" | awk '$3 == "drop_caches_sysctl_handler" { print "0x" $1 }' >"$work/marker-$k"
		[ -s "$work/marker-$k" ] || { echo "error: no drop_caches_sysctl_handler in $b/vmlinux" >&2; exit 1; }
	done
	vm_args=(--accel tcg --smp 1)
	# plugin_args KERNEL-NAME OUT: vm-run.sh's --plugin for that boot
	plugin_args() {
		echo "--plugin $plugin,ranges=$work/ranges-$1,out=$2,marker=$(cat "$work/marker-$1")${3:+,profile=$3}"
	}
	if [ -n "$profile" ]; then
		mkdir -p "$profile"
		profile=$(cd "$profile" && pwd)
	fi
elif [ -n "$profile" ]; then
	echo "error: --profile needs --insns" >&2
	exit 2
fi

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

# The mmap workload: map the stream's file and read it through the mapping,
# a page at a time, once
cat >"$work/mmapcat.c" <<'EOF'
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
int main(int argc, char **argv)
{
	struct stat st;
	volatile char sum = 0;
	char *p;
	int fd = open(argv[1], O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return 1;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1;
	for (off_t o = 0; o < st.st_size; o += 4096)
		sum += p[o];
	return 0;
}
EOF
gcc -O2 -o "$work/mmapcat" "$work/mmapcat.c"
reader="cat stream"
[ "$workload" = mmap ] && reader="$work/mmapcat stream"

# Runs in the VM, in the scratch disk: MODE REPS LRU [ROUND]
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
# Idle processes of unrelated cgroups that map libc: its folios have a
# long rmap, and reclaim meets them
for i in \$(seq 0 9); do mkdir -p \$cg/libc\$i; done
for i in \$(seq $libc_mappers); do
	sh -c "echo \\\$\\\$ > \$cg/libc\$(( i % 10 ))/cgroup.procs; exec sleep 100000" &
done
sleep 2
key() { awk -v k="\$2" '\$1 == k { print \$2 }' "\$1"; }
# one stream through the cgroup: MODE [ROUND]
measure() {
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
	sys0=\$(key \$cg/bench/stream/cpu.stat system_usec)
	scan0=\$(key \$cg/bench/stream/memory.stat pgscan)
	steal0=\$(key \$cg/bench/stream/memory.stat pgsteal)
	prot0=\$(key \$cg/bench/stream/memory.stat pgexec_protected); prot0=\${prot0:-0}
	t0=\$(date +%s%N)
	sh -c "echo \\\$\\\$ > \$cg/bench/stream/cgroup.procs; exec $reader" > /dev/null
	t1=\$(date +%s%N)
	# --insns: the end of the run for kinsn
	[ $insns = 0 ] || echo 3 > /proc/sys/vm/drop_caches
	# memory.stat is flushed lazily (every 2 s): let it catch up
	sleep 3
	sys1=\$(key \$cg/bench/stream/cpu.stat system_usec)
	scan1=\$(key \$cg/bench/stream/memory.stat pgscan)
	steal1=\$(key \$cg/bench/stream/memory.stat pgsteal)
	prot1=\$(key \$cg/bench/stream/memory.stat pgexec_protected); prot1=\${prot1:-0}
	echo "RUN \$lru \$1 \${2:+round=\$2 }wall_ms=\$(( (t1 - t0) / 1000000 )) sys_ms=\$(( (sys1 - sys0) / 1000 )) pgscan=\$(( scan1 - scan0 )) pgsteal=\$(( steal1 - steal0 )) pgexec_protected=\$(( prot1 - prot0 ))"
}
if [ "\$mode" = paired ]; then
	# ABBA: unused first in odd rounds, elsewhere first in even ones
	for r in \$(seq \$reps); do
		order="unused elsewhere"
		[ \$((r % 2)) = 0 ] && order="elsewhere unused"
		for m in \$order; do
			if [ \$m = elsewhere ]; then echo max; else echo 0; fi > \$cg/other/memory.exec_protect
			measure \$m \$r
		done
	done
else
	for r in \$(seq \$reps); do measure \$mode \${4:-}; done
fi
EOF

echo "# bench/reclaim-cost.sh --reps=$reps --lru=$lrus --stream=$stream --limit=$limit --mappers=$mappers --text=$text --workload=$workload --libc-mappers=$libc_mappers --modes=$modes --per-boot=$per_boot --paired=$paired$([ "$insns" = 1 ] && echo ' --insns')"
echo "# kernels: $patched, $unpatched"
echo "# host load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# One run per VM, the modes in turn, round after round: a change in the
# host's load falls on every mode alike
# boot KERNEL-NAME LRU TAG ARGS...: one VM, inside.sh ARGS; its RUN lines,
# with --insns each with the kernel's instructions during the run
boot() {
	local k=$1 lru=$2 tag=$3 v=n kout=$work/kinsn-$3 prof=
	shift 3
	[ -n "$profile" ] && prof=$profile/$tag-${4:-1}.profile
	[ "$lru" = mglru ] && v=y
	rm -f "$kout"
	# shellcheck disable=SC2046
	"$SRC/tests/vm/vm-run.sh" --kernel "${!k}" --mem 1G --disk 1G --timeout $((1800 + (per_boot + 2 * paired) * 600)) \
		"${vm_args[@]}" $(plugin_args "$k" "$kout" "$prof") --log "$work/vm-$tag.log" -- \
		bash -c "echo $v > /sys/kernel/mm/lru_gen/enabled; bash $work/inside.sh $*" \
		>"$work/out-$tag" 2>&1 || {
		tail -n 20 "$work/out-$tag" >&2
		echo "error: the $tag VM failed" >&2
		exit 1
	}
	grep -a '^RUN' "$work/out-$tag" | tr -d '\r' >"$work/runs-$tag"
	if [ "$insns" = 0 ]; then
		cat "$work/runs-$tag"
		return
	fi
	# marks: 0 the setup's drop_caches, then 2 a run (its start, its end)
	python3 - "$work/runs-$tag" "$kout" <<'PY'
import sys, collections
runs = [l.rstrip('\n') for l in open(sys.argv[1])]
marks = []
for line in open(sys.argv[2]):
    what, _, *kv = line.split()
    c = collections.Counter()
    for x in kv:
        k, v = x.split('=')
        c[k] += int(v)
    marks.append(c)
if len(marks) < 1 + 2 * len(runs):
    sys.exit(f"kinsn: {len(marks)} marks for {len(runs)} runs")
for i, run in enumerate(runs):
    a, b = marks[1 + 2 * i], marks[2 + 2 * i]
    d = {k: b[k] - a[k] for k in b}
    total = sum(v for k, v in d.items() if k != 'user')
    print(run, ' '.join(f'insn_{k}={v}' for k, v in d.items() if k != 'user'), f'insn_kernel_total={total}')
PY
}
for lru in ${lrus//,/ }; do
	case $lru in classic|mglru) ;; *) echo "error: --lru: classic or mglru" >&2; exit 2 ;; esac
	if [ "$paired" -gt 0 ]; then
		boot patched "$lru" "$lru-paired" paired "$paired" "$lru"
		continue
	fi
	for round in $(seq "$reps"); do
		for mode in ${modes//,/ }; do
			k=patched
			[ "$mode" = unpatched ] && k=unpatched
			boot "$k" "$lru" "$lru-$mode" "$mode" "$per_boot" "$lru" "$round"
		done
	done
done | tee "$work/runs"
echo "# host load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$work/runs" <<'PY'
import math, sys, statistics
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith('RUN'):
        continue
    _, lru, mode, *kv = line.split()
    d = {k: int(v) for k, v in (x.split('=') for x in kv)}
    rows.setdefault((lru, mode), []).append(d)

def median_ci(xs):
    """Median and a distribution-free 95% confidence interval of it:
    order statistics k and n-k+1, k the largest with P(Bin(n,1/2) < k) <= 2.5%"""
    xs = sorted(xs)
    n = len(xs)
    k, cum = 0, 0.0
    while True:
        p = math.comb(n, k) / 2 ** n
        if cum + p > 0.025:
            break
        cum += p
        k += 1
    med = statistics.median(xs)
    if k == 0:
        return med, None, None
    return med, xs[k - 1], xs[n - k]

def cell(xs, scale=1.0, fmt='{:.2f}'):
    med, lo, hi = median_ci([x * scale for x in xs])
    if lo is None:
        return fmt.format(med) + ' (n too small for a CI)'
    return (fmt + ' [' + fmt + ', ' + fmt + ']').format(med, lo, hi)

print('Median [95% CI of the median] over the runs; system CPU of the stream\'s cgroup.')
print()
print('| LRU | kernel / protection | runs | system CPU s | pgscan per system-CPU s | wall s | pgscan | pgexec_protected |')
print('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (lru, mode), runs in rows.items():
    rate = [r['pgscan'] / (r['sys_ms'] / 1000) for r in runs if r['sys_ms']]
    print(f"| {lru} | {mode} | {len(runs)} | {cell([r['sys_ms'] for r in runs], 1/1000)} | "
          f"{cell(rate, 1, '{:.0f}')} | {cell([r['wall_ms'] for r in runs], 1/1000)} | "
          f"{cell([r['pgscan'] for r in runs], 1, '{:.0f}')} | {statistics.median(r['pgexec_protected'] for r in runs):.0f} |")

# Ratios between modes round by round: a round's boots ran next to each
# other; a boot's figure is the median of its runs
boots = {}
for (lru, mode), runs in rows.items():
    for r in runs:
        if 'round' in r:
            boots.setdefault((lru, mode, r['round']), []).append(r)
ratios = (('unused', 'unpatched'), ('elsewhere', 'unused'), ('protected', 'unused'))


def bmed(boot, f):
    """The median over a boot's runs of f(run)"""
    return statistics.median(f(x) for x in boot)


def ratio_tables(title, columns, figures, fmt, usable):
    """For each LRU, the ratios a / b of each pair of modes, round by round:
    figures are functions of a boot's runs, usable(A, B) says whether a
    round's two boots give them"""
    for lru in sorted({l for l, _ in rows}):
        lines = []
        for a, b in ratios:
            rounds = sorted({k[2] for k in boots if k[0] == lru and k[1] == a} & {k[2] for k in boots if k[0] == lru and k[1] == b})
            per = []
            for rd in rounds:
                A, B = boots[(lru, a, rd)], boots[(lru, b, rd)]
                if usable(A, B):
                    per.append([f(A) / f(B) for f in figures])
            if per:
                lines.append(f"| {a} / {b} | {len(per)} | "
                             + ' | '.join(cell([x[i] for x in per], 1, fmt) for i in range(len(figures))) + ' |')
        if lines:
            print()
            print(f'{title}, {lru}, median [95% CI of the median]:')
            print()
            print('| ratio | rounds | ' + ' | '.join(columns) + ' |')
            print('| --- | --- | ' + ' | '.join('---' for _ in columns) + ' |')
            print('\n'.join(lines))


ratio_tables('Ratios round by round', ['system CPU', 'pgscan', 'system CPU per page scanned'],
             [lambda X: bmed(X, lambda x: x['sys_ms']), lambda X: bmed(X, lambda x: x['pgscan']),
              lambda X: bmed(X, lambda x: x['sys_ms']) / bmed(X, lambda x: x['pgscan'])],
             '{:.3f}',
             lambda A, B: bmed(B, lambda x: x['sys_ms']) and bmed(B, lambda x: x['pgscan']) and bmed(A, lambda x: x['pgscan']))

# --insns: the kernel's instructions during a run, by object, and their
# ratios round by round
objs = ['kernel_total', 'vmscan', 'rmap', 'memcontrol', 'filemap', 'kernel']
has_insns = any('insn_kernel_total' in r for runs in rows.values() for r in runs)
if has_insns:
    print()
    print('Instructions the kernel executed during a run, millions, median [95% CI of the median]'
          ' ("kernel": the rest of it); per page scanned:')
    print()
    print('| LRU | kernel / protection | runs | ' + ' | '.join(objs) + ' | kernel_total per page scanned | vmscan+rmap+memcontrol per page scanned |')
    print('| --- | --- | --- | ' + ' | '.join('---' for _ in objs) + ' | --- | --- |')
    for (lru, mode), runs in rows.items():
        runs = [r for r in runs if 'insn_kernel_total' in r and r['pgscan']]
        if not runs:
            continue
        per_scan = [r['insn_kernel_total'] / r['pgscan'] for r in runs]
        rec = [(r['insn_vmscan'] + r['insn_rmap'] + r['insn_memcontrol']) / r['pgscan'] for r in runs]
        print(f"| {lru} | {mode} | {len(runs)} | " + ' | '.join(cell([r['insn_' + o] for r in runs], 1e-6, '{:.1f}') for o in objs)
              + f" | {cell(per_scan, 1, '{:.0f}')} | {cell(rec, 1, '{:.0f}')} |")
    tot = lambda x: x['insn_kernel_total']
    rec = lambda x: x['insn_vmscan'] + x['insn_rmap'] + x['insn_memcontrol']
    ratio_tables('Instruction ratios round by round',
                 ['kernel instructions', 'kernel instructions per page scanned', 'vmscan+rmap+memcontrol per page scanned'],
                 [lambda X: bmed(X, tot), lambda X: bmed(X, lambda x: tot(x) / x['pgscan']),
                  lambda X: bmed(X, lambda x: rec(x) / x['pgscan'])],
                 '{:.4f}',
                 lambda A, B: all('insn_kernel_total' in x and x['pgscan'] for x in A + B))

# --insns, the steady state: runs that scanned within 2% of the median
# pages scanned of their LRU (MGLRU's aging now and then makes a stream
# scan 120,000-210,000 pages instead of ~221,000: another workload)
if has_insns:
    for lru in sorted({l for l, _ in rows}):
        allruns = [r for (l, _), runs in rows.items() if l == lru for r in runs if 'insn_kernel_total' in r]
        if not allruns:
            continue
        ps = statistics.median(r['pgscan'] for r in allruns)
        steady = {m: [r for r in runs if 'insn_kernel_total' in r and abs(r['pgscan'] - ps) <= 0.02 * ps]
                  for (l, m), runs in rows.items() if l == lru}
        print()
        print(f'Steady runs, {lru} (pages scanned within 2% of {ps:.0f}): '
              + ', '.join(f'{m} {len(v)} of {len(rows[(lru, m)])}' for m, v in steady.items())
              + '; instructions, millions, median [95% CI of the median], and the ratio of the medians:')
        print()
        modes = [m for m in steady if steady[m]]
        print('| object | ' + ' | '.join(modes) + ' | unused / unpatched | elsewhere / unused |')
        print('| --- | ' + ' | '.join('---' for _ in modes) + ' | --- | --- |')
        for o in objs:
            meds = {m: statistics.median(r['insn_' + o] for r in steady[m]) for m in modes}
            rat = lambda a, b: f"{(meds[a] / meds[b] - 1) * 100:+.2f}%" if a in meds and b in meds and meds[b] else '-'
            print(f'| {o} | ' + ' | '.join(cell([r['insn_' + o] for r in steady[m]], 1e-6) for m in modes)
                  + f" | {rat('unused', 'unpatched')} | {rat('elsewhere', 'unused')} |")
PY
