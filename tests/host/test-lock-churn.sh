#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Page-cache churn: the protected program and a reader share a memory
# cgroup (v1 memory controller, or cgroup2 memory.max) of 64 MiB; the
# reader streams a 256 MiB file through it, over and over, so that the
# cgroup reclaims all the time and its memory PSI triggers (thresholds
# lowered as in test-lock-pressure.sh) fire. Nearly all of the cgroup is
# reclaimable page cache, so its room stays far above PressureReserve=:
# the locked text must stay locked the whole time. This is the pressure
# the locks are for.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
[ -e /proc/pressure/memory ] || skip "no PSI (/proc/pressure/memory): kernel without CONFIG_PSI or psi=0"
LIMIT_MIB=64

CG2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$CG2" ] || skip "no cgroup2 mount for the unit's memory.pressure"
# A memory-limited cgroup for the program and the hog.
if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	LK_CG=/sys/fs/cgroup/memory/execguard-lock-test.$$
	mkdir "$LK_CG" || skip "cannot create a v1 memory cgroup"
	echo "${LIMIT_MIB}M" >"$LK_CG/memory.limit_in_bytes" || skip "cannot limit the v1 memory cgroup"
	echo 0 >"$LK_CG/memory.swappiness" 2>/dev/null
	oom_kills() { awk '/^oom_kill / { print $2 }' "$LK_CG/memory.oom_control"; }
	usage() { cat "$LK_CG/memory.usage_in_bytes"; }
	filemem() { awk '$1 == "total_active_file" || $1 == "total_inactive_file" { s += $2 } END { print s }' "$LK_CG/memory.stat"; }
	mkdir "$CG2/execguard-lock-test.$$" || skip "cannot create a cgroup2 group"
	G=$CG2/execguard-lock-test.$$
elif grep -qw memory "$CG2/cgroup.controllers" 2>/dev/null && grep -qw memory "$CG2/cgroup.subtree_control"; then
	LK_CG=$CG2/execguard-lock-test.$$
	mkdir "$LK_CG" || skip "cannot create a cgroup2 group"
	echo "${LIMIT_MIB}M" >"$LK_CG/memory.max" || skip "cannot set memory.max"
	echo 0 >"$LK_CG/memory.swap.max" 2>/dev/null
	oom_kills() { awk '/^oom_kill / { print $2 }' "$LK_CG/memory.events"; }
	usage() { cat "$LK_CG/memory.current"; }
	filemem() { awk '$1 == "active_file" || $1 == "inactive_file" { s += $2 } END { print s }' "$LK_CG/memory.stat"; }
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
trap 'lk_cleanup_g; lk_cleanup' EXIT
# run_cg VAR CMD...: lk_run CMD inside the memory cgroup and G, so that
# its text is charged to the cgroup.
run_cg() {
	local var=$1
	shift
	lk_run "$var" sh -c 'echo $$ >"$0/cgroup.procs" && echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
		"$LK_CG" "$G" "$@"
}

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
[ "$(field "$(unit_line svc.service)" limit)" = $((LIMIT_MIB << 20)) ] ||
	fail "the unit's memory limit is not seen: $(unit_line svc.service)"
[ "$(total psi)" != none ] || skip "the daemon could not set a PSI trigger: $(grep -i pressure "$W/driver.err")"
l0=$(total locked); e0=$(total pressure_events)
[ "$l0" -gt $((768 * PAGE)) ] || die "too little locked to test with: $l0"
u0=$(field "$(unit_line svc.service)" psi_events)
g0=$(total psi_events)
gsome0=$(awk '/^some / { sub("total=", "", $5); print $5 }' "$G/memory.pressure")

head -c 256M /dev/zero >"$W/stream.dat" && sync "$W/stream.dat"
dd if="$W/stream.dat" iflag=nocache count=0 status=none
run_cg S sh -c 'echo ready; while :; do cat "$0" >/dev/null; done' "$W/stream.dat"
lmin=$l0 rmin=
for i in $(seq 24); do
	sleep 0.5
	lk_dump
	l=$(total locked)
	[ "$l" -lt "$lmin" ] && lmin=$l
	r=$(field "$(unit_line svc.service)" room)
	[ -z "$rmin" ] || [ "$r" -lt "$rmin" ] && rmin=$r
done
lk_stop "$S"
lk_dump
gsome1=$(awk '/^some / { sub("total=", "", $5); print $5 }' "$G/memory.pressure")
u1=$(field "$(unit_line svc.service)" psi_events)
g1=$(total psi_events)
echo "locked $l0 -> min $lmin; cgroup room min $rmin (reserve $(field "$(unit_line svc.service)" reserve));" \
	"PSI events unit $u0 -> $u1, global $g0 -> $g1; cgroup stall $(( (gsome1 - gsome0) / 1000 )) ms"
[ $(( (gsome1 - gsome0) / 1000 )) -ge "$stall_ms" ] || skip "the churn made no memory stall in the cgroup"
[ "$u1" -gt "$u0" ] || [ "$g1" -gt "$g0" ] && pass "the PSI triggers fired under the churn" ||
	fail "no PSI event: the test did not make pressure the daemon sees"
[ "$lmin" -ge "$l0" ] && [ "$(total pressure_events)" = "$e0" ] && [ "$(total ceiling)" = none ] &&
	[ "$(field "$(unit_line svc.service)" ceiling)" = none ] &&
	pass "the locks held under page-cache churn ($l0 locked throughout)" ||
	fail "locks given back under page-cache churn: $l0 -> min $lmin, $(unit_line svc.service)"
grep -Eq "memory (running out|nearly exhausted)" "$W/driver.err" && fail "a give-back was logged"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail "total $(total locked) VmLck $(dump_vmlck)"
lk_finish
