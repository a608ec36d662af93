#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A look that fails for a reason other than the process's exit must not
# unprotect a running service: only an exit or the policy drops a
# protection. The daemon's open file limit is lowered under it (prlimit)
# so that every look fails with EMFILE; a protected process is then
# looked at again by the later-look round and by its own new exec. It
# stays protected (memory.exec_protect stays set, "protected now" stays 1),
# the failure is reported once, and once files are free again its exit
# still releases it.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
command -v prlimit >/dev/null || skip "needs prlimit (util-linux)"

A=execguard-lookerr-$$
new_cgroup "$A"
fake_cgroup "$A"
# MatchExe=: the process path (connector, pins, later looks) is what this
# tests; without it the kernel backend decides cgroups as a whole.
write_conf <<CONF
[Daemon]
Backend=kernel
LockRecheckSec=1
[Rule lookerr]
MatchCgroup=/$A
MatchExe=/usr/bin/sleep /bin/sleep /usr/bin/dash /bin/dash
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run" --log-level=debug

mkfifo "$T/go"
# Protected as sh; execs sleep when the test writes to the fifo.
run_in "$A" sh -c 'read x < "$0"; exec sleep 600' "$T/go"
p=$LAST_PID
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID=$p || fail "no decision for pid $p"
[ "$(file_value "$A")" = max ] || fail "/$A not set"

nofile=$(prlimit --pid "$DAEMON_PID" --nofile --noheadings --output SOFT,HARD)
open=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
prlimit --pid "$DAEMON_PID" --nofile="$open:${nofile##* }" || fail "prlimit failed"
# The later-look round runs every second: it meets EMFILE.
wait_event 10 LOOK_FAILED_KEPT EXECGUARD_PID="$p" ERRNO=24 ||
	fail "no look at pid $p failed with EMFILE (or it was not reported as one)"
[ "$(file_value "$A")" = max ] || fail "/$A cleared after a failed look"
[ "$(protected_now)" = 1 ] || fail "pid $p dropped after a failed later look"
pass "a later look failing with EMFILE keeps pid $p protected"

# Its own exec, looked at while files are still short.
e0=$(count_events LOOK_FAILED_KEPT ERRNO=24 EXECGUARD_PID="$p")
echo go > "$T/go"
wait_until 10 grep -q sleep "/proc/$p/comm" || fail "pid $p did not exec sleep"
# A debug line (no MESSAGE_ID: LOOK_FAILED_KEPT is said once, and is checked
# below to stay so): each failed look at a protected process.
wait_log "protected pid $p: the look at its exec failed: Too many open files; kept" 10 ||
	fail "the exec of pid $p was not looked at"
[ "$(file_value "$A")" = max ] || fail "/$A cleared after the exec was looked at with EMFILE"
[ "$(protected_now)" = 1 ] || fail "pid $p dropped after its exec could not be looked at"
has_event CGROUP_RELEASED "EXECGUARD_CGROUP='/$A'" && fail "released /$A on a failed look"
has_event LOOK_FAILED EXECGUARD_PID="$p" && fail "pid $p reported as not protected after a failed look"
[ "$(count_events LOOK_FAILED_KEPT ERRNO=24 EXECGUARD_PID="$p")" = "$e0" ] ||
	fail "the same failure reported again"
pass "its exec, looked at with EMFILE: still protected, the failure reported once"

prlimit --pid "$DAEMON_PID" --nofile="$nofile" || fail "prlimit restore failed"
kill "$p"
wait_event 10 CGROUP_RELEASED "EXECGUARD_CGROUP='/$A'" || fail "not released after its exit"
pass "released at its exit once files were free again"
stop_daemon || fail "daemon exit status $?"
