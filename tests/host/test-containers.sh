#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A container opts in by annotation, end to end on this machine without
# a container runtime: two "containers" are cgroups named as podman
# names them (SLICE/libpod-ID.scope/container) with a process each;
# execguard-oci-hook gets the OCI state a runtime would pipe to it at
# createRuntime, for the annotated one only, and asks the real daemon on
# a private system bus (lock backend, no rule for either). The annotated
# one is protected (its text locked), its twin not; status, explain and
# metrics name the container; a restart of the daemon keeps it; its
# exit forgets it; ContainerProtectMax= caps it; with the daemon stopped
# the hook exits 0 (1 with --required) and says why.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init
HOOK=${EXECGUARD_OCI_HOOK:?set by meson}

id_a=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
id_b=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
A=libpod-$id_a.scope
B=libpod-$id_b.scope
mkdir -p "$CG2/$S/$A/container" "$CG2/$S/$B/container" || fail "cannot create cgroups under $CG2/$S"
CGROUPS+=("$CG2/$S")
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
PressureWindowMSec=10000
PressureStallMSec=5000
CONF
start_daemon --state-dir="$T/state"
has_event BACKEND EXECGUARD_BACKEND=lock || skip "lock backend not usable here: $(last_event BACKEND)"

run_in "$S/$A/container" sleep 600
pa=$LAST_PID
run_in "$S/$B/container" sleep 600
pb=$LAST_PID
wait_until 10 grep -q "$S/$A/container" "/proc/$pa/cgroup" || fail "pid $pa not in its cgroup"

# What crun pipes to a createRuntime hook (runtime-spec state).
state() { # ID PID VALUE
	printf '{"ociVersion":"1.0.2-dev","id":"%s","status":"created","pid":%s,"bundle":"/x","annotations":{"io.container.manager":"libpod","io.execguard.protect":"%s"}}' "$1" "$2" "$3"
}
out=$(state "$id_a" "$pa" yes | "$HOOK" 2>&1) || fail "the hook failed ($?): $out"
wait_event 10 CONTAINER_REQUEST EXECGUARD_CGROUP="'/$S/$A'" || fail "no CONTAINER_REQUEST for /$S/$A"
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$pa" || fail "pid $pa of the annotated container not protected"
pass "the hook's request protects the annotated container's process (pid $pa, /$S/$A)"
has_event PROCESS_PROTECTED EXECGUARD_PID="$pa" EXECGUARD_CONTAINER_RUNTIME=podman EXECGUARD_CONTAINER_ID="$id_a" ||
	fail_later "the journal fields do not name the container: $(last_event PROCESS_PROTECTED EXECGUARD_PID="$pa")"
sleep 1
has_event PROCESS_PROTECTED EXECGUARD_PID="$pb" && fail "the twin without the annotation (pid $pb) was protected"
pass "its twin without the annotation is not protected"

locked() { # UNIT: locked bytes in status --json
	ctl --json status | python3 -c '
import json, sys
for u in json.load(sys.stdin)["units"]:
    if u["unit"] == sys.argv[1] and u["protected"] and isinstance(u["locked_bytes"], int):
        print(u["locked_bytes"])' "$1"
}
has_locked() { [ "$(locked "$A")" -gt 0 ] 2>/dev/null; }
wait_until 15 has_locked || fail "status shows no locked text for $A: $(ctl status 2>&1)"
pass "the lock backend holds $(locked "$A") bytes of its text"

out=$(ctl --json status) || fail "status --json failed"
python3 -c '
import json, sys
d = json.load(sys.stdin)
u = {x["unit"]: x for x in d["units"]}
a = u[sys.argv[1]]
c = a["container"]
assert c["runtime"] == "podman" and c["id"] == sys.argv[2] and c["annotation"] == "yes", c
assert a["reason"] == "annotation", a
assert sys.argv[3] not in u or not u[sys.argv[3]]["protected"], u.get(sys.argv[3])
' "$A" "$id_a" "$B" <<<"$out" || fail "status --json: $out"
ctl status | grep -q "podman ${id_a:0:12}" || fail "status does not name podman ${id_a:0:12}: $(ctl status)"
pass "status names the container (podman ${id_a:0:12}), reason annotation"

out=$(ctl explain "$pa" 2>&1) || fail "explain failed: $out"
grep -q "^  container: *podman ${id_a:0:12}" <<<"$out" || fail "explain does not name the container: $out"
grep -q "container asked: annotation io.execguard.protect=yes" <<<"$out" || fail "explain does not name the annotation: $out"
grep -q "decision: *protect, decided by annotation io.execguard.protect=yes" <<<"$out" || fail "explain: $out"
out=$(ctl explain "$pb" 2>&1) || fail "explain failed: $out"
grep -q "^  container: *podman ${id_b:0:12}" <<<"$out" || fail "explain does not name the twin's container: $out"
grep -q "decision: *do not protect" <<<"$out" || fail "explain says the twin is protected: $out"
pass "explain names the container and the annotation that decided"

