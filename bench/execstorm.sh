#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon under an exec storm: short-lived processes at rising rates
# in a protected cgroup, with long-lived ones started among them. Per
# backend and rate: exec-to-decision p50/p99, events lost (overflows),
# long-lived processes missed after recovery, daemon CPU per exec event,
# resident memory. Then the polling baseline (a prelockd-style /proc scan).
# Run as root:  bench/execstorm.sh [-r "RATES"] [-s SECONDS] [-b "BACKENDS"]
set -eu
cd "$(dirname "$0")/.."
top=$PWD
rates="250 500 1000 2000 4000"
seconds=5
backends="none kernel lock"
while getopts "r:s:b:" o; do
	case $o in
	r) rates=$OPTARG ;;
	s) seconds=$OPTARG ;;
	b) backends=$OPTARG ;;
	*) echo "usage: $0 [-r RATES] [-s SECONDS] [-b BACKENDS]" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "execstorm: run as root" >&2; exit 1; }
tools/deps.sh build
b="$top/build/bench"
[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
ninja -C "$b" >/dev/null
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
T=$(mktemp -d /tmp/execguard-bench-XXXXXX)
cg=execguard-bench-$$
mkdir "$cg2/$cg"
daemon=
cleanup() {
	[ -z "$daemon" ] || kill -9 "$daemon" 2>/dev/null || true
	while read -r p; do kill -9 "$p" 2>/dev/null || true; done < "$cg2/$cg/cgroup.procs"
	sleep 0.3
	rmdir "$cg2/$cg" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/cgroot/$cg" "$T/etc/execguard.d"
echo 0 > "$T/cgroot/$cg/memory.exec_protect"

# field NAME LINE: the number after NAME in a stats line
field() { sed -E "s/.*$1 ([0-9.]+).*/\\1/" <<<"$2"; }
stats() {
	local before
	before=$(grep -c "stats (on request)" "$T/log" || true)
	kill -USR1 "$daemon"
	for _ in $(seq 100); do
		[ "$(grep -c "stats (on request)" "$T/log" || true)" -gt "$before" ] && break
		sleep 0.05
	done
	grep "stats (on request)" "$T/log" | tail -n 1
}

echo "execstorm: $(nproc) CPUs, kernel $(uname -r), $seconds s per rate"
echo "command: bench/execstorm.sh -r \"$rates\" -s $seconds -b \"$backends\""
printf '\n%-7s %7s %7s %9s %9s %9s %6s %7s %7s %9s %8s %8s %8s\n' backend asked/s got/s p50_us p99_us max_us lost rescans missed cpu_us/ev rss_KiB pss_KiB anon_KiB
for backend in $backends; do
	for rate in $rates; do
		cat > "$T/etc/execguard.conf" <<CONF
[Daemon]
Backend=$backend
[Rule storm]
MatchCgroup=/$cg
Protect=yes
CONF
		chmod -R go-w "$T/etc"
		extra=()
		[ "$backend" = kernel ] && extra=(--cgroup-root="$T/cgroot")
		"$b/daemon/execguardd" -c "$T/etc/execguard.conf" --log-target=stderr "${extra[@]}" >"$T/log" 2>&1 &
		daemon=$!
		for _ in $(seq 100); do grep -q "ready:" "$T/log" && break; sleep 0.05; done
		grep -q "ready:" "$T/log" || { echo "execstorm: daemon did not start:"; cat "$T/log"; exit 1; }
		s0=$(stats)
		# 20 long-lived processes started among the short ones
		(
			for i in $(seq 20); do
				sh -c 'echo $$ > "$0/cgroup.procs"; exec sleep 600' "$cg2/$cg" &
				sleep "$(awk -v s="$seconds" 'BEGIN{print s/20}')"
			done
		) &
		spawner=$!
		got=$(sh -c 'echo $$ > "$0/cgroup.procs"; exec "$1" "$2" "$3" /bin/true' "$cg2/$cg" "$b/bench/execload" "$rate" "$seconds" | sed -E 's/.*= ([0-9]+)\/s.*/\1/')
		wait "$spawner"
		sleep 2
		s1=$(stats)
		ev=$(( $(field "exec events" "$s1") - $(field "exec events" "$s0") ))
		cpu=$(awk -v a="$(field cpu "$s0")" -v b="$(field cpu "$s1")" -v e="$ev" 'BEGIN{printf "%.1f", e ? (b-a)/e : 0}')
		rss=$(awk '/^VmRSS/{print $2}' "/proc/$daemon/status")
		# PSS shares the libraries' pages out among their users; RssAnon
		# is the daemon's own memory.
		pss=$(awk '/^Pss:/{print $2}' "/proc/$daemon/smaps_rollup")
		anon=$(awk '/^RssAnon/{print $2}' "/proc/$daemon/status")
		prot=$(field "protected now" "$s1")
		missed=$((20 - prot))
		[ $missed -lt 0 ] && missed=0
		printf '%-7s %7s %7s %9s %9s %9s %6s %7s %7s %9s %8s %8s %8s\n' "$backend" "$rate" "$got" \
			"$(field p50 "$s1")" "$(field p99 "$s1")" "$(field max "$s1")" \
			"$(field overflows "$s1")" "$(field "full rescans" "$s1")" "$missed" "$cpu" "$rss" "$pss" "$anon"
		kill -TERM "$daemon"
		wait "$daemon" || true
		daemon=
		while read -r p; do kill -9 "$p" 2>/dev/null || true; done < "$cg2/$cg/cgroup.procs"
		sleep 0.3
	done
done

echo
echo "polling baseline (what prelockd does each interval: read every process's maps and cgroup):"
"$b/bench/procscan" 20
scan_ms=$("$b/bench/procscan" 20 | sed -E 's/.*, ([0-9.]+) ms CPU per full scan.*/\1/')
for interval in 1 10 300; do
	awk -v ms="$scan_ms" -v i="$interval" 'BEGIN{printf "  every %3d s: %.3f%% of a CPU, detection delay mean %.1f s, worst %d s\n", i, ms/10/i, i/2, i}'
done
echo "(p50/p99/max: exec-to-decision, from the kernel's exec timestamp to the daemon's decision;"
echo " lost: connector overflows; missed: long-lived processes not protected after recovery, of 20)"
