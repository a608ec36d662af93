# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the host integration tests: they run the real execguardd on
# the real proc connector and cgroup2 of this machine (as root), with a
# fake cgroup tree only where the machine's kernel lacks the file.
set -u

EXECGUARDD=${EXECGUARDD:?set by meson}
T=$(mktemp -d /tmp/execguard-host-XXXXXX)
CG2=
DAEMON_PID=
KIDS=()
CGROUPS=()

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; [ -f "$T/daemon.log" ] && { echo "--- daemon log"; tail -n 40 "$T/daemon.log"; }; exit 1; }
pass() { echo "PASS: $*"; }

cleanup() {
	for k in "${KIDS[@]}"; do kill -9 "$k" 2>/dev/null; done
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
	wait 2>/dev/null
	# Newest first, each subtree deepest first (tests may nest cgroups).
	local i d
	for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do
		[ -d "${CGROUPS[i]}" ] || continue
		while read -r d; do
			# move stragglers out before removing
			if [ -f "$d/cgroup.procs" ]; then
				while read -r p; do echo "$p" > "$CG2/cgroup.procs" 2>/dev/null; done < "$d/cgroup.procs"
			fi
			rmdir "$d" 2>/dev/null
		done < <(find "${CGROUPS[i]}" -depth -type d 2>/dev/null)
	done
	[ -n "${KEEP_T:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (proc connector and cgroup writes)"
}

need_cgroup2() {
	CG2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$CG2" ] || skip "no cgroup2 file system mounted"
}

# A fresh cgroup2 cgroup; prints its path relative to the root.
new_cgroup() {
	local name="$1"
	mkdir "$CG2/$name" || fail "cannot create cgroup $CG2/$name"
	CGROUPS+=("$CG2/$name")
}

# A fake cgroup tree mirroring NAME, with memory.exec_protect files.
fake_cgroup() {
	mkdir -p "$T/cgroot/$1"
	echo 0 > "$T/cgroot/$1/memory.exec_protect"
}

write_conf() {
	mkdir -p "$T/etc/execguard.d"
	cat > "$T/etc/execguard.conf"
	chmod 644 "$T/etc/execguard.conf"
}

# DAEMON_WRAP: a command the daemon runs under (valgrind); READY_SECS:
# how long it may take to get ready.
DAEMON_WRAP=()
READY_SECS=10
start_daemon() {
	"${DAEMON_WRAP[@]}" "$EXECGUARDD" -c "$T/etc/execguard.conf" --log-target=stderr-fields "$@" > "$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	wait_log "ready:" "$READY_SECS" || fail "daemon did not become ready"
}

stop_daemon() {
	kill -TERM "$DAEMON_PID"
	local rc=0
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PID=
	return $rc
}

. "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

# mid NAME: the MESSAGE_ID of MID_NAME, from daemon/message-ids.h.
mid() {
	sed -n "s/^#define MID_$1 \"\([0-9a-f]*\)\"$/\1/p" "$(dirname "${BASH_SOURCE[0]}")/../../daemon/message-ids.h"
}

# has_event NAME FIELD=VALUE...: a daemon log line (--log-target=
# stderr-fields) with that MESSAGE_ID and those fields; values as logged
# (strings quoted: EXECGUARD_CGROUP="'/a'").
has_event() {
	local id f line
	id=$(mid "$1") || return 1
	[ -n "$id" ] || { echo "no MID_$1 in message-ids.h" >&2; return 1; }
	shift
	while IFS= read -r line; do
		for f in "$@"; do
			[[ "$line" == *" $f"[\ \]]* ]] || continue 2
		done
		return 0
	done < <(grep -F "MESSAGE_ID=$id" "$T/daemon.log")
	return 1
}
# wait_event SECONDS NAME FIELD=VALUE...: until has_event.
wait_event() {
	local secs=$1
	shift
	wait_until "$secs" has_event "$@"
}

# wait_progress IDLE_SECONDS DONE_CMD PROGRESS_CMD: for work whose length
# depends on the machine (tens of thousands of forks on a loaded box):
# until DONE_CMD succeeds, failing only when PROGRESS_CMD (which prints a
# number) has not changed for IDLE_SECONDS (scaled). 1 if it stalled.
wait_progress() {
	local idle last now since=$SECONDS
	idle=$(wait_secs "$1")
	last=$($3)
	while ! $2; do
		sleep 1
		now=$($3)
		if [ "$now" != "$last" ]; then
			last=$now
			since=$SECONDS
		elif [ $((SECONDS - since)) -ge "$idle" ]; then
			$2
			return
		fi
	done
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Is a process idle, not spinning? cpu_pct PID SECS: PID's CPU time over the next SECS, in percent of one
# CPU over the wall time that really passed.
cpu_pct() {
	local c0 c1 u0 u1
	read -r u0 _ < /proc/uptime
	c0=$(cpu_ticks "$1")
	sleep "$2"
	read -r u1 _ < /proc/uptime
	c1=$(cpu_ticks "$1")
	awk -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v a="$u0" -v b="$u1" 'BEGIN { printf "%d", c * 100 / hz / (b - a) }'
}

# wait_log PATTERN [SECONDS]: grep -E on the daemon log until it matches.
wait_log() {
	wait_until "${2:-10}" grep -Eq -- "$1" "$T/daemon.log"
}

# run_in CGROUP CMD...: start CMD inside CGROUP, in the background; the
# PID of the exec'd command is in $LAST_PID.
run_in() {
	local cg="$1"
	shift
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG2/$cg" "$@" &
	LAST_PID=$!
	KIDS+=("$LAST_PID")
}

stats_newer() { [ "$(grep -c "stats (on request)" "$T/daemon.log")" -gt "$1" ]; }
# stats: a fresh SIGUSR1 stats line; protected_now: its "protected now".
stats() {
	local before
	before=$(grep -c "stats (on request)" "$T/daemon.log")
	kill -USR1 "$DAEMON_PID"
	wait_until 10 stats_newer "$before" || fail "no stats line after SIGUSR1"
	grep "stats (on request)" "$T/daemon.log" | tail -n 1
}
protected_now() { stats | sed -n 's/.*protected now \([0-9]*\).*/\1/p'; }

file_value() { cat "$T/cgroot/$1/memory.exec_protect"; }
