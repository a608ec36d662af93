#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/prewarm.sh in a qemu VM on the execguard kernel, the program on a
# virtio disk that qemu throttles (as bench/pressure does: --bps bytes and
# --iops requests a second), so that a cold start pays for each read the
# way a busy or slow disk makes it pay.
#
# Usage: bench/prewarm-vm.sh [--reps=N] [--bps=20000000] [--iops=200] [BUILD_DIR]
#        (as root; the kernel of kernel/build.sh or $EXECGUARD_BZIMAGE)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
reps=5 bps=20000000 iops=200
while [ $# -gt 0 ]; do
	case $1 in
	--reps=*) reps=${1#*=} ;;
	--bps=*) bps=${1#*=} ;;
	--iops=*) iops=${1#*=} ;;
	-*) echo "usage: $0 [--reps=N] [--bps=N] [--iops=N] [BUILD_DIR]" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[[ $reps =~ ^[0-9]+$ && $bps =~ ^[0-9]+$ && $iops =~ ^[0-9]+$ ]] || { echo "error: numbers expected" >&2; exit 2; }
build=$(cd "${1:-$SRC/build}" && pwd)
[ -x "$build/daemon/execguardd" ] || { echo "no $build/daemon/execguardd: meson setup and ninja first" >&2; exit 1; }
kernel=${EXECGUARD_BZIMAGE:-$("$SRC/kernel/build.sh" | tail -n1)}

work=$(mktemp -d /var/tmp/execguard-prewarm-vm.XXXXXX)
trap '[ "$BASHPID" = $$ ] && rm -rf "$work"' EXIT
truncate -s 256M "$work/disk.img"
mkfs.ext4 -q -F "$work/disk.img"
# vm-run.sh has no option for extra qemu arguments: a qemu-system-x86_64
# first on PATH adds the throttled disk, which the guest mounts as
# /mnt/scratch (its first virtio disk)
real_qemu=$(command -v qemu-system-x86_64)
mkdir "$work/shim"
cat >"$work/shim/qemu-system-x86_64" <<SH
#!/bin/sh
exec $real_qemu "\$@" -drive "file=$work/disk.img,format=raw,if=virtio,cache=none,throttling.bps-total=$bps,throttling.iops-total=$iops"
SH
chmod +x "$work/shim/qemu-system-x86_64"

echo "# bench/prewarm-vm.sh --reps=$reps --bps=$bps --iops=$iops (kernel $kernel)"
PATH=$work/shim:$PATH "$SRC/tests/vm/vm-run.sh" --kernel "$kernel" --mem 1G --timeout 1800 \
	--log "$work/console.log" -- \
	bash "$SRC/bench/prewarm.sh" --dir=/mnt/scratch --reps="$reps" "$build" >"$work/out" 2>&1 || {
	tail -n 30 "$work/out" >&2
	echo "error: the VM run failed" >&2
	exit 1
}
grep -a '^[#|]' "$work/out" | tr -d '\r'
