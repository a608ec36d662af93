#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguard's main job, end to end. Run as root on Debian 12.
#
#   tools/demo.sh         builds everything (execguard and the patched
#                         kernel), boots that kernel in qemu with systemd as
#                         PID 1 and execguard installed, and runs two
#                         identical services under memory pressure, one
#                         protected by an [X-ExecGuard] drop-in, one not:
#                         prints systemctl status, the journal lines and the
#                         text major faults of each (tests/vm/demo/).
#   tools/demo.sh --host  on this machine's own kernel instead: execguardd in
#                         the foreground with conf/execguard.conf, deciding
#                         live about two "services" in their own cgroups.
# DEMO_SECONDS: how long the pressure (default 40) or the host run
# (default 5) lasts.
set -eu
cd "$(dirname "$0")/.."
top=$PWD

[ "$(id -u)" = 0 ] || { echo "demo: run as root (the proc connector needs CAP_NET_ADMIN)" >&2; exit 1; }
if [ "${1:-}" != --host ]; then
	[ $# = 0 ] || { echo "usage: $0 [--host]" >&2; exit 2; }
	tools/deps.sh all
	build="$top/build/demo-vm"
	[ -d "$build" ] || meson setup "$build" -Dprefix=/usr -Dsysconfdir=/etc -Dlocalstatedir=/var >/dev/null
	ninja -C "$build" >/dev/null
	echo "== building the patched kernel (kernel/build.sh; minutes the first time)"
	bzimage=$(kernel/build.sh | tail -n 1)
	echo "== booting it in qemu with systemd as PID 1 (a minute or two under TCG)"
	EXECGUARD_BZIMAGE=$bzimage exec tests/vm/demo/run.sh "$build" "${DEMO_SECONDS:-40}"
fi
seconds=${DEMO_SECONDS:-5}
tools/deps.sh build
build="$top/build/demo"
if [ -d "$build" ]; then meson setup --reconfigure "$build" >/dev/null; else meson setup "$build" -Dsysconfdir=/etc >/dev/null; fi
ninja -C "$build" >/dev/null

cg2=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[ -n "$cg2" ] || { echo "demo: no cgroup2 file system is mounted" >&2; exit 1; }
etc=$(mktemp -d /tmp/execguard-demo-XXXXXX)
slice="$cg2/execguard-demo.slice"
daemon=
cleanup() {
	# a child forked for "cmd &" and signalled before its exec runs this
	# inherited trap too (bash): only this script's own shell cleans up
	[ "$BASHPID" = "$$" ] || return 0
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	for s in web.service batch.service; do
		if [ -f "$slice/$s/cgroup.procs" ]; then
			while read -r p; do kill "$p" 2>/dev/null; done < "$slice/$s/cgroup.procs"
			sleep 0.2
			rmdir "$slice/$s" 2>/dev/null
		fi
	done
	rmdir "$slice" 2>/dev/null
	rm -rf "$etc"
}
trap cleanup EXIT

cp conf/execguard.conf "$etc/execguard.conf"
mkdir "$etc/execguard.d"
# What the package turns on (/usr/lib/execguard.d), as on an installed system.
cp conf/vendor/10-recovery.conf "$etc/execguard.d/"
cat > "$etc/execguard.d/50-demo.conf" <<'CONF'
# The demo service: protect everything that runs in web.service.
[Rule demo-web]
MatchUnit=web.service
Protect=yes
CONF
chmod -R go-w "$etc"
mkdir -p "$slice/web.service" "$slice/batch.service"

echo "== execguardd $(git describe --always --dirty 2>/dev/null || echo) with conf/execguard.conf + 10-recovery.conf + 50-demo.conf; cgroup2 at $cg2"
"$build/daemon/execguardd" --config="$etc/execguard.conf" --log-target=stderr &
daemon=$!
sleep 1

start_in() { # CGROUP CMD...: a process of that "service"
	local cg=$1
	shift
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$slice/$cg" "$@" &
}
echo "== starting web.service (python3 http.server on 127.0.0.1) and batch.service (perl)"
start_in web.service /usr/bin/python3 -m http.server --bind 127.0.0.1 0 >/dev/null 2>&1
start_in batch.service perl -e 'sleep 3600'
sleep "$seconds"
echo "== statistics"
kill -USR1 "$daemon"
sleep 0.5
echo "== stopping"
kill -TERM "$daemon"
wait "$daemon"
daemon=
