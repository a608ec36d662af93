# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Shared by the host integration tests: they run the real execguardd on
# the real proc connector and cgroup2 of this machine (as root), with a
# fake cgroup tree only where the machine's kernel lacks the file.
# The one library of the host tests: tests/host/lock/lib.sh and
# tests/host/bus/lib-bus.sh source it and add only what is their own.
#
# Every test starts with one prologue: test_init NEED... (see there).
# Failing: fail MESSAGE ends the test at once (exit 1, with the tail of
# the daemon's log); fail_later MESSAGE records a failure and lets the
# test go on to check the rest, and the test exits 1 at its end. pass
# and skip (exit 77) say what held or why nothing could be checked.
set -u
shopt -s extglob

EXECGUARDD=${EXECGUARDD:-}
T=
# The daemon's log (--log-target=stderr-fields): what fail shows and
# has_event/wait_event read. The lock tests point it at their driver's.
EVENT_LOG=
CG2=
DAEMON_PID=
KIDS=()
CGROUPS=()
EXIT_HOOKS=()
FAILED=0

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*"
	FAILED=1
	[ -n "$EVENT_LOG" ] && [ -f "$EVENT_LOG" ] && { echo "--- daemon log"; tail -n 40 "$EVENT_LOG"; }
	exit 1
}
fail_later() { echo "FAIL: $*"; FAILED=1; }
pass() { echo "PASS: $*"; }

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (proc connector, cgroup writes, mlock)"
}

need_cgroup2() {
	CG2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
	[ -n "$CG2" ] || skip "no cgroup2 file system mounted"
}

need_dbus() {
	command -v dbus-daemon > /dev/null || skip "dbus-daemon is not installed"
}

# on_exit CMD: run CMD (eval'd) at exit, before the common cleanup;
# hooks run newest first.
on_exit() { EXIT_HOOKS+=("$1"); }

# kill_own [-SIGNAL] PID...: signal (default SIGKILL) those that are
# still this shell's children. A PID kept from earlier may belong to
# another process by now: tests here make the kernel reuse PIDs at once
# (ns_last_pid, tens of thousands of forks).
kill_own() {
	local k stat fields sig=-KILL
	case ${1:-} in -*) sig=$1; shift ;; esac
	for k; do
		read -r stat 2>/dev/null < "/proc/$k/stat" || continue
		read -ra fields <<< "${stat##*) }" # state ppid ...
		[ "${fields[1]}" = "$$" ] && kill "$sig" "$k" 2>/dev/null
	done
	return 0
}

cleanup() {
	kill_own "${KIDS[@]}"
	[ -n "$DAEMON_PID" ] && kill_own "$DAEMON_PID"
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
	[ -n "$T" ] && [ -z "${KEEP_T:-}" ] && rm -rf "$T"
	return 0
}

