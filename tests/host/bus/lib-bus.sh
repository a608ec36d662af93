# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# For the D-Bus host tests, on top of tests/host/lib.sh: a private
# system-like dbus-daemon with the bus policy under test, a stand-in for
# systemd where a test wants one, and cgroups shaped like systemd's
# (SLICE/UNIT.service), so that the daemon finds unit names in cgroup
# paths on a host without systemd. Their prologue is bus_test_init.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
FAKE_SYSTEMD=${FAKE_SYSTEMD:-}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BUS_PID=
FAKE_PID=

# bus_test_init [fake-systemd]: test_init root cgroup2 dbus, a slice of
# the test's own in $S (the cleanup removes it whole), the private bus
# (and the systemd stand-in) started, stopped at exit.
bus_test_init() {
	[ "${1:-}" != fake-systemd ] || [ -x "$FAKE_SYSTEMD" ] || skip "FAKE_SYSTEMD not built"
	test_init root cgroup2 dbus
	export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/bus.sock"
	# shellcheck disable=SC2034 # the slice the test-bus-*.sh that source this use
	S=execguard-test-$$.slice
	on_exit bus_cleanup
	start_bus
	[ "${1:-}" != fake-systemd ] || start_fake_systemd
}

bus_cleanup() {
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
	[ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null
	return 0
}

start_bus() {
	chmod 711 "$T" # non-root callers reach the socket
	sed -e "s|@SOCKET@|$T/bus.sock|" -e "s|@POLICY@|$SRC/units/org.execguard.Manager1.conf|" \
		"$SRC/tests/host/bus/bus.conf.in" > "$T/bus.conf"
	BUS_PID=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-pid) ||
		fail "cannot start a private dbus-daemon"
}

stop_bus() {
	kill "$BUS_PID"
	BUS_PID=
	rm -f "$T/bus.sock"
}

start_fake_systemd() {
	mkdir -p "$T/units"
	"$FAKE_SYSTEMD" "$T/units" > "$T/fake.log" 2>&1 &
	FAKE_PID=$!
	wait_until 5 grep -q ready "$T/fake.log" || fail "fake systemd did not start: $(cat "$T/fake.log")"
}

# unit_cgroup SLICE UNIT: SLICE/UNIT in cgroup2 and in the fake tree;
# prints nothing, the path is SLICE/UNIT.
unit_cgroup() {
	mkdir -p "$CG2/$1/$2" || fail "cannot create cgroup $CG2/$1/$2"
	CGROUPS+=("$CG2/$1/$2" "$CG2/$1")
	mkdir -p "$T/cgroot/$1/$2"
	echo 0 > "$T/cgroot/$1/memory.exec_protect"
	echo 0 > "$T/cgroot/$1/$2/memory.exec_protect"
}

ctl() { "$EXECGUARDCTL" "$@"; }

# wait_ctl PATTERN ARGS...: until execguardctl ARGS prints PATTERN.
ctl_says() { # PATTERN ARGS...
	local pat="$1"
	shift
	ctl "$@" 2>&1 | grep -Eq -- "$pat"
}
wait_ctl() { wait_until 10 ctl_says "$@"; }

# status_protects PROCESSES CGROUPS: execguardctl --json status counts
# that many processes and cgroups protected whole.
status_protects() {
	ctl --json status 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if (d["processes_protected"], d["cgroups_protected"]) == (int(sys.argv[1]), int(sys.argv[2])) else 1)' "$1" "$2"
}

json_ok() { python3 -m json.tool > /dev/null; }
