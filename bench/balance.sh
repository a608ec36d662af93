#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Anon/file balance and reclaim CPU with a large protected set (issue 12,
# item 8). In one cgroup under memory.max: idle tasks that mapped TEXT
# executable (touched once, aged with MADV_COLD: the rarely run code of
# a service), an anonymous working set that is touched over and over,
# and a use-once stream of page cache. With swap on, reclaim chooses
# between anon and file by their recent cost (lru_note_cost()); the
# question is whether keeping the protected text makes it swap the
# working set instead of dropping the stream.
# Per LRU and mode (unprotected: memory.exec_protect 0; protected: max):
# pages scanned and stolen, anon and file (/proc/vmstat: the VM runs
# nothing else), pages swapped out, anon refaults, the cgroup's system
# CPU, passes of the anonymous worker over its set, and text left
# resident. Median of --reps runs, every run printed.
#
# Usage: bench/balance.sh [--reps=3] [--lru=classic,mglru] [--kernel=BZIMAGE]
#                         [--limit=160M] [--text=64M] [--anon=96M] [--stream=1G]
#        (as root; default kernel: kernel/build.sh's, or $EXECGUARD_BZIMAGE)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
reps=3 lrus=classic,mglru limit=160M text=64M anon=96M stream=1G kernel=
for a in "$@"; do
	case $a in
	--reps=*) reps=${a#*=} ;;
	--lru=*) lrus=${a#*=} ;;
	--kernel=*) kernel=${a#*=} ;;
	--limit=*) limit=${a#*=} ;;
	--text=*) text=${a#*=} ;;
	--anon=*) anon=${a#*=} ;;
	--stream=*) stream=${a#*=} ;;
	-h|--help) sed -n '3,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--reps=N] [--lru=classic,mglru] [--kernel=BZIMAGE] [--limit=SIZE] [--text=SIZE] [--anon=SIZE] [--stream=SIZE]" >&2; exit 2 ;;
	esac
done
for s in "$limit" "$text" "$anon" "$stream"; do
	[[ $s =~ ^[0-9]+[KMG]$ ]] || { echo "error: sizes take K, M or G: $s" >&2; exit 2; }
done
[[ $reps =~ ^[0-9]+$ ]] || { echo "error: --reps takes a number" >&2; exit 2; }
kernel=${kernel:-${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}}
work=$(mktemp -d /var/tmp/balance.XXXXXX)
trap '[ "$BASHPID" = $$ ] && rm -rf "$work"' EXIT

cat >"$work/mapper.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
/* Maps argv[1] executable, touches it once, ages it, waits; on SIGUSR1
 * (not used) would run it again. Prints "r" when ready. */
int main(int argc, char **argv)
{
	struct stat st;
	volatile char sum = 0;
	char *p;
	int fd = open(argv[1], O_RDONLY);

	if (argc < 2 || fd < 0 || fstat(fd, &st))
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
# The anonymous working set: touches every page of SIZE over and over
# until stopped (SIGTERM), then prints how many passes it made.
cat >"$work/anon.c" <<'EOF'
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }
int main(int argc, char **argv)
{
	size_t size = strtoull(argv[1], NULL, 0);
	unsigned long passes = 0;
	char *p;

	signal(SIGTERM, on_term);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memset(p, 1, size);
	puts("ready");
	fflush(stdout);
	while (!stop) {
		for (size_t o = 0; o < size && !stop; o += 4096)
			p[o]++;
		passes++;
	}
	printf("passes=%lu\n", passes);
	return 0;
}
EOF
gcc -O2 -o "$work/mapper" "$work/mapper.c"
gcc -O2 -o "$work/anon" "$work/anon.c"

