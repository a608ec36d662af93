#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hide-host-state.sh (what vm-run.sh's initramfs runs before it mounts
# the guest's overlay) against a made-up host root: an administrator's
# execguard policy, unit drop-ins and links, the execguard package in
# dpkg's database with its files behind merged-/usr symlinks, podman's
# storage and storage.conf, a persistent journal behind an absolute
# symlink. Checks which whiteouts it leaves in the upper layer, the
# directories it makes there (the host's mode and owner), dpkg's status
# file without the package, and, with the overlay mounted as the guest
# mounts it, what the guest sees: none of those, everything else. Run
# under sh (dash) and under busybox sh, which the guest runs. A host
# without any of it costs nothing: the upper layer stays empty.
#
# Needs root (mknod, chown; mount for the merged view): skips otherwise.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (mknod of whiteouts, chown)"; exit 77; }

T=$(mktemp -d /tmp/execguard-test-hide.XXXXXX)
cleanup() {
	mountpoint -q "$T/merged" 2>/dev/null && umount "$T/merged"
	rm -rf "$T"
}
trap cleanup EXIT
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }

# --- a used host's root ------------------------------------------------------
make_host() {
	local L=$1
	mkdir -p "$L"/{etc/execguard.d,etc/containers,etc/systemd/system/multi-user.target.wants} \
		"$L"/etc/systemd/system/execguardd.service.d \
		"$L"/usr/{sbin,lib/systemd/system} "$L"/var/lib/{dpkg/info,containers/storage/overlay/l,containers/storage/libpod} \
		"$L"/var/lib/execguard "$L"/root/.config/containers "$L"/srv/log/journal/0123 "$L"/srv/data \
		"$L"/usr/local/libexec/execguard "$L"/etc/containers/oci/hooks.d \
		"$L"/usr/share/containers/oci/hooks.d "$L"/usr/libexec/execguard
	ln -s usr/lib "$L/lib"
	ln -s usr/sbin "$L/sbin"
	ln -s /srv/log "$L/var/log" # absolute: inside the host's root, not ours
	echo '[Daemon]' >"$L/etc/execguard.conf"
	echo '[Rule admin]' >"$L/etc/execguard.d/10-admin.conf"
	echo host >"$L/etc/hostname"
	echo '[Service]' >"$L/etc/systemd/system/execguardd.service.d/override.conf"
	ln -s /lib/systemd/system/execguardd.service "$L/etc/systemd/system/multi-user.target.wants/execguardd.service"
	ln -s /lib/systemd/system/ssh.service "$L/etc/systemd/system/multi-user.target.wants/ssh.service"
	echo 'driver = "overlay"' >"$L/etc/containers/storage.conf"
	echo '{}' >"$L/etc/containers/policy.json"
	echo elf >"$L/usr/local/libexec/execguard/execguard-oci-hook"
	echo '{}' >"$L/etc/containers/oci/hooks.d/50-execguard.json"
	echo '{}' >"$L/etc/containers/oci/hooks.d/other.json"
	# a meson install with prefix /usr: not in dpkg's database
	echo '{}' >"$L/usr/share/containers/oci/hooks.d/execguard.json"
	echo '{}' >"$L/usr/share/containers/oci/hooks.d/other.json"
	echo elf >"$L/usr/libexec/execguard/execguard-oci-hook"
	echo unit >"$L/usr/lib/systemd/system/execguardd.service"
	echo unit >"$L/usr/lib/systemd/system/ssh.service"
	echo elf >"$L/usr/sbin/execguardd"
	echo elf >"$L/usr/sbin/sshd"
	echo db >"$L/var/lib/containers/storage/libpod/bolt_state.db"
	echo rec >"$L/var/lib/execguard/eg-web.service.prewarm"
	chmod 0700 "$L/var/lib/execguard" "$L/root"
	chmod 0750 "$L/root/.config"
	chown 1234:5678 "$L/root/.config"
	echo '[containers]' >"$L/root/.config/containers/containers.conf"
	echo 'alias x=y' >"$L/root/.bashrc"
	echo journal >"$L/srv/log/journal/0123/system.journal"
	echo data >"$L/srv/data/keep"
	cat >"$L/var/lib/dpkg/status" <<'EOF'
Package: aaa
Status: install ok installed
Version: 1

Package: execguard
Status: install ok installed
Version: 0.1.0
Conffiles:
 /etc/execguard.conf 0123456789abcdef0123456789abcdef

Package: zzz
Status: install ok installed
Version: 2

EOF
	chmod 0644 "$L/var/lib/dpkg/status"
	printf '%s\n' /. /etc /etc/execguard.conf /lib /lib/systemd /lib/systemd/system \
		/lib/systemd/system/execguardd.service /usr /usr/sbin /usr/sbin/execguardd \
		>"$L/var/lib/dpkg/info/execguard.list"
	echo /etc/execguard.conf >"$L/var/lib/dpkg/info/execguard.conffiles"
	echo x >"$L/var/lib/dpkg/info/execguard.md5sums"
	echo /usr/sbin/sshd >"$L/var/lib/dpkg/info/zzz.list"
}

