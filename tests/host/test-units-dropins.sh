#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A unit's own [X-ExecGuard] drop-in, found through FragmentPath and
# DropInPaths (a stand-in for systemd on a private bus): it wins over the
# policy, later drop-ins win, a daemon-reload (Reloading signal) makes the
# decision follow a changed drop-in, a broken one is reported file:line.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init fake-systemd

U=egtest-u-$$.service
V=egtest-v-$$.service
unit_cgroup "$S" "$U"
unit_cgroup "$S" "$V"
write_conf <<CONF
[Daemon]
Backend=kernel
# The policy says no to V; V's own drop-in says yes and wins.
[Rule not-v]
MatchUnit=egtest-v-$$.service
Protect=no
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF
mkdir -p "$T/units/$U.d" "$T/units/$V.d"
printf '[Unit]\nDescription=test\n[Service]\nExecStart=/bin/sleep 60\n' > "$T/units/$U"
printf '[X-ExecGuard]\nProtect=yes\n' > "$T/units/$U.d/10-execguard.conf"
printf '[Service]\nNice=5\n\n[X-ExecGuard]\nProtect=yes\nLockBudget=16M\n' > "$T/units/$V.d/execguard.conf"
chmod -R go-w "$T/units"

start_daemon --cgroup-root="$T/cgroot"
wait_event 5 UNIT_LOOKUP || fail "daemon did not see the systemd stand-in"

run_in "$S/$U" sleep 60
pu=$LAST_PID
run_in "$S/$V" sleep 60
pv=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pu" EXECGUARD_POLICY="'$T/units/$U.d/10-execguard.conf:2'" || fail "$U not protected by its drop-in"
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pv" EXECGUARD_POLICY="'$T/units/$V.d/execguard.conf:5'" || fail "$V's drop-in did not win over the policy"
out=$(ctl explain "$pv")
echo "$out"
echo "$out" | grep -q "unit section:  \[X-ExecGuard\] Protect=yes LockBudget=16777216 at $T/units/$V.d/execguard.conf:5" ||
	fail "explain does not show the unit section"
echo "$out" | grep -q "\[Rule not-v\]" || fail "explain does not list the overridden rule"
pass "drop-ins protect, and win over the policy"

# execguardctl reload asks systemd about the units again from inside its
# D-Bus call: the lookups nest in the method call, which must still
# return. Until systemd answers (later on a loaded machine) explain says
# "not known yet" and shows the policy's decision without the unit's.
decided_by_dropin() {
	out=$(ctl explain "$pv")
	echo "$out" | grep -q "decision: *protect, decided by $T/units/$V.d/execguard.conf:5"
}
wait_until 10 decided_by_dropin || fail "after reload: $out"
has_event PROCESS_RELEASED EXECGUARD_PID="$pv" && fail "reload dropped $pv"
pass "reload over D-Bus re-reads the unit sections"

# A later drop-in wins; systemd's reload makes the daemon read again.
printf '[X-ExecGuard]\nProtect=no\n' > "$T/units/$U.d/20-off.conf"
chmod go-w "$T/units/$U.d/20-off.conf"
kill -HUP "$FAKE_PID"
# (the manager says "no rule matches" here: its fast path skips policy_decide)
wait_event 5 PROCESS_RELEASED EXECGUARD_PID="$pu" || fail "later drop-in did not win after daemon-reload"
ctl explain "$pu" | grep -q "do not protect, decided by $T/units/$U.d/20-off.conf:2" || fail "explain after daemon-reload"
ctl status | grep -Eq "^$U +no +0 .*Protect=no at $T/units/$U.d/20-off.conf:2" || fail "status: $(ctl status)"
pass "daemon-reload: a later drop-in turns protection off"

# A broken drop-in: logged with file:line, ignored, the others count.
printf '[X-ExecGuard]\nProtect=maybe\n' > "$T/units/$U.d/30-typo.conf"
chmod go-w "$T/units/$U.d/30-typo.conf"
kill -HUP "$FAKE_PID"
wait_event 5 UNIT_SECTION_INVALID EXECGUARD_UNIT="'$U'" || fail "broken drop-in not reported"
# The error as the user reads it: FILE:LINE (execguard.conf(5)).
wait_log "$T/units/$U.d/30-typo.conf:2: invalid Protect=maybe; expected yes, no or auto \(unit $U; this file is ignored\)" 5 ||
	fail "broken drop-in not reported with file:line"
ctl check-config -c "$T/etc/execguard.conf" "$T/units/$U.d/30-typo.conf" 2> "$T/err"
[ $? = 1 ] || fail "check-config of a broken drop-in: want exit 1"
grep -q "30-typo.conf:2: invalid Protect=maybe" "$T/err" || fail "check-config: $(cat "$T/err")"
ctl check-config -c "$T/etc/execguard.conf" "$T/units/$V.d/execguard.conf" > "$T/out" || fail "check-config of a good drop-in failed"
grep -q "1 unit file with \[X-ExecGuard\] OK" "$T/out" || fail "check-config: $(cat "$T/out")"
pass "broken drop-in reported file:line, by the daemon and by check-config"

# Writable by others: refused like a policy file.
rm "$T/units/$U.d/20-off.conf" "$T/units/$U.d/30-typo.conf"
chmod 666 "$T/units/$U.d/10-execguard.conf"
n=$(count_events UNIT_SECTION_INVALID EXECGUARD_UNIT="'$U'")
kill -HUP "$FAKE_PID"
wait_until 5 events_newer "$n" UNIT_SECTION_INVALID EXECGUARD_UNIT="'$U'" || fail "a world-writable drop-in was read"
# Why, as the user reads it.
last_event UNIT_SECTION_INVALID EXECGUARD_UNIT="'$U'" | grep -q "10-execguard.conf: refused: writable by group or others" ||
	fail "refused without saying why: $(last_event UNIT_SECTION_INVALID)"
pass "a drop-in writable by others is refused"

# A unit started after the daemon is protected from its first process on.
chmod 644 "$T/units/$U.d/10-execguard.conf"
n=$(count_events PROCESS_PROTECTED EXECGUARD_PID="$pu" EXECGUARD_POLICY="'$T/units/$U.d/10-execguard.conf:2'")
kill -HUP "$FAKE_PID"
wait_until 5 events_newer "$n" PROCESS_PROTECTED EXECGUARD_PID="$pu" EXECGUARD_POLICY="'$T/units/$U.d/10-execguard.conf:2'" || fail "$U not protected again"
W=egtest-w-$$.service
unit_cgroup "$S" "$W"
mkdir -p "$T/units/$W.d"
printf '[X-ExecGuard]\nProtect=yes\n' > "$T/units/$W.d/execguard.conf"
chmod -R go-w "$T/units/$W.d"
kill -HUP "$FAKE_PID"
run_in "$S/$W" sleep 60
pw=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pw" EXECGUARD_POLICY="'$T/units/$W.d/execguard.conf:2'" || fail "new unit not protected"
pass "a new unit is protected from its first process"
stop_daemon || fail "daemon exit status $?"
