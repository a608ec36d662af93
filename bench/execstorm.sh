#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The daemon under an exec storm: short-lived processes at rising rates
# in a cgroup, with long-lived ones started among them. Per mode and rate:
# exec-to-decision p50/p99, events lost (overflows), long-lived processes
# missed after recovery, the daemon's CPU per exec, and that CPU as a
# share of what one fork+exec costs on the same machine (the load
# generator's own CPU and its children's, per exec), resident memory.
# Then the polling baseline (a prelockd-style /proc scan).
# The modes (each a policy for the storm's cgroup):
#   push      Backend=kernel, MatchCgroup= only: the cgroup is protected
#             as a whole, the daemon does not listen to execs at all
#   exe       Backend=kernel, a rule with MatchExe= for the cgroup: every
#             exec there is looked at (its executable read)
#   elsewhere Backend=kernel, a MatchExe= rule for another cgroup: an exec
#             here costs one read of /proc/PID/cgroup (known cgroup)
#   lock      Backend=lock, MatchCgroup=: every process pinned and locked
#   none      Backend=none, MatchExe=: decided and reported only
#
# Usage (as root): bench/execstorm.sh [-r RATES] [-s SECONDS] [-b MODES] [-d DAEMON] [-B BUILDDIR]
#   -r RATES     exec rates to ask of the load generator, per second
#                (default "250 500 1000 2000 4000")
#   -s SECONDS   seconds of load per rate (default 5)
#   -b MODES     modes, from the list above (default "push exe elsewhere lock")
#   -d DAEMON    the execguardd binary to measure (default the build's; an
#                older build, say, with this script and its load generator)
#   -B BUILDDIR  meson build directory (default build/bench, release)
#   -h           this help
# The load generator (bench/execload) runs for SECONDS at most and reports
# the rate it reached; a row where it stayed below 90% of the rate asked
# is marked "SHORT" in the "load" column and explained under the table:
# its figures are for the lower rate. Everything the benchmark starts (daemon, load, the 20
# long-lived processes) and its cgroup are removed on every exit: normal,
# error, Ctrl-C, SIGTERM or SIGHUP.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
rates="250 500 1000 2000 4000"
seconds=5
backends="push exe elsewhere lock"
b="$top/build/bench"
daemon_bin='' daemon_opt=''
usage() { sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; }
[ "${1:-}" = --help ] && { usage; exit 0; }
while getopts "r:s:b:d:B:h" o; do
	case $o in
	r) rates=$OPTARG ;;
	s) seconds=$OPTARG ;;
	b) backends=$OPTARG ;;
	d) daemon_bin=$OPTARG daemon_opt=" -d $OPTARG" ;;
	B) b=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "execstorm: run as root" >&2; exit 1; }
tools/deps.sh build
[ -d "$b" ] || meson setup "$b" -Dbuildtype=release >/dev/null
ninja -C "$b" >/dev/null
daemon_bin=${daemon_bin:-$b/daemon/execguardd}
cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "execstorm: no cgroup2 file system mounted" >&2; exit 1; }
cg=execguard-bench-$$
T=
daemon=
spawner=
load=

# stop_daemon: SIGTERM, then SIGKILL after 5 s
stop_daemon() {
	[ -n "$daemon" ] || return 0
	kill -TERM "$daemon" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
	daemon=
}

# stop_started: kill by PID what this script started for a rate, wherever
# it is (in the cgroup or not yet): the load generator, and the spawner of
# the long-lived processes with its process group (it runs in a session
# of its own, so the group is it and every sh/sleep it started; a fork
# cannot escape a group kill) and each PID it recorded.
stop_started() {
	if [ -n "$spawner" ]; then
		kill -9 -- "-$spawner" 2>/dev/null || kill -9 "$spawner" 2>/dev/null || true
		wait "$spawner" 2>/dev/null || true
		spawner=
	fi
	if [ -n "$load" ]; then
		kill -9 "$load" 2>/dev/null || true
		wait "$load" 2>/dev/null || true
		load=
	fi
	if [ -n "$T" ] && [ -f "$T/pids" ]; then
		while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$T/pids"
		rm -f "$T/pids"
	fi
}

