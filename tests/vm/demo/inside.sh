#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Inside the demo VM (tests/vm/demo/run.sh), under systemd. "DEMO: "
# lines are what the host prints.
set -u
stage=${1:?}
seconds=${2:-40}
say() { while IFS= read -r l; do echo "DEMO: $l"; done <<<"$*"; }
# wait_for SECONDS CMD...: until CMD succeeds; 1 if it never did
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.2
	done
}
# started NAME: demo-NAME.service is past its start-up (every page of its
# text used once): its first report is in the journal.
started() { journalctl -u "demo-$1.service" -o cat --no-pager | grep -q '^requests '; }
protected() { [ "$(cat /sys/fs/cgroup/demo.slice/demo-protected.service/memory.exec_protect 2>/dev/null)" = max ]; }
stat_of() { awk -v k="$2" '$1 == k {print $2}' "/sys/fs/cgroup/demo.slice/$1/memory.stat"; }

cp -a "$stage/." /
cd /mnt/scratch || exit
# Two 48 MiB "program texts" and a file to stream through the page cache.
head -c 48M /dev/zero | tr '\0' 'a' > text-protected.bin
head -c 48M /dev/zero | tr '\0' 'b' > text-plain.bin
head -c 256M /dev/zero > stream.bin
sync
echo 3 > /proc/sys/vm/drop_caches

mkdir -p /etc/systemd/system/demo-protected.service.d
cat > /etc/systemd/system/demo.slice <<'UNIT'
[Slice]
# Room for one text and a little: the other one must be reclaimed.
MemoryMax=96M
UNIT
for s in protected plain; do
	cat > /etc/systemd/system/demo-$s.service <<UNIT
[Service]
Slice=demo.slice
ExecStart=/usr/libexec/execguard-demo/textload /mnt/scratch/text-$s.bin
UNIT
done
cat > /etc/systemd/system/demo-protected.service.d/execguard.conf <<'UNIT'
[X-ExecGuard]
Protect=yes
UNIT
cat > /etc/systemd/system/demo-stream.service <<'UNIT'
[Service]
Slice=demo.slice
ExecStart=/bin/sh -c 'while :; do cat /mnt/scratch/stream.bin > /dev/null; done'
UNIT
systemctl daemon-reload
systemctl start execguardd
systemctl start demo-protected demo-plain
# Both started up and the protection set before the pressure begins, however
# long that takes on this machine.
for s in protected plain; do
	wait_for 300 started "$s" || say "demo-$s.service has not reported after its start-up"
done
wait_for 60 protected || say "demo-protected.service has not been protected"
systemctl start demo-stream
sleep "$seconds"
systemctl stop demo-stream

say "== systemctl status execguardd"
say "$(systemctl status execguardd --no-pager -n 0 2>&1 | sed -n '1,12p')"
say "== journalctl -u execguardd (decisions)"
say "$(journalctl -u execguardd --no-pager -o cat | grep -E 'policy|backend|protect|memory.exec_protect' | head -n 12)"
say "== execguardctl status"
say "$(execguardctl status 2>&1)"
say ""
say "== $seconds s of streaming reads through demo.slice (MemoryMax=96M), two services with 48 MiB of text each"
printf -v hdr '%-24s %16s %16s %12s %14s' service exec_protect pgmajfault_exec requests slowest_ms
say "$hdr"
for s in protected plain; do
	u=demo-$s.service
	reqs=$(journalctl -u "$u" -o cat --no-pager | awk '$1 == "requests" {r=$2} END{print r+0}')
	slow=$(journalctl -u "$u" -o cat --no-pager | tail -n +6 | awk '$6>m{m=$6} END{printf "%.1f", m+0}')
	printf -v row '%-24s %16s %16s %12s %14s' "$u" "$(cat /sys/fs/cgroup/demo.slice/$u/memory.exec_protect)" \
		"$(stat_of "$u" pgmajfault_exec)" "$reqs" "$slow"
	say "$row"
done
say "protected cgroup: pgexec_protected $(stat_of demo-protected.service pgexec_protected), pgexec_breached $(stat_of demo-protected.service pgexec_breached)"
say "(requests: served in the run; slowest: the slowest request after start-up)"

# The demo is also a test: protection must show.
p=$(stat_of demo-protected.service pgmajfault_exec)
u=$(stat_of demo-plain.service pgmajfault_exec)
if [ "$(cat /sys/fs/cgroup/demo.slice/demo-protected.service/memory.exec_protect)" = max ] &&
	[ "${u:-0}" -ge 100 ] && [ "${p:-0}" -le $((u / 10)) ]; then
	say "RESULT: protected service had $p text major faults, unprotected $u"
	exit 0
fi
say "RESULT: FAIL: expected the protected service to fault at most a tenth as often (protected $p, unprotected $u)"
exit 1
