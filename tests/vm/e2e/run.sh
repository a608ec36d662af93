#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguard as a user meets it, end to end: the patched kernel in qemu
# with systemd as PID 1, execguard installed by `meson install`, a test
# service with an [X-ExecGuard] drop-in and one without; systemctl,
# journalctl and execguardctl as a user would run them (inside.sh).
#
# Usage: tests/vm/e2e/run.sh [--debug] [--lock | --unpatched | --deb] BUILD-DIR   (a meson build of this tree)
#   --debug  on the KASAN+lockdep kernel (kernel/build.sh --debug), with
#            its kernel command line and longer waits; any KASAN, lockdep,
#            RCU stall or WARNING report fails the run (vm-run.sh)
#   --lock   the lock backend under the shipped unit (inside-lock.sh)
#   --unpatched  the same on the kernel without the series
#            (kernel/build.sh --unpatched), with Backend=auto
#   --deb    the Debian package (tools/deb.sh, twice) installed with apt,
#            upgraded and purged (inside-deb.sh)
# The kernel is $EXECGUARD_BZIMAGE or what kernel/build.sh [--debug] prints.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../../.." && pwd)
build_args=()
# The VM's timeout only stops a hung guest: under TCG on a loaded 2-core
# host (load 20-40: kernel builds and other guests) the run that takes
# 340 s at load 10 went past 600 s while podman started its container.
vm_args=(--timeout 1500)
slow=1
inside=inside.sh
backend=lock
while [ $# -gt 1 ]; do
	case $1 in
	--debug)
		build_args=(--debug)
		# As tests/vm/run-selftests.sh --debug: PCI interrupt routing from
		# the PIR table (ACPI's AML times out under KASAN in TCG), no RCU
		# stall reports for the emulation's slowness; and the checks inside
		# wait ten times longer
		vm_args=(--timeout 3000 --append "acpi=noirq rcupdate.rcu_cpu_stall_timeout=300")
		slow=10
		;;
	--lock) inside="inside-lock.sh" ;;
	# The lock run on the kernel without the series, where Backend=auto
	# must choose the lock backend by itself.
	--unpatched) build_args=(--unpatched) inside="inside-lock.sh" backend=auto ;;
	# The Debian package instead of meson install: tools/deb.sh builds
	# it twice (this version and a newer one) for install, upgrade, purge.
	# apt takes a minute a step under TCG.
	--deb) inside="inside-deb.sh" vm_args=(--timeout 2400) ;;
	*) echo "usage: $0 [--debug] [--lock | --unpatched | --deb] BUILD-DIR" >&2; exit 2 ;;
	esac
	shift
done
build=${1:?usage: $0 [--debug] [--lock | --unpatched | --deb] BUILD-DIR}

command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 not installed"; exit 77; }
bzimage=${EXECGUARD_BZIMAGE:-$("$repo/kernel/build.sh" "${build_args[@]}" | tail -n 1)}

# The VM sees the host's root, but not the host's /tmp (its own tmpfs):
# stage the installed tree and the script under /var/tmp.
stage=$(mktemp -d /var/tmp/execguard-e2e-XXXXXX)
trap 'rm -rf "$stage"' EXIT
cp "$here/$inside" "$here/lib-inside.sh" "$stage/"
arg=$stage/root
if [ "$inside" = inside-deb.sh ]; then
	# This version and a newer build of it, each checked and linted.
	new_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)+e2e1
	"$repo/tools/deb.sh" > "$stage/deb.log" 2>&1 &&
		"$repo/tools/deb.sh" --version "$new_version" >> "$stage/deb.log" 2>&1 ||
		{ tail -n 30 "$stage/deb.log"; echo "FAIL: tools/deb.sh"; exit 1; }
	grep '^== execguard_.*\.deb in' "$stage/deb.log"
	mkdir "$stage/old" "$stage/new"
	cp "$repo/build/deb/execguard_$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)_"*.deb "$stage/old/"
	cp "$repo/build/deb/execguard_${new_version}_"*.deb "$stage/new/"
	arg=$stage
else
	DESTDIR="$stage/root" meson install -C "$build" --quiet --no-rebuild >/dev/null
	[ -x "$stage/root/usr/sbin/execguardd" ] || { echo "FAIL: meson install did not install /usr/sbin/execguardd (build with -Dprefix=/usr)"; exit 1; }
fi

start=$(date +%s)
rc=0
"$repo/tests/vm/vm-run.sh" --kernel "$bzimage" --mode systemd --mem 1G "${vm_args[@]}" \
	--log "$stage/console.log" --quiet -- bash "$stage/$inside" "$arg" "$slow" "$backend" || rc=$?
sed -n '/^E2E: /p' "$stage/console.log" | sed 's/^E2E: //'
echo "VM run: $(($(date +%s) - start)) s, exit $rc"
exit $rc
