#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Least privilege: once set up, execguardd keeps only the capabilities
# its backend needs (execguardd(8), CAPABILITIES), in its effective,
# permitted and bounding sets, with no inheritable or ambient ones and
# no_new_privs set; and with only those it still does its job for a
# process of another user running a program from a directory only that
# user can read.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
id nobody > /dev/null 2>&1 && command -v setpriv > /dev/null || skip "needs user nobody and setpriv"

A=execguard-caps-$$
new_cgroup "$A"
fake_cgroup "$A"
# A program only nobody can reach: a 0700 directory of nobody's.
P=$(mktemp -d /var/tmp/execguard-caps-XXXXXX)
chmod 755 "$P"
mkdir "$P/home"
cp /usr/bin/sleep "$P/home/mysleep"
chown -R nobody:nogroup "$P/home"
chmod 700 "$P/home"
on_exit 'rm -rf "$P"'
setpriv --reuid=nobody --regid=nogroup --clear-groups "$P/home/mysleep" 0 || skip "$P is not executable here (noexec?)"

status_field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DAEMON_PID/status"; }
some_locked() { [ "$(status_field VmLck)" -gt 0 ]; }
bit() { echo $((1 << $1)); }
held=$((16#$(awk '$1 == "CapBnd:" { print $2 }' /proc/self/status)))
common=$(( $(bit 12) | $(bit 19) ))                           # net_admin, sys_ptrace
lock=$(( common | $(bit 2) | $(bit 14) | $(bit 24) | $(bit 40) )) # + dac_read_search, ipc_lock, sys_resource, checkpoint_restore

# MatchExe=: each backend looks at nobody's process (its executable read
# through /proc with the capabilities kept), whatever backend.
for backend in none kernel lock; do
	write_conf <<CONF
[Daemon]
Backend=$backend
LockRecheckSec=1
[Rule nobody]
MatchCgroup=/$A
MatchExe=$P/home/mysleep
Protect=yes
CONF
	start_daemon --cgroup-root="$T/cgroot" --state-dir="$T/run-$backend"
	want=$common
	[ "$backend" = lock ] && want=$lock
	want=$((want & held))
	for f in CapEff CapPrm CapBnd; do
		got=$((16#$(status_field $f)))
		[ "$got" = "$want" ] || fail "$backend: $f is $(printf %016x $got), expected $(printf %016x $want)"
	done
	[ "$((16#$(status_field CapInh)))" = 0 ] || fail "$backend: inheritable capabilities left"
	[ "$((16#$(status_field CapAmb)))" = 0 ] || fail "$backend: ambient capabilities left"
	[ "$(status_field NoNewPrivs)" = 1 ] || fail "$backend: no_new_privs not set"
	# What the admin reads (no MESSAGE_ID): the sets themselves are
	# checked above from /proc.
	wait_log "capabilities for backend $backend: kept .*\(bounding set too\)" 1 ||
		fail "$backend: the kept set is not logged"
	pass "$backend: effective = permitted = bounding = $(printf %x $want), no inheritable/ambient, no_new_privs"

	run_in "$A" setpriv --reuid=nobody --regid=nogroup --clear-groups "$P/home/mysleep" 60
	p=$LAST_PID
	wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" EXECGUARD_EXE="'$P/home/mysleep'" EXECGUARD_CGROUP="'/$A'" || fail "$backend: nobody's process not protected"
	case $backend in
	kernel)
		[ "$(file_value "$A")" = max ] || fail "kernel: memory.exec_protect not written"
		;;
	lock)
		wait_until 5 some_locked
		[ "$(status_field VmLck)" -gt 0 ] || fail "lock: nothing locked for nobody's process"
		has_event LOCK_SKIPPED EXECGUARD_EXE="'$P/home/mysleep'" && fail "lock: could not reach nobody's program"
		has_event LOCK_MLOCK_FAILED && fail "lock: mlock() failed"
		;;
	esac
	# Any message, with a MESSAGE_ID or not: the words strerror() gives.
	grep -Eq "Operation not permitted|Permission denied" "$T/daemon.log" &&
		fail "$backend: a permission error after the drop: $(grep -E 'Operation not permitted|Permission denied' "$T/daemon.log" | head -3)"
	pass "$backend: with only those, nobody's $P/home/mysleep (pid $p) was protected$([ "$backend" = lock ] && echo ", $(status_field VmLck) kB locked")"
	kill "$p"
	stop_daemon || fail "$backend: daemon exit status $?"
done
