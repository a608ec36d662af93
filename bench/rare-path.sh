#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What memory.exec_protect leaves out of a rarely run path: the read-only
# segments (issue 12, item 7). With the linker's default -z separate-code,
# .rodata, .eh_frame(_hdr) and .gcc_except_table are in an r-- segment,
# not in the r-x one that the protection covers. A generated C++ program
# (1,500 functions, 2.4 MiB of text, 620 KiB of read-only data,
# libstdc++ and libgcc linked in) runs a common path, then once its rare
# path (an exception through 30 frames in 40 functions never run before,
# each formatting a message from a table of strings), then, after its
# cgroup's memory.reclaim took everything it could, the rare path again:
# its major faults, and what is in the page cache of each segment of the
# binary at each step (execguardctl segments), unprotected and protected.
#
# Usage: bench/rare-path.sh [--kernel=BZIMAGE]   (as root; default kernel:
#        kernel/build.sh's, or $EXECGUARD_BZIMAGE; execguardctl from
#        $EXECGUARDCTL or the meson build in build/)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
kernel=
for a in "$@"; do
	case $a in
	--kernel=*) kernel=${a#*=} ;;
	-h|--help) sed -n '3,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--kernel=BZIMAGE]" >&2; exit 2 ;;
	esac
done
kernel=${kernel:-${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}}
ctl=${EXECGUARDCTL:-$SRC/build/daemon/execguardctl}
[ -x "$ctl" ] || { echo "no $ctl: meson setup build && ninja -C build (or set EXECGUARDCTL)" >&2; exit 1; }
work=$(mktemp -d /var/tmp/rare-path.XXXXXX)
trap '[ "$BASHPID" = $$ ] && rm -rf "$work"' EXIT

python3 "$SRC/bench/rare-path/gen.py" "$work/prog.cc"
# -O0: the point is the layout, not the code; it compiles in a minute
g++ -O0 -static-libstdc++ -static-libgcc -o "$work/prog" "$work/prog.cc"
# The VM runs the host's root: the build's execguardctl works there.
cp "$ctl" "$work/execguardctl"
cp "$SRC/bench/rare-path/inside.sh" "$work/"

echo "# bench/rare-path.sh --kernel=$kernel"
for mode in unprotected protected; do
	"$SRC/tests/vm/vm-run.sh" --kernel "$kernel" --mem 1G --disk 256M --timeout 900 \
		--log "$work/vm-$mode.log" -- bash "$work/inside.sh" "$mode" "$work" \
		>"$work/out-$mode" 2>&1 || {
		tail -n 20 "$work/out-$mode" >&2
		echo "error: the $mode VM failed" >&2
		exit 1
	}
	echo "## $mode"
	grep -a -E '^(SEG|after|RESULT)' "$work/out-$mode" | tr -d '\r'
done
