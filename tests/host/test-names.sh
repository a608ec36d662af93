#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Odd cgroup and unit names, a deep cgroup tree, and a reused PID:
# - cgroups named with spaces, non-UTF-8 bytes, systemd's \x2d escapes,
#   an @ instance and 255 bytes are each matched and written as named;
# - a tree 60 levels deep gets its whole ancestor chain set and cleared;
# - a protected process exits and its PID is taken by a new process
#   while the daemon is stopped: in an unprotected cgroup it is left
#   alone, in a protected one it is tracked for itself and released when
#   it, not its predecessor, exits.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

BASE=execguard-names-$$.slice
new_cgroup "$BASE"
fake_cgroup "$BASE"
long=$(printf 'l%.0s' $(seq 247)).service
names=("with spaces.service" $'bytes\xff\xfe.service' 'app\x2dweb.service' "tmpl@1.service" "$long")
for n in "${names[@]}"; do
	mkdir "$CG2/$BASE/$n" || fail "cannot create cgroup '$n'"
	fake_cgroup "$BASE/$n"
done
DEEP=$BASE
for i in $(seq 60); do
	DEEP=$DEEP/d$i
	mkdir "$CG2/$DEEP" || fail "cannot create level $i"
	fake_cgroup "$DEEP"
done
OFF=execguard-names-off-$$
new_cgroup "$OFF"
fake_cgroup "$OFF"
# MatchExe=: the process path (connector, pins, later looks) is what this
# tests; without it the kernel backend decides cgroups as a whole.
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule odd]
MatchCgroup=/$BASE/*
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
[Rule esc]
MatchUnit=app\x2dweb.service
LockBudget=1M
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
value_is() { [ "$(file_value "$1")" = "$2" ]; }
# chain_is VALUE: every level of the deep tree holds VALUE
chain_is() {
	local c=$BASE i
	for i in $(seq 60); do
		c=$c/d$i
		value_is "$c" "$1" || return 1
	done
}

for n in "${names[@]}"; do
	run_in "$BASE/$n" sleep 60
	p=$LAST_PID
	wait_until 5 value_is "$BASE/$n" max
	[ "$(file_value "$BASE/$n")" = max ] || fail "cgroup '$n' not protected"
	kill "$p"
	wait_until 5 value_is "$BASE/$n" 0
	[ "$(file_value "$BASE/$n")" = 0 ] || fail "cgroup '$n' not cleared after its process exited"
done
pass "cgroups named with spaces, non-UTF-8, \\x2d, @ and ${#long} bytes: set and cleared"
stats > /dev/null
# The escaped unit name matched its own rule (unit from the path, glob
# with a literal backslash): explain is not on the host bus, so check
# the decision's source in the log.
has_event PROCESS_PROTECTED EXECGUARD_EXE="'/usr/bin/sleep'" EXECGUARD_CGROUP="'/$BASE/app\x2dweb.service'" \
	EXECGUARD_UNIT="'app\x2dweb.service'" ||
	fail "the unit app\\x2dweb.service was not taken from its path: $(grep -a 'x2d' "$T/daemon.log" | head -2)"
pass "unit app\\x2dweb.service from its cgroup path"

run_in "$DEEP" sleep 60
p=$LAST_PID
wait_until 5 chain_is max
c=$BASE
for i in $(seq 60); do
	c=$c/d$i
	[ "$(file_value "$c")" = max ] || fail "level $i of the deep tree not set"
done
kill "$p"
wait_until 5 chain_is 0
c=$BASE
for i in $(seq 60); do
	c=$c/d$i
	[ "$(file_value "$c")" = 0 ] || fail "level $i of the deep tree not cleared"
done
pass "a tree 60 levels deep: the whole chain set and cleared"

# A reused PID. ns_last_pid makes the next fork take the PID we want;
# the daemon is stopped so that the old process's exit and the new exec
# wait for it together (which it handles first is up to epoll; examine()
# drops a tracked entry whose pidfd has exited either way).
[ -w /proc/sys/kernel/ns_last_pid ] || skip "cannot choose PIDs (ns_last_pid)"
reuse_pid() { # CGROUP: start sleep in CGROUP under the PID $want; 0 if it got it
	local i
	# Another process can fork between the write and ours (a suite
	# running beside this one): try again, many times; a miss costs a fork.
	for ((i = 0; i < 200; i++)); do
		echo $((want - 1)) > /proc/sys/kernel/ns_last_pid
		sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep 60' "$CG2/$1" &
		LAST_PID=$!
		KIDS+=("$LAST_PID")
		[ "$LAST_PID" = "$want" ] && return 0
		kill "$LAST_PID"
	done
	return 1
}
exe_is() { [ "$(readlink "/proc/$1/exe")" = "$2" ]; }
# wait_after: a process started, protected and released after all that
# came before: its decision proves that the daemon has read every exec
# event before its own (the reused PID's exec also drops the old
# process's entry); its release leaves the count as it was.
wait_after() {
	local cg="$BASE/${names[0]}" m
	run_in "$cg" sleep 60
	m=$LAST_PID
	wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$m" || fail "no decision for pid $m"
	kill "$m"
	wait_until 5 value_is "$cg" 0 || fail "/$cg not cleared after pid $m exited"
}
for where in off on; do
	run_in "$BASE/tmpl@1.service" sleep 60
	want=$LAST_PID
	wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$want" || fail "pid $want not protected"
	[ "$(protected_now)" = 1 ] || fail "expected 1 protected process"
	kill -STOP "$DAEMON_PID"
	# An exec first, so that the connector is ready before the old
	# pidfd is: the new exec under the old PID comes in the same drain.
	/bin/true
	kill "$want"
	wait "$want" 2> /dev/null
	if [ $where = off ]; then cg=$OFF; else cg="$BASE/tmpl@1.service"; fi
	reuse_pid "$cg" || { kill -CONT "$DAEMON_PID"; skip "could not get PID $want again (busy machine)"; }
	# Its exec done before the daemon goes on: in the same drain.
	wait_until 5 exe_is "$want" /usr/bin/sleep
	kill -CONT "$DAEMON_PID"
	wait_after
	if [ $where = off ]; then
		[ "$(protected_now)" = 0 ] || fail "the reused PID $want in /$OFF is tracked"
		[ "$(file_value "$OFF")" = 0 ] || fail "the reused PID $want got /$OFF protected"
		[ "$(file_value "$BASE/tmpl@1.service")" = 0 ] || fail "the old process's cgroup is still protected"
		pass "PID $want reused in an unprotected cgroup: left alone, the old one released"
	else
		[ "$(protected_now)" = 1 ] || fail "the new process under reused PID $want is not tracked"
		[ "$(file_value "$cg")" = max ] || fail "the new process's cgroup lost its protection"
		kill "$want"
		wait "$want" 2> /dev/null
		wait_until 5 value_is "$cg" 0
		[ "$(file_value "$cg")" = 0 ] || fail "not released when the new process exited"
		pass "PID $want reused in a protected cgroup: tracked for itself, released at its own exit"
	fi
	kill "$LAST_PID" 2> /dev/null
done
stop_daemon || fail "daemon exit status $?"
