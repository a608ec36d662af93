# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# For tests/host/test-lock-*.sh, on top of tests/host/lib.sh: the
# lock-driver coprocess, generated programs with a large text, and the
# independent residency check. Their prologue is lk_setup. They check
# every figure with fail_later (a failure is recorded and the test goes
# on to the next figure) and end with lk_finish.

LK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LK_SRC=$(cd "$LK_DIR/../../.." && pwd)
. "$LK_DIR/../lib.sh"
# shellcheck disable=SC2034 # used by the test-lock-*.sh that source this
PAGE=$(getconf PAGESIZE)
LK_PIDS=()

lk_cleanup() {
	local p
	for p in "${LK_PIDS[@]}"; do kill_own -TERM "$p"; wait "$p" 2>/dev/null; done
	if [ -n "${DRV_PID:-}" ]; then
		echo quit 1>&"${DRV[1]}" 2>/dev/null
		wait "$DRV_PID" 2>/dev/null
	fi
	[ -n "${LK_CG:-}" ] && [ -d "$LK_CG" ] && rmdir "$LK_CG" 2>/dev/null
	if [ -n "${LK_LOOP:-}" ]; then
		umount "$W/m" 2>/dev/null || umount -l "$W/m" 2>/dev/null
		losetup -d "$LK_LOOP" 2>/dev/null
	fi
	return 0
}

# The prologue: test_init root, $W (= $T, under /var/tmp: a 160 MiB
# image lives there), the driver's stderr as the log events are read
# from, the driver and the test programs' file system.
lk_setup() {
	TEST_TMPDIR=/var/tmp test_init root
	[ -r /proc/self/map_files ] || skip "no /proc/PID/map_files"
	command -v cc >/dev/null || skip "needs a C compiler for the generated test programs"
	W=$T
	# shellcheck disable=SC2034 # read by ../lib.sh (events, has_event, problems)
	EVENT_LOG=$W/driver.err
	on_exit lk_cleanup
	lk_find_driver
	cc -O2 -o "$W/resident" "$LK_DIR/resident.c" || fail "cannot build resident.c"
	lk_mount
}

# The test programs live on a small ext4 on a loop device of our own with
# read-ahead off: since Linux 6.16 a fault in an exec mapping reads
# read_ahead_kb forward from the fault (MADV_RANDOM notwithstanding), and
# the host disk's setting (8 MiB here) would make most of a 16 MiB text
# resident. With it off, what is resident is what ran.
lk_mount() {
	command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null ||
		skip "needs losetup and mkfs.ext4 for a file system with read-ahead off"
	truncate -s 160M "$W/img" && mkfs.ext4 -q -F "$W/img" || fail "mkfs.ext4"
	LK_LOOP=$(losetup -f --show "$W/img" 2>/dev/null) || skip "no loop device available"
	mkdir -p "$W/m" && mount "$LK_LOOP" "$W/m" || fail "mount $LK_LOOP"
	echo 0 >"/sys/block/${LK_LOOP#/dev/}/queue/read_ahead_kb" || fail "cannot turn read-ahead off"
	F=$W/m
}

# The driver from the meson build (LOCK_DRIVER=...), else built here.
lk_find_driver() {
	if [ -n "${LOCK_DRIVER:-}" ]; then
		[ -x "$LOCK_DRIVER" ] || fail "LOCK_DRIVER=$LOCK_DRIVER is not executable"
		return
	fi
	local b
	for b in "$LK_SRC/build" "$LK_SRC/builddir"; do
		if [ -x "$b/tests/lock-driver" ]; then
			LOCK_DRIVER=$b/tests/lock-driver
			return
		fi
	done
	skip "no lock-driver: build with meson (tests/lock-driver) or set LOCK_DRIVER"
}

# lk_lib NAME NFUNCS: $F/libNAME.so with NFUNCS text pages
lk_lib() {
	"$LK_DIR/gen-text.sh" lib "$1" "$2" >"$W/lib$1.c"
	cc -O1 -shared -fPIC -o "$F/lib$1.so" "$W/lib$1.c" || fail "cc lib$1"
}

