#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Protect=auto with the lock backend on this machine's own kernel and
# cgroups: a unit whose text is evicted again and again (its program runs
# 4 MiB of library text in a memory cgroup of 48 MiB while a reader churns
# the page cache there, so its memory PSI rises) is auto-protected and
# its pages locked; a unit that only sleeps is watched and left alone.
# The text fault figures on a stock kernel are the daemon's estimate
# (textfault.h); where the daemon has none for the unit
# (MID_AUTO_NO_FIGURES) the test skips and says so. Structured log lines
# only, no timing.
. "$(dirname "$0")/lib.sh"
TEST_TMPDIR=/var/tmp test_init root cgroup2
[ -e /proc/pressure/memory ] || skip "no PSI (/proc/pressure/memory): kernel without CONFIG_PSI or psi=0"
command -v cc > /dev/null || skip "needs a C compiler for the test program"
GEN=$(dirname "$0")/lock/gen-text.sh

S=execguard-test-$$.slice
SUF=auto-suffers-$$.service
OK=auto-calm-$$.service
new_cgroup "$S"
new_cgroup "$S/$SUF"
new_cgroup "$S/$OK"

# The memory limit: the v1 memory controller (hybrid layout) or cgroup2
# memory.max on the unit itself.
LIMIT=48M
if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	MEMCG=/sys/fs/cgroup/memory/execguard-auto-test.$$
	mkdir "$MEMCG" || skip "cannot create a v1 memory cgroup"
	on_exit "rmdir '$MEMCG' 2>/dev/null"
	echo "$LIMIT" > "$MEMCG/memory.limit_in_bytes" || skip "cannot limit the v1 memory cgroup"
	echo 0 > "$MEMCG/memory.swappiness" 2>/dev/null
elif grep -qw memory "$CG2/cgroup.subtree_control" 2>/dev/null; then
	echo +memory > "$CG2/$S/cgroup.subtree_control" || skip "cannot enable the memory controller below $S"
	MEMCG=$CG2/$S/$SUF
	echo "$LIMIT" > "$MEMCG/memory.max" || skip "cannot set memory.max"
	echo 0 > "$MEMCG/memory.swap.max" 2>/dev/null
else
	skip "no memory controller (v1 memory or cgroup2 memory) to make pressure with"
fi
# in_suf CMD...: CMD in the unit's cgroup2 cgroup and in the memory cgroup.
in_suf() {
	sh -c 'echo $$ > "$0/cgroup.procs" && echo $$ > "$1/cgroup.procs" && shift && exec "$@"' \
		"$CG2/$S/$SUF" "$MEMCG" "$@" &
	LAST_PID=$!
	KIDS+=("$LAST_PID")
}

# The program: 1024 one-page functions in a library, run again on every
# SIGUSR1 ("grown").
"$GEN" lib big 1024 > "$T/libbig.c" && cc -O1 -shared -fPIC -o "$T/libbig.so" "$T/libbig.c" || fail "cc libbig"
"$GEN" prog big > "$T/prog.c" && cc -O1 -o "$T/prog" "$T/prog.c" -L"$T" -lbig -Wl,-rpath,"$T" || fail "cc prog"
dd if=/dev/urandom of="$T/churn" bs=1M count=256 status=none || fail "cannot write the churn file"
# Out of the page cache: pages stay charged to whoever read them first,
# and must be charged to the unit's memory cgroup to be reclaimed there.
sync
for f in "$T/libbig.so" "$T/prog" "$T/churn"; do
	dd if="$f" iflag=nocache count=0 status=none || fail "cannot evict $f"
done

write_conf <<CONF
[Daemon]
Backend=lock
# Low thresholds: the test's own eviction is what must be seen.
AutoFaultRate=5
AutoPressureSome=1
AutoWindowSec=6
AutoIntervalSec=1
AutoCalmSec=0
# Keep the lock backend's own give-back out of this test.
PressureWindowMSec=10000
PressureStallMSec=9999
[Rule auto]
MatchCgroup=/$S/*
Protect=auto
CONF

in_suf "$T/prog" 1024 > "$T/prog.out" 2>&1
PROG=$LAST_PID
# Its handler is set once it says ready: no signal before that.
wait_until 10 grep -q ready "$T/prog.out" || fail "the program did not start: $(cat "$T/prog.out")"
in_suf sh -c "while :; do cat '$T/churn' > /dev/null; done"
run_in "$S/$OK" sleep 600
POK=$LAST_PID
# Run the text again and again; the reader evicts it between runs.
( while :; do kill -USR1 "$PROG" 2> /dev/null || exit 0; sleep 0.2; done ) &
KIDS+=($!)

# The premise: the program does take major faults again and again.
majflt() { awk '{ print $12 }' "/proc/$PROG/stat"; }
m0=$(majflt)
faulted() { [ "$(majflt)" -ge $((m0 + 50)) ]; }
wait_until 60 faulted || skip "the program's text is not evicted here (major faults $m0 -> $(majflt)): no suffering to see"
pass "the program suffers: major faults $m0 -> $(majflt)"

start_daemon
has_event BACKEND EXECGUARD_BACKEND=lock || fail "lock backend not chosen"
# Either the unit is judged (protected) or the daemon says it cannot.
judged() {
	has_event AUTO_PROTECTED EXECGUARD_UNIT="'$SUF'" || has_event AUTO_NO_FIGURES EXECGUARD_UNIT="'$SUF'"
}
wait_until 60 judged || fail "$SUF neither auto-protected nor reported without figures"
if has_event AUTO_NO_FIGURES EXECGUARD_UNIT="'$SUF'"; then
	skip "no text fault figures for $SUF on this kernel ($(uname -r)): the stock-kernel estimate of text faults (daemon/textfault.c, issue 14 part 1) is not in this build; only memory.stat pgmajfault_exec of the patched kernel is read"
fi
line=$(last_event AUTO_PROTECTED EXECGUARD_UNIT="'$SUF'")
echo "$line"
for f in EXECGUARD_FAULT_RATE EXECGUARD_PSI_SOME EXECGUARD_WINDOW_SEC EXECGUARD_BUDGET_LEFT EXECGUARD_BYTES; do
	[[ "$line" == *" $f="* ]] || fail "AUTO_PROTECTED without $f: $line"
done
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$PROG" EXECGUARD_BACKEND=lock EXECGUARD_POLICY="'auto'" ||
	fail "the suffering program (pid $PROG) not protected through the lock backend"
pass "a unit whose text is evicted under pressure is auto-protected and locked"

has_event AUTO_PROTECTED EXECGUARD_UNIT="'$OK'" && fail "$OK (sleeping) was auto-protected"
has_event PROCESS_PROTECTED EXECGUARD_PID="$POK" && fail "pid $POK of $OK was protected"
pass "a unit that does not suffer is not protected"

# Restart: the state is derived anew, and the unit still suffers.
stop_daemon || fail "daemon exited with $?"
mv "$T/daemon.log" "$T/daemon-1.log"
start_daemon
has_event AUTO_PROTECTED && fail "auto protection kept over a restart before any sample"
wait_event 60 AUTO_PROTECTED EXECGUARD_UNIT="'$SUF'" || fail "$SUF not protected again after the restart"
pass "a restart re-derives the state"
stop_daemon || fail "daemon exited with $?"
exit 0
