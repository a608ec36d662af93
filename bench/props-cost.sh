#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What one read of the daemon's properties costs once it has decided
# about many processes (issue 30: every read sorted the last 16,384
# latency samples; now the latency is a histogram). Starts execguardd
# (Backend=none) on a private system-like bus, has it decide about N
# execs of /bin/true (bench/execload), then times R calls of
# org.freedesktop.DBus.Properties.GetAll with busctl and prints min,
# median and max, the daemon's own CPU per call (utime + stime from
# /proc/PID/stat around the calls), and the command.
#
# Usage: bench/props-cost.sh [-n EXECS] [-r READS] [-d EXECGUARDD] BUILD-DIR
#   (as root: the proc connector)
set -euo pipefail
n=20000
reads=20
daemon=
while getopts n:r:d: o; do
	case $o in
	n) n=$OPTARG ;;
	r) reads=$OPTARG ;;
	d) daemon=$OPTARG ;;
	*) echo "usage: $0 [-n EXECS] [-r READS] [-d EXECGUARDD] BUILD-DIR" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
b=${1:?usage: $0 [-n EXECS] [-r READS] [-d EXECGUARDD] BUILD-DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
daemon=${daemon:-$b/daemon/execguardd}
[ "$(id -u)" = 0 ] || { echo "props-cost: needs root (proc connector)" >&2; exit 1; }
T=$(mktemp -d /tmp/execguard-props-XXXXXX)
bus='' dpid=''
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	[ -n "$bus" ] && kill "$bus" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
chmod 711 "$T"
sed -e "s|@SOCKET@|$T/bus.sock|" -e "s|@POLICY@|$src/units/org.execguard.Manager1.conf|" \
	"$src/tests/host/bus/bus.conf.in" > "$T/bus.conf"
bus=$(dbus-daemon --config-file="$T/bus.conf" --fork --print-pid)
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/bus.sock
printf '[Daemon]\nBackend=none\n[Rule none]\nMatchUnit=no-such.service\nProtect=yes\n' > "$T/execguard.conf"
"$daemon" -c "$T/execguard.conf" --state-dir="$T/state" --log-target=stderr --log-level=warning 2> "$T/daemon.log" &
dpid=$!
for _ in $(seq 100); do
	busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" status org.execguard.Manager1 > /dev/null 2>&1 && break
	sleep 0.2
done
decisions() {
	busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" get-property org.execguard.Manager1 /org/execguard/Manager1 \
		org.execguard.Manager1 Decisions | awk '{print $2}'
}
"$b/bench/execload" 2000 "$((n / 2000 + 1))" /bin/true > /dev/null
for _ in $(seq 300); do [ "$(decisions)" -ge "$n" ] && break; sleep 0.2; done
echo "decisions: $(decisions)"
# the daemon's own CPU (utime + stime, clock ticks) around the calls:
# what a read costs it, whatever busctl and the machine's load cost
ticks() { awk '{print $14 + $15}' "/proc/$dpid/stat"; }
sleep 1
t0=$(ticks)
for _ in $(seq "$reads"); do
	s=$(date +%s%N)
	busctl --address="$DBUS_SYSTEM_BUS_ADDRESS" call org.execguard.Manager1 /org/execguard/Manager1 \
		org.freedesktop.DBus.Properties GetAll s org.execguard.Manager1 > /dev/null
	echo $((($(date +%s%N) - s) / 1000))
done | sort -n > "$T/us"
t1=$(ticks)
awk '{v[NR] = $1} END {printf "GetAll: min %.1f ms, median %.1f ms, max %.1f ms over %d calls (busctl included)\n", v[1] / 1000, v[int((NR + 1) / 2)] / 1000, v[NR] / 1000, NR}' "$T/us"
awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" -v n="$reads" \
	'BEGIN {printf "daemon CPU: %.1f ms per GetAll (%d ticks of 1/%d s over %d calls)\n", (b - a) * 1000 / hz / n, b - a, hz, n}'
echo "command: bench/props-cost.sh -n $n -r $reads -d $daemon $b"
