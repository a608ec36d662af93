# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0
#
# The guest's own view of the paths the tests own (issue 33). Sourced by
# vm-run.sh's initramfs /init (busybox sh) and, on the host, by
# tests/vm/test-hide-host-state.sh; POSIX sh with "local".
#
# A VM test's root is the host's, read-only over 9p, under a tmpfs upper
# layer. What the host holds where the tests read and write would be in
# the guest too: an administrator's /etc/execguard.conf and drop-ins (a
# conffile prompt for the package test, a policy the e2e checks did not
# write), podman's storage made with another driver (the guest's
# `podman --storage-driver vfs` refuses it), the execguard package in
# dpkg's database, a persistent journal with the host's execguardd lines.
#
# hide_host_state LOWER UPPER, before the overlay is mounted, puts a
# whiteout (a 0/0 character device: overlayfs's mark for "not there") in
# UPPER for each such path that LOWER has, so the guest sees a machine on
# which they were never created. Whiteouts, not an empty tmpfs mounted on
# each path: a test or a package can then create and remove these paths
# as on a real machine (apt purge removes /etc/execguard.d; a mount point
# cannot be removed), and hiding costs the same however much the host
# holds there (no rm -rf through the overlay of a podman storage with a
# million files). The directories above a whiteout are made in UPPER
# with the host's mode and owner (an upper directory's own are what the
# guest sees). Nothing of the host is written: LOWER is only read.
#
# What is hidden (globs, in the host's root):
# - execguard's policy and state: /etc/execguard.conf, /etc/execguard.d,
#   /var/lib/execguard (prewarm records), an administrator's unit files,
#   drop-ins and enablement links named execguard* in /etc/systemd/system
#   (also [X-ExecGuard] drop-ins named execguard.conf of other units), a
#   meson install under /usr/local (the OCI hook in libexec too), the
#   D-Bus policy in /etc, the metrics file, the OCI hook's hooks.d files
#   (an administrator's in /etc, a meson install's in /usr/share or
#   /usr/local/share: podman in the guest reads all three) and the hook
#   of a meson install with prefix /usr (/usr/libexec/execguard), which
#   dpkg does not list, deb-systemd-helper's memory of the units;
# - the execguard package in dpkg's database: its record in
#   /var/lib/dpkg/status (UPPER gets a copy without it), its files in
#   /var/lib/dpkg/info and every file (not directory) it lists;
# - podman's storage and configuration: /var/lib/containers (graph root),
#   /etc/containers/storage.conf and containers.conf(.d), root's own
#   ~/.config/containers and ~/.local/share/containers (its run root,
#   /run/containers, is in the guest's own /run, a fresh tmpfs);
# - /var/log/journal: the guest's journald keeps its journal in /run,
#   so journalctl in a test reads the guest's lines only.
HIDE_HOST_PATHS='
/etc/execguard.conf
/etc/execguard.d
/var/lib/execguard
/etc/systemd/system/execguard*
/etc/systemd/system/*/execguard*
/usr/local/lib/systemd/system/execguard*
/usr/local/bin/execguard*
/usr/local/sbin/execguard*
/usr/local/libexec/execguard
/etc/dbus-1/system.d/org.execguard.*
/var/lib/prometheus/node-exporter/execguard.prom
/etc/containers/oci/hooks.d/*execguard*
/usr/share/containers/oci/hooks.d/*execguard*
/usr/local/share/containers/oci/hooks.d/*execguard*
/usr/libexec/execguard
/var/lib/systemd/deb-systemd-helper-enabled/execguard*
/var/lib/systemd/deb-systemd-helper-enabled/*/execguard*
/var/lib/systemd/deb-systemd-helper-masked/execguard*
/var/lib/containers
/etc/containers/storage.conf
/etc/containers/containers.conf
/etc/containers/containers.conf.d
/root/.config/containers
/root/.local/share/containers
/var/log/journal
'