# What must be a whiteout in the upper layer, and only these.
expected_whiteouts='/etc/containers/oci/hooks.d/50-execguard.json
/etc/containers/storage.conf
/etc/execguard.conf
/etc/execguard.d
/etc/systemd/system/execguardd.service.d
/etc/systemd/system/multi-user.target.wants/execguardd.service
/root/.config/containers
/srv/log/journal
/usr/lib/systemd/system/execguardd.service
/usr/libexec/execguard
/usr/local/libexec/execguard
/usr/sbin/execguardd
/usr/share/containers/oci/hooks.d/execguard.json
/var/lib/containers
/var/lib/dpkg/info/execguard.conffiles
/var/lib/dpkg/info/execguard.list
/var/lib/dpkg/info/execguard.md5sums
/var/lib/execguard'

run_hide() { # "SHELL" LOWER UPPER ("busybox sh": two words)
	# shellcheck disable=SC2086
	$1 -c '. "$1"; hide_host_state "$2" "$3"' hide "$here/hide-host-state.sh" "$2" "$3"
}

shells=(sh)
for b in /bin/busybox /usr/bin/busybox; do
	[ -x "$b" ] && { shells+=("$b sh"); break; }
done

for shell in "${shells[@]}"; do
	echo "--- $shell"
	rm -rf "$T/lower" "$T/upper" "$T/work"
	mkdir -p "$T/lower" "$T/upper" "$T/work" "$T/merged"
	make_host "$T/lower"
	if ! out=$(run_hide "$shell" "$T/lower" "$T/upper" 2>&1); then
		fail "$shell: hide_host_state failed: $out"
		continue
	fi
	out=$(run_hide "$shell" "$T/lower" "$T/upper" 2>&1) || { fail "$shell: a second run failed: $out"; continue; }
	check "$shell: a second run over the same upper layer is a no-op" test -z "$out"

	got=$(cd "$T/upper" && find . ! -type d -printf '/%P %y\n' | sort)
	want=$( (sed 's/$/ c/' <<<"$expected_whiteouts"; echo '/var/lib/dpkg/status f') | sort)
	check "$shell: whiteouts for exactly the host's paths the tests own (and dpkg's status)" test "$got" = "$want"
	[ "$got" = "$want" ] || diff <(echo "$want") <(echo "$got") | sed 's/^/  /'
	bad=$(cd "$T/upper" && find . -type c ! -exec sh -c '[ "$(stat -c %t:%T "$1")" = 0:0 ]' sh {} \; -print)
	check "$shell: every whiteout is a 0/0 character device" test -z "$bad"
	check "$shell: /root made in the upper layer with the host's mode 0700" \
		test "$(stat -c %a "$T/upper/root")" = 700
	check "$shell: /root/.config made with the host's mode 0750 and owner 1234:5678" \
		test "$(stat -c %a:%u:%g "$T/upper/root/.config")" = 750:1234:5678
	check "$shell: no /lib or /var/log directory made over the host's symlinks" \
		test ! -e "$T/upper/lib" -a ! -e "$T/upper/var/log"
	check "$shell: dpkg's status without the execguard record, the others as they were" \
		test "$(cat "$T/upper/var/lib/dpkg/status")" = "$(printf 'Package: aaa\nStatus: install ok installed\nVersion: 1\n\nPackage: zzz\nStatus: install ok installed\nVersion: 2\n')"
	check "$shell: dpkg's status keeps its mode" test "$(stat -c %a "$T/upper/var/lib/dpkg/status")" = 644

	# The guest's view: the overlay as vm-run.sh's /init mounts it.
	if mount -t overlay -o "lowerdir=$T/lower,upperdir=$T/upper,workdir=$T/work" eg-test "$T/merged" 2>/dev/null; then
		M=$T/merged
		seen=
		while read -r p; do
			[ -e "$M$p" ] || [ -L "$M$p" ] && seen="$seen $p"
		done <<<"$expected_whiteouts"
		for p in /lib/systemd/system/execguardd.service /sbin/execguardd /var/log/journal; do
			[ -e "$M$p" ] && seen="$seen $p"
		done
		check "merged ($shell): none of the hidden paths there${seen:+ (seen:$seen)}" test -z "$seen"
		missing=
		for p in /etc/hostname /etc/containers/policy.json /etc/containers/oci/hooks.d/other.json \
			/usr/share/containers/oci/hooks.d/other.json \
			/lib/systemd/system/ssh.service /sbin/sshd \
			/etc/systemd/system/multi-user.target.wants/ssh.service /root/.bashrc /srv/data/keep \
			/var/lib/dpkg/info/zzz.list /var/log /var/lib/dpkg/info/zzz.list; do
			[ -e "$M$p" ] || [ -L "$M$p" ] || missing="$missing $p"
		done
		check "merged ($shell): everything else there${missing:+ (missing:$missing)}" test -z "$missing"
		check "merged ($shell): /root mode 0700 as on the host" test "$(stat -c %a "$M/root")" = 700
		check "merged ($shell): a package can make /etc/execguard.d again, empty" \
			sh -c "mkdir '$M/etc/execguard.d' && [ -z \"\$(ls -A '$M/etc/execguard.d')\" ]"
		check "merged ($shell): and a test can remove it" rmdir "$M/etc/execguard.d"
		umount "$M"
	else
		echo "note: cannot mount an overlay here: the guest's view not checked (the upper layer is)"
	fi
	check "$shell: the host's root unchanged (its execguard.conf still there)" test -f "$T/lower/etc/execguard.conf"
done

# A host without any of it: nothing made, nothing printed.
rm -rf "$T/lower" "$T/upper"
mkdir -p "$T/lower/etc" "$T/lower/var/lib/dpkg" "$T/upper"
echo host >"$T/lower/etc/hostname"
printf 'Package: aaa\nStatus: install ok installed\n\n' >"$T/lower/var/lib/dpkg/status"
out=$(run_hide sh "$T/lower" "$T/upper" 2>&1) || fail "clean host: hide_host_state failed: $out"
check "clean host: nothing printed" test -z "$out"
check "clean host: the upper layer stays empty" test -z "$(ls -A "$T/upper")"

# A symlink loop above a path: said, and the run fails (not silently a
# view the test did not mean).
ln -s loop "$T/lower/etc/loop"
check "resolve_path fails on a symlink loop" \
	sh -c '. "$1"; ! resolve_path "$2" /etc/loop/x' sh "$here/hide-host-state.sh" "$T/lower"
check "resolve_path: an absolute link stays inside the root" \
	test "$(sh -c '. "$1"; ln -s /etc "$2/abs"; resolve_path "$2" /abs/hostname' sh "$here/hide-host-state.sh" "$T/lower")" = /etc/hostname

echo "$failed failed"
[ "$failed" = 0 ]
