#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ExecBatchMSec=: exec events are gathered that long and looked at in one
# go. With 1000 ms a process that exits within it is never pinned (gone
# before the look), one that lives on is protected after the batch, and
# the reported exec-to-decision latency includes the wait. With 0 the
# look is at once.
. "$(dirname "$0")/lib.sh"
need_root
need_cgroup2

A=execguard-batch-$$
new_cgroup "$A"
fake_cgroup "$A"
batch_conf() {
	write_conf <<CONF
[Daemon]
Backend=kernel
ExecBatchMSec=$1
[Rule batch]
MatchCgroup=/$A
Protect=yes
CONF
}
field() { sed -n "s/.*$1 \\([0-9]*\\).*/\\1/p"; }

batch_conf 1000
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
g0=$(stats | field "gone before look")
run_in "$A" sleep 0.2
short=$LAST_PID
run_in "$A" sleep 60
long=$LAST_PID
wait_log "protect pid $long " 5 || fail "pid $long not protected after the batch"
grep -q "protect pid $short " "$T/daemon.log" && fail "pid $short, gone within the batch, was protected"
s=$(stats)
g1=$(field "gone before look" <<<"$s")
p50=$(field "p50" <<<"$s")
[ "$g1" -gt "$g0" ] || fail "the short process is not counted as gone before the look ($g0 -> $g1)"
[ "$p50" -ge 900000 ] || fail "exec-to-decision p50 $p50 us with a 1000 ms batch"
pass "1000 ms batch: the short-lived process never pinned, the long-lived one protected after it (p50 $p50 us)"
kill "$long"
stop_daemon || fail "daemon exit status $?"

# A sustained storm in a cgroup no rule protects: while events keep
# coming the socket stays unwatched and each batch is one wake-up, not
# one per event (nor one for the socket and one for the timer).
B=execguard-batch-free-$$
new_cgroup "$B"
cc -O2 -o "$T/execload" "$(dirname "$0")/../../bench/execload.c" || fail "cannot build execload"
sw() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$DAEMON_PID/status"; }
batch_conf 200
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
e0=$(stats | field "exec events")
w0=$(sw)
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$B" "$T/execload" 500 3 /bin/true > /dev/null ||
	fail "execload failed"
w1=$(sw)
e1=$(stats | field "exec events")
n=$((e1 - e0))
[ "$n" -ge 1000 ] || fail "only $n exec events seen of 1500"
# 3 s in 200 ms batches: 15 wake-ups, 30 with a separate one for the
# socket; the signals and stats add a few.
[ $((w1 - w0)) -le 24 ] || fail "$((w1 - w0)) wake-ups for $n exec events in 3 s of 200 ms batches"
pass "a 3 s storm of $n execs in 200 ms batches: $((w1 - w0)) wake-ups"
stop_daemon || fail "daemon exit status $?"

batch_conf 0
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
run_in "$A" sleep 60
p=$LAST_PID
wait_log "protect pid $p " 5 || fail "pid $p not protected with ExecBatchMSec=0"
p50=$(stats | field "p50")
[ "$p50" -lt 200000 ] || fail "exec-to-decision p50 $p50 us with ExecBatchMSec=0"
pass "ExecBatchMSec=0: looked at once (p50 $p50 us)"
kill "$p"
stop_daemon || fail "daemon exit status $?"
