#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bounded resources at scale:
# - SCALE_PROCS (10,000) processes started at once in a protected cgroup
#   (fewer where the open file limit is lower), with SCALE_FREE (5,000)
#   more that no rule protects started beside them
#   (kernel backend on a fake tree): every one is decided and tracked
#   ("protected now"), the daemon's own memory (RssAnon) stays within the
#   bound that execguardd(8) documents (8 MiB + 1 KiB per protected
#   process, + 2 KiB per locked range), and all
#   are released when they exit;
# - SCALE_LIBS (2,000) distinct shared libraries mapped by 3 processes
#   (lock backend): each library locked once for all three, within that
#   bound, all given back at exit. (VmRSS also counts the locked text the
#   lock backend maps; RssAnon is the daemon's own.)
# The helpers are built here with cc, without the sanitizers of the tree
# (tens of thousands of ASan processes would not fit in memory); in the
# ASan tree only the memory bounds are skipped.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
command -v cc > /dev/null || skip "needs a C compiler for the helpers"
N=${SCALE_PROCS:-10000}
L=${SCALE_LIBS:-2000}
S=$(dirname "$0")/scale
asan=false
ldd "$EXECGUARDD" | grep -q libasan && asan=true

cc -O2 -static -o "$T/pause" "$S/pause.c" 2> /dev/null || cc -O2 -o "$T/pause" "$S/pause.c" || fail "cannot build pause"
cc -O2 -o "$T/spawn" "$S/spawn.c" || fail "cannot build spawn"
cc -O2 -o "$T/dlopen-many" "$S/dlopen-many.c" || fail "cannot build dlopen-many"
cc -O2 -shared -fPIC -o "$T/lib.so" "$S/lib.c" || fail "cannot build the library"
pid_max=$(cat /proc/sys/kernel/pid_max)
[ "$pid_max" -gt $((N + 10000)) ] || skip "pid_max $pid_max is too small for $N processes"

A=execguard-scale-$$
B=execguard-scale-lock-$$
new_cgroup "$A"
new_cgroup "$B"
fake_cgroup "$A"
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DAEMON_PID/status"; }
says() { grep -q "$1" "$2"; } # WORD FILE
value_is() { [ "$(file_value "$1")" = "$2" ]; }
# tracked OP N: "protected now" OP N (sets $got); a SIGUSR1 each half second
# at most, so that the polls do not keep the daemon from its work.
tracked() {
	got=$(protected_now)
	[ -n "$got" ] && test "$got" "$1" "$2" && return 0
	sleep 0.45
	return 1
}

write_conf <<CONF
[Daemon]
Backend=kernel
[Rule scale]
MatchCgroup=/$A
Protect=yes
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF
# One pidfd per protected process: the daemon raises its soft limit to
# the hard one (systemd's default hard limit is 524288). Where the hard
# limit is lower and cannot be raised (no CAP_SYS_RESOURCE), fewer are
# protected and as many more run unprotected beside them.
ulimit -n $((N + 4096)) 2> /dev/null || ulimit -n "$(ulimit -Hn)"
fds=$(ulimit -n)
[ "$fds" -ge $((N + 1000)) ] || N=$((fds - 1000))
# And as many again that no rule protects, beside them.
U=${SCALE_FREE:-5000}
[ "$N" -ge 1000 ] || skip "open file limit $fds is too low"
C=execguard-scale-free-$$
new_cgroup "$C"
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"
rss0=$(kb VmRSS)
t0=$(date +%s.%N)
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$C" "$T/spawn" "$U" "$T/pause" > "$T/spawn-free.out" &
FREE=$!
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$A" "$T/spawn" "$N" "$T/pause" > "$T/spawn.out" &
SPAWN=$!
KIDS+=("$SPAWN" "$FREE")
# spawn leads its own process group: take all of it down on any exit.
on_exit 'kill -9 -- -"$SPAWN" -"$FREE" 2>/dev/null'
# Tens of thousands of forks take minutes on a slow or loaded machine:
# wait while they make progress, not for a fixed time.
spawned() { cat "$CG2/$A/cgroup.procs" "$CG2/$C/cgroup.procs" 2>/dev/null | wc -l; }
both_started() { says started "$T/spawn.out" && says started "$T/spawn-free.out"; }
wait_progress 30 both_started spawned
grep -q "started $N" "$T/spawn.out" || fail "could not start $N processes ($(spawned) running): $(cat "$T/spawn.out")"
[ "$U" = 0 ] || grep -q "started $U" "$T/spawn-free.out" || fail "could not start $U unprotected processes"
t1=$(date +%s.%N)
# Keeping up: every one tracked (some through the rescan after overflow).
tracked_count() { protected_now; }
all_tracked() { tracked -ge "$N"; }
wait_progress 60 all_tracked tracked_count
t2=$(date +%s.%N)
[ "$got" -ge "$N" ] || fail "$got of $N processes tracked, none more for $(wait_secs 60) s"
rss=$(kb RssAnon)
hwm=$(kb VmHWM)
limit=$((8 * 1024 + N))
info="$U more unprotected; RssAnon $rss0 kB idle, $rss kB with $N (VmHWM $hwm kB), $((rss * 1024 / N)) B per process at most; started in $(awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.1f\", b - a }") s, all tracked $(awk -v a="$t1" -v b="$t2" "BEGIN { printf \"%.1f\", b - a }") s later"
if $asan; then
	pass "$N processes tracked ($info; ASan tree: no memory bound)"
