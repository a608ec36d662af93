#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguardd on a private system bus: execguardctl status and explain
# agree with what it decided for a process in a matching unit cgroup,
# --json parses, non-root callers see what the bus policy allows, and the
# daemon keeps protecting when the bus goes away and comes back.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init

A=egtest-a-$$.service
B=egtest-b-$$.service
unit_cgroup "$S" "$A"
unit_cgroup "$S" "$B"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule web]
MatchUnit=egtest-a-$$.service
Protect=yes
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF

start_daemon --cgroup-root="$T/cgroot"
wait_event 5 BUS_NAME || fail "daemon did not take its bus name"
wait_event 5 UNIT_LOOKUP_OFF || fail "no word about the missing systemd"
[ "$(count_events UNIT_LOOKUP_OFF)" = 1 ] || fail "said more than once"

# B's process exec'd before A's starts: once A's is decided, the daemon
# has read B's exec event too.
run_in "$S/$B" sleep 60
pb=$LAST_PID
exec_done() { [ "$(readlink "/proc/$1/exe")" = /usr/bin/sleep ]; }
wait_until 5 exec_done "$pb" || fail "pid $pb did not exec sleep"
run_in "$S/$A" sleep 60
pa=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pa" EXECGUARD_UNIT="'$A'" EXECGUARD_POLICY="'web'" EXECGUARD_BACKEND=kernel || fail "pid $pa not protected"
[ "$(file_value "$S/$A")" = max ] || fail "memory.exec_protect of $A not set"

out=$(ctl status) || fail "execguardctl status failed: $out"
echo "$out"
echo "$out" | grep -Eq "^$A +yes +1 .*memory.exec_protect=max, covers - \(policy web\)" || fail "status row for $A wrong"
echo "$out" | grep -q "^$B " && fail "status lists the unprotected $B"
status_protects 1 0 || fail "status header wrong: $(ctl --json status 2>&1)"
pass "status shows $A protected by rule web"

out=$(ctl explain "$pa") || fail "explain failed: $out"
echo "$out"
echo "$out" | grep -q "unit: *$A" || fail "explain: unit"
echo "$out" | grep -q "decision: *protect, decided by web" || fail "explain: decision"
echo "$out" | grep -q "tracked as protected" || fail "explain: tracked"
echo "$out" | grep -q "\[Rule web\] at $T/etc/execguard.conf:3: Protect=yes" || fail "explain: rule file:line"
out=$(ctl explain "$pb") || fail "explain $pb failed"
echo "$out" | grep -q "decision: *do not protect, decided by default" || fail "explain $pb: $out"
pass "explain agrees with the decisions"

ctl --json status | json_ok || fail "status --json does not parse"
ctl --json libs | json_ok || fail "libs --json does not parse"
ctl --json explain "$pa" | json_ok || fail "explain --json does not parse"
ctl --json status | python3 -c "
import json, sys
s = json.load(sys.stdin)
u = [x for x in s['units'] if x['unit'] == '$A']
assert s['backend'] == 'kernel' and len(u) == 1, s
assert u[0]['protected'] and u[0]['processes'] == 1 and u[0]['text_mapped_bytes'] > 0, u
" || fail "status --json content"
ctl --json explain "$pa" | python3 -c "
import json, sys
e = json.load(sys.stdin)
assert e['protect'] and e['tracked'] and e['unit'] == '$A' and e['rules'][0]['line'] == 3, e
" || fail "explain --json content"
ctl libs | grep -q "/sleep$" || fail "libs does not list sleep"
pass "--json parses and says the same"

ctl explain 999999999 > /dev/null 2>&1
[ $? = 1 ] || fail "explain of no process: want exit 1"
ctl explain nope > /dev/null 2>&1
[ $? = 2 ] || fail "explain nope: want exit 2"
ctl frobnicate > /dev/null 2>&1
[ $? = 2 ] || fail "unknown command: want exit 2"
pass "exit codes"

