#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The text-eviction stall benchmark: a service with 32 MiB of generated text
# (hot part every request, cold "error handling" now and then) under memory
# pressure (a file mlocked over most of RAM, as "vmtouch -l" does, plus
# streaming reads of another file, plus a smaller file re-read over and
# over, the working set of other work) on a throttled disk, in a qemu VM with
# the execguard kernel, for each mode under the classic LRU and MGLRU:
#   none     no protection
#   protect  memory.exec_protect=max on the service's cgroup
#   lock     execguardd, Backend=lock, its defaults (it gives locked text
#            back when memory PSI fires and MemAvailable is below
#            PressureReserve=1%)
#   lockpin  the same with the give-back off (PressureReserve=0)
#   mlock    whole-file mlock of every file the service maps executable
#            (what prelockd and memlockd do)
#   minttl   MGLRU only: /sys/kernel/mm/lru_gen/min_ttl_ms=1000, its
#            thrashing protection of the last second's working set for
#            everyone (skipped under the classic LRU)
#   protminttl  MGLRU only: protect and minttl together (does keeping the
#            text make min_ttl_ms call the OOM killer sooner?)
#   auto     execguardd, Backend=kernel, nothing configured for the
#            service: Protect=auto for every cgroup (AutoIntervalSec=1,
#            AutoWindowSec=10); reports the time from the first stall to
#            protection and the stalls before and after it
# Writes bench/pressure/results.md and bench/pressure/latency.png, raw data
# under --out.
#
# Usage: bench/pressure/run.sh [--reps N] [--modes "none protect lock lockpin mlock minttl protminttl auto"]
#          [--lrus "classic mglru"] [--unloaded SEC] [--pressure SEC]
#          [--mem SIZE] [--room MIB] [--cold PER_MILLE] [--ws MIB] [--bps BYTES/S] [--iops N]
#          [--out DIR] [--kernel BZIMAGE] [--keep]
# --keep: keep the runs of other modes already under --out (replace only
# those of --modes) and make the tables of all of them, e.g. to re-run
# the lock modes after a daemon change; the commands are listed in
# OUT/command and in results.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
REPS=3 MODES="none protect lock lockpin mlock minttl protminttl auto" LRUS="classic mglru"
UNLOADED=5 PRESSURE=25 MEM=1G ROOM=48 BPS=20000000 IOPS=200 COLD=20 WS=32
OUT=$HERE/out KERNEL=${EXECGUARD_BZIMAGE:-} KEEP=0
CMDLINE=$(printf '%q ' "$0" "$@"); CMDLINE=${CMDLINE% }
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2 ;; --modes) MODES=$2 ;; --lrus) LRUS=$2 ;;
	--unloaded) UNLOADED=$2 ;; --pressure) PRESSURE=$2 ;; --mem) MEM=$2 ;;
	--room) ROOM=$2 ;; --cold) COLD=$2 ;; --ws) WS=$2 ;; --bps) BPS=$2 ;; --iops) IOPS=$2 ;;
	--out) OUT=$2 ;; --kernel) KERNEL=$2 ;;
	--keep) KEEP=1; shift; continue ;;
	-h|--help) sed -n '3,36s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (qemu, mkfs -d)"; exit 77; }
[ -n "$KERNEL" ] || KERNEL=$("$SRC/kernel/build.sh" | tail -n1)
# the same kernel for every boot, even if it is rebuilt meanwhile
mkdir -p /var/tmp/execguard-pressure
cp "$KERNEL" /var/tmp/execguard-pressure/bzImage
KERNEL=/var/tmp/execguard-pressure/bzImage
DAEMON=$SRC/build/daemon/execguardd
if [ ! -x "$DAEMON" ]; then
	[ -d "$SRC/build" ] || meson setup "$SRC/build" -Dsysconfdir=/etc
	ninja -C "$SRC/build"
fi

