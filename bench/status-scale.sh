#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguardctl status and libs with many protected processes: how long
# each call takes, and whether the daemon keeps deciding exec events
# while they run. The kernel backend on a fake cgroup tree (any kernel),
# a private D-Bus daemon with the shipped bus policy.
#
# Usage (as root): bench/status-scale.sh [-n PROCESSES] [-u UNITS] [-c CALLS] [-B BUILDDIR]
#   -n PROCESSES  protected processes (sleep), spread over the units (default 10000)
#   -u UNITS      units (cgroups SLICE/bench-K.service) (default 100)
#   -c CALLS      status and libs calls to time (default 5 each)
#   -B BUILDDIR   meson build directory (default build/bench, release)
#   -h            this help
# Prints, per command, the wall time of each call (min, median, max) and
# the daemon's exec-to-decision figures for an exec load (100/s of
# /bin/true in a protected unit) that runs during the calls. Everything
# it starts and its cgroups are removed on every exit.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
n=10000
units=100
calls=5
b="$top/build/bench"
usage() { sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; }
[ "${1:-}" = --help ] && { usage; exit 0; }
while getopts "n:u:c:B:h" o; do
	case $o in
	n) n=$OPTARG ;;
	u) units=$OPTARG ;;
	c) calls=$OPTARG ;;
	B) b=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "status-scale: run as root" >&2; exit 1; }
command -v dbus-daemon >/dev/null || { echo "status-scale: needs dbus-daemon" >&2; exit 1; }
[ -d "$b" ] || { tools/deps.sh build && meson setup "$b" -Dbuildtype=release >/dev/null; }
ninja -C "$b" >/dev/null
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "status-scale: no cgroup2 file system mounted" >&2; exit 1; }
pid_max=$(cat /proc/sys/kernel/pid_max)
[ "$n" -lt $((pid_max / 2)) ] || { echo "status-scale: -n $n is too close to kernel.pid_max $pid_max" >&2; exit 1; }
[ "$(ulimit -n)" -gt $((n + 1000)) ] || ulimit -n $((n + 1000))

S=execguard-bench-status-$$.slice
T=$(mktemp -d /tmp/execguard-status-XXXXXX)
daemon='' bus='' spawners=() load=''
cleanup() {
	# a child forked for "cmd &" and signalled before its exec runs this
	# inherited trap too (bash): only this script's own shell cleans up
	[ "$BASHPID" = "$$" ] || return 0
	set +e
	[ -n "$load" ] && kill "$load" 2>/dev/null
	[ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	for p in "${spawners[@]}"; do kill -- -"$p" 2>/dev/null; done
	[ -n "$bus" ] && kill "$bus" 2>/dev/null
	if [ -d "$cg2/$S" ]; then
		for d in "$cg2/$S"/*/ "$cg2/$S"/; do
			[ -f "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill"
		done
		for _ in $(seq 100); do
			[ -z "$(cat "$cg2/$S"/*/cgroup.procs 2>/dev/null)" ] && break
			sleep 0.1
		done
		rmdir "$cg2/$S"/*/ "$cg2/$S" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir -p "$T/etc" "$T/cgroot/$S"
echo 0 > "$T/cgroot/$S/memory.exec_protect"
mkdir "$cg2/$S"
for k in $(seq "$units"); do
	mkdir "$cg2/$S/bench-$k.service" "$T/cgroot/$S/bench-$k.service"
	echo 0 > "$T/cgroot/$S/bench-$k.service/memory.exec_protect"
done
cat > "$T/etc/execguard.conf" <<CONF
[Daemon]
Backend=kernel
[Rule bench]
MatchUnit=bench-*.service
Protect=yes
# Processes followed, as before cgroups were decided whole: a rule that
# names executables keeps the kernel backend on the process path, whose
# status this measures (the fake tree has no cgroup.procs to read).
[Rule processes]
MatchExe=*
CONF
chmod 644 "$T/etc/execguard.conf"
chmod 711 "$T"
sed -e "s|@SOCKET@|$T/bus.sock|" -e "s|@POLICY@|$top/units/org.execguard.Manager1.conf|" \
	tests/host/bus/bus.conf.in > "$T/bus.conf"
bus=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-pid)
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/bus.sock"
"$b/daemon/execguardd" -c "$T/etc/execguard.conf" --cgroup-root="$T/cgroot" --log-target=stderr \
	> "$T/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 200); do grep -q "on the system bus" "$T/daemon.log" && break; sleep 0.1; done
grep -q "on the system bus" "$T/daemon.log" || { cat "$T/daemon.log"; exit 1; }

protected_now() {
	local c
	c=$(grep -c "stats (on request)" "$T/daemon.log")
	kill -USR1 "$daemon"
	while [ "$(grep -c "stats (on request)" "$T/daemon.log")" -le "$c" ]; do sleep 0.1; done
	grep "stats (on request)" "$T/daemon.log" | tail -n 1 | sed -n 's/.*protected now \([0-9]*\).*/\1/p'
}

echo "starting $n protected processes in $units units ..."
per=$((n / units))
for k in $(seq "$units"); do
	m=$per
	[ "$k" = "$units" ] && m=$((n - per * (units - 1)))
	setsid sh -c 'echo $$ > "$0/cgroup.procs" && i=0 && while [ $i -lt "$1" ]; do sleep 3600 & i=$((i + 1)); done && wait' \
		"$cg2/$S/bench-$k.service" "$m" > /dev/null 2>&1 &
	spawners+=($!)
done
start=$(date +%s)
while [ "$(protected_now)" -lt "$n" ]; do
	[ $(($(date +%s) - start)) -lt 600 ] || { echo "status-scale: only $(protected_now) of $n protected after 600 s" >&2; exit 1; }
	sleep 2
done
echo "$n processes protected after $(($(date +%s) - start)) s"

cc -O2 -o "$T/execload" bench/execload.c
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg2/$S/bench-1.service" \
	"$T/execload" -t 100 3600 /bin/true > /dev/null 2>&1 &
load=$!
sleep 2
kill -USR1 "$daemon"; sleep 0.5
before=$(grep "stats (on request)" "$T/daemon.log" | tail -n 1)

# time_calls CMD...: wall seconds of each call, sorted
time_calls() {
	local t0 t1
	for _ in $(seq "$calls"); do
		t0=$(date +%s%N)
		"$b/daemon/execguardctl" "$@" > "$T/out" 2>&1 || { cat "$T/out"; exit 1; }
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000000))
	done | sort -n
}
row() { # NAME then sorted ms values on stdin
	local v
	mapfile -t v
	printf '%-22s %8s %8s %8s\n' "$1" "${v[0]}" "${v[$(( ${#v[@]} / 2 ))]}" "${v[-1]}"
}
printf '%-22s %8s %8s %8s\n' "call (ms)" min median max
time_calls status | row "execguardctl status"
rows=$(grep -c "bench-" "$T/out" || true)
time_calls --json status | row "execguardctl --json status"
time_calls libs | row "execguardctl libs"
kill -USR1 "$daemon"; sleep 0.5
after=$(grep "stats (on request)" "$T/daemon.log" | tail -n 1)
f() { sed -n "s/.*$1 \\([0-9]*\\).*/\\1/p" <<<"$2"; }
echo "status listed $rows units"
echo "exec events during the calls: $(( $(f "exec events" "$after") - $(f "exec events" "$before") )); daemon exec-to-decision (since its start, from its histogram): p50 $(f "exec-to-decision p50" "$after") us, p99 $(f p99 "$after") us, max $(f "p99 [0-9]* us max" "$after") us"
echo "command: bench/status-scale.sh -n $n -u $units -c $calls"
