#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# From a unit's start to its protection: a cgroup made as systemd makes a
# unit's (bench/unitstart: the cgroup, then a process started in it), and
# the time until memory.exec_protect says max, N times per mode. The
# kernel backend on a fake cgroup tree (any kernel), the real cgroup2
# tree for the processes and the real proc connector.
#   push     no rule names executables: the cgroup is decided when it
#            appears (inotify), nothing follows its process
#   process  a rule with MatchExe=: decided at its process's exec
# With -d DAEMON the same modes run with another execguardd too (an
# older build, say), one after the other.
#
# Usage (as root): bench/push-latency.sh [-n RUNS] [-d DAEMON] [-B BUILDDIR]
#   -n RUNS      units started per mode (default 20)
#   -d DAEMON    another execguardd binary to measure the same way
#   -B BUILDDIR  meson build directory (default build/bench, release)
#   -h           this help
# Prints per daemon and mode the median, minimum and maximum in
# milliseconds. Everything it starts and its cgroups are removed on exit.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
runs=20
other=
b="$top/build/bench"
usage() { sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; }
[ "${1:-}" = --help ] && { usage; exit 0; }
while getopts "n:d:B:h" o; do
	case $o in
	n) runs=$OPTARG ;;
	d) other=$OPTARG ;;
	B) b=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "push-latency: run as root" >&2; exit 1; }
[ -d "$b" ] || { tools/deps.sh build && meson setup "$b" -Dbuildtype=release >/dev/null; }
ninja -C "$b" >/dev/null
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "push-latency: no cgroup2 file system mounted" >&2; exit 1; }

S=execguard-bench-push-$$.slice
T=$(mktemp -d /tmp/execguard-push-XXXXXX)
daemon='' kids=()
stop_daemon() {
	[ -n "$daemon" ] || return 0
	kill -TERM "$daemon" 2>/dev/null
	wait "$daemon" 2>/dev/null || true
	daemon=
}
cleanup() {
	[ "$BASHPID" = "$$" ] || return 0
	set +e
	stop_daemon
	for p in "${kids[@]}"; do kill -9 "$p" 2>/dev/null; done
	if [ -d "$cg2/$S" ]; then
		for d in "$cg2/$S"/*/; do
			[ -f "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill"
		done
		sleep 0.5
		rmdir "$cg2/$S"/*/ "$cg2/$S" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir "$cg2/$S"
mkdir -p "$T/etc" "$T/cgroot/$S"
echo 0 > "$T/cgroot/$S/memory.exec_protect"

# measure DAEMON MODE: prints "median min max" in ms over $runs units
measure() {
	local d=$1 mode=$2 exe='' i out t
	[ "$mode" = process ] && exe="MatchExe=/usr/bin/sleep /bin/sleep"
	cat > "$T/etc/execguard.conf" <<CONF
[Daemon]
Backend=kernel
[Rule units]
MatchCgroup=/$S/*
$exe
Protect=yes
CONF
	chmod 644 "$T/etc/execguard.conf"
	"$d" -c "$T/etc/execguard.conf" --cgroup-root="$T/cgroot" --log-target=stderr > "$T/daemon.log" 2>&1 &
	daemon=$!
	for _ in $(seq 200); do grep -q "ready:" "$T/daemon.log" && break; sleep 0.05; done
	grep -q "ready:" "$T/daemon.log" || { cat "$T/daemon.log" >&2; exit 1; }
	: > "$T/times"
	for i in $(seq "$runs"); do
		out=$("$b/bench/unitstart" "$cg2/$S" "$T/cgroot/$S" "u$mode$i-$$.service" "$(command -v sleep)")
		t=$(sed -n 1p <<< "$out")
		kids+=("$(sed -n 2p <<< "$out")")
		[ "$t" = timeout ] && t=5000000
		echo "$t" >> "$T/times"
		sleep 0.2
	done
	stop_daemon
	sort -n "$T/times" | awk '{ v[NR] = $1 } END { printf "%.1f %.1f %.1f\n", v[int((NR + 1) / 2)] / 1000, v[1] / 1000, v[NR] / 1000 }'
}

echo "push-latency: $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $runs units per mode"
echo "command: bench/push-latency.sh -n $runs${other:+ -d $other}"
printf '%-40s %-8s %10s %10s %10s\n' daemon mode median_ms min_ms max_ms
for d in "$b/daemon/execguardd" ${other:+"$other"}; do
	for mode in push process; do
		read -r med min max < <(measure "$d" "$mode")
		printf '%-40s %-8s %10s %10s %10s\n' "$d" "$mode" "$med" "$min" "$max"
	done
done
echo "(from the cgroup's creation, as systemd makes a unit's before it starts its process, to memory.exec_protect=max;"
echo " a run that timed out after 5 s counts as 5000 ms)"
