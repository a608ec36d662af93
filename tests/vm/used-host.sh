#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run a VM test on a host that uses execguard and podman (issue 33): the
# guest must not see any of it (vm-run.sh, hide-host-state.sh), and the
# test must pass as on a clean host.
#
# Usage: tests/vm/used-host.sh [--] COMMAND [ARG...]
#   e.g. tests/vm/used-host.sh tests/vm/e2e/run.sh --deb build
#
# The host is made "used" as an administrator's machine would be:
# - /etc/execguard.conf, the shipped one with an administrator's rule
#   (kept as it is when the host has one);
# - /etc/execguard.d/50-eg-used-host.conf, a drop-in with Backend=none and
#   a rule protecting every service: a guest that saw it would fail the
#   e2e checks loudly;
# - /var/lib/execguard with a prewarm record;
# - podman's storage in /var/lib/containers made with the overlay driver
#   (an image imported, a container created) and an
#   /etc/containers/storage.conf saying driver = "overlay" (kept when the
#   host has one). Where podman cannot make it here, a tree that looks
#   like it (its directories and JSON files; it says so).
#
# None of it is made on the host itself: COMMAND runs in a private mount
# namespace in which /etc and /var/lib are overlays of the host's with a
# tmpfs upper layer, and the fixture is made there. qemu, started by
# COMMAND, serves the guest's root from that view, so the guest sees what
# it would see on such a host; the host's own files are never written,
# moved or removed, so there is nothing to restore, also when the run is
# killed, and others' tests on the same machine never see it. dpkg's
# database is read-only in that view: a package installed there would
# leave its files on the host and its record in the overlay (a COMMAND
# that would install one fails: install it first, tools/deps.sh). After
# the run, the script checks that none of the fixture's files is on the
# host.
#
# Exit status: COMMAND's; 77 (skip) when the mount namespace, its overlays
# or tmpfs cannot be made here (not root, no overlayfs): a reason of the
# host, said on stderr.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)
marker=eg-used-host
dropin=/etc/execguard.d/50-$marker.conf

skip() { echo "SKIP: used-host: $*" >&2; exit 77; }
note() { echo "used-host: $*" >&2; }

