#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A program run from a tmpfs under the lock backend: shmem pages are
# swapped, not dropped, so they are not locked, and the daemon says so
# (once) instead of failing or locking silently; its libraries from the
# disk are still locked.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-tmpfs-$$
new_cgroup "$A"
mkdir "$T/shm"
mount -t tmpfs -o size=8M execguard-tmpfs "$T/shm" || skip "cannot mount a tmpfs"
on_exit 'kill_own "${KIDS[@]}"; wait 2>/dev/null; umount "$T/shm" 2>/dev/null'
cp /usr/bin/sleep "$T/shm/sleep-on-tmpfs"
write_conf <<CONF
[Daemon]
Backend=lock
[Rule t]
MatchCgroup=/$A
Protect=yes
CONF
start_daemon
pids=()
for _ in 1 2; do
	run_in "$A" "$T/shm/sleep-on-tmpfs" 60
	pids+=("$LAST_PID")
done
for p in "${pids[@]}"; do wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p not decided"; done
wait_event 5 LOCK_SKIPPED EXECGUARD_EXE="'$T/shm/sleep-on-tmpfs'" || fail "the tmpfs program is not reported"
vmlck=$(awk '$1 == "VmLck:" { print $2 }' "/proc/$DAEMON_PID/status")
[ "$vmlck" -gt 0 ] || fail "libc from the disk not locked either"
# Each process is looked at on its exec and at the 3 later looks
# (RescanDelaysMSec 20 200 1000): 8 looks at least before all are done,
# each a chance to report again.
looks() { stats | counter "later looks"; }
looks_done() { [ "$(looks)" -ge 8 ]; }
wait_until 5 looks_done || fail "later looks: $(looks), want 8 at least"
n=$(count_events LOCK_SKIPPED EXECGUARD_EXE="'$T/shm/sleep-on-tmpfs'")
[ "$n" = 1 ] || fail "reported $n times for two processes and their later looks"
pass "program on tmpfs reported once as not lockable; $vmlck kB of its disk libraries locked"
stop_daemon || fail "daemon exit status $?"
