#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The text-fault estimate against the kernel's counter: bench/pressure's
# service, unprotected, under its pressure (bench/pressure/README.md), in
# the VM with the execguard kernel, under the classic LRU and MGLRU. The
# reader (tests/textfault-probe --estimate: the stock-kernel estimate,
# forced although the kernel counts) samples the service's cgroup every
# INTERVAL from before the pressure to its end; each line also carries
# memory.stat pgmajfault_exec read at the same time. Prints, per LRU, the
# estimate's and the counter's growth over the pressure phase and their
# ratio, and the command; raw probe lines under OUT/LRU/.
#
# Usage: bench/textfault-validate.sh [--lrus "classic mglru"] [--cases "text mixed"]
#          [--pressure SEC] [--interval MS] [--mem SIZE] [--room MIB] [--cold PER_MILLE]
#          [--bps BYTES/S] [--iops N] [--out DIR] [--kernel BZIMAGE] [--prepare]
# Cases: text, the service alone; mixed, with a process beside it in its
# cgroup that reads random pages of a 32 MiB data file it maps (not
# executable) every 20 ms: major faults that are not text.
# --prepare: build the image and stop (the text takes minutes to compile).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
P=$HERE/pressure
LRUS="classic mglru" CASES="text mixed" PRESSURE=30 INTERVAL=2000 MEM=1G ROOM=48 COLD=20 WS=32
BPS=20000000 IOPS=200 OUT=/var/tmp/execguard-textfault-validate/out KERNEL=${EXECGUARD_BZIMAGE:-} PREPARE=0
CMDLINE=$(printf '%q ' "bench/textfault-validate.sh" "$@"); CMDLINE=${CMDLINE% }
while [ $# -gt 0 ]; do
	case $1 in
	--lrus) LRUS=$2 ;; --cases) CASES=$2 ;; --pressure) PRESSURE=$2 ;; --interval) INTERVAL=$2 ;; --mem) MEM=$2 ;;
	--room) ROOM=$2 ;; --cold) COLD=$2 ;; --bps) BPS=$2 ;; --iops) IOPS=$2 ;;
	--out) OUT=$2 ;; --kernel) KERNEL=$2 ;;
	--prepare) PREPARE=1; shift; continue ;;
	-h|--help) sed -n '3,20s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "textfault-validate: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
[ "$(id -u)" = 0 ] || { echo "textfault-validate: needs root (qemu, mkfs -d)"; exit 77; }

B=$SRC/build/bench
[ -d "$B" ] || meson setup "$B" -Dbuildtype=release >/dev/null
ninja -C "$B" tests/textfault-probe >/dev/null
PROBE=$B/tests/textfault-probe

# The service, the load tools and the disk image, as bench/pressure/run.sh
# makes them (its own directory: the two may run at once).
W=/var/tmp/execguard-textfault-validate
mkdir -p "$W/img/lib"
if [ ! -f "$W/text.o" ] || [ "$P/gen-text.py" -nt "$W/text.o" ]; then
	echo "textfault-validate: generating and compiling 32 MiB of text (once)"
	python3 "$P/gen-text.py" 128 4 "$W/text.c"
	nice -n 10 gcc -O1 -fno-toplevel-reorder -fno-reorder-functions -I"$P" -I"$W" -c "$W/text.c" -o "$W/text.o"
fi
gcc -O1 -Wall -I"$P" -I"$W" -o "$W/img/svc" "$P/svc.c" "$W/text.o" \
	-Wl,--dynamic-linker=/mnt/scratch/lib/ld-linux-x86-64.so.2 -Wl,-rpath,/mnt/scratch/lib
