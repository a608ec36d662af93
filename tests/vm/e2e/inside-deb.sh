#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package under systemd (tests/vm/e2e/run.sh --deb): installed
# with apt, upgraded to a newer build, purged, as an administrator would.
# Lines starting "E2E: " are the report.
set -u
stage=${1:?}
# shellcheck disable=SC2034 # slow: read by lib-inside.sh (wait_for)
slow=${2:-1}
. "$(dirname "${BASH_SOURCE[0]}")/lib-inside.sh"
old_deb=$(ls "$stage"/old/execguard_*.deb)
new_deb=$(ls "$stage"/new/execguard_*.deb)
value() { cat "/sys/fs/cgroup/$1/memory.exec_protect" 2>/dev/null || echo missing; }
value_is() { [ "$(value "$1")" = "$2" ]; }
main_pid() { systemctl show -p MainPID --value execguardd; }
export DEBIAN_FRONTEND=noninteractive
# The VM's root is the host's (an overlay): undo what is the host's and
# not a Debian machine's. A container host's policy-rc.d forbids starting
# services (deb-systemd-invoke would not start the unit); the host's
# package lists would make apt build its cache for minutes under TCG
# (nothing is downloaded: the package's dependencies are installed);
# man-db's trigger would index every man page.
rm -f /usr/sbin/policy-rc.d /var/lib/man-db/auto-update
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
t_start=$SECONDS
# The host's /etc/execguard.conf, its execguard package, are not here
# (vm-run.sh hides them): the install below is a first install.
check_own_view

# A service that opts in with a drop-in, before the package is there.
mkdir -p /etc/systemd/system/eg-web.service.d
printf '[Service]\nExecStart=/usr/bin/sleep infinity\n' > /etc/systemd/system/eg-web.service
printf '[X-ExecGuard]\nProtect=yes\n' > /etc/systemd/system/eg-web.service.d/execguard.conf
systemctl daemon-reload
systemctl start eg-web

apt_log=/tmp/apt.log
# apt_do [--conffiles new|old] ARGS...: apt ARGS -y, with nothing on
# stdin: a question nobody answers is an error ("end of file on stdin at
# conffile prompt"), not a hang. dpkg asks about a conffile that exists
# and differs from the package's; each step says what the test means:
# new, the package's (a first install), or old, the administrator's
# (an upgrade keeps a changed /etc/execguard.conf).
apt_do() {
	local t=$SECONDS rc=0 opts=()
	if [ "$1" = --conffiles ]; then
		opts=(-o "Dpkg::Options::=--force-conf$2")
		shift 2
	fi
	apt "${opts[@]}" "$@" -y < /dev/null > "$apt_log" 2>&1 || rc=$?
	say "apt ${opts[*]:+${opts[*]} }$* (exit $rc, $((SECONDS - t)) s)"
	[ $rc = 0 ] || sed 's/^/E2E:   /' "$apt_log" | tail -n 20
	return $rc
}
check "apt install ./$(basename "$old_deb")" apt_do --conffiles new install "$old_deb"
conf_is_the_packages() { dpkg-deb --fsys-tarfile "$old_deb" | tar -xOf - ./etc/execguard.conf | cmp -s - /etc/execguard.conf; }
check "/etc/execguard.conf is the package's" conf_is_the_packages
check "execguardd.service enabled by the package" systemctl is-enabled --quiet execguardd
wait_for 20 systemctl is-active --quiet execguardd
check "execguardd.service started by the package" systemctl is-active --quiet execguardd
wait_for 20 value_is system.slice/eg-web.service max
check "eg-web.service protected (memory.exec_protect=max)" value_is system.slice/eg-web.service max

# An administrator's change to the conffile, then an upgrade.
printf '\n# changed by the administrator\n[Rule e2e-local]\nMatchUnit=eg-local.service\nProtect=yes\n' >> /etc/execguard.conf
pid0=$(main_pid)
check "apt install ./$(basename "$new_deb") (upgrade)" apt_do --conffiles old install "$new_deb"
new_version=$(dpkg-deb -f "$new_deb" Version)
check "dpkg has $new_version" test "$(dpkg-query -W -f '${Version}' execguard)" = "$new_version"
check "the changed /etc/execguard.conf kept" grep -q '^\[Rule e2e-local\]' /etc/execguard.conf
check "no .dpkg-dist or .dpkg-old left beside it" sh -c '! ls /etc/execguard.conf.dpkg-* 2>/dev/null | grep -q .'
restarted() { local p; p=$(main_pid); [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$pid0" ] && systemctl is-active --quiet execguardd; }
wait_for 20 restarted
check "execguardd restarted by the upgrade (pid $pid0 -> $(main_pid))" restarted
wait_for 20 value_is system.slice/eg-web.service max
check "eg-web.service protected again after the restart" value_is system.slice/eg-web.service max

# The metrics for node_exporter, as the timer writes them; removal must
# not leave them to be served forever.
prom=/var/lib/prometheus/node-exporter/execguard.prom
mkdir -p "${prom%/*}"
check "execguard-metrics.service writes $prom" systemctl start execguard-metrics.service
check "execguard.prom: execguard_up 1" grep -qx 'execguard_up 1' "$prom"
check "execguardctl --version is the package's ($new_version)" test "$(execguardctl --version)" = "execguardctl $new_version"
check "execguardd --version is the package's" test "$(/usr/sbin/execguardd --version)" = "execguardd $new_version"
check "execguard_info carries the package's version" grep -q "^execguard_info{version=\"$new_version\"" "$prom"

# Purge: nothing of the package left, every protection it set cleared.
files=$(dpkg -L execguard | while read -r f; do [ -f "$f" ] && echo "$f"; done)
say "$(wc -l <<<"$files") files installed"
check "apt purge execguard" apt_do purge execguard
left=$(for f in $files /etc/execguard.conf; do [ -e "$f" ] && echo "$f"; done)
check "no file of the package left" test -z "$left"
[ -z "$left" ] || sed 's/^/E2E:   /' <<<"$left"
check "/etc/execguard.d removed" test ! -e /etc/execguard.d
check "/run/execguard removed" test ! -e /run/execguard
check "$prom removed (no stale metrics)" test ! -e "$prom"
check "execguardd.service gone" sh -c '! systemctl cat execguardd > /dev/null 2>&1'
check "eg-web.service's memory.exec_protect cleared" value_is system.slice/eg-web.service 0
check "system.slice's memory.exec_protect cleared" value_is system.slice 0
say "package steps took $((SECONDS - t_start)) s"
finish
