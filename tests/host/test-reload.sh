#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SIGHUP with a broken policy keeps the old one in force and says why;
# a good one takes over, releasing what it no longer protects. The kernel
# backend with cgroup rules only: cgroups are decided as a whole (the
# fake tree has no cgroup.events, so each counts as populated).
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-reload-a-$$
B=execguard-reload-b-$$
for c in "$A" "$B"; do new_cgroup "$c"; fake_cgroup "$c"; done
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule a]
MatchCgroup=/$A
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot"

wait_event 5 PUSH_PROTECTED EXECGUARD_CGROUP="'/$A'" EXECGUARD_POLICY="'a'" || fail "/$A not protected"

printf '[Rule b]\nMatchCgroup=/%s\nProtect=never\n' "$B" > "$T/etc/execguard.d/50-b.conf"
chmod 644 "$T/etc/execguard.d/50-b.conf"
kill -HUP "$DAEMON_PID"
wait_event 5 POLICY_REJECTED || fail "no rejection message"
# The error as the user reads it (execguard.conf(5) promises FILE:LINE).
wait_log "50-b.conf:3: invalid Protect=never" 5 || fail "reload error without file:line"
kill -0 "$DAEMON_PID" || fail "daemon died on a bad reload"
has_event PUSH_RELEASED EXECGUARD_CGROUP="'/$A'" && fail "/$A released by a rejected reload"
[ "$(file_value "$A")" = max ] || fail "old policy not in force after a bad reload"
pass "bad reload rejected, old policy kept"

printf '[Rule a-off]\nMatchCgroup=/%s\nProtect=no\n[Rule b]\nMatchCgroup=/%s\nProtect=yes\n' "$A" "$B" > "$T/etc/execguard.d/50-b.conf"
n=$(count_events POLICY_LOADED)
kill -HUP "$DAEMON_PID"
wait_until 5 events_newer "$n" POLICY_LOADED || fail "good reload not taken"
wait_event 5 PUSH_RELEASED EXECGUARD_CGROUP="'/$A'" || fail "/$A not released by the new policy"
wait_event 5 CGROUP_RELEASED EXECGUARD_CGROUP="'/$A'" || fail "/$A not cleared"
wait_event 5 PUSH_PROTECTED EXECGUARD_CGROUP="'/$B'" EXECGUARD_POLICY="'b'" || fail "new policy not applied"
[ "$(file_value "$B")" = max ] || fail "/$B not set"
pass "good reload applied"

# A reload storm does not break it.
for _ in $(seq 1 50); do kill -HUP "$DAEMON_PID"; done
# SIGHUP is taken before SIGUSR1: with a stats line, every reload of the
# storm is done.
stats > /dev/null
kill -0 "$DAEMON_PID" || fail "daemon died in a SIGHUP storm"
[ "$(file_value "$B")" = max ] || fail "/$B lost protection in a SIGHUP storm"
stop_daemon || fail "daemon exit status $?"
[ "$(file_value "$B")" = 0 ] || fail "stop did not clear what it set"
pass "SIGHUP storm survived, stop cleared /$B"