cat >"$work/inside.sh" <<EOF
set -eu
mode=\$1 reps=\$2 lru=\$3
cg=/sys/fs/cgroup
fallocate -l 512M swapfile; chmod 600 swapfile; mkswap -q swapfile; swapon swapfile
echo +memory > \$cg/cgroup.subtree_control
dd if=/dev/zero of=stream bs=1M count=$(( $(numfmt --from=iec "$stream") >> 20 )) status=none
head -c $(numfmt --from=iec "$text") /dev/urandom > text
sync; echo 3 > /proc/sys/vm/drop_caches
mkdir \$cg/bench
echo $limit > \$cg/bench/memory.max
[ \$mode = protected ] && echo max > \$cg/bench/memory.exec_protect
for i in 1 2 3 4; do
	sh -c "echo \\\$\\\$ > \$cg/bench/cgroup.procs; exec $work/mapper text" > /dev/null &
done
sleep 2
vm() { awk -v k="\$1" '\$1 == k { print \$2 }' /proc/vmstat; }
key() { awk -v k="\$2" '\$1 == k { print \$2 }' "\$1"; }
for r in \$(seq \$reps); do
	sh -c "echo \\\$\\\$ > \$cg/bench/cgroup.procs; exec $work/anon $(numfmt --from=iec "$anon")" > anon.out &
	apid=\$!
	until grep -q ready anon.out 2>/dev/null; do sleep 0.2; done
	sleep 3
	for k in pgscan_anon pgscan_file pgsteal_anon pgsteal_file pswpout workingset_refault_anon pgexec_protected; do
		eval "\${k}0=\\\$(vm \$k)"
	done
	sys0=\$(key \$cg/bench/cpu.stat system_usec)
	t0=\$(date +%s%N)
	sh -c "echo \\\$\\\$ > \$cg/bench/cgroup.procs; exec cat stream" > /dev/null
	t1=\$(date +%s%N)
	kill -TERM \$apid; wait \$apid || true
	sys1=\$(key \$cg/bench/cpu.stat system_usec)
	line="RUN \$lru \$mode wall_ms=\$(( (t1 - t0) / 1000000 )) sys_ms=\$(( (sys1 - sys0) / 1000 ))"
	for k in pgscan_anon pgscan_file pgsteal_anon pgsteal_file pswpout workingset_refault_anon pgexec_protected; do
		eval "v1=\\\$(vm \$k); v0=\\\$\${k}0"
		line="\$line \$k=\$(( \${v1:-0} - \${v0:-0} ))"
	done
	# text left resident: the protection at work (fincore, util-linux)
	line="\$line text_resident_kb=\$(( \$(fincore --bytes --noheadings --output RES text) >> 10 ))"
	line="\$line passes=\$(sed -n 's/^passes=//p' anon.out)"
	echo "\$line"
	swapoff swapfile; swapon swapfile
done
EOF
echo "# bench/balance.sh --reps=$reps --lru=$lrus --kernel=$kernel --limit=$limit --text=$text --anon=$anon --stream=$stream"
for lru in ${lrus//,/ }; do
	case $lru in classic) v=n ;; mglru) v=y ;; *) echo "error: --lru: classic or mglru" >&2; exit 2 ;; esac
	for mode in unprotected protected; do
		"$SRC/tests/vm/vm-run.sh" --kernel "$kernel" --mem 1G --disk 2G --timeout 2400 \
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
python3 - "$work/runs" <<'PY2'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith('RUN'):
        continue
    _, lru, mode, *kv = line.split()
    rows.setdefault((lru, mode), []).append({k: int(v) for k, v in (x.split('=') for x in kv)})
cols = ['wall_ms', 'sys_ms', 'pgscan_anon', 'pgscan_file', 'pgsteal_anon', 'pgsteal_file',
        'pswpout', 'workingset_refault_anon', 'passes', 'text_resident_kb', 'pgexec_protected']
print('| LRU | mode | ' + ' | '.join(cols) + ' |')
print('| --- | --- |' + ' --- |' * len(cols))
for (lru, mode), runs in rows.items():
    print(f'| {lru} | {mode} | ' + ' | '.join(f"{statistics.median(r.get(c, 0) for r in runs):.0f}" for c in cols) + ' |')
PY2
