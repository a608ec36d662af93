#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does each change the series makes to reclaim have a test that needs it?
# Drops one hunk at a time of what the series changes in the files below,
# rebuilds the kernel incrementally, runs the selftests under both LRUs in
# the VM and prints, per hunk, whether it built and which selftests failed.
# A hunk whose removal fails no test is one no test proves.
#
# Not part of CI: each hunk costs an incremental build (25-90 s) and two
# VM runs (2-4 min each under TCG). Results go to kernel/README.md.
#
# Usage: kernel/hunk-check.sh [--lru classic|mglru|both] [--files "F..."]
#                             [--only N[,N...]] [--config default|wide]
#                             [--out DIR]
#   --files  source files whose hunks are dropped (default: mm/vmscan.c
#            mm/rmap.c)
#   --only   only these hunk numbers (as listed by the first lines of output)
#   --config the configuration of kernel/build.sh [--wide] (default: wide,
#            which also runs the THP selftest)
#   --out    where the per-hunk logs go (default /var/tmp/execguard-hunks)

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/.." && pwd)
lrus=(classic mglru)
files="mm/vmscan.c mm/rmap.c"
only=
out=/var/tmp/execguard-hunks
config=wide

while [ $# -gt 0 ]; do
	case $1 in
	--lru) shift; [ "$1" = both ] && lrus=(classic mglru) || lrus=("$1") ;;
	--files) shift; files=$1 ;;
	--only) shift; only=,$1, ;;
	--config) shift; config=$1 ;;
	--out) shift; out=$1 ;;
	-h|--help) sed -n '3,22s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

# The series' tree as kernel/build.sh leaves it, copied (its working tree
# only) so that nothing here touches build.sh's trees and results; a
# build of its own with the same .config
case $config in
default) bzimage=$("$here/build.sh" | tail -n1) ;;
wide) bzimage=$("$here/build.sh" --wide | tail -n1) ;;
*) echo "--config: default or wide" >&2; exit 2 ;;
esac
kdir=$(dirname "$(dirname "$bzimage")")
src=$kdir/src
log() { echo "hunk-check: $*" >&2; }
mkdir -p "$out"
work=$out/tree
rm -rf "$work" "$out/build"
log "copying the source tree to $work"
mkdir -p "$work" "$out/build"
tar -C "$src" --exclude=./.git -cf - . | tar -C "$work" -xf -
cp "$kdir/build-$config/.config" "$out/build/.config"
make -s -C "$work" O="$out/build" olddefconfig >&2
selftests=$out/selftests
rm -rf "$selftests" && cp -a "$kdir/$config/selftests" "$selftests"

# One patch file per hunk, from the series' diff against the base
hunks=$out/hunks
rm -rf "$hunks" && mkdir -p "$hunks"
# shellcheck disable=SC2086
git -C "$src" diff execguard-base -- $files | python3 -c '
import sys, os
out = sys.argv[1]
header, n, cur = [], 0, None
for line in sys.stdin:
    if line.startswith("diff --git"):
        header, cur = [line], None
    elif line.startswith("@@"):
        n += 1
        cur = open(os.path.join(out, "%03d.patch" % n), "w")
        cur.writelines(header)
        cur.write(line)
    elif cur is None:
        header.append(line)
    else:
        cur.write(line)
' "$hunks"
log "$(ls "$hunks" | wc -l) hunks in $files"

describe() {	# file, line and function of a hunk
	local f=$1
	printf '%s %s' "$(sed -n 's|^+++ b/||p' "$f")" \
		"$(grep -m1 '^@@' "$f" | sed 's/^@@ -\([0-9]*\).*@@ *\(.*\)$/line \1: \2/' | cut -c1-60)"
}

run_tests() {	# lru -> the failed tests, comma-separated, or what broke
	local lru=$1 log=$2 rc=0
	EXECGUARD_BZIMAGE=$out/build/arch/x86/boot/bzImage EXECGUARD_SELFTESTS=$selftests \
		"$repo/tests/vm/run-selftests.sh" "$lru" >"$log" 2>&1 || rc=$?
	local failed
	failed=$(sed -n 's/.*not ok [0-9]* \(test_[a-z_]*\).*/\1/p' "$log" | paste -sd, -)
	if [ -n "$failed" ]; then
		echo "${failed//test_exec_protect_/}"
	elif [ "$rc" != 0 ]; then
		echo "VM failed (rc $rc)"
	else
		echo "-"
	fi
}

build() {
	make -C "$work" O="$out/build" -j3 bzImage >"$1" 2>&1
}

printf '%-4s | %-70s | %-6s' hunk "where (base line: function)" build
for lru in "${lrus[@]}"; do printf ' | %s' "$lru fails"; done
echo
log "baseline: the whole series (a full build, then incremental ones)"
build "$out/base.build.log" || { log "the series itself does not build"; exit 1; }
printf '%-4s | %-70s | %-6s' - "(none dropped)" ok
for lru in "${lrus[@]}"; do printf ' | %s' "$(run_tests "$lru" "$out/base.$lru.log")"; done
echo

for h in "$hunks"/*.patch; do
	n=$(basename "$h" .patch)
	[ -z "$only" ] || [[ $only == *,$((10#$n)),* ]] || continue
	where=$(describe "$h")
	(cd "$work" && git apply -R "$h")
	if build "$out/$n.build.log"; then
		printf '%-4s | %-70s | %-6s' "$((10#$n))" "$where" ok
		for lru in "${lrus[@]}"; do
			printf ' | %s' "$(run_tests "$lru" "$out/$n.$lru.log")"
		done
	else
		printf '%-4s | %-70s | %-6s' "$((10#$n))" "$where" fails
	fi
	echo
	(cd "$work" && git apply "$h")
done
log "rebuilding the whole series in $out/build"
build "$out/final.build.log" || true
