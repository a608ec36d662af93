#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A protected program with a 16 MiB text (in its library) of which it runs
# 64 pages: the lock backend locks what of the library's image (all its
# mappings) is resident and mapped by the program as the file's pages (per
# an independent mincore() and pagemap reading), within a page per range,
# far below the file size; the locked bytes are the kernel's VmLck of the
# daemon; the lock grows on the re-check timer when more of the text runs.
# After the program exits its pages stay locked (LockKeepSec=, default
# 600 s); a reload with LockKeepSec=0 releases them at once.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup

lk_lib big 4096
lk_prog bigtext big
lk_conf "$W/conf" $'LockBudget=1G\nLockRecheckSec=1'
lk_evict "$F/bigtext" "$F/libbig.so"
lk_run P "$F/bigtext" 64
lk_driver "$W/conf"
lk_cmd protect "$P" bigtext.service
lk_dump

check_equal() { # what
	local res used len locked line n
	res=$(resident_of "$P" "$F/libbig.so")
	used=$(used_of "$P" "$F/libbig.so")
	len=$(length_of "$P" "$F/libbig.so")
	line=$(file_line "$F/libbig.so")
	locked=$(field "$line" locked)
	n=$(field "$line" ranges)
	echo "$1: libbig image mapped $len, resident $res, used $used, locked $locked in $n ranges"
	[ -n "$locked" ] || { fail_later "$1: libbig not in the lock set"; return; }
	local d=$((used - locked)); d=${d#-}
	[ "$d" -le $((n * PAGE)) ] && pass "$1: locked equals resident and used within a page per range" ||
		fail_later "$1: locked $locked vs used $used"
	[ "$locked" -gt 0 ] && [ "$((locked * 16))" -lt "$len" ] &&
		pass "$1: locked is far below the text size ($len)" ||
		fail_later "$1: locked $locked not far below $len"
	[ "$(total locked)" = "$(dump_vmlck)" ] && pass "$1: total locked = daemon VmLck ($(dump_vmlck))" ||
		fail_later "$1: total locked $(total locked) but VmLck $(dump_vmlck)"
	# Every other range (libc, ld.so): locked <= resident, never more.
	local f l r
	while read -r f; do
		l=$(field "$f" locked); r=$(field "$f" resident)
		[ "$l" -le "$r" ] || fail_later "$1: $(field "$f" path) locked $l > resident $r"
	done < <(grep '^file ' "$W/dump")
}

check_equal initial
first=$(field "$(file_line "$F/libbig.so")" locked)

lk_grow "$P" "$P_OUT"
# No command: the re-check timer (LockRecheckSec=1) has to pick it up;
# dumps until it has (they do not re-check).
grown() { [ "$(field "$(file_line "$F/libbig.so")" locked)" -ge $((first + 64 * PAGE)) ]; }
lk_dump_until 5 grown
check_equal "after growth"
now=$(field "$(file_line "$F/libbig.so")" locked)
[ "$now" -ge $((first + 64 * PAGE)) ] && pass "lock grew by >= 64 pages ($first -> $now)" ||
	fail_later "lock did not grow with the text ($first -> $now)"

has_event LOCK_MLOCK_FAILED EXECGUARD_EXE~"*" && fail_later "mlock failed: $(events LOCK_MLOCK_FAILED)"
lk_stop "$P"
all_kept() { [ "$(total processes)" = 0 ] && [ "$(total ranges)" -gt 0 ] && [ "$(total kept)" = "$(total ranges)" ]; }
lk_dump_until 5 all_kept
kept_big=$(field "$(file_line "$F/libbig.so")" locked)
all_kept && [ "${kept_big:-0}" -ge "$now" ] && [ "$(total locked)" = "$(dump_vmlck)" ] &&
	pass "after exit every range is kept, libbig still locked ($kept_big)" ||
	fail_later "after exit: ranges=$(total ranges) kept=$(total kept) libbig locked ${kept_big:-none} (was $now)"
lk_conf "$W/conf0" $'LockBudget=1G\nLockRecheckSec=1\nLockKeepSec=0'
lk_cmd reload "$W/conf0"
lk_dump
[ "$(total ranges)" = 0 ] && [ "$(dump_vmlck)" = 0 ] && pass "LockKeepSec=0: all released at once" ||
	fail_later "left after LockKeepSec=0: ranges=$(total ranges) VmLck=$(dump_vmlck)"
lk_finish
