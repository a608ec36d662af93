#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A container opts in by annotation, for real: the patched kernel in qemu
# with systemd as PID 1, execguard installed from BUILD-DIR (meson install:
# the daemon, execguard-oci-hook and its hooks.d file), podman running two
# identical containers with 48 MiB of executable-mapped text each in one
# slice under memory pressure, one annotated io.execguard.protect=yes and
# no rule for either (inside.sh). Prints their text major faults side by
# side, as the demo does, and checks that with the daemon stopped the
# hook lets an annotated container start.
# Usage: tests/vm/containers/run.sh [--lock] BUILD-DIR [SECONDS]
#   --lock  the lock backend instead of the kernel's memory.exec_protect
#           (the patched kernel still counts the text faults)
# The kernel is $EXECGUARD_BZIMAGE or what kernel/build.sh prints.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../../.." && pwd)
backend=kernel
[ "${1:-}" = --lock ] && { backend=lock; shift; }
build=${1:?usage: $0 [--lock] BUILD-DIR [SECONDS]}
seconds=${2:-30}

command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 not installed"; exit 77; }
command -v podman >/dev/null || { echo "SKIP: podman is not installed (tools/deps.sh kernel installs it)"; exit 77; }
bzimage=${EXECGUARD_BZIMAGE:-$("$repo/kernel/build.sh" | tail -n 1)}

# The VM sees the host's root but not its /tmp: stage under /var/tmp.
stage=$(mktemp -d /var/tmp/execguard-containers-XXXXXX)
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage/root" meson install -C "$build" --quiet --no-rebuild >/dev/null
[ -x "$stage/root/usr/libexec/execguard/execguard-oci-hook" ] ||
	{ echo "FAIL: meson install did not install the hook (build with -Dprefix=/usr)"; exit 1; }
# The containers' program: the demo's stand-in service, static, so that
# the image is this file and busybox (no registry here).
mkdir -p "$stage/image/bin"
cc -static -O2 -Wall -Wextra -Werror -o "$stage/image/textload" "$repo/tests/vm/demo/textload.c"
cp /bin/busybox "$stage/image/bin/"
cp "$here/inside.sh" "$repo/tests/vm/e2e/lib-inside.sh" "$stage/"

start=$(date +%s)
rc=0
"$repo/tests/vm/vm-run.sh" --kernel "$bzimage" --mode systemd --mem 1G --disk 768M --timeout 1500 \
	--log "$stage/console.log" --quiet -- bash "$stage/inside.sh" "$stage" "$seconds" "$backend" || rc=$?
sed -n 's/^E2E: //p' "$stage/console.log"
echo "VM run: $(($(date +%s) - start)) s, exit $rc"
[ $rc = 0 ] || { echo "console log (last 40 lines):"; tail -n 40 "$stage/console.log"; }
exit $rc
