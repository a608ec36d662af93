#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what execguard needs on Debian 12, if it is not there yet.
# Usage: tools/deps.sh [build|test|kernel|all]   (default: all)
set -eu

build_pkgs=(meson ninja-build pkg-config gcc libc6-dev libsystemd-dev libmount-dev libinih-dev
	libjson-c-dev python3 util-linux procps scdoc groff-base bsdextrautils)
# prometheus (promtool), prometheus-node-exporter and curl: host-bus-metrics
# (under systemd, apt starts their services; the test uses its own port).
# python3-yaml: k8s-manifest (deploy/kubernetes/). zsh and bash-completion:
# the completion test (bash-completion's .pc says where meson installs the
# bash completions). jq: host-doc-commands runs execguardctl(1)'s example
# with it. shellcheck: the shellcheck test (every shell script of the tree).
# build-essential, dpkg-dev, debhelper, lintian and pkgconf: tools/deb.sh and
# the .deb tests (debian/control's Build-Depends); systemd-e2e-deb-used-host
# runs it where dpkg's database is read-only, so they must be here first.
test_pkgs=(clang llvm libclang-rt-14-dev dbus-daemon e2fsprogs valgrind strace
	prometheus prometheus-node-exporter curl python3-yaml zsh bash-completion jq
	build-essential dpkg-dev debhelper lintian pkgconf shellcheck)
# The kernel series' base: exactly this version of the source (see kernel/build.sh)
kernel_source=linux-source-6.12=$(cat "$(dirname "$0")/../kernel/base-version")
kernel_pkgs=("$kernel_source" flex bison libelf-dev libssl-dev bc cpio dwarves make
	qemu-system-x86 busybox-static kmod xz-utils podman)

case "${1:-all}" in
build) want=("${build_pkgs[@]}") ;;
test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
kernel) want=("${kernel_pkgs[@]}") ;;
all) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${kernel_pkgs[@]}") ;;
*) echo "usage: $0 [build|test|kernel|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	if [ "${p%%=*}" != "$p" ]; then
		[ "$(dpkg-query -W -f='${Status} ${Version}' "${p%%=*}" 2>/dev/null)" = "install ok installed ${p#*=}" ] ||
			missing+=("$p")
		continue
	fi
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages (run as root to install): ${missing[*]}" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt or dpkg (unattended-upgrades on a fresh machine)
# rather than fail on its lock.
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends --allow-downgrades "${missing[@]}" >/dev/null