on_exit_run() {
	local rc=$? i
	# Only the test's own shell cleans up. A child forked for "cmd &"
	# that is signalled before it execs runs the inherited EXIT trap
	# (bash), and would kill the test's daemon and remove its cgroups
	# while the test goes on: reuse_pid's kill of an unwanted PID did.
	[ "$BASHPID" = "$$" ] || exit "$rc"
	for ((i = ${#EXIT_HOOKS[@]} - 1; i >= 0; i--)); do eval "${EXIT_HOOKS[i]}"; done
	cleanup
	# A failure recorded with fail_later fails the test however it ended
	# (a skip after it too).
	[ "$FAILED" != 0 ] && { [ "$rc" = 0 ] || [ "$rc" = 77 ]; } && rc=1
	exit "$rc"
}

# The prologue of every host test: test_init [NEED...] checks each NEED
# (root, cgroup2, dbus: need_root...; the test skips without it), makes
# the temporary directory $T (under TEST_TMPDIR, default /tmp; KEEP_T=1
# keeps it) and sets the exit trap (on_exit hooks, then the processes,
# the daemon and the cgroups the test made are gone, then $T).
test_init() {
	local n
	for n; do "need_$n"; done
	T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/execguard-host-XXXXXX") || fail "cannot make a temporary directory"
	EVENT_LOG=$T/daemon.log
	trap on_exit_run EXIT
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
	[ -n "$EXECGUARDD" ] || fail "EXECGUARDD is not set (meson sets it)"
	# Emptied here, not by the background job's redirection: that runs
	# in the child, maybe after wait_event has read the last life's log.
	: > "$T/daemon.log"
	"${DAEMON_WRAP[@]}" "$EXECGUARDD" -c "$T/etc/execguard.conf" --log-target=stderr-fields "$@" >> "$T/daemon.log" 2>&1 &
	DAEMON_PID=$!
	wait_event "$READY_SECS" STARTED || fail "daemon did not become ready"
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

# events NAME [FIELD=VALUE...]: the lines of the daemon's log
# (--log-target=stderr-fields, $EVENT_LOG) with the MESSAGE_ID of MID_NAME
# and those fields. FIELD=VALUE as logged (strings quoted:
# EXECGUARD_CGROUP="'/a'"), FIELD~GLOB a pattern (EXECGUARD_EXE~"'*/libc.so.6'").
# A name message-ids.h lacks fails the test (a typo must not make a
# "never logged" check pass).
events() {
	# Bytes, not characters: names need not be UTF-8.
	local id f line LC_ALL=C
	id=$(mid "$1")
	[ -n "$id" ] || fail "no MID_$1 in daemon/message-ids.h"
	shift
	[ -f "$EVENT_LOG" ] || return 0
	while IFS= read -r line; do
		for f in "$@"; do
			if [[ "$f" == +([A-Z_])~* ]]; then
				[[ "$line" == *" ${f%%~*}="${f#*~}[\ \]]* ]] || continue 2
			else
				[[ "$line" == *" $f"[\ \]]* ]] || continue 2
			fi
		done
		printf '%s\n' "$line"
	done < <(grep -aF "MESSAGE_ID=$id" "$EVENT_LOG")
}
# has_event NAME FIELD=VALUE...: such a line is there.
has_event() {
	[ -n "$(mid "$1")" ] || fail "no MID_$1 in daemon/message-ids.h"
	[ -n "$(events "$@")" ]
}
# count_events NAME FIELD=VALUE...: how many.
count_events() { events "$@" | wc -l; }
# last_event NAME FIELD=VALUE...: the newest, for the counters or figures
# its message carries.
last_event() { events "$@" | tail -n 1; }
# problems: the log's lines at priority warning or worse (the level
# stderr prints before such a message), with a MESSAGE_ID or not.
problems() { grep -aE "^execguardd: (emerg|alert|crit|error|warning): " "$EVENT_LOG"; }
# wait_event SECONDS NAME FIELD=VALUE...: until has_event.
wait_event() {
	local secs=$1
	shift
	wait_until "$secs" has_event "$@"
}
# events_newer N NAME FIELD=VALUE...: more than N such lines.
events_newer() {
	local n=$1
	shift
	[ "$(count_events "$@")" -gt "$n" ]
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

# stats: a fresh stats line (SIGUSR1; MID_STATS) and its counters;
# protected_now: its "protected now".
stats() {
	local before
	before=$(count_events STATS)
	kill -USR1 "$DAEMON_PID"
	if ! wait_until 10 events_newer "$before" STATS; then
		# In $(...) a fail would end only the subshell and its log tail
		# would be read as the answer: say it, and answer nothing.
		[ "$BASH_SUBSHELL" -gt 0 ] || fail "no stats line after SIGUSR1"
		echo "no stats line after SIGUSR1" >&2
		return 1
	fi
	last_event STATS
}
protected_now() { stats | sed -n 's/.*protected now \([0-9]*\).*/\1/p'; }
# counter NAME: the counter NAME of a stats line on stdin ("exec batches").
counter() { sed -n "s/.*[:,] $1 \\([0-9]*\\).*/\\1/p"; }

file_value() { cat "$T/cgroot/$1/memory.exec_protect"; }
