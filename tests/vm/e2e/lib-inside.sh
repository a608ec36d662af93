# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the scripts that run inside the VM under systemd (inside.sh,
# inside-lock.sh): the report ("E2E: " lines), checks and waits.
# Set before sourcing: slow (waits are this many times longer; 1).
slow=${slow:-1}
failed=0
say() { echo "E2E: $*"; }
ok() { say "PASS: $*"; }
bad() { say "FAIL: $*"; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
wait_for() { # SECONDS CMD...: until CMD succeeds, by the clock (CMD may be slow)
	local deadline=$((SECONDS + $1 * slow)); shift
	until "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.1
	done
}
# journal_has MESSAGE_ID [FIELD=VALUE...]: an entry of execguardd's with them
journal_has() {
	journalctl -u execguardd -o json --no-pager | python3 -c '
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[2:])
for line in sys.stdin:
    e = json.loads(line)
    if e.get("MESSAGE_ID") == sys.argv[1] and all(e.get(k) == v for k, v in want.items()):
        sys.exit(0)
sys.exit(1)' "$@"
}
finish() {
	if [ "$failed" -gt 0 ]; then
		say "journalctl -u execguardd (last 30 lines):"
		journalctl -u execguardd --no-pager -o short-monotonic 2>&1 | tail -n 30 | sed 's/^/E2E:   /'
	fi
	say "$failed failed"
	exit $((failed > 0))
}

# The guest's own view (vm-run.sh, hide-host-state.sh): before a test
# puts anything there, none of the paths it owns holds anything of the
# host's, whatever the host has (an administrator's policy, podman's
# storage, the package). Call first. Podman's storage holds only what
# systemd-tmpfiles made at boot (podman.conf: storage/tmp).
check_own_view() {
	local p seen=
	for p in /etc/execguard.conf /etc/execguard.d /var/lib/execguard \
		/etc/containers/storage.conf /run/containers \
		/etc/containers/oci/hooks.d/*execguard* /usr/share/containers/oci/hooks.d/*execguard* \
		/usr/local/share/containers/oci/hooks.d/*execguard*; do
		[ -e "$p" ] && seen="$seen $p"
	done
	for p in /var/lib/containers/* /var/lib/containers/storage/*; do
		case $p in
		/var/lib/containers/storage | /var/lib/containers/storage/tmp) ;;
		*) [ -e "$p" ] && seen="$seen $p" ;;
		esac
	done
	dpkg-query -W execguard > /dev/null 2>&1 && seen="$seen dpkg:execguard"
	check "the guest's own view: nothing of the host's in the paths the test owns${seen:+ (seen:$seen)}" test -z "$seen"
}

# A podman container under systemd, from an image made here, offline (a
# busybox-static root file system, podman import): podman_start sets
# ctr_pid, ctr_cgroup (of its process: machine.slice/libpod-ID.scope/
# container with crun) and ctr_scope (its unit, libpod-ID.scope). vfs
# storage: the VM's root is already an overlay. 1 without podman.
pm() { podman --storage-driver vfs "$@"; }
podman_start() {
	local t=$SECONDS root=/tmp/eg-rootfs
	command -v podman > /dev/null || { say "SKIP: podman is not installed: no container checks"; return 1; }
	mkdir -p "$root/bin" && cp /bin/busybox "$root/bin/" && tar -C "$root" -cf "$root.tar" . &&
		pm import "$root.tar" eg-busybox > /dev/null &&
		pm run -d --name egc --network none --cgroup-manager systemd eg-busybox /bin/busybox sleep 100000 > /dev/null ||
		{ bad "podman could not start a container"; return 1; }
	ctr_pid=$(pm inspect -f '{{.State.Pid}}' egc)
	ctr_cgroup=$(sed -n 's/^0:://p' "/proc/$ctr_pid/cgroup")
	# shellcheck disable=SC2034 # ctr_scope: read by the inside*.sh that source this
	ctr_scope=$(grep -o 'libpod-[0-9a-f]*\.scope' <<< "$ctr_cgroup")
	say "podman container: pid $ctr_pid in $ctr_cgroup ($((SECONDS - t)) s)"
}
podman_stop() { pm rm -f -t 0 egc > /dev/null 2>&1; }
# unit_field UNIT FIELD: FIELD of UNIT in execguardctl --json status
unit_field() {
	execguardctl --json status | python3 -c '
import json, sys
for u in json.load(sys.stdin)["units"]:
    if u["unit"] == sys.argv[1]:
        print(str(u[sys.argv[2]]).lower())' "$1" "$2"
}
