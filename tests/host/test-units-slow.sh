#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Asking systemd for a unit's files never stalls the daemon: with the
# systemd stand-in stopped (it answers nothing), a process of a unit not
# known yet waits for the answer while a process of a known unit is
# decided at once; once the stand-in answers again, the waiting process
# is decided with its unit's section (nothing lost). Before, each lookup
# was two blocking calls: the daemon stalled, and the waiting process was
# decided without its section for good.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init fake-systemd

K=egtest-k-$$.service
N=egtest-n-$$.service
unit_cgroup "$S" "$K"
write_conf <<CONF
[Daemon]
Backend=kernel
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF
for u in "$K" "$N"; do
	mkdir -p "$T/units/$u.d"
	printf '[X-ExecGuard]\nProtect=yes\n' > "$T/units/$u.d/execguard.conf"
done
chmod -R go-w "$T/units"
start_daemon --cgroup-root="$T/cgroot"
wait_event 10 UNIT_LOOKUP || fail "daemon did not see the systemd stand-in"

run_in "$S/$K" sleep 600
pk=$LAST_PID
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$pk" EXECGUARD_POLICY="'$T/units/$K.d/execguard.conf:2'" || fail "$K not protected by its drop-in"
w0=$(stats | counter "waits for unit sections")

kill -STOP "$FAKE_PID"
# N's cgroup only now: one found at start is decided as a whole and its
# unit asked about then, so N would not be "a unit not known yet".
unit_cgroup "$S" "$N"
run_in "$S/$N" sleep 600
pn=$LAST_PID
wait_until 10 grep -q sleep "/proc/$pn/comm" || fail "pid $pn did not exec sleep"
run_in "$S/$K" sleep 600
pk2=$LAST_PID
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$pk2" || fail "pid $pk2 of the known unit $K not decided while systemd does not answer"
w1=$(stats | counter "waits for unit sections")
out=$(ctl --json explain "$pn") || fail "explain $pn: $out"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pn" && { kill -CONT "$FAKE_PID"; fail "pid $pn decided before systemd answered"; }
kill -CONT "$FAKE_PID"
[ "$w1" -gt "$w0" ] || fail "no decision waited for systemd ($w0 -> $w1)"
python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
assert d['unit_section_pending'] is True and not d['protect'], d
" <<<"$out" || fail "explain while systemd is asked: $out"
pass "systemd not answering: $K's process decided at once, $N's waits (explain says so)"

# The daemon waits up to 10 s for an answer; a machine so loaded that the
# stand-in stayed stopped that long proves nothing either way.
has_event UNIT_LOOKUP EXECGUARD_UNIT="'$N'" &&
	skip "the lookup of $N timed out before the stand-in was resumed (machine too loaded)"
wait_event 15 PROCESS_PROTECTED EXECGUARD_PID="$pn" EXECGUARD_POLICY="'$T/units/$N.d/execguard.conf:2'" ||
	fail "pid $pn not decided with its unit's section once systemd answered"
pass "once systemd answers, $N's process is protected by its section"
stop_daemon || fail "daemon exit status $?"
