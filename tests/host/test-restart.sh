#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Killed with SIGKILL and started again: the daemon rebuilds its state
# from /proc and the cgroup tree, keeps what the policy still wants and
# clears what it set that the policy no longer wants; nothing stale.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-restart-a-$$
B=execguard-restart-b-$$
for c in "$A" "$B"; do new_cgroup "$c"; fake_cgroup "$c"; done
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule both]
MatchCgroup=/$A /$B
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
run_in "$A" sleep 60
run_in "$B" sleep 60
wait_event 5 CGROUP_PROTECTED EXECGUARD_CGROUP="'/$B'" || fail "B not set"
wait_event 5 CGROUP_PROTECTED EXECGUARD_CGROUP="'/$A'" || fail "A not set"
grep -qx "/$A" "$T/run/kernel-owned" || fail "state file lacks /$A: $(cat "$T/run/kernel-owned")"

kill -9 "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
[ "$(file_value "$A")" = max ] && [ "$(file_value "$B")" = max ] || fail "SIGKILL should leave the files as they were"
pass "after SIGKILL both files are still set and recorded"

# The new policy only wants A.
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule a]
MatchCgroup=/$A
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
# /$B's process still runs: only the earlier run's state file makes /$B
# the daemon's to clear.
wait_event 5 CGROUP_RELEASED EXECGUARD_CGROUP="'/$B'" || fail "stale /$B not cleared: earlier run's state not read?"
[ "$(file_value "$A")" = max ] || fail "/$A lost its protection over the restart"
[ "$(file_value "$B")" = 0 ] || fail "/$B still set"
grep -qx "/$B" "$T/run/kernel-owned" && fail "/$B still in the state file"
grep -qx "/$A" "$T/run/kernel-owned" || fail "/$A no longer recorded"
pass "restart kept /$A and cleared stale /$B"

# A file someone else set is never ours to clear.
echo 16777216 > "$T/cgroot/$B/memory.exec_protect"
stop_daemon || fail "daemon exit status $?"
[ "$(file_value "$A")" = 0 ] || fail "clean stop left /$A set"
[ "$(file_value "$B")" = 16777216 ] || fail "clean stop cleared a file it did not set"
[ -s "$T/run/kernel-owned" ] && fail "state file not empty after a clean stop: $(cat "$T/run/kernel-owned")"
pass "clean stop cleared only its own file"
