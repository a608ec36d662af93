#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# How much memory the lock backend pins, against locking whole mapped
# files (what prelockd and memlockd do: mmap + mlock of each file found in
# the maps), on the same set of running programs: bash, python3, perl and
# a few daemons started here (sshd, python3 http.server, busybox httpd and
# syslogd, when installed), each used a little first.
#
# It drives the backend's own code (tests/host/lock/lock-driver) with the
# programs as protected processes, one unit each, lets it re-check once,
# and prints per program and in total (each file counted once), twice:
# with the page cache as found, and after dropping the cached pages of
# those files that no process maps (what reclaim leaves of them):
#   whole files  sum of the sizes of the distinct files with exec mappings
#   exec mapped  sum of the exec ranges (locking whole mapped segments)
#   resident     what of those ranges is in the page cache (mincore)
#   locked       what the lock backend locked
#
# Usage: bench/lock-footprint.sh [BUILD_DIR]   (as root; default: build)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$SRC/build}
DRIVER=${LOCK_DRIVER:-$BUILD/tests/lock-driver}

[ "$(id -u)" = 0 ] || { echo "needs root (mlock, /proc/PID/map_files)"; exit 77; }
[ -x "$DRIVER" ] || { echo "no $DRIVER: meson setup $BUILD && ninja -C $BUILD (or set LOCK_DRIVER)"; exit 77; }

