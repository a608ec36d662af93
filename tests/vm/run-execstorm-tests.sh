#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The tests of the exec-storm pair (kernel/execstorm/: binfmt_elf and
# mm/vma, a series of its own for the exec and VMA maintainers), on the
# base kernel and on the base with only the pair (kernel/build.sh
# --unpatched and --execstorm):
#   - the kernel's exec selftests (tools/testing/selftests/exec, through
#     the kselftest runner) in a VM, on both kernels: a table of every
#     test, ok / fail / skip per kernel;
#   - tests/vm/immap-rmap.sh (truncate and migration see every mapper of a
#     file mapped as ld.so maps a library) on the pair, under both LRUs;
#   - tools/testing/vma (the userspace harness that builds mm/vma.c) on
#     host, on both sources, with kernel/execstorm/harness/vma-close-stub.patch
#     (the base's harness does not link without it).
#
# Usage: tests/vm/run-execstorm-tests.sh [--results DIR]
#   --results DIR   keep the selftests' TAP, the consoles and the
#                   harness's output there (default: a temporary
#                   directory, removed)
#   -h, --help      this text
#   The kernels: $EXECGUARD_BZIMAGE_EXECSTORM and
#   $EXECGUARD_BZIMAGE_UNPATCHED, else what kernel/build.sh --execstorm and
#   --unpatched print (each built in its own directory when needed).
#
# Exit status: 0 when no exec selftest that passed on the base failed (or
# gave no result) with the pair, immap-rmap passed under both LRUs and the
# harness passed on the pair; 1 otherwise; 2 on bad usage; 77 (skip) when
# qemu is not installed.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)
results=
while [ $# -gt 0 ]; do
	case $1 in
	--results) results=${2:?}; shift ;;
	-h | --help) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--results DIR]" >&2; exit 2 ;;
	esac
	shift
done
note() { echo "run-execstorm-tests.sh: $*" >&2; }
die() { note "error: $*"; exit 1; }
command -v qemu-system-x86_64 > /dev/null || { echo "SKIP: qemu-system-x86_64 not installed" >&2; exit 77; }

