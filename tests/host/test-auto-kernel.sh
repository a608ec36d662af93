#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Protect=auto with the kernel backend on a fake cgroup tree, where the
# test plays the patched kernel: it raises the units' memory.stat
# pgmajfault_exec and writes their memory.pressure. A unit that takes
# text faults under pressure is protected (memory.exec_protect written,
# MID_AUTO_PROTECTED with its evidence); one that does not is not; with
# more suffering units than the budget holds only the most suffering
# fit, and the explicitly protected unit is never displaced; a restart
# re-derives the state (execguard.conf(5), PROTECT=AUTO). The kernel
# backend and no MatchExe= rule: the units' cgroups are decided as a
# whole. Asserts on the structured log lines and the fake files, never on
# how fast.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

S=execguard-test-$$.slice
HI=auto-hi-$$.service     # suffers most
MID=auto-mid-$$.service   # suffers, less
CALM=auto-calm-$$.service # no faults
DB=db-$$.service          # Protect=yes
new_cgroup "$S"
for u in "$HI" "$MID" "$CALM" "$DB"; do
	new_cgroup "$S/$u"
	fake_cgroup "$S/$u"
	echo "pgmajfault_exec 0" > "$T/cgroot/$S/$u/memory.stat"
	echo "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" > "$T/cgroot/$S/$u/memory.pressure"
done
fake_cgroup "$S"

# Each unit's text is capped at 1 MiB by its own LockBudget= (sleep with
# libc maps more); the daemon's budget holds the explicit unit and one
# more: only one of the two suffering units fits.
write_conf <<CONF
[Daemon]
Backend=kernel
LockBudget=2560K
AutoFaultRate=20
AutoPressureSome=10
AutoWindowSec=4
AutoIntervalSec=1
AutoCalmSec=0
[Rule auto]
MatchCgroup=/$S/*
Protect=auto
LockBudget=1M
[Rule db]
MatchUnit=$DB
Protect=yes
LockBudget=1M
CONF

for u in "$HI" "$MID" "$CALM" "$DB"; do
	run_in "$S/$u" sleep 300
done
# The fake tree has no cgroup.procs of its own: mirror the real one.
mirror_procs() {
	local u
	for u in "$HI" "$MID" "$CALM" "$DB"; do
		cat "$CG2/$S/$u/cgroup.procs" > "$T/cgroot/$S/$u/cgroup.procs"
	done
}
# (cgroup files have no size: read them.)
wait_until 5 sh -c "grep -q . '$CG2/$S/$CALM/cgroup.procs' && grep -q . '$CG2/$S/$DB/cgroup.procs'" ||
	fail "processes did not move into their cgroups"
mirror_procs

# The kernel's part: HI takes 400 text faults/s, MID 100/s, both under
# PSI some 50% of their own; CALM none. Written in steps; the rates only
# need to stay far above AutoFaultRate=, however slow this machine is.
fault_loop() {
	local hi=0 mid=0
	while :; do
		hi=$((hi + 200))
		mid=$((mid + 50))
		echo "pgmajfault_exec $hi" > "$T/cgroot/$S/$HI/memory.stat.new"
		mv "$T/cgroot/$S/$HI/memory.stat.new" "$T/cgroot/$S/$HI/memory.stat"
		echo "pgmajfault_exec $mid" > "$T/cgroot/$S/$MID/memory.stat.new"
		mv "$T/cgroot/$S/$MID/memory.stat.new" "$T/cgroot/$S/$MID/memory.stat"
		sleep 0.5
	done
}
for u in "$HI" "$MID"; do
	echo "some avg10=50.00 avg60=20.00 avg300=5.00 total=123456" > "$T/cgroot/$S/$u/memory.pressure"
done
fault_loop &
KIDS+=($!)

start_daemon --cgroup-root="$T/cgroot"
wait_event 10 PUSH_PROTECTED EXECGUARD_CGROUP="'/$S/$DB'" EXECGUARD_POLICY="'db'" ||
	fail "the explicitly protected unit was not protected"
[ "$(file_value "$S/$DB")" = max ] || fail "memory.exec_protect of $DB is $(file_value "$S/$DB")"

wait_event 30 AUTO_PROTECTED EXECGUARD_UNIT="'$HI'" || fail "the most suffering unit $HI was not auto-protected"
line=$(last_event AUTO_PROTECTED EXECGUARD_UNIT="'$HI'")
for f in EXECGUARD_FAULT_RATE EXECGUARD_PSI_SOME EXECGUARD_WINDOW_SEC EXECGUARD_BUDGET_LEFT EXECGUARD_BYTES; do
	[[ "$line" == *" $f="* ]] || fail "AUTO_PROTECTED without $f: $line"
done
rate=$(sed -n 's/.* EXECGUARD_FAULT_RATE=\([0-9]*\).*/\1/p' <<< "$line")
[ "${rate:-0}" -ge 20 ] || fail "protected at $rate faults/s, below AutoFaultRate=20: $line"
[[ "$line" == *" EXECGUARD_PSI_SOME=50.00 "* ]] || fail "the unit's PSI is not the evidence: $line"
wait_event 10 PUSH_PROTECTED EXECGUARD_CGROUP="'/$S/$HI'" EXECGUARD_POLICY="'auto'" ||
	fail "$HI's cgroup not protected through the normal path"
