#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How long execguard-oci-hook holds up a container's start: the wall time
# of one hook run, from its exec to its exit, with execguardd answering
# (backend none: the daemon decides, nothing is written)
# and with no daemon on the bus. A private dbus-daemon with the project's
# bus policy stands in for the system bus; the "container" is a cgroup
# named as podman names one, with a sleep in it. Prints the median, min
# and max of N runs of each (interleaved) and of /bin/true timed the same
# way (what any exec costs on the machine at that moment), and the command.
#
# Usage (as root): bench/oci-hook.sh [-n RUNS] [-B BUILDDIR]   (default 30, build)
set -eu
cd "$(dirname "$0")/.."
top=$PWD
runs=30
b=$top/build
while getopts n:B:h o; do
	case $o in
	n) runs=$OPTARG ;;
	B) b=$OPTARG ;;
	*) sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; exit 2 ;;
	esac
done
hook=$b/daemon/execguard-oci-hook
[ -x "$hook" ] || { echo "no $hook: build first (meson setup $b; ninja -C $b)"; exit 1; }
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "no cgroup2 mounted"; exit 1; }
t=$(mktemp -d /tmp/execguard-bench-hook-XXXXXX)
id=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cg=$cg2/execguard-bench-$$.slice/libpod-$id.scope
bus='' daemon='' sleeper=''
cleanup() {
	for p in $sleeper $daemon $bus; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rmdir "$cg" "$(dirname "$cg")" 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT INT TERM
sed -e "s|@SOCKET@|$t/bus.sock|" -e "s|@POLICY@|$top/units/org.execguard.Manager1.conf|" \
	tests/host/bus/bus.conf.in > "$t/bus.conf"
bus=$(dbus-daemon --config-file="$t/bus.conf" --fork --print-pid)
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$t/bus.sock
mkdir -p "$cg"
sh -c 'echo $$ > "$0/cgroup.procs" && exec sleep 3600' "$cg" &
sleeper=$!
printf "[Daemon]\nBackend=none\n" > "$t/execguard.conf"
start_daemon() {
	"$b/daemon/execguardd" -c "$t/execguard.conf" --state-dir="$t/state" --log-target=stderr-fields \
		> "$t/daemon.log" 2>&1 &
	daemon=$!
	for _ in $(seq 100); do
		grep -q 'MESSAGE_ID=2552d8bbedb04de5826890304a5f8a39' "$t/daemon.log" && return 0
		sleep 0.1
	done
	echo "the daemon did not come onto the bus"; tail "$t/daemon.log"; exit 1
}
state=$(printf '{"ociVersion":"1.0.2","id":"%s","status":"created","pid":%d,"annotations":{"io.execguard.protect":"yes"}}' "$id" "$sleeper")
one() { # prints milliseconds
	local s e
	s=$(date +%s%N)
	"$hook" <<<"$state" 2>/dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000)) | awk '{printf "%.2f\n", $1 / 1000}'
}
: > "$t/with" && : > "$t/without" && : > "$t/true"
# The same clock around /bin/true: what any exec costs on this machine now.
base() {
	local s e
	s=$(date +%s%N)
	/bin/true
	e=$(date +%s%N)
	echo $(((e - s) / 1000)) | awk '{printf "%.2f\n", $1 / 1000}'
}
for _ in $(seq "$runs"); do
	base >> "$t/true"
	start_daemon
	one >> "$t/with"
	kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=
	one >> "$t/without"
done
stat() { sort -n "$1" | awk '{v[NR]=$1} END {printf "median %.2f ms, min %.2f, max %.2f (%d runs)", (NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[1], v[NR], NR}'; }
echo "execguard-oci-hook, wall time per run, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg):"
echo "  daemon answering (backend none):              $(stat "$t/with")"
echo "  no daemon on the bus:                         $(stat "$t/without")"
echo "  /bin/true, the same way (any exec):           $(stat "$t/true")"
echo "command: bench/oci-hook.sh -n $runs -B $b"