# empty_cgroup: kill every process in the cgroup until cgroup.procs stays
# empty, for at most 10 s: with cgroup.kill (Linux 5.14+) where there is
# one, else freeze it (no fork, no exit path while its list is read; a
# process that joins it freezes too), SIGKILL each, thaw, look again.
empty_cgroup() {
	local d=$cg2/$cg
	[ -d "$d" ] || return 0
	for _ in $(seq 100); do
		[ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || return 0
		if [ -e "$d/cgroup.kill" ]; then
			echo 1 >"$d/cgroup.kill" 2>/dev/null || true
		else
			[ ! -e "$d/cgroup.freeze" ] || echo 1 >"$d/cgroup.freeze" 2>/dev/null || true
			while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$d/cgroup.procs"
			[ ! -e "$d/cgroup.freeze" ] || echo 0 >"$d/cgroup.freeze" 2>/dev/null || true
		fi
		sleep 0.1
	done
	echo "execstorm: warning: processes still in $d after 10 s: $(tr '\n' ' ' <"$d/cgroup.procs")" >&2
	return 1
}

cleanup() {
	local rc=$?
	# a child forked for "cmd &" and signalled before its exec runs this
	# inherited trap too (bash): only this script's own shell cleans up
	[ "$BASHPID" = "$$" ] || exit "$rc"
	trap '' INT TERM HUP
	set +e
	stop_daemon
	stop_started
	empty_cgroup
	if [ -d "$cg2/$cg" ]; then
		# a dying process can keep the cgroup busy for a moment
		for _ in $(seq 50); do
			rmdir "$cg2/$cg" 2>/dev/null && break
			sleep 0.1
		done
		[ ! -d "$cg2/$cg" ] ||
			echo "execstorm: warning: cannot remove $cg2/$cg: $(tr '\n' ' ' <"$cg2/$cg/cgroup.procs")" >&2
	fi
	[ -z "$T" ] || rm -rf "$T"
	exit "$rc"
}
trap cleanup EXIT
# Without these, a signal would end bash without running the EXIT trap.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
T=$(mktemp -d /tmp/execguard-bench-XXXXXX)
mkdir "$cg2/$cg"
mkdir -p "$T/cgroot/$cg" "$T/etc/execguard.d"
echo 0 > "$T/cgroot/$cg/memory.exec_protect"

# field NAME LINE: the number after NAME (an ERE) in a stats line, its
# last match: "exec-to-decision p50", not the cgroups' "p50" after it
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
echo "command: bench/execstorm.sh -r \"$rates\" -s $seconds -b \"$backends\"${daemon_opt}"
short=()
printf '\n%-9s %7s %7s %9s %9s %9s %6s %7s %7s %8s %10s %9s %8s %8s %8s %s\n' mode asked/s got/s p50_us p99_us max_us lost rescans missed events cpu_us/exec fe_us/exec share rss_KiB anon_KiB load
for mode in $backends; do
	backend=kernel exe=
	case $mode in
	push) ;;
	exe) exe="MatchExe=/usr/bin/sleep /bin/sleep" ;;
	elsewhere) exe="MatchExe=/usr/bin/sleep" ;;
	lock) backend=lock ;;
	none) backend=none exe="MatchExe=/usr/bin/sleep /bin/sleep" ;;
	*) echo "execstorm: unknown mode $mode (see --help)" >&2; exit 2 ;;
	esac
	target=/$cg
	[ "$mode" = elsewhere ] && target=/$cg-elsewhere
	for rate in $rates; do
		cat > "$T/etc/execguard.conf" <<CONF
