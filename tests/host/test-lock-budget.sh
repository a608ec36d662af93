#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Budgets: three units share a library (and libc, ld.so); each has a large
# library of its own. With a global budget that holds the shared ranges
# and half of the smallest own library, the shared (hot) ones stay locked
# and the own libraries' text (their large r-x range) is refused and
# reported; the total stays within the budget. A per-unit cap holds the
# same way for that unit only.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup

lk_lib shared 512
for u in a b c; do
	lk_lib "own$u" 512
	lk_prog "prog$u" "own$u" shared
done
lk_evict "$F"/*.so "$F"/prog?
lk_run A "$F/proga" 64 32
lk_run B "$F/progb" 96 32
lk_run C "$F/progc" 128 32
lk_conf "$W/big.conf" LockBudget=1G
lk_driver "$W/big.conf"
lk_cmd protect "$A" a.service
lk_cmd protect "$B" b.service
lk_cmd protect "$C" c.service
lk_dump
cp "$W/dump" "$W/dump.unlimited"

# Resident of what all three units map, and of each own library.
hot=$(awk '/^file / && / units=3 / { for (i = 1; i <= NF; i++) if ($i ~ /^resident=/) { sub("resident=", "", $i); s += $i } } END { print s + 0 }' "$W/dump")
own() { field "$(file_line "$F/libown$1.so")" "$2"; }
mina=$(own a resident)
echo "hot (3 units) resident $hot; own libraries resident a=$mina b=$(own b resident) c=$(own c resident)"
[ "$mina" -gt $((32 * PAGE)) ] || fail "own library a too small to test with ($mina)"
[ "$(own a locked)" = "$mina" ] || fail_later "unlimited: own a not fully locked"

budget=$((hot + mina / 2))
lk_conf "$W/tight.conf" "LockBudget=$budget"
lk_cmd reload "$W/tight.conf"
lk_dump
[ "$(total locked)" -le "$budget" ] && pass "global: locked $(total locked) <= budget $budget" ||
	fail_later "global: locked $(total locked) > budget $budget"
bad=0
while read -r l; do
	[ "$(field "$l" locked)" = "$(field "$l" resident)" ] || { bad=1; echo "  hot not fully locked: $l"; }
done < <(grep '^file .* units=3 ' "$W/dump")
[ "$bad" = 0 ] && pass "global: the hot ranges (3 units) stay fully locked" || fail_later "global: hot range dropped"
# The own libraries' text ranges come after the hot ones and do not fit.
for u in a b c; do
	t=$(range_lines "$F/libown$u.so" r-x)
	[ "$(field "$t" locked)" = 0 ] && [ "$(field "$t" refusal)" = global-budget ] ||
		fail_later "global: own $u text: $t"
done
has_event LOCK_REFUSED EXECGUARD_EXE="'$F/libowna.so'" &&
	pass "global: the refusal is reported" || fail_later "global: refusal of libowna not reported"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "global: total $(total locked) VmLck $(dump_vmlck)"

# Back to a large global budget; unit a gets its own cap.
cap=$((hot + mina / 2))
lk_cmd reload "$W/big.conf"
lk_cmd protect "$A" a.service "$cap"
lk_dump
ua=$(unit_line a.service)
[ "$(field "$ua" cap)" = "$cap" ] && [ "$(field "$ua" charged)" -le "$cap" ] &&
	pass "unit: a charged $(field "$ua" charged) <= cap $cap" || fail_later "unit: $ua"
t=$(range_lines "$F/libowna.so" r-x)
[ "$(field "$t" locked)" = 0 ] && [ "$(field "$t" refusal)" = unit-budget ] &&
	pass "unit: a's own library text refused (unit-budget)" || fail_later "unit: own a text $t"
[ "$(own b locked)" = "$(own b resident)" ] && [ "$(own c locked)" = "$(own c resident)" ] &&
	pass "unit: uncapped b and c fully locked" || fail_later "unit: b/c not fully locked"
l=$(file_line "$F/libshared.so")
[ "$(field "$l" locked)" = "$(field "$l" resident)" ] && pass "unit: the shared library stays" ||
	fail_later "unit: shared $l"
has_event LOCK_UNIT_REFUSED EXECGUARD_EXE="'$F/libowna.so'" &&
	pass "unit: the refusal is reported" || fail_later "unit: refusal of libowna not reported"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "unit: total $(total locked) VmLck $(dump_vmlck)"
lk_finish