W=$(mktemp -d /tmp/execguard-footprint.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${DRV_PID:-}" ] && { echo quit >&"${DRV[1]}"; wait "$DRV_PID"; } 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
PAGE=$(getconf PAGESIZE)

NAMES=()
declare -A PID_OF
start() { # NAME CMD...
	local name=$1; shift
	"$@" >"$W/$name.out" 2>&1 &
	PIDS+=("$!")
	PID_OF[$name]=$!
	NAMES+=("$name")
}

PY=$(python3 -c 'import sys; print(sys.executable)')
start bash bash -c 'while :; do sleep 3600; done'
start python3 "$PY" -c 'import json, re, time; json.dumps({"a": [1]}); re.compile("x+"); time.sleep(3600)'
start perl perl -MPOSIX -e 'my %h = map { $_ => 1 } 1..1000; POSIX::strftime("%F", localtime); sleep 3600'
start http.server "$PY" -m http.server --bind 127.0.0.1 18080
if command -v busybox >/dev/null; then
	start busybox-httpd busybox httpd -f -p 127.0.0.1:18081 -h "$W"
	mkdir -p "$W/cron"
	start busybox-crond busybox crond -f -c "$W/cron"
fi
if [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null; then
	ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey" >/dev/null
	mkdir -p /run/sshd
	start sshd /usr/sbin/sshd -D -e -f /dev/null -h "$W/hostkey" -o ListenAddress=127.0.0.1 -p 18022 \
		-o PidFile=none
fi
sleep 1
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
mib() { awk -v b="$1" 'BEGIN { printf "%8.2f", b / 1048576 }'; }

# Exec-mapped files of a pid, "dev:ino path" unique.
files_of() {
	awk '$2 ~ /x/ && $5 != 0 && $6 ~ /^\// { print $4 ":" $5, $6 }' "/proc/$1/maps" | sort -u
}
whole_of() { # the page-rounded sizes of the files, those still at their path
	local sum=0 key path ino size
	while read -r key path; do
		ino=${key##*:}
		[ "$(stat -c %i "$path" 2>/dev/null)" = "$ino" ] || continue
		size=$(stat -c %s "$path")
		sum=$((sum + (size + PAGE - 1) / PAGE * PAGE))
	done
	echo "$sum"
}

cmd() {
	echo "$*" >&"${DRV[1]}"
	read -r l <&"${DRV[0]}"
	[ "$l" = ok ] || echo "driver: $*: $l" >&2
}

measure() { # LABEL
	coproc DRV { exec "$DRIVER" 2>>"$W/driver.err"; }
	DRV_PID=$!
	read -r l <&"${DRV[0]}"
	[ "$l" = ready ] || { echo "driver: $l"; cat "$W/driver.err"; exit 1; }
	for n in "${NAMES[@]}"; do
		kill -0 "${PID_OF[$n]}" 2>/dev/null || continue
		cmd protect "${PID_OF[$n]}" "$n"
	done
	cmd recheck
	echo dump >&"${DRV[1]}"
	while read -r l <&"${DRV[0]}" && [ "$l" != end ]; do echo "$l"; done >"$W/dump"

	echo
	echo "## $1"
	printf '%-16s %5s %12s %12s %12s %12s\n' program files "whole MiB" "mapped MiB" "resident MiB" "locked MiB"
	: >"$W/allfiles"
	for n in "${NAMES[@]}"; do
		pid=${PID_OF[$n]}
		kill -0 "$pid" 2>/dev/null || continue
		files_of "$pid" >"$W/files.$n"
		cat "$W/files.$n" >>"$W/allfiles"
		u=$(grep "^unit .* name=$n$" "$W/dump")
		printf '%-16s %5s %12s %12s %12s %12s\n' "$n" "$(wc -l <"$W/files.$n")" \
			"$(mib "$(whole_of <"$W/files.$n")")" "$(mib "$(field "$u" mapped)")" \
			"$(mib "$(field "$u" resident)")" "$(mib "$(field "$u" locked)")"
	done
	sort -u "$W/allfiles" >"$W/allfiles.u"
	t=$(grep '^total ' "$W/dump")
	whole=$(whole_of <"$W/allfiles.u")
	locked=$(field "$t" locked)
	printf '%-16s %5s %12s %12s %12s %12s\n' "all (distinct)" "$(wc -l <"$W/allfiles.u")" "$(mib "$whole")" \
		"$(mib "$(field "$t" mapped)")" "$(mib "$(field "$t" resident)")" "$(mib "$locked")"
	awk -v w="$whole" -v m="$(field "$t" mapped)" -v l="$locked" 'BEGIN {
		printf "locked = %.1f%% of whole files (%.1fx less), %.1f%% of the mapped exec ranges\n",
			100 * l / w, w / l, 100 * l / m }'
	echo "daemon VmLck: $(awk '/^VmLck:/ { print $2 " kB" }' "/proc/$DRV_PID/status")"
	if [ -n "${VERBOSE:-}" ]; then
		echo "# per file (lock backend):"
		grep '^file ' "$W/dump"
	fi
	echo quit >&"${DRV[1]}"
	wait "$DRV_PID" 2>/dev/null
	DRV_PID=
}

use_daemons() {
	"$PY" -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:18080/").read()' 2>/dev/null
	command -v busybox >/dev/null && busybox wget -q -O /dev/null http://127.0.0.1:18081/ 2>/dev/null
	command -v ssh-keyscan >/dev/null && ssh-keyscan -p 18022 127.0.0.1 >/dev/null 2>&1
	sleep 0.5
}

echo "# bench/lock-footprint.sh on $(uname -r), page size $PAGE, $(date -u +%FT%TZ)"
echo "# command: ${LOCK_DRIVER:+LOCK_DRIVER=$LOCK_DRIVER }$0 $*"
use_daemons
measure "page cache as found"

# What memory pressure leaves: drop the cached pages of these files that
# no process maps (fadvise DONTNEED skips mapped pages), use the daemons
# again, and measure anew. whole files and mapped ranges do not change.
for n in "${NAMES[@]}"; do
	kill -0 "${PID_OF[$n]}" 2>/dev/null && files_of "${PID_OF[$n]}"
done | sort -u | while read -r key path; do
	dd if="$path" iflag=nocache count=0 status=none 2>/dev/null
done
use_daemons
measure "after dropping unmapped cache pages of those files (what reclaim would leave)"
