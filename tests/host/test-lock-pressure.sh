#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Memory pressure: a hog in a memory-limited cgroup (v1 memory controller
# or cgroup2 memory.max) reads a file much larger than its limit, so that
# it stalls in reclaim; the daemon's PSI trigger (thresholds lowered to
# 1 ms per 2 s, or a few times the machine's own background stall, so that
# this modest pressure fires it) must make it give
# locked text back, and it must take it again after PressureRecoverSec of
# calm. No OOM kill happens. When cgroup2 is there, the protected program
# and the hog share a cgroup2 group whose memory.pressure the daemon
# watches for that unit: that unit's trigger fires, not another unit's.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
[ -e /proc/pressure/memory ] || skip "no PSI (/proc/pressure/memory): kernel without CONFIG_PSI or psi=0"

# A memory-limited cgroup for the hog.
if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	LK_CG=/sys/fs/cgroup/memory/execguard-lock-test.$$
	mkdir "$LK_CG" || skip "cannot create a v1 memory cgroup"
	echo 32M >"$LK_CG/memory.limit_in_bytes" || skip "cannot limit the v1 memory cgroup"
	CG_PROCS=$LK_CG/cgroup.procs
	oom_kills() { awk '/^oom_kill / { print $2 }' "$LK_CG/memory.oom_control"; }
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	LK_CG=/sys/fs/cgroup/execguard-lock-test.$$
	mkdir "$LK_CG" || skip "cannot create a cgroup2 group"
	echo 32M >"$LK_CG/memory.max" || skip "cannot set memory.max"
	CG_PROCS=$LK_CG/cgroup.procs
	oom_kills() { awk '/^oom_kill / { print $2 }' "$LK_CG/memory.events"; }
else
	skip "no memory controller (neither v1 memory nor cgroup2 memory) to make pressure with"
fi

lk_lib big 1024
lk_prog prog big
lk_lib other 64
lk_prog oprog other
lk_evict "$F/prog" "$F/libbig.so" "$F/oprog" "$F/libother.so"
lk_run P "$F/prog" 256
lk_run Q "$F/oprog" 16

# The unit's own cgroup2 group (memory.pressure exists without the memory
# controller: PSI is kept for every cgroup2 group).
CG2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
G=
if [ -n "$CG2" ] && mkdir "$CG2/execguard-lock-test.$$" 2>/dev/null; then
	G=$CG2/execguard-lock-test.$$
	echo "$P" >"$G/cgroup.procs" || G=
fi
lk_cleanup_g() {
	if [ -n "$G" ] && [ -d "$G" ]; then
		while read -r p; do echo "$p" >"$CG2/cgroup.procs"; done <"$G/cgroup.procs"
		rmdir "$G"
	fi
}
trap 'lk_cleanup; lk_cleanup_g' EXIT
# The threshold: 1 ms of stall per 2 s, or four times what the machine
# stalls on its own (others' work) so that calm can be seen after the hog.
some_total() { awk '/^some / { sub("total=", "", $5); print $5 }' /proc/pressure/memory; }
b0=$(some_total); sleep 4; b1=$(some_total)
base_ms=$(( (b1 - b0) / 2 / 1000 ))
stall_ms=$(( base_ms * 4 + 1 ))
[ "$stall_ms" -lt 500 ] || skip "the machine already stalls ${base_ms} ms per 2 s on memory"
echo "background memory stall: ${base_ms} ms per 2 s; threshold ${stall_ms} ms"
printf '[Daemon]\nLockBudget=1G\nLockRecheckSec=1\nPressureStallMSec=%s\nPressureWindowMSec=2000\nPressureRecoverSec=4\n' \
	"$stall_ms" >"$W/conf"
lk_driver "$W/conf"
lk_cmd protect "$P" svc.service
lk_cmd protect "$Q" other.service
lk_dump
if [ -n "$G" ]; then
	[ "$(field "$(unit_line svc.service)" psi)" = "${G#"$CG2"/}/memory.pressure" ] &&
		pass "svc.service's cgroup memory.pressure is watched" ||
		fail "no trigger on $G: $(unit_line svc.service)"
	[ "$(field "$(unit_line other.service)" psi)" = none ] || fail "a trigger for a unit in the root cgroup"
