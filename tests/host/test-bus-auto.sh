#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguardctl status and explain (text and --json) for Protect=auto:
# a watched unit that suffers shows "auto: protected since ..., N text
# faults/s under PSI some X%", one that does not "auto: watched, not
# protected (...)". The kernel backend on a fake tree; the test plays
# the kernel's counters (memory.stat pgmajfault_exec, memory.pressure).
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init

HOT=egauto-hot-$$.service
COLD=egauto-cold-$$.service
for u in "$HOT" "$COLD"; do
	unit_cgroup "$S" "$u"
	echo "pgmajfault_exec 0" > "$T/cgroot/$S/$u/memory.stat"
	echo "some avg10=40.00 avg60=0.00 avg300=0.00 total=0" > "$T/cgroot/$S/$u/memory.pressure"
done
write_conf <<CONF
[Daemon]
Backend=kernel
AutoFaultRate=20
AutoPressureSome=10
AutoWindowSec=4
AutoIntervalSec=1
[Rule everything]
MatchCgroup=/$S/*
Protect=auto
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF

run_in "$S/$HOT" sleep 300
phot=$LAST_PID
run_in "$S/$COLD" sleep 300
pcold=$LAST_PID
wait_until 5 sh -c "grep -q . '$CG2/$S/$HOT/cgroup.procs' && grep -q . '$CG2/$S/$COLD/cgroup.procs'" ||
	fail "processes did not move into their cgroups"
for u in "$HOT" "$COLD"; do cat "$CG2/$S/$u/cgroup.procs" > "$T/cgroot/$S/$u/cgroup.procs"; done
(
	n=0
	while :; do
		n=$((n + 200))
		echo "pgmajfault_exec $n" > "$T/cgroot/$S/$HOT/memory.stat.new"
		mv "$T/cgroot/$S/$HOT/memory.stat.new" "$T/cgroot/$S/$HOT/memory.stat"
		sleep 0.5
	done
) &
KIDS+=($!)

start_daemon --cgroup-root="$T/cgroot"
wait_event 5 BUS_NAME || fail "daemon did not take its bus name"
wait_event 30 AUTO_PROTECTED EXECGUARD_UNIT="'$HOT'" || fail "$HOT not auto-protected"
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$phot" || fail "pid $phot not protected"

out=$(ctl status) || fail "execguardctl status failed: $out"
echo "$out"
echo "$out" | grep -Eq "^$HOT +yes .*auto: protected since [0-9-]+ [0-9:]+ UTC, [0-9]+ text faults/s under PSI some 40.0% \(policy everything\)" ||
	fail "status row for $HOT wrong"
echo "$out" | grep -Eq "^$COLD +no .*auto: watched, not protected \(0 text faults/s, PSI some 40.0%\)" ||
	fail "status row for $COLD wrong"
pass "status shows the auto-protected and the watched unit"

ctl --json status | python3 -c "
import json, sys
units = {u['unit']: u for u in json.load(sys.stdin)['units']}
hot, cold = units['$HOT'], units['$COLD']
assert hot['protected'] is True, hot
assert hot['auto'].startswith('auto: protected since '), hot
assert 'text faults/s under PSI some 40.0%' in hot['auto'], hot
assert cold['protected'] is False, cold
assert cold['auto'].startswith('auto: watched, not protected ('), cold
# Why: Protect=auto, for the protected and the watched unit alike; the
# text faults it judged by (the hot one's counter grows by 200 a step).
assert hot['reason'] == 'auto' and hot['reason_source'] == 'everything', hot
assert hot['text_fault_source'] == 'kernel' and hot['text_faults'] >= 200, hot
assert cold['reason'] == 'auto', cold
assert cold['text_fault_source'] == 'kernel' and cold['text_faults'] == 0, cold
" || fail "status --json wrong"
pass "status --json carries the auto state, the reason and the text faults"

out=$(ctl explain "$phot") || fail "explain failed: $out"
echo "$out"
echo "$out" | grep -q "decision: *protect, decided by everything" || fail "explain: decision"
echo "$out" | grep -Eq "Protect=auto: +auto: protected since .* text faults/s under PSI some 40.0%" || fail "explain: auto state"
out=$(ctl explain "$pcold") || fail "explain failed: $out"
echo "$out" | grep -q "decision: *do not protect, decided by everything" || fail "explain $pcold: decision"
echo "$out" | grep -Eq "Protect=auto: +auto: watched, not protected" || fail "explain $pcold: auto state"
ctl --json explain "$phot" | python3 -c "
import json, sys
e = json.load(sys.stdin)
assert e['protect'] is True and e['auto'].startswith('auto: protected since '), e
" || fail "explain --json wrong"
pass "explain shows the auto state"
stop_daemon || fail "daemon exited with $?"
