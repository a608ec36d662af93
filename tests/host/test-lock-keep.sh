#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What a service runs per request stays resident between requests. A
# service (svc) and two helpers it "ran" (h1, h2, each with a library of
# its own that nothing else maps), all in web.service:
# - after a helper exits its ranges are kept (kept=1, no process), still
#   locked: evicting its files from the page cache leaves those pages
#   resident (an independent mincore());
# - under a unit budget the most recently run helper stays and the older
#   one's text is refused first (least recently used);
# - LockKeepSec= bounds how long: a short one lets them go;
# - a helper released while it runs (the policy changed) keeps nothing,
#   nor does any exit with LockKeepSec=0: its pages can then be evicted.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup

lk_lib shared 64
lk_lib h1 256
lk_lib h2 256
lk_prog svc shared
lk_prog h1 h1
lk_prog h2 h2
lk_evict "$F"/*.so "$F/svc" "$F/h1" "$F/h2"
lk_conf "$W/conf" $'LockBudget=1G\nLockRecheckSec=1\nLockKeepSec=600'
lk_driver "$W/conf"
lk_run S "$F/svc" 16
lk_cmd protect "$S" web.service

# run_helper VAR PROG: a request's helper, protected in the unit.
run_helper() {
	lk_run "$1" "$F/$2" 64
	lk_cmd protect "${!1}" web.service
}
# kept LIB: every range of the library is kept and none is mapped.
kept() {
	local l
	l=$(file_line "$F/lib$1.so")
	[ -n "$l" ] && [ "$(field "$l" pids)" = 0 ] && [ -z "$(range_lines "$F/lib$1.so" | grep ' kept=0 ')" ]
}

run_helper H1 h1
lk_dump
used1=$(used_of "$H1" "$F/libh1.so")
l1=$(field "$(file_line "$F/libh1.so")" locked)
echo "h1 running: libh1 locked $l1, used $used1"
[ "${l1:-0}" -gt 0 ] || fail "libh1 not locked while h1 runs: $(file_line "$F/libh1.so")"
lk_stop "$H1"
lk_dump_until 5 kept h1 || fail_later "libh1 not kept after h1 exited: $(range_lines "$F/libh1.so")"
k1=$(field "$(file_line "$F/libh1.so")" locked)
[ "${k1:-0}" -ge "$l1" ] && pass "h1 exited: libh1 kept, $k1 bytes locked (was $l1)" ||
	fail_later "libh1 after exit: $(file_line "$F/libh1.so")"
[ "$(field "$(unit_line web.service)" kept)" -gt 0 ] || fail_later "the unit shows nothing kept: $(unit_line web.service)"
lk_evict "$F/libh1.so" "$F/h1"
res=$(file_resident "$F/libh1.so")
[ "$res" -ge "$k1" ] && pass "evicting libh1 leaves its kept pages resident ($res >= $k1)" ||
	fail_later "libh1 resident $res after eviction, kept locked $k1"

# A second helper, later: it is the most recently used.
run_helper H2 h2
lk_stop "$H2"
lk_dump_until 5 kept h2 || fail_later "libh2 not kept: $(range_lines "$F/libh2.so")"
k2=$(field "$(file_line "$F/libh2.so")" locked)
charged=$(field "$(unit_line web.service)" charged)
t1=$(range_sum "$F/libh1.so" r-x resident)
# Room for all but half of h1's text: h2 (newer) stays, h1's text goes.
cap=$((charged - t1 / 2))
lk_cmd protect "$S" web.service "$cap"
lk_dump
t=$(range_lines "$F/libh1.so" r-x)
[ "$(field "$t" locked)" = 0 ] && [ "$(field "$t" refusal)" = unit-budget ] &&
	pass "unit budget: the older helper's text is refused first" || fail_later "libh1 text under cap $cap: $t"
l=$(file_line "$F/libh2.so")
[ "$(field "$l" locked)" -ge "$k2" ] && [ "$(field "$l" locked)" = "$(field "$l" resident)" ] &&
	[ "$(field "$l" refusal)" = none ] && pass "unit budget: the newer helper stays locked ($(field "$l" locked))" ||
	fail_later "libh2 under cap: $l, was $k2"
[ "$(field "$(unit_line web.service)" charged)" -le "$cap" ] || fail_later "charged over the cap: $(unit_line web.service)"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "total $(total locked) VmLck $(dump_vmlck)"

# A short keep time lets both go (the re-check expires them).
lk_conf "$W/short.conf" $'LockBudget=1G\nLockRecheckSec=1\nLockKeepSec=2'
lk_cmd reload "$W/short.conf"
gone() { [ -z "$(file_line "$F/libh1.so")" ] && [ -z "$(file_line "$F/libh2.so")" ]; }
lk_dump_until 10 gone && pass "LockKeepSec=2: the kept helpers are released" ||
	fail_later "still kept: $(grep '^file ' "$W/dump")"
[ -n "$(file_line "$F/libshared.so")" ] || fail_later "the running service's library went too"

# Released while running (policy): nothing kept.
run_helper H3 h1
lk_cmd release "$H3"
lk_dump
[ -z "$(file_line "$F/libh1.so")" ] && pass "a helper released while running keeps nothing" ||
	fail_later "after release: $(file_line "$F/libh1.so")"
lk_stop "$H3"

# LockKeepSec=0: an exit keeps nothing, the pages can go.
lk_conf "$W/zero.conf" $'LockBudget=1G\nLockRecheckSec=1\nLockKeepSec=0'
lk_cmd reload "$W/zero.conf"
run_helper H4 h2
lk_dump
[ -n "$(file_line "$F/libh2.so")" ] || fail "libh2 not locked for h4"
lk_stop "$H4"
h2_gone() { [ -z "$(file_line "$F/libh2.so")" ]; }
lk_dump_until 5 h2_gone && pass "LockKeepSec=0: released at exit" || fail_later "libh2 kept with LockKeepSec=0"
lk_evict "$F/libh2.so"
res=$(file_resident "$F/libh2.so")
[ "$res" -lt "$k2" ] && pass "and its pages can be evicted ($res left)" || fail_later "libh2 still resident $res"
has_event LOCK_MLOCK_FAILED EXECGUARD_EXE~"*" && fail_later "mlock failed: $(events LOCK_MLOCK_FAILED)"
lk_finish
