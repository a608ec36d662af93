#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# End to end through execguardd with Backend=lock and the real proc
# connector: a unit that runs a helper per request (a copy of sleep, a
# file nothing else maps) between which nothing maps it. The daemon sees
# each exec, locks what the helper uses, and after the helper exits
# keeps it (LockKeepSec=, default 600 s): the daemon's own mappings of the
# helper stay Locked in its smaps after every process of the unit is
# gone, and evicting the helper from the page cache leaves those pages
# resident (fincore). A reload with LockKeepSec=0 releases them.
. "$(dirname "$0")/lib.sh"
TEST_TMPDIR=/var/tmp test_init root cgroup2
command -v fincore >/dev/null || skip "needs fincore (util-linux)"

A=execguard-keep-$$
new_cgroup "$A"
cp /usr/bin/sleep "$T/helper" || fail "cannot copy sleep"
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
PressureWindowMSec=10000
PressureStallMSec=9999
[Rule web]
MatchCgroup=/$A
Protect=yes
CONF
start_daemon
has_event BACKEND EXECGUARD_BACKEND=lock || fail "lock backend not chosen: $(head -5 "$T/daemon.log")"

# Locked bytes of the daemon's own mappings of a file (its smaps).
daemon_locked() {
	awk -v p="$1" '$NF == p && /^[0-9a-f]+-/ { m = 1; next } /^[0-9a-f]+-/ { m = 0 } m && $1 == "Locked:" { s += $2 } END { print s * 1024 }' \
		"/proc/$DAEMON_PID/smaps"
}
some_locked() { [ "$(daemon_locked "$T/helper")" -gt 0 ]; }
none_locked() { [ "$(daemon_locked "$T/helper")" = 0 ]; }

# Three requests: the helper runs 0.5 s each, nothing maps it between.
run_in "$A" sh -c 'for i in 1 2 3; do "$0" 0.5; sleep 0.2; done; exec sleep 60' "$T/helper"
loop=$LAST_PID
wait_event 10 PROCESS_PROTECTED EXECGUARD_EXE="'$T/helper'" || fail "no helper run was protected"
pass "the helper's exec was seen and protected"
helper_done() { ! grep -q "^$T/helper" <(for p in $(cat "$CG2/$A/cgroup.procs"); do readlink "/proc/$p/exe"; done); }
wait_until 10 helper_done || fail "the helper still runs"
# The request loop is done: only "sleep 60" is left in the unit.
wait_until 5 some_locked || fail "nothing of the helper locked after its runs: $(grep -c helper "/proc/$DAEMON_PID/maps") mappings"
k=$(daemon_locked "$T/helper")
pass "between requests the helper stays locked ($k bytes), nothing maps it"
kill "$loop"
wait "$loop" 2>/dev/null
empty() { grep -q "populated 0" "$CG2/$A/cgroup.events"; }
wait_until 5 empty || fail "the unit's cgroup did not empty"
[ "$(daemon_locked "$T/helper")" -ge "$k" ] && pass "still locked after every process of the unit exited" ||
	fail "released after the unit emptied: $(daemon_locked "$T/helper")"
dd if="$T/helper" iflag=nocache count=0 status=none
res=$(fincore -b -n -o RES "$T/helper")
[ "$res" -ge "$k" ] && pass "evicting the helper leaves its locked pages resident ($res >= $k)" ||
	fail "helper resident $res, locked $k"

# LockKeepSec=0 on reload: released at once.
sed -i 's/^LockRecheckSec=1$/LockRecheckSec=1\nLockKeepSec=0/' "$T/etc/execguard.conf"
before=$(count_events POLICY_LOADED)
kill -HUP "$DAEMON_PID"
wait_until 5 events_newer "$before" POLICY_LOADED || fail "no reload: $(tail -n 3 "$T/daemon.log")"
wait_until 5 none_locked && pass "LockKeepSec=0 on reload: released" ||
	fail "still locked after LockKeepSec=0: $(daemon_locked "$T/helper")"
stop_daemon || fail "daemon exited with $?"
has_event LOCK_MLOCK_FAILED EXECGUARD_EXE~"*" && fail "mlock() failed"
grep -iq "sanitizer" "$T/daemon.log" && fail "a sanitizer report in the log"
pass "clean stop"
