#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguardctl reload with a broken drop-in prints the file:line errors
# and exits 1 while the old policy stays in force; a good one is taken.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init

A=egtest-r-$$.service
unit_cgroup "$S" "$A"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule old]
MatchUnit=egtest-r-$$.service
Protect=yes
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF
start_daemon --cgroup-root="$T/cgroot"
wait_event 5 BUS_NAME || fail "not on the bus"

printf '[Rule new]\nMatchUnit=%s\nProtect=never\nLockBudget=lots\n' "$A" > "$T/etc/execguard.d/50-bad.conf"
chmod 644 "$T/etc/execguard.d/50-bad.conf"
ctl reload > "$T/out" 2> "$T/err"
rc=$?
cat "$T/err"
[ $rc = 1 ] || fail "reload of a broken policy exited $rc, want 1"
grep -q "^$T/etc/execguard.d/50-bad.conf:3: invalid Protect=never" "$T/err" || fail "no file:line for Protect="
grep -q "^$T/etc/execguard.d/50-bad.conf:4: invalid LockBudget=lots" "$T/err" || fail "no file:line for LockBudget="
grep -q "the previous policy stays in force" "$T/err" || fail "does not say the old policy stays"
[ -s "$T/out" ] && fail "reload printed to stdout on failure"

ctl check-config -c "$T/etc/execguard.conf" > /dev/null 2> "$T/err2"
[ $? = 1 ] || fail "check-config of the broken policy: want exit 1"
grep -q "50-bad.conf:3: invalid Protect=never" "$T/err2" || fail "check-config: no file:line"

run_in "$S/$A" sleep 60
p=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" EXECGUARD_POLICY="'old'" || fail "old policy not in force after a rejected reload"
ctl explain "$p" | grep -q "decided by old" || fail "explain does not show the old rule"
pass "broken reload rejected with file:line, old policy kept"

printf '[Rule new]\nMatchUnit=%s\nProtect=no\n' "$A" > "$T/etc/execguard.d/50-bad.conf"
out=$(ctl reload) || fail "good reload failed"
[ "$out" = "policy reloaded: 3 rules from 2 files" ] || fail "reload said: $out"
wait_event 5 PROCESS_RELEASED EXECGUARD_PID="$p" EXECGUARD_POLICY="'new'" || fail "new policy not applied"
ctl explain "$p" | grep -q "do not protect, decided by new" || fail "explain after reload"
ctl --json reload | json_ok || fail "reload --json does not parse"
pass "good reload applied"
stop_daemon || fail "daemon exit status $?"
