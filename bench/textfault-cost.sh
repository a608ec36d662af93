#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the text-fault reader (daemon/textfault.c) costs: UNITS cgroups
# under a test slice with PROCESSES processes in all, each unit running
# its own copy of sleep (so no two units share a program file: every
# unit's ranges are opened and watched, the dearer case), read at the
# daemon's interval for SECONDS, by tests/textfault-probe (the reader as
# the daemon runs it, nothing else in that process).
#
# Usage (as root): bench/textfault-cost.sh [-u UNITS] [-n PROCESSES] [-s SECONDS] [-i MS] [-e] [-B BUILDDIR]
#   -u UNITS      cgroups SLICE/tf-K.service (default 100)
#   -n PROCESSES  sleeps spread over the units (default 1000)
#   -s SECONDS    how long to sample (default 60)
#   -i MS         the interval (default 2000, TEXT_FAULTS_MIN_INTERVAL_USEC)
#   -e            force the estimate where the kernel counts (pgmajfault_exec)
#   -B BUILDDIR   meson build directory (default build/bench, release)
#   -h            this help
# Prints the reader's CPU for the first round (maps read, files opened)
# and over the rounds after it as percent of one CPU, and the command.
# Everything it starts and its cgroups are removed on every exit.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
units=100
n=1000
secs=60
interval=2000
est=
b="$top/build/bench"
usage() { sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; }
[ "${1:-}" = --help ] && { usage; exit 0; }
cmdline="bench/textfault-cost.sh $*"
while getopts "u:n:s:i:eB:h" o; do
	case $o in
	u) units=$OPTARG ;;
	n) n=$OPTARG ;;
	s) secs=$OPTARG ;;
	i) interval=$OPTARG ;;
	e) est=--estimate ;;
	B) b=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "textfault-cost: run as root" >&2; exit 1; }
[ -d "$b" ] || { tools/deps.sh build && meson setup "$b" -Dbuildtype=release >/dev/null; }
ninja -C "$b" tests/textfault-probe >/dev/null
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "textfault-cost: no cgroup2 file system mounted" >&2; exit 1; }

S=execguard-bench-textfault-$$.slice
# Program copies on a disk file system (tmpfs text is not watched).
W=$(mktemp -d /var/tmp/execguard-textfault-cost-XXXXXX)
spawners=()
cleanup() {
	[ "$BASHPID" = "$$" ] || return 0
	set +e
	for p in "${spawners[@]}"; do kill -- -"$p" 2>/dev/null; done
	if [ -d "$cg2/$S" ]; then
		for d in "$cg2/$S"/*/; do
			[ -f "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill"
			while read -r p; do kill -KILL "$p" 2>/dev/null; done <"$d/cgroup.procs"
		done
		for _ in $(seq 100); do
			[ -z "$(cat "$cg2/$S"/*/cgroup.procs 2>/dev/null)" ] && break
			sleep 0.1
		done
		rmdir "$cg2/$S"/*/ "$cg2/$S" 2>/dev/null
	fi
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

mkdir "$cg2/$S"
per=$((n / units))
cgs=()
for k in $(seq "$units"); do
	mkdir "$cg2/$S/tf-$k.service"
	cp "$(command -v sleep)" "$W/sleep-$k"
	m=$per
	[ "$k" = "$units" ] && m=$((n - per * (units - 1)))
	setsid sh -c 'echo $$ >"$0/cgroup.procs" && i=0 && while [ $i -lt "$1" ]; do "$2" 3600 & i=$((i + 1)); done && wait' \
		"$cg2/$S/tf-$k.service" "$m" "$W/sleep-$k" >/dev/null 2>&1 &
	spawners+=($!)
	cgs+=("/$S/tf-$k.service")
done
# Every process started (each unit also holds its spawning shell).
want=$((n + units))
for _ in $(seq 600); do
	have=$(cat "$cg2/$S"/*/cgroup.procs | wc -l)
	[ "$have" -ge "$want" ] && break
	sleep 0.1
done
echo "$have processes in $units units (${n} sleeps and a shell each); sampling every $interval ms for $secs s ..."
rounds=$((secs * 1000 / interval + 1))
out=$("$b/tests/textfault-probe" $est --quiet --interval "$interval" --count "$rounds" "${cgs[@]}")
# One line with what each reading rested on, for the record.
"$b/tests/textfault-probe" $est --interval 0 --count 1 "${cgs[0]}" | head -n 1
read -r _ _ first _ cpu _ wall _ pct <<<"$out"
echo "first round (maps read, files opened): $((first / 1000)) ms of CPU"
echo "after it: $((cpu / 1000)) ms of CPU in $((wall / 1000)) ms: ${pct}% of one CPU"
echo "command: $cmdline"