# resolve_path LOWER PATH: PATH with each symlink in it followed as the
# guest will follow it, inside LOWER (merged /usr: /lib -> usr/lib; an
# absolute link is relative to LOWER, not to this shell's root). Prints
# the result; 1 on a symlink loop.
resolve_path() {
	local lower="$1" rest="$2" cur='' comp t n=0
	while [ -n "$rest" ]; do
		case $rest in
		*/*) comp=${rest%%/*}; rest=${rest#*/} ;;
		*) comp=$rest; rest='' ;;
		esac
		case $comp in
		'' | .) continue ;;
		..) cur=${cur%/*}; continue ;;
		esac
		if [ -L "$lower$cur/$comp" ]; then
			n=$((n + 1))
			[ "$n" -le 40 ] || return 1
			t=$(readlink "$lower$cur/$comp")
			case $t in /*) cur='' ;; esac
			rest=$t/$rest
		else
			cur=$cur/$comp
		fi
	done
	echo "${cur:-/}"
}

# make_upper_dirs LOWER UPPER DIR: DIR (resolved) and the directories
# above it in UPPER, each with the mode and owner it has in LOWER; 2 when
# one of them is hidden already (a whiteout in UPPER).
make_upper_dirs() {
	local lower="$1" upper="$2" rest="${3#/}" cur=''
	while [ -n "$rest" ]; do
		case $rest in
		*/*) cur=$cur/${rest%%/*}; rest=${rest#*/} ;;
		*) cur=$cur/$rest; rest='' ;;
		esac
		[ -d "$upper$cur" ] && continue
		[ -e "$upper$cur" ] || [ -L "$upper$cur" ] && return 2
		mkdir "$upper$cur" &&
			chown "$(stat -c %u:%g "$lower$cur")" "$upper$cur" &&
			chmod "$(stat -c %a "$lower$cur")" "$upper$cur" || return 1
	done
}

# hide_path LOWER UPPER PATH: a whiteout for PATH in UPPER if LOWER has
# it (a file, directory or symlink; a symlink itself, not its target).
# Prints PATH (resolved) when it hid it.
hide_path() {
	local lower="$1" upper="$2" dir name
	dir=$(resolve_path "$lower" "${3%/*}") || {
		echo "hide-host-state: not hiding $3: a symlink loop above it" >&2
		return 1
	}
	[ "$dir" = / ] && dir=''
	name=${3##*/}
	[ -e "$lower$dir/$name" ] || [ -L "$lower$dir/$name" ] || return 0
	# hidden already (the same file through another name: /lib, /usr/lib)
	[ -e "$upper$dir/$name" ] || [ -L "$upper$dir/$name" ] && return 0
	make_upper_dirs "$lower" "$upper" "$dir"
	case $? in
	0) ;;
	2) return 0 ;; # a directory above it is hidden
	*) return 1 ;;
	esac
	mknod "$upper$dir/$name" c 0 0 || return 1
	echo "$dir/$name"
}

# hide_dpkg_package LOWER UPPER NAME: the package NAME as if never
# installed: its record left out of a copy of dpkg's status file in
# UPPER, its files in dpkg's info directory and the files (not the
# directories: other packages share them) it installed hidden.
hide_dpkg_package() {
	local lower="$1" upper="$2" name="$3" db=/var/lib/dpkg f p r
	grep -q "^Package: $name\$" "$lower$db/status" 2>/dev/null || return 0
	[ -e "$upper$db/status" ] && return 0 # done before
	for f in "$lower$db/info/$name".list "$lower$db/info/$name":*.list; do
		[ -f "$f" ] || continue
		while IFS= read -r p; do
			r=$(resolve_path "$lower" "$p") || continue
			[ -d "$lower$r" ] && continue
			hide_path "$lower" "$upper" "$p" || return 1
		done <"$f"
	done
	for f in "$lower$db/info/$name".* "$lower$db/info/$name":*; do
		hide_path "$lower" "$upper" "${f#"$lower"}" || return 1
	done
	make_upper_dirs "$lower" "$upper" "$db" &&
		awk -v pkg="$name" '
			/^Package: / { skip = ($2 == pkg) }
			!skip { print }
			/^$/ { skip = 0 }' "$lower$db/status" >"$upper$db/status" &&
		chown "$(stat -c %u:%g "$lower$db/status")" "$upper$db/status" &&
		chmod "$(stat -c %a "$lower$db/status")" "$upper$db/status" || return 1
	echo "$db/status (without $name)"
}

# hide_host_state LOWER UPPER: all of the above. Prints each path it hid,
# one a line; 1 when it could not hide one (the caller stops: a test on
# a view it did not mean is worse than none).
hide_host_state() {
	local lower="$1" upper="$2" pat p
	for pat in $HIDE_HOST_PATHS; do
		# the glob is expanded in LOWER; a pattern without a match
		# stays as it is and names nothing there
		for p in "$lower"$pat; do
			hide_path "$lower" "$upper" "${p#"$lower"}" || return 1
		done
	done
	hide_dpkg_package "$lower" "$upper" execguard
}
