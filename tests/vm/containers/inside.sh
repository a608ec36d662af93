#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Inside the VM (tests/vm/containers/run.sh), under systemd on the patched
# kernel. "E2E: " lines are the report.
set -u
stage=${1:?}
seconds=${2:-30}
backend=${3:-kernel}
# shellcheck disable=SC2034 # slow: read by lib-inside.sh (wait_for)
slow=1
. "$stage/lib-inside.sh"
MID_HOOK=f2411b4e0566495687cce3f1055f14ad
MID_REQUEST=35feb3238329420bbda16ccfb18f12a8

# None of the host's policy, hooks.d files or podman configuration
# (vm-run.sh hides them, issue 33).
check_own_view
cp -a "$stage/root/." /
# No rule for containers (meson install's drop-ins, if any): only the
# annotation may protect one.
rm -f /etc/execguard.d/*.conf
printf '[Daemon]\nBackend=%s\n' "$backend" > /etc/execguard.conf
# podman's own storage, not the host's (vfs: the VM's root is an overlay)
pm() { podman --root /var/tmp/egc-storage --runroot /run/egc-run --storage-driver vfs "$@"; }

cd /mnt/scratch || exit
head -c 48M /dev/zero | tr '\0' 'a' > text-protected.bin
head -c 48M /dev/zero | tr '\0' 'b' > text-plain.bin
head -c 256M /dev/zero > stream.bin
sync
cat > /etc/systemd/system/egc.slice <<'UNIT'
[Slice]
# Room for one text and a little: the other one must be reclaimed.
MemoryMax=96M
UNIT
cat > /etc/systemd/system/egc-stream.service <<'UNIT'
[Service]
Slice=egc.slice
ExecStart=/bin/sh -c 'while :; do cat /mnt/scratch/stream.bin > /dev/null; done'
UNIT
systemctl daemon-reload
check "execguardd.service starts" systemctl start execguardd

t=$SECONDS
tar -C "$stage/image" -cf /var/tmp/egc-image.tar . && pm import /var/tmp/egc-image.tar egc-textload > /dev/null ||
	{ bad "podman import of the image"; finish; }
say "image imported ($((SECONDS - t)) s)"
echo 3 > /proc/sys/vm/drop_caches
run_ctr() { # NAME TEXT [ANNOTATION...]
	local name=$1 text=$2
	shift 2
	pm run -d --name "$name" "$@" --cgroup-parent=egc.slice --network none --log-driver k8s-file \
		-v /mnt/scratch:/data:ro egc-textload /textload "/data/$text" > /dev/null
}
check "podman runs the annotated container" run_ctr egc-protected text-protected.bin --annotation io.execguard.protect=yes
check "podman runs its twin" run_ctr egc-plain text-plain.bin
idp=$(pm inspect -f '{{.Id}}' egc-protected)
idu=$(pm inspect -f '{{.Id}}' egc-plain)
pidp=$(pm inspect -f '{{.State.Pid}}' egc-protected)
cgp=$(sed -n 's/^0:://p' "/proc/$pidp/cgroup")
cgu=$(sed -n 's/^0:://p' "/proc/$(pm inspect -f '{{.State.Pid}}' egc-plain)/cgroup")
say "annotated container ${idp:0:12} in $cgp, twin ${idu:0:12} in $cgu ($((SECONDS - t)) s)"
scope_p=/egc.slice/libpod-$idp.scope
scope_u=/egc.slice/libpod-$idu.scope
value() { cat "/sys/fs/cgroup$1/memory.exec_protect" 2>/dev/null || echo missing; }
value_is() { [ "$(value "$1")" = "$2" ]; }
# unit_json UNIT FIELD: FIELD of UNIT's row in execguardctl --json status
unit_json() {
	execguardctl --json status | python3 -c '
import json, sys
for u in json.load(sys.stdin)["units"]:
    if u["unit"] == sys.argv[1]:
        print(u[sys.argv[2]])' "$1" "$2"
}
locked_some() { [ "$(unit_json "libpod-$idp.scope" locked_bytes)" -gt 0 ] 2>/dev/null; }
if [ "$backend" = kernel ]; then
	wait_for 60 value_is "$scope_p" max
	check "memory.exec_protect=max on the annotated container's scope $scope_p" value_is "$scope_p" max
	check "memory.exec_protect=max on egc.slice (its ancestor)" value_is /egc.slice max
	check "memory.exec_protect=0 on its twin's scope" value_is "$scope_u" 0
else
	wait_for 120 locked_some
	check "the lock backend locks the annotated container's text ($(unit_json "libpod-$idp.scope" locked_bytes) bytes)" locked_some
	check "and not its twin's" test -z "$(unit_json "libpod-$idu.scope" protected | grep -i true)"
fi

# The hook's and the daemon's journal lines (MESSAGE_ID and fields).
hook_said() { # RESULT ID
	journalctl -t execguard-oci-hook -o json --no-pager | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("MESSAGE_ID") == sys.argv[1] and e.get("EXECGUARD_RESULT") == sys.argv[2] and e.get("EXECGUARD_CONTAINER_ID") == sys.argv[3]:
        sys.exit(0)
sys.exit(1)' "$MID_HOOK" "$1" "$2"
}
wait_for 10 hook_said protected "$idp"
check "journal: the hook's line, EXECGUARD_RESULT=protected for ${idp:0:12}" hook_said protected "$idp"
check "journal: no hook line for the twin (hooks.d matches the annotation only)" \
	sh -c '! journalctl -t execguard-oci-hook -o json --no-pager | grep -q "$0"' "$idu"
check "journal: the daemon's decision for the container's cgroup" journal_has "$MID_REQUEST" EXECGUARD_CGROUP="$scope_p"
# With the kernel backend the cgroup is protected whole (pushed), not per
# process: the decision's line is the one that names the container.
check "journal: the decision names the container" \
	journal_has "$MID_REQUEST" EXECGUARD_CONTAINER_RUNTIME=podman EXECGUARD_CONTAINER_ID="$idp"

# Both past their start-up (every page used once) before the pressure.
started() { pm logs "$1" 2>/dev/null | grep -q '^requests '; }
for c in egc-protected egc-plain; do
	wait_for 300 started "$c" || say "$c has not reported after its start-up"
done
stat_of() { awk -v k="$2" '$1 == k {print $2}' "/sys/fs/cgroup$1/memory.stat"; }
p0=$(stat_of "$scope_p" pgmajfault_exec)
u0=$(stat_of "$scope_u" pgmajfault_exec)
systemctl start egc-stream
sleep "$seconds"
systemctl stop egc-stream

st=$(execguardctl status 2>&1)
say "execguardctl status:"; sed 's/^/E2E:   /' <<<"$st"
check "execguardctl status names the container podman ${idp:0:12}" grep -q "podman ${idp:0:12}" <<<"$st"
ex=$(execguardctl explain "$pidp" 2>&1)
say "execguardctl explain $pidp:"; sed 's/^/E2E:   /' <<<"$ex"
check "execguardctl explain: decided by the annotation" grep -q "decided by annotation io.execguard.protect=yes" <<<"$ex"
m=$(execguardctl metrics 2>&1 | grep "^execguard_unit_protected{unit=\"libpod-$idp.scope\"")
say "metrics: $m"
check "execguardctl metrics: a container label" grep -q "container=\"${idp:0:12}\"" <<<"$m"

say ""
say "== $seconds s of streaming reads through egc.slice (MemoryMax=96M), two podman containers with 48 MiB of text each, backend $backend"
printf -v hdr '%-28s %14s %16s %12s' container exec_protect pgmajfault_exec requests
say "$hdr"
for c in egc-protected egc-plain; do
	[ "$c" = egc-protected ] && s=$scope_p || s=$scope_u
	reqs=$(pm logs "$c" 2>/dev/null | awk '$1 == "requests" {r=$2} END{print r+0}')
	printf -v row '%-28s %14s %16s %12s' "$c (${s:18:12})" "$(value "$s")" "$(stat_of "$s" pgmajfault_exec)" "$reqs"
	say "$row"
done
p=$(($(stat_of "$scope_p" pgmajfault_exec) - p0))
u=$(($(stat_of "$scope_u" pgmajfault_exec) - u0))
say "during the pressure: annotated $p text major faults, twin $u"
check "the twin's text faults climb (at least 100 during the pressure: $u)" test "$u" -ge 100
check "the annotated container's stay near 0 (at most a tenth of its twin's: $p vs $u)" test "$p" -le $((u / 10))
pm rm -f -t 0 egc-protected egc-plain > /dev/null 2>&1

# With the daemon stopped the hook says so, exits 0, the container starts.
systemctl stop execguardd
t=$SECONDS
check "with execguardd stopped, podman starts an annotated container" \
	run_ctr egc-nodaemon text-plain.bin --annotation io.execguard.protect=yes
idn=$(pm inspect -f '{{.Id}}' egc-nodaemon 2>/dev/null)
running() { [ "$(pm inspect -f '{{.State.Running}}' egc-nodaemon 2>/dev/null)" = true ]; }
check "it is running ($((SECONDS - t)) s)" running
wait_for 10 hook_said no-daemon "$idn"
check "journal: the hook's line, EXECGUARD_RESULT=no-daemon" hook_said no-daemon "$idn"
say "hook: $(journalctl -t execguard-oci-hook -o cat --no-pager | tail -n 1)"
pm rm -f -t 0 egc-nodaemon > /dev/null 2>&1
finish