fi
[ "$(total psi)" != none ] || skip "the daemon could not set a PSI trigger: $(grep -i pressure "$W/driver.err")"
l0=$(total locked); e0=$(total pressure_events)
echo "locked before: $l0, pressure events so far: $e0, trigger $(total psi)"
[ "$l0" -gt $((256 * PAGE)) ] || die "too little locked to test with: $l0"
oom0=$(awk '/^oom_kill / { print $2 }' /proc/vmstat)

head -c 256M /dev/zero >"$W/hog.dat" && sync "$W/hog.dat"
(
	echo "$BASHPID" >"$CG_PROCS"
	[ -n "$G" ] && echo "$BASHPID" >"$G/cgroup.procs"
	while :; do
		dd if="$W/hog.dat" iflag=nocache count=0 status=none
		cat "$W/hog.dat" >/dev/null
	done
) &
HOG=$!
LK_PIDS+=("$HOG")

gave=0 lmin=$l0
for i in $(seq 40); do
	sleep 0.5
	lk_dump
	l=$(total locked)
	[ "$l" -lt "$lmin" ] && lmin=$l
	if [ "$(total pressure_events)" -gt "$e0" ] && [ "$(total ceiling)" != none ] && [ "$l" -lt "$l0" ]; then
		gave=1
		# With a unit trigger, also wait for that one.
		[ -z "$G" ] || [ "$(field "$(unit_line svc.service)" pressure_events)" -gt 0 ] && break
	fi
done
echo "under pressure: locked $(total locked) (min $lmin), ceiling $(total ceiling), events $(total pressure_events)"
[ "$gave" = 1 ] && pass "pressure made the daemon give back ($l0 -> $lmin)" ||
	fail "no give-back under pressure (events $(total pressure_events), locked $(total locked))"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail "under pressure: total $(total locked) VmLck $(dump_vmlck)"
# A "some" step halves, a "full" stall (all tasks waiting: easily reached
# with the lowered threshold) gives back everything; either is logged.
grep -Eq "memory pressure: gave back|severe memory pressure \(all tasks stalled\): gave back" "$W/driver.err" &&
	pass "the give-back is logged" ||
	fail "no log of the give-back"
if [ -n "$G" ]; then
	[ "$(field "$(unit_line svc.service)" pressure_events)" -gt 0 ] &&
		grep -Eq "memory pressure in /${G#"$CG2"/}(: giving back| \(all its tasks stalled\): gave back all) its own" \
			"$W/driver.err" &&
		pass "the unit's own trigger fired ($(field "$(unit_line svc.service)" pressure_events) events)" ||
		fail "the unit trigger did not fire: $(unit_line svc.service)"
	[ "$(field "$(unit_line other.service)" pressure_events)" = 0 ] ||
		fail "other.service saw unit pressure: $(unit_line other.service)"
fi
kill "$HOG"; wait "$HOG" 2>/dev/null

back=0
for i in $(seq 60); do
	sleep 0.5
	lk_dump
	if [ "$(total ceiling)" = none ] && [ "$(field "$(unit_line svc.service)" ceiling)" = none ] &&
		[ "$(total locked)" -ge $((l0 * 9 / 10)) ]; then
		back=1
		break
	fi
done
echo "after calm: locked $(total locked), ceiling $(total ceiling)"
[ "$back" = 1 ] && pass "locked again after the calm period" ||
	fail "not locked again: locked $(total locked) ceiling $(total ceiling)"
grep -q "locking text again" "$W/driver.err" || fail "no log of taking it again"
oom1=$(awk '/^oom_kill / { print $2 }' /proc/vmstat)
[ "$oom1" = "$oom0" ] && [ "$(oom_kills)" = 0 ] && pass "no OOM kill" || fail "OOM kills: $oom0 -> $oom1, cgroup $(oom_kills)"
lk_finish
