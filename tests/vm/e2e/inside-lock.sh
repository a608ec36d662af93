#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The lock backend under the shipped, hardened unit, unchanged, with
# systemd as PID 1 (tests/vm/e2e/run.sh --lock): only a policy drop-in
# says Backend=lock. A service's text is locked (execguardd's VmLck and
# execguardctl agree), given back when memory runs short without an OOM
# kill, and locked again after; nothing the unit's sandbox or its
# capabilities deny. With Backend=auto on a kernel without the series
# (run.sh --unpatched) the same, the lock backend chosen by itself.
# Lines starting "E2E: " are the report.
set -u
stage=${1:?}
# shellcheck disable=SC2034 # slow: read by lib-inside.sh (wait_for)
slow=${2:-1}
# The Backend= the drop-in says: lock, or auto on a kernel without
# memory.exec_protect (run.sh --unpatched), where it must choose lock.
backend=${3:-lock}
. "$(dirname "${BASH_SOURCE[0]}")/lib-inside.sh"
MID_BACKEND=ae47f6c999684d2d89235c509b74e9e4
MID_LOCK_PRESSURE=e09ad4011cd8443281f7292085f86349
MID_LOCK_RELOCKED=437b87f546c74ac5a671ee690821e1cd
MID_LOCK_MLOCK_FAILED=3362eb49aa7d43a5ba17ef4342bb2299
MID_LOOK_FAILED=78f1e4aed68d47459ee37534a9f7796d

check_own_view
cp -a "$stage/." /
mkdir -p /etc/execguard.d
cp /usr/share/doc/execguard/examples/containers.conf /etc/execguard.d/
# A reserve far above what is left during the squeeze below, and a short
# calm period, so that the test does not wait long.
cat > /etc/execguard.d/50-e2e-lock.conf <<CONF
[Daemon]
Backend=$backend
LockRecheckSec=1
PressureReserve=128M
PressureRecoverSec=3
CONF
# A service whose program runs a little code every second, so that its
# text comes back after the squeeze, and that opts in with a drop-in.
mkdir -p /etc/systemd/system/eg-web.service.d
cat > /usr/local/lib/eg-web.py <<'PY'
import json, time
while True:
    json.dumps({"t": time.time()})
    time.sleep(1)
PY
cat > /etc/systemd/system/eg-web.service <<'UNIT'
[Service]
ExecStart=/usr/bin/python3 /usr/local/lib/eg-web.py
UNIT
cat > /etc/systemd/system/eg-web.service.d/execguard.conf <<'UNIT'
[X-ExecGuard]
Protect=yes
UNIT
systemctl daemon-reload

if [ "$backend" = auto ]; then
	check "a kernel without memory.exec_protect" test ! -e /sys/fs/cgroup/system.slice/memory.exec_protect
fi
check "execguardd.service starts with Backend=$backend" systemctl start execguardd
check "journal: the lock backend chosen" journal_has "$MID_BACKEND" EXECGUARD_BACKEND=lock
systemctl start eg-web

daemon_pid() { systemctl show -p MainPID --value execguardd; }
vmlck() { awk '/^VmLck:/ { print $2 * 1024 }' "/proc/$(daemon_pid)/status"; }
# locked_bytes of eg-web.service in execguardctl status, of every file in libs
unit_locked() {
	execguardctl --json status | python3 -c '
import json, sys
print(sum(u["locked_bytes"] for u in json.load(sys.stdin)["units"] if u["unit"] == "eg-web.service"))'
}
libs_locked() {
	execguardctl --json libs | python3 -c '
import json, sys
print(sum(f["locked_bytes"] for f in json.load(sys.stdin)))'
}
some_locked() { [ "$(unit_locked)" -gt 0 ]; }
# What the daemon has locked, file by file (libs), is its VmLck. (Units
# count a shared library in full each; the shipped policy protects
# journald and dbus too.)
agree() { local v; v=$(vmlck); [ "$v" -gt 0 ] && [ "$v" = "$(libs_locked)" ]; }
wait_for 20 some_locked || {
	say "nothing locked for eg-web.service after 20 s:"
	execguardctl status 2>&1 | sed 's/^/E2E:   /'
	execguardctl libs 2>&1 | head -n 20 | sed 's/^/E2E:   /'
	journalctl -u execguardd --no-pager -o cat | tail -n 20 | sed 's/^/E2E:   /'
}
wait_for 10 agree
l0=$(unit_locked)
say "locked for eg-web.service: $l0 bytes; execguardd VmLck $(vmlck) bytes, libs $(libs_locked) bytes"
check "eg-web.service's text is locked" test "$l0" -gt 0
check "execguardd's VmLck = execguardctl libs locked_bytes ($(libs_locked))" agree
execguardctl status | sed 's/^/E2E:   /'

