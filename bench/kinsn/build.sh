#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build the kinsn qemu plugin (bench/kinsn/kinsn.c) against the plugin API
# header of the installed qemu's own Debian source, fetched once into
# $EXECGUARD_KINSN_CACHE (default /var/tmp/execguard-kinsn); print the
# plugin's path. qemu-system-x86 ships without its plugin header.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cache=${EXECGUARD_KINSN_CACHE:-/var/tmp/execguard-kinsn}
ver=$(dpkg-query -W -f '${Version}' qemu-system-x86 2>/dev/null) || {
	echo "kinsn: qemu-system-x86 is not installed" >&2; exit 1; }
# 1:7.2+dfsg-7+deb12u18+b3 -> 7.2+dfsg
upstream=${ver#*:}; upstream=${upstream%-*}
mkdir -p "$cache"
hdr=$cache/qemu-$upstream/qemu-plugin.h
if [ ! -f "$hdr" ]; then
	tarball=qemu_$upstream.orig.tar.xz
	curl -fsS -o "$cache/$tarball" "http://deb.debian.org/debian/pool/main/q/qemu/$tarball" || {
		echo "kinsn: cannot fetch Debian's $tarball" >&2; exit 1; }
	mkdir -p "$cache/qemu-$upstream"
	tar -xJf "$cache/$tarball" -C "$cache/qemu-$upstream" --wildcards --strip-components=3 '*/include/qemu/qemu-plugin.h'
	rm -f "$cache/$tarball"
fi
so=$cache/kinsn-$upstream.so
if [ ! -f "$so" ] || [ "$HERE/kinsn.c" -nt "$so" ]; then
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -I "$(dirname "$hdr")" -o "$so.tmp" "$HERE/kinsn.c"
	mv "$so.tmp" "$so"
fi
echo "$so"