# lk_prog NAME LIB1 [LIB2]: $F/NAME, running functions of those libraries
lk_prog() {
	local name=$1; shift
	local l libs=()
	"$LK_DIR/gen-text.sh" prog "$@" >"$W/$name.c"
	for l in "$@"; do libs+=("-l$l"); done
	cc -O1 -o "$F/$name" "$W/$name.c" -L"$F" "${libs[@]}" -Wl,-rpath,"$F" || fail "cc $name"
}

# Drop a file's pages from the page cache, so that only what runs is read.
lk_evict() {
	sync "$@"
	local f
	for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none || fail "evict $f"; done
}

# lk_run VAR CMD...: start CMD in the background, wait for its "ready".
lk_run() {
	local var=$1; shift
	local out="$W/out.$RANDOM$RANDOM"
	"$@" >"$out" 2>&1 &
	local pid=$!
	LK_PIDS+=("$pid")
	wait_until 5 grep -q ready "$out" 2>/dev/null
	grep -q ready "$out" || fail "$* did not start: $(cat "$out")"
	printf -v "$var" %s "$pid"
	printf -v "${var}_OUT" %s "$out"
}

# lk_grow PID OUT: SIGUSR1 and wait for it to say "grown".
lk_grown_since() { [ "$(grep -c grown "$2" || true)" -gt "$1" ]; }
lk_grow() {
	local n
	n=$(grep -c grown "$2" || true)
	kill -USR1 "$1"
	wait_until 5 lk_grown_since "$n" "$2" || fail "pid $1 did not grow"
}

lk_stop() {
	kill_own -TERM "$1"
	wait "$1" 2>/dev/null
	return 0
}

# The [Daemon] lines that keep the machine's own memory pressure out of a
# test that is not about pressure (10 s windows, 99.99% stall: never).
CALM=$'PressureWindowMSec=10000\nPressureStallMSec=9999\n'

# lk_conf FILE [LINES]: a [Daemon] section with LINES and the calm ones.
lk_conf() { printf '[Daemon]\n%s\n%s' "${2:-}" "$CALM" >"$1"; }

# The driver, as a coprocess. lk_driver [CONFIG] (default: calm)
lk_driver() {
	if [ $# = 0 ]; then
		lk_conf "$W/calm.conf"
		set -- "$W/calm.conf"
	fi
	coproc DRV { exec "$LOCK_DRIVER" "$@" 2>>"$W/driver.err"; }
	DRV_PID=$!
	local l
	read -r -t $((10 * WAIT_SCALE)) l <&"${DRV[0]}" || fail "driver did not start: $(cat "$W/driver.err")"
	case $l in
	ready) ;;
	skip*) skip "lock backend: ${l#skip }" ;;
	*) fail "driver: $l" ;;
	esac
}

# lk_cmd CMD...: send a command, fail on "error".
lk_cmd() {
	echo "$*" >&"${DRV[1]}"
	local l
	read -r -t $((30 * WAIT_SCALE)) l <&"${DRV[0]}" || fail "driver did not answer '$*'"
	[ "$l" = ok ] || fail "driver: '$*': $l"
}

# lk_dump: the driver's figures into $W/dump.
lk_dump() {
	echo dump >&"${DRV[1]}"
	: >"$W/dump"
	local l
	while read -r -t $((30 * WAIT_SCALE)) l <&"${DRV[0]}"; do
		[ "$l" = end ] && break
		echo "$l" >>"$W/dump"
	done
	[ "$l" = end ] || fail "dump: no end"
}

# lk_dump_until SECONDS CMD...: lk_dump until CMD holds on the dump (the
# driver handles an exit when its pidfd says so, not at once); 1 if it
# never did within the (scaled) bound.
lk_dump_check() { lk_dump; "$@"; }
lk_dump_until() {
	local secs=$1
	shift
	wait_until "$secs" lk_dump_check "$@"
}

