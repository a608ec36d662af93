#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# i_mmap_rwsem per exec+exit, by call path (issue 17).
#
# Boots the lock statistics kernel (kernel/build.sh --lockstat: the series,
# CONFIG_LOCK_STAT and kernel/lockstat/immap-stat.patch, counting
# instrumentation that is not part of the series) in the VM and runs an
# execl storm: a small dynamically linked program (built here, linked
# against libm, libz, libcrypt, libbz2, liblzma and libexpat) that execs
# itself COUNT times, in PARALLEL chains at once (UnixBench execl's
# pattern: each iteration is one exec and one teardown of the previous
# image). It prints, per exec+exit:
#   - each call path (the first frames above the lock helper) that took
#     i_mmap_rwsem: write (W) or read (R), acquisitions, mean and longest
#     hold, hold time (ns) per exec;
#   - /proc/lock_stat's totals for the lock class (all files share it).
# A baseline window of the same length without the storm (the VM idle) is
# subtracted. Hold times are those of a TCG guest with lockdep's tracking
# (LOCK_STAT selects it): compare them between kernels of the same build,
# not with real hardware.
#
# Usage: bench/immap-lock.sh [options]
#   --kernel PATH     bzImage (default: what kernel/build.sh --lockstat prints)
#   --execs N         execs per chain (default 300)
#   --parallel P      chains at once (default 2, the VM's CPUs)
#   --residents R     processes of the program kept alive meanwhile, so that
#                     each file's i_mmap tree holds R more mappings of it, as
#                     a hot library's does on a busy machine (default 50)
#   --out DIR         keep the raw files in DIR (default: a temporary dir)
#   --label TEXT      printed with the table (e.g. "before", "after")
#   --from DIR        print the tables of an earlier run kept with --out DIR
#                     (no VM)
#   -h, --help        this help
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
top=$(dirname "$here")
kernel=
execs=300
parallel=2
residents=50
out=
label=
from=
libdir=/lib/x86_64-linux-gnu
libs=(libm.so.6 libz.so.1 libcrypt.so.1 libbz2.so.1.0 liblzma.so.5 libexpat.so.1)
cmdline="bench/immap-lock.sh $*"
usage() { sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift ;;
	--kernel=*) kernel=${1#*=} ;;
	--execs) execs=$2; shift ;;
	--execs=*) execs=${1#*=} ;;
	--parallel) parallel=$2; shift ;;
	--parallel=*) parallel=${1#*=} ;;
	--residents) residents=$2; shift ;;
	--residents=*) residents=${1#*=} ;;
	--out) out=$2; shift ;;
	--out=*) out=${1#*=} ;;
	--label) label=$2; shift ;;
	--label=*) label=${1#*=} ;;
	--from) from=$2; shift ;;
	--from=*) from=${1#*=} ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
if [ -n "$from" ]; then
	# shellcheck disable=SC1091
	. "$from/params"
	out=$from
else
[ -n "$kernel" ] || kernel=$("$top/kernel/build.sh" --lockstat | tail -n 1)
[ -f "$kernel" ] || { echo "immap-lock: no kernel $kernel" >&2; exit 1; }
if [ -z "$out" ]; then
	out=$(mktemp -d /var/tmp/immap-lock.XXXXXX)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
rm -f "$out"/*.immap "$out"/*.lockstat "$out"/storm.time "$out"/done "$out"/files

# The program: one symbol of each library so that each is really used
for l in "${libs[@]}"; do
	[ -f "$libdir/$l" ] || { echo "immap-lock: $libdir/$l missing" >&2; exit 1; }
done
cat >"$out/target.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *zlibVersion(void);
char *crypt(const char *key, const char *salt);
const char *BZ2_bzlibVersion(void);
unsigned int lzma_version_number(void);
const char *XML_ExpatVersion(void);

/* argv[1]: how many more times to exec itself, or "hold": wait for a signal */
int main(int argc, char **argv)
{
	char n[24];
	long left = argc > 1 ? atol(argv[1]) : 0;

	if (argc > 1 && argv[1][0] == 'h')
		pause();
	/* Keep the references: the libraries must be loaded */
	volatile void *keep[] = { (void *)sqrt, (void *)zlibVersion,
		(void *)crypt, (void *)BZ2_bzlibVersion,
		(void *)lzma_version_number, (void *)XML_ExpatVersion };

	(void)keep;
	if (left <= 0)
		return 0;
	snprintf(n, sizeof(n), "%ld", left - 1);
	execl("/proc/self/exe", argv[0], n, (char *)NULL);
	perror("execl");
	return 1;
}
EOF
cat >"$out/storm.c" <<'EOF'
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

/* storm PROGRAM EXECS PARALLEL: PARALLEL chains of EXECS execs each */
int main(int argc, char **argv)
{
	int i, status, fail = 0, p = atoi(argv[3]);

	for (i = 0; i < p; i++) {
		char *args[] = { argv[1], argv[2], NULL };
		pid_t pid;

		if (posix_spawn(&pid, argv[1], NULL, NULL, args, environ)) {
			perror("posix_spawn");
			return 1;
		}
	}
	for (i = 0; i < p; i++) {
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			fail = 1;
	}
	return fail;
}
EOF
link=()
for l in "${libs[@]}"; do link+=("$libdir/$l"); done
gcc -O2 -o "$out/immap-target" "$out/target.c" -Wl,--no-as-needed "${link[@]}"
gcc -O2 -static -o "$out/immap-storm" "$out/storm.c"

cat >"$out/guest.sh" <<EOF
#!/bin/bash
set -eu
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
cp /results/immap-target /results/immap-storm /tmp/
echo 1 >/proc/sys/kernel/lock_stat
# warm up: page cache, dentries, the loader's cache
/tmp/immap-storm /tmp/immap-target 20 $parallel
for i in \$(seq $residents); do /tmp/immap-target hold & done
sleep 2
clear() { echo 0 >/proc/lock_stat; echo 1 >/sys/kernel/debug/immap_stat; }
grab() {
	cat /sys/kernel/debug/immap_stat >/results/\$1.immap
	cat /proc/lock_stat >/results/\$1.lockstat
}
clear
t0=\$(date +%s%N)
/tmp/immap-storm /tmp/immap-target $execs $parallel
t1=\$(date +%s%N)
grab storm
stat -L -c '%i %n' /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 \
	$(printf '/lib/x86_64-linux-gnu/%s ' "${libs[@]}") /etc/ld.so.cache /tmp/immap-target >/results/files
echo \$(( (t1 - t0) / 1000000 )) >/results/storm.time
clear
sleep \$(( (t1 - t0) / 1000000000 + 1 ))
grab base
kill \$(jobs -p) 2>/dev/null || true
uname -r >/results/done
EOF
chmod +x "$out/guest.sh"

"$top/tests/vm/vm-run.sh" --kernel "$kernel" --results "$out" --timeout 1800 \
	--log "$out/console.log" --quiet -- /bin/bash /results/guest.sh
[ -f "$out/done" ] || { echo "immap-lock: the guest did not finish, see $out/console.log" >&2; exit 1; }
printf 'kernel=%q execs=%q parallel=%q residents=%q label=%q cmdline=%q\n' \
	"$kernel" "$execs" "$parallel" "$residents" "$label" "$cmdline" >"$out/params"
fi

n=$(( parallel * (execs + 1) ))
ms=$(cat "$out/storm.time")
echo "# $cmdline"
echo "# kernel $kernel ($(cat "$out/done"))${label:+, $label}"
echo "# $n execs+exits ($parallel chains of $((execs + 1))) in $ms ms; per exec+exit, baseline (idle ${ms} ms) subtracted"
echo "# program: $(printf '%s ' "${libs[@]}")+ libc, ld.so; $residents resident copies"
echo
# Path: the six frames above the helper, without offsets; hold
# times in ns. Rows with fewer than 0.05 per exec are summed in "other".
awk -v n="$n" '
function key(  k, i, f, g, nf, prev) {
	k = $1
	for (i = 5; i <= NF && nf < 6; i++) {
		f = $i
		# the caller of __split_vma keeps its offset: which split it is
		if (prev != "__split_vma")
			sub(/\+0x.*/, "", f)
		else
			sub(/\/0x.*/, "", f)
		g = f; sub(/\+0x.*/, "", g); prev = g
		if (f ~ /^immap_stat/)
			continue
		k = k " " f; nf++
	}
	return k
}
FNR == 1 { base = (FILENAME ~ /base\.immap$/) }
/^#/ || /^F / { next }
{
	k = key(); s = base ? -1 : 1
	cnt[k] += s * $2; hold[k] += s * $3
	if (!base && $4 > mx[k]) mx[k] = $4
}
END {
	printf "| mode | call path (innermost first) | per exec | mean hold ns | longest ns | hold ns per exec |\n"
	printf "| --- | --- | ---: | ---: | ---: | ---: |\n"
	for (k in cnt) {
		split(k, a, " "); m = a[1]
		if (cnt[k] / n < 0.05) {
			oc[m] += cnt[k]; oh[m] += hold[k]; continue
		}
		p = k; sub(/^[WR] /, "", p); gsub(/ /, " < ", p)
		printf "| %s | %s | %.2f | %.0f | %d | %.0f |\n", m, p, cnt[k] / n,
			cnt[k] ? hold[k] / cnt[k] : 0, mx[k], hold[k] / n | "sort -t\"|\" -k2,2 -k4,4nr"
		tc[m] += cnt[k]; th[m] += hold[k]
	}
	close("sort -t\"|\" -k2,2 -k4,4nr")
	for (m in oc) {
		printf "| %s | other paths | %.2f | %.0f | - | %.0f |\n", m, oc[m] / n,
			oc[m] ? oh[m] / oc[m] : 0, oh[m] / n
		tc[m] += oc[m]; th[m] += oh[m]
	}
	for (m in tc)
		printf "| %s | **total** | **%.2f** | %.0f | - | **%.0f** |\n", m, tc[m] / n,
			tc[m] ? th[m] / tc[m] : 0, th[m] / n
}' "$out/storm.immap" "$out/base.immap"
grep -h '^# lost' "$out/storm.immap" | sed 's/^/# instrumentation (storm): /'
echo
echo "By file (per exec+exit; a hot library's rwsem sees its row from every exec):"
awk -v n="$n" '
FILENAME ~ /files$/ { name[$1] = $2; next }
FNR == 1 { base = (FILENAME ~ /base\.immap$/) }
/^F / {
	s = base ? -1 : 1
	w[$3] += s * $4; r[$3] += s * $5; hw[$3] += s * $6; hr[$3] += s * $7
}
END {
	printf "| file | W per exec | W hold ns per exec | R per exec | R hold ns per exec |\n| --- | ---: | ---: | ---: | ---: |\n"
	for (i in w) {
		if (w[i] / n < 0.05 && r[i] / n < 0.05)
			continue
		f = (i in name) ? name[i] : "inode " i
		printf "| %s | %.2f | %.0f | %.2f | %.0f |\n", f, w[i] / n, hw[i] / n, r[i] / n, hr[i] / n
	}
}' "$out/files" "$out/storm.immap" "$out/base.immap"
echo
echo "/proc/lock_stat, class i_mmap_rwsem (storm minus idle window, per exec+exit; times us):"
awk -v n="$n" '
FNR == 1 { base = (FILENAME ~ /base\.lockstat$/) }
$1 ~ /i_mmap_rwsem(-[WR])?:$/ && !/hugetlb/ {
	# lock_stat writes -W/-R only when the class had both
	m = ($1 ~ /-R:$/) ? "R" : "W"
	s = base ? -1 : 1
	con[m] += s * $3; wt[m] += s * $6; acq[m] += s * $9; ht[m] += s * $12
}
END {
	printf "| mode | contentions | wait us | acquisitions | hold us |\n| --- | ---: | ---: | ---: | ---: |\n"
	for (m in acq)
		if (acq[m] > 0)
			printf "| %s | %.3f | %.2f | %.2f | %.2f |\n", m, con[m] / n, wt[m] / n, acq[m] / n, ht[m] / n
}' "$out/storm.lockstat" "$out/base.lockstat"