# The squeeze: anonymous memory up to 64 MiB short of what is available
# (no swap), which leaves less than the 128M reserve.
oom0=$(awk '/^oom_kill / { print $2 }' /proc/vmstat)
avail_mib=$(($(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo) / 1024))
hog_mib=$((avail_mib - 64))
say "squeeze: $hog_mib MiB of $avail_mib MiB available"
python3 - "$hog_mib" > /tmp/hog.out 2>&1 <<'PY' &
import sys, time
want, step, have, held = int(sys.argv[1]) << 20, 16 << 20, 0, []
while have < want:
    n = min(step, want - have)
    b = bytearray(n)
    b[::4096] = b"\1" * len(range(0, n, 4096))
    held.append(b)
    have += n
    time.sleep(0.1)
print("held", have >> 20, flush=True)
time.sleep(8)
PY
hog=$!
lmin=$l0
while kill -0 "$hog" 2> /dev/null; do
	sleep 0.5
	l=$(unit_locked)
	[ -n "$l" ] && [ "$l" -lt "$lmin" ] && lmin=$l
done
wait "$hog"
hrc=$?
say "hog exit $hrc: $(cat /tmp/hog.out); locked $l0 -> min $lmin"
check "the hog got its $hog_mib MiB" grep -q "^held $hog_mib\$" /tmp/hog.out
check "the squeeze made execguardd give the text back ($l0 -> $lmin)" test "$lmin" -lt $((l0 / 2))
check "journal: the give-back (LOCK_PRESSURE)" journal_has "$MID_LOCK_PRESSURE"
check "no OOM kill" test "$(awk '/^oom_kill / { print $2 }' /proc/vmstat)" = "$oom0"

# Memory back: after PressureRecoverSec it locks what the program runs.
relocked() { journal_has "$MID_LOCK_RELOCKED" && some_locked; }
wait_for 30 relocked
check "locked again after the calm period ($(unit_locked) bytes, LOCK_RELOCKED)" relocked
wait_for 10 agree
check "execguardd's VmLck and execguardctl agree again" agree

# A podman container, matched by its scope (the containers example): its
# text is locked too (from the container's storage, an overlay here).
# shellcheck disable=SC2154 # ctr_scope: set by podman_start (lib-inside.sh)
ctr_locked() { [ "$(unit_field "$ctr_scope" locked_bytes)" -gt 0 ] 2> /dev/null; }
if podman_start; then
	wait_for 30 ctr_locked
	check "podman container: $ctr_scope's text locked ($(unit_field "$ctr_scope" locked_bytes) bytes)" ctr_locked
	podman_stop
fi

# Nothing the sandbox or the capability set denied: a system call the
# filter refuses fails with EPERM, a missing capability with EPERM or
# EACCES, and the daemon logs the error it got.
not() { ! "$@"; }
check "no mlock() failure (LOCK_MLOCK_FAILED)" not journal_has "$MID_LOCK_MLOCK_FAILED"
check "no process it could not look at (LOOK_FAILED)" not journal_has "$MID_LOOK_FAILED"
denials=$(journalctl -u execguardd --no-pager -o cat | grep -iE "not permitted|permission denied|bad system call|EPERM|EACCES")
check "no denial in execguardd's journal" test -z "$denials"
[ -z "$denials" ] || sed 's/^/E2E:   /' <<<"$denials" | head -n 10
# What the shipped unit leaves out on purpose (CAP_SYS_RESOURCE: PSI
# windows under 2 s are rounded up), as the daemon reports it.
journalctl -u execguardd --no-pager -o cat | grep -i "CAP_SYS_RESOURCE" | head -n 1 | sed 's/^/E2E: notice: /'

security=$(systemd-analyze security execguardd.service --no-pager 2>&1)
exposure=$(sed -n 's/.*Overall exposure level for execguardd.service: \([0-9.]*\).*/\1/p' <<<"$security")
say "systemd-analyze security: exposure ${exposure:-unknown}"
check "systemd-analyze security: exposure <= 2.5" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e + 0 <= 2.5) }'

systemctl stop execguardd
check "a clean stop" not systemctl is-failed --quiet execguardd
finish
