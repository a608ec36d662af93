#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Faults around the cgroup writes: the cgroup gone before the write, the
# cgroup file system read-only. Each is reported once with its cause,
# never in a loop, and the daemon keeps working.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-fault-a-$$
B=execguard-fault-b-$$
C=execguard-fault-c-$$
for c in "$A" "$B" "$C"; do new_cgroup "$c"; done
# The fake tree on its own tmpfs, so it can be made read-only under the
# daemon's open directory fd.
mkdir -p "$T/cgroot"
mount -t tmpfs -o size=1M execguard-test "$T/cgroot" || skip "cannot mount a tmpfs"
on_exit 'umount "$T/cgroot" 2>/dev/null'
fake_cgroup "$C" # only C has the file; A's and B's are "gone"
# MatchExe=: the process path (connector, pins, later looks) is what this
# tests; without it the kernel backend decides cgroups as a whole.
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule f]
MatchCgroup=/$A /$B /$C
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"

# wait_decided PID...: each one's decision logged, so each has had its
# chance to report the failure again.
wait_decided() {
	local p
	for p; do wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p not decided"; done
}

# Gone: three processes in A, one failure line.
pids=()
for _ in 1 2 3; do
	run_in "$A" sleep 60
	pids+=("$LAST_PID")
done
wait_event 5 CGROUP_FAILED EXECGUARD_CGROUP="'/$A'" ERRNO=2 ||
	fail "missing cgroup not reported with its cause"
wait_decided "${pids[@]}"
n=$(count_events CGROUP_FAILED EXECGUARD_CGROUP="'/$A'")
[ "$n" = 1 ] || fail "missing cgroup reported $n times"
pass "a vanished cgroup is reported once, with its cause"

# Read-only: remount the fake tree read-only under the daemon.
mkdir -p "$T/cgroot/$B"
echo 0 > "$T/cgroot/$B/memory.exec_protect"
mount -o remount,ro "$T/cgroot"
run_in "$B" sleep 60
pb1=$LAST_PID
run_in "$B" sleep 60
pb2=$LAST_PID
wait_event 5 CGROUP_FAILED EXECGUARD_CGROUP="'/$B'" ERRNO=30 ||
	fail "read-only cgroup fs not reported"
wait_decided "$pb1" "$pb2"
n=$(count_events CGROUP_FAILED EXECGUARD_CGROUP="'/$B'")
mount -o remount,rw "$T/cgroot"
[ "$n" = 1 ] || fail "read-only cgroup fs reported $n times"
pass "a read-only cgroup file system is reported once, with its cause"

# And it still works where it can.
run_in "$C" sleep 60
wait_event 5 CGROUP_PROTECTED EXECGUARD_CGROUP="'/$C'" || fail "daemon stopped working after faults"
kill -0 "$DAEMON_PID" || fail "daemon died"
stop_daemon || fail "daemon exit status $?"
pass "still protects after the faults, stops cleanly"

# journald away: told to log to the journal, it keeps working and its
# messages still reach stderr, as plain lines (no fields to match: the
# sentences are what is checked here).
if [ ! -S /run/systemd/journal/socket ]; then
	"$EXECGUARDD" -c "$T/etc/execguard.conf" --cgroup-root="$T/cgroot" --state-dir="$T/run" \
		--log-target=journal > "$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	wait_log "^execguardd: ready:" 10 || fail "daemon did not become ready without journald"
	run_in "$C" sleep 60
	wait_log "^execguardd: protect pid $LAST_PID " 5 || fail "no decision without journald"
	stop_daemon || fail "daemon exit status $? without journald"
	pass "without journald it logs to stderr and keeps working"
fi