case ${1:-} in
-h | --help) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
--) shift ;;
esac
[ $# -gt 0 ] || { echo "usage: $0 [--] COMMAND [ARG...]" >&2; exit 2; }

# --- outside: the namespace, and afterwards the host checked -----------------
if [ "${EG_USED_HOST_VIEW:-}" = "" ]; then
	[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace with overlays of /etc and /var/lib)"
	command -v unshare > /dev/null || skip "unshare not found (util-linux)"
	unshare --mount --propagation private true 2> /dev/null ||
		skip "cannot make a private mount namespace here (unshare --mount failed)"
	# Whatever of the fixture the host had before: not ours, left alone.
	had=$(ls -d "$dropin" /etc/containers/storage.conf 2> /dev/null || true)
	state=$(mktemp -d /tmp/execguard-used-host.XXXXXX)
	trap 'rmdir "$state" 2> /dev/null || true' EXIT
	rc=0
	EG_USED_HOST_VIEW=$state unshare --mount --propagation private "$0" -- "$@" || rc=$?
	# The namespace is gone with its last process, and its tmpfs with it.
	leaked=
	[ -e "$dropin" ] && ! grep -qx "$dropin" <<< "$had" && leaked="$leaked $dropin"
	grep -qs "$marker" /etc/execguard.conf && leaked="$leaked /etc/execguard.conf"
	[ -e /var/lib/execguard/$marker.service.prewarm ] && leaked="$leaked /var/lib/execguard/$marker.service.prewarm"
	[ -e /etc/containers/storage.conf ] && ! grep -qx /etc/containers/storage.conf <<< "$had" &&
		leaked="$leaked /etc/containers/storage.conf"
	# podman's records of the fixture's image and container, by name
	for f in /var/lib/containers/storage/overlay-images/images.json \
		/var/lib/containers/storage/overlay-containers/containers.json; do
		grep -qs "$marker" "$f" && leaked="$leaked $f"
	done
	if [ -n "$leaked" ]; then
		echo "FAIL: used-host: the fixture is on the host itself:$leaked" >&2
		exit 1
	fi
	[ "$rc" = 77 ] || note "the host itself unchanged: none of the fixture outside the namespace"
	exit "$rc"
fi

# --- inside the namespace: a used host ---------------------------------------
state=$EG_USED_HOST_VIEW
unset EG_USED_HOST_VIEW
mount -t tmpfs -o mode=0700 "$marker" "$state" || skip "cannot mount a tmpfs"
for d in /etc /var/lib; do
	u=$state/${d//\//_}
	mkdir -p "$u/upper" "$u/work"
	mount -t overlay -o "lowerdir=$d,upperdir=$u/upper,workdir=$u/work" "$marker" "$d" ||
		skip "cannot mount an overlay on $d (overlayfs)"
done
mount --bind -o ro /var/lib/dpkg /var/lib/dpkg || skip "cannot make /var/lib/dpkg read-only"

# execguard's policy and state
if [ -e /etc/execguard.conf ]; then
	note "/etc/execguard.conf: the host's own"
else
	{
		cat "$repo/conf/execguard.conf"
		printf '\n# changed by the administrator (%s)\n[Rule %s]\nMatchUnit=%s-*.service\nProtect=yes\n' \
			"$marker" "$marker" "$marker"
	} > /etc/execguard.conf
	note "/etc/execguard.conf: the shipped one with an administrator's rule"
fi
mkdir -p /etc/execguard.d
cat > "$dropin" << EOF
# An administrator's drop-in ($marker, tests/vm/used-host.sh): a guest
# that read it would do nothing (Backend=none) and protect every service.
[Daemon]
Backend=none

[Rule $marker-all]
MatchUnit=*.service
Protect=yes
EOF
note "$dropin: Backend=none, every service protected"
mkdir -p /var/lib/execguard
chmod 0700 /var/lib/execguard
echo "not a prewarm record: $marker" > /var/lib/execguard/$marker.service.prewarm

# podman's storage, made with the overlay driver, as a host's first
# `podman run` leaves it: podman's defaults otherwise, so its database
# names the host's run root and temporary directory in /run. The storage
# on a tmpfs of its own (the overlay driver does not stack on the overlay
# that /var/lib is here); /run an overlay too while podman runs (COMMAND
# sees the host's /run as it is; the guest's /run is its own anyway).
mkdir -p /var/lib/containers
mount -t tmpfs -o mode=0700 "$marker" /var/lib/containers
if [ ! -e /etc/containers/storage.conf ]; then
	mkdir -p /etc/containers
	printf '[storage]\ndriver = "overlay"\nrunroot = "/run/containers/storage"\ngraphroot = "/var/lib/containers/storage"\n' \
		> /etc/containers/storage.conf
fi
u=$state/_run
mkdir -p "$u/upper" "$u/work"
mount -t overlay -o "lowerdir=/run,upperdir=$u/upper,workdir=$u/work" "$marker" /run ||
	skip "cannot mount an overlay on /run (overlayfs)"
pm() { podman --storage-driver overlay "$@"; }
made=
if command -v podman > /dev/null; then
	root=$state/rootfs
	busybox=$(command -v busybox || true)
	if [ -n "$busybox" ] && mkdir -p "$root/bin" && cp "$busybox" "$root/bin/" &&
		tar -C "$root" -cf "$root.tar" . &&
		pm import "$root.tar" "$marker" > "$state/podman.log" 2>&1 &&
		pm create --name "$marker" --network none "$marker" /bin/busybox true >> "$state/podman.log" 2>&1 &&
		[ "$(pm info --format '{{.Store.GraphDriverName}}' 2>> "$state/podman.log")" = overlay ]; then
		made="podman $(podman --version | awk '{print $3}'), overlay driver: an image and a container"
	else
		note "podman could not make overlay storage here: $(tail -n 1 "$state/podman.log" 2> /dev/null)"
	fi
	rm -rf "$root" "$root.tar"
else
	note "podman is not installed: the guest has none either, its checks skip there"
fi
umount /run || umount -l /run
if [ -z "$made" ]; then
	# What a used overlay storage holds, without podman's databases.
	s=/var/lib/containers/storage
	rm -rf "${s:?}"/*
	mkdir -p "$s"/overlay/l "$s"/overlay-images "$s"/overlay-layers "$s"/overlay-containers "$s"/libpod
	echo '[]' > "$s/overlay-images/images.json"
	echo '[]' > "$s/overlay-layers/layers.json"
	echo '[]' > "$s/overlay-containers/containers.json"
	made="a tree that looks like overlay storage (no podman database)"
fi
note "/var/lib/containers/storage: $made"

# The fixture is there as the guest's 9p server (qemu, in this view) sees it.
for p in /etc/execguard.conf "$dropin" /var/lib/execguard /var/lib/containers/storage/overlay; do
	[ -e "$p" ] || { echo "FAIL: used-host: $p not made" >&2; exit 1; }
done
note "running: $*"
exec "$@"
