#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# An anonymous squeeze: the protected program and a hog share a memory
# cgroup (v1 memory controller, or cgroup2 memory.max) of 64 MiB; the hog
# re-reads a file (page cache to reclaim, so memory PSI rises) and grows
# its anonymous memory slowly to half the locked text beyond what fits
# with the locks held. No swap is used. The daemon must see the cgroup's
# room (limit - usage + reclaimable file) fall below PressureReserve=,
# give the locked text back, and so avoid the OOM kill that the locks
# would cause; it takes the text again after PressureRecoverSec of
# enough memory. The unit's own cgroup2 memory.pressure is watched.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
[ -e /proc/pressure/memory ] || skip "no PSI (/proc/pressure/memory): kernel without CONFIG_PSI or psi=0"
LIMIT_MIB=64

lk_memcg "$LIMIT_MIB"

cat >"$W/hog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* hog MIB STEP_KIB STEP_MS HOLD_S: grow anonymous memory to MIB, touching it */
int main(int argc, char **argv)
{
	size_t want = (size_t)atol(argv[1]) << 20, step = (size_t)atol(argv[2]) << 10, have = 0;
	char *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 2;
	while (have < want) {
		size_t n = want - have < step ? want - have : step;
		memset(p + have, 1, n);
		have += n;
		usleep((useconds_t)atoi(argv[3]) * 1000);
	}
	printf("held %zu\n", have >> 20);
	fflush(stdout);
	sleep((unsigned)atoi(argv[4]));
	return 0;
}
C
cc -O1 -o "$W/hog" "$W/hog.c" || fail "cannot build the hog"

lk_pressure_start
[ "$(field "$(unit_line svc.service)" psi)" = "${G#"$CG2"/}/memory.pressure" ] &&
	pass "svc.service's cgroup memory.pressure is watched" ||
	fail_later "no trigger on $G: $(unit_line svc.service)"
[ "$(field "$(unit_line svc.service)" limit)" = $((LIMIT_MIB << 20)) ] &&
	pass "the unit's room is under its ${LIMIT_MIB} MiB limit: $(field "$(unit_line svc.service)" room)" ||
	fail_later "the unit's memory limit is not seen: $(unit_line svc.service)"
[ "$(total psi)" != none ] || skip "the daemon could not set a PSI trigger: $(events LOCK_PRESSURE_WATCH)"
l0=$(total locked)
[ "$l0" -gt $((768 * PAGE)) ] || fail "too little locked to test with: $l0"
oom0=$(awk '/^oom_kill / { print $2 }' /proc/vmstat)

# What reclaim cannot take even with the locks given back (anonymous,
# kernel), what the locks hold in this cgroup (the unit's charged text:
# libc and ld.so may be charged elsewhere, and a locked page may still be
# on a file list, not yet on the unevictable one), and a hog that needs
# half of that locked text more than is left with the locks held, less
# 1 MiB for its own page tables and stack.
sleep 1
charged0=$(field "$(unit_line svc.service)" charged)
[ "$charged0" -gt $((3 << 20)) ] || fail "too little locked text charged to the unit's cgroup to test with: $charged0"
fixed=$(( $(usage) - $(filemem) - $(unevictable) ))
hog_mib=$(( ((LIMIT_MIB << 20) - fixed - charged0 / 2 - (1 << 20)) >> 20 ))
# shellcheck disable=SC2154 # stall_ms: set by lk_pressure_start (lock/lib.sh)
echo "locked $l0 (charged here $charged0), anonymous and kernel $fixed, hog ${hog_mib} MiB of ${LIMIT_MIB} MiB; threshold ${stall_ms} ms"
head -c 16M /dev/urandom >"$W/cache.dat"
run_cg R sh -c 'echo ready; while :; do cat "$0" >/dev/null; done' "$W/cache.dat"
# In both cgroups before it execs: all its memory is charged there.
sh -c 'echo $$ >"$0/cgroup.procs" && echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
	"$LK_CG" "$G" "$W/hog" "$hog_mib" 128 50 4 >"$W/hog.out" 2>&1 &
HOGSH=$!
LK_PIDS+=("$HOGSH")
lmin=$l0
while kill -0 "$HOGSH" 2>/dev/null; do
	sleep 0.5
	lk_dump
	l=$(total locked)
	[ "$l" -lt "$lmin" ] && lmin=$l
done
wait "$HOGSH"; rc=$?
lk_stop "$R"
# The ceiling stays for PressureRecoverSec after the squeeze: this dump
# counts too, should the ones above have come too late.
lk_dump
l=$(total locked)
[ "$l" -lt "$lmin" ] && lmin=$l
echo "hog exit $rc ($(cat "$W/hog.out")); locked min $lmin; unit: $(unit_line svc.service)"
[ "$rc" = 0 ] && grep -q "^held $hog_mib" "$W/hog.out" && pass "the hog got its ${hog_mib} MiB" ||
	fail_later "the hog did not get its memory (exit $rc)"
[ "$lmin" -lt $((l0 / 2)) ] && [ "$(field "$(unit_line svc.service)" pressure_events)" -gt 0 ] &&
	pass "the squeeze made the daemon give back ($l0 -> $lmin)" ||
	fail_later "no give-back under the squeeze (locked $l0 -> min $lmin)"
has_event LOCK_PRESSURE EXECGUARD_CGROUP="'/${G#"$CG2"/}'" &&
	pass "the give-back is logged" || fail_later "no log of the give-back"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "total $(total locked) VmLck $(dump_vmlck)"
oom1=$(awk '/^oom_kill / { print $2 }' /proc/vmstat)
[ "$oom1" = "$oom0" ] && [ "$(oom_kills)" = 0 ] && pass "no OOM kill" || fail_later "OOM kills: $oom0 -> $oom1, cgroup $(oom_kills)"

# Enough memory again: the ceiling goes after PressureRecoverSec and what
# the program runs is locked again.
no_ceiling() { [ "$(total ceiling)" = none ] && [ "$(field "$(unit_line svc.service)" ceiling)" = none ]; }
back=0
lk_dump_until 20 no_ceiling && back=1
lk_grow "$P" "$P_OUT"
lk_cmd recheck
lk_dump
echo "after calm: locked $(total locked), unit $(unit_line svc.service)"
[ "$back" = 1 ] && [ "$(total locked)" -gt $((512 * PAGE)) ] && pass "locked again after the calm period" ||
	fail_later "not locked again: locked $(total locked) ceiling $(total ceiling)"
has_event LOCK_RELOCKED || fail_later "no log of taking it again"
lk_finish
