#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# With the lock backend, execguardctl status and libs show the lock
# backend's own figures: bytes locked per unit and per file.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init

A=egtest-l-$$.service
unit_cgroup "$S" "$A"
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
# Calm thresholds: this test is not about pressure.
PressureWindowMSec=10000
PressureStallMSec=5000
[Rule lock]
MatchUnit=egtest-l-$$.service
Protect=yes
CONF
start_daemon
has_event BACKEND EXECGUARD_BACKEND=lock || skip "lock backend not usable here: $(last_event BACKEND)"

run_in "$S/$A" sleep 60
p=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" EXECGUARD_POLICY="'lock'" EXECGUARD_BACKEND=lock || fail "pid $p not protected"
wait_ctl "^$A +yes +1 .*text locked \(policy lock\)" status || fail "status: $(ctl status 2>&1)"
# What is locked comes with the looks after the exec: until it is there.
status_locked() {
	ctl --json status | python3 -c "
import json, sys
u = [x for x in json.load(sys.stdin)['units'] if x['unit'] == '$A'][0]
assert u['backend'] == 'lock' and u['locked_bytes'] > 0, u
assert u['text_resident_bytes'] >= u['locked_bytes'] and u['text_mapped_bytes'] >= u['text_resident_bytes'], u
"
}
libs_locked() {
	ctl --json libs | python3 -c "
import json, sys
l = {x['path']: x for x in json.load(sys.stdin)}
s = [v for k, v in l.items() if k.endswith('/sleep')]
assert s and s[0]['locked_bytes'] > 0 and s[0]['units'] == 1, l
"
}
wait_until 5 status_locked 2> /dev/null || status_locked || fail "status --json: locked bytes"
wait_until 5 libs_locked 2> /dev/null || libs_locked || fail "libs --json: $(ctl libs)"
pass "status and libs show the lock backend's locked bytes"
stop_daemon || fail "daemon exit status $?"
