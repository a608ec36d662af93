#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Odd executables in a protected cgroup: paths with spaces, a newline,
# bytes that are not UTF-8, a very long name, a deleted file, a program
# run from a memfd. Each is decided on without a crash, the daemon keeps
# working, and the policy's exe globs still match as written.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-hostile-$$
new_cgroup "$A"
fake_cgroup "$A"
d="/var/tmp/execguard hostile $$"
mkdir -p "$d"
on_exit 'rm -rf "$d"'
long=$(printf 'x%.0s' $(seq 1 200))
odd=("$d/with space" "$d/new
line" "$d/bad-$(printf '\xff\xfe')" "$d/$long")
for p in "${odd[@]}"; do cp /bin/sleep "$p"; done
cp /bin/sleep "$d/doomed"

write_conf <<CONF
[Daemon]
Backend=kernel
[Rule hostile]
MatchCgroup=/$A
MatchExe=/var/tmp/execguard?hostile*
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run"

pids=()
for p in "${odd[@]}"; do
	run_in "$A" "$p" 60
	pids+=("$LAST_PID")
done
run_in "$A" "$d/doomed" 60
doomed=$LAST_PID
for p in "${pids[@]}" "$doomed"; do
	wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p ($(readlink "/proc/$p/exe")) not decided"
done
pass "spaces, newline, non-UTF-8 and a 200-byte name decided on"

# Deleted while running: a reload looks at every process again.
rm "$d/doomed"
n=$(count_events POLICY_LOADED)
kill -HUP "$DAEMON_PID"
wait_until 5 events_newer "$n" POLICY_LOADED || fail "reload"
# The rescan of the reload is done by the time the next signal is handled.
stats > /dev/null
kill -0 "$DAEMON_PID" || fail "daemon died on a deleted executable"
[ "$(file_value "$A")" = max ] || fail "protection lost after the executable was deleted"
pass "a deleted executable keeps its process protected"

# A program exec'd from a memfd: its exe is "/memfd:... (deleted)", no
# glob of the rule matches, so it is left alone, and nothing breaks.
memfd_exec() { readlink "/proc/$1/exe" | grep -q "^/memfd:payload"; }
if command -v python3 >/dev/null; then
	run_in "$A" python3 -c '
import os
fd = os.memfd_create("payload")
os.write(fd, open("/bin/sleep", "rb").read())
os.execv("/proc/self/fd/%d" % fd, ["payload", "60"])'
	pm=$LAST_PID
	wait_until 5 memfd_exec "$pm" || fail "pid $pm did not exec from its memfd"
	# A process started after the memfd exec is decided after it.
	run_in "$A" "${odd[0]}" 60
	wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$LAST_PID" || fail "no decision after the memfd program's"
	has_event PROCESS_PROTECTED EXECGUARD_PID="$pm" && fail "memfd program matched a path glob"
	kill -0 "$DAEMON_PID" || fail "daemon died on a memfd program"
	pass "a program run from a memfd is decided on without harm"
fi
stop_daemon || fail "daemon exit status $?"