wait_until 10 sh -c "[ \"\$(cat '$T/cgroot/$S/$HI/memory.exec_protect')\" = max ]" ||
	fail "memory.exec_protect of $HI is $(file_value "$S/$HI")"
pass "a suffering unit is protected, with its evidence logged"

# MID suffers too but does not fit what DB and HI leave.
wait_event 30 AUTO_OVER_BUDGET EXECGUARD_UNIT="'$MID'" || fail "$MID not reported over budget"
has_event AUTO_PROTECTED EXECGUARD_UNIT="'$MID'" && fail "$MID was protected beyond the budget"
[ "$(file_value "$S/$MID")" = 0 ] || fail "memory.exec_protect of $MID is $(file_value "$S/$MID")"
[ "$(file_value "$S/$DB")" = max ] || fail "the explicit unit $DB was displaced"
has_event PUSH_RELEASED EXECGUARD_CGROUP="'/$S/$DB'" && fail "the explicit unit $DB was released"
pass "budget holds: the most suffering first, the explicit unit never displaced"

# CALM: watched, never protected. Its samples were taken in the same
# rounds as MID's, so the round that found MID over budget judged it.
has_event AUTO_PROTECTED EXECGUARD_UNIT="'$CALM'" && fail "$CALM was protected without faults"
[ "$(file_value "$S/$CALM")" = 0 ] || fail "memory.exec_protect of $CALM is $(file_value "$S/$CALM")"
has_event AUTO_NO_FIGURES && fail "no figures although memory.stat has pgmajfault_exec"
pass "a unit without text faults is not protected"

# Restart: nothing is kept; the state is derived anew from new samples.
stop_daemon || fail "daemon exited with $?"
[ "$(file_value "$S/$HI")" = 0 ] || fail "$HI still protected after the daemon stopped"
mv "$T/daemon.log" "$T/daemon-1.log"
start_daemon --cgroup-root="$T/cgroot"
has_event AUTO_PROTECTED && fail "auto protection kept over a restart before any sample"
wait_event 30 AUTO_PROTECTED EXECGUARD_UNIT="'$HI'" || fail "$HI not protected again after the restart"
wait_event 30 AUTO_OVER_BUDGET EXECGUARD_UNIT="'$MID'" || fail "$MID not reported over budget after the restart"
has_event AUTO_PROTECTED EXECGUARD_UNIT="'$CALM'" && fail "$CALM protected after the restart"
pass "a restart re-derives the state: the suffering unit is protected again, the calm one is not"

has_event AUTO_RELEASED && fail "released with AutoCalmSec=0"
problems && fail "warnings or errors in the log"
stop_daemon || fail "daemon exited with $?"
exit 0