# --- the service, the load tools and the disk image -------------------------
W=/var/tmp/execguard-pressure
mkdir -p "$W/img/lib"
if [ ! -f "$W/text.o" ] || [ "$HERE/gen-text.py" -nt "$W/text.o" ]; then
	echo "run.sh: generating and compiling 32 MiB of text (once)"
	python3 "$HERE/gen-text.py" 128 4 "$W/text.c"
	gcc -O1 -fno-toplevel-reorder -fno-reorder-functions -I"$HERE" -I"$W" -c "$W/text.c" -o "$W/text.o"
fi
# the program and its libraries are on the throttled disk: a re-read of any
# of its text goes through the throttle
gcc -O1 -Wall -I"$HERE" -I"$W" -o "$W/img/svc" "$HERE/svc.c" "$W/text.o" \
	-Wl,--dynamic-linker=/mnt/scratch/lib/ld-linux-x86-64.so.2 -Wl,-rpath,/mnt/scratch/lib
gcc -O1 -Wall -o "$W/img/press" "$HERE/press.c"
cp -L /lib64/ld-linux-x86-64.so.2 "$(gcc -print-file-name=libc.so.6)" "$W/img/lib/"
[ -f "$W/img/stream.dat" ] || head -c 512M /dev/urandom >"$W/img/stream.dat"
[ "$(stat -c %s "$W/img/ws.dat" 2>/dev/null)" = $((WS << 20)) ] ||
	head -c "${WS}M" /dev/urandom >"$W/img/ws.dat"

# qemu's block throttling on the scratch disk: vm-run.sh has no option for
# extra qemu arguments, so a qemu-system-x86_64 first on PATH adds the disk
SHIM=$W/shim
mkdir -p "$SHIM"
REAL_QEMU=$(PATH=${PATH//$SHIM:/} command -v qemu-system-x86_64)
cat >"$SHIM/qemu-system-x86_64" <<SH
#!/bin/sh
exec $REAL_QEMU "\$@" -drive "file=\$PRESSURE_DISK,format=raw,if=virtio,cache=unsafe,throttling.bps-total=$BPS,throttling.iops-total=$IOPS"
SH
chmod +x "$SHIM/qemu-system-x86_64"

mkdir -p "$OUT"
if [ "$KEEP" = 1 ]; then echo "$CMDLINE" >>"$OUT/command"; else echo "$CMDLINE" >"$OUT/command"; fi
# a copy, so that editing the tree during a run does not change it
cp "$HERE/vm-bench.sh" "$W/vm-bench.sh"
for lru in $LRUS; do
	if [ "$KEEP" = 1 ]; then
		for m in $MODES; do rm -rf "${OUT:?}/$lru/$m"-*; done
	else
		rm -rf "${OUT:?}/$lru"
	fi
	rm -f "$W/disk.img"
	truncate -s 1536M "$W/disk.img"
	mkfs.ext4 -q -F -d "$W/img" "$W/disk.img"
	echo "run.sh: $lru: modes $MODES, $REPS reps, ${UNLOADED}s unloaded + ${PRESSURE}s pressure each"
	PRESSURE_DISK=$W/disk.img PATH=$SHIM:$PATH "$SRC/tests/vm/vm-run.sh" \
		--kernel "$KERNEL" --mem "$MEM" --results "$OUT" --quiet \
		--log "$OUT/console-$lru.log" --timeout 3000 -- \
		"$W/vm-bench.sh" "$lru" "$MODES" "$REPS" "$UNLOADED" "$PRESSURE" "$ROOM" "$DAEMON" "$COLD" ||
		echo "run.sh: $lru: VM exit $?" >&2
	grep -a 'vm-bench:' "$OUT/console-$lru.log" | tr -d '\r' || true
done

CMDS=$(paste -sd';' "$OUT/command" | sed 's/;/`; `/g')
/usr/bin/python3 "$HERE/analyze.py" "$OUT" "$HERE/results.md" "$HERE/latency.png" "$CMDS"