else
	[ "$rss" -le "$limit" ] || fail "RssAnon $rss kB over the documented bound $limit kB ($info)"
	pass "$N processes tracked within $limit kB ($info)"
fi
[ "$(file_value "$A")" = max ] || fail "memory.exec_protect not set"
has_event LOOK_FAILED && fail "errors looking at processes: $(events LOOK_FAILED | head -3)"
has_event LOOK_FAILED_KEPT && fail "errors looking at protected processes: $(events LOOK_FAILED_KEPT | head -3)"
kill -TERM "$SPAWN" "$FREE"
wait "$SPAWN" "$FREE"
all_released() { tracked -eq 0; }
wait_progress 60 all_released tracked_count
[ "$got" = 0 ] || fail "$got processes still tracked after they all exited (none released for $(wait_secs 60) s)"
# (The log line may be rate-limited after so many: read the file.)
wait_until 5 value_is "$A" 0
[ "$(file_value "$A")" = 0 ] || fail "memory.exec_protect not cleared"
pass "all $N released after they exited"
stop_daemon || fail "daemon exit status $?"

# Out of file descriptors: said once, the daemon keeps what it has.
DAEMON_WRAP=(prlimit --nofile=256:256)
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run-fd"
# shellcheck disable=SC2034 # start_daemon (lib.sh) runs the daemon under it
DAEMON_WRAP=()
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$A" "$T/spawn" 1000 "$T/pause" > "$T/spawn2.out" &
SPAWN=$!
wait_until 30 says started "$T/spawn2.out"
wait_event 10 LOOK_FAILED ERRNO=24 ||
	fail "running out of file descriptors is not reported"
wait_until 10 tracked -gt 100
# Said once for the processes it cannot pin, and at most once for the
# later looks at those it keeps protected (they fail too, and keep them).
n=$(count_events LOOK_FAILED)
[ "$n" = 1 ] || fail "out of file descriptors reported $n times"
n=$(count_events LOOK_FAILED_KEPT)
[ "$n" -le 1 ] || fail "failed later looks reported $n times"
[ "$got" -gt 100 ] && [ "$got" -lt 256 ] || fail "$got processes tracked with 256 file descriptors"
kill -0 "$DAEMON_PID" || fail "daemon died"
kill -TERM "$SPAWN"
wait "$SPAWN"
stop_daemon || fail "daemon exit status $?"
pass "with 256 file descriptors: $got of 1000 tracked, the shortage reported once"

# Libraries: L distinct files, mapped by 3 processes.
mkdir "$T/libs"
for i in $(seq "$L"); do cp "$T/lib.so" "$T/libs/lib$i.so"; done
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
# Given back at exit, not kept for later runs.
LockKeepSec=0
[Rule scale]
MatchCgroup=/$B
Protect=yes
CONF
start_daemon --state-dir="$T/run-lock"
rss0=$(kb RssAnon)
for k in 1 2 3; do
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$B" "$T/dlopen-many" "$T"/libs/*.so > "$T/dl$k.out" &
	KIDS+=($!)
	DL[k]=$!
done
for k in 1 2 3; do
	wait_until 30 says loaded "$T/dl$k.out"
	grep -q "loaded $L" "$T/dl$k.out" || fail "process $k did not load $L libraries: $(cat "$T/dl$k.out")"
done
# The later looks see the libraries; the summary (forced by SIGUSR1:
# otherwise logged only when the locked total moved by a megabyte) names
# the ranges, one per library at least.
want_ranges=$L
all_ranges() {
	stats > /dev/null
	n=$(last_event LOCK_SUMMARY EXECGUARD_UNIT="'/$B'" | sed -n 's/.*(3 processes, \([0-9]*\) ranges).*/\1/p')
	[ -n "$n" ] && [ "$n" -ge "$want_ranges" ] && return 0
	sleep 0.45
	return 1
}
wait_until 60 all_ranges
[ -n "$n" ] && [ "$n" -ge "$want_ranges" ] || fail "lock summary: $(last_event LOCK_SUMMARY EXECGUARD_UNIT="'/$B'")"
locked=$(kb VmLck)
rss=$(kb RssAnon)
hwm=$(kb VmHWM)
limit=$((8 * 1024 + 3 + 2 * n))
info="$n ranges for 3 processes, VmLck $locked kB, RssAnon $rss0 -> $rss kB (VmHWM $hwm kB)"
[ "$locked" -ge $((L * 4)) ] || fail "only $locked kB locked for $L libraries ($info)"
if $asan; then
	pass "$L libraries mapped, their ranges locked once each ($info; ASan tree: no memory bound)"
else
	[ "$rss" -le "$limit" ] || fail "RssAnon $rss kB over the bound $limit kB ($info)"
	pass "$L libraries mapped, their ranges locked once each within $limit kB ($info)"
fi
for k in 1 2 3; do kill "${DL[k]}"; done
none_locked() { [ "$(kb VmLck)" = 0 ]; }
wait_until 10 none_locked
[ "$(kb VmLck)" = 0 ] || fail "$(kb VmLck) kB still locked after the processes exited"
pass "all given back at exit"
stop_daemon || fail "daemon exit status $?"
