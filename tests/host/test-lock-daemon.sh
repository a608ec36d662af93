#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# End to end through execguardd with Backend=lock: a process the policy
# protects gets the resident pages of its exec mappings locked by the
# daemon (its VmLck), the status line says so, and the locks go when the
# process exits (LockKeepSec=0: nothing kept). A rule's LockBudget= caps
# what is locked for its unit.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-lock-$$
B=execguard-lock-small-$$
new_cgroup "$A"
new_cgroup "$B"
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
LockKeepSec=0
PressureWindowMSec=10000
PressureStallMSec=9999
[Rule test]
MatchCgroup=/$A /$B
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
[Rule small]
MatchCgroup=/$B
LockBudget=64K
CONF

start_daemon
has_event BACKEND EXECGUARD_BACKEND=lock || fail "lock backend not chosen: $(head -5 "$T/daemon.log")"
vmlck() { awk '/^VmLck:/ { print $2 }' "/proc/$DAEMON_PID/status"; }
some_locked() { [ "$(vmlck)" -gt 0 ]; }
none_locked() { [ "$(vmlck)" = 0 ]; }
[ "$(vmlck)" = 0 ] || fail "locks before anything is protected: $(vmlck) kB"

run_in "$A" sleep 60
p=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "no decision for pid $p"
wait_until 5 some_locked
k=$(vmlck)
# sleep's own text and libc: at least the pages of sleep that ran.
[ "$k" -gt 0 ] || fail "nothing locked for pid $p"
sleep_kb=$(( $(stat -c %s /usr/bin/sleep) / 1024 ))
libc_kb=$(( $(stat -L -c %s /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || echo 0) / 1024 ))
pass "locked $k kB for sleep (files: sleep $sleep_kb kB, libc $libc_kb kB)"
# SIGUSR1 logs the unit's summary now, also when it moved by less than
# the megabyte that logs it unasked.
before=$(count_events LOCK_SUMMARY EXECGUARD_UNIT="'/$A'")
kill -USR1 "$DAEMON_PID"
wait_until 5 events_newer "$before" LOCK_SUMMARY EXECGUARD_UNIT="'/$A'" || fail "no lock summary on SIGUSR1: $(tail -n 3 "$T/daemon.log")"
pass "SIGUSR1 logs the lock summary"

kill "$p"
wait_until 5 none_locked
[ "$(vmlck)" = 0 ] || fail "still $(vmlck) kB locked after the process exited"

# The same program under a 64 KiB unit budget: libc and ld.so do not fit,
# the small text of sleep does.
run_in "$B" sleep 60
q=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$q" || fail "no decision for pid $q"
# Over /$B's own budget (the global one is the default, far larger).
wait_event 5 LOCK_UNIT_REFUSED EXECGUARD_EXE~"'*/libc.so.6'" EXECGUARD_UNIT="'/$B'" || fail "libc not reported over the unit budget"
# What is locked is what sleep has mapped: it may take a look after the
# exec (RescanDelaysMSec) or a re-check (1 s) to be there.
wait_until 5 some_locked
k=$(vmlck)
[ "$k" -gt 0 ] && [ "$k" -le 64 ] && pass "unit budget: $k kB locked, within LockBudget=64K" ||
	fail "unit budget: $k kB locked"
kill "$q"
wait_until 5 none_locked
[ "$(vmlck)" = 0 ] || fail "still $(vmlck) kB locked after the process exited"
pass "released at exit"
stop_daemon || fail "daemon exited with $?"
[ -n "${KEEP_LOG:-}" ] && cp "$T/daemon.log" "$KEEP_LOG"
has_event LOCK_MLOCK_FAILED EXECGUARD_EXE~"*" && fail "mlock() failed"
# A sanitizer's report, not the daemon's message.
grep -iq "sanitizer" "$T/daemon.log" && fail "a sanitizer report in the log"
pass "clean stop"
