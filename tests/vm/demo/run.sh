#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The demo: the patched kernel in qemu with systemd as PID 1, execguard
# installed from BUILD-DIR, two identical services under memory pressure
# in one slice, one protected by an [X-ExecGuard] drop-in and one not.
# Prints systemctl status execguardd, the daemon's journal lines and the
# services' text major faults side by side.
# Usage: tests/vm/demo/run.sh BUILD-DIR [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../../.." && pwd)
build=${1:?usage: $0 BUILD-DIR [SECONDS]}
seconds=${2:-40}
bzimage=${EXECGUARD_BZIMAGE:-$("$repo/kernel/build.sh" | tail -n 1)}

stage=$(mktemp -d /var/tmp/execguard-demo-XXXXXX)
trap 'rm -rf "$stage"' EXIT
DESTDIR="$stage/root" meson install -C "$build" --quiet --no-rebuild >/dev/null
mkdir -p "$stage/root/usr/libexec/execguard-demo"
cc -O2 -Wall -Wextra -Werror -o "$stage/root/usr/libexec/execguard-demo/textload" "$here/textload.c"
cp "$here/inside.sh" "$stage/inside.sh"

rc=0
"$repo/tests/vm/vm-run.sh" --kernel "$bzimage" --mode systemd --mem 1G --disk 768M \
	--timeout 900 --log "$stage/console.log" --quiet -- \
	bash "$stage/inside.sh" "$stage/root" "$seconds" || rc=$?
sed -n 's/^DEMO: //p' "$stage/console.log"
[ $rc = 0 ] || { echo "demo: the VM run failed (exit $rc); console log:"; tail -n 40 "$stage/console.log"; }
exit $rc
