#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Two protected processes of two units share a library: it is locked once
# (one range, both counted, the daemon's VmLck is the sum of distinct
# ranges); the exit of one keeps it, the exit of both releases it.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup

lk_lib shared 1024
lk_lib owna 256
lk_lib ownb 256
lk_prog proga shared owna
lk_prog progb shared ownb
lk_evict "$F"/*.so "$F/proga" "$F/progb"
lk_run A "$F/proga" 32 16
lk_run B "$F/progb" 48 16
lk_driver
lk_cmd protect "$A" a.service
lk_cmd protect "$B" b.service
lk_dump

lib=$F/libshared.so
n=$(grep -c "^file .*path=$lib$" "$W/dump")
[ "$n" = 1 ] && pass "the shared library is one entry" || fail_later "libshared appears $n times"
l=$(file_line "$lib")
[ "$(field "$l" ranges)" = 1 ] && [ "$(field "$l" pids)" = 2 ] && [ "$(field "$l" units)" = 2 ] &&
	pass "one range, mapped by 2 processes of 2 units" || fail_later "libshared: $l"
locked=$(field "$l" locked)
# B ran 48 of its pages: the union of both is what is resident.
res=$(resident_of "$B" "$lib")
d=$((res - locked)); d=${d#-}
[ "$locked" -gt 0 ] && [ "$d" -le "$PAGE" ] && pass "locked $locked = resident $res (counted once)" ||
	fail_later "libshared locked $locked, resident $res"
sum=$(awk '/^file / { for (i = 1; i <= NF; i++) if ($i ~ /^locked=/) { sub("locked=", "", $i); s += $i } } END { print s + 0 }' "$W/dump")
[ "$sum" = "$(dump_vmlck)" ] && [ "$sum" = "$(total locked)" ] &&
	pass "VmLck $(dump_vmlck) = sum over distinct ranges" || fail_later "VmLck $(dump_vmlck), sum $sum, total $(total locked)"
ua=$(unit_line a.service); ub=$(unit_line b.service)
[ "$(field "$ua" locked)" -ge "$locked" ] && [ "$(field "$ub" locked)" -ge "$locked" ] &&
	pass "each unit's figures include the shared library" || fail_later "units: $ua / $ub"

lk_stop "$A"
a_gone() { [ -z "$(unit_line a.service)" ]; }
lk_dump_until 5 a_gone
l=$(file_line "$lib")
[ -n "$l" ] && [ "$(field "$l" pids)" = 1 ] && [ "$(field "$l" locked)" = "$locked" ] &&
	pass "after A exits: still locked ($locked), 1 process" || fail_later "after A exit: '$l'"
[ -z "$(file_line "$F/libowna.so")" ] && [ -z "$(unit_line a.service)" ] &&
	pass "A's own library and unit are gone" || fail_later "A's library or unit left behind"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "after A: total $(total locked) VmLck $(dump_vmlck)"

lk_stop "$B"
no_units() { [ "$(total units)" = 0 ]; }
lk_dump_until 5 no_units
[ "$(total ranges)" = 0 ] && [ "$(total units)" = 0 ] && [ "$(dump_vmlck)" = 0 ] &&
	pass "after both exit: nothing mapped or locked" ||
	fail_later "after both: ranges=$(total ranges) VmLck=$(dump_vmlck)"
[ "$(grep -c "$F" "/proc/$DRV_PID/maps")" = 0 ] && pass "no mapping of the test files left in the daemon" ||
	fail_later "daemon still maps: $(grep "$F" "/proc/$DRV_PID/maps")"
lk_finish
