#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Does each patch of the series build on its own? Applies the series one
# patch at a time (git am) to the base in a worktree of kernel/build.sh's
# source tree and, after each, compiles with KCFLAGS=-Werror the objects
# the series touches or that use what it changes, in each configuration
# given: "default" (kernel/config/execguard.config) and "wide" (plus
# wide.config: THP, NUMA, all of DAMON). The .config of each comes from
# kernel/build.sh's build of it, which must exist (kernel/build.sh,
# kernel/build.sh --wide). Prints one line per patch and configuration.
#
# Not part of CI (about a minute per patch and configuration, after a
# first "make prepare" of each).
#
# Usage: kernel/check-each-patch.sh [default] [wide]   (default: both)

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
kdir=${EXECGUARD_KERNEL_DIR:-/var/tmp/execguard-kernel}
work=${EXECGUARD_PATCHCHECK_DIR:-/var/tmp/execguard-patchcheck}
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(default wide)

objects=(mm/memcontrol.o mm/memcontrol-v1.o mm/rmap.o mm/vmscan.o mm/filemap.o
	 mm/memory.o mm/mmap.o mm/mprotect.o mm/vmstat.o mm/swap.o
	 mm/workingset.o mm/madvise.o mm/migrate.o mm/khugepaged.o
	 mm/huge_memory.o mm/damon/paddr.o mm/damon/core.o
	 kernel/cgroup/cgroup.o kernel/fork.o)

src=$("$here/build.sh" --source-only | tail -n1)
tree=$work/tree
mkdir -p "$work"
git -C "$src" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
git -C "$src" worktree prune
git -C "$src" worktree add -q --detach "$tree" execguard-base
git -C "$tree" config user.name execguard
git -C "$tree" config user.email execguard@localhost

for c in "${configs[@]}"; do
	[ -f "$kdir/build-$c/.config" ] || {
		echo "error: no $kdir/build-$c/.config: build it first (kernel/build.sh, kernel/build.sh --wide)" >&2
		exit 1
	}
	mkdir -p "$work/build-$c"
	cp "$kdir/build-$c/.config" "$work/build-$c/.config"
	make -s -C "$tree" O="$work/build-$c" olddefconfig >&2
	make -s -C "$tree" O="$work/build-$c" -j3 prepare >&2
done

built() {	# the objects of the list that this configuration builds at all:
	# those in its built-in archives (an object file left from another
	# configuration of the same tree does not count)
	local c=$1 o members
	for o in "${objects[@]}"; do
		# not "ar t | grep -q": grep's early exit fails the pipe
		# members are named relative to the build directory, or
		# absolute when make rebuilt them later
		members=$(ar t "$kdir/build-$c/${o%%/*}/built-in.a")
		grep -qxF -e "$o" -e "$kdir/build-$c/$o" <<<"$members" && echo "$o"
	done
	return 0
}

rc=0
mapfile -t series < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/patches/series")
for p in "${series[@]}"; do
	git -C "$tree" am -q "$here/patches/$p"
	for c in "${configs[@]}"; do
		mapfile -t objs < <(built "$c")
		log=$work/$c-${p%%-*}.log
		if make -C "$tree" O="$work/build-$c" -j3 KCFLAGS=-Werror "${objs[@]}" >"$log" 2>&1; then
			echo "ok: $p ($c: ${#objs[@]} objects)"
		else
			echo "FAILED: $p ($c), see $log"
			rc=1
		fi
	done
done
git -C "$src" worktree remove --force "$tree"
exit $rc
