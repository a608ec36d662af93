#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Started in a PID namespace of its own (a container), where the kernel
# sends proc connector events to no listener: a daemon that needs the
# connector (a MatchExe= rule) refuses to start with one clear error,
# instead of missing every exec; one that needs none (the kernel backend,
# no MatchExe= rule: cgroups decided as a whole) starts and protects.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
command -v unshare > /dev/null || skip "unshare is not installed"
unshare --pid --fork --mount-proc true 2> /dev/null || skip "cannot make a PID namespace here"

A=execguard-ns-a-$$
mkdir -p "$T/cgroot/$A"
echo 0 > "$T/cgroot/$A/memory.exec_protect"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule exe]
MatchCgroup=/$A
MatchExe=/usr/bin/sleep
Protect=yes
CONF
rc=0
timeout 60 unshare --pid --fork --mount-proc "$EXECGUARDD" -c "$T/etc/execguard.conf" --cgroup-root="$T/cgroot" \
	--log-target=stderr-fields > "$T/daemon.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "exit status $rc in a PID namespace with a MatchExe= rule, want 1"
has_event CONNECTOR_FAILED || fail "no CONNECTOR_FAILED"
grep -q "runs in a PID namespace that is not the initial one" "$T/daemon.log" || fail "the error does not say why"
[ "$(grep -c "error:" "$T/daemon.log")" -le 2 ] || fail "more than one error: $(grep "error:" "$T/daemon.log")"
pass "needs the connector in a PID namespace: refused, saying why"

write_conf <<CONF
[Daemon]
Backend=kernel
[Rule cgroup]
MatchCgroup=/$A
Protect=yes
CONF
# The daemon under a shell in the namespace (PID 1 there would not get
# SIGTERM); stopped through its parent, by PID.
unshare --pid --fork --mount-proc sh -c '"$0" "$@" & wait' "$EXECGUARDD" -c "$T/etc/execguard.conf" \
	--cgroup-root="$T/cgroot" --log-target=stderr-fields > "$T/daemon.log" 2>&1 &
U=$!
KIDS+=("$U")
wait_event 10 STARTED || fail "no start without the connector in a PID namespace"
grep -q "not listening to the proc connector" "$T/daemon.log" || fail "the connector was opened"
[ "$(file_value "$A")" = max ] || fail "/$A not protected"
d=$(pgrep -P "$(pgrep -P "$U" | head -n 1)" | head -n 1)
[ -n "$d" ] && kill -TERM "$d"
wait "$U"
[ "$(file_value "$A")" = 0 ] || fail "/$A left set"
pass "needs no connector: starts and protects in a PID namespace"
