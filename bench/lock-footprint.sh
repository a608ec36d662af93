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
#   mapped       sum of the ranges the backend takes: every mapping of
#                those files (r--, r-x, .rodata, relro/.data), as mapped
#   resident     what of those ranges is used: in the page cache (mincore)
#                and mapped by the program as the file's page (pagemap)
#   locked       what the lock backend locked
# and what of the locked lies in the executable mappings (r-x) and what
# in the others (the r-- head, .rodata, relro r-- after relocation, and
# .data pages not yet copied on write, rw-).
#
# With --readahead-kb=N the programs and their libraries are first copied
# to an ext4 on a loop device whose read-ahead is N KiB (the usual disk
# default is 128) and run from there: since Linux 6.16 an exec fault reads
# read_ahead_kb forward, so on a disk set to megabytes (8 MiB on the
# machine this was written on) nearly all of a used text is resident and
# a page-precise lock cannot be smaller than the mapped ranges.
#
# Usage: bench/lock-footprint.sh [--readahead-kb=N] [BUILD_DIR]
#        (as root; default BUILD_DIR: build)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
RA_KB=
if [ "${1:-}" != "${1#--readahead-kb=}" ]; then
	RA_KB=${1#--readahead-kb=}
	shift
fi
BUILD=${1:-$SRC/build}
DRIVER=${LOCK_DRIVER:-$BUILD/tests/lock-driver}
ARGS="${RA_KB:+--readahead-kb=$RA_KB }$*"

[ "$(id -u)" = 0 ] || { echo "needs root (mlock, /proc/PID/map_files)"; exit 77; }
[ -x "$DRIVER" ] || { echo "no $DRIVER: meson setup $BUILD && ninja -C $BUILD (or set LOCK_DRIVER)"; exit 77; }

W=$(mktemp -d /var/tmp/execguard-footprint.XXXXXX)
PIDS=()
LOOP=
cleanup() {
	local p
	# a child forked for "cmd &" and signalled before its exec runs this
	# inherited trap too (bash): only this script's own shell cleans up
	[ "$BASHPID" = "$$" ] || return 0
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "${DRV_PID:-}" ] && { echo quit >&"${DRV[1]}"; wait "$DRV_PID"; } 2>/dev/null
	if [ -n "$LOOP" ]; then
		umount "$W/m" 2>/dev/null || umount -l "$W/m"
		losetup -d "$LOOP"
	fi
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
BASH_BIN=$(command -v bash) PERL_BIN=$(command -v perl) BUSYBOX_BIN=$(command -v busybox)
SSHD_BIN=/usr/sbin/sshd

if [ -n "$RA_KB" ]; then
	# The same programs, from a file system with the given read-ahead.
	[ -x /usr/bin/python3 ] && PY=$(readlink -f /usr/bin/python3)
	truncate -s 512M "$W/img" && mkfs.ext4 -q -F "$W/img" || exit 1
	LOOP=$(losetup -f --show "$W/img") || { echo "no loop device"; exit 77; }
	mkdir -p "$W/m" && mount "$LOOP" "$W/m" || exit 1
	echo "$RA_KB" >"/sys/block/${LOOP#/dev/}/queue/read_ahead_kb" || exit 1
	mkdir -p "$W/m/bin" "$W/m/lib"
	for b in "$PY" "$BASH_BIN" "$PERL_BIN" "$BUSYBOX_BIN" "$SSHD_BIN"; do
		[ -x "$b" ] || continue
		cp "$b" "$W/m/bin/"
		ldd "$b" 2>/dev/null | awk '$3 ~ /^\// { print $3 }' | while read -r l; do
			case $l in */ld-linux*) ;; *) cp -n "$l" "$W/m/lib/" ;; esac
		done
	done
	PY=$W/m/bin/${PY##*/} BASH_BIN=$W/m/bin/bash PERL_BIN=$W/m/bin/perl
	BUSYBOX_BIN=$W/m/bin/busybox SSHD_BIN=$W/m/bin/sshd
	export LD_LIBRARY_PATH=$W/m/lib
	sync
	for f in "$W"/m/bin/* "$W"/m/lib/*; do dd if="$f" iflag=nocache count=0 status=none; done
fi

# (the sleep goes with its shell, so that nothing keeps the loop mount busy)
start bash "$BASH_BIN" -c 'trap "kill \$!; exit" TERM; while :; do sleep 3600 & wait $!; done'
start python3 "$PY" -c 'import json, re, time; json.dumps({"a": [1]}); re.compile("x+"); time.sleep(3600)'
start perl "$PERL_BIN" -MPOSIX -e 'my %h = map { $_ => 1 } 1..1000; POSIX::strftime("%F", localtime); sleep 3600'
start http.server "$PY" -m http.server --bind 127.0.0.1 18080
if [ -x "$BUSYBOX_BIN" ]; then
	start busybox-httpd "$BUSYBOX_BIN" httpd -f -p 127.0.0.1:18081 -h "$W"
	mkdir -p "$W/cron"
	start busybox-crond "$BUSYBOX_BIN" crond -f -c "$W/cron"
fi
if [ -x "$SSHD_BIN" ] && command -v ssh-keygen >/dev/null; then
	ssh-keygen -q -t ed25519 -N '' -f "$W/hostkey" >/dev/null
	mkdir -p /run/sshd
	start sshd "$SSHD_BIN" -D -e -f /dev/null -h "$W/hostkey" -o ListenAddress=127.0.0.1 -p 18022 \
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

# A measurement, not a defence: no re-check timer and no give-back under
# pressure during it (a PSI event would halve what is locked).
printf '[Daemon]\nLockBudget=100%%\nLockRecheckSec=3600\nPressureWindowMSec=10000\nPressureStallMSec=9999\n' >"$W/bench.conf"

measure() { # LABEL
	coproc DRV { exec "$DRIVER" "$W/bench.conf" 2>>"$W/driver.err"; }
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
	printf '%-16s %5s %12s %12s %12s %12s\n' program files "whole MiB" "mapped MiB" "used MiB" "locked MiB"
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
		printf "locked = %.1f%% of whole files (%.1fx less), %.1f%% of the mapped image ranges\n",
			100 * l / w, w / l, 100 * l / m }'
	awk '/^range / {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^prot=/) p = substr($i, 6, 3)
			if ($i ~ /^locked=/) l = substr($i, 8)
		}
		by[p == "r-x" ? "r-x" : p == "rw-" ? "rw-" : "r--"] += l; all += l
	} END {
		printf "locked by mapping: r-x %.2f MiB, r-- %.2f MiB, rw- %.2f MiB: %.1f%% outside the text\n",
			by["r-x"] / 1048576, by["r--"] / 1048576, by["rw-"] / 1048576, all ? 100 * (all - by["r-x"]) / all : 0
	}' "$W/dump"
	echo "daemon VmLck: $(awk '/^VmLck:/ { print $2 " kB" }' "/proc/$DRV_PID/status"), pressure events: $(field "$t" pressure_events)"
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
echo "# command: ${LOCK_DRIVER:+LOCK_DRIVER=$LOCK_DRIVER }$0 $ARGS"
if [ -n "$RA_KB" ]; then
	echo "# programs and their libraries copied to a loop ext4 with read_ahead_kb=$RA_KB"
else
	echo "# programs as installed; read_ahead_kb of their disk:" \
		"$(cat "/sys/dev/block/$(mountpoint -d "$(stat -c %m "$BASH_BIN")")/queue/read_ahead_kb" 2>/dev/null || echo '?')"
fi
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
