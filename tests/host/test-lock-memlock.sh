#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Without CAP_IPC_LOCK the memlock limit applies: the backend plans within
# RLIMIT_MEMLOCK (hot first, what does not fit is reported), says what to
# set (LimitMEMLOCK= or CAP_IPC_LOCK), never runs into mlock() failures,
# keeps its figures true (locked = the kernel's VmLck); with the limit at
# 0 the backend reports that it cannot work here (probe), so that
# Backend=auto moves on.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
command -v setpriv >/dev/null || skip "needs setpriv (util-linux) to drop CAP_IPC_LOCK"

lk_lib big 1024
lk_prog prog big
lk_evict "$F/prog" "$F/libbig.so"
lk_run P "$F/prog" 512
lk_run P2 "$F/prog" 16

REAL_DRIVER=$LOCK_DRIVER
cat >"$W/driver-limited" <<SH
#!/bin/sh
ulimit -l \$LIMIT_KB || exit 3
exec setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock "$REAL_DRIVER" "\$@"
SH
chmod +x "$W/driver-limited"
LOCK_DRIVER=$W/driver-limited

# Limit 0: the probe refuses.
out=$(LIMIT_KB=0 "$LOCK_DRIVER" </dev/null 2>&1)
rc=$?
[ "$rc" = 77 ] && echo "$out" | grep -q "no CAP_IPC_LOCK and RLIMIT_MEMLOCK is 0" &&
	pass "probe refuses with RLIMIT_MEMLOCK=0 and no CAP_IPC_LOCK" || fail_later "probe: rc $rc, '$out'"

# Limit 1 MiB: libbig (2 MiB resident) does not fit, the rest does.
export LIMIT_KB=1024
lk_driver
grep -q CapEff "/proc/$DRV_PID/status"
eff=$(awk '/^CapEff:/ { print $2 }' "/proc/$DRV_PID/status")
(( (0x$eff >> 14) & 1 )) && skip "could not drop CAP_IPC_LOCK"
lk_cmd protect "$P" svc.service
lk_cmd protect "$P2" svc.service
lk_cmd recheck
lk_dump
[ "$(dump_vmlck)" -le $((LIMIT_KB * 1024)) ] && [ "$(total locked)" = "$(dump_vmlck)" ] &&
	pass "locked $(total locked) = VmLck, within the 1 MiB limit" ||
	fail_later "locked $(total locked), VmLck $(dump_vmlck), limit $((LIMIT_KB * 1024))"
[ "$(total locked)" -gt 0 ] && pass "what fits is still locked" || fail_later "nothing locked"
has_event LOCK_MLOCK_FAILED EXECGUARD_BYTES=$((LIMIT_KB * 1024)) &&
	pass "the limit and what to set are reported" || fail_later "no report of the memlock limit"
[ "$(total cap)" = $((LIMIT_KB * 1024)) ] || fail_later "budget not limited to RLIMIT_MEMLOCK: cap=$(total cap)"
l=$(file_line /usr/lib/x86_64-linux-gnu/libc.so.6)
[ -z "$l" ] || [ "$(field "$l" refusal)" = global-budget ] || [ "$(field "$l" locked)" -gt 0 ] ||
	fail_later "libc neither locked nor refused: $l"
lk_cmd rescan
lk_cmd recheck
has_event LOCK_MLOCK_FAILED EXECGUARD_EXE~"*" && fail_later "mlock() failed: the plan ignored the limit"
n=$(count_events LOCK_REFUSED)
lk_cmd rescan
lk_cmd recheck
[ "$(count_events LOCK_REFUSED)" = "$n" ] &&
	pass "refusals reported once ($n), not again on rescan" || fail_later "refusals reported again"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "after rescans: total $(total locked) VmLck $(dump_vmlck)"

# The limit lowered behind the backend's back (prlimit on the running
# daemon): mlock() itself fails. Reported once, the range given back whole,
# the figures still the kernel's.
if command -v prlimit >/dev/null; then
	lk_lib more 64
	lk_prog prog3 more
	lk_evict "$F/prog3" "$F/libmore.so"
	lk_run P3 "$F/prog3" 32
	lk_run P4 "$F/prog3" 32
	prlimit --pid "$DRV_PID" --memlock=4096:4096 || fail prlimit
	lk_cmd protect "$P3" three.service
	lk_cmd protect "$P4" four.service
	lk_cmd recheck
	lk_dump
	# Which of prog3 and libmore the plan admits depends on what of libc
	# is in the page cache (libc, hot, comes first and may fill the 1 MiB
	# budget or not): the ones it admits fail in mlock(), the others are
	# refused for the budget, none is locked, at least one failed.
	nfailed=0
	for f in "$F/prog3" "$F/libmore.so"; do
		l=$(file_line "$f")
		case $(field "$l" locked):$(field "$l" refusal) in
		0:mlock-failed) nfailed=$((nfailed + 1)) ;;
		0:global-budget) ;;
		*) fail_later "after mlock failure: '$l'" ;;
		esac
	done
	[ "$nfailed" -gt 0 ] && { has_event LOCK_MLOCK_FAILED EXECGUARD_EXE="'$F/prog3'" ||
		has_event LOCK_MLOCK_FAILED EXECGUARD_EXE="'$F/libmore.so'"; } &&
		pass "mlock() failure: ranges not locked, $nfailed refused as mlock-failed" ||
		fail_later "after mlock failure: $(grep "^file .*path=$F/\(prog3\|libmore.so\)" "$W/dump")"
	n=$(count_events LOCK_MLOCK_FAILED EXECGUARD_EXE~"*")
	[ "$n" = 1 ] && pass "mlock() failure reported once" || fail_later "mlock() failure reported $n times"
	[ "$(total locked)" = "$(dump_vmlck)" ] && pass "figures still the kernel's after the failure" ||
		fail_later "after failure: total $(total locked) VmLck $(dump_vmlck)"
fi
lk_finish