# field LINE KEY: the value of KEY=value in LINE
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
total() { field "$(grep '^total ' "$W/dump")" "$1"; }
# file_line PATH [INO]
file_line() {
	if [ -n "${2:-}" ]; then
		grep "^file .* ino=$2 .*path=$1\( \|$\)" "$W/dump" | head -1
	else
		grep "^file .*path=$1\( \|$\)" "$W/dump" | head -1
	fi
}
unit_line() { grep "^unit .*name=$1$" "$W/dump" | head -1; }
vmlck() { awk '/^VmLck:/ { print $2 * 1024 }' "/proc/$DRV_PID/status"; }
# The driver's VmLck taken with the last dump (no race with its timers).
dump_vmlck() { field "$(grep '^driver ' "$W/dump")" vmlck; }

# image_sum PID PATH FIELD [PERMS]: FIELD (resident, length, used) of
# resident.c summed over PATH's mappings in PID, when one of them is
# executable (the whole image, as the daemon takes it; 0 for a file only
# mapped for data); PERMS (a regex, "r-x") limits it to such mappings.
image_sum() {
	"$W/resident" "$1" | awk -v p="path=$2" -v f="$3" -v want="^perms=${4:-...}" '
		$4 == p { n++; line[n] = $0; if ($5 ~ /^perms=..x/) x = 1 }
		END {
			for (i = 1; x && i <= n; i++) {
				k = split(line[i], a, " ")
				if (a[5] !~ want) continue
				for (j = 1; j <= k; j++) if (index(a[j], f "=") == 1) s += substr(a[j], length(f) + 2)
			}
			print s + 0
		}'
}
# resident_of PID PATH: bytes of PATH's image in the page cache (mincore)
resident_of() { image_sum "$1" "$2" resident; }
length_of() { image_sum "$1" "$2" length; }
# used_of PID PATH [PERMS]: of those, what PID maps as the file's pages
used_of() { image_sum "$1" "$2" used "${3:-}"; }
# file_resident PATH: bytes of the whole file in the page cache
file_resident() { "$W/resident" --file "$1" | sed -n 's/^resident=\([0-9]*\) .*/\1/p'; }
# range_lines PATH [PROT-REGEX]: the dump's range lines of PATH
range_lines() { grep "^range .* prot=${2:-....}[^ ]* .*path=$1\( \|$\)" "$W/dump"; }
# range_sum PATH PROT-REGEX FIELD: FIELD summed over those lines
range_sum() {
	range_lines "$1" "$2" | tr ' ' '\n' | sed -n "s/^$3=//p" | awk '{ s += $1 } END { print s + 0 }'
}

lk_finish() {
	# The driver must end cleanly: no sanitizer report, no leak.
	if [ -n "${DRV_PID:-}" ]; then
		echo quit >&"${DRV[1]}"
		wait "$DRV_PID"
		local rc=$?
		DRV_PID=
		[ "$rc" = 0 ] || fail_later "the driver exited with $rc"
	fi
	grep -q "Sanitizer" "$W/driver.err" && fail_later "sanitizer report from the driver"
	if [ "$FAILED" != 0 ]; then
		echo "--- driver stderr"; cat "$W/driver.err"
		echo "--- last dump"; cat "$W/dump" 2>/dev/null
		exit 1
	fi
	exit 0
}

