#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A protected process moved to another cgroup after the decision (no
# event tells of it): the daemon's later looks (every LockRecheckSec)
# see the move and decide again. Kernel backend on a fake tree: the
# old cgroup is cleared when nothing protected is left in it, the new
# one set; moved out of every protected cgroup, it is released.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-move-a-$$
B=execguard-move-b-$$
U=execguard-move-u-$$
for c in "$A" "$B" "$U"; do
	new_cgroup "$c"
	fake_cgroup "$c"
done
# MatchExe=: the process path (connector, pins, later looks) is what this
# tests; without it the kernel backend decides cgroups as a whole.
write_conf <<CONF
[Daemon]
Backend=kernel
LockRecheckSec=1
[Rule moved]
MatchCgroup=/$A /$B
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"

run_in "$A" sleep 60
p=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "no decision for pid $p"
[ "$(file_value "$A")" = max ] || fail "/$A not set"

# wait_value CGROUP VALUE SECS
value_is() { [ "$(file_value "$1")" = "$2" ]; }
wait_value() { wait_until "$3" value_is "$1" "$2"; }

echo "$p" > "$CG2/$B/cgroup.procs" || fail "cannot move pid $p"
wait_value "$B" max 5 || fail "/$B not set after pid $p moved there"
wait_value "$A" 0 2 || fail "/$A still set with nothing protected left in it"
has_event PROCESS_MOVED EXECGUARD_PID="$p" EXECGUARD_CGROUP="'/$B'" || fail "the move is not logged"
[ "$(protected_now)" = 1 ] || fail "protected now $(protected_now) after the move, want 1"
pass "moved between protected cgroups: followed, the old one cleared"

echo "$p" > "$CG2/$U/cgroup.procs" || fail "cannot move pid $p"
wait_value "$B" 0 5 || fail "/$B still set after pid $p left it"
wait_event 2 PROCESS_RELEASED EXECGUARD_PID="$p" EXECGUARD_CGROUP="'/$U'" || fail "release not logged"
[ "$(file_value "$U")" = 0 ] || fail "/$U was set"
[ "$(protected_now)" = 0 ] || fail "protected now $(protected_now) after leaving, want 0"
pass "moved to an unprotected cgroup: released"

kill "$p"
stop_daemon || fail "daemon exit status $?"
pass "clean stop"