gcc -O1 -Wall -o "$W/img/press" "$P/press.c"
gcc -O1 -Wall -o "$W/img/textfault-data" "$HERE/textfault-data.c"
[ -f "$W/img/data.dat" ] || head -c 32M /dev/urandom >"$W/img/data.dat"
cp -L /lib64/ld-linux-x86-64.so.2 "$(gcc -print-file-name=libc.so.6)" "$W/img/lib/"
[ -f "$W/img/stream.dat" ] || head -c 512M /dev/urandom >"$W/img/stream.dat"
[ "$(stat -c %s "$W/img/ws.dat" 2>/dev/null)" = $((WS << 20)) ] ||
	head -c "${WS}M" /dev/urandom >"$W/img/ws.dat"
[ "$PREPARE" = 1 ] && { echo "textfault-validate: prepared $W"; exit 0; }

[ -n "$KERNEL" ] || KERNEL=$("$SRC/kernel/build.sh" | tail -n1)
cp "$KERNEL" "$W/bzImage"
SHIM=$W/shim
mkdir -p "$SHIM"
REAL_QEMU=$(PATH=${PATH//$SHIM:/} command -v qemu-system-x86_64)
cat >"$SHIM/qemu-system-x86_64" <<SH
#!/bin/sh
exec $REAL_QEMU "\$@" -drive "file=\$PRESSURE_DISK,format=raw,if=virtio,cache=unsafe,throttling.bps-total=$BPS,throttling.iops-total=$IOPS"
SH
chmod +x "$SHIM/qemu-system-x86_64"
cp "$HERE/textfault-vm.sh" "$W/textfault-vm.sh"
cp "$PROBE" "$W/textfault-probe"

mkdir -p "$OUT"
echo "$CMDLINE" >"$OUT/command"
for lru in $LRUS; do
	for c in $CASES; do
		rm -rf "${OUT:?}/$lru-$c" "$W/disk.img"
		truncate -s 1536M "$W/disk.img"
		mkfs.ext4 -q -F -d "$W/img" "$W/disk.img"
		echo "textfault-validate: $lru $c: ${PRESSURE}s of pressure, a sample every ${INTERVAL} ms"
		PRESSURE_DISK=$W/disk.img PATH=$SHIM:$PATH "$SRC/tests/vm/vm-run.sh" \
			--kernel "$W/bzImage" --mem "$MEM" --results "$OUT" --quiet --allow-oom-kill \
			--log "$OUT/console-$lru-$c.log" --timeout 1800 -- \
			"$W/textfault-vm.sh" "$lru" "$PRESSURE" "$ROOM" "$COLD" "$INTERVAL" "$W/textfault-probe" "$c" ||
			echo "textfault-validate: $lru $c: VM exit $?" >&2
		grep -a 'textfault-vm:' "$OUT/console-$lru-$c.log" | tr -d '\r' || true
	done
done

# The growth of each over the pressure phase: from the last sample before
# it to the last sample.
echo
echo "| LRU | case | samples | text faults, kernel (pgmajfault_exec) | estimate | estimate / kernel | major faults (all) | text share at the end |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for lru in $LRUS; do for c in $CASES; do
	f=$OUT/$lru-$c/probe.out
	[ -s "$f" ] || { echo "| $lru | $c | no samples | | | | | |"; continue; }
	start=$(cat "$OUT/$lru-$c/pressure-start-sample" 2>/dev/null || echo 0)
	awk -v lru="$lru $c" -v start="$start" '
		$1 == "sample" && $4 == "source" {
			n = $2; f[n] = $7; k[n] = $9; m[n] = $11; s[n] = $13; last = n
		}
		END {
			a = start; if (!(a in f)) a = 0
			dk = k[last] - k[a]; de = f[last] - f[a]; dm = m[last] - m[a]
			split(lru, lc, " ")
			printf "| %s | %s | %d | %d | %d | %s | %d | %s |\n", lc[1], lc[2], last - a, dk, de,
				(dk > 0 ? sprintf("%.2f", de / dk) : "-"), dm, s[last]
		}' "$f"
done; done
echo
echo "command: $CMDLINE"
