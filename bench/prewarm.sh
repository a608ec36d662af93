#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Cold starts with and without prewarm, on this host.
#
# A program with 32 MiB of generated text (bench/pressure/gen-text.py, one
# function per page) whose start-up runs 12 MiB of it (48 hot modules, each
# in a shuffled order) is started with its text evicted
# (posix_fadvise(DONTNEED) on the binary), in a cgroup of its own, in three
# modes:
#   cold          no execguardd
#   at exec       execguardd with Prewarm=yes and a record of an earlier
#                 run: the replay starts at the program's exec event, beside
#                 its start
#   at daemon     execguardd started after the eviction (as at boot): its
#                 replay of every record is done before the program starts
# and prints, per mode, the median over --reps runs of the time from main()
# to ready and the program's major faults, and the bytes the replay read
# back against the text the start touched.
#
# With --readahead-kb=N (default 128, the usual disk default) the binary
# is run from an ext4 on a loop device with direct I/O to its backing file
# and that read-ahead: since Linux 6.16 an exec fault reads read_ahead_kb
# forward, and a disk set to megabytes would read most of the text on the
# first faults anyway. --readahead-kb=0 runs it from /var/tmp as it is.
# --dir=DIR runs it from DIR, a directory on a disk of its own with its
# read-ahead as it is (bench/prewarm-vm.sh: the VM's throttled disk).
#
# Usage: bench/prewarm.sh [--readahead-kb=N | --dir=DIR] [--reps=N] [BUILD_DIR]
#        (as root; default BUILD_DIR: build)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
CMD="bench/prewarm.sh $*"
RA_KB=128
REPS=5
DIR=
while [ $# -gt 0 ]; do
	case $1 in
	--readahead-kb=*) RA_KB=${1#*=} ;;
	--reps=*) REPS=${1#*=} ;;
	--dir=*) DIR=${1#*=} ;;
	-*) echo "usage: $0 [--readahead-kb=N | --dir=DIR] [--reps=N] [BUILD_DIR]" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
BUILD=${1:-$SRC/build}
EXECGUARDD=${EXECGUARDD:-$BUILD/daemon/execguardd}
PC=$SRC/tests/host/prewarm/pagecache.py
NMOD=128 HOT=48

[ "$(id -u)" = 0 ] || { echo "needs root (cgroups, the proc connector)"; exit 77; }
[ -x "$EXECGUARDD" ] || { echo "no $EXECGUARDD: meson setup $BUILD && ninja -C $BUILD (or set EXECGUARDD)"; exit 77; }
CG2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$CG2" ] || { echo "no cgroup2 mounted"; exit 77; }