# lk_memcg LIMIT_MIB: a memory cgroup of LIMIT_MIB (v1 memory controller,
# or cgroup2 memory.max; no swap) for the program and the load beside it,
# and a cgroup2 group G for the unit's memory.pressure; oom_kills, usage
# and filemem read it, run_cg starts a program in it, and both are
# removed at exit.
lk_memcg() {
	local limit_mib=$1
	CG2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$CG2" ] || skip "no cgroup2 mount for the unit's memory.pressure"
	# A memory-limited cgroup for the program and the hog.
	if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
		LK_CG=/sys/fs/cgroup/memory/execguard-lock-test.$$
		mkdir "$LK_CG" || skip "cannot create a v1 memory cgroup"
		echo "${limit_mib}M" >"$LK_CG/memory.limit_in_bytes" || skip "cannot limit the v1 memory cgroup"
		echo 0 >"$LK_CG/memory.swappiness" 2>/dev/null
		oom_kills() { awk '/^oom_kill / { print $2 }' "$LK_CG/memory.oom_control"; }
		usage() { cat "$LK_CG/memory.usage_in_bytes"; }
		filemem() { awk '$1 == "total_active_file" || $1 == "total_inactive_file" { s += $2 } END { print s }' "$LK_CG/memory.stat"; }
		unevictable() { awk '$1 == "total_unevictable" { print $2 }' "$LK_CG/memory.stat"; }
		mkdir "$CG2/execguard-lock-test.$$" || skip "cannot create a cgroup2 group"
		G=$CG2/execguard-lock-test.$$
	elif grep -qw memory "$CG2/cgroup.controllers" 2>/dev/null && grep -qw memory "$CG2/cgroup.subtree_control"; then
		LK_CG=$CG2/execguard-lock-test.$$
		mkdir "$LK_CG" || skip "cannot create a cgroup2 group"
		echo "${limit_mib}M" >"$LK_CG/memory.max" || skip "cannot set memory.max"
		echo 0 >"$LK_CG/memory.swap.max" 2>/dev/null
		oom_kills() { awk '/^oom_kill / { print $2 }' "$LK_CG/memory.events"; }
		usage() { cat "$LK_CG/memory.current"; }
		filemem() { awk '$1 == "active_file" || $1 == "inactive_file" { s += $2 } END { print s }' "$LK_CG/memory.stat"; }
		unevictable() { awk '$1 == "unevictable" { print $2 }' "$LK_CG/memory.stat"; }
		G=$LK_CG
	else
		skip "no memory controller (neither v1 memory nor cgroup2 memory) to make pressure with"
	fi
	lk_cleanup_g() {
		local c p
		for c in "$G" "$LK_CG"; do
			[ -d "$c" ] || continue
			while read -r p; do echo "$p" >"${c%/execguard-lock-test.$$}/cgroup.procs"; done <"$c/cgroup.procs"
			rmdir "$c" 2>/dev/null
		done
	}
	on_exit lk_cleanup_g
	# run_cg VAR CMD...: lk_run CMD inside the memory cgroup and G, so that
	# its text is charged to the cgroup.
	run_cg() {
		local var=$1
		shift
		lk_run "$var" sh -c 'echo $$ >"$0/cgroup.procs" && echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
			"$LK_CG" "$G" "$@"
	}
}

# lk_pressure_start: the program with a 1 MiB library, run in the memory
# cgroup (lk_memcg) as P and protected as svc.service by a driver whose
# PSI threshold, stall_ms, is 1 ms of stall per 2 s or four times what
# the machine stalls on its own; the first dump taken.
lk_pressure_start() {
	local b0 b1 base_ms
	lk_lib big 1024
	lk_prog prog big
	lk_evict "$F/prog" "$F/libbig.so"
	run_cg P "$F/prog" 1024

	some_total() { awk '/^some / { sub("total=", "", $5); print $5 }' /proc/pressure/memory; }
	b0=$(some_total); sleep 4; b1=$(some_total)
	base_ms=$(( (b1 - b0) / 2 / 1000 ))
	stall_ms=$(( base_ms * 4 + 1 ))
	[ "$stall_ms" -lt 500 ] || skip "the machine already stalls ${base_ms} ms per 2 s on memory"
	printf '[Daemon]\nLockBudget=1G\nLockRecheckSec=1\nPressureStallMSec=%s\nPressureWindowMSec=2000\nPressureRecoverSec=4\n' \
		"$stall_ms" >"$W/conf"
	lk_driver "$W/conf"
	lk_cmd protect "$P" svc.service
	lk_dump
}
