#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The VM's container test (tests/vm/containers) on this machine's own
# kernel with the lock backend: podman runs two identical containers with
# 48 MiB of executable-mapped text each in one cgroup with memory.max=96M
# while a reader streams 256 MiB through it; one is annotated
# io.execguard.protect=yes (podman runs execguard-oci-hook from a hooks
# directory of the test's, against the real daemon on a private bus), no
# rule for either. The annotated one's text is locked and its major
# faults stay near 0 while its twin's climb (both printed). Skips, saying
# why, where podman cannot run a container here or cgroup2 has no memory
# controller.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init
HOOK=${EXECGUARD_OCI_HOOK:?set by meson}
TEXTLOAD=${TEXTLOAD:?set by meson}
command -v podman > /dev/null || skip "podman is not installed"
grep -qw memory "$CG2/cgroup.controllers" || skip "cgroup2 at $CG2 has no memory controller (hybrid cgroups)"
[ "$(ps -p 1 -o comm=)" = systemd ] && manager=systemd || manager=cgroupfs

# podman's own storage and hooks directory, an image of busybox and the
# static load program (no registry).
pm() { podman --root "$T/storage" --runroot "$T/run" --storage-driver vfs --cgroup-manager "$manager" --hooks-dir "$T/hooks" "$@"; }
on_exit 'pm rm -a -f -t 0 > /dev/null 2>&1'
mkdir -p "$T/hooks" "$T/image/bin"
sed "s|@hookpath@|$HOOK|" "$SRC/conf/oci/execguard.json.in" > "$T/hooks/execguard.json"
cp /bin/busybox "$T/image/bin/"
cp "$TEXTLOAD" "$T/image/textload"
tar -C "$T/image" -cf "$T/image.tar" . && pm import "$T/image.tar" egc-textload > /dev/null 2>"$T/pm.err" ||
	skip "podman cannot import an image here: $(tail -n 1 "$T/pm.err")"
pm run --rm --network none egc-textload /bin/busybox true > /dev/null 2>"$T/pm.err" ||
	skip "podman cannot run a container here: $(tail -n 1 "$T/pm.err")"

write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
CONF
start_daemon --state-dir="$T/state"
has_event BACKEND EXECGUARD_BACKEND=lock || skip "lock backend not usable here: $(last_event BACKEND)"

parent=execguard-test-$$-ctr
mkdir "$CG2/$parent" && CGROUPS+=("$CG2/$parent") || fail "cannot create $CG2/$parent"
echo +memory > "$CG2/$parent/cgroup.subtree_control" 2>/dev/null
echo 96M > "$CG2/$parent/memory.max" || fail "cannot set memory.max"
mkdir -p "$T/data"
head -c 48M /dev/zero | tr '\0' 'a' > "$T/data/text-protected.bin"
head -c 48M /dev/zero | tr '\0' 'b' > "$T/data/text-plain.bin"
head -c 256M /dev/zero > "$T/data/stream.bin"
[ "$manager" = systemd ] && cgp=$parent.slice || cgp=/$parent
run_ctr() { # NAME TEXT [OPTIONS...]
	local name=$1 text=$2
	shift 2
	pm run -d --name "$name" "$@" --cgroup-parent="$cgp" --network none -v "$T/data:/data:ro" \
		egc-textload /textload "/data/$text" > /dev/null
}
run_ctr egc-protected text-protected.bin --annotation io.execguard.protect=yes || fail "podman run (annotated)"
run_ctr egc-plain text-plain.bin || fail "podman run (twin)"
pp=$(pm inspect -f '{{.State.Pid}}' egc-protected)
pu=$(pm inspect -f '{{.State.Pid}}' egc-plain)
cg_p=$(sed -n 's/^0:://p' "/proc/$pp/cgroup")
cg_u=$(sed -n 's/^0:://p' "/proc/$pu/cgroup")
wait_event 30 PROCESS_PROTECTED EXECGUARD_PID="$pp" || fail "the annotated container's pid $pp is not protected"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pu" && fail "the twin (pid $pu) is protected"
pass "podman ran the hook; the annotated container is protected, its twin not"
started() { pm logs "$1" 2>/dev/null | grep -q '^requests '; }
wait_until 120 started egc-protected && wait_until 120 started egc-plain || fail "the containers did not start up"
faults() { awk '$1 == "pgmajfault" {print $2}' "$CG2$1/memory.stat"; }
p0=$(faults "$cg_p") u0=$(faults "$cg_u")
sh -c 'echo $$ > "$0/cgroup.procs"; while :; do cat "$1" > /dev/null; done' "$CG2/$parent" "$T/data/stream.bin" &
KIDS+=($!)
sleep 30
kill_own "${KIDS[-1]}"
p=$(($(faults "$cg_p") - p0)) u=$(($(faults "$cg_u") - u0))
echo "30 s of streaming reads through memory.max=96M: annotated container $p major faults, twin $u"
[ "$u" -ge 100 ] || fail "the twin took only $u major faults: no pressure on its text?"
[ "$p" -le $((u / 10)) ] || fail "the annotated container took $p major faults, more than a tenth of its twin's $u"
pass "the annotated container's text stays ($p major faults), its twin's does not ($u)"
