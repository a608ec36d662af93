#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A process started in a fresh cgroup that the policy matches is
# decided on, written (kernel backend on a fake tree), logged, and
# released when it exits; one in another cgroup is left alone.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-test-a-$$
B=execguard-test-b-$$
new_cgroup "$A"
new_cgroup "$B"
fake_cgroup "$A"
fake_cgroup "$B"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule test]
MatchCgroup=/$A
MatchExe=/usr/bin/sleep /bin/sleep /usr/bin/dash
Protect=yes
CONF

start_daemon --cgroup-root="$T/cgroot"
has_event BACKEND EXECGUARD_BACKEND=kernel || fail "kernel backend not chosen"

# exe_is PID PATH: PID runs PATH (its exec is done).
exe_is() { [ "$(readlink "/proc/$1/exe")" = "$2" ]; }
# B's process first, exec'd before A's starts: once A's is decided, the
# daemon has read B's exec event too.
run_in "$B" sleep 30
pb=$LAST_PID
wait_until 5 exe_is "$pb" /usr/bin/sleep || fail "pid $pb did not exec sleep"
run_in "$A" sleep 30
pa=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pa" EXECGUARD_EXE="'/usr/bin/sleep'" EXECGUARD_CGROUP="'/$A'" \
	EXECGUARD_POLICY="'test'" EXECGUARD_BACKEND=kernel ||
	fail "no decision logged for pid $pa"
[ "$(file_value "$A")" = max ] || fail "memory.exec_protect of /$A is $(file_value "$A"), expected max"
[ "$(file_value "$B")" = 0 ] || fail "memory.exec_protect of /$B was touched"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pb" && fail "pid $pb in /$B was protected"
pass "decided on $pa and wrote /$A"

# The rule also needs the exe: another program in A is not protected.
# (run_in's shell moves itself into A before it execs tail; seen there as
# /usr/bin/dash, which the rule names, it is protected until the exec.)
# A sleep started after tail has exec'd is decided after tail's exec event.
run_in "$A" tail -f /dev/null
ptail=$LAST_PID
wait_until 5 exe_is "$ptail" /usr/bin/tail || fail "pid $ptail did not exec tail"
run_in "$A" sleep 30
pm=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pm" EXECGUARD_EXE="'/usr/bin/sleep'" || fail "no decision for pid $pm after tail"
has_event PROCESS_PROTECTED EXECGUARD_PID="$ptail" EXECGUARD_EXE="'/usr/bin/tail'" && fail "tail (pid $ptail) matched a rule for sleep"
n=$(protected_now)
[ "$n" = 2 ] || fail "$n processes protected with tail beside two sleeps, want 2"
pass "a program the rule does not name is left alone"

kill "$pa" "$pm"
wait_event 5 CGROUP_RELEASED EXECGUARD_CGROUP="'/$A'" || fail "not released after exit"
[ "$(file_value "$A")" = 0 ] || fail "memory.exec_protect of /$A still $(file_value "$A")"
pass "released /$A when its process exited"

# One process that execs again and again (as a pyenv shim does): each
# exec restarts its later looks; they must end, and the daemon go idle.
# The pauses put each new exec in the middle of the previous one's looks.
run_in "$A" sh -c 'sleep 0.3; exec sh -c "sleep 0.5; exec sleep 30"'
pchain=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pchain" EXECGUARD_EXE="'/usr/bin/sleep'" || fail "exec chain not decided"
# Idle, not spinning: over 3 s (after the ~1.2 s of later looks), less
# than a quarter of one CPU. A daemon in a loop takes far more even on a
# loaded 2-core machine; a slow one that only handles the exec events of
# the machine's other processes stays far below.
sleep 1.5
busy=$(cpu_pct "$DAEMON_PID" 3)
[ "$busy" -lt 25 ] || fail "daemon busy after an exec chain: ${busy}% of a CPU over 3 s"
pass "exec chain decided, later looks ended, daemon idle"

n=$(count_events STATS)
stop_daemon || fail "daemon exited with $?"
[ "$(count_events STATS)" -gt "$n" ] || fail "no stats at exit"
pass "clean stop"