[Daemon]
Backend=$backend
[Rule storm]
MatchCgroup=$target
$exe
Protect=yes
CONF
		chmod -R go-w "$T/etc"
		extra=()
		[ "$backend" = kernel ] && extra=(--cgroup-root="$T/cgroot")
		"$daemon_bin" -c "$T/etc/execguard.conf" --log-target=stderr "${extra[@]}" >"$T/log" 2>&1 &
		daemon=$!
		for _ in $(seq 100); do grep -q "ready:" "$T/log" && break; sleep 0.05; done
		grep -q "ready:" "$T/log" || { echo "execstorm: daemon did not start:"; cat "$T/log"; exit 1; }
		s0=$(stats)
		# 20 long-lived processes started among the short ones, by a
		# spawner in a session of its own (see stop_started); each
		# joins the cgroup, then becomes "sleep 600"
		setsid bash -c '
			for i in $(seq 20); do
				sh -c "echo \$\$ > \"\$0/cgroup.procs\" && exec sleep 600" "$1" &
				echo $! >>"$2"
				sleep "$3"
			done' spawner "$cg2/$cg" "$T/pids" "$(awk -v s="$seconds" 'BEGIN{print s/20}')" &
		spawner=$!
		# the load, for SECONDS at most (-t) however slow the machine,
		# in the background: a signal's trap runs at once while "wait"
		# waits, not only once the load is done
		sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1" -t "$2" "$3" /bin/true' \
			"$cg2/$cg" "$b/bench/execload" "$rate" "$seconds" >"$T/load.out" 2>&1 &
		load=$!
		lrc=0
		wait "$load" || lrc=$?
		load=
		got=$(sed -nE 's/^execload: .*= ([0-9]+)\/s.*/\1/p' "$T/load.out")
		if [ "$lrc" != 0 ] || [ -z "$got" ]; then
			echo "execstorm: load generator failed (exit $lrc): $(cat "$T/load.out")" >&2
			got=
		fi
		wait "$spawner" || true
		spawner=
		# each of the 20 in the cgroup (a slow machine may still be
		# starting the last) before the daemon is asked what it saw
		for _ in $(seq 100); do
			joined=0
			[ -f "$T/pids" ] || break
			while read -r p; do
				grep -qx "$p" "$cg2/$cg/cgroup.procs" && joined=$((joined + 1))
			done <"$T/pids"
			[ "$joined" -ge 20 ] && break
			sleep 0.1
		done
		sleep 2
		s1=$(stats)
		ev=$(( $(field "exec events" "$s1") - $(field "exec events" "$s0") ))
		# per exec started (not per event heard: in push mode it hears none)
		n=$(sed -nE 's/^execload: ([0-9]+) execs, .*/\1/p' "$T/load.out")
		fe=$(sed -nE 's/^execload: .*, ([0-9.]+) us CPU per fork\+exec.*/\1/p' "$T/load.out")
		cpu=$(awk -v a="$(field cpu "$s0")" -v b="$(field cpu "$s1")" -v e="${n:-0}" 'BEGIN{printf "%.1f", e ? (b-a)/e : 0}')
		share=$(awk -v c="$cpu" -v f="${fe:-0}" 'BEGIN{ if (f > 0) printf "%.2f%%", 100 * c / f; else printf "?" }')
		rss=$(awk '/^VmRSS/{print $2}' "/proc/$daemon/status")
		# RssAnon is the daemon's own memory.
		anon=$(awk '/^RssAnon/{print $2}' "/proc/$daemon/status")
		prot=$(field "protected now" "$s1")
		missed=$((20 - prot))
		[ $missed -lt 0 ] && missed=0
		# a cgroup protected as a whole (push) or processes not protected
		# at all (elsewhere): nothing to miss per process
		case $mode in
		push) missed=-; [ "$(cat "$T/cgroot/$cg/memory.exec_protect")" = max ] || missed=cgroup ;;
		elsewhere) missed=- ;;
		esac
		# the load generator may not reach the rate asked (a slow or
		# busy machine): say so, the row is for the rate it reached
		mark=ok
		if [ -z "$got" ]; then
			mark=FAILED
			short+=("$mode $rate/s: the load generator failed; no rate measured")
		elif pct=$(awk -v g="$got" -v r="$rate" 'BEGIN{p = 100 * g / r; printf "%.0f", p; exit !(p < 90)}'); then
			mark="SHORT:$pct%"
			short+=("$mode $rate/s: load fell short: asked $rate/s, got $got/s ($pct%); this row's figures are for $got/s")
		fi
		printf '%-9s %7s %7s %9s %9s %9s %6s %7s %7s %8s %10s %9s %8s %8s %8s %s\n' "$mode" "$rate" "${got:-?}" \
			"$(field "exec-to-decision p50" "$s1")" "$(field p99 "$s1")" "$(field "p99 [0-9]+ us max" "$s1")" \
			"$(field overflows "$s1")" "$(field "full rescans" "$s1")" "$missed" "$ev" "$cpu" "${fe:-?}" "$share" "$rss" "$anon" "$mark"
		stop_daemon
		stop_started
		empty_cgroup || { echo "execstorm: cannot empty $cg2/$cg" >&2; exit 1; }
	done
done
if [ ${#short[@]} -gt 0 ]; then
	echo
	for l in "${short[@]}"; do echo "* $l"; done
fi

echo
echo "polling baseline (what prelockd does each interval: read every process's maps and cgroup):"
"$b/bench/procscan" 20
scan_ms=$("$b/bench/procscan" 20 | sed -E 's/.*, ([0-9.]+) ms CPU per full scan.*/\1/')
for interval in 1 10 300; do
	awk -v ms="$scan_ms" -v i="$interval" 'BEGIN{printf "  every %3d s: %.3f%% of a CPU, detection delay mean %.1f s, worst %d s\n", i, ms/10/i, i/2, i}'
done
echo "(p50/p99/max: exec-to-decision, from the kernel's exec timestamp to the daemon's decision;"
echo " lost: connector overflows; missed: long-lived processes not protected after recovery, of 20"
echo " ('-' where processes are not followed); events: exec events the daemon heard;"
echo " cpu_us/exec: the daemon's CPU per exec started; fe_us/exec: one fork+exec's own CPU;"
echo " share: cpu_us/exec as a share of fe_us/exec, the target under 1%;"
echo " load: SHORT when the load generator reached less than 90% of the rate asked)"
