#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Thousands of short execs with a deliberately small receive buffer, and
# the daemon stopped for a while so its socket surely overflows: every
# long-lived matching process must still be decided on.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-storm-$$
new_cgroup "$A"
fake_cgroup "$A"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule storm]
MatchCgroup=/$A
MatchExe=*/sleep
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --receive-buffer=4096

storm() {
	# $1 execs of /bin/true from a shell inside the cgroup
	sh -c 'echo $$ > "$0/cgroup.procs"; i=0; while [ $i -lt "$1" ]; do /bin/true; i=$((i+1)); done' "$CG2/$A" "$1"
}

check_all_decided() {
	local missing=0 p
	for p in "${SLEEPERS[@]}"; do
		has_event PROCESS_PROTECTED EXECGUARD_PID="$p" || { echo "undecided: $p"; missing=$((missing + 1)); }
	done
	return $missing
}
all_decided() {
	local p
	for p in "${SLEEPERS[@]}"; do has_event PROCESS_PROTECTED EXECGUARD_PID="$p" || return 1; done
}

# Phase 1: the daemon is stopped while the storm runs.
SLEEPERS=()
kill -STOP "$DAEMON_PID"
for _ in 1 2 3 4 5; do
	storm 400
	run_in "$A" sleep 120
	SLEEPERS+=("$LAST_PID")
done
kill -CONT "$DAEMON_PID"
wait_event 10 OVERFLOW || fail "no overflow seen with a 4 KiB buffer"
wait_event 10 RESCANNED || fail "no rescan after overflow"
wait_until 5 all_decided || check_all_decided || fail "long-lived processes missed after overflow"
pass "all ${#SLEEPERS[@]} sleepers decided after overflow"

# Phase 2: a storm while it runs, sleepers in between.
SLEEPERS=()
for _ in 1 2 3 4 5 6 7 8 9 10; do
	storm 300 &
	storm 300
	wait %% 2>/dev/null
	run_in "$A" sleep 120
	SLEEPERS+=("$LAST_PID")
done
wait_until 5 all_decided || check_all_decided || fail "long-lived processes missed during a live storm"
pass "all ${#SLEEPERS[@]} sleepers decided during a live storm"

stats
stop_daemon || fail "daemon exited with $?"