out=$(ctl metrics) || fail "metrics failed"
grep -qF "execguard_unit_protected{unit=\"$A\",container=\"${id_a:0:12}\",reason=\"annotation\"" <<<"$out" ||
	fail "metrics: no container label for $A: $(grep execguard_unit_protected <<<"$out")"
pass "metrics label the unit with its container"

# A restart keeps what the container asked (the state directory).
stop_daemon || fail "daemon exit status $?"
start_daemon --state-dir="$T/state"
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$pa" || fail "after a restart, pid $pa is not protected again"
pass "a restart of the daemon keeps the container's request"

# The most a container may ask: a second container asks 64M, gets 16M.
kill_own "$pb"
sed -i 's/^\[Daemon\]$/[Daemon]\nContainerProtectMax=16M/' "$T/etc/execguard.conf"
kill -HUP "$DAEMON_PID"
wait_event 10 POLICY_LOADED || fail "no reload"
run_in "$S/$B/container" sleep 600
pb=$LAST_PID
# A runtime calls createRuntime hooks once the process is in its cgroup
wait_until 10 grep -q "$S/$B/container" "/proc/$pb/cgroup" || fail "pid $pb not in its cgroup"
out=$(state "$id_b" "$pb" 64M | "$HOOK" 2>&1) || fail "the hook failed: $out"
wait_event 10 CONTAINER_REQUEST EXECGUARD_CGROUP="'/$S/$B'" || fail "no CONTAINER_REQUEST for $B"
last_event CONTAINER_REQUEST EXECGUARD_CGROUP="'/$S/$B'" | grep -q "LockBudget=16777216.*cut down to ContainerProtectMax=" ||
	fail "64M not cut down to 16M: $(last_event CONTAINER_REQUEST EXECGUARD_CGROUP="'/$S/$B'")"
pass "ContainerProtectMax=16M cuts a request for 64M down"

# The container exits: its cgroup empties, the daemon forgets it.
kill_own "$pb"
wait_event 10 CONTAINER_GONE EXECGUARD_CGROUP="'/$S/$B'" || fail "the emptied container $B is not forgotten"
out=$(ctl --json status)
python3 -c 'import json, sys; assert not [u for u in json.load(sys.stdin)["units"] if u["unit"] == sys.argv[1]]' "$B" <<<"$out" ||
	fail "status still lists $B: $out"
pass "an exited container is forgotten (cgroup.events)"

# Bad requests are refused with a reason, and the hook still exits 0.
out=$(echo '{"id":"x"}' | "$HOOK" 2>&1) || fail "the hook failed on a bad state: $out"
grep -q 'not usable: no positive integer "pid"' <<<"$out" || fail "no reason for a bad state: $out"
out=$(state "$id_a" "$pa" lots | "$HOOK" 2>&1) || fail "the hook failed on a bad value: $out"
grep -q "expected yes, no, max or a size" <<<"$out" || fail "no reason for a bad value: $out"
pass "a bad state or value is refused with a reason; the hook exits 0"

# A pod's container on kubelet's cgroupfs driver: no systemd unit, and
# explain names the container and the pod instead (issue 30).
uid=8c1e7a52-9d0b-4f3e-a1b2-$(printf %012d $$)
K=$S/kubepods/burstable/pod$uid/$id_b
mkdir -p "$CG2/$K" || fail "cannot create $CG2/$K"
run_in "$K" sleep 600
pk=$LAST_PID
wait_until 10 grep -q "$K" "/proc/$pk/cgroup" || fail "pid $pk not in $K"
out=$(ctl explain "$pk" 2>&1) || fail "explain failed: $out"
grep -q "not in a systemd unit" <<<"$out" && fail "explain says only 'not in a systemd unit': $out"
grep -q "^  container: *kubernetes ${id_b:0:12}, pod $uid (burstable)" <<<"$out" ||
	fail "explain does not name the pod's container: $out"
out=$(ctl --json explain "$pk") || fail "explain --json failed"
python3 -c '
import json, sys
c = json.load(sys.stdin)["container"]
assert c["runtime"] == "kubernetes" and c["pod_uid"] == sys.argv[1] and c["qos"] == "burstable", c' "$uid" <<<"$out" ||
	fail "explain --json: $out"
pass "explain names a kubepods container and its pod ($uid, burstable)"
kill_own "$pk"

# No daemon: the hook says so and exits 0; with --required, 1.
stop_daemon || fail "daemon exit status $?"
t0=$(date +%s%N)
out=$(state "$id_a" "$pa" yes | "$HOOK" 2>&1); rc=$?
[ "$rc" = 0 ] || fail "without the daemon the hook exited $rc: $out"
grep -q "execguardd is not running" <<<"$out" || fail "without the daemon the hook does not say so: $out"
pass "without the daemon the hook exits 0 in $((($(date +%s%N) - t0) / 1000000)) ms: $out"
out=$(state "$id_a" "$pa" yes | "$HOOK" --required 2>&1) && fail "--required without the daemon exited 0: $out"
pass "with --required it exits 1"
