#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Two protected processes of two units share a library: it is locked once
# (one range per mapping of it, both counted, the daemon's VmLck is the sum
# of distinct ranges); the exit of one keeps it, the exit of both releases
# it (LockKeepSec=0: nothing kept after exits).
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
lk_conf "$W/conf" LockKeepSec=0
lk_driver "$W/conf"
lk_cmd protect "$A" a.service
lk_cmd protect "$B" b.service
lk_dump

lib=$F/libshared.so
n=$(grep -c "^file .*path=$lib$" "$W/dump")
[ "$n" = 1 ] && pass "the shared library is one entry" || fail_later "libshared appears $n times"
l=$(file_line "$lib")
nmaps=$(grep -c " $lib$" "/proc/$A/maps")
[ "$(field "$l" ranges)" = "$nmaps" ] && [ "$(field "$l" pids)" = 2 ] && [ "$(field "$l" units)" = 2 ] &&
	pass "one range per mapping ($nmaps), mapped by 2 processes of 2 units" || fail_later "libshared ($nmaps mappings): $l"
locked=$(field "$l" locked)
# B ran 48 of its pages, A 32 of the same: the union of both is what B
# uses (the image's other pages both use alike).
used=$(used_of "$B" "$lib")
d=$((used - locked)); d=${d#-}
[ "$locked" -gt 0 ] && [ "$d" -le $((nmaps * PAGE)) ] && pass "locked $locked = used $used (counted once)" ||
	fail_later "libshared locked $locked, used $used"
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
