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

lk_memcg "$LIMIT_MIB"

lk_pressure_start
[ "$(field "$(unit_line svc.service)" limit)" = $((LIMIT_MIB << 20)) ] ||
	fail_later "the unit's memory limit is not seen: $(unit_line svc.service)"
[ "$(total psi)" != none ] || skip "the daemon could not set a PSI trigger: $(events LOCK_PRESSURE_WATCH)"
l0=$(total locked); e0=$(total pressure_events)
[ "$l0" -gt $((768 * PAGE)) ] || fail "too little locked to test with: $l0"
u0=$(field "$(unit_line svc.service)" psi_events)
g0=$(total psi_events)
gsome0=$(awk '/^some / { sub("total=", "", $5); print $5 }' "$G/memory.pressure")

head -c 256M /dev/zero >"$W/stream.dat" && sync "$W/stream.dat"
dd if="$W/stream.dat" iflag=nocache count=0 status=none
run_cg S sh -c 'echo ready; while :; do cat "$0" >/dev/null; done' "$W/stream.dat"
lmin=$l0 rmin=
for _ in $(seq 24); do
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
# shellcheck disable=SC2154 # stall_ms: set by lk_pressure_start (lock/lib.sh)
[ $(( (gsome1 - gsome0) / 1000 )) -ge "$stall_ms" ] || skip "the churn made no memory stall in the cgroup"
[ "$u1" -gt "$u0" ] || [ "$g1" -gt "$g0" ] && pass "the PSI triggers fired under the churn" ||
	fail_later "no PSI event: the test did not make pressure the daemon sees"
[ "$lmin" -ge "$l0" ] && [ "$(total pressure_events)" = "$e0" ] && [ "$(total ceiling)" = none ] &&
	[ "$(field "$(unit_line svc.service)" ceiling)" = none ] &&
	pass "the locks held under page-cache churn ($l0 locked throughout)" ||
	fail_later "locks given back under page-cache churn: $l0 -> min $lmin, $(unit_line svc.service)"
has_event LOCK_PRESSURE && fail_later "a give-back was logged"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "total $(total locked) VmLck $(dump_vmlck)"
lk_finish
