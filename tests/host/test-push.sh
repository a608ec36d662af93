#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cgroups pushed, processes not chased: the kernel backend (on a fake
# cgroup tree) with unit rules only. The daemon does not listen to the
# proc connector: 1,000 execs in an unrelated cgroup leave its exec-event
# counter at 0. A unit's cgroup is protected when it appears or when
# systemd (a stand-in on a private bus) says the unit started, a cgroup
# made later inside a protected one is protected too, and each is
# released when cgroup.events says populated 0 or the unit stops.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init fake-systemd
command -v busctl > /dev/null || skip "busctl is not installed"

A=egtest-pa-$$.service
B=egtest-pb-$$.service
O=execguard-push-other-$$

# push_cgroup REL POPULATED: a cgroup in the fake tree as cgroupfs makes
# one, its files there when it appears (made aside, renamed into place).
push_cgroup() {
	local st=$T/staging
	mkdir "$st" || fail "cannot make $st"
	echo 0 > "$st/memory.exec_protect"
	printf 'populated %s\nfrozen 0\n' "$2" > "$st/cgroup.events"
	mv "$st" "$T/cgroot/$1" || fail "cannot make $T/cgroot/$1"
}
populated() { printf 'populated %s\nfrozen 0\n' "$2" > "$T/cgroot/$1/cgroup.events"; }
value_is() { [ "$(file_value "$1")" = "$2" ]; }
unit_state() { # UNIT STATE CGROUP: what systemd's PropertiesChanged says
	busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
		org.freedesktop.systemd1.Manager FakeUnitState sss "$1" "$2" "$3" || fail "FakeUnitState $*"
}

mkdir -p "$T/cgroot"
push_cgroup "$S" 1
push_cgroup "$S/$A" 1
push_cgroup "$S/$B" 0
# C: no rule names it; its own [X-ExecGuard] drop-in protects it.
C=egtest-pc-$$.service
push_cgroup "$S/$C" 1
mkdir -p "$T/units/$C.d"
printf '[X-ExecGuard]\nProtect=yes\n' > "$T/units/$C.d/execguard.conf"
chmod -R go-w "$T/units"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule units]
MatchUnit=$A $B
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
wait_event 5 UNIT_LOOKUP || fail "daemon did not see the systemd stand-in"
grep -q "not listening to the proc connector" "$T/daemon.log" || fail "the proc connector was opened"
wait_until 5 value_is "$S/$A" max || fail "/$S/$A not protected at the start"
value_is "$S" max || fail "/$S not set"
value_is "$S/$B" 0 || fail "/$S/$B protected while empty"
has_event PUSH_PROTECTED EXECGUARD_UNIT="'$A'" EXECGUARD_CGROUP="'/$S/$A'" EXECGUARD_BACKEND=kernel ||
	fail "no PUSH_PROTECTED for $A"
pass "unit rules, kernel backend: no proc connector; $A's cgroup protected as a whole"

# A unit's own section decides its cgroup too (asked of systemd).
wait_event 10 PUSH_PROTECTED EXECGUARD_CGROUP="'/$S/$C'" EXECGUARD_POLICY="'$T/units/$C.d/execguard.conf:2'" ||
	fail "$C not protected by its drop-in"
printf '[X-ExecGuard]\nProtect=no\n' > "$T/units/$C.d/execguard.conf"
kill -HUP "$FAKE_PID" # daemon-reload
wait_until 10 value_is "$S/$C" 0 || fail "$C still protected after its drop-in said no and systemd reloaded"
pass "a unit's drop-in protects its cgroup; after a daemon-reload it follows"

# 1,000 execs in a cgroup no rule names: the daemon hears of none.
new_cgroup "$O"
run_in "$O" sh -c 'i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i + 1)); done'
wait "$LAST_PID" || fail "the exec loop failed"
n=$(stats | counter "exec events")
[ "$n" = 0 ] || fail "exec events $n after 1,000 execs, want 0"
pass "1,000 execs elsewhere: exec events 0"

# systemd says B started: its cgroup (empty at the start) is protected.
unit_state "$B" active "/$S/$B"
wait_event 5 PUSH_PROTECTED EXECGUARD_UNIT="'$B'" EXECGUARD_CGROUP="'/$S/$B'" || fail "$B's start not followed"
value_is "$S/$B" max || fail "/$S/$B not set after its unit started"
pass "a unit systemd starts is protected"

# A cgroup made later inside a protected unit: protected too (the kernel
# wants every level set), and the time from its creation is reported.
push_cgroup "$S/$A/worker" 1
wait_until 5 value_is "$S/$A/worker" max || fail "/$S/$A/worker not protected"
has_event PUSH_PROTECTED EXECGUARD_CGROUP="'/$S/$A/worker'" EXECGUARD_LATENCY_USEC~"+([0-9])" ||
	fail "no latency for /$S/$A/worker"
pass "a sub-cgroup made later is protected"

# Its processes gone: released; the unit's own stays.
populated "$S/$A/worker" 0
wait_until 5 value_is "$S/$A/worker" 0 || fail "/$S/$A/worker not released at populated 0"
value_is "$S/$A" max || fail "/$S/$A released with its sub-cgroup"
has_event PUSH_RELEASED EXECGUARD_CGROUP="'/$S/$A/worker'" || fail "no PUSH_RELEASED"
# Populated again: protected again.
populated "$S/$A/worker" 1
wait_until 5 value_is "$S/$A/worker" max || fail "/$S/$A/worker not protected again"
pass "populated 0 releases, populated 1 protects again"

# systemd says B stopped: released, whatever cgroup.events says.
populated "$S/$B" 1
unit_state "$B" inactive "/$S/$B"
wait_until 5 value_is "$S/$B" 0 || fail "/$S/$B not released when its unit stopped"
pass "a unit systemd stops is released"

# A process of a unit protected as a whole: explain says it is protected
# now (its cgroup is); nothing followed it.
mkdir -p "$CG2/$S/$A" || fail "cannot create cgroup $CG2/$S/$A"
CGROUPS+=("$CG2/$S/$A" "$CG2/$S")
run_in "$S/$A" sleep 60
pa=$LAST_PID
wait_until 5 sh -c "grep -qx $pa '$CG2/$S/$A/cgroup.procs'" || fail "pid $pa did not join its cgroup"
ctl --json explain "$pa" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["protect"] and d["tracked"], d' || fail "explain of pid $pa: $(ctl explain "$pa" 2>&1)"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pa" && fail "pid $pa followed as a process"
pass "explain: a process of a cgroup protected whole is protected now"

# Status lists the units protected whole.
ctl_says "$A" status || fail "status does not list $A: $(ctl status 2>&1)"
s=$(stats)
[ "$(counter "cgroups protected whole" <<<"$s")" = 2 ] || fail "stats: $s"
ctl --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["cgroups_protected"] == 2, d' || fail "status --json: cgroups_protected is not 2: $(ctl --json status 2>&1)"
pass "status and stats show them"

stop_daemon || fail "daemon exit status $?"
value_is "$S/$A" 0 && value_is "$S/$A/worker" 0 && value_is "$S" 0 || fail "a clean stop left files set"
pass "clean stop clears them"
