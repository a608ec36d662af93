#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The lock backend locks a program that runs from overlayfs, as in a
# container or a live system: fstat() of a file on an overlay whose upper
# layer is on another file system gives the overlay's device, while
# /proc/PID/maps names the real file under it. The daemon must see that
# it opened the mapped file (by what the kernel maps), not refuse it as
# "replaced", and lock its text.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-overlay-$$
new_cgroup "$A"
mkdir -p "$T/lower" "$T/t" "$T/m"
cp /usr/bin/sleep "$T/lower/eg-sleep"
# The upper layer on its own tmpfs: layers on two file systems.
mount -t tmpfs tmpfs "$T/t" || skip "cannot mount tmpfs"
# The program runs from the overlay: gone first, or umount finds it busy
# (hooks run before the common clean-up kills the test's processes).
on_exit 'kill_own "${KIDS[@]}"; for k in "${KIDS[@]}"; do wait "$k"; done 2>/dev/null; umount "$T/m" 2>/dev/null; umount "$T/t" 2>/dev/null'
mkdir "$T/t/upper" "$T/t/work"
mount -t overlay overlay -o "lowerdir=$T/lower,upperdir=$T/t/upper,workdir=$T/t/work" "$T/m" ||
	skip "cannot mount overlayfs here"
prog=$T/m/eg-sleep
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
PressureWindowMSec=10000
PressureStallMSec=9999
[Rule test]
MatchCgroup=/$A
Protect=yes
CONF
start_daemon
run_in "$A" "$prog" 60
p=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "no decision for pid $p"
# The real file's identity in maps, the overlay's from stat: they differ
# here, or the test shows nothing.
maps_dev=$(awk -v f="$prog" '$6 == f && $2 ~ /x/ { print $4; exit }' "/proc/$p/maps")
stat_dev=$(stat -c '%Hd:%Ld' "$prog" | awk -F: '{ printf "%02x:%02x", $1, $2 }')
echo "maps $maps_dev, stat $stat_dev"
[ -n "$maps_dev" ] || fail "$prog not in the maps of pid $p"
[ "$maps_dev" != "$stat_dev" ] || skip "this overlay reports the real device (one file system under it)"
# Locked: the daemon maps the text of the program, with VM_LOCKED ("lo").
locked_in_daemon() {
	awk -v f="$prog" '$6 == f { m = 1; next } /^[0-9a-f]+-[0-9a-f]+ / { m = 0 } m && /^VmFlags:.* lo/ { found = 1 } END { exit !found }' \
		"/proc/$DAEMON_PID/smaps"
}
wait_until 5 locked_in_daemon || fail "the text of $prog on overlayfs is not locked"
pass "a program on overlayfs (device $maps_dev in maps, $stat_dev by stat) is locked"
has_event LOCK_SKIPPED EXECGUARD_EXE="'$prog'" && fail "$prog skipped: $(events LOCK_SKIPPED EXECGUARD_EXE="'$prog'" | head -n 1)"
pass "nothing of it skipped as replaced"
kill "$p"
