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
