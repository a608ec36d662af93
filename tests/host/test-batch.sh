#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ExecBatchMSec=: exec events are gathered that long and looked at in one
# go. Each check holds on any machine, however slow or loaded: other
# processes' exec events can open a batch at any moment, so nothing here
# depends on where in a batch an event lands or on how fast anything runs.
# - 1000 ms: with the daemon stopped, a short process starts and exits
#   and a long one starts; after SIGCONT the short one is counted gone
#   before the look and never pinned, the long one is protected, taken
#   after the stop in one go (both events wait: the wake-up takes them and
#   opens a batch).
# - 200 ms, a storm in a cgroup no rule protects: the daemon's own
#   counters show that every socket wake-up not taken at once opened a
#   batch (the socket is not watched while events keep coming), that a
#   batch ran, and at most one batch per 200 ms of the wall time the test
#   measured around it.
# - 0: no batch timer at all; looked at on the socket's wake-up.
# - 1000 ms, the daemon's first wake-up: a lone exec (no event within the
#   window before it) is looked at on the socket's wake-up, not after a
#   batch; the daemon counts it "taken at once".
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-batch-$$
new_cgroup "$A"
fake_cgroup "$A"
batch_conf() {
# MatchExe=: the process path (connector, pins, later looks) is what this
# tests; without it the kernel backend decides cgroups as a whole.
	write_conf <<CONF
[Daemon]
Backend=kernel
ExecBatchMSec=$1
[Rule batch]
MatchCgroup=/$A
MatchExe=/usr/bin/sleep /bin/sleep
Protect=yes
CONF
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# batches_after N: wait until the daemon counts more than N exec batches.
batch_count_over() { [ "$(counter "exec batches" <<<"$(stats)")" -gt "$1" ]; }
batches_after() { wait_until 15 batch_count_over "$1"; }

batch_conf 1000
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
s=$(stats)
g0=$(counter "gone before look" <<<"$s")
b0=$(counter "exec batches" <<<"$s")
w0=$(counter "connector wake-ups" <<<"$s")
a0=$(counter "taken at once" <<<"$s")
kill -STOP "$DAEMON_PID"
run_in "$A" /bin/true
short=$LAST_PID
wait "$short"
run_in "$A" sleep 600
long=$LAST_PID
wait_until 5 grep -q sleep "/proc/$long/comm" || { kill -CONT "$DAEMON_PID"; fail "pid $long did not exec sleep"; }
kill -CONT "$DAEMON_PID"
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$long" || fail "pid $long not protected after the batch"
has_event PROCESS_PROTECTED EXECGUARD_PID="$short" && fail "pid $short, gone before the look, was protected"
# Both events waited: the wake-up opened a batch, which runs a window
# later (or took them itself, if it came within the window of the last).
batches_after "$b0" || fail "no batch after the stop: $(stats)"
s=$(stats)
g1=$(counter "gone before look" <<<"$s")
b=$(($(counter "exec batches" <<<"$s") - b0))
w=$(($(counter "connector wake-ups" <<<"$s") - w0))
a=$(($(counter "taken at once" <<<"$s") - a0))
[ "$g1" -gt "$g0" ] || fail "the short process is not counted as gone before the look ($g0 -> $g1)"
[ "$b" -ge 1 ] || fail "pid $long protected with no batch taken"
[ $((w - a)) -le $((b + 1)) ] || fail "$w socket wake-ups ($a taken at once) for $b batches"
pass "1000 ms batch: the process gone before the look never pinned, the long-lived one protected, a batch opened ($b batches, $w socket wake-ups, $a taken at once)"
kill "$long"
stop_daemon || fail "daemon exit status $?"

# A sustained storm in a cgroup no rule protects.
B=execguard-batch-free-$$
new_cgroup "$B"
cc -O2 -o "$T/execload" "$(dirname "$0")/../../bench/execload.c" || fail "cannot build execload"
batch_conf 200
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
t0=$(now_ms)
s=$(stats)
e0=$(counter "exec events" <<<"$s")
w0=$(counter "connector wake-ups" <<<"$s")
b0=$(counter "exec batches" <<<"$s")
a0=$(counter "taken at once" <<<"$s")
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$B" "$T/execload" 500 3 /bin/true > /dev/null ||
	fail "execload failed"
# 1,000 events cannot all come alone, 200 ms apart, in a few seconds:
# some wake-up opened a batch, which runs within 200 ms of it.
batches_after "$b0" || fail "no batch in a storm: $(stats)"
s=$(stats)
t1=$(now_ms)
e1=$(counter "exec events" <<<"$s")
w1=$(counter "connector wake-ups" <<<"$s")
b1=$(counter "exec batches" <<<"$s")
a1=$(counter "taken at once" <<<"$s")
n=$((e1 - e0)) w=$((w1 - w0)) b=$((b1 - b0)) a=$((a1 - a0)) ms=$((t1 - t0))
[ "$n" -ge 1000 ] || fail "only $n exec events seen of 1500"
[ $((w - a)) -le $((b + 1)) ] || fail "$w socket wake-ups ($a taken at once) for $b batches: the socket was watched during a batch"
[ "$b" -le $(((ms + 2) / 200 + 1)) ] || fail "$b batches in $ms ms of 200 ms batches"
pass "a storm of $n execs in $ms ms: $b batches of 200 ms, $w socket wake-ups ($a taken at once)"
stop_daemon || fail "daemon exit status $?"

batch_conf 0
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
run_in "$A" sleep 600
p=$LAST_PID
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p not protected with ExecBatchMSec=0"
s=$(stats)
[ "$(counter "exec batches" <<<"$s")" = 0 ] || fail "ExecBatchMSec=0 ran batches: $s"
[ "$(counter "connector wake-ups" <<<"$s")" -ge 1 ] || fail "ExecBatchMSec=0: no socket wake-up counted: $s"
pass "ExecBatchMSec=0: no batch, looked at on the socket's wake-up"
kill "$p"
stop_daemon || fail "daemon exit status $?"

# The first wake-up has no event before it within any window: at once.
batch_conf 1000
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
s=$(stats)
a0=$(counter "taken at once" <<<"$s")
[ "$a0" = 0 ] || [ "$(counter "connector wake-ups" <<<"$s")" -ge 1 ] || fail "taken at once $a0 before any wake-up: $s"
run_in "$A" sleep 600
p=$LAST_PID
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p not protected with ExecBatchMSec=1000"
s=$(stats)
[ "$(counter "taken at once" <<<"$s")" -ge 1 ] || fail "ExecBatchMSec=1000: no wake-up taken at once: $s"
pass "ExecBatchMSec=1000: a lone exec taken on the socket's wake-up ($(counter "taken at once" <<<"$s") at once, $(counter "exec batches" <<<"$s") batches)"
kill "$p"
stop_daemon || fail "daemon exit status $?"
