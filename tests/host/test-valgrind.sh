#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon under valgrind memcheck, with the kernel backend (fake tree)
# and then the lock backend: processes protected, released on exit, an
# exec chain, a reload and a stats dump, then SIGTERM. Any invalid access,
# use of uninitialised memory or leak fails the test. valgrind 3.19
# (Debian 12) does not know pidfd_open, so this also runs the daemon's
# path for kernels before 5.3: /proc directory pins and exit events.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
command -v valgrind > /dev/null || skip "valgrind not installed"
# The sanitizer build runs the same suite; memcheck cannot run ASan code.
ldd "$EXECGUARDD" | grep -q libasan && skip "AddressSanitizer build: memcheck runs on the plain build"

A=execguard-vg-$$
new_cgroup "$A"
fake_cgroup "$A"
# shellcheck disable=SC2034 # start_daemon (lib.sh) waits this long for it
READY_SECS=120

# run_backend NAME: one daemon life under memcheck.
run_backend() {
	local backend="$1" vglog="$T/valgrind-$1.log"
	write_conf <<CONF
[Daemon]
Backend=$backend
RescanDelaysMSec=20 100
LockRecheckSec=1
[Rule test]
MatchCgroup=/$A
MatchExe=/usr/bin/sleep /bin/sleep /usr/bin/dash
Protect=yes
CONF
	# shellcheck disable=SC2034 # start_daemon (lib.sh) runs the daemon under it
	DAEMON_WRAP=(valgrind --tool=memcheck --leak-check=full "--show-leak-kinds=definite,indirect,possible"
		"--errors-for-leak-kinds=definite,indirect,possible" --error-exitcode=99 --log-file="$vglog")
	start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/state-$backend"
	has_event BACKEND EXECGUARD_BACKEND="$backend" || fail "$backend backend not chosen"

	run_in "$A" sleep 60
	local p=$LAST_PID
	wait_event 30 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "$backend: no decision for pid $p under valgrind"
	kill "$p"
	if [ "$backend" = kernel ]; then
		wait_event 30 CGROUP_RELEASED EXECGUARD_CGROUP="'/$A'" || fail "$backend: not released after exit"
	fi
	run_in "$A" sh -c 'sleep 0.3; exec sleep 60'
	local pc=$LAST_PID
	wait_event 30 PROCESS_PROTECTED EXECGUARD_PID="$pc" EXECGUARD_EXE="'/usr/bin/sleep'" || fail "$backend: exec chain not decided"
	local n
	n=$(count_events POLICY_LOADED)
	kill -HUP "$DAEMON_PID"
	wait_until 30 events_newer "$n" POLICY_LOADED || fail "$backend: no reload"
	n=$(count_events STATS)
	kill -USR1 "$DAEMON_PID"
	wait_until 30 events_newer "$n" STATS || fail "$backend: no stats on SIGUSR1"
	stop_daemon || fail "$backend: daemon (or valgrind: 99) exited with $?; $(grep -A12 'ERROR SUMMARY\|Invalid\|uninitialised\|definitely' "$vglog" | head -40)"
	kill "$pc" 2>/dev/null
	grep -q "ERROR SUMMARY: 0 errors" "$vglog" || fail "$backend: valgrind found errors: $(tail -20 "$vglog")"
	grep -Eq "All heap blocks were freed|definitely lost: 0 bytes" "$vglog" || fail "$backend: no leak summary"
	pass "$backend backend under memcheck: $(grep -o 'total heap usage.*' "$vglog"), 0 errors"
	if grep -q "pinning processes by their /proc directory" "$T/daemon.log"; then
		pass "$backend: ran the pre-5.3 path (this valgrind has no pidfd_open)"
	fi
}

run_backend kernel
run_backend lock
