#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# No path from an unprivileged user to protection: the daemon acts only
# on what root's policy selects. Here a user with a delegated cgroup
# subtree (as systemd gives user@.service) names cgroups after protected
# units and slices and runs the protected program in them: nothing is
# protected, while the same program in root's cgroup is. (The other
# ways in are refused elsewhere: policy and drop-in files that are not
# root's or that others can write, test-config and test-units-dropins;
# D-Bus reload and explain for non-root, test-bus-status.)
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null || skip "needs user nobody and setpriv"

S=execguard-sys-$$.slice
U=execguard-user-$$.slice
D=$U/user@65534.service
new_cgroup "$S"
new_cgroup "$S/real.service"
new_cgroup "$U"
new_cgroup "$D"
# Delegation as systemd does it: the subtree and its control files are the user's.
chown nobody:nogroup "$CG2/$D" "$CG2/$D/cgroup.procs" "$CG2/$D/cgroup.subtree_control" "$CG2/$D/cgroup.threads"
for c in "$S" "$S/real.service" "$U" "$D" "$D/victim.service" "$D/$S/fake.service"; do fake_cgroup "$c"; done
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule victim]
MatchUnit=victim.service
Protect=yes
[Rule sys]
MatchCgroup=/$S/*
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"

# Root's cgroup: the rule works.
run_in "$S/real.service" sleep 60
pr=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pr" EXECGUARD_EXE="'/usr/bin/sleep'" EXECGUARD_CGROUP="'/$S/real.service'" || fail "the control case was not protected"
pass "control: sleep in root's /$S/real.service is protected"

# As nobody, in its own subtree: cgroups named like a protected unit and
# like the protected slice.
as_nobody_in() {
	local sub="$1"
	shift
	sh -c 'echo $$ > "$0/cgroup.procs" && exec setpriv --reuid=nobody --regid=nogroup --clear-groups \
		sh -c "mkdir -p \"\$0/\$1\" && echo \$\$ > \"\$0/\$1/cgroup.procs\" && shift && exec \"\$@\"" "$0" "$@"' \
		"$CG2/$D" "$sub" "$@" &
	LAST_PID=$!
	KIDS+=("$LAST_PID")
}
as_nobody_in victim.service sleep 60
pv=$LAST_PID
as_nobody_in "$S/fake.service" sleep 60
pf=$LAST_PID
# in_place PID CGROUP: PID has moved to CGROUP and exec'd sleep there.
in_place() {
	grep -q "^$1$" "$CG2/$2/cgroup.procs" 2> /dev/null && [ "$(readlink "/proc/$1/exe")" = /usr/bin/sleep ]
}
wait_until 5 in_place "$pv" "$D/victim.service"
wait_until 5 in_place "$pf" "$D/$S/fake.service"
grep -q "^$pv$" "$CG2/$D/victim.service/cgroup.procs" || fail "nobody could not use its delegated subtree"
[ "$(stat -c %U "$CG2/$D/victim.service")" = nobody ] || fail "the sub-cgroup is not nobody's"
# The daemon has seen their execs once it has decided on a process
# started after them.
run_in "$S/real.service" sleep 60
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$LAST_PID" || fail "no decision for pid $LAST_PID after nobody's"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pv" && fail "nobody's cgroup named victim.service was protected"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pf" && fail "nobody's cgroup /$D/$S/fake.service matched MatchCgroup=/$S/*"
[ "$(file_value "$D/victim.service")" = 0 ] || fail "memory.exec_protect written in nobody's victim.service"
[ "$(file_value "$D/$S/fake.service")" = 0 ] || fail "memory.exec_protect written in nobody's fake slice"
[ "$(file_value "$D")" = 0 ] || fail "memory.exec_protect written on the delegated user@ cgroup"
pass "nobody's cgroups named victim.service and $S/fake.service: not protected, nothing written"

stop_daemon || fail "daemon exit status $?"