# The kselftest install needs rsync; the harness liburcu
need=()
command -v rsync > /dev/null || need+=(rsync)
[ -f /usr/include/urcu.h ] || need+=(liburcu-dev)
if [ ${#need[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing packages, run as root or install: ${need[*]}"
	note "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
		--no-install-recommends "${need[@]}" >&2
fi

# The guest reads from the host's root over 9p; its /tmp is its own
work=$(mktemp -d /var/tmp/execguard-execstorm-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "$results" ]; then
	mkdir -p "$results"
	results=$(cd "$results" && pwd -P)
else
	results=$work/results
	mkdir -p "$results"
fi

pair=${EXECGUARD_BZIMAGE_EXECSTORM:-$("$repo/kernel/build.sh" --execstorm | tail -n 1)}
base=${EXECGUARD_BZIMAGE_UNPATCHED:-$("$repo/kernel/build.sh" --unpatched | tail -n 1)}
pair_src=$("$repo/kernel/build.sh" --execstorm --source-only | tail -n 1)
base_src=$("$repo/kernel/build.sh" --unpatched --source-only | tail -n 1)
note "kernels: base $base, pair $pair"

# --- exec selftests ---------------------------------------------------------
# Built once, from the pair's source (the pair changes no test), as their
# Makefile builds them, and installed with the kselftest runner
make -s -C "$pair_src/tools/testing/selftests" O="$work/ksbuild" TARGETS=exec \
	INSTALL_PATH="$work/kselftest" install > "$results/selftests-build.log" 2>&1 ||
	{ tail -n 20 "$results/selftests-build.log" >&2; die "building the exec selftests failed"; }
for k in base pair; do
	kernel=$base
	[ $k = pair ] && kernel=$pair
	mkdir -p "$results/exec-$k"
	note "exec selftests on $k"
	# On the ext4 scratch disk (execveat makes files next to itself);
	# each test may take 300 s under TCG (the runner's default is 45).
	# execveat runs scripts through /dev/fd/N, which udev or systemd
	# makes on a real system and the guest's init mode does not
	"$here/vm-run.sh" --kernel "$kernel" --disk 512M --results "$results/exec-$k" \
		--timeout 1800 --quiet --log "$results/exec-$k/console.log" -- /bin/sh -c \
		"{ [ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd; } && cp -a $work/kselftest /mnt/scratch/ks && cd /mnt/scratch/ks && ./run_kselftest.sh -o 300 > /results/tap 2>&1; echo \$? > /results/rc" ||
		die "the $k VM failed (console: $results/exec-$k/console.log)"
done

# TAP lines of the runner: "ok N selftests: exec: NAME [# SKIP ...]"
selftests_rc=0
python3 - "$results/exec-base/tap" "$results/exec-pair/tap" > "$results/table" <<'PY' || selftests_rc=$?
import re, sys
def parse(path):
    r = {}
    for line in open(path, errors='replace'):
        m = re.match(r'(not ok|ok) \d+ selftests: exec: (\S+)(.*)', line)
        if m:
            skip = '# SKIP' in m.group(3)
            r[m.group(2)] = 'skip' if skip else ('ok' if m.group(1) == 'ok' else 'fail')
    return r
b, p = parse(sys.argv[1]), parse(sys.argv[2])
bad = 0
print(f"{'exec selftest':<32} {'base':<6} {'pair':<6}")
for t in sorted(set(b) | set(p)):
    mark = ''
    if b.get(t) == 'ok' and p.get(t) != 'ok':
        mark, bad = '  REGRESSION', bad + 1
    print(f"{t:<32} {b.get(t, '-'):<6} {p.get(t, '-'):<6}{mark}")
if not b or not p:
    print('no result from a kernel'); bad += 1
print(f"exec selftests: {sum(v == 'ok' for v in b.values())} of {len(b)} ok on the base, "
      f"{sum(v == 'ok' for v in p.values())} of {len(p)} with the pair, {bad} regression(s)")
sys.exit(1 if bad else 0)
PY
cat "$results/table"

# --- immap-rmap on the pair, both LRUs --------------------------------------
immap_rc=0
for lru in classic mglru; do
	"$here/immap-rmap.sh" "$lru" --kernel "$pair" > "$results/immap-rmap-$lru.tap" 2>&1 || immap_rc=1
	echo "immap-rmap $lru: $(grep -c '^ok' "$results/immap-rmap-$lru.tap") ok," \
		"$(grep -c '^not ok' "$results/immap-rmap-$lru.tap") not ok"
done

# --- tools/testing/vma on both sources --------------------------------------
# A hard-linked copy of what the harness reads, with its own directories
# (where the stub patch and make write) copied for real: the kernels'
# trees stay as they are
harness() { # NAME SRC
	local d=$work/vma-$1 p
	for p in tools include lib mm arch/x86/include; do
		mkdir -p "$d/$(dirname $p)"
		cp -al "$2/$p" "$d/$p"
	done
	for p in tools/testing/vma tools/testing/shared; do
		rm -rf "${d:?}/$p"
		cp -a "$2/$p" "$d/$p"
	done
	patch -s -d "$d" -p1 < "$repo/kernel/execstorm/harness/vma-close-stub.patch" || return 1
	make -s -C "$d/tools/testing/vma" > "$results/vma-$1.log" 2>&1 || return 1
	(cd "$d/tools/testing/vma" && ./vma) >> "$results/vma-$1.log" 2>&1
}
vma_rc=0
for k in base pair; do
	src=$base_src
	[ $k = pair ] && src=$pair_src
	rc=0
	harness $k "$src" || rc=$?
	[ $k = pair ] && vma_rc=$rc
	echo "tools/testing/vma $k: $(grep -h 'tests run' "$results/vma-$k.log" || echo "no result (see $results/vma-$k.log)")"
done

[ $selftests_rc = 0 ] && [ $immap_rc = 0 ] && [ $vma_rc = 0 ]