# On the bus but not answering (stopped): said so, not "not running".
ctl --timeout=0 status > "$T/t0.out" 2>&1
[ $? = 2 ] && grep -q "timeout=0: want seconds" "$T/t0.out" || fail "--timeout=0: $(cat "$T/t0.out")"
kill -STOP "$DAEMON_PID"
ctl --timeout=0.5 status > "$T/stopped.out" 2>&1
rc=$?
kill -CONT "$DAEMON_PID"
[ "$rc" = 3 ] || fail "status of a stopped daemon: exit $rc, want 3: $(cat "$T/stopped.out")"
grep -q "is on the system bus but did not answer GetAll within 0.5 s" "$T/stopped.out" ||
	fail "stopped daemon: $(cat "$T/stopped.out")"
wait_ctl "backend kernel" status || fail "no status after SIGCONT: $(ctl status 2>&1)"
pass "a daemon that does not answer in time is told apart from one not running"

if id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null; then
	asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$EXECGUARDCTL" "$@"; }
	asnobody status > /dev/null || fail "nobody cannot read status"
	asnobody reload > "$T/nobody.out" 2>&1 && fail "nobody could reload"
	grep -qi "denied\|not permitted" "$T/nobody.out" || fail "nobody reload: $(cat "$T/nobody.out")"
	asnobody explain "$pa" > /dev/null 2>&1 && fail "nobody could explain root's process"
	# One rule for every method that names what processes run: the lists
	# give nobody none of root's units, executables or libraries.
	[ "$(busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call org.execguard.Manager1 /org/execguard/Manager1 \
		org.execguard.Manager1 ListLibraries | awk '{ print $2 }')" -gt 0 ] || fail "root sees no library"
	for m in ListUnits ListUnitsEx ListLibraries; do
		n=$(setpriv --reuid=nobody --regid=nogroup --clear-groups busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" \
			call org.execguard.Manager1 /org/execguard/Manager1 org.execguard.Manager1 "$m" | awk '{ print $2 }')
		[ "$n" = 0 ] || fail "nobody's $m has $n rows of root's processes"
	done
	pass "non-root: status yes (its own processes only), reload and explain of others' processes no"
fi

stop_bus
wait_event 5 BUS_LOST || fail "bus loss not noticed"
ctl status > /dev/null 2>&1
[ $? = 3 ] || fail "status without a bus: want exit 3"
run_in "$S/$A" sleep 60
pa2=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pa2" || fail "no protection without the bus"
kill -0 "$DAEMON_PID" || fail "daemon died with the bus"
pass "protection goes on without the bus"

start_bus
wait_event 15 BUS_BACK || fail "no reconnect"
wait_until 15 status_protects 2 0 || fail "status after reconnect: $(ctl --json status 2>&1)"
pass "back on the bus"

stop_daemon || fail "daemon exit status $?"
ctl --timeout=2 status > "$T/gone.out" 2>&1
[ $? = 3 ] || fail "status without the daemon: want exit 3"
grep -q "execguardd is not running" "$T/gone.out" || fail "status without the daemon: $(cat "$T/gone.out")"
pass "clean stop; execguardctl says the daemon is not running"

# What each way of not changing anything says, from the backend's report.
# unit_state [ARGS...]: restart the daemon with ARGS, one process of A,
# and print its JSON row's "protected state".
unit_state() {
	start_daemon --cgroup-root="$T/cgroot" "$@"
	wait_event 5 BUS_NAME || fail "daemon did not take its bus name"
	run_in "$S/$A" sleep 60
	local p=$LAST_PID
	wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p not decided ($*)"
	ctl --json status | python3 -c "
import json, sys
u = [x for x in json.load(sys.stdin)['units'] if x['unit'] == '$A']
print(u[0]['protected'], u[0]['state'])"
	kill "$p"
	stop_daemon || fail "daemon exit status $?"
}
out=$(unit_state --dry-run)
[ "$out" = "False dry run: would protect (policy web)" ] || fail "dry run: $out"
sed -i 's/^\[Rule web\]/[Daemon]\nBackend=none\n&/' "$T/etc/execguard.conf"
out=$(unit_state)
[ "$out" = "False observed only, backend none (policy web)" ] || fail "backend none: $out"
pass "dry run and backend none report what they would do, not protection"
