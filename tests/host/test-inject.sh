#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Syscall faults injected into the real daemon with strace --inject:
# - memory.exec_protect writes failing with EACCES, EPERM, EINVAL and
#   ENOENT: each reported once with its cause, never in a loop, and the
#   daemon keeps working;
# - the proc connector socket erroring (recvfrom) and the kernel refusing
#   a new one for a while (bind): the daemon opens a new socket, retries
#   every second, says when it is back, and its rescan finds the process
#   started while it was deaf.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
command -v strace > /dev/null || skip "strace not installed"
strace -o /dev/null -qq -e inject=getpid:error=EIO true 2> /dev/null || skip "strace cannot inject faults here"

A=execguard-inject-a-$$
B=execguard-inject-b-$$
new_cgroup "$A"
new_cgroup "$B"
fake_cgroup "$A"
fake_cgroup "$B"
# MatchExe=: the process path (connector, pins, later looks) is what this
# tests; without it the kernel backend decides cgroups as a whole.
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule f]
MatchCgroup=/$A /$B
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
CONF

# LeakSanitizer cannot run under ptrace: in the ASan tree, leaks are
# checked by the other tests.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"
# The traced daemon: strace's child.
daemon_child() { pgrep -P "$DAEMON_PID" -x execguardd | head -n 1; }
stop_traced() {
	local child rc=0
	child=$(daemon_child)
	[ -n "$child" ] || return 99
	kill -TERM "$child"
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PID=
	return $rc
}

for err in EACCES EPERM EINVAL ENOENT; do
	DAEMON_WRAP=(strace -o /dev/null -qq -e trace=pwrite64 -e "inject=pwrite64:error=$err")
	start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run-$err"
	errno=$(perl -MErrno -e "print Errno::$err()")
	pids=()
	for _ in 1 2 3; do
		run_in "$A" sleep 60
		pids+=("$LAST_PID")
	done
	wait_event 10 CGROUP_FAILED EXECGUARD_CGROUP="'/$A'" ERRNO="$errno" || fail "$err: write failure not reported"
	# All three decided: each had its chance to report again.
	for p in "${pids[@]}"; do
		wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "$err: pid $p not decided"
	done
	# Not retrying in a loop: over 3 s, less than a quarter of one CPU
	# (with strace's stops). A loop takes far more even on a loaded
	# 2-core machine; a slow daemon that only handles the exec events of
	# the machine's other processes stays far below.
	child=$(daemon_child)
	busy=$(cpu_pct "$child" 3)
	[ "$busy" -lt 25 ] || fail "$err: daemon busy after the failure: ${busy}% of a CPU over 3 s"
	n=$(count_events CGROUP_FAILED EXECGUARD_CGROUP="'/$A'")
	[ "$n" = 1 ] || fail "$err: reported $n times for 3 processes"
	[ "$(file_value "$A")" = 0 ] || fail "$err: file changed although every write failed"
	stop_traced || fail "$err: daemon exit status $?"
	pass "$err: reported once ($(last_event CGROUP_FAILED | sed 's/^execguardd: warning: //; s/ \[MESSAGE_ID=.*//')), daemon idle, clean stop"
	for k in "${KIDS[@]}"; do kill "$k" 2>/dev/null; done
	KIDS=()
	wait 2>/dev/null
done

# recvfrom: the 3rd call fails. bind: the 2nd to 4th fail (the first is
# at start), so the new socket comes on the 4th try, ~3 s later.
# shellcheck disable=SC2034 # start_daemon (../lib.sh) runs the daemon under it
DAEMON_WRAP=(strace -o /dev/null -qq -e "trace=recvfrom,bind" -e inject=recvfrom:error=EIO:when=3
	-e inject=bind:error=EADDRINUSE:when=2..4)
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run-cn"
run_in "$A" sleep 60
wait_event 10 CONNECTOR_FAILED ERRNO=5 || fail "receive error (EIO) not handled"
wait_event 5 CONNECTOR_RETRYING || fail "failed reopen not reported"
# Deaf now: a process started meanwhile must be found by the rescan.
run_in "$B" sleep 60
pb=$LAST_PID
wait_event 10 CONNECTOR_BACK || fail "connector not back"
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pb" EXECGUARD_CGROUP="'/$B'" || fail "process started while the connector was down not found"
# EADDRINUSE (98) from each of the 3 refused binds.
n=$(count_events CONNECTOR_FAILED ERRNO=98)
[ "$n" = 3 ] || fail "each failed attempt should say why: $n reports"
[ "$(count_events CONNECTOR_RETRYING)" = 1 ] || fail "the outage reported more than once"
# And it listens again: a new process is decided from its exec event.
run_in "$B" sleep 60
pc=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pc" EXECGUARD_CGROUP="'/$B'" || fail "no events after the connector came back"
stop_traced || fail "daemon exit status $?"
pass "connector error: new socket after 3 refused binds, rescan found pid $pb, events flow again"