W=$(mktemp -d /var/tmp/execguard-prewarm-bench.XXXXXX)
CG=execguard-prewarm-bench-$$
DPID='' PPID_='' LOOP=''
cleanup() {
	[ "$BASHPID" = "$$" ] || return 0
	[ -n "$PPID_" ] && kill "$PPID_" 2>/dev/null && wait "$PPID_" 2>/dev/null
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rmdir "$CG2/$CG" 2>/dev/null
	if [ -n "$LOOP" ]; then
		umount "$W/m" 2>/dev/null || umount -l "$W/m"
		losetup -d "$LOOP"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
mkdir "$CG2/$CG" || exit 1

echo "prewarm.sh: generating and compiling $((NMOD / 4)) MiB of text" >&2
python3 "$SRC/bench/pressure/gen-text.py" "$NMOD" "$HOT" "$W/text.c" || exit 1
gcc -O1 -fno-toplevel-reorder -fno-reorder-functions -I"$SRC/bench/pressure" -I"$W" -c "$W/text.c" -o "$W/text.o" || exit 1
gcc -O1 -Wall -I"$SRC/bench/pressure" -I"$W" -o "$W/startload" "$SRC/bench/prewarm/startload.c" "$W/text.o" || exit 1
BIN=$W/startload
if [ -n "$DIR" ]; then
	cp "$BIN" "$DIR/startload" && sync || exit 1
	BIN=$DIR/startload
elif [ "$RA_KB" != 0 ]; then
	truncate -s 128M "$W/img" && mkfs.ext4 -q -F "$W/img" || exit 1
	LOOP=$(losetup -f --show --direct-io=on "$W/img") || { echo "no loop device"; exit 77; }
	mkdir -p "$W/m" && mount "$LOOP" "$W/m" || exit 1
	echo "$RA_KB" > "/sys/block/${LOOP#/dev/}/queue/read_ahead_kb" || exit 1
	cp "$BIN" "$W/m/startload" && sync
	BIN=$W/m/startload
fi
TOUCHED=$((HOT * 64 * $(getconf PAGESIZE)))

# run_once: evict the binary, run it in the cgroup, print "MS MAJFLT".
run_once() {
	local out
	python3 "$PC" evict "$BIN"
	out=$(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1"' "$CG2/$CG" "$BIN")
	set -- $out
	echo "$2 $5"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

cat > "$W/execguard.conf" <<CONF
[Daemon]
Backend=none
PrewarmRecordSec=1
[Rule bench]
MatchCgroup=/$CG
Protect=yes
Prewarm=yes
CONF
chmod 644 "$W/execguard.conf"
start_daemon() {
	local n
	n=$(grep -c "ready:" "$W/daemon.log" 2>/dev/null)
	"$EXECGUARDD" -c "$W/execguard.conf" --log-target=stderr-fields --prewarm-dir="$W/records" \
		--state-dir="$W/state" >> "$W/daemon.log" 2>&1 &
	DPID=$!
	for _ in $(seq 100); do [ "$(grep -c "ready:" "$W/daemon.log")" -gt "${n:-0}" ] && return 0; sleep 0.1; done
	echo "execguardd did not start: $(tail -n 5 "$W/daemon.log")"; exit 1
}
stop_daemon() { kill "$DPID"; wait "$DPID"; DPID=; }
replayed() { grep -a "MESSAGE_ID=3fd5015fffa94efd8ecb8c677a5eceeb" "$W/daemon.log" | sed -n 's/.* EXECGUARD_BYTES=\([0-9]*\).*/\1/p'; }

declare -A RB
# cold
for _ in $(seq "$REPS"); do run_once; done > "$W/cold"
# one recording run
start_daemon
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1" -w' "$CG2/$CG" "$BIN" > "$W/rec.out" &
PPID_=$!
for _ in $(seq 200); do grep -qF " $BIN" "$W/records/"*.prewarm 2>/dev/null && [ "$(grep -c '^range' "$W/records/"*.prewarm)" -gt 0 ] && break; sleep 0.1; done
sleep 3 # a few PrewarmRecordSec rounds
kill "$PPID_"; wait "$PPID_" 2>/dev/null; PPID_=
sleep 1
# replay at exec
: > "$W/exec"
for _ in $(seq "$REPS"); do
	n=$(replayed | wc -l)
	run_once >> "$W/exec"
	for _ in $(seq 100); do [ "$(replayed | wc -l)" -gt "$n" ] && break; sleep 0.1; done
	RB[exec]=$(replayed | tail -n 1)
done
stop_daemon
# replay at the daemon's start
: > "$W/daemon"
for _ in $(seq "$REPS"); do
	python3 "$PC" evict "$BIN"
	n=$(replayed | wc -l)
	start_daemon
	for _ in $(seq 100); do [ "$(replayed | wc -l)" -gt "$n" ] && break; sleep 0.1; done
	RB[daemon]=$(replayed | tail -n 1)
	# readahead(2) returns once the reads are queued: let them land
	for _ in $(seq 100); do
		[ "$(python3 "$PC" resident "$BIN" 0 $((1 << 40)) | cut -d' ' -f1)" -ge $((RB[daemon] / $(getconf PAGESIZE) * 9 / 10)) ] && break
		sleep 0.05
	done
	out=$(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1"' "$CG2/$CG" "$BIN")
	set -- $out
	echo "$2 $5" >> "$W/daemon"
	stop_daemon
done

echo "# $CMD"
echo "# $(uname -r), $(nproc) CPUs; text $((NMOD / 4)) MiB, start-up touches $((TOUCHED >> 20)) MiB;" \
	"read_ahead_kb $(if [ -n "$DIR" ]; then echo "of $DIR's disk"; elif [ "$RA_KB" = 0 ]; then echo "of /var/tmp's disk"; else echo "$RA_KB (loop, direct I/O)"; fi); medians of $REPS runs"
echo "| mode | time to ready | major faults | read back | read back / touched |"
echo "| --- | --- | --- | --- | --- |"
for m in cold exec daemon; do
	ms=$(cut -d' ' -f1 "$W/$m" | median)
	mf=$(cut -d' ' -f2 "$W/$m" | median)
	case $m in cold) name="cold (no prewarm)" ;; exec) name="prewarm at the exec event" ;; daemon) name="prewarm at the daemon's start" ;; esac
	if [ "$m" = cold ]; then
		echo "| $name | $ms ms | $mf | - | - |"
	else
		echo "| $name | $ms ms | $mf | $((RB[$m] >> 10)) KiB | $(awk -v a="${RB[$m]}" -v b="$TOUCHED" 'BEGIN { printf "%.2f", a / b }') |"
	fi
done
